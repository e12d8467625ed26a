#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Spares: a sized netns made ahead of need per size pair (STATE_DIR/spares),
# taken by the next creation of those sizes so that no unshare is on its
# path, and made again by a detached child once the answer is out.  The CNI
# plugin, the wrapper and the precreate hook; exact sizes; a spare is never
# handed to two pods (parallel ADDs); "spares": 0, other sizes and a table
# budget leave them alone; gc removes idle ones; bad values are refused.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
source "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq
command -v flock >/dev/null || cannot_run "flock (util-linux) needed"

engines_oci_setup
NSH=$BUILD/nshash
# ready: every detached child making spares has ended (a fork of the
# plugin, the wrapper or the hook: same command line)
ready() {
	local i
	for i in $(seq 200); do
		pgrep -f -- "^$CNI_PLUGIN\$|nshash-runtime --root $D/f?root|nshash-hook precreate --policy $P\$" >/dev/null || return 0
		sleep 0.05
	done
	fail "a child making spares did not end within 10 s"
}
spares() { find "$S/spares" -maxdepth 1 -name "tcp$1-udp$2.*" 2>/dev/null | sort; }
mounted() { count_pins_under "$S/spares/"; }
# The node allows 16 spares; a network asks for 1 unless it says otherwise.
cni_node_policy "$D/node.json" "$S" '"spares": 16'
conf() {
	local x=${3:-}
	[[ $x == *spares* ]] || x+=',"spares":1'
	cni_conf n44 "\"tcp\":$1,\"udp\":$2,\"stateDir\":\"$S\"$x"
}
pin() { cni_pin_netns "$D/$1"; }
# Every mount made under $D (the pins pod*, pre16, par*, busy*, ...), whatever failed.
on_exit "umount_under '$D'"

# --- the CNI plugin: the first ADD makes its netns and then a spare
pin pod1
cni_call ADD "$D/pod1" "$(conf 4096 1024)"
assert_eq 0 "$CNI_RC" "ADD ($CNI_ERR)"
assert_eq "4096 1024" "$(netns_sizes_at "$D/pod1")" "pod1 sized"
ready
s1=$(spares 4096 1024)
assert_eq 1 "$(wc -l <<<"$s1")" "one spare made after the answer: $(basename "$s1")"
assert_eq 1 "$(mounted)" "mounted (an nsfs pin)"
assert_eq "4096 1024" "$(netns_sizes_at "$s1")" "the spare has the sizes"
assert_eq "UP" "$(nsenter --net="$s1" ip -br link show lo | awk '{print $2}' | sed 's/UNKNOWN/UP/')" "its lo is up"
ino1=$(netns_inode_at "$s1")
assert_eq "700" "$(stat -c %a "$S/spares")" "spares dir 0700"

# --- the next ADD of those sizes takes it, and a new one is made
pin pod2
cni_call ADD "$D/pod2" "$(conf 4096 1024)"
assert_eq 0 "$CNI_RC" "second ADD ($CNI_ERR)"
assert_eq "$ino1" "$(netns_inode_at "$D/pod2")" "pod2 got the spare's netns"
assert_eq "4096 1024" "$(netns_sizes_at "$D/pod2")" "pod2 sized"
[ -e "$s1" ] && fail "the taken spare's file is left" || pass "the taken spare's pin is gone"
ready
s2=$(spares 4096 1024)
assert_eq 1 "$(wc -l <<<"$s2")" "one spare again"
[ "$(netns_inode_at "$s2")" != "$ino1" ] && pass "a new netns" || fail "the spare was handed out twice"

# --- "spares": 0 neither takes nor makes; other sizes do not take it
ino2=$(netns_inode_at "$s2")
pin pod3
cni_call ADD "$D/pod3" "$(conf 4096 1024 ',"spares":0')"
assert_eq 0 "$CNI_RC" "ADD with spares 0"
[ "$(netns_inode_at "$D/pod3")" != "$ino2" ] && pass "spares 0: the spare stays where it is" || fail "spares 0 took the spare"
pin pod3b
cni_call ADD "$D/pod3b" "$(conf 1024 256 ',"spares":0')"
assert_eq "1024 256" "$(netns_sizes_at "$D/pod3b")" "spares 0, new sizes: exact"
ready
assert_eq "$s2" "$(spares 4096 1024)" "spares 0: the other spare untouched"
assert_eq "" "$(spares 1024 256)" "spares 0: none made of its sizes"
pin pod4
cni_call ADD "$D/pod4" "$(conf 2048 512)"
assert_eq "2048 512" "$(netns_sizes_at "$D/pod4")" "other sizes: exact"
assert_eq "$s2" "$(spares 4096 1024)" "other sizes: the 4096/1024 spare untouched"
ready
assert_eq 1 "$(spares 2048 512 | wc -l)" "a spare of the other sizes made"

# --- parallel ADDs taking from 16 spares: every pod its own netns, each exact
S16=',"spares":16'
pin pre16
cni_call ADD "$D/pre16" "$(conf 512 128 "$S16")"
ready
assert_eq 14 "$(spares 512 128 | wc -l)" "spares 16: fourteen made after the answer (the node-wide maxSpares default 16, two spares there already)"
before=$(for f in $(spares 512 128); do netns_inode_at "$f"; done | sort)
for i in $(seq 20); do pin par$i; done
for i in $(seq 20); do
	printf '%s' "$(conf 512 128 "$S16")" | env -i NSHASH_POLICY="$NSHASH_POLICY" CNI_COMMAND=ADD CNI_CONTAINERID=par$i CNI_NETNS="$D/par$i" \
		CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni "$CNI_PLUGIN" >"$D/par$i.out" 2>&1 &
done
wait
ok=0
for i in $(seq 20); do [ "$(netns_sizes_at "$D/par$i")" = "512 128" ] && ok=$((ok + 1)); done
assert_eq 20 "$ok" "20 parallel ADDs: all exact"
got=$(for i in $(seq 20); do netns_inode_at "$D/par$i"; done | sort)
assert_eq 20 "$(uniq <<<"$got" | wc -l)" "20 distinct netns (no spare handed out twice)"
took=$(comm -12 <(echo "$before") <(echo "$got") | wc -l)
[ "$took" -ge 2 ] && pass "$took of them took one of the fourteen (others took refills, or made theirs)" || fail "only $took took one of the fourteen"
ready
assert_eq 14 "$(spares 512 128 | wc -l)" "fourteen again afterwards"
for i in $(seq 20); do umount "$D/par$i" && rm -f "$D/par$i"; done
umount "$D/pre16" && rm -f "$D/pre16"

# --- a table budget: no spares (they would hold bytes nobody asked for)
S0=$S
S=$(make_state_dir)
cni_node_policy "$D/node-budget.json" "$S" '"spares": 16'
pin pod5
cni_call ADD "$D/pod5" "$(conf 4096 1024 ',"maxTableBytes":100000000')"
assert_eq "4096 1024" "$(netns_sizes_at "$D/pod5")" "budget: sized"
ready
assert_eq "" "$(spares 4096 1024)" "budget: no spare made"
S=$S0
cni_node_policy "$D/node.json" "$S" '"spares": 16'

# --- list shows them; gc removes idle ones
out=$("$NSH" --state-dir "$S" list --json)
assert_eq 16 "$(jq '[.[] | select(.kind == "spare")] | length' <<<"$out")" "list: sixteen spares (kind spare)"
out=$("$NSH" --state-dir "$S" gc --json)
assert_eq 0 "$(jq .spares_removed <<<"$out")" "gc keeps fresh spares"
# the state dir named through a symbolic link on the way (as /var/run is
# /run's): gc must see the spares mounted below (mountinfo names the real
# path), and keep spares/ bound with them
ln -s "$(dirname "$S")" "$D/via-link"
out=$("$NSH" --state-dir "$D/via-link/$(basename "$S")" gc --json)
assert_eq "0 16" "$(jq .spares_removed <<<"$out") $(mounted)" "gc through a symlinked parent: the 16 spares kept, still mounted"
rm "$D/via-link"
out=$("$NSH" --state-dir "$S" gc --max-idle 0 --json)
assert_eq 16 "$(jq .spares_removed <<<"$out")" "gc --max-idle 0 removes all"
assert_eq 0 "$(mounted)" "nothing mounted under spares/"

# --- bad values
cni_call ADD "$D/pod5" "$(conf 4096 1024 ',"spares":17')"
assert_cni_error 7 'network config key "spares": 17 is out of range; expected a JSON integer 0..16' "CNI: spares 17 refused"
cni_call ADD "$D/pod5" "$(conf 4096 1024 ',"spares":"1"')"
assert_cni_error 7 'network config key "spares": "1" is a string' "CNI: spares as a string refused"
engines_policy "$P" "{\"stateDir\": \"$S\", \"spares\": 17}"
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" state x 2>&1)
assert_contains "$out" "key \"spares\"" "policy: spares 17 refused, naming the key"

# --- the wrapper: the second container runs in the spare the first left
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/log\"}"
engines_busybox_rootfs "$D/rootfs"
engines_runc_bundle "$D/b" sh -c 'readlink /proc/self/ns/net; cat /proc/sys/net/ipv4/tcp_ehash_entries /proc/sys/net/ipv4/udp_hash_entries'
jq --arg r "$D/rootfs" '.root.path = $r' "$D/b/config.json" >"$D/x" && mv "$D/x" "$D/b/config.json"
engines_bundle_annotate "$D/b" io.nshash.tcp=8192 io.nshash.udp=256
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b" w1 </dev/null 2>&1)
assert_eq "8192 256" "$(tail -2 <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "wrapper: sized"
ready
sw=$(spares 8192 256)
assert_eq 1 "$(wc -l <<<"$sw")" "wrapper: a spare made"
want="net:[$(netns_inode_at "$sw")]"
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b" w2 </dev/null 2>&1)
assert_eq "$want" "$(head -1 <<<"$out")" "wrapper: the second container runs in the spare"
assert_eq "8192 256" "$(tail -2 <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "wrapper: sized"
ready
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/log\", \"spares\": 0}"
sw=$(spares 8192 256)
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b" w3 </dev/null 2>&1)
[ "$(head -1 <<<"$out")" != "net:[$(netns_inode_at "$sw")]" ] && pass "wrapper, spares 0: the spare not taken" ||
	fail "wrapper, spares 0: took the spare"
cp -r "$D/b" "$D/b2"
engines_bundle_annotate "$D/b2" io.nshash.tcp=16384 io.nshash.udp=512
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b2" w4 </dev/null 2>&1)
assert_eq "16384 512" "$(tail -2 <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "wrapper, spares 0, new sizes: sized"
ready
assert_eq "$sw" "$(spares 8192 256)" "wrapper, spares 0: the other spare untouched"
assert_eq "" "$(spares 16384 512)" "wrapper, spares 0: none made of its sizes"
# a request above the policy's cap is refused and leaves no spare of its sizes
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/log\", \"maxTcp\": 8192}"
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b2" w5 </dev/null 2>&1)
assert_contains "$out" "policy" "above maxTcp: refused"
ready
assert_eq "" "$(spares 16384 512)" "above maxTcp: no spare of its sizes made"

# --- the precreate hook: takes the spare, its child makes the next one once the init is in
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/log\"}"
CONFIG='{"ociVersion":"1.0.2","hostname":"h44","annotations":{"io.nshash.tcp":"8192","io.nshash.udp":"256"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}'
hin=$(netns_inode_at "$sw")
pinp=$(printf '%s' "$CONFIG" | "$BUILD/nshash-hook" precreate --policy "$P" | jq -r '.linux.namespaces[0].path')
assert_eq "$hin" "$(netns_inode_at "$pinp")" "precreate: pinned the spare"
nsenter --net="$pinp" unshare -m sleep 30 &
JOINER=$!
on_exit "kill -KILL $JOINER 2>/dev/null"
for _ in $(seq 50); do [ -e "$pinp" ] || break; sleep 0.1; done
ready
s3=$(spares 8192 256)
assert_eq 1 "$(wc -l <<<"$s3")" "precreate: the hook's child made the next spare after the hand-over"
[ "$(netns_inode_at "$s3")" != "$hin" ] && pass "... a new netns" || fail "... the same netns"
kill -KILL $JOINER

# --- a spare's name carries what its verification read; a take reads no /proc/sys
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/log\"}"
G=-$(tr -d - </proc/sys/net/ipv4/udp_hash_entries) # the global UDP table, as a netns sharing it reads it
cp -r "$D/b" "$D/b3"
jq 'del(.annotations["io.nshash.udp"]) | .annotations["io.nshash.tcp"] = "2048"' "$D/b3/config.json" >"$D/x" &&
	mv "$D/x" "$D/b3/config.json"
NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b3" n1 </dev/null >/dev/null 2>&1
ready
sn=$(spares 2048 0)
[[ "$(basename "$sn")" =~ ^tcp2048-udp0\.2048\.$G\.[0-9a-f]{16}$ ]] && pass "named tcp2048-udp0.2048.$G.RANDOM (udp shared)" ||
	fail "spare name: '$(basename "$sn")', expected tcp2048-udp0.2048.$G.RANDOM"
assert_eq "2048 $G" "$(netns_sizes_at "$sn")" "... which is what it has"
awk -v p="$sn" '$1 == "N" && substr($0, length($0) - length(p) + 1) == p' "$S/ledger" | grep -q . &&
	pass "its ledger record names its pin (the cheap proof of life)" || fail "no ledger record with pin $sn"
[[ "$(basename "$s1")" =~ ^tcp4096-udp1024\.4096\.1024\.[0-9a-f]{16}$ ]] && pass "the CNI plugin's: tcp4096-udp1024.4096.1024.RANDOM" ||
	fail "CNI spare name: '$(basename "$s1")'"
: >"$D/log"
sn_ino=$(netns_inode_at "$sn")
NSHASH_POLICY=$P strace -f -qq -e trace=openat,execve,fsopen -o "$D/trace" \
	nshash-runtime --root "$D/root" run -b "$D/b3" n2 </dev/null >"$D/n2.out" 2>&1
assert_eq "net:[$sn_ino]" "$(head -1 "$D/n2.out")" "traced: the container runs in that spare"
ready
main=$(awk 'NR == 1 {print $1}' "$D/trace")
# the wrapper's own calls, until its first exec of runc
wrapper=$(awk -v p="$main" '$1 == p && NR > 1 && /execve\(.*\/runc"/ {exit} $1 == p' "$D/trace")
grep -q "nshash-runtime" <<<"$(head -1 <<<"$wrapper")" && grep -qF "$S/spares/tcp2048-udp0." <<<"$wrapper" &&
	pass "traced the wrapper's take" || fail "the trace has no take: $(head -3 <<<"$wrapper")"
assert_eq "" "$(grep -F '/proc/sys' <<<"$wrapper")" "the take opened nothing under /proc/sys on the container's path"
assert_contains "$(cat "$D/log")" "effective tcp=2048 udp=$G" "the sizes logged are the ones its name carries"
# the refill: the process that took the fillers' lock
filler=$(awk -v p="$main" -v l="\"$S/spares/.lock\"" '$1 != p && index($0, l) {print $1; exit}' "$D/trace")
[ -n "$filler" ] && pass "traced the refill (pid $filler)" || fail "no process took the fillers' lock"
refill=$(awk -v p="${filler:-none}" '$1 == p' "$D/trace")
assert_contains "$refill" 'fsopen("proc"' "the refill makes a proc of its own"
grep -qE 'openat\([0-9]+, "sys/net/ipv4/"' <<<"$refill" && pass "... and reads the new spare's sizes through it" ||
	fail "the refill read no sysctl through its own proc"
# without the new mount API (seccomp, old kernel) the refill verifies through /proc
"$NSH" --state-dir "$S" gc --max-idle 0 >/dev/null
NSHASH_POLICY=$P python3 "$TOP/tests/lib/no-syscall.py" fsopen strace -f -qq -e trace=fsopen,openat,clone,clone3,fork,vfork -o "$D/trace" \
	nshash-runtime --root "$D/root" run -b "$D/b3" n5 </dev/null >"$D/n5.out" 2>&1
assert_eq "2048 $G" "$(tail -2 "$D/n5.out" | tr '\n' ' ' | sed 's/ $//')" "fsopen refused: sized"
ready
sn=$(spares 2048 0)
[[ "$(basename "$sn")" =~ ^tcp2048-udp0\.2048\.$G\.[0-9a-f]{16}$ ]] && pass "fsopen refused: the refill made $(basename "$sn")" ||
	fail "fsopen refused: spare '$(basename "$sn")'"
# the refill: a process that opened the spares' lock (the wrapper may open
# it too, and first), or one it forked (the filler detaches); (strace
# splits a call another traced process interrupted: "<unfinished ...>",
# then "<... fsopen resumed>) = -1 ENOSYS")
refused=
for filler in $(awk -v l="\"$S/spares/.lock\"" 'index($0, l) {print $1}' "$D/trace" | sort -u); do
	for p in $filler $(awk -v f="$filler" '$1 == f && $0 ~ /(clone3?|v?fork)(\(| resumed>)/ && $NF ~ /^[0-9]+$/ {print $NF}' "$D/trace"); do
		grep -E "^$p " "$D/trace" | grep -qE 'fsopen\("proc".*= -1 ENOSYS|<\.\.\. fsopen resumed>.*= -1 ENOSYS' && refused=$p
	done
done
[ -n "$refused" ] && pass "... its fsopen was refused" ||
	fail "the refill's fsopen was not refused: $(grep fsopen "$D/trace")"
assert_eq "2048 $G" "$(netns_sizes_at "$sn")" "... and has what its name says"
# a 0.2.0 spare (SIZES.RANDOM) is still taken, its sizes read back
"$NSH" --state-dir "$S" gc --max-idle 0 >/dev/null
"$NSH" --state-dir "$S" create --tcp 2048 "$S/spares/tcp2048-udp0.0123456789abcdef" >/dev/null
old=$(netns_inode_at "$S/spares/tcp2048-udp0.0123456789abcdef")
: >"$D/log"
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b3" n3 </dev/null 2>&1)
assert_eq "net:[$old]" "$(head -1 <<<"$out")" "a spare named as 0.2.0 named them is taken"
assert_contains "$(cat "$D/log")" "effective tcp=2048 udp=$G" "... its sizes read back"
ready
# a name that does not match the request: not handed out, dropped
"$NSH" --state-dir "$S" gc --max-idle 0 >/dev/null
"$NSH" --state-dir "$S" create --tcp 2048 "$S/spares/tcp2048-udp0.1024.$G.0123456789abcdef" >/dev/null
bad=$(netns_inode_at "$S/spares/tcp2048-udp0.1024.$G.0123456789abcdef")
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/root" run -b "$D/b3" n4 </dev/null 2>&1)
[ "$(head -1 <<<"$out")" != "net:[$bad]" ] && pass "a spare whose name says tcp 1024 is not taken for 2048" ||
	fail "took a spare whose name does not match"
assert_eq "2048 $G" "$(tail -2 <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "... the container sized exactly"
[ -e "$S/spares/tcp2048-udp0.1024.$G.0123456789abcdef" ] && fail "the mismatched spare is left" || pass "... and that spare is dropped"
ready

"$NSH" --state-dir "$S" gc --max-idle 0 >/dev/null
assert_eq 0 "$(mounted)" "nothing left under spares/"

# --- a refused ADD refills nothing: the spare it took is gone, none made after it
pin busy
cni_call ADD "$D/busy" "$(conf 4096 1024)" # sized; a spare made after it
ready
assert_eq 1 "$(spares 4096 1024 | wc -l)" "a spare of 4096/1024 after a sized ADD"
pin busy2
# refused: an interface besides lo (a process inside is looked for only in
# the pod's cgroup, and with one the plugin takes no spare: docs/cni.md)
nsenter --net="$D/busy2" ip link add v44a type veth peer name v44b
BUSY_INO=$(netns_inode_at "$D/busy2")
cni_call ADD "$D/busy2" "$(conf 4096 1024 ',"onFailure":"warn"')"
assert_eq 0 "$CNI_RC" "onFailure warn: ADD into a netns with an interface passes"
assert_contains "$CNI_ERR" "warning" "... with a warning"
assert_eq "$BUSY_INO" "$(netns_inode_at "$D/busy2")" "... its netns left as it was"
ready
assert_eq 0 "$(spares 4096 1024 | wc -l)" "refused (warned) ADD: the spare it took is not made again"

"$NSH" --state-dir "$S" gc --max-idle 0 >/dev/null

# --- the node-wide cap: spares over every size pair stop at maxSpares, and at
# maxSpareBytes; through the wrapper (runtime /bin/true: no container)
S1=$(make_state_dir)
mkdir -p "$D/fb/rootfs" "$D/froot"
fstart() { # TCP UDP ID
	printf '{"ociVersion":"1.0.2","annotations":{"io.nshash.tcp":"%s","io.nshash.udp":"%s"},"root":{"path":"rootfs"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}\n' "$1" "$2" >"$D/fb/config.json"
	NSHASH_POLICY=$P nshash-runtime --root "$D/froot" create --bundle "$D/fb" "$3" >/dev/null 2>&1
}
all_spares() { find "$S1/spares" -maxdepth 1 -name 'tcp*' 2>/dev/null | wc -l; }
engines_policy "$P" "{\"stateDir\": \"$S1\", \"runtime\": \"/bin/true\", \"syslog\": false, \"maxSpares\": 3}"
n=0
for t in 1024 2048 4096; do for u in 128 256; do
	n=$((n + 1))
	fstart $t $u f$n
	ready
done; done
assert_eq 3 "$(all_spares)" "maxSpares 3: three spares after six size pairs"
assert_eq 6 "$(ls "$S1/templates" | grep -vc '\.used$')" "... six templates"
pgrep -f "nshash-runtime --root $D/froot" >/dev/null && fail "a filler is left waiting" || pass "no filler left waiting"
"$NSH" --state-dir "$S1" gc --max-idle 0 >/dev/null
# bytes: tcp 4096 + udp 1024 = 98304 table bytes each; room for two
engines_policy "$P" "{\"stateDir\": \"$S1\", \"runtime\": \"/bin/true\", \"syslog\": false, \"spares\": 8, \"maxSpareBytes\": 200000}"
fstart 4096 1024 g1
ready
assert_eq 2 "$(all_spares)" "maxSpareBytes 200000: two spares of 98304 table bytes (spares 8 asked)"
# parallel starts over several pairs: one filler works, the others leave a
# want marker and go; every pair gets its spare
engines_policy "$P" "{\"stateDir\": \"$S1\", \"runtime\": \"/bin/true\", \"syslog\": false}"
"$NSH" --state-dir "$S1" gc --max-idle 0 >/dev/null
mkdir -p "$D/pb"
for i in $(seq 6); do
	mkdir -p "$D/pb$i/rootfs"
	printf '{"ociVersion":"1.0.2","annotations":{"io.nshash.tcp":"%s","io.nshash.udp":"256"},"root":{"path":"rootfs"},"linux":{"namespaces":[{"type":"network"},{"type":"mount"}]}}\n' $((256 << i)) >"$D/pb$i/config.json"
	NSHASH_POLICY=$P nshash-runtime --root "$D/froot" create --bundle "$D/pb$i" p$i >/dev/null 2>&1 &
done
wait
ready
ok=0
for i in $(seq 6); do [ "$(find "$S1/spares" -maxdepth 1 -name "tcp$((256 << i))-udp256.*" | wc -l)" = 1 ] && ok=$((ok + 1)); done
assert_eq 6 "$ok" "6 parallel starts of 6 pairs: each pair has its spare"
assert_eq 0 "$(find "$S1/spares" -maxdepth 1 -name '.want.*' | wc -l)" "... no want marker left"

# --- idle expiry without gc: a spare not taken within spareMaxIdle goes (with
# its template) when the next filler runs
"$NSH" --state-dir "$S1" gc --max-idle 0 >/dev/null
engines_policy "$P" "{\"stateDir\": \"$S1\", \"runtime\": \"/bin/true\", \"syslog\": false, \"spareMaxIdle\": 2}"
fstart 8192 512 e1
ready
old=$(find "$S1/spares" -maxdepth 1 -name 'tcp8192-udp512.*')
assert_eq 1 "$(grep -c . <<<"$old")" "a spare of 8192/512"
sleep 3
fstart 16384 512 e2
ready
assert_eq "" "$(find "$S1/spares" -maxdepth 1 -name 'tcp8192-udp512.*')" "spareMaxIdle 2: the idle spare is gone after 3 s"
[ -e "$S1/templates/tcp8192-udp512" ] && fail "its idle template is left" || pass "... and its idle template"
assert_eq 1 "$(find "$S1/spares" -maxdepth 1 -name 'tcp16384-udp512.*' | wc -l)" "... the new pair's spare made"
# where spares do not apply (spares 0) the idle ones still go, once per idle time
engines_policy "$P" "{\"stateDir\": \"$S1\", \"runtime\": \"/bin/true\", \"syslog\": false, \"spareMaxIdle\": 2, \"spares\": 0}"
sleep 3
fstart 1024 128 e3
ready
assert_eq 0 "$(all_spares)" "spares 0: the idle spare still goes after spareMaxIdle"
engines_policy "$P" "{\"stateDir\": \"$S1\", \"spareMaxIdle\": 0}"
out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/froot" state x 2>&1)
assert_contains "$out" 'key "spareMaxIdle": 0 is out of range' "policy: spareMaxIdle 0 refused"
"$NSH" --state-dir "$S1" gc --max-idle 0 >/dev/null
assert_host_untouched
