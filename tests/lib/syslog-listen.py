# SPDX-License-Identifier: LGPL-2.1-or-later
# syslog-listen.py SOCKET OUT: a datagram syslog socket at SOCKET; every
# message is appended to OUT as one line.  OUT.ready appears once bound.
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
open(sys.argv[2] + ".ready", "w").close()
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        d = s.recv(65536)
        f.write(d.replace(b"\n", b" ") + b"\n")
