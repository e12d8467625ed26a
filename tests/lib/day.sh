# SPDX-License-Identifier: LGPL-2.1-or-later
# A day on a node in a private mount namespace (60-day-on-a-node,
# 72-day-pods-networks-auto): the installed product over the host's, a fresh
# /run, nothing of the host's /run/nshash, /etc or PREFIX touched.
#
#   day_enter "$@"        before common.sh: outside, re-run the script in a
#                         private mount namespace (unshare -m), wait for it,
#                         then check that no process of that namespace
#                         outlived it; exits with the script's status.
#                         Inside (NSHASH_DAY_NS set), returns.
#   day_private_run D     inside, after common.sh: drop the copies of other
#                         mounts under /run, /tmp, /var, /work and every nsfs
#                         mount, a fresh tmpfs on /run (the host's /run/lock,
#                         dbus, systemd and user bound back).  Sets MYNS.
#   day_install D PREFIX  inside: `make install DESTDIR=D/root PREFIX=PREFIX`,
#                         overlaid on PREFIX and /etc (the /etc overlay's
#                         upper dir is D/etc-up: private)
#   day_begin N PREFIX    inside, after common.sh, with STATE set: T0 and
#                         note(), D=/tmp/nshash-tN.* (removed at exit), then
#                         day_private_run, STATE absent checked, day_install
#   nshash_procs          pid comm of every nshash process of the namespace
#   quiet                 wait (20 s at most) until no nshash process runs and
#                         the spares of STATE are settled
#   boot                  what a reboot leaves of STATE: nothing
#   day_idle_expiry NSH   the end of a day: `NSH gc --max-idle 0 --json`
#                         until the ledger counts no netns (10 s at most);
#                         asserts no table byte, no spare, no nsfs mount
#                         under STATE but templates, no nshash process

day_enter() {
	[ -n "${NSHASH_DAY_NS:-}" ] && return 0
	local nsfile inner rc ns left p
	[ "$(id -u)" = 0 ] || { echo "not ok 1 - CANNOT RUN: needs root"; exit 1; }
	command -v unshare >/dev/null || { echo "not ok 1 - CANNOT RUN: no unshare"; exit 1; }
	nsfile=$(mktemp /tmp/nshash-day-ns.XXXXXX)
	NSHASH_DAY_NS=$nsfile unshare -m --propagation private bash "$0" "$@" &
	inner=$!
	trap 'kill -TERM $inner 2>/dev/null' INT TERM
	wait $inner
	rc=$?
	# a signal interrupted the first wait: the inner script is cleaning up
	while kill -0 $inner 2>/dev/null; do wait $inner; rc=$?; done
	ns=$(cat "$nsfile" 2>/dev/null)
	rm -f "$nsfile"
	[ -n "$ns" ] || { echo "not ok - the private mount namespace was never set up"; exit 1; }
	left=""
	for _ in $(seq 50); do
		left=""
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && left+=" ${p#/proc/}($(cat "$p/comm" 2>/dev/null))"
		done
		[ -z "$left" ] && break
		sleep 0.2
	done
	if [ -z "$left" ]; then
		echo "ok - no process of the day's mount namespace outlived it"
	else
		echo "not ok - processes outlived the day's mount namespace (killed now):$left"
		for p in $left; do kill -9 "${p%%(*}" 2>/dev/null; done
		rc=1
	fi
	exit $rc
}

day_private_run() {
	local d=$1 e
	MYNS=$(readlink /proc/self/ns/mnt)
	echo "$MYNS" >"$NSHASH_DAY_NS"
	# other tests' pins, container roots and /run state: copies this namespace got
	{
		awk '{print $5}' /proc/self/mountinfo | grep -E '^/(run|tmp|var|work)/'
		awk '$9 == "nsfs" {print $5}' /proc/self/mountinfo
	} | sort -ru | while read -r e; do
		umount -l "$e" 2>/dev/null
	done
	mkdir -p "$d/oldrun" "$d/etc-up" "$d/etc-work"
	mount --bind /run "$d/oldrun" || cannot_run "cannot bind /run in a private mount namespace"
	mount -t tmpfs -o mode=0755,size=256m nshash-day-run /run || cannot_run "cannot mount a tmpfs over /run"
	for e in lock dbus systemd user; do
		[ -d "$d/oldrun/$e" ] && mkdir -p "/run/$e" && mount --bind "$d/oldrun/$e" "/run/$e"
	done
	ln -s /dev/shm /run/shm
	umount -l "$d/oldrun"
	# the auto history (NSH_HISTORY_DIR beside the default state dir): this
	# day's own, never the machine's; it survives the day's boots
	[ -d /var/lib/nshash ] || { mkdir /var/lib/nshash && on_exit "rmdir /var/lib/nshash"; } ||
		cannot_run "cannot make /var/lib/nshash"
	mount -t tmpfs -o mode=0700,size=16m nshash-day-history /var/lib/nshash ||
		cannot_run "cannot mount a tmpfs over /var/lib/nshash"
	on_exit "umount -l /var/lib/nshash"
}

day_install() {
	local d=$1 prefix=$2
	make -C "$TOP" install DESTDIR="$d/root" PREFIX="$prefix" >"$d/install.log" 2>&1 ||
		cannot_run "make install failed: $(tail -3 "$d/install.log")"
	mount -t overlay nshash-day-usr -o "lowerdir=$d/root$prefix:$prefix" "$prefix" ||
		cannot_run "cannot overlay the install on $prefix"
	mount -t overlay nshash-day-etc -o "lowerdir=$d/root/etc:/etc,upperdir=$d/etc-up,workdir=$d/etc-work" /etc ||
		cannot_run "cannot overlay the install on /etc"
}

day_begin() {
	T0=$(date +%s)
	D=$(mktemp -d "/tmp/nshash-t$1.XXXXXX")
	on_exit "${KEEP:+: }rm -rf '$D'"
	day_private_run "$D"
	[ -e "$STATE" ] && cannot_run "$STATE exists on the fresh /run"
	day_install "$D" "$2"
}
note() { echo "# [$(($(date +%s) - T0))s] $*"; }

nshash_procs() { # pid comm of every nshash process in this mount namespace
	local p c
	for p in /proc/[0-9]*; do
		{ read -r c <"$p/comm"; } 2>/dev/null || continue
		[[ "$c" == nshash* ]] && [ "$(readlink "$p/ns/mnt")" = "$MYNS" ] && echo "${p#/proc/} $c"
	done
}
quiet() { # the hook's waiting children and spare fillers are done (or 20 s)
	for _ in $(seq 100); do
		[ -z "$(nshash_procs)" ] && { [ ! -d "$STATE" ] || spares_settled "$STATE"; } && return 0
		sleep 0.2
	done
	return 1
}
# boot: what a reboot leaves of the state dir: nothing (no container runs)
boot() {
	quiet
	umount_under "$STATE"
	rm -rf "$STATE"
}

# the spares' idle expiry (gc --max-idle 0); every table byte in the
# ledger then belongs to nothing (a freed netns takes a moment)
day_idle_expiry() {
	local nsh=$1 gcj
	for _ in $(seq 20); do
		gcj=$($nsh gc --max-idle 0 --json 2>"$D/gc.err")
		[ "$(jq -r '.table_memory.netns' <<<"$gcj" 2>/dev/null)" = 0 ] && break
		sleep 0.5
	done
	assert_eq "0 0" "$(jq -r '"\(.table_memory.bytes) \(.table_memory.netns)"' <<<"$gcj" 2>/dev/null)" \
		"after \`nshash gc --max-idle 0\`: ledger table bytes 0, no netns counted ($(head -c 300 "$D/gc.err"))"
	assert_eq "" "$(ls "$STATE/spares" 2>/dev/null | grep -v '^\.')" "after it: no spare"
	assert_eq "" "$(awk -v d="$STATE/" '$9 == "nsfs" && index($5, d) == 1 && index($5, d "templates/") != 1 {print $5}' /proc/self/mountinfo)" \
		"after it: no nsfs mount under $STATE but templates"
	assert_eq "" "$(nshash_procs)" "after it: no nshash process"
}
