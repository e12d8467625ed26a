#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `auto` with podman and the shipped precreate hook, the policy's
# autoInitialTcp/Udp left at 0 (the shared tables).  A first start with no
# history gets the shared tables, but in a netns nshash made (--network
# none) or adopted (a bridge network: podman's own, already on them), marked
# for its workload; it holds 3000 bound UDP sockets and 5000 established
# loopback TCP connections, `nshash record` samples it, and `podman start`
# of the same container as well as a new `podman run` of the same workload
# (the same --hostname: the key podman's spec gives the hook) get exactly
# tcp 32768 udp 8192 (10000 ehash sockets, 3000 UDP; the rule of
# docs/auto.md); on the bridge network by a transplant.  Another workload
# gets the initial (shared) tables.  A container without --hostname is
# keyed by its short id: the same key after its init was SIGKILLed,
# `podman system migrate` and a new podman process started it again.  The
# policy's defaults as auto with nshash-runtime as podman's runtime after
# the hook: the shared-tables netns is the hook's, taken as it is, and
# learned.  Nothing left: no
# pin, no container.  Own names: nsh71*,
# network nsh71 (10.171.0.0/24, bridge nsh71br0).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq

engines_oci_setup
engines_iptables_snapshot nsh71 10.171.0.
LOG=$D/nshash.log
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$LOG\"}"
engines_hooks_dir "$D/hooks" "$P"
# conmon_env_vars: the policy of nshash-runtime as podman's runtime
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]
conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"NSHASH_POLICY=$P\"]" ||
	cannot_run "podman setup failed"
ip route | grep -q '^10\.171\.0\.' && cannot_run "10.171.0.0/24 is already routed here"
podman network create --subnet 10.171.0.0/24 nsh71 >/dev/null || cannot_run "podman network create failed"
f=$D/podman/networks/nsh71.json
jq '.network_interface = "nsh71br0"' "$f" >"$f.new" && mv "$f.new" "$f"
on_exit "podman network rm -f nsh71 >/dev/null 2>&1"
IMG=localhost/nshash-busybox
N="$BUILD/nshash --state-dir $S"
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
SHARED="-$GTCP -$GUDP"
AUTO="--annotation io.nshash.tcp=auto --annotation io.nshash.udp=auto"
pid_of() { podman inspect -f '{{.State.Pid}}' "$1"; }
mark_of() { head -1 "$S"/workloads/*-"$(stat -L -c %i "/proc/$1/ns/net")" 2>/dev/null; } # the key (then "id N")
pins_gone() { for _ in $(seq 50); do [ "$(engines_pins_left "$S")" = 0 ] && return 0; sleep 0.1; done; return 1; }
holder=
hold() { # PID UDP TCP: the workload's sockets, in the container's netns
	nsenter -t "$1" -n ip link set lo up
	hold_sockets "$2" "$3" "$D/ready" -t "$1" -n
	holder=$HOLDER
	assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "the workload holds $2 UDP sockets and $3 TCP connections"
}
# the holder keeps the netns alive: gone before podman stops the container
unhold() { kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; }
hist() { $N history --json | jq -r --arg w "$1" '.[] | select(.workload == $w) | "\(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"'; }

for net in none nsh71; do
	: >"$LOG"
	# --- the first start: no history, the shared tables, marked
	podman run -d --name nsh71-$net --hostname nsh71-web-$net --network $net $AUTO $IMG sleep 300 >/dev/null ||
		fail "podman run --network $net"
	pid=$(pid_of nsh71-$net)
	assert_eq "$SHARED" "$(netns_sizes_of_pid "$pid")" "--network $net, no history: the shared tables"
	if [ $net = none ]; then
		assert_contains "$(cat "$LOG")" "sized netns pinned at $S/pins/oci-" "--network none: nshash made the netns"
		assert_contains "$(cat "$LOG")" "requested tcp=0 udp=0, effective tcp=-$GTCP udp=-$GUDP" "... on the shared tables"
	else
		assert_contains "$(cat "$LOG")" "kept on the shared tables (auto: tcp=0 udp=0), marked for its workload: effective tcp=-$GTCP udp=-$GUDP" \
			"bridge: podman's own netns adopted"
		assert_eq 1 "$(nsenter -t "$pid" -n ip -o -4 addr show eth0 | grep -c 10.171.0.)" "bridge: eth0 has its address"
	fi
	assert_eq "podman::host=nsh71-web-$net" "$(mark_of "$pid")" "--network $net: the netns is marked for its workload"
	hold "$pid" 3000 5000
	counts=$($N stats --json "pid:$pid" | jq -r '.netns[0] | "\(.tcp.sockets) \(.udp.sockets)"' 2>/dev/null)
	assert_eq "10000 3000" "$counts" "--network $net: 10000 ehash sockets, 3000 UDP sockets"
	# (not "sampled 1": nsfs inode numbers are reused at once, so the mark of
	# a netns gone may name another test's new netns until record drops it)
	assert_contains "$($N record 2>&1)" "sampled " "--network $net: record samples"
	assert_eq "10000 3000 32768 8192" "$(hist "podman::host=nsh71-web-$net")" "--network $net: its peaks and auto sizes"
	unhold

	# --- podman start of the same container: the learned sizes
	podman stop -t 0 nsh71-$net >/dev/null
	podman start nsh71-$net >/dev/null || fail "podman start --network $net"
	assert_eq "32768 8192" "$(netns_sizes_of_pid "$(pid_of nsh71-$net)")" "--network $net: podman start: tcp 32768 udp 8192"
	[ $net = none ] || assert_contains "$(tail -3 "$LOG")" "replaced by a sized one with its configuration (recreated eth0): requested tcp=32768 udp=8192" \
		"bridge: podman start: transplanted to the learned sizes"
	podman rm -f -t 0 nsh71-$net >/dev/null

	# --- a new podman run of the same workload
	podman run -d --name nsh71-$net-b --hostname nsh71-web-$net --network $net $AUTO $IMG sleep 300 >/dev/null
	assert_eq "32768 8192" "$(netns_sizes_of_pid "$(pid_of nsh71-$net-b)")" "--network $net: a new podman run of the workload: tcp 32768 udp 8192"
	podman rm -f -t 0 nsh71-$net-b >/dev/null

	# --- another workload: no leak
	out=$(podman run --rm --hostname nsh71-other-$net --network $net $AUTO $IMG sh -c \
		'echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)')
	assert_eq "$SHARED" "$out" "--network $net: another workload gets the initial (shared) tables"
done

# --- no --hostname: the short id, the same after the init was SIGKILLed,
# `podman system migrate` (podman's own restart: its state migrated, its
# pause process gone) and a new podman process started it
podman run -d --name nsh71-id --network none $AUTO $IMG sleep 300 >/dev/null
pid=$(pid_of nsh71-id)
short=$(podman inspect -f '{{.Id}}' nsh71-id | cut -c1-12)
assert_eq "podman::host=$short" "$(mark_of "$pid")" "no --hostname: keyed by the short id"
hold "$pid" 100 200
$N record >/dev/null 2>&1
assert_eq "400 100 1024 256" "$(hist "podman::host=$short")" "its peaks: 400 TCP, 100 UDP"
unhold
kill -9 "$pid" # its init dies (conmon SIGKILLed too leaves podman 4.3's container "stopping" for good)
for _ in $(seq 50); do [ "$(podman inspect -f '{{.State.Status}}' nsh71-id)" = exited ] && break; sleep 0.1; done
podman system migrate || fail "podman system migrate"
podman start nsh71-id >/dev/null || fail "podman start after the init was SIGKILLed"
pid=$(pid_of nsh71-id)
assert_eq "1024 256" "$(netns_sizes_of_pid "$pid")" "after its init was SIGKILLed and podman system migrate: the same key, the learned sizes"
assert_eq "podman::host=$short" "$(mark_of "$pid")" "... marked with the same key"
podman rm -f -t 0 nsh71-id >/dev/null

# --- the policy's defaults as auto (the opt-in hooks file for every
# container), nshash-runtime as podman's runtime after the hook: the hook's
# shared-tables netns (its pin beside io.nshash.tcp=0 udp=0, which the
# wrapper passes through) runs, and the workload is learned
engines_policy "$D/policy-auto.json" "{\"stateDir\": \"$S\", \"logFile\": \"$LOG\", \"defaultTcp\": \"auto\", \"defaultUdp\": \"auto\"}"
mkdir -p "$D/hooks-auto"
jq --arg p "$BUILD/nshash-hook" --arg pol "$D/policy-auto.json" '.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' \
	"$TOP/hook/defaults-hooks.d/nshash-precreate.json" >"$D/hooks-auto/nshash-precreate.json"
: >"$LOG"
podman --hooks-dir "$D/hooks-auto" run -d --name nsh71-rt --hostname nsh71-rt --network none \
	--runtime "$BUILD/nshash-runtime" $IMG sleep 300 >"$D/rt.out" 2>&1
pid=$(pid_of nsh71-rt)
assert_eq "$SHARED" "$(netns_sizes_of_pid "${pid:-0}" 2>&1)" "defaults auto + nshash-runtime: runs, the shared tables"
assert_eq "$BUILD/nshash-runtime" "$(podman inspect -f '{{.OCIRuntime}}' nsh71-rt)" "... run by nshash-runtime (tcp=0 udp=0: passed through)"
assert_eq "podman::host=nsh71-rt" "$(mark_of "${pid:-0}")" "marked by the hook"
hold "${pid:-0}" 100 200
$N record >/dev/null 2>&1
unhold
podman stop -t 0 nsh71-rt >/dev/null
podman --hooks-dir "$D/hooks-auto" start nsh71-rt >/dev/null 2>&1
assert_eq "1024 256" "$(netns_sizes_of_pid "$(pid_of nsh71-rt)" 2>&1)" "started again: the learned sizes"
podman rm -f -t 0 nsh71-rt >/dev/null

# --- nothing left
pins_gone
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"
assert_eq 0 "$(podman ps -a -q | wc -l)" "no container left"
