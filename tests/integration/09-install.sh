#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# make install into a DESTDIR (every file, CNIBINDIR, PREFIX), make uninstall,
# man page NAMEs; a program builds against the installed header
# and shared library; the CLI runs clean under valgrind (no leak, no error).
source "$(dirname "$0")/../lib/common.sh"
test_needs root

D=$(mktemp -d /tmp/nshash-t09.XXXXXX)
on_exit "rm -rf $D"
# what 0.1.0 left where podman and CRI-O always look, next to someone else's hook
OLD=$D/usr/share/containers/oci/hooks.d
mkdir -p "$OLD"
echo '{"hook": {"path": "/usr/bin/nshash-hook", "args": ["nshash-hook", "state"]}}' >"$OLD/nshash.json"
echo '{"hook": {"path": "/usr/bin/other-hook"}}' >"$OLD/other.json"
make -C "$TOP" install DESTDIR="$D" PREFIX=/usr >"$D/install.log" 2>&1
assert_eq 0 $? "make install DESTDIR=... PREFIX=/usr"
assert_eq "other.json" "$(ls "$OLD")" "install removed 0.1.0's createRuntime hook file, kept another package's"
for f in usr/bin/nshash usr/include/nshash.h usr/lib/libnshash.a usr/lib/libnshash.so.1 usr/lib/libnshash.so usr/share/man/man8/nshash.8 usr/share/man/man3/libnshash.3; do
	[ -e "$D/$f" ] && pass "installed $f" || fail "installed $f"
done
for f in usr/lib/cni/nshash usr/bin/nshash-hook usr/bin/nshash-runtime usr/bin/nshash-cni-install usr/share/man/man8/nshash-cni-install.8 etc/nshash/nshash.json \
	usr/share/nshash/verify-hooks.d/nshash-verify.json usr/share/nshash/podman-hooks.d/nshash-precreate.json \
	usr/share/nshash/containers.conf.d/50-nshash-hooks.conf usr/lib/systemd/system/nshash-gc.timer; do
	[ -e "$D/$f" ] && pass "installed $f" || fail "installed $f"
done
assert_contains "$(cat "$D/usr/share/nshash/containers.conf.d/50-nshash-hooks.conf")" \
	'hooks_dir = ["/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d", "/usr/share/nshash/podman-hooks.d"]' \
	"the podman drop-in lists podman's default hooks dirs and nshash's"
# opt-in (defaultTcp/defaultUdp): the precreate hook for every container, a drop-in of its own
assert_eq "true" "$(jq .when.always "$D/usr/share/nshash/podman-defaults-hooks.d/nshash-precreate.json")" \
	"the defaults' hooks file runs the hook for every container"
assert_eq "/usr/bin/nshash-hook" "$(jq -r .hook.path "$D/usr/share/nshash/podman-defaults-hooks.d/nshash-precreate.json")" \
	"... the installed nshash-hook"
assert_contains "$(cat "$D/usr/share/nshash/containers.conf.d/51-nshash-hooks-defaults.conf")" \
	'hooks_dir = ["/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d", "/usr/share/nshash/podman-defaults-hooks.d"]' \
	"the defaults' drop-in lists podman's default hooks dirs and that one"
# The CNI plugin follows PREFIX unless CNIBINDIR says otherwise.
make -C "$TOP" install DESTDIR="$D/p2" PREFIX=/opt/nsh >/dev/null 2>&1
[ -x "$D/p2/opt/nsh/lib/cni/nshash" ] && pass "PREFIX=/opt/nsh: the CNI plugin in /opt/nsh/lib/cni" || fail "CNI plugin not under PREFIX"
make -C "$TOP" install DESTDIR="$D/p3" CNIBINDIR=/opt/cni/bin >/dev/null 2>&1
[ -x "$D/p3/opt/cni/bin/nshash" ] && pass "CNIBINDIR=/opt/cni/bin puts it there" || fail "CNIBINDIR ignored"
# make uninstall removes every file install put down (a changed policy stays).
make -C "$TOP" uninstall DESTDIR="$D/p2" PREFIX=/opt/nsh >/dev/null 2>&1
assert_eq "" "$(find "$D/p2" -not -type d)" "make uninstall leaves no file behind"
echo '{"maxTcp": 4096}' >"$D/p3/etc/nshash/nshash.json"
make -C "$TOP" uninstall DESTDIR="$D/p3" CNIBINDIR=/opt/cni/bin >/dev/null 2>&1
assert_eq "$D/p3/etc/nshash/nshash.json" "$(find "$D/p3" -not -type d)" "make uninstall keeps a policy the admin changed"
# Each man page's NAME is its own (apropos lists nshash-cni, not a second nshash).
for m in "$TOP"/docs/man/*.[1-8]; do
	n=$(basename "$m"); n=${n%.*}
	assert_eq "$n" "$(sed -n '/^\.SH NAME/{n;p}' "$m" | sed 's/ \\-.*//')" "man page $(basename "$m"): NAME is $n"
done
exported=$(nm -D --defined-only "$D/usr/lib/libnshash.so.1" | awk '$2 != "A" {print $3}' | grep -vc '^nshash_')
assert_eq 0 "$exported" "the shared library exports only nshash_* symbols"
want=$(grep -o 'nshash_[a-z_0-9]*(' "$D/usr/include/nshash.h" | tr -d '(' | sort -u | tr '\n' ' ')
have=$(nm -D --defined-only "$D/usr/lib/libnshash.so.1" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u | tr '\n' ' ')
assert_eq "$want" "$have" "the shared library exports exactly the functions nshash.h declares"
cat >"$D/use.c" <<'C'
#include <nshash.h>
#include <stdio.h>
int main(void)
{
	struct nshash_error err;
	uint32_t v;
	if (nshash_size_parse(NSHASH_UDP, "udp", "1000", &v, &err) < 0)
		return 1;
	printf("%u\n", nshash_size_effective(NSHASH_UDP, v));
	return nshash_size_parse(NSHASH_TCP, "tcp", "0x10", &v, &err) == -EINVAL ? 0 : 1;
}
C
cc -o "$D/use" "$D/use.c" -I"$D/usr/include" -L"$D/usr/lib" -lnshash 2>"$D/cc.log"
assert_eq 0 $? "a program compiles and links against the installed header and libnshash.so"
assert_eq 1024 "$(LD_LIBRARY_PATH=$D/usr/lib "$D/use")" "and runs against it"

# The packages' removal script (deb prerm, rpm %preun): a state dir holding
# only what nshash made for itself (a template) goes entirely; one holding a
# pin a running process uses is kept, and says so.
RS=$D/usr/share/nshash/remove-state
[ -x "$RS" ] && pass "installed usr/share/nshash/remove-state" || fail "installed usr/share/nshash/remove-state"
S1=$(make_state_dir)
NSHASH_STATE_DIR=$S1 "$NSHASH" create --tcp 2048 --udp 512 "nshash-t09rs-$$" >/dev/null
"$NSHASH" delete "nshash-t09rs-$$" >/dev/null
assert_eq tcp2048-udp512 "$(ls "$S1/templates" | grep -v '\.used$')" "remove-state: the state dir holds an idle template"
out=$(PATH=$BUILD:$PATH "$RS" "$S1" 2>&1)
assert_eq "" "$out" "remove-state: silent when all goes"
[ -e "$S1" ] && fail "remove-state: $S1 is still there: $(ls -a "$S1")" || pass "remove-state: the state dir is gone"
assert_eq 0 "$(mounts_under "$S1" | wc -l)" "remove-state: nothing left mounted under it"
S2=$(make_state_dir)
mkdir -p "$S2/pins"
unshare -n sleep 300 &
holder=$!
on_exit "kill $holder 2>/dev/null"
sleep 0.2
touch "$S2/pins/ctr" && mount --bind "/proc/$holder/ns/net" "$S2/pins/ctr"
out=$(PATH=$BUILD:$PATH "$RS" "$S2" 2>&1)
assert_contains "$out" "nshash: kept $S2: it holds pins of running containers (nshash list)" "remove-state: a state dir with a used pin is kept"
assert_eq 1 "$(mounts_under "$S2/pins/ctr" | wc -l)" "remove-state: ... and the pin with it"
kill $holder

command -v valgrind >/dev/null || cannot_run "valgrind missing"
STATE=$(make_state_dir)
export NSHASH_STATE_DIR=$STATE
name=nshash-t09-$$
on_exit "$NSHASH delete $name"
vg() { valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99 "$NSHASH" "$@" >/dev/null 2>"$D/vg.log"; }
for args in "create --tcp 4096 --udp 1024 --json $name" "show --json $name" "list --json" "list" "check --json" "gc --dry-run --json" "create --tcp 0x1 bad" "delete $name" "delete $name"; do
	# shellcheck disable=SC2086
	vg $args
	rc=$?
	[ $rc -ne 99 ] && pass "valgrind clean: nshash $args" || fail "valgrind: nshash $args: $(head -20 "$D/vg.log")"
done
assert_host_untouched
