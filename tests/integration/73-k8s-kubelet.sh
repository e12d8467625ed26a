#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-timeout: 2400
# test-parallel: yes
# The shipped DaemonSet on a real kubelet (issue 30): a single-node
# Kubernetes built offline from Debian's kubernetes source package
# (tests/lib/k8s.sh, cached), its control plane on 127.0.0.1 (private
# ports), containerd and kubelet in a mount namespace of their own (private
# /run, /var/lib), their own bridge and subnet; then what docs/cni.md tells
# an operator to do, step for step: make image, load it into the node's
# containerd, the two CNI hostPaths changed in a copy of the manifest,
# kubectl apply on a fresh node.  Everything is removed at exit.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
. "$(dirname "$0")/../lib/k8s.sh"
# make check runs it inside 90-fresh-machine's root, beside the rest of the
# suite (test-parallel); the Kubernetes build is cached outside the root
# (tests/lib/chroot.sh binds the cache in).
test_needs root knobs containerd ctr podman openssl curl jq python3 unshare nsenter busybox
python3 -c 'import yaml' 2>/dev/null || cannot_run "python3-yaml missing"
T0=$(date +%s)

s=$(date +%s)
k8s_build || cannot_run "the Kubernetes build failed (see the notes above)"
echo "# note: k8s build step: $(($(date +%s) - s)) s"

W=$(mktemp -d /tmp/nshash-t73.XXXXXX)
on_exit "rm -rf '$W'"
k8s_setup "$W"
on_exit k8s_down
ip route | grep -q "^$K8S_NET\." && cannot_run "$K8S_NET.0/24 already routed here"
cni_save_ip_forward
cni_iptables_guard nsh73 "$K8S_BR" "$K8S_NET."
# the bridge the bridge plugin would make, made first: kubelet's node IP is on it
ip link add "$K8S_BR" type bridge && ip addr add "$K8S_NODEIP/24" dev "$K8S_BR" && ip link set "$K8S_BR" up ||
	cannot_run "bridge $K8S_BR"
k8s_pki || cannot_run "openssl: the cluster's certificates"
k8s_node_conf || cannot_run "the node's configs"
cni_oci_image "$W/images/pause" localhost/nsh73-pause:latest /bin/sleep 2147483647 >/dev/null || cannot_run "pause image"
cni_oci_image "$W/images/busybox" localhost/nsh73-busybox:latest /bin/sleep 2147483647 >/dev/null || cannot_run "busybox image"
PRISTINE=$W/10-nsh73.conflist.pristine
cp -p "$W/cni/net.d/10-nsh73.conflist" "$PRISTINE"

# docs/cni.md step 1's image is built (make image, podman save) while the
# cluster starts; both are waited for and checked below
engines_podman_setup "$W/podman" || cannot_run "podman setup failed"
VERSION=$(make -s -C "$TOP" --no-print-directory --eval 'print-version: ; @echo $(VERSION)' print-version)
(
	make -s -C "$TOP" --no-print-directory image >"$W/image.log" 2>&1
	echo $? >"$W/image.rc"
	podman save --format oci-archive -o "$W/nshash-cni.tar" "localhost/nshash-cni:$VERSION" 2>"$W/save.err"
	echo $? >"$W/save.rc"
) &
IMAGEJOB=$!
on_exit "wait $IMAGEJOB" # before anything it uses goes
s=$(date +%s)
k8s_control_up || cannot_run "the control plane did not come up"
k8s_node_ns || cannot_run "the node's mount namespace"
k8s_node_up || cannot_run "containerd + kubelet did not come up"
echo "# note: cluster up in $(($(date +%s) - s)) s"
pass "a single-node Kubernetes $("$K8S_BIN/kubectl" version --client --short 2>/dev/null | grep -o 'v[0-9.]*') is Ready (node $K8S_NODE)"

# --- docs/cni.md step 1: the image, loaded into the node's containerd
wait $IMAGEJOB
assert_eq 0 "$(cat "$W/image.rc")" "make image ($(tail -2 "$W/image.log" | tr '\n' ' '))"
assert_eq 0 "$(cat "$W/save.rc")" "podman save --format oci-archive ($(tail -1 "$W/save.err"))"
ctr --address "$K8S_SOCK" -n k8s.io images import "$W/nshash-cni.tar" >/dev/null 2>"$W/import.err"
assert_eq "0 localhost/nshash-cni:$VERSION" "$? $(ctr --address "$K8S_SOCK" -n k8s.io images ls -q | grep nshash-cni)" \
	"ctr -n k8s.io images import: the node has the image ($(cat "$W/import.err"))"

# --- step 2: the manifest, only the two CNI hostPaths changed
M=$W/nshash-cni.yaml
sed -e "s|path: /opt/cni/bin$|path: $W/cni/bin|" -e "s|path: /etc/cni/net.d$|path: $W/cni/net.d|" \
	"$TOP/packaging/kubernetes/nshash-cni.yaml" >"$M"
assert_eq 4 "$(diff "$TOP/packaging/kubernetes/nshash-cni.yaml" "$M" | grep -c '^[<>]')" "the manifest's copy differs in the two hostPaths only"

# --- step 3: kubectl apply on a fresh node
hp_state() { innode sh -c 'for d in /run/nshash /run/netns /var/lib/nshash; do [ -d $d ] && stat -c %a $d || echo absent; done' | tr '\n' ' ' | sed 's/ $//'; }
assert_eq "absent absent absent" "$(hp_state)" "a fresh node: no /run/nshash, /run/netns, /var/lib/nshash (the manifest's DirectoryOrCreate hostPaths)"
s=$(date +%s)
kubectl apply -f "$M" >"$W/apply.out" 2>&1
assert_eq 0 $? "kubectl apply ($(tr '\n' ' ' <"$W/apply.out"))"
ds_ready() { [ "$(kubectl -n kube-system get ds nshash-cni -o jsonpath='{.status.numberReady}')" = 1 ]; }
k8s_wait 180 ds_ready
assert_eq 0 $? "the DaemonSet is Ready on the fresh node ($(kubectl -n kube-system get pods -o wide 2>&1 | tail -1))"
echo "# note: DaemonSet Ready in $(($(date +%s) - s)) s"
DSPOD=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=nshash-cni -o jsonpath='{.items[0].metadata.name}')
# what the readiness probe costs: its command as kubelet's ExecSync runs it
# (runc exec in the install container), 5 times (figures, not asserted)
IC=$(ctr --address "$K8S_SOCK" -n k8s.io containers ls -q 'labels."io.kubernetes.container.name"==install-cni' | head -1)
ms=
for i in 1 2 3 4 5; do
	t=$(date +%s%N)
	ctr --address "$K8S_SOCK" -n k8s.io tasks exec --exec-id "nsh73-ready-$i" "$IC" /usr/bin/nshash-cni-install ready >/dev/null 2>&1
	ms="$ms $((($(date +%s%N) - t) / 1000000))"
done
echo "# note: the readiness probe's command through runc exec:$ms ms"
assert_eq "700 755 755 nshash" "$(hp_state) $(jq -r '.plugins[0].type' "$W/cni/net.d/10-nsh73.conflist")" \
	"kubelet made the hostPaths (/run/netns, /var/lib/nshash 0755), the init container narrowed /run/nshash to 0700; nshash chained first"

# --- pods
pod() { # NAME [TCP UDP [COMMAND-JSON]]
	local ann= cmd=${4:-'["/bin/sleep", "2147483647"]'}
	[ $# -ge 3 ] && ann="  annotations: {io.nshash.tcp: \"$2\", io.nshash.udp: \"$3\"}"
	kubectl apply -f - >/dev/null <<-EOP
		apiVersion: v1
		kind: Pod
		metadata:
		  name: $1
		  namespace: default
		$ann
		spec:
		  terminationGracePeriodSeconds: 1
		  containers:
		  - name: c
		    image: localhost/nsh73-busybox:latest
		    imagePullPolicy: Never
		    command: $cmd
	EOP
}
running() { [ "$(kubectl get pod "$1" -o jsonpath='{.status.phase}')" = Running ]; }
sizes() { kubectl exec "$1" -- cat /proc/sys/net/ipv4/tcp_ehash_entries /proc/sys/net/ipv4/udp_hash_entries 2>&1 | tr '\n' ' ' | sed 's/ $//'; }
k8s_wait 60 kubectl get serviceaccount default || cannot_run "no default service account"
pod p4096 4096 1024
pod p8192 8192 2048
pod pdef
pod pzero 0 0
pod pover 1048576 1024
# auto's first pod of a workload now: the record container samples it
# while the others are checked
# 200 bound UDP sockets in the pod
autopod() { pod "$1" auto auto '["/bin/sh", "-c", "for i in $(seq 200); do nc -lu -p $((20000 + i)) & done; exec sleep 2147483647"]'; }
autopod autoweb-x2k9b
for p in p4096 p8192 pdef pzero; do k8s_wait 120 running "$p"; done
assert_eq "4096 1024" "$(sizes p4096)" "annotated 4096/1024: read back in the pod"
assert_eq "8192 2048" "$(sizes p8192)" "annotated 8192/2048: read back in the pod"
assert_eq "4096 1024" "$(sizes pdef)" "unannotated: the entry's defaults (every pod gets them)"
z=$(sizes pzero)
assert_eq "1 1" "$(awk '{print ($1 < 0) " " ($2 < 0)}' <<<"$z")" "opted out with \"0\": the shared tables, a negative number ($z)"
over_ev() { kubectl get events --field-selector involvedObject.name=pover,reason=FailedCreatePodSandBox -o jsonpath='{.items[0].message}' | grep -q 'maxTcp'; }
k8s_wait 90 over_ev
ev=$(kubectl get events --field-selector involvedObject.name=pover,reason=FailedCreatePodSandBox -o jsonpath='{.items[0].message}')
echo "# note: pover's event: $ev"
assert_contains "$ev" "raise maxTcp in nshash's entry, which nshash-cni-install writes into this conflist from its ConfigMap (as shipped: nshash-cni-config, key nshash-entry.json" \
	"over the cap: refused, the message in the pod's events names maxTcp and the ConfigMap"
assert_contains "$ev" "kubectl -n kube-system rollout restart daemonset/nshash-cni" "... and the rollout restart"
assert_eq "Pending" "$(kubectl get pod pover -o jsonpath='{.status.phase}')" "... and the pod does not run"

# --- traffic: pod to pod, node to pod
IP8=$(kubectl get pod p8192 -o jsonpath='{.status.podIP}')
kubectl exec p4096 -- ping -c 1 -W 5 "$IP8" >/dev/null 2>&1
assert_eq 0 $? "pod to pod: p4096 reaches p8192 ($IP8)"
busybox ping -c 1 -W 5 "$IP8" >/dev/null 2>&1
assert_eq 0 $? "node to pod: the node reaches p8192 ($IP8)"

# --- /metrics naming pods
MET=$(curl -s --max-time 10 http://127.0.0.1:9490/metrics)
assert_contains "$MET" 'namespace="default",pod="p8192"' "/metrics names the pods (namespace, pod labels)"

# --- auto: the first pod of a workload marked (shared tables); sampled by
# the record container (at its next run: a minute after its start, or the
# new pod's at its start after the rollout restart below, whichever comes
# first), the workload's next pod sized from it (after that restart)
k8s_wait 120 running autoweb-x2k9b
z=$(sizes autoweb-x2k9b)
assert_eq "1 1" "$(awk '{print ($1 < 0) " " ($2 < 0)}' <<<"$z")" "auto, first pod of the workload: the shared tables, marked ($z)"

# --- the runtime's netns pins, seen by the node and record containers: a
# netns pinned in the node's /run/netns as containerd pins a pod's (a file,
# a bind mount of the netns), no process in it
innode sh -euc 'touch /run/netns/nsh73-pinned && unshare --net=/run/netns/nsh73-pinned true'
for c in node record; do
	assert_contains "$(kubectl -n kube-system exec "$DSPOD" -c $c -- nshash --state-dir /run/nshash stats 2>&1)" " /run/netns/nsh73-pinned" \
		"the $c container sees a netns only the node's /run/netns pins (HostToContainer: pinned after it started)"
done
innode sh -c 'umount /run/netns/nsh73-pinned && rm /run/netns/nsh73-pinned'

# --- gc in the node container: the records of live pods kept
kubectl -n kube-system exec "$DSPOD" -c node -- nshash --state-dir /run/nshash gc >"$W/gc.out" 2>&1
assert_eq 0 $? "gc in the node container ($(tr '\n' ' ' <"$W/gc.out"))"
MET=$(curl -s --max-time 10 http://127.0.0.1:9490/metrics)
assert_contains "$MET" 'namespace="default",pod="p8192"' "after gc /metrics still names the pods (their records kept)"
assert_contains "$MET" 'namespace="default",pod="p4096"' "... every live one"

# --- a ConfigMap change + kubectl rollout restart
chained_tcp() { jq -r '.plugins[0].tcp' "$W/cni/net.d/10-nsh73.conflist" 2>/dev/null; }
kubectl -n kube-system get cm nshash-cni-config -o json |
	jq '.data["nshash-entry.json"] |= (fromjson | .tcp = 2048 | tojson)' | kubectl apply -f - >/dev/null 2>&1
# before it: no container of the DaemonSet restarted (the liveness probe
# never failed) and no probe failed
assert_eq "state-dir=0 install-cni=0 node=0 record=0" \
	"$(kubectl -n kube-system get pod "$DSPOD" -o jsonpath='{range .status.initContainerStatuses[*]}{.name}={.restartCount} {end}{range .status.containerStatuses[*]}{.name}={.restartCount} {end}' | sed 's/ $//')" \
	"no container of the DaemonSet's pod restarted so far"
assert_eq "" "$(kubectl -n kube-system get events --field-selector reason=Unhealthy -o jsonpath='{range .items[*]}{.message}; {end}')" \
	"no readiness or liveness probe failed so far"
# the old pod's containers as the rollout stops them (SIGTERM, then after
# terminationGracePeriodSeconds SIGKILL): their logs to their end, their
# exit codes as kubelet reports them
OLD=$DSPOD
FOLLOW=()
for c in install-cni node record; do
	timeout 120 "$K8S_BIN/kubectl" -n kube-system logs -f "$OLD" -c $c >"$W/old-$c.log" 2>&1 &
	FOLLOW+=($!)
done
timeout 120 "$K8S_BIN/kubectl" -n kube-system get pod "$OLD" -w -o json >"$W/old-status" 2>"$W/old-status.err" &
WATCH=$!
# the containers' states in the last version of the old pod the watch saw
old_states() {
	jq -rs 'map(select(.status.containerStatuses) | [.status.containerStatuses[] |
		"\(.name)=\(.state.terminated.exitCode // "")/\(.state.terminated.reason // (.state | keys | join(",")))"] | join(" ")) | last // ""' "$W/old-status"
}
old_gone() { old_states | grep -qv '=/'; }
kubectl -n kube-system rollout restart ds/nshash-cni >/dev/null 2>&1
kubectl -n kube-system rollout status ds/nshash-cni --timeout=180s >/dev/null 2>&1
assert_eq "0 2048" "$? $(chained_tcp)" "ConfigMap tcp 2048 + rollout restart: the node's conflist has the new entry"
wait "${FOLLOW[@]}"
k8s_wait 30 old_gone
kill $WATCH 2>/dev/null
wait $WATCH
assert_eq "install-cni=0/Completed node=0/Completed record=0/Completed" "$(old_states)" \
	"the old pod's containers stopped on SIGTERM, exit 0 each (none killed at the grace period's end) ($(head -c 300 "$W/old-status.err"))"
assert_contains "$(tail -2 "$W/old-install-cni.log")" "signal 15: stopping; nshash stays chained" "... the installer by its own handler, leaving nshash chained"
assert_contains "$(tail -2 "$W/old-node.log")" "signal 15: exiting" "... the node container by its own handler"
assert_contains "$(tail -2 "$W/old-record.log")" "signal 15: stopping" "... the record container by its own handler"
DSPOD=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=nshash-cni -o jsonpath='{.items[0].metadata.name}')
pod pcm
k8s_wait 120 running pcm
assert_eq "2048 1024" "$(sizes pcm)" "... and a new unannotated pod gets 2048"

# --- auto, continued: the record container's sample, the workload's next pod
sampled() { { cat "$W/old-record.log"; kubectl -n kube-system logs "$DSPOD" -c record; } | grep -q '^sampled [1-9]'; }
k8s_wait 150 sampled
assert_eq 0 $? "the record container sampled it ($(kubectl -n kube-system logs "$DSPOD" -c record | tail -1))"
kubectl delete pod autoweb-x2k9b --wait=true --timeout=60s >/dev/null 2>&1
autopod autoweb-z7q4m
k8s_wait 120 running autoweb-z7q4m
z=$(sizes autoweb-z7q4m)
echo "# note: auto's second pod of the workload: $z"
assert_eq "1 1" "$(awk '{print ($1 > 0) " " ($2 > 0)}' <<<"$z")" "the next pod of the workload (autoweb) is sized from the history ($z)"
AUTO=$(kubectl -n kube-system exec "$DSPOD" -c node -- nshash --state-dir /run/nshash history --json 2>&1 | jq -r '.[] | select(.workload == "cni:default:pod=autoweb") | "\(.autoTcp) \(.autoUdp)"')
assert_eq "$z" "$AUTO" "... its tables what the history in the node's /var/lib/nshash gives the workload (read in the node container)"
assert_contains "$(curl -s --max-time 10 http://127.0.0.1:9490/metrics)" "nshash_auto_entries{workload=\"cni:default:pod=autoweb\",proto=\"udp\"} ${AUTO#* }" \
	"/metrics: nshash_auto_entries for the workload (the node container reads the history)"
assert_eq 600 "$(innode stat -c %a /var/lib/nshash/history)" "the history file is 0600 in kubelet's 0755 /var/lib/nshash"

# --- an image-tag upgrade, with no moment unchained (the conflist polled)
podman tag "localhost/nshash-cni:$VERSION" "localhost/nshash-cni:$VERSION-up" &&
	podman save --format oci-archive -o "$W/nshash-cni-up.tar" "localhost/nshash-cni:$VERSION-up" 2>/dev/null &&
	ctr --address "$K8S_SOCK" -n k8s.io images import "$W/nshash-cni-up.tar" >/dev/null
assert_eq 0 $? "the new tag loaded into the node's containerd"
sed -i "s|image: localhost/nshash-cni:$VERSION$|image: localhost/nshash-cni:$VERSION-up|" "$M"
: >"$W/poll"
(while [ ! -e "$W/poll.stop" ]; do jq -r '.plugins[0].type' "$W/cni/net.d/10-nsh73.conflist" >>"$W/poll" 2>&1 || echo unreadable >>"$W/poll"; sleep 0.05; done) &
POLL=$!
s=$(date +%s)
kubectl apply -f "$M" >/dev/null 2>&1 && kubectl -n kube-system rollout status ds/nshash-cni --timeout=180s >/dev/null 2>&1
rc=$?
sleep 1; touch "$W/poll.stop"; wait $POLL
echo "# note: upgrade rolled out in $(($(date +%s) - s)) s; conflist polled $(wc -l <"$W/poll") times"
assert_eq "0 localhost/nshash-cni:$VERSION-up" "$rc $(kubectl -n kube-system get pods -l app.kubernetes.io/name=nshash-cni -o jsonpath='{.items[*].spec.containers[0].image}')" \
	"the image-tag upgrade rolled out"
assert_eq "nshash" "$(sort -u "$W/poll" | tr '\n' ' ' | sed 's/ $//')" "... nshash first in the conflist at every poll during it"
# the ConfigMap edit (tcp 2048) is kept by the new pod; back to the shipped entry for the rest
kubectl apply -f "$M" >/dev/null 2>&1

# --- a node "reboot": containerd and kubelet restarted with a fresh /run
k8s_node_down
umount_under "$K8S_CTRD/state"; rm -rf "$K8S_CTRD/state"
innode sh -euc 'umount -R /run && mount -t tmpfs -o mode=0755 nsh73-run /run && mkdir -p /run/lock && touch /run/xtables.lock'
assert_eq "absent absent 755" "$(hp_state)" "reboot: a fresh /run (no /run/nshash, /run/netns), /var/lib/nshash kept"
s=$(date +%s)
k8s_node_up
assert_eq 0 $? "after the reboot the node is Ready"
k8s_wait 180 ds_ready
assert_eq 0 $? "... and the DaemonSet in place comes back Ready ($(kubectl -n kube-system get pods -o wide 2>&1 | tail -1))"
echo "# note: DaemonSet Ready $(($(date +%s) - s)) s after the reboot"
DSPOD=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=nshash-cni -o jsonpath='{.items[0].metadata.name}')
pod preboot
k8s_wait 120 running preboot
assert_eq "4096 1024" "$(sizes preboot)" "a new pod after the reboot is sized (4096/1024)"
autopod autoweb-h8w2d
k8s_wait 120 running autoweb-h8w2d
assert_eq "$AUTO" "$(sizes autoweb-h8w2d)" "... and the workload's next pod is sized from the history the reboot kept (/var/lib/nshash)"

# --- removal, exactly as docs/cni.md says
for p in $(kubectl -n kube-system get pods -l app.kubernetes.io/name=nshash-cni -o name); do
	kubectl -n kube-system exec "$p" -c install-cni -- nshash-cni-install uninstall >"$W/uninstall.out" 2>&1
done
assert_eq "0" "$(cmp -s "$PRISTINE" "$W/cni/net.d/10-nsh73.conflist"; echo $?)" "uninstall: the conflist restored byte for byte"
unready() { [ "$(kubectl -n kube-system get pod "$DSPOD" -o jsonpath='{.status.containerStatuses[?(@.name=="install-cni")].ready}')" = false ]; }
k8s_wait 60 unready
assert_eq 0 $? "... and the pod turns not ready (its readiness probe)"
unready_ev() { kubectl -n kube-system get events --field-selector involvedObject.name="$DSPOD",reason=Unhealthy -o jsonpath='{.items[*].message}'; }
unready_said() { unready_ev | grep -q 'not ready: uninstalled'; }
k8s_wait 30 unready_said # kubelet's events are posted in batches
assert_contains "$(unready_ev)" "Readiness probe failed: not ready: uninstalled" "... saying why in the pod's events"
s=$(date +%s)
kubectl delete -f "$M" --wait=true --timeout=60s >"$W/delm.out" 2>&1
assert_eq 0 $? "kubectl delete -f the manifest ($(tr '\n' ' ' <"$W/delm.out"))"
echo "# note: kubectl delete -f: $(($(date +%s) - s)) s"
# the pods made while chained go while a new one starts
s=$(date +%s)
CHAINED="p4096 p8192 pdef pzero pover pcm preboot autoweb-z7q4m autoweb-h8w2d"
kubectl delete pod $CHAINED --wait=false >"$W/del.out" 2>&1
pod pafter
k8s_wait 120 running pafter
z=$(sizes pafter)
assert_eq "1 1" "$(awk '{print ($1 < 0) " " ($2 < 0)}' <<<"$z")" "a new pod after the removal: the shared tables ($z)"
chained_gone() { [ -z "$(kubectl get pod $CHAINED --ignore-not-found -o name)" ]; }
k8s_wait 120 chained_gone
assert_eq 0 $? "pods made while chained are stopped and removed ($(tr '\n' ' ' <"$W/del.out"); left: $(kubectl get pod $CHAINED --ignore-not-found -o name | tr '\n' ' '))"
echo "# note: the pods made while chained removed in $(($(date +%s) - s)) s"
kubectl delete pod pafter --wait=true --timeout=60s >/dev/null 2>&1

k8s_down
assert_eq "" "$(ip link show "$K8S_BR" 2>/dev/null; ls -d $(_k8s_cgroups) 2>/dev/null; grep -F "$W" /proc/self/mountinfo)" \
	"nothing left on the host: no bridge, cgroups or mounts of the cluster"
assert_host_untouched
echo "# note: the whole test: $(($(date +%s) - T0)) s"
