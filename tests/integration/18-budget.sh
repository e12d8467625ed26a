#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Node-wide table memory budget (maxTableBytes, `nshash create
# --max-table-bytes`): exact under concurrency (20 parallel creations under
# a budget that admits 10 → exactly 10), every refusal naming the budget,
# the use and the request; a netns still counts while a thread, an fd or a
# process holds it after its pin is gone; creators SIGKILLed at random
# points leave the account right (the next reader or gc reconciles); a
# torn last line does not swallow the next record.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/hard.sh"
test_needs root knobs jq

STATE=$(make_state_dir)
PINS=$(mktemp -d /run/nshash-t18-pins.XXXXXX)
on_exit "cleanup_state_dir '$PINS'"
make_private_mount "$PINS"
WORK=$(mktemp -d /tmp/nshash-t18.XXXXXX)
on_exit "rm -rf '$WORK'"
HOLD="python3 $TOP/tests/lib/hold-netns.py"
ns() { nshash --state-dir "$STATE" "$@"; }
usage() { ns gc --max-idle 999999 --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }
mounted() { count_pins_under "$PINS/"; }
# A deleted netns counts until the kernel has freed it (cleanup_net, run
# asynchronously): N netns counted within 10 s.
netns_counted() { usage | cut -d' ' -f2; }
settled() { [ "$(until_eq "$1" 10 netns_counted)" = "$1" ]; }

# tcp 4096 + udp 1024 = 4096*8 + 1024*64 = 98304 bytes.  The budget admits
# ten of them and not eleven.
EACH=98304
BUDGET=$((10 * EACH + EACH / 2))

# ---------------------------------------------------------------- exact under concurrency
for i in $(seq 20); do
	ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/c$i" >"$WORK/out$i" 2>"$WORK/err$i" &
done
wait
ok=0 refused=0 other=()
for i in $(seq 20); do
	if [ -s "$WORK/err$i" ]; then
		if grep -q "maxTableBytes" "$WORK/err$i"; then refused=$((refused + 1)); else other+=("c$i: $(cat "$WORK/err$i")"); fi
	else
		ok=$((ok + 1))
	fi
done
assert_eq "10 10" "$ok $refused" "20 parallel creations under a budget for 10: exactly 10 created, 10 refused"
assert_eq "" "${other[*]:0:2}" "no creation failed for another reason"
# (N being created) tells of reservations: creators admitted, not finished.
want="nshash: create netns PIN: table memory budget: maxTableBytes $BUDGET would be passed: $((10 * EACH)) bytes in use by 10 network namespace\(s\)( \([0-9]+ of them being created\))?, this request \(tcp 4096, udp 1024\) needs $EACH bytes; free some or raise maxTableBytes"
bad=0
for i in $(seq 20); do
	[ -s "$WORK/err$i" ] || continue
	[[ "$(sed "s|$PINS/c$i|PIN|" "$WORK/err$i")" =~ ^$want$ ]] || { bad=$((bad + 1)); echo "# c$i: $(cat "$WORK/err$i")"; }
done
assert_eq 0 "$bad" "every refusal says exactly: $want"
assert_eq 10 "$(mounted)" "10 pins mounted, no refused creation left a pin"
assert_eq "" "$(find "$PINS" -type f | sort | comm -23 - <(awk -v d="$PINS/" '$9 == "nsfs" && index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort))" \
	"no unmounted pin file left by a refusal"
sizes_ok=0
for f in "$PINS"/c*; do [ "$(raw_sizes "$f")" = "4096 1024" ] && sizes_ok=$((sizes_ok + 1)); done
assert_eq 10 "$sizes_ok" "each of the 10 has exactly tcp 4096 udp 1024"
assert_eq "$((10 * EACH)) 10" "$(usage)" "gc --json: table_memory 983040 bytes in 10 netns"
out=$(ns list --max-table-bytes $BUDGET | tail -1)
assert_eq "table memory: $((10 * EACH)) bytes (960 KiB) of maxTableBytes $BUDGET in 10 netns sized by nshash" "$out" \
	"nshash list shows the table memory against the budget"

# No budget given: not refused, but recorded (another front-end's budget sees it).
assert_rc 0 "without --max-table-bytes a creation is not limited" -- ns create --tcp 4096 --udp 1024 "$PINS/free"
assert_eq "$((11 * EACH)) 11" "$(usage)" "an unbudgeted creation is counted too"
assert_rc 1 "over the budget now: refused (exit 1)" -- ns create --tcp 128 --max-table-bytes $BUDGET "$PINS/x"
ns delete "$PINS/free"
settled 10
# Requests with no own table cost nothing and are never refused.
assert_rc 0 "tcp 0 udp 0 under a full budget: created" -- ns create --max-table-bytes 1 "$PINS/shared"
# A request larger than the budget on its own.
err=$(ns create --tcp 16777216 --max-table-bytes 1000 "$PINS/huge" 2>&1)
assert_contains "$err" "maxTableBytes 1000 would be passed: $((10 * EACH)) bytes in use by 10 network namespace(s), this request (tcp 16777216, udp 0) needs 134217728 bytes" \
	"a request above the budget by itself: refused naming it"
assert_eq "" "$(cat "$STATE/ledger.tmp" 2>/dev/null)" "no half-written ledger"

# ---------------------------------------------------------------- freed room is reused at once
ns delete $(ls -d "$PINS"/c* | head -2)
settled 8
assert_rc 0 "after deleting two pins, a creation fits again (no waiting for gc)" -- \
	ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/again1"
assert_rc 0 "and a second" -- ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/again2"
assert_rc 1 "and not a third" -- ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/again3"

# ---------------------------------------------------------------- a held netns still counts
# Each way a netns outlives its pin: a process inside, only a non-leader
# thread inside, only an open fd.
for how in leader thread fd; do
	victim=$(ls "$PINS" | grep '^c' | head -1)
	$HOLD $how "$PINS/$victim" >"$WORK/hold-$how" 2>&1 &
	hpid=$!
	on_exit "kill $hpid"
	for _ in $(seq 100); do grep -q ready "$WORK/hold-$how" && break; sleep 0.05; done
	ns delete "$PINS/$victim"
	err=$(ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/held-$how" 2>&1)
	assert_contains "$err" "$((10 * EACH)) bytes in use by 10" "pin deleted but a $how holds the netns: it still counts, refused"
	kill $hpid
	wait $hpid 2>/dev/null
	# the netns is freed asynchronously after its last holder goes
	rc=1
	for _ in $(seq 50); do
		ns create --tcp 4096 --udp 1024 --max-table-bytes $BUDGET "$PINS/held-$how" >/dev/null 2>&1 && { rc=0; break; }
		sleep 0.1
	done
	assert_eq 0 "$rc" "the $how gone: the room is free again"
done
assert_eq "$((10 * EACH)) 10" "$(usage)" "still exactly 10 counted"

# ---------------------------------------------------------------- SIGKILLed creators
# Random kill points over 40 budgeted creators; afterwards the
# account must be exactly the mounted pins (a kill after the bind leaves a
# complete, counted pin), and a burst under a budget must admit exactly
# what is left.
ns delete "$PINS"/* >/dev/null 2>&1
ns gc >/dev/null
settled 0
assert_eq "0 0" "$(usage)" "all deleted: nothing counted"
mkfifo "$WORK/fifo" && exec 9<>"$WORK/fifo"
# The kill window: uniform in 0..1.5T, T the median creation measured here
# (a fixed 0-4 ms let most creators finish first on a quiet machine).
cal() { exec nshash --state-dir "$STATE" create --tcp 4096 --udp 1024 --max-table-bytes $((100 * EACH)) "$PINS/cal$BASHPID"; }
window_us=$((3 * $(median_us 7 cal) / 2))
ns delete "$PINS"/cal* >/dev/null 2>&1
echo "# kill delays uniform in 0..$window_us µs (1.5 times the measured median creation)"
killed=0
for i in $(seq 40); do
	# the delay first: a $(...) after the start would fork on the clock
	d=$(((RANDOM * 32768 + RANDOM) % (window_us + 1)))
	printf -v delay '%d.%06d' $((d / 1000000)) $((d % 1000000))
	# nshash itself, not the ns function: SIGKILL must hit the creator
	nshash --state-dir "$STATE" create --tcp 4096 --udp 1024 --max-table-bytes $((100 * EACH)) "$PINS/k$i" >/dev/null 2>&1 &
	pid=$!
	read -r -t "$delay" -u 9 _
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ $? = 137 ] && killed=$((killed + 1))
done
[ $killed -ge 10 ] && pass "$killed of 40 budgeted creators killed mid-way" || fail "only $killed of 40 killed"
n=$(mounted)
got=$(usage)
if [ "$got" != "$((n * EACH)) $n" ]; then
	ledger_unpinned "$STATE"
	echo "# note: gc counted $got at first"
	got=$(until_eq "$((n * EACH)) $n" 20 usage)
fi
assert_eq "$((n * EACH)) $n" "$got" "after the kills, gc counts exactly the $n mounted pins (within 20 s)"
for i in $(seq 20); do
	ns create --tcp 4096 --udp 1024 --max-table-bytes $(((n + 5) * EACH)) "$PINS/after$i" >/dev/null 2>&1 &
done
wait
assert_eq "$((n + 5)) $(((n + 5) * EACH))" "$(mounted) $(usage | cut -d' ' -f1)" \
	"after the kills ($n pins left), 20 parallel creations under a budget for $((n + 5)) admit exactly 5"

# ---------------------------------------------------------------- the CNI plugin shares the budget
# The CNI plugin with maxTableBytes, on the same state dir: pods past the
# budget get code 105 naming it; the pins above still count.
source "$TOP/tests/lib/cni.sh"
# the node's policy names the state dir (a network config may only name the node's)
cni_node_policy "$WORK/node.json" "$STATE" '"maxTcp": 1048576' # the cgroupPath case asks 1 Mi
ns delete "$PINS"/* >/dev/null 2>&1
settled 0
ns create --tcp 4096 --udp 1024 "$PINS/cli-1" >/dev/null
conf() { cni_conf n "\"tcp\":4096,\"udp\":1024,\"stateDir\":\"$STATE\",\"maxTableBytes\":$((2 * EACH))"; }
cni_pin_netns "$PINS/pod1"
cni_pin_netns "$PINS/pod2"
cni_call ADD "$PINS/pod1" "$(conf)"
assert_eq "0 4096 1024" "$CNI_RC $(raw_sizes "$PINS/pod1")" "CNI ADD within the budget: pod sized"
cni_call ADD "$PINS/pod2" "$(conf)"
assert_cni_error 105 "table memory budget: maxTableBytes $((2 * EACH)) would be passed: $((2 * EACH)) bytes in use by 2 network namespace(s), this request (tcp 4096, udp 1024) needs $EACH bytes" \
	"CNI ADD past the budget (a CLI pin and a pod already in it) refused"
ns delete "$PINS/cli-1"
settled 1
cni_call ADD "$PINS/pod2" "$(conf)"
assert_eq "0 4096 1024" "$CNI_RC $(raw_sizes "$PINS/pod2")" "the CLI pin deleted: the pod fits"

# ---------------------------------------------------------------- a torn ledger line
# A writer killed mid-append (or a failed write on a full /run) leaves the
# last line without its newline: written here by hand, as the kill leaves
# it.  The next record must not be glued onto it (it was lost: its netns
# never counted, and two 96 KiB netns lived under a 96 KiB budget).
TORN=$(make_state_dir)
printf 'N 0123456789abcdef %d 4096 1024 40265' $EACH >"$TORN/ledger"
nt() { nshash --state-dir "$TORN" "$@"; }
assert_rc 0 "a creation (no budget: its commit only) after a torn last line" -- nt create --tcp 4096 --udp 1024 "$PINS/torn-a"
assert_eq "N 0123456789abcdef $EACH 4096 1024 40265" "$(head -1 "$TORN/ledger")" "the torn line closed as a line of its own"
assert_eq "table memory: $EACH bytes (96 KiB) in 1 netns sized by nshash" "$(nt list | tail -1)" \
	"the record after the torn line counts"
err=$(nt create --tcp 4096 --udp 1024 --max-table-bytes $EACH "$PINS/torn-b" 2>&1)
assert_eq "nshash: create netns $PINS/torn-b: table memory budget: maxTableBytes $EACH would be passed: $EACH bytes in use by 1 network namespace(s), this request (tcp 4096, udp 1024) needs $EACH bytes; free some or raise maxTableBytes" \
	"$err" "a second 96 KiB netns under a 96 KiB budget: refused"
assert_eq "" "$(ls "$PINS/torn-b" 2>/dev/null)" "the refused creation left no pin"
nt delete "$PINS/torn-a"

# ---------------------------------------------------------------- the pod's memory cgroup pays
# runtimeConfig.cgroupPath (containerd's CRI, capability "cgroupPath"): the
# tables are charged to the pod's memory cgroup, not the plugin's; the
# cgroup is named by the pod's uid as kubelet names it (pod<K8S_POD_UID>).
root=/sys/fs/cgroup/memory
if [ -e "$root/memory.usage_in_bytes" ]; then
	rel=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
	pod=${rel%/}/podnshash-t18-$$
	uid="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;K8S_POD_UID=nshash-t18-$$"
	mkdir "$root$pod" || fail "cannot create memory cgroup $root$pod"
	on_exit "rmdir '$root$pod'"
	before=$(cat "$root$pod/memory.usage_in_bytes")
	cni_pin_netns "$PINS/pod3"
	big="{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"type\": \"nshash\", \"tcp\": 1048576, \"stateDir\": \"$STATE\", \"runtimeConfig\": {\"cgroupPath\": \"$pod\"}}"
	cni_call ADD "$PINS/pod3" "$big" CNI_ARGS="$uid"
	after=$(cat "$root$pod/memory.usage_in_bytes")
	assert_eq "0 1048576" "$CNI_RC $(raw_sizes "$PINS/pod3" | cut -d' ' -f1)" "CNI ADD with runtimeConfig.cgroupPath: pod sized"
	[ $((after - before)) -ge $((8 * 1024 * 1024)) ] && pass "the pod's memory cgroup was charged $((after - before)) bytes for the 8 MiB table" ||
		fail "the pod's memory cgroup was charged only $((after - before)) bytes (want >= 8 MiB; stderr: $CNI_ERR)"
	assert_eq "" "$(ls -d "$root$pod"/nshash-* 2>/dev/null)" "no transient cgroup left under the pod's"
	ns delete "$PINS/pod3"
	cni_pin_netns "$PINS/pod4"
	cni_call ADD "$PINS/pod4" "${big/$pod/..\/etc}" CNI_ARGS="$uid"
	assert_contains "$CNI_RC $CNI_ERR" "0 " "an unusable cgroupPath: ADD still succeeds"
	assert_contains "$CNI_ERR" "runtimeConfig.cgroupPath \"../etc\": Invalid argument" "and warns naming it"
	ns delete "$PINS/pod4"
else
	echo "# no cgroup-v1 memory controller here: the cgroup v2 path of charging is not exercised"
fi

# ---------------------------------------------------------------- spares do not count until taken
# Spares made before a budget applies (ADDs without maxTableBytes) hold table
# bytes nobody asked for: they must not get a pod refused on an empty node.
S2=$(make_state_dir)
cni_node_policy "$WORK/node2.json" "$S2" '"spares": 3'
sconf() { cni_conf n "\"tcp\":4096,\"udp\":1024,\"onFailure\":\"fail\",\"stateDir\":\"$S2\",\"spares\":3$1"; }
cni_pin_netns "$PINS/sp1"
cni_call ADD "$PINS/sp1" "$(sconf '')"
assert_eq "0 4096 1024" "$CNI_RC $(raw_sizes "$PINS/sp1")" "ADD without a budget: sized"
spares_settled "$S2"
assert_eq 3 "$(find "$S2/spares" -maxdepth 1 -name 'tcp4096-udp1024.*' | wc -l)" "three spares made after it"
nshash --state-dir "$S2" delete "$PINS/sp1"
# the kernel frees a deleted netns asynchronously: until then it counts
s2_bytes() { nshash --state-dir "$S2" gc --max-idle 999999 --json | jq -r .table_memory.bytes; }
s2_settled() { [ "$(until_eq "$1" 10 s2_bytes)" = "$1" ]; }
s2_settled 0 || fail "the deleted pod's netns still counts after 10 s"
cni_pin_netns "$PINS/sp2"
cni_call ADD "$PINS/sp2" "$(sconf ",\"maxTableBytes\":$EACH")"
assert_eq "0 4096 1024" "$CNI_RC $(raw_sizes "$PINS/sp2")" "maxTableBytes $EACH (one pod) with three idle spares and no pod: the pod fits ($(cni_field .msg))"
cni_pin_netns "$PINS/sp3"
cni_call ADD "$PINS/sp3" "$(sconf ",\"maxTableBytes\":$EACH")"
assert_cni_error 105 "table memory budget: maxTableBytes $EACH would be passed: $EACH bytes in use by 1 network namespace(s), this request (tcp 4096, udp 1024) needs $EACH bytes" \
	"the second pod: refused, counting the first pod only (not the spares)"
# a spare taken counts, as the container's netns it has become
n2() { nshash --state-dir "$S2" "$@"; }
n2 delete "$PINS/sp2"
rm -f "$PINS/sp3"
s2_settled 0 || fail "the deleted pod's netns still counts after 10 s"
cni_pin_netns "$PINS/sp4"
cni_call ADD "$PINS/sp4" "$(sconf '')" # no budget: takes a spare
assert_eq "0 4096 1024" "$CNI_RC $(raw_sizes "$PINS/sp4")" "an ADD without a budget takes a spare"
spares_settled "$S2"
cni_pin_netns "$PINS/sp5"
cni_call ADD "$PINS/sp5" "$(sconf ",\"maxTableBytes\":$EACH")"
assert_cni_error 105 "$EACH bytes in use by 1 network namespace(s)" "the taken spare counts against the budget"
n2 delete "$PINS/sp4"
umount "$PINS/sp5" 2>/dev/null
rm -f "$PINS/sp5"
nshash --state-dir "$S2" gc --max-idle 0 >/dev/null

# ---------------------------------------------------------------- the shipped Kubernetes entry's budget
# packaging/kubernetes/nshash-entry.json as the installer chains it (cniVersion
# and name from the conflist; runtimeConfig as containerd fills it), on a node
# with spares made before the budget applied (the same sizes through the entry
# without maxTableBytes, as the entry shipped before).  Pods at its caps by
# annotation, tcp 65536 + udp 16384 = 1572864 bytes each: the budget admits
# floor(budget / 1572864) of them with the spares present, and the next one
# is warned (the entry's onFailure) or refused (fail) with the exact numbers.
ENTRY=$TOP/packaging/kubernetes/nshash-entry.json
KB=$(jq -r '.maxTableBytes // 0' "$ENTRY")
[ "$KB" -gt 0 ] && pass "the shipped entry sets maxTableBytes $KB" || fail "the shipped entry sets no maxTableBytes"
assert_eq "65536 16384 warn" "$(jq -r '"\(.maxTcp) \(.maxUdp) \(.onFailure)"' "$ENTRY")" "the shipped entry's caps and onFailure (what this part assumes)"
BIG=$((65536 * 8 + 16384 * 64))
N=$((KB / BIG))
S3=$(make_state_dir)
cni_node_policy "$WORK/node3.json" "$S3" '"spares": 3'
kconf() { # jq filter applied to the entry
	jq -c '. + {cniVersion: "1.0.0", name: "k8s-pod-network", spares: 3,
		runtimeConfig: {"io.kubernetes.cri.pod-annotations": {"io.nshash.tcp": "65536", "io.nshash.udp": "16384"}}} | '"$1" "$ENTRY"
}
s3_use() { nshash --state-dir "$S3" gc --max-idle 999999 --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }
s3_spares() { find "$S3/spares" -maxdepth 1 -name 'tcp65536-udp16384.*' 2>/dev/null | wc -l; }
cni_pin_netns "$PINS/k0"
cni_call ADD "$PINS/k0" "$(kconf 'del(.maxTableBytes)')"
assert_eq "0 65536 16384" "$CNI_RC $(raw_sizes "$PINS/k0")" "the entry without its budget: sized"
spares_settled "$S3"
assert_eq 3 "$(s3_spares)" "three spares made after it ($((3 * BIG)) bytes of tables)"
nshash --state-dir "$S3" delete "$PINS/k0"
for _ in $(seq 100); do [ "$(s3_use)" = "0 0" ] && break; sleep 0.1; done
assert_eq "0 0" "$(s3_use)" "no pod: nothing counts against a budget (the spares are not counted)"
bad=()
for i in $(seq "$N"); do
	cni_pin_netns "$PINS/k$i"
	cni_call ADD "$PINS/k$i" "$(kconf .)"
	[ "$CNI_RC $(raw_sizes "$PINS/k$i")" = "0 65536 16384" ] || bad+=("pod $i: rc $CNI_RC $(raw_sizes "$PINS/k$i") $CNI_OUT $CNI_ERR")
done
assert_none "the shipped entry: $N pods at the caps within maxTableBytes $KB, three spares present" "$N" "${bad[@]}"
assert_eq "$((N * BIG)) $N" "$(s3_use)" "they count $((N * BIG)) bytes in $N netns"
assert_eq 3 "$(s3_spares)" "the spares are still there (not taken under a budget)"
need="table memory budget: maxTableBytes $KB would be passed: $((N * BIG)) bytes in use by $N network namespace(s), this request (tcp 65536, udp 16384) needs $BIG bytes"
cni_pin_netns "$PINS/kw"
cni_call ADD "$PINS/kw" "$(kconf .)"
assert_eq "0 -" "$CNI_RC $(raw_sizes "$PINS/kw" | cut -c1)" "pod $((N + 1)): onFailure warn, ADD passes on the shared tables"
assert_contains "$CNI_ERR" "nshash[ADD ctr-1]: warning (onFailure warn, code 105): replace netns $PINS/kw: $need; free some or raise maxTableBytes; continuing on the shared tables" \
	"pod $((N + 1)): the warning gives the budget, the use and the request"
cni_call ADD "$PINS/kw" "$(kconf '.onFailure = "fail"')"
assert_cni_error 105 "$need" "pod $((N + 1)) with onFailure fail: refused"
for i in $(seq "$N"); do nshash --state-dir "$S3" delete "$PINS/k$i" >/dev/null; done
umount "$PINS/kw" 2>/dev/null
rm -f "$PINS/kw"
nshash --state-dir "$S3" gc --max-idle 0 >/dev/null
assert_host_untouched
