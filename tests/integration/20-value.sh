#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# make value in miniature (bench/value with tiny noise and few slices): the
# CSV has the documented header and one row per level and metric with
# positive rates, the plot is written, the three netns and every noise
# worker are gone afterwards, no host setting moved.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs gnuplot
[ -x "$BUILD/bench/value" ] || make -C "$TOP" build/bench/value >/dev/null 2>&1 || cannot_run "cannot build build/bench/value"

OUT=$(mktemp -d)
on_exit "rm -rf $OUT"
nr_open=$(cat /proc/sys/fs/nr_open)
VSTATE=$(make_state_dir) # the host's /run/nshash is not the test's
log=$(VALUE_OUT=$OUT VALUE_STATE_DIR=$VSTATE VALUE_UDP_CHAINS=0,1 VALUE_TCP_CHAINS=0,1 VALUE_ROUNDS=3 VALUE_SLICE_MS=2 \
	"$TOP/bench/value" 2>&1)
assert_eq 0 $? "bench/value with tiny noise exits 0"
assert_eq "proto,metric,noise_sockets,shared,own" "$(head -1 "$OUT/value.csv")" "CSV header"
udp=$(sysctl -n net.ipv4.udp_hash_entries | tr -d -)
tcp=$(sysctl -n net.ipv4.tcp_ehash_entries | tr -d -)
want="udp,flood_pps,0 udp,rr_per_s,0 udp,bind_per_s,0 udp,flood_pps,$udp udp,rr_per_s,$udp udp,bind_per_s,$udp"
want="$want tcp,segments_per_s,0 tcp,rr_per_s,0 tcp,connect_per_s,0 tcp,segments_per_s,$tcp tcp,rr_per_s,$tcp tcp,connect_per_s,$tcp"
assert_eq "$want" "$(tail -n +2 "$OUT/value.csv" | cut -d, -f1-3 | tr '\n' ' ' | sed 's/ $//')" \
	"one row per noise level (chain 0 and 1) and metric"
assert_eq "" "$(tail -n +2 "$OUT/value.csv" | awk -F, '!($4 > 0 && $5 > 0)')" "every rate is positive"
[ -s "$OUT/value.png" ] && pass "plot written" || fail "plot written"
assert_contains "$(file "$OUT/value.png")" "PNG image data" "the plot is a PNG"
assert_contains "$log" "own/sh" "the table is printed"
names=$(grep -o 'nshash-value-[0-9]*-[a-z]*' <<<"$log" | sort -u | tr '\n' ' ')
assert_eq 3 "$(wc -w <<<"$names")" "three netns were made ($names)"
left=""
for n in $names; do [ -e "/run/netns/$n" ] && left="$left $n"; done
assert_eq "" "$left" "no netns left"
for _ in $(seq 60); do pgrep -f "$BUILD/bench/value " >/dev/null || break; sleep 0.5; done
assert_eq "" "$(pgrep -f "$BUILD/bench/value ")" "no noise worker left"
assert_eq "$nr_open" "$(cat /proc/sys/fs/nr_open)" "fs.nr_open unchanged"
assert_host_untouched
