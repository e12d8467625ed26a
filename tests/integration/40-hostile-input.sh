#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Hostile input to nshash-hook, nshash-runtime and the nshash CLI (issue 10):
# a user-set io.nshash.pin never removes another container's pin, in any
# stage; FIFOs, device nodes and symlinks where a netns, a config or a policy
# is expected (the policy's logFile too: issue 19) never hang a binary nor
# get opened as files; container-supplied
# strings never forge a log line (log file, syslog, runc's log, stderr);
# `nshash delete` removes only pins; the state dir and the policy file are
# checked (owner, mode, symlinks; an existing one is never chmod'ed, / and
# system directories are refused: issue 19) and a symlink swapped in after the pin is
# claimed mounts nothing over its target; \u0000 in JSON keys is refused;
# the 16 MiB config and 64 KiB policy limits are inclusive.
# Every binary runs under `timeout`: a hang is a failure with exit 124.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq strace
PY=$(command -v python3) || cannot_run "python3 missing"

engines_oci_setup
on_exit "cleanup_state_dir_mounts '$D'"
engines_policy "$P" "{\"stateDir\": \"$S\"}"
H=$BUILD/nshash-hook
TO="timeout -k 2 10"
mkfifo "$D/fifo"
state_listing() { (cd "$S" && find . | sort | tr '\n' ' '); echo "mounts=$(count_pins_under "$S/")"; }
cleanup_state_dir_mounts() { # everything a failing case mounted under DIR (stacked too)
	local i
	for i in 1 2 3; do
		umount_under "$1"
	done
}
strip() { sed -E 's/^nshash-hook\[[a-zA-Z]*\]: (error|warning|info): (hostname [^:]*: )?//'; }

# hook STAGE INPUT [POLICY]: RC, OUT (stderr, prefix stripped), stdout in $D/stdout
hook() {
	OUT=$(printf '%s' "$2" | $TO "$H" "$1" --policy "${3:-$P}" 2>&1 >"$D/stdout")
	RC=$?
	OUT=$(strip <<<"$OUT")
}
# expect RC FRAGMENT DESCRIPTION: after hook/cli
expect() {
	if [ "$RC" = "$1" ] && [[ "$OUT" == *"$2"* ]]; then pass "$3"; else fail "$3 (exit $RC, want $1 and '$2', got: $OUT)"; fi
}
cfg() { # ANNOTATION-MEMBERS [NETNS-PATH]
	local path=${2:+, \"path\": \"$2\"}
	printf '{"ociVersion": "1.0.2", "annotations": {%s}, "linux": {"namespaces": [{"type": "network"%s}]}}' "$1" "$path"
}
pin_state() { # PATH: "mounted INODE" or "gone"
	if [ "$(count_pins_under "$1")" -ge 1 ]; then echo "mounted $(stat -L -c %i "$1")"; else echo gone; fi
}

# ================================================================ 1: pins
mkdir -p -m 0700 "$S/pins"
# victim: (re)create the other container's pin if a case removed it; VICTIM
# is what it must still be after the next case
victim() {
	if [ "$(count_pins_under "$S/pins/victim")" -lt 1 ]; then
		rm -f "$S/pins/victim"
		$NSHASH --state-dir "$S" create --tcp 256 "$S/pins/victim" >/dev/null || cannot_run "cannot create a victim pin"
	fi
	VICTIM=$(pin_state "$S/pins/victim")
}
victim
PINREFUSED="annotation io.nshash.pin=victim is set by nshash itself and cannot be given"
sleep 300 &
ALIVE=$!
on_exit "kill $ALIVE"

victim
hook poststop '{"ociVersion": "1.0.2", "id": "evil", "status": "stopped", "annotations": {"io.nshash.tcp": "4096", "io.nshash.pin": "victim"}}'
expect 1 "state of evil: $PINREFUSED" "poststop: a user-set io.nshash.pin is refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "poststop: the other container's pin is still mounted"
victim
hook state '{"ociVersion": "1.0.2", "id": "evil", "status": "stopped", "annotations": {"io.nshash.udp": "128", "io.nshash.pin": "victim"}}'
expect 1 "state of evil: $PINREFUSED" "state (stopped): a user-set io.nshash.pin is refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "state (stopped): the other container's pin is still mounted"
victim
hook createRuntime "{\"ociVersion\": \"1.0.2\", \"id\": \"evil\", \"pid\": $ALIVE, \"status\": \"creating\", \"annotations\": {\"io.nshash.tcp\": \"4096\", \"io.nshash.pin\": \"victim\"}}"
expect 1 "state of evil: $PINREFUSED" "createRuntime: a user-set io.nshash.pin is refused"

# CRI-O style: the pod annotations are in the bundle's config.json, the
# netns is the engine's (no path to our pin); the state has only sizes
mkdir -p "$D/crio"
cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "victim"' >"$D/crio/config.json"
victim
hook poststop "{\"ociVersion\": \"1.0.2\", \"id\": \"evil\", \"status\": \"stopped\", \"bundle\": \"$D/crio\", \"annotations\": {\"io.nshash.tcp\": \"4096\"}}"
expect 1 "$PINREFUSED" "poststop: io.nshash.pin in the bundle, netns not the pin: refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "bundle annotation: the other container's pin is still mounted"
cfg '"io.nshash.tcp": "4096", "io.nshash.pin": "victim"' /run/netns/some-engine-netns >"$D/crio/config.json"
victim
hook state "{\"ociVersion\": \"1.0.2\", \"id\": \"evil\", \"status\": \"stopped\", \"bundle\": \"$D/crio\"}"
expect 1 "$PINREFUSED" "state without annotations, bundle names another pin: refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "(still mounted)"

# a pin nshash wrote (annotation and netns path agree) that a process still
# uses is kept, not removed
cfg '"io.nshash.tcp": "256", "io.nshash.pin": "victim"' "$S/pins/victim" >"$D/crio/config.json"
victim
nsenter --net="$S/pins/victim" sleep 300 &
INSIDE=$!
on_exit "kill $INSIDE"
sleep 0.2
victim
hook poststop "{\"ociVersion\": \"1.0.2\", \"id\": \"c40\", \"status\": \"stopped\", \"bundle\": \"$D/crio\", \"annotations\": {\"io.nshash.tcp\": \"256\"}}"
expect 0 "still uses its network namespace" "poststop: a pin a process still uses is kept (and said so)"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "poststop: the pin in use is still mounted"
kill $INSIDE
wait $INSIDE 2>/dev/null

# real runc running the shipped stages from the bundle (as CRI-O and other
# hooks.d engines do), pod annotations in the config
engines_busybox_rootfs "$D/rootfs"
engines_runc_bundle "$D/rb" true
engines_bundle_annotate "$D/rb" io.nshash.udp=128 io.nshash.pin=victim
jq --arg h "$H" --arg p "$P" '.root.path = "'"$D/rootfs"'" | .hooks = {"createRuntime": [{"path": $h, "args": ["nshash-hook", "state", "--policy", $p]}],
	"poststop": [{"path": $h, "args": ["nshash-hook", "state", "--policy", $p]}]}' "$D/rb/config.json" >"$D/rb/x" && mv "$D/rb/x" "$D/rb/config.json"
victim
out=$(cd "$D/rb" && $TO runc --root "$D/runc-root" run t40-runc 2>&1)
runc --root "$D/runc-root" delete -f t40-runc >/dev/null 2>&1
assert_contains "$out" "$PINREFUSED" "runc with the shipped hooks: user pin refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "runc with the shipped hooks: the other container's pin is still mounted"
# the wrapper (what ctr and containerd run)
engines_runc_bundle "$D/wb" true
engines_bundle_annotate "$D/wb" io.nshash.tcp=4096 io.nshash.pin=victim
jq '.root.path = "'"$D/rootfs"'"' "$D/wb/config.json" >"$D/wb/x" && mv "$D/wb/x" "$D/wb/config.json"
victim
out=$(cd "$D/wb" && NSHASH_POLICY=$P $TO nshash-runtime --root "$D/runc-root" run t40-wrap 2>&1)
runc --root "$D/runc-root" delete -f t40-wrap >/dev/null 2>&1
assert_contains "$out" "$PINREFUSED" "wrapper: user pin refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "wrapper: the other container's pin is still mounted"

# real podman without the precreate file (only verify + cleanup installed,
# as an admin might): the user's io.nshash.pin must not reach the pin
engines_hooks_dir "$D/hooks-all" "$P" verify
mkdir -p "$D/hooks"
cp "$D/hooks-all/nshash-verify.json" "$D/hooks/"
engines_podman_setup "$D/podman" "hooks_dir = [\"$D/hooks\"]" || cannot_run "podman setup failed"
victim
out=$($TO podman run --rm --network none --annotation io.nshash.tcp=4096 --annotation io.nshash.pin=victim \
	localhost/nshash-busybox true 2>&1)
assert_contains "$out" "$PINREFUSED" "podman without precreate: user pin refused"
assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "podman without precreate: the other container's pin is still mounted"

# ================================================================ 2: delete
printf 'precious\n' >"$D/data"
OUT=$($TO $NSHASH delete "$D/data" 2>&1); RC=$?
expect 2 "remove pin $D/data: not a pin (a file with data)" "delete refuses a non-empty regular file"
assert_eq "precious" "$(cat "$D/data" 2>/dev/null)" "delete: the file is still there, intact"
: >"$D/empty"
OUT=$($TO $NSHASH --state-dir "$S" delete "$D/empty" 2>&1); RC=$?
expect 2 "remove pin $D/empty: not a pin (an unmounted file outside /run/netns and the state dir)" "delete refuses an empty file outside the pin dirs"
assert_eq "yes" "$([ -e "$D/empty" ] && echo yes)" "delete: the empty file is still there"
: >"$S/pins/stale"
OUT=$($TO $NSHASH --state-dir "$S" delete "$S/pins/stale" 2>&1); RC=$?
expect 0 "" "delete removes an empty unmounted pin file in the state dir"
assert_eq "gone" "$([ -e "$S/pins/stale" ] || echo gone)" "(removed)"
$NSHASH --state-dir "$S" create --tcp 128 "$D/pin" >/dev/null && $NSHASH delete "$D/pin" && [ ! -e "$D/pin" ] &&
	pass "delete still removes a mounted pin anywhere" || fail "delete of a mounted pin failed"

# ================================================================ 3: untrusted netns paths
mknod "$D/null" c 1 3
ln -s "$S/pins/victim" "$D/link"
OUT=$($TO $NSHASH show "$D/fifo" 2>&1); RC=$?
expect 2 "inspect $D/fifo: not a network namespace (a FIFO)" "show FIFO: no hang, refused as bad input"
OUT=$($TO $NSHASH show "$D/null" 2>&1); RC=$?
expect 2 "inspect $D/null: not a network namespace (a character device)" "show device node: refused as bad input"
OUT=$($TO $NSHASH show "$D/link" 2>&1); RC=$?
expect 2 "inspect $D/link: not a network namespace (a symbolic link)" "show symlink: not followed"
# a device node is never opened (only looked at through O_PATH)
$TO strace -f -qq -e trace=open,openat,openat2 -o "$D/strace" $NSHASH show "$D/null" >/dev/null 2>&1
opened=$(grep -F "\"$D/null\"" "$D/strace" | grep -v O_PATH)
assert_eq "" "$opened" "show: the device node was not opened"
hook precreate "$(cfg '"io.nshash.tcp": "4096"' "$D/fifo")"
expect 1 "$D/fifo: not a network namespace (a FIFO)" "precreate: netns path a FIFO: no hang, refused"
$TO strace -f -qq -e trace=open,openat,openat2 -o "$D/strace" "$H" precreate --policy "$P" <<<"$(cfg '"io.nshash.tcp": "4096"' "$D/null")" >/dev/null 2>&1
opened=$(grep -F "\"$D/null\"" "$D/strace" | grep -v O_PATH)
assert_eq "" "$opened" "precreate: the device node in the netns path was not opened"
assert_eq 1 "$(count_pins_under "$S/pins/")" "no pin left by the refusals (only the victim; templates and spares are the successful creations')"

# the hook's message to podman's stderr: a FIFO nobody reads must not hang it
mkdir -p "$D/fake" && cp /bin/bash "$D/fake/podman" # comm "podman"
( sleep 3 <"$D/fifo" & ) # a reader so that the parent can open the FIFO for writing
RC=$($TO "$D/fake/podman" -c '
	exec 2>"$1/fifo"   # the reader above lets this open succeed ...
	sleep 3.5          # ... and is gone now: nobody reads our stderr
	printf "%s" "$3" | "$2" precreate --policy "$4" >/dev/null 2>"$1/hook-err"
	echo $? >"$1/hook-rc"' _ "$D" "$H" "$(cfg '"io.nshash.tcp": "abc"')" "$P" 2>/dev/null; echo $?)
assert_eq "0 1" "$RC $(cat "$D/hook-rc" 2>/dev/null)" "precreate under podman whose stderr is a FIFO without reader: no hang, exit 1"

# ================================================================ 10: FIFOs as files
mkdir -p "$D/fb"
mkfifo "$D/fb/config.json"
OUT=$(NSHASH_POLICY=$P $TO nshash-runtime --root "$D/runc-root" create --bundle "$D/fb" t40 2>&1 </dev/null); RC=$?
OUT=${OUT#nshash-runtime: error: }
expect 1 "t40: bundle $D/fb: read $D/fb/config.json: not a regular file (a FIFO)" "wrapper: config.json a FIFO: no hang, refused"
hook createRuntime "{\"ociVersion\": \"1.0.2\", \"id\": \"c1\", \"pid\": $ALIVE, \"bundle\": \"$D/fb\"}"
expect 1 "state of c1: bundle: read $D/fb/config.json: not a regular file (a FIFO)" "hook: bundle config a FIFO: no hang, refused"
hook poststop "{\"ociVersion\": \"1.0.2\", \"id\": \"c1\", \"status\": \"stopped\", \"bundle\": \"$D/fb\", \"annotations\": {\"other\": \"x\"}}"
assert_eq "0 " "$RC $OUT" "hook: state with annotations but none of nshash's: the bundle is not read"
hook precreate "$(cfg '')" "$D/fifo"
expect 1 "policy file: read $D/fifo: not a regular file (a FIFO)" "hook: policy a FIFO: no hang, refused"
OUT=$(cd "$D/wb" && NSHASH_POLICY=$D/fifo $TO nshash-runtime --root "$D/runc-root" create t40 2>&1 </dev/null); RC=$?
expect 1 "policy file: read $D/fifo: not a regular file (a FIFO)" "wrapper: policy a FIFO: no hang, refused"
hook precreate "$(cfg '')" "$D/null"
expect 1 "policy file: read $D/null: not a regular file (a character device)" "hook: policy a device node: refused"

# ================================================================ 6: policy owner and mode
cp "$P" "$D/pol-nobody.json" && chown 65534 "$D/pol-nobody.json"
hook precreate "$(cfg '')" "$D/pol-nobody.json"
expect 1 "policy file $D/pol-nobody.json: owned by uid 65534, not root" "policy not owned by root: refused"
cp "$P" "$D/pol-ww.json" && chmod 0666 "$D/pol-ww.json"
hook precreate "$(cfg '')" "$D/pol-ww.json"
expect 1 "policy file $D/pol-ww.json: writable by group or others (mode 0666)" "world-writable policy: refused"
cp "$P" "$D/pol-gw.json" && chgrp 65534 "$D/pol-gw.json" && chmod 0664 "$D/pol-gw.json"
hook precreate "$(cfg '')" "$D/pol-gw.json"
expect 1 "policy file $D/pol-gw.json: writable by group or others (mode 0664)" "policy writable by a non-root group: refused"
cp "$P" "$D/pol-ok.json" && chmod 0640 "$D/pol-ok.json"
hook precreate "$(cfg '')" "$D/pol-ok.json"
expect 0 "" "root-owned 0640 policy: accepted"
OUT=$(cd "$D/wb" && NSHASH_POLICY=$D/pol-ww.json $TO nshash-runtime --root "$D/runc-root" create t40 2>&1 </dev/null); RC=$?
expect 1 "policy file $D/pol-ww.json: writable by group or others (mode 0666)" "wrapper: world-writable policy refused"

# ================================================================ 5: the state dir
ST=$D/fresh-state
engines_policy "$D/pol-st.json" "{\"stateDir\": \"$ST\"}"
hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-st.json"
expect 0 "" "precreate with a new state dir"
pin=$(jq -r '.linux.namespaces[] | select(.type == "network") | .path' "$D/stdout")
$NSHASH delete "$pin" >/dev/null 2>&1
on_exit "cleanup_state_dir '$ST'"
assert_eq "700 0 700 0 700 0" "$(stat -c '%a %u' "$ST" "$ST/pins" "$ST/templates" | tr '\n' ' ' | sed 's/ $//')" \
	"state dir, pins/ and templates/ are 0700 root"
check_state_dir() { # DESC DIR FRAGMENT
	engines_policy "$D/pol-st.json" "{\"stateDir\": \"$2\"}"
	hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-st.json"
	expect 1 "$3" "$1"
	assert_eq 0 "$(($(count_pins_under "$2/") + $(count_pins_under "$D/st-real/")))" "$1: nothing mounted"
}
mkdir -p "$D/st-real" && chmod 0700 "$D/st-real" && ln -s "$D/st-real" "$D/st-link"
check_state_dir "state dir a symlink: refused" "$D/st-link" "state dir $D/st-link: a symbolic link (give the real path)"
mkdir -m 0700 "$D/st-nobody" && chown 65534 "$D/st-nobody"
check_state_dir "state dir not owned by root: refused" "$D/st-nobody" "state dir $D/st-nobody: owned by uid 65534, not root"
mkdir "$D/st-ww" && chmod 1777 "$D/st-ww"
check_state_dir "world-writable state dir: refused" "$D/st-ww" "state dir $D/st-ww: writable by group or others (mode 1777)"
mkdir -m 0700 "$D/st-pl" && ln -s "$D/st-real" "$D/st-pl/pins"
check_state_dir "pins/ a symlink: refused" "$D/st-pl" "state dir $D/st-pl/pins: a symbolic link (give the real path)"
mkdir -m 0700 "$D/st-pw" && mkdir -m 0777 "$D/st-pw/pins" && chmod 0777 "$D/st-pw/pins"
check_state_dir "world-writable pins/: refused" "$D/st-pw" "state dir $D/st-pw/pins: writable by group or others (mode 0777)"
OUT=$($TO $NSHASH --state-dir "$D/st-link" create --tcp 128 "$D/p2" 2>&1); RC=$?
expect 1 "state dir $D/st-link: a symbolic link (give the real path)" "CLI: state dir a symlink: refused"
assert_eq "" "$(ls "$D/st-real")" "nothing created through the symlink"

# issue 19: an existing directory is never chmod'ed; / and system directories
# are refused as state dirs, by the policy and by the CLI, before anything is made
KEEP_HINT="nshash never changes the mode of a directory it did not create (but for an empty one of mode 0755, as kubelet makes a hostPath, which it narrows to 0700): give a directory only its owner can open (mode 0700), or one that does not exist yet (nshash creates it 0700)"
SYS_HINT="never a state dir (refused: /, every directory directly under /, /var or /run/user, everything under /usr, /etc, /boot, /proc, /sys or /dev, and /run/netns): give a directory of nshash's own, e.g. /run/nshash, which it creates 0700 on first use"
dir_state() { stat -c '%a %U' "$1"; ls -A "$1" | md5sum; }
mkdir -m 0755 "$D/st-755" && touch "$D/st-755/theirs" # not empty: not as kubelet makes one
check_state_dir "policy: an existing 0755 state dir with a file in it: refused" "$D/st-755" "state dir $D/st-755: open to group or others (mode 0755): $KEEP_HINT"
assert_eq "755 theirs" "$(stat -c %a "$D/st-755") $(ls -A "$D/st-755")" "policy: the 0755 state dir: mode unchanged, nothing made in it"
OUT=$($TO $NSHASH --state-dir "$D/st-755" create --tcp 128 "$D/p3" 2>&1); RC=$?
expect 1 "state dir $D/st-755: open to group or others (mode 0755): $KEEP_HINT" "CLI: an existing 0755 state dir with a file in it: refused"
assert_eq "755 theirs no-pin" "$(stat -c %a "$D/st-755") $(ls -A "$D/st-755") $([ -e "$D/p3" ] && echo pin || echo no-pin)" \
	"CLI: the 0755 state dir: mode unchanged, nothing made in it, no pin file"
# an empty 0755 one, as kubelet's hostPath DirectoryOrCreate makes it before
# the DaemonSet's init container narrows it: narrowed to 0700 and used
mkdir -m 0755 "$D/st-kubelet"
on_exit "cleanup_state_dir '$D/st-kubelet'"
engines_policy "$D/pol-st.json" "{\"stateDir\": \"$D/st-kubelet\"}"
hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-st.json"
expect 0 "" "policy: an empty 0755 state dir (kubelet's): used"
pin=$(jq -r '.linux.namespaces[] | select(.type == "network") | .path' "$D/stdout")
$NSHASH delete "$pin" >/dev/null 2>&1
assert_eq "700" "$(stat -c %a "$D/st-kubelet")" "... narrowed to 0700"
for m in 0750 0711 0775; do
	mkdir -m $m "$D/st-k$m" && chmod $m "$D/st-k$m"
	OUT=$($TO $NSHASH --state-dir "$D/st-k$m" create --tcp 128 "$D/p5" 2>&1); RC=$?
	expect 1 "state dir $D/st-k$m: " "CLI: an empty state dir of mode $m (not kubelet's 0755): refused"
	assert_eq "${m#0} no-pin" "$(stat -c %a "$D/st-k$m") $([ -e "$D/p5" ] && echo pin || echo no-pin)" "... mode unchanged, no pin"
done
# the state dir's ancestors: only root (or the caller) may change them, else
# the state dir could be swapped for another between the check and its use
mkdir -m 0777 "$D/anc-ww" && chmod 0777 "$D/anc-ww"
OUT=$($TO $NSHASH --state-dir "$D/anc-ww/state" create --tcp 128 "$D/p6" 2>&1); RC=$?
expect 1 "state dir $D/anc-ww/state: its parent $D/anc-ww is writable by group or others without the sticky bit (mode 0777: anyone could put another directory in the state dir's place): give a state dir under directories only root can change, e.g. /run/nshash" \
	"CLI: a state dir under a world-writable, non-sticky parent: refused"
assert_eq " no-pin" "$(ls -A "$D/anc-ww") $([ -e "$D/p6" ] && echo pin || echo no-pin)" "... nothing made under it, no pin"
engines_policy "$D/pol-st.json" "{\"stateDir\": \"$D/anc-ww/state\"}"
hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-st.json"
expect 1 "its parent $D/anc-ww is writable by group or others without the sticky bit" "policy: the same state dir: refused"
mkdir -m 0755 "$D/anc-other" && chown 4321 "$D/anc-other"
OUT=$($TO $NSHASH --state-dir "$D/anc-other/state" create --tcp 128 "$D/p6" 2>&1); RC=$?
expect 1 "state dir $D/anc-other/state: its parent $D/anc-other is owned by uid 4321, neither root nor the caller" \
	"CLI: a state dir under a directory of another user: refused"
assert_eq "" "$(ls -A "$D/anc-other")" "... nothing made under it"
# a symbolic link on the way that another user owns (in a sticky dir, as
# /tmp: only they can put another in its place): the canonical path hides it
mkdir "$D/anc-stk" && chmod 1777 "$D/anc-stk" && mkdir -m 0700 "$D/anc-target"
ln -s "$D/anc-target" "$D/anc-stk/link" && chown -h 4321 "$D/anc-stk/link"
OUT=$($TO $NSHASH --state-dir "$D/anc-stk/link/state" create --tcp 128 "$D/p6" 2>&1); RC=$?
expect 1 "state dir $D/anc-stk/link/state: its parent $D/anc-stk/link is a symbolic link owned by uid 4321, neither root nor the caller" \
	"CLI: a state dir through another user's symbolic link: refused"
assert_eq " no-pin" "$(ls -A "$D/anc-target") $([ -e "$D/p6" ] && echo pin || echo no-pin)" "... nothing made behind it, no pin"
mkdir "$D/anc-sticky" && chmod 1777 "$D/anc-sticky"
on_exit "cleanup_state_dir '$D/anc-sticky/state'"
OUT=$($TO $NSHASH --state-dir "$D/anc-sticky/state" create --tcp 128 "$D/p7" 2>&1); RC=$?
expect 0 "" "CLI: under a sticky world-writable parent (as /tmp): accepted"
$NSHASH delete "$D/p7" >/dev/null 2>&1
mkdir -m 0755 "$D/st-755r" && mkdir -m 0700 "$D/st-755r/pins" # something to reclaim
OUT=$($TO $NSHASH --state-dir "$D/st-755r" reclaim 2>&1); RC=$?
expect 1 "reclaim: state dir $D/st-755r: open to group or others (mode 0755): $KEEP_HINT" "CLI reclaim: an existing 0755 state dir: refused"
assert_eq "755 pins" "$(stat -c %a "$D/st-755r") $(ls -A "$D/st-755r")" "CLI reclaim: mode unchanged, no reclaim.stamp made"
mkdir -m 0750 "$D/st-750"
check_state_dir "policy: an existing 0750 state dir: refused" "$D/st-750" "state dir $D/st-750: open to group or others (mode 0750): $KEEP_HINT"
assert_eq 750 "$(stat -c %a "$D/st-750")" "policy: the 0750 state dir: mode unchanged"
# A build that chmods would make / 0700: the system cases run only after the
# scratch case above showed this one does not.
if [ "$(stat -c %a "$D/st-755")" = 755 ] && [ "$RC" = 1 ]; then
	ln -s / "$D/to-root"
	for c in "/:the root directory" "/usr:a directory directly under /" "/etc:a directory directly under /" \
		"/root:a directory directly under /" "/usr/local:a directory under /usr" "/var/lib:a directory directly under /var" \
		"$D/.. (/tmp):a directory directly under /" "$D/to-root (/):the root directory" "/usr/nshash-t40-$$:a directory under /usr"; do
		sd=${c%%:*} why=${c#*:} real=${sd%% (*}
		before=$(dir_state "$(realpath -m "$real")" 2>&1)
		OUT=$($TO $NSHASH --state-dir "$real" create --tcp 128 "$D/p4" 2>&1); RC=$?
		expect 1 "state dir $sd: $why, $SYS_HINT" "CLI: --state-dir $sd refused"
		if [[ $real != *..* ]]; then # the policy refuses ".." itself
			engines_policy "$D/pol-st.json" "{\"stateDir\": \"$real\"}"
			hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-st.json"
			expect 1 "state dir $sd: $why, $SYS_HINT" "policy: stateDir $sd refused"
		fi
		assert_eq "$before" "$(dir_state "$(realpath -m "$real")" 2>&1)" "$sd: mode, owner and entries unchanged"
	done
	assert_eq "no" "$([ -e "/usr/nshash-t40-$$" ] && echo yes || echo no)" "a refused state dir that did not exist is not made"
	assert_eq "no-pin" "$([ -e "$D/p4" ] && echo pin || echo no-pin)" "no pin file left by the refused state dirs"
else
	fail "the 0755 scratch state dir was not refused: / and the system directories not tried"
fi

# a symlink swapped in right after the pin is claimed: the bind mount must
# not follow it (the creator is held on the state lock meanwhile)
mkdir -p "$D/race"
printf 'precious\n' >"$D/race-target"
RS=$(make_state_dir)
"$PY" "$TOP/tests/lib/swap-on-create.py" "$D/race" "$D/race-target" >"$D/racer.out" 2>&1 &
RACER=$!
on_exit "kill $RACER"
for _ in $(seq 50); do grep -q ready "$D/racer.out" && break; sleep 0.1; done
flock "$RS/lock" sleep 2 &
LOCKER=$!
sleep 0.3
OUT=$($TO $NSHASH --state-dir "$RS" create --tcp 512 "$D/race/pin" 2>&1); RC=$?
wait $LOCKER
assert_contains "$(cat "$D/racer.out")" "swapped pin" "race: the pin was swapped for a symlink while the creator waited"
assert_eq "0 precious" "$(count_pins_under "$D/race-target") $(cat "$D/race-target")" "race: no netns mounted over the symlink's target"
umount "$D/race-target" 2>/dev/null
[ "$RC" -ne 0 ] && pass "race: the creation failed (exit $RC)" || fail "race: the creation claims success: $OUT"

# ================================================================ 4: log forging
engines_policy "$D/pol-log.json" "{\"stateDir\": \"$S\", \"logFile\": \"$D/forge.log\"}"
forge() { # DESC STAGE INPUT FRAGMENT
	rm -f "$D/forge.log"
	OUT=$(printf '%s' "$3" | $TO "$H" "$2" --policy "$D/pol-log.json" 2>&1 >/dev/null)
	assert_eq "1 1" "$(wc -l <<<"$OUT") $(wc -l <"$D/forge.log")" "$1: one line on stderr and in the log file"
	assert_contains "$(cat "$D/forge.log")" "$4" "$1: escaped in the log file"
	assert_not_contains "$(cat "$D/forge.log")" $'\nFORGED' "$1: no forged line"
}
forge "annotation key with a newline" precreate "$(cfg '"io.nshash.x\nFORGED: nshash-hook[precreate]: info: all fine": "1"')" 'unknown annotation "io.nshash.x\x0aFORGED'
forge "annotation value with a newline" precreate "$(cfg '"io.nshash.tcp": "1\nFORGED"')" 'io.nshash.tcp: "1\x0aFORGED"'
forge "hostname with a newline" precreate '{"hostname": "h\nFORGED", "annotations": {"io.nshash.tcp": "x"}, "linux": {"namespaces": [{"type": "network"}]}}' 'hostname h\x0aFORGED'
forge "container id with a newline" createRuntime '{"id": "c\nFORGED", "annotations": {"io.nshash.tcp": "4096"}}' 'state of c\x0aFORGED has no pid'
forge "carriage return and escape" createRuntime '{"id": "c\r\u001b[2KFORGED", "annotations": {"io.nshash.tcp": "4096"}}' 'state of c\x0d\x1b[2KFORGED has no pid'
# issue 19: a logFile that is not a regular file never hangs a binary (a
# FIFO without a reader blocked the open) and is said, once; nothing is written through a link
LOGFILE_HINT="nothing is logged there; name a regular file (or a path that does not exist yet) in the policy"
printf 'kept\n' >"$D/log-target"
ln -s "$D/log-target" "$D/log-link"
for c in "fifo:a FIFO" "null:a character device" "log-link:a symbolic link"; do
	engines_policy "$D/pol-lf.json" "{\"stateDir\": \"$S\", \"logFile\": \"$D/${c%%:*}\"}"
	OUT=$(printf '%s' "$(cfg '"io.nshash.tcp": "x"')" | $TO "$H" precreate --policy "$D/pol-lf.json" 2>&1 >/dev/null); RC=$?
	expect 1 "logFile $D/${c%%:*}: not a regular file (${c#*:}): $LOGFILE_HINT" "logFile ${c#*:}: no hang, refused and said"
	assert_eq 1 "$(grep -c "logFile $D/" <<<"$OUT")" "logFile ${c#*:}: said once"
done
assert_eq "kept" "$(cat "$D/log-target")" "logFile a symbolic link: nothing written to its target"
# runc's text log, which containerd reads: one line, quotes escaped
rm -f "$D/runc.log"
(cd "$D/wb" && NSHASH_POLICY=$P $TO nshash-runtime --root "$D/runc-root" --log "$D/runc.log" --log-format text create $'x\nFORGED" level=info msg="fine' >/dev/null 2>&1)
assert_eq 1 "$(wc -l <"$D/runc.log")" "runtime log (text): one line for an id with a newline and quotes"
assert_contains "$(cat "$D/runc.log")" 'msg="nshash-runtime: container id \"x\\x0aFORGED\" level=info msg=\"fine\"' "runtime log (text): newline and quotes escaped"
rm -f "$D/runc.log"
(cd "$D/wb" && NSHASH_POLICY=$P $TO nshash-runtime --root "$D/runc-root" --log "$D/runc.log" --log-format json create $'x\nFORGED' >/dev/null 2>&1)
assert_eq "1 error" "$(wc -l <"$D/runc.log") $(jq -r .level "$D/runc.log" 2>/dev/null)" "runtime log (json): one valid line"
# the CLI's stderr
OUT=$($TO $NSHASH show $'x\nFORGED' 2>&1)
assert_eq 1 "$(wc -l <<<"$OUT")" "CLI: a name with a newline gives one line on stderr"
# syslog: a private /dev/log in a private mount namespace
"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("ready", flush=True)
with open(sys.argv[2], "wb") as f:
    while True:
        f.write(s.recv(65536) + b"\0")
        f.flush()
' "$D/log.sock" "$D/syslog.dat" >"$D/syslogd.out" 2>&1 &
SYSLOGD=$!
on_exit "kill $SYSLOGD"
for _ in $(seq 50); do grep -q ready "$D/syslogd.out" && break; sleep 0.1; done
engines_policy "$D/pol-sys.json" "{\"stateDir\": \"$S\", \"syslog\": true}"
cfg '"io.nshash.x\nFORGED: x": "1"' >"$D/forge.json"
$TO unshare -m sh -c 'mount -t tmpfs none /dev && touch /dev/log && mount --bind "$1" /dev/log && exec "$2" precreate --policy "$3" <"$4"' \
	_ "$D/log.sock" "$H" "$D/pol-sys.json" "$D/forge.json" >/dev/null 2>&1
sleep 0.3
msg=$(tr '\0' '\n' <"$D/syslog.dat" 2>/dev/null)
assert_contains "$msg" 'unknown annotation "io.nshash.x\x0aFORGED' "syslog: the message arrived, escaped"
assert_eq 1 "$(wc -l <<<"$msg")" "syslog: one message, no raw newline in it"

# ================================================================ 11, 12: JSON and limits
c='{"ociVersion": "1.0.2", "annotations": {"io.nshash.tcp\u0000x": "4096"}, "linux": {"namespaces": [{"type": "network"}]}}'
pre=${c%%\\u0000*}
hook precreate "$c"
expect 1 "config: malformed JSON at line 1 column $((${#pre} + 1)): \\u0000 (a NUL character) in a string" "precreate: \\u0000 in an annotation key refused"
hook createRuntime "{\"id\": \"c1\", \"pid\": $ALIVE, \"annotations\": {\"io.nshash.tcp\\u0000\": \"4096\"}}"
expect 1 "\\u0000 (a NUL character) in a string" "createRuntime: \\u0000 in an annotation key refused"
printf '{"stateDir": "%s", "maxTcp\\u0000x": 1}' "$S" >"$D/pol-nul.json"
hook precreate "$(cfg '"io.nshash.tcp": "4096"')" "$D/pol-nul.json"
expect 1 "$D/pol-nul.json: malformed JSON at line 1 column" "policy: \\u0000 in a key refused"
# exactly 64 KiB of policy: accepted; one byte more: refused
pad() { # FILE SIZE: JSON text padded with blanks to SIZE bytes
	local body=$1 size=$2
	printf '%s' "$body"
	head -c $((size - ${#body})) /dev/zero | tr '\0' ' '
}
pad "{\"stateDir\": \"$S\"}" 65536 >"$D/pol-64k.json"
hook precreate "$(cfg '')" "$D/pol-64k.json"
expect 0 "" "policy of exactly 65536 bytes accepted"
pad "{\"stateDir\": \"$S\"}" 65537 >"$D/pol-64k.json"
hook precreate "$(cfg '')" "$D/pol-64k.json"
expect 1 "larger than 65536 bytes" "policy of 65537 bytes refused"
# exactly 16 MiB of config on stdin (echoed back unchanged) / in a bundle
pad "$(cfg '')" 16777216 >"$D/cfg-16m.json"
OUT=$($TO "$H" precreate --policy "$P" <"$D/cfg-16m.json" 2>&1 >"$D/stdout"); RC=$?
expect 0 "" "precreate: a config of exactly 16777216 bytes accepted"
assert_eq 16777216 "$(stat -c %s "$D/stdout")" "precreate: ... and handed on whole"
pad "$(cfg '')" 16777217 >"$D/cfg-16m.json"
OUT=$($TO "$H" precreate --policy "$P" <"$D/cfg-16m.json" 2>&1 >"$D/stdout"); RC=$?
expect 1 "larger than 16777216 bytes" "precreate: 16777217 bytes refused"
mkdir -p "$D/big"
# (a bad size: the wrapper reads and parses the whole file, then refuses
# before any runtime runs)
pad "$(jq -c '.annotations = {"io.nshash.tcp": "abc"}' "$D/wb/config.json")" 16777216 >"$D/big/config.json"
OUT=$(cd "$D/big" && NSHASH_POLICY=$P $TO nshash-runtime --root "$D/runc-root" create t40-big 2>&1 </dev/null); RC=$?
expect 1 'io.nshash.tcp: "abc" is not a decimal number of entries' "wrapper: a bundle config of exactly 16777216 bytes is read"

# ================================================================ 13: policy stateDir
for c in "//x:contains \"//\"" "/./x:contains a \".\" component" "/x/:ends with \"/\""; do
	sd=$S${c%%:*}
	engines_policy "$D/pol-sd.json" "{\"stateDir\": \"$sd\"}"
	hook precreate "$(cfg '')" "$D/pol-sd.json"
	expect 1 "$D/pol-sd.json: key \"stateDir\": \"$sd\" ${c#*:}" "policy stateDir $sd refused"
done
engines_policy "$D/pol-sd.json" "{\"stateDir\": \"$S/a\\u0001b\"}"
hook precreate "$(cfg '')" "$D/pol-sd.json"
expect 1 "key \"stateDir\": \"$S/a\\x01b\" contains a control character" "policy stateDir with a control character refused (escaped)"

assert_eq "$VICTIM" "$(pin_state "$S/pins/victim")" "the victim pin survived every case"
$NSHASH delete "$S/pins/victim" >/dev/null 2>&1
assert_host_untouched
