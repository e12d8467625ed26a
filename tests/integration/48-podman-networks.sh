#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman networks that carry sizes (docs/networks.md): real podman (4.3 on
# the host, 5.4 in tests/check-engines), rootful, netavark backend, with
# nshash's netavark first in a private helper_binaries_dir.  A network
# labelled io.nshash.tcp/udp gives its containers and pods exactly those
# tables (read inside); an unlabelled one changes nothing; of two networks
# the first labelled wins, conflicting labels are refused naming both;
# restart, -p, aardvark DNS by name keep working; bad labels fail the start
# naming the network and the label and leave no netns; teardown leaves
# nothing; the pass-through is exact (argv, stdin bytes, stdout, exit),
# also for more stdin than nshash reads (streamed) and for a command line
# that is not netavark's own (nothing sized); only a pin under /run/netns
# is sized; a replacement that fails leaves no ledger record; what a netns
# has is compared with the labels (issue 31): a fresh one with own tables
# of other sizes is replaced, one in use must have the labels' sizes
# (podman network connect of a labelled network to a container on other
# tables fails), setup --file reads the file, and labels that are not
# applied without a failure are said on stderr.
# The test's own networks nsh48* (10.148.N.0/24, bridges nsh48brN).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq podman
NA_BIN=$BUILD/netavark/netavark
[ -x "$NA_BIN" ] || cannot_run "$NA_BIN not built"
REAL=
for d in /usr/local/libexec/podman /usr/local/lib/podman /usr/libexec/podman /usr/lib/podman; do
	[ -x "$d/netavark" ] && REAL=$d/netavark && break
done
[ -n "$REAL" ] || cannot_run "no netavark in podman's helper dirs"

engines_oci_setup
engines_iptables_snapshot nsh48 10.148.
NA=$D/netavark
mkdir -p "$NA" && cp "$NA_BIN" "$NA/netavark"
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
GLOBAL="-$GTCP -$GUDP"
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxTcp\": 6000, \"maxUdp\": 4096}"
export NSHASH_POLICY=$P

# ---------------------------------------------------------------- pass-through, no podman
REC=$D/rec
printf '#!/bin/sh\nprintf "%%s\\n" "$@" >%s.argv\ncat >%s.stdin\nprintf "{\\"recorded\\": true}\\n"\nexit 7\n' "$REC" "$REC" >"$D/recorder"
chmod +x "$D/recorder"
IN='{"container_id":"x","networks":{"plain":{"interface_name":"eth0"}},"network_info":{"plain":{"name":"plain","labels":{"other":"1"}}}}'
out=$(printf '%s' "$IN" | NSHASH_NETAVARK=$D/recorder "$NA/netavark" --config /x --rootless=false setup /run/netns/nsh48-none)
rc=$?
assert_eq 7 "$rc" "pass-through: the real netavark's exit status"
assert_eq '{"recorded": true}' "$out" "pass-through: its stdout"
assert_eq "$(printf '%s\n' --config /x --rootless=false setup /run/netns/nsh48-none)" "$(cat "$REC.argv")" "pass-through: argv unchanged"
assert_eq "$IN" "$(cat "$REC.stdin")" "pass-through: the exact stdin bytes"
out=$(printf 'not json' | NSHASH_NETAVARK=$D/recorder "$NA/netavark" teardown /run/netns/nsh48-none)
rc=$?
assert_eq "7 not json" "$rc $(cat "$REC.stdin")" "teardown: passed through with its stdin"
# against the real netavark: its own error, word for word
want=$(printf '{}' | "$REAL" --config "$D" setup /nonexistent-nsh48 2>/dev/null; echo "rc=$?")
got=$(printf '{}' | "$NA/netavark" --config "$D" setup /nonexistent-nsh48 2>/dev/null; echo "rc=$?")
assert_eq "$want" "$got" "pass-through: the real netavark's error and status, unchanged"
# more than nshash reads (4 MiB): not read for labels, streamed to netavark
# exact, never a failure of nshash's
head -c $((5 << 20)) /dev/zero | tr '\0' ' ' >"$D/big.in"
printf '{"network_info":{"plain":{"name":"plain","labels":{"pad":"%s"}}}}' "$(head -c $((5 << 20)) /dev/zero | tr '\0' x)" >"$D/big.json"
for f in big.in big.json; do
	rm -f "$REC.stdin"
	out=$(NSHASH_NETAVARK=$D/recorder "$NA/netavark" setup /run/netns/nsh48-none <"$D/$f" 2>"$D/big.err")
	rc=$?
	cmp -s "$D/$f" "$REC.stdin" && same=exact || same="differs ($(stat -c %s "$REC.stdin" 2>/dev/null) of $(stat -c %s "$D/$f") bytes)"
	assert_eq "7 {\"recorded\": true} exact" "$rc $out $same" "stdin of $(stat -c %s "$D/$f") bytes ($f): passed to netavark, every byte, its status and stdout"
done
assert_eq "nshash: the network definitions on stdin are larger than 4194304 bytes: not read for io.nshash.* labels, passed to netavark unchanged" \
	"$(cat "$D/big.err")" "... saying on stderr that nshash did not read it"
# the "real" netavark is nshash's again: refused, not an endless exec loop
out=$(printf '{}' | NSHASH_NETAVARK="$NA/netavark" timeout 10 "$NA/netavark" version; echo "rc=$?")
assert_contains "$(head -1 <<<"$out" | jq -r .error)" "nshash's netavark again ($NA/netavark)" \
	"the wrapper as its own real netavark: refused, named"
assert_contains "$out" "rc=1" "... exit 1, no loop"
LIN='{"network_info":{"lab":{"name":"lab","labels":{"io.nshash.tcp":"4096"}}}}'
out=$(printf '%s' "$LIN" | NSHASH_NETAVARK=$D/recorder "$NA/netavark" --rootless=true setup /run/netns/nsh48-none; echo "rc=$?")
assert_eq '{"error":"nshash: network \"lab\" asks for own hash tables (io.nshash.* labels): only rootful podman can size a netns this way; use a network without these labels"}
rc=1' "$out" "rootless podman on a labelled network: refused, said why"

# the command line: nshash acts only on one it reads as netavark does
# (netavark 1.4's global options, and 1.14's --firewall-driver and
# --plugin-directory), else it passes it on untouched and sizes nothing
LIN='{"network_info":{"lab":{"name":"lab","labels":{"io.nshash.tcp":"4096","io.nshash.udp":"1024"}}}}'
ip netns add nsh48o || cannot_run "ip netns add nsh48o"
on_exit "ip netns del nsh48o 2>/dev/null"
nsizes() { ip netns exec "$1" sh -c "$SIZES"; }
na() { # ARGS...: the wrapper, the recorder as the real netavark, $LIN on stdin; rc in NA_RC
	rm -f "$REC.argv" "$REC.stdin"
	NA_OUT=$(printf '%s' "$LIN" | NSHASH_NETAVARK=$D/recorder "$NA/netavark" "$@" 2>&1)
	NA_RC=$?
}
for args in "--foo bar setup /run/netns/nsh48o" "--foo=bar setup /run/netns/nsh48o" "-z setup /run/netns/nsh48o" \
	"-hc /x setup /run/netns/nsh48o" "setup -h /run/netns/nsh48o" "setup /run/netns/nsh48o extra" \
	"--config setup /run/netns/nsh48o" "--rootless"; do
	read -r -a argv <<<"$args"
	na "${argv[@]}"
	assert_eq "7 $(printf '%s\n' "${argv[@]}" | md5sum) $(printf '%s' "$LIN" | md5sum) $GLOBAL" \
		"$NA_RC $(md5sum <"$REC.argv") $(md5sum <"$REC.stdin") $(nsizes nsh48o)" \
		"not netavark's own command line ($args): passed on, argv and stdin exact, the netns not sized"
	# ... and, when it may be a setup, the labels it did not apply said on
	# stderr (not for --config's value "setup": netavark reads no setup there)
	want='{"recorded": true}'
	case " $args " in *" --config setup "*) ;; *" setup "*)
		want="nshash: network \"lab\" asks for tcp=4096 udp=1024 (io.nshash.* labels), but nshash does not read this command line as netavark's own ($(printf '"%s" ' "${argv[@]}" | sed 's/ $//')): the netns is not sized, the command goes to netavark unchanged
$want" ;;
	esac
	assert_eq "$want" "$NA_OUT" "not netavark's own command line ($args): $([ "${want#nshash}" != "$want" ] && echo "the unapplied labels said on stderr" || echo "no setup: nothing said")"
done
na -c/x --rootless=false -a /y --firewall-driver iptables --plugin-directory=/d -- setup /run/netns/nsh48o
assert_eq "7 4096 1024" "$NA_RC $(nsizes nsh48o)" "netavark's own options in each form clap takes (and 1.14's): understood, sized"
ip netns del nsh48o # the ledger below counts podman's netns alone
# setup --file FILE: the labels are read in the file (stdin is not
# netavark's input then); a file nshash cannot read is said on stderr
printf '%s' "$LIN" >"$D/lin.json"
ip netns add nsh48o || cannot_run "ip netns add nsh48o"
NA_OUT=$(NSHASH_NETAVARK=$D/recorder "$NA/netavark" --config /x --file "$D/lin.json" setup /run/netns/nsh48o </dev/null 2>&1)
assert_eq "7 {\"recorded\": true} 4096 1024" "$? $NA_OUT $(nsizes nsh48o)" "setup --file: the file's labels applied, netavark run"
ip netns del nsh48o
ip netns add nsh48o || cannot_run "ip netns add nsh48o"
mkfifo "$D/na.fifo"
NA_OUT=$(NSHASH_NETAVARK=$D/recorder timeout 20 "$NA/netavark" --file="$D/na.fifo" setup /run/netns/nsh48o </dev/null 2>&1)
assert_eq "7 $GLOBAL" "$? $(nsizes nsh48o)" "setup --file of a FIFO: not read (no hang), passed on, not sized"
assert_eq "nshash: --file \"$D/na.fifo\": not a regular file: not read for io.nshash.* labels, passed to netavark unchanged
{\"recorded\": true}" "$NA_OUT" "... said on stderr"
ip netns del nsh48o

# what a netns has is compared with the labels (issue 31): a fresh pin
# whose netns has own tables of other sizes (the host's
# tcp_child_ehash_entries/udp_child_hash_entries give podman's such tables)
# is replaced; one in use keeps its tables, so the setup goes on only when
# they are the labels' (podman network reload) and fails otherwise (podman
# network connect of a labelled network to a running container)
nshash --state-dir "$S" create --tcp 1024 --udp 0 nsh48k >/dev/null || cannot_run "nshash create nsh48k"
on_exit "ip netns del nsh48k 2>/dev/null"
rm -f "$REC.argv"
NA_OUT=$(printf '%s' "$LIN" | NSHASH_NETAVARK_VERBOSE=1 NSHASH_NETAVARK=$D/recorder "$NA/netavark" --config /x setup /run/netns/nsh48k 2>&1)
assert_eq "7 ran 4096 1024" "$? $([ -e "$REC.argv" ] && echo ran || echo no) $(nsizes nsh48k)" \
	"a fresh netns with own tables of other sizes (tcp 1024, udp shared): replaced by the labels' 4096/1024"
assert_eq 'nshash: replaced /run/netns/nsh48k (tcp own table of 1024, udp shared) by a netns with tcp own table of 4096, udp own table of 1024 (network "lab")
{"recorded": true}' "$NA_OUT" "... said with NSHASH_NETAVARK_VERBOSE"
# late CMD...: CMD as the child of a process started now, after the netns
# was pinned, as `podman network reload` runs netavark on a running
# container's netns (a podman that made the netns since it started, the
# test's shell here, is a new container's: docs/networks.md)
late() { bash -c '"$@"; exit $?' late "$@"; }
nsenter --net=/run/netns/nsh48k sleep 600 &
inside=$!
on_exit "kill $inside 2>/dev/null"
for _ in $(seq 100); do [ "$(readlink /proc/$inside/ns/net)" = "$(readlink /proc/self/ns/net)" ] || break; sleep 0.05; done
NA_OUT=$(printf '%s' "$LIN" | NSHASH_NETAVARK_VERBOSE=1 NSHASH_NETAVARK=$D/recorder late "$NA/netavark" --config /x setup /run/netns/nsh48k 2>&1)
assert_eq "7 4096 1024" "$? $(nsizes nsh48k)" "in use (a process) with the labels' sizes: left as it is, netavark runs"
assert_eq 'nshash: /run/netns/nsh48k (in use: process sleep) has the sizes of network "lab" already: left alone
{"recorded": true}' "$NA_OUT" "... said with NSHASH_NETAVARK_VERBOSE"
kill $inside 2>/dev/null
wait $inside 2>/dev/null
ip netns add nsh48u || cannot_run "ip netns add nsh48u"
on_exit "ip netns del nsh48u 2>/dev/null"
# only a process, no link but lo (podman network reload tore its links
# down): its tables stay, the setup goes on, said on stderr
nsenter --net=/run/netns/nsh48u sleep 600 &
inside=$!
on_exit "kill $inside 2>/dev/null"
for _ in $(seq 100); do [ "$(readlink /proc/$inside/ns/net)" = "$(readlink /proc/self/ns/net)" ] || break; sleep 0.05; done
rm -f "$REC.argv"
NA_OUT=$(printf '%s' "$LIN" | NSHASH_NETAVARK=$D/recorder late "$NA/netavark" --config /x setup /run/netns/nsh48u 2>&1)
assert_eq "7 ran $GLOBAL" "$? $([ -e "$REC.argv" ] && echo ran || echo no) $(nsizes nsh48u)" \
	"in use by a process only (a reload) with other tables: left as it is, netavark runs"
assert_eq 'nshash: network "lab" asks for tcp=4096 udp=1024 (io.nshash.* labels), but the netns /run/netns/nsh48u is in use (process sleep, no link but lo: podman network reload) and has tcp shared, udp shared: the tables it was made with (a container'"'"'s own io.nshash.* annotations win over labels) cannot change: left as they are
{"recorded": true}' "$NA_OUT" "... said on stderr, without NSHASH_NETAVARK_VERBOSE"
kill $inside 2>/dev/null
wait $inside 2>/dev/null
# a netns pinned since the podman running netavark started (a process
# started before the pin, as podman for a new container): no walk of every
# process.  A process in it with no socket in use (host root's: nothing
# else can enter) is not looked for: the netns is replaced and it stays
# behind in the old one; a bound socket there sends the setup through every
# process, and it is found.
for mode in quiet socket; do
	ip netns del nsh48u 2>/dev/null
	rm -f "$D/na48.go" "$D/na48.rc"
	(
		while [ ! -e "$D/na48.go" ]; do sleep 0.02; done
		printf '%s' "$LIN" | NSHASH_NETAVARK=$D/recorder "$NA/netavark" --config /x setup /run/netns/nsh48u >"$D/na48.out" 2>&1
		echo $? >"$D/na48.rc"
	) &
	early=$!
	sleep 0.1
	ip netns add nsh48u || cannot_run "ip netns add nsh48u"
	old=$(stat -L -c %i /run/netns/nsh48u)
	if [ $mode = quiet ]; then
		nsenter --net=/run/netns/nsh48u sleep 600 &
	else
		nsenter --net=/run/netns/nsh48u python3 -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); time.sleep(600)' &
	fi
	inside=$!
	on_exit "kill $inside 2>/dev/null"
	for _ in $(seq 100); do
		[ "$(ip netns exec nsh48u sed -n 's/^UDP: inuse \([0-9]*\).*/\1/p' /proc/net/sockstat)" = "$([ $mode = quiet ] && echo 0 || echo 1)" ] &&
			[ "$(readlink /proc/$inside/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.05
	done
	touch "$D/na48.go"
	wait $early
	if [ $mode = quiet ]; then
		assert_eq "7 4096 1024" "$(cat "$D/na48.rc") $(nsizes nsh48u)" "pinned since netavark's parent started, a process inside with no socket in use: replaced"
		assert_eq "$old" "$(stat -L -c %i /proc/$inside/ns/net)" "... that process stayed behind in the old netns"
	else
		assert_eq "7 $GLOBAL" "$(cat "$D/na48.rc") $(nsizes nsh48u)" "pinned since netavark's parent started, a bound socket inside: in use, left as it is"
		assert_contains "$(cat "$D/na48.out")" "is in use (process python3, no link but lo: podman network reload)" "... the process found and named"
	fi
	kill $inside 2>/dev/null
	wait $inside 2>/dev/null
done
ip netns del nsh48u
ip netns add nsh48u || cannot_run "ip netns add nsh48u"
ip netns add nsh48p || cannot_run "ip netns add nsh48p"
on_exit "ip netns del nsh48p 2>/dev/null"
ip -n nsh48u link add nsh48d0 type veth peer name nsh48d1 netns nsh48p || cannot_run "a veth in nsh48u"
na --config /x setup /run/netns/nsh48u
assert_eq "1 no $GLOBAL" "$NA_RC $([ -e "$REC.argv" ] && echo ran || echo no) $(nsizes nsh48u)" \
	"in use (a link) with other tables than the labels': refused, not sized, netavark not run"
assert_eq "nshash: network \"lab\" asks for tcp=4096 udp=1024 (io.nshash.* labels), but the netns /run/netns/nsh48u is in use (nsh48d0) and has tcp shared, udp shared: the tables of a netns in use cannot change; attach the container only to networks whose labels match its tables (or have no io.nshash.* labels), or recreate it with network \"lab\"" \
	"$(jq -r .error <<<"$NA_OUT")" "... saying why and what to do, as netavark reports errors"
ip netns del nsh48u
ip netns del nsh48p
ip netns del nsh48k
# the netns path: only a pin under /run/netns (rootful podman's), nothing else
touch "$D/opin" && unshare --net="$D/opin" true || cannot_run "unshare --net=$D/opin"
on_exit "umount '$D/opin' 2>/dev/null"
for p in "$D/opin" "/run/netns/../..$D/opin"; do
	na --config /x setup "$p"
	assert_eq "1 no $GLOBAL" "$NA_RC $([ -e "$REC.argv" ] && echo ran || echo no) $(nsenter --net="$D/opin" sh -c "$SIZES")" \
		"a labelled network's netns outside /run/netns ($p): refused, not sized, netavark not run"
	assert_eq "nshash: network \"lab\" asks for own hash tables, but the netns $p is not under /run/netns/ (where rootful podman pins it): nshash sizes no other path" \
		"$(jq -r .error <<<"$NA_OUT")" \
		"... named, as netavark reports errors"
done
# a replacement that fails (its mounts refused: strace injects the errors)
# leaves nothing: no ledger record, no reservation of the budget, the pin
# podman's
if command -v strace >/dev/null; then
	LS=$(make_state_dir)
	engines_policy "$D/budget.json" "{\"stateDir\": \"$LS\", \"maxTableBytes\": 100000000}"
	ip netns add nsh48f || cannot_run "ip netns add nsh48f"
	on_exit "ip netns del nsh48f 2>/dev/null"
	rm -f "$REC.argv"
	out=$(printf '%s' "$LIN" | NSHASH_POLICY=$D/budget.json NSHASH_NETAVARK=$D/recorder strace -f -qq -o /dev/null \
		-e trace=move_mount,umount2 -e inject=move_mount:error=EINVAL -e inject=umount2:error=EPERM \
		"$NA/netavark" --config /x setup /run/netns/nsh48f 2>&1)
	assert_eq "1" "$?" "a replacement whose unmount fails: the setup fails"
	assert_contains "$(jq -r .error <<<"$out")" "cannot size netns /run/netns/nsh48f: replace netns /run/netns/nsh48f: unmount the old pin: Operation not permitted" "... saying why"
	assert_eq "no $GLOBAL" "$([ -e "$REC.argv" ] && echo ran || echo no) $(nsizes nsh48f)" "... netavark not run, podman's netns left at the pin"
	assert_eq "table memory: 0 bytes (0 KiB) of maxTableBytes 100000000 in 0 netns sized by nshash" \
		"$(nshash --state-dir "$LS" list --max-table-bytes 100000000 | grep '^table memory')" \
		"... no ledger record, no reservation (no reclaim needed)"
	assert_eq "0 0" "$(engines_pins_left "$LS") $(find "$LS" -mindepth 1 -maxdepth 1 -name '*.tmp*' | wc -l)" "... no pin, no temporary file"
else
	echo "# strace missing: the failed replacement not tested"
fi

# ---------------------------------------------------------------- podman
# the precreate hook too: a container's own annotations win over its network's labels
engines_hooks_dir "$D/hooks" "$P"
engines_podman_setup "$D/podman" "helper_binaries_dir = [\"$NA\", \"$(dirname "$REAL")\"]
hooks_dir = [\"$D/hooks\"]" || cannot_run "podman setup failed"
IMG=localhost/nshash-busybox
# aardvark-dns (DNS is on for these networks) says this on stderr, through
# netavark, where nothing listens on /dev/log (the fresh root of 90)
no_syslog_noise() { grep -v '^failed to connect to syslog: ' || true; }
net() { # NAME N [LABELS...]
	local name=$1 n=$2 f
	shift 2
	podman network create --subnet "10.148.$n.0/24" "${@/#/--label=}" "$name" >/dev/null || cannot_run "podman network create $name"
	f=$D/podman/networks/$name.json
	jq --arg b "nsh48br$n" '.network_interface = $b' "$f" >"$f.new" && mv "$f.new" "$f"
}
net nsh48a 1 io.nshash.tcp=4096 io.nshash.udp=1024
net nsh48b 2
net nsh48c 3 io.nshash.tcp=4096 io.nshash.udp=1024
net nsh48d 4 io.nshash.tcp=2048
net nsh48bad 5 io.nshash.tcp=12abc
net nsh48big 6 io.nshash.tcp=99999
net nsh48rnd 7 io.nshash.tcp=4097
# dual stack: an IPv6 subnet beside the IPv4 one
podman network create --ipv6 --subnet 10.148.8.0/24 --subnet fd48:8::/64 --label=io.nshash.tcp=4096 \
	--label=io.nshash.udp=1024 nsh48v6 >/dev/null || cannot_run "podman network create --ipv6 nsh48v6"
f=$D/podman/networks/nsh48v6.json
jq '.network_interface = "nsh48br8"' "$f" >"$f.new" && mv "$f.new" "$f"

assert_eq "4096 1024" "$(podman run --rm --network nsh48a $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" "labelled network: exact sizes inside"
assert_eq "$GLOBAL" "$(podman run --rm --network nsh48b $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" "unlabelled network: shared tables"
assert_eq "2048 -$GUDP" "$(podman run --rm --network nsh48d $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"only io.nshash.tcp: own TCP table, shared UDP"
# per protocol (docs/sizing.md): a protocol the labels do not name gets the
# node's default, as under every front-end; an `auto` default is left to
# the hook (netavark has no workload history)
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxTcp\": 6000, \"maxUdp\": 4096, \"defaultTcp\": 1024, \"defaultUdp\": 512}"
assert_eq "2048 512" "$(podman run --rm --network nsh48d $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"only io.nshash.tcp, defaultUdp 512: udp from the node's default"
assert_eq "4096 1024" "$(podman run --rm --network nsh48a $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"both labelled: the labels win over the defaults"
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxTcp\": 6000, \"maxUdp\": 4096, \"defaultTcp\": 1024, \"defaultUdp\": \"auto\"}"
assert_eq "2048 -$GUDP" "$(podman run --rm --network nsh48d $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"only io.nshash.tcp, defaultUdp auto: udp left shared by netavark"
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxTcp\": 6000, \"maxUdp\": 4096}"
assert_eq "4096 1024" "$(podman run --rm --network nsh48b --network nsh48a $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"two networks, one labelled: its sizes"
assert_eq "4096 1024" "$(podman run --rm --network nsh48a --network nsh48c $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" \
	"two networks with the same labels: those sizes"
out=$(podman run --rm --network nsh48a --network nsh48d $IMG true 2>&1)
assert_eq 126 $? "conflicting labels: the start fails"
assert_contains "$out" "ask for other sizes: a netns has one pair of tables" "conflicting labels: refused"
assert_contains "$out" '"nsh48a" (io.nshash.tcp=4096 io.nshash.udp=1024)' "conflicting labels: the first network named"
assert_contains "$out" '"nsh48d" (io.nshash.tcp=2048 io.nshash.udp=0)' "conflicting labels: the second network named"
out=$(podman run --rm --network nsh48bad $IMG true 2>&1)
assert_eq 126 $? "non-decimal label: the start fails"
assert_contains "$out" 'nshash: network "nsh48bad": label io.nshash.tcp="12abc" is not a decimal number of hash buckets' \
	"non-decimal label: the network and the label named"
out=$(podman run --rm --network nsh48big $IMG true 2>&1)
assert_eq 126 $? "label above the cap: the start fails"
assert_contains "$out" "nshash: network \"nsh48big\": label io.nshash.tcp=99999 (effective 131072) is above the policy's cap 6000" \
	"label above the cap: the network, the label and the cap named"
out=$(podman run --rm --network nsh48rnd $IMG true 2>&1)
assert_eq 126 $? "label under the cap whose effective size is above it: the start fails"
assert_contains "$out" "nshash: network \"nsh48rnd\": label io.nshash.tcp=4097 (effective 8192) is above the policy's cap 6000" \
	"the cap compares the effective size"
out=$(podman run --rm --network nsh48v6 $IMG sh -c "$SIZES; ip -6 addr show dev eth0 scope global | grep -o 'fd48:8::[0-9a-f:]*/64'; ping -6 -c 1 -W 3 fd48:8::1 >/dev/null && echo ping6-ok" 2>&1 | no_syslog_noise)
assert_eq "4096 1024" "$(sed -n 1p <<<"$out")" "IPv6 network: exact sizes inside"
assert_contains "$(sed -n 2p <<<"$out")" "fd48:8::" "IPv6 network: the container has its IPv6 address"
assert_eq "ping6-ok" "$(sed -n 3p <<<"$out")" "IPv6 network: the gateway answers over IPv6"
# the container's own annotations win: the hook transplants the labelled
# (sized) netns into one of the annotated sizes
out=$(podman run --rm --annotation io.nshash.tcp=2048 --annotation io.nshash.udp=512 --network nsh48a $IMG \
	sh -c "$SIZES; ping -c 1 -W 3 10.148.1.1 >/dev/null && echo ping-ok" 2>&1 | no_syslog_noise)
assert_eq "2048 512
ping-ok" "$out" "annotations on a labelled network: the annotations' sizes, the network works"
assert_eq "" "$(podman ps -a -q)" "bad labels: no container left"
assert_eq 0 "$(engines_pins_left "$S")" "bad labels: no nshash pin left"

# restart, -p, DNS by name
id=$(podman run -d --name nsh48web --network nsh48a -p 18480:8080 $IMG \
	sh -c 'echo nsh48-ok >/tmp/i; exec httpd -f -p 8080 -h /tmp')
key=$(podman inspect -f '{{.NetworkSettings.SandboxKey}}' "$id")
assert_eq "4096 1024" "$(podman exec nsh48web sh -c "$SIZES")" "detached container: sized"
# records of netns that are gone are dropped by the next reclaim (as for
# every front-end): after it, only live netns count.  The --rm containers
# before are gone from podman, but one's netns may still be held a moment
# by podman's cleanup: a live netns, counted until it is let go (5 s).
ledger() { nshash --state-dir "$S" reclaim >/dev/null 2>&1; nshash --state-dir "$S" list --max-table-bytes 1000000000 2>&1 | grep -o 'in [0-9]* netns sized by nshash' | awk '{print $2}'; }
for _ in $(seq 50); do [ "$(ledger)" = 1 ] && break; sleep 0.1; done
assert_eq 1 "$(ledger)" "the ledger counts the labelled network's netns (nshash list)"
ok=
for _ in $(seq 30); do
	ok=$(curl -s -m 2 http://10.148.1.1:18480/i 2>/dev/null) && [ -n "$ok" ] && break
	sleep 0.2
done
assert_eq "nsh48-ok" "$ok" "-p: the published port answers from the host"
# busybox-static's wget crashes resolving (static NSS): nslookup asks
# aardvark, nc fetches
ip=$(podman inspect -f '{{(index .NetworkSettings.Networks "nsh48a").IPAddress}}' "$id")
out=$(podman run --rm --network nsh48a $IMG sh -c "$SIZES; nslookup nsh48web 10.148.1.1 | sed -n 's/^Address: *//p' | grep -v ':53\$'; printf 'GET /i HTTP/1.0\\r\\n\\r\\n' | nc -w 5 $ip 8080 | tail -n 1" 2>&1 | no_syslog_noise)
assert_eq "4096 1024
$ip
nsh48-ok" "$out" "aardvark DNS: a second sized container finds the first by name and reaches it"
podman restart -t 0 nsh48web >/dev/null 2>&1
assert_eq "4096 1024" "$(podman exec nsh48web sh -c "$SIZES")" "podman restart: sized again"
key2=$(podman inspect -f '{{.NetworkSettings.SandboxKey}}' "$id")
# reload runs setup on the configured netns: not fresh, sized already, left alone
out=$(podman network reload nsh48web 2>&1 | no_syslog_noise)
assert_eq "$id" "$out" "podman network reload: done"
ok=
for _ in $(seq 30); do
	ok=$(curl -s -m 2 http://10.148.1.1:18480/i 2>/dev/null) && [ -n "$ok" ] && break
	sleep 0.2
done
assert_eq "4096 1024 nsh48-ok" "$(podman exec nsh48web sh -c "$SIZES") $ok" "podman network reload: same sizes, -p still answers"
# podman network connect to a running container: a labelled network whose
# sizes its netns does not have is refused (a netns in use keeps its
# tables), one whose labels match them is added
podman run -d --name nsh48conn --network nsh48b $IMG sleep 600 >/dev/null || cannot_run "podman run nsh48conn"
out=$(podman network connect nsh48a nsh48conn 2>&1)
rc=$?
assert_eq "1 $GLOBAL" "$([ $rc != 0 ] && echo 1 || echo 0) $(podman exec nsh48conn sh -c "$SIZES")" \
	"podman network connect of a labelled network to a container on the shared tables: fails, its tables kept"
assert_contains "$out" 'nshash: network "nsh48a" asks for tcp=4096 udp=1024 (io.nshash.* labels), but the netns /run/netns/netns-' \
	"... naming the network and its labels"
assert_contains "$out" 'is in use (eth0) and has tcp shared, udp shared: the tables of a netns in use cannot change' "... and why"
assert_eq "eth0" "$(podman exec nsh48conn ls /sys/class/net | grep -v '^lo$' | tr '\n' ' ' | sed 's/ $//')" "... no interface of the network added"
podman rm -f -t 0 nsh48conn >/dev/null
podman run -d --name nsh48conn --network nsh48a $IMG sleep 600 >/dev/null || cannot_run "podman run nsh48conn"
out=$(podman network connect nsh48c nsh48conn 2>&1)
rc=$?
out=$(no_syslog_noise <<<"$out")
assert_eq "0 4096 1024 eth0 eth1" "$rc $(podman exec nsh48conn sh -c "$SIZES") $(podman exec nsh48conn ls /sys/class/net | grep -v '^lo$' | sort | tr '\n' ' ' | sed 's/ $//')" \
	"podman network connect of a network whose labels match the container's tables: added ($out)"
podman rm -f -t 0 nsh48conn >/dev/null
# a container whose own annotations overrode its network's labels: the
# reload's setup (its links torn down, the container running) finds other
# tables, which stay, and the network is set up again
podman run -d --name nsh48conn --network nsh48a --annotation io.nshash.tcp=2048 --annotation io.nshash.udp=512 \
	$IMG sleep 600 >/dev/null || cannot_run "podman run nsh48conn (annotated)"
out=$(podman network reload nsh48conn 2>&1)
rc=$?
assert_eq "0 2048 512 eth0" "$rc $(podman exec nsh48conn sh -c "$SIZES") $(podman exec nsh48conn ls /sys/class/net | grep -v '^lo$' | tr '\n' ' ' | sed 's/ $//')" \
	"podman network reload of a container whose annotations overrode the labels: its tables and its eth0 kept"
podman rm -f -t 0 nsh48conn >/dev/null
podman rm -f -t 0 nsh48web >/dev/null
left=()
for k in "$key" "$key2"; do [ -e "$k" ] && left+=("$k"); done
assert_none "teardown: the netns pins of the container are gone" 2 "${left[@]}"
# a netns counts until the kernel has freed it (asynchronously: slower
# behind a backlog of other netns being torn down)
assert_eq 0 "$(until_eq 0 20 ledger)" "teardown: the ledger counts nothing"

# a pod on the network
podman pod create --name nsh48pod --network nsh48a >/dev/null || cannot_run "podman pod create"
assert_eq "4096 1024" "$(podman run --rm --pod nsh48pod $IMG sh -c "$SIZES" 2>&1 | no_syslog_noise)" "pod on a labelled network: the member is sized"
key=$(podman inspect -f '{{.NetworkSettings.SandboxKey}}' "$(podman pod inspect -f '{{.InfraContainerID}}' nsh48pod)")
podman pod rm -f nsh48pod >/dev/null
left=()
[ -e "$key" ] && left+=("$key")
assert_none "pod removed: its netns pin is gone" 1 "${left[@]}"

assert_eq "" "$(podman ps -a -q)" "no container left"
assert_eq 0 "$(engines_pins_left "$S")" "no nshash pin left"
