# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/integration/73-k8s-kubelet.sh: a real single-node
# Kubernetes built offline from Debian's `kubernetes` source package with
# Debian's Go, both fetched through apt with a private configuration (no
# dpkg lock, nothing installed), unpacked privately and cached under
# /var/cache/nshash-tests/k8s/<kubernetes-version>-go<go-version>-r2/.
# A warm run does not rebuild: the cache holds bin/{kube-apiserver,
# kube-controller-manager,kube-scheduler,kubelet,kubectl} and etcd/.
# kubectl is Debian's own build of the same source and version (the
# kubernetes-client package, unpacked): not built here, what an operator of
# a Debian machine has.
K8S_DEB_VERSION=${K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}
K8S_GIT_VERSION=v1.20.2
K8S_GO_DEB=golang-1.19
K8S_GO_DEB_VERSION=${K8S_GO_DEB_VERSION:-1.19.8-2}
K8S_CACHE_ROOT=${NSHASH_K8S_CACHE:-${NSHASH_TEST_CACHE:-/var/cache/nshash-tests}/k8s}
K8S_CACHE=$K8S_CACHE_ROOT/$K8S_DEB_VERSION-go${K8S_GO_DEB_VERSION%%-*}-r2
K8S_BIN=$K8S_CACHE/bin
K8S_ETCD=$K8S_CACHE/etcd/usr/bin/etcd
K8S_TARGETS="kube-apiserver kube-controller-manager kube-scheduler kubelet"

# k8s_apt DIR [LINE...]: a private apt configuration in DIR; prints the
# APT_CONFIG path.  Each LINE is "deb SUITE" or "deb-src SUITE" (component
# main) from the mirror the machine's apt uses; default bookworm's deb and
# deb-src.  tests/check-cri takes Go from trixie-backports this way.  apt
# downloads as root into DIR (no _apt sandbox: DIR is private, 0700).
k8s_apt() {
	local d=$1 mirror l
	shift
	[ $# -gt 0 ] || set -- "deb bookworm" "deb-src bookworm"
	mirror=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 ~ /\/debian\/? / {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	for l in "$@"; do
		echo "${l%% *} [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror ${l#* } main"
	done >"$d/sources.list"
	cat >"$d/apt.conf" <<-EOS
		Dir::Etc::SourceList "$d/sources.list";
		Dir::Etc::SourceParts "/nonexistent";
		Dir::State::Lists "$d/lists";
		Dir::State::status "$d/status";
		Dir::Cache "$d/cache";
		Debug::NoLocking "true";
		APT::Sandbox::User "root";
	EOS
	: >"$d/status"
	echo "$d/apt.conf"
}

k8s_built() {
	local t
	for t in $K8S_TARGETS kubectl; do [ -x "$K8S_BIN/$t" ] || return 1; done
	[ -x "$K8S_ETCD" ]
}

# k8s_build: fetch (apt, verified by the signed indexes), unpack and build
# into $K8S_CACHE unless it is there; prints "# note:" lines with timings.
# Builds in $K8S_CACHE.tmp.* and renames: a half-made cache is never used.
# One build at a time (a lock file in the cache root: the machine's test and
# a fresh root's, which shares the cache, may start cold together): the
# second finds the first's.
k8s_build() {
	k8s_built && { echo "# note: k8s build cached in $K8S_CACHE"; return 0; }
	mkdir -p "$K8S_CACHE_ROOT" || return 1
	local rc
	{
		flock 9 && _k8s_build
		rc=$?
		[ $rc = 0 ] || rm -rf "$K8S_CACHE".tmp.* # what a failed build left
	} 9>"$K8S_CACHE_ROOT/.build.lock"
	return $rc
}
_k8s_build() {
	k8s_built && { echo "# note: k8s build cached in $K8S_CACHE (built while this run waited)"; return 0; }
	local w s t0 t p src
	local -x APT_CONFIG
	t0=$(date +%s)
	rm -rf "$K8S_CACHE".tmp.* # a killed build's (the lock is held)
	w=$(mktemp -d "$K8S_CACHE.tmp.XXXXXX") && mkdir -p "$w/dl" "$w/bin" || return 1
	APT_CONFIG=$(k8s_apt "$w/apt") || return 1
	apt-get -qq update || { echo "# note: apt-get update (private lists) failed"; return 1; }
	(cd "$w/dl" && apt-get -qq download "$K8S_GO_DEB-go=$K8S_GO_DEB_VERSION" "$K8S_GO_DEB-src=$K8S_GO_DEB_VERSION" etcd-server \
		"kubernetes-client=$K8S_DEB_VERSION") ||
		{ echo "# note: apt-get download of Go/etcd/kubectl failed"; return 1; }
	(cd "$w/dl" && apt-get -qq source --download-only "kubernetes=$K8S_DEB_VERSION") ||
		{ echo "# note: apt-get source kubernetes=$K8S_DEB_VERSION failed"; return 1; }
	mkdir -p "$w/go" "$w/etcd" "$w/client"
	for p in "$w"/dl/golang-*.deb; do dpkg -x "$p" "$w/go" || return 1; done
	dpkg -x "$w"/dl/etcd-server_*.deb "$w/etcd" || return 1
	dpkg -x "$w"/dl/kubernetes-client_*.deb "$w/client" && cp "$w/client/usr/bin/kubectl" "$w/bin/kubectl" || return 1
	(cd "$w" && dpkg-source -x --no-check "$w"/dl/kubernetes_*.dsc src >/dev/null) || { echo "# note: dpkg-source -x failed"; return 1; }
	echo "# note: k8s sources fetched and unpacked in $(($(date +%s) - t0)) s"
	src=$w/src
	# the tree's own build (hack/make-rules: generated files first, GOPATH
	# mode with vendor/), as debian/rules runs it; no .git: the version
	# from a file
	printf "KUBE_GIT_VERSION='%s'\nKUBE_GIT_MAJOR='1'\nKUBE_GIT_MINOR='20'\nKUBE_GIT_TREE_STATE='clean'\nKUBE_GIT_COMMIT=''\n" \
		"$K8S_GIT_VERSION" >"$w/version" || return 1
	# hack/lib/golang.sh places each binary with `rsync -pc SRC DIR`
	# (only that form): without rsync on the machine, cp -p does it
	mkdir -p "$w/shim"
	command -v rsync >/dev/null || printf '#!/bin/sh\n[ "$1" = -pc ] && shift\nexec cp -p "$@"\n' >"$w/shim/rsync"
	chmod +x "$w/shim"/* 2>/dev/null
	s=$(date +%s)
	(cd "$src" && env HOME="$w" GOROOT="$w/go/usr/lib/go-1.19" PATH="$w/go/usr/lib/go-1.19/bin:$w/shim:$PATH" \
		GOFLAGS=-tags=providerless GOPROXY=off GOCACHE="$w/gocache" CGO_ENABLED=0 KUBE_GIT_VERSION_FILE="$w/version" \
		nice -n 10 make WHAT="$(printf 'cmd/%s ' $K8S_TARGETS)" >"$w/build.log" 2>&1) ||
		{ echo "# note: make WHAT=... in the kubernetes tree failed:"; tail -20 "$w/build.log" | sed 's/^/# note:   /'; return 1; }
	for t in $K8S_TARGETS; do cp "$src/_output/local/bin/linux/amd64/$t" "$w/bin/$t" || return 1; done
	echo "# note: built $K8S_TARGETS in $(($(date +%s) - s)) s"
	rm -rf "$w/src" "$w/gocache" "$w/go" "$w/client" "$w/dl" "$w/apt" "$w/shim" "$w"/*.orig.tar.* "$w"/*.debian.tar.*
	chmod 0755 "$w" && rm -rf "$K8S_CACHE" && mv "$w" "$K8S_CACHE" || return 1
	# earlier builds of this file's (another version or revision) go
	for p in "$K8S_CACHE_ROOT"/*-go*-r[0-9]*; do
		case $p in "$K8S_CACHE" | *.tmp.*) ;; *) rm -rf "$p" ;; esac
	done
	echo "# note: k8s cold build: $(($(date +%s) - t0)) s"
}

# ---------------------------------------------------------------- the cluster
# k8s_setup DIR: names, ports, subnet of this run (private: other tests run
# beside it); everything lives under DIR.
k8s_setup() {
	K=$1
	local n=$(($$ % 200 + 20)) p
	K8S_NODE=nsh73-node-$$
	K8S_BR=nsh73br$n
	K8S_NET=10.173.$n
	K8S_NODEIP=$K8S_NET.1
	set -- $(python3 -c 'import socket
s=[socket.socket() for _ in range(9)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
	K8S_API=$1 K8S_ETCD_PORT=$2 K8S_ETCD_PEER=$3 K8S_KCM_PORT=$4 K8S_SCHED_PORT=$5 K8S_KUBELET_PORT=$6 K8S_KUBELET_HZ=$7
	K8S_STREAM_PORT=$8
	P=$K/pki K8S_LOGS=$K/logs K8S_PIDS=$K/pids K8S_MNTNS=$K/node/mntns
	K8S_CTRD=$K/containerd K8S_SOCK=$K/containerd/containerd.sock
	K8S_CGROOT=/nsh73-$$
	export KUBECONFIG=$P/admin.kubeconfig
	mkdir -p "$P" "$K8S_LOGS" "$K8S_PIDS" "$K/etcd" "$K8S_CTRD" "$K/node"/{var-log,sysctl} "$K/kubelet" "$K/images" "$K/certs"
	for p in apiserver kcm sched; do mkdir -p "$K/certs/$p"; done
}
kubectl() { "$K8S_BIN/kubectl" --request-timeout=30s "$@"; }
innode() { nsenter --mount="$K8S_MNTNS" -- "$@"; }

_k8s_cert() { # NAME SUBJECT SANS EKU
	openssl genrsa -out "$P/$1.key" 2048 2>/dev/null &&
		openssl req -new -key "$P/$1.key" -subj "$2" -out "$P/$1.csr" 2>/dev/null &&
		{
			echo "basicConstraints=CA:FALSE"
			echo "keyUsage=critical,digitalSignature,keyEncipherment"
			echo "extendedKeyUsage=$4"
			[ -z "$3" ] || echo "subjectAltName=$3"
		} >"$P/$1.ext" &&
		openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
			-extfile "$P/$1.ext" -out "$P/$1.crt" 2>/dev/null
}
_k8s_kubeconfig() { # FILE CERT
	cat >"$1" <<-EOC
		apiVersion: v1
		kind: Config
		clusters:
		- name: nsh73
		  cluster: {certificate-authority: $P/ca.crt, server: "https://127.0.0.1:$K8S_API"}
		users:
		- name: $2
		  user: {client-certificate: $P/$2.crt, client-key: $P/$2.key}
		contexts:
		- name: nsh73
		  context: {cluster: nsh73, user: $2}
		current-context: nsh73
	EOC
}

# k8s_pki: a CA and every certificate the control plane and kubelet need
k8s_pki() {
	openssl genrsa -out "$P/ca.key" 2048 2>/dev/null &&
		openssl req -x509 -new -key "$P/ca.key" -subj "/CN=nsh73-ca" -days 2 -out "$P/ca.crt" 2>/dev/null &&
		_k8s_cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:10.97.0.1,IP:$K8S_NODEIP,DNS:localhost,DNS:kubernetes.default.svc" serverAuth &&
		_k8s_cert apiserver-kubelet /O=system:masters/CN=kube-apiserver-kubelet-client "" clientAuth &&
		_k8s_cert admin /O=system:masters/CN=admin "" clientAuth &&
		_k8s_cert kcm /CN=system:kube-controller-manager "" clientAuth &&
		_k8s_cert sched /CN=system:kube-scheduler "" clientAuth &&
		_k8s_cert kubelet "/O=system:nodes/CN=system:node:$K8S_NODE" "" clientAuth &&
		_k8s_cert kubelet-serving "/CN=$K8S_NODE" "IP:$K8S_NODEIP,DNS:$K8S_NODE" serverAuth &&
		openssl genrsa -out "$P/sa.key" 2048 2>/dev/null && openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null || return 1
	local c
	for c in admin kcm sched kubelet; do _k8s_kubeconfig "$P/$c.kubeconfig" "$c"; done
}

k8s_start() { # NAME [--node] CMD...: in the background, its PID in $K8S_PIDS/NAME
	local n=$1 pre=()
	shift
	[ "$1" = --node ] && { pre=(nsenter --mount="$K8S_MNTNS" --); shift; }
	setsid "${pre[@]}" nice -n 5 "$@" >>"$K8S_LOGS/$n.log" 2>&1 </dev/null &
	echo $! >"$K8S_PIDS/$n"
}
k8s_stop() { # NAME [SECONDS]
	local pid i
	[ -s "$K8S_PIDS/$1" ] || return 0
	pid=$(cat "$K8S_PIDS/$1")
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < ${2:-20} * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$K8S_PIDS/$1"
}
k8s_wait() { # SECONDS CMD...: 0 once CMD succeeds
	local t=$1 i
	shift
	for ((i = 0; i < t * 2; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
	return 1
}

# the CPUs this process may run on (taskset's list, ranges expanded)
k8s_cpus() {
	local r
	for r in $(taskset -cp $$ | sed 's/.*: //' | tr , ' '); do
		case $r in *-*) seq "${r%-*}" "${r#*-}" ;; *) echo "$r" ;; esac
	done
}

# k8s_node_ns: the node's mount namespace, kept by a bind mount on
# $K8S_MNTNS: a private /run and /var/lib (tmpfs), /var/log a dir of the
# test's, kubelet's kernel tunables bound to files of the test's (its sysctl
# writes never reach the host), / rshared inside (as on a systemd node:
# Bidirectional propagation works).
# The kernel binds a mount namespace's file only into an older namespace
# (fs/namespace.c mnt_ns_loop: the caller's id below the bound one's), and
# 6.18 hands namespace ids out in per-CPU batches: a namespace made on one
# CPU can have a lower id than an older one made on another.  In a fresh
# root (its namespace made a moment ago) the unshare onto the file failed
# with EINVAL on one CPU every time and worked on the other, so it is tried
# pinned to each CPU in turn, each failure a "# note:".
k8s_node_ns() {
	local cpu err
	touch "$K8S_MNTNS" || return 1
	mount --bind "$K/node" "$K/node" && mount --make-private "$K/node" || return 1
	for cpu in $(k8s_cpus) none; do
		[ "$cpu" = none ] && return 1
		err=$(taskset -c "$cpu" unshare --mount="$K8S_MNTNS" --propagation private true 2>&1) && break
		echo "# note: node mount namespace, made on CPU $cpu: $err"
		echo "# note:   own mnt ns: $(readlink /proc/self/ns/mnt)"
	done
	innode sh -euc '
		K=$1; shift
		mount -t tmpfs -o mode=0755 nsh73-run /run
		mkdir -p /run/lock && touch /run/xtables.lock
		mount -t tmpfs -o mode=0755 nsh73-varlib /var/lib
		# a bare root (the fresh root: no systemd) has no /etc/machine-id;
		# kubelet and containerd read /var/lib/dbus/machine-id then (the
		# node'"'"'s private /var/lib: nothing of the machine'"'"'s changes)
		if [ ! -s /etc/machine-id ]; then
			mkdir -p /var/lib/dbus && od -An -N16 -tx1 /dev/urandom | tr -d " \n" >/var/lib/dbus/machine-id
			echo >>/var/lib/dbus/machine-id
		fi
		mount --bind "$K/node/var-log" /var/log
		for f in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
			g=$K/node/sysctl/$(echo $f | tr / _); cat /proc/sys/$f >"$g"; mount --bind "$g" /proc/sys/$f
		done
		mount --make-rshared /
	' sh "$K"
}

# k8s_node_conf: the node's primary network (bridge + host-local, what a
# cluster had before nshash), containerd's and kubelet's configs
k8s_node_conf() {
	mkdir -p "$K/cni/bin" "$K/cni/net.d" "$K/cni/ipam"
	cp -p /usr/lib/cni/* "$K/cni/bin/" || return 1
	cat >"$K/cni/net.d/10-nsh73.conflist" <<-EOC
		{
		  "cniVersion": "1.0.0",
		  "name": "nsh73",
		  "plugins": [
		    {"type": "bridge", "bridge": "$K8S_BR", "isGateway": true, "hairpinMode": true,
		     "ipam": {"type": "host-local", "dataDir": "$K/cni/ipam",
		              "ranges": [[{"subnet": "$K8S_NET.0/24", "gateway": "$K8S_NODEIP"}]]}},
		    {"type": "portmap", "capabilities": {"portMappings": true}}
		  ]
		}
	EOC
	cat >"$K8S_CTRD/config.toml" <<-EOC
		version = 2
		root = "$K8S_CTRD/root"
		state = "$K8S_CTRD/state"
		[grpc]
		  address = "$K8S_SOCK"
		[ttrpc]
		  address = "$K8S_SOCK.ttrpc"
		[debug]
		  address = ""
		[metrics]
		  address = ""
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$K8S_CTRD/opt"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "localhost/nsh73-pause:latest"
		  restrict_oom_score_adj = true
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "$K8S_STREAM_PORT"
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "$K/cni/bin"
		    conf_dir = "$K/cni/net.d"
		    max_conf_num = 1
	EOC
	echo "nameserver 127.0.0.1" >"$K/kubelet/resolv.conf"
	cat >"$K/kubelet/config.yaml" <<-EOC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: $K8S_NODEIP
		port: $K8S_KUBELET_PORT
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: $K8S_KUBELET_HZ
		tlsCertFile: $P/kubelet-serving.crt
		tlsPrivateKeyFile: $P/kubelet-serving.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: false}
		  x509: {clientCAFile: $P/ca.crt}
		authorization: {mode: AlwaysAllow}
		cgroupDriver: cgroupfs
		cgroupRoot: $K8S_CGROOT
		makeIPTablesUtilChains: false
		oomScoreAdj: 0
		resolvConf: $K/kubelet/resolv.conf
		volumePluginDir: $K/kubelet/volume-plugins
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
		failSwapOn: false
		enableServer: true
	EOC
}

_k8s_cgroups() { local c; for c in /sys/fs/cgroup/*/; do [ -L "${c%/}" ] || echo "${c}${K8S_CGROOT#/}"; done; }

k8s_api_ready() { curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "https://127.0.0.1:$K8S_API/readyz"; }
# k8s_node_ready SINCE: Ready=True in a heartbeat of this kubelet
k8s_node_ready() {
	local c
	c=$(kubectl get node "$K8S_NODE" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null) || return 1
	[ "${c%% *}" = True ] && [[ ! "${c#* }" < "$1" ]]
}

# k8s_control_up: etcd and the control plane on 127.0.0.1 (host mount ns)
k8s_control_up() {
	k8s_start etcd "$K8S_ETCD" --name nsh73 --data-dir "$K/etcd/data" \
		--listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER" \
		--initial-cluster "nsh73=http://127.0.0.1:$K8S_ETCD_PEER" --log-level warn
	k8s_wait 30 curl -sf "http://127.0.0.1:$K8S_ETCD_PORT/health" || { echo "# note: etcd not up"; return 1; }
	k8s_start kube-apiserver "$K8S_BIN/kube-apiserver" --bind-address=127.0.0.1 --secure-port="$K8S_API" \
		--advertise-address="$K8S_NODEIP" --etcd-servers="http://127.0.0.1:$K8S_ETCD_PORT" --service-cluster-ip-range=10.97.0.0/24 \
		--client-ca-file="$P/ca.crt" --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
		--kubelet-client-certificate="$P/apiserver-kubelet.crt" --kubelet-client-key="$P/apiserver-kubelet.key" \
		--kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$P/sa.pub" \
		--service-account-signing-key-file="$P/sa.key" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --cert-dir="$K/certs/apiserver" --profiling=false --endpoint-reconciler-type=none
	k8s_wait 120 k8s_api_ready || { echo "# note: kube-apiserver not ready"; tail -5 "$K8S_LOGS/kube-apiserver.log" | sed 's/^/# note:   /'; return 1; }
	k8s_start kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig="$P/kcm.kubeconfig" \
		--authentication-kubeconfig="$P/kcm.kubeconfig" --authorization-kubeconfig="$P/kcm.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$K8S_KCM_PORT" --port=0 --leader-elect=false --service-account-private-key-file="$P/sa.key" \
		--root-ca-file="$P/ca.crt" --use-service-account-credentials=true --cluster-signing-cert-file="$P/ca.crt" \
		--cluster-signing-key-file="$P/ca.key" --flex-volume-plugin-dir="$K/certs/kcm-flex" --cert-dir="$K/certs/kcm" --profiling=false
	k8s_start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$P/sched.kubeconfig" \
		--authentication-kubeconfig="$P/sched.kubeconfig" --authorization-kubeconfig="$P/sched.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$K8S_SCHED_PORT" --port=0 --leader-elect=false --cert-dir="$K/certs/sched" --profiling=false
}

# k8s_node_up: containerd and kubelet in the node's mount namespace; waits
# until the node is Ready in a heartbeat of this kubelet
k8s_node_up() {
	local t0 c
	for c in $(_k8s_cgroups); do mkdir -p "$c" || return 1; done
	k8s_start containerd --node containerd --config "$K8S_CTRD/config.toml"
	k8s_wait 30 ctr --address "$K8S_SOCK" version || { echo "# note: containerd not up"; return 1; }
	ctr --address "$K8S_SOCK" -n k8s.io images import "$K/images/pause/image.tar" >/dev/null &&
		ctr --address "$K8S_SOCK" -n k8s.io images import "$K/images/busybox/image.tar" >/dev/null || return 1
	t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	k8s_start kubelet --node "$K8S_BIN/kubelet" --config="$K/kubelet/config.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
		--container-runtime=remote --container-runtime-endpoint="unix://$K8S_SOCK" \
		--root-dir="$K/kubelet/root" --cert-dir="$K/kubelet/pki" --hostname-override="$K8S_NODE" --node-ip="$K8S_NODEIP" --v=2
	k8s_wait 120 k8s_node_ready "$t0" || {
		echo "# note: node not Ready; its conditions, then kubelet's last lines:"
		kubectl get node "$K8S_NODE" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' 2>&1 | sed 's/^/# note:   /'
		grep -E '^[EW]' "$K8S_LOGS/kubelet.log" | tail -12 | sed 's/^/# note:   /'
		tail -5 "$K8S_LOGS/kubelet.log" | sed 's/^/# note:   /'
		return 1
	}
}

# k8s_node_down: every container of the node's containerd and both daemons
k8s_node_down() {
	local c
	k8s_stop kubelet 20
	if [ -s "$K8S_PIDS/containerd" ]; then
		for c in $(ctr --address "$K8S_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$K8S_SOCK" -n k8s.io tasks kill -s KILL "$c"; done
		sleep 1
		for c in $(ctr --address "$K8S_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$K8S_SOCK" -n k8s.io tasks rm -f "$c"; done
	fi
	k8s_stop containerd 20
	# shims of this containerd (their command line names its socket), by PID
	for c in /proc/[0-9]*; do grep -qF -- "$K8S_SOCK" "$c/cmdline" 2>/dev/null && kill -KILL "${c#/proc/}"; done
	return 0
}

# k8s_down: everything k8s_* started or made, by PID and name
k8s_down() {
	local c m p
	k8s_node_down
	for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do k8s_stop "$c" 20; done
	if [ -e "$K8S_MNTNS" ]; then
		m=$(stat -L -c %i "$K8S_MNTNS" 2>/dev/null)
		for p in /proc/[0-9]*; do [ "$(stat -L -c %i "$p/ns/mnt" 2>/dev/null)" = "$m" ] && kill -KILL "${p#/proc/}"; done
		umount "$K8S_MNTNS"
	fi
	umount -l "$K/node" 2>/dev/null
	ip link del "$K8S_BR" 2>/dev/null
	for c in $(_k8s_cgroups); do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; ; done
	return 0
}
