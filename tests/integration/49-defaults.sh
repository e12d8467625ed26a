#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The node's defaultTcp/defaultUdp (nshash.json(5)), for containers that ask
# for no sizes, through every front-end: podman 4.3 with the opt-in hooks
# file that runs the precreate hook for every container
# (hook/defaults-hooks.d), runc through nshash-runtime, the CNI plugin
# through its protocol.  No defaults: nothing changes; defaults: a container
# asking nothing gets exactly them (read inside its netns); per protocol
# (docs/sizing.md): io.nshash.tcp=0 opts out of TCP only, an annotation, and
# the wrapper's options, decide the protocol they name; the host's network and a joined netns run unsized, never refused; a
# default above the cap is a policy error naming defaultTcp; nshash check
# and stats show the defaults.  The test's own podman network (10.146.0.0/24
# on bridge nsh46br0) keeps it apart from others.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
source "$(dirname "$0")/../lib/cni.sh" # CNI_PLUGIN: build/'s (engines_oci_setup copies the others)
test_needs root knobs jq

engines_oci_setup
engines_iptables_snapshot nsh46 10.146.0.
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
GLOBAL="-$GTCP -$GUDP"
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
LOG=$D/nshash.log
policy() { engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$LOG\"${1:+, $1}}"; } # [JSON-MEMBERS]
DEFAULTS='"defaultTcp": 4096, "defaultUdp": 1024'
export NSHASH_POLICY=$P

# ---------------------------------------------------------------- the policy
policy '"maxTcp": 4096, "defaultTcp": 8192'
out=$(nshash check --json 2>"$D/err")
assert_eq 1 $? "check: a default above the cap fails the check"
assert_eq "nshash: $P: key \"defaultTcp\": 8192 (effective 8192) is above maxTcp 4096: lower defaultTcp or raise maxTcp" \
	"$(cat "$D/err")" "check: the problem on stderr"
assert_eq "false false null" "$(jq -r '"\(.ok) \(.policy_ok) \(.defaults)"' <<<"$out")" "check --json: policy not ok, no defaults shown"
assert_eq "[\"$P: key \\\"defaultTcp\\\": 8192 (effective 8192) is above maxTcp 4096: lower defaultTcp or raise maxTcp\"]" \
	"$(jq -c .problems <<<"$out")" "check --json: the one problem names defaultTcp and maxTcp"
policy
assert_eq "true 0 0" "$(nshash check --json | jq -r '"\(.ok) \(.defaults.tcp) \(.defaults.udp)"')" "check --json without defaults: 0 0"
assert_contains "$(nshash check)" "defaults: none, a container that asks for no sizes shares the global tables (policy: $P)" "check: no defaults, said"
policy "$DEFAULTS"
assert_eq "{\"tcp\":4096,\"udp\":1024,\"source\":\"$P\"}" "$(nshash check --json | jq -c .defaults)" "check --json: the defaults in force"
assert_contains "$(nshash check)" "defaults: tcp=4096 udp=1024 for every container that asks for no sizes (defaultTcp/defaultUdp of $P)" "check: the defaults in text"
assert_eq "4096 1024" "$(nshash --state-dir "$S" stats --json | jq -r '"\(.defaults.tcp) \(.defaults.udp)"')" "stats --json: the defaults"
assert_contains "$(nshash --state-dir "$S" stats)" "defaults: tcp=4096 udp=1024" "stats: the defaults in text"
assert_contains "$(nshash --state-dir "$S" stats --prometheus)" 'nshash_policy_default_entries{proto="tcp"} 4096' "stats --prometheus: the defaults"

# ---------------------------------------------------------------- nshash-runtime (runc)
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
W=$BUILD/nshash-runtime
engines_busybox_rootfs "$D/rootfs"
n=0
bundle() { # [KEY=VALUE...]: a fresh bundle printing its sizes, in $B
	n=$((n + 1))
	B=$D/b$n
	engines_script_bundle "$B" "$D/rootfs" "$SIZES" "$@"
}
wrun() { (cd "$B" && "$W" "$@" --root "$ROOT" run "t46-$n" 2>&1); } # [WRAPPER OPTIONS]
net_path() { # PATH: the bundle joins that netns; "" = no network entry (the host's)
	if [ -z "$1" ]; then
		jq '.linux.namespaces |= map(select(.type != "network"))' "$B/config.json" >"$B/x"
	else
		jq --arg p "$1" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' "$B/config.json" >"$B/x"
	fi
	mv "$B/x" "$B/config.json"
}

policy
bundle
assert_eq "$GLOBAL" "$(wrun)" "runtime, no defaults: shared tables, as before"
policy "$DEFAULTS"
bundle
assert_eq "4096 1024" "$(wrun)" "runtime, defaults: a container asking nothing gets tcp=4096 udp=1024"
bundle io.nshash.tcp=0
assert_eq "-$GTCP 1024" "$(wrun)" "runtime: io.nshash.tcp=0 opts out of TCP only (udp: the default, per protocol)"
bundle io.nshash.tcp=0 io.nshash.udp=0
assert_eq "$GLOBAL" "$(wrun)" "runtime: io.nshash.tcp=0 io.nshash.udp=0 opt out (shared)"
bundle io.nshash.tcp=8192 io.nshash.udp=2048
assert_eq "8192 2048" "$(wrun)" "runtime: an explicit annotation wins"
bundle io.nshash.udp=512
: >"$LOG"
assert_eq "4096 512" "$(wrun)" "runtime: io.nshash.udp=512 decides udp only (tcp: the default)"
assert_contains "$(cat "$LOG")" "requested tcp=4096 udp=512 (tcp: defaultTcp/defaultUdp, udp: annotations)" "runtime: the log says which source decided each protocol"
bundle
assert_eq "16384 1024" "$(wrun --nshash-tcp=16384)" "runtime: --nshash-tcp=16384 decides tcp over the policy's default (udp: the default)"
bundle io.nshash.udp=2048
assert_eq "16384 2048" "$(wrun --nshash-tcp=16384 --nshash-udp=128)" "runtime: per protocol, the annotation before the option"
bundle
assert_eq "$GLOBAL" "$(wrun --nshash-tcp=0 --nshash-udp=0)" "runtime: --nshash-tcp=0 --nshash-udp=0: this handler's containers shared"
bundle
net_path ""
: >"$LOG"
assert_eq "$GTCP $GUDP" "$(wrun)" "runtime, defaults, host network: runs in the host's netns, not refused"
assert_contains "$(cat "$LOG")" "t46-$n: asked for no sizes: the node's defaults tcp=4096 udp=1024 do not apply, it runs unsized: it shares the host's network namespace (no network namespace entry)" \
	"runtime, host network: the log says why it is unsized"
cni_like=$D/joined-ns
touch "$cni_like" && unshare --net="$cni_like" true && on_exit "umount '$cni_like' 2>/dev/null"
bundle
net_path "$cni_like"
assert_eq "$GLOBAL" "$(wrun)" "runtime, defaults, joining an existing netns (runtime-tools linux_ns_path): runs unsized, not refused"
assert_contains "$(cat "$LOG")" "it joins the network namespace $cni_like (tcp=-$GTCP udp=-$GUDP)" "runtime, joined: the log names the netns and its sizes"
bundle io.nshash.tcp=4096
net_path ""
out=$(wrun)
assert_contains "$out" "cannot size tcp=4096 udp=1024: the config has no network namespace entry" "runtime: an explicit request on the host's network is still refused"
bundle
net_path ""
assert_contains "$(wrun --nshash-tcp=4096)" "cannot size tcp=4096 udp=1024: the config has no network namespace entry" "runtime: the wrapper's options on the host's network are still refused"
policy '"maxTcp": 4096, "defaultTcp": 8192'
bundle
out=$(wrun)
assert_contains "$out" "$P: key \"defaultTcp\": 8192 (effective 8192) is above maxTcp 4096" "runtime: a default above the cap is a policy error naming defaultTcp"
assert_eq 0 "$(engines_pins_left "$S")" "runtime: no pin left"

# ---------------------------------------------------------------- podman, the opt-in hooks file
H=$D/hooks-defaults
mkdir -p "$H"
jq --arg p "$BUILD/nshash-hook" --arg pol "$P" '.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' \
	"$TOP/hook/defaults-hooks.d/nshash-precreate.json" >"$H/nshash-precreate.json"
engines_podman_setup "$D/podman" "hooks_dir = [\"$H\"]
[network]
network_config_dir = \"$D/podman/networks\"" || cannot_run "podman setup failed"
podman network create --subnet 10.146.0.0/24 nsh46 >/dev/null || cannot_run "podman network create failed"
f=$D/podman/networks/nsh46.json
jq '.network_interface = "nsh46br0"' "$f" >"$f.new" && mv "$f.new" "$f"
IMG=localhost/nshash-busybox

policy
: >"$LOG"
assert_eq "$GLOBAL" "$(podman run --rm --network none $IMG sh -c "$SIZES" 2>&1)" "podman, hook for every container, no defaults: shared tables"
assert_eq "$GLOBAL" "$(podman run --rm --network nsh46 $IMG sh -c "$SIZES" 2>"$D/err")" "podman bridge, no defaults: shared tables"
assert_eq "" "$(cat "$LOG")" "no defaults: the hook ran and logged nothing"
assert_eq "2048 512" "$(podman run --rm --network none --annotation io.nshash.tcp=2048 --annotation io.nshash.udp=512 $IMG sh -c "$SIZES" 2>&1)" \
	"the hooks file still sizes an annotated container"
policy "$DEFAULTS"
assert_eq "4096 1024" "$(podman run --rm --network none $IMG sh -c "$SIZES" 2>&1)" "podman --network none, defaults: tcp=4096 udp=1024"
assert_contains "$(cat "$LOG")" "requested tcp=4096 udp=1024 (the node's defaultTcp/defaultUdp), effective tcp=4096 udp=1024" \
	"podman --network none: the log says the sizes are the node's defaults"
id=$(podman run -d --network none $IMG sleep 300)
cfg=$(find "$D/podman" -path "*/$id/userdata/config.json" | head -1) # the bundle podman gave the runtime
assert_eq "4096 1024 oci-" "$(jq -r '.annotations | "\(."io.nshash.tcp") \(."io.nshash.udp") \(."io.nshash.pin"[0:4])"' "$cfg" 2>&1)" \
	"the config the runtime got records the sizes the defaults gave, next to the pin"
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(podman inspect -f '{{.State.Pid}}' "$id")")" "a detached container: the defaults"
podman rm -f -t 0 "$id" >/dev/null
out=$(podman run --rm --network nsh46 $IMG sh -c "$SIZES; ping -c1 -W2 10.146.0.1 >/dev/null && echo gw-ok" 2>"$D/err")
assert_eq "4096 1024
gw-ok" "$out" "podman bridge, defaults: tcp=4096 udp=1024, the gateway answers"
assert_contains "$(cat "$LOG")" "replaced by a sized one with its configuration (recreated eth0): requested tcp=4096 udp=1024" "podman bridge: the defaults transplanted"
assert_eq "-$GTCP 1024" "$(podman run --rm --network none --annotation io.nshash.tcp=0 $IMG sh -c "$SIZES" 2>&1)" "podman: io.nshash.tcp=0 opts out of TCP only (as a pod annotation under Kubernetes)"
assert_eq "$GLOBAL" "$(podman run --rm --network none --annotation io.nshash.tcp=0 --annotation io.nshash.udp=0 $IMG sh -c "$SIZES" 2>&1)" "podman: io.nshash.tcp=0 io.nshash.udp=0 opt out (shared)"
assert_eq "8192 2048" "$(podman run --rm --network nsh46 --annotation io.nshash.tcp=8192 --annotation io.nshash.udp=2048 $IMG sh -c "$SIZES" 2>"$D/err")" \
	"podman: an explicit annotation wins"
out=$(podman run --rm --network host $IMG sh -c "$SIZES" 2>&1)
assert_eq "$GTCP $GUDP" "$out" "podman --network host, defaults: starts in the host's netns, not refused"
assert_contains "$(cat "$LOG")" "do not apply, it runs unsized: it shares the host's network namespace" "podman --network host: the log says why"
podman run -d --name c46 --network nsh46 --annotation io.nshash.tcp=0 --annotation io.nshash.udp=0 $IMG sleep 300 >/dev/null
out=$(podman run --rm --network container:c46 $IMG sh -c "$SIZES" 2>&1)
assert_eq "$GLOBAL" "$out" "podman --network container:X (X opted out), asking nothing: joins, not refused"
assert_contains "$(cat "$LOG")" "it joins the network namespace /proc/" "podman container:X: the log names the joined netns"
out=$(podman run --rm --network container:c46 --annotation io.nshash.tcp=4096 $IMG true 2>&1)
assert_contains "$out" "the container would join the network namespace of process" "podman container:X asking for sizes: still refused"
podman rm -f -t 0 c46 >/dev/null
podman pod create --name pod46 --network nsh46 >/dev/null
out=$(podman run --rm --pod pod46 $IMG sh -c "$SIZES" 2>"$D/err")
assert_eq "4096 1024" "$out" "podman pod, defaults: the infra container got them, a member asking nothing joins"
podman pod rm -f pod46 >/dev/null
policy '"maxTcp": 4096, "defaultTcp": 8192'
out=$(podman run --rm --network none $IMG true 2>&1)
assert_contains "$out" "key \"defaultTcp\": 8192 (effective 8192) is above maxTcp 4096" "podman: a default above the cap fails the start naming defaultTcp"
policy
engines_pins_gone "$S" && pass "podman: no pin left" || fail "podman: pins left: $(ls "$S/pins")"
assert_eq "" "$(podman ps -aq)" "podman: no container left"
podman network rm -f nsh46 >/dev/null

# ---------------------------------------------------------------- the CNI plugin
C=$(make_state_dir)
cni_node_policy "$C/node.json" "$C"
conf() { cni_conf net46 "${1:-}"; } # [JSON-MEMBERS]
ann() { echo "\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{$1}}"; }
k=0
add() { # CONFIG: ADD on a fresh pinned netns $N
	k=$((k + 1))
	N=$C/ns$k
	cni_pin_netns "$N"
	cni_call ADD "$N" "$1"
}
add "$(conf)"
assert_eq "0 $GLOBAL" "$CNI_RC $(netns_sizes_at "$N")" "CNI, no defaults, no sizes: the netns stays shared"
cni_node_policy "$C/node.json" "$C" "$DEFAULTS"
add "$(conf)"
assert_eq "0 4096 1024" "$CNI_RC $(netns_sizes_at "$N")" "CNI, node defaults, network names no sizes: tcp=4096 udp=1024"
add "$(conf "$(ann '"io.nshash.tcp":"0","io.nshash.udp":"0"')")"
assert_eq "0 $GLOBAL" "$CNI_RC $(netns_sizes_at "$N")" "CNI: pod annotations 0 opt the pod out (shared)"
add "$(conf "$(ann '"io.nshash.tcp":"0"')")"
assert_eq "0 -$GTCP 1024" "$CNI_RC $(netns_sizes_at "$N")" "CNI: io.nshash.tcp=0 alone: tcp shared, udp the default (per protocol)"
add "$(conf '"tcp":8192')"
assert_eq "0 8192 -$GUDP" "$CNI_RC $(netns_sizes_at "$N")" "CNI: the network's own tcp wins wholly over the node's defaults"
add "$(conf "$(ann '"io.nshash.tcp":"8192"')")"
assert_cni_error 102 "tcp size 8192 (effective 8192) is above the allowed maximum 4096 (maxTcp) in network \"net46\" (to allow it: the network names no sizes: raise defaultTcp in $C/node.json, the node's policy (nshash.json(5)), or set maxTcp in the network's nshash entry)" "CNI: a pod may not ask above the node's defaults without maxTcp, told where they are"
cni_call DEL "$N" "$(conf)"
assert_eq 0 "$CNI_RC" "CNI DEL"
cni_node_policy "$C/node.json" "$C" '"maxTcp": 4096, "defaultTcp": 8192'
add "$(conf)"
assert_cni_error 7 "key \"defaultTcp\": 8192 (effective 8192) is above maxTcp 4096" "CNI: a node default above the cap fails ADD naming defaultTcp"

assert_host_untouched
