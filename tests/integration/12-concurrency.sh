#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Concurrency: 8 creators make 512 netns together with randomly mixed sizes
# (8 distinct pairs, both strategies, no template existing at start, half
# pinned under /run/netns next to `ip netns`, half in a private dir) while a
# loop of plain `ip netns add` runs beside them and a sampler reads the
# host's knobs.  Every sized netns must read back exactly its requested
# effective sizes, every plain one the shared global tables, the host's
# knobs 0 in every sample.  NSHASH_SEED=N replays a run.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/hard.sh"
test_needs root knobs jq
[ "$(host_knobs)" = "0 0" ] || cannot_run "the host's *_child_* knobs are '$(host_knobs)', not '0 0': plain netns would not share the global table"

WORKERS=8
PER_WORKER=64
PAIRS=(1:0 100:1000 4096:4096 65536:128 0:2048 3000:1 16384:65536 2:16)
SEED=${NSHASH_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "# seed $SEED (NSHASH_SEED=$SEED replays the same choices)"

P=nshash-t12-$$
STATE=$(make_state_dir)
PINDIR=$(make_state_dir) # private pins; removed with every mount under it
WORK=$(mktemp -d /tmp/nshash-t12.XXXXXX)
on_exit "rm -rf '$WORK'"
use_nshash_snapshot "$WORK"
on_exit "remove_run_netns_prefix $P-"
stop_helpers() { touch "$WORK/creators-done"; wait; }
on_exit stop_helpers

assert_eq "" "$(ls -A "$STATE")" "no template exists at the start (fresh state dir)"

creator() {
	local w=$1 i pair t u strategy pin err
	RANDOM=$((SEED + w * 7919))
	for ((i = 0; i < PER_WORKER; i++)); do
		pair=${PAIRS[RANDOM % ${#PAIRS[@]}]}
		t=${pair%:*} u=${pair#*:}
		strategy=template
		((RANDOM % 4 == 0)) && strategy=nested
		if ((w % 2)); then pin=$PINDIR/w$w-$i; else pin=/run/netns/$P-w$w-$i; fi
		if err=$(nshash --state-dir "$STATE" create --strategy $strategy --tcp "$t" --udp "$u" "$pin" 2>&1 >/dev/null); then
			echo "$pin $t $u $strategy" >>"$WORK/made.$w"
		else
			echo "$pin tcp=$t udp=$u $strategy: $err" >>"$WORK/failed.$w"
		fi
	done
}

# Plain `ip netns add` beside the creators, until they are done.
plain_loop() {
	local k=0
	while [ ! -e "$WORK/creators-done" ]; do
		if ip netns add "$P-plain-$k" 2>>"$WORK/plain-failed"; then
			echo "$P-plain-$k" >>"$WORK/plain"
		else
			echo "ip netns add $P-plain-$k failed" >>"$WORK/plain-failed"
		fi
		k=$((k + 1))
	done
}

# The host's knobs, read every ~2 ms (builtins only, no fork).
sampler() {
	local n=0 t u
	fifo_sleep_init "$WORK"
	while [ ! -e "$WORK/creators-done" ]; do
		t=$(</proc/sys/net/ipv4/tcp_child_ehash_entries) # no fork, whole value
		u=$(</proc/sys/net/ipv4/udp_child_hash_entries)
		[ "$t $u" = "0 0" ] || echo "sample $n: host knobs read '$t $u'" >>"$WORK/host-bad"
		n=$((n + 1))
		fifo_sleep 0.002
	done
	echo $n >"$WORK/samples"
}

sampler &
plain_loop &
start=$EPOCHREALTIME
pids=()
for ((w = 0; w < WORKERS; w++)); do
	creator $w &
	pids+=($!)
done
wait "${pids[@]}"
elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
# Keep the plain loop going a moment after the last creator, then stop.
touch "$WORK/creators-done"
wait
echo "# $((WORKERS * PER_WORKER)) creates by $WORKERS processes in ${elapsed}s"

# ---------------------------------------------------------------- every create succeeded
failed=$(cat "$WORK"/failed.* 2>/dev/null)
assert_eq "" "$(head -5 <<<"$failed")" "no create failed (first 5 failures shown)"
made=$(cat "$WORK"/made.* 2>/dev/null)
assert_eq $((WORKERS * PER_WORKER)) "$(grep -c . <<<"$made")" "$((WORKERS * PER_WORKER)) sized netns created"
pairs_used=$(awk '{print $2 ":" $3}' <<<"$made" | sort -u | wc -l)
[ "$pairs_used" -ge 4 ] && pass "$pairs_used distinct size pairs mixed (>= 4)" || fail "only $pairs_used distinct size pairs"
strategies=$(awk '{print $4}' <<<"$made" | sort -u | tr '\n' ' ')
assert_eq "nested template " "$strategies" "both strategies used"

# ---------------------------------------------------------------- every size exact
# Read back in bulk by tests/lib/netns-sizes.py (setns + /proc/sys), then
# compare each with its request.
read_back=$(awk '{print $1}' <<<"$made" | python3 "$TOP/tests/lib/netns-sizes.py")
checked=$(grep -c . <<<"$made")
# expected_raw in awk: one process for all of them.
bad=$(awk -v gt="$GLOBAL_TCP" -v gu="$GLOBAL_UDP" '
	function pow2(n, p) { p = 1; while (p < n) p *= 2; return p }
	NR == FNR { p = $1; $1 = ""; sub(/^ /, ""); got[p] = $0; next }
	{
		t = $2 > 0 ? pow2($2) : -gt
		u = $3 > 0 ? pow2($3) : -gu
		if ($3 > 0 && u < 128) u = 128
		if (got[$1] != t " " u) {
			n++
			if (n <= 5) printf "# %s (%s, tcp=%s udp=%s): wants \"%s %s\", reads \"%s\"\n", $1, $4, $2, $3, t, u, got[$1] > "/dev/stderr"
		}
	}
	END { print n + 0 }' <(echo "$read_back") <(echo "$made"))
assert_eq "0 of $checked" "$bad of $checked" "every sized netns reads exactly its effective sizes (setns + /proc/sys)"
# A sample also through nsenter, the way an operator would look.
for pin in $(awk 'NR % 64 == 1 {print $1}' <<<"$made"); do
	t=$(awk -v p="$pin" '$1 == p {print $2; exit}' <<<"$made")
	u=$(awk -v p="$pin" '$1 == p {print $3; exit}' <<<"$made")
	assert_eq "$(expected_raw "$t" "$u")" "$(raw_sizes "$pin")" "nsenter agrees on $pin (tcp=$t udp=$u)"
done

# The pins under /run/netns are what `ip netns` sees too.
one=$(grep -m1 "^/run/netns/$P-w" <<<"$made")
if [ -n "$one" ]; then
	read -r pin t u _ <<<"$one"
	assert_eq "$(expected_raw "$t" "$u")" "$(ip netns exec "${pin##*/}" sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"')" \
		"ip netns exec agrees on ${pin##*/}"
else
	fail "no pin under /run/netns to check with ip netns exec"
fi

# One template per effective pair the template strategy asked for, sound.
want_templates=$(awk '$4 == "template" {print $2, $3}' <<<"$made" | while read -r t u; do
	set -- $(expected_raw "$t" "$u")
	echo "tcp$(($1 < 0 ? 0 : $1))-udp$(($2 < 0 ? 0 : $2))"
done | sort -u | tr '\n' ' ')
list=$(nshash --state-dir "$STATE" list --json)
have_templates=$(jq -r '.[] | select(.kind == "template") | .name' <<<"$list" | sort | tr '\n' ' ')
assert_eq "$want_templates" "$have_templates" "exactly one template per effective pair used"
assert_eq "" "$(jq -r '.[] | select(.kind == "template" and (.damaged or (.pinned | not))) | .name' <<<"$list")" \
	"every template pinned and undamaged"

# ---------------------------------------------------------------- outsiders untouched
plain=$(cat "$WORK/plain" 2>/dev/null)
nplain=$(grep -c . <<<"$plain")
[ "$nplain" -ge 20 ] && pass "$nplain plain netns made by ip netns add meanwhile" ||
	fail "only $nplain plain netns made meanwhile (the loop did not run alongside?)"
assert_eq "" "$(head -3 "$WORK/plain-failed" 2>/dev/null)" "no ip netns add failed"
bad=$(sed 's|^|/run/netns/|' <<<"$plain" | python3 "$TOP/tests/lib/netns-sizes.py" |
	awk -v w="-$GLOBAL_TCP -$GLOBAL_UDP" '{p = $1; $1 = ""; sub(/^ /, "")} $0 != w {n++; if (n <= 5) print "# plain " p " reads " $0 > "/dev/stderr"} END {print n + 0}')
assert_eq "0 of $nplain" "$bad of $nplain" "every plain netns shares the global tables (-$GLOBAL_TCP -$GLOBAL_UDP)"
samples=$(cat "$WORK/samples" 2>/dev/null || echo 0)
[ "$samples" -ge 100 ] && pass "host knobs sampled $samples times during the run" || fail "host knobs sampled only $samples times"
assert_eq "" "$(head -3 "$WORK/host-bad" 2>/dev/null)" "host knobs read 0 0 in every sample"

# ---------------------------------------------------------------- cleanup, exact
# shellcheck disable=SC2046
nshash delete $(awk '{print $1}' <<<"$made")
assert_eq "0" "$?" "nshash delete of all $((WORKERS * PER_WORKER)) pins"
for n in $plain; do ip netns del "$n" || echo "# ip netns del $n failed"; done
assert_eq 0 "$(count_pins_under "$PINDIR")" "nothing mounted left in the private pin dir"
assert_eq "" "$(ls -A "$PINDIR")" "no file left in the private pin dir"
assert_eq "" "$(ls -d /run/netns/$P-* 2>/dev/null | head -3)" "no /run/netns/$P-* left"
out=$(nshash --state-dir "$STATE" gc --max-idle 0 --json)
assert_eq "$(wc -w <<<"$want_templates")" "$(jq .templates_removed <<<"$out")" "gc --max-idle 0 removes every template"
assert_eq 0 "$(count_pins_under "$STATE")" "nothing mounted left in the state dir"
assert_eq "0 0" "$(host_knobs)" "host knobs 0 0 at the end"
