# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the CNI plugin's integration tests (sourced after common.sh).
CNI_PLUGIN=$BUILD/cni/nshash
CNI_VERSIONS="0.3.0 0.3.1 0.4.0 1.0.0 1.1.0"
[ -x "$CNI_PLUGIN" ] || cannot_run "$CNI_PLUGIN not built"

# cni_node_policy FILE STATE-DIR [JSON-MEMBERS]: the node's policy file
# (nshash.json(5), where the plugin takes its state dir, caps, budget and
# spares from) with that stateDir, exported as NSHASH_POLICY; cni_call and
# cni_chain pass it to the plugin.
cni_node_policy() {
	printf '{"stateDir": "%s", "syslog": false%s}\n' "$2" "${3:+, $3}" >"$1"
	export NSHASH_POLICY=$1
}

# cni_call COMMAND NETNS CONFIG-JSON [VAR=VALUE...]: runs the plugin as a
# runtime does (with $NSHASH_POLICY).  Sets CNI_OUT (stdout), CNI_ERR (stderr), CNI_RC.
cni_call() {
	local cmd=$1 netns=$2 conf=$3
	shift 3
	local errf
	errf=$(mktemp)
	CNI_OUT=$(printf '%s' "$conf" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$cmd" \
		${NSHASH_POLICY:+NSHASH_POLICY="$NSHASH_POLICY"} CNI_CONTAINERID=ctr-1 CNI_NETNS="$netns" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;FOO=bar" "$@" \
		"$CNI_PLUGIN" 2>"$errf")
	CNI_RC=$?
	CNI_ERR=$(cat "$errf")
	rm -f "$errf"
}
# Field of the JSON on stdout ("" when absent or not JSON).
# cni_conf NAME [JSON-MEMBERS [VERSION]]: an nshash network config (cniVersion
# VERSION, default 1.0.0) with those members after its type.
cni_conf() { echo "{\"cniVersion\":\"${3:-1.0.0}\",\"name\":\"$1\",\"type\":\"nshash\"${2:+,$2}}"; }
cni_field() { printf '%s' "$CNI_OUT" | jq -r "$1 // empty" 2>/dev/null; }
# assert_cni_error CODE MSG-FRAGMENT DESCRIPTION
assert_cni_error() {
	local code msg
	code=$(cni_field .code)
	msg=$(cni_field .msg)
	if [ "$CNI_RC" -ne 0 ] && [ "$code" = "$1" ] && [[ "$msg" == *"$2"* ]]; then
		pass "$3 (code $1)"
	else
		fail "$3 (rc $CNI_RC, want code $1 with '$2', got: $CNI_OUT)"
	fi
}
# assert_cni_ok_silent DESCRIPTION: exit 0 and nothing on stdout.
assert_cni_ok_silent() {
	if [ "$CNI_RC" -eq 0 ] && [ -z "$CNI_OUT" ]; then pass "$1"; else fail "$1 (rc $CNI_RC, stdout: $CNI_OUT, stderr: $CNI_ERR)"; fi
}

# cni_pod_cgroup NAME: a cgroup as kubelet makes one for a pod, in the
# memory hierarchy (where the plugin resolves runtimeConfig.cgroupPath:
# /sys/fs/cgroup/memory on cgroup v1, /sys/fs/cgroup on v2), under this
# test's own cgroup there.  Sets CNI_MEMROOT, CNI_PODCG (the cgroupPath:
# relative to CNI_MEMROOT, for NAME pod<uid> the pod's K8S_POD_UID is
# <uid>) and CNI_PODCG_DIR; at exit the processes left in it go back to
# ours and the cgroups are removed.
cni_pod_cgroup() {
	local own v1=1
	CNI_MEMROOT=/sys/fs/cgroup/memory
	if [ ! -e "$CNI_MEMROOT/cgroup.procs" ]; then
		CNI_MEMROOT=/sys/fs/cgroup v1=0
		grep -qw memory "$CNI_MEMROOT/cgroup.controllers" 2>/dev/null ||
			cannot_run "no memory cgroup hierarchy (cgroup v1 /sys/fs/cgroup/memory, or v2 with the memory controller)"
	fi
	own=$(awk -F: -v v1=$v1 '(v1 && $2 == "memory") || (!v1 && $1 == "0") {print $3}' /proc/self/cgroup)
	CNI_PODCG=${own%/}/nshash-$T_NAME-$$/$1
	CNI_PODCG_DIR=$CNI_MEMROOT$CNI_PODCG
	mkdir -p "$CNI_PODCG_DIR" || cannot_run "cannot create the cgroup $CNI_PODCG_DIR"
	on_exit "for p in \$(find '$CNI_PODCG_DIR' -name cgroup.procs -exec cat {} +); do echo \$p >'$CNI_MEMROOT$own/cgroup.procs'; done; find '$CNI_PODCG_DIR' -depth -type d -exec rmdir {} \\;; rmdir '${CNI_PODCG_DIR%/*}' 2>/dev/null"
}

# A netns pinned the way containerd/CRI-O do (empty, lo down), at DIR/NAME.
cni_pin_netns() {
	touch "$1" && unshare --net="$1" true
}
netns_inode_at() { stat -L -c %i "$1"; }

# Bridge-plugin cleanup: the CNI-* chains and masquerade rules it leaves for
# networks named NAME, and net.ipv4.ip_forward restored.
cni_save_ip_forward() {
	local v
	v=$(cat /proc/sys/net/ipv4/ip_forward)
	on_exit "echo $v > /proc/sys/net/ipv4/ip_forward"
}
# cni_iptables_guard TAG...: at exit remove what the bridge and portmap
# plugins left for networks/containers whose rules mention a TAG (their CNI-*
# chains, the rules jumping to them), and the shared CNI-HOSTPORT-* chains
# only when they appeared during the test and no other network uses them
# (host_net_guard in common.sh).
cni_iptables_guard() { host_net_guard "$@"; }
# Everything the bridge plugin leaves in iptables that mentions TAG.
cni_iptables_count() {
	{ iptables -t nat -S; iptables -S; } 2>/dev/null | grep -cF -- "$1"
}

# cni_chain COMMAND CONFLIST-FILE NETNS CONTAINERID [CAPABILITY-ARGS-JSON]
# Runs a conflist the way libcni does: ADD and CHECK in order, DEL in
# reverse, each plugin with cniVersion + name from the list, the previous
# result as prevResult (DEL/CHECK: the cached ADD result), and runtimeConfig
# filled for the capabilities the entry declares (then stripped).  Plugins
# are found in $CNI_BIN_DIRS (default: our build and /usr/lib/cni).
# Sets CNI_OUT / CNI_ERR / CNI_RC; the ADD result is cached in
# $CNI_CACHE_DIR/NETWORK-CONTAINERID.
cni_chain() {
	local cmd=$1 list=$2 netns=$3 id=$4 caps=${5:-'{}'}
	local i plug type bin conf prev="" errf out rc del_rc=0 dirs confs=() types=()
	dirs=${CNI_BIN_DIRS:-$BUILD/cni /usr/lib/cni}
	# one jq for the whole list: "TYPE<TAB>CONF" per plugin (jq is slow here)
	mapfile -t confs < <(jq -r --argjson caps "$caps" '. as $l | .plugins[]
		| . + {cniVersion: $l.cniVersion, name: $l.name}
		| (if (.capabilities // {}) | length > 0 then
			.runtimeConfig = ([.capabilities | to_entries[] | select(.value) | .key
				| select($caps[.] != null) | {(.): $caps[.]}] | add // {})
		   else . end)
		| del(.capabilities) | "\(.type)\t\(tojson)"' "$list")
	local name count=${#confs[@]}
	name=$(jq -r .name "$list")
	local cache=${CNI_CACHE_DIR:?}/$name-$id
	[ "$cmd" != ADD ] && [ -s "$cache" ] && prev=$(cat "$cache")
	errf=$(mktemp)
	CNI_OUT=""
	for ((i = 0; i < count; i++)); do
		plug=${confs[$i]}
		[ "$cmd" = DEL ] && plug=${confs[$((count - 1 - i))]}
		type=${plug%%$'\t'*}
		conf=${plug#*$'\t'}
		[ -n "$prev" ] && conf="${conf%\}},\"prevResult\":$prev}"
		bin=""
		for d in $dirs; do [ -x "$d/$type" ] && bin=$d/$type && break; done
		[ -n "$bin" ] || { CNI_RC=1 CNI_OUT="no plugin $type"; rm -f "$errf"; return; }
		out=$(printf '%s' "$conf" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$cmd" \
			${NSHASH_POLICY:+NSHASH_POLICY="$NSHASH_POLICY"} CNI_CONTAINERID="$id" CNI_NETNS="$netns" CNI_IFNAME=eth0 CNI_PATH="${dirs// /:}" \
			CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$id" "$bin" 2>>"$errf")
		rc=$?
		if [ $rc -ne 0 ]; then
			# DEL goes on with the other plugins so a test sees every error
			[ "$cmd" = DEL ] && del_rc=$rc && CNI_OUT+=$out && continue
			CNI_RC=$rc
			CNI_OUT=$out
			CNI_ERR=$(cat "$errf")
			rm -f "$errf"
			return
		fi
		[ "$cmd" = ADD ] && prev=$out
	done
	CNI_RC=$del_rc
	CNI_ERR=$(cat "$errf")
	rm -f "$errf"
	case $cmd in
	ADD) CNI_OUT=$prev && printf '%s' "$prev" >"$cache" ;;
	DEL) rm -f "$cache" ;;
	esac
}

# cni_test_network NN: names for test NN's bridge network — NET
# (nshash-testNN), BR (nshbrNN), SUBNET (10.(194+NN).0, NN <= 61) — refusing a
# subnet the host already routes; at exit the bridge goes, the plugins'
# iptables rules go and ip_forward is restored.
cni_test_network() {
	NET=nshash-test$1
	BR=nshbr$1
	SUBNET=10.$((194 + $1)).0
	ip route | grep -q "^$SUBNET\." && cannot_run "$SUBNET.0/24 already routed here"
	cni_save_ip_forward
	cni_iptables_guard "$NET" "$BR" "$SUBNET."
	on_exit "ip link del $BR"
}

# (The two helpers below need tests/lib/engines.sh sourced too.)
# cni_oci_image DIR NAME CMD...: an OCI image archive DIR/image.tar of a
# busybox rootfs whose command is CMD, named NAME (for ctr images import);
# the rootfs is DIR/rootfs, made here unless the caller made it, and
# CNI_OCI_USER (optional) the image's default user; PATH is set as images
# set it (runc finds a bare command name through it, containerd sets none).
cni_oci_image() {
	local d=$1 name=$2 l c m
	shift 2
	mkdir -p "$d/layout/blobs/sha256"
	[ -d "$d/rootfs/bin" ] || engines_busybox_rootfs "$d/rootfs"
	tar -C "$d/rootfs" -cf "$d/layer.tar" .
	l=$(sha256sum <"$d/layer.tar" | cut -d' ' -f1)
	mv "$d/layer.tar" "$d/layout/blobs/sha256/$l"
	jq -cn --arg l "$l" --argjson cmd "$(printf '%s\n' "$@" | jq -R . | jq -cs .)" --arg u "${CNI_OCI_USER:-}" \
		'{architecture: "amd64", os: "linux",
		  config: ({Cmd: $cmd, Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]} + (if $u == "" then {} else {User: $u} end)),
		  rootfs: {type: "layers", diff_ids: ["sha256:" + $l]}}' >"$d/cfg"
	c=$(sha256sum <"$d/cfg" | cut -d' ' -f1)
	jq -cn --arg c "$c" --argjson cs "$(stat -c %s "$d/cfg")" --arg l "$l" --argjson ls "$(stat -c %s "$d/layout/blobs/sha256/$l")" \
		'{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
		  config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: ("sha256:" + $c), size: $cs},
		  layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: ("sha256:" + $l), size: $ls}]}' >"$d/man"
	m=$(sha256sum <"$d/man" | cut -d' ' -f1)
	mv "$d/cfg" "$d/layout/blobs/sha256/$c"
	jq -cn --arg m "$m" --argjson ms "$(stat -c %s "$d/man")" --arg n "$name" \
		'{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: ("sha256:" + $m), size: $ms,
		  annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": "latest"}}]}' >"$d/layout/index.json"
	mv "$d/man" "$d/layout/blobs/sha256/$m"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$d/layout/oci-layout"
	tar -C "$d/layout" -cf "$d/image.tar" .
}

# cni_require_cri: containerd, ctr and the gRPC module the CRI client
# (tests/lib/cri.py) needs, or the test cannot run; sets CRI (the client).
cni_require_cri() {
	command -v containerd >/dev/null && command -v ctr >/dev/null || cannot_run "containerd/ctr missing"
	CRI=(/usr/bin/python3 "$TOP/tests/lib/cri.py")
	/usr/bin/python3 -c 'import grpc' 2>/dev/null || cannot_run "python3-grpcio missing (the CRI client needs it)"
}

# cni_containerd_cri_start DIR [RUNTIMES-TOML [VAR=VALUE...]]: a private
# containerd WITH the CRI plugin, its CNI config in DIR/net.d and plugins in
# DIR/cni-bin (the machine's /etc/cni/net.d and /opt/cni/bin are not read),
# netns pins under its own state dir, sandbox image
# localhost/nshash-pause:latest (imported here).  RUNTIMES-TOML adds runtime
# handlers (`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.NAME]`
# tables); the variables go to containerd, its shims and the runtimes.
# Exports CRI_SOCK (and CONTAINERD_ADDRESS for ctr -n k8s.io).
cni_containerd_cri_start() {
	local d=$1 runtimes=${2:-}
	shift 2 2>/dev/null || shift
	mkdir -p "$d"/{net.d,cni-bin,image}
	engines_containerd_start "$d" --cri "$(
		cat <<-EOF
			[plugins."io.containerd.grpc.v1.cri"]
			  sandbox_image = "localhost/nshash-pause:latest"
			  netns_mounts_under_state_dir = true
			  # no CAP_SYS_RESOURCE on these machines: the sandbox's -998 would fail
			  restrict_oom_score_adj = true
			  [plugins."io.containerd.grpc.v1.cri".containerd]
			    default_runtime_name = "runc"
			    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
			      runtime_type = "io.containerd.runc.v2"
			  [plugins."io.containerd.grpc.v1.cri".cni]
			    bin_dir = "$d/cni-bin"
			    conf_dir = "$d/net.d"
			    max_conf_num = 1
		EOF
		printf '%s\n' "$runtimes"
	)" "$@" || return 1
	export CRI_SOCK=$d/containerd.sock
	cni_oci_image "$d/image" localhost/nshash-pause:latest /bin/sleep 1000000 &&
		ctr -n k8s.io images import "$d/image/image.tar" >/dev/null
}

# cni_cri_runp ERRFILE ARGS...: `crictl runp ARGS...` (through $CRI on
# $CRI_SOCK): prints the sandbox id, or nothing (the error in ERRFILE).
# containerd runs its loopback ADD in parallel with the pod network's chain;
# from Linux 6.5 the nshash plugin's swap never lets it see the pin's path
# without a netns, so a failure is a failure.  Before 6.5 the swap has a
# window ("unknown FS magic"; docs/cni.md) that kubelet retries: so do the
# tests there, saying so on stderr, up to three times.
cni_cri_runp() {
	local errf=$1 i tries=1
	shift
	kernel_at_least 6 5 || tries=3
	for i in $(seq "$tries"); do
		"${CRI[@]}" "$CRI_SOCK" runp "$@" 2>"$errf" && return
		grep -q 'plugin type="loopback" failed (add): unknown FS magic' "$errf" || return
		[ "$i" -lt "$tries" ] && echo "# RunPodSandbox hit the CNI plugin's replace window (loopback, kernel < 6.5): retried" >&2
	done
	return 1
}
