#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""live-netns.py N [REL ...]: what a host running N containers looks like
to a /proc/sys lookup.  Makes N netns (children of the caller's, as a
runtime would), looks up /proc/sys/net/REL from inside each (default
ipv4/ip_forward: what network setup, sysctl tools and monitoring do), and
keeps them alive with an open fd each.  Each leaves its own cached
dentries (of each REL's first directory and below), which every later
lookup through that directory compares against while the netns lives
(docs/kernel.md).  Prints "ready" once holding, then waits for stdin
to close or SIGTERM; the netns go when it exits."""
import ctypes
import os
import resource
import signal
import sys

CLONE_NEWNET = 0x40000000


def main():
    n = int(sys.argv[1])
    rels = sys.argv[2:] or ["ipv4/ip_forward"]
    # an fd a netns: the soft limit up to the hard one
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n + 64:
        want = n + 64 if hard == resource.RLIM_INFINITY else min(n + 64, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    held = []
    for _ in range(n):
        if libc.unshare(CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            sys.exit("unshare: " + os.strerror(err))
        for rel in rels:
            os.stat("/proc/sys/net/" + rel)
        held.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
        if libc.setns(home, CLONE_NEWNET) != 0:
            sys.exit("setns back: " + os.strerror(ctypes.get_errno()))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    sys.stdin.read()


main()
