#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `ctr run --cni`: runc creates the netns with the container inside and CNI
# ADD gets /proc/PID/ns/net, which cannot be resized.  Under onFailure fail
# the container does not start and the error says why; under warn it runs
# on the shared tables and the warning is shown.  ctr always reads
# /etc/cni/net.d and /opt/cni/bin: it runs in a private mount namespace with
# tmpfs over both, so the host's files are never touched.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs containerd ctr

D=$(make_state_dir)
engines_iptables_snapshot
cni_test_network 54
engines_busybox_rootfs "$D/rootfs"
cni_node_policy "$D/node.json" "$D/state" # ctr runs the plugins with its environment
engines_containerd_start "$D/containerd" || cannot_run "containerd did not start"

conflist() { # ONFAILURE
	cat <<JSON
{"cniVersion": "1.0.0", "name": "$NET", "plugins": [
  {"type": "nshash", "tcp": 4096, "udp": 512, "onFailure": "$1", "stateDir": "$D/state"},
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET.0/24"}]], "dataDir": "$D/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
JSON
}
# ctr_cni ONFAILURE ID CMD...: ctr run --rm --cni with a private
# /etc/cni/net.d and /opt/cni/bin.  Output in CTR_OUT, status in CTR_RC.
ctr_cni() {
	local onf=$1 id=$2
	shift 2
	conflist "$onf" >"$D/$NET.conflist"
	CTR_OUT=$(unshare -m --propagation private bash -c '
		set -e
		mount -t tmpfs nshash-test /etc/cni/net.d
		mount -t tmpfs nshash-test /opt
		mkdir -p /opt/cni/bin
		cp /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback "$1" /opt/cni/bin/
		cp "$2" /etc/cni/net.d/
		shift 2
		exec timeout 60 ctr run --rm --cni --rootfs "$@"' sh "$CNI_PLUGIN" "$D/$NET.conflist" "$D/rootfs" "$id" "$@" 2>&1)
	CTR_RC=$?
}

ctr_cni fail c-fail /bin/sh -c 'echo STARTED; cat /proc/sys/net/ipv4/tcp_ehash_entries'
[ "$CTR_RC" -ne 0 ] && pass "onFailure fail: ctr run fails (exit $CTR_RC)" || fail "onFailure fail: ctr run succeeded: $CTR_OUT"
assert_not_contains "$CTR_OUT" "STARTED" "onFailure fail: the container's process never ran"
assert_contains "$CTR_OUT" "cannot size the netns /proc/" "the error names the netns"
assert_contains "$CTR_OUT" "it is a process's netns, created by the runtime with the container already inside" "the error says why"
assert_contains "$CTR_OUT" "use the nshash OCI hook or runtime wrapper" "the error says what to do"
ctr task rm -f c-fail >/dev/null 2>&1
ctr containers rm c-fail >/dev/null 2>&1

ctr_cni warn c-warn /bin/sh -c 'cat /proc/sys/net/ipv4/tcp_ehash_entries /proc/sys/net/ipv4/udp_hash_entries | tr "\n" " "; ip -4 -o addr show dev eth0 | wc -l'
assert_eq 0 "$CTR_RC" "onFailure warn: the container runs"
SHARED=$(grep -E '^-?[0-9]+ -?[0-9]+ [0-9]+$' <<<"$CTR_OUT" | awk '{print ($1 + 0 < 0 && $2 + 0 < 0) ? "shared" : $0}')
assert_eq "shared" "$SHARED" "onFailure warn: it runs on the shared tables"
assert_contains "$CTR_OUT" " 1" "onFailure warn: the rest of the chain gave it eth0 with an address"
assert_contains "$CTR_OUT" "warning (onFailure warn, code 100)" "onFailure warn: the warning is shown"

assert_eq "0" "$(ctr containers ls -q | wc -l)" "no container left in the private containerd"
# `ctr run --rm --cni` calls DEL with an empty netns: the bridge plugin's
# masquerade chains stay behind; the guard removes them at exit.
# The veth goes with the container's netns, which the kernel frees
# asynchronously after its last process: on a loaded machine after ctr exits.
for _ in $(seq 50); do [ "$(ip -br link show master "$BR" 2>/dev/null | wc -l)" = 0 ] && break; sleep 0.2; done
assert_eq "0" "$(ip -br link show master "$BR" 2>/dev/null | wc -l)" "no veth left on the bridge (within 10 s: the netns is freed asynchronously)"
assert_host_untouched
