#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hold a pinned netns alive in one way only, for the reclaim and budget tests.

    hold-netns.py thread PIN   a non-leader thread enters the netns (the
                               process's /proc/PID/ns/net stays the caller's)
    hold-netns.py fd PIN...    only an open fd on each netns, nothing inside
    hold-netns.py leader PIN   the process itself enters the netns

Prints "ready" once holding, then sleeps until killed."""
import ctypes
import os
import sys
import threading
import time

CLONE_NEWNET = 0x40000000


def enter(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns: " + os.strerror(err))


def main():
    mode, pin = sys.argv[1], sys.argv[2]
    fds = [os.open(p, os.O_RDONLY | os.O_CLOEXEC) for p in sys.argv[3:]]
    fd = os.open(pin, os.O_RDONLY | os.O_CLOEXEC)
    if mode == "leader":
        enter(fd)
        os.close(fd)
    elif mode == "thread":
        entered = threading.Event()

        def inside():
            enter(fd)
            os.close(fd)
            entered.set()
            while True:
                time.sleep(3600)

        threading.Thread(target=inside, daemon=True).start()
        entered.wait(10)
    elif mode != "fd":
        sys.exit("usage: hold-netns.py thread|fd|leader PIN")
    print("ready", flush=True)
    while True:
        time.sleep(3600)


main()
