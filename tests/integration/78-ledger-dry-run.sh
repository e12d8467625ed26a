#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Dry runs say what the real run will do: pods sized through the CNI plugin
# are removed (DEL, the runtime unmounts its pins), their ledger records
# still count; `reclaim --dry-run` and `gc --dry-run` must report the same
# ledger_dropped and table memory as the real `reclaim` right after, and
# leave the ledger as it was.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
require_root
require_kernel_knobs
command -v jq >/dev/null || cannot_run "jq missing"
D=$(make_state_dir)
S=$D/state
cni_node_policy "$D/node.json" "$S"
CONF='{"cniVersion":"1.0.0","name":"net1","type":"nshash","tcp":4096,"udp":1024,"spares":0}'
for i in 1 2 3 4; do
	cni_pin_netns "$D/pin$i"
	cni_call ADD "$D/pin$i" "$CONF"
	assert_eq 0 "$CNI_RC" "ADD $i ($CNI_ERR)"
done
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
