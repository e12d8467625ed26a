# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the CNI plugin's integration tests (sourced after common.sh).
CNI_PLUGIN=$BUILD/cni/nshash
CNI_VERSIONS="0.3.0 0.3.1 0.4.0 1.0.0 1.1.0"
[ -x "$CNI_PLUGIN" ] || cannot_run "$CNI_PLUGIN not built"

# cni_call COMMAND NETNS CONFIG-JSON [VAR=VALUE...]: runs the plugin as a
# runtime does.  Sets CNI_OUT (stdout), CNI_ERR (stderr), CNI_RC.
cni_call() {
	local cmd=$1 netns=$2 conf=$3
	shift 3
	local errf
	errf=$(mktemp)
	CNI_OUT=$(printf '%s' "$conf" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$cmd" \
		CNI_CONTAINERID=ctr-1 CNI_NETNS="$netns" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;FOO=bar" "$@" \
		"$CNI_PLUGIN" 2>"$errf")
	CNI_RC=$?
	CNI_ERR=$(cat "$errf")
	rm -f "$errf"
}
# Field of the JSON on stdout ("" when absent or not JSON).
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

# A netns pinned the way containerd/CRI-O do (empty, lo down), at DIR/NAME.
cni_pin_netns() {
	touch "$1" && unshare --net="$1" true
}
# "TCP UDP" raw sizes of the netns pinned at PATH.
netns_sizes_at() {
	nsenter --net="$1" sh -c 'echo "$(cat /proc/sys/net/ipv4/tcp_ehash_entries) $(cat /proc/sys/net/ipv4/udp_hash_entries)"'
}
netns_inode_at() { stat -L -c %i "$1"; }

# Bridge-plugin cleanup: the CNI-* chains and masquerade rules it leaves for
# networks named NAME, and net.ipv4.ip_forward restored.
cni_save_ip_forward() {
	local v
	v=$(cat /proc/sys/net/ipv4/ip_forward)
	on_exit "echo $v > /proc/sys/net/ipv4/ip_forward"
}
# Remove every iptables rule/chain whose comment or name mentions TAG
# (bridge's rules carry 'name: "NET" id: "ID"' comments).
cni_iptables_cleanup() {
	local tag=$1 t chain rule
	for t in nat filter; do
		iptables -t "$t" -S 2>/dev/null | grep -F -- "$tag" | grep '^-A' | while read -r rule; do
			# shellcheck disable=SC2086
			eval "iptables -t $t ${rule/-A/-D}" 2>/dev/null
		done
	done
	for t in nat filter; do
		for chain in $(iptables -t "$t" -S 2>/dev/null | awk '$1 == "-N" {print $2}'); do
			if iptables -t "$t" -S "$chain" 2>/dev/null | grep -qF -- "$tag"; then
				iptables -t "$t" -F "$chain" 2>/dev/null
				iptables -t "$t" -X "$chain" 2>/dev/null
			fi
		done
	done
}
