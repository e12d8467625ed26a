#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Hostile input to the CNI plugin (issue 10): CNI_NETNS that is a FIFO, a
# device node or a link to one is never opened as a file; CNI_CONTAINERID
# and CNI_IFNAME follow the reference plugins' rules and never forge a log
# line; \u0000 in strings and keys is refused; a prevResult interface named
# null; exactly 16 MiB of stdin; valid JSON that is not an object; EACCES
# on CNI_NETNS; stdout closed or full; "runtimeConfig": null; a "stateDir"
# of / or an existing 0755 directory refused, never chmod'ed, one that does
# not exist yet made 0700 (issue 19); a runtimeConfig.cgroupPath that is not
# the pod's own cgroup is not charged (issue 31).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq strace

D=$(make_state_dir)
V=1.0.0
TO="timeout -k 2 10"
n=0
new_pin() { n=$((n + 1)); P=$D/ns$n; cni_pin_netns "$P"; } # sets P
STATE=$(make_state_dir) # templates and spares, never the host's /run/nshash
cni_node_policy "$D/node.json" "$STATE"
conf() { # [extra json members]; stateDir $STATE unless one is given
	local extra=${1:-}
	[[ $extra == *stateDir* ]] || extra+="${extra:+,}\"stateDir\":\"$STATE\""
	cni_conf net1 "$extra" "$V"
}
shared() { netns_sizes_at "$1" | awk '{print ($1 < 0 && $2 < 0) ? "shared" : $0}'; }
# plugin VAR=VALUE... < stdin: CNI_RC, CNI_OUT, CNI_ERR, with a timeout
plugin() {
	local errf
	errf=$(mktemp)
	CNI_OUT=$($TO env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND=ADD CNI_CONTAINERID=ctr-1 \
		NSHASH_POLICY="$NSHASH_POLICY" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni "$@" "$CNI_PLUGIN" 2>"$errf")
	CNI_RC=$?
	CNI_ERR=$(cat "$errf")
	rm -f "$errf"
}

# ---- CNI_NETNS: FIFO, device node, links to them; never opened as files
mkfifo "$D/fifo"
mknod "$D/null" c 1 3
ln -s "$D/fifo" "$D/fifo-link"
ln -s "$D/null" "$D/null-link"
conf '"tcp":4096' >"$D/conf.json"
plugin CNI_NETNS="$D/fifo" <"$D/conf.json"
assert_cni_error 4 "CNI_NETNS=$D/fifo is not a network namespace: a FIFO" "CNI_NETNS a FIFO"
plugin CNI_NETNS="$D/null" <"$D/conf.json"
assert_cni_error 4 "CNI_NETNS=$D/null is not a network namespace: a character device" "CNI_NETNS a device node"
plugin CNI_NETNS="$D/fifo-link" <"$D/conf.json"
assert_cni_error 4 "CNI_NETNS=$D/fifo-link is not a network namespace: a symbolic link to $D/fifo, which is not a network namespace" "CNI_NETNS a link to a FIFO"
for t in null null-link; do
	$TO strace -f -qq -e trace=open,openat,openat2 -o "$D/strace" env CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_IFNAME=eth0 \
		CNI_NETNS="$D/$t" "$CNI_PLUGIN" <"$D/conf.json" >/dev/null 2>&1
	assert_eq "" "$(grep -F "\"$D/$t\"" "$D/strace" | grep -v O_PATH)" "CNI_NETNS $t: the device node was not opened"
done

# ---- EACCES: the real cause, not "a symbolic link to ," (run as nobody)
# (the node's policy where nobody can read it, with the same state dir)
PUB=$(mktemp /tmp/nshash-41-policy.XXXXXX) && on_exit "rm -f $PUB"
chmod 0644 "$PUB" && cp "$NSHASH_POLICY" "$PUB"
CNI_OUT=$(conf '"tcp":4096' | $TO env -i NSHASH_POLICY="$PUB" CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_IFNAME=eth0 CNI_NETNS=/proc/1/ns/net \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CNI_PLUGIN" 2>/dev/null)
CNI_RC=$?
assert_cni_error 4 "CNI_NETNS=/proc/1/ns/net: " "EACCES on CNI_NETNS: code 4"
assert_contains "$(cni_field .msg)" "Permission denied" "EACCES on CNI_NETNS: the errno is named"
assert_not_contains "$(cni_field .msg)" "a symbolic link to ," "EACCES on CNI_NETNS: no empty link target"

# ---- CNI_CONTAINERID / CNI_IFNAME as the reference plugins check them
new_pin
INO=$(netns_inode_at "$P")
badenv() { # CMD FRAGMENT DESC VAR=VALUE...
	local cmd=$1 frag=$2 desc=$3
	shift 3
	plugin CNI_COMMAND="$cmd" CNI_NETNS="$P" "$@" <"$D/conf.json"
	assert_cni_error 4 "$frag" "$cmd: $desc"
}
for cmd in ADD CHECK DEL; do
	badenv $cmd 'CNI_CONTAINERID="../x": ' "container id ../x refused" CNI_CONTAINERID=../x
	badenv $cmd 'CNI_CONTAINERID="-x": ' "container id starting with - refused" CNI_CONTAINERID=-x
	badenv $cmd 'CNI_IFNAME="0123456789abcdef": longer than 15 bytes' "16-byte interface name refused" CNI_IFNAME=0123456789abcdef
	badenv $cmd 'CNI_IFNAME="..": ' "interface name .. refused" CNI_IFNAME=..
	badenv $cmd 'CNI_IFNAME="eth/0": ' "interface name with / refused" CNI_IFNAME=eth/0
	badenv $cmd 'CNI_IFNAME="eth:0": ' "interface name with : refused" CNI_IFNAME=eth:0
	badenv $cmd 'CNI_IFNAME="eth 0": ' "interface name with a blank refused" CNI_IFNAME="eth 0"
done
badenv ADD 'CNI_CONTAINERID="a\x0aFORGED nshash[ADD x]: fine": ' "container id with a newline refused, escaped" CNI_CONTAINERID=$'a\nFORGED nshash[ADD x]: fine'
assert_eq 1 "$(wc -l <<<"$CNI_ERR")" "container id with a newline: one line on stderr"
plugin CNI_NETNS="$P" CNI_CONTAINERID=abc-1_2.3 CNI_IFNAME=net1 <"$D/conf.json"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "valid id and interface name accepted"
# a name from prevResult (written by other plugins) is escaped in messages
new_pin
conf "\"tcp\":4096,\"prevResult\":{\"cniVersion\":\"$V\",\"interfaces\":[{\"name\":\"e\\nFORGED\",\"sandbox\":\"$P\"}]}" >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_cni_error 100 'prevResult already has container interfaces (e\x0aFORGED)' "prevResult interface name escaped"
assert_eq 1 "$(wc -l <<<"$CNI_ERR")" "prevResult interface name: one line on stderr"

# ---- prevResult interface "name": null
conf "\"tcp\":4096,\"prevResult\":{\"cniVersion\":\"$V\",\"interfaces\":[{\"name\":null,\"sandbox\":\"$P\"}]}" >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_cni_error 100 "prevResult already has container interfaces (an interface with name null)" "prevResult interface named null"
assert_not_contains "$CNI_OUT$CNI_ERR" "(null)" "no (null) printed"
assert_eq shared "$(shared "$P")" "prevResult refusal left the netns shared"

# ---- \u0000 in strings and keys: refused, nothing sized
nul() { # DESC CONFIG
	conf "$2" >"$D/c.json"
	plugin CNI_NETNS="$P" <"$D/c.json"
	assert_cni_error 6 '\u0000 (a NUL character) in a string' "$1"
	assert_eq shared "$(shared "$P")" "$1: netns left shared"
}
ann() { echo "\"maxTcp\":65536,\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{$1}}"; }
nul "annotation value with \\u0000" "$(ann '"io.nshash.tcp":"8192\u0000garbage"')"
nul "annotation key with \\u0000" "$(ann '"io.nshash.tcp\u0000x":"8192"')"
nul "config key with \\u0000" '"tcp\u0000":8192'
nul "stateDir with \\u0000" "\"tcp\":8192,\"stateDir\":\"$D/s\\u0000x\""
nul "onFailure with \\u0000" '"tcp":8192,"onFailure":"warn\u0000"'
printf '{"cniVersion":"1.0.0\\u0000x","name":"n","tcp":8192}' >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_cni_error 6 '\u0000 (a NUL character) in a string' "cniVersion with \\u0000"

# ---- issue 19: a stateDir that does not exist yet (nor its parent): made 0700 by the first ADD
# (the node's policy names it: a network config may only name the node's)
new_pin
cni_node_policy "$D/node-fresh.json" "$D/fresh/state"
conf "\"tcp\":4096,\"spares\":0,\"stateDir\":\"$D/fresh/state\"" >"$D/c-fresh.json"
plugin CNI_NETNS="$P" <"$D/c-fresh.json"
assert_eq "0 4096 700 700" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1) $(stat -c %a "$D/fresh" "$D/fresh/state" | tr '\n' ' ' | sed 's/ $//')" \
	"stateDir that does not exist yet: made 0700 (parent too), the netns sized $CNI_ERR"

# ---- issue 19: a "stateDir" naming / or an existing 0755 directory is refused,
# never chmod'ed, nothing made in it, the netns left shared
new_pin
mkdir -m 0755 "$D/st-755" && touch "$D/st-755/theirs" # not empty: not kubelet's
cni_node_policy "$D/node-755.json" "$D/st-755"
conf "\"tcp\":4096,\"stateDir\":\"$D/st-755\"" >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_cni_error 103 "state dir $D/st-755: open to group or others (mode 0755): nshash never changes the mode of a directory it did not create" \
	"stateDir an existing 0755 directory: refused"
assert_eq "755 theirs" "$(stat -c %a "$D/st-755") $(ls -A "$D/st-755")" "stateDir 0755: mode unchanged, nothing made in it"
assert_eq shared "$(shared "$P")" "stateDir 0755: netns left shared"
# A build that chmods would make / 0700: "/" only after the scratch case showed this one does not.
if [ "$(stat -c %a "$D/st-755")" = 755 ] && [ "$CNI_RC" -ne 0 ]; then
	root_state() { stat -c '%a %U' /; ls -A / | md5sum; }
	before=$(root_state)
	cni_node_policy "$D/node-root.json" /
	conf '"tcp":4096,"stateDir":"/"' >"$D/c.json"
	plugin CNI_NETNS="$P" <"$D/c.json"
	assert_cni_error 103 "state dir /: the root directory, never a state dir" "stateDir \"/\": refused"
	assert_eq "$before" "$(root_state)" "stateDir \"/\": / keeps its mode, owner and entries"
	assert_eq shared "$(shared "$P")" "stateDir \"/\": netns left shared"
else
	fail "the 0755 scratch stateDir was not refused: \"/\" not tried"
fi
# kubelet's own: an empty 0755 directory (hostPath DirectoryOrCreate) met by
# the first ADD on a fresh node before the DaemonSet's init container
# narrowed it, with no budget (no ledger lock taken first): narrowed, sized
new_pin
mkdir -m 0755 "$D/st-kubelet" && chmod 0755 "$D/st-kubelet"
on_exit "cleanup_state_dir '$D/st-kubelet'"
cni_node_policy "$D/node-kubelet.json" "$D/st-kubelet"
conf "\"tcp\":4096,\"stateDir\":\"$D/st-kubelet\"" >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_eq "0 4096 700" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1) $(stat -c %a "$D/st-kubelet")" \
	"stateDir an empty 0755 directory (kubelet's), no budget: narrowed to 0700, the first ADD sized $CNI_OUT"
cni_node_policy "$D/node.json" "$STATE"

# ---- exactly 16 MiB of stdin is read; valid JSON that is not an object
body=$(conf '"tcp":2048')
{ printf '%s' "$body"; head -c $((16777216 - ${#body})) /dev/zero | tr '\0' ' '; } >"$D/big.json"
plugin CNI_NETNS="$P" <"$D/big.json"
assert_eq "0 2048" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "exactly 16777216 bytes on stdin: accepted"
for j in null:null 42:"an integer" true:"a boolean"; do
	printf '%s' "${j%%:*}" >"$D/c.json"
	plugin CNI_NETNS="$P" <"$D/c.json"
	assert_cni_error 6 "decode network config: stdin holds ${j#*:}, expected a JSON object" "stdin holds ${j%%:*}"
done

# ---- "runtimeConfig": null is like no runtimeConfig
new_pin
conf '"tcp":4096,"runtimeConfig":null' >"$D/c.json"
plugin CNI_NETNS="$P" <"$D/c.json"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "runtimeConfig null accepted"

# ---- node-side settings (docs/cni.md): a network config (in a multi-tenant
# cluster a tenant's NetworkAttachmentDefinition) may lower them, never raise
# them, and never choose the state dir
# (never "/" or a system dir here: a build without the rule would take it)
ELSE=$(make_state_dir) # another directory, as a tenant would name it
chmod 0755 "$ELSE"
new_pin
INO=$(netns_inode_at "$P")
conf '"tcp":4096,"stateDir":"'"$ELSE"'"' >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_cni_error 7 "network config key \"stateDir\": \"$ELSE\" is not this node's state dir \"$STATE\" ($NSHASH_POLICY); the state dir is a node setting: remove the key from the network config, or set stateDir in the node's policy file" "stateDir elsewhere: refused"
assert_eq "755 0 $INO" "$(stat -c %a "$ELSE") $(find "$ELSE" -mindepth 1 | wc -l) $(netns_inode_at "$P")" "stateDir elsewhere: that dir untouched, CNI_NETNS not replaced"
plugin CNI_COMMAND=DEL CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_eq "0 " "$CNI_RC $CNI_OUT" "stateDir elsewhere: DEL still succeeds"

# spares 16 in the network: the node's (1 by default) holds
S41=$(make_state_dir)
cni_node_policy "$D/node-spares.json" "$S41"
new_pin
# (each config names the node's state dir: allowed, and a build without the
# rule keeps to it too instead of the host's /run/nshash)
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":1024,"udp":256,"spares":16,"stateDir":"%s"}' "$S41" >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
sleep 0.2
spares_settled "$S41"
assert_eq "0 1024 256" "$CNI_RC $(netns_sizes_at "$P")" "spares 16 in the network: ADD sized"
assert_eq 1 "$(find "$S41/spares" -maxdepth 1 -name 'tcp1024-udp256.*' | wc -l)" "spares 16 in the network: the node's 1 spare made, not 16"
assert_contains "$CNI_ERR" "warning: network config key \"spares\": 16 is above this node's spares 1 ($NSHASH_POLICY); using 1: a network config may lower node settings, never raise them" "spares 16: the warning names the key and the node's value"

# the node's maxSpares bounds the plugin's filler too (it used the library's 16)
S41s=$(make_state_dir)
cni_node_policy "$D/node-maxspares.json" "$S41s" '"spares": 3, "maxSpares": 2'
new_pin
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":2048,"udp":256,"spares":3}' >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
sleep 0.2
spares_settled "$S41s"
assert_eq "0 2" "$CNI_RC $(find "$S41s/spares" -maxdepth 1 -name 'tcp*' | wc -l)" "node spares 3, maxSpares 2: the plugin's filler makes 2"
"$BUILD/nshash" --state-dir "$S41s" gc --max-idle 0 >/dev/null 2>&1

# maxTcp above the node's cap does not raise it; nor maxUdp
cni_node_policy "$D/node-caps.json" "$S41" '"maxTcp": 8192, "maxUdp": 1024, "spares": 0'
new_pin
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":4096,"maxTcp":65536,"maxUdp":16384,"stateDir":"%s","runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"io.nshash.tcp":"16384"}}}' "$S41" >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_cni_error 102 "pod annotations: tcp size 16384 (effective 16384) is above the allowed maximum 8192 (maxTcp)" "maxTcp 65536 over a node cap of 8192: an annotation of 16384 refused"
assert_contains "$CNI_ERR" "network config key \"maxTcp\": 65536 is above this node's maxTcp 8192" "maxTcp: the warning names the node's value"
assert_eq "shared" "$(shared "$P")" "maxTcp: the netns was not replaced"
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":16384,"stateDir":"%s"}' "$S41" >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_cni_error 7 "network config: tcp size 16384 (effective 16384) is above the allowed maximum 8192 (maxTcp): the network default must not exceed this node's maxTcp 8192 / maxUdp 1024 ($NSHASH_POLICY)" "a network default above the node's cap: refused"

# maxTableBytes above the node's budget does not raise it: one tcp 4096
# netns (32768 bytes) fits the node's 40000, a second does not
S41b=$(make_state_dir)
cni_node_policy "$D/node-budget.json" "$S41b" '"maxTableBytes": 40000'
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash","tcp":4096,"maxTableBytes":100000000,"stateDir":"%s"}' "$S41b" >"$D/c.json"
new_pin
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "budget: the first netns fits the node's 40000 bytes"
assert_contains "$CNI_ERR" "network config key \"maxTableBytes\": 100000000 is above this node's maxTableBytes 40000" "budget: the warning names the node's value"
new_pin
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_cni_error 105 "table memory budget: maxTableBytes 40000 would be passed" "maxTableBytes 100000000 over a node budget of 40000: the second netns refused"
assert_eq "shared" "$(shared "$P")" "budget: the netns was not replaced"
cni_node_policy "$D/node.json" "$STATE"

# ---- who is in CNI_NETNS (docs/cni.md, "Who can be inside"): a thread of
# the pod's own cgroup (runtimeConfig.cgroupPath, checked as for the
# charge: pod<K8S_POD_UID>), any thread, not only a thread group leader (a
# Go plugin's LockOSThread + setns); nothing else on the node is looked at:
# the same process outside the pod's cgroup, or with no cgroupPath, does not
# stop the ADD (only host root can enter a netns the runtime pinned), and
# the plugin reads no other process's /proc entry
cni_pod_cgroup podother-1
OTHERCG=$CNI_PODCG_DIR
cni_pod_cgroup podin-1
mkdir "$CNI_PODCG_DIR/ctr"
cat >"$D/thread.py" <<'PY'
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
def enter():
    if libc.setns(fd, 0x40000000) != 0:
        os._exit(1)
    open(sys.argv[2], "w").close()
    time.sleep(600)
threading.Thread(target=enter, daemon=True).start()
time.sleep(600)
PY
# thread_in CGROUP: a python3 whose second thread enters $P, in CGROUP
thread_in() {
	rm -f "$D/thread.in"
	sh -c 'echo $$ >"$1/cgroup.procs" && exec python3 "$2" "$3" "$4"' sh "$1" "$D/thread.py" "$P" "$D/thread.in" &
	TPID=$!
	on_exit "kill $TPID 2>/dev/null"
	for _ in $(seq 100); do [ -e "$D/thread.in" ] && break; sleep 0.05; done
	[ -e "$D/thread.in" ] || fail "the python3 thread did not enter $P"
}
pod_cg() { echo "\"runtimeConfig\":{\"cgroupPath\":\"$CNI_PODCG\"}"; }
new_pin
thread_in "$CNI_PODCG_DIR/ctr"
conf "\"tcp\":4096,$(pod_cg)" >"$D/c.json"
INO=$(netns_inode_at "$P")
plugin CNI_NETNS="$P" CNI_ARGS="K8S_POD_UID=in-1" <"$D/c.json"
assert_cni_error 100 "cannot size the netns $P (tcp 4096, udp shared): process $TPID (python3) of the pod's cgroup already lives in it; a netns can be replaced only before anything joins it (the runtime started the pod's sandbox before ADD)" \
	"a non-leader thread of the pod's cgroup (a child cgroup of it) in CNI_NETNS: refused as occupied, at once"
assert_eq "$INO" "$(netns_inode_at "$P")" "... not replaced"
plugin CNI_NETNS="$P" CNI_ARGS="K8S_POD_UID=other-1" <"$D/c.json"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" \
	"the same process, but the cgroupPath is not this pod's (K8S_POD_UID other-1): not looked in, sized"
assert_eq "$INO" "$(stat -L -c %i "/proc/$(ls "/proc/$TPID/task" | sort -n | tail -1)/ns/net")" \
	"... the process's thread stays in the netns it entered (the runtime's, now unpinned)"
kill "$TPID" && wait "$TPID" 2>/dev/null
# a process of the node in CNI_NETNS, not in the pod's cgroup: no look finds
# it (a /proc walk would: the ADD would be refused)
new_pin
thread_in "$OTHERCG"
INO=$(netns_inode_at "$P")
conf "\"tcp\":4096,\"spares\":0,$(pod_cg)" >"$D/c.json"
plugin CNI_NETNS="$P" CNI_ARGS="K8S_POD_UID=in-1" <"$D/c.json"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" \
	"a thread of another cgroup in CNI_NETNS: not looked for, sized ($CNI_ERR)"
# and the plugin looks at no process's /proc entry but its own threads' and
# those of the pod's cgroup (here none): no walk over the node, whatever it
# runs.  (The orphan reclaim after the answer, which does walk /proc, is
# not due: reclaimInterval of the node's policy.)
cni_node_policy "$D/node-noreclaim.json" "$STATE" '"reclaimInterval": 86400'
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json" # stamps the interval
new_pin
$TO strace -f -qq -y -e trace=%file,getdents64 -o "$D/strace" env CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_IFNAME=eth0 \
	CNI_NETNS="$P" CNI_ARGS="K8S_POD_UID=in-1" NSHASH_POLICY="$NSHASH_POLICY" "$CNI_PLUGIN" <"$D/c.json" >/dev/null 2>"$D/err"
assert_eq "0 4096" "$? $(netns_sizes_at "$P" | cut -d' ' -f1)" "ADD under strace: sized ($(cat "$D/err"))"
tasks=$(awk '{print $1}' "$D/strace" | sort -u | tr '\n' '|')
others=$(grep -oE '"(/proc/)?[0-9]+/(ns|task|fd|status|comm|stat)[^"]*"' "$D/strace" |
	grep -vE "^\"(/proc/)?(${tasks%|})/" | sort -u | head -5)
assert_eq "" "$others" "ADD: no /proc entry of a process outside the plugin and the pod's cgroup is read"
assert_eq "" "$(grep -E 'getdents64\([0-9]+</proc[>/]' "$D/strace" | head -3)" "ADD: no /proc directory listed (no walk of the node's processes)"
assert_contains "$(grep -E 'getdents64\(' "$D/strace")" "$CNI_PODCG_DIR>" "ADD: the pod's cgroup is what it looked in"
kill "$TPID" && wait "$TPID" 2>/dev/null
cni_node_policy "$D/node.json" "$STATE"

# an fd of a uid-65534 process is all that holds a container pin's netns:
# /proc/PID/fd is that uid's, mode 0500, and CAP_SYS_PTRACE alone does not
# open it.  The scan must not take "cannot look" for "nothing holds it":
# with the plugin's old capability set it says it could not see everything,
# with the plugin's set it sees the holder; the pin stays either way.
S41c=$(make_state_dir)
mkdir -m 0700 "$S41c/pins"
"$BUILD/nshash" --state-dir "$S41c" create --tcp 128 "$S41c/pins/held" >/dev/null
(exec 9<"$S41c/pins/held" && exec setpriv --reuid=65534 --regid=65534 --clear-groups sleep 600) &
HPID=$!
on_exit "kill $HPID 2>/dev/null"
for _ in $(seq 100); do [ "$(stat -c %u "/proc/$HPID" 2>/dev/null)" = 65534 ] && [ -e "/proc/$HPID/fd/9" ] && break; sleep 0.05; done
age_claims 120 "$S41c/pins/held" # older than the staleAge (its 60 s floor) below
reclaim_as() { setpriv --bounding-set="-all,$1" "$BUILD/nshash" --state-dir "$S41c" reclaim --stale-age 60 --dry-run -j | jq -c '[.orphans_removed, .incomplete]'; }
assert_eq "[0,true]" "$(reclaim_as +sys_admin,+net_admin,+sys_ptrace)" "an fd of another uid, without CAP_DAC_READ_SEARCH: not called unheld (incomplete)"
assert_eq "[0,false]" "$(reclaim_as +sys_admin,+net_admin,+sys_ptrace,+dac_read_search)" "an fd of another uid, with the plugin's capabilities: seen"
cni_node_policy "$D/node-fd.json" "$S41c" '"staleAge": 1, "reclaimInterval": 0'
new_pin
printf '{"cniVersion":"1.0.0","name":"n","type":"nshash"}' >"$D/c.json"
plugin CNI_NETNS="$P" NSHASH_POLICY="$NSHASH_POLICY" <"$D/c.json"
assert_eq "0 nsfs" "$CNI_RC $(stat -f -c %T "$S41c/pins/held")" "the plugin's reclaim (staleAge 1 from the node, raised to 60) keeps the pin another uid's fd holds"
assert_not_contains "$CNI_ERR" "reclaim" "and neither removes nor gives up ($CNI_ERR)"
kill "$HPID" && wait "$HPID" 2>/dev/null
cni_node_policy "$D/node.json" "$STATE"

# ---- runtimeConfig.cgroupPath from a tenant's network config (issue 31):
# libcni passes a config's own runtimeConfig on when it declares no
# capability, so any cgroupPath can arrive.  Only the cgroup kubelet made
# for the pod being added (pod<K8S_POD_UID>) pays; another pod's, "/", one
# reached through a bind mount, or any without K8S_POD_UID: the ADD sizes,
# says what it did not charge and why, and charges nothing (the victim's
# usage stays exactly 0, no leaf made in it).
MEMROOT=$CNI_MEMROOT
CGT=${CNI_PODCG%/*}
if [ -e "$MEMROOT/memory.usage_in_bytes" ]; then
	mkdir -p "$MEMROOT$CGT/podvictim-1" "$MEMROOT$CGT/podtenant-1" || fail "cannot create memory cgroups under $MEMROOT$CGT"
	on_exit "rmdir '$MEMROOT$CGT/podvictim-1' '$MEMROOT$CGT/podtenant-1'"
	victim() { echo "$(cat "$MEMROOT$CGT/podvictim-1/memory.usage_in_bytes") $(find "$MEMROOT$CGT/podvictim-1" -mindepth 1 -type d | wc -l)"; }
	cg_add() { # CGROUPPATH [VAR=VALUE...]: ADD of tcp 262144 with that cgroupPath into a new pin
		local cg=$1
		shift
		new_pin
		conf "\"tcp\":262144,\"runtimeConfig\":{\"cgroupPath\":\"$cg\"}" >"$D/cg.json"
		plugin CNI_NETNS="$P" "$@" <"$D/cg.json"
	}
	warned="nshash[ADD ctr-1]: warning: tables charged to the runtime's memory cgroup, not the pod's: runtimeConfig.cgroupPath"
	notpod="not the cgroup of the pod being added (K8S_POD_UID \"tenant-1\": its last component must be podtenant-1); a network config cannot choose the cgroup that pays"
	cg_add "$CGT/podvictim-1" CNI_ARGS="K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=evil;K8S_POD_UID=tenant-1"
	assert_eq "0 262144" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "cgroupPath of another pod: the ADD still sizes"
	assert_contains "$CNI_ERR" "$warned \"$CGT/podvictim-1\": $notpod" "... says the path is not this pod's, naming it"
	assert_not_contains "$CNI_ERR" "tables charged to the pod's" "... and does not charge it"
	assert_eq "0 0" "$(victim)" "... the other pod's cgroup: nothing charged, no leaf made"
	cg_add / CNI_ARGS="K8S_POD_UID=tenant-1"
	assert_contains "$CNI_RC $CNI_ERR" "0 $warned \"/\": $notpod" "cgroupPath \"/\": not charged, said"
	cg_add "$CGT/podvictim-1"
	assert_contains "$CNI_RC $CNI_ERR" "0 $warned \"$CGT/podvictim-1\": CNI_ARGS has no K8S_POD_UID to check it against (only the cgroup kubelet made for the pod being added is charged)" \
		"cgroupPath without K8S_POD_UID (not Kubernetes): not charged, said"
	cg_add "kubepods-burstable-podvictim_1.slice" CNI_ARGS="K8S_POD_UID=tenant-1"
	assert_contains "$CNI_RC $CNI_ERR" "0 $warned \"kubepods-burstable-podvictim_1.slice\": not the cgroup of the pod being added (K8S_POD_UID \"tenant-1\": its last component must end in -podtenant_1.slice)" \
		"another pod's systemd slice: not charged, said"
	# the tenant's own name, but a bind mount of the victim's cgroup there
	new_pin
	conf "\"tcp\":262144,\"runtimeConfig\":{\"cgroupPath\":\"$CGT/podtenant-1\"}" >"$D/cg.json"
	CNI_OUT=$(unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh \
		"$MEMROOT$CGT/podvictim-1" "$MEMROOT$CGT/podtenant-1" $TO env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		CNI_COMMAND=ADD CNI_CONTAINERID=ctr-1 NSHASH_POLICY="$NSHASH_POLICY" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
		CNI_NETNS="$P" CNI_ARGS="K8S_POD_UID=tenant-1" "$CNI_PLUGIN" <"$D/cg.json" 2>"$D/err")
	CNI_RC=$?
	assert_contains "$CNI_RC $(cat "$D/err")" "0 $warned \"$CGT/podtenant-1\": $MEMROOT$CGT/podtenant-1 is not a cgroup of the memory hierarchy (a symbolic link or another file system on the way)" \
		"a bind mount on the way to the pod's cgroup: not followed, said"
	assert_eq "0 0" "$(victim)" "... the cgroup mounted there: nothing charged, no leaf made"
	# the pod's own cgroup: charged (the tables: 2097152 bytes; cgroup v1's
	# usage is fuzzy by per-CPU charge batches, so at least 3/4 of them)
	cg_add "$CGT/podtenant-1" CNI_ARGS="K8S_POD_UID=tenant-1"
	used=$(cat "$MEMROOT$CGT/podtenant-1/memory.usage_in_bytes")
	assert_contains "$CNI_RC $CNI_ERR" "0 nshash[ADD ctr-1]: tables charged to the pod's memory cgroup ($MEMROOT$CGT/podtenant-1/nshash-ctr-1)" \
		"the pod's own cgroup (pod<K8S_POD_UID>): charged"
	[ "$used" -ge $((2097152 * 3 / 4)) ] && pass "... it holds $used bytes for the 2097152 bytes of tables" ||
		fail "the pod's own cgroup holds only $used bytes (tables: 2097152; stderr: $CNI_ERR)"
	assert_eq "0" "$(find "$MEMROOT$CGT/podtenant-1" -mindepth 1 -type d | wc -l)" "... and its transient leaf is gone"
else
	echo "# no cgroup-v1 memory hierarchy at $MEMROOT: cgroupPath checks not run here (tests/unit/test_cni.c has them)"
fi

# ---- the result cannot be written: exit 1 and say so
new_pin
errf=$D/err
$TO env CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_IFNAME=eth0 CNI_NETNS="$P" "$CNI_PLUGIN" <"$D/conf.json" >&- 2>"$errf"
assert_eq 1 "$?" "stdout closed: exit 1"
assert_contains "$(cat "$errf")" "write the result to stdout: Bad file descriptor" "stdout closed: said on stderr"
new_pin
$TO env CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_IFNAME=eth0 CNI_NETNS="$P" "$CNI_PLUGIN" <"$D/conf.json" >/dev/full 2>"$errf"
assert_eq 1 "$?" "stdout full: exit 1"
assert_contains "$(cat "$errf")" "write the result to stdout: No space left on device" "stdout full: said on stderr"

assert_host_untouched
