# SPDX-License-Identifier: LGPL-2.1-or-later
# A loaded node for the start benchmarks (sourced by bench/cni-add and
# bench/podman-bridge): sleeping processes, and routes and addresses in
# the netns the benchmark runs in.  Everything is undone by load_clear
# (call it from the benchmark's exit trap).
#
#   load_private_netns "$@"   re-exec the benchmark in a netns and a (slave)
#                             mount namespace of its own, lo up, that netns's
#                             links under /sys/class/net, unless
#                             NSHASH_BENCH_ON_HOST=1: its routes, bridges,
#                             firewall rules and mounts go with it
#   load_procs N              exactly N more sleeping processes on the node
#                             (`sleep`s of one process group; 0 = none)
#   load_routes R A           R routes (/32s of 198.18.0.0/15, RFC 2544's
#                             benchmark range) and A addresses (100.64/10)
#                             on a link nshload0 in this netns (0 0 = none)
#   load_netns N              N more live netns, each having looked up
#                             ipv4/ip_forward and ipv6/conf/all/disable_ipv6
#                             under /proc/sys/net (what a pod's network set-up
#                             does; bench/live-netns.py; 0 = none)
#   load_clear                all of it gone
#   load_levels               the levels to measure at: "PROCS:ROUTES:ADDRS:NETNS"
#                             words, from NSHASH_BENCH_PROCS (default "0"),
#                             NSHASH_BENCH_ROUTES (default "0"), with
#                             NSHASH_BENCH_ADDRS (default 1000) addresses at
#                             every level with routes, and NSHASH_BENCH_NETNS
#                             (default "0")
LOAD_PID=
LOAD_NETNS_PID=
LOAD_NETNS_FD=
LOAD_DIR=$(mktemp -d /tmp/nshash-load.XXXXXX)

load_private_netns() {
	if [ "${NSHASH_BENCH_ON_HOST:-0}" != 1 ] && [ -z "${NSHASH_BENCH_IN_NETNS:-}" ]; then
		NSHASH_BENCH_IN_NETNS=1 exec unshare -n -m --propagation slave -- "$0" "$@"
	fi
	[ "${NSHASH_BENCH_ON_HOST:-0}" = 1 ] && return 0
	ip link set lo up
	# /sys/class/net shows the netns sysfs was mounted in: the host's.  The
	# transplant reads a host side's name_assign_type there (a name the
	# kernel gave is recreated, any other moved): this netns's links, in
	# this mount namespace only
	local sys
	sys=$(mktemp -d /tmp/nshash-bench-sys.XXXXXX)
	mount -t sysfs sysfs "$sys" && mount --bind "$sys/class/net" /sys/class/net &&
		mount --bind "$sys/devices/virtual/net" /sys/devices/virtual/net && umount "$sys" && rmdir "$sys" ||
		{ echo "load: cannot mount this netns's sysfs" >&2; exit 1; }
}

load_levels() {
	local p r
	local n
	for p in ${NSHASH_BENCH_PROCS:-0}; do echo "$p:0:0:0"; done
	for r in ${NSHASH_BENCH_ROUTES:-0}; do
		[ "$r" = 0 ] && continue
		echo "0:$r:${NSHASH_BENCH_ADDRS:-1000}:0"
	done
	for n in ${NSHASH_BENCH_NETNS:-0}; do
		[ "$n" = 0 ] && continue
		echo "0:0:0:$n"
	done
}

load_netns() {
	load_netns_stop
	[ "${1:-0}" -gt 0 ] || return 0
	# held by one process until its stdin (a fifo kept open here) closes
	mkfifo "$LOAD_DIR/netns.in" || return 1
	python3 "$(dirname "${BASH_SOURCE[0]}")/live-netns.py" "$1" ipv4/ip_forward ipv6/conf/all/disable_ipv6 \
		<"$LOAD_DIR/netns.in" >"$LOAD_DIR/netns.out" &
	LOAD_NETNS_PID=$!
	exec {LOAD_NETNS_FD}>"$LOAD_DIR/netns.in"
	until grep -q ready "$LOAD_DIR/netns.out" 2>/dev/null; do
		kill -0 "$LOAD_NETNS_PID" 2>/dev/null || { echo "load: live-netns.py $1 failed" >&2; load_netns_stop; return 1; }
		sleep 0.2
	done
}

load_netns_stop() {
	if [ -n "${LOAD_NETNS_FD:-}" ]; then exec {LOAD_NETNS_FD}>&-; fi
	LOAD_NETNS_FD=
	if [ -n "$LOAD_NETNS_PID" ]; then
		kill "$LOAD_NETNS_PID" 2>/dev/null
		wait "$LOAD_NETNS_PID" 2>/dev/null
	fi
	LOAD_NETNS_PID=
	rm -f "$LOAD_DIR/netns.in" "$LOAD_DIR/netns.out"
}

load_procs() {
	load_procs_stop
	[ "${1:-0}" -gt 0 ] || return 0
	# `sleep` processes (a forked interpreter each would hold ~1 MB: 5 GB
	# at 5000), in a process group of their own, killed together
	setsid bash -c 'for ((i = 0; i < $1; i++)); do sleep 86400 & done; echo ready; wait' sh "$1" >"$LOAD_DIR/ready" &
	LOAD_PID=$!
	local i
	for i in $(seq 600); do [ -s "$LOAD_DIR/ready" ] && break; sleep 0.1; done
	local n
	n=$(pgrep -c -P "$LOAD_PID" -x sleep)
	[ "$n" = "$1" ] || { echo "load: $n of $1 processes started" >&2; return 1; }
}

load_procs_stop() {
	[ -n "$LOAD_PID" ] || return 0
	kill -KILL -- "-$LOAD_PID" 2>/dev/null
	wait "$LOAD_PID" 2>/dev/null
	local i
	for i in $(seq 100); do pgrep -g "$LOAD_PID" >/dev/null || break; sleep 0.1; done
	LOAD_PID=
	: >"$LOAD_DIR/ready"
}

load_routes() {
	ip link del nshload0 2>/dev/null
	local routes=${1:-0} addrs=${2:-0}
	[ "$routes" -gt 0 ] || [ "$addrs" -gt 0 ] || return 0
	[ "$routes" -le 131072 ] && [ "$addrs" -le 65536 ] || { echo "load: at most 131072 routes, 65536 addresses" >&2; return 1; }
	# a veth pair (not a dummy link: some kernels have no dummy driver), both ends up
	ip link add nshload0 type veth peer name nshload1 && ip link set nshload1 up && ip link set nshload0 up || return 1
	awk -v r="$routes" -v a="$addrs" 'BEGIN {
		for (i = 0; i < a; i++) printf "address add 100.%d.%d.1/32 dev nshload0\n", 64 + int(i / 256), i % 256
		for (i = 0; i < r; i++) printf "route add 198.%d.%d.%d/32 dev nshload0\n", 18 + int(i / 65536), int(i / 256) % 256, i % 256
	}' | ip -batch - || return 1
	local have
	have=$(ip -4 route show dev nshload0 | grep -c '^198\.')
	[ "$have" = "$routes" ] || { echo "load: $have of $routes routes" >&2; return 1; }
}

load_clear() {
	load_procs_stop
	load_netns_stop
	rm -rf "$LOAD_DIR"
	ip link del nshload0 2>/dev/null
	return 0
}

# "N processes on the node, R routes in this netns" for the report
load_describe() {
	echo "$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l) processes on the node, $(ip -4 route show table all | wc -l) IPv4 routes and $(ip -4 addr show | grep -c ' inet ') IPv4 addresses in the benchmark's netns"
}
