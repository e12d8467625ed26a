#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rootless: a real unprivileged user (created here, removed at exit) runs
# rootless podman with nshash's hooks: --network none plus annotations gives
# exactly the asked sizes (the hook, root only in podman's user namespace,
# makes the sized netns through a helper process), the verify hook checks
# it, the pin goes away; without annotations nothing changes; with
# --userns=keep-id (a user namespace of the container's own inside
# podman's) the hook makes that user namespace and its sized netns.  The
# user's own CLI errors say what to do.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs useradd newuidmap

U=nshr$$
U=${U:0:31}
D=$(mktemp -d "/tmp/nshash-$T_NAME.XXXXXX")
chmod 755 "$D"
on_exit "rm -rf '$D'"
# a user with subordinate ids of its own (ranges nobody else on this machine uses)
SUB=$((300000 + ($$ % 1000) * 65536))
useradd -M -d "$D/home" -s /bin/sh "$U" || cannot_run "useradd $U failed"
on_exit "userdel_all"
userdel_all() {
	local p
	# the user's processes (podman's pause process, conmon, containers), by pid
	for p in /proc/[0-9]*; do
		[ "$(stat -c %u "$p" 2>/dev/null)" = "$(id -u "$U")" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	sleep 0.2
	userdel "$U"
	sed -i "/^$U:/d" /etc/subuid /etc/subgid
}
sed -i "/^$U:/d" /etc/subuid /etc/subgid
echo "$U:$SUB:65536" >>/etc/subuid
echo "$U:$SUB:65536" >>/etc/subgid
mkdir -p "$D/home" "$D/run" "$D/bin" "$D/hooks"
chown "$U:$U" "$D/home" "$D/run"
chmod 700 "$D/run"
cp "$BUILD/nshash" "$BUILD/nshash-hook" "$D/bin/" && chmod 755 "$D/bin"/*
# From the user's home: the checkout may be where the user cannot go (a
# clone in root's 0700 home: podman then fails with "cannot chdir").
as_user() { (cd "$D/home" && setpriv --reuid="$U" --regid="$U" --init-groups env -i HOME="$D/home" XDG_RUNTIME_DIR="$D/run" \
	PATH=/usr/sbin:/usr/bin:/sbin:/bin PODMAN_IGNORE_CGROUPSV1_WARNING=1 "$@"); }

# the policy and hooks.d files the user's podman reads
STATE=$D/run/nshash
echo "{\"stateDir\": \"$STATE\", \"logFile\": \"$D/home/nshash.log\"}" >"$D/policy.json"
# the user's own policy: root of its user namespace (the hook's view) owns it
chown "$U:$U" "$D/policy.json"
for f in "$TOP"/hook/hooks.d/*.json; do
	jq --arg p "$D/bin/nshash-hook" --arg pol "$D/policy.json" \
		'.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' "$f" >"$D/hooks/$(basename "$f")"
done
mkdir -p "$D/home/.config/containers"
cat >"$D/home/.config/containers/containers.conf" <<EOF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
hooks_dir = ["$D/hooks"]
EOF
chown -R "$U:$U" "$D/home"
engines_busybox_rootfs "$D/rootfs"
tar -C "$D/rootfs" -c . | as_user podman import -q - localhost/nshash-busybox >/dev/null 2>"$D/import.err" ||
	cannot_run "rootless podman cannot import an image here: $(tail -5 "$D/import.err" | tr "\n" " ")"
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GLOBAL="-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)"

out=$(as_user podman run --rm --network none localhost/nshash-busybox sh -c "$SHOW" 2>&1)
assert_eq "$GLOBAL" "$out" "rootless podman, no annotations: shared tables"
out=$(as_user podman run --rm --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 \
	localhost/nshash-busybox sh -c "$SHOW" 2>&1)
assert_eq "4096 1024" "$out" "rootless podman --network none + annotations: tcp=4096 udp=1024"
log=$(cat "$D/home/nshash.log" 2>/dev/null)
assert_contains "$log" "sized netns pinned at $STATE/pins/oci-" "the precreate hook pinned it under the user's state dir"
for _ in $(seq 30); do grep -q "removed pin" <<<"$(cat "$D/home/nshash.log")" && break; sleep 0.2; done
assert_contains "$(cat "$D/home/nshash.log")" "removed pin $STATE/pins/oci-" "the precreate hook's child removed the pin (inside the user namespace)"
assert_contains "$(cat "$D/home/nshash.log")" ", the container's init, holds the netns)" "... once the init was in the netns"
assert_eq "" "$(ls "$STATE/pins" 2>/dev/null)" "no pin file left"
# --userns=keep-id: a user namespace of the container's own inside podman's;
# the hook makes it (its map maps podman's root: CAP_SETFCAP) and its netns
out=$(as_user podman run --rm --userns=keep-id --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 \
	localhost/nshash-busybox sh -c "$SHOW; cat /proc/self/uid_map | wc -l; grep -c ' /sys sysfs ' /proc/self/mounts; id -u" 2>&1)
assert_eq "4096 1024
3
1
$(id -u "$U")" "$out" "rootless --userns=keep-id --network none: sized, keep-id's 3 mappings, sysfs, the user's uid inside"
for _ in $(seq 30); do grep -q "and its user namespace's pin" "$D/home/nshash.log" && break; sleep 0.2; done
assert_contains "$(cat "$D/home/nshash.log")" "and its user namespace's pin $STATE/userns/oci-" "... both pins removed by the hook's child"
assert_eq "" "$(ls "$STATE/pins" "$STATE/userns" 2>/dev/null | grep oci-)" "... no pin file left"
out=$(as_user podman run --rm --network none --annotation io.nshash.tcp=lots localhost/nshash-busybox true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "rootless: a bad annotation is refused (exit $rc)" || fail "rootless: a bad annotation: started"
# podman 4.3 drops a precreate hook's stderr, and from inside its user
# namespace the hook may not open podman's own stderr: the reason is in the
# log file (and syslog)
assert_contains "$(cat "$D/home/nshash.log")" 'io.nshash.tcp: "lots" is not a decimal number of entries' "rootless: the reason is logged"

# the CLI as that user: every error says what to do
N=$D/bin/nshash
# Root's state dir as on a machine where root ran nshash (a fresh one has
# none): made here if missing, removed at exit.
[ -d /run/nshash ] || { mkdir -m 0700 /run/nshash 2>/dev/null && on_exit "rmdir /run/nshash"; }
# And root's /run/netns as ip netns makes it.
[ -d /run/netns ] || { mkdir -m 0755 /run/netns 2>/dev/null && on_exit "rmdir /run/netns"; }
out=$(cd / && as_user unshare -Urn "$N" --state-dir /run/nshash create --tcp 64 "$D/run/x" 2>&1)
assert_contains "$out" "(the template strategy keeps state there: use --state-dir with a directory you own, or --strategy nested, which keeps none)" "unshare -Urn, root's state dir: the lock error says what to do"
out=$(cd / && as_user unshare -Urn "$N" create --strategy nested --tcp 64 "$D/run/x" 2>&1)
assert_contains "$out" "bind mount: Operation not permitted (pins are bind mounts and need CAP_SYS_ADMIN over the mount namespace: run as root, or inside a user namespace give it a mount namespace of its own, e.g. unshare -Urmn, not unshare -Urn)" "unshare -Urn without -m: says to add a mount namespace"
out=$(cd / && as_user unshare -Urmn "$N" create --strategy nested --tcp 64 "nshash-t39-$$" 2>&1)
assert_contains "$out" "Permission denied (the directory belongs to someone else: give a path in a directory you own, e.g. under \$XDG_RUNTIME_DIR, or run as root)" "a name under root's /run/netns: says where to pin instead"
out=$(cd / && as_user "$N" create --strategy nested --tcp 64 "$D/run/y" 2>&1)
assert_contains "$out" "enter network namespaces: Operation not permitted (needs CAP_SYS_ADMIN and CAP_NET_ADMIN; run as root, or inside a user namespace: unshare -Urmn)" "no user namespace: says how to get one"
out=$(cd / && as_user unshare -Urm "$N" create --tcp 1000 --udp 100 "$D/run/z" 2>&1 && as_user true)
assert_contains "$out" "created $D/run/z" "unshare -Urm (no -n): created through a helper process"

out=$(cd / && as_user "$N" check 2>&1)
assert_contains "$out" "result: this host supports nshash, but you cannot use it as you are (see below)" "check as a user: the host is fine, the user lacks privileges"
assert_contains "$out" "you lack CAP_SYS_ADMIN and CAP_NET_ADMIN: run as root, or inside a user namespace" "check as a user: says what to do"
assert_eq "true false $D/run/nshash" "$(cd / && as_user "$N" check --json 2>/dev/null | jq -r '"\(.host_ok) \(.caller_ok) \(.state_dir)"')" "check --json as a user: host_ok, not caller_ok; the state dir defaults to \$XDG_RUNTIME_DIR/nshash"
assert_eq "true" "$(cd / && as_user unshare -Urmn "$N" check --json 2>/dev/null | jq -r .ok)" "check inside unshare -Urmn (state dir \$XDG_RUNTIME_DIR/nshash): ok"

# list and gc as the user: root's pins are not the user's to judge
HOSTPIN=nshash-t39-$$
on_exit "$BUILD/nshash delete $HOSTPIN"
"$BUILD/nshash" --state-dir "$(make_state_dir)" create --tcp 1024 "$HOSTPIN" >/dev/null || fail "root could not create /run/netns/$HOSTPIN"
touch -d '-1 hour' "/run/netns/$HOSTPIN" 2>/dev/null
out=$(cd / && as_user "$N" --state-dir /run/nshash list 2>&1)
rc=$?
assert_eq 0 "$rc" "list as a user: exit 0 (what it cannot read is not an error)"
assert_contains "$out" "/run/netns/$HOSTPIN (cannot inspect: Operation not permitted)" "list as a user: root's pin is shown as not inspectable"
assert_not_contains "$(grep "$HOSTPIN" <<<"$out")" "stale" "list as a user: ... not as stale"
assert_contains "$out" "/run/nshash/pins: Permission denied: not listed" "list as a user: says which dir it could not read"
# a stale file of root's in the shared /run/netns (an engine killed midway
# leaves one): the user's gc may judge it, not remove it, and goes on
STALE69=/run/netns/nshash-t69-stale-$$
: >"$STALE69" && touch -d '-1 hour' "$STALE69"
on_exit "rm -f $STALE69"
out=$(cd / && as_user unshare -Urm "$N" --state-dir "$D/run/st" gc --stale-age 60 --json 2>"$D/gc69.err")
[ -e "$STALE69" ] && pass "gc inside a user namespace: root's stale file in /run/netns is left to root" ||
	fail "gc inside a user namespace removed $STALE69"
assert_eq "0 0" "$(jq -r '"\(.stale_removed) \(.templates_removed)"' <<<"$out" 2>&1)" \
	"gc inside a user namespace: removes nothing it cannot inspect ($out; stderr: $(head -c 400 "$D/gc69.err"))"
# what it said on stderr, if anything, is only what it was not allowed to do
assert_eq "" "$(grep -v 'Permission denied\|Operation not permitted\|needs CAP_SYS_ADMIN' "$D/gc69.err")" \
	"... and its stderr names only what it may not touch"
assert_eq 1 "$(count_pins_under "/run/netns/$HOSTPIN")" "root's pin is still mounted"
out=$(cd / && as_user "$N" show "$HOSTPIN" 2>&1)
assert_contains "$out" "Operation not permitted (needs CAP_SYS_ADMIN over the user namespace that owns it: run as root" "show of root's pin as a user: says why and what to do"
out=$(cd / && as_user "$N" delete "$HOSTPIN" 2>&1)
assert_contains "$out" "unmount pin /run/netns/$HOSTPIN: Operation not permitted (pins are bind mounts and need CAP_SYS_ADMIN" "delete of root's pin as a user: says why"
assert_eq 1 "$(count_pins_under "/run/netns/$HOSTPIN")" "root's pin survived the user's delete"

# rootless podman's default network (podman 4: slirp4netns, podman 5:
# pasta) needs /dev/net/tun open to users
out=$(as_user podman run --rm localhost/nshash-busybox true 2>&1)
if [ $? -ne 0 ]; then
	echo "# rootless podman's default network does not run here (not nshash's doing): $(tr '\n' ' ' <<<"$out" | cut -c1-200)"
else
	# Measured with podman 5.4 + pasta (make check-engines): refused.  The
	# netns podman made under $XDG_RUNTIME_DIR/netns, with pasta's tap
	# in it, is not one the hook transplants (only root's /run/netns/netns-*).
	out=$(as_user podman run --rm --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 localhost/nshash-busybox \
		sh -c "$SHOW" 2>&1)
	echo "# rootless podman $(engines_podman_major), default network, sized: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	assert_contains "$(cat "$D/home/nshash.log")" "cannot size tcp=4096 udp=1024: network namespace $D/run/netns/netns-" \
		"rootless podman's default network + sizes: refused (podman's own netns under \$XDG_RUNTIME_DIR)"
	assert_contains "$(grep 'tcp=4096 udp=1024' "$D/home/nshash.log")" "already exists (podman made, and maybe configured, it before nshash runs)" \
		"and the hook says podman made it"
	assert_eq "" "$(as_user podman ps -aq 2>/dev/null)" "nothing left of the refused container"
fi
assert_host_untouched
