#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The precreate hook hands its pin over without a createRuntime hook: a
# detached child of the hook waits (inotify on the pin, at most 8 of them;
# the others look once a second)
# until a process that is not in the host's mount namespace -- a container's
# init -- lives in the netns, then removes the pin.  A tool entering from the
# host does not count; a pin nobody joins goes after staleAge (60 s at
# least); a pin removed
# by someone else ends the child at once; the hook's caller never waits for
# the child (podman reads the hook's stdout to its end).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs nsenter unshare

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"staleAge\": 30}"
CONFIG='{"ociVersion":"1.0.2","hostname":"HOST","annotations":{"io.nshash.tcp":"4096","io.nshash.udp":"1024"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}'
watchers() { pgrep -f "/nshash-hook precreate --policy $P\$" | tr '\n' ' ' | sed 's/ $//'; }
on_exit 'for p in $(watchers); do kill -KILL $p; done 2>/dev/null'
on_exit 'kill -KILL $JOINER $TOOL 2>/dev/null'
# precreate HOST: the config on stdout as podman takes it (through a pipe
# that must reach its end), the pin's path in $PIN
precreate() {
	local out
	out=$(printf '%s' "${CONFIG/HOST/$1}" | timeout 20 "$BUILD/nshash-hook" precreate --policy "$P" | cat)
	PIN=$(jq -r '.linux.namespaces[0].path' <<<"$out")
}
pin_mounted() { [ "$(count_pins_under "$PIN")" = 1 ] && echo yes || echo no; }
wait_log() { for _ in $(seq 50); do grep -q "$1" "$D/nshash.log" && return 0; sleep 0.1; done; return 1; }

# --- nobody joins within staleAge: the child removes the pin itself.
# staleAge 1 is raised to its floor, 60 s (a runtime may take that long to
# open the pin): started first, with a policy and log of its own, checked
# last.
P1=$D/policy-stale1.json
engines_policy "$P1" "{\"stateDir\": \"$S\", \"logFile\": \"$D/stale1.log\", \"staleAge\": 1}"
on_exit 'for p in $(pgrep -f "/nshash-hook precreate --policy $P1\$"); do kill -KILL $p; done 2>/dev/null'
PIN_C=$(printf '%s' "${CONFIG/HOST/h43c}" | timeout 20 "$BUILD/nshash-hook" precreate --policy "$P1" | cat |
	jq -r '.linux.namespaces[0].path')
C_START=$(date +%s)
assert_eq 1 "$(count_pins_under "$PIN_C")" "a pin nobody is going to join"

# --- a tool from the host's mount namespace does not count; an init does
start=$(date +%s)
precreate h43a
assert_eq 1 $(($(date +%s) - start < 10)) "the hook's caller reads its stdout to the end at once (the child let go of it)"
assert_contains "$PIN" "$S/pins/oci-" "precreate pinned a sized netns"
assert_eq yes "$(pin_mounted)" "pin mounted"
w=$(watchers)
assert_eq 1 "$(wc -w <<<"$w")" "one detached child waits for the container: pid $w"
assert_eq "$w" "$(ps -o sid= -p "$w" | tr -d ' ')" "it leads a session of its own (no terminal, no job control signals)"
nsenter --net="$PIN" sleep 30 &
TOOL=$!
sleep 0.5
assert_eq "4096 1024" "$(netns_sizes_of_pid $TOOL)" "a host tool entered the sized netns"
assert_eq yes "$(pin_mounted)" "a process in the host's mount namespace does not take the pin away"
nsenter --net="$PIN" unshare -m sleep 30 &
JOINER=$!
wait_log "removed pin $PIN (pid $JOINER, the container's init, holds the netns)" &&
	pass "an init in a mount namespace of its own: the child removed the pin and logged its pid" ||
	fail "pin not handed over: $(tail -2 "$D/nshash.log")"
assert_eq no "$(pin_mounted)" "pin unmounted"
[ -e "$PIN" ] && fail "pin file left" || pass "pin file removed"
assert_eq "4096 1024" "$(netns_sizes_of_pid $JOINER)" "the init keeps its sized netns"
for _ in $(seq 20); do [ -z "$(watchers)" ] && break; sleep 0.1; done
assert_eq "" "$(watchers)" "the child is gone"
kill -KILL $JOINER $TOOL 2>/dev/null
wait $JOINER $TOOL 2>/dev/null

# --- the pin removed by someone else (gc, a createRuntime hook): the
# child ends at once, quietly
precreate h43b
assert_eq yes "$(pin_mounted)" "second pin"
nshash --state-dir "$S" delete "$PIN" >/dev/null 2>&1 || { umount "$PIN" && rm -f "$PIN"; }
for _ in $(seq 20); do [ -z "$(watchers)" ] && break; sleep 0.1; done
assert_eq "" "$(watchers)" "pin removed by someone else: the child ended"
assert_not_contains "$(grep h43b "$D/nshash.log")" "removed pin" "... without claiming the removal"

# --- podman's hook, then nshash-runtime as its runtime: the wrapper keeps
# the hook's pin without entering it (from its private mount namespace an
# entry looked like the container's init to the child, which removed the
# pin before runc opened it)
out=$(printf '%s' "${CONFIG/HOST/h43w}" | timeout 20 "$BUILD/nshash-hook" precreate --policy "$P" | cat)
PIN=$(jq -r '.linux.namespaces[0].path' <<<"$out")
assert_eq yes "$(pin_mounted)" "the hook's pin, its child waiting"
mkdir -p "$D/wb/rootfs" "$D/wroot"
printf '%s\n' "$out" >"$D/wb/config.json"
engines_policy "$D/policy-w.json" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"runtime\": \"/bin/true\"}"
NSHASH_POLICY=$D/policy-w.json timeout 20 strace -f -qq -e trace=setns -o "$D/w.strace" \
	"$BUILD/nshash-runtime" --root "$D/wroot" create --bundle "$D/wb" h43w >/dev/null 2>"$D/w.err"
assert_eq 0 "$?" "nshash-runtime create on the hook's config ($(cat "$D/w.err"))"
assert_eq "" "$(grep CLONE_NEWNET "$D/w.strace")" "the wrapper does not enter the hook's pin"
assert_contains "$(cat "$D/nshash.log")" "netns $PIN was sized by nshash: requested tcp=4096 udp=1024" "... and logs that it keeps it"
sleep 0.5
assert_eq yes "$(pin_mounted)" "the pin is still there for the runtime"
nshash --state-dir "$S" delete "$PIN" >/dev/null 2>&1
for _ in $(seq 20); do [ -z "$(watchers)" ] && break; sleep 0.1; done

# --- staleAge 0 is raised to its floor too: the child waits 60 s
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"staleAge\": 0}"
precreate h43z
sleep 1.5
assert_eq yes "$(pin_mounted)" "staleAge 0: the pin waits for its container"
nsenter --net="$PIN" unshare -m sleep 30 &
JOINER=$!
wait_log "removed pin $PIN (pid $JOINER, the container's init, holds the netns)" &&
	pass "staleAge 0: handed over when the init came" || fail "staleAge 0: $(tail -2 "$D/nshash.log")"
kill -KILL $JOINER 2>/dev/null
wait $JOINER 2>/dev/null

# --- the pin nobody joined (above): still there after staleAge 1, removed
# with a warning once 60 s have passed
assert_eq 1 "$(count_pins_under "$PIN_C")" "staleAge 1: the pin is still there after $(($(date +%s) - C_START)) s"
for _ in $(seq 900); do grep -q "hostname h43c: removed pin" "$D/stale1.log" && break; sleep 0.1; done
took=$(($(date +%s) - C_START))
assert_contains "$(cat "$D/stale1.log")" "hostname h43c: removed pin $PIN_C: no container was seen in its netns within 60 s (staleAge" \
	"nobody joined within staleAge (its floor, 60 s): removed, with a warning"
assert_eq 1 "$((took >= 59 && took <= 90))" "... after $took s"
assert_eq 0 "$(count_pins_under "$PIN_C")" "unmounted"
for _ in $(seq 20); do [ -z "$(pgrep -f "/nshash-hook precreate --policy $P1\$")" ] && break; sleep 0.1; done
assert_eq "" "$(pgrep -f "/nshash-hook precreate --policy $P1\$")" "the child is gone"

# --- many waiting at once (a burst whose runtime is slow or never comes):
# root's inotify instances (fs.inotify.max_user_instances, 128 by default,
# shared with every root daemon) are not used up: at most 8 waiters hold
# one, the others look once a second; one of those still hands over.
# (Checked every 10 starts: a build that takes one per waiter stops at 10,
# far from the host's limit.)
P2=$D/policy-burst.json
engines_policy "$P2" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"staleAge\": 300, \"spares\": 0}"
burst() { pgrep -f "/nshash-hook precreate --policy $P2\$"; }
on_exit 'for p in $(burst); do kill -KILL $p; done 2>/dev/null'
held() { local n=0 p; for p in $(burst); do n=$((n + $(find /proc/$p/fd -lname 'anon_inode:inotify' 2>/dev/null | wc -l))); done; echo $n; }
CONFIG2='{"ociVersion":"1.0.2","hostname":"HOST","annotations":{"io.nshash.tcp":"128"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}'
N=130 most=0
for i in $(seq $N); do
	out=$(printf '%s' "${CONFIG2/HOST/b43-$i}" | timeout 20 "$BUILD/nshash-hook" precreate --policy "$P2" | cat)
	PIN=$(jq -r '.linux.namespaces[0].path' <<<"$out")
	if [ $((i % 10)) = 0 ]; then
		h=$(held) && [ "$h" -gt "$most" ] && most=$h
		[ "$h" -gt 8 ] && break
	fi
done
assert_eq "$N $N" "$i $(burst | wc -l)" "$N hand-offs waiting at once"
assert_eq 8 "$most" "they hold 8 inotify instances between them, not one each"
assert_eq "" "$(grep -E 'b43-.*(inotify|Too many)' "$D/nshash.log")" "no start logged an inotify failure"
nsenter --net="$PIN" unshare -m sleep 30 &
JOINER=$!
wait_log "removed pin $PIN (pid $JOINER, the container's init, holds the netns)" &&
	pass "the last one (no inotify of its own) still hands over when its init comes" ||
	fail "the last waiter did not hand over: $(tail -2 "$D/nshash.log")"
kill -KILL $JOINER 2>/dev/null
wait $JOINER 2>/dev/null
for p in $(burst); do kill -KILL "$p"; done 2>/dev/null
for f in "$S"/pins/oci-*; do [ -e "$f" ] && { umount "$f" 2>/dev/null; rm -f "$f"; }; done
rm -f "$S"/pins/.handoff.*

assert_eq 0 "$(engines_pins_left "$S")" "no pin left"
assert_host_untouched
