#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Orphan container pins reclaimed without an operator (`nshash reclaim`,
# what every hook and plugin run does, and `nshash gc`): a pin under
# STATE/pins older than the stale age that no thread and no open fd holds
# is removed — a netns held only by a non-leader thread or only by an fd is
# kept; young pins are kept; the ledger follows.  Rate limit: with
# --interval, one run per interval, however many callers at once.
source "$(dirname "$0")/../lib/common.sh"
require_root
require_kernel_knobs
command -v jq >/dev/null || cannot_run "jq needed"
command -v setpriv >/dev/null || cannot_run "setpriv (util-linux) needed"

STATE=$(make_state_dir)
mkdir -p -m 0700 "$STATE/pins"
make_private_mount "$STATE/pins"
WORK=$(mktemp -d /tmp/nshash-t19.XXXXXX)
on_exit "rm -rf '$WORK'"
HOLD="python3 $TOP/tests/lib/hold-netns.py"
ns() { nshash --state-dir "$STATE" "$@"; }
pins() { ls "$STATE/pins" | tr '\n' ' ' | sed 's/ $//'; }
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

# ---------------------------------------------------------------- rate limit
rm -f "$STATE/reclaim.stamp"
for i in $(seq 20); do ns reclaim --interval 60 --stale-age 0 --json >"$WORK/r$i" 2>&1 & done
wait
assert_eq "1 19" "$(cat "$WORK"/r* | jq -r .ran | grep -c true) $(cat "$WORK"/r* | jq -r .ran | grep -c false)" \
	"20 callers at once with --interval 60: exactly one runs"
assert_eq "" "$(pins)" "that one run removed the last orphan"
ns create --tcp 1024 "$STATE/pins/later" >/dev/null
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
assert_host_untouched
