#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nshash-runtime sizes containers that ask for shared mount propagation
# (issue 20; OCI config: linux.rootfsPropagation and mount options
# shared/rshared, Kubernetes "Bidirectional", Docker bind-propagation=rshared):
#   - a mount the container makes under its rshared bind appears on the host,
#     the container sized exactly as asked
#   - created in the host's mount namespace from the sibling bundle
#     STATE/bundles/PIN (root.path and relative bind sources absolute), the
#     netns pinned on the host at STATE/pins/PIN; the user's bundle byte for
#     byte (content, inode, mode) and nothing added to it
#   - delete removes the pin and the sibling bundle; a failed create leaves
#     them for the delete that follows, a sibling whose pin is gone is swept
#   - exit statuses equal plain runc's (a container's own, a failed create)
#   - crun: --config DIR/config.json, the bundle in its state the user's
#   - without sizes, and sized without shared propagation: as before (no
#     sibling, no pin on the host)
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/engines.sh"
test_needs root knobs jq

engines_oci_setup
engines_policy "$P" "{\"stateDir\": \"$S\", \"logFile\": \"$D/nshash.log\", \"spares\": 0}"
export NSHASH_POLICY=$P
ROOT=$D/runc-root
CROOT=$D/crun-root
on_exit "for c in \$(runc --root '$ROOT' list -q 2>/dev/null); do runc --root '$ROOT' delete -f \$c; done"
on_exit "engines_crun_ns sh -c 'for c in \$(crun --root \"$CROOT\" list -q 2>/dev/null); do crun --root \"$CROOT\" delete -f \$c; done'"
SIZES='echo $(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)'
GLOBAL="-$(cat /proc/sys/net/ipv4/tcp_ehash_entries) -$(cat /proc/sys/net/ipv4/udp_hash_entries)"

# The host side of the bidirectional mount: a shared mount of its own (the
# host's / may be private, as it is for kubelet's pod dirs made shared).
H=$D/host
mkdir -p "$H"
mount --bind "$H" "$H" && mount --make-shared "$H" || cannot_run "cannot make $H a shared mount"
on_exit "umount -R -l '$H' 2>/dev/null"

# bundle NAME PROPAGATION KEY=VALUE...: a bundle with its rootfs inside
# (root.path "rootfs", relative), a relative read-only bind of NAME/data on
# /data and a bind of $H on /mnt/h with option PROPAGATION (rootfsPropagation
# rshared when it is rshared); the process runs `sh -c "$CMD"` with
# CAP_SYS_ADMIN.  A copy of the user's bytes in NAME.orig.
bundle() {
	local n=$1 b=$D/$1 prop=$2
	shift 2
	engines_runc_bundle "$b" sh -c "$CMD" && engines_bundle_annotate "$b" "$@" || return 1
	mkdir -p "$b/data" "$b/rootfs/data" "$b/rootfs/mnt/h" && echo "$n-data" >"$b/data/x"
	jq --arg h "$H" --arg p "$prop" '.root.path = "rootfs"
		| .process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])
		| (if $p == "rshared" then .linux.rootfsPropagation = "rshared" else . end)
		| .mounts += [{destination: "/data", type: "bind", source: "data", options: ["rbind", "ro"]},
			      {destination: "/mnt/h", type: "bind", source: $h, options: ["rbind", $p]}]' \
		"$b/config.json" >"$D/x" && mv "$D/x" "$b/config.json" && chmod 0640 "$b/config.json" &&
		cp -p "$b/config.json" "$D/$n.orig" && stat -c '%i %a %U' "$b/config.json" >"$D/$n.stat"
}
fs_at() { echo "$(findmnt -n -o FSTYPE "$1") $(findmnt -n -o SOURCE "$1")"; }
unchanged() { # NAME WHEN
	if cmp -s "$D/$1.orig" "$D/$1/config.json"; then pass "$2: config.json byte for byte"; else
		fail "$2: config.json changed: $(diff <(jq -S . "$D/$1.orig") <(jq -S . "$D/$1/config.json" 2>&1) | head -c 400)"
	fi
	assert_eq "$(cat "$D/$1.stat")" "$(stat -c '%i %a %U' "$D/$1/config.json")" "$2: same inode, mode and owner"
	assert_eq "" "$(ls -A "$D/$1" | grep -v -x -e config.json -e rootfs -e data)" "$2: nothing else in the bundle"
}
left() { echo "$(count_pins_under "$S/pins/") $(ls -A "$S/pins" 2>/dev/null | wc -l) $(ls -A "$S/bundles" 2>/dev/null | wc -l)"; }
wait_status() { # ROOT ID STATUS
	for _ in $(seq 200); do [ "$(runc --root "$1" state "$2" 2>/dev/null | jq -r .status)" = "$3" ] && return 0; sleep 0.05; done
	return 1
}
wait_file() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
st() { "$@" >/dev/null 2>&1 </dev/null; echo $?; }

# ---- runc: a mount made in the container reaches the host
CMD="mkdir -p /mnt/h/m1 && mount -t tmpfs t38p /mnt/h/m1 && cat /data/x >/mnt/h/m1/seen && $SIZES >/mnt/h/m1/sizes && exec sleep 300"
bundle p1 rshared io.nshash.tcp=4096 io.nshash.udp=1024
on_exit "umount -l '$H/m1' 2>/dev/null"
nshash-runtime --root "$ROOT" create -b "$D/p1" --pid-file "$D/p1.pid" t38p1 </dev/null >/dev/null 2>"$D/err"
assert_eq 0 $? "create of a sized container with an rshared bind $(cat "$D/err")"
unchanged p1 "after create"
PIN=$(ls "$S/pins" 2>/dev/null)
assert_eq "1 1 1" "$(left)" "after create: one pin on the host ($PIN) and one sibling bundle"
assert_eq "$(jq -S .mounts "$D/p1.orig" | jq -c '.[-1]')" "$(jq -S .mounts "$S/bundles/$PIN/config.json" | jq -c '.[-1]')" \
	"the sibling's rshared bind is the user's"
assert_eq "$D/p1/rootfs $D/p1/data $S/pins/$PIN" \
	"$(jq -r '[.root.path, (.mounts[] | select(.destination == "/data") | .source), (.linux.namespaces[] | select(.type == "network") | .path)] | join(" ")' "$S/bundles/$PIN/config.json")" \
	"the sibling's config: root.path and the relative bind source absolute, the netns the host pin"
assert_eq "$S/bundles/$PIN" "$(runc --root "$ROOT" state t38p1 | jq -r .bundle)" "runc's state names the sibling bundle"
nshash-runtime --root "$ROOT" start t38p1
assert_eq 0 $? "start through the wrapper"
wait_file "$H/m1/sizes"
assert_eq "4096 1024" "$(cat "$H/m1/sizes" 2>/dev/null)" "the container is sized exactly as asked"
assert_eq "p1-data" "$(cat "$H/m1/seen" 2>/dev/null)" "the relative bind source is the user's bundle's"
assert_eq "tmpfs t38p" "$(fs_at "$H/m1")" "the tmpfs the container mounted under its rshared bind is on the host"
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(cat "$D/p1.pid")")" "the init is in the sized netns"
nshash-runtime --root "$ROOT" delete t38p1 >/dev/null 2>&1
assert_eq 1 $? "delete of the running container fails, as runc's does"
assert_eq "1 1 1" "$(left)" "that failed delete keeps the pin and the sibling bundle"
nshash-runtime --root "$ROOT" kill t38p1 KILL
wait_status "$ROOT" t38p1 stopped
nshash-runtime --root "$ROOT" delete t38p1
assert_eq 0 $? "delete of the stopped container"
assert_eq "0 0 0" "$(left)" "after delete: no pin, no pin file, no sibling bundle"
unchanged p1 "after delete"
umount -l "$H/m1"

# ---- a bind with "shared" alone (no rootfsPropagation: runc makes the
# rootfs rslave, so nothing reaches the host, but it is asked all the same),
# the bundle as the current directory, a foreground run and its exit status
CMD="$SIZES && exit 7"
bundle p2 shared io.nshash.tcp=8192
out=$(cd "$D/p2" && nshash-runtime --root "$ROOT" run t38p2 2>"$D/err" </dev/null)
assert_eq 7 $? "foreground run: the container's exit status $(cat "$D/err")"
assert_eq "8192 $(cut -d' ' -f2 <<<"$GLOBAL")" "$out" "the shared-bind container sized as asked"
assert_contains "$(grep t38p2 "$D/nshash.log")" "shared mount propagation asked: created in the host's mount namespace" \
	"the option alone takes the host's mount namespace (logged)"
unchanged p2 "after a foreground run"
code=$(cd "$D/p2" && st runc --root "$ROOT" run t38p2r)
assert_eq 7 "$code" "plain runc on the same bundle: the same exit status"
nshash-runtime --root "$ROOT" delete t38p2 >/dev/null 2>&1
assert_eq "0 0 0" "$(left)" "the delete after a foreground run (the container gone) removes what it left"

# ---- a create that fails: runc's exit status; the delete after it cleans
CMD="exit 0"
bundle p3 rshared io.nshash.tcp=4096
jq '.process.args = ["/nonexistent"]' "$D/p3/config.json" >"$D/x" && cat "$D/x" >"$D/p3/config.json" && cp -p "$D/p3/config.json" "$D/p3.orig"
assert_eq "$(st runc --root "$ROOT" create -b "$D/p3" t38p3r)" "$(st nshash-runtime --root "$ROOT" create -b "$D/p3" t38p3)" \
	"a create the runtime refuses: the wrapper exits like runc"
runc --root "$ROOT" delete -f t38p3r >/dev/null 2>&1
assert_eq "$(st runc --root "$ROOT" delete t38p3r)" "$(st nshash-runtime --root "$ROOT" delete t38p3)" \
	"its delete: the wrapper exits like runc"
assert_eq "0 0 0" "$(left)" "that delete leaves no pin and no sibling bundle"
unchanged p3 "after a failed create"

# ---- a sibling bundle whose pin is gone is swept once old
mkdir -p "$S/bundles/gone-01234567" "$S/bundles/young-01234567" && touch "$S/bundles/gone-01234567/config.json"
touch -d '-120 seconds' "$S/bundles/gone-01234567"
nshash-runtime --root "$ROOT" list >/dev/null 2>&1
assert_eq "young-01234567" "$(ls "$S/bundles")" "a sibling bundle without its pin older than staleAge is swept; a younger one stays"
rmdir "$S/bundles/young-01234567"

# ---- without sizes, or sized without shared propagation: as before
CMD="$SIZES"
bundle p4 rshared
out=$(nshash-runtime --root "$ROOT" run -b "$D/p4" t38p4 2>&1 </dev/null)
assert_eq "$GLOBAL" "$out" "no sizes asked: runs on the shared tables"
assert_eq "0 0 0" "$(left)" "no sizes: nothing made"
bundle p5 private io.nshash.tcp=4096 io.nshash.udp=1024
out=$(nshash-runtime --root "$ROOT" run -b "$D/p5" t38p5 2>&1 </dev/null)
assert_eq "4096 1024" "$out" "sized, private propagation: sized"
assert_eq "0 0 0" "$(left)" "sized, private propagation: no pin on the host, no sibling bundle (the private namespace)"
unchanged p5 "private propagation"

# ---- crun: --config DIR/config.json, its bundle the user's.  crun runs in
# a mount namespace of its own here (engines_crun_ns: hybrid cgroups), so
# whether its mounts reach the host is not shown; the rest is.
engines_policy "$D/policy-crun.json" "{\"stateDir\": \"$S\", \"runtime\": \"crun\", \"spares\": 0, \"logFile\": \"$D/nshash.log\"}"
crun_w() { NSHASH_POLICY=$D/policy-crun.json engines_crun_ns nshash-runtime --root "$CROOT" "$@"; }
CMD="exec sleep 300"
bundle c1 rshared io.nshash.tcp=16384 io.nshash.udp=2048
crun_w create -b "$D/c1" t38c1 </dev/null >/dev/null 2>"$D/err"
assert_eq 0 $? "crun: create $(cat "$D/err")"
assert_eq "$D/c1" "$(engines_crun --root "$CROOT" state t38c1 | jq -r .bundle)" "crun's state names the user's bundle"
assert_eq "16384 2048" "$(netns_sizes_of_pid "$(engines_crun --root "$CROOT" state t38c1 | jq -r .pid)")" "crun: sized as asked"
# (the pin's mount is in engines_crun_ns's namespace, gone with it: its file stays)
assert_eq "1 1" "$(ls -A "$S/pins" | wc -l) $(ls -A "$S/bundles" | wc -l)" "crun: the pin file and the sized config beside it"
crun_w delete -f t38c1
assert_eq 0 $? "crun: delete -f"
assert_eq "0 0 0" "$(left)" "crun: nothing left after delete"
unchanged c1 "crun"
