# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers of the stress tests (12-15), sourced after common.sh: pins under
# /run/netns with a per-test prefix, what the kernel must report for a
# request, and reading a pinned netns's tables without nshash's own code.

GLOBAL_TCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries 2>/dev/null)
GLOBAL_TCP=${GLOBAL_TCP#-}
GLOBAL_UDP=$(cat /proc/sys/net/ipv4/udp_hash_entries 2>/dev/null)
GLOBAL_UDP=${GLOBAL_UDP#-}

# Unmount and remove every /run/netns/PREFIX* (cleanup of a test's names).
remove_run_netns_prefix() {
	local f
	for f in /run/netns/"$1"*; do
		[ -e "$f" ] || continue
		umount -l "$f" 2>/dev/null
		rm -f "$f"
	done
}

_next_pow2() {
	local p=1
	while ((p < $1)); do p=$((p * 2)); done
	echo $p
}
# expected_raw TCP UDP: the "tcp_ehash_entries udp_hash_entries" a netns
# created for that request must read (negative = the shared global table).
expected_raw() {
	local t=-$GLOBAL_TCP u=-$GLOBAL_UDP
	[ "$1" -gt 0 ] && t=$(_next_pow2 "$1")
	if [ "$2" -gt 0 ]; then
		u=$(_next_pow2 "$2")
		[ "$u" -lt 128 ] && u=128
	fi
	echo "$t $u"
}
# raw_sizes PIN: what the netns pinned there reads, by nsenter (not nshash).
raw_sizes() {
	# Not `read`: it reads a byte at a time, and /proc/sys integers answer
	# only a read at offset 0 ("-262144" reads as "-").  $(<f) forks nothing.
	nsenter --net="$1" bash -c 'echo "$(</proc/sys/net/ipv4/tcp_ehash_entries) $(</proc/sys/net/ipv4/udp_hash_entries)"' 2>&1
}
# A sleep that forks nothing: `fifo_sleep SECONDS` (fractions allowed) on
# a fifo nobody writes to, opened once by fifo_sleep_init DIR.
fifo_sleep_init() {
	mkfifo "$1/sleep.fifo" && exec 9<>"$1/sleep.fifo"
}
fifo_sleep() { read -r -t "$1" -u 9 _ || true; }
# median_us N CMD...: the median wall time of N runs of CMD, in µs, started
# the way a test starts its victims (in the background, then waited for;
# a shell function given as CMD should exec its command, as a victim is one
# process).
# Kill tests take their delay window from it: fixed windows let creators
# finish first on a quiet machine, or never on a loaded one.
median_us() {
	local n=$1 i s e
	shift
	local -a v=()
	for ((i = 0; i < n; i++)); do
		s=${EPOCHREALTIME/./}
		"$@" >/dev/null 2>&1 &
		wait $!
		e=${EPOCHREALTIME/./}
		v+=($((e - s)))
	done
	printf '%s\n' "${v[@]}" | sort -n | sed -n "$(((n + 1) / 2))p"
}
# Long tests run a copy of build/nshash taken at their start: a rebuild of
# the tree meanwhile (exit 126, "text file busy") must not fail a creator.
use_nshash_snapshot() {
	mkdir -p "$1/bin" && cp "$NSHASH" "$1/bin/nshash" || cannot_run "cannot copy $NSHASH"
	NSHASH=$1/bin/nshash
	export PATH="$1/bin:$PATH"
}
