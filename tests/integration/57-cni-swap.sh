#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# CNI ADD's swap of the runtime's pin, watched from outside: while ADD puts
# the sized netns in place of the runtime's, a process looks at CNI_NETNS as
# fast as it can (what containerd's parallel loopback ADD does once); it must
# see a netns at every look (new netns mounted beneath the old pin, then the
# old one detached: Linux 6.5+).  In a private pin dir, and in a shared one
# with a peer (how iproute2 and podman set up /run/netns, and what every
# mount namespace made since holds a copy of) with spares: exact sizes, one
# mount at the path, the peer showing the same netns, nothing left in either
# once the runtime unmounts its pin.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
require_root
require_kernel_knobs
command -v python3 >/dev/null || cannot_run "python3 missing"
read -r KMAJ KMIN < <(uname -r | awk -F. '{print $1, $2 + 0}')
((KMAJ > 6 || (KMAJ == 6 && KMIN >= 5))) ||
	cannot_run "kernel $(uname -r): mounting beneath (move_mount MOVE_MOUNT_BENEATH) needs 6.5; before it the swap has a window (docs/cni.md)"

D=$(make_state_dir)
TMPL=$(make_state_dir)
N=${NSHASH_SWAP_ADDS:-25}
W=
on_exit '[ -n "$W" ] && kill "$W"'
SPARES=0
conf() { echo "{\"cniVersion\":\"1.0.0\",\"name\":\"net1\",\"type\":\"nshash\",\"tcp\":2048,\"udp\":1024,\"spares\":$SPARES,\"stateDir\":\"$TMPL\"}"; }
# a spare of these sizes ready (the filler forked by the ADD before has ended)
spare_ready() {
	[ -e "$TMPL/spares/.lock" ] && timeout 10 flock "$TMPL/spares/.lock" true
	[ "$(count_pins_under "$TMPL/spares/")" -ge 1 ]
}
mounts_at() { awk -v p="$1" '$5 == p {n++} END {print n+0}' /proc/self/mountinfo; }

# swaps DIR [PEER]: N ADDs on fresh pins in DIR, each watched (with SPARES
# set, each takes a spare).  Sets LOOKS, GAPS (looks that saw no netns) and
# BAD (ADDs whose outcome was wrong).
swaps() {
	local dir=$1 peer=${2:-} i l g t P
	LOOKS=0 GAPS=0 BAD=0
	for i in $(seq "$N"); do
		P=$dir/ns$i
		cni_pin_netns "$P"
		rm -f "$D/ready"
		python3 "$TOP/tests/lib/watch-netns.py" "$P" "$D/ready" >"$D/w.out" &
		W=$!
		for t in $(seq 500); do [ -e "$D/ready" ] && break; sleep 0.01; done
		if [ "$SPARES" != 0 ] && ! spare_ready; then
			BAD=$((BAD + 1))
			echo "# ADD $i: no spare ready in $TMPL/spares" >&2
		fi
		cni_call ADD "$P" "$(conf)"
		kill -TERM "$W"
		wait "$W"
		W=
		read -r l g <"$D/w.out"
		LOOKS=$((LOOKS + ${l:-0}))
		GAPS=$((GAPS + ${g:-1}))
		if [ "$CNI_RC" != 0 ] || [ "$(netns_sizes_at "$P")" != "2048 1024" ] || [ "$(mounts_at "$P")" != 1 ] ||
			{ [ -n "$peer" ] && [ "$(netns_inode_at "$peer/ns$i")" != "$(netns_inode_at "$P")" ]; }; then
			BAD=$((BAD + 1))
			echo "# ADD $i: rc $CNI_RC, sizes $(netns_sizes_at "$P"), $(mounts_at "$P") mounts at $P, $CNI_OUT $CNI_ERR" >&2
		fi
		cni_call DEL "$P" "$(conf)"
		umount "$P" && rm -f "$P"
	done
}

mkdir -p "$D/private"
make_private_mount "$D/private"
swaps "$D/private"
assert_eq "0 0" "$GAPS $BAD" "private pin dir, each netns made by the ADD (spares 0): $N ADDs, $LOOKS looks at CNI_NETNS meanwhile, none without a netns; each with tcp 2048 udp 1024 and one mount at the path"
[ "$LOOKS" -ge $((N * 100)) ] && pass "the watcher looked often enough to see a window ($LOOKS looks; the old unmount-then-bind swap showed about 20 gaps per ADD)" ||
	fail "the watcher looked only $LOOKS times"

# /run/netns as iproute2 and podman leave it: a shared bind mount of itself,
# here with a peer elsewhere that sees every pin too
mkdir -p "$D/shared" "$D/peer"
mount --bind "$D/shared" "$D/shared" && mount --make-shared "$D/shared" && mount --bind "$D/shared" "$D/peer" ||
	cannot_run "cannot set up a shared pin dir"
SPARES=1
cni_pin_netns "$D/private/warm" # its ADD makes the first spare
cni_call ADD "$D/private/warm" "$(conf)"
assert_eq "0 1" "$CNI_RC $(spare_ready && echo 1)" "an ADD with spares 1 leaves a spare of its sizes"
umount "$D/private/warm" && rm -f "$D/private/warm"
swaps "$D/shared" "$D/peer"
assert_eq "0 0" "$GAPS $BAD" "shared pin dir with a peer, each netns a spare taken by the ADD: $N ADDs, $LOOKS looks, none without a netns; the peer shows the sized netns"
assert_eq "0 0" "$(count_pins_under "$D/shared") $(count_pins_under "$D/peer")" "no pin left in the shared dir or its peer"
assert_eq 0 "$(count_pins_under "$D/private")" "no pin left in the private dir"
assert_host_untouched
