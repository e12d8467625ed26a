# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/integration/73-k8s-kubelet.sh: a real single-node
# Kubernetes built offline from Debian's `kubernetes` source package with
# Debian's Go, both fetched through apt with a private configuration (no
# dpkg lock, nothing installed), unpacked privately and cached under
# /var/cache/nshash-tests/k8s/<kubernetes-version>-go<go-version>-r1/.
# A warm run does not rebuild: the cache holds bin/{kube-apiserver,
# kube-controller-manager,kube-scheduler,kubelet,kubectl} and etcd/.
K8S_DEB_VERSION=${K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}
K8S_GIT_VERSION=v1.20.2
K8S_GO_DEB=golang-1.19
K8S_GO_DEB_VERSION=${K8S_GO_DEB_VERSION:-1.19.8-2}
K8S_CACHE_ROOT=${NSHASH_K8S_CACHE:-/var/cache/nshash-tests/k8s}
K8S_CACHE=$K8S_CACHE_ROOT/$K8S_DEB_VERSION-go${K8S_GO_DEB_VERSION%%-*}-r1
K8S_BIN=$K8S_CACHE/bin
K8S_ETCD=$K8S_CACHE/etcd/usr/bin/etcd
K8S_TARGETS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"

# k8s_apt DIR: a private apt configuration in DIR (bookworm's deb and deb-src
# from the mirror the machine's apt uses); prints the APT_CONFIG path
k8s_apt() {
	local d=$1 mirror
	mirror=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 ~ /\/debian\/? / {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	cat >"$d/sources.list" <<-EOS
		deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main
		deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main
	EOS
	cat >"$d/apt.conf" <<-EOS
		Dir::Etc::SourceList "$d/sources.list";
		Dir::Etc::SourceParts "/nonexistent";
		Dir::State::Lists "$d/lists";
		Dir::State::status "$d/status";
		Dir::Cache "$d/cache";
		Debug::NoLocking "true";
	EOS
	: >"$d/status"
	echo "$d/apt.conf"
}

k8s_built() {
	local t
	for t in $K8S_TARGETS; do [ -x "$K8S_BIN/$t" ] || return 1; done
	[ -x "$K8S_ETCD" ]
}

# k8s_build: fetch (apt, verified by the signed indexes), unpack and build
# into $K8S_CACHE unless it is there; prints "# note:" lines with timings.
# Builds in $K8S_CACHE.tmp.PID and renames: a half-made cache is never used.
k8s_build() {
	k8s_built && { echo "# note: k8s build cached in $K8S_CACHE"; return 0; }
	local w=$K8S_CACHE.tmp.$$ s t0 t p src
	t0=$(date +%s)
	rm -rf "$w" && mkdir -p "$w/dl" "$w/bin" || return 1
	export APT_CONFIG
	APT_CONFIG=$(k8s_apt "$w/apt") || return 1
	apt-get -qq update || { echo "# note: apt-get update (private lists) failed"; return 1; }
	(cd "$w/dl" && apt-get -qq download "$K8S_GO_DEB-go=$K8S_GO_DEB_VERSION" "$K8S_GO_DEB-src=$K8S_GO_DEB_VERSION" etcd-server) ||
		{ echo "# note: apt-get download of Go/etcd failed"; return 1; }
	(cd "$w/dl" && apt-get -qq source --download-only "kubernetes=$K8S_DEB_VERSION") ||
		{ echo "# note: apt-get source kubernetes=$K8S_DEB_VERSION failed"; return 1; }
	mkdir -p "$w/go" "$w/etcd"
	for p in "$w"/dl/golang-*.deb; do dpkg -x "$p" "$w/go" || return 1; done
	dpkg -x "$w"/dl/etcd-server_*.deb "$w/etcd" || return 1
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
	rm -rf "$w/src" "$w/gocache" "$w/go" "$w/dl" "$w/apt" "$w/shim"
	mkdir -p "$K8S_CACHE_ROOT" && rm -rf "$K8S_CACHE" && mv "$w" "$K8S_CACHE" || return 1
	echo "# note: k8s cold build: $(($(date +%s) - t0)) s"
}
