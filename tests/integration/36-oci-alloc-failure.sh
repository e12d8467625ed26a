#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# onFailure when the kernel silently falls back to the shared table: the hook
# and the wrapper run in a cgroup-v1 memory cgroup of 32M with the OOM killer
# off, asking for a 16Mi-entry TCP table (128 MiB, charged to them).
#   fail: exit 1, the fallback named, nothing on stdout, no pin, config.json unchanged
#   warn: exit 0, the config passed through byte for byte, a warning, no pin
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
BIG=16777216
make_memcg "nshash-t36-$$" 32M
policy() { engines_policy "$D/policy.json" "{\"stateDir\": \"$S\", \"maxTcp\": $BIG, \"onFailure\": \"$1\"}"; }
cfg="{\"ociVersion\": \"1.0.2\", \"annotations\": {\"io.nshash.tcp\": \"$BIG\"}, \"linux\": {\"namespaces\": [{\"type\": \"network\"}]}}"
printf '%s' "$cfg" >"$D/cfg.json"

# control: outside the cgroup the same request is served
policy fail
out=$(nshash-hook precreate --policy "$D/policy.json" <"$D/cfg.json" 2>/dev/null)
pin=$(jq -r '.linux.namespaces[0].path' <<<"$out")
assert_eq "$BIG" "$(nsenter --net="$pin" cat /proc/sys/net/ipv4/tcp_ehash_entries 2>/dev/null)" "control: outside the cgroup the hook gets a $BIG-entry table"
nshash delete "$pin" >/dev/null

# onFailure fail
in_memcg nshash-hook precreate --policy "$D/policy.json" <"$D/cfg.json" >"$D/out" 2>"$D/err"
assert_eq 1 $? "fail: the hook exits 1"
assert_contains "$(cat "$D/err")" "tcp size $BIG requested (effective $BIG), kernel gave the shared table" "fail: the fallback is named"
assert_contains "$(cat "$D/err")" "(allocation failed?)" "fail: with its likely cause"
assert_eq "" "$(cat "$D/out")" "fail: nothing on stdout"
assert_eq "" "$(ls "$S/pins")" "fail: no pin"

# onFailure warn
policy warn
in_memcg nshash-hook precreate --policy "$D/policy.json" <"$D/cfg.json" >"$D/out" 2>"$D/err"
assert_eq 0 $? "warn: the hook exits 0"
assert_eq "$cfg" "$(cat "$D/out")" "warn: the config passes through byte for byte (runtime makes a shared netns)"
assert_contains "$(cat "$D/err")" "warning: hostname (none): requested tcp=$BIG udp=0, effective: shared global tables (onFailure warn)" "warn: the warning says so"
assert_eq "" "$(ls "$S/pins")" "warn: no pin"

# the wrapper, onFailure fail: config.json untouched
policy fail
engines_runc_bundle "$D/b" /bin/true
engines_bundle_annotate "$D/b" io.nshash.tcp=$BIG
sum=$(sha256sum <"$D/b/config.json")
out=$(NSHASH_POLICY=$D/policy.json in_memcg nshash-runtime --root "$D/runc-root" create --bundle "$D/b" t36 2>&1 </dev/null)
assert_eq 1 $? "wrapper, fail: exit 1"
assert_contains "$out" "kernel gave the shared table" "wrapper, fail: the fallback is named"
assert_eq "$sum" "$(sha256sum <"$D/b/config.json")" "wrapper, fail: config.json unchanged"
assert_eq "" "$(ls "$S/pins")" "wrapper, fail: no pin"
assert_eq "" "$(runc --root "$D/runc-root" list -q 2>/dev/null)" "wrapper, fail: no container"
assert_host_untouched
