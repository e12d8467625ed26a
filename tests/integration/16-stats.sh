#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash stats and show's socket counts against netns this test fills with a
# known number of sockets: established TCP connections (both ends), TIME_WAIT,
# a listener and a bound-only socket (neither in the established hash), UDP
# v4 and v6.  Exact counts in JSON, own vs shared entries, the Prometheus
# format, a netns named by pid, bad arguments.  Looks only at its own netns.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs python3

STATE=$(make_state_dir)
export NSHASH_STATE_DIR=$STATE
P=nshash-t16-$$
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
cleanup_pins() { for n in $(ls /run/netns 2>/dev/null | grep "^$P"); do nshash delete "$n"; done; }
on_exit cleanup_pins
pids=()
on_exit 'for p in "${pids[@]}"; do kill "$p"; done; wait'
global_tcp=$(cat /proc/sys/net/ipv4/tcp_ehash_entries); global_tcp=${global_tcp#-}
global_udp=$(cat /proc/sys/net/ipv4/udp_hash_entries); global_udp=${global_udp#-}

# Open sockets and sleep: UDP4 UDP6 ESTABLISHED(connections) TIME_WAIT.
cat >"$WORK/sockets.py" <<'EOF'
import socket, sys, time
udp4, udp6, conns, tw = map(int, sys.argv[1:5])
keep = []
for _ in range(udp4):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); keep.append(s)
for _ in range(udp6):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::1", 0)); keep.append(s)
unbound = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); keep.append(unbound)   # not in the UDP table
bound_only = socket.socket(); bound_only.bind(("127.0.0.1", 0)); keep.append(bound_only)  # bind hash only
lst = socket.socket(); lst.bind(("127.0.0.1", 0)); lst.listen(64); keep.append(lst)      # listening hash
for _ in range(conns):
    c = socket.create_connection(lst.getsockname()); s, _ = lst.accept(); keep += [c, s]
for _ in range(tw):   # the client closes first: its end goes to TIME_WAIT
    c = socket.create_connection(lst.getsockname()); s, _ = lst.accept()
    c.close(); time.sleep(0.05); s.close()
print("ready", flush=True)
time.sleep(600)
EOF
start_sockets() { # OUTFILE CMD... : run, wait for "ready"
	local out=$1
	shift
	"$@" >"$out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q ready "$out" && return 0; sleep 0.1; done
	fail "socket helper did not start: $(cat "$out")"
	return 1
}

nshash create --tcp 1000 --udp 200 "$P-own" >/dev/null || cannot_run "nshash create failed"
nshash create "$P-shared" >/dev/null || cannot_run "nshash create (shared) failed"
start_sockets "$WORK/own.out" ip netns exec "$P-own" python3 "$WORK/sockets.py" 5 2 4 2
start_sockets "$WORK/shared.out" ip netns exec "$P-shared" python3 "$WORK/sockets.py" 3 0 1 0
# A netns no pin holds: named by its process.
start_sockets "$WORK/pid.out" unshare -n sh -c 'ip link set lo up && exec python3 "$0" 300 0 0 0' "$WORK/sockets.py"
upid=${pids[-1]}
# ... in a cgroup named the way podman names a container's: the id is read from it.
cid=$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)
pids_root=/sys/fs/cgroup/pids$(awk -F: '$2 == "pids" {print $3}' /proc/self/cgroup)
CG=${pids_root%/}/nshash-t16-$$/libpod-$cid.scope
if mkdir -p "$CG" && echo "$upid" >"$CG/cgroup.procs"; then
	on_exit "echo $upid >${pids_root%/}/cgroup.procs; rmdir $CG ${CG%/*}"
else
	fail "cannot put the helper in a pids cgroup $CG"
fi

# ---- JSON, selected netns
out=$(nshash stats --json "$P-own" "$P-shared")
assert_eq 0 $? "stats --json NAME NAME exits 0"
own=$(jq -c --arg id "/run/netns/$P-own" '.netns[] | select(.id == $id)' <<<"$out")
shr=$(jq -c --arg id "/run/netns/$P-shared" '.netns[] | select(.id == $id)' <<<"$out")
assert_eq "1024 10 2 1 256 7" "$(jq -r '"\(.tcp.entries) \(.tcp.sockets) \(.tcp.time_wait) \(.tcp.listeners) \(.udp.entries) \(.udp.sockets)"' <<<"$own")" \
	"own netns: tcp 1024 entries, 8 established + 2 TIME_WAIT (listener and bound-only not counted), udp 256 entries, 5+2 bound"
assert_eq "-$global_tcp 2 -$global_udp 3" "$(jq -r '"\(.tcp.entries) \(.tcp.sockets) \(.udp.entries) \(.udp.sockets)"' <<<"$shr")" \
	"shared netns: negative entries (the global tables), 2 TCP and 3 UDP sockets"
assert_eq "true false false true" "$(jq -r '"\(.tcp.own) \(.tcp.global) \(.udp.global) \(.udp.own)"' <<<"$own")" "own netns: own, not global"
assert_eq "false true" "$(jq -r '"\(.tcp.own) \(.tcp.global)"' <<<"$shr")" "shared netns: global"
assert_eq "python3 true netns" "$(jq -r '"\(.command) \(.pinned) \(.kind)"' <<<"$own")" "a pinned netns is named by its pin and shows a process inside"
assert_eq "128 128" "$(jq -r '"\(.tcp.recommended) \(.udp.recommended)"' <<<"$own")" "few sockets: recommended 128 (the floor)"
assert_eq "0.009765625" "$(jq -r .tcp.load <<<"$own")" "load = sockets / entries (10/1024)"
assert_eq "1 2 1 3" "$(jq -r '"\(.shared.tcp.netns) \(.shared.tcp.sockets) \(.shared.udp.netns) \(.shared.udp.sockets)"' <<<"$out")" \
	"shared totals over the netns asked for: only the shared one"
assert_eq "/run/netns/$P-shared" "$(jq -r '.shared.udp.top[0].id' <<<"$out")" "top contributor of the shared UDP table"

# ---- the pid-named netns, by pid:PID and in the full scan
out=$(nshash stats -j "pid:$upid")
assert_eq "pid:$upid process python3 300 -$global_udp 512" \
	"$(jq -r '.netns[0] | "\(.id) \(.kind) \(.command) \(.udp.sockets) \(.udp.entries) \(.udp.recommended)"' <<<"$out")" \
	"pid:PID: named by pid and command; 300 UDP sockets → recommended 512"
assert_eq "$cid podman" "$(jq -r '.netns[0] | "\(.container) \(.engine)"' <<<"$out")" "container id and engine from the cgroup (libpod-ID.scope)"
# The policy's caps (NSHASH_POLICY, as for the hook and the wrapper) bound the recommendation.
echo '{"maxUdp": 256}' >"$WORK/policy.json"
assert_eq "256" "$(NSHASH_POLICY=$WORK/policy.json nshash stats -j "pid:$upid" | jq .netns[0].udp.recommended)" "policy maxUdp 256 caps the recommendation"
echo '{"maxUdp": ' >"$WORK/bad.json"
err=$(NSHASH_POLICY=$WORK/bad.json nshash stats -j "pid:$upid" 2>&1 >/dev/null)
assert_contains "$err" "recommendations ignore the policy's caps" "a broken policy file is reported, not fatal"
full=$(nshash stats --json)
assert_eq 0 $? "full scan exits 0"
assert_eq "300" "$(jq -r --arg id "pid:$upid" '.netns[] | select(.id == $id) | .udp.sockets' <<<"$full")" "full scan finds the unpinned netns by its process"
assert_eq "10 python3" "$(jq -r --arg id "/run/netns/$P-own" '.netns[] | select(.id == $id) | "\(.tcp.sockets) \(.command)"' <<<"$full")" \
	"full scan lists the pin once, with its process"
assert_eq "1" "$(jq -r --arg ino "$(stat -L -c %i "/run/netns/$P-own")" '[.netns[] | select(.inode == ($ino | tonumber))] | length' <<<"$full")" \
	"the pinned netns appears once although a process is in it too"
assert_eq "1" "$(jq '[.netns[] | select(.host)] | length' <<<"$full")" "exactly one netns is the host's"

# ---- Prometheus
prom=$(nshash stats --prometheus "$P-own" "$P-shared")
assert_contains "$prom" "# TYPE nshash_sockets gauge" "prometheus: TYPE line"
assert_contains "$prom" "# HELP nshash_sockets " "prometheus: HELP line"
assert_contains "$prom" "nshash_sockets{netns=\"/run/netns/$P-own\",proto=\"tcp\"} 10" "prometheus: tcp sockets with netns and proto labels"
assert_contains "$prom" "nshash_table_entries{netns=\"/run/netns/$P-shared\",proto=\"udp\"} -$global_udp" "prometheus: shared entries negative"
assert_contains "$prom" "nshash_shared_sockets{proto=\"udp\"} 3" "prometheus: shared totals"
assert_contains "$prom" "nshash_tcp_time_wait_sockets{netns=\"/run/netns/$P-own\"} 2" "prometheus: TIME_WAIT"
assert_contains "$prom" "nshash_tcp_listeners{netns=\"/run/netns/$P-own\"} 1" "prometheus: listeners"
bad=$(grep -v '^# \(HELP\|TYPE\) [a-z_]* ' <<<"$prom" | grep -Ev '^[a-z_]+\{([a-z_]+="([^"\\]|\\.)*",?)+\} -?[0-9.e+-]+$')
assert_eq "" "$bad" "prometheus: every line is a comment or NAME{LABELS} VALUE"
# Label values are escaped: a pin path with a quote and a backslash.
odd="$STATE/odd\"na\\me"
nshash create "$odd" >/dev/null
assert_contains "$(nshash stats --prometheus "$odd")" 'netns="'"$STATE"'/odd\"na\\me",proto="tcp"' "prometheus: quote and backslash escaped in labels"
nshash delete "$odd"

# ---- text and show
txt=$(nshash stats "$P-own")
assert_contains "$txt" "own 1024" "text: own table"
assert_contains "$txt" "/run/netns/$P-own (pid " "text: pin and the process inside"
show=$(nshash show "$P-own")
assert_contains "$show" "tcp sockets: 10 (2 TIME_WAIT; listeners, not in this table: 1)" "show: tcp socket counts"
assert_contains "$show" "udp sockets: 7, 0.027 per bucket" "show: udp socket counts and load"
assert_eq "10 7" "$(nshash show --json "$P-own" | jq -r '"\(.tcp.sockets) \(.udp.sockets)"')" "show --json: sockets"

# ---- bad input
err=$(nshash stats "pid:abc" 2>&1)
assert_eq 2 $? "stats pid:abc exits 2"
assert_contains "$err" 'stats: "pid:abc": expected pid:PID' "pid:abc named in the error"
err=$(nshash stats "$P-nosuch" 2>&1)
assert_eq 2 $? "stats of a missing netns exits 2"
assert_contains "$err" "/run/netns/$P-nosuch: No such file or directory" "missing netns named"
err=$(nshash stats --json --prometheus 2>&1)
assert_eq 2 $? "--json with --prometheus exits 2"
assert_rc 2 "stats --tcp is refused" -- nshash stats --tcp 1
err=$(setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all "$NSHASH" stats "$P-own" 2>&1)
assert_eq 1 $? "stats without privileges exits 1"
assert_contains "$err" "/run/netns/$P-own: entering a network namespace needs CAP_SYS_ADMIN" "and says what it needs"
assert_host_untouched
