#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Dry runs say what the real run will do: pods sized through the CNI plugin
# are removed (DEL, the runtime unmounts its pins), their ledger records
# still count; `reclaim --dry-run` and `gc --dry-run` must report the same
# ledger_dropped and table memory as the real `reclaim` right after, and
# leave the ledger as it was.  Before that, `list` counts live pods as
# proven alive by the runtime's pin (one that took a spare too), and no
# longer counts removed ones, without a reclaim.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq
D=$(make_state_dir)
S=$D/state
cni_node_policy "$D/node.json" "$S"
CONF='{"cniVersion":"1.0.0","name":"net1","type":"nshash","tcp":4096,"udp":1024,"spares":0}'
for i in 1 2 3 4; do
	cni_pin_netns "$D/pin$i"
	cni_call ADD "$D/pin$i" "$CONF"
	assert_eq 0 "$CNI_RC" "ADD $i ($CNI_ERR)"
done
# `list` names the runtime's pin: every live pod is proven alive by its pin,
# the one that took a spare too (recorded at its spares/ pin first)
SPARE='{"cniVersion":"1.0.0","name":"net1","type":"nshash","tcp":4096,"udp":1024,"spares":1}'
cni_pin_netns "$D/pin5"
cni_call ADD "$D/pin5" "$SPARE"
assert_eq 0 "$CNI_RC" "ADD 5, spares 1 ($CNI_ERR)"
spares_settled "$S"
cni_pin_netns "$D/pin6"
cni_call ADD "$D/pin6" "$SPARE"
assert_eq 0 "$CNI_RC" "ADD 6 ($CNI_ERR)"
assert_eq 1 "$(grep -c "^N .* $D/pin6\$" "$S/ledger")" "the pod that took a spare is recorded at the runtime's pin"
spares_settled "$S"
FOOT=$("$BUILD/nshash" --state-dir "$S" list | tail -1)
assert_contains "$FOOT" "in 6 netns sized by nshash" "list: 6 pods"
assert_not_contains "$FOOT" "not proven alive" "list: every pod proven alive by the pin it runs at ($FOOT)"
cni_call DEL "$D/pin5" "$SPARE"
umount "$D/pin5" && rm -f "$D/pin5"
cni_call DEL "$D/pin6" "$SPARE"
umount "$D/pin6" && rm -f "$D/pin6"
"$BUILD/nshash" --state-dir "$S" gc --max-idle 0 >/dev/null
# removed pods: gone from list's count once the kernel freed their netns
# (its cleanup runs asynchronously), with no reclaim
for _ in $(seq 50); do
	FOOT=$("$BUILD/nshash" --state-dir "$S" list | tail -1)
	[[ "$FOOT" == *"in 4 netns"* ]] && break
	sleep 0.2
done
assert_contains "$FOOT" "in 4 netns sized by nshash" "list: removed pods no longer counted, without a reclaim"
for i in 1 2 3 4; do
	cni_call DEL "$D/pin$i" "$CONF"
	umount "$D/pin$i" && rm -f "$D/pin$i"
done
LEDGER=$(cat "$S/ledger")
NSH() { "$BUILD/nshash" -j --state-dir "$S" "$@"; }
DRY=$(NSH reclaim --dry-run | jq -c '[.ledger_dropped, .table_memory.netns, .table_memory.bytes]')
GCDRY=$(NSH gc --dry-run | jq -c '[.ledger_dropped, .table_memory.netns, .table_memory.bytes]')
assert_eq "$LEDGER" "$(cat "$S/ledger")" "the dry runs leave the ledger as it was"
REAL=$(NSH reclaim | jq -c '[.ledger_dropped, .table_memory.netns, .table_memory.bytes]')
assert_eq "[4,0,0]" "$REAL" "the real reclaim drops the 4 removed pods' records"
assert_eq "$REAL" "$DRY" "reclaim --dry-run said what the real reclaim did"
assert_eq "$REAL" "$GCDRY" "gc --dry-run said what the real reclaim did"
assert_host_untouched
