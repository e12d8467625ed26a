#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# packaging/kubernetes: the manifests parse and wire up what the installer
# relies on; install-cni.sh chains nshash first into a node's conflist (all
# shapes), idempotently, and uninstalls; and the conflist it writes really
# works: a chain ADD through it sizes a pinned netns from a pod annotation.
# Runs against temporary directories only.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
require_root
require_kernel_knobs
command -v jq >/dev/null || cannot_run "jq missing"
python3 -c 'import yaml' 2>/dev/null || cannot_run "python3-yaml missing"
K=$TOP/packaging/kubernetes
for f in nshash-cni.yaml install-cni.sh nshash-entry.json Containerfile; do [ -f "$K/$f" ] || cannot_run "$K/$f missing"; done

# ---- the manifests
out=$(python3 - "$K/nshash-cni.yaml" "$K/nshash-entry.json" "$K/Containerfile" <<'PY' 2>&1
import json, os, re, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
entry_file = json.load(open(sys.argv[2]))
containerfile = open(sys.argv[3]).read()
def check(cond, what):
    print(("ok " if cond else "FAIL ") + what)
kinds = {d["kind"]: d for d in docs}
check(sorted(kinds) == ["ConfigMap", "DaemonSet"], "manifest holds a ConfigMap and a DaemonSet")
cm, ds = kinds["ConfigMap"], kinds["DaemonSet"]
check(ds["apiVersion"] == "apps/v1" and ds["metadata"]["namespace"] == "kube-system", "DaemonSet apps/v1 in kube-system")
check(cm["metadata"]["namespace"] == "kube-system", "ConfigMap in the same namespace")
spec = ds["spec"]["template"]["spec"]
sel = ds["spec"]["selector"]["matchLabels"]
labels = ds["spec"]["template"]["metadata"]["labels"]
check(all(labels.get(k) == v for k, v in sel.items()), "selector matches the pod template labels")
check({"operator": "Exists"} in spec.get("tolerations", []), "tolerates every taint (runs on every node)")
c = spec["containers"][0]
env = {e["name"]: e.get("value") for e in c.get("env", [])}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
def host(name): return vols[name].get("hostPath", {}).get("path")
bin_vol = [n for n, p in mounts.items() if p == env.get("CNI_BIN_DIR")]
net_vol = [n for n, p in mounts.items() if p == env.get("CNI_NET_DIR")]
check(len(bin_vol) == 1 and host(bin_vol[0]) == "/opt/cni/bin", "CNI_BIN_DIR is the node's /opt/cni/bin (hostPath)")
check(len(net_vol) == 1 and host(net_vol[0]) == "/etc/cni/net.d", "CNI_NET_DIR is the node's /etc/cni/net.d (hostPath)")
entry_dir, entry_name = os.path.split(env.get("NSHASH_ENTRY", ""))
cm_vol = [n for n, p in mounts.items() if p == entry_dir]
check(len(cm_vol) == 1 and vols[cm_vol[0]].get("configMap", {}).get("name") == cm["metadata"]["name"],
      "NSHASH_ENTRY's directory is the ConfigMap's volume")
check(entry_name in cm["data"], "the ConfigMap has the file NSHASH_ENTRY names")
entry = json.loads(cm["data"][entry_name])
check(entry == entry_file, "ConfigMap entry == packaging/kubernetes/nshash-entry.json")
check(entry.get("type") == "nshash", "entry type nshash")
check(entry.get("capabilities", {}).get("io.kubernetes.cri.pod-annotations") is True, "entry declares the pod-annotations capability")
check(c["command"][:2] == ["/opt/nshash/install-cni.sh", "install"], "the container runs install-cni.sh install")
check("COPY packaging/kubernetes/install-cni.sh /opt/nshash/install-cni.sh" in containerfile, "the image has install-cni.sh where the command expects it")
check(re.search(r"COPY --from=build /nshash " + re.escape(env.get("NSHASH_BINARY", "?")) + r"\n", containerfile) is not None,
      "the image has the plugin at NSHASH_BINARY")
check("-static" in containerfile, "the image's plugin is statically linked (it runs on the node)")
check(int(env.get("WATCH_SECONDS", "0")) > 0, "the installer keeps watching (WATCH_SECONDS > 0)")
nodes = [x for x in spec["containers"] if x["name"] == "node"]
check(len(nodes) == 1, "a node container reclaims what nshash leaves and serves the metrics")
g = nodes[0] if nodes else {"command": [], "volumeMounts": []}
cmd = g["command"]
def arg(name):
    return cmd[cmd.index(name) + 1] if name in cmd[:-1] else None
gm = [m for m in g["volumeMounts"] if m["mountPath"] == arg("--state-dir")]
check(cmd[:1] == ["/opt/nshash/nshash-cli"] and "serve" in cmd, "it runs nshash serve")
check(re.search(r"COPY --from=build /nshash-cli " + re.escape(cmd[0] if cmd else "?") + r"\n", containerfile) is not None,
      "the image has the nshash CLI the node container runs")
check(len(gm) == 1 and host(gm[0]["name"]) == "/run/nshash" and gm[0].get("mountPropagation") == "Bidirectional",
      "--state-dir is the node's /run/nshash, Bidirectional (its unmounts reach the node)")
check(spec.get("hostPID") is True and g.get("securityContext", {}).get("privileged") is True,
      "gc sees the node's processes (hostPID) and may unmount (privileged)")
check(0 < int(arg("--gc-every") or "0") <= 3600 and arg("--max-idle") == "600", "gc runs at least hourly, --max-idle 600")
tm = [m for m in g["volumeMounts"] if m["mountPath"] == arg("--textfile-dir")]
check(len(tm) == 1 and "emptyDir" in vols.get(tm[0]["name"], {}) and tm[0]["name"] == "nshash-cni-status",
      "--textfile-dir is the emptyDir nshash-cni-status")
port = (arg("--listen") or ":").rsplit(":", 1)[1]
ann = ds["spec"]["template"]["metadata"].get("annotations", {})
check(spec.get("hostNetwork") is True and ann.get("prometheus.io/port") == port and ann.get("prometheus.io/scrape") == "true",
      "the metrics port is the node's (hostNetwork), announced to Prometheus")
check(g.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/healthz" and str(g["livenessProbe"]["httpGet"]["port"]) == port,
      "the liveness probe asks /healthz on that port")
st = vols.get("nshash-state", {}).get("hostPath", {})
check(st.get("path") == "/run/nshash" and st.get("type") == "Directory",
      "the node's /run/nshash is mounted as it is (type Directory: DirectoryOrCreate would make it 0755, which nshash refuses)")
inits = [x for x in spec.get("initContainers", []) if x["name"] == "state-dir"]
im = {m["name"]: m["mountPath"] for m in (inits[0]["volumeMounts"] if inits else [])}
check(len(inits) == 1 and host([n for n, p in im.items() if p == "/host/run"][0] if "/host/run" in im.values() else "x") == "/run",
      "an init container sees the node's /run at /host/run")
print("STATEDIR " + json.dumps(inits[0]["command"][2] if inits else ""))
print("ENTRY " + json.dumps(entry))
PY
)
while read -r line; do
	case $line in
	ok\ *) pass "${line#ok }" ;;
	FAIL\ *) fail "${line#FAIL }" ;;
	ENTRY\ *) ENTRY=${line#ENTRY } ;;
	STATEDIR\ *) STATEDIR_SH=$(jq -r . <<<"${line#STATEDIR }") ;;
	*) fail "manifest check: $line" ;;
	esac
done <<<"$out"
# ---- the init container's script on a scratch /run: absent, left 0755, a symlink
SR=$(mktemp -d /tmp/nshash-t55-run.XXXXXX)
on_exit "rm -rf '$SR'"
init_sh() { sh -c "${STATEDIR_SH//\/host\/run/$SR}" 2>&1; }
out=$(init_sh)
assert_eq "0 700 root" "$? $(stat -c '%a %U' "$SR/nshash")" "state-dir init: an absent /run/nshash is made 0700 ($out)"
"$BUILD/nshash" --state-dir "$SR/nshash" list >/dev/null 2>&1
assert_eq 0 "$?" "... and nshash takes it as its state dir"
chmod 0755 "$SR/nshash"
out=$(init_sh)
assert_eq "0 700" "$? $(stat -c '%a' "$SR/nshash")" "state-dir init: one an earlier manifest left 0755 is narrowed ($out)"
rmdir "$SR/nshash" && mkdir "$SR/elsewhere" && ln -s elsewhere "$SR/nshash"
out=$(init_sh)
assert_eq "1 755 elsewhere" "$? $(stat -c '%a' "$SR/elsewhere") $(readlink "$SR/nshash")" "state-dir init: a symlink is refused, its target untouched"
assert_contains "$out" "$SR/nshash is a symbolic link: remove it" "... saying so"
cni_call GC "" "$(jq -c '. + {cniVersion: "1.1.0", name: "k8s"} | del(.capabilities)' <<<"${ENTRY:-{\}}")"
assert_cni_ok_silent "the shipped entry is a valid nshash config"
EX=$K/10-nshash-bridge.conflist
assert_eq "nshash" "$(jq -r '.plugins[0].type' "$EX")" "the example conflist puts nshash first"
assert_eq "$(jq -c . "$K/nshash-entry.json")" "$(jq -c '.plugins[0]' "$EX")" "the example's entry is the shipped entry"
assert_eq '["nshash","bridge","portmap","loopback"]' "$(jq -c '[.plugins[].type]' "$EX")" "the example chains the tested plugins"

# (nshash serve, the node container, is tested in 58-k8s-node)
unset NSHASH_POLICY

# ---- the docs cover every config key the plugin reads and every code it returns
KEYS=$(grep -oE 'config_(size|string)\(root, "[A-Za-z]+"' "$TOP/cni/config.c" | grep -oE '"[A-Za-z]+"' | tr -d '"' | grep -v '^name$' | sort -u | tr '\n' ' ')
CODES=$(grep -oE 'NSHASH_CNI_E_[A-Z_]+ = [0-9]+' "$TOP/cni/cni.h" | awk '{print $3}' | tr '\n' ' ')
missing=""
for k in $KEYS; do
	grep -q "^| \`$k\` |" "$TOP/docs/cni.md" || missing+=" cni.md:$k"
	grep -q "^\.B $k\$" "$TOP/docs/man/nshash-cni.8" || missing+=" man:$k"
done
for c in $CODES; do
	grep -q "^| $c |" "$TOP/docs/cni.md" || missing+=" cni.md:code$c"
	grep -A0 -q "^\.B $c\$" "$TOP/docs/man/nshash-cni.8" || missing+=" man:code$c"
done
assert_eq "" "$missing" "docs/cni.md and nshash-cni(8) document every key ($KEYS) and code ($CODES)"

# ---- install-cni.sh on a fake node
D=$(make_state_dir)
node() { # fresh node dirs
	rm -rf "$D/node" && mkdir -p "$D/node/bin" "$D/node/net"
}
inst() { # [install|uninstall]
	CNI_BIN_DIR=$D/node/bin CNI_NET_DIR=$D/node/net NSHASH_BINARY=$CNI_PLUGIN NSHASH_ENTRY=$K/nshash-entry.json \
		WATCH_SECONDS=0 "$K/install-cni.sh" "${1:-install}" 2>"$D/inst.err"
}
cni_test_network 55
BRIDGE_CONF='{"cniVersion":"1.0.0","name":"'$NET'","plugins":[{"type":"bridge","bridge":"'$BR'","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"'$SUBNET'.0/24"}]],"dataDir":"'$D'/ipam"}},{"type":"portmap","capabilities":{"portMappings":true}}]}'
types() { jq -c '[.plugins[].type]' "$1"; }

node
echo "$BRIDGE_CONF" >"$D/node/net/10-bridge.conflist"
echo '{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"loopback"}]}' >"$D/node/net/99-other.conflist"
inst
assert_eq 0 $? "install succeeds"
cmp -s "$CNI_PLUGIN" "$D/node/bin/nshash" && pass "the binary is installed" || fail "binary not installed"
assert_eq '["nshash","bridge","portmap"]' "$(types "$D/node/net/10-bridge.conflist")" "nshash chained first into the active conflist"
assert_eq "$(jq -c . "$K/nshash-entry.json")" "$(jq -c '.plugins[0]' "$D/node/net/10-bridge.conflist")" "the entry is the shipped one"
assert_eq "$(jq -c '.plugins' <<<"$BRIDGE_CONF")" "$(jq -c '.plugins[1:]' "$D/node/net/10-bridge.conflist")" "the other plugins are unchanged, in order"
assert_eq '["loopback"]' "$(types "$D/node/net/99-other.conflist")" "an inactive conflist is left alone"
assert_eq "$(jq -c . <<<"$BRIDGE_CONF")" "$(jq -c . "$D/node/net/10-bridge.conflist.nshash-orig")" "the original is kept as .nshash-orig"
SUM=$(md5sum <"$D/node/net/10-bridge.conflist")
inst
assert_eq "0 $SUM" "$? $(md5sum <"$D/node/net/10-bridge.conflist")" "a second run changes nothing"
assert_eq "" "$(ls "$D/node/net" | grep -v -e '^10-bridge.conflist$' -e '^10-bridge.conflist.nshash-orig$' -e '^99-other.conflist$')" "no stray files"

# ---- the written conflist works: chain ADD with a pod annotation
export CNI_CACHE_DIR=$D/cache
mkdir -p "$CNI_CACHE_DIR"
cni_pin_netns "$D/pod"
# the installed entry as it is; the node's policy puts its templates and spares
# in a state dir of this test's, never the host's /run/nshash
STATE=$(make_state_dir)
cni_node_policy "$D/node.json" "$STATE"
cp "$D/node/net/10-bridge.conflist" "$D/run.conflist"
cni_chain ADD "$D/run.conflist" "$D/pod" pod '{"io.kubernetes.cri.pod-annotations":{"io.nshash.tcp":"16384"}}'
assert_eq "0 16384 1024" "$CNI_RC $(netns_sizes_at "$D/pod")" "ADD through the installed conflist: annotation size (tcp) and default (udp)"
assert_contains "$(nsenter --net="$D/pod" ip -4 -o addr show dev eth0)" "$SUBNET." "and eth0 from the bridge"
cni_chain DEL "$D/run.conflist" "$D/pod" pod
assert_eq 0 "$CNI_RC" "DEL through the installed conflist"

# ---- nshash present but not first: moved, not duplicated
jq '.plugins += [{"type":"nshash","tcp":1}]' <<<"$BRIDGE_CONF" >"$D/node/net/10-bridge.conflist"
inst
assert_eq '["nshash","bridge","portmap"]' "$(types "$D/node/net/10-bridge.conflist")" "a misplaced nshash entry is moved first, once"

# ---- a single-plugin .conf becomes a conflist the runtime picks
node
echo '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$D/node/net/05-single.conf"
inst
assert_eq '["nshash","bridge"]' "$(types "$D/node/net/05-single.conflist")" ".conf turned into a conflist with nshash first"
assert_eq "single 0.4.0" "$(jq -r '"\(.name) \(.cniVersion)"' "$D/node/net/05-single.conflist")" "name and version kept"
assert_eq "05-single.conf.nshash-orig 05-single.conflist" "$(ls "$D/node/net" | tr '\n' ' ' | sed 's/ $//')" "the .conf is renamed away so the runtime loads the conflist"

# ---- refusals
node
echo '{"cniVersion":"1.0.0", broken' >"$D/node/net/10-bad.conflist"
inst
rc=$?
assert_eq "1 {\"cniVersion\":\"1.0.0\", broken" "$rc $(cat "$D/node/net/10-bad.conflist")" "invalid JSON: refused, file untouched"
assert_contains "$(cat "$D/inst.err")" "10-bad.conflist: not valid JSON; not touching it" "invalid JSON: the error names the file"
node
inst
assert_eq 1 $? "no conflist yet: one-shot install fails"
assert_contains "$(cat "$D/inst.err")" "no CNI config in $D/node/net yet" "no conflist: says so"
node
echo "$BRIDGE_CONF" >"$D/node/net/10-bridge.conflist"
CNI_BIN_DIR=$D/node/bin CNI_NET_DIR=$D/node/net NSHASH_BINARY=/bin/true NSHASH_ENTRY=$K/nshash-entry.json "$K/install-cni.sh" 2>"$D/inst.err"
rc=$?
assert_eq "1 $(jq -c . <<<"$BRIDGE_CONF")" "$rc $(jq -c . "$D/node/net/10-bridge.conflist")" "a binary that is not the plugin is refused before any change"

# ---- watch mode (the DaemonSet's): a primary CNI rewriting its file gets nshash put back first
node
echo "$BRIDGE_CONF" >"$D/node/net/10-bridge.conflist"
CNI_BIN_DIR=$D/node/bin CNI_NET_DIR=$D/node/net NSHASH_BINARY=$CNI_PLUGIN NSHASH_ENTRY=$K/nshash-entry.json \
	WATCH_SECONDS=1 "$K/install-cni.sh" install 2>"$D/watch.err" &
WATCHER=$!
on_exit "kill $WATCHER"
for _ in $(seq 30); do [ "$(jq -r '.plugins[0].type' "$D/node/net/10-bridge.conflist")" = nshash ] && break; sleep 0.1; done
echo "$BRIDGE_CONF" >"$D/node/net/10-bridge.conflist.tmp" && mv "$D/node/net/10-bridge.conflist.tmp" "$D/node/net/10-bridge.conflist"
for _ in $(seq 30); do [ "$(jq -r '.plugins[0].type' "$D/node/net/10-bridge.conflist")" = nshash ] && break; sleep 0.1; done
assert_eq '["nshash","bridge","portmap"]' "$(types "$D/node/net/10-bridge.conflist")" "watch mode: nshash put back first after the primary CNI rewrote its file"
kill "$WATCHER"
wait "$WATCHER" 2>/dev/null

# ---- uninstall
inst && inst uninstall
assert_eq "0 [\"bridge\",\"portmap\"]" "$? $(types "$D/node/net/10-bridge.conflist")" "uninstall removes nshash from the conflist"
[ -e "$D/node/bin/nshash" ] && fail "uninstall left the binary" || pass "uninstall removes the binary"
assert_host_untouched
