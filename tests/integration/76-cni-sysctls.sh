#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The runtime's net.* sysctls survive the replacement: CRI-O's pinns writes a
# pod's sysctls (securityContext.sysctls) into the netns it pins before ADD,
# and without an infra container nobody writes them again.  A netns pinned
# that way (no process inside, pinns-like sysctls written into it) gets ADD
# with a made netns, then with a spare: the sized netns at the path has
# exactly the values written, and the per-device (lo's) and table knobs
# nshash leaves alone are a new netns's.  The same through `nshash resize`.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs
D=$(make_state_dir)
TMPL=$(make_state_dir)
cni_node_policy "$D/node.json" "$TMPL"
conf() { cni_conf net1 "\"tcp\":4096,\"udp\":1024,\"spares\":$1"; }
# pinns -s net.ipv4.ip_unprivileged_port_start=0 -s net.ipv4.ping_group_range=0 2147483647 --net ...
pinns_like() { # PATH
	cni_pin_netns "$1" &&
		nsenter --net="$1" sh -c 'echo 0 >/proc/sys/net/ipv4/ip_unprivileged_port_start &&
			printf "0 2147483647" >/proc/sys/net/ipv4/ping_group_range &&
			echo 1000 >/proc/sys/net/core/somaxconn &&
			echo 33 >/proc/sys/net/ipv6/conf/all/hop_limit'
}
knobs() { # PATH: the values the test looks at
	nsenter --net="$1" sh -c 'cd /proc/sys/net && for f in ipv4/ip_unprivileged_port_start ipv4/ping_group_range core/somaxconn ipv6/conf/all/hop_limit ipv6/conf/lo/hop_limit ipv4/tcp_child_ehash_entries ipv4/tcp_max_tw_buckets; do printf "%s=%s;" "$f" "$(tr "\t" " " <$f)"; done'
}
WANT="ipv4/ip_unprivileged_port_start=0;ipv4/ping_group_range=0 2147483647;core/somaxconn=1000;ipv6/conf/all/hop_limit=33;ipv6/conf/lo/hop_limit=64;ipv4/tcp_child_ehash_entries=0;ipv4/tcp_max_tw_buckets=2048;"
for spares in 0 1 1; do
	P=$D/pin-$spares-$RANDOM
	pinns_like "$P" || cannot_run "cannot pin a netns with sysctls at $P"
	INO=$(netns_inode_at "$P")
	[ "$spares" = 1 ] && spares_settled "$TMPL"
	cni_call ADD "$P" "$(conf "$spares")"
	assert_eq 0 "$CNI_RC" "spares $spares: ADD succeeds ($CNI_ERR)"
	assert_eq "4096 1024" "$(netns_sizes_at "$P")" "spares $spares: the netns at the path is sized"
	[ "$INO" != "$(netns_inode_at "$P")" ] && pass "spares $spares: the netns was replaced" || fail "spares $spares: not replaced"
	assert_eq "$WANT" "$(knobs "$P")" "spares $spares: the pinns-like sysctls are in the sized netns, exactly"
	assert_contains "$CNI_ERR" "carried 4 net.* sysctl(s) the runtime set in $P into the sized netns: net.core.somaxconn=1000, net.ipv4.ip_unprivileged_port_start=0, net.ipv4.ping_group_range=0 2147483647, net.ipv6.conf.all.hop_limit=33"$'\n' "spares $spares: the carry is logged, naming each value"
	cni_call DEL "$P" "$(conf "$spares")"
	umount "$P" && rm -f "$P"
done
spares_settled "$TMPL"

# nothing written: nothing carried, nothing logged
P=$D/plain
cni_pin_netns "$P"
cni_call ADD "$P" "$(conf 0)"
assert_eq 0 "$CNI_RC" "plain pin: ADD succeeds"
assert_not_contains "$CNI_ERR" "carried" "plain pin: no sysctl carried"
umount "$P" && rm -f "$P"

# nshash resize (the transplant) carries them too
P=$D/resize
pinns_like "$P"
OUT=$("$BUILD/nshash" --state-dir "$TMPL" resize --tcp 4096 --udp 1024 "$P" 2>&1)
assert_eq 0 "$?" "resize of a pinns-like netns succeeds ($OUT)"
assert_eq "4096 1024" "$(netns_sizes_at "$P")" "resize: sized"
assert_eq "$WANT" "$(knobs "$P")" "resize: the pinns-like sysctls are in the sized netns, exactly"
umount "$P" && rm -f "$P"
assert_host_untouched
