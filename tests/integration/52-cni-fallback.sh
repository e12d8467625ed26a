#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The kernel's silent fallback, for real: the plugin runs in a memory cgroup
# too small for a 16Mi TCP table (OOM killer off, as docs/kernel.md describes),
# the kernel gives the shared table, and the plugin reports code 101 under
# fail — leaving the runtime's netns as it was — or passes through with a
# warning under warn.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs
D=$(make_state_dir)
TMPL=$(make_state_dir) # the templates of the default strategy, outside $D
make_memcg "nshash-test52-$$" 32M
cni_node_policy "$D/node.json" "$TMPL" '"maxTcp": 16777216' # a 128 MiB table is the point here

# cni_call inside the cgroup
cni_call_limited() { # ONFAILURE
	local errf
	errf=$(mktemp)
	CNI_OUT=$(printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":16777216,"onFailure":"%s","stateDir":"%s"}' "$1" "$TMPL" |
		in_memcg env CNI_COMMAND=ADD CNI_CONTAINERID=c52 CNI_NETNS="$D/pin" CNI_IFNAME=eth0 "$CNI_PLUGIN" 2>"$errf")
	CNI_RC=$?
	CNI_ERR=$(cat "$errf")
	rm -f "$errf"
}
cni_pin_netns "$D/pin"
INO=$(netns_inode_at "$D/pin")
BEFORE=$(netns_sizes_at "$D/pin")

cni_call_limited fail
assert_cni_error 101 "tcp size 16777216 requested (effective 16777216), kernel gave the shared table" "fallback under fail: code 101 naming the sizes"
assert_eq "$INO $BEFORE" "$(netns_inode_at "$D/pin") $(netns_sizes_at "$D/pin")" "fallback under fail: the runtime's netns is left as it was"
assert_eq "1" "$(count_pins_under "$D")" "fallback under fail: no extra mount"

cni_call_limited warn
assert_eq '0 {"cniVersion":"1.0.0"}' "$CNI_RC $CNI_OUT" "fallback under warn: ADD passes through"
assert_contains "$CNI_ERR" "warning (onFailure warn, code 101)" "fallback under warn: the warning is logged"
assert_eq "$INO" "$(netns_inode_at "$D/pin")" "fallback under warn: the pod keeps the runtime's (shared) netns"
assert_host_untouched
