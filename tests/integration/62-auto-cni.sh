#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `auto` through a CNI ADD driven directly: "tcp": "auto", "udp": "auto" in
# the network config, the workload = K8S_POD_NAMESPACE + the pod's owner
# (web-7d4b9c8f6d-x2k9p and web-5c8f9d7b6-q4r7t are both "web").  The first
# pod (no history) stays shared but is recorded; it holds 3000 UDP sockets
# and 5000 loopback connections (10000 ehash sockets); `nshash record`;
# the next pod of the same Deployment gets tcp 32768 udp 8192; a pod of
# another namespace with the same name gets no history of it.  The ADD
# reads STATE/history.idx; a hand-edited history (stale index) and a
# damaged index fall back to the history with a warning.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq python3

D=$(make_state_dir)
cni_node_policy "$D/node.json" "$D"
N="$BUILD/nshash --state-dir $D"
conf='{"cniVersion":"1.0.0","name":"net62","type":"nshash","tcp":"auto","udp":"auto"}'
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
args() { echo "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=$1;K8S_POD_NAME=$2"; }

cni_pin_netns "$D/p1"
on_exit "umount '$D/p1' 2>/dev/null"
cni_call ADD "$D/p1" "$conf" "$(args shop web-7d4b9c8f6d-x2k9p)"
assert_eq 0 "$CNI_RC" "ADD with auto and no history succeeds ($CNI_ERR)"
assert_eq "-$GTCP -$GUDP" "$(netns_sizes_at "$D/p1")" "no history, autoInitial 0: shared"
nsenter --net="$D/p1" ip link set lo up
hold_sockets 3000 5000 "$D/ready" --net="$D/p1"
holder=$HOLDER
assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "the pod holds its sockets"
out=$($N record 2>&1)
assert_contains "$out" "sampled 1 of" "record samples the pod's netns"
assert_eq "cni:shop:pod=web 10000 3000 32768 8192" "$($N history --json | jq -r '.[0] | "\(.workload) \(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"')" "history of the Deployment web"
assert_contains "$($N history --prometheus)" 'nshash_auto_entries{workload="cni:shop:pod=web",proto="tcp"} 32768' "prometheus: the recommended size"
assert_eq "cni:shop:pod=web 32768 8192" "$($N stats --json | jq -r --arg p "$D/p1" '.netns[] | select(.id == $p or (.pid != null and .workload != null)) | "\(.workload) \(.auto.tcp) \(.auto.udp)"' | head -1)" "stats: the netns's workload and what auto gives it now"
assert_contains "$($N stats)" "workload cni:shop:pod=web auto tcp=32768 udp=8192" "stats text: the same"
assert_contains "$($N stats --prometheus)" 'nshash_auto_entries{workload="cni:shop:pod=web",proto="udp"} 8192' "stats --prometheus (serve's formatter) exports the auto size"
kill "$holder"; wait "$holder" 2>/dev/null
assert_eq 1 "$(ls "$D/workloads" | wc -l)" "one mark: the pod's"
cni_call DEL "$D/p1" "$conf" "$(args shop web-7d4b9c8f6d-x2k9p)"
assert_eq 0 "$CNI_RC" "DEL succeeds ($CNI_ERR)"
assert_eq "" "$(ls "$D/workloads")" "DEL removes the pod's mark"
assert_eq "cni:shop:pod=web 10000 3000" "$($N history --json | jq -r '.[0] | "\(.workload) \(.tcpPeak) \(.udpPeak)"')" "the smaller sample at DEL keeps the peak"
# a hostile CNI_NETNS at DEL: a FIFO (an open would block the plugin for
# good) and a symlink are never opened; the DEL returns at once
mkfifo "$D/fifo" && ln -s "$D/p1" "$D/link"
for bad in "$D/fifo" "$D/link"; do
	timeout 20 bash -c "source '$TOP/tests/lib/cni.sh'; CNI_PLUGIN='$CNI_PLUGIN'; NSHASH_POLICY='${NSHASH_POLICY:-}'; cni_call DEL '$bad' '$conf' '$(args shop web-7d4b9c8f6d-x2k9p)'; exit \$CNI_RC"
	rc=$?
	[ "$rc" != 124 ] && pass "DEL with CNI_NETNS a $( [ "$bad" = "$D/fifo" ] && echo FIFO || echo symlink ): not blocked (exit $rc)" ||
		fail "DEL with CNI_NETNS=$bad hung"
done
rm -f "$D/fifo" "$D/link"

cni_pin_netns "$D/p2"
on_exit "umount '$D/p2' 2>/dev/null"
cni_call ADD "$D/p2" "$conf" "$(args shop web-5c8f9d7b6-q4r7t)"
assert_eq 0 "$CNI_RC" "ADD of the next replica ($CNI_ERR)"
assert_eq "32768 8192" "$(netns_sizes_at "$D/p2")" "the same Deployment again: tcp 32768 udp 8192"
assert_contains "$CNI_ERR" "workload cni:shop:pod=web from its history" "the ADD found the workload"
assert_not_contains "$CNI_ERR" "history.idx" "record wrote the index the ADD read: no fallback, no warning"
cni_call DEL "$D/p2" "$conf" "$(args shop web-5c8f9d7b6-q4r7t)"

# a history written by hand (or an older nshash): the index no longer
# matches it; the start reads the history whole, with a warning, and gets
# the new peak, not the index's
sed -i 's/^w cni:shop:pod=web 10000 /w cni:shop:pod=web 20000 /' "$D/history"
cni_pin_netns "$D/p2b"
on_exit "umount '$D/p2b' 2>/dev/null"
cni_call ADD "$D/p2b" "$conf" "$(args shop web-5c8f9d7b6-zz4r7)"
assert_eq 0 "$CNI_RC" "ADD with a stale index succeeds ($CNI_ERR)"
assert_eq "65536 8192" "$(netns_sizes_at "$D/p2b")" "the history's new peak 20000: tcp 65536"
assert_contains "$CNI_ERR" "history.idx: older than the history: read the history whole" "the stale index is warned about"
cni_call DEL "$D/p2b" "$conf" "$(args shop web-5c8f9d7b6-zz4r7)"
printf 'junk' >"$D/history.idx"
cni_pin_netns "$D/p2c"
on_exit "umount '$D/p2c' 2>/dev/null"
cni_call ADD "$D/p2c" "$conf" "$(args shop web-5c8f9d7b6-zz4r8)"
assert_eq "0 65536 8192" "$CNI_RC $(netns_sizes_at "$D/p2c")" "a damaged index: the history still sizes"
assert_contains "$CNI_ERR" "history.idx: damaged" "the damaged index is warned about"
cni_call DEL "$D/p2c" "$conf" "$(args shop web-5c8f9d7b6-zz4r8)"
$N record >/dev/null 2>&1
cmp -s <(head -c 14 "$D/history.idx") <(printf 'nshash-hidx 2\n') && pass "record rewrote the index" || fail "record rewrote the index"

cni_pin_netns "$D/p3"
on_exit "umount '$D/p3' 2>/dev/null"
cni_call ADD "$D/p3" "$conf" "$(args other web-7d4b9c8f6d-x2k9p)"
assert_eq "-$GTCP -$GUDP" "$(netns_sizes_at "$D/p3")" "another namespace, same pod name: no history leaks"
cni_call DEL "$D/p3" "$conf" "$(args other web-7d4b9c8f6d-x2k9p)"

# a hostile io.nshash.workload: refused, nothing made
cni_pin_netns "$D/p4"
on_exit "umount '$D/p4' 2>/dev/null"
long=$(printf 'k%.0s' $(seq 300))
cni_call ADD "$D/p4" "{\"cniVersion\":\"1.0.0\",\"name\":\"net62\",\"type\":\"nshash\",\"tcp\":\"auto\",\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{\"io.nshash.workload\":\"$long\"}}}" "$(args shop x)"
assert_cni_error 102 "pod annotation io.nshash.workload: workload key" "a 300-byte key is refused"

# --- a pod torn down before any `nshash record`: the DEL's sample is its
# history.  200 connections closed before the DEL leave TIME_WAIT sockets,
# 100 held ones 200 established; 50 UDP sockets bound.
cni_pin_netns "$D/p5"
on_exit "umount '$D/p5' 2>/dev/null"
cni_call ADD "$D/p5" "$conf" "$(args shop burst-0)"
assert_eq 0 "$CNI_RC" "ADD of a StatefulSet pod ($CNI_ERR)"
nsenter --net="$D/p5" ip link set lo up
rm -f "$D/ready"
hold_sockets 0 200 "$D/ready" --net="$D/p5"
tw=$HOLDER
assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "200 connections made"
kill "$tw"; wait "$tw" 2>/dev/null
hold_sockets 50 100 "$D/ready" --net="$D/p5"
holder=$HOLDER
assert_eq "ready" "$(cat "$D/ready" 2>/dev/null)" "the pod holds 50 UDP sockets and 100 connections"
# the closed connections' last states settle into TIME_WAIT (60 s)
for _ in $(seq 50); do
	c=$($N stats --json "$D/p5" | jq -r '.netns[0].tcp | "\(.sockets) \(.time_wait)"')
	[ "$(( ${c% *} - ${c#* } ))" = 200 ] && break
	sleep 0.1
done
tws=${c#* }
assert_eq 200 "$(( ${c% *} - tws ))" "200 established sockets besides TIME_WAIT ($c)"
assert_eq 1 "$([ "$tws" -ge 200 ] && echo 1)" "at least one TIME_WAIT socket per closed connection ($tws)"
cni_call DEL "$D/p5" "$conf" "$(args shop burst-0)"
assert_eq 0 "$CNI_RC" "DEL succeeds ($CNI_ERR)"
assert_eq "cni:shop:pod=burst $(( 200 + tws )) 50" "$($N history --json | jq -r '.[] | select(.workload == "cni:shop:pod=burst") | "\(.workload) \(.tcpPeak) \(.udpPeak)"')" \
	"no record ran: the DEL's sample (TIME_WAIT included) is the history"
assert_eq "" "$(ls "$D/workloads")" "... and the mark is gone"
kill "$holder"; wait "$holder" 2>/dev/null

# --- a stale mark: the netns's dev-ino, another netns's id (one gone whose
# inode this netns got): never attributed, removed
cni_pin_netns "$D/p6"
on_exit "umount '$D/p6' 2>/dev/null"
m="$D/workloads/$(stat -L -c %d-%i "$D/p6")"
printf 'cni:victim:w=old\nid 18446744073709551615\n' >"$m"
touch -d '-1 hour' "$m"
assert_eq "null" "$($N stats --json "$D/p6" | jq -r '.netns[0].workload')" "stats shows no workload for a stale mark"
assert_eq "yes" "$([ -e "$m" ] && echo yes || echo no)" "... and leaves it (stats only reads)"
out=$($N record 2>&1)
assert_contains "$out" "sampled 0 of" "record does not sample a netns whose mark is stale"
assert_eq "no" "$([ -e "$m" ] && echo yes || echo no)" "the stale mark is removed"
assert_eq "" "$($N history --json | jq -r '.[] | select(.workload == "cni:victim:w=old") | .workload')" "no history for it"
printf 'cni:victim:w=old' >"$m" # an older version's mark, no id
touch -d '-1 hour' "$m"
$N record >/dev/null 2>&1
assert_eq "no" "$([ -e "$m" ] && echo yes || echo no)" "an id-less mark is removed too"
