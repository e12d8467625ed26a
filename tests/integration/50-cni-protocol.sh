#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CNI protocol, run the way a runtime runs the plugin (env + stdin):
# every command x every supported version, exact outputs and error codes,
# prevResult pass-through, DEL idempotency, bad input leaving nothing behind.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq

D=$(make_state_dir)
MOUNTS_BEFORE=$(count_pins_under "$D")
TMPL=$(make_state_dir) # the templates of the default strategy, outside $D
cni_node_policy "$D/node.json" "$TMPL" # the node's state dir: the network config may only name it
n=0
new_pin() { n=$((n + 1)); P=$D/ns$n; cni_pin_netns "$P"; } # sets P
conf() { # VERSION [extra json members]; templates in a private stateDir unless one is given
	local extra=${2:-}
	[[ $extra == *stateDir* ]] || extra+="${extra:+,}\"stateDir\":\"$TMPL\""
	cni_conf net1 "$extra" "$1"
}
# A prevResult in the shape of each result version.
prev_result() {
	case $1 in
	0.3.0 | 0.3.1) echo '{"cniVersion":"'"$1"'","interfaces":[{"name":"cni0","mac":"0a:58:0a:58:00:01"}],"ips":[{"version":"4","address":"10.88.0.5/16","gateway":"10.88.0.1"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{}}' ;;
	0.4.0) echo '{"cniVersion":"0.4.0","interfaces":[{"name":"cni0","mac":"0a:58:0a:58:00:01"}],"ips":[{"version":"4","address":"10.88.0.5/16","gateway":"10.88.0.1"}],"dns":{"nameservers":["10.88.0.1"]}}' ;;
	*) echo '{"cniVersion":"'"$1"'","interfaces":[{"name":"cni0","mac":"0a:58:0a:58:00:01"},{"name":"veth1","mac":"aa:bb:cc:dd:ee:ff"}],"ips":[{"address":"10.88.0.5/16","gateway":"10.88.0.1"}],"routes":[{"dst":"0.0.0.0/0","gw":"10.88.0.1","mtu":1500}],"dns":{"nameservers":["10.88.0.1"],"search":["a.b/c"]},"x-unknown":{"kept":[1,2.50,null,true]}}' ;;
	esac
}

for V in $CNI_VERSIONS; do
	# VERSION
	cni_call VERSION "" "{\"cniVersion\":\"$V\"}"
	assert_eq '{"cniVersion":"1.1.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}' "$CNI_OUT" "$V VERSION lists every supported version"

	# ADD with nothing requested: pass through, first plugin → minimal result
	new_pin
	cni_call ADD "$P" "$(conf "$V")"
	assert_eq "0 {\"cniVersion\":\"$V\"}" "$CNI_RC $CNI_OUT" "$V ADD without sizes, first in chain: minimal result"
	assert_eq "-" "$(netns_sizes_at "$P" | awk '{print ($1 < 0 && $2 < 0) ? "-" : $0}')" "$V ADD without sizes leaves the netns shared"

	# ADD with prevResult and nothing requested: prevResult byte-equivalent
	PR=$(prev_result "$V")
	cni_call ADD "$P" "$(conf "$V" "\"prevResult\":$PR")"
	assert_eq "$PR" "$CNI_OUT" "$V ADD passes prevResult through unchanged (same bytes, same order)"

	# CHECK before ADD (the netns is shared)
	C=$(conf "$V" '"tcp":4096,"udp":1000')
	cni_call CHECK "$P" "$C"
	if [ "$V" = 0.3.0 ] || [ "$V" = 0.3.1 ]; then
		assert_cni_error 1 "CHECK needs cniVersion 0.4.0 or later; the network config says $V" "$V CHECK refused"
	else
		assert_cni_error 104 "requested tcp 4096, udp 1024, the netns has tcp shared" "$V CHECK before ADD names requested and actual sizes"
	fi

	# ADD with sizes on an empty pin: replaced, exact sizes, prevResult out
	INO=$(netns_inode_at "$P")
	cni_call ADD "$P" "$(conf "$V" "\"tcp\":4096,\"udp\":1000,\"prevResult\":$PR")"
	assert_eq "0 $PR" "$CNI_RC $CNI_OUT" "$V ADD with sizes outputs prevResult"
	assert_eq "4096 1024" "$(netns_sizes_at "$P")" "$V ADD sized the netns (4096 / 1000→1024)"
	[ "$(netns_inode_at "$P")" != "$INO" ] && pass "$V ADD replaced the netns at the same path" || fail "$V netns not replaced"
	assert_contains "$CNI_ERR" "replaced $P by a netns with tcp 4096, udp 1024" "$V ADD logs what it did on stderr"

	# CHECK after ADD
	cni_call CHECK "$P" "$C"
	if [ "$V" = 0.3.0 ] || [ "$V" = 0.3.1 ]; then
		assert_cni_error 1 "CHECK needs cniVersion 0.4.0" "$V CHECK refused after ADD"
	else
		assert_cni_ok_silent "$V CHECK after ADD: ok, no output"
		cni_call CHECK "$P" "$(conf "$V" '"tcp":8192,"udp":1024')"
		assert_cni_error 104 "requested tcp 8192, udp 1024, the netns has tcp 4096, udp 1024" "$V CHECK with other sizes names both"
	fi

	# ADD again (already sized): pass through, no replacement
	INO=$(netns_inode_at "$P")
	cni_call ADD "$P" "$C"
	assert_eq "0 {\"cniVersion\":\"$V\"} $INO" "$CNI_RC $CNI_OUT $(netns_inode_at "$P")" "$V ADD on an already sized netns passes through"

	# DEL: always succeeds, silent; repeated, without netns, netns gone
	cni_call DEL "$P" "$(conf "$V" "\"tcp\":4096,\"prevResult\":$PR")"
	assert_cni_ok_silent "$V DEL"
	cni_call DEL "$P" "$C"
	assert_cni_ok_silent "$V DEL repeated"
	cni_call DEL "" "$C"
	assert_cni_ok_silent "$V DEL without CNI_NETNS"
	cni_call DEL "$D/gone" "$C"
	assert_cni_ok_silent "$V DEL with a netns that no longer exists"
	assert_eq "4096 1024" "$(netns_sizes_at "$P")" "$V DEL leaves the runtime's netns alone"

	# STATUS and GC (1.1.0 only)
	cni_call STATUS "" "$C"
	if [ "$V" = 1.1.0 ]; then assert_cni_ok_silent "$V STATUS ready"; else assert_cni_error 1 "STATUS needs cniVersion 1.1.0 or later" "$V STATUS refused"; fi
	cni_call GC "" "$(conf "$V" '"tcp":4096,"cni.dev/valid-attachments":[{"containerID":"x","ifname":"eth0"}]')"
	if [ "$V" = 1.1.0 ]; then assert_cni_ok_silent "$V GC succeeds (no per-attachment state)"; else assert_cni_error 1 "GC needs cniVersion 1.1.0 or later" "$V GC refused"; fi

	# Errors carry the config's version
	cni_call ADD "$P" "$(conf "$V" '"tcp":"4096"')"
	assert_eq "$V" "$(cni_field .cniVersion)" "$V error object stamped with the config's version"
done

V=1.0.0
# ---- strategy template: sized through a template pinned under stateDir
new_pin
cni_node_policy "$D/node-state.json" "$D/state"
cni_call ADD "$P" "$(conf $V "\"tcp\":2048,\"udp\":256,\"strategy\":\"template\",\"spares\":1,\"stateDir\":\"$D/state\"")"
cni_node_policy "$D/node.json" "$TMPL"
assert_eq "0 2048 256" "$CNI_RC $(netns_sizes_at "$P")" "strategy template: exact sizes"
assert_eq "1" "$(count_pins_under "$D/state/templates/")" "strategy template: one template pinned under stateDir"
sleep 0.05
spares_settled "$D/state" # the child making the spare is done
assert_eq "1" "$(count_pins_under "$D/state/spares/")" "and, after the answer, one spare of those sizes"
n=$((n + 2)) # the template and the spare are two more nsfs mounts under $D

# ---- pod annotations through runtimeConfig
ann() { echo "\"runtimeConfig\":{\"io.kubernetes.cri.pod-annotations\":{$1}}"; }
new_pin
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,\"maxTcp\":65536,\"maxUdp\":4096,$(ann '"io.nshash.tcp":"16384","io.nshash.udp":"2000","other":"x"')")"
assert_eq "0 16384 2048" "$CNI_RC $(netns_sizes_at "$P")" "annotations override the defaults within the caps"
new_pin
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,\"maxTcp\":65536,$(ann '"io.nshash.tcp":"131072"')")"
assert_cni_error 102 "tcp size 131072 (effective 131072) is above the allowed maximum 65536 (maxTcp)" "annotation over maxTcp refused"
assert_eq "shared" "$(netns_sizes_at "$P" | awk '$1 < 0 && $2 < 0 {print "shared"}')" "refused annotation leaves the netns shared"
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,$(ann '"io.nshash.tcp":"8192"')")"
assert_cni_error 102 "above the allowed maximum 4096 (maxTcp)" "without maxTcp the network default is the cap"
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,\"maxTcp\":65536,$(ann '"io.nshash.tcp":"0x100"')")"
assert_cni_error 102 'pod annotation io.nshash.tcp: "0x100" is not a decimal number' "hex annotation refused"
cni_call ADD "$P" "$(conf $V "\"maxUdp\":4096,$(ann '"io.nshash.udp":4096')")"
assert_cni_error 102 'pod annotation "io.nshash.udp": 4096 is an integer; expected a string' "non-string annotation refused"
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,\"maxTcp\":65536,$(ann '"io.nshash.tcp":"0"')")"
assert_eq "0 shared" "$CNI_RC $(netns_sizes_at "$P" | awk '$1 < 0 && $2 < 0 {print "shared"}')" "annotation 0 keeps that protocol shared (pass through)"
cni_call DEL "$P" "$(conf $V "\"tcp\":4096,$(ann '"io.nshash.tcp":"999999999"')")"
assert_cni_ok_silent "DEL ignores annotations (even refused ones)"

# ---- bad input: code + message, nothing left
new_pin
INO=$(netns_inode_at "$P")
bad() { # CODE FRAGMENT DESCRIPTION CONFIG [env...]
	local code=$1 frag=$2 desc=$3 c=$4
	shift 4
	cni_call ADD "$P" "$c" "$@"
	assert_cni_error "$code" "$frag" "$desc"
}
bad 6 "unexpected end of input" "truncated JSON" '{"cniVersion":"1.0.0","name":"n","tcp":40'
bad 6 "unexpected data after the JSON object" "trailing junk" '{"cniVersion":"1.0.0"} x'
bad 6 "expected a JSON object" "a JSON array" '[1,2]'
bad 6 "no network config on stdin" "empty stdin" ''
bad 1 "network config has no cniVersion" "missing cniVersion" '{"name":"n","tcp":4096}'
bad 1 'cniVersion "0.2.0" is not supported; nshash supports 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0' "unsupported version" '{"cniVersion":"0.2.0","tcp":4096}'
bad 7 'network config key "tcp": "4096" is a string; expected a JSON integer 0..16777216' 'tcp as a string ("4096")' "$(conf $V '"tcp":"4096"')"
bad 7 'network config key "tcp": 18446744073709551615 is out of range (tcp sizes are 0..16777216' "huge tcp (json-c saturates it)" "$(conf $V '"tcp":99999999999999999999')"
bad 7 'network config key "tcp": 16777217 is out of range' "tcp one above the kernel max" "$(conf $V '"tcp":16777217')"
bad 7 'network config key "udp": -1 is out of range' "negative udp" "$(conf $V '"udp":-1')"
bad 7 'network config key "udp": 65537 is out of range' "udp above 65536" "$(conf $V '"udp":65537')"
bad 7 '"tcp": 4096.0 is a fractional number' "fractional tcp" "$(conf $V '"tcp":4096.0')"
bad 7 '"maxTcp": true is a boolean' "boolean maxTcp" "$(conf $V '"maxTcp":true')"
bad 7 'tcp size 8192 (effective 8192) is above the allowed maximum 4096 (maxTcp)' "default above the cap" "$(conf $V '"tcp":8192,"maxTcp":4096')"
bad 7 '"onFailure": "maybe" is not fail or warn' "bad onFailure" "$(conf $V '"tcp":4096,"onFailure":"maybe"')"
bad 7 '"strategy": "fast" is not template or nested' "bad strategy" "$(conf $V '"tcp":4096,"strategy":"fast"')"
bad 7 '"stateDir": "run/x" is not a clean absolute path' "relative stateDir" "$(conf $V '"tcp":4096,"stateDir":"run/x"')"
bad 7 '"prevResult" is an array' "prevResult not an object" "$(conf $V '"tcp":4096,"prevResult":[]')"
bad 4 "CNI_CONTAINERID" "empty CNI_CONTAINERID" "$(conf $V '"tcp":4096')" CNI_CONTAINERID=
bad 4 "CNI_IFNAME" "missing CNI_IFNAME" "$(conf $V '"tcp":4096')" CNI_IFNAME=
# the node's policy file (docs/cni.md, node settings): unreadable or malformed is
# code 7 naming it; DEL still succeeds
cp "$D/node.json" "$D/node-ww.json" && chmod 0666 "$D/node-ww.json"
bad 7 "node policy: policy file $D/node-ww.json: writable by group or others (mode 0666)" "a world-writable node policy" "$(conf $V '"tcp":4096')" NSHASH_POLICY="$D/node-ww.json"
printf '{"stateDir": "%s", "maxTcp": "big"}' "$TMPL" >"$D/node-bad.json"
bad 7 "node policy: $D/node-bad.json: key \"maxTcp\": expected an integer" "a malformed node policy" "$(conf $V '"tcp":4096')" NSHASH_POLICY="$D/node-bad.json"
cni_call DEL "$P" "$(conf $V '"tcp":4096')" NSHASH_POLICY="$D/node-bad.json"
assert_cni_ok_silent "a malformed node policy: DEL still succeeds"
bad 4 'CNI_COMMAND="FROB" is not a CNI command' "unknown command" "$(conf $V)" CNI_COMMAND=FROB
bad 4 'CNI_NETNS="netns/x" is not an absolute path' "relative CNI_NETNS" "$(conf $V '"tcp":4096')" CNI_NETNS=netns/x
CNI_OUT=$(head -c 17000000 /dev/zero | tr '\0' ' ' | CNI_COMMAND=ADD "$CNI_PLUGIN" 2>/dev/null)
CNI_RC=$?
assert_cni_error 5 "read the network config on stdin: larger than 16777216 bytes" "stdin over 16 MiB refused"
echo plain >"$D/file"
mkdir "$D/dir"
ln -s "$P" "$D/link"
bad 4 "CNI_NETNS=$D/missing is not a network namespace: no such file" "missing CNI_NETNS" "$(conf $V '"tcp":4096')" CNI_NETNS="$D/missing"
bad 4 "CNI_NETNS=$D/file is not a network namespace: a regular file with nothing mounted on it" "CNI_NETNS a regular file" "$(conf $V '"tcp":4096')" CNI_NETNS="$D/file"
bad 4 "CNI_NETNS=$D/dir is not a network namespace: a directory" "CNI_NETNS a directory" "$(conf $V '"tcp":4096')" CNI_NETNS="$D/dir"
bad 100 "it is a symbolic link (to $P), not the runtime's pin" "CNI_NETNS a symlink to a pin" "$(conf $V '"tcp":4096')" CNI_NETNS="$D/link"
assert_eq "$INO plain" "$(netns_inode_at "$P") $(cat "$D/file")" "bad input left the netns and the file untouched"
assert_eq "$n" "$(count_pins_under "$D")" "bad input left no extra mount (one per test pin)"

# CNI_ARGS keys nshash does not know are ignored (cni_call always passes some)
cni_call ADD "$P" "$(conf $V '"tcp":2048')" CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=x;NOEQUALS;A=b=c"
assert_eq "0 2048" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "unknown and odd CNI_ARGS keys ignored"

# ---- the netns cannot be resized
new_pin
cni_call ADD "$P" "$(conf $V "\"tcp\":4096,\"prevResult\":{\"cniVersion\":\"$V\",\"interfaces\":[{\"name\":\"cni0\"},{\"name\":\"eth0\",\"sandbox\":\"$P\"}]}")"
assert_cni_error 100 "prevResult already has container interfaces (eth0), so nshash is not the first plugin; place nshash first" "not first in the chain (prevResult)"
nsenter --net="$P" ip link add v7a type veth peer name v7b
cni_call ADD "$P" "$(conf $V '"tcp":4096')"
assert_cni_error 100 "it already has interfaces besides lo (v7b, v7a); place nshash first" "interfaces already in the netns"
cni_call ADD "$P" "$(conf $V '"tcp":4096,"onFailure":"warn"')"
assert_eq "0 {\"cniVersion\":\"$V\"}" "$CNI_RC $CNI_OUT" "onFailure warn: ADD passes through"
assert_contains "$CNI_ERR" "warning (onFailure warn, code 100)" "onFailure warn: the warning is logged on stderr"
cni_call CHECK "$P" "$(conf $V '"tcp":4096')"
assert_cni_error 104 "requested tcp 4096, udp shared, the netns has tcp shared" "CHECK after a warned ADD under fail reports the mismatch"
cni_call CHECK "$P" "$(conf $V '"tcp":4096,"onFailure":"warn"')"
assert_eq "0" "$CNI_RC" "CHECK under warn: mismatch is a warning"

new_pin
nsenter --net="$P" sleep 60 &
SLEEPER=$!
on_exit "kill $SLEEPER"
for _ in 1 2 3 4 5 6 7 8 9 10; do [ "$(stat -L -c %i /proc/$SLEEPER/ns/net)" = "$(netns_inode_at "$P")" ] && break; sleep 0.1; done
INO=$(netns_inode_at "$P")
# root's process in the pinned netns, no pod cgroup named: not looked for
# (docs/cni.md, "Who can be inside": 41 has the pod's cgroup)
cni_call ADD "$P" "$(conf $V '"tcp":4096')"
assert_eq "0 4096" "$CNI_RC $(netns_sizes_at "$P" | cut -d' ' -f1)" "a process of the node inside, no pod cgroup: sized"
assert_eq "$INO" "$(stat -L -c %i /proc/$SLEEPER/ns/net)" "... it stays in the runtime's netns, now unpinned"
cni_call ADD "/proc/$SLEEPER/ns/net" "$(conf $V '"tcp":4096')"
assert_cni_error 100 "it is a process's netns, created by the runtime with the container already inside" "/proc/PID/ns/net cannot be resized"
assert_contains "$(cni_field .msg)" "use the nshash OCI hook or runtime wrapper" "the error says what to do instead"
kill "$SLEEPER"
wait "$SLEEPER" 2>/dev/null

# ---- STATUS when the plugin lacks privileges
cni_call STATUS "" "$(conf 1.1.0 '"tcp":4096')"
assert_cni_ok_silent "STATUS as root: ready"
for cap in sys_admin net_admin; do
	CNI_OUT=$(printf '%s' "$(conf 1.1.0 '"tcp":4096')" | CNI_COMMAND=STATUS setpriv --bounding-set=-$cap "$CNI_PLUGIN" 2>/dev/null)
	CNI_RC=$?
	assert_cni_error 50 "missing CAP_${cap^^}" "STATUS without CAP_${cap^^}: not ready (50)"
done
# and ADD without it: code 103, the netns untouched (with "spares": 0: a
# spare, made by an earlier ADD's refill, has lo up already and takes no
# CAP_NET_ADMIN)
new_pin
INO=$(netns_inode_at "$P")
CNI_OUT=$(printf '%s' "$(conf 1.0.0 '"tcp":4096,"spares":0')" | CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS="$P" CNI_IFNAME=eth0 \
	setpriv --bounding-set=-net_admin "$CNI_PLUGIN" 2>/dev/null)
CNI_RC=$?
assert_cni_error 103 "missing CAP_NET_ADMIN" "ADD without CAP_NET_ADMIN: code 103"
assert_eq "$INO" "$(netns_inode_at "$P")" "ADD without CAP_NET_ADMIN left the netns alone"

# ---- a user's value echoed back as written; DEL of a config ADD refuses; run by hand
cni_call ADD "$P" "$(conf $V '"tcp":"8192"')"
assert_cni_error 7 'network config key "tcp": "8192" is a string; expected a JSON integer 0..16777216 (write "tcp": 8192, not "8192")' "ADD with \"tcp\": \"8192\": the error echoes the user's 8192"
cni_call ADD "$P" "$(conf $V '"udp":"lots"')"
assert_cni_error 7 '"lots" is a string' "ADD with \"udp\": \"lots\": the error shows \"lots\""
for bad in '"tcp":"8192"' '"tcp":8192,"maxTcp":4096' '"udp":70000' '"tcp":-1'; do
	cni_call DEL "$P" "$(conf $V "$bad")"
	assert_cni_ok_silent "DEL succeeds on a config ADD refuses ($bad)"
	assert_contains "$CNI_ERR" "DEL succeeds despite a network config ADD would refuse" "DEL ($bad) says so on stderr"
done
out=$(env -i PATH=/usr/bin:/bin "$CNI_PLUGIN" </dev/null 2>&1 >/dev/null)
rc=$?
assert_eq 0 "$rc" "the plugin run by hand (no CNI_COMMAND) exits 0, like the reference plugins"
assert_contains "$out" "CNI nshash plugin version $(sed -n 's/.*NSHASH_VERSION[[:space:]]*"\(.*\)"/\1/p' "$TOP/lib/nshash.h")" "it names itself and its version"
assert_contains "$out" "CNI protocol versions supported: ${CNI_VERSIONS// /, }" "and the CNI versions it speaks"
assert_eq "" "$(env -i "$CNI_PLUGIN" </dev/null 2>/dev/null)" "nothing on stdout"

# ---- everything this test made is gone after the pins go; host untouched
assert_host_untouched
