#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A real chain nshash → bridge + host-local → portmap → loopback on netns
# pinned the way containerd does: sizes and eth0 after ADD, a gateway ping,
# CHECK, DEL cleaning everything; pod annotations through runtimeConfig;
# 20 concurrent ADDs with mixed sizes, each exact.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq
for p in bridge host-local portmap loopback; do [ -x /usr/lib/cni/$p ] || cannot_run "/usr/lib/cni/$p missing"; done
command -v busybox >/dev/null || cannot_run "busybox (for ping) missing"

D=$(make_state_dir)
cni_test_network 51
export CNI_CACHE_DIR=$D/cache
cni_node_policy "$D/node.json" "$D/state"
mkdir -p "$CNI_CACHE_DIR"
LIST=$D/$NET.conflist
cat >"$LIST" <<JSON
{"cniVersion": "1.0.0", "name": "$NET", "plugins": [
  {"type": "nshash", "tcp": 4096, "udp": 1024, "maxTcp": 65536, "maxUdp": 16384, "onFailure": "fail",
   "strategy": "nested", "capabilities": {"io.kubernetes.cri.pod-annotations": true}},
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$D/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
  {"type": "loopback"}
]}
JSON
pin() { cni_pin_netns "$D/$1"; }

# ---- one pod, network defaults
pin pod1
cni_chain ADD "$LIST" "$D/pod1" pod1 '{"portMappings":[{"hostPort":18051,"containerPort":80,"protocol":"tcp"}]}'
assert_eq 0 "$CNI_RC" "chain ADD succeeds $([ "$CNI_RC" = 0 ] || echo "$CNI_OUT $CNI_ERR")"
assert_eq "4096 1024" "$(netns_sizes_at "$D/pod1")" "the pod netns has the network's sizes"
ADDR=$(nsenter --net="$D/pod1" ip -4 -o addr show dev eth0 | awk '{print $4}')
assert_contains "$ADDR" "$SUBNET." "eth0 got its address from host-local ($ADDR)"
assert_eq "$(jq -r '.ips[0].address' <<<"$CNI_OUT")" "$ADDR" "the chain's result names that address"
assert_eq "$(jq -r '.cniVersion' <<<"$CNI_OUT")" "1.0.0" "result stamped with the conflist's version"
assert_eq "UP" "$(nsenter --net="$D/pod1" ip -br link show lo | awk '{print $2}' | sed 's/UNKNOWN/UP/')" "lo is up in the sized netns"
if nsenter --net="$D/pod1" busybox ping -c1 -W2 "$SUBNET.1" >/dev/null 2>&1; then pass "ping from the pod to the bridge gateway"; else fail "ping to $SUBNET.1 failed"; fi
# CHECK without portmap: portmap 1.1.1's CHECK fails on hosts without
# ip6tables NAT ("could not check ipv6 dnat"), a bug of its own.
jq '.plugins |= map(select(.type != "portmap"))' "$LIST" >"$D/check.conflist"
cni_chain CHECK "$D/check.conflist" "$D/pod1" pod1
assert_eq "0" "$CNI_RC" "chain CHECK (nshash, bridge, loopback) passes $CNI_OUT"
[ "$(cni_iptables_count "$NET")" -gt 0 ] && pass "bridge/portmap installed their rules" || fail "no iptables rules for $NET"
cni_chain DEL "$LIST" "$D/pod1" pod1 '{"portMappings":[{"hostPort":18051,"containerPort":80,"protocol":"tcp"}]}'
assert_eq "0" "$CNI_RC" "chain DEL succeeds"
assert_eq "" "$(nsenter --net="$D/pod1" ip -br link show dev eth0 2>/dev/null)" "DEL removed eth0"
assert_eq "0" "$(cni_iptables_count "$NET")" "DEL removed the masquerade and port-mapping rules"
assert_eq "" "$(ls "$D/ipam/$NET" 2>/dev/null | grep -v -e lock -e last_reserved_ip)" "DEL released the address"
cni_chain DEL "$LIST" "$D/pod1" pod1
assert_eq "0" "$CNI_RC" "chain DEL again succeeds"
umount "$D/pod1" && rm "$D/pod1"

# ---- pod annotations through runtimeConfig
pin pod2
cni_chain ADD "$LIST" "$D/pod2" pod2 '{"io.kubernetes.cri.pod-annotations":{"io.nshash.tcp":"32768","io.nshash.udp":"8192"}}'
assert_eq "0 32768 8192" "$CNI_RC $(netns_sizes_at "$D/pod2")" "annotations override the network defaults"
cni_chain DEL "$LIST" "$D/pod2" pod2
pin pod3
cni_chain ADD "$LIST" "$D/pod3" pod3 '{"io.kubernetes.cri.pod-annotations":{"io.nshash.tcp":"1048576"}}'
assert_eq "102" "$(jq -r .code <<<"$CNI_OUT")" "annotation over maxTcp refused (102)"
assert_contains "$(jq -r .msg <<<"$CNI_OUT")" "tcp size 1048576 (effective 1048576) is above the allowed maximum 65536 (maxTcp)" "refusal names the size and the cap"
assert_eq "" "$(nsenter --net="$D/pod3" ip -br link show dev eth0 2>/dev/null)" "refused ADD: the next plugins never ran"

# ---- concurrent ADDs with mixed sizes (without masquerading: iptables-nft
# rules cost ~1 s per pod on this machine and are tested above)
jq '(.plugins[] | select(.type == "bridge")).ipMasq = false' "$LIST" >"$D/par.conflist"
N=20
SIZES=(128 256 512 1024 2048 4096 8192 16384 65536 1000 3000)
start=$(date +%s%N)
for ((i = 0; i < N; i++)); do
	pin "par$i"
	t=${SIZES[$((i % ${#SIZES[@]}))]}
	u=$((${SIZES[$(((i + 5) % ${#SIZES[@]}))]} % 16385))
	(
		cni_chain ADD "$D/par.conflist" "$D/par$i" "par$i" "{\"io.kubernetes.cri.pod-annotations\":{\"io.nshash.tcp\":\"$t\",\"io.nshash.udp\":\"$u\"}}"
		echo "$CNI_RC" >"$D/par$i.rc"
		echo "$CNI_OUT $CNI_ERR" >"$D/par$i.out"
	) &
done
wait
ms=$((($(date +%s%N) - start) / 1000000))
ok=0 bad=""
for ((i = 0; i < N; i++)); do
	t=${SIZES[$((i % ${#SIZES[@]}))]}
	u=$((${SIZES[$(((i + 5) % ${#SIZES[@]}))]} % 16385))
	want="0 $(awk -v t="$t" -v u="$u" 'function p2(x, m){v=1; while (v < x) v*=2; if (v < m) v=m; return v} BEGIN {print p2(t,1), p2(u,128)}')"
	got="$(cat "$D/par$i.rc") $(netns_sizes_at "$D/par$i")"
	addr=$(nsenter --net="$D/par$i" ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')
	if [ "$got" = "$want" ] && [ -n "$addr" ]; then ok=$((ok + 1)); else bad+=" par$i(want '$want' got '$got' addr '$addr': $(head -c 300 "$D/par$i.out"))"; fi
done
assert_eq "$N" "$ok" "$N concurrent chain ADDs each got their exact sizes and an address ($ms ms)$bad"
ADDRS=$(for ((i = 0; i < N; i++)); do nsenter --net="$D/par$i" ip -4 -o addr show dev eth0 | awk '{print $4}'; done | sort -u | wc -l)
assert_eq "$N" "$ADDRS" "every concurrent pod has its own address"
for ((i = 0; i < N; i++)); do cni_chain DEL "$D/par.conflist" "$D/par$i" "par$i" & done
wait
assert_eq "0" "$(cni_iptables_count "$NET")" "DEL of all concurrent pods removed their rules"
assert_eq "0" "$(ip -br link show master $BR 2>/dev/null | wc -l)" "no veth left on the bridge"
assert_host_untouched
