#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A proxy on loopback that loses the answer to the first POST: it passes
the request on to the controller, reads the answer, then closes the
client's connection without sending it (a connection broken after the
request was sent). Everything else passes through. Each request's method,
path and Idempotency-Key go to LOG, one line each.

    lossy_proxy.py TARGET_PORT PORT_FILE LOG
"""
import socket
import sys
import threading

target_port, port_file, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lost = threading.Event()
log_lock = threading.Lock()


def read_request(conn):
    """One HTTP/1.1 request with a Content-Length body, or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head, body


def header(head, want):
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == want:
            return value.strip().decode()
    return "-"


def serve(client):
    with client:
        while True:
            req = read_request(client)
            if req is None:
                return
            head, body = req
            method, path = head.split(b" ")[:2]
            with log_lock, open(log_path, "a") as log:
                log.write("%s %s %s\n" % (method.decode(), path.decode(),
                                          header(head, b"idempotency-key")))
            with socket.create_connection(("127.0.0.1", target_port)) as up:
                # One request a connection upstream: its answer ends at EOF.
                up.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
                answer = b""
                while True:
                    chunk = up.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            if method == b"POST" and not lost.is_set():
                lost.set()
                return  # the answer is lost: close without it
            client.sendall(answer)
            return  # the answer says Connection: close


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
