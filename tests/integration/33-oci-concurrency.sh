#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# 20 containers started at once through podman (precreate hook) and 20
# through containerd (nshash-runtime), four size pairs each: every container
# gets exactly its own sizes, every pin is distinct, none is left after the
# containers are removed, and the host knobs never move.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

N=${NSHASH_CONCURRENCY:-20}
PAIRS=("1024 128" "4096 1024" "16384 2048" "65536 4096")
engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_hooks_dir "$D/hooks" "$P"
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]" || cannot_run "podman setup failed"

pid_podman() { podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null; }
pid_ctr() { ctr task ls | awk -v c="$1" '$1 == c {print $2}'; }
# check_all ENGINE PREFIX PID-FUNCTION LOG-WHO: every container PREFIX0..
# runs with exactly its pair, and had its own netns made (logged as LOG-WHO)
check_all() {
	local engine=$1 prefix=$2 pidof=$3 i pid got bad=0 started=0
	for i in $(seq 0 $((N - 1))); do
		pid=$($pidof "$prefix$i")
		[ -n "$pid" ] && [ "$pid" != 0 ] && started=$((started + 1)) || { echo "# $prefix$i: $(cat "$D/$prefix$i.out")"; continue; }
		got=$(netns_sizes_of_pid "$pid")
		[ "$got" = "${PAIRS[$((i % 4))]}" ] || { bad=$((bad + 1)); echo "# $prefix$i: want ${PAIRS[$((i % 4))]}, got $got"; }
	done
	assert_eq "$N" "$started" "$engine: $N containers started in parallel"
	assert_eq 0 "$bad" "$engine: each container has exactly its own sizes (4 pairs)"
	assert_eq "$N" "$(grep -o "$4" "$D/nshash.log" | sort -u | wc -l)" \
		"$engine: $N distinct sized netns were made"
}

# ---- podman
jobs=()
for i in $(seq 0 $((N - 1))); do
	set -- ${PAIRS[$((i % 4))]}
	podman run -d --name p$i --network none --annotation io.nshash.tcp=$1 --annotation io.nshash.udp=$2 \
		localhost/nshash-busybox sleep 600 >"$D/p$i.out" 2>&1 &
	jobs+=($!)
done
wait "${jobs[@]}"
check_all podman p pid_podman "sized netns pinned at $S/pins/oci-[0-9a-f]*"
assert_host_untouched
jobs=()
for i in $(seq 0 $((N - 1))); do
	podman rm -f -t 0 p$i >/dev/null 2>&1 &
	jobs+=($!)
done
wait "${jobs[@]}"
for _ in $(seq 100); do [ -z "$(ls "$S/pins")" ] && break; sleep 0.1; done
assert_eq "" "$(ls "$S/pins")" "podman: no pin left after rm"
assert_eq 0 "$(engines_pins_left "$S")" "podman: no pin mounted"

# ---- containerd through nshash-runtime
engines_busybox_rootfs "$D/rootfs"
engines_containerd_start "$D/containerd" NSHASH_POLICY="$P" || cannot_run "containerd did not start"
jobs=()
for i in $(seq 0 $((N - 1))); do
	set -- ${PAIRS[$((i % 4))]}
	mkdir -p "$D/r$i" && cp -a "$D/rootfs/." "$D/r$i/"
	timeout 120 ctr run -d --runc-binary "$BUILD/nshash-runtime" --runc-root "$D/runc-root" --annotation io.nshash.tcp=$1 --annotation io.nshash.udp=$2 \
		--rootfs "$D/r$i" k$i /bin/sleep 600 >"$D/k$i.out" 2>&1 &
	jobs+=($!)
done
wait "${jobs[@]}"
check_all containerd k pid_ctr "k[0-9]*: sized netns pinned"
jobs=()
for i in $(seq 0 $((N - 1))); do
	(ctr task kill -s KILL k$i && sleep 0.5 && ctr task rm -f k$i && ctr containers rm k$i) >/dev/null 2>&1 &
	jobs+=($!)
done
wait "${jobs[@]}"
assert_eq "" "$(ls "$S/pins")" "containerd: no pin left after the tasks were deleted"
assert_eq 0 "$(engines_pins_left "$S")" "containerd: no pin mounted"
assert_host_untouched
