#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# swap-on-create.py DIR TARGET: wait (inotify) for the first file created in
# DIR and at once replace it by a symbolic link to TARGET (rename over it):
# the race a program loses when it resolves a path again after claiming it
# with O_EXCL.  Prints "ready" when watching, "swapped NAME" when done.
import ctypes
import os
import struct
import sys

IN_CREATE = 0x100
d, target = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, d.encode(), IN_CREATE) < 0:
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
print("ready", flush=True)
while True:
    buf = os.read(fd, 4096)
    _, mask, _, n = struct.unpack_from("iIII", buf, 0)
    name = buf[16:16 + n].rstrip(b"\0").decode()
    if name.startswith(".swap"):
        continue
    tmp = os.path.join(d, ".swap-" + name)
    os.symlink(target, tmp)
    os.rename(tmp, os.path.join(d, name))
    print("swapped " + name, flush=True)
    break
