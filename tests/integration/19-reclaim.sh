#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Orphan container pins reclaimed without an operator (`nshash reclaim`,
# what every hook and plugin run does, and `nshash gc`): a pin under
# STATE/pins older than the stale age that no thread and no open fd holds
# is removed — a netns held only by a non-leader thread or only by an fd is
# kept; young pins are kept; the ledger follows.  Rate limit: with
# --interval, one run per interval, however many callers at once.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs jq
command -v setpriv >/dev/null || cannot_run "setpriv (util-linux) needed"

STATE=$(make_state_dir)
mkdir -p -m 0700 "$STATE/pins"
make_private_mount "$STATE/pins"
WORK=$(mktemp -d /tmp/nshash-t19.XXXXXX)
on_exit "rm -rf '$WORK'"
HOLD="python3 $TOP/tests/lib/hold-netns.py"
ns() { nshash --state-dir "$STATE" "$@"; }
pins() { ls "$STATE/pins" | tr '\n' ' ' | sed 's/ $//'; }
mounted() { [ "$(count_pins_under "$1")" = 1 ] && echo yes || echo no; }
hold() { # MODE PIN... → starts a holder, waits until it holds
	local out=$WORK/hold.$RANDOM
	$HOLD "$@" >"$out" 2>&1 &
	HOLDER=$!
	on_exit "kill $HOLDER"
	for _ in $(seq 100); do grep -q ready "$out" && return 0; sleep 0.05; done
	fail "holder $* did not start: $(cat "$out")"
}

for p in orphan leader thread fd; do ns create --tcp 1024 --udp 128 "$STATE/pins/$p" >/dev/null || fail "create $p"; done
hold leader "$STATE/pins/leader"
LEADER=$HOLDER
hold thread "$STATE/pins/thread"
THREAD=$HOLDER
hold fd "$STATE/pins/fd"
FD=$HOLDER
assert_eq "fd leader orphan thread" "$(pins)" "four container pins"

out=$(ns reclaim --stale-age 3600 --json)
assert_eq "true 4 0" "$(jq -r '"\(.ran) \(.pins_seen) \(.orphans_removed)"' <<<"$out")" \
	"reclaim --stale-age 3600: looks at 4 pins, removes none (all young)"
# A pin's age is its claim's (the file under its mount), with a floor of
# 60 s that no --stale-age lowers: just made, all four are kept.
out=$(ns reclaim --stale-age 0 --json 2>"$WORK/note")
assert_eq "true 4 0" "$(jq -r '"\(.ran) \(.pins_seen) \(.orphans_removed)"' <<<"$out")" \
	"reclaim --stale-age 0: pins claimed just now are kept (the 60 s floor)"
assert_eq "nshash: --stale-age 0 is below the floor of 60 s: pins claimed less than 60 s ago are kept (a runtime may be about to open them)" \
	"$(cat "$WORK/note")" "... and it says so"
age_claims 120 "$STATE"/pins/*
out=$(ns reclaim --stale-age 0 --dry-run --json)
assert_eq "1 fd leader orphan thread" "$(jq -r .orphans_removed <<<"$out") $(pins)" "--dry-run: would remove 1, removes nothing"
# Without CAP_SYS_PTRACE other processes' fds are hidden: nothing is
# proven an orphan, nothing removed.
out=$(setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace nshash --state-dir "$STATE" reclaim --stale-age 0 --json)
assert_eq "0 true fd leader orphan thread" "$(jq -r '"\(.orphans_removed) \(.incomplete)"' <<<"$out") $(pins)" \
	"without CAP_SYS_PTRACE: incomplete, removes nothing"
out=$(ns reclaim --stale-age 0 --json)
assert_eq "true 1 false" "$(jq -r '"\(.ran) \(.orphans_removed) \(.incomplete)"' <<<"$out")" "reclaim --stale-age 0 removes exactly one pin"
assert_eq "fd leader thread" "$(pins)" "the orphan is gone; held by a process, by a thread only, by an fd only: kept"
assert_eq 0 "$(awk -v p="$STATE/pins/orphan" '$5 == p' /proc/self/mountinfo | wc -l)" "the orphan's mount is gone"
bytes=$((1024 * 8 + 128 * 64))
assert_eq "$((3 * bytes)) 3" "$(jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"' <<<"$out")" \
	"the ledger counts the 3 held netns"

kill $THREAD $FD
wait $THREAD $FD 2>/dev/null
out=$(ns gc --stale-age 0 --json)
assert_eq "2 leader" "$(jq -r .orphans_removed <<<"$out") $(pins)" "thread and fd holders gone: gc removes both pins"
assert_eq "$bytes 1" "$(jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"' <<<"$out")" "the ledger counts the one left"
kill $LEADER
wait $LEADER 2>/dev/null
usage() { ns gc --stale-age 0 --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }
assert_eq "0 0" "$(until_eq "0 0" 10 usage)" "the leader gone: gc removes its pin, nothing counts (within 10 s)"

# ---------------------------------------------------------------- a PID namespace of its own
# A reclaim in a PID namespace of its own (a node container without
# hostPID, a machine's container root) where the creation and the netns's
# holder run too: the kernel opens no nsfs file handle of another netns
# there (6.18: ESTALE, as for a dead one), so the handle must not be read
# as "gone": the record of a netns held by a process, its pin removed,
# counts; the holder gone, its record goes.  All in that namespace, with a
# state dir of its own.
S2=$(make_state_dir)
cat >"$WORK/pidns.sh" <<'EOS'
S=$1 W=$2 HOLD=$3
nshash --state-dir "$S" create --tcp 1024 --udp 128 "$W/pidns" >/dev/null || exit 9
$HOLD leader "$W/pidns" >"$W/pidns.hold" 2>&1 &
h=$!
for i in $(seq 100); do grep -q ready "$W/pidns.hold" && break; sleep 0.05; done
umount "$W/pidns" && rm "$W/pidns" || exit 9
nshash --state-dir "$S" gc --dry-run --json | jq -r '"sees_holders \(.sees_holders)"' >"$W/pidns.sees"
nshash --state-dir "$S" reclaim --json || exit 8
kill $h && wait $h
for i in $(seq 100); do
	out=$(nshash --state-dir "$S" reclaim --json) || exit 7
	[ "$(echo "$out" | jq .table_memory.netns)" = 0 ] && break
	sleep 0.1
done
echo "$out"
EOS
out=$(unshare -m --propagation private --pid --fork --mount-proc bash "$WORK/pidns.sh" "$S2" "$WORK" "$HOLD"; echo "rc=$?")
assert_contains "$out" "rc=0" "reclaim in a PID namespace of its own: exit 0"
assert_eq "sees_holders true" "$(cat "$WORK/pidns.sees")" "gc in the PID namespace the creations ran in sees every holder"
assert_eq "$bytes 1
0 0" "$(sed '/^rc=/,$d' <<<"$out" | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"')" \
	"... it counts the netns a process there holds, its pin gone (no nsfs handle opens there); the holder gone, its record goes"
# From a PID namespace the state dir's creators did not run in (an
# operator's `unshare --pid`, a node container without hostPID) a holder
# outside it is out of sight: nothing is proven unused there.  A sized
# netns whose pin is gone and a container pin old enough to be an orphan,
# each held by a process here: gc there keeps both (it used to drop the
# record and remove the pin), and an unmounted pin file too (a mount
# namespace out of sight may hold it).
S3=$(make_state_dir)
mkdir -p -m 0700 "$S3/pins"
make_private_mount "$S3/pins"
for p in gone orphan; do nshash --state-dir "$S3" create --tcp 1024 --udp 128 "$S3/pins/$p" >/dev/null || fail "create $p"; done
hold leader "$S3/pins/gone"
HELD_GONE=$HOLDER
hold leader "$S3/pins/orphan"
HELD_ORPHAN=$HOLDER
umount "$S3/pins/gone" && rm "$S3/pins/gone"
age_claims 120 "$S3/pins/orphan"
: >"$S3/pins/stale" && touch -d '-5 min' "$S3/pins/stale"
out=$(unshare --pid --fork --mount-proc nshash --state-dir "$S3" gc --stale-age 60 --json)
assert_eq "$((2 * bytes)) 2 0 yes 0" "$(jq -r '"\(.table_memory.bytes) \(.table_memory.netns) \(.orphans_removed)"' <<<"$out") $(mounted "$S3/pins/orphan") $(jq -r .stale_removed <<<"$out")" \
	"gc in another PID namespace: both held netns count, the held old pin and the pin file stay ($(readlink "$S3/pidns"))"
assert_eq false "$(jq -r .sees_holders <<<"$out")" "... its JSON says it did not see every holder"
err=$(unshare --pid --fork --mount-proc nshash --state-dir "$S3" gc --stale-age 60 --dry-run 2>&1 >/dev/null)
assert_eq "nshash: gc: from this PID namespace not every process is in sight (STATE/pidns names the one the state dir's creations ran in: another, several, or none yet): no pin was judged unused, no stale pin file removed, no ledger record dropped by a scan; run gc in the initial PID namespace (hostPID) or in the one the creations ran in" \
	"$err" "... and its text output says so on stderr, with what to do"
assert_eq true "$(nshash --state-dir "$S3" gc --stale-age 60 --dry-run --json | jq -r .sees_holders)" "gc in the initial PID namespace sees every holder"
out=$(unshare --pid --fork --mount-proc nshash --state-dir "$S3" reclaim --json)
assert_eq "true 0" "$(jq -r '"\(.incomplete) \(.orphans_removed)"' <<<"$out")" "reclaim there says it was incomplete"
kill $HELD_GONE $HELD_ORPHAN
wait $HELD_GONE $HELD_ORPHAN 2>/dev/null
out=$(nshash --state-dir "$S3" gc --stale-age 60 --json)
assert_eq "1 no 1" "$(jq -r .orphans_removed <<<"$out") $(mounted "$S3/pins/orphan") $(jq -r .stale_removed <<<"$out")" \
	"the holders gone, gc here removes the orphan and the pin file"
s3_usage() { nshash --state-dir "$S3" gc --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }
assert_eq "0 0" "$(until_eq "0 0" 10 s3_usage)" "... and the netns's records go (within 10 s)"
# There the /proc scan decides, and nsfs inode numbers are reused (lowest
# free, once the kernel has freed a netns): a netns pinned after a sized one
# was freed can have its number.  The scan must tell them apart by the netns
# id the record's file handle carries, or the dead record counts as long as
# the new netns lives.  The reuse made certain: the record of a sized netns
# now freed is given the inode number of a live one.  All in one PID
# namespace, the creator's too (a node in a container).
S4=$(make_state_dir)
cat >"$WORK/reuse.sh" <<'EOS'
S=$1 W=$2
nshash --state-dir "$S" create --tcp 1024 --udp 128 "$W/reuse" >/dev/null || exit 9
touch "$W/other" && unshare --net="$W/other" true || exit 9
old=$(stat -L -c %i "$W/reuse") new=$(stat -L -c %i "$W/other")
sed -i "/ ${old}@[0-9]* .*\/reuse\$/s/ ${old}@/ ${new}@/" "$S/ledger"
echo "records: $(grep -c " ${new}@.*/reuse\$" "$S/ledger")"
umount "$W/reuse" && rm "$W/reuse"
nshash --state-dir "$S" reclaim --json
umount "$W/other"
EOS
out=$(unshare -m --propagation private --pid --fork --mount-proc bash "$WORK/reuse.sh" "$S4" "$WORK")
assert_eq "records: 1" "$(head -1 <<<"$out")" "the record of reuse now names the inode number of a live netns"
assert_eq "0 0" "$(sed 1d <<<"$out" | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"')" \
	"a reclaim in that PID namespace drops it: the live netns with that number is not its (the handle's netns id)"

# ---------------------------------------------------------------- rate limit
rm -f "$STATE/reclaim.stamp"
for i in $(seq 20); do ns reclaim --interval 60 --stale-age 0 --json >"$WORK/r$i" 2>/dev/null & done
wait
assert_eq "1 19" "$(cat "$WORK"/r* | jq -r .ran | grep -c true) $(cat "$WORK"/r* | jq -r .ran | grep -c false)" \
	"20 callers at once with --interval 60: exactly one runs"
assert_eq "" "$(pins)" "that one run removed the last orphan"
ns create --tcp 1024 "$STATE/pins/later" >/dev/null
age_claims 120 "$STATE/pins/later"
assert_eq false "$(ns reclaim --interval 60 --stale-age 0 --json | jq -r .ran)" "within the interval: skipped"
assert_eq later "$(pins)" "a skipped run removes nothing"
touch -d '-61 seconds' "$STATE/reclaim.stamp"
assert_eq "true 1" "$(ns reclaim --interval 60 --stale-age 0 --json | jq -r '"\(.ran) \(.orphans_removed)"')" \
	"the interval passed: the next caller runs"
assert_eq "skipped: another reclaim ran less than 60 seconds ago or is running" \
	"$(ns reclaim --interval 60)" "the text output says why it skipped"

# ---------------------------------------------------------------- many pins, one pass
# 150 container pins, 149 held by one process's fds and 1 orphan: one
# reclaim removes exactly the orphan.
N=150
for i in $(seq $N); do ns create --tcp 128 "$STATE/pins/m$i" >/dev/null || { fail "create m$i"; break; }; done
held=()
for i in $(seq 2 $N); do held+=("$STATE/pins/m$i"); done
hold fd "${held[@]}"
age_claims 120 "$STATE"/pins/*
start=$(date +%s%N)
out=$(ns reclaim --stale-age 0 --json)
ms=$((($(date +%s%N) - start) / 1000000))
echo "# reclaim over $N pins ($((N - 1)) held by fds, 1 orphan): $ms ms"
assert_eq "$N 1" "$(jq -r '"\(.pins_seen) \(.orphans_removed)"' <<<"$out")" "$N pins seen, exactly 1 orphan removed"
assert_eq "" "$(ls "$STATE/pins" | grep -x m1)" "it was m1"
kill $HOLDER
wait $HOLDER 2>/dev/null
out=$(ns reclaim --stale-age 0 --json)
assert_eq "$((N - 1)) 0" "$(jq -r '"\(.orphans_removed) \(.table_memory.netns)"' <<<"$out")" \
	"the holder gone: the other $((N - 1)) go in one run, nothing left in the ledger"
assert_eq 0 "$(count_pins_under "$STATE/pins/")" "no pin mounted"

# ---------------------------------------------------------------- a pin's age is its own
# The precreate hook with the shipped defaults (staleAge 60, reclaimInterval
# 60, spares 1): container A's start leaves a spare; a minute later B of
# the same size takes it.  B's pin is a netns made a minute ago, but its
# pin was claimed just now: neither the hook's own reclaim nor the reclaim
# and gc right after take it.
HS=$(make_state_dir)
PH=$WORK/policy.json
printf '{"stateDir": "%s", "logFile": "%s/hook.log", "syslog": false}\n' "$HS" "$WORK" >"$PH"
CONFIG='{"ociVersion":"1.0.2","hostname":"HOST","annotations":{"io.nshash.tcp":"4096","io.nshash.udp":"1024"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}'
precreate() { printf '%s' "${CONFIG/HOST/$1}" | timeout 20 nshash-hook precreate --policy "$PH" | jq -r '.linux.namespaces[0].path'; }
watchers() { pgrep -f "nshash-hook precreate --policy $PH\$" | tr '\n' ' ' | sed 's/ $//'; }
on_exit 'for p in $(watchers); do kill -KILL $p; done'
pa=$(precreate h19a)
nsenter --net="$pa" unshare -m sleep 300 &
JA=$!
on_exit "kill -KILL $JA"
for _ in $(seq 100); do [ "$(mounted "$pa")" = no ] && [ -z "$(watchers)" ] && break; sleep 0.1; done
spares_settled "$HS"
assert_eq "no 1" "$(mounted "$pa") $(ls "$HS/spares" | grep -c '^tcp4096-udp1024\.')" \
	"A's init joined: its pin handed over, one spare of its size made"
echo "# waiting 62 s: the spare's netns becomes older than the default staleAge"
sleep 62
pb=$(precreate h19b)
assert_eq "yes 0" "$(mounted "$pb") $(ls "$HS/spares" | grep -c '^tcp4096-udp1024\.')" \
	"B took the spare (made 62 s ago): its pin survives the hook's own reclaim"
out=$(nshash --state-dir "$HS" reclaim --json)
assert_eq "true 0 yes" "$(jq -r '"\(.ran) \(.orphans_removed)"' <<<"$out") $(mounted "$pb")" \
	"nshash reclaim (default stale age) right after keeps it: claimed just now"
out=$(nshash --state-dir "$HS" gc --json)
assert_eq "0 yes" "$(jq -r .orphans_removed <<<"$out") $(mounted "$pb")" "nshash gc right after keeps it too"
# an orphan by its claim's age is still reclaimed: B's hook child killed
# (the engine died), nothing holds the netns
kill -KILL $(watchers)
out=$(nshash --state-dir "$HS" gc --json)
assert_eq "0 yes" "$(jq -r .orphans_removed <<<"$out") $(mounted "$pb")" \
	"nothing holds it, but claimed less than 60 s ago: gc keeps it"
age_claims 61 "$pb"
out=$(nshash --state-dir "$HS" gc --json)
assert_eq "1 no" "$(jq -r .orphans_removed <<<"$out") $(mounted "$pb")" "claimed 61 s ago, nothing holds it: gc reclaims it"
assert_eq "$pb (orphaned container pin)" "$(jq -r '.paths[] | "\(.path) (\(.why))"' <<<"$out")" "... named as an orphan"

# staleAge 0 in the policy is the floor, 60 s: a fresh pin outlives the
# hook's own reclaim (reclaimInterval 0: every run reclaims) and the next
# hook run's
printf '{"stateDir": "%s", "logFile": "%s/hook.log", "syslog": false, "staleAge": 0, "reclaimInterval": 0}\n' \
	"$HS" "$WORK" >"$PH"
pd=$(precreate h19d)
assert_eq yes "$(mounted "$pd")" "staleAge 0: the hook's own reclaim keeps its fresh pin"
pe=$(precreate h19e)
assert_eq "yes yes" "$(mounted "$pd") $(mounted "$pe")" "staleAge 0: the next hook run's reclaim keeps it too"
kill -KILL $(watchers)
assert_eq "0 yes yes" "$(nshash --state-dir "$HS" gc --stale-age 0 --json 2>/dev/null | jq -r .orphans_removed) $(mounted "$pd") $(mounted "$pe")" \
	"gc --stale-age 0: unheld pins claimed just now are kept"
nshash delete "$pd" "$pe" >/dev/null
kill -KILL $JA
wait $JA 2>/dev/null
assert_eq 0 "$(count_pins_under "$HS/pins/")" "no hook pin left"

# ---------------------------------------------------------------- another mount namespace's pin
# An engine in a mount namespace of its own (a slave of the host's) pins a
# netns there: the host sees an empty, unmounted file, old enough to look
# stale.  gc keeps it while it is a mount point in any mount namespace, and
# removes it once it is not.  foreign_pin FILE PATH-THERE [SETUP-THERE]: the
# engine reaches FILE as PATH-THERE (after SETUP-THERE) and pins it there.
foreign_pin() {
	local f=$1 there=$2 setup=${3:-true} h out
	unshare -m --propagation slave sh -c "$setup && nshash --state-dir '$STATE' create --tcp 1024 '$there' >/dev/null &&
		exec sleep 300" &
	h=$!
	on_exit "kill -KILL $h"
	for _ in $(seq 50); do nsenter -t $h -m findmnt -n "$there" >/dev/null 2>&1 && break; sleep 0.1; done
	touch -d '-5 min' "$f"
	assert_eq "0 nsfs" "$(count_pins_under "$f") $(nsenter -t $h -m findmnt -n -o FSTYPE "$there")" \
		"the engine's pin: mounted at $there in its namespace only, a 5 minutes old empty file here"
	[ "$there" = "$f" ] || assert_eq "" "$(nsenter -t $h -m awk -v p="$f" '$5 == p' /proc/self/mountinfo)" \
		"its mount table does not name $f"
	out=$(ns gc --json)
	assert_eq "0 nsfs" "$(jq -r .stale_removed <<<"$out") $(nsenter -t $h -m findmnt -n -o FSTYPE "$there")" \
		"gc keeps a pin file that is a mount point in another mount namespace (there: $there)"
	[ -e "$f" ] && pass "the file is still there" || fail "gc unlinked $f"
	kill -KILL $h
	wait $h 2>/dev/null
	out=$(ns gc --json)
	assert_eq "1 $f (stale pin file)" "$(jq -r .stale_removed <<<"$out") $(jq -r '.paths[] | "\(.path) (\(.why))"' <<<"$out")" \
		"that namespace gone: gc removes the stale file"
}
foreign_pin "$STATE/pins/f19" "$STATE/pins/f19"
# The same when that namespace reaches the pins by another path (a
# container that binds the host's state dir at a path of its own): its
# table names ALT/g19, not $STATE/pins/g19; gc finds it by where it lies in
# the file system (device and path there), not by its name.
ALT=$(mktemp -d /run/nshash-t19-alt.XXXXXX)
on_exit "rmdir $ALT 2>/dev/null"
foreign_pin "$STATE/pins/g19" "$ALT/g19" "mount --bind '$STATE/pins' '$ALT'"
rmdir "$ALT"

# A live pin this view shows as an empty file, under a bind of its directory
# over itself (podman binds /run/netns so): unlinking it is EBUSY.  gc keeps
# it and goes on with the rest (it used to stop there, exit 1).  All in a
# private mount namespace: nothing of it reaches the host.
F=$STATE/pins/b19
G=$STATE/pins/g19
out=$(unshare -m --propagation private sh -c "
	nshash --state-dir '$STATE' create --tcp 1024 '$F' >/dev/null || exit 9
	mount --bind '$STATE/pins' '$STATE/pins' || exit 9
	: >'$G'
	touch -d '-5 min' '$F' '$G'
	nshash --state-dir '$STATE' gc --json; echo \"rc=\$?\"
	findmnt -n -o FSTYPE '$STATE/pins/b19' | tail -1")
assert_contains "$out" "rc=0" "gc past a hidden live pin (EBUSY): exit 0 ($out)"
assert_eq "1 $G (stale pin file)" "$(sed "/^rc=/,\$d" <<<"$out" | jq -r '"\(.stale_removed) \(.paths[] | "\(.path) (\(.why))")"')" \
	"... it removes the next stale file, and not the hidden pin"
[ -e "$G" ] && fail "$G left" || pass "the stale file is gone"
rm -f "$F"
assert_host_untouched
