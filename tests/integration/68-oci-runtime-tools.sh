#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A peer's suite: the OCI runtime-tools validation tests, from Debian's
# source package of opencontainers/runtime-tools, built here with Debian's
# Go packages (GOPATH mode) and tests/runtime-tools/tap-go (a TAP writer of
# our own: Debian does not package the one the tests import).  Each test is
# run against runc, against nshash-runtime without sizes, and against
# nshash-runtime --nshash-tcp=4096 --nshash-udp=1024, and against
# nshash-runtime under a policy with defaultTcp/defaultUdp 4096/1024, all on
# a private runc root and state dir.  Every test runc passes here must pass
# through the wrapper without sizes, and with sizes every one but those in
# SIZED_FAILS, each of which must fail for the reason given there (so that
# the list cannot go stale).  Under the policy's defaults every one passes,
# SIZED_FAILS too: a container the defaults size that has the host's
# network or joins a netns runs unsized, never refused (the wrapper's
# options are an explicit request, refused there).
#
# Cache: the source tarball in NSHASH_TEST_CACHE/runtime-tools (default
# /var/cache/nshash-tests), fetched once from NSHASH_DEBIAN_MIRROR (suite
# NSHASH_RUNTIME_TOOLS_SUITE, default trixie, whose release of the suite
# builds with bookworm's Go 1.19) with a private apt configuration: the
# machine's own sources stay as they are.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs runc
command -v go >/dev/null || cannot_run "needs golang-go and Debian's Go packages (tools/ensure-deps test)"

# Sized, these fail, each for the reason given (a fragment of its output).
declare -A SIZED_FAILS=(
	# the container joins another netns or the host's, which cannot be sized (refused)
	[linux_ns_itype]='cannot size tcp=4096 udp=1024: the config has no network namespace entry, so the container shares the host'"'"'s network namespace'
	[linux_ns_path]='cannot size tcp=4096 udp=1024: the container would join the network namespace of process '
)

# Racy on any runtime, not run: pidfile kills a container whose
# process is `true` once it started ("container not running" when `true`
# exited first; runc too, now and then).
RACY=" pidfile "
# A working runtime passes these whatever the machine: the suite ran.
CORE="create state kill hostname default"

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
DP=$D/policy-defaults.json
engines_policy "$DP" "{\"stateDir\": \"$S\", \"defaultTcp\": 4096, \"defaultUdp\": 1024, \"logFile\": \"$D/defaults.log\"}"
CACHE=${NSHASH_TEST_CACHE:-/var/cache/nshash-tests}/runtime-tools
MIRROR=${NSHASH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${NSHASH_RUNTIME_TOOLS_SUITE:-trixie}
PKG=golang-github-opencontainers-runtime-tools
ROOT=$D/runc-root
# runc leaves the mounts of a container asking rootfsPropagation: shared
# in the host's mount namespace (under the bundle): gone before $D is.
on_exit "umount_under '$D'"
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c >/dev/null 2>&1; done"

# --- the suite's source: Debian's orig tarball of the package (upstream as
# released, without Debian's packaging), fetched once by apt's own tools: the
# index through `apt-get update` with a private configuration (its signature
# checked against the machine's Debian keyring), the tarball by apt-helper
# against the SHA256 that index gives.
fetch_source() {
	local a=$D/apt idx dir file sum
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$CACHE"
	echo "deb-src $MIRROR $SUITE main" >"$a/sources.list"
	local o=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" -o APT::Sandbox::User=root)
	apt-get "${o[@]}" update >"$D/apt.log" 2>&1 || return 1
	idx=$(ls "$a"/lists/*_source_Sources* 2>/dev/null | head -1)
	[ -n "$idx" ] || { echo "no Sources index in $a/lists" >>"$D/apt.log"; return 1; }
	# The package's stanza: its directory and its .orig.tar.* line of Checksums-Sha256.
	read -r dir sum file < <(awk -v p="$PKG" '
		/^Package: / {inpkg = ($2 == p); insum = 0}
		inpkg && /^Directory: / {dir = $2}
		inpkg && /^Checksums-Sha256:/ {insum = 1; next}
		inpkg && insum && /^ / {if ($3 ~ /\.orig\.tar\./) {sum = $1; file = $3}; next}
		inpkg && insum {insum = 0}
		/^$/ && inpkg && file != "" {print dir, sum, file; exit}
		END {if (inpkg && file != "") print dir, sum, file}' <(/usr/lib/apt/apt-helper cat-file "$idx"))
	[ -n "$file" ] || { echo "$PKG: no .orig tarball in $idx" >>"$D/apt.log"; return 1; }
	/usr/lib/apt/apt-helper "${o[@]}" download-file "$MIRROR/$dir/$file" "$CACHE/$file.part" "SHA256:$sum" \
		>>"$D/apt.log" 2>&1 && mv "$CACHE/$file.part" "$CACHE/$file"
}
tarball=$(ls "$CACHE/${PKG}"_*.orig.tar.* 2>/dev/null | tail -1)
if [ -z "$tarball" ]; then
	fetch_source || cannot_run "cannot fetch Debian's source of $PKG ($SUITE, $MIRROR): $(tail -3 "$D/apt.log" | tr '\n' ' ')"
	tarball=$(ls "$CACHE/${PKG}"_*.orig.tar.* | tail -1)
fi
mkdir -p "$D/src" && tar -xf "$tarball" -C "$D/src" --strip-components=1 || cannot_run "cannot unpack $tarball"
pass "the suite's source: $(basename "$tarball")"

# --- built in GOPATH mode against Debian's Go packages
G=$D/go
mkdir -p "$G/src/github.com/opencontainers" "$G/src/github.com/mndrix" "$G/src/github.com/blang/semver"
ln -s "$D/src" "$G/src/github.com/opencontainers/runtime-tools"
ln -s "$TOP/tests/runtime-tools/tap-go" "$G/src/github.com/mndrix/tap-go"
# Debian ships semver v4 at its v0 path; the suite imports the module path
ln -s /usr/share/gocode/src/github.com/blang/semver "$G/src/github.com/blang/semver/v4"
export GOPATH=$G:/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE=$D/gocache CGO_ENABLED=0 GOTOOLCHAIN=local
cd "$D/src" || exit 1
build_errors=()
go build -tags "netgo osusergo" -o runtimetest ./cmd/runtimetest >"$D/build.log" 2>&1 || build_errors+=("runtimetest: $(tail -2 "$D/build.log")")
names=()
files=()
for f in validation/*/*.go; do
	case $f in validation/util/*) continue ;; esac
	files+=("$f")
	names+=("$(basename "$f" .go)")
done
# one link per test, as many at a time as there are CPUs (the packages
# they share are compiled once, into GOCACHE, by runtimetest's build above)
: >"$D/build-failed"
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c \
	'go build -o "${1%.go}.t" "$1" >"$1.buildlog" 2>&1 || echo "$1" >>"$2"' _ {} "$D/build-failed"
while read -r f; do
	build_errors+=("$f: $(tail -2 "$f.buildlog")")
done <"$D/build-failed"
assert_none "the suite builds: runtimetest and ${#names[@]} validation tests" $((${#names[@]} + 1)) "${build_errors[@]}"
[ ${#build_errors[@]} -eq 0 ] || exit 1

# --- the four runtimes, each a command as RUNTIME= takes it
RUNTIMES="runc plain sized defaults"
for r in $RUNTIMES; do
	case $r in
	runc) cmd="exec runc --root '$ROOT' \"\$@\"" ;;
	plain) cmd="NSHASH_POLICY='$P' exec '$BUILD/nshash-runtime' --root '$ROOT' \"\$@\"" ;;
	sized) cmd="NSHASH_POLICY='$P' exec '$BUILD/nshash-runtime' --nshash-tcp=4096 --nshash-udp=1024 --root '$ROOT' \"\$@\"" ;;
	defaults) cmd="NSHASH_POLICY='$DP' exec '$BUILD/nshash-runtime' --root '$ROOT' \"\$@\"" ;;
	esac
	printf '#!/bin/sh\n%s\n' "$cmd" >"$D/rt-$r" && chmod 0755 "$D/rt-$r"
	mkdir -p "$D/out/$r" "$D/tmp-$r"
done
# A container in a user namespace (linux_uid_mappings) must reach its
# bundle as a mapped uid: the bundles' path traversable, as under /tmp.
chmod 0711 "$D" && chmod 0755 "$D"/tmp-*

# The cgroups the suite makes (fixed names): removed at exit unless they
# were there before.
cgroups_before=$(find /sys/fs/cgroup -type d \( -name cgrouptest -o -name testdir \) 2>/dev/null | sort)
on_exit "find /sys/fs/cgroup -depth -type d \\( -name cgrouptest -o -name testdir \\) 2>/dev/null | sort -r | grep -vxF -f <(printf '%s\n' \"\$cgroups_before\") | xargs -r rmdir 2>/dev/null"

# verdict FILE RC: a test passed when it exited 0, printed its plan, ran
# as many tests as the plan says, none "not ok" outside a TODO, and, when it
# ran no test at all, no diagnostic (the hook tests report a failed check
# only as a YAML block under the header, then the plan 1..0).
verdict() {
	[ "$2" = 0 ] && awk '
		/^1\.\.[0-9]+$/ {plan = substr($0, 4) + 0; planned = 1}
		/^(not )?ok [0-9]+/ {n++; if (/^not ok/ && !/# TODO/) bad = 1}
		/^  ---$/ {yaml = 1}
		END {exit !(planned && !bad && n == plan && (n > 0 || !yaml))}' "$1"
}
# run_one RUNTIME NAME: runs the test (once more when it fails: runc itself
# fails now and then here, e.g. ENOMEM adding a seccomp rule); writes
# out/RUNTIME/NAME and out/RUNTIME/NAME.ok when it passed.  A test that
# left mounts under its TMPDIR in the host's mount namespace is named in
# left-RUNTIME and its mounts go (each runtime runs one test at a time).
run_one() {
	local r=$1 n=$2 t rc try
	t=$(ls validation/*/"$n.t")
	for try in 1 2; do
		RUNTIME=$D/rt-$r TMPDIR=$D/tmp-$r timeout 180 "./$t" >"$D/out/$r/$n" 2>&1
		rc=$?
		if [ -n "$(mounts_under "$D/tmp-$r")" ]; then
			echo "$n" >>"$D/left-$r"
			umount_under "$D/tmp-$r"
		fi
		if verdict "$D/out/$r/$n" "$rc"; then
			touch "$D/out/$r/$n.ok"
			[ "$try" = 2 ] && echo "# $r $n: passed when run again" >>"$D/retries"
			return 0
		fi
	done
}
# The suite's cgroup tests use fixed cgroup paths: one runtime at a time;
# the others run with the four runtimes side by side (each its own
# TMPDIR; container ids are UUIDs).
for n in "${names[@]}"; do
	case $RACY in *" $n "*) continue ;; esac
	case $n in
	*cgroups* | delete_resources | delete_only_create_resources)
		for r in $RUNTIMES; do run_one $r "$n"; done
		;;
	*)
		for r in $RUNTIMES; do run_one $r "$n" & done
		wait
		;;
	esac
done
[ -s "$D/retries" ] && cat "$D/retries"

first_lines() { grep -m3 -E 'not ok|error|failed' "$1" | cut -c1-300 | tr '\n' ' '; }
runc_pass=()
for n in "${names[@]}"; do
	[ -e "$D/out/runc/$n.ok" ] && runc_pass+=("$n")
done
echo "# runc passes ${#runc_pass[@]} of ${#names[@]} (not run, racy:${RACY}): ${runc_pass[*]}"
core_bad=()
for n in $CORE; do [ -e "$D/out/runc/$n.ok" ] || core_bad+=("$n: $(first_lines "$D/out/runc/$n")"); done
assert_none "runc passes the lifecycle tests ($CORE): the suite ran" 5 "${core_bad[@]}"

plain_bad=() sized_bad=() stale=() defaults_bad=()
for n in "${runc_pass[@]}"; do
	[ -e "$D/out/plain/$n.ok" ] || plain_bad+=("$n: $(first_lines "$D/out/plain/$n")")
	[ -e "$D/out/defaults/$n.ok" ] || defaults_bad+=("$n: $(first_lines "$D/out/defaults/$n")")
	if [ -n "${SIZED_FAILS[$n]:-}" ]; then
		if [ -e "$D/out/sized/$n.ok" ]; then
			stale+=("$n passes sized now: drop it from SIZED_FAILS")
		elif ! grep -qF -- "${SIZED_FAILS[$n]}" "$D/out/sized/$n"; then
			stale+=("$n fails sized, but not with '${SIZED_FAILS[$n]}': $(first_lines "$D/out/sized/$n")")
		fi
	else
		[ -e "$D/out/sized/$n.ok" ] || sized_bad+=("$n: $(first_lines "$D/out/sized/$n")")
	fi
done
assert_none "nshash-runtime without sizes passes every test runc passes" ${#runc_pass[@]} "${plain_bad[@]}"
assert_none "nshash-runtime --nshash-tcp=4096 --nshash-udp=1024 passes every test runc passes but SIZED_FAILS" \
	${#runc_pass[@]} "${sized_bad[@]}"
assert_none "each test in SIZED_FAILS fails sized for its stated reason" ${#SIZED_FAILS[@]} "${stale[@]}"
assert_none "nshash-runtime under the policy's defaultTcp/defaultUdp passes every test runc passes, SIZED_FAILS too" \
	${#runc_pass[@]} "${defaults_bad[@]}"
# ... and it did size the containers with a netns of their own (every test
# starts at least one: at least as many as runc passes), and passed the
# host-network and joined-netns ones through
dlog=$(cat "$D/defaults.log" 2>/dev/null)
n_sized=$(grep -c "requested tcp=4096 udp=1024 (the node's defaultTcp/defaultUdp), effective tcp=4096 udp=1024" <<<"$dlog")
[ "$n_sized" -ge ${#runc_pass[@]} ] && pass "under the defaults: $n_sized containers sized 4096/1024 as the node's defaults" ||
	fail "under the defaults: only $n_sized containers logged sized (${#runc_pass[@]} tests)"
assert_contains "$dlog" "do not apply, it runs unsized: it shares the host's network namespace (no network namespace entry)" \
	"under the defaults: linux_ns_itype's host-network container ran unsized"
assert_contains "$dlog" "do not apply, it runs unsized: it joins the network namespace /proc/" \
	"under the defaults: linux_ns_path's joining container ran unsized"

assert_eq "" "$(runc --root "$ROOT" list -q 2>/dev/null)" "no container left in the private runc root"
left() { sort -u "$D/left-$1" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }
assert_eq "" "$(left sized)" "no mount left in the host's mount namespace by a sized container"
# runc leaves the mounts of a container without a mount namespace of its
# own (linux_ns_itype) in the host's; under the defaults that one runs
# unsized, as under runc: nothing more than runc leaves
assert_eq "" "$(comm -23 <(sort -u "$D/left-defaults" 2>/dev/null) <(sort -u "$D/left-runc" 2>/dev/null) | tr '\n' ' ')" \
	"under the defaults no test leaves a mount in the host's mount namespace that it does not under runc (runc: $(left runc))"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left in the state dir"
assert_host_untouched
