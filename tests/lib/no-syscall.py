#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""no-syscall.py SYSCALL CMD [ARGS...]: exec CMD under a seccomp filter that
fails SYSCALL (open_tree or fsopen) with ENOSYS, as a container's seccomp
profile or a kernel without the new mount API would: what nshash must then
do without it.  Inherited by every child of CMD."""
import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
ENOSYS = 38
# the same on x86_64 and aarch64 (the unified numbers)
NR = {"open_tree": 428, "fsopen": 430}
if len(sys.argv) < 3 or sys.argv[1] not in NR:
    sys.exit("usage: no-syscall.py open_tree|fsopen CMD [ARGS...]")


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


prog = b"".join([
    insn(0x20, 0, 0, 0),  # ld [0]: seccomp_data.nr
    insn(0x15, 0, 1, NR[sys.argv[1]]),  # jeq #SYSCALL
    insn(0x06, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
    insn(0x06, 0, 0, SECCOMP_RET_ALLOW),
])
buf = ctypes.create_string_buffer(prog)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


fprog = SockFprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("no-syscall: seccomp: %s" % os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[2], sys.argv[2:])
