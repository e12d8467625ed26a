#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The hook and the CNI plugin run as root on hostile input: once their input
# is parsed they keep only the capabilities their work needs (issue 10).
# Each is caught at the end of its run, blocked on a full stdout or stderr
# pipe (tests/lib/capwatch.py), and its capability sets are read from
# /proc/PID/status: the permitted and effective sets hold nothing beyond
# CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_NET_ADMIN, CAP_SYS_PTRACE and
# CAP_SYS_ADMIN (precreate of a container with a user namespace of its own
# also: CAP_SETUID/SETGID/SETFCAP wrote its mappings and are gone by its end),
# the ambient set is empty, and the work itself still worked.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs capsh
PY=$(command -v python3) || cannot_run "python3 missing"

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
H=$BUILD/nshash-hook
# CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2, CAP_NET_ADMIN 12, CAP_SYS_PTRACE 19, CAP_SYS_ADMIN 21
ALLOWED=$(((1 << 1) | (1 << 2) | (1 << 12) | (1 << 19) | (1 << 21)))
FULL=$(awk '/^CapBnd/ {print $2}' /proc/self/status)

# watch DESC STREAM INPUT-FILE CMD...: run it, check its capabilities
watch() {
	local desc=$1 stream=$2 input=$3 out eff prm amb extra
	shift 3
	out=$(timeout -k 2 30 "$PY" "$TOP/tests/lib/capwatch.py" "$stream" "$input" -- "$@")
	if [[ "$out" != *CapEff=* ]]; then
		fail "$desc: not caught at the end of its run ($out)"
		return
	fi
	eff=$(sed -n 's/.*CapEff=\([0-9a-f]*\).*/\1/p' <<<"$out")
	prm=$(sed -n 's/.*CapPrm=\([0-9a-f]*\).*/\1/p' <<<"$out")
	amb=$(sed -n 's/.*CapAmb=\([0-9a-f]*\).*/\1/p' <<<"$out")
	extra=$((0x$eff & ~ALLOWED | 0x$prm & ~ALLOWED))
	if [ "$extra" -eq 0 ] && [ "$((0x$amb))" -eq 0 ]; then
		pass "$desc: keeps only $(capsh --decode="$prm" | cut -d= -f2)"
	else
		fail "$desc: still holds $(capsh --decode="$(printf '%x' "$extra")" | cut -d= -f2) (CapEff $eff, CapPrm $prm, CapAmb $amb; full set $FULL)"
	fi
	assert_contains "$out" "rc=0" "$desc: succeeded"
}

# precreate: sizes a netns, the config on stdout blocks
printf '{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "4096"}, "linux": {"namespaces": [{"type": "network"}]}}' >"$D/config.json"
watch "precreate" stdout "$D/config.json" "$H" precreate --policy "$P"
assert_eq 1 "$(engines_pins_left "$S")" "precreate pinned its netns"
PIN=$(ls "$S/pins")

# precreate of a container with a user namespace of its own: CAP_SETUID,
# CAP_SETGID and CAP_SETFCAP wrote its mappings and are gone by the end of the run
printf '{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "4096"}, "linux": {"namespaces": [{"type": "network"}, {"type": "user"}], "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}], "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]}}' >"$D/config-userns.json"
on_exit "umount -l '$S/userns/'* 2>/dev/null"
watch "precreate, a user namespace of its own" stdout "$D/config-userns.json" "$H" precreate --policy "$P"
assert_eq "2 1" "$(engines_pins_left "$S") $(count_pins_under "$S/userns/")" "... pinned its netns and its user namespace"
for u in "$S"/userns/oci-*; do
	umount "$u" && rm "$u" && nshash delete "$S/pins/${u##*/}" >/dev/null
done

# createRuntime: verifies a process's netns, its last log line blocks
nsenter --net="$S/pins/$PIN" sleep 300 &
INSIDE=$!
on_exit "kill $INSIDE"
sleep 0.2
printf '{"ociVersion": "1.0.2", "id": "c42", "pid": %d, "status": "creating", "annotations": {"io.nshash.tcp": "4096"}}' "$INSIDE" >"$D/state.json"
watch "createRuntime" stderr "$D/state.json" "$H" createRuntime --policy "$P"
kill $INSIDE
wait $INSIDE 2>/dev/null

# poststop: removes the pin it wrote (bundle config as precreate returned it)
mkdir -p "$D/bundle"
printf '{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "4096", "io.nshash.pin": "%s"}, "linux": {"namespaces": [{"type": "network", "path": "%s"}]}}' \
	"$PIN" "$S/pins/$PIN" >"$D/bundle/config.json"
printf '{"ociVersion": "1.0.2", "id": "c42", "status": "stopped", "bundle": "%s", "annotations": {"io.nshash.tcp": "4096"}}' "$D/bundle" >"$D/state.json"
watch "poststop" stderr "$D/state.json" "$H" poststop --policy "$P"
assert_eq 0 "$(engines_pins_left "$S")" "poststop removed the pin"

# the CNI plugin's ADD: replaces the netns, the result on stdout blocks
CD=$(make_state_dir)
cni_pin_netns "$CD/ns1"
printf '{"cniVersion": "1.0.0", "name": "n", "type": "nshash", "tcp": 4096, "stateDir": "%s"}' "$S" >"$D/cni.json"
watch "CNI ADD" stdout "$D/cni.json" env NSHASH_POLICY="$P" CNI_COMMAND=ADD CNI_CONTAINERID=c42 CNI_IFNAME=eth0 CNI_NETNS="$CD/ns1" "$CNI_PLUGIN"
assert_eq 4096 "$(netns_sizes_at "$CD/ns1" | cut -d' ' -f1)" "CNI ADD sized the netns"
assert_host_untouched
