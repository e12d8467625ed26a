#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the nshash CNI plugin on a node and chains it FIRST into the
# node's active CNI network config.  Run by the DaemonSet in
# nshash-cni.yaml (or by hand).  Idempotent; safe to run in a loop.
#
#   install-cni.sh [install|uninstall]
#
# Environment:
#   CNI_BIN_DIR      node CNI bin dir as mounted here   (default /host/opt/cni/bin)
#   CNI_NET_DIR      node CNI config dir as mounted here (default /host/etc/cni/net.d)
#   NSHASH_BINARY    plugin binary to install           (default /opt/nshash/nshash)
#   NSHASH_ENTRY     file with nshash's conflist entry  (default /etc/nshash-cni/nshash-entry.json)
#   CNI_CONF_NAME    config file to chain into          (default: the one the runtime uses,
#                    i.e. the first *.conf / *.conflist / *.json in name order)
#   WATCH_SECONDS    0 = one pass; N = re-check every N seconds (a primary CNI such as
#                    flannel or calico may rewrite its file; nshash is put back first)
set -eu

CNI_BIN_DIR=${CNI_BIN_DIR:-/host/opt/cni/bin}
CNI_NET_DIR=${CNI_NET_DIR:-/host/etc/cni/net.d}
NSHASH_BINARY=${NSHASH_BINARY:-/opt/nshash/nshash}
NSHASH_ENTRY=${NSHASH_ENTRY:-/etc/nshash-cni/nshash-entry.json}
CNI_CONF_NAME=${CNI_CONF_NAME:-}
WATCH_SECONDS=${WATCH_SECONDS:-0}
MODE=${1:-install}

log() { echo "nshash-install: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

command -v jq >/dev/null || die "jq is required"

install_binary() {
	[ -x "$NSHASH_BINARY" ] || die "$NSHASH_BINARY: no plugin binary"
	echo '{"cniVersion":"1.0.0"}' | CNI_COMMAND=VERSION "$NSHASH_BINARY" 2>/dev/null | grep -q '"supportedVersions"' ||
		die "$NSHASH_BINARY does not answer CNI VERSION; not installing it"
	[ -d "$CNI_BIN_DIR" ] || die "$CNI_BIN_DIR: no such directory (mount the node's CNI bin dir there)"
	if cmp -s "$NSHASH_BINARY" "$CNI_BIN_DIR/nshash"; then return 0; fi
	cp "$NSHASH_BINARY" "$CNI_BIN_DIR/.nshash.tmp"
	chmod 0755 "$CNI_BIN_DIR/.nshash.tmp"
	mv -f "$CNI_BIN_DIR/.nshash.tmp" "$CNI_BIN_DIR/nshash" # atomic: a running ADD keeps the old inode
	log "installed $CNI_BIN_DIR/nshash"
}

# The file libcni (containerd, CRI-O) loads: the first by name with one of
# its extensions.
active_conf() {
	if [ -n "$CNI_CONF_NAME" ]; then
		[ -f "$CNI_NET_DIR/$CNI_CONF_NAME" ] && echo "$CNI_NET_DIR/$CNI_CONF_NAME"
		return 0
	fi
	# shellcheck disable=SC2012
	ls -1 "$CNI_NET_DIR" 2>/dev/null | LC_ALL=C sort | while read -r f; do
		case $f in
		*.conf | *.conflist | *.json) [ -f "$CNI_NET_DIR/$f" ] && echo "$CNI_NET_DIR/$f" && break ;;
		esac
	done
}

write_atomically() { # FILE CONTENT
	printf '%s\n' "$2" >"$1.nshash-tmp"
	chmod 0644 "$1.nshash-tmp"
	mv -f "$1.nshash-tmp" "$1"
}

chain() {
	conf=$(active_conf)
	[ -n "$conf" ] || {
		log "no CNI config in $CNI_NET_DIR yet (the primary CNI has not written one); nothing to chain"
		return 1
	}
	entry=$(jq -c . "$NSHASH_ENTRY") || die "$NSHASH_ENTRY: not valid JSON"
	[ "$(printf '%s' "$entry" | jq -r .type)" = nshash ] || die "$NSHASH_ENTRY: \"type\" must be \"nshash\""
	jq -e . "$conf" >/dev/null 2>&1 || die "$conf: not valid JSON; not touching it"
	case $conf in
	*.conflist) list=$(jq -c . "$conf") target=$conf ;;
	*)
		# A single-plugin .conf/.json: turn it into a list.  The .conflist
		# must be what the runtime picks, so the old file is renamed to a
		# name libcni ignores.
		if jq -e 'has("plugins")' "$conf" >/dev/null; then
			list=$(jq -c . "$conf") target=$conf
		else
			list=$(jq -c '{cniVersion, name, plugins: [del(.cniVersion, .name)]}' "$conf")
			target=${conf%.*}.conflist
		fi
		;;
	esac
	new=$(printf '%s' "$list" | jq --argjson e "$entry" '.plugins = [$e] + [.plugins[] | select(.type != "nshash")]')
	if [ "$(printf '%s' "$new" | jq -c .)" = "$(printf '%s' "$list" | jq -c .)" ] && [ "$target" = "$conf" ]; then
		return 0
	fi
	[ -e "$conf.nshash-orig" ] || cp -p "$conf" "$conf.nshash-orig"
	write_atomically "$target" "$new"
	[ "$target" = "$conf" ] || mv -f "$conf" "$conf.nshash-orig"
	log "chained nshash first into $target"
}

unchain() {
	for conf in "$CNI_NET_DIR"/*.conflist; do
		[ -f "$conf" ] || continue
		jq -e '.plugins | any(.type == "nshash")' "$conf" >/dev/null 2>&1 || continue
		write_atomically "$conf" "$(jq '.plugins |= map(select(.type != "nshash"))' "$conf")"
		log "removed nshash from $conf"
	done
}

case $MODE in
install)
	install_binary
	[ "$WATCH_SECONDS" -gt 0 ] || {
		chain
		exit
	}
	while :; do
		chain || true
		sleep "$WATCH_SECONDS"
	done
	;;
uninstall)
	unchain
	rm -f "$CNI_BIN_DIR/nshash"
	log "removed $CNI_BIN_DIR/nshash"
	;;
*) die "usage: install-cni.sh [install|uninstall]" ;;
esac
