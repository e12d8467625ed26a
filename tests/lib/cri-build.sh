# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/check-cri: critest and crictl from a cri-tools tree,
# crio and pinns from a cri-o tree, both given by the user (neither is a
# Debian package), built offline from their vendor/ with Go from Debian's
# trixie-backports, fetched through apt with a private configuration
# (k8s_apt: no dpkg lock, nothing installed) and unpacked privately with
# dpkg -x.  Cache (NSHASH_TEST_CACHE, default /var/cache/nshash-tests):
#   cri/go-VERSION/usr/lib/go-1.26     the Go toolchain
#   cri/gocache                        Go's build cache (shared by builds)
#   cri/build-KEY/{critest,crictl,crio,pinns,versions}
# KEY hashes both trees (every file's path, size and mtime), the Go
# version and CRI_BUILD_REV: a changed tree is built again, an unchanged
# one is not.  Heavy (minutes of 2 cores): run under the heavy lock.
CRI_GO_DEB=golang-1.26
CRI_GO_SERIES=1.26
CRI_BUILD_REV=r1
CRI_CACHE=${NSHASH_TEST_CACHE:-/var/cache/nshash-tests}/cri
# What a CRI-O build uses where its Makefile would probe the machine
# (hack/*_tag.sh): seccomp through libseccomp-dev; no btrfs, ostree, gpgme,
# AppArmor or SELinux; go-sqlite3 against Debian's libsqlite3 (libsqlite3
# tag: the vendored amalgamation, which some snapshots of the tree lack, is
# not compiled).
CRI_CRIO_TAGS="containers_image_ostree_stub containers_image_openpgp exclude_graphdriver_btrfs btrfs_noversion seccomp libsqlite3"

# cri_go: the cached toolchain's GOROOT, fetched and unpacked if missing;
# prints it.  "# note:" lines on stderr.
cri_go() {
	local g w
	g=$(ls -d "$CRI_CACHE"/go-*/usr/lib/go-$CRI_GO_SERIES 2>/dev/null | tail -1)
	[ -n "$g" ] && [ -x "$g/bin/go" ] && { echo "$g"; return 0; }
	w=$CRI_CACHE/go.tmp.$$
	rm -rf "$w" && mkdir -p "$w/dl" "$w/root" || return 1
	(
		export APT_CONFIG
		APT_CONFIG=$(k8s_apt "$w/apt" "deb trixie-backports") || exit 1
		apt-get -qq update || { echo "# note: apt-get update (private lists, trixie-backports) failed" >&2; exit 1; }
		cd "$w/dl" && apt-get -qq download "$CRI_GO_DEB-go" "$CRI_GO_DEB-src" ||
			{ echo "# note: apt-get download $CRI_GO_DEB-go $CRI_GO_DEB-src failed" >&2; exit 1; }
	) || { rm -rf "$w"; return 1; }
	local v p
	v=$(dpkg-deb -f "$w"/dl/"$CRI_GO_DEB"-go_*.deb Version) || return 1
	for p in "$w"/dl/*.deb; do dpkg -x "$p" "$w/root" || return 1; done
	rm -rf "$CRI_CACHE/go-$v" && mv "$w/root" "$CRI_CACHE/go-$v" && rm -rf "$w" || return 1
	echo "# note: Go $v (trixie-backports) unpacked in $CRI_CACHE/go-$v" >&2
	echo "$CRI_CACHE/go-$v/usr/lib/go-$CRI_GO_SERIES"
}

# _cri_tree_key DIR: the tree's files (path, size, mtime), outputs excluded
_cri_tree_key() {
	(cd "$1" && find . \( -path ./.git -o -path ./build -o -path ./bin -o -name '*.o' \) -prune -o -type f -printf '%P %s %T@\n' |
		LC_ALL=C sort | sha256sum | cut -c1-16)
}
# _cri_describe DIR: git describe of a checkout, else "unknown"
_cri_describe() { git -C "$1" describe --tags --always --dirty 2>/dev/null || echo unknown; }

# cri_build CRI_TOOLS_SRC CRIO_SRC: sets CRI_BIN (the cached build's dir)
# after building what is not cached; 1 on failure, "# note:" lines say why.
cri_build() {
	local ct=$1 co=$2 goroot key w t0 v ctv cov commit
	goroot=$(cri_go) || return 1
	key=$(printf '%s %s %s %s\n' "$(_cri_tree_key "$ct")" "$(_cri_tree_key "$co")" "$goroot" "$CRI_BUILD_REV" | sha256sum | cut -c1-16)
	CRI_BIN=$CRI_CACHE/build-$key
	if [ -x "$CRI_BIN/critest" ] && [ -x "$CRI_BIN/crictl" ] && [ -x "$CRI_BIN/crio" ] && [ -x "$CRI_BIN/pinns" ]; then
		echo "# note: critest, crictl, crio, pinns cached in $CRI_BIN"
		return 0
	fi
	w=$CRI_BIN.tmp.$$
	rm -rf "$w" && mkdir -p "$w" "$CRI_CACHE/gocache" || return 1
	t0=$SECONDS
	ctv=$(_cri_describe "$ct")
	cov=$(_cri_describe "$co")
	commit=$(git -C "$co" rev-parse HEAD 2>/dev/null || echo unknown)
	# offline, from vendor/, nothing of the machine's Go environment
	local goenv=(env -i HOME="$w" PATH="$goroot/bin:/usr/sbin:/usr/bin:/sbin:/bin" GOROOT="$goroot" GOTOOLCHAIN=local
		GOPROXY=off GOSUMDB=off GOFLAGS="-mod=vendor -trimpath" GOPATH="$w/gopath" GOCACHE="$CRI_CACHE/gocache"
		GOMAXPROCS=2)
	(cd "$ct" && "${goenv[@]}" CGO_ENABLED=0 nice -n 19 go test -c -o "$w/critest" \
		-ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=${ctv#v}" ./cmd/critest &&
		"${goenv[@]}" CGO_ENABLED=0 nice -n 19 go build -o "$w/crictl" \
			-ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=${ctv#v}" ./cmd/crictl) >"$w/build.log" 2>&1 ||
		{ echo "# note: critest/crictl build in $ct failed:"; tail -15 "$w/build.log" | sed 's/^/# note:   /'; return 1; }
	echo "# note: critest, crictl built in $((SECONDS - t0)) s"
	t0=$SECONDS
	(cd "$co" && "${goenv[@]}" CGO_ENABLED=1 nice -n 19 go build -tags "$CRI_CRIO_TAGS" \
		-ldflags "-X github.com/cri-o/cri-o/internal/version.buildCommit=$commit" -o "$w/crio" ./cmd/crio) >>"$w/build.log" 2>&1 ||
		{ echo "# note: crio build in $co failed:"; tail -15 "$w/build.log" | sed 's/^/# note:   /'; return 1; }
	# pinns: its Makefile's flags, built outside the tree
	nice -n 19 gcc -std=c99 -Os -Wall -Wextra -static -o "$w/pinns" "$co"/pinns/src/*.c >>"$w/build.log" 2>&1 ||
		{ echo "# note: pinns build failed:"; tail -5 "$w/build.log" | sed 's/^/# note:   /'; return 1; }
	echo "# note: crio, pinns built in $((SECONDS - t0)) s"
	v=$("$goroot/bin/go" version)
	printf 'cri-tools %s\ncri-o %s (%s)\n%s\ntags %s\n' "$ctv" "$cov" "$commit" "$v" "$CRI_CRIO_TAGS" >"$w/versions"
	rm -rf "$w/gopath"
	rm -rf "$CRI_BIN" && mv "$w" "$CRI_BIN"
}
