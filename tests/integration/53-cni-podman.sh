#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman with the CNI backend and a private conflist that puts nshash first:
# containers get the network's sizes with working networking; stop, start
# (sizes again), rm are clean.  Private podman config and storage only.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs podman
[ "$(engines_podman_major)" -ge 5 ] &&
	skip_test "podman $(engines_podman_major) has no CNI backend (netavark only since podman 5.0; 63-oci-podman-bridge checks it refuses one): the precreate hook sizes podman 5's netavark networks"
for p in bridge host-local portmap loopback; do [ -x /usr/lib/cni/$p ] || cannot_run "/usr/lib/cni/$p missing"; done

D=$(make_state_dir)
engines_iptables_snapshot
cni_test_network 53
mkdir -p "$D/net"
cni_node_policy "$D/node.json" "$D/state" # podman passes its environment to the plugins
cat >"$D/net/$NET.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "$NET", "plugins": [
  {"type": "nshash", "tcp": 8192, "udp": 2048, "onFailure": "fail", "stateDir": "$D/state"},
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "routes": [{"dst": "0.0.0.0/0"}], "ranges": [[{"subnet": "$SUBNET.0/24", "gateway": "$SUBNET.1"}]],
            "dataDir": "$D/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}
]}
JSON
engines_podman_setup "$D/podman" "[network]
network_backend = \"cni\"
network_config_dir = \"$D/net\"
cni_plugin_dirs = [\"$BUILD/cni\", \"/usr/lib/cni\"]
default_network = \"$NET\"" || cannot_run "podman setup failed"

sizes_of() { netns_sizes_of_pid "$(podman inspect -f '{{.State.Pid}}' "$1")"; }
veths() { ip -br link show master "$BR" 2>/dev/null | wc -l; }

out=$(podman run -d --name c1 --network "$NET" localhost/nshash-busybox sleep 600 2>&1)
assert_eq 0 $? "podman run on the nshash-first network ($out)"
assert_eq "8192 2048" "$(sizes_of c1)" "the container has the network's sizes"
ADDR=$(podman exec c1 ip -4 -o addr show dev eth0 | awk '{print $4}')
assert_contains "$ADDR" "$SUBNET." "eth0 has an address from the network ($ADDR)"
if podman exec c1 ping -c1 -W2 "$SUBNET.1" >/dev/null 2>&1; then pass "ping from the container to the gateway"; else fail "ping to $SUBNET.1 failed"; fi
assert_eq "1" "$(veths)" "one veth on the bridge"

podman stop -t 0 c1 >/dev/null 2>&1
assert_eq "0" "$(veths)" "stop: CNI DEL removed the veth"
assert_eq "" "$(ls "$D/ipam/$NET" 2>/dev/null | grep -v -e lock -e last_reserved_ip)" "stop: the address was released"

podman start c1 >/dev/null 2>&1
assert_eq 0 $? "start again"
assert_eq "8192 2048" "$(sizes_of c1)" "restart: ADD sized the new netns again"
if podman exec c1 ping -c1 -W2 "$SUBNET.1" >/dev/null 2>&1; then pass "ping after restart"; else fail "ping after restart failed"; fi

out=$(podman run --rm --network "$NET" -p 18053:80 localhost/nshash-busybox sh -c 'cat /proc/sys/net/ipv4/tcp_ehash_entries /proc/sys/net/ipv4/udp_hash_entries | tr "\n" " "; ip -4 -o addr show dev eth0 | wc -l' 2>&1)
assert_eq "8192 2048 1" "$out" "a second container, with a port mapping, sized too (--rm)"

podman rm -f -t 0 c1 >/dev/null 2>&1
assert_eq "0" "$(podman ps -aq | wc -l)" "rm: no container left"
assert_eq "0" "$(veths)" "rm: no veth left"
assert_eq "0" "$(cni_iptables_count "$NET")" "rm: no iptables rule for the network left"
assert_eq "" "$(ls "$D/ipam/$NET" 2>/dev/null | grep -v -e lock -e last_reserved_ip)" "rm: no address reserved"
assert_host_untouched
