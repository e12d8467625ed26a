#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash-hook and nshash-runtime killed with SIGKILL at random points: the
# host knobs never move, the engine's usual `delete --force` cleans what the
# wrapper made, and `nshash gc` removes the pins a crash left without a
# container (one such orphan is made deterministically: the hook is killed
# while blocked writing its output).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

ROUNDS=${NSHASH_CRASH_ROUNDS:-25}
engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
H=$BUILD/nshash-hook
cfg='{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "4096", "io.nshash.udp": "1024"}, "linux": {"namespaces": [{"type": "network"}]}}'
# kill_within MS INPUT CMD...: start CMD reading INPUT, SIGKILL it after
# 0..MS-1 milliseconds
kill_within() {
	local ms=$1 in=$2 p
	shift 2
	"$@" <"$in" &
	p=$!
	sleep "$(printf '0.%03d' $((RANDOM % ms)))"
	kill -9 $p 2>/dev/null
	wait $p 2>/dev/null
}

# ---- a deterministic orphan: pinned, then killed before podman got the config
big=$(head -c 200000 /dev/zero | tr '\0' x)
mkfifo "$D/fifo"
exec 7<>"$D/fifo" # keep it open for writing so the hook's open never fails; nobody reads
printf '{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "4096", "x": "%s"}, "linux": {"namespaces": [{"type": "network"}]}}' "$big" >"$D/big.json"
"$H" precreate --policy "$P" <"$D/big.json" >"$D/fifo" 2>/dev/null &
hp=$!
for _ in $(seq 100); do [ "$(count_pins_under "$S/pins/")" = 1 ] && break; sleep 0.05; done
assert_eq 1 "$(count_pins_under "$S/pins/")" "hook blocked writing its output holds a pin"
kill -9 $hp
wait $hp 2>/dev/null
exec 7>&-
assert_eq 1 "$(count_pins_under "$S/pins/")" "killed hook left an orphan pin (no container)"

# ---- random kills of the hook
printf '%s' "$cfg" >"$D/cfg.json"
for i in $(seq "$ROUNDS"); do
	kill_within 30 "$D/cfg.json" "$H" precreate --policy "$P" >/dev/null 2>&1
done
assert_host_untouched

# ---- random kills of the wrapper (it may already be runc when the kill lands)
engines_busybox_rootfs "$D/rootfs"
engines_runc_bundle "$D/b" /bin/sleep 300
engines_bundle_annotate "$D/b" io.nshash.tcp=8192 io.nshash.udp=512
jq --arg r "$D/rootfs" '.root.path = $r' "$D/b/config.json" >"$D/x" && mv "$D/x" "$D/b/config.json"
for i in $(seq "$ROUNDS"); do
	mkdir -p "$D/b$i" && cp "$D/b/config.json" "$D/b$i/"
	NSHASH_POLICY=$P kill_within 250 /dev/null nshash-runtime --root "$ROOT" create --bundle "$D/b$i" crash$i >>"$D/wrapper.out" 2>&1
done
assert_host_untouched
cat "$D/wrapper.out" | sort | uniq -c | head -5 | sed "s/^/# /"
echo "# after the kills: $(count_pins_under "$S/pins/") pins mounted, $(ls "$S/pins" | grep -c "^oci-") hook pins, $(ls "$S/pins" | grep -c "^crash") wrapper pins, $(runc --root "$ROOT" list -q 2>/dev/null | wc -l) runc containers"
# what an engine does after a failed create: delete --force
for i in $(seq "$ROUNDS"); do
	NSHASH_POLICY=$P nshash-runtime --root "$ROOT" delete --force crash$i >/dev/null 2>&1
done
assert_eq "" "$(runc --root "$ROOT" list -q 2>/dev/null)" "delete --force removed every container"
assert_eq 0 "$(ls "$S/pins" | grep -c '^crash')" "delete --force removed every wrapper pin"

# ---- gc removes what no container uses (the hook's orphans)
# pins younger than --stale-age are left alone (a creator may be at work)
nshash --state-dir "$S" gc --stale-age 3600 >/dev/null 2>&1
assert_contains "$(ls "$S/pins")" "oci-" "gc --stale-age 3600 keeps young orphans"
age_claims 120 "$S"/pins/* # a pin's age is its claim's, 60 s at least
nshash --state-dir "$S" gc --stale-age 1 >"$D/gc.out" 2>&1
assert_eq 0 "$?" "nshash gc succeeds"
assert_eq "" "$(ls "$S/pins")" "nshash gc removed every pin without a container (needs nshash_gc to call nshash_oci_gc_orphans)"
assert_eq 0 "$(count_pins_under "$S/pins/")" "no pin mounted"
# a pin in use is kept (the wrapper leaves none on the host: a pin as an
# older version left it, with a process inside)
mkdir -p -m 0700 "$S/pins"
nshash --state-dir "$S" create --tcp 4096 "$S/pins/alive-0" >/dev/null
nsenter --net="$S/pins/alive-0" sleep 30 &
sp=$!
sleep 0.2
age_claims 120 "$S/pins/alive-0"
nshash --state-dir "$S" gc --stale-age 1 >/dev/null 2>&1
assert_eq 1 "$(count_pins_under "$S/pins/")" "gc keeps a pin a process uses"
kill $sp
wait $sp 2>/dev/null
nshash --state-dir "$S" gc --stale-age 1 >/dev/null 2>&1
assert_eq 0 "$(count_pins_under "$S/pins/")" "gc removes it once the process is gone"
assert_host_untouched
