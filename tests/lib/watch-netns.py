#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""watch-netns.py PATH READY: look at PATH as fast as possible until SIGTERM
and count the looks at which it was not a netns pin (a plain file, or
nothing) — what a runtime opening the path at that instant would get.
Touches READY just before its first look; at SIGTERM prints
"LOOKS GAPS" and exits."""
import os
import signal
import stat
import sys

path, ready = sys.argv[1], sys.argv[2]
stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
looks = gaps = 0
nsfs_dev = os.stat("/proc/self/ns/net").st_dev
with open(ready, "w"):
    pass
while not stop:
    try:
        st = os.stat(path, follow_symlinks=False)
        ok = st.st_dev == nsfs_dev and stat.S_ISREG(st.st_mode)
    except FileNotFoundError:
        ok = False
    looks += 1
    if not ok:
        gaps += 1
print(looks, gaps)
