#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman with the precreate hook installed AND nshash-runtime as its runtime
# (docs/oci.md: the wrapper keeps the hook's pin), many starts in a row: the
# wrapper checks the hook's netns is already sized by entering it from its
# private mount namespace, and the hook's waiting child must not take the
# wrapper for the container's init (a thread group leader in the netns with
# another mount namespace) and remove the pin before runc opens it.  On
# ac9cdec about 1 start in 10 to 60 failed: "runc create failed: ... namespace
# path: lstat STATE/pins/oci-...: no such file or directory", the hook's log
# naming the wrapper's pid as "the container's init".  Asserts every start
# sized exactly and no wrapper pid ever named as an init.  Up to
# NSHASH_HW_STARTS (60) starts within NSHASH_HW_SECONDS (150).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
require_root
require_kernel_knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_hooks_dir "$D/hooks" "$P"
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]
conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"NSHASH_POLICY=$P\"]" ||
	cannot_run "podman setup failed"
IMG=localhost/nshash-busybox
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
N=${NSHASH_HW_STARTS:-60}
# at most this long for the starts (a run that hangs is killed after 60 s)
end=$(($(date +%s) + ${NSHASH_HW_SECONDS:-150}))
bad=()
n=0
for i in $(seq "$N"); do
	[ "$(date +%s)" -lt "$end" ] || break
	n=$i
	t=$((1024 << (i % 4)))
	out=$(timeout -s KILL 60 podman --runtime "$BUILD/nshash-runtime" run --rm --network none \
		--annotation io.nshash.tcp=$t --annotation io.nshash.udp=256 $IMG sh -c "$SHOW" 2>&1)
	rc=$?
	[ $rc = 137 ] && out="(podman hung 60 s, killed) $out"
	[ "$out" = "$t 256" ] || bad+=("start $i (tcp $t): $(tr '\n' ' ' <<<"$out" | cut -c1-300)")
done
if [ ${#bad[@]} -eq 0 ]; then
	pass "hook + wrapper: $n starts, every one sized exactly"
else
	fail "hook + wrapper: ${#bad[@]} of $n starts failed"
	printf '#   %s\n' "${bad[@]}"
fi
wrappers=$(grep -o 'nshash-runtime\[[0-9]*\]' "$D/nshash.log" | grep -o '[0-9]*' | sort -u)
inits=$(grep -o "(pid [0-9]*, the container's init" "$D/nshash.log" | grep -o '[0-9]*' | sort -u)
assert_eq "" "$(comm -12 <(printf '%s\n' "$wrappers") <(printf '%s\n' "$inits") | tr '\n' ' ')" \
	"the hook's child never took a wrapper (pid in the log) for the container's init"
for _ in $(seq 50); do [ -z "$(ls "$S/pins" 2>/dev/null)" ] && break; sleep 0.1; done
assert_eq "0 " "$(engines_pins_left "$S") $(ls "$S/pins" 2>/dev/null)" "no pin left"
assert_host_untouched
