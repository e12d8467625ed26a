#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman's bridge network (netavark, rootful) with the shipped hooks.d files:
# the precreate hook moves the configured links of podman's netns into a
# sized one at the same path.  Sizes exact, gateway reachable, -p published
# port reachable from the host, sizes again after restart / stop+start /
# --restart on-failure, two networks, an IPv6 network, DNS by name between
# two containers, macvlan, 20 containers in parallel with 4 size pairs, pod
# members refused with what to do, onFailure warn, the hook SIGKILLed midway,
# the policy's budget and spares,
# podman's CNI backend without nshash in the conflist.  Nothing left after rm.
# The test's own networks (subnets 10.137-10.140.0.0/24, fd37::/64, bridges
# nsh37*) keep it apart from anything else podman runs on the machine.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_iptables_snapshot nsh37 10.137.0. 10.138.0. 10.139.0. 10.140.0. 10.141.0. 10.142.0. fd37:
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_hooks_dir "$D/hooks" "$P"
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]
[network]
network_config_dir = \"$D/podman/networks\"" || cannot_run "podman setup failed"
# net37 NAME BRIDGE ARGS...: a network on a bridge of our own name (podman 4.3
# numbers its bridges podman1, podman2, ... per config dir, which another
# podman on the machine may use too)
net37() {
	local name=$1 br=$2 f
	shift 2
	podman network create "$@" "$name" >/dev/null || return 1
	f=$D/podman/networks/$name.json
	jq --arg b "$br" '.network_interface = $b' "$f" >"$f.new" && mv "$f.new" "$f"
}
net37 nsh37 nsh37br0 --subnet 10.137.0.0/24 || cannot_run "podman network create failed"
echo 'default_network = "nsh37"' >>"$CONTAINERS_CONF" # [network] is the file's last section
IMG=localhost/nshash-busybox
BB=$ENGINES_BUSYBOX
ANN() { echo "--annotation io.nshash.tcp=$1 --annotation io.nshash.udp=$2"; }
# why ARGS...: podman ARGS; when it fails, its error and the hook's last
# logged error as comments (podman 5's parallel and restart refusals)
why() {
	podman "$@" >/dev/null 2>"$D/why.err" && return 0
	echo "# podman $1 failed: $(tail -2 "$D/why.err" | tr '\n' ' ' | cut -c1-300)"
	echo "# nshash.log: $(grep -E 'error' "$D/nshash.log" | tail -1)"
	return 1
}
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
left_on_bridge() { ip -o link show master "$1" 2>/dev/null | wc -l; }
rules_for() { iptables-save 2>/dev/null | grep -c -- "$1"; }

# --- the default (bridge) network: sized, eth0 configured, gateway reachable
out=$(podman run --rm $(ANN 4096 1024) $IMG sh -c "$SIZES; ip -o -4 addr show eth0 | grep -c 10.137.0.; ping -c1 -W2 10.137.0.1 >/dev/null && echo gw-ok" 2>"$D/err")
assert_eq "4096 1024
1
gw-ok" "$out" "bridge: tcp=4096 udp=1024, eth0 has its address, the gateway answers"
assert_contains "$(cat "$D/nshash.log")" "replaced by a sized one with its configuration (recreated eth0): requested tcp=4096 udp=1024, effective tcp=4096 udp=1024" \
	"precreate logs the transplant: eth0's veth pair recreated, not moved"
out=$(podman run --rm $IMG sh -c "$SIZES")
assert_eq "-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)" "$out" \
	"no annotations: untouched, shared tables"

# --- -p: a published port reachable from the host; restart, stop/start
why run -d --name web $(ANN 2048 512) -p 18737:80 $IMG sh -c 'echo hello-37 >/tmp/i; exec httpd -f -p 80 -h /tmp'
fetch() { for _ in $(seq 30); do curl -s -m 2 "http://10.137.0.1:18737/i" 2>/dev/null && return; sleep 0.2; done; }
assert_eq "2048 512" "$(podman exec web sh -c "$SIZES")" "-p: container sized"
assert_eq "hello-37" "$(fetch)" "-p: the published port answers from the host"
# the recreated pair: the host side on the bridge is eth0's peer, and the
# old pair (left in podman's netns, off the bridge) is gone once podman
# let that netns go (podman run -d has exited)
veths_with() { ip -o link show type veth | grep -c "link/ether $1 "; }
hside=$(ip -o link show master nsh37br0 | awk -F': ' '{print $2}' | cut -d@ -f1)
hmac=$(cat "/sys/class/net/$hside/address" 2>/dev/null)
assert_eq "$(cat "/sys/class/net/$hside/ifindex" 2>/dev/null)" "$(podman exec web cat /sys/class/net/eth0/iflink)" \
	"-p: the bridge port is eth0's peer"
for _ in $(seq 50); do [ "$(veths_with "$hmac")" = 1 ] && break; sleep 0.1; done
assert_eq 1 "$(veths_with "$hmac")" "-p: the old veth pair is gone with podman's netns (one veth with the host side's MAC)"
why restart -t 0 web
assert_eq "2048 512" "$(podman exec web sh -c "$SIZES")" "podman restart: sized again"
assert_eq "hello-37" "$(fetch)" "podman restart: the published port answers again"
podman stop -t 0 web >/dev/null
why start web
assert_eq "2048 512" "$(podman exec web sh -c "$SIZES")" "podman stop + start: sized again"
assert_eq "hello-37" "$(fetch)" "stop + start: the published port answers again"
podman rm -f -t 0 web >/dev/null
assert_eq 0 "$(left_on_bridge nsh37br0)" "rm: no veth left on the bridge"
for _ in $(seq 50); do [ "$(veths_with "$hmac")" = 0 ] && break; sleep 0.1; done
assert_eq 0 "$(veths_with "$hmac")" "rm: no veth left on the host (none with the host side's MAC)"
assert_eq 0 "$(rules_for 18737)" "rm: no port-forwarding rule left"

# --- --restart on-failure: podman restarts it, precreate sizes every start
podman run -d --name rs --restart on-failure:2 $(ANN 1024 256) $IMG sh -c "$SIZES >>/tmp/log; cat /tmp/log; sleep 1; exit 3" >/dev/null
for _ in $(seq 100); do [ "$(podman inspect -f '{{.State.Status}} {{.RestartCount}}' rs 2>/dev/null)" = "exited 2" ] && break; sleep 0.2; done
assert_eq "exited 2" "$(podman inspect -f '{{.State.Status}} {{.RestartCount}}' rs 2>/dev/null)" "--restart on-failure:2: restarted twice"
assert_eq "1024 256
1024 256
1024 256" "$(podman logs rs 2>/dev/null | tail -3)" "--restart: sized at every start"
podman rm -f -t 0 rs >/dev/null

# --- two networks: eth0 and eth1 both moved
net37 nsh37b nsh37br1 --subnet 10.138.0.0/24
out=$(podman run --rm --network nsh37,nsh37b $(ANN 4096 128) $IMG sh -c "$SIZES; ip -o -4 addr | awk '{print \$2, \$4}' | sort; ping -c1 -W2 10.137.0.1 >/dev/null && ping -c1 -W2 10.138.0.1 >/dev/null && echo gws-ok" 2>"$D/err")
# which of eth0/eth1 is on which network is podman's choice
subnets=$(echo "$out" | awk '$1 ~ /^eth/ {split($2, a, "."); print $1, a[1] "." a[2] "." a[3]}' | sort -k2 | tr '\n' ' ')
assert_eq "4096 128" "$(echo "$out" | head -1)" "two networks: sized"
[[ "$subnets" =~ ^eth[01]\ 10\.137\.0\ eth[01]\ 10\.138\.0\ $ ]] && pass "two networks: eth0 and eth1 kept their addresses ($subnets)" ||
	fail "two networks: addresses ($subnets)"
assert_eq "gws-ok" "$(echo "$out" | tail -1)" "two networks: both gateways answer"
moved=$(grep precreate "$D/nshash.log" | tail -1 | sed -n 's/.*(recreated \([^)]*\)).*/\1/p' | tr -d ' ' | tr ',' '\n' | sort | tr '\n' ' ')
assert_eq "eth0 eth1 " "$moved" "two networks: both veth pairs recreated"

# --- an IPv6 network
net37 nsh37v6 nsh37br6 --ipv6 --subnet 10.139.0.0/24 --subnet fd37::/64
out=$(podman run --rm --network nsh37v6 $(ANN 2048 2048) $IMG sh -c "$SIZES; ip -o -6 addr show eth0 scope global | grep -c fd37::; ping -c1 -W2 fd37::1 >/dev/null && echo gw6-ok" 2>"$D/err")
assert_eq "2048 2048
1
gw6-ok" "$out" "IPv6 network: sized, global fd37:: address kept, IPv6 gateway answers"

# --- DNS by name between two containers (aardvark-dns on a user network)
net37 nsh37dns nsh37brd --subnet 10.140.0.0/24
why run -d --name srv37 --network nsh37dns $(ANN 512 128) $IMG sleep 300
out=$(podman run --rm --network nsh37dns $(ANN 512 128) $IMG sh -c "$SIZES; nslookup srv37 2>&1 | grep -q 'Address.*10\.140\.0\.' && echo resolved; ping -c1 -W2 srv37 >/dev/null && echo name-ok" 2>"$D/err")
assert_eq "512 128
resolved
name-ok" "$out" "aardvark DNS: a sized container resolves and reaches another by name"
assert_eq "512 128" "$(podman exec srv37 sh -c "$SIZES")" "aardvark DNS: the server is sized too"
podman rm -f -t 0 srv37 >/dev/null

# --- macvlan on a parent link of our own (a veth whose peer stays down)
if ip link add nsh37mv type veth peer name nsh37mvp 2>/dev/null; then
	on_exit "ip link del nsh37mv"
	ip link set nsh37mv up
	ip link set nsh37mvp up
	podman network create -d macvlan -o parent=nsh37mv --subnet 10.141.0.0/24 nsh37mac >/dev/null
	out=$(podman run --rm --network nsh37mac $(ANN 4096 1024) $IMG sh -c "$SIZES; ip -o -4 addr show eth0 | grep -c 10.141.0." 2>"$D/err")
	assert_eq "4096 1024
1" "$out" "macvlan: sized, eth0 has its address"
	assert_contains "$(grep precreate "$D/nshash.log" | tail -1)" "(moved eth0)" "macvlan: the macvlan link was moved"
else
	fail "CANNOT RUN: macvlan parent veth could not be created"
fi

# --- 20 containers in parallel, 4 size pairs, each exact and reaching its gateway
pairs=("4096 1024" "2048 512" "1024 256" "8192 128")
for i in $(seq 0 19); do
	set -- ${pairs[$((i % 4))]}
	# on failure, say whether eth0 is there at all: another test's cleanup
	# deleting links it did not make takes veths with it
	podman run --rm $(ANN "$1" "$2") $IMG sh -c "$SIZES; ping -c1 -W3 10.137.0.1 >/dev/null && echo ok || ip -o link show eth0 || echo eth0 gone" >"$D/par.$i" 2>"$D/par.$i.err" &
done
wait
bad=0
for i in $(seq 0 19); do
	[ "$(cat "$D/par.$i")" = "${pairs[$((i % 4))]}
ok" ] || { bad=$((bad + 1)); echo "# parallel $i: $(cat "$D/par.$i" "$D/par.$i.err" | tr '\n' '|')"; }
done
assert_eq 0 "$bad" "20 parallel bridged containers: each has its exact sizes and reaches the gateway"
[ "$bad" -eq 0 ] || grep -E 'error|refus|cannot' "$D/nshash.log" | tail -5 | sed 's/^/# nshash.log: /'
assert_eq 0 "$(left_on_bridge nsh37br0)" "parallel: no veth left on the bridge"

# --- a netns named like podman's but given with --network ns: (another
# container's, or here one of our own): not the engine's, never replaced
U=netns-$(cat /proc/sys/kernel/random/uuid)
ip netns add "$U" && on_exit "ip netns del $U"
out=$(podman run --rm --network ns:/run/netns/$U $(ANN 4096 1024) $IMG true 2>&1)
assert_contains "$out" "refused: the engine running this process does not hold it open: not the netns it made for this container" \
	"--network ns: to a netns podman did not make for the container: refused"
ino=$(stat -L -c %i /run/netns/$U)
[ -n "$ino" ] && [ "$(ip netns exec "$U" cat /proc/sys/net/ipv4/tcp_ehash_entries)" -lt 0 ] &&
	pass "--network ns: the netns stayed as it was" || fail "--network ns: the netns was changed"

# --- a pod's members share the infra's netns: refused with what to do
podman pod create --name pod37 >/dev/null
out=$(podman run --rm --pod pod37 $(ANN 4096 1024) $IMG true 2>&1)
assert_contains "$out" "the container would join the network namespace of process" "pod member: refused, naming the shared netns"
assert_contains "$out" "the pod's network namespace uses the shared global tables (tcp=$(cat /proc/sys/net/ipv4/tcp_ehash_entries) udp=$(cat /proc/sys/net/ipv4/udp_hash_entries)), and a network namespace's tables cannot be resized after creation. Instead: give this container the pod's sizes or no io.nshash.* annotations" "pod member: names the pod's sizes, says what to do"
podman pod rm -f pod37 >/dev/null

# --- something a new veth pair would not carry (a qdisc on the host side,
# added by a precreate hook that runs first): eth0 is moved instead, and
# works the same
mkdir -p "$D/hooks-qd"
cat >"$D/qd-hook" <<EOF
#!/bin/sh
cfg=\$(cat)
p=\$(printf '%s' "\$cfg" | /usr/bin/jq -r '.linux.namespaces[] | select(.type == "network") | .path')
i=\$(/usr/bin/nsenter --net="\$p" /usr/sbin/ip -o link show eth0 | sed -n 's/^[0-9]*: eth0@if\([0-9]*\):.*/\1/p')
h=\$(/usr/sbin/ip -o link show | awk -F': ' -v i="\$i" '\$1 == i {print \$2}' | cut -d@ -f1)
/usr/sbin/tc qdisc add dev "\$h" root handle 1: htb >/dev/null 2>&1
printf '%s' "\$cfg"
EOF
chmod +x "$D/qd-hook"
jq -n --arg p "$D/qd-hook" '{version: "1.0.0", hook: {path: $p}, when: {annotations: {"^io\\.nshash\\.": ".*"}}, stages: ["precreate"]}' >"$D/hooks-qd/00-qd.json"
cp "$D/hooks/"*.json "$D/hooks-qd/"
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/hooks-qd\"]|" "$CONTAINERS_CONF"
why run -d --name qd37 -p 18739:80 $(ANN 4096 1024) $IMG sh -c 'echo hello-qd >/tmp/i; exec httpd -f -p 80 -h /tmp'
assert_contains "$(grep precreate "$D/nshash.log" | tail -1)" "(moved eth0 (not recreated: eth0: its host side veth" \
	"a qdisc on the host side: eth0 moved, not recreated"
assert_contains "$(grep precreate "$D/nshash.log" | tail -1)" ": it has a qdisc configured))" "a qdisc on the host side: the log says why"
hside=$(ip -o link show master nsh37br0 | awk -F': ' '{print $2}' | cut -d@ -f1)
assert_eq "1 4096 1024" "$(tc qdisc show dev "$hside" | grep -c 'qdisc htb 1:') $(podman exec qd37 sh -c "$SIZES")" \
	"a qdisc on the host side: kept, the container sized"
out=""
for _ in $(seq 30); do out=$(curl -s -m 2 http://10.137.0.1:18739/i 2>/dev/null) && [ -n "$out" ] && break; sleep 0.2; done
assert_eq "hello-qd" "$out" "a qdisc on the host side: the published port answers from the host"
podman rm -f -t 0 qd37 >/dev/null
assert_eq "0 0" "$(left_on_bridge nsh37br0) $(rules_for 18739)" "a qdisc on the host side: rm leaves no veth and no rule"
sed -i "s|hooks_dir = \\[\"$D/hooks-qd\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"

# --- onFailure warn: a refusal (an nftables table inside podman's netns,
# made by a precreate hook that runs first) starts on the shared tables
mkdir -p "$D/hooks-warn"
cat >"$D/fw-hook" <<EOF
#!/bin/sh
cfg=\$(cat)
p=\$(printf '%s' "\$cfg" | /usr/bin/jq -r '.linux.namespaces[] | select(.type == "network") | .path')
/usr/bin/nsenter --net="\$p" /usr/sbin/nft add table ip nsh37 >/dev/null 2>&1
printf '%s' "\$cfg"
EOF
chmod +x "$D/fw-hook"
jq -n --arg p "$D/fw-hook" '{version: "1.0.0", hook: {path: $p}, when: {annotations: {"^io\\.nshash\\.": ".*"}}, stages: ["precreate"]}' >"$D/hooks-warn/00-fw.json"
cp "$D/hooks/"*.json "$D/hooks-warn/"
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/hooks-warn\"]|" "$CONTAINERS_CONF"
out=$(podman run --rm $(ANN 4096 1024) $IMG true 2>&1)
assert_contains "$out" "refused: it has nftables table ip nsh37: firewall rules cannot move with the links" "nftables inside: refused, named"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"onFailure\": \"warn\"}"
out=$(podman run --rm $(ANN 4096 1024) $IMG sh -c "$SIZES; ping -c1 -W2 10.137.0.1 >/dev/null && echo gw-ok" 2>"$D/err")
assert_eq "-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)
gw-ok" "$out" "onFailure warn: starts on the shared tables with its network intact"
assert_contains "$(tail -2 "$D/nshash.log")" "effective: shared global tables (onFailure warn)" "onFailure warn: logged as a warning"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"

# --- the hook SIGKILLed at random points of a transplant (5-90 % of the
# hook's time, measured first): the container fails to start, rm succeeds,
# nothing is left
mkdir -p "$D/hooks-kill"
cat >"$D/kill-hook" <<EOF
#!/bin/bash
exec 3<&0
start=\$(date +%s%N)
"$BUILD/nshash-hook" precreate --policy "$P" <&3 &
hook=\$!
if [ -e "$D/timing" ]; then # a timing run: the hook whole, its time kept
	wait \$hook
	rc=\$?
	echo \$(( (\$(date +%s%N) - start) / 1000 )) >>"$D/took"
	exit \$rc
fi
sleep \$(cat "$D/delay")
kill -KILL \$hook 2>/dev/null
wait \$hook
EOF
chmod +x "$D/kill-hook"
jq -n --arg p "$D/kill-hook" '{version: "1.0.0", hook: {path: $p}, when: {annotations: {"^io\\.nshash\\.": ".*"}}, stages: ["precreate"]}' >"$D/hooks-kill/nshash-precreate.json"
sed -i "s|hooks_dir = \\[\"$D/hooks-warn\"\\]|hooks_dir = [\"$D/hooks-kill\"]|" "$CONTAINERS_CONF"
# The window follows the hook as it runs on this machine (it got faster as
# the transplant did): three transplants timed through the same wrapper,
# then the kills at 5-90 % of the fastest.
touch "$D/timing"
rm -f "$D/took"
for i in 1 2 3; do
	podman run -d --name k37-t$i $(ANN 2048 256) $IMG sleep 60 >/dev/null 2>&1
	podman rm -f -t 0 k37-t$i >/dev/null 2>&1
done
rm -f "$D/timing"
fastest=$(sort -n "$D/took" 2>/dev/null | head -1)
echo "# the hook took $(sort -n "$D/took" 2>/dev/null | tr '\n' ' ')us here; kills at 5-90 % of ${fastest:-?} us"
[ -n "$fastest" ] || fastest=10000
failed=0
for i in $(seq 8); do
	awk -v i=$i -v f="$fastest" 'BEGIN {srand(i * 104729); printf "%.4f\n", f * (0.05 + rand() * 0.85) / 1e6}' >"$D/delay"
	podman run -d --name k37-$i $(ANN 2048 256) $IMG sleep 60 >/dev/null 2>&1 || failed=$((failed + 1))
	podman rm -f -t 0 k37-$i >/dev/null 2>&1
	[ -z "$(podman ps -aq --filter name=k37-$i)" ] || fail "SIGKILL run $i: podman rm left the container"
done
[ $failed -gt 0 ] && pass "SIGKILL of the hook: $failed of 8 containers failed to start (the rest finished first)" ||
	fail "SIGKILL of the hook: no run was killed midway"
assert_eq 0 "$(left_on_bridge nsh37br0)" "SIGKILL: no veth left on the bridge"
# (the network's own rules go with its last container's teardown, which
# podman may still be finishing for the last killed start: seen once with 4
# rules left at this line and none at the next step's check; up to 10 s)
for _ in $(seq 100); do [ "$(rules_for 10.137.0.)" = 0 ] && break; sleep 0.1; done
assert_eq 0 "$(rules_for 10.137.0.)" "SIGKILL: no firewall rule for the network's containers left"
assert_eq 0 "$(engines_pins_left "$S")" "SIGKILL: no pin left"
sed -i "s|hooks_dir = \\[\"$D/hooks-kill\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"

# --- the policy's table memory budget and spares apply to a transplant as
# to any creation (tcp 4096 + udp 1024 need 98304 bytes)
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"maxTableBytes\": 65536}"
out=$(podman run --rm $(ANN 4096 1024) $IMG true 2>&1)
assert_contains "$out" "this request (tcp 4096, udp 1024) needs 98304 bytes; free some or raise maxTableBytes" \
	"budget: a bridge container over maxTableBytes is refused, the budget named"
assert_contains "$out" "maxTableBytes 65536 would be passed" "budget: the refusal gives the budget"
assert_eq "0 0" "$(left_on_bridge nsh37br0) $(rules_for 10.137.0.)" "budget: the refused container left no veth and no rule"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
spares512() { # the spares of tcp 512 / udp 128 once no filler runs
	spares_settled "$S"
	ls "$S/spares" 2>/dev/null | grep '^tcp512-udp128\.' | sort
}
podman run --rm $(ANN 512 128) $IMG true 2>"$D/err" || fail "spares: first run: $(cat "$D/err")"
a=$(spares512)
assert_eq 1 "$(grep -c . <<<"$a")" "spares: a transplant leaves one spare of its sizes for the next (tcp 512, udp 128)"
out=$(podman run --rm $(ANN 512 128) $IMG sh -c "$SIZES; ping -c1 -W2 10.137.0.1 >/dev/null && echo gw-ok" 2>"$D/err")
assert_eq "512 128
gw-ok" "$out" "spares: the next one is sized and reaches its gateway"
b=$(spares512)
assert_eq "1 taken" "$(grep -c . <<<"$b") $([ -n "$a" ] && ! grep -qx "$a" <<<"$b" && echo taken)" \
	"spares: it took that spare (gone from spares/) and its refill made another"

# --- podman's CNI backend, nshash not in the conflist: the hook does it
# (podman 5 has netavark only: there the CNI backend is refused, and the
# bridge cases above are podman 5's whole story)
podman rm -a -f -t 0 >/dev/null 2>&1
if [ "$(engines_podman_major)" -ge 5 ]; then
	engines_podman_setup "$D/podman-cni" "[network]
network_backend = \"cni\"" 2>"$D/err"
	assert_contains "$(cat "$D/err")" "cni support is not enabled in this build, only netavark" \
		"podman $(engines_podman_major): no CNI backend (netavark only)"
else
	mkdir -p "$D/podman-cni/cni"
	cat >"$D/podman-cni/cni/nsh37cni.conflist" <<-EOF
	{"cniVersion": "1.0.0", "name": "nsh37cni", "plugins": [
	  {"type": "bridge", "bridge": "nsh37cni0", "isGateway": true, "ipMasq": true,
	   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.142.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
	  {"type": "portmap", "capabilities": {"portMappings": true}}]}
	EOF
	engines_podman_setup "$D/podman-cni" "hooks_dir = [\"$D/hooks\"]
	[network]
	network_backend = \"cni\"
	network_config_dir = \"$D/podman-cni/cni\"
	cni_plugin_dirs = [\"/usr/lib/cni\"]
	default_network = \"nsh37cni\"" || fail "CANNOT RUN: podman with the CNI backend"
	podman run -d --name cni37 $(ANN 4096 512) -p 18738:80 $IMG sh -c 'echo hello-cni >/tmp/i; exec httpd -f -p 80 -h /tmp' >/dev/null 2>"$D/err"
	assert_eq "4096 512" "$(podman exec cni37 sh -c "$SIZES" 2>/dev/null)" "CNI backend: sized by the hook"
	assert_eq 1 "$(podman exec cni37 sh -c 'ip -o -4 addr show eth0 | grep -c 10.142.0.; ' 2>/dev/null)" "CNI backend: eth0 kept its address"
	out=""
	for _ in $(seq 30); do out=$(curl -s -m 2 http://10.142.0.1:18738/i 2>/dev/null) && [ -n "$out" ] && break; sleep 0.2; done
	assert_eq "hello-cni" "$out" "CNI backend: the published port answers from the host"
	podman rm -f -t 0 cni37 >/dev/null 2>&1
	assert_eq 0 "$(left_on_bridge nsh37cni0)" "CNI backend: no veth left after rm"
	assert_eq 0 "$(rules_for 10.142.0.)" "CNI backend: no rule for the network left after rm"
	ip link del nsh37cni0 2>/dev/null
fi

# --- everything removed: nothing left
podman rm -a -f -t 0 >/dev/null 2>&1
assert_eq 0 "$(left_on_bridge nsh37br0)" "end: no veth left on the bridge"
assert_eq 0 "$(rules_for 10.137.0.)" "end: no rule for the network's containers left"
assert_eq 0 "$(engines_pins_left "$S")" "end: no pin left"
assert_host_untouched
