#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The kernel's silent fallback: a netns whose table cannot be allocated gets
# the shared table and the creator is told nothing.  Provoke it with a
# cgroup-v1 memory cgroup of 32M with the OOM killer off (the table is
# vmalloc charged to the creator's cgroup): a 16Mi-entry TCP table (128 MiB)
# cannot fit.  nshash must say "kernel gave the shared table (...)
# (allocation failed?)", exit 1 and pin nothing — for a template built in
# the cgroup, a template that already exists, and the nested strategy.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/hard.sh"
test_needs root knobs jq

P=nshash-t15-$$
BIG=16777216
STATE_CTL=$(make_state_dir) # the control, outside the cgroup
STATE=$(make_state_dir)     # everything built inside the cgroup
on_exit "remove_run_netns_prefix $P-"

make_memcg "$P" 32M
CG=$MEMCG
assert_eq "oom_kill_disable 1" "$(head -1 "$CG/memory.oom_control")" "cgroup $CG: 32M, OOM killer off"

# Control: without the cgroup the same request is served, so what follows
# is the cgroup's doing, not the machine's.
out=$(nshash --state-dir "$STATE_CTL" create --tcp $BIG --json "$P-control" 2>&1)
assert_eq "0 $BIG true" "$? $(jq -r '"\(.tcp.entries) \(.tcp.own)"' <<<"$out" 2>/dev/null)" \
	"control: --tcp $BIG outside the cgroup gets its own $BIG-entry table"
nshash delete "$P-control"

# The kernel's own fallback line, counted after a timestamp (not by total
# count: a full ring buffer drops a line for every line added).
dmesg_last_ts() { dmesg 2>/dev/null | tail -1 | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }
dmesg_fallbacks_since() {
	dmesg 2>/dev/null | awk -v since="${1:-0}" -v want="Failed to allocate TCP ehash (entries: $BIG) for a netns" '
		match($0, /^\[ *[0-9.]+\]/) { ts = substr($0, 2, RLENGTH - 2) + 0; if (ts > since + 0 && index($0, want)) n++ }
		END { print n + 0 }'
}
dmesg_ok=false
dmesg >/dev/null 2>&1 && dmesg_ok=true

# in_cgroup_create LABEL nshash-create-args... (the last one is the name)
in_cgroup_create() {
	local label=$1 name=${*: -1} rc err fail_before since
	shift
	fail_before=$(cat "$CG/memory.failcnt")
	since=$(dmesg_last_ts)
	err=$(in_memcg nshash --state-dir "$STATE" create "$@" 2>&1 >/dev/null)
	rc=$?
	case $rc in
	1)
		pass "$label: exit 1"
		assert_eq "nshash: create netns /run/netns/$name: new network namespace: tcp size $BIG requested (effective $BIG), kernel gave the shared table ($GLOBAL_TCP) (allocation failed?)" \
			"$err" "$label: the exact fallback error"
		assert_contains "$err" "kernel gave the shared table ($GLOBAL_TCP) (allocation failed?)" \
			"$label: names the kernel's fallback"
		;;
	137)
		fail "$label: the kernel killed the creator (SIGKILL) instead of falling back to the shared table — the fallback could not be provoked (oom_control: $(tr '\n' ' ' <"$CG/memory.oom_control"))"
		;;
	124)
		fail "$label: the creator hung for 60 s (waiting on the cgroup's OOM?) and was killed by timeout"
		;;
	*)
		fail "$label: exit $rc (expected 1): $err"
		;;
	esac
	[ "$(cat "$CG/memory.failcnt")" -gt "$fail_before" ] && pass "$label: the cgroup's limit was hit (memory.failcnt rose)" ||
		fail "$label: memory.failcnt did not rise: the limit was not what refused the table"
	if $dmesg_ok; then
		[ "$(dmesg_fallbacks_since "$since")" -ge 1 ] && pass "$label: the kernel logged 'Failed to allocate TCP ehash (entries: $BIG)'" ||
			fail "$label: no new 'Failed to allocate TCP ehash (entries: $BIG)' in dmesg"
	fi
	assert_eq "" "$(ls /run/netns/"$name" 2>/dev/null)" "$label: no pin file left"
	assert_eq 0 "$(count_pins_under "/run/netns/$name")" "$label: nothing pinned"
	assert_eq "" "$(cat "$CG/cgroup.procs")" "$label: the creator is gone from the cgroup"
}

$dmesg_ok || echo "# dmesg is not readable here: the kernel's own fallback line is not checked"
in_cgroup_create "template, built in the cgroup" --tcp $BIG "$P-a"
assert_eq "$BIG 0" "$(nshash --state-dir "$STATE" list --json |
	jq -r ".[] | select(.kind == \"template\" and .name == \"tcp$BIG-udp0\" and .damaged == false) | \"\(.tcp.child) \(.udp.child)\"")" \
	"the template itself (a parent with no tables of its own) was built and is sound"
in_cgroup_create "template, already there" --tcp $BIG "$P-b"
in_cgroup_create "template, tcp and udp" --tcp $BIG --udp 65536 "$P-c"
in_cgroup_create "nested" --strategy nested --tcp $BIG "$P-d"

# The cgroup goes; the template it built serves the size outside it.
remove_memcg
assert_eq "" "$([ -d "$CG" ] && echo "still there")" "cgroup $CG removed"
out=$(nshash --state-dir "$STATE" create --tcp $BIG --json "$P-after" 2>&1)
assert_eq "0 $BIG true" "$? $(jq -r '"\(.tcp.entries) \(.tcp.own)"' <<<"$out" 2>/dev/null)" \
	"outside the cgroup the same template gives a real $BIG-entry table"
nshash delete "$P-after"
assert_eq "" "$(ls -d /run/netns/$P-* 2>/dev/null)" "no pin file of this test left"
assert_host_untouched
