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
# refused as not the engine's netns; a thread of a process that is not the
# hook's ancestor is refused as an occupant when P is older than the engine
# or has a socket in use (the kernel's per-protocol counts), else left
# behind in the old netns.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs python3

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
# socket in P, none = neither, later = neither; with GO=FILE it is started
# before P is pinned and waits for FILE (later: podman 5 holding nothing on
# the netns it just made); prints "PID\n" then the hook's stderr.
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
if os.environ.get("GO"):  # started before P was pinned: wait until it is made
    import time  # (the go file: make_p's own ip processes have left P)
    open(os.environ["GO"] + ".ready", "w").close()
    while not os.path.exists(os.environ["GO"]):
        time.sleep(0.05)
if mode in ("thread", "socket"):
    threading.Thread(target=inside, daemon=True).start()
    ready.wait(10)
if mode == "fd":  # holds P open, as podman 4.3 its handle
    keep.append(os.open(path, os.O_RDONLY))
print(os.getpid(), flush=True)
argv = [hook, "precreate", "--policy", policy]
if os.environ.get("WRAP"):  # through a wrapper script started after P
    argv = ["sh", "-c", '"$@"; exit $?', "wrap"] + argv
p = subprocess.run(argv, input=config.encode(), capture_output=True, timeout=60)
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

# a thread in P of a process that is not the hook's ancestor (host root's:
# nothing else can enter P), P made for this start (the engine started
# before it was pinned, as podman).  The engine is looked at, not every
# process: with no socket in use in P it stays behind in the old netns,
# away from the container; with one (the kernel's per-protocol counts of
# P) every process is looked at and it is refused by name; a socket left
# in P by a process that went back out is refused as what it is.
# other MODE: a process with a thread in P (MODE socket: that thread made and
# bound a UDP socket there); left-udp, left-netlink, left-unix: a bound UDP, a
# bound netlink or an unbound unix socket made in P, the thread back out
other() {
	python3 - "$NP" "$1" <<'PY' &
import ctypes, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
fd = os.open(sys.argv[1], os.O_RDONLY)
mode, keep = sys.argv[2], []
def inside():
    libc.setns(fd, 0x40000000)
    if mode in ("socket", "left-udp"):
        keep.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        keep[0].bind(("0.0.0.0", 0))
    elif mode == "left-netlink":  # bound: the kernel's own are not counted
        keep.append(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
        keep[0].bind((0, 0))
    elif mode == "left-unix":
        keep.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
    if mode.startswith("left"):
        libc.setns(home, 0x40000000)
        os.close(fd)
    threading.Event().wait()
threading.Thread(target=inside, daemon=True).start()
threading.Event().wait()
PY
	OTHER=$!
	on_exit "kill $OTHER 2>/dev/null"
	local p_ino in_p sockets
	p_ino=$(stat -L -c %i "$NP")
	for _ in $(seq 100); do
		in_p=$(for t in /proc/$OTHER/task/*; do stat -L -c %i "$t/ns/net"; done 2>/dev/null | grep -cx "$p_ino")
		sockets=$(ip netns exec "$U" awk 'NR > 1 && $3 > 0 { n += $3 } END { print n + 0 }' /proc/net/protocols)
		case $1 in
		thread) [ "$in_p" = 1 ] && [ "$sockets" = 0 ] && break ;;
		socket) [ "$in_p" = 1 ] && [ "$sockets" = 1 ] && break ;;
		*) [ "$in_p" = 0 ] && [ "$sockets" = 1 ] && [ "$(ls /proc/$OTHER/task | wc -l)" -ge 2 ] && break ;;
		esac
		sleep 0.05
	done
}
netns_of_threads() { for t in /proc/$1/task/*; do stat -L -c %i "$t/ns/net"; done | sort -u | tr '\n' ' '; }
# occupied MODE [ENGINE-MODE]: P made after the engine started, other MODE
# beside it, then the hook; its output in $out
occupied() {
	rm -f "$D/occ.go" "$D/occ.go.ready"
	ip netns del "$U" 2>/dev/null
	GO=$D/occ.go engine "${2:-thread}" >"$D/occ" &
	local e=$!
	for _ in $(seq 200); do [ -e "$D/occ.go.ready" ] && break; sleep 0.05; done
	sleep 0.05 # over a clock tick after the engine started
	make_p
	OLD_INO=$(stat -L -c %i "$NP")
	other "$1"
	touch "$D/occ.go"
	wait $e
	out=$(cat "$D/occ")
}

occupied thread
assert_contains "$out" "rc=0" "another process's thread in P, no socket in use there: the hook succeeds"
assert_eq 4096 "$(tcp_of)" "another process's thread in P, no socket in use there: P replaced by a sized netns"
assert_contains " $(netns_of_threads $OTHER)" " $OLD_INO " "and that thread stayed behind in the old netns"
assert_not_contains " $(netns_of_threads $OTHER)" " $(stat -L -c %i "$NP") " "none of its threads is in the container's new netns"
kill $OTHER
wait $OTHER 2>/dev/null

occupied socket
assert_contains "$out" "refused: process $OTHER (python3) has thread " "another process's thread in P with a socket there: refused, named"
assert_contains "$out" ", and a UDP socket is in use in it: they would stay behind" "... with the socket's protocol"
[ "$(tcp_of)" -lt 0 ] && pass "an occupant with a socket: P left as it was" || fail "an occupant with a socket: P changed"
kill $OTHER
wait $OTHER 2>/dev/null

for left in udp:UDP netlink:NETLINK unix:UNIX-STREAM; do
	occupied "left-${left%%:*}"
	assert_contains "$out" "transplant $NP: refused: a ${left#*:} socket is in use in it, of no process in it or holding it: it would stay behind" \
		"a ${left%%:*} socket left in P by a process gone back out: refused"
	[ "$(tcp_of)" -lt 0 ] && pass "a ${left%%:*} socket left in P: P left as it was" || fail "a ${left%%:*} socket left in P: P changed"
	kill $OTHER
	wait $OTHER 2>/dev/null
done

# an engine holding P open (podman 4.3) that runs the hook through a wrapper
# script started after P: the engine's start is the holder's, the wrapper's
# does not matter
export WRAP=1
occupied thread fd
unset WRAP
assert_contains "$out" "rc=0" "through a wrapper, the engine holding P: the hook succeeds"
assert_eq 4096 "$(tcp_of)" "through a wrapper: P replaced by a sized netns"
assert_contains " $(netns_of_threads $OTHER)" " $OLD_INO " "through a wrapper: the socketless occupant left behind (P fresh: no walk)"
kill $OTHER
wait $OTHER 2>/dev/null

# P pinned before the engine started (not this start's): every process is
# looked at, and an occupant without any socket is refused as before; a
# socket left there by a process gone back out is refused too
make_p
other thread
out=$(engine thread)
assert_contains "$out" "refused: process $OTHER (python3) has thread " "P older than the engine: a socketless occupant found by the walk, refused"
assert_contains "$out" ": its sockets would stay behind" "... as before"
[ "$(tcp_of)" -lt 0 ] && pass "P older than the engine: P left as it was" || fail "P older than the engine: P changed"
kill $OTHER
wait $OTHER 2>/dev/null
make_p
other left-udp
out=$(engine thread)
assert_contains "$out" "transplant $NP: refused: a UDP socket is in use in it, of no process in it or holding it: it would stay behind" \
	"P older than the engine, a UDP socket left in it: refused"
[ "$(tcp_of)" -lt 0 ] && pass "P older than the engine, a socket left: P left as it was" || fail "P older than the engine, a socket left: P changed"
kill $OTHER
wait $OTHER 2>/dev/null
# --- a veth whose peer is a port of a bridge in the host (netavark's
# bridge, Docker's): the pair is made again (container side in S, host side
# on the bridge under a name the kernel picks), the old pair left in P to die with it;
# what a new pair would not carry (a qdisc, a static FDB entry, a changed
# sysctl of the host side) sends it to the move, which keeps everything.
BR=nsh65br0
HV=nsh65h0
ip link add "$BR" address 02:00:00:00:65:ff type bridge && on_exit "ip link del $BR 2>/dev/null"
ip addr add 10.137.65.1/24 dev "$BR" && ip link set "$BR" up
make_bridged() {
	ip netns del "$U" 2>/dev/null
	# the host side named by the kernel (vethN, as netavark's), or by us
	# ($1 = named: a name its creator chose, which a new pair would lose)
	ip netns add "$U" || return 1
	if [ "${1:-}" = named ]; then
		ip link del nsh65h0 2>/dev/null
		ip link add nsh65h0 type veth peer name eth0 netns "$U" || return 1
	else
		ip link add type veth peer name eth0 netns "$U" || return 1
	fi
	HV=$(hv)
	[ -n "$HV" ] && ip link set "$HV" master "$BR" up && ip -n "$U" addr add 10.137.65.2/24 dev eth0 &&
		ip -n "$U" link set eth0 up && ip -n "$U" link set lo up && ip -n "$U" route add default via 10.137.65.1
}
on_exit "ip link del $HV 2>/dev/null"
mkdir -p "$D/www" && echo hello-65 >"$D/www/i"
python3 -m http.server --bind 10.137.65.1 --directory "$D/www" 18765 >/dev/null 2>&1 &
web=$!
on_exit "kill $web 2>/dev/null"
reach() { for _ in $(seq 30); do ip netns exec "$U" curl -s -m 2 http://10.137.65.1:18765/i 2>/dev/null && return; sleep 0.2; done; }
# the host side of U's eth0 (its peer): after a recreation a new link
ifindex() { ip -n "$U" -j link show eth0 2>/dev/null | jq -r '.[0].link_index // empty'; }
hv() { local i; i=$(ifindex); [ -n "$i" ] && ip -j link show | jq -r ".[] | select(.ifindex == $i) | .ifname"; }
gone() { [ -z "$(ip -j link show | jq ".[] | select(.ifindex == $1)")" ]; }
mac_count() { ip -o link show | grep -c "link/ether $1 "; } # links of the host with that MAC
# host side: MTU, master, up, MAC; container side: ifindex, MAC, MTU, address
sides() {
	local h; h=$(hv)
	echo "$(ip -o link show "$h" | grep -o 'mtu [0-9]* .*master [^ ]*' | sed 's/qdisc [^ ]* //') $(cat /sys/class/net/$h/operstate) $(cat /sys/class/net/$h/address)"
	echo "$(ip -n "$U" -o link show eth0 | awk '{print $1, $5}') $(ip -n "$U" -o link show eth0 | grep -o 'link/ether [^ ]*') $(ip -n "$U" -o -4 addr show eth0 | awk '{print $4}')"
}
make_bridged
ip link set "$HV" mtu 1400 && ip -n "$U" link set eth0 mtu 1400
before=$(ifindex)
want=$(sides)
hmac=$(cat "/sys/class/net/$HV/address")
out=$(engine thread)
assert_contains "$out" "rc=0" "bridged veth: the hook succeeds"
assert_contains "$out" "replaced by a sized one with its configuration (recreated eth0): requested tcp=4096 udp=1024" \
	"bridged veth: eth0's pair recreated, not moved"
assert_eq 4096 "$(tcp_of)" "bridged veth: P replaced by a sized netns"
after=$(ifindex)
[ -n "$after" ] && [ "$after" != "$before" ] && pass "bridged veth: a new host side ($before -> $after)" ||
	fail "bridged veth: host side ifindex $before -> $after"
assert_eq "$want" "$(sides)" "bridged veth: both sides as they were (MTU 1400, bridge, up, MACs, eth0's ifindex and address)"
assert_eq "hello-65" "$(reach)" "bridged veth: the container side reaches the host through the bridge"
for _ in $(seq 50); do [ "$(mac_count "$hmac")" = 1 ] && break; sleep 0.1; done
gone "$before" && pass "bridged veth: the old pair died with P (no $HV, one link with the host side's MAC)" ||
	fail "bridged veth: the old host side $HV ($before) is still there"
assert_eq 1 "$(mac_count "$hmac")" "bridged veth: one link with the host side's MAC"
case $(hv) in veth*) pass "bridged veth: the new host side has a name the kernel gave ($(hv))" ;; *) fail "bridged veth: new host side named '$(hv)'" ;; esac
ip netns del "$U"
for _ in $(seq 50); do gone "$after" && break; sleep 0.1; done
gone "$after" && pass "bridged veth: the new pair dies with S" || fail "bridged veth: the new host side ($after) outlived S"

# fallback KIND SETUP EXPECT: something a new pair would not carry
fallback() {
	make_bridged ${4:-}
	eval "${2//@HV@/$HV}"
	set -- "$1" "$2" "${3//@HV@/$HV}"
	before=$(ifindex)
	want=$(sides)
	out=$(engine thread)
	assert_contains "$out" "rc=0" "$1: the hook succeeds"
	assert_contains "$out" "(moved eth0 (not recreated: eth0: $3))" "$1: moved instead, saying why"
	assert_eq "4096 $before" "$(tcp_of) $(ifindex)" "$1: sized, the host side kept (ifindex $before)"
	assert_eq "$want" "$(sides)" "$1: both sides as they were"
	assert_eq "hello-65" "$(reach)" "$1: the container side reaches the host"
	assert_eq "$HV" "$(ip -o link show master "$BR" | awk -F': ' '{print $2}' | cut -d@ -f1)" "$1: one port on the bridge, the old host side"
}
fallback "a qdisc on the host side" "tc qdisc add dev @HV@ root handle 1: htb" "its host side @HV@: it has a qdisc configured"
assert_eq 1 "$(tc qdisc show dev "$HV" | grep -c 'qdisc htb 1:')" "a qdisc on the host side: still there"
fallback "a static FDB entry" "bridge fdb add 02:00:00:00:65:01 dev @HV@ master static" \
	"its host side @HV@: it has a static forwarding (FDB) entry"
assert_eq 1 "$(bridge fdb show dev "$HV" | grep -c '02:00:00:00:65:01')" "a static FDB entry: still there"
# only the new pair shows this one: made, compared, deleted, the old one put back
fallback "a sysctl of the host side" "sysctl -qw net.ipv4.conf.@HV@.proxy_arp=1" \
	"its host side @HV@: net/ipv4/conf/@HV@/proxy_arp is \"0\" (the old one's, \"1\", is not carried)"
assert_eq 1 "$(cat /proc/sys/net/ipv4/conf/$HV/proxy_arp)" "a sysctl of the host side: kept"
# netavark's host_interface_name and the like: a name its creator chose
fallback "a host side named by its creator" "true" \
	"its host side nsh65h0 has a name its creator chose (a new one would not keep it)" named
# what the host side has is read from dumps the kernel filters to its
# ifindex (addresses, routes, FDB) and from its own root and ingress qdiscs
fallback "an address on the host side" "ip addr add 192.0.2.65/32 dev @HV@" \
	"its host side @HV@: it has address 192.0.2.65/32"
fallback "a route through the host side" "ip route add 198.51.100.0/24 dev @HV@ proto static" \
	"its host side @HV@: a route goes through it (protocol 4)"
fallback "a clsact qdisc on the host side" "tc qdisc add dev @HV@ clsact" "its host side @HV@: it has a qdisc configured"
# ... and the host's other links, with all of that, are not looked at: a
# veth with addresses, routes and qdiscs, another port of the same bridge
# with a static FDB entry
ip link add nsh65d0 type veth peer name nsh65d1 && ip link set nsh65d0 up && ip link add nsh65p0 type veth peer name nsh65p1 &&
	ip link set nsh65p0 master "$BR" up || fail "cannot make the other links"
on_exit "ip link del nsh65d0 2>/dev/null; ip link del nsh65p0 2>/dev/null"
ip addr add 192.0.2.66/32 dev nsh65d0 && ip route add 198.51.100.0/24 dev nsh65d0 proto static &&
	tc qdisc add dev nsh65d0 root handle 1: htb && tc qdisc add dev nsh65d0 clsact &&
	bridge fdb add 02:00:00:00:65:02 dev nsh65p0 master static || fail "cannot configure the other links"
make_bridged
before=$(ifindex)
out=$(engine thread)
assert_contains "$out" "(recreated eth0)" "the host's other links with addresses, routes, qdiscs, FDB entries: eth0's pair still recreated"
assert_eq 4096 "$(tcp_of)" "... sized"
[ "$(ifindex)" != "$before" ] && pass "... a new host side" || fail "... the host side is still $before"
ip link del nsh65d0
ip link del nsh65p0
ip netns del "$U"

# a failure after the pair was recreated (a second mount of P under the
# first, found only at the swap): undone, the new pair deleted, the old
# host side back on the bridge, up
make_bridged
mount --bind "$NP" "$NP"
before=$(ifindex)
want=$(sides)
out=$(engine thread)
assert_contains "$out" "another netns is mounted under it (stacked mounts) (undone: $NP is as it was)" \
	"a failure after the recreation: undone"
assert_eq "$before" "$(ifindex)" "undo: the old host side is back (ifindex $before)"
assert_eq "$want" "$(sides)" "undo: both sides as they were"
assert_eq "1 $HV" "$(mac_count "$(cat /sys/class/net/$HV/address)") $(ip -o link show master "$BR" | awk -F': ' '{print $2}' | cut -d@ -f1)" \
	"undo: the new pair deleted, the old host side the bridge's one port"
assert_eq "hello-65" "$(reach)" "undo: the container side reaches the host again"
umount "$NP"
ip netns del "$U"

assert_eq 0 "$(count_pins_under "$S/pins/")" "no container pin left in the state dir"
assert_host_untouched
