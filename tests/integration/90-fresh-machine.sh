#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A new user's first five minutes: the README's set-up lines, run as written
# in a bare Debian 12 (debootstrap --variant=minbase bookworm chroot; root, no
# sudo, no git, no make), on the committed HEAD of this checkout.
#
# What runs in there: `apt-get install -y git make`, `git clone`, `make demo`
# end to end (deps installed with apt, build, netns and containers side by
# side), then `make check` restricted to a subset (NSHASH_FRESH_TESTS, default
# below): the unit tests and a few integration tests, since the whole suite
# again inside the chroot would double the time of `make check`.
# Needs Debian's archive (deb.debian.org or NSHASH_DEBIAN_MIRROR); where
# debootstrap cannot reach it the test says so and counts as failed.
# Cache: tests/lib/chroot.sh (base tarball and .debs under /var/cache/nshash-tests).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/chroot.sh"
require_root
require_kernel_knobs

SUBSET=${NSHASH_FRESH_TESTS:-10-cli 11-templates 30-oci-runtime}
git -C "$TOP" rev-parse --verify -q HEAD >/dev/null || cannot_run "$TOP is not a git checkout"
[ -n "$(git -C "$TOP" status --porcelain --untracked-files=no)" ] &&
	echo "# note: uncommitted changes in $TOP are not tested (the chroot clones HEAD)"

start=$SECONDS
chroot_base
echo "# base ready ($((SECONDS - start)) s)"
R=$(mktemp -d /var/tmp/nshash-fresh.XXXXXX)
chroot_new "$R"
# HEAD and its branch (a clone of HEAD alone would be a detached checkout).
branch=$(git -C "$TOP" symbolic-ref -q --short HEAD || true)
git -C "$TOP" bundle create "$R/root/nshash.bundle" HEAD $branch >/dev/null 2>&1 || cannot_run "git bundle of HEAD failed"

# The README's set-up block, the URL pointing at the bundle of HEAD.
block=$(awk '/^```sh$/ && !done {on = 1; next} on && /^```$/ {exit} on' "$TOP/README.md")
assert_contains "$block" "make demo" "the README's first block runs make demo"
assert_contains "$block" "git clone URL nshash" "and clones with git clone URL"
block=${block//git clone URL/git clone \/root\/nshash.bundle}
block=${block//make check/NSHASH_TESTS=\"$SUBSET\" make check}
for w in sudo; do
	assert_eq "" "$(grep -w "$w" <<<"$block")" "the set-up lines do not need $w"
done

out=$R/root/fresh.log
chroot_run "$R" "set -e; cd /root; $block" >"$out" 2>&1
rc=$?
echo "# the README's lines in the chroot: exit $rc ($((SECONDS - start)) s), output:"
sed 's/^/#   /' "$out"
assert_eq 0 "$rc" "the README's set-up lines succeed on a bare Debian 12"
assert_contains "$(cat "$out")" "nshash deps: apt-get install" "the deps step reports itself"
# From the first make on (the README's own apt-get line prints what apt prints).
made=$(sed -n '/^nshash deps:/,$p' "$out")
assert_eq 0 "$(grep -c '^\(Get\|Unpacking\|Setting up\|Selecting\|Preparing\|Reading\|Building\)[: ]' <<<"$made")" "make prints no apt/dpkg output"
assert_eq 2 "$(grep -c '^nshash deps: apt-get .* done' <<<"$made")" "the deps step: one line for update, one for install"
assert_eq "" "$(grep -E 'fatal error|command not found|No such file' "$out")" "no missing header or command"
[ -s "$R/root/nshash/build/deps.log" ] && pass "apt's output is in build/deps.log" || fail "no build/deps.log"
# make demo: sized namespaces and containers really had their tables.
assert_contains "$(cat "$out")" "asked tcp=4096   udp=1024   -> tcp_ehash_entries=4096 " "demo: a 4096/1024 netns"
assert_contains "$(cat "$out")" "runc, io.nshash.tcp=4096 io.nshash.udp=1024:   tcp_ehash_entries=4096" "demo: a sized runc container"
assert_contains "$(cat "$out")" "podman, io.nshash.tcp=4096 io.nshash.udp=1024: tcp_ehash_entries=4096" "demo: a sized podman container"
# make check (the subset): every program ran and passed.
units=$(cd "$TOP/tests/unit" && ls test_*.c 2>/dev/null | sed 's/\.c$//')
for t in $units $SUBSET; do
	assert_eq 1 "$(grep -cE "^$t +PASS" "$out")" "make check in the chroot: $t passed"
done
assert_eq 1 "$(grep -cE '^[0-9]+ passed, 0 failed$' "$out")" "make check in the chroot: nothing failed"
assert_host_untouched
