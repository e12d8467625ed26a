#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# CNI ADD's swap of the runtime's pin, watched from outside: while ADD puts
# the sized netns in place of the runtime's, a process looks at CNI_NETNS as
# fast as it can (what containerd's parallel loopback ADD does once); it must
# see a netns at every look (new netns mounted beneath the old pin, then the
# old one detached: Linux 6.5+).  In a private pin dir, and in a shared one
# with a peer (how iproute2 and podman set up /run/netns, and what every
# mount namespace made since holds a copy of) with spares, and there again
# without the new mount API (open_tree refused by seccomp: the unmount-then-
# mount fallback, whose window the watcher must see): exact sizes, the
# spare's own netns, one mount at the path, the peer showing the same netns,
# nothing left in either once the runtime unmounts its pin.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs python3
BENEATH=0
kernel_at_least 6 5 && BENEATH=1

D=$(make_state_dir)
TMPL=$(make_state_dir)
cni_node_policy "$D/node.json" "$TMPL"
N=${NSHASH_SWAP_ADDS:-25}
W=
on_exit '[ -n "$W" ] && kill "$W"'
SPARES=0
conf() { cni_conf net1 "\"tcp\":2048,\"udp\":1024,\"spares\":$SPARES,\"stateDir\":\"$TMPL\""; }
mounts_at() { awk -v p="$1" '$5 == p {n++} END {print n+0}' /proc/self/mountinfo; }
# the one spare of these sizes once no filler runs (the one the ADD before forked)
spare_ready() {
	spares_settled "$TMPL"
	SPARE=$(find "$TMPL/spares" -maxdepth 1 -name 'tcp2048-udp1024.*' 2>/dev/null | head -1)
	[ -n "$SPARE" ] && [ "$(count_pins_under "$SPARE")" = 1 ]
}
# gaps_ok WHAT: with the mount beneath (6.5+), no look may have missed the netns
gaps_ok() {
	if [ "$BENEATH" = 1 ]; then
		assert_eq 0 "$GAPS" "$1: $LOOKS looks at CNI_NETNS during the ADDs, none without a netns"
	else
		fail "CANNOT CHECK on kernel $(uname -r): mounting beneath (MOVE_MOUNT_BENEATH) needs 6.5; before it the swap has a window ($GAPS of $LOOKS looks fell into it)"
	fi
}

# swaps DIR [PEER]: N ADDs on fresh pins in DIR, each watched (with SPARES
# set, each must take the spare).  Sets LOOKS, GAPS (looks that saw no
# netns) and BAD (ADDs whose outcome was wrong, said on stderr).
swaps() {
	local dir=$1 peer=${2:-} i l g t P spare_ino
	LOOKS=0 GAPS=0 BAD=0
	for i in $(seq "$N"); do
		P=$dir/ns$i
		cni_pin_netns "$P"
		spare_ino=
		if [ "$SPARES" != 0 ]; then
			if spare_ready; then spare_ino=$(netns_inode_at "$SPARE"); else spare_ino=none; fi
		fi
		rm -f "$D/ready"
		python3 "$TOP/tests/lib/watch-netns.py" "$P" "$D/ready" >"$D/w.out" &
		W=$!
		for t in $(seq 500); do [ -e "$D/ready" ] && break; sleep 0.01; done
		cni_call ADD "$P" "$(conf)"
		kill -TERM "$W"
		wait "$W"
		W=
		read -r l g <"$D/w.out"
		LOOKS=$((LOOKS + ${l:-0}))
		GAPS=$((GAPS + ${g:-1}))
		if [ "$CNI_RC" != 0 ] || [ "$(netns_sizes_at "$P")" != "2048 1024" ] || [ "$(mounts_at "$P")" != 1 ] ||
			{ [ -n "$spare_ino" ] && [ "$(netns_inode_at "$P")" != "$spare_ino" ]; } ||
			{ [ -n "$peer" ] && [ "$(netns_inode_at "$peer/ns$i")" != "$(netns_inode_at "$P")" ]; }; then
			BAD=$((BAD + 1))
			echo "# ADD $i: rc $CNI_RC, sizes $(netns_sizes_at "$P"), netns $(netns_inode_at "$P") (spare ${spare_ino:--}), $(mounts_at "$P") mounts at $P, $CNI_OUT $CNI_ERR" >&2
		fi
		cni_call DEL "$P" "$(conf)"
		umount "$P" && rm -f "$P"
	done
}

# everything below in a private mount: the shared dirs' pins reach no
# other mount namespace on the machine
mkdir -p "$D/iso"
mount --bind "$D/iso" "$D/iso" && mount --make-private "$D/iso" || cannot_run "cannot make $D/iso a private mount"

mkdir -p "$D/iso/private"
make_private_mount "$D/iso/private"
swaps "$D/iso/private"
assert_eq 0 "$BAD" "private pin dir, each netns made by the ADD (spares 0): $N ADDs, each with tcp 2048 udp 1024 and one mount at the path"
gaps_ok "private pin dir"
[ "$LOOKS" -ge $((N * 100)) ] && pass "the watcher looked often enough to see a window ($LOOKS looks; the old unmount-then-bind swap showed about 20 gaps per ADD)" ||
	fail "the watcher looked only $LOOKS times"

# /run/netns as iproute2 and podman leave it: a shared bind mount of itself,
# here with a peer elsewhere that sees every pin too
shared_dir() { # NAME: DIR/NAME shared, with its peer DIR/NAME-peer
	mkdir -p "$D/iso/$1" "$D/iso/$1-peer"
	mount --bind "$D/iso/$1" "$D/iso/$1" && mount --make-shared "$D/iso/$1" && mount --bind "$D/iso/$1" "$D/iso/$1-peer" ||
		cannot_run "cannot set up a shared pin dir"
}
SPARES=1
cni_pin_netns "$D/iso/private/warm" # its ADD makes the first spare
cni_call ADD "$D/iso/private/warm" "$(conf)"
assert_eq "0 1" "$CNI_RC $(spare_ready && echo 1)" "an ADD with spares 1 leaves a spare of its sizes"
umount "$D/iso/private/warm" && rm -f "$D/iso/private/warm"
shared_dir shared
swaps "$D/iso/shared" "$D/iso/shared-peer"
assert_eq 0 "$BAD" "shared pin dir with a peer, each netns the spare the ADD took: $N ADDs; the peer shows the sized netns"
gaps_ok "shared pin dir with a peer"
assert_eq "0 0" "$(count_pins_under "$D/iso/shared") $(count_pins_under "$D/iso/shared-peer")" "no pin left in the shared dir or its peer"

# the same without the new mount API: open_tree refused (seccomp), as on a
# kernel before 5.2 or under a profile that filters it
printf '#!/bin/sh\nexec python3 %s open_tree %s\n' "$TOP/tests/lib/no-syscall.py" "$CNI_PLUGIN" >"$D/plugin-no-open-tree"
chmod +x "$D/plugin-no-open-tree"
CNI_PLUGIN=$D/plugin-no-open-tree
shared_dir old-api
swaps "$D/iso/old-api" "$D/iso/old-api-peer"
assert_eq 0 "$BAD" "without open_tree: $N ADDs through the fallback, each the spare taken, sized, one mount at the path, the peer showing it"
[ "$GAPS" -gt 0 ] && pass "without open_tree the fallback ran: the watcher saw its window ($GAPS of $LOOKS looks)" ||
	fail "without open_tree: no look fell into the fallback's window ($LOOKS looks): did it run?"
assert_eq "0 0" "$(count_pins_under "$D/iso/old-api") $(count_pins_under "$D/iso/old-api-peer")" "without open_tree: no pin left in the shared dir or its peer"
assert_eq 0 "$(count_pins_under "$D/iso/private")" "no pin left in the private dir"
assert_host_untouched
