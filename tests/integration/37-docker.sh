#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Docker (Debian 12's docker.io 20.10; Debian 13's 26 under make
# check-engines) with nshash-runtime registered as runtimes in a private
# dockerd (tests/lib/docker.sh), one per size class through runtimeArgs
# (--nshash-tcp/--nshash-udp); on Docker >= 24 also `docker run --annotation
# io.nshash.*` through the runtime without arguments (annotations win over
# a size class's arguments):
# - a sized runtime gives exact sizes, the gateway answers, a published port
#   is reachable from the host; sizes stay across docker restart, stop/start,
#   a --restart policy, docker network connect and a dockerd restart;
#   containers on a user network find each other by name
# - a runtime without sizes (and plain runc) leaves the netns alone
# - --network host and --network container:X are refused when sizes are
#   asked (accepted when X already has exactly those sizes)
# - --mount bind-propagation=rshared on a sized runtime: sized, the mount the
#   container makes under the bind reaches the host (issue 20)
# - nothing is left after docker rm -f, after restarting dockerd, after
#   parallel runs; once dockerd is stopped the host is as it was (chains,
#   rules, bridges, ip_forward, FORWARD policy)
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
source "$(dirname "$0")/../lib/docker.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
W=$BUILD/nshash-runtime
RUNTIMES=$(jq -n --arg w "$W" '{
	"nshash": {"path": $w},
	"nshash-8k": {"path": $w, "runtimeArgs": ["--nshash-tcp=8192", "--nshash-udp=1024"]},
	"nshash-64k": {"path": $w, "runtimeArgs": ["--nshash-tcp=65536", "--nshash-udp=4096"]}}')
docker_start "$D/docker" "$RUNTIMES" NSHASH_POLICY="$P" ||
	cannot_run "dockerd did not start: $(tail -3 "$D/docker/dockerd.log")"
docker_mark
docker_image || cannot_run "docker import of the busybox rootfs failed"
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
DOCKER_MAJOR=$(dk version -f '{{.Server.Version}}' 2>/dev/null | cut -d. -f1)
[[ "$DOCKER_MAJOR" =~ ^[0-9]+$ ]] || cannot_run "cannot read dockerd's version: $(dk version 2>&1 | tail -2)"
echo "# dockerd $(dk version -f '{{.Server.Version}}')"
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
GLOBAL="-$GTCP -$GUDP"
GW=$DOCKER_NET_BASE.0.1
PORT=$((20000 + $$ % 20000))
# dq ARGS...: docker, quiet unless it fails (then its output as a comment)
dq() {
	local out
	out=$(dk "$@" 2>&1) || { echo "# docker $*: $(tr '\n' ' ' <<<"$out")"; return 1; }
}
# a tiny server: answers "hello" on 8080, forever
SERVE='while true; do echo hello | nc -l -p 8080; done'
# from dockerd's network namespace, the "host" of its containers
fetch() { in_docker_net timeout 5 "$ENGINES_BUSYBOX" nc "$@" </dev/null 2>/dev/null; }
wait_fetch() { # HOST PORT: the server may need a moment
	local i out
	for i in $(seq 25); do
		out=$(fetch "$@") && [ -n "$out" ] && break
		sleep 0.2
	done
	echo "$out"
}

# ---------------------------------------------------------------- no sizes asked
for rt in runc nshash; do
	out=$(dk run --rm --runtime "$rt" "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>/dev/null)
	assert_eq "$GLOBAL
gw-ok" "$out" "docker run --runtime $rt: shared tables, gateway $GW reachable"
done
assert_eq 0 "$(engines_pins_left "$S")" "no pin for a container that asked for no sizes"

# ---------------------------------------------------------------- a sized runtime
out=$(dk run --rm --runtime nshash-8k "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>&1 | grep -v WARNING)
assert_eq "8192 1024
gw-ok" "$out" "docker run --runtime nshash-8k: tcp=8192 udp=1024 inside, gateway reachable"
assert_contains "$(cat "$D/nshash.log")" "requested tcp=8192 udp=1024, effective tcp=8192 udp=1024" "the wrapper logged the sizes it applied"
assert_eq 0 "$(engines_pins_left "$S")" "docker run --rm: no pin left"

dq run -d --name web --runtime nshash-8k -p "127.0.0.1:$PORT:8080" "$DOCKER_IMAGE" sh -c "$SERVE"
assert_eq "8192 1024" "$(docker_sizes_of web)" "detached with -p: tcp=8192 udp=1024"
assert_eq hello "$(wait_fetch 127.0.0.1 "$PORT")" "published port 127.0.0.1:$PORT reachable from the host"
assert_eq 0 "$(engines_pins_left "$S")" "no pin on the host while it runs (the wrapper pins in its own mount namespace)"

dq restart -t 1 web
assert_eq "8192 1024" "$(docker_sizes_of web)" "docker restart: tcp=8192 udp=1024 again"
assert_eq hello "$(wait_fetch 127.0.0.1 "$PORT")" "docker restart: published port reachable"
dq stop -t 1 web
assert_eq 0 "$(engines_pins_left "$S")" "docker stop: pin removed"
dq start web
assert_eq "8192 1024" "$(docker_sizes_of web)" "docker stop + start: tcp=8192 udp=1024"
assert_eq 0 "$(engines_pins_left "$S")" "no pin on the host after the restart either"

# ---------------------------------------------------------------- --annotation (Docker >= 24)
if [ "$DOCKER_MAJOR" -ge 24 ]; then
	ANN="--annotation io.nshash.tcp=4096 --annotation io.nshash.udp=512"
	out=$(dk run --rm --runtime nshash $ANN "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 $GW >/dev/null && echo gw-ok" 2>&1)
	assert_eq "4096 512
gw-ok" "$out" "docker run --annotation io.nshash.*: tcp=4096 udp=512 inside, gateway reachable"
	out=$(dk run --rm --runtime nshash-8k $ANN "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)
	assert_eq "4096 512" "$out" "--annotation on a size-class runtime: the annotations win"
	dq run -d --name annweb --runtime nshash $ANN -p "127.0.0.1:$((PORT + 1)):8080" "$DOCKER_IMAGE" sh -c "$SERVE"
	assert_eq "4096 512" "$(docker_sizes_of annweb)" "--annotation, detached with -p: tcp=4096 udp=512"
	assert_eq hello "$(wait_fetch 127.0.0.1 "$((PORT + 1))")" "--annotation: published port reachable from the host"
	dq restart -t 1 annweb
	assert_eq "4096 512" "$(docker_sizes_of annweb)" "--annotation, docker restart: tcp=4096 udp=512 again"
	dk rm -f annweb >/dev/null 2>&1
	out=$(dk run --rm --runtime nshash --annotation io.nshash.tcp=lots "$DOCKER_IMAGE" true 2>&1)
	assert_contains "$out" 'io.nshash.tcp: "lots" is not a decimal number of entries' "--annotation with a bad value: refused, naming the annotation"
	assert_eq 0 "$(engines_pins_left "$S")" "--annotation: no pin left"
else
	echo "# Docker $DOCKER_MAJOR < 24: no docker run --annotation, sizes only through runtimeArgs"
fi

# a user network: DNS by name, docker network connect
dk network create nsh-user >/dev/null
dq run -d --name peer --runtime nshash-64k --network nsh-user "$DOCKER_IMAGE" sleep 300
out=$(dk run --rm --runtime nshash-8k --network nsh-user "$DOCKER_IMAGE" sh -c "$SHOW; ping -c1 -W2 peer >/dev/null && echo peer-ok" 2>&1)
assert_eq "8192 1024
peer-ok" "$out" "user network: tcp=8192 udp=1024, the other container answers by name"
assert_eq "65536 4096" "$(docker_sizes_of peer)" "nshash-64k on the user network: tcp=65536 udp=4096"
dk network connect nsh-user web
out=$(dk exec web sh -c "$SHOW; ip -o -4 addr show eth1 | grep -c inet; ping -c1 -W2 peer >/dev/null && echo peer-ok" 2>&1)
assert_eq "8192 1024
1
peer-ok" "$out" "docker network connect: eth1 in the same sized netns, the peer answers"

# --restart policy: the process exits, Docker starts it again through the runtime
dq run -d --name flappy --runtime nshash-8k --restart always "$DOCKER_IMAGE" sh -c 'sleep 1; exit 3'
for _ in $(seq 50); do [ "$(dk inspect -f '{{.RestartCount}}' flappy 2>/dev/null)" -ge 1 ] 2>/dev/null && break; sleep 0.2; done
for _ in $(seq 25); do [ "$(dk inspect -f '{{.State.Running}}' flappy)" = true ] && break; sleep 0.2; done
assert_eq "8192 1024" "$(docker_sizes_of flappy)" "--restart always: restarted (count $(dk inspect -f '{{.RestartCount}}' flappy)) with tcp=8192 udp=1024"
dk rm -f flappy >/dev/null 2>&1

# ---------------------------------------------------------------- refusals
# refused DESC RUN-ARGS...: docker run must fail and name the requested
# sizes; its output is left in $out
refused() {
	local desc=$1 rc
	shift
	out=$(dk run --rm "$@" "$DOCKER_IMAGE" true 2>&1)
	rc=$?
	[ $rc -ne 0 ] && pass "$desc: refused (exit $rc)" || fail "$desc: started"
	assert_contains "$out" "nshash-runtime: " "$desc: the refusal reaches docker's error"
	assert_contains "$out" "cannot size tcp=8192 udp=1024: " "$desc: it names the requested sizes"
}
refused "--network host with sizes" --runtime nshash-8k --network host
if [ "$DOCKER_MAJOR" -ge 26 ]; then
	# Docker 26 leaves the network namespace out of the config (20.10 gave
	# dockerd's own netns as the path): nothing to look at, the same advice.
	assert_contains "$out" "the config has no network namespace entry, so the container shares the host's network namespace (host network)" "it says the container shares the host's netns (no netns entry from Docker $DOCKER_MAJOR)"
else
	assert_contains "$out" "the container would share the host's network namespace" "it says the container would share the host's netns"
	assert_contains "$out" "has the host's own tables (tcp=$GTCP udp=$GUDP)" "it names the host's tables"
fi
assert_contains "$out" "with Docker, a sized runtime needs the container's own network: use the default bridge or a user network, not --network host" "Docker's advice"
assert_not_contains "$out" "--network none" "no podman-only advice"

dq run -d --name shared --runtime runc "$DOCKER_IMAGE" sleep 300
refused "--network container:X (shared tables) with sizes" --runtime nshash-8k --network container:shared
assert_contains "$out" "join the network namespace of process $(dk inspect -f '{{.State.Pid}}' shared)" "it names the netns it would join"
assert_contains "$out" "uses the shared global tables (tcp=$GTCP udp=$GUDP)" "it names the actual sizes of X's netns"
assert_contains "$out" "with Docker, run the container named in --network container:NAME with the same sized runtime" "Docker's advice"
out=$(dk run --rm --runtime nshash-8k --network container:web "$DOCKER_IMAGE" sh -c "$SHOW" 2>&1)
assert_eq "8192 1024" "$out" "--network container:X where X has exactly tcp=8192 udp=1024: accepted"
out=$(dk run --rm --runtime nshash-64k --network container:web "$DOCKER_IMAGE" true 2>&1)
assert_contains "$out" "has tcp=8192 udp=1024" "--network container:X with other sizes: refused, X's sizes named"
dk rm -f shared >/dev/null 2>&1

# ---------------------------------------------------------------- parallel
for i in $(seq 8); do
	rt=nshash-8k
	[ $((i % 2)) -eq 0 ] && rt=nshash-64k
	dq run -d --name "par$i" --runtime "$rt" "$DOCKER_IMAGE" sleep 300 &
done
wait
bad=
for i in $(seq 8); do
	want="8192 1024"
	[ $((i % 2)) -eq 0 ] && want="65536 4096"
	[ "$(docker_sizes_of "par$i")" = "$want" ] || bad="$bad par$i=$(docker_sizes_of "par$i")"
done
assert_eq "" "$bad" "8 containers started at once, 2 size classes: each exactly its own"
for i in $(seq 8); do dk rm -f "par$i" >/dev/null 2>&1 & done
wait
assert_eq 0 "$(engines_pins_left "$S")" "after parallel rm -f: no pin on the host"

# ---------------------------------------------------------------- bind-propagation=rshared
# (issue 20) a sized container with an rshared bind: Docker asks for shared
# rootfs propagation too; the wrapper creates it in the host's mount
# namespace from its sibling bundle, and the tmpfs it mounts is on the host
HS=$D/dshared
mkdir -p "$HS" && mount --bind "$HS" "$HS" && mount --make-shared "$HS" || cannot_run "cannot make $HS a shared mount"
on_exit "umount -R -l '$HS' 2>/dev/null"
out=$(dk run --rm --runtime nshash-8k --cap-add SYS_ADMIN --mount "type=bind,src=$HS,dst=/mnt/h,bind-propagation=rshared" \
	"$DOCKER_IMAGE" sh -c "mkdir -p /mnt/h/m && mount -t tmpfs t37p /mnt/h/m && $SHOW" 2>&1)
assert_eq "8192 1024" "$out" "docker run --mount bind-propagation=rshared: sized tcp=8192 udp=1024"
assert_eq "tmpfs t37p" "$(findmnt -n -o FSTYPE "$HS/m") $(findmnt -n -o SOURCE "$HS/m")" "the container's mount under its rshared bind is on the host"
umount -l "$HS/m" 2>/dev/null
assert_eq "0 0 0" "$(engines_pins_left "$S") $(ls -A "$S/pins" 2>/dev/null | wc -l) $(ls -A "$S/bundles" 2>/dev/null | wc -l)" \
	"after docker run --rm: no pin, no sibling bundle"

# ---------------------------------------------------------------- dockerd restart
dk update --restart always peer >/dev/null
docker_restart || fail "dockerd did not come back"
for _ in $(seq 50); do [ "$(dk inspect -f '{{.State.Running}}' peer 2>/dev/null)" = true ] && break; sleep 0.2; done
assert_eq "65536 4096" "$(docker_sizes_of peer)" "dockerd restarted: the --restart always container is back with tcp=65536 udp=4096"
assert_eq false "$(dk inspect -f '{{.State.Running}}' web)" "dockerd restarted: the container without a restart policy is stopped"
assert_eq 0 "$(engines_pins_left "$S")" "dockerd restarted: no pin on the host"

dk rm -f web peer >/dev/null 2>&1
dk network rm nsh-user >/dev/null 2>&1
assert_eq "" "$(docker_wait_clean)" "docker rm -f: no container, netns mount, shim, rule or link left"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"
assert_eq "" "$(ls "$S/pins" 2>/dev/null)" "no pin file left"

docker_stop
docker_host_restore
assert_eq "" "$(docker_host_changes)" "dockerd stopped: chains, rules, links, ip_forward and FORWARD policy as before"
assert_host_untouched
