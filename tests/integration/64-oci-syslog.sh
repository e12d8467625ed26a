#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Hook and wrapper messages reach syslog/journald by default (podman shows
# only "exit status 1" when its stderr is a file or the journal): identifier
# nshash-hook / nshash-runtime, facility daemon, besides stderr; a policy
# with "syslog": false turns it off; an unreadable policy is still reported
# there.  Each run gets a private /dev/log (a tmpfs /dev in a private mount
# namespace, a listener of our own): nothing of the host's logging is used.
# Also: nshash-runtime --version names itself before the runtime's version.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root
engines_oci_setup

# in_syslog_ns OUT CMD...: CMD (stdin passed on) with /dev/log a socket whose
# messages land in OUT, one per line.  Sets RC and ERR (CMD's stderr).
in_syslog_ns() {
	local out=$1
	shift
	: >"$out"
	unshare -m --propagation private bash -c '
		out=$1 lib=$2 d=$3
		shift 3
		mkdir -p "$d/olddev" && mount --rbind /dev "$d/olddev" && mount -t tmpfs tmpfs /dev || exit 90
		for n in null zero full random urandom; do touch /dev/$n && mount --bind "$d/olddev/$n" /dev/$n; done
		ln -s /proc/self/fd /dev/fd
		python3 "$lib/syslog-listen.py" /dev/log "$out" &
		lp=$!
		for i in $(seq 50); do [ -e "$out.ready" ] && break; sleep 0.1; done
		"$@"
		rc=$?
		sleep 0.3
		kill $lp
		exit $rc
	' _ "$out" "$TOP/tests/lib" "$D" "$@" 2>"$D/stderr"
	RC=$?
	ERR=$(cat "$D/stderr")
	rm -f "$out.ready"
}

config() { # ANNOTATION-VALUE: a minimal OCI config asking for io.nshash.tcp=VALUE
	printf '{"ociVersion":"1.0.2","hostname":"h37","annotations":{"io.nshash.tcp":"%s"},"linux":{"namespaces":[{"type":"network"}]}}' "$1"
}
engines_policy "$P" "{\"stateDir\": \"$S\"}"

# 1. A refused precreate: stderr and syslog, identifier nshash-hook, daemon.err
in_syslog_ns "$D/log1" sh -c "printf '%s' '$(config abc)' | $BUILD/nshash-hook precreate --policy $P"
assert_eq 1 "$RC" "precreate with io.nshash.tcp=abc exits 1"
assert_contains "$ERR" 'io.nshash.tcp: "abc" is not a decimal number' "the refusal is on stderr"
line=$(grep 'nshash-hook\[' "$D/log1")
assert_contains "$line" '<27>' "syslog: facility daemon, priority err (<27>)"
assert_contains "$line" ' nshash-hook[' "syslog: identifier nshash-hook (journalctl -t nshash-hook)"
assert_contains "$line" ': precreate: hostname h37: io.nshash.tcp: "abc" is not a decimal number' "syslog: the stage, the container, the refusal"
assert_eq 1 "$(grep -c . "$D/log1")" "one syslog line for one refusal"

# 2. "syslog": false in the policy: stderr only
engines_policy "$D/quiet.json" "{\"stateDir\": \"$S\", \"syslog\": false}"
in_syslog_ns "$D/log2" sh -c "printf '%s' '$(config abc)' | $BUILD/nshash-hook precreate --policy $D/quiet.json"
assert_eq 1 "$RC" "precreate refused under syslog: false"
assert_contains "$ERR" 'is not a decimal number' "still on stderr"
assert_eq "" "$(cat "$D/log2")" "nothing in syslog with \"syslog\": false"

# 3. A policy that cannot be read is reported to syslog too (defaults apply until it is read)
echo '{"maxTcp": ' >"$D/broken.json"
in_syslog_ns "$D/log3" sh -c "printf '%s' '$(config 4096)' | $BUILD/nshash-hook precreate --policy $D/broken.json"
assert_eq 1 "$RC" "precreate with a malformed policy exits 1"
assert_contains "$(cat "$D/log3")" "nshash-hook[" "the malformed policy's error reaches syslog"
assert_contains "$(cat "$D/log3")" "$D/broken.json" "and names the file"

# 4. The wrapper: identifier nshash-runtime
mkdir -p "$D/bundle"
config abc >"$D/bundle/config.json"
in_syslog_ns "$D/log4" env NSHASH_POLICY="$P" "$BUILD/nshash-runtime" --root "$D/runc-root" create -b "$D/bundle" c37
assert_eq 1 "$RC" "nshash-runtime create with io.nshash.tcp=abc exits 1"
assert_contains "$(cat "$D/log4")" " nshash-runtime[" "the wrapper's refusal: identifier nshash-runtime"
assert_contains "$(cat "$D/log4")" 'io.nshash.tcp: "abc" is not a decimal number' "with the refusal"
assert_eq 0 "$(engines_pins_left "$S")" "no pin left"

# 5. nshash-runtime identifies itself, then the real runtime answers
out=$(NSHASH_POLICY=$P "$BUILD/nshash-runtime" --version)
assert_eq 0 "$?" "nshash-runtime --version exits 0"
assert_eq "nshash-runtime version $(sed -n 's/.*NSHASH_VERSION[[:space:]]*"\(.*\)"/\1/p' "$TOP/lib/nshash.h")" "$(head -1 <<<"$out" | cut -d' ' -f1-3)" "its first line: nshash-runtime and its version"
assert_contains "$(sed -n 2p <<<"$out")" "runc version" "then the runtime's own version (engines parse it)"
assert_contains "$(NSHASH_POLICY=$P "$BUILD/nshash-runtime" --help | head -1)" "nshash-runtime " "--help says who it is first"
assert_host_untouched
