#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The transplant's "engine" rule, without an engine: the precreate hook run
# by a python3 parent standing in for podman, on a netns pinned at
# /run/netns/netns-UUID as podman's.  podman 5 leaves the thread that made
# the netns inside it (Go cannot end a locked main thread) and may have
# closed its fd on it: the parent's thread in P and no socket there is the
# engine's, accepted and sized; the same thread owning a socket in P is
# refused (the socket would stay behind); a parent that started before P
# was pinned is the engine that made it (podman 5 may hold nothing on it);
# a parent started after P was pinned, neither inside nor holding it, is
# refused as not the engine's netns; a thread of a process
# that is not the hook's ancestor is refused as an occupant.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
require_root
require_kernel_knobs
command -v python3 >/dev/null || cannot_run "needs python3"

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
H=$BUILD/nshash-hook
U=netns-$(cat /proc/sys/kernel/random/uuid)
NP=/run/netns/$U
CONFIG='{"ociVersion":"1.0.2","hostname":"t37e","annotations":{"io.nshash.tcp":"4096","io.nshash.udp":"1024"},"linux":{"namespaces":[{"type":"network","path":"'$NP'"}]}}'

# make_p: podman's netns as netavark leaves it, in miniature (a veth
# pair, both ends inside, one with an address)
make_p() {
	ip netns del "$U" 2>/dev/null
	ip netns add "$U" && ip -n "$U" link add eth0 type veth peer name eth9 &&
		ip -n "$U" addr add 10.137.9.2/24 dev eth0 && ip -n "$U" link set eth0 up && ip -n "$U" link set lo up
}
on_exit "ip netns del $U 2>/dev/null"

# engine MODE: run the hook as the child of a python3 process that, by MODE:
# thread = has a thread in P (fd closed), socket = that thread made a UDP
# socket in P, none = neither, later = neither but started before P was
# pinned (podman 5 holding nothing on the netns it just made); prints "PID\n" then the hook's stderr.
engine() {
	python3 - "$NP" "$H" "$P" "$1" "$CONFIG" <<'PY'
import ctypes, os, socket, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
path, hook, policy, mode, config = sys.argv[1:6]
keep, ready = [], threading.Event()
def inside():
    fd = os.open(path, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET, this thread only
        sys.exit("setns failed")
    os.close(fd)
    if mode == "socket":
        keep.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    ready.set()
    threading.Event().wait()
if mode == "later":  # started before P was pinned: wait until it is made
    import time  # (the go file: make_p's own ip processes have left P)
    while not os.path.exists(os.environ["GO"]):
        time.sleep(0.05)
if mode in ("thread", "socket"):
    threading.Thread(target=inside, daemon=True).start()
    ready.wait(10)
print(os.getpid(), flush=True)
p = subprocess.run([hook, "precreate", "--policy", policy], input=config.encode(), capture_output=True, timeout=60)
sys.stdout.write(p.stderr.decode())
print("rc=%d" % p.returncode)
PY
}
tcp_of() { ip netns exec "$U" cat /proc/sys/net/ipv4/tcp_ehash_entries; }

make_p
out=$(engine thread)
assert_contains "$out" "rc=0" "the engine's thread in P, no socket: the hook succeeds"
assert_eq 4096 "$(tcp_of)" "the engine's thread in P, no socket: P replaced by a sized netns"
assert_eq "10.137.9.2/24" "$(ip -n "$U" -o -4 addr show eth0 | awk '{print $4}')" "the engine's thread in P: eth0's address carried over"

make_p
out=$(engine socket)
pid=$(head -1 <<<"$out")
assert_contains "$out" "transplant $NP: refused: the engine, process $pid (python3), uses it with a socket in it (fd " \
	"the engine's thread in P with a socket there: refused"
assert_contains "$out" "rc=1" "the engine's socket in P: the hook fails"
[ "$(tcp_of)" -lt 0 ] && pass "the engine's socket in P: P left as it was" || fail "the engine's socket in P: P changed"

ip netns del "$U" 2>/dev/null
GO=$D/later.go engine later >"$D/later" &
later=$!
sleep 0.5
make_p
touch "$D/later.go"
wait $later
out=$(cat "$D/later")
assert_contains "$out" "rc=0" "an engine started before P was pinned, holding nothing on it: the hook succeeds"
assert_eq 4096 "$(tcp_of)" "an engine started before P was pinned: P replaced by a sized netns"

make_p
out=$(engine none)
assert_contains "$out" "transplant $NP: refused: the engine running this process does not hold it open: not the netns it made for this container" \
	"an engine neither inside P nor holding it: refused as not its netns"
[ "$(tcp_of)" -lt 0 ] && pass "not the engine's: P left as it was" || fail "not the engine's: P changed"

# a thread in P of a process that is not the hook's ancestor: an occupant
make_p
python3 - "$NP" <<'PY' &
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
def inside():
    libc.setns(fd, 0x40000000)
    threading.Event().wait()
threading.Thread(target=inside, daemon=True).start()
threading.Event().wait()
PY
other=$!
on_exit "kill $other 2>/dev/null"
for _ in $(seq 50); do [ "$(ls /proc/$other/task 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
out=$(engine thread)
assert_contains "$out" "refused: process $other (python3) has thread " "another process's thread in P, the engine's too: refused as an occupant"
[ "$(tcp_of)" -lt 0 ] && pass "an occupant: P left as it was" || fail "an occupant: P changed"
kill $other
wait $other 2>/dev/null
assert_eq 0 "$(count_pins_under "$S/pins/")" "no container pin left in the state dir"
assert_host_untouched
