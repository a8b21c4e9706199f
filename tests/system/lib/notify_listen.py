#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Stands in for systemd's notify socket in the system tests: binds the unix
# datagram socket SOCKET and appends every message a daemon sends through
# sd_notify to OUT, one line each (its newlines made spaces), until killed.
import socket
import sys

sock_path, out_path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock_path)
with open(out_path, "a", buffering=1) as out:
    out.write("listening\n")
    while True:
        msg = s.recv(4096).decode(errors="replace")
        out.write(msg.replace("\n", " ") + "\n")
