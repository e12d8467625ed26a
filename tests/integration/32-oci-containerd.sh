#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# containerd 1.6 (private config, root, state and socket) with
# `ctr run --runc-binary nshash-runtime --annotation io.nshash.*`: sizes
# inside, no pin after the task is deleted, a bad annotation fails the start
# with the reason in containerd's error, an rshared bind mount runs sized
# from the wrapper's sibling bundle (issue 20), and `ctr run --cni` through
# the wrapper gets eth0 in the sized netns.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_iptables_snapshot nshash-test32 nshbr32 10.253.32. # the --cni network below
engines_busybox_rootfs "$D/rootfs"
engines_containerd_start "$D/containerd" NSHASH_POLICY="$P" || cannot_run "containerd did not start"
W=$BUILD/nshash-runtime
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries) $(ip -o link show lo | grep -c "[<,]UP[,>]")'
GLOBAL="$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"

out=$(timeout 60 ctr run --rm --runc-binary "$W" --runc-root "$D/runc-root" --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 \
	--env PATH=/bin --rootfs "$D/rootfs" k1 /bin/sh -c "$SHOW" 2>&1)
assert_eq "4096 1024 1" "$out" "ctr run --runc-binary nshash-runtime: tcp=4096 udp=1024 inside, lo up"
assert_contains "$(cat "$D/nshash.log")" "k1: sized netns pinned" "the wrapper logged the container id"
assert_not_contains "$(cat "$D/nshash.log")" "nshash-hook" "no hook ran (the wrapper checks the init itself)"
assert_eq 0 "$(engines_pins_left "$S")" "no pin after ctr run --rm"

out=$(timeout 60 ctr run --rm --runc-binary "$W" --runc-root "$D/runc-root" --env PATH=/bin --rootfs "$D/rootfs" k2 /bin/sh -c "$SHOW" 2>&1)
assert_eq "-${GLOBAL% *} -${GLOBAL#* } 1" "$out" "no annotations: global tables"

# detached, then kill / delete
timeout 60 ctr run -d --runc-binary "$W" --runc-root "$D/runc-root" --annotation io.nshash.tcp=65536 --annotation io.nshash.udp=8192 \
	--rootfs "$D/rootfs" k3 /bin/sleep 300 >/dev/null 2>&1
pid=$(ctr task ls | awk '$1 == "k3" {print $2}')
assert_eq "65536 8192" "$(netns_sizes_of_pid "$pid")" "detached task: tcp=65536 udp=8192"
assert_eq 0 "$(engines_pins_left "$S")" "no pin while the task runs (its processes hold the netns)"
ctr task kill -s KILL k3 >/dev/null 2>&1
for _ in $(seq 50); do ctr task ls | grep -q "k3.*STOPPED" && break; sleep 0.1; done
ctr task rm k3 >/dev/null 2>&1
ctr containers rm k3 >/dev/null 2>&1
assert_eq 0 "$(engines_pins_left "$S")" "task rm: pin removed"
assert_eq "" "$(ls "$S/pins")" "task rm: no pin file"

# bad annotation: containerd reports our reason (runc-style log.json)
out=$(timeout 60 ctr run --rm --runc-binary "$W" --runc-root "$D/runc-root" --annotation io.nshash.tcp=-5 --rootfs "$D/rootfs" k4 /bin/true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "bad annotation: ctr run fails (exit $rc)" || fail "bad annotation: started"
assert_contains "$out" "nshash-runtime: " "containerd's error carries the wrapper's message"
assert_contains "$out" "io.nshash.tcp" "the message names the key"
ctr containers rm k4 >/dev/null 2>&1
assert_eq "" "$(ls "$S/pins")" "bad annotation: no pin"

# an rshared bind (issue 20): created from the wrapper's sibling bundle in
# the host's mount namespace; containerd runs, lists and removes the task
# all the same, and the bind is there (ctr sets no rootfsPropagation, so
# runc keeps the rootfs rslave: what reaches the host is 67-wrapper-propagation's)
mkdir -p "$D/shared"
timeout 60 ctr run -d --runc-binary "$W" --runc-root "$D/runc-root" --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 \
	--mount "type=bind,src=$D/shared,dst=/mnt,options=rbind:rshared" --rootfs "$D/rootfs" k6 /bin/sleep 300 >/dev/null 2>"$D/err"
assert_eq 0 $? "ctr run -d with an rshared bind mount $(cat "$D/err")"
pid=$(ctr task ls | awk '$1 == "k6" {print $2}')
assert_eq "4096 1024" "$(netns_sizes_of_pid "$pid")" "rshared bind: tcp=4096 udp=1024"
assert_eq "RUNNING" "$(ctr task ls | awk '$1 == "k6" {print $3}')" "containerd sees the task running"
assert_contains "$(grep k6 "$D/nshash.log")" "shared mount propagation asked" "the wrapper took the host's mount namespace"
assert_eq "1 1" "$(ls "$S/pins" | wc -l) $(ls "$S/bundles" | wc -l)" "its pin and sibling bundle while it runs"
ctr task kill -s KILL k6 >/dev/null 2>&1
for _ in $(seq 50); do ctr task ls | grep -q "k6.*STOPPED" && break; sleep 0.1; done
ctr task rm k6 >/dev/null 2>&1
ctr containers rm k6 >/dev/null 2>&1
assert_eq "0 0 0" "$(engines_pins_left "$S") $(ls "$S/pins" | wc -l) $(ls "$S/bundles" | wc -l)" "task rm: no pin, no sibling bundle"

# ctr run --cni through the wrapper: the CNI plugins configure our sized netns
NET=nshash-test32
BR=nshbr32
SUBNET=10.253.32
ip route | grep -q "^$SUBNET" && cannot_run "$SUBNET.0/24 already routed here"
cat >"$D/$NET.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "$NET", "plugins": [
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET.0/24"}]], "dataDir": "$D/ipam"}}
]}
JSON
out=$(unshare -m --propagation private bash -c '
	set -e
	mount -t tmpfs nshash-test /etc/cni/net.d
	mount -t tmpfs nshash-test /opt
	mkdir -p /opt/cni/bin
	cp /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /opt/cni/bin/
	cp "$1" /etc/cni/net.d/
	shift
	exec timeout 60 ctr run --rm --cni "$@"' sh "$D/$NET.conflist" \
	--runc-binary "$W" --runc-root "$D/runc-root" --annotation io.nshash.tcp=8192 --annotation io.nshash.udp=2048 --env PATH=/bin --rootfs "$D/rootfs" k5 \
	/bin/sh -c "$SHOW; ip -4 -o addr show dev eth0 | grep -c 'inet $SUBNET'; ping -c1 -W2 $SUBNET.1 >/dev/null && echo ping-ok" 2>&1)
assert_contains "$out" "8192 2048 1" "ctr run --cni via the wrapper: tcp=8192 udp=2048 inside"
assert_contains "$out" "
1
ping-ok" "ctr run --cni via the wrapper: eth0 has its address and the gateway answers"
assert_eq 0 "$(engines_pins_left "$S")" "no pin after the --cni run"
assert_host_untouched
