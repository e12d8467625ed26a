# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by every tests/integration/*.sh.  Each test script prints one
# "ok N - ..." / "not ok N - ..." line per assertion and ends with the
# summary line "N passed, N failed".  It exits non-zero when anything failed.
# Cleanup: register commands with `on_exit 'cmd'`; they run in reverse order
# whatever happens (failure, signal, set -e).
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NSHASH_BUILD:-$TOP/build} # NSHASH_BUILD: e.g. the sanitized tree
NSHASH=$BUILD/nshash
export PATH=$BUILD:$PATH
T_PASS=0
T_FAIL=0
T_N=0
T_NAME=$(basename "$0" .sh)
_on_exit=()

on_exit() { _on_exit+=("$1"); }
_run_exit() {
	local i
	for ((i = ${#_on_exit[@]} - 1; i >= 0; i--)); do eval "${_on_exit[$i]}" >/dev/null 2>&1 || true; done
}
_finish() {
	local rc=$?
	_run_exit
	_cleanup_state_dirs
	[ "$rc" -eq 77 ] && [ "$T_N" -eq 0 ] && { echo "$T_NAME: skipped: $T_SKIP"; exit 77; }
	echo "$T_NAME: $T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
	[ "$T_FAIL" -eq 0 ] && echo "not ok - $T_NAME exited with status $rc before finishing"
	exit 1
}
trap _finish EXIT
trap 'exit 130' INT TERM

pass() { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - $*"; }
fail() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
# A test that cannot run here: counted as failed (never a silent skip).
cannot_run() { fail "CANNOT RUN: $*"; exit 1; }
# A test that must not run here, said before any assertion: exit 77, which the
# runner shows as "NAME SKIP" with REASON.  Only for a test that another one
# runs in its place (90-fresh-machine's inner make check), never for a missing
# tool or kernel feature (cannot_run).
T_SKIP=
skip_test() { T_SKIP=$*; echo "# SKIP $T_SKIP"; exit 77; }

# assert_eq EXPECTED ACTUAL DESCRIPTION
assert_eq() {
	if [ "$1" == "$2" ]; then pass "$3"; else fail "$3 (expected '$1', got '$2')"; fi
}
# assert_contains HAYSTACK NEEDLE DESCRIPTION
assert_contains() {
	if [[ "$1" == *"$2"* ]]; then pass "$3"; else fail "$3 (no '$2' in: $1)"; fi
}
assert_not_contains() {
	if [[ "$1" != *"$2"* ]]; then pass "$3"; else fail "$3 (unexpected '$2' in: $1)"; fi
}
# assert_rc EXPECTED-STATUS DESCRIPTION -- command...
assert_rc() {
	local want=$1 desc=$2
	shift 3
	"$@" >/dev/null 2>&1
	local rc=$?
	if [ "$rc" -eq "$want" ]; then pass "$desc"; else fail "$desc (exit $rc, expected $want)"; fi
}

# assert_none DESCRIPTION N [PROBLEM...]: passes when no PROBLEM is given;
# else fails saying how many of N, each problem on a "#" line.
assert_none() {
	local desc=$1 n=$2
	shift 2
	if [ $# -eq 0 ]; then
		pass "$desc"
	else
		fail "$desc: $# of $n failed"
		printf '#   %s\n' "$@"
	fi
}

require_root() { [ "$(id -u)" = 0 ] || cannot_run "needs root"; }
require_kernel_knobs() {
	[ -e /proc/sys/net/ipv4/tcp_child_ehash_entries ] && [ -e /proc/sys/net/ipv4/udp_child_hash_entries ] ||
		cannot_run "kernel $(uname -r) lacks tcp_child_ehash_entries/udp_child_hash_entries (needs 6.2+)"
}

# Sizes of a netns as "TCP UDP" (raw *_hash_entries, negative = shared).
netns_sizes_of_pid() {
	nsenter -t "$1" -n sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"'
}
host_knobs() { echo "$(cat /proc/sys/net/ipv4/tcp_child_ehash_entries) $(cat /proc/sys/net/ipv4/udp_child_hash_entries)"; }
# Number of nsfs mounts under a directory (pins).
count_pins_under() { awk -v d="$1" '$9 == "nsfs" && index($5, d) == 1 {n++} END {print n+0}' /proc/self/mountinfo; }

# A private state dir for the library for this test; removed at exit with
# every pin under it.  Usable as STATE=$(make_state_dir): the cleanup is keyed
# on the test's pid ($$ is the same in a subshell), not registered there.
make_state_dir() {
	mktemp -d "/run/nshash-test-$$-XXXXXX"
}
_cleanup_state_dirs() {
	local d
	for d in /run/nshash-test-$$-*; do [ -d "$d" ] && cleanup_state_dir "$d"; done
}
# Make DIR a private, unbindable mount (undone by cleanup_state_dir): pins
# made under it stay ours — someone else's `mount --rbind /run ...` on this
# machine would otherwise copy them, and a copy keeps a deleted pin's netns
# (and its tables) alive.
make_private_mount() {
	mount --bind "$1" "$1" && mount --make-private --make-unbindable "$1" ||
		cannot_run "cannot make $1 a private mount"
}
# spares_settled STATE_DIR: the children making spares there (they hold
# STATE_DIR/spares/.lock while they work) are done, or 10 s passed.
spares_settled() {
	[ -e "$1/spares/.lock" ] || return 0
	timeout 10 flock "$1/spares/.lock" true
}
# age_claims SECONDS PIN...: make each pin's claim SECONDS older.  A pin's
# age (what gc and the reclaim go by) is the mtime of the file claimed under
# its mount, seen here through a non-recursive bind of its directory in a
# private mount namespace (nothing of it shows on the host).
age_claims() {
	unshare -m --propagation private sh -c 's=$1; shift; m=$(mktemp -d /tmp/nshash-age.XXXXXX) || exit 1
		for p; do mount --bind "${p%/*}" "$m" && touch -d "-$s seconds" "$m/${p##*/}"; umount "$m"; done
		rmdir "$m"' _ "$@"
}
# kernel_at_least MAJOR MINOR: the running kernel is that version or later.
kernel_at_least() { uname -r | awk -F. -v M="$1" -v m="$2" '{exit !($1 > M || ($1 == M && $2 + 0 >= m))}'; }
cleanup_state_dir() {
	local d=$1 m
	# A child making spares (after a container's start) finishes first.
	spares_settled "$d"
	# Every mount under it: pins (nsfs) and the shared bind mounts of pin dirs.
	awk -v d="$d" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$d"
}

# Host sysctls must be as found: record now, compare at the end.
HOST_KNOBS_AT_START=$(host_knobs 2>/dev/null || echo "")
assert_host_untouched() {
	assert_eq "$HOST_KNOBS_AT_START" "$(host_knobs)" "host *_child_* knobs unchanged ($HOST_KNOBS_AT_START)"
}

# A cgroup-v1 memory cgroup limited to LIMIT with the OOM killer off (the
# kernel's allocation fallback, docs/kernel.md), a child of our own memory cgroup
# so nothing escapes a limit we are under.  Sets MEMCG; removed at exit with
# any process still in it moved back out.  `in_memcg CMD...` runs CMD in it.
make_memcg() { # NAME LIMIT
	local root=/sys/fs/cgroup/memory rel
	[ -e "$root/memory.oom_control" ] || cannot_run "no cgroup-v1 memory controller at $root"
	rel=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
	MEMCG_PARENT=$root${rel%/}
	MEMCG=$MEMCG_PARENT/$1
	mkdir "$MEMCG" || cannot_run "cannot create memory cgroup $MEMCG"
	on_exit remove_memcg
	echo "$2" >"$MEMCG/memory.limit_in_bytes" || cannot_run "cannot limit $MEMCG to $2"
	echo 1 >"$MEMCG/memory.oom_control" || cannot_run "cannot turn the OOM killer off in $MEMCG"
}
remove_memcg() {
	local p
	[ -d "${MEMCG:-}" ] || return 0
	for p in $(cat "$MEMCG/cgroup.procs" 2>/dev/null); do echo "$p" >"$MEMCG_PARENT/cgroup.procs"; done
	rmdir "$MEMCG"
}
in_memcg() { timeout 60 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$MEMCG" "$@"; }
