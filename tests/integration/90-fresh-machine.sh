#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-timeout: 2700
# A new user's first hour: the README's set-up lines, run as written on a bare
# Debian 12 (debootstrap --variant=minbase bookworm: root, no sudo, no git, no
# make) entered as a container (tests/lib/chroot.sh chroot_run: its own mount,
# PID, UTS and IPC namespaces, pivot_root, /proc, /sys with the host's cgroup
# layout, /dev, /run: user namespaces, podman, Docker and containerd work in
# it as on a machine), on the committed HEAD of this checkout.
#
# What runs in there: `apt-get install -y git make`, `git clone`, `make demo`
# end to end (deps installed with apt, build, netns and containers side by
# side), then the WHOLE `make check`: every unit and integration test and the
# sanitized run, each program PASS, 0 failed, at least FLOOR assertions.  In
# there 90-fresh-machine and 91-package are skipped (NSHASH_IN_FRESH_ROOT=1,
# asserted below): no fresh root inside the fresh root; this test does 91's
# steps in the root itself.  Then what a new user does next: `make deb`,
# `apt-get install ./build/deb/nshash_*.deb`, `nshash check`, a sized podman
# container with the shipped drop-in linked, `apt-get purge nshash`: nothing
# of the package left, /run/nshash empty, no pin in the root.
# NSHASH_FRESH_TESTS=subset: make check limited to the unit tests and
# 10-cli 11-templates 30-oci-runtime (a few minutes, for developers); another
# list of names: those.  The network namespace is the host's (apt needs the
# archive); every test cleans up what it makes there, as on the host.
# Needs Debian's archive (deb.debian.org or NSHASH_DEBIAN_MIRROR); where
# debootstrap cannot reach it the test says so and counts as failed.
# Cache: tests/lib/chroot.sh (base tarball and .debs under /var/cache/nshash-tests).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/chroot.sh"
[ -n "${NSHASH_IN_FRESH_ROOT:-}" ] &&
	skip_test "this make check runs inside 90-fresh-machine's fresh root (NSHASH_IN_FRESH_ROOT=1): no fresh root in there"
test_needs root knobs

# The whole make check in the root has at least this many assertions (the
# host's less 90's and 91's; measured: 3043 on 2026-12-03 before 73-k8s-kubelet and 76-78).
FLOOR=3000
case "${NSHASH_FRESH_TESTS:-all}" in
all) SUBSET= ;;
subset) SUBSET="10-cli 11-templates 30-oci-runtime" ;;
*) SUBSET=$NSHASH_FRESH_TESTS ;;
esac
git -C "$TOP" rev-parse --verify -q HEAD >/dev/null || cannot_run "$TOP is not a git checkout"
[ -n "$(git -C "$TOP" status --porcelain --untracked-files=no)" ] &&
	echo "# note: uncommitted changes in $TOP are not tested (the root clones HEAD)"

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
[ -n "$SUBSET" ] && block=${block//make check/NSHASH_TESTS=\"$SUBSET\" make check}
for w in sudo; do
	assert_eq "" "$(grep -w "$w" <<<"$block")" "the set-up lines do not need $w"
done
# The package's install line, as README.md and docs/oci.md give it.
install_line=$(grep -o 'apt-get install \./build/deb/nshash_\*\.deb' "$TOP/README.md" | head -1)
assert_eq 'apt-get install ./build/deb/nshash_*.deb' "$install_line" "the README names the package's install line"

# After the README's lines, in the same machine: the package (item 4 of the
# first hour).  --network none: podman's default bridge would be the host's
# podman0 (the network namespace is shared), which other users of this host
# may have.
next='
cd /root/nshash
echo "== deb"; make deb >/root/deb.log 2>&1; echo "deb-rc=$?"; grep -E "^[EW]: |Error" /root/deb.log
echo "== install"; '"$install_line"' -y >/root/pkg.log 2>&1; echo "install-rc=$?"; tail -3 /root/pkg.log
echo "== check"; nshash check; echo "check-rc=$?"
echo "== podman"
mkdir -p /root/rootfs/bin && cp "$(command -v busybox)" /root/rootfs/bin/
'"$(chroot_podman_lines localhost/fresh-bb)"'
podman run --rm --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 localhost/fresh-bb \
	sh -c "echo sized \$(cat /proc/sys/net/ipv4/tcp_ehash_entries) \$(cat /proc/sys/net/ipv4/udp_hash_entries)" 2>&1
podman rmi -f localhost/fresh-bb >/dev/null 2>&1
echo "pins after --rm: $(ls /run/nshash/pins 2>/dev/null | wc -l)"
echo "== purge"
dpkg-query -L nshash >/root/nshash.files
apt-get -o Dpkg::Use-Pty=0 purge -y nshash >>/root/pkg.log 2>&1; echo "purge-rc=$?"
rm /etc/containers/containers.conf.d/50-nshash-hooks.conf # the link the user made
echo "status: $(dpkg-query -W -f="\${db:Status-Abbrev}" nshash 2>/dev/null || echo gone)"
# Every file of the package, and its own directories (a shared one, /usr/bin, stays).
while read -r f; do
	if [ -d "$f" ]; then case $f in *nshash*) echo "LEFT $f" ;; esac
	elif [ -e "$f" ] || [ -L "$f" ]; then echo "LEFT $f"; fi
done </root/nshash.files
echo "files listed: $(wc -l </root/nshash.files)"
echo "run-nshash: [$(ls -A /run/nshash 2>/dev/null | tr "\n" " ")]"
echo "nsfs mounts: $(grep -c " - nsfs " /proc/self/mountinfo)"
grep " - nsfs " /proc/self/mountinfo | cut -d" " -f5 | sed "s/^/nsfs at /"
'
out=$R/root/fresh.log
CHROOT_ENV=NSHASH_IN_FRESH_ROOT=1 chroot_run "$R" "(set -e; cd /root; $block
) >/root/fresh.log 2>&1; echo \$? >/root/fresh.rc; ($next) >/root/next.log 2>&1" 2>&1
rc=$(cat "$R/root/fresh.rc" 2>/dev/null || echo none)
took=$((SECONDS - start))
echo "# the README's lines in the fresh root: exit $rc ($took s), output:"
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

# make check: every program ran and passed (90 and 91 skipped, saying why),
# and the total is make check's last line.
units=$(cd "$TOP/tests/unit" && ls test_*.c 2>/dev/null | sed 's/\.c$//')
if [ -n "$SUBSET" ]; then
	programs="$units $SUBSET"
else
	programs="$units $(cd "$TOP/tests/integration" && ls [0-9]*.sh | sed 's/\.sh$//' | grep -vx '90-fresh-machine\|91-package') sanitized"
	for t in 90-fresh-machine 91-package; do
		assert_eq 1 "$(grep -cE "^$t +SKIP " "$out")" "make check in the fresh root: $t skipped"
	done
	assert_contains "$(cat "$out")" "---- 90-fresh-machine skipped: this make check runs inside 90-fresh-machine's fresh root" "and the inner 90 says why"
	assert_contains "$(cat "$out")" "---- 91-package skipped: this make check runs inside 90-fresh-machine's fresh root" "and the inner 91 says why"
fi
for t in $programs; do
	assert_eq 1 "$(grep -cE "^$t +PASS " "$out")" "make check in the fresh root: $t passed"
done
result=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
echo "# make check in the fresh root: ${result:-no result line}"
assert_eq 1 "$(grep -cE '^[0-9]+ passed, [0-9]+ failed$' "$out")" "make check printed one total"
assert_eq "${result#* passed, }" "0 failed" "make check in the fresh root: nothing failed"
n=${result%% passed*}
if [ -z "$SUBSET" ]; then
	[ "${n:-0}" -ge $FLOOR ] && pass "the whole make check ran: $n assertions >= $FLOOR" ||
		fail "the whole make check ran: ${n:-no} assertions, expected >= $FLOOR"
fi

# The inner logs stay on the host (the root goes at exit); a failed program's
# whole log goes into this one.
rm -rf "$BUILD/fresh-root-logs" && cp -r "$R/root/nshash/build/test-logs" "$BUILD/fresh-root-logs" 2>/dev/null &&
	echo "# the inner programs' logs: $BUILD/fresh-root-logs"
for t in $(sed -n 's/^\([^ ]*\) \+FAIL (.*/\1/p' "$out"); do
	echo "# the inner $t.log:"
	sed 's/^/#   | /' "$R/root/nshash/build/test-logs/$t.log"
done

# The package, after make check, in the same root.
nx=$(cat "$R/root/next.log")
echo "# the package in the fresh root:"
sed 's/^/#   /' <<<"$nx"
assert_contains "$nx" "deb-rc=0" "make deb in the fresh root (the deps make check installed suffice)"
assert_contains "$nx" "install-rc=0" "$install_line pulls what it needs"
assert_contains "$nx" "result: ok" "nshash check right after the install: result ok"
assert_contains "$nx" "check-rc=0" "nshash check exits 0"
assert_eq "sized 4096 1024" "$(grep '^sized ' <<<"$nx")" "podman with the shipped drop-in linked: a container with tcp_ehash_entries 4096, udp_hash_entries 1024"
assert_contains "$nx" "pins after --rm: 0" "and its pin removed after --rm"
assert_contains "$nx" "purge-rc=0" "apt-get purge nshash"
assert_eq 1 "$(grep -cE '^status: (gone|un|pn) *$' <<<"$nx")" "dpkg: nshash not installed, no config left (purged)"
assert_eq "" "$(grep '^LEFT ' <<<"$nx")" "no file of the package left after the purge"
assert_eq 1 "$(grep -cE '^files listed: [1-9][0-9]+$' <<<"$nx")" "(the package's list had its files)"
assert_contains "$nx" "run-nshash: []" "/run/nshash empty or absent"
assert_contains "$nx" "nsfs mounts: 0" "no pin left in the root (make check's and the package's)"
echo "# took $((SECONDS - start)) s"
chroot_remove "$R"
assert_eq "" "$(awk -v d="$R" 'index($5, d) == 1' /proc/self/mountinfo)" "no mount of the root left on the host"
assert_host_untouched
