#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash-runtime leaves the user's bundle as it was and keeps the runtime's
# exit status (issue 13):
#   - config.json byte for byte (content, inode, mode) after a foreground
#     run, after create, start and delete; nothing from nshash in the
#     runtime's view (no hook), the container sized all the same
#   - no pin on the host at any time (it lives in the runtime's own mount
#     namespace), also when the wrapper is SIGKILLed; a pin an older version
#     left is kept by a delete that fails on the running container and
#     removed by the delete of the stopped one
#   - exit statuses equal plain runc's and crun's (unknown ids, a container's
#     own exit status, a signal)
#   - crun's --config / -f: the file crun reads is the one sized, and no file
#     is changed
#   - a config an older nshash-runtime left behind (io.nshash.pin, a netns
#     path under STATE/pins/ that no longer exists, its hooks) heals
#   - SIGTERM while sizing or while the runtime starts: status 143, nothing left
#   - parallel foreground runs of one bundle
#   - issue 19: the first sized start with no state dir yet (a fresh path,
#     and the default /run/nshash in a private mount namespace with an empty
#     /run, as after a boot) makes it 0700; a config.json that is a symbolic
#     link is refused, the bundle untouched; a relative PATH entry is never
#     where the runtime is found
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
ROOT=$D/runc-root
CROOT=$D/crun-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
on_exit "engines_crun_ns sh -c 'for c in \$(crun --root \"$CROOT\" list -q 2>/dev/null); do crun --root \"$CROOT\" delete -f \$c; done'"
export NSHASH_POLICY=$P
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GLOBAL="-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)"
engines_busybox_rootfs "$D/rootfs"

# bundle NAME KEY=VALUE...: a bundle running `sh -c "$CMD"` (default: print
# the netns's sizes), its config.json pretty-printed by jq with a few things
# a reformatting would change (2.50, "a\/b", uint64, key order), mode 0640;
# a copy of the user's bytes in NAME.orig.
CMD=$SIZES
bundle() {
	local n=$1 b=$D/$1
	shift
	mkdir -p "$b"
	engines_runc_bundle "$b" sh -c "$CMD" && engines_bundle_annotate "$b" "$@" &&
		jq --arg r "$D/rootfs" '.root.path = $r | . + {"x-test": "PLACEHOLDER"}' "$b/config.json" |
		sed 's|"PLACEHOLDER"|{"f": 2.50, "s": "a\\/b", "big": 18446744073709551615}|' >"$b/x" &&
		mv "$b/x" "$b/config.json" && chmod 0640 "$b/config.json" && cp -p "$b/config.json" "$D/$n.orig" &&
		stat -c '%i %a %U' "$b/config.json" >"$D/$n.stat"
}
# unchanged NAME WHEN: config.json is what the user wrote, same file
unchanged() {
	if cmp -s "$D/$1.orig" "$D/$1/config.json"; then pass "$2: config.json byte for byte"; else
		fail "$2: config.json changed: $(diff <(jq -S . "$D/$1.orig") <(jq -S . "$D/$1/config.json" 2>&1) | head -c 400)"
	fi
	assert_eq "$(cat "$D/$1.stat")" "$(stat -c '%i %a %U' "$D/$1/config.json")" "$2: same inode, mode and owner"
	assert_eq "" "$(ls -A "$D/$1" | grep -v -x -e config.json -e rootfs)" "$2: nothing else in the bundle"
}
pins() { count_pins_under "$S/pins/"; }
pin_files() { ls -A "$S/pins" 2>/dev/null | wc -l; }
wait_status() { # ROOT ID STATUS
	for _ in $(seq 100); do [ "$(runc --root "$1" state "$2" 2>/dev/null | jq -r .status)" = "$3" ] && return 0; sleep 0.05; done
	return 1
}

# ---- foreground run (runc)
bundle b1 io.nshash.tcp=4096 io.nshash.udp=1024
out=$(cd "$D/b1" && nshash-runtime --root "$ROOT" run t38a 2>"$D/err")
assert_eq "4096 1024" "$out" "foreground run: sized as asked $(cat "$D/err")"
unchanged b1 "after a foreground run"
assert_eq "0 0" "$(pins) $(pin_files)" "after a foreground run: no pin, no pin file"
out=$(cd "$D/b1" && runc --root "$ROOT" run t38a2 2>&1)
assert_eq "$GLOBAL" "$out" "plain runc on the same bundle afterwards: runs, on the shared tables"

# ---- create / start / exec / delete, the containerd way
CMD="$SIZES >/out.txt; sleep 300"
bundle b2 io.nshash.tcp=16384 io.nshash.udp=2048
CMD=$SIZES
nshash-runtime --root "$ROOT" create -b "$D/b2" --pid-file "$D/b2.pid" t38b </dev/null >/dev/null 2>"$D/err"
assert_eq 0 $? "create through the wrapper $(cat "$D/err")"
unchanged b2 "after create"
assert_eq "0 0" "$(pins) $(pin_files)" "after create: no pin on the host (the container's processes hold the netns)"
assert_eq "0 0" "$(grep -c nshash-hook "$ROOT/t38b/state.json") $(grep -c io.nshash.pin "$ROOT/t38b/state.json")" \
	"the runtime's copy of the config has no nshash hook and no io.nshash.pin"
assert_eq "16384 2048" "$(netns_sizes_of_pid "$(cat "$D/b2.pid")")" "the created container's init is in the sized netns"
nshash-runtime --root "$ROOT" start t38b
assert_eq 0 $? "start through the wrapper"
wait_status "$ROOT" t38b running
unchanged b2 "after start"
assert_eq "16384 2048" "$(runc --root "$ROOT" exec t38b sh -c "$SIZES")" "exec into the running container: same sizes"
assert_eq "16384 2048" "$(cat "$D/rootfs/out.txt" 2>/dev/null)" "the container's own process saw the sizes"
nshash-runtime --root "$ROOT" kill t38b KILL
assert_eq 0 $? "kill through the wrapper"
wait_status "$ROOT" t38b stopped
nshash-runtime --root "$ROOT" delete t38b
assert_eq 0 $? "delete through the wrapper"
unchanged b2 "after delete"
assert_eq "0 0" "$(pins) $(pin_files)" "after delete: no pin"
rm -f "$D/rootfs/out.txt"

# ---- exit statuses, runc
st() { "$@" >/dev/null 2>&1 </dev/null; echo $?; }
for c in "delete nosuch" "delete --force nosuch" "state nosuch" "kill nosuch KILL" "start nosuch" "ps nosuch"; do
	# shellcheck disable=SC2086
	assert_eq "$(st runc --root "$ROOT" $c)" "$(st nshash-runtime --root "$ROOT" $c)" "runc $c: the wrapper exits like runc"
done
assert_eq 1 "$(st nshash-runtime --root "$ROOT" delete nosuch)" "nshash-runtime --root R delete nosuch exits 1"
for code in 0 3 42; do
	CMD="exit $code"
	bundle "e$code" io.nshash.tcp=4096
	assert_eq "$code $code" "$(st runc --root "$ROOT" run -b "$D/e$code" t38e$code-p) $(st nshash-runtime --root "$ROOT" run -b "$D/e$code" t38e$code)" \
		"container exiting $code: runc and the wrapper both exit $code"
done
# killed_run RUNNER ID: status of a foreground run whose container is SIGKILLed
killed_run() {
	"$1" --root "$ROOT" run -b "$D/ek" "$2" </dev/null >/dev/null 2>&1 &
	local p=$!
	wait_status "$ROOT" "$2" running
	runc --root "$ROOT" kill "$2" KILL
	wait $p
	echo $?
}
CMD='sleep 300'
bundle ek io.nshash.tcp=4096
assert_eq "$(killed_run runc t38k-p)" "$(killed_run nshash-runtime t38k)" "container killed by SIGKILL: the wrapper exits like runc"
assert_eq "0 0" "$(pins) $(pin_files)" "no pin after the exit-status runs"

# ---- crun: exit statuses and --config / -f
engines_policy "$D/policy-crun.json" "{\"stateDir\": \"$S\", \"runtime\": \"crun\"}"
crun_w() { NSHASH_POLICY=$D/policy-crun.json engines_crun_ns nshash-runtime --root "$CROOT" "$@"; }
for c in "delete nosuch" "delete --force nosuch" "state nosuch" "kill nosuch KILL"; do
	# shellcheck disable=SC2086
	assert_eq "$(st engines_crun --root "$CROOT" $c)" "$(st crun_w $c)" "crun $c: the wrapper exits like crun"
done
CMD=$SIZES
bundle c1 io.nshash.tcp=256
jq '.annotations["io.nshash.tcp"] = "32768" | .annotations["io.nshash.udp"] = "4096"' "$D/c1.orig" >"$D/c1/alt.json"
cp -p "$D/c1/alt.json" "$D/alt.orig"
out=$(cd "$D/c1" && crun_w run --config alt.json t38c 2>"$D/err")
assert_eq "32768 4096" "$out" "crun run --config alt.json: the sizes of alt.json, not config.json's $(cat "$D/err")"
out=$(cd "$D/c1" && crun_w run -f alt.json t38c2 2>"$D/err")
assert_eq "32768 4096" "$out" "crun run -f alt.json: the same $(cat "$D/err")"
cmp -s "$D/alt.orig" "$D/c1/alt.json" && pass "--config file byte for byte" || fail "--config file changed"
mv "$D/c1/alt.json" "$D/alt.json"
unchanged c1 "config.json next to a --config file"
out=$(cd "$D/c1" && crun_w run t38c3 2>"$D/err")
assert_eq "256 $(cut -d' ' -f2 <<<"$GLOBAL")" "$out" "crun without --config: config.json's sizes"
assert_eq "0 0" "$(pins) $(pin_files)" "crun: no pin left"

# ---- a config an older nshash-runtime left behind
# (one line, io.nshash.pin, a netns path to a pin that is gone, its two hooks)
CMD=$SIZES
old_leftover() { # NAME: rewrite NAME's config.json as the old wrapper left it
	local b=$D/$1 pin=$1-0123abcd
	jq -c --arg p "$S/pins/$pin" --arg n "$pin" --arg h "$BUILD/nshash-hook" --arg pol "$P" '
		.annotations["io.nshash.pin"] = $n
		| (.linux.namespaces[] | select(.type == "network")).path = $p
		| .hooks.createRuntime += [{path: $h, args: [$h, "createRuntime", "--policy", $pol]}]
		| .hooks.poststop += [{path: $h, args: [$h, "poststop", "--policy", $pol]}]' "$D/$1.orig" >"$b/config.json"
}
bundle h1 io.nshash.tcp=4096 io.nshash.udp=1024
old_leftover h1
out=$(cd "$D/h1" && runc --root "$ROOT" run t38h0 2>&1)
assert_contains "$out" "no such file or directory" "the leftover breaks plain runc (the bug being healed)"
out=$(cd "$D/h1" && nshash-runtime --root "$ROOT" run t38h1 2>"$D/err")
assert_eq "4096 1024" "$out" "leftover with annotations: the wrapper sizes it afresh $(cat "$D/err")"
assert_eq "$(jq -S . "$D/h1.orig")" "$(jq -S . "$D/h1/config.json")" "leftover healed: the user's config (no pin, no path, no hooks)"
assert_contains "$(cat "$D/nshash.log")" "$D/h1/config.json" "the healing is logged with the file's path"
out=$(cd "$D/h1" && runc --root "$ROOT" run t38h2 2>&1)
assert_eq "$GLOBAL" "$out" "plain runc works on the healed bundle"
bundle h2 io.nshash.tcp=4096
old_leftover h2
# the user took the sizes out (and left the rest)
jq -c '.annotations |= with_entries(select(.key != "io.nshash.tcp"))' "$D/h2/config.json" >"$D/x" && mv "$D/x" "$D/h2/config.json"
jq '.annotations |= with_entries(select(.key != "io.nshash.tcp"))' "$D/h2.orig" >"$D/x" && mv "$D/x" "$D/h2.orig"
out=$(cd "$D/h2" && nshash-runtime --root "$ROOT" run t38h3 2>"$D/err")
assert_eq "$GLOBAL" "$out" "leftover whose sizes the user removed: runs on the shared tables $(cat "$D/err")"
assert_eq "$(jq -S . "$D/h2.orig")" "$(jq -S . "$D/h2/config.json")" "that leftover healed too"
bundle h3 io.nshash.tcp=8192
jq -c --arg p "$S/pins/gone-0123abcd" '(.linux.namespaces[] | select(.type == "network")).path = $p' "$D/h3.orig" >"$D/h3/config.json"
out=$(cd "$D/h3" && nshash-runtime --root "$ROOT" run t38h4 2>"$D/err")
assert_eq "8192 $(cut -d' ' -f2 <<<"$GLOBAL")" "$out" "a dead path under STATE/pins/ alone (other sizes asked): sized, no false 'already exists' $(cat "$D/err")"
assert_eq "0 0" "$(pins) $(pin_files)" "healing leaves no pin"

# ---- pins: none on the host, ever; SIGKILL; a pin an older version left
CMD='sleep 300'
bundle k1 io.nshash.tcp=4096
(cd "$D/k1" && exec setsid nshash-runtime --root "$ROOT" run t38k1 </dev/null >/dev/null 2>&1) &
wp=$!
wait_status "$ROOT" t38k1 running
assert_eq "0 0" "$(pins) $(pin_files)" "a foreground run: no pin on the host (only in the runtime's mount namespace)"
assert_eq "4096" "$(netns_sizes_of_pid "$(runc --root "$ROOT" state t38k1 | jq -r .pid)" | cut -d' ' -f1)" "the running container is sized"
kill -9 $wp
wait $wp 2>/dev/null
assert_eq "running 0 0" "$(runc --root "$ROOT" state t38k1 | jq -r .status) $(pins) $(pin_files)" \
	"the wrapper (runc run) SIGKILLed: the container runs on, nothing left on the host for gc"
# what an older wrapper left: a pin STATE/pins/ID-HASH of the container's netns
fnv() { # FNV-1a of $1, as the wrapper names pins for a --root
	local h=2166136261 i c
	for ((i = 0; i < ${#1}; i++)); do
		printf -v c '%d' "'${1:i:1}"
		h=$(((h ^ c) * 16777619 & 0xffffffff))
	done
	printf '%08x' $h
}
OLD=$S/pins/t38k1-$(fnv "$ROOT")
mkdir -p -m 0700 "$S/pins" && touch "$OLD" && mount --bind "/proc/$(runc --root "$ROOT" state t38k1 | jq -r .pid)/ns/net" "$OLD"
r1=$(st runc --root "$ROOT" delete t38k1)
r2=$(st nshash-runtime --root "$ROOT" delete t38k1)
assert_eq "$r1" "$r2" "delete of a running container: the wrapper exits like runc ($r1)"
assert_eq "1 running" "$(pins) $(runc --root "$ROOT" state t38k1 | jq -r .status)" "the failed delete kept the old pin: the running container uses it"
runc --root "$ROOT" kill t38k1 KILL
wait_status "$ROOT" t38k1 stopped
nshash-runtime --root "$ROOT" delete t38k1
assert_eq "0 0 0" "$? $(pins) $(pin_files)" "delete of the stopped container removed the old pin"
unchanged k1 "after a SIGKILLed foreground run"

# ---- SIGTERM while the runtime is slow to start
printf '#!/bin/sh\nsleep 3 & wait $!\nexec runc "$@"\n' >"$D/slow-runc"
chmod +x "$D/slow-runc"
engines_policy "$D/policy-slow.json" "{\"stateDir\": \"$S\", \"runtime\": \"$D/slow-runc\"}"
CMD=$SIZES
bundle t1 io.nshash.tcp=4096
# (setsid: a wrapper that signalled its process group would hit this script)
NSHASH_POLICY=$D/policy-slow.json setsid nshash-runtime --root "$ROOT" run -b "$D/t1" t38t1 </dev/null >/dev/null 2>&1 &
wp=$!
sleep 0.5
assert_eq "0 0" "$(pins) $(pin_files)" "the slow runtime is starting: no pin on the host"
kill -TERM $wp
wait $wp
assert_eq 143 $? "SIGTERM while the runtime starts: the wrapper ends as the runtime did (143)"
assert_eq "0 0" "$(pins) $(pin_files)" "SIGTERM while the runtime starts: no pin"
unchanged t1 "after SIGTERM while the runtime starts"

# ---- SIGTERM at random points (while sizing, too)
CMD='trap "exit 7" TERM; while :; do sleep 0.05; done'
bundle t2 io.nshash.tcp=4096 io.nshash.udp=512
bad=""
for i in $(seq 15); do
	setsid nshash-runtime --root "$ROOT" run -b "$D/t2" t38r$i </dev/null >/dev/null 2>&1 &
	wp=$!
	sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
	kill -TERM $wp 2>/dev/null
	for _ in $(seq 40); do kill -0 $wp 2>/dev/null || break; sleep 0.05; done
	# a SIGTERM that reached the container's init before its trap was set
	# is ignored (pid 1): then it is killed, as an engine would
	runc --root "$ROOT" kill t38r$i KILL >/dev/null 2>&1
	wait $wp
	rc=$?
	runc --root "$ROOT" delete -f t38r$i >/dev/null 2>&1
	# runc itself ends with 143, 137, 2 or the container's 7 here
	case $rc in 143 | 137 | 7 | 2) ;; *) bad+=" round $i: exit $rc;" ;; esac
	[ "$(pins) $(pin_files)" = "0 0" ] || bad+=" round $i: $(pins) pins;"
	cmp -s "$D/t2.orig" "$D/t2/config.json" || bad+=" round $i: config.json changed;"
done
assert_eq "" "$bad" "15 SIGTERMs at random points: exit as runc does, no pin, config.json unchanged"

# ---- parallel foreground runs of one bundle
CMD="$SIZES; sleep 0.3"
bundle p1 io.nshash.tcp=8192 io.nshash.udp=256
for i in 1 2 3 4 5 6; do
	(cd "$D/p1" && nshash-runtime --root "$ROOT" run t38p$i >"$D/p$i.out" 2>&1) &
done
wait
ok=0
for i in 1 2 3 4 5 6; do [ "$(cat "$D/p$i.out")" = "8192 256" ] && ok=$((ok + 1)); done
assert_eq 6 "$ok" "6 parallel runs of one bundle: each sized"
unchanged p1 "after 6 parallel runs"
assert_eq "0 0" "$(pins) $(pin_files)" "no pin after the parallel runs"

# ---- issue 19: the first sized start after a boot, when no state dir exists yet
CMD=$SIZES
bundle f1 io.nshash.tcp=4096 io.nshash.udp=512
FS=$D/fresh/a/state # $D/fresh does not exist
on_exit "cleanup_state_dir '$FS'"
engines_policy "$D/policy-fresh.json" "{\"stateDir\": \"$FS\", \"spares\": 0}"
out=$(cd "$D/f1" && NSHASH_POLICY=$D/policy-fresh.json nshash-runtime --root "$ROOT" run t38f1 2>"$D/err")
assert_eq "4096 512" "$out" "a state dir that does not exist yet: made by the first sized start $(cat "$D/err")"
assert_eq "700 700 700 700" "$(stat -c %a "$D/fresh" "$D/fresh/a" "$FS" "$FS/run" | tr '\n' ' ' | sed 's/ $//')" \
	"the state dir, its missing parents and run/: made 0700"
unchanged f1 "after the first start with a new state dir"
# The default path (/run/nshash, no stateDir in the policy) with /run empty,
# as after a boot: an empty tmpfs over /run in a private mount namespace, so
# the host's /run/nshash is never touched (whatever is made goes with it).
host_run_nshash() { stat -c '%a %i' /run/nshash 2>/dev/null || echo absent; }
HOST_RN=$(host_run_nshash)
engines_policy "$D/policy-default.json" '{"spares": 0}'
out=$(cd "$D/f1" && NSHASH_POLICY=$D/policy-default.json unshare -m --propagation private sh -c \
	"mount -t tmpfs -o mode=0755 nshash-t38 /run && nshash-runtime --root '$ROOT' run t38f2 &&
	 stat -c %a /run/nshash /run/nshash/run | tr '\n' ' '" 2>"$D/err")
assert_eq "4096 512
700 700 " "$out" "the default state dir, absent as after a boot: made 0700 by the first sized start $(cat "$D/err")"
assert_eq "$HOST_RN" "$(host_run_nshash)" "the host's /run/nshash untouched by that"

# ---- issue 19: config.json a symbolic link: refused, the bundle untouched
bundle s1 io.nshash.tcp=4096
mv "$D/s1/config.json" "$D/s1-real.json"
ln -s "$D/s1-real.json" "$D/s1/config.json"
out=$(nshash-runtime --root "$ROOT" run -b "$D/s1" t38s1 2>&1 </dev/null)
rc=$?
assert_eq 1 "$rc" "config.json a symbolic link: exit 1"
assert_contains "$out" "bundle $D/s1: read $D/s1/config.json: not a regular file (a symbolic link): nshash-runtime binds the sized config over the file the runtime reads and follows no symbolic link to it; make it a regular file" \
	"config.json a symbolic link: refused, saying what to do"
assert_eq "$D/s1-real.json" "$(readlink "$D/s1/config.json")" "config.json a symbolic link: the link unchanged"
cmp -s "$D/s1.orig" "$D/s1-real.json" && pass "config.json a symbolic link: its target byte for byte" ||
	fail "config.json a symbolic link: its target changed"
assert_eq 0 "$(awk -v d="$D/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)" "config.json a symbolic link: nothing mounted under the test dir"

# ---- issue 19: relative PATH entries are skipped by the runtime lookup
mkdir -p "$D/relbin" "$D/absbin"
printf '#!/bin/sh\necho RELATIVE\n' >"$D/relbin/nshash-t38-rt"
printf '#!/bin/sh\necho ABSOLUTE\n' >"$D/absbin/nshash-t38-rt"
chmod 0755 "$D/relbin/nshash-t38-rt" "$D/absbin/nshash-t38-rt"
engines_policy "$D/policy-rel.json" "{\"stateDir\": \"$S\", \"runtime\": \"nshash-t38-rt\"}"
out=$(cd "$D" && PATH=relbin:$D/absbin:$PATH NSHASH_POLICY=$D/policy-rel.json nshash-runtime list 2>&1)
assert_eq "ABSOLUTE" "$out" "a relative PATH entry before an absolute one: the absolute one's runtime runs"
out=$(cd "$D" && PATH=relbin:$PATH NSHASH_POLICY=$D/policy-rel.json nshash-runtime list 2>&1)
rc=$?
assert_eq 1 "$rc" "only a relative PATH entry has the runtime: exit 1"
assert_contains "$out" "runtime \"nshash-t38-rt\" (policy $D/policy-rel.json): not found in PATH (a relative PATH entry gives \"relbin/nshash-t38-rt\", which nshash-runtime does not use" \
	"only a relative PATH entry has the runtime: not run, and said so"
assert_not_contains "$out" "RELATIVE" "the relative entry's runtime never ran"
out=$(cd "$D/relbin" && PATH=:$D/absbin NSHASH_POLICY=$D/policy-rel.json "$BUILD/nshash-runtime" list 2>&1)
assert_eq "ABSOLUTE" "$out" "an empty PATH entry (the current directory) is skipped too"

# ---- issue 31: the runtime nshash-runtime becomes is the process it would
# be run directly (runtime-tools' process_rlimits fails now and then with
# ENOMEM adding a seccomp rule under its RLIMIT_AS, through runc alone as
# often as through the wrapper): a probe as the policy's runtime writes what
# its process has (limits, personality, signal mask and dispositions,
# capabilities, no_new_privs, seccomp, umask, cwd, cgroup, nice, oom score,
# open fds with their flags, environment); through the wrapper it must be
# what the probe has run directly with the same argv, but the mount
# namespace of a sized create (the wrapper's private one, by design)
cat >"$D/probe-rt" <<'PROBE'
#!/bin/sh
p=$$
{
	echo "argv: $*"
	echo "cwd: $(readlink /proc/$p/cwd)"
	echo "personality: $(cat /proc/$p/personality)"
	grep -E '^(Umask|SigBlk|SigIgn|SigCgt|NoNewPrivs|Seccomp|Cap[A-Za-z]*|Cpus_allowed_list|Threads):' /proc/$p/status
	cat /proc/$p/limits
	echo "oom_score_adj: $(cat /proc/$p/oom_score_adj) nice: $(cut -d' ' -f19 /proc/$p/stat)"
	echo "cgroup: $(cat /proc/$p/cgroup)"
	for f in /proc/$p/fd/*; do
		# (a pipe's inode left out: the one of this very $(...) differs per run)
		echo "fd ${f##*/} -> $(readlink "$f" | sed 's/^pipe:\[[0-9]*\]$/pipe/') flags $(awk '$1 == "flags:" {print $2}' "/proc/$p/fdinfo/${f##*/}")"
	done
	tr '\0' '\n' </proc/$p/environ | grep -v '^_=' | sort
	echo "mnt: $(readlink /proc/$p/ns/mnt)"
} >"$PROBE_OUT" 2>&1
PROBE
chmod 0755 "$D/probe-rt"
engines_policy "$D/policy-probe.json" "{\"stateDir\": \"$S\", \"runtime\": \"$D/probe-rt\"}"
bundle pr
probe() { # OUT ARGS...: the probe's view, run as ARGS (the wrapper or the probe itself)
	local out=$1
	shift
	rm -f "$D/probe.out"
	(cd "$D/pr" && PROBE_OUT=$D/probe.out NSHASH_POLICY=$D/policy-probe.json "$@" </dev/null)
	cp "$D/probe.out" "$out" 2>/dev/null || echo "no probe output" >"$out"
}
probe "$D/probe.direct" "$D/probe-rt" --root "$ROOT" create --bundle "$D/pr" t66probe
probe "$D/probe.plain" "$BUILD/nshash-runtime" --root "$ROOT" create --bundle "$D/pr" t66probe
probe "$D/probe.sized" "$BUILD/nshash-runtime" --nshash-tcp=4096 --nshash-udp=1024 --root "$ROOT" create --bundle "$D/pr" t66probe
assert_eq 1 "$(grep -c '^Max address space' "$D/probe.direct")" "the probe wrote what its process has"
assert_eq "" "$(diff "$D/probe.direct" "$D/probe.plain")" "create asking nothing: the runtime's process as when run directly"
assert_eq "" "$(diff <(grep -v '^mnt: ' "$D/probe.direct") <(grep -v '^mnt: ' "$D/probe.sized"))" \
	"a sized create: the runtime's process as when run directly, but its mount namespace"
assert_eq 1 "$(diff <(grep '^mnt: ' "$D/probe.direct") <(grep '^mnt: ' "$D/probe.sized") >/dev/null; echo $?)" \
	"... which is the wrapper's own (the probe can tell them apart)"
probe "$D/probe.direct" "$D/probe-rt" --root "$ROOT" state t66probe
probe "$D/probe.plain" "$BUILD/nshash-runtime" --root "$ROOT" state t66probe
assert_eq "" "$(diff "$D/probe.direct" "$D/probe.plain")" "another command (state): the runtime's process as when run directly"
assert_host_untouched
