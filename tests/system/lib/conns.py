#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A misbehaving HTTP client for the system tests: opens many connections
# from one source address and sends no whole request, to show what shoald's
# per-address connection limit and request timeout do about it. Every
# deadline here is an upper bound for waiting, never a claim about speed.
#
#   conns.py flood PORT SOURCE COUNT REFUSED DIR
#       Open COUNT connections from SOURCE (a loopback address such as
#       127.0.0.3), each sending part of a request and then one more header
#       byte every 0.3 s so no timeout closes it. Wait until REFUSED of them
#       were closed by the server, then write DIR/held and DIR/refused (the
#       counts) once the counts have stayed put for a second. Keep the rest
#       open until DIR/stop exists, then go silent and write DIR/closed with
#       how many the server closed (all of them, after its request timeout).
#   conns.py idle PORT SOURCE COUNT
#       Open COUNT connections; half send nothing, half a partial request
#       line. Print how many the server closed ("closed N of COUNT").
#   conns.py keepalive PORT SOURCE WAIT [TOKEN]
#       Send a whole GET /v1/health (with the token when given), stay silent
#       WAIT seconds, then send another on the same connection. Print the
#       two statuses, or "closed" where the server had closed it.
import os
import select
import socket
import sys
import time

PARTIAL = b"GET /v1/health HTTP/1.1\r\nHost: shoald\r\nX-Pad: "
DEADLINE_S = 60


def connect(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_by_server(s):
    """True when the server closed s (EOF or reset); s must be readable."""
    try:
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def poll_closed(socks, closed, timeout):
    """Add to closed every socket of socks the server closed in timeout."""
    live = [s for s in socks if s not in closed]
    if not live:
        time.sleep(timeout)
        return
    ready, _, _ = select.select(live, [], [], timeout)
    for s in ready:
        if closed_by_server(s):
            closed.add(s)


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def flood(port, source, count, refused, out):
    socks = []
    for _ in range(count):
        s = connect(port, source)
        try:
            s.sendall(PARTIAL)
        except OSError:
            pass  # refused at once: counted below
        socks.append(s)
    closed = set()
    stable_since = None
    last = -1
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        poll_closed(socks, closed, 0.3)
        for s in socks:
            if s not in closed:
                try:
                    s.send(b"a")
                except OSError:
                    closed.add(s)
        if len(closed) != last:
            last = len(closed)
            stable_since = time.monotonic()
        if len(closed) >= refused and time.monotonic() - stable_since >= 1:
            break
    write(os.path.join(out, "refused"), "%d\n" % len(closed))
    write(os.path.join(out, "held"), "%d\n" % (count - len(closed)))
    while not os.path.exists(os.path.join(out, "stop")):
        poll_closed(socks, closed, 0.3)
        for s in socks:
            if s not in closed:
                try:
                    s.send(b"a")
                except OSError:
                    closed.add(s)
    held = [s for s in socks if s not in closed]
    gone = set()
    end = time.monotonic() + DEADLINE_S
    while len(gone) < len(held) and time.monotonic() < end:
        poll_closed(held, gone, 0.2)
    write(os.path.join(out, "closed"), "%d\n" % len(gone))


def idle(port, source, count):
    socks = []
    for i in range(count):
        s = connect(port, source)
        if i % 2:
            s.sendall(b"GET /v1/hea")
        socks.append(s)
    closed = set()
    end = time.monotonic() + DEADLINE_S
    while len(closed) < count and time.monotonic() < end:
        poll_closed(socks, closed, 0.2)
    print("closed %d of %d" % (len(closed), count))


def read_status(s):
    """The status of one answer with a Content-Length body, or "closed"."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            data = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            return "closed"
        buf += data
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(body) < length:
        data = s.recv(4096)
        if not data:
            return "closed"
        body += data
    return lines[0].split()[1]


def keepalive(port, source, wait, token):
    auth = b"Authorization: Bearer %s\r\n" % token.encode() if token else b""
    req = b"GET /v1/health HTTP/1.1\r\nHost: shoald\r\n" + auth + b"\r\n"
    s = connect(port, source)
    s.settimeout(DEADLINE_S)
    s.sendall(req)
    first = read_status(s)
    time.sleep(wait)
    try:
        s.sendall(req)
        second = read_status(s)
    except OSError:
        second = "closed"
    print(first, second)


def main():
    mode, port, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "flood":
        flood(port, source, int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif mode == "idle":
        idle(port, source, int(sys.argv[4]))
    elif mode == "keepalive":
        token = sys.argv[5] if len(sys.argv) > 5 else ""
        keepalive(port, source, float(sys.argv[4]), token)
    else:
        sys.exit("conns.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
