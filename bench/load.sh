# SPDX-License-Identifier: LGPL-2.1-or-later
# A loaded node for the start benchmarks (sourced by bench/cni-add and
# bench/podman-bridge): sleeping processes, and routes and addresses in
# the netns the benchmark runs in.  Everything is undone by load_clear
# (call it from the benchmark's exit trap).
#
#   load_private_netns "$@"   re-exec the benchmark in a netns of its own
#                             (unshare -n, lo up) unless NSHASH_BENCH_ON_HOST=1:
#                             its routes, bridges and firewall rules go with it
#   load_procs N              exactly N more sleeping processes on the node
#                             (one parent forks them; 0 = none)
#   load_routes R A           R routes (/32s of 198.18.0.0/15, RFC 2544's
#                             benchmark range) and A addresses (100.64/10)
#                             on a link nshload0 in this netns (0 0 = none)
#   load_clear                all of it gone
#   load_levels               the levels to measure at: "PROCS:ROUTES:ADDRS"
#                             words, from NSHASH_BENCH_PROCS (default "0")
#                             and NSHASH_BENCH_ROUTES (default "0"), with
#                             NSHASH_BENCH_ADDRS (default 1000) addresses at
#                             every level with routes
LOAD_PID=

load_private_netns() {
	if [ "${NSHASH_BENCH_ON_HOST:-0}" != 1 ] && [ -z "${NSHASH_BENCH_IN_NETNS:-}" ]; then
		NSHASH_BENCH_IN_NETNS=1 exec unshare -n -- "$0" "$@"
	fi
	[ "${NSHASH_BENCH_ON_HOST:-0}" = 1 ] || ip link set lo up
}

load_levels() {
	local p r
	for p in ${NSHASH_BENCH_PROCS:-0}; do echo "$p:0:0"; done
	for r in ${NSHASH_BENCH_ROUTES:-0}; do
		[ "$r" = 0 ] && continue
		echo "0:$r:${NSHASH_BENCH_ADDRS:-1000}"
	done
}

load_procs() {
	load_procs_stop
	[ "${1:-0}" -gt 0 ] || return 0
	local ready
	ready=$(mktemp)
	python3 - "$1" "$ready" <<'EOF' &
import os, signal, sys
n, ready = int(sys.argv[1]), sys.argv[2]
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            signal.pause()
    kids.append(pid)
def stop(*_):
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for k in kids:
        os.waitpid(k, 0)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(ready, "w").write(str(len(kids)))
while True:
    signal.pause()
EOF
	LOAD_PID=$!
	local i
	for i in $(seq 600); do [ -s "$ready" ] && break; sleep 0.1; done
	[ "$(cat "$ready")" = "$1" ] || { echo "load: $1 processes not started" >&2; rm -f "$ready"; return 1; }
	rm -f "$ready"
}

load_procs_stop() {
	[ -n "$LOAD_PID" ] || return 0
	kill -TERM "$LOAD_PID" 2>/dev/null
	wait "$LOAD_PID" 2>/dev/null
	LOAD_PID=
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
	ip link del nshload0 2>/dev/null
	return 0
}

# "N processes on the node, R routes in this netns" for the report
load_describe() {
	echo "$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l) processes on the node, $(ip -4 route show table all | wc -l) IPv4 routes and $(ip -4 addr show | grep -c ' inet ') IPv4 addresses in the benchmark's netns"
}
