#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The newer podman features on a node as a user has it (60-day-on-a-node's
# sibling, the same isolation: tests/lib/day.sh): `make install` with
# PREFIX=/usr (the deb's layout: /usr/bin, /usr/libexec/nshash/netavark,
# /usr/share/nshash) overlaid on /usr and /etc in a private mount namespace,
# the shipped policy with the node's defaults and the auto initial sizes
# added (the admin's edit docs/oci.md and docs/auto.md ask for: defaultTcp
# 4096, defaultUdp 1024, autoInitialTcp 1024, autoInitialUdp 128; nothing
# else changed, so staleAge and reclaimInterval are their defaults, 60 s),
# the default state dir /run/nshash absent at first (a fresh /run), podman
# with the installed drop-ins' keys in a private containers.conf:
# 51-nshash-hooks-defaults.conf's hooks_dir (the opt-in hook for every
# container) and 52-nshash-networks.conf's helper_binaries_dir (the
# installed /usr/libexec/nshash/netavark first, byte for byte the shipped
# file).  The day:
#  - after a boot: a pod (--network none) whose infra container and members
#    asking nothing get exactly the defaults; after another boot, a
#    container on a network labelled io.nshash.tcp=2048 io.nshash.udp=512
#    gets exactly those; a pod on that network too;
#  - an auto workload (io.nshash.tcp=auto, io.nshash.udp=auto,
#    io.nshash.workload=day72) starts with the initial sizes (1024 128),
#    holds 3000 UDP sockets and 5000 loopback TCP connections, the installed
#    nshash-record.service's ExecStart (/usr/bin/nshash record, what the
#    timer runs) records its peaks, `podman restart` gives it exactly the
#    rule's sizes (32768 8192);
#  - a quiet 65 s (more than staleAge and reclaimInterval: real time), the
#    record again, then everything restarted (podman pod restart, podman
#    restart), the auto workload removed and started anew, a parallel burst
#    of 6 (pod members, labelled-network containers, auto workloads): exact
#    sizes everywhere, the long-running ones kept theirs;
#  - everything removed: no podman container or pod, no pin, /run/netns
#    empty, no link of the network (bridge, veth), no iptables rule naming
#    its subnet or bridge, no nshash or aardvark process, after
#    `nshash gc --max-idle 0` no ledger bytes and no spare, host knobs
#    unchanged.
# Own names: network nsh72n (10.172.1.0/24, bridge nsh72br1), pods and
# containers day72-*.

# ---------------------------------------------------------------- outside
source "$(dirname "$0")/../lib/day.sh"
day_enter "$@"

# ---------------------------------------------------------------- inside
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs podman jq nsenter python3
PAUSE=65 # > staleAge (60) and > reclaimInterval (60), their defaults (the shipped policy sets neither)
STATE=/run/nshash
PREFIX=/usr
NSH=$PREFIX/bin/nshash
# the private mount namespace, the install overlaid on /usr and /etc
day_begin 72 $PREFIX
SHARE=$PREFIX/share/nshash/containers.conf.d
for f in $NSH $PREFIX/bin/nshash-hook /usr/libexec/nshash/netavark/netavark; do
	[ -x "$f" ] || cannot_run "$f not installed"
done
cmp -s "$TOP/packaging/etc/nshash.json" /etc/nshash/nshash.json && pass "the installed policy is the shipped one" ||
	fail "/etc/nshash/nshash.json is not packaging/etc/nshash.json"
for f in 51-nshash-hooks-defaults.conf 52-nshash-networks.conf; do
	cmp -s "$TOP/packaging/containers/$f" "$SHARE/$f" && pass "the installed $f is the shipped one" ||
		fail "$SHARE/$f differs from packaging/containers/$f"
done
cmp -s "$TOP/packaging/systemd/nshash-record.service" $PREFIX/lib/systemd/system/nshash-record.service &&
	pass "the installed nshash-record.service is the shipped one" || fail "the installed nshash-record.service differs"
# the admin's edit: the node's defaults and the auto initial sizes (/etc is a private overlay)
jq '. + {"defaultTcp": 4096, "defaultUdp": 1024, "autoInitialTcp": 1024, "autoInitialUdp": 128}' \
	"$TOP/packaging/etc/nshash.json" >/etc/nshash/nshash.json.new && mv /etc/nshash/nshash.json.new /etc/nshash/nshash.json
export PATH=$PREFIX/sbin:$PREFIX/bin:/usr/local/sbin:/usr/local/bin:/sbin:/bin
unset NSHASH_POLICY NSHASH_STATE_DIR
RECORD_CMD=$(sed -n 's/^ExecStart=//p' $PREFIX/lib/systemd/system/nshash-record.service)
assert_eq "/usr/bin/nshash record" "$RECORD_CMD" "the installed timer's service runs the installed nshash record"
HOOKS_LINE=$(grep '^hooks_dir' "$SHARE/51-nshash-hooks-defaults.conf")
HELPERS_LINE=$(grep '^helper_binaries_dir' "$SHARE/52-nshash-networks.conf")
[ -n "$HOOKS_LINE" ] && [ -n "$HELPERS_LINE" ] || cannot_run "no hooks_dir or helper_binaries_dir in the installed drop-ins"

# ---- podman: a private containers.conf with the drop-ins' keys
engines_iptables_snapshot nsh72 10.172.1.
on_exit "ip link del nsh72br1"
ip route | grep -q '^10\.172\.1\.' && cannot_run "10.172.1.0/24 is already routed here"
engines_podman_setup "$D/podman" "$HOOKS_LINE
$HELPERS_LINE" || cannot_run "podman setup failed"
IMG=localhost/nshash-busybox
podman network create --subnet 10.172.1.0/24 --label io.nshash.tcp=2048 --label io.nshash.udp=512 nsh72n >/dev/null ||
	cannot_run "podman network create failed"
f=$D/podman/networks/nsh72n.json
jq '.network_interface = "nsh72br1"' "$f" >"$f.new" && mv "$f.new" "$f"
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
mkdir -p "$D/out"
pid_of() { podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null; }
sizes_of() { local p; p=$(pid_of "$1"); [ -n "$p" ] && [ "$p" != 0 ] && netns_sizes_of_pid "$p"; }
infra_of() { podman pod inspect -f '{{.InfraContainerID}}' "$1" 2>/dev/null; }
# run_rm NAME ARGS...: podman run --rm ARGS... $IMG (reads the sizes); stdout only
run_rm() { local n=$1; shift; timeout 120 podman run --rm "$@" $IMG sh -c "$SIZES" 2>"$D/out/$n.err" </dev/null; }
AUTO="--annotation io.nshash.tcp=auto --annotation io.nshash.udp=auto --annotation io.nshash.workload=day72"
DEF="4096 1024" LAB="2048 512" INIT="1024 128" LEARNED="32768 8192"
# The long-running ones: "NAME WANT" (a pod's infra container by its pod's name)
RUNNING=()
check_running() { # PHASE
	local c n t u got bad=()
	for c in "${RUNNING[@]}"; do
		read -r n t u <<<"$c"
		got=$(sizes_of "$n")
		[ "$got" = "$t $u" ] || bad+=("$n: want '$t $u', read '$got'")
	done
	assert_none "$1: the ${#RUNNING[@]} running containers keep their sizes" "${#RUNNING[@]}" "${bad[@]}"
}
# pod_up POD NETWORK WANT WHAT WHOSE: a pod and a detached member POD-a
# asking nothing; both with exactly WANT
pod_up() {
	podman pod create --name "$1" --network "$2" >/dev/null || fail "podman pod create --network $2"
	podman run -d --pod "$1" --name "$1-a" $IMG sleep 1000000 >/dev/null 2>"$D/out/$1-a.err" </dev/null
	assert_eq "$3" "$(sizes_of "$(infra_of "$1")")" "$4: its infra container has $5"
	assert_eq "$3" "$(sizes_of "$1-a")" "... a detached member asking nothing sees exactly them"
}
pause() {
	quiet
	note "pause: ${PAUSE}s of quiet (staleAge 60 s, reclaimInterval 60 s at the defaults)"
	sleep "$PAUSE"
}

# ---------------------------------------------------------------- the day
note "boot: a pod with the node's defaults"
assert_eq "" "$(ls -d $STATE 2>/dev/null)" "after a boot: $STATE absent"
pod_up day72-pod none "$DEF" "pod --network none, the first start after a boot" "the defaults"
infra=$(infra_of day72-pod)
assert_eq "$DEF" "$(run_rm pod-rm --pod day72-pod)" "... a --rm member asking nothing too"
RUNNING+=("$infra $DEF" "day72-pod-a $DEF")

note "boot again: a labelled network"
podman pod stop -t 0 day72-pod >/dev/null 2>&1
boot
assert_eq "$LAB" "$(run_rm lab-first --network nsh72n)" \
	"a labelled network, the first start after a boot: exactly io.nshash.tcp=2048 io.nshash.udp=512 (the installed netavark)"
podman pod start day72-pod >/dev/null 2>"$D/out/pod-start.err"
assert_eq "$DEF" "$(sizes_of "$infra")" "the pod started again after the boot: the defaults"
podman run -d --name day72-lab --network nsh72n $IMG sleep 1000000 >/dev/null 2>"$D/out/lab.err" </dev/null
assert_eq "$LAB" "$(sizes_of day72-lab)" "a detached container on the labelled network: exactly its labels' sizes"
pod_up day72-lpod nsh72n "$LAB" "a pod on the labelled network" "the labels' sizes, not the defaults"
linfra=$(infra_of day72-lpod)
RUNNING+=("day72-lab $LAB" "$linfra $LAB" "day72-lpod-a $LAB")

note "an auto workload learns its size"
# shellcheck disable=SC2086
podman run -d --name day72-auto --network none $AUTO $IMG sleep 1000000 >/dev/null 2>"$D/out/auto.err" </dev/null
assert_eq "$INIT" "$(sizes_of day72-auto)" "auto, no history: autoInitialTcp 1024, autoInitialUdp 128"
apid=$(pid_of day72-auto)
hold_sockets 3000 5000 "$D/ready" -t "${apid:-0}" -n
holder=$HOLDER
assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "the workload holds 3000 UDP sockets and 5000 loopback TCP connections"
out=$($RECORD_CMD 2>&1)
assert_contains "$out" "sampled 1 of" "\`$RECORD_CMD\` (the timer's service) samples the one auto netns"
assert_eq "podman::w=day72 10000 3000 32768 8192" \
	"$($NSH history --json | jq -r '.[] | select(.workload | endswith("w=day72")) | "\(.workload) \(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"')" \
	"the history: the workload's peaks and its auto sizes"
kill "$holder"
wait "$holder" 2>/dev/null
podman restart -t 0 day72-auto >/dev/null 2>"$D/out/auto-restart.err"
assert_eq "$LEARNED" "$(sizes_of day72-auto)" "podman restart: the auto workload gets exactly the rule's sizes"
RUNNING+=("day72-auto $LEARNED")
check_running "before the pause"

pause
note "after a quiet minute"
check_running "after ${PAUSE}s of quiet"
out=$($RECORD_CMD 2>&1)
assert_contains "$out" "sampled 1 of" "the record after the pause samples the idle auto workload"
assert_eq "32768 8192" "$($NSH history --json | jq -r '.[] | select(.workload | endswith("w=day72")) | "\(.autoTcp) \(.autoUdp)"')" \
	"the history keeps the peak of a workload gone idle"
podman pod restart day72-pod >/dev/null 2>"$D/out/pod-restart.err"
podman pod restart day72-lpod >/dev/null 2>"$D/out/lpod-restart.err"
podman restart -t 0 day72-lab >/dev/null 2>"$D/out/lab-restart.err"
infra=$(infra_of day72-pod) linfra=$(infra_of day72-lpod)
RUNNING=("$infra $DEF" "day72-pod-a $DEF" "day72-lab $LAB" "$linfra $LAB" "day72-lpod-a $LAB" "day72-auto $LEARNED")
check_running "pods and containers restarted after the pause"
podman rm -f -t 0 day72-auto >/dev/null 2>&1
unset 'RUNNING[5]'
# shellcheck disable=SC2086
podman run -d --name day72-auto2 --network none $AUTO $IMG sleep 1000000 >/dev/null 2>"$D/out/auto2.err" </dev/null
assert_eq "$LEARNED" "$(sizes_of day72-auto2)" "the auto workload removed and started anew after the pause: the rule's sizes"
RUNNING+=("day72-auto2 $LEARNED")

note "a burst of 6"
# shellcheck disable=SC2086
{
	run_rm b1 --pod day72-pod >"$D/out/b1" &
	run_rm b2 --network nsh72n >"$D/out/b2" &
	run_rm b3 --network none $AUTO >"$D/out/b3" &
	run_rm b4 --pod day72-lpod >"$D/out/b4" &
	run_rm b5 --network nsh72n >"$D/out/b5" &
	run_rm b6 --network none $AUTO >"$D/out/b6" &
	wait
}
bad=()
for b in "b1 $DEF" "b2 $LAB" "b3 $LEARNED" "b4 $LAB" "b5 $LAB" "b6 $LEARNED"; do
	read -r n t u <<<"$b"
	[ "$(cat "$D/out/$n")" = "$t $u" ] || bad+=("$n: want '$t $u', read '$(cat "$D/out/$n")': $(tail -2 "$D/out/$n.err" | tr '\n' ' ')")
done
assert_none "6 parallel starts (pod members, the labelled network, auto): exact sizes" 6 "${bad[@]}"
check_running "after the burst"

note "evening: everything removed"
podman pod rm -f day72-pod day72-lpod >/dev/null 2>&1
podman rm -f -t 0 day72-lab day72-auto2 >/dev/null 2>&1
podman network rm -f nsh72n >/dev/null 2>&1
quiet || fail "nshash processes still at work 20 s after the last start: $(nshash_procs | tr '\n' ' ')"
note "a boot: the learned sizes survive it"
boot
# shellcheck disable=SC2086
assert_eq "$LEARNED" "$(run_rm after-boot --network none $AUTO)" \
	"the auto workload's first start after a boot: the learned sizes (the history is in /var/lib/nshash, not $STATE)"
[ -s /var/lib/nshash/history ] && pass "the history file is /var/lib/nshash/history" || fail "no /var/lib/nshash/history"
quiet || fail "nshash processes still at work 20 s after the start after the boot: $(nshash_procs | tr '\n' ' ')"
assert_eq "" "$(podman ps -aq; podman pod ps -q)" "no podman container or pod left"
for _ in $(seq 50); do [ -z "$(ls -A /run/netns 2>/dev/null)" ] && break; sleep 0.2; done
assert_eq "" "$(ls -A /run/netns 2>/dev/null)" "/run/netns empty"
assert_eq "" "$(awk -v d="$STATE/" '$9 == "nsfs" && index($5, d) == 1 && index($5, d "templates/") != 1 && index($5, d "spares/") != 1 {print $5}' /proc/self/mountinfo)" \
	"no pin mounted under $STATE"
assert_eq "" "$(ls -A $STATE/pins 2>/dev/null | grep -vx '\.handoff\.[0-7]')" "no pin file under $STATE/pins"
assert_eq "" "$(awk -v d="$STATE/" '$9 == "nsfs" && index($5, d) != 1 {print $5}' /proc/self/mountinfo)" \
	"no nsfs mount of the day outside the state dir"
assert_eq "" "$(ip -o link show | grep -E 'nsh72|master nsh72' | cut -d: -f2)" "no link of the network (bridge nsh72br1, veth) left"
rules=$(for ipt in iptables ip6tables; do for t in filter nat mangle; do $ipt -w -t $t -S 2>/dev/null; done; done | grep -F -e 10.172.1. -e nsh72)
assert_eq "" "$rules" "no iptables rule naming the network's subnet or bridge left"
procs=$(for p in /proc/[0-9]*; do
	[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$MYNS" ] && grep -qE '^(aardvark-dns|netavark|conmon|nshash.*)$' "$p/comm" 2>/dev/null && cat "$p/comm"
done)
assert_eq "" "$procs" "no aardvark-dns, netavark, conmon or nshash process left"
day_idle_expiry $NSH
assert_host_untouched
note "day done in $(($(date +%s) - T0))s"
