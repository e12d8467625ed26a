#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The documented removal of a node's state dir (docs/cni.md): once no pod
# made while chained is left, `nshash gc --max-idle 0` removes the spares
# and idle templates, and with the last spare the bind of STATE/spares onto
# itself; `rm -rf STATE` then succeeds and nothing stays mounted under it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs
D=$(make_state_dir)
S=$D/state
cni_node_policy "$D/node.json" "$S"
CONF='{"cniVersion":"1.0.0","name":"net1","type":"nshash","tcp":4096,"udp":1024,"spares":2}'
for i in 1 2; do
	cni_pin_netns "$D/pin$i"
	cni_call ADD "$D/pin$i" "$CONF"
	assert_eq 0 "$CNI_RC" "ADD $i ($CNI_ERR)"
	spares_settled "$S"
done
[ "$(mounts_under "$S/spares" | grep -c .)" -ge 2 ] && pass "spares made, $S/spares bound onto itself" ||
	fail "no spares under $S/spares: $(mounts_under "$S/spares" | tr '\n' ' ')"
# the pods go: DEL, the runtime removes its pins
for i in 1 2; do
	cni_call DEL "$D/pin$i" "$CONF"
	umount "$D/pin$i" && rm -f "$D/pin$i"
done
spares_settled "$S"
OUT=$("$BUILD/nshash" --state-dir "$S" gc --max-idle 0 2>&1)
assert_eq 0 "$?" "gc --max-idle 0 succeeds ($OUT)"
assert_eq "" "$(mounts_under "$S" | tr '\n' ' ')" "after gc --max-idle 0 nothing is mounted under the state dir"
ERR=$(rm -rf "$S" 2>&1)
assert_eq "0 " "$? $ERR" "rm -rf of the state dir succeeds"
[ -e "$S" ] && fail "$S still there" || pass "the state dir is gone"
assert_host_untouched
