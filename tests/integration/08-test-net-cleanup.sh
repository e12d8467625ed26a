#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The tests' network cleanup (host_net_guard, tests/lib/common.sh) removes
# what a test's networks made and nothing of anyone else's.  Two tests, A and
# B, guard at the same time; then the firewall state engines leave is laid
# down by hand, shaped like theirs (a per-network NAT chain and a
# per-container DNAT chain with hex ids, a shared HOSTPORT chain and a shared
# FORWARD chain the engine makes on first use, a chain of the machine's own
# that existed before, a rule of a third party), under an engine name of
# this test's own (NSH58), plus IPv6 rules, bridges and nftables tables.
# A's cleanup must leave B's and the third party's; B's then removes the
# shared chains it and A left; what existed before stays.
source "$(dirname "$0")/../lib/common.sh"
test_needs root iptables ip6tables nft ip

nat() { iptables -w -t nat "$@"; }
flt() { iptables -w -t filter "$@"; }
# at exit, whatever a failure left of this test's names
leftovers() {
	local t c r
	for t in nat filter; do
		for _ in 1 2 3; do
			iptables -w -t $t -S | grep -E '^-A .*(NSH58|nsh58|10\.58\.)' | sed 's/^-A/-D/' | while read -r r; do eval "iptables -w -t $t $r"; done
		done
		for c in $(iptables -w -t $t -S | awk '$1 == "-N" && $2 ~ /^NSH58/ {print $2}'); do iptables -w -t $t -F "$c"; done
		for c in $(iptables -w -t $t -S | awk '$1 == "-N" && $2 ~ /^NSH58/ {print $2}'); do iptables -w -t $t -X "$c"; done
	done
	ip6tables -w -S FORWARD | grep -E 'fd58:' | sed 's/^-A/-D/' | while read -r r; do eval "ip6tables -w $r"; done
	for c in nsh58abr nsh58av nsh58bbr; do ip link del "$c" 2>/dev/null; done
	for c in nsh58t nsh58u nsh58old; do nft delete table inet "$c" 2>/dev/null; done
	return 0
}
leftovers
on_exit leftovers
# the state of the world before both tests: the machine's own shared chain,
# and an nftables table nobody uses
nat -N NSH58-HOSTPORT-OLD
nat -A PREROUTING -m comment --comment "nsh58 machine" -j NSH58-HOSTPORT-OLD
nft add table inet nsh58old

# guard_as NAME TAG...: test NAME's host_net_guard at this moment;
# cleanup_as NAME: its host_net_cleanup, with its snapshot and tags
declare -A SNAP TAGS
guard_as() {
	local n=$1
	shift
	_host_net_snapshot=
	HOST_NET_TAGS=()
	host_net_guard "$@"
	SNAP[$n]=$_host_net_snapshot
	TAGS[$n]="$*"
}
cleanup_as() {
	_host_net_snapshot=${SNAP[$1]}
	read -ra HOST_NET_TAGS <<<"${TAGS[$1]}"
	host_net_cleanup
}
guard_as A nsh58a 10.58.1. fd58:a:
guard_as B nsh58b 10.58.2. fd58:b:

# what the engines make for both (the shared chains on first use)
nat -N NSH58-HOSTPORT-DNAT
nat -A PREROUTING -m addrtype --dst-type LOCAL -j NSH58-HOSTPORT-DNAT
flt -N NSH58_FORWARD
flt -A FORWARD -m comment --comment "nsh58 engine rules" -j NSH58_FORWARD
for x in a:1:aaaaaaaaaaaa:111111111111 b:2:bbbbbbbbbbbb:222222222222; do
	IFS=: read -r who n ctr net <<<"$x"
	nat -N "NSH58-$net"
	nat -A "NSH58-$net" -d "10.58.$n.0/24" -j ACCEPT
	nat -A "NSH58-$net" ! -d 224.0.0.0/4 -j MASQUERADE
	nat -A POSTROUTING -s "10.58.$n.0/24" -j "NSH58-$net"
	nat -N "NSH58-DN-$ctr"
	nat -A "NSH58-DN-$ctr" -p tcp --dport 8$n -j DNAT --to-destination "10.58.$n.5:80"
	nat -A NSH58-HOSTPORT-DNAT -p tcp --dport 8$n -m comment --comment "dnat name: nsh58$who id: $ctr" -j "NSH58-DN-$ctr"
	flt -A NSH58_FORWARD -d "10.58.$n.0/24" -j ACCEPT
	ip6tables -w -A FORWARD -s "fd58:$who::/64" -j ACCEPT
	ip link add "nsh58${who}br" type bridge
done
nat -A NSH58-HOSTPORT-OLD -p tcp --dport 81 -m comment --comment "dnat name: nsh58a id: aaaaaaaaaaaa" -j NSH58-DN-aaaaaaaaaaaa
ip link add nsh58av type veth peer name nsh58ap
ip link set nsh58av master nsh58abr
nat -A POSTROUTING -s 10.58.3.0/24 -j ACCEPT # a third party's
nft add table inet nsh58t                         # an engine's, left empty
nft add table inet nsh58u                         # an engine's, still in use
nft add chain inet nsh58u forward0 '{ type filter hook forward priority 0; }'
nft add rule inet nsh58u forward0 ip saddr 10.58.2.0/24 accept

S() { { iptables -w -t nat -S; iptables -w -S; ip6tables -w -S; } 2>/dev/null; }
has() { S | grep -cF -- "$1"; }
chain() { S | grep -c -- "^-N $1\$"; }
link() { ip link show "$1" >/dev/null 2>&1 && echo 1 || echo 0; }
table() { nft list table inet "$1" >/dev/null 2>&1 && echo 1 || echo 0; }

cleanup_as A
assert_eq "0 0 0" "$(has nsh58a) $(has 10.58.1.) $(has fd58:a:)" "A's cleanup: no rule of A's networks left (names, subnets, IPv6)"
assert_eq "0 0" "$(chain NSH58-DN-aaaaaaaaaaaa) $(chain NSH58-111111111111)" "A's cleanup: A's per-network and per-container chains gone"
assert_eq "1 1 3" "$(chain NSH58-DN-bbbbbbbbbbbb) $(chain NSH58-222222222222) $(has 10.58.2.0/24)" "A's cleanup: B's chains and rules kept (NAT, POSTROUTING, FORWARD)"
assert_eq "1 1 1 1" "$(has nsh58b) $(has fd58:b:) $(chain NSH58-HOSTPORT-DNAT) $(chain NSH58_FORWARD)" \
	"A's cleanup: the shared chains B still uses kept, with B's rules in them"
assert_eq "1 1 1" "$(chain NSH58-HOSTPORT-OLD) $(has 'nsh58 machine') $(has 10.58.3.0/24)" "A's cleanup: the machine's chain and a third party's rule kept"
assert_eq "0 0 1" "$(link nsh58abr) $(link nsh58av) $(link nsh58bbr)" "A's cleanup: A's bridge and the veth on it gone, B's bridge kept"
assert_eq "0 1 1" "$(table nsh58t) $(table nsh58u) $(table nsh58old)" \
	"A's cleanup: an engine's empty nftables table made meanwhile gone; one with a network's rule and one from before kept"

cleanup_as B
assert_eq "0 0 0" "$(has nsh58b) $(has 10.58.2.) $(has fd58:b:)" "B's cleanup: no rule of B's networks left"
assert_eq "0 0 0 0" "$(chain NSH58-DN-bbbbbbbbbbbb) $(chain NSH58-222222222222) $(chain NSH58-HOSTPORT-DNAT) $(chain NSH58_FORWARD)" \
	"B's cleanup: B's chains gone, and the shared chains nobody uses any more"
assert_eq "0 0" "$(has 'NSH58-HOSTPORT-DNAT') $(has 'nsh58 engine rules')" "B's cleanup: ... with the jumps into them"
assert_eq "1 1 1" "$(chain NSH58-HOSTPORT-OLD) $(has 'nsh58 machine') $(has 10.58.3.0/24)" \
	"B's cleanup: the machine's chain (empty, but there before) and the third party's rule kept"
assert_eq "0 1" "$(link nsh58bbr) $(table nsh58old)" "B's cleanup: B's bridge gone, the table from before kept"
