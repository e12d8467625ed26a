#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bad input to nshash-hook and nshash-runtime: each is refused with exit 1
# and its exact error, and leaves no state (no pin, no file in the state
# dir, config.json unchanged).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\"}"
H=$BUILD/nshash-hook
state_listing() { (cd "$S" && find . | sort | tr '\n' ' '); echo "mounts=$(count_pins_under "$S/")"; }
CLEAN=$(state_listing)

# expect_hook DESC EXPECTED-ERROR STAGE INPUT
expect_hook() {
	local out rc
	out=$(printf '%s' "$4" | "$H" "$3" --policy "$P" 2>&1 >"$D/stdout")
	rc=$?
	# the hook names a config by its hostname ("(none)" here): strip that too
	assert_eq "1 $2" "$rc $(sed -E 's/^nshash-hook\[[a-zA-Z]*\]: error: (hostname [^:]*: )?//' <<<"$out")" "$1"
	assert_eq "" "$(cat "$D/stdout")" "$1: nothing on stdout"
	assert_eq "$CLEAN" "$(state_listing)" "$1: no state left"
}
cfg() { # ANNOTATIONS-JSON-MEMBERS
	printf '{"ociVersion": "1.0.2", "annotations": {%s}, "linux": {"namespaces": [{"type": "network"}]}}' "$1"
}

# ---- precreate: sizes
expect_hook "non-numeric size" 'io.nshash.tcp: "abc" is not a decimal number of entries' \
	precreate "$(cfg '"io.nshash.tcp": "abc"')"
expect_hook "negative size" 'io.nshash.udp: "-1" is not a decimal number of entries' \
	precreate "$(cfg '"io.nshash.udp": "-1"')"
expect_hook "overflowing size" 'io.nshash.tcp: "99999999999999999999" is out of range (tcp sizes are 0..16777216, 0 = shared table)' \
	precreate "$(cfg '"io.nshash.tcp": "99999999999999999999"')"
expect_hook "hex is not taken as the kernel would" 'io.nshash.tcp: "0x100" is not a decimal number of entries' \
	precreate "$(cfg '"io.nshash.tcp": "0x100"')"
engines_policy "$P" "{\"stateDir\": \"$S\", \"maxUdp\": 1024}"
expect_hook "over the policy's cap" "policy $P: annotations: udp size 1025 (effective 2048) is above the allowed maximum 1024 (maxUdp)" \
	precreate "$(cfg '"io.nshash.udp": "1025"')"
engines_policy "$P" "{\"stateDir\": \"$S\"}"
expect_hook "over the default cap" "policy $P: annotations: tcp size 1048576 (effective 1048576) is above the allowed maximum 262144 (maxTcp)" \
	precreate "$(cfg '"io.nshash.tcp": "1048576"')"

# ---- precreate: keys, JSON, shapes
expect_hook "unknown io.nshash.* key" 'unknown annotation "io.nshash.tcp_size" (known: io.nshash.tcp, io.nshash.udp, io.nshash.workload)' \
	precreate "$(cfg '"io.nshash.tcp_size": "4096"')"
expect_hook "malformed JSON on stdin" 'config: malformed JSON at line 2 column 3: quoted object property name expected' \
	precreate $'{"annotations": {"io.nshash.tcp": "4096"},\n  ]'
expect_hook "truncated JSON on stdin" 'config: malformed JSON at line 1 column 35: unexpected end of input' \
	precreate '{"annotations": {"io.nshash.tcp": '
expect_hook "empty stdin" 'config: malformed JSON: empty input' precreate ''
expect_hook "size given as a number" 'annotation io.nshash.tcp: expected a string, got int' \
	precreate "$(cfg '"io.nshash.tcp": 4096')"
expect_hook "host network" "cannot size tcp=4096 udp=0: the config has no network namespace entry, so the container shares the host's network namespace (host network), whose tables cannot be resized. Instead: give the container a network namespace of its own" \
	precreate '{"annotations": {"io.nshash.tcp": "4096"}, "linux": {"namespaces": [{"type": "pid"}]}}'

# ---- the pin annotation is nshash's: escapes refused
expect_hook "pin annotation without sizes" 'annotation io.nshash.pin is set by nshash itself and cannot be given without io.nshash.tcp/io.nshash.udp' \
	precreate "$(cfg '"io.nshash.pin": "x"')"
expect_hook "pin annotation with ../" "io.nshash.pin \"../../etc\": character '/' 0x2f not allowed (use A-Z a-z 0-9 . _ -)" \
	precreate "$(cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "../../etc"')"
expect_hook "pin annotation absolute" "io.nshash.pin \"/etc/passwd\": character '/' 0x2f not allowed (use A-Z a-z 0-9 . _ -)" \
	precreate "$(cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "/etc/passwd"')"
expect_hook "pin annotation .." 'io.nshash.pin "..": not a valid name' \
	precreate "$(cfg '"io.nshash.tcp": "4096", "io.nshash.pin": ".."')"
expect_hook "pin annotation with NUL" 'config: malformed JSON at line 1 column 85: \u0000 (a NUL character) in a string' \
	precreate "$(cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "a\u0000b"')"
long=$(printf 'a%.0s' $(seq 300))
expect_hook "pin annotation very long" "io.nshash.pin \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\": longer than 255 characters" \
	precreate "$(cfg "\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"$long\"")"
expect_hook "pin annotation naming another pin" "annotation io.nshash.pin=victim is set by nshash itself and cannot be given" \
	precreate "$(cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "victim"')"
expect_hook "pin annotation with the matching path (joining another container's pin)" "annotation io.nshash.pin=victim is set by nshash itself and cannot be given" \
	precreate "{\"annotations\": {\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"victim\"}, \"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"$S/pins/victim\"}]}}"

# ---- verify and poststop (state on stdin)
expect_hook "verify: state without pid" 'state of c1 has no pid: cannot verify its network namespace (is this hook installed for createRuntime/prestart?)' \
	createRuntime '{"ociVersion": "1.0.2", "id": "c1", "status": "creating", "annotations": {"io.nshash.tcp": "4096"}}'
expect_hook "verify: pid not a number" 'state of c1: "pid" is not a process id: "12"' \
	createRuntime '{"id": "c1", "pid": "12", "annotations": {"io.nshash.tcp": "4096"}}'
expect_hook "verify: no id" 'state: no container "id"' createRuntime '{"pid": 1}'
expect_hook "verify: malformed state" 'state: malformed JSON at line 1 column 10: unexpected end of input' createRuntime '{"id": "c'
expect_hook "poststop: pin escaping the state dir" "state of c1: io.nshash.pin \"../../../etc/hostname\": character '/' 0x2f not allowed (use A-Z a-z 0-9 . _ -)" \
	poststop '{"id": "c1", "status": "stopped", "annotations": {"io.nshash.tcp": "4096", "io.nshash.pin": "../../../etc/hostname"}}'
assert_eq "$(hostname)" "$(cat /etc/hostname)" "poststop escape: /etc/hostname still there"
# (the pin as nshash records it: in the bundle, with the netns path to it)
mkdir -p "$D/gone-bundle"
printf '{"annotations": {"io.nshash.tcp": "4096", "io.nshash.pin": "gone"}, "linux": {"namespaces": [{"type": "network", "path": "%s"}]}}' \
	"$S/pins/gone" >"$D/gone-bundle/config.json"
out=$(echo "{\"id\": \"c1\", \"status\": \"stopped\", \"bundle\": \"$D/gone-bundle\", \"annotations\": {\"io.nshash.tcp\": \"4096\"}}" | "$H" poststop --policy "$P" 2>&1)
assert_eq "0" "$?" "poststop of a pin already gone succeeds"
out=$("$H" nosuchstage --policy "$P" </dev/null 2>&1)
assert_eq "2" "$?" "unknown stage: usage error"
assert_contains "$out" 'unknown stage "nosuchstage"' "unknown stage named"

# ---- policy file
printf '{\n  "maxTcp": 4096,\n  "maxUdp": 1024\n  "onFailure": "warn"\n}\n' >"$D/bad-policy.json"
out=$(cfg '"io.nshash.tcp": "4096"' | "$H" precreate --policy "$D/bad-policy.json" 2>&1)
assert_eq "1" "$?" "malformed policy: refused"
assert_contains "$out" "$D/bad-policy.json: malformed JSON at line 4 column 3" "malformed policy: file, line and column named"
echo '{"maxTcp": 4096, "onfailure": "warn"}' >"$D/bad-policy.json"
out=$(cfg '"io.nshash.tcp": "4096"' | "$H" precreate --policy "$D/bad-policy.json" 2>&1)
assert_contains "$out" "$D/bad-policy.json: unknown key \"onfailure\"" "policy: unknown key named"
assert_eq "$CLEAN" "$(state_listing)" "policy errors: no state left"

# ---- the wrapper: container ids, bundles
engines_busybox_rootfs "$D/rootfs"
engines_runc_bundle "$D/b" true
engines_bundle_annotate "$D/b" io.nshash.tcp=4096
SUM=$(sha256sum <"$D/b/config.json")
# expect_wrapper DESC EXPECTED-ERROR ARGS...
expect_wrapper() {
	local desc=$1 want=$2 out rc
	shift 2
	out=$(NSHASH_POLICY=$P nshash-runtime --root "$D/runc-root" "$@" 2>&1 </dev/null)
	rc=$?
	assert_eq "1 $want" "$rc $(sed 's/^nshash-runtime: error: //' <<<"$out")" "$desc"
	assert_eq "$CLEAN" "$(state_listing)" "$desc: no state left"
	assert_eq "$SUM" "$(sha256sum <"$D/b/config.json")" "$desc: config.json unchanged"
}
expect_wrapper "id with ../" "container id \"../x\": character '/' 0x2f not allowed (use A-Z a-z 0-9 . _ -)" create --bundle "$D/b" ../x
expect_wrapper "absolute id" "container id \"/x\": character '/' 0x2f not allowed (use A-Z a-z 0-9 . _ -)" create -b "$D/b" /x
expect_wrapper "id .." "container id \"..\": not a valid name" create --bundle="$D/b" ..
expect_wrapper "very long id" "container id \"$(printf 'a%.0s' $(seq 40))...\": longer than 200 bytes" create --bundle "$D/b" "$(printf 'a%.0s' $(seq 230))"
expect_wrapper "missing bundle" "t34: bundle $D/nonexistent: No such file or directory" create --bundle "$D/nonexistent" t34
: >"$D/file"
expect_wrapper "bundle is a file" "t34: bundle $D/file: not a directory" create --bundle "$D/file" t34
mkdir -p "$D/nocfg"
expect_wrapper "bundle without config.json" "t34: bundle $D/nocfg: read $D/nocfg/config.json: No such file or directory" create --bundle "$D/nocfg" t34
mkdir -p "$D/dircfg/config.json"
expect_wrapper "unreadable config.json" "t34: bundle $D/dircfg: read $D/dircfg/config.json: Is a directory" create --bundle "$D/dircfg" t34
out=$(cd "$D/b" && NSHASH_POLICY=$D/bad-policy.json nshash-runtime --root "$D/runc-root" create t34 2>&1)
assert_contains "$out" "unknown key \"onfailure\"" "wrapper: bad policy refused"
assert_eq "$SUM" "$(sha256sum <"$D/b/config.json")" "wrapper: bad policy, config.json unchanged"
engines_bundle_annotate "$D/b" io.nshash.udp=lots
SUM=$(sha256sum <"$D/b/config.json")
expect_wrapper "bad annotation in the bundle" "t34: $D/b/config.json: io.nshash.udp: \"lots\" is not a decimal number of entries" create --bundle "$D/b" t34
assert_eq "" "$(runc --root "$D/runc-root" list -q 2>/dev/null)" "no container was created"
assert_host_untouched
