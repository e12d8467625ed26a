#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# podman with the shipped hooks.d files (hooks_dir in a private
# containers.conf): --network none gets the sizes, restart sizes again, rm
# leaves nothing; the verify hook refuses a container whose netns is not
# what was asked; bridge networking is sized by moving podman's configured
# links; typos in io.nshash.* keys are refused; the hooks and nshash-runtime
# together, many starts in a row (the hook's child never takes the wrapper
# for the container's init).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs

engines_oci_setup
engines_iptables_snapshot nsh31 10.131.0.
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
engines_hooks_dir "$D/hooks" "$P"
# conmon_env_vars: how the policy reaches nshash-runtime when podman runs it
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]
conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"NSHASH_POLICY=$P\"]" ||
	cannot_run "podman setup failed"
# The bridge containers below run on a network of the test's own (not
# podman's default "podman" on podman0, which podman on the machine shares)
ip route | grep -q '^10\.131\.0\.' && cannot_run "10.131.0.0/24 is already routed here"
podman network create --subnet 10.131.0.0/24 nsh31 >/dev/null || cannot_run "podman network create failed"
jq '.network_interface = "nsh31br0"' "$D/podman/networks/nsh31.json" >"$D/n.json" && mv "$D/n.json" "$D/podman/networks/nsh31.json"
echo 'default_network = "nsh31"' >>"$CONTAINERS_CONF" # [network] is the file's last section
IMG=localhost/nshash-busybox
SHOW='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries) $(ip -o link show lo | grep -c "[<,]UP[,>]")'
GLOBAL="-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)"

# --- --network none: sized
out=$(podman run --rm --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.udp=1024 $IMG sh -c "$SHOW" 2>"$D/err")
assert_eq "4096 1024 1" "$out" "podman --network none: tcp=4096 udp=1024 inside, lo up"
engines_pins_gone "$S" && pass "pin removed after --rm" || fail "pin left after --rm: $(ls "$S/pins")"
assert_contains "$(cat "$D/nshash.log")" "requested tcp=4096 udp=1024, effective tcp=4096 udp=1024" "precreate logged requested and effective sizes"
assert_contains "$(grep precreate "$D/nshash.log")" "info: hostname " "precreate names the container by its hostname"
for _ in $(seq 30); do grep -q "removed pin" "$D/nshash.log" && break; sleep 0.1; done
assert_contains "$(cat "$D/nshash.log")" "removed pin $S/pins/oci-" "the precreate hook's child removed the pin once the init was in its netns"
assert_contains "$(cat "$D/nshash.log")" ", the container's init, holds the netns)" "... naming the init's pid"
assert_not_contains "$(cat "$D/nshash.log")" "nshash-hook[state]" "no createRuntime hook ran (the verification is opt-in)"

out=$(podman run --rm --network none $IMG sh -c "$SHOW")
assert_eq "$GLOBAL 1" "$out" "no annotations: global tables"

# --- restart sizes again; rm leaves nothing
podman run -d --name c31 --network none --annotation io.nshash.tcp=2048 --annotation io.nshash.udp=512 $IMG sleep 300 >/dev/null
assert_eq "2048 512 1" "$(podman exec c31 sh -c "$SHOW")" "detached container sized"
made() { grep -o "sized netns pinned at $S/pins/oci-[0-9a-f]*" "$D/nshash.log" | sort -u | wc -l; }
made1=$(made)
assert_eq "0 " "$(engines_pins_left "$S") $(ls "$S/pins")" "no pin while running (the init holds the netns)"
podman restart -t 0 c31 >/dev/null
assert_eq "2048 512 1" "$(podman exec c31 sh -c "$SHOW")" "podman restart: sized again"
assert_eq "$((made1 + 1))" "$(made)" "restart made a new sized netns (precreate ran again)"
assert_eq "0 " "$(engines_pins_left "$S") $(ls "$S/pins")" "no pin after restart"
podman stop -t 0 c31 >/dev/null
podman start c31 >/dev/null
assert_eq "2048 512 1" "$(podman exec c31 sh -c "$SHOW")" "podman stop + start: sized again"
podman rm -f -t 0 c31 >/dev/null
engines_pins_gone "$S" && pass "podman rm: nothing left in the state dir's pins" || fail "pins left after rm: $(ls "$S/pins")"
assert_eq 0 "$(engines_pins_left "$S")" "no pin mounted after rm"

# --- typo in a key, bad value, above the cap: refused, nothing left
out=$(podman run --rm --network none --annotation io.nshash.tpc=4096 $IMG true 2>&1)
assert_contains "$out" 'unknown annotation "io.nshash.tpc" (known: io.nshash.tcp, io.nshash.udp, io.nshash.workload)' "typo in the key refused"
out=$(podman run --rm --network none --annotation io.nshash.tcp=4k $IMG true 2>&1)
assert_contains "$out" 'io.nshash.tcp' "non-numeric value refused"
out=$(podman run --rm --network none --annotation io.nshash.tcp=4194304 $IMG true 2>&1)
assert_contains "$out" "policy $P" "above the cap refused, naming the policy"
assert_eq "" "$(ls "$S/pins")" "refusals left no pin"
assert_eq "" "$(podman ps -aq)" "refusals left no container"

# --- the verify hook refuses a container whose netns is not what was asked:
# only the verify/cleanup file installed, so nothing sizes the netns
engines_hooks_dir "$D/hooks-verify-only" "$P" verify
rm "$D/hooks-verify-only/nshash-precreate.json"
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/hooks-verify-only\"]|" "$CONTAINERS_CONF"
out=$(podman run --rm --network none --annotation io.nshash.tcp=4096 $IMG true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "verify: container refused (exit $rc)" || fail "verify: container started"
assert_contains "$out" "tcp size 4096 requested (effective 4096), kernel gave the shared table" "verify names requested and actual sizes"
assert_contains "$out" "or nothing sized it (no nshash precreate hook or nshash-runtime?)" "verify names the likelier cause too"
# auto that nothing resolved: nothing to check it against, refused, said why
out=$(podman run --rm --network none --annotation io.nshash.tcp=auto $IMG true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "verify: auto without the precreate hook refused (exit $rc)" || fail "verify: auto without the precreate hook started"
assert_contains "$out" "asks for io.nshash.tcp/io.nshash.udp=auto, but no sizes were decided for it (its bundle's config still says auto" \
	"... saying that nothing decided its sizes"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"onFailure\": \"warn\"}"
out=$(podman run --rm --network none --annotation io.nshash.tcp=4096 $IMG sh -c "$SHOW" 2>/dev/null)
assert_eq "$GLOBAL 1" "$out" "onFailure warn: starts on the shared tables"
assert_contains "$(tail -3 "$D/nshash.log")" "warning: " "onFailure warn: the mismatch is logged as a warning"
sed -i "s|hooks_dir = \\[\"$D/hooks-verify-only\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"

# --- auto with the verify hook (issue 31, item 9): the verification checks
# the sizes the precreate hook decided (it writes them into the config it
# hands on, the bundle's), never decides again from the annotations' auto;
# autoInitialTcp/Udp give a first start own tables (as a history would)
engines_hooks_dir "$D/hooks-verify" "$P" verify
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/hooks-verify\"]|" "$CONTAINERS_CONF"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"autoInitialTcp\": 2048, \"autoInitialUdp\": 512}"
: >"$D/nshash.log"
verified() { grep 'nshash-hook\[state\]' "$D/nshash.log" | grep -o 'verified pid [0-9]*: requested .*' | sed 's/pid [0-9]*/pid N/'; }
out=$(podman run --rm --network none --annotation io.nshash.tcp=auto --annotation io.nshash.udp=auto $IMG sh -c "$SHOW" 2>&1)
assert_eq "0 2048 512 1" "$? $out" "auto + the verify hook, --network none: started with the sizes auto gave"
assert_eq "verified pid N: requested tcp=2048 udp=512, effective tcp=2048 udp=512" "$(verified)" \
	"... verified against the sizes the precreate hook decided"
: >"$D/nshash.log"
out=$(podman run --rm --annotation io.nshash.tcp=auto --annotation io.nshash.udp=1024 $IMG sh -c "$SHOW" 2>/dev/null)
assert_eq "0 2048 1024 1" "$? $out" "auto + the verify hook, bridge (transplanted): started, tcp from auto, udp as given"
assert_eq "verified pid N: requested tcp=2048 udp=1024, effective tcp=2048 udp=1024" "$(verified)" "... verified so"
: >"$D/nshash.log"
out=$(podman run --rm --network none --annotation io.nshash.tcp=auto $IMG sh -c "$SHOW" 2>&1)
rc=$?
assert_eq "0 2048 -$(cat /proc/sys/net/ipv4/udp_hash_entries) 1" "$rc $out" "auto for tcp only: started, udp shared"
assert_eq "verified pid N: requested tcp=2048 udp=0, effective tcp=2048 udp=-$(cat /proc/sys/net/ipv4/udp_hash_entries)" "$(verified)" "... verified so"
engines_pins_gone "$S" && pass "auto + the verify hook: no pin left" || fail "auto + the verify hook: pins left: $(ls "$S/pins")"
# a protocol the annotations leave to the node's defaults is verified on
# the size the default gave (docs/sizing.md: per protocol); was refused as
# "requested tcp=0 udp=0" (podman's copy of the annotations names tcp only)
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"defaultTcp\": 4096, \"defaultUdp\": 1024}"
: >"$D/nshash.log"
out=$(podman run --rm --network none --annotation io.nshash.tcp=0 $IMG sh -c "$SHOW" 2>&1)
assert_eq "0 -$(cat /proc/sys/net/ipv4/tcp_ehash_entries) 1024 1" "$? $out" \
	"tcp=0 under defaults 4096/1024 + the verify hook: started, tcp shared, udp from the default"
assert_eq "verified pid N: requested tcp=0 udp=1024, effective tcp=-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) udp=1024" \
	"$(verified)" "... verified against the per-protocol decision"
: >"$D/nshash.log"
out=$(podman run --rm --network none --annotation io.nshash.udp=512 $IMG sh -c "$SHOW" 2>&1)
assert_eq "0 4096 512 1" "$? $out" "udp=512 under defaults 4096/1024 + the verify hook: tcp from the default"
assert_eq "verified pid N: requested tcp=4096 udp=512, effective tcp=4096 udp=512" "$(verified)" "... verified so"
: >"$D/nshash.log"
out=$(podman run --rm --annotation io.nshash.tcp=0 $IMG sh -c "$SHOW" 2>/dev/null)
assert_eq "0 -$(cat /proc/sys/net/ipv4/tcp_ehash_entries) 1024 1" "$? $out" \
	"tcp=0 under defaults + the verify hook, bridge (transplanted): tcp shared, udp from the default"
assert_eq "verified pid N: requested tcp=0 udp=1024, effective tcp=-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) udp=1024" \
	"$(verified)" "... verified so (the transplant keeps podman's path: the sizes are in the bundle)"
engines_pins_gone "$S" && pass "defaults + the verify hook: no pin left" || fail "defaults + the verify hook: pins left: $(ls "$S/pins")"
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
sed -i "s|hooks_dir = \\[\"$D/hooks-verify\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"

# --- bridge networking: podman created and configured the netns already;
# precreate moves its links into a sized one (63-oci-podman-bridge in depth)
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
out=$(podman run --rm --annotation io.nshash.tcp=4096 $IMG sh -c 'cat /proc/sys/net/ipv4/tcp_ehash_entries; ip -o addr show eth0 | grep -c "inet "' 2>/dev/null)
assert_eq "4096
1" "$out" "bridge: sized, eth0 kept its address"
assert_contains "$(grep precreate "$D/nshash.log" | tail -1)" "replaced by a sized one with its configuration (recreated eth0)" "bridge: logged as a transplant"
engines_pins_gone "$S" && pass "bridge: no pin made" || fail "bridge: pin left"

# --- nshash-runtime as podman's runtime: alone, and behind the hooks
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\"}"
mkdir -p "$D/no-hooks"
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/no-hooks\"]|" "$CONTAINERS_CONF"
: >"$D/nshash.log"
out=$(podman --runtime "$BUILD/nshash-runtime" run --rm --network none --annotation io.nshash.tcp=1024 --annotation io.nshash.udp=256 $IMG sh -c "$SHOW" 2>&1)
assert_eq "1024 256 1" "$out" "podman --runtime nshash-runtime (no hooks): sized by the wrapper"
assert_contains "$(cat "$D/nshash.log")" "nshash-runtime" "the wrapper did it"
engines_pins_gone "$S" && pass "wrapper under podman: pin removed" || fail "wrapper under podman: pin left: $(ls "$S/pins")"
sed -i "s|hooks_dir = \\[\"$D/no-hooks\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"
: >"$D/nshash.log"
out=$(podman --runtime "$BUILD/nshash-runtime" run --rm --network none --annotation io.nshash.tcp=1024 --annotation io.nshash.udp=256 $IMG sh -c "$SHOW" 2>&1)
assert_eq "1024 256 1" "$out" "hooks and wrapper together: sized"
assert_eq 1 "$(grep -c 'sized netns pinned' "$D/nshash.log")" "hooks and wrapper together: sized once (the wrapper kept the hook's pin)"
engines_pins_gone "$S" && pass "hooks and wrapper together: pin removed" || fail "pin left: $(ls "$S/pins")"

# --- nshash-runtime alone with an rshared bind (issue 20): podman asks for
# rshared rootfs propagation with it; the wrapper creates it from its sibling
# bundle in the host's mount namespace, and the tmpfs the container mounts
# under the bind is on the host.  (podman hands its environment to the
# runtime's create only, through conmon: the delete that removes the pin must
# find the policy too, as it does at /etc/nshash/nshash.json.)
sed -i "s|hooks_dir = \\[\"$D/hooks\"\\]|hooks_dir = [\"$D/no-hooks\"]|" "$CONTAINERS_CONF"
: >"$D/nshash.log"
HS=$D/pshared
mkdir -p "$HS" && mount --bind "$HS" "$HS" && mount --make-shared "$HS" || cannot_run "cannot make $HS a shared mount"
on_exit "umount -R -l '$HS' 2>/dev/null"
printf '#!/bin/sh\nNSHASH_POLICY=%s exec %s "$@"\n' "$P" "$BUILD/nshash-runtime" >"$D/nshash-runtime-p" && chmod +x "$D/nshash-runtime-p"
out=$(podman --runtime "$D/nshash-runtime-p" run --rm --network none --cap-add SYS_ADMIN --annotation io.nshash.tcp=2048 \
	--mount "type=bind,src=$HS,dst=/mnt/h,bind-propagation=rshared" $IMG sh -c "mkdir -p /mnt/h/m && mount -t tmpfs t31p /mnt/h/m && $SHOW" 2>&1)
assert_eq "2048 ${GLOBAL#* } 1" "$out" "podman --runtime nshash-runtime --mount bind-propagation=rshared: sized"
assert_contains "$(cat "$D/nshash.log")" "shared mount propagation asked" "... from the sibling bundle in the host's mount namespace"
assert_eq "tmpfs t31p" "$(findmnt -n -o FSTYPE "$HS/m") $(findmnt -n -o SOURCE "$HS/m")" "the container's mount under its rshared bind is on the host"
umount -l "$HS/m" 2>/dev/null
for _ in $(seq 50); do [ -z "$(ls -A "$S/bundles" 2>/dev/null)$(ls "$S/pins" 2>/dev/null)" ] && break; sleep 0.1; done
assert_eq "0 0" "$(ls "$S/pins" 2>/dev/null | wc -l) $(ls -A "$S/bundles" 2>/dev/null | wc -l)" "after --rm: no pin (the hand-over slots .handoff.N stay), no sibling bundle"
sed -i "s|hooks_dir = \\[\"$D/no-hooks\"\\]|hooks_dir = [\"$D/hooks\"]|" "$CONTAINERS_CONF"

# --- hooks and wrapper together, many starts in a row: the hook's waiting
# child must not take the wrapper for the container's init (a thread group
# leader in the netns in another mount namespace: the wrapper used to enter
# the hook's netns from its private one to check its sizes) and remove the
# pin before runc opens it.  On ac9cdec about 1
# start in 10 to 60 failed: "runc create failed: ... namespace path: lstat
# STATE/pins/oci-...: no such file or directory", the hook's log naming the
# wrapper's pid as "the container's init".  Up to NSHASH_HW_STARTS (60)
# starts within NSHASH_HW_SECONDS (150); a run that hangs is killed after 60 s.
: >"$D/nshash.log"
end=$(($(date +%s) + ${NSHASH_HW_SECONDS:-150}))
bad=()
n=0
for i in $(seq "${NSHASH_HW_STARTS:-60}"); do
	[ "$(date +%s)" -lt "$end" ] || break
	n=$i
	t=$((1024 << (i % 4)))
	out=$(timeout -s KILL 60 podman --runtime "$BUILD/nshash-runtime" run --rm --network none \
		--annotation io.nshash.tcp=$t --annotation io.nshash.udp=256 $IMG sh -c "$SHOW" 2>&1)
	rc=$?
	[ $rc = 137 ] && out="(podman hung 60 s, killed) $out"
	[ "$out" = "$t 256 1" ] || bad+=("start $i (tcp $t): $(tr '\n' ' ' <<<"$out" | cut -c1-300)")
done
assert_none "hooks and wrapper together: $n starts in a row, every one sized" "$n" "${bad[@]}"
wrappers=$(grep -o 'nshash-runtime\[[0-9]*\]' "$D/nshash.log" | grep -o '[0-9]*' | sort -u)
inits=$(grep -o "(pid [0-9]*, the container's init" "$D/nshash.log" | grep -o '[0-9]*' | sort -u)
assert_eq "" "$(comm -12 <(printf '%s\n' "$wrappers") <(printf '%s\n' "$inits") | tr '\n' ' ')" \
	"hooks and wrapper together: the hook's child never took a wrapper (pid in the log) for the container's init"
engines_pins_gone "$S" && pass "hooks and wrapper together, many starts: no pin left" || fail "pin left: $(ls "$S/pins")"

# --- --network ns: with nshash create (one of the named alternatives)
on_exit "nshash delete nshash-t31"
nshash --state-dir "$S" create --tcp 8192 --udp 256 nshash-t31 >/dev/null
out=$(podman run --rm --network ns:/run/netns/nshash-t31 $IMG sh -c "$SHOW")
assert_eq "8192 256 1" "$out" "the named alternative works: --network ns: with nshash create"
: >"$D/nshash.log"
out=$(podman run --rm --network ns:/run/netns/nshash-t31 --annotation io.nshash.tcp=8192 --annotation io.nshash.udp=200 $IMG sh -c "$SHOW" 2>&1)
assert_eq "8192 256 1" "$out" "--network ns: of an already sized netns with matching annotations: accepted"
assert_contains "$(cat "$D/nshash.log")" "netns /run/netns/nshash-t31 is already sized: requested tcp=8192 udp=200, effective tcp=8192 udp=256" "logged as already sized"
assert_eq "" "$(ls "$S/pins")" "no pin of ours for it"
out=$(podman run --rm --network ns:/run/netns/nshash-t31 --annotation io.nshash.tcp=4096 $IMG true 2>&1)
assert_contains "$out" "network namespace /run/netns/nshash-t31 already exists" "--network ns: with other sizes: refused"
nshash delete nshash-t31 >/dev/null 2>&1
assert_host_untouched
