#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Kubernetes' path for real: a private containerd with its CRI plugin (the
# one kubelet talks to), nshash first in its conflist with the
# pod-annotations capability.  Pod sandboxes are run through the CRI API
# (tests/lib/cri.py; no kubelet or crictl here): annotations reach the plugin
# through runtimeConfig and size the pod's netns, the network default applies
# without them, a request over the cap fails the sandbox with nshash's
# message, and stop/remove leave no pin, veth or sandbox behind.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
require_root
require_kernel_knobs
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
  {"type": "nshash", "tcp": 4096, "udp": 1024, "maxTcp": 65536, "maxUdp": 16384, "onFailure": "fail", "stateDir": "$D/state",
   "capabilities": {"io.kubernetes.cri.pod-annotations": true}},
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
assert_contains "$(cat "$D/err")" 'plugin type="nshash" failed (add): pod annotations: tcp size 1048576 (effective 1048576) is above the allowed maximum 65536 (maxTcp)' "kubelet would see nshash's reason"
assert_eq "2" "$(ctr -n k8s.io task ls -q | wc -l)" "no sandbox task for the refused pod"

for id in "$A" "$B"; do
	"${CRI[@]}" "$CRI_SOCK" stopp "$id" && "${CRI[@]}" "$CRI_SOCK" rmp "$id"
done
assert_eq "0 0" "$(ctr -n k8s.io task ls -q | wc -l) $(ctr -n k8s.io containers ls -q | wc -l)" "stop + remove: no sandbox left"
assert_eq "0" "$(count_pins_under "$NETNS_DIR/")" "stop + remove: no netns pin left"
assert_eq "0" "$(ip -br link show master "$BR" 2>/dev/null | wc -l)" "stop + remove: no veth left"
echo "# $(grep -c 'waited [0-9]* ms for a process to leave' "$C/containerd.log") ADD(s) waited for the parallel loopback plugin to leave the netns"
assert_host_untouched
