#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An engine that dies after the precreate hook pinned a netns leaks the pin
# and its tables — until the next hook run reclaims it, without an operator (policy staleAge / reclaimInterval,
# small here so the test need not wait a minute).  And maxTableBytes in the
# policy: a container past the budget is refused naming it, the use and the
# request; the reclaimed leak frees its room.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq

engines_oci_setup
# 4096/1024 = 98304 bytes a container; the budget admits two.
EACH=98304
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"staleAge\": 1, \"reclaimInterval\": 0,
	\"maxTableBytes\": $((2 * EACH + 1000))}"
engines_hooks_dir "$D/hooks" "$P"
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]" || cannot_run "podman setup failed"
IMG=localhost/nshash-busybox
SIZED=(--network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024)
usage() { nshash --state-dir "$S" gc --max-idle 999999 --stale-age 999999 --json | jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"'; }

# --- a failed create does not leak: the precreate hook's child drops the
# pin once the init is in the netns (before the process is exec'd)
out=$(podman run --rm "${SIZED[@]}" $IMG /nonexistent 2>&1)
assert_eq 1 "$([ $? -ne 0 ] && echo 1)" "podman run IMAGE /nonexistent fails"
sleep 1
assert_eq 0 "$(engines_pins_left "$S")" "a failed create leaves no pin (the precreate hook's child dropped it)"

# --- the leak that remains: an engine that dies after precreate, before
# the runtime creates the container, and the hook's waiting child killed
# with it (here: the precreate stage alone, then SIGKILL to the child)
printf '%s' '{"ociVersion":"1.0.2","hostname":"leak39","annotations":{"io.nshash.tcp":"4096","io.nshash.udp":"1024"},"linux":{"namespaces":[{"type":"network"}]}}' |
	"$BUILD/nshash-hook" precreate --policy "$P" >/dev/null 2>&1
child=$(pgrep -f "/nshash-hook precreate --policy $P\$")
assert_eq 1 "$(wc -w <<<"$child")" "the hook left one child waiting for the container"
kill -KILL $child
leaked=$(ls "$S/pins")
assert_eq 1 "$(engines_pins_left "$S")" "precreate without a container: its pin is left behind: $leaked"
got=$(usage)
[ "$got" = "$EACH 1" ] || ledger_unpinned "$S" # who holds what counts beyond the pin
assert_eq "$EACH 1" "$got" "and its tables count against the budget"

# --- the next hook run reclaims it: no operator
age_claims 61 "$S/pins/$leaked" # claimed longer ago than staleAge (its floor: 60)
out=$(podman run --rm --network none --annotation io.nshash.tcp=128 $IMG true 2>&1)
assert_eq 0 $? "another sized container runs ($out)"
for _ in $(seq 50); do [ -z "$(ls "$S/pins")" ] && break; sleep 0.1; done
assert_eq "" "$(ls "$S/pins")" "the leaked pin was reclaimed by that container's hooks"
assert_eq 0 "$(engines_pins_left "$S")" "nothing mounted"
assert_contains "$(cat "$D/nshash.log")" "reclaimed" "the hook logged the reclaim"

# --- maxTableBytes from the policy
podman run -d --name l1 "${SIZED[@]}" $IMG sleep 300 >/dev/null || fail "l1 did not start"
podman run -d --name l2 "${SIZED[@]}" $IMG sleep 300 >/dev/null || fail "l2 did not start"
out=$(podman run --rm "${SIZED[@]}" $IMG true 2>&1)
assert_eq 1 "$([ $? -ne 0 ] && echo 1)" "a third 98304-byte container is refused"
assert_contains "$out" "maxTableBytes $((2 * EACH + 1000)) would be passed: $((2 * EACH)) bytes in use by 2 network namespace(s), this request (tcp 4096, udp 1024) needs $EACH bytes" \
	"the refusal names maxTableBytes, the use and the request"
podman rm -f -t 0 l1 >/dev/null
out=$(podman run --rm "${SIZED[@]}" $IMG true 2>&1)
assert_eq 0 $? "l1 removed: room for one again ($out)"
podman rm -f -t 0 l2 >/dev/null
for _ in $(seq 50); do [ -z "$(ls "$S/pins")" ] && break; sleep 0.1; done
got=$(usage)
[ "$got" = "0 0" ] || ledger_unpinned "$S"
assert_eq "0 0" "$got" "all removed: nothing counted"
assert_host_untouched
