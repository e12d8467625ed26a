#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# For each netns pin path on stdin, print "PATH TCP UDP": the raw
# tcp_ehash_entries and udp_hash_entries that netns reads (negative = the
# shared global table), or "PATH error: WHY".  Other net.ipv4 names given as
# arguments are read instead (e.g. tcp_child_ehash_entries
# udp_child_hash_entries for templates).  One process setns()-ing into
# each in turn: hundreds of pins are checked in well under a second, and
# without nshash's own code.  Single-threaded, so setns is safe.
import ctypes
import os
import sys

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def read_knob(name):
    # One read at offset 0: /proc/sys integers answer nothing at offset > 0.
    with open("/proc/sys/net/ipv4/" + name, "rb", buffering=0) as f:
        return f.read(64).decode().strip()


def main():
    knobs = sys.argv[1:] or ["tcp_ehash_entries", "udp_hash_entries"]
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    out = []
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            out.append("%s error: %s" % (path, e.strerror))
            continue
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                out.append("%s error: setns: %s" % (path, os.strerror(ctypes.get_errno())))
                continue
            try:
                out.append(" ".join([path] + [read_knob(k) for k in knobs]))
            except OSError as e:
                out.append("%s error: %s" % (path, e.strerror))
        finally:
            os.close(fd)
            if libc.setns(home, CLONE_NEWNET) != 0:
                sys.exit("cannot return to the original netns: " + os.strerror(ctypes.get_errno()))
    print("\n".join(out))


main()
