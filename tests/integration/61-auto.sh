#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `auto` with nshash-runtime (runc): a workload holds 3000 bound UDP sockets
# and 5000 established loopback TCP connections (10000 sockets in its
# established hash: both ends live in the netns), `nshash record` keeps its
# peaks, and the same workload started again with --nshash-tcp=auto
# --nshash-udp=auto gets exactly the rule's sizes (peak x 2 -> next power
# of two: tcp 10000 -> 32768, udp 3000 -> 8192).  Another workload gets the
# initial sizes (no leak).  A first start with no history and autoInitial*
# 0 gets the shared tables in a netns nshash makes and marks: record learns
# from it and the next start is sized.  A corrupt and a torn history file are repaired
# with a warning on the start path; hostile io.nshash.workload keys are
# refused with their exact error or stored escaped.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"autoInitialTcp\": 1024, \"logFile\": \"$D/nshash.log\"}"
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
export NSHASH_POLICY=$P
W=$BUILD/nshash-runtime
N="$BUILD/nshash --state-dir $S"
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
engines_busybox_rootfs "$D/rootfs"

start() { # BUNDLE KEY=VALUE...: a bundle whose process sleeps, with these annotations
	local b=$1
	shift
	engines_script_bundle "$D/$b" "$D/rootfs" "sleep 300" "$@"
}
run_detached() { # BUNDLE ID WRAPPER-OPTIONS...
	local b=$1 id=$2
	shift 2
	(cd "$D/$b" && "$W" "$@" --root "$ROOT" create "$id" >"$D/$id.out" 2>&1)
	runc --root "$ROOT" state "$id" 2>/dev/null | jq -r .pid
}

# --- a first start with no history and autoInitial* 0 (the shared tables):
# nshash still makes the netns (shared tables: the read-only sysctls show
# the global tables' sizes, negated) and marks it, so record learns from it
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
engines_policy "$D/policy0.json" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
start first
pid=$(NSHASH_POLICY=$D/policy0.json run_detached first t61z --nshash-tcp=auto --nshash-udp=auto)
assert_eq "-$GTCP -$GUDP" "$(netns_sizes_of_pid "${pid:-0}")" "no history, autoInitial 0: the shared tables"
assert_contains "$(cat "$D/nshash.log")" "requested tcp=0 udp=0, effective tcp=-$GTCP udp=-$GUDP" \
	"nshash made that netns itself (shared tables)"
ino=$(stat -L -c %i "/proc/$pid/ns/net")
assert_eq "runtime::id=t61z" "$(head -1 "$S"/workloads/*-"$ino" 2>/dev/null)" "... and marked it for its workload"
nsenter -t "$pid" -n ip link set lo up
hold_sockets 100 200 "$D/ready0" -t "$pid" -n
holder=$HOLDER
out=$($N record 2>&1)
assert_contains "$out" "sampled 1 of" "record samples the first run on the shared tables"
assert_eq "400 100 1024 256" "$($N history --json | jq -r '.[] | select(.workload == "runtime::id=t61z") | "\(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"')" \
	"its peaks (200 loopback connections: 400 sockets; 100 UDP) and the sizes they give"
kill "$holder"; wait "$holder" 2>/dev/null
"$W" --root "$ROOT" delete -f t61z >/dev/null 2>&1
start firstb
pid=$(NSHASH_POLICY=$D/policy0.json run_detached firstb t61z --nshash-tcp=auto --nshash-udp=auto)
assert_eq "1024 256" "$(netns_sizes_of_pid "${pid:-0}")" "started again: learned from the first run"
"$W" --root "$ROOT" delete -f t61z >/dev/null 2>&1
# the precreate hook's pin of such a netns, which no runtime ever joined:
# gc removes it like any other
start pc io.nshash.tcp=auto io.nshash.udp=auto io.nshash.workload=pc
pin=$("$BUILD/nshash-hook" precreate --policy "$D/policy0.json" <"$D/pc/config.json" 2>"$D/pc.err" | jq -r '.annotations["io.nshash.pin"]')
assert_eq 1 "$(engines_pins_left "$S")" "precreate, auto with no history: a pin of the shared tables ($pin)"
assert_eq "podman::w=pc" "$(head -1 "$S"/workloads/*-"$(stat -L -c %i "$S/pins/$pin")" 2>/dev/null)" \
	"... marked for its workload"
age_claims 120 "$S/pins/$pin"
$N gc --stale-age 1 >/dev/null 2>&1
assert_eq 0 "$(engines_pins_left "$S")" "gc removes that pin nobody joined"
# auto with no history on the host's network (no netns entry): nothing to
# make or learn, and never refused (it was refused as "host network")
start hostnet
jq 'del(.linux.namespaces[] | select(.type == "network"))' "$D/hostnet/config.json" >"$D/x" &&
	mv "$D/x" "$D/hostnet/config.json"
pid=$(NSHASH_POLICY=$D/policy0.json run_detached hostnet t61h --nshash-tcp=auto --nshash-udp=auto)
[ -n "$pid" ] && [ "$pid" != 0 ] && pass "auto, no history, the host's network: started ($(head -c 200 "$D/t61h.out"))" ||
	fail "auto, no history, the host's network: not started: $(cat "$D/t61h.out")"
assert_eq "$(readlink /proc/self/ns/net)" "$(readlink /proc/"${pid:-0}"/ns/net 2>/dev/null)" "... in the host's netns, untouched"
"$W" --root "$ROOT" delete -f t61h >/dev/null 2>&1
# a clean slate: the marks of netns gone name whatever netns gets their
# inode number next (nsfs reuses them at once) until record drops them
rm -f "$S/history" "$S"/workloads/*

# --- the workload: 3000 UDP sockets, 5000 TCP connections over lo
start web1
pid=$(run_detached web1 t61a --nshash-tcp=auto --nshash-udp=auto)
assert_eq "1024 -$GUDP" "$(netns_sizes_of_pid "${pid:-0}")" "no history: autoInitialTcp 1024, udp shared (autoInitialUdp 0)"
nsenter -t "$pid" -n ip link set lo up
hold_sockets 3000 5000 "$D/ready" -t "$pid" -n
holder=$HOLDER
assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "the workload holds its sockets"
counts=$($N stats --json "pid:$pid" | jq -r '.netns[0] | "\(.tcp.sockets) \(.udp.sockets)"' 2>/dev/null)
assert_eq "10000 3000" "$counts" "measured: 5000 loopback connections are 10000 ehash sockets; 3000 UDP sockets"
out=$($N record 2>&1)
assert_contains "$out" "sampled 1 of" "record samples the one netns nshash sized for a workload"
hist=$($N history --json)
assert_eq "runtime::id=t61a 10000 3000 32768 8192" "$(jq -r '.[0] | "\(.workload) \(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"' <<<"$hist")" "history: peaks and the auto sizes"
kill "$holder"; wait "$holder" 2>/dev/null
"$W" --root "$ROOT" delete -f t61a >/dev/null 2>&1

# --- started again: exactly the rule's sizes
start web1b
pid=$(run_detached web1b t61a --nshash-tcp=auto --nshash-udp=auto)
assert_eq "32768 8192" "$(netns_sizes_of_pid "${pid:-0}")" "the same workload again: tcp 32768 udp 8192"
"$W" --root "$ROOT" delete -f t61a >/dev/null 2>&1

# --- annotations: io.nshash.tcp=auto with an explicit workload key
start ann io.nshash.tcp=auto io.nshash.udp=auto io.nshash.workload=web
pid=$(run_detached ann t61b)
assert_eq "1024 -$GUDP" "$(netns_sizes_of_pid "${pid:-0}")" "another workload: no leak of t61a's history"
"$W" --root "$ROOT" delete -f t61b >/dev/null 2>&1

# --- a corrupt, then a torn history file: warned, repaired, never an error
printf 'nshash-history 1\nw runtime::id=t61a 10000 %s 3000 %s %s\n\001garbage\nw torn 1 2' "$(date +%s)" "$(date +%s)" "$(date +%s)" >"$S/history"
start web1c
pid=$(run_detached web1c t61a --nshash-tcp=auto --nshash-udp=auto)
assert_eq "32768 8192" "$(netns_sizes_of_pid "${pid:-0}")" "damaged history: the good line still sizes"
assert_contains "$(cat "$D/nshash.log")" "2 damaged lines dropped" "the start path warns about the damage"
out=$($N record 2>&1)
assert_contains "$out" "2 damaged lines dropped" "record warns too"
assert_eq "nshash-history 1" "$(head -1 "$S/history")" "record rewrote the file whole"
assert_eq 0 "$(grep -c garbage "$S/history")" "the damage is gone"
"$W" --root "$ROOT" delete -f t61a >/dev/null 2>&1
head -c 20 "$S/history" >"$S/history.x" && mv "$S/history.x" "$S/history"
start web1d
pid=$(run_detached web1d t61a --nshash-tcp=auto --nshash-udp=auto)
assert_eq "1024 -$GUDP" "$(netns_sizes_of_pid "${pid:-0}")" "torn history: the start goes on with the initial sizes"
assert_contains "$(tail -3 "$D/nshash.log")" "damaged line" "torn: warned"
"$W" --root "$ROOT" delete -f t61a >/dev/null 2>&1

# --- a scope a tenant could write (CRI-O copies pod annotations): two
# namespace annotations that disagree give no key, the initial sizes
start ns1 io.nshash.tcp=auto io.nshash.workload=web io.kubernetes.pod.namespace=tenant-a \
	io.kubernetes.cri.sandbox-namespace=victim
pid=$(run_detached ns1 t61f)
assert_eq "1024" "$(netns_sizes_of_pid "${pid:-0}" | cut -d' ' -f1)" "disagreeing namespace annotations: the initial size"
assert_contains "$(tail -5 "$D/nshash.log")" "io.kubernetes.pod.namespace and io.kubernetes.cri.sandbox-namespace disagree" \
	"... and the log says why"
"$W" --root "$ROOT" delete -f t61f >/dev/null 2>&1

# --- hostile keys
long=$(printf 'k%.0s' $(seq 300))
start bad1 io.nshash.tcp=auto "io.nshash.workload=$long"
(cd "$D/bad1" && "$W" --root "$ROOT" create t61c >"$D/bad1.out" 2>&1)
assert_contains "$(cat "$D/bad1.out")" "annotation io.nshash.workload: workload key" "a 300-byte key is refused"
assert_contains "$(cat "$D/bad1.out")" "at most 200" "with the limit"
start bad2 io.nshash.tcp=auto "io.nshash.workload=../../x y%"
pid=$(run_detached bad2 t61d)
$N record >/dev/null 2>&1
assert_contains "$($N history)" "runtime::w=../../x%20y%25" "../ and spaces are stored and printed escaped"
assert_eq 0 "$(ls "$S" | grep -c '^x')" "no file made from the key"
"$W" --root "$ROOT" delete -f t61d >/dev/null 2>&1
jq -n '{"io.nshash.tcp":"auto","io.nshash.workload":"a\u0001b"}' >"$D/ann.json"
engines_script_bundle "$D/bad3" "$D/rootfs" "sleep 300"
jq --slurpfile a "$D/ann.json" '.annotations = $a[0]' "$D/bad3/config.json" >"$D/x" && mv "$D/x" "$D/bad3/config.json"
(cd "$D/bad3" && "$W" --root "$ROOT" create t61e >"$D/bad3.out" 2>&1)
assert_contains "$(cat "$D/bad3.out")" "control characters are not allowed" "a control character is refused"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"

# --- teardowns the wrapper does not see (the container's netns went with
# its processes): gc removes their marks
left=$(ls "$S/workloads" | grep -vc '\.tmp\.')
assert_eq 1 "$([ "$left" -ge 1 ] && echo 1)" "marks of containers gone are left ($left) until record or gc"
assert_eq "$left" "$($N gc --json | jq -r .workload_marks_removed)" "gc removes every one"
assert_eq "" "$(ls "$S/workloads")" "... and none is left"

# time_wait_only NETNS READY: 20 loopback connections made and closed in the
# netns, until only their TIME_WAIT sockets are left; C = "SOCKETS TIME_WAIT"
time_wait_only() {
	hold_sockets 0 20 "$2" --net="$1"
	kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
	for _ in $(seq 50); do
		C=$($N stats --json "$1" | jq -r '.netns[0].tcp | "\(.sockets) \(.time_wait)"')
		[ "${C% *}" = "${C#* }" ] && break
		sleep 0.1
	done
}
# mark NETNS KEY: a mark as a front-end writes it (the key, the netns id); M its path
mark() {
	local id
	id=$(python3 -c 'import fcntl,os,struct,sys; fd=os.open(sys.argv[1],os.O_RDONLY); print(struct.unpack("Q",fcntl.ioctl(fd,0x8008b70d,b"\0"*8))[0])' "$1")
	M="$S/workloads/$(stat -L -c %d-%i "$1")"
	printf '%s\nid %s\n' "$2" "$id" >"$M"
}

# --- nshash delete: the pinned netns goes with its pin (no process in it),
# its last sample (here TIME_WAIT sockets alone) is recorded and its mark
# removed
$N create "$D/t61g" >/dev/null
on_exit "umount '$D/t61g' 2>/dev/null; rm -f '$D/t61g'"
mark "$D/t61g" runtime::w=del
time_wait_only "$D/t61g" "$D/ready7"
assert_eq 1 "$([ "${C% *}" = "${C#* }" ] && [ "${C% *}" -ge 20 ] && echo 1)" "20 closed connections: TIME_WAIT sockets alone ($C)"
$N delete "$D/t61g"
assert_eq "no" "$([ -e "$M" ] && echo yes || echo no)" "delete removes the mark"
assert_eq "runtime::w=del ${C% *} 0" "$($N history --json | jq -r '.[] | select(.workload == "runtime::w=del") | "\(.workload) \(.tcpPeak) \(.udpPeak)"')" \
	"delete's sample is in the history"

# --- the hook's poststop removing a container's pin: the same
mkdir -p -m 0700 "$S/pins"
$N create "$S/pins/t61h" >/dev/null
on_exit "umount '$S/pins/t61h' 2>/dev/null; rm -f '$S/pins/t61h'"
mark "$S/pins/t61h" podman::w=post
time_wait_only "$S/pins/t61h" "$D/ready8"
mkdir -p "$D/post"
printf '{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp": "256", "io.nshash.pin": "t61h"}, "linux": {"namespaces": [{"type": "network", "path": "%s"}]}}' "$S/pins/t61h" >"$D/post/config.json"
out=$(printf '{"ociVersion": "1.0.2", "id": "t61h", "status": "stopped", "bundle": "%s", "annotations": {"io.nshash.tcp": "256"}}' "$D/post" | "$BUILD/nshash-hook" poststop --policy "$P" 2>&1)
assert_contains "$out" "auto: workload podman::w=post: sampled at teardown" "poststop samples the workload"
assert_eq "no" "$([ -e "$M" ] && echo yes || echo no)" "poststop removes the mark"
assert_eq 0 "$(count_pins_under "$S/pins/t61h")" "... and the pin"
assert_eq "podman::w=post ${C% *} 0" "$($N history --json | jq -r '.[] | select(.workload == "podman::w=post") | "\(.workload) \(.tcpPeak) \(.udpPeak)"')" \
	"poststop's sample is in the history"

# --- nshash-runtime delete of a container pinned on the host (shared mount
# propagation): the pin's netns goes, sampled first, its mark removed
start shr io.nshash.workload=shr
jq '.linux.rootfsPropagation = "rshared"' "$D/shr/config.json" >"$D/x" && mv "$D/x" "$D/shr/config.json"
pid=$(run_detached shr t61s --nshash-tcp=auto)
pin=$(ls "$S/pins" | grep '^t61s-')
assert_eq 1 "$([ -n "$pin" ] && [ "$(count_pins_under "$S/pins/$pin")" -ge 1 ] && echo 1)" "a shared-propagation container: pinned on the host ($(cat "$D/t61s.out"))"
M="$S/workloads/$(stat -L -c %d-%i "$S/pins/$pin")"
assert_eq "runtime::w=shr" "$(head -1 "$M" 2>/dev/null)" "its netns is marked"
runc --root "$ROOT" kill t61s KILL
for _ in $(seq 50); do [ "$(runc --root "$ROOT" state t61s 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
nsenter --net="$S/pins/$pin" ip link set lo up
time_wait_only "$S/pins/$pin" "$D/ready9"
"$W" --root "$ROOT" delete t61s >/dev/null 2>&1
assert_eq "no" "$([ -e "$M" ] && echo yes || echo no)" "delete removes the mark"
assert_eq "runtime::w=shr ${C% *}" "$($N history --json | jq -r '.[] | select(.workload == "runtime::w=shr") | "\(.workload) \(.tcpPeak)"')" \
	"delete's sample (TIME_WAIT sockets: $C) is in the history"
