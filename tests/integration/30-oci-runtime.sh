#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash-runtime in front of runc and crun, on plain bundles: the container
# reads back exactly the effective sizes asked for, config.json stays byte for
# byte, a container without annotations shares the global tables,
# create/start/delete and a failed create leave no pin, lo is up.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
export NSHASH_POLICY=$P
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries) $(ip -o link show lo | grep -c "[<,]UP[,>]")'
GLOBAL_TCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GLOBAL_UDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)

engines_busybox_rootfs "$D/rootfs"
bundle() { engines_script_bundle "$D/$1" "$D/rootfs" "$SHOW" "${@:2}"; } # NAME KEY=VALUE...
run_in() { (cd "$D/$1" && nshash-runtime --root "$ROOT" run "$2" 2>>"$D/stderr"); }

# --- runc, sizes asked for, rounding, one protocol only
bundle b1 io.nshash.tcp=4096 io.nshash.udp=1024
# jq would normalize numbers: append the raw text
jq '. + {"x-nshash-test": "PLACEHOLDER"}' "$D/b1/config.json" | sed 's|"PLACEHOLDER"|{"f": 2.50, "s": "a\\/b", "big": 18446744073709551615}|' >"$D/x" && mv "$D/x" "$D/b1/config.json"
assert_contains "$(cat "$D/b1/config.json")" '"f": 2.50' "test config carries 2.50 verbatim"
chmod 0640 "$D/b1/config.json"
sum=$(sha256sum <"$D/b1/config.json")
assert_eq "4096 1024 1" "$(run_in b1 t30a)" "runc: tcp=4096 udp=1024 read back inside, lo up"
assert_eq "$sum" "$(sha256sum <"$D/b1/config.json")" "config.json byte for byte (the runtime read the sized config elsewhere)"
assert_eq "640" "$(stat -c %a "$D/b1/config.json")" "config.json keeps its mode"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left after the container exited"
assert_contains "$(cat "$D/nshash.log")" "t30a: sized netns pinned at $S/run/netns" "log names the container and the (private) pin"
assert_contains "$(cat "$D/nshash.log")" "requested tcp=4096 udp=1024, effective tcp=4096 udp=1024" "log has requested and effective sizes"
assert_not_contains "$(cat "$D/nshash.log")" "nshash-hook" "no hook ran"
assert_eq "4096 1024 1" "$(run_in b1 t30a)" "the same bundle run again is sized again"

bundle b2 io.nshash.tcp=3000 io.nshash.udp=100
assert_eq "4096 128 1" "$(run_in b2 t30b)" "runc: 3000/100 round to 4096/128"
bundle b3 io.nshash.tcp=8192
assert_eq "8192 -$GLOBAL_UDP 1" "$(run_in b3 t30c)" "runc: tcp only; udp stays on the global table"

# --- no annotations: untouched
bundle b4
sum=$(sha256sum <"$D/b4/config.json")
out=$(run_in b4 t30d)
assert_eq "-$GLOBAL_TCP -$GLOBAL_UDP 1" "$out" "no annotations: global tables (runc's own netns)"
assert_eq "$sum" "$(sha256sum <"$D/b4/config.json")" "no annotations: config.json byte for byte"

# --- create / start / delete, the containerd way (-b, --pid-file, detached)
bundle b5 io.nshash.tcp=16384 io.nshash.udp=2048
jq --arg c "$SHOW > /out.txt" '.process.args = ["sh", "-c", $c] | .root.path = "rootfs5"' "$D/b5/config.json" >"$D/x" && mv "$D/x" "$D/b5/config.json"
cp -a "$D/rootfs" "$D/b5/rootfs5"
nshash-runtime --root "$ROOT" create -b "$D/b5" --pid-file "$D/b5/init.pid" t30e >"$D/b5.out" 2>&1 </dev/null
assert_eq 0 $? "create through the wrapper"
assert_eq 0 "$(engines_pins_left "$S")" "no pin while the container exists (its init holds the netns)"
assert_eq created "$(runc --root "$ROOT" state t30e | jq -r .status)" "runc sees the container created"
nshash-runtime --root "$ROOT" start t30e
for _ in $(seq 50); do [ "$(runc --root "$ROOT" state t30e 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
assert_eq "16384 2048 1" "$(cat "$D/b5/rootfs5/out.txt" 2>/dev/null)" "create/start: sizes inside"
nshash-runtime --root "$ROOT" delete t30e
assert_eq 0 $? "delete through the wrapper"
assert_eq 0 "$(engines_pins_left "$S")" "delete removed the pin"
assert_eq "" "$(ls "$S/pins")" "no pin file left"

# --- a run that fails in runc before the container exists: no pin left
bundle b7 io.nshash.tcp=4096
jq '.root.path = "/nonexistent-rootfs"' "$D/b7/config.json" >"$D/x" && mv "$D/x" "$D/b7/config.json"
out=$(run_in b7 t30i 2>&1)
assert_eq 0 "$(engines_pins_left "$S")" "a run failing in runc (bad rootfs) leaves no pin"

# --- a create that fails in runc: delete --force still removes the pin
bundle b6 io.nshash.tcp=4096
jq '.root.path = "/nonexistent-rootfs"' "$D/b6/config.json" >"$D/x" && mv "$D/x" "$D/b6/config.json"
nshash-runtime --root "$ROOT" create -b "$D/b6" t30f >/dev/null 2>&1 </dev/null
rc=$?
[ $rc -ne 0 ] && pass "runc create of a broken bundle fails (exit $rc)" || fail "runc create of a broken bundle succeeded"
nshash-runtime --root "$ROOT" delete --force t30f >/dev/null 2>&1
assert_eq 0 "$(engines_pins_left "$S")" "delete --force after a failed create removed the pin"

# --- crun (hybrid-cgroup workaround), through the same wrapper
engines_policy "$D/policy-crun.json" "{\"stateDir\": \"$S\", \"runtime\": \"crun\"}"
bundle c1 io.nshash.tcp=32768 io.nshash.udp=4096
out=$(cd "$D/c1" && NSHASH_POLICY=$D/policy-crun.json engines_crun_ns nshash-runtime --root "$D/crun-root" run t30g 2>>"$D/stderr")
assert_eq "32768 4096 1" "$out" "crun: tcp=32768 udp=4096 read back inside"
bundle c2
out=$(cd "$D/c2" && NSHASH_POLICY=$D/policy-crun.json engines_crun_ns nshash-runtime --root "$D/crun-root" run t30h 2>>"$D/stderr")
assert_eq "-$GLOBAL_TCP -$GLOBAL_UDP 1" "$out" "crun: no annotations, global tables"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"
assert_host_untouched
