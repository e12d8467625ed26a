#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash-runtime --nshash-tcp=N --nshash-udp=N, the sizes for engines that
# cannot pass annotations (Docker's runtimeArgs, containerd's BinaryName):
# used when the config asks for nothing, annotations win, the policy's caps
# hold, bad options are refused with their exact error (on stderr and in the
# runtime's --log) and leave nothing; a size-class script as containerd's
# runc binary.  Under onFailure warn, the warning reaches the runtime's log
# and syslog even without a log file.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
export NSHASH_POLICY=$P
W=$BUILD/nshash-runtime
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)

engines_busybox_rootfs "$D/rootfs"
bundle() { engines_script_bundle "$D/$1" "$D/rootfs" "$SHOW" "${@:2}"; } # NAME KEY=VALUE...

# --- the defaults size a config that asks for nothing
bundle plain
out=$(cd "$D/plain" && "$W" --nshash-tcp=4096 --nshash-udp=512 --root "$ROOT" run t38a 2>&1)
assert_eq "4096 512" "$out" "--nshash-tcp=4096 --nshash-udp=512, no annotations: tcp=4096 udp=512 inside"
# (a fresh bundle each time: the wrapper's trace in a bundle is issue 13's)
bundle plain2
out=$(cd "$D/plain2" && "$W" --nshash-tcp 3000 --root "$ROOT" run t38b 2>&1)
assert_eq "4096 -$GUDP" "$out" "--nshash-tcp 3000 (two words): tcp rounded to 4096, udp shared"
bundle plain3
out=$(cd "$D/plain3" && "$W" --root "$ROOT" run t38c 2>&1)
assert_eq "-$GTCP -$GUDP" "$out" "no options, no annotations: untouched"
assert_eq 0 "$(engines_pins_left "$S")" "no pin after foreground runs"

# --- per protocol (docs/sizing.md): the annotation decides the protocol it
# names, the option the other
bundle annotated io.nshash.tcp=2048
out=$(cd "$D/annotated" && "$W" --nshash-tcp=65536 --nshash-udp=4096 --root "$ROOT" run t38d 2>&1)
assert_eq "2048 4096" "$out" "io.nshash.tcp=2048 decides tcp over --nshash-tcp, --nshash-udp=4096 decides udp"
bundle annotated0 io.nshash.tcp=2048 io.nshash.udp=0
out=$(cd "$D/annotated0" && "$W" --nshash-tcp=65536 --nshash-udp=4096 --root "$ROOT" run t38d0 2>&1)
assert_eq "2048 -$GUDP" "$out" "io.nshash.udp=0 opts udp out over --nshash-udp"

# --- detached create/start/delete with the defaults; the bundle stays as written
bundle detached
jq '.process.args = ["sleep", "300"]' "$D/detached/config.json" >"$D/x" && mv "$D/x" "$D/detached/config.json"
(cd "$D/detached" && "$W" --nshash-udp=1024 --root "$ROOT" create t38e >/dev/null 2>&1)
pid=$(runc --root "$ROOT" state t38e 2>/dev/null | jq -r .pid)
assert_eq "-$GTCP 1024" "$(netns_sizes_of_pid "${pid:-0}")" "create with --nshash-udp=1024: udp=1024 inside"
assert_eq "null" "$(jq -c .annotations "$D/detached/config.json")" "the bundle's config.json is left as it was (no annotation recorded)"
"$W" --nshash-udp=1024 --root "$ROOT" delete -f t38e >/dev/null 2>&1
assert_eq 0 "$(engines_pins_left "$S")" "delete: pin removed"

# --- bad options: exact error, exit 1, nothing left, config untouched
bundle bad
SUM=$(sha256sum <"$D/bad/config.json")
expect_bad() { # DESC ERROR OPTIONS...
	local desc=$1 want=$2 out rc
	shift 2
	rm -f "$D/log.json"
	out=$(cd "$D/bad" && "$W" "$@" 2>&1)
	rc=$?
	assert_eq "1 nshash-runtime: error: $want" "$rc $out" "$desc"
	assert_eq "error nshash-runtime: $want" "$(jq -r '.level + " " + .msg' "$D/log.json" 2>&1)" "$desc: in the runtime's log (--log, json)"
	assert_eq "$SUM" "$(sha256sum <"$D/bad/config.json")" "$desc: config.json unchanged"
	assert_eq "" "$(runc --root "$ROOT" list -q 2>/dev/null)$(ls "$S/pins" 2>/dev/null)" "$desc: no container, no pin"
}
LOG=(--root "$ROOT" --log "$D/log.json" --log-format json)
expect_bad "unknown option" "unknown option --nshash-tpc=4096 (known: --nshash-tcp=N, --nshash-udp=N)" \
	--nshash-tpc=4096 "${LOG[@]}" create t38f
expect_bad "bad value" '--nshash-tcp: "4k" is not a decimal number of entries' \
	--nshash-tcp=4k "${LOG[@]}" create t38f
expect_bad "negative value" '--nshash-udp: "-1" is not a decimal number of entries' \
	"${LOG[@]}" --nshash-udp=-1 create t38f
expect_bad "out of range" '--nshash-tcp: "99999999999" is out of range (tcp sizes are 0..16777216, 0 = shared table)' \
	--nshash-tcp=99999999999 "${LOG[@]}" create t38f
expect_bad "given twice" "option --nshash-tcp given twice" \
	--nshash-tcp=4096 --nshash-tcp=8192 "${LOG[@]}" create t38f
expect_bad "single dash" "option -nshash-tcp=4096: write it with two dashes (nshash-runtime [--nshash-tcp=N|auto] [--nshash-udp=N|auto] [runtime options] COMMAND ...)" \
	-nshash-tcp=4096 "${LOG[@]}" create t38f
expect_bad "after the command" "option --nshash-tcp=4096 after the command create: it must come before it (nshash-runtime [--nshash-tcp=N|auto] [--nshash-udp=N|auto] [runtime options] COMMAND ...)" \
	"${LOG[@]}" create --nshash-tcp=4096 t38f
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxTcp\": 8192}"
expect_bad "above the policy's cap" "t38f: ./config.json: policy $P: nshash-runtime --nshash-tcp/--nshash-udp: tcp size 16384 (effective 16384) is above the allowed maximum 8192 (maxTcp)" \
	--nshash-tcp=16384 "${LOG[@]}" create t38f

# --- containerd: a size class is a script as the runc binary (BinaryName)
cat >"$D/nshash-runtime-8k" <<EOF
#!/bin/sh
exec $W --nshash-tcp=8192 --nshash-udp=1024 "\$@"
EOF
chmod +x "$D/nshash-runtime-8k"
engines_policy "$P" "{\"stateDir\": \"$S\"}"
if engines_containerd_start "$D/containerd" NSHASH_POLICY="$P"; then
	out=$(timeout 60 ctr run --rm --runc-binary "$D/nshash-runtime-8k" --runc-root "$D/runc-root-ctr" --env PATH=/bin \
		--rootfs "$D/rootfs" k38 /bin/sh -c "$SHOW" 2>&1)
	assert_eq "8192 1024" "$out" "containerd with a size-class script as the runc binary: tcp=8192 udp=1024"
	assert_eq 0 "$(engines_pins_left "$S")" "containerd: no pin after ctr run --rm"
else
	fail "containerd did not start"
fi

# --- onFailure warn: the warning reaches the runtime's log and syslog
# syslog: /dev/log in a private mount namespace is a socket we read
python3 - "$D/syslog.sock" "$D/syslog.txt" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536) + b"\n")
EOF
SYSLOGD=$!
on_exit "kill $SYSLOGD"
for _ in $(seq 50); do [ -S "$D/syslog.sock" ] && break; sleep 0.1; done
with_syslog() { # CMD...: run CMD where /dev/log is our socket (and /dev has null, zero, urandom)
	unshare -m --propagation private sh -c '
		d=$1; shift
		mkdir -p "$d/olddev" && mount --rbind /dev "$d/olddev" && mount -t tmpfs nshash-dev /dev || exit 99
		for n in null zero full random urandom tty; do touch /dev/$n && mount --bind "$d/olddev/$n" /dev/$n; done
		ln -s "$d/syslog.sock" /dev/log
		exec "$@"' sh "$D" "$@"
}
engines_policy "$P" "{\"stateDir\": \"$S\", \"onFailure\": \"warn\", \"runtime\": \"/bin/true\"}"
bundle hostnet
jq '.linux.namespaces |= map(if .type == "network" then .path = "/proc/self/ns/net" else . end)' "$D/hostnet/config.json" >"$D/x" &&
	mv "$D/x" "$D/hostnet/config.json"
rm -f "$D/log.json"
out=$(cd "$D/hostnet" && with_syslog "$W" --nshash-tcp=4096 "${LOG[@]}" create t38g 2>&1)
assert_eq "0 " "$? $out" "warn: the wrapper goes on (runtime /bin/true), nothing on stderr"
want="requested tcp=4096 udp=0, effective: shared global tables (onFailure warn): the container would share the host's network namespace (/proc/self/ns/net)"
assert_contains "$(jq -r '.level + " " + .msg' "$D/log.json" 2>&1)" "warning nshash-runtime: t38g: $want" "warn: the warning is in the runtime's log"
for _ in $(seq 20); do grep -q t38g "$D/syslog.txt" 2>/dev/null && break; sleep 0.1; done
assert_contains "$(cat "$D/syslog.txt" 2>/dev/null)" "nshash-runtime[" "warn: syslog has a line from nshash-runtime"
assert_contains "$(cat "$D/syslog.txt" 2>/dev/null)" "t38g: $want" "warn: syslog has the warning (no logFile, syslog false)"
assert_eq 0 "$(engines_pins_left "$S")" "warn: no pin"
assert_host_untouched
