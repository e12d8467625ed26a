#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian packages: `make deb` builds them lintian-clean (no error, no
# warning); on a bare Debian 12 (minbase chroot, tests/lib/chroot.sh)
# `apt-get install ./nshash_*.deb ...` pulls what they need, puts every file
# where it belongs (binaries, CNI plugin, hooks, policy conffile, gc timer,
# man pages, library, header) and `nshash check` passes right after; podman's
# one-step set-up (the shipped containers.conf drop-in) sizes a --network none
# container; a program builds against libnshash-dev; purge removes the policy.
# Needs Debian's archive, like 90-fresh-machine.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/chroot.sh"
[ -n "${NSHASH_IN_FRESH_ROOT:-}" ] &&
	skip_test "this make check runs inside 90-fresh-machine's fresh root (NSHASH_IN_FRESH_ROOT=1): no fresh root in there; 90 builds, installs, checks and purges the package in that root itself"
test_needs root knobs

start=$SECONDS
log=$(mktemp /tmp/nshash-t91.XXXXXX)
on_exit "rm -f $log"
make -C "$TOP" deb >"$log" 2>&1
rc=$?
assert_eq 0 "$rc" "make deb ($((SECONDS - start)) s)"
[ $rc -eq 0 ] || { sed 's/^/#   /' "$log" | tail -30; exit 1; }
lint=$(grep -E '^[EW]: ' "$TOP/build/deb/lintian.log")
assert_eq "" "$lint" "lintian: no error or warning"
debs=$(cd "$TOP/build/deb" && ls nshash_*.deb libnshash1_*.deb libnshash-dev_*.deb 2>/dev/null | tr '\n' ' ')
assert_eq 3 "$(wc -w <<<"$debs")" "three packages: nshash, libnshash1, libnshash-dev"

chroot_base
R=$(mktemp -d /var/tmp/nshash-pkg.XXXXXX)
chroot_new "$R"
mkdir "$R/root/debs" && (cd "$TOP/build/deb" && cp $debs "$R/root/debs/")
# The container test needs podman and a busybox image: podman from apt, the
# image from the host's busybox-static (no registry).
mkdir -p "$R/root/rootfs/bin" && cp "$(command -v busybox)" "$R/root/rootfs/bin/busybox"

out=$(chroot_run "$R" '
set -e
cd /root/debs
apt-get -o Dpkg::Use-Pty=0 update >/root/apt.log 2>&1
apt-get -o Dpkg::Use-Pty=0 install -y ./nshash_*.deb ./libnshash1_*.deb ./libnshash-dev_*.deb >>/root/apt.log 2>&1 || { tail -20 /root/apt.log; exit 1; }
echo "== check"; nshash check; echo "check-rc=$?"
echo "== files"
for f in /usr/bin/nshash /usr/bin/nshash-hook /usr/bin/nshash-runtime /usr/bin/nshash-cni-install /usr/lib/cni/nshash \
	/usr/share/nshash/verify-hooks.d/nshash-verify.json /usr/share/nshash/podman-hooks.d/nshash-precreate.json \
	/usr/share/nshash/containers.conf.d/50-nshash-hooks.conf /etc/nshash/nshash.json \
	/usr/share/nshash/podman-defaults-hooks.d/nshash-precreate.json /usr/share/nshash/containers.conf.d/51-nshash-hooks-defaults.conf \
	/lib/systemd/system/nshash-gc.service /lib/systemd/system/nshash-gc.timer \
	/etc/systemd/system/timers.target.wants/nshash-gc.timer \
	/usr/share/man/man8/nshash.8.gz /usr/share/man/man8/nshash-hook.8.gz /usr/share/man/man8/nshash-runtime.8.gz \
	/usr/share/man/man8/nshash-cni.8.gz /usr/share/man/man8/nshash-cni-install.8.gz /usr/share/man/man5/nshash.json.5.gz /usr/include/nshash.h \
	/usr/lib/x86_64-linux-gnu/libnshash.so.1 /usr/lib/x86_64-linux-gnu/libnshash.so /usr/lib/x86_64-linux-gnu/libnshash.a; do
	[ -e "$f" ] && echo "have $f" || echo "MISSING $f"
done
echo "conffiles: $(cat /var/lib/dpkg/info/nshash.conffiles)"
grep -h "\"path\"" /usr/share/nshash/verify-hooks.d/nshash-verify.json /usr/share/nshash/podman-hooks.d/nshash-precreate.json
echo "== create"; nshash create --tcp 4096 --udp 1024 pkg-test >/dev/null && ip netns exec pkg-test cat /proc/sys/net/ipv4/tcp_ehash_entries; nshash delete pkg-test
echo "== podman"
apt-get -o Dpkg::Use-Pty=0 install -y podman runc >>/root/apt.log 2>&1 || { tail -20 /root/apt.log; exit 1; }
'"$(chroot_podman_lines localhost/bb)"'
podman run --rm --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 localhost/bb \
	sh -c "echo sized \$(cat /proc/sys/net/ipv4/tcp_ehash_entries) \$(cat /proc/sys/net/ipv4/udp_hash_entries)" 2>&1 || true
sleep 1
echo "pins left: $(ls /run/nshash/pins 2>/dev/null | wc -l)"
echo "== who"
nshash-runtime --version | head -1
/usr/lib/cni/nshash </dev/null 2>&1 | head -1
echo "== dev"
printf "#include <nshash.h>\n#include <stdio.h>\nint main(void){printf(\"%%u\\\\n\", nshash_size_effective(NSHASH_UDP, 1000));return 0;}\n" >/tmp/u.c
apt-get -o Dpkg::Use-Pty=0 install -y gcc libc6-dev >>/root/apt.log 2>&1 && gcc -o /tmp/u /tmp/u.c -lnshash && /tmp/u
nshash record >/dev/null; echo "history: $(ls /var/lib/nshash | tr "\n" " ")"
echo "== purge"
apt-get -o Dpkg::Use-Pty=0 purge -y nshash >>/root/apt.log 2>&1
ls /etc/nshash 2>&1 | head -1; ls -d /var/lib/nshash 2>&1 | head -1; ls /usr/lib/cni/nshash 2>&1 | head -1
echo "run-nshash: [$(ls -A /run/nshash 2>/dev/null | tr "\n" " ")]"
echo "nsfs mounts: $(grep -c " - nsfs " /proc/self/mountinfo)"
' 2>&1)
echo "$out" | sed 's/^/#   /'
assert_contains "$out" "result: ok" "nshash check right after apt-get install: result ok"
assert_contains "$out" "check-rc=0" "nshash check exits 0"
assert_eq "" "$(grep MISSING <<<"$out")" "every file in place (binaries, CNI plugin, hooks, policy, timer enabled, man pages, library, header)"
assert_contains "$out" "conffiles: /etc/nshash/nshash.json" "the policy is a conffile"
assert_eq 2 "$(grep -c '"path": "/usr/bin/nshash-hook"' <<<"$out")" "the hooks point at /usr/bin/nshash-hook"
assert_eq 4096 "$(sed -n '/^== create/{n;p}' <<<"$out")" "nshash create from the package: tcp 4096"
assert_contains "$out" "sized 4096 1024" "podman with the one linked drop-in: a --network none container sized 4096/1024"
assert_contains "$out" "pins left: 0" "and its pin removed after --rm"
assert_eq 1024 "$(sed -n '/^== dev/{n;p}' <<<"$out")" "a program builds and runs against libnshash-dev"
assert_contains "$(sed -n '/^== who/{n;p}' <<<"$out")" "nshash-runtime version " "the installed nshash-runtime names itself"
assert_contains "$(sed -n '/^== who/{n;n;p}' <<<"$out")" "CNI nshash plugin version " "the installed CNI plugin, run by hand, names itself"
assert_contains "$(sed -n '/^== purge/,$p' <<<"$out")" "ls: cannot access '/etc/nshash'" "purge removes /etc/nshash"
assert_contains "$out" "history: history history.idx " "nshash record with the default state dir keeps the history in /var/lib/nshash"
assert_contains "$(sed -n '/^== purge/,$p' <<<"$out")" "ls: cannot access '/var/lib/nshash'" "purge removes /var/lib/nshash (the auto history)"
# The podman container left a template and spares there (each a pinned netns).
assert_contains "$(sed -n '/^== purge/,$p' <<<"$out")" "run-nshash: []" "removing the package removes /run/nshash (its idle templates and spares)"
assert_contains "$(sed -n '/^== purge/,$p' <<<"$out")" "nsfs mounts: 0" "and no pin is left in the root"
echo "# took $((SECONDS - start)) s"
assert_host_untouched
