# SPDX-License-Identifier: LGPL-2.1-or-later
# A private dockerd (Debian's docker.io 20.10) for the integration tests.
# Source after common.sh and engines.sh.  Nothing of the machine's own Docker
# is used or touched: data root, exec root (and with it the managed
# containerd, its sockets and the netns bind mounts), pid file, API socket,
# daemon.json, trust key and client config all live under one private
# directory; the default bridge is a bridge of our own with its own subnet,
# and user networks get addresses from a private pool.  dockerd runs in a
# network namespace of its own (DIR/netns), which plays the host for its
# containers: its bridges, veths, iptables chains and rules, ip_forward and
# FORWARD policy live there, so it can neither disturb nor be disturbed by
# other tests running on the machine (whose cleanup removes links and chains
# that appeared meanwhile).  in_docker_net CMD runs CMD there (published
# ports are reached from there).  The mount namespace is the host's: pins
# and netns bind mounts are visible as usual.
#
#   docker_start DIR [RUNTIMES-JSON [VAR=VALUE...]]
#                                      start it; exports DOCKER_HOST, DOCKER_CONFIG.
#                                      RUNTIMES-JSON is daemon.json's "runtimes" object;
#                                      the variables reach containerd, its shims and the
#                                      runtimes (e.g. NSHASH_POLICY)
#   docker_stop                        stop it (containers first); on_exit does it too
#   docker_restart                     stop and start again, same config and state
#   dk ARGS...                         /usr/bin/docker with a timeout
#   in_docker_net CMD...               CMD in dockerd's network namespace
#   docker_image                       import the busybox rootfs as DOCKER_IMAGE
#   docker_mark                        remember the idle daemon's rules and links
#   docker_leftovers                   what containers left behind since docker_mark
#   docker_wait_clean [SECONDS]        the same, once empty or after SECONDS (10)
#   docker_host_changes                after docker_stop + docker_host_restore: what
#                                      differs from before dockerd started
#
# On the host dockerd would add the chains DOCKER, DOCKER-USER,
# DOCKER-ISOLATION-STAGE-1/2 and rules naming its bridges and subnets (left
# behind when it stops), switch ip_forward on and set the FORWARD policy to
# DROP.  In its own netns none of that reaches the host; the host's rules,
# links, ip_forward and FORWARD policy are still recorded before it starts,
# any of ours found there afterwards is removed (docker_host_restore), and
# docker_host_changes shows what differs (the test asserts it is nothing).
#
# /usr/local/bin/docker on the development machines is an unrelated newer
# client: always /usr/bin/docker.

DOCKER_BIN=${DOCKER_BIN:-/usr/bin/docker}
DOCKERD_BIN=${DOCKERD_BIN:-/usr/sbin/dockerd}
DOCKER_IMAGE=nshash-busybox:latest
# A /24 for the default bridge and a /22 pool for user networks, unique per
# test script number (37-docker → 10.237.0.0/16 ... ) so that two test
# scripts using this file never collide; override with DOCKER_NET_BASE.
_docker_net_base() {
	local n=${T_NAME%%-*}
	[[ "$n" =~ ^[0-9]+$ ]] || n=99
	DOCKER_NET_BASE=${DOCKER_NET_BASE:-10.2$(printf '%02d' "$((10#$n % 100))")}
}

dk() { timeout 120 "$DOCKER_BIN" "$@"; }
# docker_sizes_of CONTAINER: its netns's "TCP UDP" (raw *_hash_entries), or
# nothing when it has no process
docker_sizes_of() { netns_sizes_of_pid "$(dk inspect -f '{{.State.Pid}}' "$1" 2>/dev/null || echo 0)" 2>/dev/null; }
# in_docker_net CMD...: CMD in dockerd's network namespace (its "host")
in_docker_net() { nsenter --net="$DOCKER_DIR/netns" "$@"; }

# docker_start DIR [RUNTIMES-JSON]
docker_start() {
	local d=$1 runtimes=${2:-'{}'}
	shift 2 2>/dev/null || shift
	DOCKER_ENV=("$@")
	[ -x "$DOCKERD_BIN" ] && [ -x "$DOCKER_BIN" ] || cannot_run "no $DOCKERD_BIN / $DOCKER_BIN (apt-get install docker.io)"
	DOCKER_DIR=$d
	_docker_net_base
	DOCKER_BRIDGE=nshd$$
	DOCKER_BRIDGE=${DOCKER_BRIDGE:0:15}
	if ip route | grep -q "^$DOCKER_NET_BASE\."; then
		cannot_run "$DOCKER_NET_BASE.0.0/16 is already routed here; set DOCKER_NET_BASE"
	fi
	mkdir -p "$d"/{data,exec,client}
	[ -n "${DOCKER_HOST_SAVED:-}" ] || docker_host_snapshot
	# dockerd's own network namespace: its bridges, veths, iptables chains,
	# ip_forward and FORWARD policy live there, out of reach of (and
	# harmless to) anything else running on the machine
	touch "$d/netns" && unshare --net="$d/netns" true && in_docker_net ip link set lo up ||
		cannot_run "cannot make a network namespace for dockerd"
	# dockerd creates only a bridge called docker0 itself; one with another
	# name must exist, and its address is the network's (-b excludes --bip)
	_docker_bridge || cannot_run "cannot create bridge $DOCKER_BRIDGE"
	# the trust key defaults to /etc/docker/key.json: keep it private too
	jq -n --argjson rt "$runtimes" --arg br "$DOCKER_BRIDGE" --arg pool "$DOCKER_NET_BASE.4.0/22" \
		--arg key "$d/key.json" '{
		"bridge": $br, "deprecated-key-path": $key,
		"default-address-pools": [{"base": $pool, "size": 26}],
		"exec-opts": ["native.cgroupdriver=cgroupfs"],
		"cgroup-parent": "nshash-docker",
		"storage-driver": "overlay2",
		"log-driver": "json-file",
		"shutdown-timeout": 3,
		"runtimes": $rt
	}' >"$d/daemon.json" || return 1
	export DOCKER_HOST=unix://$d/docker.sock DOCKER_CONFIG=$d/client
	on_exit "docker_stop"
	_docker_launch
}

_docker_bridge() {
	in_docker_net ip link show "$DOCKER_BRIDGE" >/dev/null 2>&1 && return 0
	in_docker_net ip link add "$DOCKER_BRIDGE" type bridge &&
		in_docker_net ip addr add "$DOCKER_NET_BASE.0.1/24" dev "$DOCKER_BRIDGE" &&
		in_docker_net ip link set "$DOCKER_BRIDGE" up
}

_docker_launch() {
	local d=$DOCKER_DIR i
	# (nsenter execs dockerd: $! is dockerd's pid)
	nsenter --net="$d/netns" env "${DOCKER_ENV[@]}" "$DOCKERD_BIN" --config-file "$d/daemon.json" --data-root "$d/data" --exec-root "$d/exec" \
		--pidfile "$d/dockerd.pid" -H "$DOCKER_HOST" \
		>>"$d/dockerd.log" 2>&1 &
	DOCKERD_PID=$!
	disown "$DOCKERD_PID"
	echo "$DOCKERD_PID" >"$d/launched.pid"
	for i in $(seq 600); do
		"$DOCKER_BIN" version >/dev/null 2>&1 && return 0
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "# dockerd did not start: $(tail -5 "$d/dockerd.log")" >&2
	return 1
}

# docker_stop: remove every container, stop dockerd (which stops its managed
# containerd), kill shims of ours that survived, unmount what is left.
docker_stop() {
	local d=${DOCKER_DIR:-} p m i
	[ -n "$d" ] && [ -n "${DOCKERD_PID:-}" ] || return 0
	if kill -0 "$DOCKERD_PID" 2>/dev/null; then
		"$DOCKER_BIN" ps -aq 2>/dev/null | xargs -r timeout 60 "$DOCKER_BIN" rm -f >/dev/null 2>&1
		kill "$DOCKERD_PID"
		for i in $(seq 200); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$DOCKERD_PID" 2>/dev/null
	fi
	# containerd and the shims it started (found by our private paths)
	for p in /proc/[0-9]*; do
		grep -qF -- "$d/exec" "$p/cmdline" 2>/dev/null && kill -9 "${p#/proc/}" 2>/dev/null
	done
	umount_under "$d"
	DOCKERD_PID=
}

# docker_restart: stop dockerd (it stops its containers) and start it again.
docker_restart() {
	local i
	kill "$DOCKERD_PID"
	for i in $(seq 600); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$DOCKERD_PID" 2>/dev/null && { echo "# dockerd did not stop within 60 s" >&2; return 1; }
	_docker_bridge || echo "# bridge $DOCKER_BRIDGE is gone and cannot be made again" >&2
	_docker_launch
}

# docker_image: the busybox rootfs as $DOCKER_IMAGE (no registry here).
docker_image() {
	local r=$DOCKER_DIR/rootfs
	[ -d "$r/bin" ] || engines_busybox_rootfs "$r"
	tar -C "$r" -c . | dk import -c 'CMD ["/bin/sh"]' - "$DOCKER_IMAGE" >/dev/null
}

# ---------------------------------------------------------------- host state

docker_host_snapshot() {
	local t
	DOCKER_HOST_SAVED=1
	DOCKER_IPFWD=$(cat /proc/sys/net/ipv4/ip_forward)
	DOCKER_FWD_POLICY=$(iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" {print $3}')
	for t in filter nat; do
		eval "DOCKER_RULES_$t=\$(iptables -t $t -S 2>/dev/null)"
	done
	DOCKER_LINKS=$(_docker_links)
	on_exit "docker_host_restore"
}
_docker_links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }

# A rule or chain is ours when it is new since the snapshot and names a
# DOCKER* chain, our bridge, a bridge of a user network (br-...) or one of
# our subnets.
_docker_rule_ours() {
	local rule=$1
	[[ "$rule" == *DOCKER* || "$rule" == *" $DOCKER_BRIDGE "* || "$rule" == *" $DOCKER_BRIDGE" ||
		"$rule" == *" br-"* || "$rule" == *"$DOCKER_NET_BASE."* ]]
}
docker_host_restore() {
	local t rule before l
	for t in filter nat; do
		eval "before=\$DOCKER_RULES_$t"
		# rules first (they may jump to chains), then chains
		iptables -t $t -S 2>/dev/null | grep '^-A ' | while read -r rule; do
			grep -qxF -- "$rule" <<<"$before" && continue
			_docker_rule_ours "$rule" || continue
			eval "iptables -t $t ${rule/#-A/-D}"
		done
		iptables -t $t -S 2>/dev/null | awk '$1 == "-N" {print $2}' | while read -r c; do
			grep -qxF -- "-N $c" <<<"$before" && continue
			[[ "$c" == DOCKER* ]] || continue
			iptables -t $t -F "$c" && iptables -t $t -X "$c"
		done
	done
	[ -z "$DOCKER_FWD_POLICY" ] || iptables -P FORWARD "$DOCKER_FWD_POLICY"
	for l in $(comm -13 <(printf '%s\n' "$DOCKER_LINKS") <(_docker_links)); do
		[[ "$l" == "$DOCKER_BRIDGE" || "$l" == br-* || "$l" == veth* ]] && ip link del "$l"
	done
	echo "$DOCKER_IPFWD" >/proc/sys/net/ipv4/ip_forward
	DOCKER_HOST_SAVED=
}

# docker_mark: remember the rules and links of the idle daemon (no
# containers); docker_leftovers reports against it.
docker_mark() {
	DOCKER_MARK_RULES=$(_docker_net_rules)
	DOCKER_MARK_LINKS=$(in_docker_net ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort)
}
# every rule in dockerd's network namespace (all of them are its own)
_docker_net_rules() {
	local t
	for t in filter nat; do in_docker_net iptables -t $t -S 2>/dev/null | sed "s/^/iptables -t $t /"; done | sort
}
_docker_our_rules() {
	local t rule before
	for t in filter nat; do
		eval "before=\$DOCKER_RULES_$t"
		iptables -t $t -S 2>/dev/null | while read -r rule; do
			grep -qxF -- "$rule" <<<"$before" && continue
			_docker_rule_ours "$rule" && echo "iptables -t $t $rule"
		done
	done
}

# docker_leftovers: one line per thing a container left behind in the
# running daemon since docker_mark (containers, netns files, mounts, shims,
# rules, links); empty when there is none.
docker_leftovers() {
	local d=$DOCKER_DIR p
	"$DOCKER_BIN" ps -aq 2>/dev/null | sed 's/^/container /'
	# libnetwork unmounts a container's netns at once and deletes the empty
	# file up to a minute later: a mount is what counts
	awk -v n="$d/exec/netns/" -v d="$d/data/" '(index($5, n) == 1 && $5 != n "default") || index($5, d) == 1 {
		print "mount " $5}' /proc/self/mountinfo
	for p in /proc/[0-9]*; do
		grep -qaF -- "containerd-shim" "$p/cmdline" 2>/dev/null && grep -qaF -- "$d/exec" "$p/cmdline" 2>/dev/null &&
			echo "shim ${p#/proc/}"
	done
	comm -13 <(printf "%s\n" "$DOCKER_MARK_RULES") <(_docker_net_rules)
	comm -13 <(printf '%s\n' "$DOCKER_MARK_LINKS") \
		<(in_docker_net ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort) | sed 's/^/link /'
}

# docker_wait_clean [SECONDS]: docker_leftovers once it is empty or the time
# is up (dockerd tears a container's network down asynchronously).
docker_wait_clean() {
	local i left
	for i in $(seq $((${1:-10} * 5))); do
		left=$(docker_leftovers)
		[ -z "$left" ] && return 0
		sleep 0.2
	done
	printf '%s\n' "$left"
}

# docker_host_changes: after docker_stop and docker_host_restore, what of
# ours differs from the snapshot taken before dockerd started (empty = none).
docker_host_changes() {
	_docker_our_rules
	comm -13 <(printf '%s\n' "$DOCKER_LINKS") <(_docker_links) | grep -E "^($DOCKER_BRIDGE|br-)" | sed 's/^/link /'
	[ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$DOCKER_IPFWD" ] || echo "ip_forward changed"
	[ "$(iptables -S FORWARD | awk '$1 == "-P" {print $3}')" = "$DOCKER_FWD_POLICY" ] || echo "FORWARD policy changed"
	awk -v d="$DOCKER_DIR/" 'index($5, d) == 1 {print "mount " $5}' /proc/self/mountinfo
}
