#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The nshash-cni DaemonSet's gc container: every GC_SECONDS, `nshash gc` on
# the node's state dir (mounted at NSHASH_STATE_DIR with Bidirectional
# propagation, so that its unmounts reach the node): templates unused and
# spares not taken for GC_MAX_IDLE seconds, orphan container pins, the
# ledger's dead records.  A failed run is logged, never fatal.
#
#   NSHASH_CLI        the nshash CLI as installed in the image (default /opt/nshash/nshash-cli)
#   NSHASH_STATE_DIR  the node's state dir as mounted here     (default /run/nshash)
#   GC_SECONDS        seconds between runs                     (default 900)
#   GC_MAX_IDLE       gc --max-idle                            (default 600)
#   GC_ONCE           1 = one run, then exit (tests)
set -u
NSHASH_CLI=${NSHASH_CLI:-/opt/nshash/nshash-cli}
NSHASH_STATE_DIR=${NSHASH_STATE_DIR:-/run/nshash}
GC_SECONDS=${GC_SECONDS:-900}
GC_MAX_IDLE=${GC_MAX_IDLE:-600}
trap 'exit 0' TERM INT
while :; do
	if [ -d "$NSHASH_STATE_DIR" ]; then
		out=$("$NSHASH_CLI" --state-dir "$NSHASH_STATE_DIR" gc --max-idle "$GC_MAX_IDLE" 2>&1) ||
			echo "nshash-gc: error (not fatal): $out" >&2
		[ -n "$out" ] && echo "nshash-gc: $out" >&2
	fi
	[ "${GC_ONCE:-0}" = 1 ] && exit 0
	sleep "$GC_SECONDS" &
	wait $!
done
