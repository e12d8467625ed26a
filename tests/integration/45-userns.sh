#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# User-namespaced containers (issue 22): a bundle with a user namespace of
# its own (linux.namespaces {"type": "user"} without a path and
# uidMappings/gidMappings) starts through nshash-runtime, with runc and
# with crun, in a sized netns owned by its user namespace: exact sizes
# read inside, the bundle's uid_map/gid_map inside, sysfs mounted (what
# failed before: "mount sysfs ... operation not permitted"), lo up, the
# netns's owner the container's user namespace (lsns ONS), the bundle
# untouched, the table memory in the ledger (`nshash list`) and the budget,
# no pin left after run, delete and a failed create (a bad mapping, named).
# podman rootful --uidmap and --userns=auto (a `containers` entry added to
# /etc/subuid and /etc/subgid for the test, the files restored byte for
# byte), --network none and the default bridge, through the precreate
# hook: sized, eth0 configured, both pins gone after.  The node's
# defaultTcp/defaultUdp size such a container asking nothing the same way
# (the wrapper, and podman with the hooks file for every container); with
# the host's network or a joined netns it runs unsized, not refused.  A user
# namespace pin left without its netns pin goes with the reclaim.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs
command -v runc >/dev/null || skip_test "runc missing"

engines_oci_setup
on_exit "umount -l '$S/userns' 2>/dev/null"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
ROOT=$D/runc-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
export NSHASH_POLICY=$P
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries) $(ip -o link show lo | grep -c "[<,]UP[,>]"); cat /proc/self/uid_map /proc/self/gid_map; grep -c " /sys sysfs " /proc/self/mounts'
MAP='         0     100000      65536'
EACH=$((4096 * 8 + 1024 * 64)) # tcp 4096 + udp 1024 table bytes

# the rootfs owned by the container's root (host uid 100000), who must
# get through $D (mktemp's 0700) to reach it
chmod 0711 "$D"
engines_busybox_rootfs "$D/rootfs"
chown -R 100000:100000 "$D/rootfs"
userns_bundle() { # NAME SCRIPT [K=V...]
	local b=$D/$1 script=$2
	shift 2
	engines_script_bundle "$b" "$D/rootfs" "$script" "$@" &&
		jq '.linux.namespaces += [{"type": "user"}]
		    | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		    | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' \
			"$b/config.json" >"$b/x" && mv "$b/x" "$b/config.json"
}
run_in() { (cd "$D/$1" && nshash-runtime --root "$ROOT" run "$2" 2>>"$D/stderr" </dev/null); }
pins_left() { echo $(($(engines_pins_left "$S") + $(count_pins_under "$S/userns/") + $(count_pins_under "$S/run/"))); }
usage() { nshash --state-dir "$S" list | tail -1; }
# Outside the initial PID namespace (90's fresh root) the kernel refuses
# nsfs file handles of other netns: list then counts a live netns whose pin
# is gone as "not proven alive" (gc's /proc scan is what proves it).
UNPROVEN=
[ "$(stat -L -c %i /proc/self/ns/pid)" = 4026531836 ] ||
	UNPROVEN=", 1 not proven alive (their pin is gone and no nsfs file handle tells here: an older kernel, or a PID namespace of its own; counted until reclaim or gc scans /proc)"

# --- runc: sized, mappings, sysfs
userns_bundle u1 "$SHOW" io.nshash.tcp=4096 io.nshash.udp=1024
sum=$(sha256sum <"$D/u1/config.json")
out=$(run_in u1 t45a)
assert_eq "4096 1024 1
$MAP
$MAP
1" "$out" "runc: tcp=4096 udp=1024 inside, lo up, the bundle's uid_map and gid_map, sysfs mounted"
assert_eq "$sum" "$(sha256sum <"$D/u1/config.json")" "config.json byte for byte"
assert_contains "$(cat "$D/nshash.log")" "t45a: sized netns pinned at $S/run/netns: requested tcp=4096 udp=1024, effective tcp=4096 udp=1024 (owned by the container's user namespace, pinned at $S/run/userns)" \
	"log: sized, owned by the container's user namespace, both pins private"
assert_not_contains "$(cat "$D/stderr")" "sysfs" "no sysfs error"
assert_eq 0 "$(pins_left)" "no pin left after the container exited"

# --- a container reading its own config (runtime-tools' runtimetest reads
# /config.json): the sized copy bound over it keeps the file's owner and
# mode, so a root that is not the host's can read it as it could the original
userns_bundle u9 'head -c 1 /config.json' io.nshash.tcp=4096
cp -a "$D/rootfs/." "$D/u9/" # the bundle is its own rootfs, as runtime-tools makes them
jq '.root.path = "."' "$D/u9/config.json" >"$D/x" && mv "$D/x" "$D/u9/config.json" && chmod 0644 "$D/u9/config.json"
assert_eq "{" "$(run_in u9 t45m)" "the container's root (host uid 100000) reads its /config.json, the sized copy (mode 0644 kept)"

# --- runtime args instead of annotations
userns_bundle u2 "$SHOW"
out=$(cd "$D/u2" && nshash-runtime --nshash-tcp=8192 --root "$ROOT" run t45b 2>>"$D/stderr" </dev/null)
assert_eq "8192 -$(cat /proc/sys/net/ipv4/udp_hash_entries) 1" "$(head -1 <<<"$out")" "runc: --nshash-tcp=8192 inside, udp shared"
assert_eq "$MAP" "$(sed -n 2p <<<"$out")" "... in the bundle's user namespace"

# --- create / start / delete: owner, ledger, budget
userns_bundle u3 "sleep 600" io.nshash.tcp=4096 io.nshash.udp=1024
nshash --state-dir "$S" gc >/dev/null 2>&1
nshash-runtime --root "$ROOT" create -b "$D/u3" t45c >"$D/u3.out" 2>&1 </dev/null
assert_eq 0 $? "create through the wrapper"
pid=$(runc --root "$ROOT" state t45c | jq -r .pid)
assert_eq "4096 1024" "$(netns_sizes_of_pid "$pid")" "the created container's netns is sized"
owner=$(lsns -n -o ONS -t net -p "$pid" 2>/dev/null | head -1 | tr -d ' ')
mine=$(stat -L -c %i "/proc/$pid/ns/user")
assert_eq "$mine" "$owner" "its netns is owned by its user namespace (lsns ONS)"
assert_eq "$MAP" "$(cat "/proc/$pid/uid_map")" "its user namespace has the bundle's mappings"
assert_eq 0 "$(pins_left)" "no pin while the container exists (its init holds both namespaces)"
# gc reconciles the ledger with a /proc scan: what it still counts is held
nshash --state-dir "$S" gc >/dev/null 2>&1
assert_eq "table memory: $EACH bytes (96 KiB) in 1 netns sized by nshash$UNPROVEN" \
	"$(usage)" "nshash list counts its tables after gc (its init holds them)"
stats=$(nshash --state-dir "$S" stats "/proc/$pid/ns/net" 2>&1)
assert_contains "$stats" "own 4096" "nshash stats shows its own tcp table"
# the budget: one more would pass it
engines_policy "$D/policy-budget.json" "{\"stateDir\": \"$S\", \"maxTableBytes\": $EACH}"
userns_bundle u4 "$SHOW" io.nshash.tcp=4096 io.nshash.udp=1024
out=$(cd "$D/u4" && NSHASH_POLICY=$D/policy-budget.json nshash-runtime --root "$ROOT" run t45d 2>&1 </dev/null)
assert_contains "$out" "table memory budget: maxTableBytes $EACH would be passed: $EACH bytes in use by 1 network namespace(s), this request (tcp 4096, udp 1024) needs $EACH bytes" \
	"the budget counts the user-namespaced container's tables"
assert_eq "" "$(runc --root "$ROOT" list -q | grep t45d)" "the refused container was not created"
nshash-runtime --root "$ROOT" delete -f t45c
assert_eq 0 $? "delete --force through the wrapper"
nshash --state-dir "$S" gc >/dev/null 2>&1
assert_eq "table memory: 0 bytes (0 KiB) in 0 netns sized by nshash" "$(usage)" "deleted: its tables no longer counted"
assert_eq 0 "$(pins_left)" "no pin left after delete"

# --- a wrapper killed after sizing, before the runtime joined: its private
# mount namespace, with both pins, dies with it (the runtime here is a
# script that waits to be killed, as the wrapper exec'd it)
printf '#!/bin/sh\necho $$ >"%s/hung.pid"\nexec sleep 600\n' "$D" >"$D/hung-runtime"
chmod +x "$D/hung-runtime"
engines_policy "$D/policy-hung.json" "{\"stateDir\": \"$S\", \"runtime\": \"$D/hung-runtime\"}"
userns_bundle u10 "$SHOW" io.nshash.tcp=4096 io.nshash.udp=1024
(cd "$D/u10" && NSHASH_POLICY=$D/policy-hung.json exec nshash-runtime --root "$ROOT" create t45n >/dev/null 2>&1 </dev/null) &
HUNG=$!
for _ in $(seq 100); do [ -s "$D/hung.pid" ] && break; sleep 0.1; done
nshash --state-dir "$S" gc >/dev/null 2>&1
assert_eq "table memory: $EACH bytes (96 KiB) in 1 netns sized by nshash$UNPROVEN" \
	"$(usage)" "sized, the runtime not yet there: its netns counted (held by the private pin)"
kill -9 "$(cat "$D/hung.pid")"
wait $HUNG 2>/dev/null
nshash --state-dir "$S" gc >/dev/null 2>&1
assert_eq "table memory: 0 bytes (0 KiB) in 0 netns sized by nshash" "$(usage)" "the wrapper killed: both pins gone with its mount namespace, nothing counted"
assert_eq 0 "$(pins_left)" "... no pin anywhere"

# --- joining an existing user namespace by path (podman --userns=container:X,
# runtime-tools linux_ns_path): the netns is made in that one
unshare --user sleep 600 &
UHOLD=$!
on_exit "kill $UHOLD"
for _ in $(seq 50); do [ "$(stat -L -c %i /proc/$UHOLD/ns/user)" != "$(stat -L -c %i /proc/self/ns/user)" ] && break; sleep 0.1; done
echo "0 100000 65536" >/proc/$UHOLD/uid_map && echo "0 100000 65536" >/proc/$UHOLD/gid_map
userns_bundle u11 "$SHOW" io.nshash.tcp=4096 io.nshash.udp=1024
jq --arg p "/proc/$UHOLD/ns/user" '.linux.namespaces |= map(if .type == "user" then .path = $p else . end)' \
	"$D/u11/config.json" >"$D/x" && mv "$D/x" "$D/u11/config.json"
assert_eq "4096 1024 1
$MAP
$MAP
1" "$(run_in u11 t45o)" "a user namespace joined by path: sized, its mappings, sysfs"
assert_contains "$(cat "$D/nshash.log")" "t45o: sized netns pinned at $S/run/netns: requested tcp=4096 udp=1024, effective tcp=4096 udp=1024" \
	"... logged"
jq '.linux.namespaces |= map(if .type == "user" then .path = "/etc/hostname" else . end)' "$D/u11/config.json" >"$D/u12.json"
mkdir -p "$D/u12" && mv "$D/u12.json" "$D/u12/config.json"
out=$(cd "$D/u12" && nshash-runtime --root "$ROOT" run t45p 2>&1 </dev/null)
assert_contains "$out" "config: linux.namespaces: user namespace /etc/hostname: not a namespace (no nsfs pin there)" \
	"a user namespace path that is no namespace: refused, named"
kill $UHOLD

# --- bad mappings: named, nothing left
userns_bundle u5 "$SHOW" io.nshash.tcp=4096
jq '.linux.uidMappings += [{"containerID": 10, "hostID": 300000, "size": 5}]' "$D/u5/config.json" >"$D/x" && mv "$D/x" "$D/u5/config.json"
out=$(cd "$D/u5" && nshash-runtime --root "$ROOT" run t45e 2>&1 </dev/null)
assert_contains "$out" "write uid_map \"0 100000 65536,10 300000 5\" of the new user namespace: Invalid argument (overlapping ranges" \
	"overlapping uid mappings: the kernel's refusal, naming them"
jq '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": -1}]' "$D/u1/config.json" >"$D/u5/config.json"
out=$(cd "$D/u5" && nshash-runtime --root "$ROOT" run t45f 2>&1 </dev/null)
assert_contains "$out" "config: linux.uidMappings[0].size: -1 is outside 0..4294967295" "a negative size: named"
jq 'del(.linux.gidMappings)' "$D/u1/config.json" >"$D/u5/config.json"
out=$(cd "$D/u5" && nshash-runtime --root "$ROOT" run t45g 2>&1 </dev/null)
assert_contains "$out" "a new user namespace (linux.namespaces {\"type\": \"user\"}) without linux.gidMappings" "no gidMappings: named"
assert_eq "" "$(runc --root "$ROOT" list -q | grep -E 't45[efg]')" "no refused container created"
assert_eq 0 "$(pins_left)" "no pin left after the refused creates"
nshash --state-dir "$S" gc >/dev/null 2>&1
assert_eq "table memory: 0 bytes (0 KiB) in 0 netns sized by nshash" "$(usage)" "nothing counted after the refused creates"

# --- a create failing in runc after sizing (bad rootfs): nothing left
userns_bundle u6 "$SHOW" io.nshash.tcp=4096
jq '.root.path = "/nonexistent-rootfs"' "$D/u6/config.json" >"$D/x" && mv "$D/x" "$D/u6/config.json"
(cd "$D/u6" && nshash-runtime --root "$ROOT" create t45h >/dev/null 2>&1 </dev/null)
assert_eq 0 "$(pins_left)" "a create failing in runc leaves no pin"
nshash-runtime --root "$ROOT" delete -f t45h >/dev/null 2>&1

# --- shared mount propagation with a user namespace: refused, named
userns_bundle u7 "$SHOW" io.nshash.tcp=4096
jq '.linux.rootfsPropagation = "rshared"' "$D/u7/config.json" >"$D/x" && mv "$D/x" "$D/u7/config.json"
out=$(cd "$D/u7" && nshash-runtime --root "$ROOT" run t45i 2>&1 </dev/null)
assert_contains "$out" "cannot size tcp=4096 udp=0: the container has a user namespace of its own and asks for shared mount propagation" \
	"shared propagation + user namespace: refused before runc, naming the user namespace"
assert_not_contains "$out" "sysfs" "... never runc's sysfs error"

# --- the node's defaults (defaultTcp/defaultUdp) for a bundle asking
# nothing: a netns its user namespace owns, as for an annotation; the host's
# network or a joined netns: unsized, never refused
DP=$D/policy-defaults.json
engines_policy "$DP" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"defaultTcp\": 4096, \"defaultUdp\": 1024}"
userns_bundle u13 "$SHOW"
out=$(cd "$D/u13" && NSHASH_POLICY=$DP nshash-runtime --root "$ROOT" run t45q 2>>"$D/stderr" </dev/null)
assert_eq "4096 1024 1
$MAP
$MAP
1" "$out" "defaults, runc: tcp=4096 udp=1024 inside, the bundle's mappings, sysfs mounted"
assert_contains "$(cat "$D/nshash.log")" "t45q: sized netns pinned at $S/run/netns: requested tcp=4096 udp=1024 (the node's defaultTcp/defaultUdp), effective tcp=4096 udp=1024 (owned by the container's user namespace, pinned at $S/run/userns)" \
	"defaults: logged as the node's, owned by the container's user namespace"
assert_eq 0 "$(pins_left)" "defaults: no pin left"
GTCP=$(cat /proc/sys/net/ipv4/tcp_ehash_entries) GUDP=$(cat /proc/sys/net/ipv4/udp_hash_entries)
NSIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries); cat /proc/self/uid_map'
userns_bundle u14 "$NSIZES"
# no sysfs mount: a user namespace cannot mount the sysfs of a netns it does
# not own (plain runc fails the same: "mount sysfs ... operation not permitted")
NOSYS='.mounts |= map(select(.destination != "/sys"))'
jq ".linux.namespaces |= map(select(.type != \"network\")) | $NOSYS" "$D/u14/config.json" >"$D/x" && mv "$D/x" "$D/u14/config.json"
out=$(cd "$D/u14" && NSHASH_POLICY=$DP nshash-runtime --root "$ROOT" run t45r 2>&1 </dev/null)
assert_eq "$GTCP $GUDP
$MAP" "$out" "defaults, user namespace, no network entry: runs in the host's netns, in its user namespace, not refused"
assert_contains "$(cat "$D/nshash.log")" "t45r: asked for no sizes: the node's defaults tcp=4096 udp=1024 do not apply, it runs unsized: it shares the host's network namespace (no network namespace entry)" \
	"... the log says why"
touch "$D/joined-net" && unshare --net="$D/joined-net" true && on_exit "umount '$D/joined-net' 2>/dev/null"
userns_bundle u15 "$NSIZES"
jq --arg p "$D/joined-net" ".linux.namespaces |= map(if .type == \"network\" then .path = \$p else . end) | $NOSYS" \
	"$D/u15/config.json" >"$D/x" && mv "$D/x" "$D/u15/config.json"
out=$(cd "$D/u15" && NSHASH_POLICY=$DP nshash-runtime --root "$ROOT" run t45s 2>&1 </dev/null)
assert_eq "-$GTCP -$GUDP
$MAP" "$out" "defaults, user namespace, joining a netns: joins it unsized, not refused"
assert_contains "$(cat "$D/nshash.log")" "t45s: asked for no sizes: the node's defaults tcp=4096 udp=1024 do not apply, it runs unsized: it joins the network namespace $D/joined-net (tcp=-$GTCP udp=-$GUDP)" \
	"... the log names the netns"
umount "$D/joined-net"
assert_eq 0 "$(pins_left)" "defaults, unsized: no pin left"

# --- crun, where its cgroup mode allows (engines_crun_ns)
if command -v crun >/dev/null; then
	engines_policy "$D/policy-crun.json" "{\"stateDir\": \"$S\", \"runtime\": \"crun\"}"
	out=$(cd "$D/u1" && NSHASH_POLICY=$D/policy-crun.json engines_crun_ns nshash-runtime --root "$D/crun-root" run t45j 2>>"$D/stderr" </dev/null)
	assert_eq "4096 1024 1
$MAP
$MAP
1" "$out" "crun: sizes, mappings, sysfs inside"
	assert_eq 0 "$(pins_left)" "crun: no pin left"
fi

# --- podman through the precreate hook
if command -v podman >/dev/null; then
	engines_iptables_snapshot nsh45 10.145.0.
	engines_hooks_dir "$D/hooks" "$P"
	engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]" || cannot_run "podman setup failed"
	# The bridge containers run on a network of the test's own (not podman's
	# default "podman" on podman0, which podman on the machine shares, and
	# which the cleanup would not remove: a later run's teardown, e.g. the
	# fresh root's, then fails on it and leaves podman's netns pin)
	ip route | grep -q '^10\.145\.0\.' && cannot_run "10.145.0.0/24 is already routed here"
	podman network create --subnet 10.145.0.0/24 nsh45 >/dev/null || cannot_run "podman network create failed"
	jq '.network_interface = "nsh45br0"' "$D/podman/networks/nsh45.json" >"$D/n.json" &&
		mv "$D/n.json" "$D/podman/networks/nsh45.json"
	echo 'default_network = "nsh45"' >>"$CONTAINERS_CONF" # [network] is the file's last section
	IMG=localhost/nshash-busybox
	PSHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries); cat /proc/self/uid_map; grep -c " /sys sysfs " /proc/self/mounts'
	hook_pins_gone() {
		for _ in $(seq 50); do [ "$(pins_left)" = 0 ] && [ -z "$(ls "$S/pins" "$S/userns" 2>/dev/null | grep oci-)" ] && return 0; sleep 0.1; done
		return 1
	}
	out=$(podman run --rm --uidmap 0:100000:65536 --gidmap 0:100000:65536 --network none \
		--annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 $IMG sh -c "$PSHOW" 2>"$D/perr")
	assert_eq "4096 1024
$MAP
1" "$out" "podman --uidmap --network none: sized, its mappings, sysfs"
	hook_pins_gone && pass "podman: netns and user namespace pins removed" || fail "podman: pins left: $(ls "$S/pins" "$S/userns")"
	assert_contains "$(cat "$D/nshash.log")" "and its user namespace's pin $S/userns/oci-" "the hook's child removed both pins"

	before_netns=$(ls /run/netns 2>/dev/null)
	out=$(podman run --rm --uidmap 0:100000:65536 --gidmap 0:100000:65536 \
		--annotation io.nshash.tcp=4096 $IMG sh -c 'cat /proc/sys/net/ipv4/tcp_ehash_entries; ip -o -4 addr show eth0 | grep -c "inet "; ip route | grep -c "^default"' 2>"$D/perr")
	assert_eq "4096
1
1" "$out" "podman --uidmap, default bridge: sized, eth0 with an address, a default route"
	hook_pins_gone && pass "podman bridge: pins removed" || fail "podman bridge: pins left"
	# podman binds a user-namespaced container's netns at /run/netns/netns-UUID
	# for its network teardown; once --rm is done nothing holds it.  podman
	# 4.3 leaves that pin in a minimal root (measured in 90-fresh-machine's
	# root, with no nshash at all; docs/runtimes.md): then the pin, not
	# nshash, holds the tables; the test removes what its container left.
	sleep 1
	for f in $(comm -13 <(sort <<<"$before_netns") <(ls /run/netns 2>/dev/null | sort)); do
		grep -q " /run/netns/$f .* - nsfs " /proc/self/mountinfo || continue
		echo "# podman left its pin /run/netns/$f of the --rm container (podman's own; removed here)"
		umount "/run/netns/$f" && rm -f "/run/netns/$f"
	done
	nshash --state-dir "$S" gc >/dev/null 2>&1
	assert_eq "table memory: 0 bytes (0 KiB) in 0 netns sized by nshash" "$(usage)" \
		"podman bridge: its tables no longer counted after --rm (podman's own pin of it gone)"

	# --userns=auto needs a `containers` range: added for this test only
	cp -p /etc/subuid "$D/subuid.orig" && cp -p /etc/subgid "$D/subgid.orig" || cannot_run "cannot save /etc/subuid"
	on_exit "cat '$D/subuid.orig' >/etc/subuid; cat '$D/subgid.orig' >/etc/subgid"
	echo "containers:400000:65536" >>/etc/subuid
	echo "containers:400000:65536" >>/etc/subgid
	out=$(podman run --rm --userns=auto --network none --annotation io.nshash.tcp=4096 $IMG sh -c "$PSHOW" 2>"$D/perr")
	first=$(sed -n 1p <<<"$out")
	host=$(sed -n 2p <<<"$out" | awk '{print $2}')
	assert_eq "4096 -$(cat /proc/sys/net/ipv4/udp_hash_entries)" "$first" "podman --userns=auto --network none: sized"
	[ -n "$host" ] && [ "$host" -ge 400000 ] && [ "$host" -lt 465536 ] &&
		pass "... in an auto user namespace from the containers range (root = host uid $host)" ||
		fail "... uid_map inside: $(sed -n 2p <<<"$out") ($(cat "$D/perr"))"
	assert_eq 1 "$(sed -n 3p <<<"$out")" "... sysfs mounted"
	hook_pins_gone && pass "podman --userns=auto: pins removed" || fail "podman --userns=auto: pins left"
	cat "$D/subuid.orig" >/etc/subuid
	cat "$D/subgid.orig" >/etc/subgid
	assert_eq "$(sha256sum <"$D/subuid.orig") $(sha256sum <"$D/subgid.orig")" "$(sha256sum </etc/subuid) $(sha256sum </etc/subgid)" \
		"/etc/subuid and /etc/subgid as they were"

	# the node's defaults, through the opt-in hooks file for every container
	HD=$D/hooks-defaults
	mkdir -p "$HD"
	jq --arg p "$BUILD/nshash-hook" --arg pol "$DP" '.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' \
		"$TOP/hook/defaults-hooks.d/nshash-precreate.json" >"$HD/nshash-precreate.json"
	: >"$D/nshash.log"
	out=$(podman --hooks-dir "$HD" run --rm --uidmap 0:100000:65536 --gidmap 0:100000:65536 --network none \
		$IMG sh -c "$PSHOW" 2>"$D/perr")
	assert_eq "4096 1024
$MAP
1" "$out" "podman --uidmap --network none, defaults: sized, its mappings, sysfs"
	assert_contains "$(cat "$D/nshash.log")" "requested tcp=4096 udp=1024 (the node's defaultTcp/defaultUdp), effective tcp=4096 udp=1024 (owned by the container's user namespace, pinned at $S/userns/oci-" \
		"podman, defaults: the hook made the netns in the container's user namespace"
	hook_pins_gone && pass "podman, defaults: pins removed" || fail "podman, defaults: pins left"
	out=$(podman --hooks-dir "$HD" run --rm --uidmap 0:100000:65536 --gidmap 0:100000:65536 --network host \
		$IMG sh -c 'cat /proc/sys/net/ipv4/tcp_ehash_entries' 2>&1)
	assert_eq "$GTCP" "$out" "podman --uidmap --network host, defaults: starts in the host's netns, not refused"
	assert_contains "$(cat "$D/nshash.log")" "do not apply, it runs unsized: it shares the host's network namespace" "... the log says why"

	# a running one counts in the ledger
	podman run -d --name t45k --uidmap 0:100000:65536 --gidmap 0:100000:65536 --network none \
		--annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 $IMG sleep 600 >/dev/null 2>"$D/perr"
	hook_pins_gone
	nshash --state-dir "$S" gc >/dev/null 2>&1
	assert_eq "table memory: $EACH bytes (96 KiB) in 1 netns sized by nshash$UNPROVEN" \
		"$(usage)" "a running podman user-namespaced container: its tables counted"
	podman rm -f -t 0 t45k >/dev/null 2>&1
	nshash --state-dir "$S" gc >/dev/null 2>&1
	assert_eq "table memory: 0 bytes (0 KiB) in 0 netns sized by nshash" "$(usage)" "... and no longer once removed"
fi

# --- a user namespace pin whose netns pin is gone goes with the reclaim
mkdir -p "$S/userns"
unshare --user sleep 600 &
HOLDER=$!
on_exit "kill $HOLDER"
sleep 0.2
touch "$S/userns/oci-left" "$S/userns/oci-kept" "$S/pins/oci-kept"
mount --bind "/proc/$HOLDER/ns/user" "$S/userns/oci-kept"
touch -d '-2 hours' "$S/userns/oci-left" # a claim a killed hook left, unmounted
engines_policy "$D/policy-reclaim.json" "{\"stateDir\": \"$S\", \"reclaimInterval\": 0, \"logFile\": \"$D/reclaim.log\"}"
userns_bundle u8 "true"
(cd "$D/u8" && NSHASH_POLICY=$D/policy-reclaim.json nshash-runtime --root "$ROOT" run t45l >/dev/null 2>&1 </dev/null)
[ -e "$S/userns/oci-left" ] && fail "the stale user namespace claim was not swept" || pass "a user namespace pin without its netns pin, older than staleAge, swept"
assert_contains "$(cat "$D/reclaim.log")" "; removed 1 user namespace pin(s) under $S/userns whose netns pin is gone" "... and logged"
assert_eq 1 "$(count_pins_under "$S/userns/")" "a user namespace pin whose netns pin exists is kept"
umount "$S/userns/oci-kept"
rm -f "$S/userns/oci-kept" "$S/pins/oci-kept"
kill $HOLDER

# --- the CNI plugin, for a netns owned by a pod's own user namespace: what
# containerd 1.7 does for hostUsers: false (runc makes the netns with the
# sandbox in its user namespace, containerd pins it from the sandbox's pid
# and runs ADD), and CRI-O (pinns makes it there, nothing inside): a pod
# that asked for no sizes (the network's apply to it) passes through on the
# shared tables; one that annotates sizes is refused, naming the user
# namespace and what was seen; the netns untouched either way
CS=$(make_state_dir)
cni_node_policy "$D/cni-policy.json" "$CS"
cni_pod_cgroup podu-1 # the sandbox's: where ADD looks for a process inside
sh -c 'echo $$ >"$1/cgroup.procs" && exec unshare --user --net sleep 600' sh "$CNI_PODCG_DIR" &
SANDBOX=$!
on_exit "kill $SANDBOX"
for _ in $(seq 50); do [ "$(stat -L -c %i /proc/$SANDBOX/ns/net)" != "$(stat -L -c %i /proc/self/ns/net)" ] && break; sleep 0.1; done
touch "$CS/cni-uns" && mount --bind "/proc/$SANDBOX/ns/net" "$CS/cni-uns"
on_exit "umount '$CS/cni-uns'"
before=$(netns_inode_at "$CS/cni-uns")
cni_call ADD "$CS/cni-uns" '{"cniVersion": "1.0.0", "name": "n", "type": "nshash", "tcp": 4096}'
assert_eq "0 $before" "$CNI_RC $(netns_inode_at "$CS/cni-uns")" "CNI ADD, the network's sizes only, on a netns a pod's user namespace owns: passes through, the netns left in place"
assert_contains "$CNI_ERR" "$CS/cni-uns is owned by the pod's own user namespace (Kubernetes hostUsers: false): left on the shared tables; the pod asked for no sizes" "... saying so"
# CRI-O runs CHECK for the pod's status: what ADD passed stays passed
cni_call CHECK "$CS/cni-uns" '{"cniVersion": "1.0.0", "name": "n", "type": "nshash", "tcp": 4096, "prevResult": {"cniVersion": "1.0.0"}}'
assert_cni_ok_silent "CNI CHECK of that pod, the network's sizes only: passes too (CRI-O failed its status on it)"
UNS_ANN='{"cniVersion": "1.0.0", "name": "n", "type": "nshash", "tcp": 4096, "maxTcp": 8192, "runtimeConfig": {"io.kubernetes.cri.pod-annotations": {"io.nshash.tcp": "8192"}, "cgroupPath": "'$CNI_PODCG'"}}'
cni_call ADD "$CS/cni-uns" "$UNS_ANN" CNI_ARGS="K8S_POD_UID=u-1"
assert_cni_error 100 "it is owned by the pod's own user namespace (Kubernetes hostUsers: false (process $SANDBOX, sleep, already inside: the OCI runtime made it with the sandbox)); a replacement made here would be the host user namespace's" \
	"CNI ADD with a pod annotation on a netns a pod's user namespace owns: refused, naming it"
assert_eq "$before" "$(netns_inode_at "$CS/cni-uns")" "... the pod's netns left in place"
cni_call ADD "$CS/cni-uns" "$UNS_ANN" CNI_ARGS="K8S_POD_UID=v-1"
assert_cni_error 100 "(Kubernetes hostUsers: false (no pod cgroup to look in for a process inside)); a replacement made here" \
	"... without the pod's own cgroup (not this pod's cgroupPath): refused, not looked for a process"
kill $SANDBOX
wait $SANDBOX 2>/dev/null
cni_call ADD "$CS/cni-uns" "$UNS_ANN" CNI_ARGS="K8S_POD_UID=u-1"
assert_cni_error 100 "(Kubernetes hostUsers: false (no process of the pod inside: the runtime made it there before ADD, as CRI-O's pinns does))" \
	"... and with nothing inside (CRI-O's pinns): refused, saying what was seen"
assert_eq "$before" "$(netns_inode_at "$CS/cni-uns")" "... the netns left in place"
umount "$CS/cni-uns"

assert_host_untouched
