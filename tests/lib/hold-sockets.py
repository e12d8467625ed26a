#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# hold-sockets.py UDP TCP READY: in the caller's netns, bind UDP UDP sockets
# and make TCP established connections over loopback (both ends here: 2 x TCP
# in the established hash), write "ready" to READY, then hold them all for
# 10 minutes (the test kills it sooner).
import resource, socket, sys, time

udp, tcp, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000))
keep = []
for _ in range(udp):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0)); keep.append(u)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(6000); port = l.getsockname()[1]
for _ in range(tcp):
    c = socket.create_connection(("127.0.0.1", port)); s, _a = l.accept(); keep += [c, s]
open(ready, "w").write("ready\n")
time.sleep(600)
