#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The nshash CLI against the real kernel: every rounding case read back from
# the created netns, `ip netns exec` agrees, delete leaves nothing mounted,
# bad input leaves no state, the host's knobs never move.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs

STATE=$(make_state_dir)
export NSHASH_STATE_DIR=$STATE
P=nshash-t10-$$
cleanup_pins() { for n in $(ls /run/netns 2>/dev/null | grep "^$P"); do ip netns del "$n" 2>/dev/null || umount -l "/run/netns/$n"; rm -f "/run/netns/$n"; done; }
on_exit cleanup_pins
global_tcp=$(cat /proc/sys/net/ipv4/tcp_ehash_entries); global_tcp=${global_tcp#-}
global_udp=$(cat /proc/sys/net/ipv4/udp_hash_entries); global_udp=${global_udp#-}

# request → effective (tcp udp), per strategy
cases="1:1:1:128 2:127:2:128 3:128:4:128 100:129:128:256 127:1000:128:1024 128:4096:128:4096
129:65536:256:65536 3000:0:4096:shared 0:1:shared:128 65536:16384:65536:16384 0:0:shared:shared
16777216:65535:16777216:65536"
for strategy in template nested; do
	i=0
	for c in $cases; do
		IFS=: read -r t u et eu <<<"$c"
		i=$((i + 1))
		name=$P-$strategy-$i
		out=$(nshash create --strategy "$strategy" --tcp "$t" --udp "$u" --json "$name" 2>&1)
		rc=$?
		if [ $rc -ne 0 ]; then
			fail "$strategy create --tcp $t --udp $u: exit $rc: $out"
			continue
		fi
		want_t=$et want_u=$eu
		[ "$et" = shared ] && want_t=-$global_tcp
		[ "$eu" = shared ] && want_u=-$global_udp
		got=$(ip netns exec "$name" sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"')
		assert_eq "$want_t $want_u" "$got" "$strategy tcp=$t udp=$u → $et/$eu read back by ip netns exec"
		json=$(jq -r '"\(.tcp.entries) \(.tcp.own) \(.udp.entries) \(.udp.own)"' <<<"$out")
		jt=$et ju=$eu ot=true ou=true
		[ "$et" = shared ] && jt=${global_tcp#-} ot=false
		[ "$eu" = shared ] && ju=${global_udp#-} ou=false
		assert_eq "$jt $ot $ju $ou" "$json" "$strategy tcp=$t udp=$u: create --json reports what the kernel has"
		if [ "$et" != shared ]; then
			tw=$(ip netns exec "$name" cat /proc/sys/net/ipv4/tcp_max_tw_buckets)
			assert_eq "$((et / 2))" "$tw" "$strategy tcp=$t: tcp_max_tw_buckets = entries/2"
			assert_eq "$tw" "$(jq .tcp_max_tw_buckets <<<"$out")" "$strategy tcp=$t: reported tcp_max_tw_buckets"
		fi
		lo=$(ip netns exec "$name" cat /sys/class/net/lo/operstate 2>/dev/null; ip -n "$name" -o link show lo)
		assert_contains "$lo" "LOOPBACK,UP" "$strategy tcp=$t: lo is up"
	done
done
assert_eq 0 "$(cat /proc/sys/net/ipv4/tcp_child_ehash_entries)" "host tcp_child_ehash_entries still 0"

# show: by name, by path, by pid
out=$(nshash show "$P-template-6")
assert_contains "$out" "tcp: own table, 128 entries (1 KiB)" "show prints own tcp table and its memory"
assert_contains "$out" "udp: own table, 4096 entries (256 KiB)" "show prints own udp table and its memory"
ip netns exec "$P-template-6" sleep 30 &
spid=$!
on_exit "kill $spid"
sleep 0.2
out=$(nshash show --pid $spid --json)
assert_eq "128 4096" "$(jq -r '"\(.tcp.entries) \(.udp.entries)"' <<<"$out")" "show --pid reads the process's netns"
kill $spid; wait $spid 2>/dev/null
out=$(nshash show --pid $$ --json)
assert_eq "false global $global_tcp false global $global_udp true" "$(jq -r '"\(.tcp.own) \(.tcp.table) \(.tcp.entries) \(.udp.own) \(.udp.table) \(.udp.entries) \(.host)"' <<<"$out")" "show --pid of a host process: the global tables themselves, not own ones"
out=$(nshash show --pid $$)
assert_contains "$out" "tcp: the global table itself (the host's netns), $global_tcp entries" "show of the host's netns says global table"
assert_not_contains "$out" "own table" "and not own table"

# list: pins and templates
out=$(nshash list --json)
assert_eq "$(ls /run/netns | grep -c "^$P")" "$(jq "[.[] | select(.name | startswith(\"$P\"))] | length" <<<"$out")" "list --json shows every pin"
assert_eq "128 4096" "$(jq -r ".[] | select(.name == \"$P-template-6\") | \"\(.tcp.entries) \(.udp.entries)\"" <<<"$out")" "list reports each pin's sizes"
ntempl=$(jq '[.[] | select(.kind == "template")] | length' <<<"$out")
assert_eq 11 "$ntempl" "one template per effective size pair (11 pairs; 0/0 needs none)"
assert_eq "" "$(ls "$STATE/templates" | grep '^tcp0-udp0')" "create --tcp 0 --udp 0 pinned no template"
assert_eq "4096 1024" "$(nshash list --json | jq -r '.[] | select(.name == "tcp4096-udp0") | "\(.tcp.child) \(.kind)"' | sed 's/template/1024/')" "template tcp4096-udp0 gives tcp 4096"

# bad input: exact error, exit 2, nothing left
before_files=$(ls /run/netns | grep "^$P" | sort | md5sum)
before_mounts=$(($(count_pins_under /run/netns/$P) + $(count_pins_under "$STATE")))
check_bad() { # expected-rc fragment args...
	local want=$1 frag=$2
	shift 2
	local out rc
	out=$(nshash "$@" 2>&1)
	rc=$?
	assert_eq "$want" "$rc" "nshash $* exits $want"
	assert_contains "$out" "$frag" "nshash $*: message names the bad input"
}
check_bad 2 '--tcp: "-1" is not a decimal number' create --tcp -1 $P-bad
check_bad 2 '--tcp: "0x10" is not a decimal number' create --tcp 0x10 $P-bad
check_bad 2 '--tcp: "16777217" is out of range (tcp sizes are 0..16777216' create --tcp 16777217 $P-bad
check_bad 2 '--udp: "65537" is out of range (udp sizes are 0..65536' create --udp 65537 $P-bad
check_bad 2 '--udp: "12 " is not a decimal number' create --udp "12 " $P-bad
check_bad 2 '--tcp: empty value' create --tcp "" $P-bad
check_bad 2 'strategy "fast": expected template or nested' create --strategy fast $P-bad
check_bad 2 'netns name "a/b": character' create --tcp 4 a/b
check_bad 2 'contains a "." or ".." component' create --tcp 4 /run/netns/../x
check_bad 1 "create netns /run/netns/$P-template-1: already exists" create --tcp 8 $P-template-1
check_bad 2 'create: expected one NAME or PATH' create --tcp 8
check_bad 2 'unknown command "frobnicate"' frobnicate
check_bad 2 'unknown option "--bogus"' create --bogus x
check_bad 2 'show does not take "--tcp"' show --tcp 4 x
check_bad 2 "inspect /run/netns/$P-missing: No such file or directory" show $P-missing
check_bad 1 "No such file or directory" create --tcp 8 /nonexistent-dir/x
assert_eq "$before_files" "$(ls /run/netns | grep "^$P" | sort | md5sum)" "bad input left no file in /run/netns"
assert_eq "$before_mounts" "$(($(count_pins_under /run/netns/$P) + $(count_pins_under "$STATE")))" "bad input left no mount"
assert_eq 1 "$(ip netns exec $P-template-1 cat /proc/sys/net/ipv4/tcp_ehash_entries)" "the existing pin was not touched by the duplicate create"

# a plain netns created alongside shares the global table
ip netns add $P-plain
ip netns exec $P-plain sleep 30 &
spid=$!
on_exit "kill $spid"
sleep 0.2
out=$(nshash show --pid $spid --json)
assert_eq "false $global_tcp false $global_udp" "$(jq -r '"\(.tcp.own) \(.tcp.entries) \(.udp.own) \(.udp.entries)"' <<<"$out")" "show --pid of a process in a plain netns: shared tables"
kill $spid; wait $spid 2>/dev/null
assert_eq "-$global_tcp -$global_udp" "$(ip netns exec $P-plain sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"')" "a plain ip netns add still shares the global tables"

# delete: everything unmounted and gone, idempotent
for n in $(ls /run/netns | grep "^$P"); do nshash delete "$n" || fail "delete $n"; done
assert_eq 0 "$(ls /run/netns | grep -c "^$P")" "delete removed every pin file"
assert_eq 0 "$(awk -v p="/run/netns/$P" '$9 == "nsfs" && index($5, p) == 1' /proc/self/mountinfo | wc -l)" "delete left no mount"
assert_rc 0 "delete of a missing pin succeeds" -- nshash delete $P-template-1
check_bad 2 "not a pin (a directory)" delete /run/netns
mkdir -p "$STATE/notapin"; mount -t tmpfs none "$STATE/notapin" 2>/dev/null; on_exit "umount $STATE/notapin"
touch "$STATE/plainfile"
assert_rc 0 "delete of a stale (unmounted) pin file succeeds" -- nshash delete "$STATE/plainfile"
assert_eq "" "$(ls "$STATE/plainfile" 2>/dev/null)" "the stale file is gone"

# gc: templates idle longer than --max-idle go, with their pins; --dry-run
# lists them first and removes nothing; kept counts only what nshash owns
before=$(ls "$STATE/templates" | sort | md5sum)
out=$(nshash gc --max-idle 0 --dry-run)
assert_eq 11 "$(grep -c "^would remove $STATE/templates/tcp.*-udp.* (idle template)$" <<<"$out")" "gc --dry-run lists the 11 template paths it would remove"
assert_contains "$out" "would remove 11 template(s)" "gc --dry-run sums them up"
assert_eq "$before" "$(ls "$STATE/templates" | sort | md5sum)" "gc --dry-run removed nothing"
out=$(nshash -j gc --max-idle 999999)
assert_eq "0 11" "$(jq -r '"\(.templates_removed) \(.kept)"' <<<"$out")" "gc keeps the 11 templates (kept counts nshash's own, not /run/netns)"
out=$(nshash gc --max-idle 0 --json)
assert_eq 11 "$(jq .templates_removed <<<"$out")" "gc --max-idle 0 removes all 11 templates"
assert_eq 11 "$(jq '[.paths[] | select(.why == "idle template")] | length' <<<"$out")" "gc --json lists each removed path and why"
assert_eq 0 "$(count_pins_under "$STATE")" "no pin left under the state dir"
assert_eq 0 "$(ls "$STATE/templates" | wc -l)" "no template file or stamp left"

# check: the host and the caller are two questions
out=$(nshash check --json)
assert_eq "true true true true true" "$(jq -r '"\(.ok) \(.tcp_supported) \(.udp_supported) \(.host_supported) \(.privileged)"' <<<"$out")" "check --json: this host works, and root may"
U=$(mktemp -d /tmp/nshash-t10-bin.XXXXXX)
on_exit "rm -rf $U"
chmod 0755 "$U" && cp "$NSHASH" "$U/nshash"
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$U/nshash" "$@"; }
out=$(asnobody check 2>"$U/err")
assert_eq 1 "$?" "check as an unprivileged user: exit 1"
assert_contains "$out" "this host: supports per-netns tables" "check as a user: the host supports it"
assert_contains "$out" "you: lack the privileges: run as root" "check as a user: you lack privileges"
assert_contains "$out" "result: this host supports nshash, but you cannot use it as you are (see below)" "check as a user: not 'this host cannot'"
assert_contains "$(cat "$U/err")" "you lack CAP_SYS_ADMIN and CAP_NET_ADMIN: run as root" "check as a user: stderr says run as root"
out=$(asnobody -j check 2>/dev/null)
assert_eq "true false false" "$(jq -r '"\(.host_supported) \(.privileged) \(.ok)"' <<<"$out")" "check --json as a user: host_supported, not privileged"
out=$(asnobody create --tcp 8 $P-nobody 2>&1)
assert_eq 1 "$?" "create as a user: exit 1"
assert_contains "$out" "nshash: needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run as root, or without root" "create as a user: says run as root first"
assert_contains "$out" "unshare -Urmn nshash create --strategy nested" "create as a user: points at --strategy nested in unshare -Urmn"
assert_eq "" "$(ls /run/netns | grep "^$P-nobody")" "create as a user left nothing"

# help: global, per command, as a command (stats too)
assert_contains "$(nshash help)" "Usage: nshash [-j|--json] [--state-dir DIR] COMMAND" "nshash help: the global usage"
# every command listed once, in the order of the man page's COMMANDS
assert_eq "create resize show list stats record history delete gc reclaim serve check help" \
	"$(nshash help | awk '/^Commands:/ {on = 1; next} /^$/ || /^Options:/ {on = 0} on && /^  [a-z]/ {print $1}' | xargs)" \
	"nshash help lists each command once"
for cmd in create resize show list stats delete gc reclaim serve check; do
	out=$(nshash $cmd --help)
	assert_eq 0 "$?" "nshash $cmd --help exits 0"
	assert_contains "$out" "Usage: nshash $cmd" "nshash $cmd --help: that command's usage"
	assert_eq "$out" "$(nshash help $cmd)" "nshash help $cmd = nshash $cmd --help"
done
assert_contains "$(nshash create -h)" "--strategy S" "create -h documents the options"
check_bad 2 'help: unknown command "frob"' help frob

# -j / --json before the command, as ip -j
# (only this test's state dir: /run/netns may change meanwhile under other users)
own_paths='map(.path | select(startswith($s))) | sort'
assert_eq "$(nshash --state-dir "$STATE" list --json | jq -c --arg s "$STATE" "$own_paths")" \
	"$(nshash -j --state-dir "$STATE" list | jq -c --arg s "$STATE" "$own_paths")" "nshash -j list = nshash list --json"
assert_eq "true" "$(nshash --json check | jq .ok)" "nshash --json check"
assert_eq "true" "$(nshash check -j | jq .ok)" "nshash check -j"

# list: the widest cells (child:16777216) keep the columns apart
nshash create --tcp 16777216 --udp 65536 $P-wide >/dev/null
out=$(nshash list)
line=$(grep " $STATE/templates/tcp16777216-udp65536\$" <<<"$out")
assert_eq "template   child:16777216 child:65536    $STATE/templates/tcp16777216-udp65536" "$line" "list: a 16777216 template's row, columns apart"
line=$(grep " /run/netns/$P-wide\$" <<<"$out")
assert_eq "netns      16777216       65536          /run/netns/$P-wide" "$line" "list: a 16777216 netns's row"

# delete warns when a process still uses the netns, and still removes the pin
ip netns exec $P-wide sleep 30 &
spid=$!
on_exit "kill $spid"
sleep 0.3
out=$(nshash delete $P-wide 2>&1)
assert_eq 0 "$?" "delete of a netns in use: exit 0"
assert_contains "$out" "warning: /run/netns/$P-wide: process $spid (sleep) still uses this netns" "delete warns about the process still inside"
assert_eq "" "$(ls /run/netns | grep "^$P-wide")" "the pin is gone anyway"
kill $spid; wait $spid 2>/dev/null
out=$(nshash create --tcp 8 $P-quiet >/dev/null && nshash delete $P-quiet 2>&1)
assert_eq "" "$out" "delete of an unused netns: no warning"
assert_host_untouched
