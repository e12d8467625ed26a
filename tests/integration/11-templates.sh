#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Templates: damaged ones (knobs changed by someone else, pin gone, an empty
# file left by a crash) are detected and rebuilt; the nested strategy works
# for an unprivileged user inside `unshare -Urm`.
source "$(dirname "$0")/../lib/common.sh"
test_needs root knobs

STATE=$(make_state_dir)
export NSHASH_STATE_DIR=$STATE
D=$(mktemp -d /run/nshash-t11.XXXXXX)
on_exit "for f in $D/*; do umount -l \$f; done; rm -rf $D"
T=$STATE/templates/tcp4096-udp1024

nshash create --tcp 4096 --udp 1024 "$D/a" >/dev/null
assert_eq "4096 1024" "$(netns_sizes_at "$D/a")" "first create builds the template"
assert_eq "4096 1024" "$(nsenter --net="$T" sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_child_ehash_entries) $(cat /proc/sys/net/ipv4/udp_child_hash_entries)"')" "template has the child knobs"
assert_eq "0 0" "$(host_knobs)" "host knobs untouched"

# Someone changes the template's knobs behind our back.
nsenter --net="$T" sh -c 'echo 64 > /proc/sys/net/ipv4/tcp_child_ehash_entries'
assert_eq "true" "$(nshash list --json | jq -r ".[] | select(.path == \"$T\") | .damaged")" "list flags the template as damaged"
nshash create --tcp 4096 --udp 1024 "$D/b" >/dev/null
assert_eq "4096 1024" "$(netns_sizes_at "$D/b")" "create after the knobs were changed still gets 4096/1024"
assert_eq "false" "$(nshash list --json | jq -r ".[] | select(.path == \"$T\") | .damaged")" "the template was rebuilt"

# The pin disappears (someone unmounted it): an empty file remains.
umount "$T"
assert_eq "0" "$(nshash_pin_state=$(nshash list --json | jq -r ".[] | select(.path == \"$T\") | .pinned"); [ "$nshash_pin_state" = false ] && echo 0 || echo 1)" "list sees the template unmounted"
nshash create --tcp 4096 --udp 1024 "$D/c" >/dev/null
assert_eq "4096 1024" "$(netns_sizes_at "$D/c")" "create after the template pin vanished gets 4096/1024"
assert_eq "1" "$(awk -v p="$T" '$9 == "nsfs" && $5 == p' /proc/self/mountinfo | wc -l)" "exactly one template pin again"

# The template file is removed entirely.
umount -l "$T"; rm -f "$T"
nshash create --tcp 4096 --udp 1024 "$D/d" >/dev/null
assert_eq "4096 1024" "$(netns_sizes_at "$D/d")" "create after the template file was removed"

# gc removes a damaged template and keeps a healthy one.
nshash create --tcp 128 --udp 128 "$D/e" >/dev/null
nsenter --net="$STATE/templates/tcp128-udp128" sh -c 'echo 0 > /proc/sys/net/ipv4/udp_child_hash_entries'
out=$(nshash gc --json)
# (Only counts of what this test made: /run/netns may hold anyone's netns.)
assert_eq "1 0 1" "$(jq -r '"\(.templates_removed) \(.orphans_removed) \(.kept)"' <<<"$out")" "gc removes the damaged template only; kept: the one healthy template (not others' netns)"
assert_eq "$STATE/templates/tcp128-udp128 damaged template" "$(jq -r '.paths[] | "\(.path) \(.why)"' <<<"$out")" "gc names the damaged template's path and why"
assert_eq "true false" "$(nshash list --json | jq -r ".[] | select(.path == \"$T\") | \"\(.pinned) \(.damaged)\"")" "gc kept the healthy template"
assert_eq "" "$(ls "$STATE/templates/tcp128-udp128" 2>/dev/null)" "damaged template file gone"
assert_eq "4096 1024" "$(netns_sizes_at "$D/a")" "existing netns keep their tables after gc"

# A stale empty pin file (creator killed between claiming and binding), in
# the state dir: delete removes it (elsewhere an empty file is not taken for
# a pin: 40-hostile-input).
touch -d '-2 minutes' "$STATE/stale" 2>/dev/null || touch "$STATE/stale"
assert_rc 0 "delete of a stale pin file" -- nshash delete "$STATE/stale"

# Nested, as an unprivileged user in its own user+mount+net namespace: no state dir.
# Without -n the caller cannot come back into its own netns: a helper
# process makes the sized netns (what rootless podman's hooks need).
out=$(unshare -Urm --propagation private sh -c "mount -t tmpfs none /mnt && $NSHASH create --tcp 1000 --udp 100 /mnt/x >/dev/null && nsenter --net=/mnt/x cat /proc/sys/net/ipv4/tcp_ehash_entries /proc/sys/net/ipv4/udp_hash_entries" 2>&1)
assert_eq "1024 128" "$(echo $out)" "unshare -Urm without -n: a helper process makes the sized netns"
out=$(unshare -Urmn --propagation private sh -c "mount -t tmpfs none /mnt && $NSHASH create --strategy nested --tcp 1000 --udp 100 --json /mnt/x && nsenter --net=/mnt/x cat /proc/sys/net/ipv4/tcp_ehash_entries" 2>&1)
assert_contains "$out" '"entries":1024' "nested strategy inside unshare -Urm: tcp 1024"
assert_eq "1024" "$(tail -1 <<<"$out")" "nested netns read back 1024 inside the user namespace"
# uid 65534 runs a copy anyone can reach (the checkout may be under /root, 0700).
U=$(mktemp -d /tmp/nshash-t11-bin.XXXXXX)
on_exit "rm -rf $U"
chmod 0755 "$U" && cp "$NSHASH" "$U/nshash" && chmod 0755 "$U/nshash"
nobody_out=$(setpriv --reuid=65534 --regid=65534 --clear-groups unshare -Urmn --propagation private sh -c "mount -t tmpfs none /mnt && $U/nshash create --strategy nested --udp 4096 /mnt/y >/dev/null && nsenter --net=/mnt/y cat /proc/sys/net/ipv4/udp_hash_entries" 2>&1)
assert_eq "4096" "$nobody_out" "uid 65534 can size its own netns with the nested strategy"
# Without privileges, a clear error.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$U/nshash" create --strategy nested --tcp 8 /tmp/nshash-t11-nope 2>&1)
rc=$?
assert_eq 1 "$rc" "unprivileged create exits 1"
assert_contains "$out" "needs CAP_SYS_ADMIN" "unprivileged create says what is missing"
assert_eq "" "$(ls /tmp/nshash-t11-nope 2>/dev/null)" "unprivileged create left no file"
assert_host_untouched
