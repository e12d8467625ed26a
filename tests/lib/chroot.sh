# SPDX-License-Identifier: LGPL-2.1-or-later
# A fresh Debian 12 for tests: `debootstrap --variant=minbase bookworm`, as a
# new user's machine would be (root, no sudo, no git, no make).  Source after
# common.sh.
#
#   chroot_base                   pristine base tarball (built once, cached) -> $CHROOT_BASE
#   chroot_new DIR                a fresh root at DIR from that tarball; removed at exit
#   chroot_podman_lines IMAGE     shell lines that set up the root's podman with the
#                                 package's hooks drop-in and import /root/rootfs
#                                 (bin/busybox in it) as IMAGE
#   chroot_run DIR CMD            run the shell command CMD as root of DIR entered as a
#                                 container (own mount/PID/UTS/IPC namespaces, pivot_root,
#                                 /proc, /sys, cgroups, /dev, /run as on a booted machine):
#                                 every process and mount in it goes when CMD ends
# (The name is historic: nothing here uses chroot(2).)
#
# Cache (NSHASH_TEST_CACHE, default /var/cache/nshash-tests): the base tarball
# and apt's downloaded .debs, shared by every chroot, so a warm run downloads
# only the package lists; and k8s/, tests/lib/k8s.sh's Kubernetes build
# (from Debian's source package), bound at the same path in every root, so
# that 73-k8s-kubelet in a root builds it only where nothing has yet.  Mirror: NSHASH_DEBIAN_MIRROR (default deb.debian.org).

CHROOT_CACHE=${NSHASH_TEST_CACHE:-/var/cache/nshash-tests}
CHROOT_MIRROR=${NSHASH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# CHROOT_SUITE (set before sourcing; default bookworm): the Debian release
# of the base, e.g. trixie for tests/check-engines.
CHROOT_SUITE=${CHROOT_SUITE:-bookworm}
CHROOT_BASE=$CHROOT_CACHE/$CHROOT_SUITE-minbase.tar.gz
# apt's .debs; another release's roots keep theirs apart (apt locks the
# directory: two suites' installs running at once would wait on each other).
if [ "$CHROOT_SUITE" = bookworm ]; then
	CHROOT_ARCHIVES=$CHROOT_CACHE/apt-archives
else
	CHROOT_ARCHIVES=$CHROOT_CACHE/apt-archives-$CHROOT_SUITE
fi
CHROOT_K8S=$CHROOT_CACHE/k8s

# chroot_base: make sure the pristine tarball exists; cannot_run (a failure,
# with debootstrap's reason) when Debian's archive is out of reach.
chroot_base() {
	[ -s "$CHROOT_BASE" ] && return 0
	command -v debootstrap >/dev/null || cannot_run "debootstrap is not installed (apt-get install debootstrap)"
	mkdir -p "$CHROOT_CACHE"
	local d log
	d=$(mktemp -d "$CHROOT_CACHE/base.XXXXXX")
	log=$d.log
	echo "# building the base: debootstrap --variant=minbase $CHROOT_SUITE ($CHROOT_MIRROR)"
	if ! debootstrap --variant=minbase "$CHROOT_SUITE" "$d" "$CHROOT_MIRROR" >"$log" 2>&1; then
		local why
		why=$(grep -E '^E:|^W:' "$log" | tail -3 | tr '\n' ' ')
		rm -rf "$d" "$log"
		cannot_run "debootstrap cannot build a $CHROOT_SUITE base from $CHROOT_MIRROR: ${why:-no reason given}"
	fi
	rm -f "$d"/var/cache/apt/archives/*.deb
	# What a fresh installation of the release lists: updates and security too.
	cat >"$d/etc/apt/sources.list" <<-EOF
		deb $CHROOT_MIRROR $CHROOT_SUITE main
		deb $CHROOT_MIRROR $CHROOT_SUITE-updates main
		deb ${CHROOT_MIRROR%/debian}/debian-security $CHROOT_SUITE-security main
	EOF
	chmod 0755 "$d"
	tar -C "$d" -czf "$CHROOT_BASE.tmp" . && mv "$CHROOT_BASE.tmp" "$CHROOT_BASE"
	rm -rf "$d" "$log"
}

chroot_new() {
	local r=$1
	mkdir -p "$r"
	on_exit "chroot_remove '$r'"
	tar -C "$r" -xzf "$CHROOT_BASE" || cannot_run "cannot unpack $CHROOT_BASE into $r"
	chmod 0755 "$r" # a root every user can enter (mktemp -d made it 0700)
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	# Its own name, as an installed machine has it (chroot_run sets it at "boot").
	echo nshash-fresh >"$r/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tnshash-fresh\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
	# dpkg without fsync: a throwaway root, several times faster to install into.
	echo force-unsafe-io >"$r/etc/dpkg/dpkg.cfg.d/nshash-tests-unsafe-io"
	mkdir -p "$CHROOT_ARCHIVES/partial" "$CHROOT_K8S"
}

# Kill what still runs in the root (a daemon a test left), then remove it.
# The mounts live in chroot_run's private mount namespace and go with it; any
# that show up here anyway are unmounted.
chroot_remove() {
	local r=$1 p m i
	for i in 1 2 3; do
		local left=()
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && left+=("${p#/proc/}")
		done
		[ ${#left[@]} -eq 0 ] && break
		kill -9 "${left[@]}" 2>/dev/null
		sleep 1
	done
	umount_under "$r"
	rm -rf --one-file-system "$r"
}

# chroot_run DIR CMD: CMD (a bash command line) as root of a machine whose /
# is DIR, entered as a container, not chroot(2): its own mount, PID, UTS and
# IPC namespaces (the network namespace is the host's: apt needs the
# archive), pivot_root into DIR, then what a booted Debian has: /proc, /sys
# with the cgroup hierarchies the host has (mounted afresh, same types and
# options), a tmpfs /dev with the device nodes a machine's programs use plus
# its own devpts, /dev/shm and mqueue, a tmpfs /run, and / shared if the
# host's / is (systemd makes it so; this VM's is private): the root runs what
# the host suite runs under the host's conditions.  The engines inside keep their state in DIR's /var/lib and the
# tmpfs /run, never the host's.  PID 1 is a bash that reaps orphans; when it
# exits the kernel kills everything left in the namespace (daemons, containers)
# and the mounts go with the mount namespace: netns pinned inside and their
# tables too.  Extra environment for CMD: CHROOT_ENV (NAME=VALUE words).
chroot_run() {
	local r=$1 cmd=$2
	unshare --mount --propagation private --pid --fork --kill-child --uts --ipc bash -c '
		set -e
		r=$1 archives=$2 cmd=$3 shared=$4 k8s=$5
		shift 5
		# The root a machine has is a mount point (ip netns exec remounts it).
		mount --bind "$r" "$r"
		mount -t proc proc "$r/proc"
		mount -t sysfs sysfs "$r/sys"
		# Every mount the host has under /sys (its cgroup layout: here hybrid,
		# a tmpfs with v1 hierarchies and cgroup2 under unified), in order.
		awk '"'"'{for (i = 7; $i != "-"; i++); if (index($5, "/sys/") == 1) print $5, $(i + 1), $(i + 2), $(i + 3)}'"'"' /proc/self/mountinfo |
			while read -r mp type src opts; do
				mkdir -p "$r$mp"
				mount -t "$type" -o "$opts" "$src" "$r$mp"
			done
		mount -t tmpfs -o mode=0755,nosuid tmpfs "$r/dev"
		# kmsg as on any booted machine: kubelet will not start without it
		# (its OOM watcher reads the kernel log: "open /dev/kmsg: no such file")
		for n in null zero full random urandom tty kmsg net/tun fuse; do
			[ -e "/dev/$n" ] || continue
			mkdir -p "$(dirname "$r/dev/$n")"
			touch "$r/dev/$n"
			mount --bind "/dev/$n" "$r/dev/$n"
		done
		ln -s /proc/self/fd "$r/dev/fd"
		ln -s /proc/self/fd/0 "$r/dev/stdin"
		ln -s /proc/self/fd/1 "$r/dev/stdout"
		ln -s /proc/self/fd/2 "$r/dev/stderr"
		ln -s pts/ptmx "$r/dev/ptmx"
		mkdir "$r/dev/pts" "$r/dev/shm" "$r/dev/mqueue"
		mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$r/dev/pts"
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
		mount -t mqueue mqueue "$r/dev/mqueue"
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$r/run"
		mkdir -p "$r/run/lock"
		mount --bind "$archives" "$r/var/cache/apt/archives"
		mkdir -p "$r/var/cache/nshash-tests/k8s"
		mount --bind "$k8s" "$r/var/cache/nshash-tests/k8s"
		cat "$r/etc/hostname" >/proc/sys/kernel/hostname
		# pivot_root rather than chroot: the kernel refuses user namespaces
		# (unshare -U) to a chrooted process, a real machine does not.
		cd "$r"
		pivot_root . .
		umount -l .
		cd /
		[ -z "$shared" ] || mount --make-rshared /
		# Not exec: PID 1 stays a shell that reaps what is orphaned under it.
		/usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 "$@" \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$cmd"
		exit $?
	' _ "$r" "$CHROOT_ARCHIVES" "$cmd" "$(findmnt -no PROPAGATION / | grep shared)" "$CHROOT_K8S" ${CHROOT_ENV:-}
}

# chroot_podman_lines IMAGE: the shell lines a fresh root runs once the
# package and podman are installed: the package's hooks drop-in linked in,
# what this VM needs of any podman (docs/runtimes.md; not nshash set-up),
# and /root/rootfs (bin/busybox already in it) imported as IMAGE.
chroot_podman_lines() {
	cat <<EOS
mkdir -p /etc/containers/containers.conf.d
ln -s /usr/share/nshash/containers.conf.d/50-nshash-hooks.conf /etc/containers/containers.conf.d/
cat >/etc/containers/containers.conf <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cd /root/rootfs && for c in \$(bin/busybox --list); do [ "\$c" = busybox ] || ln -sf busybox bin/\$c; done
mkdir -p etc proc sys dev tmp && echo "root:x:0:0:root:/root:/bin/sh" >etc/passwd && echo "root:x:0:" >etc/group
tar -c . | podman import - $1 >/dev/null
EOS
}
