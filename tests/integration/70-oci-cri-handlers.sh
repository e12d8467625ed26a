#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Kubernetes RuntimeClass = a containerd CRI runtime handler whose runc
# binary is nshash-runtime, bare or as a size-class script
# (--nshash-tcp/--nshash-udp; the runc options carry no arguments).  The
# pod's netns is made by CRI and sized by the nshash CNI plugin before any
# runtime runs, so a handler cannot size a pod: it passes a pod already sized
# as it asks, and refuses one sized otherwise with the facts and the
# Kubernetes advice (the CNI plugin).  Pod sandboxes through the CRI API
# (tests/lib/cri.py), as in 56-cni-containerd-cri.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs
cni_require_cri

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_iptables_snapshot
cni_test_network 40
W=$BUILD/nshash-runtime
handler() { # NAME BINARY: a runc v2 runtime handler
	printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n  runtime_type = "io.containerd.runc.v2"\n' "$1"
	printf '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]\n    BinaryName = "%s"\n' "$1" "$2"
}
size_class() { # NAME TCP UDP: the script a size class needs
	printf '#!/bin/sh\nexec %s --nshash-tcp=%s --nshash-udp=%s "$@"\n' "$W" "$2" "$3" >"$D/$1"
	chmod 755 "$D/$1"
}
size_class nshash-runtime-4k 4096 1024
size_class nshash-runtime-8k 8192 1024
C=$D/containerd
cni_containerd_cri_start "$C" "$(handler nshash "$W"; handler nshash-4k "$D/nshash-runtime-4k"; handler nshash-8k "$D/nshash-runtime-8k")" \
	NSHASH_POLICY="$P" || cannot_run "containerd with CRI did not start: $(tail -3 "$C/containerd.log")"
cp /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback "$CNI_PLUGIN" "$C/cni-bin/"
cat >"$C/net.d/10-$NET.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "$NET", "plugins": [
  {"type": "nshash", "tcp": 4096, "udp": 1024, "maxTcp": 65536, "maxUdp": 16384, "stateDir": "$S",
   "capabilities": {"io.kubernetes.cri.pod-annotations": true}},
  {"type": "bridge", "bridge": "$BR", "isGateway": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET.0/24"}]], "dataDir": "$D/ipam"}},
  {"type": "loopback"}
]}
JSON
sandbox_pid() { ctr -n k8s.io task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $2}'; }
for _ in $(seq 50); do grep -q "$NET" "$C/containerd.log" 2>/dev/null && break; sleep 0.1; done
sleep 1
runp() { # HANDLER NAME [K=V...]: a sandbox id, or "" (the error in $D/err)
	local h=$1 n=$2
	shift 2
	cni_cri_runp "$D/err" --handler="$h" "$n" "uid-$n" default "$@"
}

A=$(runp nshash pod-a)
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$A")" 2>/dev/null)" "handler with the bare wrapper: the CNI plugin sized the pod (network default)"
B=$(runp nshash-4k pod-b)
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$B")" 2>/dev/null)" "size-class handler asking what the CNI plugin gave: accepted"
assert_contains "$(cat "$D/nshash.log")" "is already sized: requested tcp=4096 udp=1024, effective tcp=4096 udp=1024" "the wrapper found the pod sized"
C8=$(runp nshash-8k pod-c)
assert_eq "" "$C8" "size-class handler asking for other sizes than the pod has: the sandbox fails"
err=$(cat "$D/err")
assert_contains "$err" "cannot size tcp=8192 udp=1024: network namespace $C/state/io.containerd.grpc.v1.cri/netns/" "the refusal names the requested sizes and the pod's netns"
assert_contains "$err" "(the pod's, made by the CRI runtime); it has tcp=4096 udp=1024" "... that CRI made it and what it has"
assert_contains "$err" "Instead: under Kubernetes the pod's network namespace is made before any runtime or hook runs: size pods with the nshash CNI plugin placed first in the network's plugin chain" "... and the Kubernetes advice"
D8=$(runp nshash-8k pod-d io.nshash.tcp=8192 io.nshash.udp=1024)
assert_eq "8192 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$D8")" 2>/dev/null)" "the pod annotations size it through the CNI plugin; the 8k handler then agrees"

for id in $A $B $C8 $D8; do "${CRI[@]}" "$CRI_SOCK" stopp "$id" && "${CRI[@]}" "$CRI_SOCK" rmp "$id"; done
assert_eq "0 0" "$(ctr -n k8s.io task ls -q | wc -l) $(ctr -n k8s.io containers ls -q | wc -l)" "stop + remove: no sandbox left"
assert_eq "0 0" "$(count_pins_under "$C/state/io.containerd.grpc.v1.cri/netns/") $(engines_pins_left "$S")" "no netns pin left, none of the wrapper's"
assert_host_untouched
