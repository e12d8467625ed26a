#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck disable=SC2046 # $(ann ...) and $(pair ...) are two words each
# A day on a node, as a user has it: the binaries `make install` puts down
# (PREFIX=/usr/local), the policy it installs (/etc/nshash/nshash.json,
# unmodified: the shipped defaults, staleAge and reclaimInterval 60 s, spares
# 1), the default state dir /run/nshash starting absent (as after a boot),
# podman with the installed hooks_dir drop-in (--network none, a bridge
# network, and podman --runtime nshash-runtime), nshash-runtime in front of
# runc on plain bundles (run, and create + start) and as Docker's runtime
# (one per size pair, runtimeArgs), and the installed CNI plugin's ADD/DEL on
# pinned netns, over four size pairs.  The day: the first
# sized start after a boot through each front-end, a morning of starts, a
# quiet 65 s (more than staleAge and reclaimInterval, real time), the first
# starts after it, parallel bursts of 8, the packaged timer's `nshash gc`
# (its ExecStart) during a burst, podman stop/start/restart, wrapper and CNI
# restarts, a second quiet 65 s, more starts and restarts, then everything
# stopped.  Asserts: 0 failed starts, exact sizes read inside every container
# (and again in the long-running ones after each pause), and at the end: no
# pin, at most `spares` (1) spare per size pair used, no nshash process, no
# nsfs mount of the day, no podman/runc container, /run/netns empty, host
# knobs unchanged; after an `nshash gc --max-idle 0` (the spares' idle
# expiry) no spare and no table bytes in the ledger.
#
# Isolation: the script re-runs itself in a private mount namespace
# (unshare -m --propagation private).  There, the copies of other mounts under
# /run, /tmp, /var, /work and every nsfs mount (other tests' pins and
# containers) are unmounted first (so this namespace keeps nothing of theirs
# alive), /run is a fresh tmpfs (so /run/nshash is absent, and runc's and
# podman's /run state is private) with the host's /run/lock, dbus, systemd
# and user bound back, and /usr/local and /etc are overlays of the DESTDIR
# install over the host's (the /etc overlay's upper dir is private): the
# host's /run/nshash, /etc and /usr/local are never touched.  The leftover
# checks run inside, before the namespace goes; outside, the script then
# checks that no process of that namespace outlived it.  podman's bridge
# network is nsh60 (10.160.0.0/24, bridge nsh60br0), dockerd's bridge
# 10.161.0.0/24 in its own netns; engines have private config and storage
# (tests/lib/engines.sh, tests/lib/docker.sh).
#
# SOAK=1 (make soak): the same day with the middle repeated for SOAK_SECONDS
# (default 1800): rounds of bursts, restarts, gc and pauses of 0-90 s,
# hundreds of starts; prints the counts (starts and failures per path,
# leftovers).  Not part of make check.

# ---------------------------------------------------------------- outside
source "$(dirname "$0")/../lib/day.sh"
day_enter "$@"

# ---------------------------------------------------------------- inside
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs podman runc jq nsenter
SOAK=${SOAK:-0}
SOAK_SECONDS=${SOAK_SECONDS:-1800}
PAUSE=65 # > staleAge (60) and > reclaimInterval (60), the shipped defaults
SPARES_CAP=1 # the shipped `spares`: at most this many per size pair
PAIRS=("2048 256" "4096 1024" "8192 512" "16384 2048")
STATE=/run/nshash
PREFIX=/usr/local
NSH=$PREFIX/bin/nshash
RUNTIME=$PREFIX/bin/nshash-runtime
# the private mount namespace; make install into a DESTDIR, overlaid on
# /usr/local and /etc
day_begin 60 $PREFIX
cmp -s "$TOP/packaging/etc/nshash.json" /etc/nshash/nshash.json && pass "the installed policy is the shipped one" ||
	fail "/etc/nshash/nshash.json is not packaging/etc/nshash.json"
for f in $NSH $PREFIX/bin/nshash-hook $RUNTIME $PREFIX/lib/cni/nshash; do
	[ -x "$f" ] || cannot_run "$f not installed"
done
# the installed binaries only: nothing of build/ on PATH
export PATH=$PREFIX/sbin:$PREFIX/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset NSHASH_POLICY NSHASH_STATE_DIR
GC_CMD=$(sed -n 's/^ExecStart=//p' "$PREFIX/lib/systemd/system/nshash-gc.service")
[ -n "$GC_CMD" ] || cannot_run "no ExecStart in the installed nshash-gc.service"
HOOKS_LINE=$(grep '^hooks_dir' "$PREFIX/share/nshash/containers.conf.d/50-nshash-hooks.conf")
[ -n "$HOOKS_LINE" ] || cannot_run "no hooks_dir in the installed containers.conf.d drop-in"

# ---- engines
source "$(dirname "$0")/../lib/cni.sh"
CNI_PLUGIN=$PREFIX/lib/cni/nshash # cni_call runs it
export CNI_PLUGIN
engines_iptables_snapshot nsh60 10.160.0.
on_exit "ip link del nsh60br0"
engines_podman_setup "$D/podman" "$HOOKS_LINE
[network]
network_config_dir = \"$D/podman/networks\"" || cannot_run "podman setup failed"
ip route | grep -q '^10\.160\.0\.' && cannot_run "10.160.0.0/24 is already routed here"
podman network create --subnet 10.160.0.0/24 nsh60 >/dev/null || cannot_run "podman network create failed"
f=$D/podman/networks/nsh60.json
jq '.network_interface = "nsh60br0"' "$f" >"$f.new" && mv "$f.new" "$f"
echo 'default_network = "nsh60"' >>"$CONTAINERS_CONF" # [network] is the file's last section
IMG=localhost/nshash-busybox
# Docker 20.10 (no --annotation): the installed wrapper registered once per
# size pair with runtimeArgs, as docs/runtimes.md says; a private dockerd
# with its own network namespace as its host (tests/lib/docker.sh), its
# bridge on 10.161.0.0/24
source "$(dirname "$0")/../lib/docker.sh"
DOCKER_NET_BASE=10.161 # (docker.sh's default from the test number, 10.260, is no address)
export DOCKER_NET_BASE
RUNTIMES=$(for pr in "${PAIRS[@]}"; do
	set -- $pr
	jq -n --arg w "$RUNTIME" --arg t "$1" --arg u "$2" \
		'{("nshash-\($t)-\($u)"): {"path": $w, "runtimeArgs": ["--nshash-tcp=\($t)", "--nshash-udp=\($u)"]}}'
done | jq -s add)
docker_start "$D/docker" "$RUNTIMES" || cannot_run "dockerd did not start: $(tail -3 "$D/docker/dockerd.log")"
docker_mark
docker_image || cannot_run "docker import of the busybox rootfs failed"
# podman reads DOCKER_CONFIG (docker.sh's private client dir) too and fails
# when it has no config.json
[ -e "$DOCKER_CONFIG/config.json" ] || echo '{}' >"$DOCKER_CONFIG/config.json"
engines_busybox_rootfs "$D/rootfs"
engines_runc_bundle "$D/bundle0" true || cannot_run "runc spec failed"
on_exit "for c in \$(runc list -q 2>/dev/null); do runc delete -f \$c; done"
# the CNI pods' netns pins, where a runtime keeps them (not /run/netns:
# podman binds that over itself on its first netns, hiding earlier pins)
PODS=/run/day-pods
on_exit "for p in $PODS/day-*; do umount -l \$p; rm -f \$p; done"
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
mkdir -p "$D/res" "$D/done" "$D/b" /run/netns $PODS

# ---------------------------------------------------------------- starts
# launch KIND ID TCP UDP: one container start; its result in $D/res/ID.res
# (kind, wanted "TCP UDP", what the container read, status) and its stderr
# in $D/res/ID.err.  Kinds: pn/pb podman run --rm (--network none / the
# bridge), pw podman --runtime nshash-runtime --network none, pnd/pbd the
# same detached (kept running), wr nshash-runtime run, wd nshash-runtime
# create + start (kept running), cni an ADD on a netns pinned at $PODS/ID,
# then DEL and unpin, cnid the same kept (a pod), dk docker run --rm
# --runtime nshash-TCP-UDP (the bridge), dkd the same detached (kept).  Run
# in the background for bursts.
ann() { echo "--annotation io.nshash.tcp=$1 --annotation io.nshash.udp=$2"; }
bundle_for() { # ID TCP UDP ARGS...: a bundle of its own on the shared rootfs
	local b=$D/b/$1 t=$2 u=$3
	shift 3
	mkdir -p "$b" &&
		jq --arg r "$D/rootfs" --argjson a "$(printf '%s\n' "$@" | jq -R . | jq -cs .)" --arg t "$t" --arg u "$u" \
			'.root.path = $r | .process.args = $a | .annotations["io.nshash.tcp"] = $t | .annotations["io.nshash.udp"] = $u' \
			"$D/bundle0/config.json" >"$b/config.json"
}
pid_sizes() { [ -n "$1" ] && [ "$1" != 0 ] && nsenter -t "$1" -n sh -c "$SIZES"; }
podman_sizes() { pid_sizes "$(podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null)"; }
docker_sizes() { pid_sizes "$(dk inspect -f '{{.State.Pid}}' "$1" 2>/dev/null)"; }
runc_sizes() { pid_sizes "$(runc state "$1" 2>/dev/null | jq -r .pid)"; }
# pod_del ID TCP UDP: the runtime's teardown of a pod: DEL, unmount, remove
pod_del() {
	cni_call DEL "$PODS/$1" "$(conf "$2" "$3")" CNI_CONTAINERID="$1"
	umount -l "$PODS/$1" 2>/dev/null
	rm -f "$PODS/$1"
	[ "$CNI_RC" = 0 ]
}
conf() { cni_conf day60 "\"tcp\":$1,\"udp\":$2"; }
launch() {
	local kind=$1 id=$2 t=$3 u=$4 out="" rc f=$D/res/$2
	case $kind in
	pn | pb | pw)
		local net="--network none" rt=""
		[ "$kind" = pb ] && net=""
		[ "$kind" = pw ] && rt="--runtime $RUNTIME"
		# shellcheck disable=SC2086
		out=$(timeout 120 podman $rt run --rm $net $(ann "$t" "$u") $IMG sh -c "$SIZES" 2>"$f.err" </dev/null)
		rc=$?
		;;
	pnd | pbd)
		local net="--network none"
		[ "$kind" = pbd ] && net=""
		# shellcheck disable=SC2086
		timeout 120 podman run -d --name "$id" $net $(ann "$t" "$u") $IMG sleep 1000000 >/dev/null 2>"$f.err" </dev/null &&
			out=$(podman_sizes "$id")
		rc=$?
		;;
	dk)
		out=$(dk run --rm --runtime "nshash-$t-$u" "$DOCKER_IMAGE" sh -c "$SIZES" 2>"$f.err" </dev/null)
		rc=$?
		;;
	dkd)
		dk run -d --name "$id" --runtime "nshash-$t-$u" "$DOCKER_IMAGE" sleep 1000000 >/dev/null 2>"$f.err" </dev/null &&
			out=$(docker_sizes "$id")
		rc=$?
		;;
	wr)
		bundle_for "$id" "$t" "$u" sh -c "$SIZES" &&
			out=$(cd "$D/b/$id" && timeout 120 "$RUNTIME" run "$id" 2>"$f.err" </dev/null)
		rc=$?
		rm -rf "$D/b/$id"
		;;
	wd)
		bundle_for "$id" "$t" "$u" sleep 1000000 &&
			timeout 120 "$RUNTIME" create -b "$D/b/$id" "$id" </dev/null >/dev/null 2>"$f.err" &&
			timeout 60 "$RUNTIME" start "$id" </dev/null >/dev/null 2>>"$f.err" &&
			out=$(runc_sizes "$id")
		rc=$?
		;;
	cni | cnid)
		local p=$PODS/$id
		cni_pin_netns "$p" && cni_call ADD "$p" "$(conf "$t" "$u")" CNI_CONTAINERID="$id"
		rc=${CNI_RC:-1}
		printf '%s\n' "${CNI_ERR:-}" "${CNI_OUT:-}" >"$f.err"
		[ "$rc" = 0 ] && out=$(netns_sizes_at "$p")
		[ "$kind" = cni ] && pod_del "$id" "$t" "$u"
		;;
	esac
	printf '%s\n' "$kind" "$t $u" "$out" "${rc:-1}" >"$f.res.tmp" && mv "$f.res.tmp" "$f.res"
}
# restart KIND ID TCP UDP: the long-running container ID again: pstop podman
# stop + start, prestart podman restart, wre runc kill + delete + create +
# start through the wrapper, cnire DEL, a new pin, ADD, dstop docker stop +
# start, drestart docker restart.  Result as launch's.
restart() {
	local kind=$1 id=$2 t=$3 u=$4 out="" rc f=$D/res/$2.$RANDOM$RANDOM
	case $kind in
	pstop)
		timeout 60 podman stop -t 0 "$id" >/dev/null 2>"$f.err" &&
			timeout 120 podman start "$id" >/dev/null 2>>"$f.err" && out=$(podman_sizes "$id")
		rc=$?
		;;
	prestart)
		timeout 120 podman restart -t 0 "$id" >/dev/null 2>"$f.err" && out=$(podman_sizes "$id")
		rc=$?
		;;
	dstop)
		dk stop -t 0 "$id" >/dev/null 2>"$f.err" && dk start "$id" >/dev/null 2>>"$f.err" && out=$(docker_sizes "$id")
		rc=$?
		;;
	drestart)
		dk restart -t 0 "$id" >/dev/null 2>"$f.err" && out=$(docker_sizes "$id")
		rc=$?
		;;
	wre)
		"$RUNTIME" kill "$id" KILL 2>/dev/null
		for _ in $(seq 50); do [ "$(runc state "$id" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
		"$RUNTIME" delete -f "$id" 2>"$f.err"
		timeout 120 "$RUNTIME" create -b "$D/b/$id" "$id" </dev/null >/dev/null 2>>"$f.err" &&
			timeout 60 "$RUNTIME" start "$id" </dev/null >/dev/null 2>>"$f.err" && out=$(runc_sizes "$id")
		rc=$?
		;;
	cnire)
		local p=$PODS/$id
		pod_del "$id" "$t" "$u"
		cni_pin_netns "$p" && cni_call ADD "$p" "$(conf "$t" "$u")" CNI_CONTAINERID="$id"
		rc=${CNI_RC:-1}
		printf '%s\n' "${CNI_ERR:-}" "${CNI_OUT:-}" >"$f.err"
		[ "$rc" = 0 ] && out=$(netns_sizes_at "$p")
		;;
	esac
	printf '%s\n' "$kind" "$t $u" "$out" "${rc:-1}" >"$f.res.tmp" && mv "$f.res.tmp" "$f.res"
}

# Counts over the whole day: starts and failures per kind.
declare -A STARTS FAILS
TOTAL=0 FAILED=0
# collect PHASE: count the results since the last collect; one assertion
# for the phase, each failed start listed with what it read and its error.
collect() {
	local phase=$1 r kind want out rc n=0 bad=() id msg
	for r in "$D"/res/*.res; do
		[ -e "$r" ] || continue
		{ read -r kind; read -r want; read -r out; read -r rc; } <"$r"
		id=$(basename "$r" .res)
		n=$((n + 1)) TOTAL=$((TOTAL + 1))
		STARTS[$kind]=$((${STARTS[$kind]:-0} + 1))
		if [ "$rc" != 0 ] || [ "$out" != "$want" ]; then
			FAILS[$kind]=$((${FAILS[$kind]:-0} + 1)) FAILED=$((FAILED + 1))
			msg=$(grep -v '^$' "$D/res/$id.err" 2>/dev/null | tail -3 | tr '\n' ' ' | cut -c1-400)
			bad+=("$kind $id: want '$want', read '$out', status $rc: $msg")
		fi
		mv "$r" "$D/done/"
		mv "$D/res/$id.err" "$D/done/" 2>/dev/null
	done
	[ $n -gt 0 ] || bad+=("no start at all")
	assert_none "$phase: $n starts, every one with its exact sizes" "$n" "${bad[@]}"
}
# The long-running containers: "KIND ID TCP UDP" lines.
RUNNING=()
keep() { RUNNING+=("$*"); }
check_running() { # PHASE: each still has its sizes
	local phase=$1 c kind id t u got bad=()
	for c in "${RUNNING[@]}"; do
		read -r kind id t u <<<"$c"
		case $kind in
		pnd | pbd) got=$(podman_sizes "$id") ;;
		dkd) got=$(docker_sizes "$id") ;;
		wd) got=$(runc_sizes "$id") ;;
		cnid) got=$(netns_sizes_at "$PODS/$id" 2>/dev/null) ;;
		esac
		[ "$got" = "$t $u" ] || bad+=("$kind $id: want '$t $u', read '$got'")
	done
	assert_none "$phase: the ${#RUNNING[@]} running containers and pods keep their sizes" "${#RUNNING[@]}" "${bad[@]}"
}
restart_all() { # restart every long-running one (podman: stop+start, then restart)
	local c kind id t u
	for c in "${RUNNING[@]}"; do
		read -r kind id t u <<<"$c"
		case $kind in
		pnd | pbd) restart pstop "$id" "$t" "$u" && restart prestart "$id" "$t" "$u" ;;
		dkd) restart dstop "$id" "$t" "$u" && restart drestart "$id" "$t" "$u" ;;
		wd) restart wre "$id" "$t" "$u" ;;
		cnid) restart cnire "$id" "$t" "$u" ;;
		esac
	done
}
SEQ=0
nid() { SEQ=$((SEQ + 1)); ID="day-$1-$SEQ"; } # KIND: sets ID (not in a subshell)
pair() { echo "${PAIRS[$(($1 % ${#PAIRS[@]}))]}"; }
# burst N KINDS...: N starts at once, kinds and pairs taken in turn
burst() {
	local n=$1 i k
	shift
	local kinds=("$@")
	for ((i = 0; i < n; i++)); do
		k=${kinds[$((i % ${#kinds[@]}))]}
		nid "$k"
		# shellcheck disable=SC2046
		launch "$k" "$ID" $(pair $((i + SEQ))) &
	done
	wait
}
# every kind over the pairs in turn, one at a time
sweep() { # KINDS...
	local k i
	for k in "$@"; do
		for i in "${!PAIRS[@]}"; do
			nid "$k"
			# shellcheck disable=SC2046
			launch "$k" "$ID" $(pair "$i")
		done
	done
}

pause() {
	quiet
	note "pause: ${PAUSE}s of quiet (staleAge 60 s, reclaimInterval 60 s at the defaults)"
	sleep "$PAUSE"
}
# ---------------------------------------------------------------- the day
note "boot: the first sized start after a boot, through each front-end"
for k in wr dk pn cni pb; do
	boot
	nid "$k"
	# shellcheck disable=SC2046
	launch "$k" "$ID" $(pair 0)
done
collect "after a boot (the state dir absent): wrapper, docker, podman --network none, CNI, podman bridge"
boot

note "morning"
for k in pnd pbd wd cnid dkd; do
	for i in 0 1; do
		# shellcheck disable=SC2046
		set -- $(pair $((i + ${#RUNNING[@]})))
		nid "$k"
		launch "$k" "$ID" "$1" "$2"
		keep "$k" "$ID" "$1" "$2"
	done
done
sweep pn wr cni dk
nid pb && launch pb "$ID" $(pair 1)
nid pw && launch pw "$ID" $(pair 2)
collect "morning: detached podman/wrapper containers, CNI pods, --rm runs of every kind"
check_running "morning"

pause
note "after a quiet minute"
sweep pn wr cni dk
nid pb && launch pb "$ID" $(pair 2)
nid pw && launch pw "$ID" $(pair 3)
collect "the first starts after ${PAUSE}s of quiet"
check_running "after ${PAUSE}s of quiet"

note "bursts of 8, the packaged gc ($GC_CMD) during the second"
burst 8 pn wr cni pb dk wr cni pw
collect "a burst of 8 parallel starts"
gc_out=$D/gc.out
(sleep 1; $GC_CMD >"$gc_out" 2>&1; echo "rc=$?" >>"$gc_out") &
burst 8 wr pn cni dk pb wr cni pn
wait
collect "a burst of 8 parallel starts with \`$GC_CMD\` running"
assert_contains "$(cat "$gc_out")" "rc=0" "\`$GC_CMD\` (the packaged timer's command) succeeded"
check_running "after the burst and gc"

note "restarts"
restart_all
collect "podman stop+start and restart, wrapper and CNI restarts"
check_running "after the restarts"

if [ "$SOAK" = 1 ]; then
	note "soak: rounds for ${SOAK_SECONDS}s"
	round=0
	pauses=(0 5 20 65 90 2 65)
	kinds=(pn wr cni pb dk wr cni pw)
	while [ $(($(date +%s) - T0)) -lt "$SOAK_SECONDS" ]; do
		round=$((round + 1))
		burst 8 "${kinds[@]}"
		[ $((round % 3)) = 0 ] && restart_all
		if [ $((round % 5)) = 0 ]; then
			$GC_CMD >"$gc_out" 2>&1 || fail "round $round: \`$GC_CMD\` failed: $(tail -2 "$gc_out")"
		fi
		sweep pn wr dk
		collect "soak round $round"
		check_running "soak round $round"
		p=${pauses[$((round % ${#pauses[@]}))]}
		[ "$p" -gt 0 ] && { quiet; note "round $round: ${p}s pause"; sleep "$p"; }
	done
fi

pause
note "after the second quiet minute"
restart_all
collect "restarts after the second ${PAUSE}s of quiet"
burst 8 pn cni wr pb pw dk wr cni
collect "a burst of 8 after the second pause"
check_running "after the second pause"

note "evening: everything stopped"
for c in "${RUNNING[@]}"; do
	read -r kind id t u <<<"$c"
	case $kind in
	pnd | pbd) podman rm -f -t 0 "$id" >/dev/null 2>&1 ;;
	dkd) dk rm -f "$id" >/dev/null 2>&1 ;;
	wd) "$RUNTIME" delete -f "$id" >/dev/null 2>&1 ;;
	cnid) pod_del "$id" "$t" "$u" || fail "CNI DEL $id: $CNI_OUT" ;;
	esac
done
quiet || fail "nshash processes still at work 20 s after the last start: $(nshash_procs | tr '\n' ' ')"

# ---------------------------------------------------------------- what is left
kinds_line() {
	local k s=""
	for k in $(printf '%s\n' "${!STARTS[@]}" | sort); do s+=" $k=${STARTS[$k]}/${FAILS[$k]:-0}"; done
	echo "$s"
}
note "starts: $TOTAL, failed: $FAILED; per path (starts/failed):$(kinds_line)"
assert_eq 0 "$FAILED" "0 failed starts of $TOTAL"
assert_eq "" "$(podman ps -aq)" "no podman container left"
assert_eq "" "$(runc list -q 2>/dev/null)" "no runc container left"
assert_eq "" "$(docker_wait_clean)" "nothing of a docker container left (containers, netns mounts, shims, rules, links)"
docker_stop
# podman's poststop cleanup is asynchronous
for _ in $(seq 50); do [ -z "$(ls -A /run/netns; ls -A $PODS)" ] && break; sleep 0.2; done
assert_eq "" "$(ls -A /run/netns; ls -A $PODS)" "/run/netns and $PODS empty (podman's and the CNI pods' netns gone)"
pins=$(awk -v d="$STATE/" '$9 == "nsfs" && index($5, d) == 1 && index($5, d "templates/") != 1 && index($5, d "spares/") != 1 {print $5}' /proc/self/mountinfo)
assert_eq "" "$pins" "no container pin mounted under $STATE"
# (the hand-over children's slot locks, pins/.handoff.0-7, stay like STATE/lock)
assert_eq "" "$(ls -A $STATE/pins $STATE/run/netns 2>/dev/null | grep -v ':$' | grep -v '^$' | grep -vx '\.handoff\.[0-7]')" "no pin file under $STATE/pins or $STATE/run"
spares=$(ls $STATE/spares 2>/dev/null | grep -v '^\.' | sed 's/\..*//' | sort | uniq -c | awk -v cap=$SPARES_CAP '$1 > cap')
nspares=$(find $STATE/spares -mindepth 1 -maxdepth 1 -not -name '.*' 2>/dev/null | wc -l)
assert_eq "" "$spares" "at most $SPARES_CAP spare per size pair ($nspares spares)"
assert_eq "" "$(nshash_procs)" "no nshash process left"
other_nsfs=$(awk -v d="$STATE/" '$9 == "nsfs" && index($5, d) != 1 {print $5}' /proc/self/mountinfo)
assert_eq "" "$other_nsfs" "no nsfs mount of the day outside the state dir"
day_idle_expiry $NSH
assert_host_untouched
note "day done in $(($(date +%s) - T0))s: $TOTAL starts, $FAILED failed;$(kinds_line); leftovers: pins $(echo -n "$pins" | grep -c .), spares $nspares (before the idle expiry), templates after it $(ls $STATE/templates 2>/dev/null | grep -vc '\.used$')"
