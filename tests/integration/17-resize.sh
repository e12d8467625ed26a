#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash resize (the library's transplant) on netns built with ip: a veth
# to a peer netns, IPv4 + IPv6 addresses (nodad, noprefixroute, a finite
# lifetime, a secondary), routes in main and another table (metric, onlink,
# src, blackhole, IPv6), MTU, a permanent neighbour, per-device and
# netns-wide sysctls.  After the resize everything reads exactly as before,
# the sizes are exact and traffic crosses the veth.  Every refusal names
# what it found and leaves the netns as it was; a failure midway is undone;
# SIGKILL at random points leaves only documented states.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs

S=$(make_state_dir)
P=nsh17-$$-p
Q=nsh17-$$-q
BB=${ENGINES_BUSYBOX:-$(command -v busybox || echo /bin/busybox)}
on_exit "ip netns del $P; ip netns del $Q"
resize() { "$NSHASH" --state-dir "$S" resize "$@"; }

# build_p [extra]: P and its peer Q afresh
build_p() {
	ip netns del $P 2>/dev/null
	ip netns del $Q 2>/dev/null
	ip netns add $P && ip netns add $Q || return 1
	ip link add v17p netns $P type veth peer name v17q netns $Q || return 1
	ip -n $P link set lo up
	ip -n $Q link set lo up
	ip -n $Q addr add 10.117.0.1/24 dev v17q
	ip -n $Q addr add fd17::1/64 dev v17q nodad
	ip -n $Q link set v17q up
	# no DAD on P's link, so its link-local address is final before we look
	ip netns exec $P sysctl -qw net.ipv6.conf.v17p.accept_dad=0 net.ipv4.conf.v17p.rp_filter=2 \
		net.ipv4.conf.v17p.arp_ignore=1 net.ipv6.conf.v17p.hop_limit=33 \
		net.ipv4.ping_group_range="0 2147483647" net.ipv4.ip_unprivileged_port_start=80 || return 1
	ip -n $P link set v17p mtu 1400 up
	ip -n $P addr add 10.117.0.2/24 dev v17p
	ip -n $P addr add 10.117.0.3/24 dev v17p                       # secondary
	ip -n $P addr add 10.118.0.2/24 dev v17p noprefixroute
	ip -n $P addr add fd17::2/64 dev v17p nodad
	ip -n $P addr add fd18::2/64 dev v17p nodad noprefixroute
	ip -n $P addr add 10.119.0.2/24 dev v17p valid_lft 3000 preferred_lft 2000
	ip -n $P route add default via 10.117.0.1 metric 50
	ip -n $P route add 10.88.0.0/16 via 10.117.0.1 table 100 metric 7 src 10.117.0.2
	ip -n $P route add 10.99.0.0/16 via 10.117.0.250 dev v17p onlink
	ip -n $P route add blackhole 10.66.0.0/16
	ip -n $P -6 route add default via fd17::1 metric 300
	ip -n $P -6 route add fd99::/64 via fd17::1 table 100
	ip -n $P neigh add 10.117.0.77 lladdr 02:00:00:00:00:77 dev v17p nud permanent
	${1:-true}
}

# Everything the transplant must keep, as text (finite lifetimes tick: only
# their being finite is compared).
LIFE='(.addr_info[]? |= (if .valid_life_time < 4294967295 then .valid_life_time = "finite" | .preferred_life_time = "finite" else . end))'
state_of() {
	ip -n $P -j addr | jq -S "[.[] | $LIFE]"
	ip -n $P -j route show table all | jq -S .
	ip -n $P -j -6 route show table all | jq -S .
	ip -n $P -j neigh show nud permanent | jq -S .
	ip -n $P -j rule | jq -S .
	ip netns exec $P sysctl -a 2>/dev/null | grep '^net\.' |
		grep -Ev '^net\.ipv4\.(tcp_ehash_entries|udp_hash_entries|tcp_max_tw_buckets|tcp_max_syn_backlog) ' |
		grep -Ev '^net\.netfilter\.nf_conntrack_count|^net\.ipv6\.conf\.[^.]+\.stable_secret'
}
# state_is BEFORE: the state reads BEFORE (operstate settles asynchronously:
# look again for up to 2 s); else STATE_DIFF says how it differs
state_is() {
	local now
	for _ in $(seq 20); do
		now=$(state_of)
		[ "$1" == "$now" ] && return 0
		sleep 0.1
	done
	STATE_DIFF=$(diff <(echo "$1") <(echo "$now") | head -20 | tr '\n' '|')
	return 1
}
inode_of() { stat -L -c %i /run/netns/$P; }
sizes_of() { netns_sizes_at "/run/netns/$P"; }

# ---------------------------------------------------------------- faithful
build_p || cannot_run "cannot build the test netns with ip"
before=$(state_of)
ino=$(inode_of)
mac=$(ip -n $P -j link show v17p | jq -r '.[0].address')
out=$(resize --tcp 4096 --udp 1024 --json $P 2>&1)
assert_eq 0 $? "resize exits 0 ($out)"
assert_eq '["v17p"]' "$(jq -c .links <<<"$out")" "JSON names the moved link"
assert_eq '[] ""' "$(jq -c .recreated <<<"$out") $(jq .fallback <<<"$out")" "... moved, not recreated (its peer is no bridge port)"
assert_eq "4096 1024" "$(sizes_of)" "sizes exact through /run/netns/$P"
[ "$(inode_of)" != "$ino" ] && pass "a new netns is bound at the path" || fail "same netns at the path"
if state_is "$before"; then
	pass "addresses, routes (all tables, IPv4 + IPv6), neighbours, rules and every net.* sysctl as before"
else
	fail "configuration changed: $STATE_DIFF"
fi
assert_eq "$mac" "$(ip -n $P -j link show v17p | jq -r '.[0].address')" "MAC kept"
assert_eq 1400 "$(ip -n $P -j link show v17p | jq -r '.[0].mtu')" "MTU kept"
ip netns exec $P "$BB" ping -c1 -W2 10.117.0.1 >/dev/null 2>&1 && pass "IPv4 reaches the peer" || fail "IPv4 ping failed"
ip netns exec $P "$BB" ping -c1 -W2 fd17::1 >/dev/null 2>&1 && pass "IPv6 reaches the peer" || fail "IPv6 ping failed"
ip netns exec $Q "$BB" ping -c1 -W2 10.117.0.3 >/dev/null 2>&1 && pass "the peer reaches the secondary address" ||
	fail "ping to the secondary failed"
assert_eq 0 "$(count_pins_under "$S/pins")" "no pin left in the state dir"

# resize again: a sized netns can be resized once more
out=$(resize --tcp 256 $P 2>&1)
assert_eq 0 $? "resize of a resized netns ($out)"
assert_eq "256 -$(cat /proc/sys/net/ipv4/udp_hash_entries)" "$(sizes_of)" "new sizes: tcp 256, udp shared"
state_is "$before" && pass "configuration still as at first" || fail "configuration changed on the second resize: $STATE_DIFF"

# --dry-run changes nothing
ino=$(inode_of)
out=$(resize --tcp 4096 --dry-run $P 2>&1)
assert_eq "/run/netns/$P can be resized: would move v17p" "$out" "--dry-run says what it would move"
assert_eq "$ino" "$(inode_of)" "--dry-run left the netns in place"

# ---------------------------------------------------------------- refusals
# refused NAME EXPECTED-FRAGMENT: exit 2, the message, P unchanged
refused() {
	local ino before out rc
	ino=$(inode_of)
	before=$(state_of)
	out=$(resize --tcp 4096 $P 2>&1)
	rc=$?
	assert_eq 2 "$rc" "$1: exit 2"
	assert_contains "$out" "nshash: transplant /run/netns/$P: refused: $2" "$1: names what it found"
	assert_eq "$ino" "$(inode_of)" "$1: the same netns at the path"
	state_is "$before" && pass "$1: configuration untouched" || fail "$1: configuration changed: $STATE_DIFF"
}

build_p
ip netns exec $P sleep 300 &
sleeper=$!
on_exit "kill $sleeper"
sleep 0.2
refused "process inside" "process $sleeper (sleep) lives in it: its sockets would stay behind"
kill $sleeper
wait $sleeper 2>/dev/null

sleep 300 </run/netns/$P &
holder=$!
on_exit "kill $holder"
sleep 0.2
refused "fd open on it" "process $holder (sleep) holds it open (fd 0)"
kill $holder
wait $holder 2>/dev/null

python3 - "$P" <<'EOF' &
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/run/netns/" + sys.argv[1], os.O_RDONLY)
def inside():
    libc.setns(fd, 0x40000000)  # CLONE_NEWNET, this thread only
    time.sleep(300)
threading.Thread(target=inside, daemon=True).start()
time.sleep(0.1)
os.close(fd)
time.sleep(300)
EOF
pyth=$!
on_exit "kill $pyth"
for _ in $(seq 50); do [ "$(ls /proc/$pyth/task 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
if [ -d /proc/$pyth ]; then
	tid=$(ls /proc/$pyth/task | grep -vx "$pyth")
	refused "a thread inside" "process $pyth (python3) has thread $tid in it"
else
	fail "CANNOT RUN: python3 did not start"
fi
kill $pyth
wait $pyth 2>/dev/null

build_p "ip netns exec $P iptables -A INPUT -s 10.1.2.3 -j DROP"
refused "iptables rule inside" "it has nftables table ip filter: firewall rules cannot move with the links"

build_p "ip -n $P link add br17 type bridge"
refused "bridge inside" "link br17 of kind bridge cannot change network namespace (the kernel marks it netns-immutable)"

build_p "tc -n $P qdisc add dev v17p root pfifo"
refused "qdisc" "link v17p has qdisc pfifo configured (traffic control does not move with a link)"

build_p "ip -n $P rule add from 10.5.0.0/16 table 100"
refused "policy routing rule" "its policy routing rules (ip rule) differ from a new netns's; they are not carried over"

out=$(resize --tcp 4096 nsh17-does-not-exist 2>&1)
assert_eq "nshash: transplant /run/netns/nsh17-does-not-exist: No such file or directory" "$out" "a missing netns"
out=$(resize --tcp 4096 /run 2>&1)
assert_contains "$out" "transplant /run: not a network namespace" "a directory is refused"

# ---------------------------------------------------------------- undo
# A second mount of the same netns under the first is found only at the
# swap, after the links moved: everything goes back.
build_p
mount --bind /run/netns/$P /run/netns/$P
before=$(state_of)
ino=$(inode_of)
out=$(resize --tcp 4096 $P 2>&1)
assert_eq 1 $? "stacked mounts: resize fails"
assert_contains "$out" "another netns is mounted under it (stacked mounts) (undone: /run/netns/$P is as it was)" \
	"stacked mounts: the failure is undone"
assert_eq "$ino" "$(inode_of)" "undo: the original netns is back at the path"
assert_eq 2 "$(awk -v p=/run/netns/$P '$5 == p' /proc/self/mountinfo | wc -l)" "undo: both mounts there again"
state_is "$before" && pass "undo: configuration exactly as before" || fail "undo: configuration differs: $STATE_DIFF"
ip netns exec $P "$BB" ping -c1 -W2 10.117.0.1 >/dev/null 2>&1 && pass "undo: traffic flows again" || fail "undo: no traffic"
umount /run/netns/$P

# ---------------------------------------------------------------- SIGKILL
# Killed at a random point: the path holds P as it was, or the sized netns
# with the links (configured as in P, or partly: killed while configuring
# it), or -- killed between the move and the bind, a few syscalls -- P
# without the links that had moved (they died with the sized netns, and so
# did the veth's peer); never anything else, and never a pin.
kills=0
for i in $(seq 12); do
	build_p
	before=$(state_of)
	ino=$(inode_of)
	delay=$(awk -v i=$i 'BEGIN {srand(i * 7919); printf "%.3f", 0.001 + rand() * 0.08}')
	(timeout -s KILL "$delay" "$NSHASH" --state-dir "$S" resize --tcp 2048 $P >/dev/null 2>&1)
	[ $? -eq 137 ] && kills=$((kills + 1))
	if [ "$(inode_of 2>/dev/null)" = "$ino" ] && state_is "$before"; then
		state=untouched
	elif [ "$(inode_of 2>/dev/null)" != "$ino" ] && [ "$(sizes_of)" = "2048 -$(cat /proc/sys/net/ipv4/udp_hash_entries)" ] &&
		state_is "$before"; then
		state=resized
	elif [ "$(inode_of 2>/dev/null)" != "$ino" ] && [ "$(sizes_of)" = "2048 -$(cat /proc/sys/net/ipv4/udp_hash_entries)" ] &&
		ip -n $P link show v17p >/dev/null 2>&1; then
		state=resized-partly-configured
	elif [ "$(inode_of 2>/dev/null)" = "$ino" ] && ! ip -n $P link show v17p >/dev/null 2>&1 &&
		! ip -n $Q link show v17q >/dev/null 2>&1; then
		state=links-lost
	else
		state="unexpected: $(ip -n $P -o link 2>&1 | tr '\n' '|')"
	fi
	case $state in
	untouched | resized | resized-partly-configured | links-lost) pass "SIGKILL after ${delay}s: $state" ;;
	*) fail "SIGKILL after ${delay}s: $state" ;;
	esac
done
[ $kills -gt 0 ] && pass "$kills of 12 runs were killed midway" || fail "no run was killed (all finished first)"
assert_eq 0 "$(count_pins_under "$S/pins")" "no container pin left after the kills"

# ---------------------------------------------------------------- a bridged veth: recreated
# P's link with its peer a port of a bridge here (as podman's netavark and
# CNI's bridge plugin make them): made again rather than moved
B=nsh17-$$-b
on_exit "ip netns del $B; ip link del nsh17br"
# (its host side named by the kernel, vethN, as netavark's: a name its
# creator chose would be lost by a new pair, and is moved instead)
ip link add nsh17br type bridge && ip link set nsh17br up && ip netns add $B &&
	ip -n $B link add v17b type veth peer netns 1 && ip -n $B link set v17b up &&
	ip -n $B addr add 10.117.9.2/24 dev v17b ||
	cannot_run "cannot build a bridged veth"
hidx=$(ip -n $B -j link show v17b | jq -r '.[0].link_index')
h17b=$(ip -j link show | jq -r ".[] | select(.ifindex == $hidx) | .ifname")
ip link set "$h17b" master nsh17br up || cannot_run "cannot put $h17b on the bridge"
bmac=$(ip -n $B -j link show v17b | jq -r '.[0].address')
out=$("$NSHASH" --state-dir "$S" resize --tcp 2048 --udp 512 --json $B 2>&1)
assert_eq '0 ["v17b"] ["v17b"] ""' "$? $(jq -c .links <<<"$out") $(jq -c .recreated <<<"$out") $(jq .fallback <<<"$out")" \
	"a bridged veth: resize recreates it (JSON links, recreated, no fallback)"
assert_eq "2048 512 $bmac 10.117.9.2/24" \
	"$(ip netns exec $B sh -c 'echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)') $(ip -n $B -j link show v17b | jq -r '.[0].address') $(ip -n $B -j addr show v17b | jq -r '.[0].addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"')" \
	"... sized, with the same MAC and address"
nidx=$(ip -n $B -j link show v17b | jq -r '.[0].link_index')
assert_eq "nsh17br" "$(ip -j link show | jq -r ".[] | select(.ifindex == $nidx) | .master")" "... its new host side on the same bridge"
[ "$nidx" != "$hidx" ] && pass "... a new host side (ifindex $hidx before, $nidx now)" || fail "the host side's ifindex did not change"
ip netns del $B
for _ in $(seq 50); do [ -z "$(ip -o link show master nsh17br)" ] && break; sleep 0.1; done
assert_eq "" "$(ip -o link show master nsh17br)" "the netns deleted: no port left on the bridge (the old pair died with the old netns)"
assert_host_untouched
