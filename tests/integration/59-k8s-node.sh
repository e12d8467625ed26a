#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `nshash serve`, the Kubernetes node container: its metrics (exact lines
# for pod netns the plugin sized, warned about and left alone, with hostile
# pod names escaped; the ADD counters; textfiles appended, a huge one
# skipped), gc on its schedule, HTTP refusals, a slowloris client that
# blocks nobody, readers that stall holding at most 8 slots (/healthz still
# answered), a prompt exit on SIGTERM; and the plugin's pod records
# going with DEL and gc.  Pod netns at /run/netns/cni-nsh59-PID-*, a private
# state dir, serve on free ports of 127.0.0.1; all removed at exit.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs curl python3

S=$(make_state_dir) # the node's state dir
W=$(mktemp -d /tmp/nshash-t59.XXXXXX)
on_exit "rm -rf '$W'"
cni_node_policy "$W/node.json" "$S" '"spares": 0' # gc below has a template to remove, and only that
NS=cni-nsh59-$$
for x in a w u; do
	ip netns add "$NS-$x" || cannot_run "ip netns add $NS-$x"
	on_exit "ip netns del $NS-$x"
done
A=/run/netns/$NS-a U=/run/netns/$NS-u N=/run/netns/$NS-w

free_port() { # a port of 127.0.0.1 nothing listens on
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
SERVE_PID=
start_serve() { # LOGFILE ARGS...: serve in the background, waits until it answers
	local log=$1 i
	shift
	"$BUILD/nshash" --state-dir "$S" serve "$@" 2>"$log" &
	SERVE_PID=$!
	on_exit "grep -qa serve /proc/$SERVE_PID/cmdline && kill $SERVE_PID"
	for i in $(seq 100); do
		curl -s -o /dev/null "http://$ADDR/healthz" && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	cannot_run "nshash serve did not answer on $ADDR: $(cat "$log")"
}
scrape() { curl -s --max-time 20 "http://$ADDR/metrics"; }
# serve keeps a scan's result 1 s: what changed since shows after that
scrape_after_change() { sleep 1.1 && scrape; }
PORT=$(free_port)
ADDR=127.0.0.1:$PORT

# ---- serve first: its first gc finds nothing; nothing counted yet
mkdir -m 0700 "$W/status"
printf 'nshash_cni_installed 1\nnshash_cni_ready{reason="ok"} 1\n' >"$W/status/install.prom"
printf '# TYPE x gauge\nx 2' >"$W/status/b.prom" # no final newline
head -c 300000 /dev/zero | tr '\0' '#' >"$W/status/huge.prom"
ln -s /etc/passwd "$W/status/link.prom"
echo "not_me 1" >"$W/status/notes.txt"
start_serve "$W/serve.log" --listen "$ADDR" --gc-every 1 --max-idle 0 --textfile-dir "$W/status"
M=$(scrape)
assert_eq 'nshash_cni_adds_total{outcome="sized"} 0
nshash_cni_adds_total{outcome="warned"} 0
nshash_cni_adds_total{outcome="refused"} 0' "$(grep '^nshash_cni_adds_total' <<<"$M")" "no ADD counted before the plugin ran"

# ---- the plugin: a sized ADD with hostile pod names, a warned one, a refused one
conf() { cni_conf k8s "\"tcp\":4096,\"udp\":1024${1:-}"; }
cni_call ADD "$A" "$(conf)" CNI_CONTAINERID=nsh59a \
	CNI_ARGS=$'IgnoreUnknown=1;K8S_POD_NAMESPACE=n"s\\q;K8S_POD_NAME=po\nd"\\x;K8S_POD_INFRA_CONTAINER_ID=nsh59a'
assert_eq "0 4096 1024" "$CNI_RC $(netns_sizes_at "$A")" "sized ADD: the pod netns has its own tables"
ip -n "$NS-w" link add nsh59v0 type veth peer name nsh59v1 # an interface before nshash: cannot be sized
cni_call ADD "$N" "$(conf ',"onFailure":"warn"')" CNI_CONTAINERID=nsh59w CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=w"
assert_eq 0 "$CNI_RC" "warned ADD succeeds (onFailure warn) ($CNI_ERR)"
cni_call ADD "$N" "$(conf)" CNI_CONTAINERID=nsh59r CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=r"
assert_cni_error 100 "already has interfaces besides lo" "refused ADD"
spares_settled "$S"
assert_eq "nsh59a nsh59w" "$(ls "$S/cni/pods" | tr '\n' ' ' | sed 's/ $//')" "a pod record per running pod, none for the refused one"
assert_eq "600 600" "$(stat -c %a "$S/cni/adds" "$S/cni/pods/nsh59a" | tr '\n' ' ' | sed 's/ $//')" "the records are root's alone"

M=$(scrape_after_change)
assert_eq 'nshash_cni_adds_total{outcome="sized"} 1
nshash_cni_adds_total{outcome="warned"} 1
nshash_cni_adds_total{outcome="refused"} 1' "$(grep '^nshash_cni_adds_total' <<<"$M")" "ADDs counted by outcome"
L="netns=\"$A\",namespace=\"n\\\"s\\\\q\",pod=\"po\\nd\\\"\\\\x\""
assert_eq "nshash_table_entries{$L,proto=\"tcp\"} 4096
nshash_table_entries{$L,proto=\"udp\"} 1024" "$(grep -F "nshash_table_entries{netns=\"$A\"" <<<"$M")" "the sized pod's tables, with its namespace and name escaped"
assert_eq "nshash_sockets{$L,proto=\"tcp\"} 0" "$(grep -F "nshash_sockets{netns=\"$A\"" <<<"$M" | head -1)" "... on every series of its netns"
assert_eq "nshash_netns_info{$L,kind=\"netns\",pid=\"\",command=\"\",container=\"\",engine=\"\"} 1" \
	"$(grep -F "nshash_netns_info{netns=\"$A\"" <<<"$M")" "... and its info line"
# the processes' commands are not named to whoever can scrape: serve leaves
# them empty, nshash stats --prometheus (root on the node) shows them
nc_serve=$(grep -c '^nshash_netns_info{.*,command="[^"]' <<<"$M")
nc_stats=$("$BUILD/nshash" --state-dir "$S" stats --prometheus | grep -c '^nshash_netns_info{.*,command="[^"]')
[ "$nc_serve" -eq 0 ] && [ "$nc_stats" -gt 0 ] && pass "serve names no process command ($nc_stats in stats --prometheus)" ||
	fail "process commands: $nc_serve in serve's /metrics, $nc_stats in stats --prometheus"
assert_eq "nshash_netns_shared{netns=\"$U\",reason=\"unseen\"} 1
nshash_netns_shared{netns=\"$N\",namespace=\"default\",pod=\"w\",reason=\"warned\"} 1" "$(grep -F "nshash_netns_shared{netns=\"/run/netns/$NS-" <<<"$M" | sort)" \
	"pod netns on the shared tables: the warned one, the one nshash never saw; not the sized one"
assert_eq "$(grep -c '^nshash_netns_shared{.*reason="unseen"' <<<"$M") $(grep -c '^nshash_netns_shared{.*reason="warned"' <<<"$M")" \
	"$(sed -n 's/^nshash_netns_shared_count{reason="\(unseen\|warned\)"} //p' <<<"$M" | tr '\n' ' ' | sed 's/ $//')" "the counts by reason are the numbers of such netns"
# a scrape a Prometheus parser takes (every line a sample, a comment or blank)
bad=$(grep -vE '^(#.*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? -?[0-9.e+-]+|)$' <<<"$M" | head -3)
assert_eq "" "$bad" "every line of /metrics is a sample or a comment"
# the policy's defaults, read by every scrape as `stats --prometheus` does
assert_eq 'nshash_policy_default_entries{proto="tcp"} 0
nshash_policy_default_entries{proto="udp"} 0' "$(grep '^nshash_policy_default_entries' <<<"$M")" "the policy's defaults: none"
cni_node_policy "$W/node.json" "$S" '"spares": 0, "defaultTcp": 2048, "defaultUdp": 512'
sleep 1.1 # the scan cached for 1 s
assert_eq 'nshash_policy_default_entries{proto="tcp"} 2048
nshash_policy_default_entries{proto="udp"} 512' "$(scrape | grep '^nshash_policy_default_entries')" "the policy's defaultTcp/defaultUdp, as stats --prometheus prints them"
cni_node_policy "$W/node.json" "$S" '"spares": 0'

# ---- textfiles: appended in name order, a huge one and a symlink skipped
assert_eq '# TYPE x gauge
x 2
# nshash serve: textfile huge.prom skipped: larger than 262144 bytes
nshash_cni_installed 1
nshash_cni_ready{reason="ok"} 1
# nshash serve: textfile link.prom skipped: not a regular file' \
	"$(sed -n '/^# TYPE x gauge/,/link.prom/p' <<<"$M")" "textfiles appended, the huge one and the symlink skipped"
assert_eq "nshash_serve_textfiles_skipped 2" "$(grep '^nshash_serve_textfiles_skipped' <<<"$M")" "... and counted"
assert_not_contains "$M" "not_me" "only *.prom files are read"
assert_not_contains "$M" "root:x:0:0" "nothing of the symlink's target"

# ---- nshash stats shows the same
OUT=$("$BUILD/nshash" --state-dir "$S" stats)
assert_contains "$OUT" "$A pod n\"s\\q/po?d\"\\x" "stats: the pod's namespace/name (control characters as ?)"
assert_contains "$OUT" "  warned  $N" "stats: the warned pod netns listed"
assert_contains "$OUT" "  unseen  $U" "stats: the unseen pod netns listed"
assert_contains "$OUT" "CNI ADDs: 1 sized, 1 warned (shared tables), 1 refused" "stats: the ADD counters"
J=$("$BUILD/nshash" --state-dir "$S" stats -j)
assert_eq "n\"s\\q|po
d\"\\x|sized|null" "$(jq -r --arg p "$A" '.netns[] | select(.id == $p) | "\(.namespace)|\(.pod)|\(.cni_outcome)|\(.pod_shared)"' <<<"$J")" "stats -j: namespace, pod, outcome"
assert_eq '{"sized":1,"warned":1,"refused":1}' "$(jq -c .cni_adds <<<"$J")" "stats -j: the ADD counters"

# ---- gc on its schedule: the ADD's idle template goes within a few runs
runs() { scrape | sed -n 's/^nshash_serve_gc_runs_total{result="ok"} //p'; }
r0=$(runs)
for i in $(seq 100); do
	[ -z "$(ls "$S/templates" 2>/dev/null)" ] && break
	sleep 0.1
done
assert_eq "" "$(ls "$S/templates" 2>/dev/null)" "scheduled gc removed the idle template"
LOG=$(cat "$W/serve.log")
assert_contains "$LOG" "gc: removed $S/templates/tcp4096-udp1024 (idle template)" "... and logged it"
for i in $(seq 100); do # (gc every 1 s; a scrape can be quicker)
	r1=$(runs)
	[ "$r1" -gt "$r0" ] && break
	sleep 0.1
done
[ "$r1" -gt "$r0" ] && pass "gc runs counted ($r0 -> $r1)" || fail "gc runs not counted ($r0 -> $r1)"
assert_eq 'nshash_serve_gc_runs_total{result="failed"} 0' "$(scrape | grep 'gc_runs_total{result="failed"}')" "no gc failed"

# ---- HTTP: refusals, hostile requests logged escaped, a slowloris blocks nobody
req() { # RAW-REQUEST: the status line of the answer
	python3 - "$PORT" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.split(b"\r\n")[0].decode())
if b"Allow: GET" in data:
    print("allow")
PY
}
assert_eq "HTTP/1.1 405 Method Not Allowed
allow" "$(req 'POST /metrics HTTP/1.1\r\n\r\n')" "POST /metrics: 405 with Allow: GET"
assert_eq "HTTP/1.1 404 Not Found" "$(req 'GET /nope HTTP/1.1\r\n\r\n')" "an unknown path: 404"
assert_eq "HTTP/1.1 405 Method Not Allowed
allow" "$(req 'HEAD /healthz HTTP/1.0\r\n\r\n')" "HEAD: 405"
assert_eq "HTTP/1.1 400 Bad Request" "$(req '\x16\x03\x01\x02\x00')" "a TLS hello: 400 at once"
assert_eq "HTTP/1.1 400 Bad Request" "$(req 'GET /\x1b[31mred HTTP/1.1\r\n\r\n')" "a control character in the path: 400"
assert_eq "HTTP/1.1 414 URI Too Long" "$(req "GET /$(printf 'a%.0s' $(seq 300)) HTTP/1.1\r\n\r\n")" "a 300-byte path: 414"
# (exactly 8 KiB: all of it read, so the close is no reset)
assert_eq "HTTP/1.1 431 Request Header Fields Too Large" "$(req "GET /metrics HTTP/1.1\r\nX: $(printf 'b%.0s' $(seq 8166))")" "a head of 8 KiB without its end: 431"
assert_eq "HTTP/1.1 404 Not Found" "$(req 'GET /a"b\\c HTTP/1.1\r\n\r\n')" "a quote in the path: 404"
sleep 1.1 # refusals are logged once a second
assert_eq "HTTP/1.1 404 Not Found" "$(req 'GET /x%0aforged HTTP/1.1\r\n\r\n')" "another 404"
assert_eq "nshash_serve_requests_refused_total 9" "$(scrape | grep '^nshash_serve_requests_refused_total')" "the 9 refusals counted"
LOG=$(cat "$W/serve.log")
assert_eq 0 "$(grep -c $'\x1b' "$W/serve.log")" "no raw control character reaches the log"
assert_contains "$LOG" 'answered 405 to "POST" "/metrics"' "a refusal is logged, quoted"
SLOW=$(python3 - "$PORT" <<'PY'
import socket, sys, time, subprocess
port = int(sys.argv[1])
slow = []
for i in range(5):  # slowloris: a request head that never ends
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metr")
    slow.append(s)
t0 = time.monotonic()
r = subprocess.run(["curl", "-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:%d/metrics" % port],
                   capture_output=True, text=True)
took = time.monotonic() - t0
slow[0].sendall(b"ics HTTP/1.1\r\nX: ")  # still slow: more bytes, no end
# the server drops a head that is not complete within its 5 s
for s in slow:
    s.settimeout(30)
closed = 0
t1 = time.monotonic()
for s in slow:
    try:
        closed += s.recv(1) == b""
    except OSError:
        closed += 1
print("%s %d %.2f %.1f" % (r.stdout, closed, took, time.monotonic() - t0))
PY
)
read -r code closed took total <<<"$SLOW"
assert_eq 'nshash_serve_clients_dropped_total{why="deadline"} 5
nshash_serve_clients_dropped_total{why="full"} 0' "$(scrape | grep '^nshash_serve_clients_dropped_total')" "the slowloris clients counted as dropped at their deadline"
assert_eq "200 5" "$code $closed" "a scrape while 5 slowloris clients hold connections: 200 (in ${took} s); they are dropped (after ${total} s)"

# many slow clients: the 33rd and later push out the oldest of those still
# sending their heads, never a probe that sent its own (kubelet's /healthz)
FULL=$(python3 - "$PORT" <<'PY'
import socket, sys, subprocess
port = int(sys.argv[1])
slow = []
for i in range(40):  # 8 more than serve's 32
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metr")
    slow.append(s)
r = subprocess.run(["curl", "-s", "--max-time", "20", "http://127.0.0.1:%d/healthz" % port],
                   capture_output=True, text=True)
closed = 0
for s in slow:
    s.settimeout(30)
    try:
        closed += s.recv(1) == b""
    except OSError:
        closed += 1
print("%s %d" % (r.stdout.strip(), closed))
PY
)
assert_eq "ok 40" "$FULL" "/healthz answered while 40 slow clients connect; all of them dropped"
assert_eq 'nshash_serve_clients_dropped_total{why="deadline"} 36
nshash_serve_clients_dropped_total{why="full"} 9' "$(scrape | grep '^nshash_serve_clients_dropped_total')" \
	"9 pushed out (8 by the later slow ones, 1 by the probe), the 31 left at their deadline"

# two scrapes at once: one scan (the second gets the first's, within 1 s)
sleep 1.1 # past the window of the scrape above
PAIR=$(python3 - "$PORT" <<'PY'
import socket, sys, re
port = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for i in range(2)]
for s in socks:
    s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
out = []
for s in socks:
    data = s.makefile("rb").read()  # to the close
    m = re.search(rb"^nshash_serve_scans_total (\d+)$", data, re.M)
    out.append(m.group(1).decode() if m else "none")
print(" ".join(out))
PY
)
read -r s1 s2 <<<"$PAIR"
assert_eq "$s1" "$s2" "two scrapes at once: the same scan ($PAIR)"
sleep 1.1
assert_eq "nshash_serve_scans_total $((s1 + 1))" "$(scrape | grep '^nshash_serve_scans_total')" "a scrape after the window: one more scan"

out=$("$BUILD/nshash" --state-dir "$S" serve --listen "$ADDR" --gc-every 0 2>&1)
assert_eq "1 nshash: serve: listen on $ADDR: Address already in use" "$? $out" "a second serve on the same address: exit 1, saying why"

# ---- SIGTERM: a prompt exit
t0=$(date +%s%N)
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# serve exited ${ms} ms after SIGTERM"
assert_eq 0 "$rc" "SIGTERM: serve exits 0 (after $ms ms)"
[ "$ms" -lt 5000 ] && pass "... within the pod's 5 s grace period" || fail "SIGTERM exit took $ms ms"
assert_contains "$(cat "$W/serve.log")" "signal 15: exiting" "... saying why"
curl -s -o /dev/null "http://$ADDR/healthz" && fail "the port still answers" || pass "the port is closed"

# ---- the default listen address (127.0.0.1:9490) when it is free; SIGINT
# (free as serve binds it: SO_REUSEADDR, so connections in TIME_WAIT do not count)
if python3 -c 'import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 9490))' 2>/dev/null; then
	ADDR=127.0.0.1:9490
	start_serve "$W/serve2.log" --gc-every 0
	assert_eq ok "$(curl -s "http://$ADDR/healthz")" "defaults: /healthz on 127.0.0.1:9490"
	assert_contains "$(cat "$W/serve2.log")" "listening on 127.0.0.1:9490" "... said at start"
	kill -INT "$SERVE_PID"
	wait "$SERVE_PID"
	assert_eq 0 "$?" "SIGINT: exit 0"
else
	echo "# 127.0.0.1:9490 is in use here: the default address not tried"
fi
# ---- a textfile whose read() returns less than all of it (a procfs file
# bind-mounted there: a page a read): read to its end, so one larger than
# 256 KiB is skipped, not cut
mkdir -m 0700 "$W/short"
: >"$W/short/k.prom"
if mount --bind /proc/kallsyms "$W/short/k.prom" 2>/dev/null; then
	on_exit "umount '$W/short/k.prom' 2>/dev/null"
	PORT=$(free_port)
	ADDR=127.0.0.1:$PORT
	start_serve "$W/serve4.log" --listen "$ADDR" --gc-every 0 --textfile-dir "$W/short"
	M=$(scrape)
	assert_eq "# nshash serve: textfile k.prom skipped: larger than 262144 bytes
nshash_serve_textfiles_skipped 1" "$(grep -E '^# nshash serve: textfile|^nshash_serve_textfiles_skipped' <<<"$M")" \
		"a textfile read a page at a time: read whole, skipped as larger than 256 KiB"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	umount "$W/short/k.prom"
else
	echo "# cannot bind-mount /proc/kallsyms here: the short-read textfile not tried"
fi

# ---- readers that stall cannot keep /healthz from answering (issue 31):
# 32 connections ask /metrics and never read.  In a netns of the test's own
# (lo at MTU 1500, TCP buffers capped at 64 KiB there) the answer, with
# 2 MB of textfiles, is larger than what the sockets hold, so the first 8
# keep their slots until the 10 s write deadline; the other 24 are answered
# 503 (Retry-After: 1) at once, and so is a scrape meanwhile; /healthz is
# answered 200 throughout.
SN=nsh59-slots-$$ # not under $NS-: those are the pods'
ip netns add "$SN" || cannot_run "ip netns add $SN"
on_exit "ip netns del $SN"
ip -n "$SN" link set lo up mtu 1500
ip netns exec "$SN" sysctl -q -w net.ipv4.tcp_wmem="4096 16384 65536" net.ipv4.tcp_rmem="4096 16384 65536" ||
	cannot_run "cannot set the TCP buffer sizes of netns $SN"
mkdir -m 0700 "$W/big"
for i in 1 2 3 4 5 6 7 8; do
	awk -v i="$i" 'BEGIN { for (n = 0; n < 6250; n++) printf "big_%d{n=\"%05d\",pad=\"%s\"} 1\n", i, n, "pppppppppppppp" }' >"$W/big/big$i.prom"
done
ip netns exec "$SN" "$BUILD/nshash" --state-dir "$S" serve --listen 127.0.0.1:9490 --gc-every 0 --textfile-dir "$W/big" 2>"$W/serve5.log" &
SERVE_PID=$!
on_exit "grep -qa serve /proc/$SERVE_PID/cmdline && kill $SERVE_PID"
for i in $(seq 100); do ip netns exec "$SN" curl -s -o /dev/null http://127.0.0.1:9490/healthz && break; sleep 0.1; done
HELD=$(ip netns exec "$SN" python3 - <<'PY'
import socket, subprocess
def curl(path, fmt):
    return subprocess.run(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", fmt, "http://127.0.0.1:9490" + path],
                          capture_output=True, text=True).stdout
held = []
for i in range(32):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(("127.0.0.1", 9490))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
# each one's status line, read to its end (serve answers them in turn)
codes = {}
for s in held:
    s.settimeout(20)
    line = b""
    while not line.endswith(b"\r\n"):
        b = s.recv(1)
        if not b:
            break
        line += b
    codes[line.strip().decode()] = codes.get(line.strip().decode(), 0) + 1
healthz = [curl("/healthz", "%{http_code}") for i in range(10)]
scrape = curl("/metrics", "%{http_code} %header{retry-after}")
print(" ".join("%d×%s" % (n, c) for c, n in sorted(codes.items())))
print(" ".join(healthz))
print(scrape)
for s in held:
    s.close()
PY
)
assert_eq "8×HTTP/1.1 200 OK 24×HTTP/1.1 503 Service Unavailable
200 200 200 200 200 200 200 200 200 200
503 1" "$HELD" "32 stalled scrapes: 8 hold slots, 24 and a later scrape get 503 with Retry-After: 1, /healthz 200 all along"
for i in $(seq 100); do
	M=$(ip netns exec "$SN" curl -s -f -m 5 http://127.0.0.1:9490/metrics) && break
	sleep 0.1
done
assert_eq "nshash_serve_scrapes_busy_total 25" "$(grep '^nshash_serve_scrapes_busy_total' <<<"$M")" \
	"the stalled readers gone: /metrics answers again, the 25 counted"
assert_contains "$(cat "$W/serve5.log")" 'answered 503 to "GET" "/metrics" (8 answers to /metrics being written; Retry-After: 1)' "... and logged"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
assert_eq 0 "$?" "... stopped by SIGTERM"

# ---- the manifest's own command line (state dir, address and textfile dir made this test's)
if python3 -c 'import yaml' 2>/dev/null; then
	PORT=$(free_port)
	ADDR=127.0.0.1:$PORT
	mapfile -t CMD < <(python3 - "$TOP/packaging/kubernetes/nshash-cni.yaml" <<'PY'
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
for a in [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "node"][0]["command"]:
    print(a)
PY
	)
	args=()
	for a in "${CMD[@]:1}"; do
		case $a in
		/run/nshash) args+=("$S") ;;
		/run/nshash-cni) args+=("$W/status") ;;
		*:9490) args+=("$ADDR") ;;
		*) args+=("$a") ;;
		esac
	done
	assert_eq "--state-dir $S serve --gc-every 900 --max-idle 600 --listen $ADDR --textfile-dir $W/status" "${args[*]}" "the manifest's command, as this test runs it"
	"$BUILD/nshash" "${args[@]}" 2>"$W/serve3.log" &
	SERVE_PID=$!
	on_exit "grep -qa serve /proc/$SERVE_PID/cmdline && kill $SERVE_PID"
	for i in $(seq 100); do curl -s -o /dev/null "http://$ADDR/healthz" && break; sleep 0.1; done
	M=$(scrape)
	assert_eq 'nshash_serve_gc_runs_total{result="ok"} 1' "$(grep '^nshash_serve_gc_runs_total{result="ok"}' <<<"$M")" "the manifest's serve: one gc at start"
	assert_contains "$M" "nshash_cni_installed 1" "... and the textfiles"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	assert_eq 0 "$?" "... stopped by SIGTERM"
else
	echo "# python3-yaml missing: the manifest's command line not run"
fi
out=$("$BUILD/nshash" serve --listen localhost:80 2>&1)
assert_eq "2 nshash: serve: --listen \"localhost:80\": \"localhost\" is not a numeric IPv4 or IPv6 address" "$? $out" "a name is refused"
out=$("$BUILD/nshash" serve --listen 127.0.0.1:0 2>&1)
assert_eq "2 nshash: serve: --listen \"127.0.0.1:0\": the port must be 1..65535" "$? $out" "port 0 is refused"
out=$("$BUILD/nshash" serve --gc-every x 2>&1)
assert_eq "2 nshash: --gc-every \"x\": expected a number of seconds" "$? $out" "a bad --gc-every is refused"

# ---- a stale record (its DEL never came) whose inode the kernel gave to
# another netns: it labels nothing; the unseen pod stays unseen
ino=$(stat -c %i "$U")
printf '1 %s sized stale old-pod /run/netns/%s-gone\n' "$ino" "$NS" >"$S/cni/pods/nsh59old"
J=$("$BUILD/nshash" --state-dir "$S" stats -j)
assert_eq "null|null|null|unseen" "$(jq -r --arg p "$U" '.netns[] | select(.id == $p) | "\(.namespace)|\(.pod)|\(.cni_outcome)|\(.pod_shared)"' <<<"$J")" \
	"a stale record with the inode of another netns (not at its path): not that netns's name"
rm "$S/cni/pods/nsh59old"

# ---- a gc that cannot see the runtime's pins (a node container without
# /run/netns mounted: here a private /run) keeps every record, and says so
before=$(ls "$S/cni/pods" | sort | tr '\n' ' ')
hold=$(mktemp -d /var/tmp/nsh59-hold.XXXXXX)
out=$(unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && mount -t tmpfs -o mode=0755 none /run &&
	mkdir -p "$1" && mount --bind "$2" "$1" && exec "$0" --state-dir "$1" gc' "$BUILD/nshash" "$S" "$hold" 2>&1)
rmdir "$hold"
assert_contains "$out" "orphaned container pin(s), 0 pod record(s); kept" "gc without /run/netns in view: 0 pod records removed, in its text"
assert_eq "$before" "$(ls "$S/cni/pods" | sort | tr '\n' ' ')" "... and every record kept"
# ---- records go: DEL removes the pod's, gc the one whose netns is gone
cni_call DEL "$A" "$(conf)" CNI_CONTAINERID=nsh59a
assert_eq "0 nsh59w" "$CNI_RC $(ls "$S/cni/pods")" "DEL removes the pod's record"
ip netns del "$NS-w"
J=$("$BUILD/nshash" --state-dir "$S" gc -j)
assert_eq "1 " "$(jq -r .pod_records_removed <<<"$J") $(ls "$S/cni/pods")" "gc removes the record of a netns that is gone"
printf '1 4026600000 sized ns gone-pod /run/netns/%s-gone\n' "$NS" >"$S/cni/pods/nsh59t"
out=$("$BUILD/nshash" --state-dir "$S" gc)
assert_contains "$out" "orphaned container pin(s), 1 pod record(s); kept" "gc's text counts the pod records it removed"
for x in a u; do ip netns del "$NS-$x"; done
assert_eq "" "$(ls /run/netns | grep "^$NS-")" "no pod netns left"
# ---- a large backlog of stale records (DELs that never came) is pruned
# one at a time, in a small memory cgroup (reading all at once took ~5 KB
# a record: 8192 of them ~40 MB, more than the node container's 64 MiB at
# the peak of growing the array)
python3 - "$S/cni/pods" <<'PY'
import os, sys
for i in range(20000):
    with open(os.path.join(sys.argv[1], "nsh59b%05d" % i), "w") as f:
        f.write("1 %d sized ns pod-%d /run/netns/nsh59-gone-%d\n" % (4026600000 + i, i, i))
PY
make_memcg "nshash-t59-$$" 24M
J=$(in_memcg "$BUILD/nshash" --state-dir "$S" gc -j)
assert_eq "20000 0" "$(jq -r .pod_records_removed <<<"$J") $(ls "$S/cni/pods" | wc -l)" "gc prunes 20000 stale records within 24 MiB"
cleanup_state_dir "$S"
assert_eq 0 "$(count_pins_under "$S")" "no pin left under the state dir"
