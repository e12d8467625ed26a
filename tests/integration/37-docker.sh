#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Docker 20.10 (Debian's docker.io) with nshash-runtime registered as a
# runtime in a private dockerd (tests/lib/docker.sh): containers on the
# default bridge, nothing left after `docker rm -f`, and the host as it was
# once dockerd is stopped (chains, rules, bridges, ip_forward, FORWARD policy).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
source "$(dirname "$0")/../lib/docker.sh"
require_root
require_kernel_knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
W=$BUILD/nshash-runtime
docker_start "$D/docker" "{\"nshash\": {\"path\": \"$W\"}}" NSHASH_POLICY="$P" ||
	cannot_run "dockerd did not start: $(tail -3 "$D/docker/dockerd.log")"
docker_mark
docker_image || cannot_run "docker import of the busybox rootfs failed"
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GLOBAL="-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)"
GW=$DOCKER_NET_BASE.0.1

# plain runc, then the wrapper without sizes: both on the shared tables,
# both on the bridge
for rt in runc nshash; do
	out=$(dk run --rm --runtime "$rt" "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>/dev/null)
	assert_eq "$GLOBAL
gw-ok" "$out" "docker run --runtime $rt: shared tables, gateway $GW reachable"
done
assert_eq 0 "$(engines_pins_left "$S")" "no pin for a container that asked for no sizes"

dk run -d --name plain --runtime nshash "$DOCKER_IMAGE" sleep 300 >/dev/null 2>&1
pid=$(dk inspect -f '{{.State.Pid}}' plain 2>/dev/null)
assert_eq "$GLOBAL" "$(netns_sizes_of_pid "${pid:-0}")" "detached, no sizes: shared tables"
dk rm -f plain >/dev/null 2>&1
assert_eq "" "$(docker_wait_clean)" "docker rm -f: no container, netns mount, shim, rule or link left"

docker_stop
docker_host_restore
assert_eq "" "$(docker_host_changes)" "dockerd stopped: chains, rules, links, ip_forward and FORWARD policy as before"
assert_host_untouched
