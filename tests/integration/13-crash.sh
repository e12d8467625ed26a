#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Crash: 300 creators killed with SIGKILL at random moments — both strategies,
# existing templates, templates being built for the first time, damaged
# templates being rebuilt — must leave no pin that claims a size it does
# not have, no held lock, no changed host sysctl.  Unmounted pin files are
# allowed only as stale files that `nshash gc --stale-age 0` removes; after
# all that the next creates and `nshash gc` succeed.
# NSHASH_SEED=N replays a run; NSHASH_CRASH_ITERATIONS (default 300).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/hard.sh"
test_needs root knobs jq flock

ITERATIONS=${NSHASH_CRASH_ITERATIONS:-300}
SEED=${NSHASH_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
echo "# seed $SEED (NSHASH_SEED=$SEED replays the same choices)"
POOL=(4096:4096 100:1000 65536:128) # pairs whose templates exist after a while
STATE=$(make_state_dir)
# The pins live outside the state dir: its pins/ is the container pins' dir,
# whose unused pins `nshash gc` removes as orphans.
PINS=$(mktemp -d /run/nshash-t13-pins.XXXXXX)
on_exit "cleanup_state_dir '$PINS'"
WORK=$(mktemp -d /tmp/nshash-t13.XXXXXX)
on_exit "rm -rf '$WORK'"
use_nshash_snapshot "$WORK"
fifo_sleep_init "$WORK"
P=nshash-t13-$$
on_exit "remove_run_netns_prefix $P-"
VERIFY="python3 $TOP/tests/lib/netns-sizes.py"
template_of() { # TCP UDP → template name (effective sizes)
	local e
	e=($(expected_raw "$1" "$2"))
	echo "tcp$((e[0] < 0 ? 0 : e[0]))-udp$((e[1] < 0 ? 0 : e[1]))"
}
lock_free() { flock -n -E 99 "$STATE/lock" true; }

# Kill delays: uniform in 0..D µs, D starting at twice the median creation
# measured here (a pool pair, its template built).  Machines and load
# differ, so D adapts: a creator that finished first shrinks it (not below
# half that median: a fixed 2 ms floor let most creators finish first on a
# quiet machine), a killed one stretches it — about half are killed, and the
# kills land in every phase, from exec to the final bind.
cal() { exec nshash --state-dir "$STATE" create --tcp 4096 --udp 4096 "$PINS/cal$BASHPID"; }
cal_us=$(median_us 7 cal)
nshash --state-dir "$STATE" delete "$PINS"/cal* >/dev/null 2>&1
min_delay_us=$((cal_us / 2 > 100 ? cal_us / 2 : 100))
max_delay_us=$((2 * cal_us > min_delay_us ? 2 * cal_us : min_delay_us)) max_seen_us=0
echo "# a creation takes ${cal_us} µs here (median of 7)"
killed=0 completed=0 first_build_kills=0 mid_build_kills=0 rebuild_kills=0 host_bad=0 lock_held=0 errors=()
: >"$WORK/requests"
for ((i = 0; i < ITERATIONS; i++)); do
	from_pool=false
	if ((RANDOM % 2)); then
		pair=${POOL[RANDOM % ${#POOL[@]}]}
		t=${pair%:*} u=${pair#*:} from_pool=true
	else # a pair never seen: its template is built by this very create
		t=$(((1 << (RANDOM % 17)) + RANDOM % 3)) u=$((RANDOM % 8 ? (1 << (RANDOM % 17)) - RANDOM % 2 : 0))
	fi
	strategy=template
	((i % 3 == 2)) && strategy=nested
	tname=$(template_of "$t" "$u")
	fresh=false rebuild=false
	[ "$strategy" = template ] && [ ! -e "$STATE/templates/$tname" ] && fresh=true
	# Now and then someone damages a pool template: the next create for it
	# rebuilds it under the lock, and may be killed doing so.
	if $from_pool && [ "$strategy" = template ] && ((i % 10 == 7)) && [ -e "$STATE/templates/$tname" ]; then
		nsenter --net="$STATE/templates/$tname" sh -c 'echo 7 >/proc/sys/net/ipv4/tcp_child_ehash_entries' 2>/dev/null &&
			rebuild=true
	fi
	pin=$PINS/c$i
	# the delay first: a $(...) after the start would fork on the clock
	delay=$((RANDOM * 32768 + RANDOM))
	delay=$((delay % (max_delay_us + 1)))
	printf -v delay_s '%d.%06d' $((delay / 1000000)) $((delay % 1000000))
	nshash --state-dir "$STATE" create --strategy $strategy --tcp "$t" --udp "$u" "$pin" >/dev/null 2>"$WORK/err" &
	pid=$!
	fifo_sleep "$delay_s"
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null # (no "Killed" job notice)
	rc=$?
	echo "$pin $t $u $strategy $rc" >>"$WORK/requests"
	case $rc in
	137)
		killed=$((killed + 1))
		if $fresh; then
			first_build_kills=$((first_build_kills + 1))
			# Its template not mounted now: killed before or during the build.
			awk -v p="$STATE/templates/$tname" '$9 == "nsfs" && $5 == p {f = 1} END {exit !f}' /proc/self/mountinfo ||
				mid_build_kills=$((mid_build_kills + 1))
		fi
		$rebuild && rebuild_kills=$((rebuild_kills + 1))
		;;
	0) completed=$((completed + 1)) ;;
	*) errors+=("c$i ($strategy tcp=$t udp=$u): exit $rc: $(cat "$WORK/err")") ;;
	esac
	if [ $rc = 0 ]; then
		max_delay_us=$((max_delay_us * 19 / 20))
		[ $max_delay_us -lt $min_delay_us ] && max_delay_us=$min_delay_us
	elif [ $rc = 137 ] && [ $max_delay_us -lt 100000 ]; then
		max_delay_us=$((max_delay_us * 21 / 20))
	fi
	[ $max_delay_us -gt $max_seen_us ] && max_seen_us=$max_delay_us
	[ "$(</proc/sys/net/ipv4/tcp_child_ehash_entries) $(</proc/sys/net/ipv4/udp_child_hash_entries)" = "0 0" ] ||
		host_bad=$((host_bad + 1))
	lock_free || lock_held=$((lock_held + 1))
done
echo "# kill delays were uniform in 0..D µs, D between $min_delay_us and $max_seen_us (ending at $max_delay_us)"
echo "# $ITERATIONS creators: $killed killed (of them $first_build_kills during a create that had to build its template first — $mid_build_kills of those before the template was bound — and $rebuild_kills while a damaged one was rebuilt), $completed finished first"

assert_eq "" "${errors[*]:0:3}" "no creator failed on what an earlier one left behind (first 3 shown)"
[ $killed -ge $((ITERATIONS / 4)) ] && pass "$killed creators killed mid-way (>= 1/4)" || fail "only $killed of $ITERATIONS killed: kills did not land inside the creators"
[ $completed -ge 1 ] && pass "$completed creators finished before the kill (kills span the whole run)" ||
	fail "no creator ever finished: kill delays too short to reach the end"
[ $first_build_kills -ge 5 ] && pass "$first_build_kills kills while a template was first being built (>= 5)" ||
	fail "only $first_build_kills kills during first builds"
assert_eq 0 "$host_bad" "host knobs 0 0 after every kill"
assert_eq 0 "$lock_held" "the state lock free after every kill (flock -n)"

# ---------------------------------------------------------------- no pin claims a size it lacks
mounted_pins() { awk -v d="$1/" '$9 == "nsfs" && index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort; }
pins=$(mounted_pins "$PINS")
npins=$(grep -c . <<<"$pins")
bad=$($VERIFY <<<"$pins" | awk -v gt="$GLOBAL_TCP" -v gu="$GLOBAL_UDP" '
	function pow2(n, p) { p = 1; while (p < n) p *= 2; return p }
	NR == FNR { want_t[$1] = $2 > 0 ? pow2($2) : -gt
		    u = $3 > 0 ? pow2($3) : -gu; if ($3 > 0 && u < 128) u = 128; want_u[$1] = u; next }
	{ if (!($1 in want_t) || $2 != want_t[$1] || $3 != want_u[$1]) {
		n++; if (n <= 5) print "# pin " $1 " reads " $2 " " $3 ", wants " want_t[$1] " " want_u[$1] > "/dev/stderr" } }
	END { print n + 0 }' "$WORK/requests" -)
assert_eq "0 of $npins" "$bad of $npins" "every mounted pin ($npins) has exactly the sizes it was created for"
killed_but_pinned=$(awk '$5 == 137 {print $1}' "$WORK/requests" | sort | comm -12 - <(echo "$pins") | wc -l)
echo "# $killed_but_pinned creators were killed after their bind mount (their pins are complete and counted above)"

# Templates: repair the ones damaged on purpose (one create per pool pair),
# then every template that is mounted must give exactly its name's sizes.
for pair in "${POOL[@]}"; do
	nshash --state-dir "$STATE" create --tcp "${pair%:*}" --udp "${pair#*:}" "$PINS/repair-${pair/:/-}" >/dev/null ||
		fail "create $pair after the crashes"
	echo "$PINS/repair-${pair/:/-} ${pair%:*} ${pair#*:} template 0" >>"$WORK/requests"
done
templates=$(mounted_pins "$STATE/templates")
ntempl=$(grep -c . <<<"$templates")
bad=$($VERIFY tcp_child_ehash_entries udp_child_hash_entries <<<"$templates" |
	awk '{ n = split($1, a, "/"); want = a[n]; got = "tcp" $2 "-udp" $3
	       if (want != got) { b++; if (b <= 5) print "# template " $1 " gives " got > "/dev/stderr" } }
	     END { print b + 0 }')
assert_eq "0 of $ntempl" "$bad of $ntempl" "every mounted template ($ntempl) gives exactly the sizes in its name"

# ---------------------------------------------------------------- leftovers are stale files gc removes
unmounted() { # files under pins/ and templates/ that are not mounted pins
	find "$PINS" "$STATE/templates" -type f ! -name '*.used' 2>/dev/null | sort |
		comm -23 - <( (mounted_pins "$PINS"; mounted_pins "$STATE/templates") | sort)
}
left=$(unmounted)
nleft=$(grep -c . <<<"$left")
echo "# $nleft unmounted pin files left by killed creators ($(grep -c "^$STATE/templates/" <<<"$left") of them template names)"
stray=$(find "$STATE" -mindepth 1 \( -path "$STATE/templates" -o -path "$STATE/templates/*" -o -path "$STATE/lock" \
	-o -path "$STATE/ledger" -o -path "$STATE/pidns" \) -prune -o -print)
assert_eq "" "$stray" "nothing in the state dir but templates/, the lock, the table ledger and the creators' PID namespace"
assert_eq "" "$(grep -v -e "^$PINS/c[0-9]*\$" -e "^$STATE/templates/tcp[0-9]*-udp[0-9]*\$" <<<"$left")" \
	"every leftover file is a pin or template name a creator was claiming"
assert_eq "" "$(for f in $left; do [ -s "$f" ] && echo "$f"; done)" "every leftover file is empty (a claimed name, never data)"
before_gc="$(mounted_pins "$PINS" | grep -c .) $(mounted_pins "$STATE/templates" | grep -c .)"
# claimed longer ago than the 60 s floor of any --stale-age
for f in $left; do touch -d '-2 min' "$f"; done
# gc in a private mount namespace where /run/netns is the test's pin dir:
# --stale-age 0 would otherwise race any other `ip netns add` on this host
# between its file and its mount.  What others keep in /run/netns is put
# there too: a symlink to a netns (a common way to show a container's netns
# to `ip netns`) and a file with data; gc must leave both and not fail.
gc_json=$(unshare -m --propagation private sh -c 'mkdir -p /run/netns && mount --rbind "$2" /run/netns &&
	ln -s /proc/1/ns/net /run/netns/foreign-link && echo data >/run/netns/foreign-file &&
	touch -h -d "-2 hours" /run/netns/foreign-link /run/netns/foreign-file && w=$1 && shift 2 &&
	"$@"; rc=$?; ls /run/netns | grep foreign- >"$w/foreign-left"; rm -f /run/netns/foreign-*; exit $rc' _ "$WORK" "$PINS" \
	nshash --state-dir "$STATE" gc --stale-age 0 --json)
assert_eq "0 $nleft" "$? $(jq .stale_removed <<<"$gc_json")" "gc --stale-age 0 exits 0 and removes exactly the $nleft stale files"
# The table ledger after the kills: exactly the mounted pins' table bytes
# (a creator killed before its bind left a record of a netns nothing holds,
# which gc's scan dropped).
want_bytes=$(awk 'function pow2(n, p) { p = 1; while (p < n) p *= 2; return p }
	NR == FNR { b = ($2 > 0 ? 8 * pow2($2) : 0); u = ($3 > 0 ? pow2($3) : 0); if ($3 > 0 && u < 128) u = 128
		    bytes[$1] = b + 64 * u; next }
	{ sum += bytes[$1]; n++ } END { print sum + 0, n + 0 }' "$WORK/requests" <(mounted_pins "$PINS"))
# A killed creator's netns counts until the kernel has freed it (or while
# someone holds it, a scanner's fd): it goes then.  One kept past 20 s is
# a leak.
table_memory() { nshash --state-dir "$STATE" gc --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }
got_bytes=$(jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"' <<<"$gc_json")
if [ "$got_bytes" != "$want_bytes" ]; then
	ledger_unpinned "$STATE"
	echo "# note: gc's table memory $got_bytes at first, the mounted pins' $want_bytes"
	got_bytes=$(until_eq "$want_bytes" 20 table_memory)
fi
assert_eq "$want_bytes" "$got_bytes" \
	"after the kills, gc's table memory (bytes, netns) is exactly that of the mounted pins (within 20 s)"
assert_eq "foreign-file foreign-link" "$(tr '\n' ' ' <"$WORK/foreign-left" | sed 's/ $//')" \
	"gc leaves a symlink and a non-empty file in /run/netns alone"
assert_eq "" "$(unmounted)" "no unmounted pin file left after gc"
assert_eq "$before_gc" "$(mounted_pins "$PINS" | grep -c .) $(mounted_pins "$STATE/templates" | grep -c .)" \
	"gc removed no sound pin or template (pins, templates: $before_gc)"

# ---------------------------------------------------------------- life goes on
lock_free && pass "the state lock is free" || fail "the state lock is held"
for strategy in template nested; do
	for pair in 4096:4096 777:333; do
		t=${pair%:*} u=${pair#*:}
		out=$(timeout 10 nshash --state-dir "$STATE" create --strategy $strategy --tcp "$t" --udp "$u" --json "$PINS/after-$strategy-$t" 2>&1)
		rc=$?
		assert_eq "0 $(expected_raw "$t" "$u")" "$rc $($VERIFY <<<"$PINS/after-$strategy-$t" | cut -d' ' -f2-)" \
			"after the crashes: $strategy create tcp=$t udp=$u succeeds promptly with exact sizes"
	done
done
out=$(nshash --state-dir "$STATE" gc 2>&1)
assert_eq 0 "$?" "nshash gc succeeds ($out)"

# The two stamp leftovers a kill can make, deterministically: a template
# bound but its .used stamp never written, and a stamp left from an earlier
# template of the same name.  Either way the template in use must not look
# idle to gc (default --max-idle 3600).
tpl=$STATE/templates/tcp4096-udp4096
rm -f "$tpl.used"
nshash --state-dir "$STATE" create --tcp 4096 --udp 4096 "$PINS/stamp-1" >/dev/null
nshash --state-dir "$STATE" gc >/dev/null
assert_eq 1 "$(count_pins_under "$tpl")" "a used template whose stamp a kill never wrote is not gc'd as idle"
nshash delete "$tpl"
touch -d '-2 hours' "$tpl.used"
nshash --state-dir "$STATE" create --tcp 4096 --udp 4096 "$PINS/stamp-2" >/dev/null
nshash --state-dir "$STATE" gc >/dev/null
assert_eq 1 "$(count_pins_under "$tpl")" "a template rebuilt over a 2-hour-old stamp is not gc'd as idle"
nshash delete $(mounted_pins "$PINS")
assert_eq 0 "$(mounted_pins "$PINS" | grep -c .)" "every pin deleted"
assert_host_untouched
