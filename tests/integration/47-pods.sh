#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman pods with the node's defaultTcp/defaultUdp (the opt-in hooks file
# that runs the precreate hook for every container): the infra container is
# sized at its own precreate (--network none: created; a bridge network:
# transplanted), every member sees exactly those sizes; a member asking
# nothing or the pod's sizes joins; one asking other sizes is refused
# naming the pod's actual sizes, leaving nothing.  podman kube play gives a
# pod's metadata.annotations, and its --annotation values, to the members
# only, never to the infra container (measured: podman 4.3 and 5.4): the
# pod gets the node's defaults and an annotated member other than those is
# refused.  Pod removal leaves no pin.  Own names: nsh47*, network nsh47
# (10.147.0.0/24, bridge nsh47br0).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq

engines_oci_setup
engines_iptables_snapshot nsh47 10.147.0.
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
LOG=$D/nshash.log
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$LOG\", \"defaultTcp\": 4096, \"defaultUdp\": 1024}"
export NSHASH_POLICY=$P
H=$D/hooks-defaults
mkdir -p "$H"
jq --arg p "$BUILD/nshash-hook" --arg pol "$P" '.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' \
	"$TOP/hook/defaults-hooks.d/nshash-precreate.json" >"$H/nshash-precreate.json"
engines_podman_setup "$D/podman" "hooks_dir = [\"$H\"]" || cannot_run "podman setup failed"
podman network create --subnet 10.147.0.0/24 nsh47 >/dev/null || cannot_run "podman network create failed"
f=$D/podman/networks/nsh47.json
jq '.network_interface = "nsh47br0"' "$f" >"$f.new" && mv "$f.new" "$f"
on_exit "podman network rm -f nsh47 >/dev/null 2>&1"
IMG=localhost/nshash-busybox
pid_of() { podman inspect -f '{{.State.Pid}}' "$1"; }

for net in none nsh47; do
	: >"$LOG"
	podman pod create --name nsh47-$net --network $net >/dev/null || fail "pod create --network $net"
	podman run -d --pod nsh47-$net --name nsh47-$net-a $IMG sleep 300 >/dev/null
	infra=$(podman pod inspect -f '{{.InfraContainerID}}' nsh47-$net)
	key=$(podman inspect -f '{{.NetworkSettings.SandboxKey}}' "$infra")
	assert_eq "4096 1024" "$(netns_sizes_of_pid "$(pid_of "$infra")")" "pod --network $net: the infra container got the defaults"
	if [ $net = none ]; then
		assert_contains "$(cat "$LOG")" "sized netns pinned at" "pod --network none: the infra's netns was created sized"
	else
		assert_contains "$(cat "$LOG")" "replaced by a sized one with its configuration (recreated eth0): requested tcp=4096 udp=1024" \
			"pod on a bridge network: the infra's netns was transplanted"
	fi
	assert_eq "4096 1024" "$(netns_sizes_of_pid "$(pid_of nsh47-$net-a)")" "pod --network $net: a detached member asking nothing joins, sees 4096 1024"
	out=$(podman run --rm --pod nsh47-$net $IMG sh -c "$SIZES" 2>&1)
	assert_eq "4096 1024" "$out" "pod --network $net: a member asking nothing sees exactly the pod's sizes"
	out=$(podman run --rm --pod nsh47-$net --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 $IMG sh -c "$SIZES" 2>&1)
	assert_eq "4096 1024" "$out" "pod --network $net: a member asking the pod's sizes joins"
	out=$(podman run --rm --pod nsh47-$net --annotation io.nshash.tcp=3000 --annotation io.nshash.udp=1024 $IMG sh -c "$SIZES" 2>&1)
	assert_eq "4096 1024" "$out" "pod --network $net: a member asking sizes that round to the pod's (3000 -> 4096) joins"
	out=$(podman run --rm --pod nsh47-$net --name nsh47-$net-x --annotation io.nshash.tcp=8192 $IMG true 2>&1)
	assert_contains "$out" "cannot size tcp=8192 udp=1024: the container would join the network namespace of process $(pid_of "$infra"), its podman pod's (infra container ${infra:0:12}); the pod's network namespace has tcp=4096 udp=1024, and a network namespace's tables cannot be resized after creation. Instead: give this container the pod's sizes or no io.nshash.* annotations" \
		"pod --network $net: a member asking other sizes is refused naming the pod's actual sizes"
	assert_eq "" "$(podman ps -aq --filter name=nsh47-$net-x)" "pod --network $net: the refused member is gone"
	podman pod rm -f nsh47-$net >/dev/null
	engines_pins_gone "$S" && pass "pod --network $net removed: no pin left" || fail "pod --network $net: pins left: $(ls "$S/pins")"
	if [ -n "$key" ]; then
		[ ! -e "$key" ] && pass "pod --network $net removed: its netns $key is gone" || fail "pod --network $net: $key left"
	fi
done

# ---------------------------------------------------------------- kube play
cat >"$D/pod.yaml" <<-EOF2
	apiVersion: v1
	kind: Pod
	metadata:
	  name: nsh47-kube
	  annotations:
	    io.nshash.tcp: "8192"
	    io.nshash.udp: "2048"
	spec:
	  containers:
	  - name: m
	    image: $IMG
	    command: ["/bin/sh", "-c", "sleep 300"]
EOF2
sed '/annotations:/,/io.nshash.udp/d' "$D/pod.yaml" >"$D/plain.yaml"
for how in metadata --annotation; do
	if [ $how = metadata ]; then out=$(podman kube play --network none "$D/pod.yaml" 2>&1)
	else out=$(podman kube play --network none --annotation io.nshash.tcp=8192 --annotation io.nshash.udp=2048 "$D/plain.yaml" 2>&1); fi
	infra=$(podman pod inspect -f '{{.InfraContainerID}}' nsh47-kube)
	cfg=$(find "$D/podman" -path "*/$infra/userdata/config.json" | head -1)
	assert_eq "4096 1024" "$(jq -r '.annotations | "\(."io.nshash.tcp") \(."io.nshash.udp")"' "$cfg")" \
		"kube play ($how annotations): the infra container gets none of them, only the node's defaults (recorded by nshash)"
	if [ "$(engines_podman_major)" -ge 5 ]; then # podman 5 stops a pod whose member failed to start
		assert_eq 0 "$(pid_of "$infra")" "kube play ($how), podman 5: the failed pod's infra container was stopped ($(podman inspect -f '{{.State.Status}}' "$infra"))"
	else # podman 4.3 leaves it running
		assert_eq "4096 1024" "$(netns_sizes_of_pid "$(pid_of "$infra")")" "kube play ($how): the pod's netns has the defaults"
	fi
	assert_contains "$out" "the pod's network namespace has tcp=4096 udp=1024" "kube play ($how): the annotated member (8192 2048) is refused naming the pod's sizes"
	podman kube down "$( [ $how = metadata ] && echo "$D/pod.yaml" || echo "$D/plain.yaml")" >/dev/null 2>&1 || podman pod rm -f nsh47-kube >/dev/null
done
sed 's/"8192"/"4096"/; s/"2048"/"1024"/' "$D/pod.yaml" >"$D/same.yaml"
podman kube play --network none "$D/same.yaml" >/dev/null 2>&1
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(pid_of nsh47-kube-m)")" "kube play with the node's default sizes as annotations: the member runs, sized"
podman kube down "$D/same.yaml" >/dev/null 2>&1 || podman pod rm -f nsh47-kube >/dev/null
engines_pins_gone "$S" && pass "kube play: no pin left" || fail "kube play: pins left: $(ls "$S/pins")"
assert_eq "" "$(podman ps -aq)" "no container left"
assert_host_untouched
