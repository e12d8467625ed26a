#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An old kernel without an old kernel: in a private mount namespace the
# *_child_* knobs are hidden, and `nshash check` and `nshash create` must
# give the exact "kernel R has no net.ipv4.X (needs Linux V)" error, exit 1,
# and leave no pin, no pin file and nothing in the state dir.
#
# Three ways of hiding, because /proc/sys/net/ipv4 is looked up per network
# namespace (a mount on the host's ipv4 dentry is not seen from a netns
# created later, while /proc/sys/net itself is one dentry for all):
#   ipv4   empty tmpfs over /proc/sys/net/ipv4: only the caller's view;
#          nshash must look in the caller's netns before making any parent
#   net    tmpfs over /proc/sys/net with an empty ipv4/: every netns's view,
#          what a 5.15 kernel really looks like
#   6.1    Linux 6.1 (TCP, no UDP): udp_child_hash_entries and
#          udp_hash_entries replaced by dangling symlinks (mounted with
#          open_tree/move_mount), the real TCP knobs untouched
#   6.1net tmpfs over /proc/sys/net whose ipv4/ has stand-in TCP files only
#          (no UDP file in any netns; the TCP stand-ins are never used: every
#          case here is refused before)
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/hard.sh"
test_needs root knobs jq
command -v python3 >/dev/null || cannot_run "python3 needed to mount a symlink (open_tree)"

REL=$(uname -r)
P=nshash-t14-$$
STATE=$(make_state_dir)
WORK=$(mktemp -d /tmp/nshash-t14.XXXXXX)
on_exit "rm -rf '$WORK'"
on_exit "remove_run_netns_prefix $P-"

# Mount a (dangling) symlink over a file: mount(2) refuses a symlink source,
# the new mount API does not (the kernel only checks dir vs non-dir).
cat >"$WORK/mount-symlink.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_open_tree, SYS_move_mount = 428, 429  # x86_64 and aarch64 share these
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, AT_SYMLINK_NOFOLLOW = 1, 0o2000000, 0x100
AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = -100, 4
fd = libc.syscall(SYS_open_tree, AT_FDCWD, sys.argv[1].encode(),
                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)
if fd < 0:
    sys.exit("open_tree %s: %s" % (sys.argv[1], os.strerror(ctypes.get_errno())))
if libc.syscall(SYS_move_mount, fd, b"", AT_FDCWD, sys.argv[2].encode(), MOVE_MOUNT_F_EMPTY_PATH) < 0:
    sys.exit("move_mount onto %s: %s" % (sys.argv[2], os.strerror(ctypes.get_errno())))
EOF
ln -s /nonexistent-nshash-t14 "$WORK/gone"

# The hiding, as shell code run inside the private mount namespace.
hide_code() {
	case $1 in
	ipv4) echo "mount -t tmpfs nshash-t14 /proc/sys/net/ipv4" ;;
	net) echo "mount -t tmpfs nshash-t14 /proc/sys/net && mkdir /proc/sys/net/ipv4" ;;
	6.1) echo "python3 '$WORK/mount-symlink.py' '$WORK/gone' /proc/sys/net/ipv4/udp_child_hash_entries &&
		python3 '$WORK/mount-symlink.py' '$WORK/gone' /proc/sys/net/ipv4/udp_hash_entries" ;;
	6.1net) echo "mount -t tmpfs nshash-t14 /proc/sys/net && mkdir /proc/sys/net/ipv4 &&
		echo 0 >/proc/sys/net/ipv4/tcp_child_ehash_entries &&
		echo -$(cat /proc/sys/net/ipv4/tcp_ehash_entries | tr -d -) >/proc/sys/net/ipv4/tcp_ehash_entries" ;;
	esac
}

# hidden MODE CMD...: run CMD (nshash, with the test's state dir) in a
# private mount namespace with the knobs hidden.  Sets RC, OUT, ERR and, as
# seen from inside that namespace (pins there are private to it): PINS (nsfs
# mounts under /run/netns/$P- or the state dir), FILES (pin files left),
# STATEFILES (anything in the state dir), SEEN (whether the hidden knob
# files exist for a test -e there).
hidden() {
	local mode=$1
	shift
	rm -f "$WORK"/{out,err,rc,pins,files,state,seen}
	unshare -m --propagation private bash -c '
		w=$1 p=$2 s=$3 setup=$4
		shift 4
		eval "$setup" || { echo "hiding failed: $setup" >"$w/err"; echo 99 >"$w/rc"; exit; }
		for k in tcp_child_ehash_entries udp_child_hash_entries; do
			test -e /proc/sys/net/ipv4/$k && echo "$k" >>"$w/seen"
		done
		touch "$w/seen"
		"$@" >"$w/out" 2>"$w/err"
		echo $? >"$w/rc"
		awk -v p="/run/netns/$p-" -v s="$s" '\''$9 == "nsfs" && (index($5, p) == 1 || index($5, s) == 1) {print $5}'\'' /proc/self/mountinfo >"$w/pins"
		ls -d /run/netns/$p-* >"$w/files" 2>/dev/null
		find "$s" -mindepth 1 >"$w/state"
		# What this namespace pinned dies with it; its files would not.
		for f in $(cat "$w/pins"); do umount -l "$f"; done
	' _ "$WORK" "$P" "$STATE" "$(hide_code "$mode")" "$@"
	RC=$(cat "$WORK/rc" 2>/dev/null || echo "none")
	OUT=$(cat "$WORK/out" 2>/dev/null)
	ERR=$(cat "$WORK/err" 2>/dev/null)
	PINS=$(cat "$WORK/pins" 2>/dev/null)
	FILES=$(cat "$WORK/files" 2>/dev/null)
	STATEFILES=$(cat "$WORK/state" 2>/dev/null)
	SEEN=$(tr '\n' ' ' <"$WORK/seen" 2>/dev/null)
}

TCP_MSG="kernel $REL has no net.ipv4.tcp_child_ehash_entries (needs Linux 6.1)"
UDP_MSG="kernel $REL has no net.ipv4.udp_child_hash_entries (needs Linux 6.2)"

# expect_refused MODE LABEL MESSAGE nshash-args...: exit 1, the exact one-line
# error, nothing pinned, no pin file, an untouched state dir.
expect_refused() {
	local mode=$1 label=$2 msg=$3 name
	shift 3
	name=${*: -1}
	hidden "$mode" nshash --state-dir "$STATE" "$@"
	assert_eq 1 "$RC" "[$mode] $label: exit 1"
	assert_eq "nshash: create netns /run/netns/$name: $msg" "$ERR" "[$mode] $label: exact error"
	assert_eq "" "$OUT" "[$mode] $label: nothing on stdout"
	assert_eq "" "$PINS" "[$mode] $label: nothing pinned"
	assert_eq "" "$FILES" "[$mode] $label: no pin file left"
	assert_eq "" "$STATEFILES" "[$mode] $label: state dir untouched (no lock, no template)"
}

# ---------------------------------------------------------------- no TCP knob (5.15)
for mode in ipv4 net; do
	hidden "$mode" true
	assert_eq "" "$SEEN" "[$mode] the hiding works: no *_child_* knob visible"
	hidden "$mode" nshash --state-dir "$STATE" check
	assert_eq 1 "$RC" "[$mode] check: exit 1"
	assert_eq "nshash: $TCP_MSG" "$ERR" "[$mode] check: exactly the kernel error on stderr"
	assert_contains "$OUT" "tcp per-netns tables (6.1+): no" "[$mode] check: says no TCP tables"
	assert_contains "$OUT" "result: this host cannot use nshash" "[$mode] check: says the host cannot work"
	assert_contains "$OUT" "global tables: tcp unknown (kernel too old to report it), udp unknown (kernel too old to report it)" "[$mode] check: what the kernel does not report is unknown"
	assert_eq "" "$(grep -E ' 0 entries|(^|[ :=(])-1([^0-9]|$)|host child knobs' <<<"$OUT")" "[$mode] check: no placeholder values (0 entries, -1)"
	hidden "$mode" nshash --state-dir "$STATE" check --json
	assert_eq "1 false false false" "$RC $(jq -r '"\(.tcp_supported) \(.udp_supported) \(.ok)"' <<<"$OUT")" \
		"[$mode] check --json: exit 1, tcp/udp unsupported, not ok"
	assert_eq "null null null null false" "$(jq -r '"\(.global_tcp_entries) \(.global_udp_entries) \(.host_tcp_child) \(.host_udp_child) \(.host_supported)"' <<<"$OUT")" \
		"[$mode] check --json: unknown values are null, the host unsupported"
	assert_eq "[\"$TCP_MSG\"]" "$(jq -c .problems <<<"$OUT")" "[$mode] check --json: the one problem, exact"

	expect_refused "$mode" "create --tcp 4096" "$TCP_MSG" create --tcp 4096 "$P-a"
	expect_refused "$mode" "create --tcp 4096 --strategy nested" "$TCP_MSG" create --strategy nested --tcp 4096 "$P-b"
	expect_refused "$mode" "create --tcp 4096 --udp 4096" "$TCP_MSG" create --tcp 4096 --udp 4096 "$P-c"
	expect_refused "$mode" "create --udp 4096" "$UDP_MSG" create --udp 4096 "$P-d"
done

# Asking for nothing still works there: a plain netns on the shared tables.
hidden ipv4 nshash --state-dir "$STATE" create --json "$P-plain"
assert_eq "0 false false" "$RC $(jq -r '"\(.tcp.own) \(.udp.own)"' <<<"$OUT" 2>/dev/null)" \
	"[ipv4] create without sizes: exit 0, shared tables"
rm -f "/run/netns/$P-plain"
rm -rf "${STATE:?}"/*

# ---------------------------------------------------------------- TCP only (6.1)
for mode in 6.1 6.1net; do
	hidden "$mode" true
	assert_eq "tcp_child_ehash_entries " "$SEEN" "[$mode] the hiding works: only the TCP knob visible"
	hidden "$mode" nshash --state-dir "$STATE" check
	assert_eq 1 "$RC" "[$mode] check: exit 1"
	assert_eq "nshash: $UDP_MSG" "$ERR" "[$mode] check: exactly the UDP error on stderr"
	assert_contains "$OUT" "tcp per-netns tables (6.1+): yes" "[$mode] check: TCP supported"
	assert_contains "$OUT" "udp per-netns tables (6.2+): no" "[$mode] check: UDP not"
	expect_refused "$mode" "create --udp 4096" "$UDP_MSG" create --udp 4096 "$P-e"
	expect_refused "$mode" "create --tcp 4096 --udp 128 nested" "$UDP_MSG" create --strategy nested --tcp 4096 --udp 128 "$P-f"
done
# On 6.1 a TCP-only request is served, with a real TCP table.
hidden 6.1 nshash --state-dir "$STATE" create --tcp 3000 --json "$P-tcp"
assert_eq "0 4096 true false" "$RC $(jq -r '"\(.tcp.entries) \(.tcp.own) \(.udp.own)"' <<<"$OUT" 2>/dev/null)" \
	"[6.1] create --tcp 3000: exit 0, own TCP table of 4096, UDP on the shared table"
rm -f "/run/netns/$P-tcp"
cleanup_state_dir "$STATE"

assert_eq "" "$(ls -d /run/netns/$P-* 2>/dev/null)" "no pin file of this test left in /run/netns"
assert_eq 0 "$(count_pins_under "/run/netns/$P-")" "nothing of this test mounted in the host namespace"
assert_host_untouched
