#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Kubernetes' path for real: a private containerd with its CRI plugin (the
# one kubelet talks to), nshash first in its conflist with the
# pod-annotations capability.  Pod sandboxes are run through the CRI API
# (tests/lib/cri.py; no kubelet or crictl here): annotations reach the plugin
# through runtimeConfig and size the pod's netns, the network default applies
# without them, a request over the cap fails the sandbox with nshash's
# message, and stop/remove leave no pin, veth or sandbox behind.  With the
# cgroupPath capability declared, containerd from 1.7 passes the pod's cgroup
# (the sandbox's cgroup_parent) and the pod's memory cgroup pays for its
# tables; containerd 1.6 passes none and they stay the runtime's, silently
# (which one is expected: the version this containerd reports).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs
cni_require_cri
command -v busybox >/dev/null || cannot_run "busybox (for ping) missing"

D=$(make_state_dir)
engines_iptables_snapshot
cni_test_network 56
C=$D/containerd
cni_node_policy "$D/node.json" "$D/state" # containerd passes its environment to the plugins
cni_containerd_cri_start "$C" "" NSHASH_POLICY="$NSHASH_POLICY" || cannot_run "containerd with CRI did not start"
cp /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback "$CNI_PLUGIN" "$C/cni-bin/"
cat >"$C/net.d/10-$NET.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "$NET", "plugins": [
  {"type": "nshash", "tcp": 4096, "udp": 1024, "maxTcp": 262144, "maxUdp": 16384, "onFailure": "fail", "stateDir": "$D/state",
   "capabilities": {"io.kubernetes.cri.pod-annotations": true, "cgroupPath": true}},
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET.0/24"}]], "dataDir": "$D/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}
]}
JSON
NETNS_DIR=$C/state/io.containerd.grpc.v1.cri/netns
sandbox_pid() { ctr -n k8s.io task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $2}'; }
# CRI picks the conflist up asynchronously (fs watch)
for _ in $(seq 50); do grep -q "$NET" "$C/containerd.log" 2>/dev/null && break; sleep 0.1; done
sleep 1

A=$(cni_cri_runp "$D/err" pod-a uid-a default io.nshash.tcp=32768 io.nshash.udp=2048 app=x)
[ -n "$A" ] && pass "RunPodSandbox with io.nshash.* annotations" || fail "RunPodSandbox failed: $(cat "$D/err")"
PA=$(sandbox_pid "$A")
assert_eq "32768 2048" "$(netns_sizes_of_pid "${PA:-0}" 2>/dev/null)" "the pod's netns has the annotated sizes (runtimeConfig from containerd CRI)"
ADDR=$(nsenter -t "${PA:-0}" -n ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')
assert_contains "$ADDR" "$SUBNET." "the pod has eth0 from the rest of the chain ($ADDR)"
assert_eq "UP" "$(nsenter -t "${PA:-0}" -n ip -br link show lo 2>/dev/null | awk '{print $2}' | sed 's/UNKNOWN/UP/')" "lo is up in the pod"
if nsenter -t "${PA:-0}" -n busybox ping -c1 -W2 "$SUBNET.1" >/dev/null 2>&1; then pass "ping from the pod to the gateway"; else fail "ping to $SUBNET.1 failed"; fi

B=$(cni_cri_runp "$D/err" pod-b uid-b default)
[ -n "$B" ] && pass "RunPodSandbox without annotations" || fail "RunPodSandbox failed: $(cat "$D/err")"
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$B")" 2>/dev/null)" "without annotations the pod gets the network default"
assert_eq "2" "$(count_pins_under "$NETNS_DIR/")" "one netns pin per pod"

"${CRI[@]}" "$CRI_SOCK" runp pod-c uid-c default io.nshash.tcp=1048576 >/dev/null 2>"$D/err"
assert_eq 1 $? "RunPodSandbox over maxTcp fails"
assert_contains "$(cat "$D/err")" 'plugin type="nshash" failed (add): pod annotations: tcp size 1048576 (effective 1048576) is above the allowed maximum 262144 (maxTcp)' "kubelet would see nshash's reason"
assert_eq "2" "$(ctr -n k8s.io task ls -q | wc -l)" "no sandbox task for the refused pod"

for id in "$A" "$B"; do
	"${CRI[@]}" "$CRI_SOCK" stopp "$id" && "${CRI[@]}" "$CRI_SOCK" rmp "$id"
done
assert_eq "0 0" "$(ctr -n k8s.io task ls -q | wc -l) $(ctr -n k8s.io containers ls -q | wc -l)" "stop + remove: no sandbox left"
assert_eq "0" "$(count_pins_under "$NETNS_DIR/")" "stop + remove: no netns pin left"
assert_eq "0" "$(ip -br link show master "$BR" 2>/dev/null | wc -l)" "stop + remove: no veth left"

# --- cgroupPath: who pays for the tables.  Two pods, each in a pod cgroup
# of its own made beforehand as kubelet makes it (cgroupfs driver:
# /…/pod<uid>: the plugin charges only the cgroup named by the K8S_POD_UID
# containerd passes); P asks for tcp 262144 + udp 16384 (2097152 + 1048576 bytes of
# tables), Q for "0"/"0" (the shared tables: nshash makes nothing, a baseline
# for what the sandbox's own process costs its cgroup).  cgroup v1's
# memory.usage_in_bytes is fuzzy by the per-CPU charge batches (64 pages a
# CPU): measured here, a netns of these sizes made in a memory cgroup adds
# 3538944 bytes to it (its tables and the rest of a netns), the same pod's
# cgroup without the charge differs from Q's by about 20 KB.  So: charged
# means at least 3/4 of the tables more than Q, not charged less than 1/4.
CV=$(ctr version 2>/dev/null | awk '/^Server:/ {s = 1} s && $1 == "Version:" {print $2; exit}')
[[ "$CV" =~ ^v?([0-9]+)\.([0-9]+) ]] || cannot_run "containerd reports no server version ($CV)"
if [ "${BASH_REMATCH[1]}" -gt 1 ] || [ "${BASH_REMATCH[2]}" -ge 7 ]; then PASSES=1; else PASSES=; fi
TABLES=$((262144 * 8 + 16384 * 64))
MEMROOT=/sys/fs/cgroup/memory
[ -d "$MEMROOT" ] || cannot_run "no cgroup-v1 memory hierarchy at $MEMROOT"
CG=nshash-t56-$$
on_exit "rm_pod_cgroups $CG"
rm_pod_cgroups() { local h; for h in /sys/fs/cgroup/*/; do [ -d "$h$1" ] && find "$h$1" -depth -type d -exec rmdir {} \;; done; }
mkdir -p "$MEMROOT/$CG/poduid-p" "$MEMROOT/$CG/poduid-q"
usage() { cat "$MEMROOT/$CG/$1/memory.usage_in_bytes"; }
P=$(cni_cri_runp "$D/err" --cgroup-parent="/$CG/poduid-p" pod-p uid-p default io.nshash.tcp=262144 io.nshash.udp=16384)
[ -n "$P" ] && pass "RunPodSandbox with cgroup_parent /$CG/poduid-p" || fail "RunPodSandbox failed: $(cat "$D/err")"
Q=$(cni_cri_runp "$D/err" --cgroup-parent="/$CG/poduid-q" pod-q uid-q default io.nshash.tcp=0 io.nshash.udp=0)
[ -n "$Q" ] && pass "RunPodSandbox with cgroup_parent /$CG/poduid-q" || fail "RunPodSandbox failed: $(cat "$D/err")"
assert_eq "262144 16384" "$(netns_sizes_of_pid "$(sandbox_pid "$P")" 2>/dev/null)" "pod-p sized"
UP=$(usage poduid-p) UQ=$(usage poduid-q)
echo "# containerd $CV: pod-p's memory cgroup holds $UP bytes, pod-q's $UQ (the tables: $TABLES)"
if [ -n "$PASSES" ]; then
	assert_contains "$(cat "$C/containerd.log")" "tables charged to the pod's memory cgroup ($MEMROOT/$CG/poduid-p/nshash-$P)" \
		"containerd $CV passes cgroupPath: the plugin created pod-p's netns from a leaf of its cgroup"
	[ $((UP - UQ)) -ge $((TABLES * 3 / 4)) ] && pass "containerd $CV: pod-p's cgroup pays for its tables (+$((UP - UQ)) bytes over pod-q, tables $TABLES)" ||
		fail "containerd $CV: pod-p's cgroup holds only $((UP - UQ)) bytes more than pod-q's (tables: $TABLES)"
else
	assert_not_contains "$(cat "$C/containerd.log")" "tables charged to the pod's" "containerd $CV passes no cgroupPath: nothing charged to a pod"
	assert_not_contains "$(cat "$C/containerd.log")" "runtimeConfig.cgroupPath" "... and no warning: without cgroupPath the tables are the runtime's, as documented"
	[ $((UP - UQ)) -lt $((TABLES / 4)) ] && pass "containerd $CV: pod-p's cgroup does not hold its tables (+$((UP - UQ)) bytes over pod-q, tables $TABLES)" ||
		fail "containerd $CV: pod-p's cgroup holds $((UP - UQ)) bytes more than pod-q's (tables $TABLES): charged after all?"
fi
assert_eq "" "$(find "$MEMROOT/$CG/poduid-p" "$MEMROOT/$CG/poduid-q" -name 'nshash-*' -type d)" "no transient nshash-* cgroup left under the pods'"
for id in "$P" "$Q"; do
	"${CRI[@]}" "$CRI_SOCK" stopp "$id" && "${CRI[@]}" "$CRI_SOCK" rmp "$id"
done
if [ -n "$PASSES" ]; then
	# the tables go with the netns (the kernel frees it asynchronously)
	for _ in $(seq 50); do [ "$(usage poduid-p)" -lt "$TABLES" ] && break; sleep 0.1; done
	[ "$(usage poduid-p)" -lt "$TABLES" ] && pass "pod removed: its cgroup is uncharged ($(usage poduid-p) bytes left)" ||
		fail "pod removed: its cgroup still holds $(usage poduid-p) bytes"
fi
assert_eq "0 0" "$(ctr -n k8s.io task ls -q | wc -l) $(ctr -n k8s.io containers ls -q | wc -l)" "cgroupPath pods: stop + remove left no sandbox"

# containerd runs the loopback network's plugin beside the pod network's:
# ADD no longer waits for it (docs/cni.md, "Who can be inside CNI_NETNS"),
# and every pod above came up sized with lo up and its address
assert_host_untouched
