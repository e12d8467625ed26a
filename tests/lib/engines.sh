# SPDX-License-Identifier: LGPL-2.1-or-later
# Container engines for the integration tests, each with private config and
# state so that no test touches the machine's own configuration
# (/etc/containers, /etc/cni, containerd's config).  Source after common.sh.
# Every helper registers its cleanup with on_exit.  See
# docs/runtimes.md ("Running the engines in tests") for why each workaround exists.
#
#   engines_oci_setup                     D (temp dir), S (state dir), P (policy path), private binaries
#   engines_private_build DIR             run on copies of build/ binaries (BUILD, PATH)
#   engines_busybox_rootfs DIR            busybox-static rootfs in DIR
#   engines_runc_bundle DIR ARGS...        DIR/rootfs + DIR/config.json (runc spec) running ARGS
#   engines_bundle_annotate DIR K=V...    add annotations to DIR/config.json
#   engines_script_bundle DIR ROOTFS SCRIPT K=V...  a bundle running sh -c SCRIPT on a shared rootfs
#   engines_crun ARGS...                  crun with the hybrid-cgroup workaround
#   engines_crun_ns CMD ARGS...           any command (e.g. nshash-runtime) in that namespace
#   engines_podman_setup DIR [LINES]      private containers.conf/storage.conf, image localhost/nshash-busybox;
#                                         LINES go at the end of containers.conf, after [engine]
#   engines_podman_major                  podman's major version (4 on Debian 12, 5 on Debian 13)
#   engines_hooks_dir DIR POLICY [verify] the shipped hooks.d files (+ the opt-in verify hook) pointing at build/ and POLICY
#   engines_containerd_start DIR [--cri TOML] [ENV..]  private containerd; exports CONTAINERD_ADDRESS
#   engines_iptables_snapshot TAG...      at exit: ip_forward back, the test's rules/chains/links (named by TAGs) gone
#   engines_policy FILE JSON              write a policy file
#   engines_pins_left STATE_DIR           nsfs mounts under STATE_DIR/pins

ENGINES_BUSYBOX=${ENGINES_BUSYBOX:-$(command -v busybox || echo /bin/busybox)}
# podman 5 warns on every command of a machine with cgroup v1 hierarchies
# (this hybrid layout) on stderr, which the tests read: not on podman 4.
export PODMAN_IGNORE_CGROUPSV1_WARNING=1

# engines_oci_setup: what every OCI test starts with.  D = a private temp dir
# (removed at exit), the binaries copied there, S = a private state dir
# (its pins dir unmounted at exit), P = $D/policy.json (not written).
engines_oci_setup() {
	D=$(mktemp -d "/tmp/nshash-$T_NAME.XXXXXX")
	on_exit "${KEEP:+: }rm -rf '$D'"
	engines_private_build "$D"
	S=$(make_state_dir)
	on_exit "umount -l '$S/pins' 2>/dev/null"
	P=$D/policy.json
}

# engines_private_build DIR: run this test on copies of the binaries, so
# that a `make` elsewhere rewriting build/ cannot make an exec fail
# mid-test; BUILD and PATH point at the copies.
engines_private_build() {
	local d=$1/bin f
	mkdir -p "$d"
	for f in nshash nshash-hook nshash-runtime; do
		[ -x "$BUILD/$f" ] && cp "$BUILD/$f" "$d/$f"
	done
	BUILD=$d
	NSHASH=$d/nshash
	export PATH=$d:$PATH
}

engines_busybox_rootfs() {
	local d=$1 c
	mkdir -p "$d"/{bin,etc,proc,sys,dev,tmp,run,root}
	cp "$ENGINES_BUSYBOX" "$d/bin/busybox"
	for c in $("$d/bin/busybox" --list); do
		[ "$c" = busybox ] || ln -sf busybox "$d/bin/$c"
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$d/etc/passwd"
	echo 'root:x:0:' >"$d/etc/group"
	echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"$d/etc/passwd"
}

# engines_runc_bundle DIR ARGS...: a bundle whose process runs ARGS, with
# the network namespace entry runc spec writes (no path).  Annotations are
# added by the caller with engines_bundle_annotate.
engines_runc_bundle() {
	local d=$1
	shift
	mkdir -p "$d"
	[ -d "$d/rootfs/bin" ] || engines_busybox_rootfs "$d/rootfs"
	(cd "$d" && rm -f config.json && runc spec) || return 1
	jq --argjson a "$(for a in "$@"; do jq -n --arg a "$a" '$a'; done | jq -s .)" \
		'.process.terminal = false | .process.args = $a | .root.readonly = false' \
		<"$d/config.json" >"$d/config.json.new" && mv "$d/config.json.new" "$d/config.json"
}
# engines_script_bundle DIR ROOTFS SCRIPT [KEY=VALUE...]: a bundle in DIR
# running `sh -c SCRIPT` on the shared ROOTFS, with those annotations.
engines_script_bundle() {
	local b=$1 rootfs=$2 script=$3
	shift 3
	engines_runc_bundle "$b" sh -c "$script" && engines_bundle_annotate "$b" "$@" &&
		jq --arg r "$rootfs" '.root.path = $r' "$b/config.json" >"$b/x" && mv "$b/x" "$b/config.json"
}
# engines_bundle_annotate DIR KEY=VALUE...
engines_bundle_annotate() {
	local d=$1 kv
	shift
	for kv in "$@"; do
		jq --arg k "${kv%%=*}" --arg v "${kv#*=}" '.annotations[$k] = $v' <"$d/config.json" >"$d/config.json.new" &&
			mv "$d/config.json.new" "$d/config.json"
	done
}

# crun refuses hybrid cgroups here: run it where the cgroup2 mount is gone
# (a private mount namespace, so the host is not affected).
engines_crun_ns() {
	unshare -m --propagation slave sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' sh "$@"
}
engines_crun() { engines_crun_ns crun "$@"; }

engines_policy() { printf '%s\n' "$2" >"$1"; }

# ---------------------------------------------------------------- podman

engines_podman_image_imported=
engines_podman_setup() {
	local d=$1 extra=${2:-}
	mkdir -p "$d"/{storage,run,tmp,networks}
	cat >"$d/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
		# podman 4's built-in list: podman 5's lacks NET_RAW (busybox ping), MKNOD, AUDIT_WRITE
		default_capabilities = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE",
			"NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT", "MKNOD", "AUDIT_WRITE"]
		[engine]
		runtime = "runc"
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		tmp_dir = "$d/tmp"
	EOF
	if [ -n "$extra" ]; then printf '%s\n' "$extra" >>"$d/containers.conf"; fi
	if [[ "$extra" != *"[network]"* ]]; then
		printf '[network]\nnetwork_config_dir = "%s/networks"\n' "$d" >>"$d/containers.conf"
	fi
	cat >"$d/storage.conf" <<-EOF
		[storage]
		driver = "overlay"
		runroot = "$d/run"
		graphroot = "$d/storage"
	EOF
	export CONTAINERS_CONF=$d/containers.conf CONTAINERS_STORAGE_CONF=$d/storage.conf
	on_exit "engines_podman_cleanup '$d'"
	engines_busybox_rootfs "$d/rootfs"
	tar -C "$d/rootfs" -c . | podman import -q - localhost/nshash-busybox >/dev/null ||
		{ echo "# podman import failed" >&2; return 1; }
}
engines_podman_major() { podman --version 2>/dev/null | sed -n 's/^podman version \([0-9]*\)\..*/\1/p'; }
engines_podman_cleanup() {
	local d=$1 m
	podman rm -a -f -t 0 >/dev/null 2>&1
	podman pod rm -a -f >/dev/null 2>&1
	umount_under "$d"
	rm -rf "$d"
}

# engines_hooks_dir DIR POLICY [verify]: the shipped hooks.d files (podman's
# precreate), with `verify` also the opt-in createRuntime verification,
# pointed at build/nshash-hook and a private policy.
engines_hooks_dir() {
	local d=$1 policy=$2 f
	mkdir -p "$d"
	for f in "$TOP"/hook/hooks.d/*.json ${3:+"$TOP"/hook/verify-hooks.d/*.json}; do
		jq --arg p "$BUILD/nshash-hook" --arg pol "$policy" \
			'.hook.path = $p | .hook.args = .hook.args + ["--policy", $pol]' "$f" >"$d/$(basename "$f")"
	done
}

# ---------------------------------------------------------------- containerd

# engines_containerd_start DIR [--cri TOML] [VAR=VALUE...]: a private
# containerd (root, state, sockets under DIR) with extra environment for it
# and its shims (e.g. NSHASH_POLICY=...).  CRI is off unless --cri gives its
# plugin configuration.  Exports CONTAINERD_ADDRESS for ctr.
engines_containerd_start() {
	local d=$1 i cri=""
	shift
	if [ "${1:-}" = --cri ]; then
		cri=$2
		shift 2
	fi
	mkdir -p "$d"/{root,state}
	{
		printf 'version = 2\nroot = "%s"\nstate = "%s"\n' "$d/root" "$d/state"
		[ -n "$cri" ] || echo 'disabled_plugins = ["io.containerd.grpc.v1.cri"]'
		printf '[grpc]\n  address = "%s"\n[ttrpc]\n  address = "%s"\n[debug]\n  address = "%s"\n' \
			"$d/containerd.sock" "$d/containerd.sock.ttrpc" "$d/debug.sock"
		printf '%s\n' "$cri"
	} >"$d/config.toml"
	env "$@" containerd --config "$d/config.toml" >"$d/containerd.log" 2>&1 &
	ENGINES_CONTAINERD_PID=$!
	disown "$ENGINES_CONTAINERD_PID" # a bare `wait` in the test must not wait for it
	export CONTAINERD_ADDRESS=$d/containerd.sock
	on_exit "engines_containerd_stop '$d' $ENGINES_CONTAINERD_PID"
	for i in $(seq 100); do
		ctr version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "# containerd did not start: $(tail -5 "$d/containerd.log")" >&2
	return 1
}
engines_containerd_stop() {
	local d=$1 pid=$2 c p m
	for c in $(ctr -n default task ls -q 2>/dev/null); do ctr -n default task kill -s KILL "$c"; done
	sleep 0.3
	for c in $(ctr -n default task ls -q 2>/dev/null); do ctr -n default task rm -f "$c"; done
	for c in $(ctr -n default containers ls -q 2>/dev/null); do ctr -n default containers rm "$c"; done
	kill "$pid" 2>/dev/null
	# the shims this containerd started (found by its private address)
	for p in /proc/[0-9]*; do
		grep -qF -- "$d/containerd.sock" "$p/cmdline" 2>/dev/null && kill -9 "${p#/proc/}" 2>/dev/null
	done
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	umount_under "$d"
	rm -rf "$d"
}

# ---------------------------------------------------------------- host network state

# engines_iptables_snapshot TAG...: restore ip_forward at exit, and remove
# the firewall rules, chains and links the test's networks made (named by
# TAGs: network names, subnets, bridges; host_net_guard in common.sh), not
# anyone else's.
engines_iptables_snapshot() {
	ENGINES_IPFWD=$(cat /proc/sys/net/ipv4/ip_forward)
	host_net_guard "$@"
	on_exit 'echo "$ENGINES_IPFWD" >/proc/sys/net/ipv4/ip_forward'
}

# Pins of a state dir that are still mounted (nsfs) under DIR/pins.
engines_pins_left() { count_pins_under "$1/pins/"; }
# engines_pins_gone STATE: wait (up to 5 s) until STATE/pins holds no file
# at all, mounted or not: the engine's asynchronous cleanup (podman's
# poststop hooks) has run.  1 if some are left.
engines_pins_gone() {
	for _ in $(seq 50); do [ -z "$(ls "$1/pins" 2>/dev/null)" ] && return 0; sleep 0.1; done
	return 1
}
