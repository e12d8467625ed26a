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
# test_needs WHAT...: every test's first line after its sources, what it
# needs to run at all: root, knobs (the kernel's *_child_* knobs, Linux
# 6.2+), or a command (make check installs them: tools/ensure-deps test).
# The first one missing: CANNOT RUN with the reason.
test_needs() {
	local w
	for w in "$@"; do
		case $w in
		root) require_root ;;
		knobs) require_kernel_knobs ;;
		*) command -v "$w" >/dev/null || cannot_run "$w missing (tools/ensure-deps test installs it)" ;;
		esac
	done
}
require_kernel_knobs() {
	[ -e /proc/sys/net/ipv4/tcp_child_ehash_entries ] && [ -e /proc/sys/net/ipv4/udp_child_hash_entries ] ||
		cannot_run "kernel $(uname -r) lacks tcp_child_ehash_entries/udp_child_hash_entries (needs 6.2+)"
}

# Sizes of a netns as "TCP UDP" (raw *_hash_entries, negative = shared):
# netns_sizes NSENTER-ARGS, netns_sizes_of_pid PID, netns_sizes_at PIN.
netns_sizes() {
	nsenter "$@" sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"'
}
netns_sizes_of_pid() { netns_sizes -t "$1" -n; }
netns_sizes_at() { netns_sizes --net="$1"; }
# hold_sockets UDP TCP READY NSENTER-ARGS...: a process in a netns (nsenter's
# --net=PATH, or -t PID -n) holding UDP bound sockets and TCP loopback
# connections (tests/lib/hold-sockets.py), started and waited for: READY
# says "ready" (up to 60 s; the caller asserts it when it matters).  Its pid
# in HOLDER, killed at exit.
hold_sockets() {
	local udp=$1 tcp=$2 ready=$3
	shift 3
	rm -f "$ready"
	nsenter "$@" python3 "$TOP/tests/lib/hold-sockets.py" "$udp" "$tcp" "$ready" &
	HOLDER=$!
	on_exit "kill $HOLDER 2>/dev/null"
	for _ in $(seq 600); do [ -s "$ready" ] && break; sleep 0.1; done
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
# STATE_DIR/spares/.lock while they work) are done, or 10 s passed.  A
# child a start has just forked may not have made the lock yet: first the
# detached children of nshash's binaries (reparented to pid 1, keeping the
# binary's name) are waited for, up to 10 s.
spares_settled() {
	local i
	for i in $(seq 100); do
		ps -o comm= --ppid 1 | grep -qxE 'nshash|nshash-hook|nshash-runtime' || break
		sleep 0.1
	done
	[ -e "$1/spares/.lock" ] || return 0
	timeout 10 flock "$1/spares/.lock" true
}
# until_eq WANT SECONDS CMD...: CMD's output, run again every 0.1 s until it
# is WANT or SECONDS passed (a netns let go is freed by the kernel a moment
# later, in cleanup_net, and counts until then).
until_eq() {
	local want=$1 end=$((SECONDS + $2)) got
	shift 2
	while got=$("$@") && [ "$got" != "$want" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
	echo "$got"
}
# ledger_unpinned STATE_DIR: a "# note:" for each netns record of its table
# ledger whose pin is not mounted, with whoever holds that netns (processes
# with it as a thread's netns or as an fd, mount namespaces with it mounted).
ledger_unpinned() {
	awk '$1 == "N" { split($6, a, "@"); print a[1], $9 }' "$1/ledger" | while read -r ino pin; do
		mountpoint -q "$pin" 2>/dev/null && continue
		echo "# note: counted: net:[$ino] of $pin, held by:" \
			$(find /proc/[0-9]*/fd /proc/[0-9]*/task/*/ns/net -lname "net:\[$ino\]" 2>/dev/null | head -3) \
			$(grep -l "net:\[$ino\]" /proc/[0-9]*/mountinfo 2>/dev/null | head -3)
	done
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
# mounts_under DIR: the mount points at DIR and below it; umount_under DIR
# unmounts them, deepest first.
mounts_under() { awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo; }
umount_under() {
	local m
	mounts_under "$1" | sort -r | while read -r m; do umount -l "$m"; done
}
cleanup_state_dir() {
	local d=$1
	# A child making spares (after a container's start) finishes first.
	spares_settled "$d"
	# Every mount under it: pins (nsfs) and the shared bind mounts of pin dirs.
	umount_under "$d"
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

# ---------------------------------------------------------------- host firewall and links
# host_net_guard TAG...: at exit remove the iptables/ip6tables rules and
# chains and the links this test made, and nothing of anyone else's (other
# tests running at the same time, the machine's own podman, a node's CNI).
# A TAG names the test's objects: its networks' names (the engines write them
# into rule comments), subnets ("10.137.0.", "fd37:"), bridge names.  Later
# calls add tags to the one snapshot.  What goes:
#  - every rule that mentions a TAG or jumps to a chain that goes;
#  - per-object chains (named with a hex id, as engines name the chains of a
#    network or a container: CNI-1f5a..., CNI-DN-..., NETAVARK-1D87...) that
#    hold a rule mentioning a TAG or are jumped to by one;
#  - a shared chain of an engine (CNI-HOSTPORT-DNAT, NETAVARK_FORWARD, ...)
#    only when it appeared during the test and nobody uses it any more: no
#    per-object chain of that engine (same name prefix) is left in the table
#    and no rule in it names an address;
#  - an nftables table an engine made during the test (netavark 1.14's
#    `inet netavark`; not iptables-nft's own ip/ip6 filter, nat, ...) once it
#    holds nothing of any network: no address, no chain named after a subnet;
#  - links named TAG... (bridges), and links enslaved to them.
HOST_NET_TAGS=()
host_net_guard() {
	HOST_NET_TAGS+=("$@")
	[ -n "${_host_net_snapshot:-}" ] && return 0
	local ipt t
	_host_net_snapshot=" "
	for ipt in iptables ip6tables; do
		for t in filter nat mangle; do
			_host_net_snapshot+="$(_host_net_chains "$ipt" "$t" | sed "s/^/$ipt:$t:/" | tr '\n' ' ')"
		done
	done
	command -v nft >/dev/null && _host_net_snapshot+="$(nft list tables 2>/dev/null | awk '{print "nft:" $2 ":" $3}' | tr '\n' ' ')"
	on_exit host_net_cleanup
}
_host_net_chains() { "$1" -w -t "$2" -S 2>/dev/null | awk '$1 == "-N" {print $2}'; }
_host_net_private() { [[ "$1" =~ [-_][0-9A-Fa-f]{8,}$ ]]; }
# rules of TABLE (iptables -S lines) mentioning a tag
_host_net_tagged() {
	local tag pats=()
	for tag in "${HOST_NET_TAGS[@]}"; do pats+=(-e "$tag"); done
	[ ${#pats[@]} -gt 0 ] && grep -F "${pats[@]}" <<<"$1"
}
host_net_cleanup() {
	local ipt t rules c mine more rule l links=() fam shared=() private
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null || continue
		for t in filter nat mangle; do
			rules=$("$ipt" -w -t "$t" -S 2>/dev/null) || continue
			# the test's per-object chains: holding or jumped to by a tagged rule
			mine=" "
			while read -r rule; do
				[ -n "$rule" ] || continue
				read -r _ c _ <<<"$rule"
				[[ "$rule" =~ -[jg]\ ([^ ]+) ]] && l=${BASH_REMATCH[1]} || l=
				for c in "$c" "$l"; do
					_host_net_private "$c" && [[ "$mine" != *" $c "* ]] && mine+="$c "
				done
			done <<<"$(_host_net_tagged "$rules" | grep '^-A ')"
			# ... and the per-object chains those jump to
			more=1
			while [ -n "$more" ]; do
				more=
				for c in $mine; do
					for l in $(grep -E -- "^-A $c " <<<"$rules" | grep -oE -- '-[jg] [^ ]+' | awk '{print $2}'); do
						_host_net_private "$l" && [[ "$mine" != *" $l "* ]] && mine+="$l " && more=1
					done
				done
			done
			# rules outside those chains that are the test's: tagged, or jumping into them
			{
				_host_net_tagged "$rules" | grep '^-A '
				for c in $mine; do grep -E -- "^-A .* -[jg] $c( |\$)" <<<"$rules"; done
			} | sort -u | while read -r rule; do
				read -r _ c _ <<<"$rule"
				[[ "$mine" == *" $c "* ]] && continue
				while eval "$ipt -w -t $t ${rule/-A/-D}" 2>/dev/null; do :; done
			done
			for c in $mine; do "$ipt" -w -t "$t" -F "$c"; done
			for c in $mine; do "$ipt" -w -t "$t" -X "$c"; done
			# shared chains that appeared during the test and nobody uses now
			rules=$("$ipt" -w -t "$t" -S 2>/dev/null)
			shared=() private=" "
			for c in $(awk '$1 == "-N" {print $2}' <<<"$rules"); do _host_net_private "$c" && private+="$c "; done
			for c in $(awk '$1 == "-N" {print $2}' <<<"$rules"); do
				[[ "$_host_net_snapshot" == *" $ipt:$t:$c "* ]] && continue
				_host_net_private "$c" && continue
				fam=${c%%[-_]*}
				[[ " $private " == *" $fam"[-_]* ]] && continue
				[[ "$(grep -E -- "^-A $c " <<<"$rules")" =~ ([0-9]+\.){3}[0-9]+|[0-9a-f]*:[0-9a-f]*:[0-9a-f:]*/[0-9]+ ]] && continue
				shared+=("$c")
			done
			for c in "${shared[@]}"; do
				grep -E -- "^-A [^ ]+ .*-[jg] $c( |\$)" <<<"$rules" | while read -r rule; do
					while eval "$ipt -w -t $t ${rule/-A/-D}" 2>/dev/null; do :; done
				done
			done
			for c in "${shared[@]}"; do "$ipt" -w -t "$t" -F "$c"; done
			for c in "${shared[@]}"; do "$ipt" -w -t "$t" -X "$c"; done
		done
	done
	# nftables tables an engine made meanwhile, once no network's rules are left in them
	command -v nft >/dev/null && nft list tables 2>/dev/null | while read -r _ fam c; do
		[[ "$_host_net_snapshot" == *" nft:$fam:$c "* ]] && continue
		[[ "$fam" =~ ^(ip|ip6)$ && "$c" =~ ^(filter|nat|mangle|raw|security)$ ]] && continue
		[[ "$(nft list table "$fam" "$c" 2>/dev/null)" =~ ([0-9]+\.){3}[0-9]+|[0-9a-f]*:[0-9a-f]*:[0-9a-f:]*/[0-9]+|_[0-9]+_[0-9]+_[0-9]+_[0-9]+_ ]] && continue
		nft delete table "$fam" "$c"
	done
	# links: named after a tag, and what is enslaved to them
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
		for c in "${HOST_NET_TAGS[@]}"; do
			[[ "$c" =~ ^[A-Za-z] ]] && [[ "$l" == "$c"* ]] && links+=("$l") && break
		done
	done
	for l in "${links[@]}"; do
		ip -o link show master "$l" 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | xargs -r -n1 ip link del 2>/dev/null
		ip link del "$l" 2>/dev/null
	done
	return 0
}
