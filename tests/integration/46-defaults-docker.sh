#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Docker with "default-runtime" set to nshash-runtime (no runtimeArgs) and
# the node's defaultTcp/defaultUdp in the policy (a private dockerd,
# tests/lib/docker.sh): without defaults nothing changes; with them every
# container on the bridge gets exactly them (the gateway answers), one that
# joins a sized container (--network container:X) joins it, --network host
# runs unsized and is not refused, --runtime runc is not sized; on Docker
# >= 24 --annotation io.nshash.tcp=0 opts out of TCP (io.nshash.udp=0 too: shared).  Then "default-runtime" set
# to a size class (nshash-8k: runtimeArgs --nshash-tcp=8192 --nshash-udp=2048):
# every container gets tcp=8192 udp=2048, --runtime runc stays shared.  Nothing is left after rm,
# and the host is as it was once dockerd is stopped.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
source "$(dirname "$0")/../lib/docker.sh"
test_needs root knobs

engines_oci_setup
LOG=$D/nshash.log
policy() { engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$LOG\"${1:+, $1}}"; } # [JSON-MEMBERS]
policy
W=$BUILD/nshash-runtime
docker_start "$D/docker" "$(jq -n --arg w "$W" '{"nshash": {"path": $w}, "nshash-8k": {"path": $w, "runtimeArgs": ["--nshash-tcp=8192", "--nshash-udp=2048"]}}')" NSHASH_POLICY="$P" ||
	cannot_run "dockerd did not start: $(tail -3 "$D/docker/dockerd.log")"
# docker_start writes daemon.json without a default runtime: add it, and restart
jq '."default-runtime" = "nshash"' "$D/docker/daemon.json" >"$D/x" && mv "$D/x" "$D/docker/daemon.json"
docker_restart || cannot_run "dockerd did not restart with default-runtime: $(tail -3 "$D/docker/dockerd.log")"
docker_mark
docker_image || cannot_run "docker import of the busybox rootfs failed"
assert_eq nshash "$(dk info -f '{{.DefaultRuntime}}' 2>&1)" "dockerd's default runtime is nshash-runtime"
DOCKER_MAJOR=$(dk version -f '{{.Server.Version}}' 2>/dev/null | cut -d. -f1)
echo "# dockerd $(dk version -f '{{.Server.Version}}')"
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
GW=$DOCKER_NET_BASE.0.1

assert_eq "-$GTCP -$GUDP" "$(dk run --rm "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" "no defaults: a container through the default runtime is untouched"
policy '"defaultTcp": 4096, "defaultUdp": 1024'
out=$(dk run --rm "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>&1)
assert_eq "4096 1024
gw-ok" "$out" "defaults: a container asking nothing gets tcp=4096 udp=1024 on the bridge, the gateway answers"
assert_contains "$(cat "$LOG")" "requested tcp=4096 udp=1024 (the node's defaultTcp/defaultUdp), effective tcp=4096 udp=1024" \
	"the log says the sizes are the node's defaults"
dk run -d --name x46 "$DOCKER_IMAGE" sleep 300 >/dev/null
assert_eq "4096 1024" "$(docker_sizes_of x46)" "a detached container: the defaults"
assert_eq "4096 1024" "$(dk run --rm --network container:x46 "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" \
	"--network container:X (X sized alike), asking nothing: joins, not refused"
out=$(dk run --rm --network host "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)
assert_eq "$(in_docker_net sh -c "$SHOW")" "$out" "--network host with defaults: starts in dockerd's netns (the test's \"host\"), unsized, not refused"
assert_contains "$(cat "$LOG")" "asked for no sizes: the node's defaults tcp=4096 udp=1024 do not apply, it runs unsized" \
	"--network host: the log says why"
assert_eq "-$GTCP -$GUDP" "$(dk run --rm --runtime runc "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" "--runtime runc: not sized"
if [ "${DOCKER_MAJOR:-0}" -ge 24 ] 2>/dev/null; then
	assert_eq "-$GTCP 1024" "$(dk run --rm --annotation io.nshash.tcp=0 "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" \
		"--annotation io.nshash.tcp=0 opts out of TCP only (udp: the default, per protocol)"
	assert_eq "-$GTCP -$GUDP" "$(dk run --rm --annotation io.nshash.tcp=0 --annotation io.nshash.udp=0 "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" \
		"--annotation io.nshash.tcp=0 --annotation io.nshash.udp=0 opt out (shared)"
fi
dk rm -f x46 >/dev/null 2>&1
# default-runtime = a size class (runtimeArgs): every container gets its sizes, over the policy's
jq '."default-runtime" = "nshash-8k"' "$D/docker/daemon.json" >"$D/x" && mv "$D/x" "$D/docker/daemon.json"
docker_restart || fail "dockerd did not restart with default-runtime nshash-8k: $(tail -3 "$D/docker/dockerd.log")"
assert_eq nshash-8k "$(dk info -f '{{.DefaultRuntime}}' 2>&1)" "dockerd's default runtime is the size class nshash-8k"
out=$(dk run --rm "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>&1)
assert_eq "8192 2048
gw-ok" "$out" "default-runtime nshash-8k: a container asking nothing gets the class's tcp=8192 udp=2048, the gateway answers"
assert_eq "-$GTCP -$GUDP" "$(dk run --rm --runtime runc "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)" "default-runtime nshash-8k, --runtime runc: not sized"
assert_eq "" "$(docker_wait_clean)" "docker rm -f: no container, netns mount, shim, rule or link left"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"

docker_stop
docker_host_restore
assert_eq "" "$(docker_host_changes)" "dockerd stopped: chains, rules, links, ip_forward and FORWARD policy as before"
assert_host_untouched
