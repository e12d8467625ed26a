#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# capwatch.py stdout|stderr INPUT -- CMD...: run CMD with stdin from INPUT
# and the named stream a pipe that is already full, so CMD blocks on its
# first write there (its result or its last log line: the end of its run).
# While it is blocked, print its capability sets from /proc/PID/status as
# "CapInh=.. CapPrm=.. CapEff=.. CapBnd=.. CapAmb=..", then drain the pipe
# and print "rc=N".  Prints "not-blocked" when CMD never blocked there.
import fcntl
import os
import subprocess
import sys
import time

F_SETPIPE_SZ = 1031
stream, infile, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
r, w = os.pipe()
fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
os.set_blocking(w, False)
try:
    while True:
        os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
os.set_blocking(w, True)
with open(infile, "rb") as fin:
    p = subprocess.Popen(cmd, stdin=fin,
                         stdout=w if stream == "stdout" else subprocess.DEVNULL,
                         stderr=w if stream == "stderr" else subprocess.DEVNULL)
os.close(w)
caps = None
deadline = time.time() + 15
while time.time() < deadline and p.poll() is None:
    try:
        with open(f"/proc/{p.pid}/syscall") as f:
            nr = f.read().split()[0]
        with open(f"/proc/{p.pid}/wchan") as f:
            wchan = f.read()
    except OSError:
        break
    if nr in ("1", "20") or wchan == "pipe_write":  # write, writev (x86_64)
        with open(f"/proc/{p.pid}/status") as f:
            caps = " ".join(l.replace(":\t", "=") for l in f.read().splitlines() if l.startswith("Cap"))
        break
    time.sleep(0.005)
while os.read(r, 65536):
    pass
print(caps if caps else "not-blocked")
print(f"rc={p.wait()}")
