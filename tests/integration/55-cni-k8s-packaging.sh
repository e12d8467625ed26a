#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# packaging/kubernetes: the manifests parse and wire up what the installer
# relies on (its tag is the Makefile's version); nshash-cni-install chains
# nshash first into a node's active CNI config of every shape (flannel's,
# calico's, a single .conf, several files), idempotently, refuses bad
# entries and bad primaries leaving every file as it was, retries a
# half-written primary, says a read-only dir once, stops on SIGTERM leaving
# nshash chained, and uninstalls restoring every file byte for byte (mode,
# owner) while a watcher runs; the conflist it writes works (a chain ADD
# sizes a pinned netns from a pod annotation); and through a private
# containerd's CRI: pods made while chained survive an upgrade and are
# stopped and removed after the uninstall.  Temporary directories only.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
test_needs root knobs jq
python3 -c 'import yaml' 2>/dev/null || cannot_run "python3-yaml missing"
K=$TOP/packaging/kubernetes
INST=$BUILD/nshash-cni-install
[ -x "$INST" ] || cannot_run "$INST not built"
for f in nshash-cni.yaml nshash-entry.json Containerfile; do [ -f "$K/$f" ] || cannot_run "$K/$f missing"; done

# ---- the manifests
VERSION=$(sed -n 's/^#define NSHASH_VERSION[[:space:]]*"\(.*\)"/\1/p' "$TOP/lib/nshash.h")
assert_eq "$VERSION" "$("$BUILD/nshash" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)" "nshash --version is lib/nshash.h's version ($VERSION)"
assert_eq "$VERSION" "$(make -s -C "$TOP" --no-print-directory --eval 'print-version: ; @echo $(VERSION)' print-version)" "the Makefile's VERSION (the image's tag) is it"
out=$(python3 - "$K/nshash-cni.yaml" "$K/nshash-entry.json" "$K/Containerfile" "$VERSION" <<'PY' 2>&1
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
check(c["command"] == ["/usr/bin/nshash-cni-install", "install", "--watch", "30", "--status-file", "/run/nshash-cni/install.prom"],
      "the container runs nshash-cni-install install --watch 30 --status-file /run/nshash-cni/install.prom (PID 1: no shell)")
check(c.get("readinessProbe", {}).get("exec", {}).get("command") == ["/usr/bin/nshash-cni-install", "ready"], "readiness: exec nshash-cni-install ready")
check(int(c.get("readinessProbe", {}).get("timeoutSeconds", 1)) >= 5,
      "... with timeoutSeconds >= 5 (kubelet kills an exec probe at its timeout, default 1 s, and counts it failed)")
check("COPY nshash-cni-install /usr/bin/nshash-cni-install" in containerfile, "the image has the installer where the command expects it")
check(re.search(r"^COPY nshash-plugin " + re.escape(env.get("NSHASH_PLUGIN", "?")) + r"$", containerfile, re.M) is not None,
      "the image has the plugin at NSHASH_PLUGIN")
check(re.search(r"^FROM scratch$", containerfile, re.M) is not None and len(re.findall(r"^FROM ", containerfile, re.M)) == 1,
      "the image is FROM scratch, one stage (nothing pulled)")
run_mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/run/nshash-cni"]
check(env.get("NSHASH_CNI_RUN_DIR") == "/run/nshash-cni" and len(run_mount) == 1 and "emptyDir" in vols.get(run_mount[0]["name"], {}),
      "the run dir (status file, uninstall marker) is an emptyDir at /run/nshash-cni")
images = [x["image"] for x in spec["containers"] + spec.get("initContainers", [])]
check(images and all(i == "localhost/nshash-cni:" + sys.argv[4] for i in images), "every container's image is localhost/nshash-cni:" + sys.argv[4] + " (the Makefile's version)")
sc = c.get("securityContext", {})
check(sc.get("readOnlyRootFilesystem") is True and sc.get("capabilities", {}).get("drop") == ["ALL"] and
      sorted(sc.get("capabilities", {}).get("add", [])) == ["CHOWN", "DAC_OVERRIDE", "FOWNER"] and sc.get("runAsUser") == 0,
      "the installer: read-only root, every capability dropped but CHOWN, DAC_OVERRIDE, FOWNER, uid 0")
check(0 < int(spec.get("terminationGracePeriodSeconds", 30)) <= 30, "a termination grace period the installer's SIGTERM exit fits in")
nodes = [x for x in spec["containers"] if x["name"] == "node"]
check(len(nodes) == 1, "a node container reclaims what nshash leaves and serves the metrics")
g = nodes[0] if nodes else {"command": [], "volumeMounts": []}
cmd = g["command"]
def arg(name):
    return cmd[cmd.index(name) + 1] if name in cmd[:-1] else None
gm = [m for m in g["volumeMounts"] if m["mountPath"] == arg("--state-dir")]
check(cmd[:1] == ["/usr/bin/nshash"] and "serve" in cmd, "it runs nshash serve, the image's CLI (PID 1: no shell)")
check("COPY nshash /usr/bin/nshash" in containerfile, "the image has the (static) nshash CLI the node container runs")
check(len(gm) == 1 and host(gm[0]["name"]) == "/run/nshash" and gm[0].get("mountPropagation") == "Bidirectional",
      "--state-dir is the node's /run/nshash, Bidirectional (its unmounts reach the node)")
check(spec.get("hostPID") is True and g.get("securityContext", {}).get("privileged") is True,
      "gc sees the node's processes (hostPID) and may unmount (privileged)")
check(0 < int(arg("--gc-every") or "0") <= 3600 and arg("--max-idle") == "600", "gc runs at least hourly, --max-idle 600")
tm = [m for m in g["volumeMounts"] if m["mountPath"] == arg("--textfile-dir")]
check(len(tm) == 1 and tm[0].get("readOnly") is True and run_mount and tm[0]["name"] == run_mount[0]["name"],
      "--textfile-dir is the installer's run dir (its install.prom), mounted read-only")
port = (arg("--listen") or ":").rsplit(":", 1)[1]
ann = ds["spec"]["template"]["metadata"].get("annotations", {})
check(spec.get("hostNetwork") is True and (arg("--listen") or "").rsplit(":", 1)[0] == "127.0.0.1" and ann.get("prometheus.io/scrape") != "true",
      "the metrics listen on the node's loopback only (hostNetwork), announced to no Prometheus (docs/cni.md: a proxy sidecar, or an opt-in)")
check(g.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/healthz" and str(g["livenessProbe"]["httpGet"]["port"]) == port,
      "the liveness probe asks /healthz on that port")
st = vols.get("nshash-state", {}).get("hostPath", {})
check(st.get("path") == "/run/nshash" and st.get("type") == "DirectoryOrCreate",
      "the node's /run/nshash is DirectoryOrCreate (kubelet sets volumes up before init containers: a fresh node or /run must not block)")
allc = spec["containers"] + spec.get("initContainers", [])
check(all(m["name"] in vols for x in allc for m in x.get("volumeMounts", [])), "every container's mounts name a volume of the pod")
for v in spec["volumes"]:
    hp = v.get("hostPath")
    if hp is None:
        continue
    want = "Directory" if hp.get("path") == "/run" else "DirectoryOrCreate"
    check(hp.get("type") == want, "hostPath " + hp.get("path", "?") + " is type " + want +
          (" (every node has it)" if want == "Directory" else " (a fresh node or a fresh /run after a reboot must not block the pod)"))
nm = [m for m in g["volumeMounts"] if m["mountPath"] in ("/run/netns", "/var/run/netns")]
check(sorted(m["mountPath"] for m in nm) == ["/run/netns", "/var/run/netns"] and
      all(host(m["name"]) == "/run/netns" and m.get("readOnly") is True and m.get("mountPropagation") == "HostToContainer" for m in nm),
      "the node container sees the runtime's netns pins: the node's /run/netns at /run/netns and /var/run/netns, read-only, HostToContainer")
inits = [x for x in spec.get("initContainers", []) if x["name"] == "state-dir"]
im = {m["name"]: m["mountPath"] for m in (inits[0]["volumeMounts"] if inits else [])}
check(len(inits) == 1 and host([n for n, p in im.items() if p == "/host/run"][0] if "/host/run" in im.values() else "x") == "/run",
      "an init container sees the node's /run at /host/run")
check(inits and inits[0]["command"] == ["/usr/bin/nshash-cni-install", "state-dir", "/host/run/nshash"], "it runs nshash-cni-install state-dir /host/run/nshash (no shell)")
recs = [x for x in spec["containers"] if x["name"] == "record"]
check(len(recs) == 1, "a record container samples the netns auto sizes from (issue 25: the DaemonSet runs the loop)")
r = recs[0] if recs else {"command": [], "volumeMounts": []}
rcmd = r["command"]
def rarg(name):
    return rcmd[rcmd.index(name) + 1] if name in rcmd[:-1] else None
check(rcmd[:2] == ["/usr/bin/nshash-cni-install", "record"] and rarg("--every") == "60" and "--nshash" not in rcmd,
      "it runs nshash-cni-install record --every 60 (PID 1: no shell; the image's /usr/bin/nshash)")
rm = [m for m in r["volumeMounts"] if m["mountPath"] == rarg("--state-dir")]
check(rarg("--state-dir") == "/run/nshash" and len(rm) == 1 and host(rm[0]["name"]) == "/run/nshash" and
      rm[0].get("mountPropagation") == "HostToContainer" and not rm[0].get("readOnly"),
      "--state-dir is the node's /run/nshash (where the plugin reads the history), HostToContainer (it sees new pins), writable (the history)")
hm = [m for m in r["volumeMounts"] if m["mountPath"] == "/var/lib/nshash"]
check(len(hm) == 1 and host(hm[0]["name"]) == "/var/lib/nshash" and not hm[0].get("readOnly") and
      vols.get(hm[0]["name"], {}).get("hostPath", {}).get("type") == "DirectoryOrCreate",
      "the history's dir is the node's /var/lib/nshash (beside the default state dir: survives a reboot), writable")
rn = [m for m in r["volumeMounts"] if m["mountPath"] == "/run/netns"]
check(len(rn) == 1 and host(rn[0]["name"]) == "/run/netns" and rn[0].get("readOnly") is True and
      rn[0].get("mountPropagation") == "HostToContainer",
      "it sees the runtime's netns pins (the node's /run/netns, read-only, HostToContainer): a netns no process holds yet is not taken for gone")
check(len(r["volumeMounts"]) == 3, "... and it mounts nothing else")
gh = [m for m in g["volumeMounts"] if m["mountPath"] == "/var/lib/nshash"]
check(len(gh) == 1 and hm and gh[0]["name"] == hm[0]["name"] and gh[0].get("readOnly") is True,
      "the node container reads the history the record container writes (/metrics' nshash_auto_entries), read-only")
check(len(g["volumeMounts"]) == 5, "... and it mounts nothing else (state dir, run dir, netns pins twice, history)")
check(spec.get("hostPID") is True and r.get("securityContext", {}).get("privileged") is True and
      r["securityContext"].get("readOnlyRootFilesystem") is True,
      "it enters the pods' netns (privileged, hostPID), read-only root")
print("RECORD " + "\x1f".join(rcmd))
print("ENTRY " + json.dumps(entry))
PY
)
while read -r line; do
	case $line in
	ok\ *) pass "${line#ok }" ;;
	FAIL\ *) fail "${line#FAIL }" ;;
	ENTRY\ *) ENTRY=${line#ENTRY } ;;
	RECORD\ *) IFS=$'\x1f' read -r -a RECORD <<<"${line#RECORD }" ;;
	*) fail "manifest check: $line" ;;
	esac
done <<<"$out"
# ---- the init container's script on a scratch /run: absent, left 0755, a symlink
SR=$(mktemp -d /tmp/nshash-t55-run.XXXXXX)
on_exit "rm -rf '$SR'"
init_sh() { "$INST" state-dir "$SR/nshash" 2>&1; }
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

# (nshash serve, the node container, is tested in 59-k8s-node)
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

# ---- nshash-cni-install: its --help and man page name the same options
opts=$("$INST" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
missing=""
for o in $opts; do grep -qF -- "${o//-/\\-}" "$TOP/docs/man/nshash-cni-install.8" || missing+=" $o"; done
assert_eq "" "$missing" "nshash-cni-install(8) documents every option of --help ($(echo $opts))"
"$INST" frobnicate 2>"$TOP/build/t55.err"
assert_eq 2 $? "an unknown command: status 2"
assert_contains "$(cat "$TOP/build/t55.err")" "frobnicate: no such command (install, uninstall, ready, state-dir PATH, record); see --help" "... saying what there is"
rm -f "$TOP/build/t55.err"
"$INST" ready --watch 3 2>/dev/null
assert_eq 2 $? "--watch with another command than install is refused"

# ---- nshash-cni-install on scratch node dirs
D=$(make_state_dir)
STATE=$(make_state_dir)
# the plugin's STATUS (its validation) reads the node policy: this test's
cni_node_policy "$D/node.json" "$STATE"
ENTRY=$K/nshash-entry.json
node() { # fresh node dirs: bin, net, the pod's run dir
	rm -rf "$D/node" && mkdir -p "$D/node/bin" "$D/node/net" "$D/node/run"
}
inst() { # ARGS...: the installer on the node dirs, its stderr in $D/inst.err (or $ERR)
	"$INST" --cni-bin-dir "$D/node/bin" --cni-net-dir "$D/node/net" --plugin "$CNI_PLUGIN" --entry "${ENT:-$ENTRY}" \
		--run-dir "${RUN:-$D/node/run}" "$@" 2>"${ERR:-$D/inst.err}"
}
# the watcher in the background, its pid in W (killed at exit)
watcher() { # ERRFILE ARGS...
	local e=$1
	shift
	"$INST" --cni-bin-dir "$D/node/bin" --cni-net-dir "$D/node/net" --plugin "$CNI_PLUGIN" --entry "${ENT:-$ENTRY}" \
		--run-dir "$D/node/run" install "$@" 2>"$e" &
	W=$!
	on_exit "kill $W"
}
# SIGTERM to PID, waited for: its status in rc, the time it took in ms
sigterm() {
	local t0
	t0=$(date +%s%N)
	kill -TERM "$1"
	wait "$1"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
}
# every file of the net dir (hidden ones too): name, mode, owner, size, bytes
snap() { (cd "$D/node/net" && for f in $(ls -A | LC_ALL=C sort); do echo "$f $(stat -c '%a %u:%g %s' "$f") $(md5sum <"$f" | cut -c1-32)"; done); }
types() { jq -c '[.plugins[].type]' "$1"; }
NET_D=$D/node/net
cni_test_network 55
BRIDGE_CONF='{"cniVersion":"1.0.0","name":"'$NET'","plugins":[{"type":"bridge","bridge":"'$BR'","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"'$SUBNET'.0/24"}]],"dataDir":"'$D'/ipam"}},{"type":"portmap","capabilities":{"portMappings":true}}]}'

# flannel's shape: its .conflist 0600 of another owner, a loopback .conf
# after it, a hand-written conflist mentioning nshash
node
cat >"$NET_D/10-flannel.conflist" <<'JSON'
{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
JSON
chmod 0600 "$NET_D/10-flannel.conflist" && chown 4321:4322 "$NET_D/10-flannel.conflist"
echo '{"cniVersion":"0.3.1","name":"lo","type":"loopback"}' >"$NET_D/99-loopback.conf"
echo '{"cniVersion":"1.0.0","name":"hand","plugins":[{"type":"bridge"},{"type":"nshash","tcp":1}]}' >"$NET_D/50-hand.conflist"
BEFORE=$(snap)
inst install
assert_eq 0 $? "install (flannel's shape) succeeds ($(cat "$D/inst.err" | tr '\n' ' '))"
cmp -s "$CNI_PLUGIN" "$D/node/bin/nshash" && pass "the binary is installed" || fail "binary not installed"
assert_eq "755" "$(stat -c %a "$D/node/bin/nshash")" "... mode 0755"
assert_eq '["nshash","flannel","portmap"]' "$(types "$NET_D/10-flannel.conflist")" "nshash chained first into the active conflist"
assert_eq "$(jq -c '. + {"chainedBy": "nshash-cni-install"}' "$ENTRY")" "$(jq -c '.plugins[0]' "$NET_D/10-flannel.conflist")" "the entry is the shipped one, as it is, stamped chainedBy (code 102 then names the ConfigMap)"
assert_eq "cbr0 0.3.1" "$(jq -r '"\(.name) \(.cniVersion)"' "$NET_D/10-flannel.conflist")" "name and version kept"
assert_eq "600 4321:4322" "$(stat -c '%a %u:%g' "$NET_D/10-flannel.conflist")" "the chained file keeps its mode 0600 and owner"
assert_eq "$(grep -e 99-loopback -e 50-hand <<<"$BEFORE")" "$(snap | grep -e 99-loopback -e 50-hand)" "the other files are untouched"
assert_contains "$(cat "$D/inst.err")" "chained nshash first into $NET_D/10-flannel.conflist" "it says what it wrote"
assert_eq ".nshash-cni-install.state 10-flannel.conflist 10-flannel.conflist.nshash-orig 50-hand.conflist 99-loopback.conf" \
	"$(ls -A "$NET_D" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" "what it keeps: a record and the original (names libcni ignores)"
assert_eq "$(grep '^10-flannel.conflist ' <<<"$BEFORE" | cut -d' ' -f2-)" "$(snap | grep '^10-flannel.conflist.nshash-orig ' | cut -d' ' -f2-)" \
	"the original's copy: same bytes, mode, owner"
out=$(inst ready)
assert_eq "0" "$?" "ready after install ($out)"
CHAINED=$(snap)
inst install
assert_eq "0 $CHAINED" "$? $(snap)" "a second install (an upgrade's) writes nothing"
assert_not_contains "$(cat "$D/inst.err")" "chained" "... and says nothing was chained"

# ---- the written conflist works: chain ADD with a pod annotation
cp "$NET_D/10-flannel.conflist" "$D/f.conflist"
jq --argjson b "$BRIDGE_CONF" '.name = $b.name | .cniVersion = "1.0.0" | .plugins = [.plugins[0]] + $b.plugins' "$D/f.conflist" >"$D/run.conflist"
export CNI_CACHE_DIR=$D/cache
mkdir -p "$CNI_CACHE_DIR"
cni_pin_netns "$D/pod"
on_exit "umount '$D/pod'"
cni_chain ADD "$D/run.conflist" "$D/pod" pod '{"io.kubernetes.cri.pod-annotations":{"io.nshash.tcp":"16384"}}'
assert_eq "0 16384 1024" "$CNI_RC $(netns_sizes_at "$D/pod")" "ADD through the installed entry: annotation size (tcp) and default (udp)"
cni_chain DEL "$D/run.conflist" "$D/pod" pod
assert_eq 0 "$CNI_RC" "DEL through it"

# ---- the primary rewrites its file: chained again, and uninstall gives back the primary's latest
jq '.plugins[0].delegate.hairpinMode = false' "$NET_D/10-flannel.conflist.nshash-orig" >"$D/new" && chmod 0600 "$D/new" &&
	chown 4321:4322 "$D/new" && mv "$D/new" "$NET_D/10-flannel.conflist"
PRIMARY2=$(snap | grep '^10-flannel.conflist ')
inst install
assert_eq '0 ["nshash","flannel","portmap"] false' "$? $(types "$NET_D/10-flannel.conflist") $(jq '.plugins[1].delegate.hairpinMode' "$NET_D/10-flannel.conflist")" \
	"a rewritten primary is chained again, its change kept"
inst uninstall
assert_eq 0 $? "uninstall ($(tr '\n' ' ' <"$D/inst.err"))"
assert_eq "$PRIMARY2" "$(snap | grep '^10-flannel.conflist ')" "uninstall restores the primary's latest file byte for byte, mode 0600, owner"
assert_eq "$(grep -v '^10-flannel.conflist ' <<<"$BEFORE")" "$(snap | grep -v '^10-flannel.conflist ')" "every other file as it was; no nshash file left"
assert_eq '["bridge","nshash"]' "$(types "$NET_D/50-hand.conflist")" "a hand-written conflist naming nshash is not touched"
[ -x "$D/node/bin/nshash" ] && pass "uninstall keeps the binary (DEL of pods started while chained)" || fail "uninstall removed the binary"
inst uninstall --remove-binary
assert_eq 1 $? "uninstall --remove-binary refuses while a config names nshash"
assert_contains "$(cat "$D/inst.err")" "kept $D/node/bin/nshash: $NET_D/50-hand.conflist still names type nshash" "... naming it"
rm "$NET_D/50-hand.conflist"
inst uninstall --remove-binary
assert_eq "0 absent" "$? $([ -e "$D/node/bin/nshash" ] && echo present || echo absent)" "uninstall --remove-binary removes it then"

# ---- a hand edit of nshash's entry in the chained file (what code 102
# used to suggest): the watcher's next pass puts the shipped entry back, and
# the saved original keeps its own bytes (one line: not the installer's
# formatting), not a reformatted copy
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
ORIG=$(snap | grep '^10-bridge.conflist ' | cut -d' ' -f2-)
inst install
CHAINED=$(snap)
jq '.plugins[0].maxTcp = 262144' "$NET_D/10-bridge.conflist" >"$D/new" && mv "$D/new" "$NET_D/10-bridge.conflist"
inst install
assert_eq "0 $CHAINED" "$? $(snap)" "a hand edit of nshash's entry: the shipped entry back, the original's copy untouched"
assert_eq "$ORIG" "$(snap | grep '^10-bridge.conflist.nshash-orig ' | cut -d' ' -f2-)" "... its bytes, mode and owner as before nshash"
inst uninstall
assert_eq "0 $ORIG" "$? $(snap | grep '^10-bridge.conflist ' | cut -d' ' -f2-)" "... and uninstall restores them byte for byte"

# ---- the file changed by someone else after chaining: only nshash's entry goes
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
inst install
jq '.plugins += [{"type":"bandwidth","capabilities":{"bandwidth":true}}]' "$NET_D/10-bridge.conflist" >"$D/new" && mv "$D/new" "$NET_D/10-bridge.conflist"
inst uninstall
assert_eq '0 ["bridge","portmap","bandwidth"]' "$? $(types "$NET_D/10-bridge.conflist")" "changed since chaining: uninstall removes only nshash's entry"
assert_contains "$(cat "$D/inst.err")" "removed nshash's entry from $NET_D/10-bridge.conflist (rewritten since nshash chained it" "... saying so"
assert_eq "10-bridge.conflist" "$(ls -A "$NET_D")" "... and leaves no nshash file"

# ---- calico's shape; nshash already in it (not first): moved, not duplicated
node
CALICO='{"name":"k8s-pod-network","cniVersion":"0.3.1","plugins":[{"type":"calico","log_level":"info","datastore_type":"kubernetes","ipam":{"type":"calico-ipam"},"policy":{"type":"k8s"},"kubernetes":{"kubeconfig":"/etc/cni/net.d/calico-kubeconfig"}},{"type":"bandwidth","capabilities":{"bandwidth":true}},{"type":"portmap","snat":true,"capabilities":{"portMappings":true}},{"type":"nshash","tcp":1}]}'
echo "$CALICO" >"$NET_D/10-calico.conflist"
echo 'kubeconfig' >"$NET_D/calico-kubeconfig"
BEFORE=$(snap)
inst install
assert_eq '0 ["nshash","calico","bandwidth","portmap"]' "$? $(types "$NET_D/10-calico.conflist")" "calico: nshash first, the misplaced entry moved, once"
assert_eq "/etc/cni/net.d/calico-kubeconfig" "$(jq -r '.plugins[1].kubernetes.kubeconfig' "$NET_D/10-calico.conflist")" "... paths written as they were (no \\/)"
# an upgrade with another entry (a new ConfigMap rolled out): rewritten, the original kept
jq '.tcp = 8192' "$ENTRY" >"$D/entry2.json"
RUN=$D/node/run2 ENT=$D/entry2.json inst install # the new pod's
assert_eq '0 8192 ["nshash","calico","bandwidth","portmap"]' "$? $(jq '.plugins[0].tcp' "$NET_D/10-calico.conflist") $(types "$NET_D/10-calico.conflist")" \
	"a new entry replaces the old one in place"
out=$(inst ready)
assert_eq 1 $? "the old pod's ready fails: plugins[0] is not the entry its installer read"
assert_contains "$out" "is not nshash's entry of $D/node/run/entry.json" "... saying so"
inst uninstall
rc=$?
assert_eq "0 $(grep -v '^10-calico.conflist ' <<<"$BEFORE")" "$rc $(snap | grep -v '^10-calico.conflist ')" \
	"calico: uninstall restores every other file byte for byte, removes what it kept"
assert_eq "$(grep '^10-calico.conflist ' <<<"$BEFORE" | cut -d' ' -f1-3) $(jq -c '.plugins |= map(select(.type != "nshash"))' <<<"$CALICO")" \
	"$(snap | grep '^10-calico.conflist ' | cut -d' ' -f1-3) $(jq -c . "$NET_D/10-calico.conflist")" \
	"... and calico's file, mode and owner as they were, without the nshash entry it had (a backup never names nshash)"

# ---- a single .conf becomes a .conflist libcni picks, and comes back
node
printf '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$NET_D/05-single.conf"
chmod 0640 "$NET_D/05-single.conf"
BEFORE=$(snap)
inst install
assert_eq '0 ["nshash","bridge"]' "$? $(types "$NET_D/05-single.conflist")" ".conf turned into a conflist with nshash first"
assert_eq "single 0.4.0 x0 640" "$(jq -r '"\(.name) \(.cniVersion) \(.plugins[1].bridge)"' "$NET_D/05-single.conflist") $(stat -c %a "$NET_D/05-single.conflist")" \
	"name and version at the list's level, the plugin's keys kept, the .conf's mode"
assert_eq ".nshash-cni-install.state 05-single.conf.nshash-orig 05-single.conflist" "$(ls -A "$NET_D" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" \
	"the .conf moved to a name libcni ignores"
out=$(inst ready)
assert_eq 0 $? "ready on the converted conflist ($out)"
inst install
assert_eq 0 $? "a second install over the converted one"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" ".conf: uninstall puts the original back byte for byte and removes the .conflist"

# .conf uninstall: the .conf is back before its .conflist goes (no moment without a config)
node
printf '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$NET_D/05-single.conf"
inst install
if command -v strace >/dev/null; then
	strace -f -qq -e trace=rename,renameat,renameat2,unlink,unlinkat -o "$D/un.strace" \
		"$INST" --cni-bin-dir "$D/node/bin" --cni-net-dir "$NET_D" --plugin "$CNI_PLUGIN" --run-dir "$D/node/run" uninstall 2>"$D/inst.err"
	assert_eq "0 rename:05-single.conf.nshash-orig unlink:05-single.conflist" \
		"$? $(grep -oE '(rename|unlink)[a-z0-9]*\(.*"[^"]*/05-single\.conf(\.nshash-orig|list)"' "$D/un.strace" | sed -E 's/^(rename|unlink)[a-z0-9]*\(.*\/([^/"]*)"$/\1:\2/' | grep -v '^rename:05-single.conf$' | tr '\n' ' ' | sed 's/ $//')" \
		".conf uninstall: the backup renamed back first, then the .conflist removed"
else
	echo "# strace missing: the order of the uninstall's rename and unlink not checked"
	inst uninstall
fi

# ---- a write that fails after the record was saved: the record as it was
# loaded (else the next pass takes the chained file for the primary's and
# keeps it as "the original")
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
mkdir "$NET_D/.10-bridge.conflist.nshash-tmp" # the write's temporary cannot be made
ENT=$D/entry2.json inst install
assert_eq "1 4096" "$? $(jq '.plugins[0].tcp' "$NET_D/10-bridge.conflist")" "a failed write (its temporary blocked): exit 1, the file as it was"
rmdir "$NET_D/.10-bridge.conflist.nshash-tmp"
ENT=$D/entry2.json inst install
assert_eq "0 8192" "$? $(jq '.plugins[0].tcp' "$NET_D/10-bridge.conflist")" "... the next pass writes the new entry"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "... and uninstall restores the original byte for byte (not a chained copy)"

# ---- a node the old install-cni.sh set up: nshash chained, FILE.nshash-orig, no record
old_script() { # ENTRY-JQ: 10-bridge.conflist chained as the script did it
	node
	echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
	BEFORE=$(snap)
	cp -p "$NET_D/10-bridge.conflist" "$NET_D/10-bridge.conflist.nshash-orig"
	jq --argjson e "$(jq -c "$1" "$ENTRY")" '.plugins = [$e] + .plugins' "$NET_D/10-bridge.conflist" >"$D/new" && cat "$D/new" >"$NET_D/10-bridge.conflist"
}
old_script .
inst install
assert_eq "0 4096" "$? $(jq '.plugins[0].tcp' "$NET_D/10-bridge.conflist")" "the old script's chain, same entry: install succeeds"
assert_contains "$(cat "$D/inst.err")" "chained nshash first into $NET_D/10-bridge.conflist (its original kept for uninstall)" "... rewritten with the stamped entry, the script's copy kept"
old_script '. + {"chainedBy": "nshash-cni-install"}'
inst install
assert_contains "$(cat "$D/inst.err")" "recorded, its original without nshash kept as $NET_D/10-bridge.conflist.nshash-orig" "the old script's chain of today's entry: adopted (recorded, the script's copy kept)"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "... uninstall gives back the original byte for byte, nshash nowhere"
old_script '.tcp = 1'
inst install
assert_eq "0 4096" "$? $(jq '.plugins[0].tcp' "$NET_D/10-bridge.conflist")" "the old script's chain, another entry: rewritten"
assert_eq "$(grep '^10-bridge.conflist ' <<<"$BEFORE" | cut -d' ' -f2-)" "$(snap | grep '^10-bridge.conflist.nshash-orig ' | cut -d' ' -f2-)" "... the script's copy of the original kept as it was"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "... uninstall gives back the original byte for byte"
old_script .
rm "$NET_D/10-bridge.conflist.nshash-orig" # chained by hand: no copy at all
inst install
inst uninstall
assert_eq "0 10-bridge.conflist  $(jq -c . <<<"$BRIDGE_CONF")" "$? $(ls -A "$NET_D") $(grep -lE '"type": *"nshash"' "$NET_D"/*) $(jq -c . "$NET_D/10-bridge.conflist")" \
	"chained with no copy: uninstall leaves the primary's content without nshash, no file naming nshash"
old_script '.tcp = 1'
echo '{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"nshash"}]}' >"$NET_D/10-bridge.conflist.nshash-orig"
SNAP=$(snap)
inst install
assert_eq "1 $SNAP" "$? $(snap)" "a FILE.nshash-orig no record names that is no original (it names nshash): not replaced, nothing written"
assert_contains "$(cat "$D/inst.err")" "$NET_D/10-bridge.conflist.nshash-orig is there and nshash's record" "... saying so"
# the script's converted .conf: NAME.conflist chained, NAME.conf.nshash-orig
node
printf '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$NET_D/05-single.conf"
BEFORE=$(snap)
jq --argjson e "$(jq -c .tcp=1 "$ENTRY")" '{cniVersion, name, plugins: [$e, del(.cniVersion, .name)]}' "$NET_D/05-single.conf" >"$NET_D/05-single.conflist"
mv "$NET_D/05-single.conf" "$NET_D/05-single.conf.nshash-orig"
inst install
assert_eq "0 4096" "$? $(jq '.plugins[0].tcp' "$NET_D/05-single.conflist")" "the old script's converted .conf: chained with the entry"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "... uninstall puts the .conf back byte for byte, no .conflist"

# ---- a .conf nshash converted, then the primary writes its own NAME.conflist
node
printf '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$NET_D/05-single.conf"
inst install
echo "$BRIDGE_CONF" >"$D/new" && mv "$D/new" "$NET_D/05-single.conflist"
inst uninstall
assert_eq "0 05-single.conflist $BRIDGE_CONF" "$? $(ls -A "$NET_D" | tr '\n' ' ')$(cat "$NET_D/05-single.conflist")" \
	"the primary's own .conflist where nshash had made one: uninstall keeps it, the stale .conf not brought back"
node
printf '{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}' >"$NET_D/05-single.conf"
inst install
echo "$BRIDGE_CONF" >"$D/new" && mv "$D/new" "$NET_D/05-single.conflist"
inst install
assert_eq '0 ["nshash","bridge","portmap"] .nshash-cni-install.state 05-single.conflist 05-single.conflist.nshash-orig' \
	"$? $(types "$NET_D/05-single.conflist") $(ls -A "$NET_D" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" \
	"... chained again: a list of its own with its own copy, the .conf's old copy gone"
inst uninstall
assert_eq "0 05-single.conflist $BRIDGE_CONF" "$? $(ls -A "$NET_D" | tr '\n' ' ')$(cat "$NET_D/05-single.conflist")" \
	"... uninstall gives back the primary's .conflist, no .conf"

# ---- a file name with a newline: logged escaped, never a line of its own
node
NL_NAME=$'10-a\nnshash-cni-install: forged.conflist'
echo "$BRIDGE_CONF" >"$NET_D/$NL_NAME"
BEFORE=$(snap)
inst install
assert_eq "0 0" "$? $(grep -c '^nshash-cni-install: forged' "$D/inst.err")" "a file name with a newline: chained, no forged log line"
assert_contains "$(cat "$D/inst.err")" 'chained nshash first into '"$NET_D"'/10-a\x0anshash-cni-install: forged.conflist' "... the newline shown as \\x0a"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "... and uninstalled"

# ---- the plugin runs with the signals the runtime gives it, not the watcher's
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
# perl: it keeps the signal mask and dispositions it is given (a shell does not)
command -v perl >/dev/null || echo "# perl missing: the plugin's signals not checked"
cat >"$D/fake-plugin" <<PL
#!/usr/bin/perl
if ((\$ENV{CNI_COMMAND} // "") eq "VERSION") { print '{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}'; exit 0; }
open(my \$in, "<", "/proc/self/status") or exit 1;
open(my \$out, ">", "$D/fake-sig.new") or exit 1;
while (<\$in>) { print \$out \$_ if /^Sig(Blk|Ign):/; }
close(\$out);
rename("$D/fake-sig.new", "$D/fake-sig");
exit 0;
PL
chmod 0755 "$D/fake-plugin"
rm -f "$D/fake-sig"
CNI_PLUGIN=$D/fake-plugin watcher "$D/inst.err" --watch 30
for _ in $(seq 50); do [ -s "$D/fake-sig" ] && break; sleep 0.1; done
kill -TERM $W
wait $W
blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$D/fake-sig") ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "$D/fake-sig")
command -v perl >/dev/null && assert_eq "0 0" "$(((0x${blk:-ffff} & 0x4002) != 0)) $(((0x${ign:-ffff} & 0x1000) != 0))" \
	"the watcher's STATUS exec: SIGTERM/SIGINT not blocked, SIGPIPE not ignored (SigBlk ${blk:-?}, SigIgn ${ign:-?})"

# ---- several files: the first by name is the one (a .json here)
node
echo '{"cniVersion":"1.0.0","name":"first","type":"ptp"}' >"$NET_D/00-first.json"
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
echo "$BRIDGE_CONF" >"$NET_D/20-other.conflist"
BEFORE=$(snap)
inst install
assert_eq '0 ["nshash","ptp"]' "$? $(types "$NET_D/00-first.conflist")" "several files: the first by name (00-first.json) is chained"
assert_eq "$(grep -e '^10-bridge' -e '^20-other' <<<"$BEFORE")" "$(snap | grep -e '^10-bridge' -e '^20-other')" "... the others untouched"
inst uninstall
assert_eq "0 $BEFORE" "$? $(snap)" "several files: uninstall restores them all"
# CNI_CONF_NAME picks another (a new install: the old pod's uninstall marker gone with it)
rm "$D/node/run/uninstalled"
CNI_CONF_NAME=10-bridge.conflist inst install
assert_eq '0 ["nshash","bridge","portmap"] ["bridge","portmap"]' "$? $(types "$NET_D/10-bridge.conflist") $(types "$NET_D/20-other.conflist")" "CNI_CONF_NAME names the file"
inst uninstall

# ---- refusals: nothing written, ready says why
refused() { # DESCRIPTION MESSAGE-FRAGMENT: the last install refused, files as $BEFORE
	local rc=$1
	assert_eq "1 $BEFORE" "$rc $(snap)" "$2: refused, every file as it was"
	assert_contains "$(cat "$D/inst.err")" "$3" "... saying why"
	[ -e "$D/node/run/uninstalled" ] || { out=$(inst ready); assert_eq 1 $? "... ready fails"; assert_contains "$out" "$3" "... with the reason"; }
}
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
echo '{"type":"nshash","tcp":"4096"}' >"$D/bad-entry.json"
ENT=$D/bad-entry.json inst install
ENT=$D/bad-entry.json refused $? 'an entry with "tcp": "4096"' 'network config key "tcp": "4096" is a string; expected a JSON integer'
echo '{"type":"nshash","tcp":4096,"onFailure":"maybe"}' >"$D/bad-entry.json"
ENT=$D/bad-entry.json inst install
ENT=$D/bad-entry.json refused $? 'an entry with "onFailure": "maybe"' '"onFailure"'
echo '{"type":"bridge"}' >"$D/bad-entry.json"
ENT=$D/bad-entry.json inst install
ENT=$D/bad-entry.json refused $? 'an entry of another type' "not a JSON object with \"type\": \"nshash\" (fix the ConfigMap)"
echo '{"type":"nshash",' >"$D/bad-entry.json"
ENT=$D/bad-entry.json inst install
ENT=$D/bad-entry.json refused $? 'an entry that is not JSON' "nshash's entry: $D/bad-entry.json: malformed JSON"
echo '{"cniVersion":"1.0.0","name":"x","plugins":[]}' >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
refused $? 'a primary with "plugins": []' "its \"plugins\" list is empty (nshash never becomes a network of its own)"
echo '{"cniVersion":"1.0.0","name":"x"}' >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
refused $? 'a conflist without plugins' 'it has no "plugins" list'
rm "$NET_D/10-bridge.conflist"
echo '{"cniVersion":"1.0.0","name":"x","bridge":"b"}' >"$NET_D/10-bridge.conf"
BEFORE=$(snap)
inst install
refused $? 'a .conf without "type"' 'a single-plugin config without a "type" string'
rm "$NET_D/10-bridge.conf"
echo '{"cniVersion":"1.0.0", broken' >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
refused $? 'a primary that is not JSON' "$NET_D/10-bridge.conflist: malformed JSON at line 1"
echo '{"cniVersion":"9.9.9","name":"x","plugins":[{"type":"bridge"}]}' >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
refused $? 'a cniVersion the plugin does not speak' 'its cniVersion 9.9.9 is not one the plugin speaks'
rm "$NET_D/10-bridge.conflist"
BEFORE=$(snap)
inst install
refused $? 'no CNI config yet' "no CNI config in $NET_D yet"
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
"$INST" --cni-bin-dir "$D/node/bin" --cni-net-dir "$NET_D" --plugin /bin/true --run-dir "$D/node/run" install 2>"$D/inst.err"
assert_eq "1 $BEFORE " "$? $(snap) $(ls -A "$D/node/bin")" "a binary that is not the plugin: refused before any change"
assert_contains "$(cat "$D/inst.err")" "/bin/true does not answer CNI VERSION with supportedVersions" "... saying so"

# ---- a read-only CNI dir: an error said once, no lie
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
mount --bind "$NET_D" "$NET_D" && mount -o remount,bind,ro "$NET_D"
on_exit "umount '$NET_D'"
watcher "$D/inst.err" --watch 1 --status-file "$D/node/run/install.prom"
for _ in $(seq 50); do [ "$(grep -c 'Read-only file system' "$D/inst.err")" -ge 1 ] && break; sleep 0.1; done
sleep 2.5 # two more polls
kill -TERM $W
wait $W
assert_eq "0 1 0 $BEFORE" "$? $(grep -c 'Read-only file system' "$D/inst.err") $(grep -c "^nshash-cni-install: chained" "$D/inst.err") $(snap)" \
	"read-only dir, watch: the error logged once over three polls, never 'chained', nothing changed"
assert_eq "nshash_cni_installed 1 nshash_cni_ready 0 nshash_cni_chain_writes_total 0" \
	"$(grep -E '^nshash_cni_(installed|ready|chain_writes_total) ' "$D/node/run/install.prom" | tr '\n' ' ' | sed 's/ $//')" "... the status file says not ready"
umount "$NET_D"

# ---- watch mode: inotify re-chains a rewritten primary; a half-written one is retried, never fatal
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
PROM=$D/node/run/install.prom
cp "$ENTRY" "$D/live-entry.json"
ENT=$D/live-entry.json watcher "$D/inst.err" --watch 30 --status-file "$PROM"
first() { jq -r '.plugins[0].type' "$NET_D/10-bridge.conflist" 2>/dev/null; }
wait_first() { for _ in $(seq 50); do [ "$(first)" = "$1" ] && return 0; sleep 0.1; done; return 1; }
wait_first nshash
echo "$BRIDGE_CONF" >"$D/new" && mv "$D/new" "$NET_D/10-bridge.conflist"
wait_first nshash
assert_eq "nshash" "$(first)" "watch: a primary's rewrite (rename) gets nshash put back (inotify, poll 30 s)"
printf '{"cniVersion":"1.0.0","name":"%s","plugins":[{"type":"bri' "$NET" >"$NET_D/10-bridge.conflist" # truncate + write, half done
for _ in $(seq 50); do grep -q "not touching $NET_D/10-bridge.conflist" "$D/inst.err" && break; sleep 0.1; done
kill -0 $W 2>/dev/null && pass "a half-written primary: the watcher keeps running" || fail "the watcher exited on a half-written primary"
assert_contains "$(cat "$D/inst.err")" "refused: $NET_D/10-bridge.conflist: malformed JSON" "... it says so once"
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist" # the rest of the write
wait_first nshash
assert_eq "nshash" "$(first)" "... and chains it once it is whole"
for _ in $(seq 20); do grep -q '^nshash_cni_chain_writes_total 3$' "$PROM" && break; sleep 0.1; done
assert_eq "3 1 6" "$(grep -c '^nshash-cni-install: chained' "$D/inst.err") $(grep -c 'malformed JSON' "$D/inst.err") $(wc -l <"$D/inst.err")" \
	"'chained' once per write (3), the refusal once, 6 lines in all (+ installed, watching): none for the passes our own writes wake"
assert_eq "nshash_cni_installed 1|nshash_cni_ready 1|nshash_cni_chain_writes_total 3|nshash_cni_config_refused_total 1" \
	"$(grep -v '^#' "$PROM" | tr '\n' '|' | sed 's/|$//')" "the status file: installed, ready, 3 writes, 1 refusal"
assert_eq 4 "$(grep -c '^# TYPE nshash_cni_' "$PROM")" "... with # TYPE lines"
# the status file is in the watched run dir: its own rewrite wakes no pass
# (each pass takes the dir's flock and execs the plugin's STATUS)
if command -v strace >/dev/null; then
	sleep 1 # the one pass our last write wakes (100 ms settle + a pass) is over
	timeout -s INT 3 strace -f -qq -e trace=flock,execve -o "$D/idle.strace" -p $W 2>/dev/null
	rc=$? # 124: strace was attached the 3 s (timed out), not refused
	assert_eq "124 0" "$rc $(grep -cE 'flock\(|execve\(' "$D/idle.strace")" "watch: 3 s with nothing changed, the status file in the run dir: no pass (no flock, no exec)"
	grep -E 'flock\(|execve\(' "$D/idle.strace" | head -4
else
	echo "# strace missing: the idle watcher's passes not counted"
fi
# the ConfigMap edited under a running watcher: not taken (it rides the next pod), ready still true
jq '.tcp = 8192' "$ENTRY" >"$D/live-entry.json"
touch "$NET_D/poke.txt" && rm "$NET_D/poke.txt" # a pass
sleep 0.5
out=$(ENT=$D/live-entry.json inst ready)
assert_eq "0 4096" "$? $(jq '.plugins[0].tcp' "$NET_D/10-bridge.conflist")" "an entry edited after start is not taken; ready checks the one the installer read ($out)"
# the binary removed under a running watcher: put back before anything else
rm "$D/node/bin/nshash"
for _ in $(seq 50); do cmp -s "$CNI_PLUGIN" "$D/node/bin/nshash" && break; sleep 0.1; done
cmp -s "$CNI_PLUGIN" "$D/node/bin/nshash" && pass "watch: a removed binary is put back" || fail "watch: the binary was not put back"
CHAINED=$(snap)
sigterm $W
echo "# SIGTERM to exit: $ms ms"
assert_eq "0 $CHAINED" "$rc $(snap)" "SIGTERM: exit 0, nshash left chained (an upgrade's next installer takes over)"
[ "$ms" -lt 5000 ] && pass "SIGTERM: exited in $ms ms, inside the manifest's grace period (5 s)" || fail "SIGTERM took $ms ms"
assert_contains "$(cat "$D/inst.err")" "stopping; nshash stays chained" "... saying so"

# ---- uninstall with a watcher running: it stops chaining first
node
echo "$BRIDGE_CONF" >"$NET_D/10-bridge.conflist"
BEFORE=$(snap)
watcher "$D/watch.err" --watch 30
wait_first nshash
"$INST" --cni-bin-dir "$D/node/bin" --cni-net-dir "$NET_D" --plugin "$CNI_PLUGIN" --run-dir "$D/node/run" uninstall 2>"$D/un.err"
assert_eq "0 $BEFORE" "$? $(snap)" "uninstall while the watcher runs: every file as before"
echo "$BRIDGE_CONF" >"$D/new" && mv "$D/new" "$NET_D/10-bridge.conflist" # a primary's rewrite wakes the watcher
sleep 1
assert_eq "bridge" "$(first)" "... the watcher does not chain again"
assert_contains "$(cat "$D/watch.err")" "uninstall\` was run here: not chaining any more" "... and says why"
out=$(inst ready)
assert_eq 1 $? "... ready fails"
assert_contains "$out" "not ready: uninstalled" "... saying uninstalled"
kill -TERM $W
wait $W

# ---- the record container's command (the manifest's, its paths mapped to
# this test's: the installer, the state dir, the CLI) samples a pod the
# plugin sized with auto into the history the plugin reads
RS=$STATE
AUTO='{"cniVersion":"1.0.0","name":"k8s","type":"nshash","tcp":"auto","udp":"auto"}'
cni_pin_netns "$D/apod"
on_exit "umount '$D/apod' 2>/dev/null"
cni_call ADD "$D/apod" "$AUTO" "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-7d4b9c8f6d-x2k9p"
assert_eq "0 1" "$CNI_RC $(ls "$RS/workloads" 2>/dev/null | wc -l)" "an ADD with auto marks the pod's netns ($CNI_ERR)"
nsenter --net="$D/apod" ip link set lo up
hold_sockets 300 100 "$D/held" --net="$D/apod"
holder=$HOLDER
assert_eq "ready" "$(cat "$D/held" 2>/dev/null)" "the pod holds 300 bound UDP sockets and 100 loopback TCP connections"
rec_cmd() { # EVERY: the manifest's record command, mapped; --every EVERY unless ""
	local a=("${RECORD[@]}") i
	a[0]=$INST
	for ((i = 1; i < ${#a[@]} - 1; i++)); do
		[ "${a[i]}" = --state-dir ] && a[i + 1]=$RS
		[ "${a[i]}" = --every ] && [ -n "$1" ] && a[i + 1]=$1
	done
	printf '%s\n' "${a[@]}" --nshash "$BUILD/nshash"
}
hist() { "$BUILD/nshash" --state-dir "$RS" history --json 2>/dev/null | jq -r '.[] | select(.workload == "cni:shop:pod=web") | "\(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"'; }
runs() { grep -c '^sampled ' "$D/rec.out"; }
wait_runs() { for _ in $(seq 200); do [ "$(runs)" -ge "$1" ] && break; sleep 0.05; done; }
# the test's knob: a run every second
rm -f "$RS/history"
mapfile -t RC < <(rec_cmd 1)
"${RC[@]}" >"$D/rec.out" 2>"$D/rec.err" &
R=$!
on_exit "kill $R 2>/dev/null"
wait_runs 1
assert_eq "200 300 512 1024" "$(hist)" "record loop (--every 1): the workload's peaks in STATE/history (200 TCP in the ehash, 300 UDP), auto 512/1024"
# a run that fails: a directory where the history goes (record cannot
# write it); logged, the loop goes on
rm -f "$RS/history" && mkdir "$RS/history"
for _ in $(seq 100); do grep -q "exited with status" "$D/rec.err" && break; sleep 0.05; done
rmdir "$RS/history"
n=$(runs)
assert_contains "$(cat "$D/rec.err")" "record: $BUILD/nshash --state-dir $RS record exited with status 1; again in 1 s" "a failed run is logged with its status"
wait_runs $((n + 1))
[ "$(runs)" -gt "$n" ] && kill -0 $R 2>/dev/null && [ "$(hist)" = "200 300 512 1024" ] && pass "... and the loop goes on: the next run samples again into a new history ($(runs) runs)" || fail "the loop did not go on: $(cat "$D/rec.err")"
kill -TERM $R
wait $R
assert_eq 0 $? "SIGTERM: the loop exits 0"
assert_contains "$(cat "$D/rec.err")" "signal 15: stopping" "... by its own handler (PID 1)"
# the manifest's own interval: a run at start, then 60 s to the next
rm -f "$RS/history"
mapfile -t RC < <(rec_cmd "")
assert_eq "--every 60" "$(printf '%s\n' "${RC[@]}" | grep -A1 -x -- --every | tr '\n' ' ' | sed 's/ $//')" "the manifest's command as it is: --every 60"
"${RC[@]}" >"$D/rec.out" 2>"$D/rec.err" &
R=$!
on_exit "kill $R 2>/dev/null"
wait_runs 1
assert_eq "200 300 512 1024" "$(hist)" "record loop (--every 60): the first run at start writes the history"
sigterm $R
echo "# record loop: SIGTERM to exit: $ms ms"
assert_eq "0 1" "$rc $(runs)" "SIGTERM while it waits: exit 0, after one run"
[ "$ms" -lt 5000 ] && pass "... in $ms ms, inside the manifest's grace period (5 s)" || fail "record loop SIGTERM took $ms ms"
"$INST" record --every 0 2>"$D/rec.err"
assert_eq "2" "$?" "record --every 0 is refused"
assert_contains "$(cat "$D/rec.err")" "--every 0: give whole seconds from 1 to 86400" "... saying what to give"
"$INST" ready --every 5 2>/dev/null
assert_eq 2 $? "--every with another command than record is refused"
kill $holder
wait $holder 2>/dev/null
cni_call DEL "$D/apod" "$AUTO"
umount "$D/apod"

# ---- through containerd 1.6's CRI (the one kubelet talks to): install ->
# pods -> upgrade -> uninstall -> the pods made while chained stopped and removed
. "$TOP/tests/lib/engines.sh"
cni_require_cri
C=$D/containerd
cni_containerd_cri_start "$C" "" NSHASH_POLICY="$NSHASH_POLICY" || cannot_run "containerd with CRI did not start"
cp /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback "$C/cni-bin/"
echo "$BRIDGE_CONF" | jq . >"$C/net.d/10-$NET.conflist"
chmod 0600 "$C/net.d/10-$NET.conflist"
csnap() { (cd "$C/net.d" && for f in $(ls -A | LC_ALL=C sort); do echo "$f $(stat -c '%a %u:%g %s' "$f") $(md5sum <"$f" | cut -c1-32)"; done; ls "$C/cni-bin" | tr '\n' ' '); }
CBEFORE=$(csnap)
NETNS_DIR=$C/state/io.containerd.grpc.v1.cri/netns
sandbox_pid() { ctr -n k8s.io task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $2}'; }
cwatch() { # RUN-DIR ERRFILE: a DaemonSet pod's installer on containerd's dirs (pid in W)
	mkdir -p "$1"
	"$INST" --cni-bin-dir "$C/cni-bin" --cni-net-dir "$C/net.d" --plugin "$CNI_PLUGIN" --entry "$ENTRY" --run-dir "$1" \
		install --watch 30 2>"$2" &
	W=$!
	on_exit "kill $W"
}
# containerd's CRI reloads its CNI config on a change of the dir (fsnotify);
# its log shows no reload, so a change is given a second to land
cri_reloaded() { sleep 1; }
cwatch "$D/pod1-run" "$D/pod1.err"
for _ in $(seq 50); do [ "$(jq -r '.plugins[0].type' "$C/net.d/10-$NET.conflist" 2>/dev/null)" = nshash ] && break; sleep 0.1; done
assert_eq "nshash" "$(jq -r '.plugins[0].type' "$C/net.d/10-$NET.conflist")" "CRI: the installer chained nshash into containerd's conflist"
cri_reloaded
A=$(cni_cri_runp "$D/err" pod-a uid-a default io.nshash.tcp=16384)
[ -n "$A" ] && pass "CRI: RunPodSandbox while chained" || fail "RunPodSandbox failed: $(cat "$D/err")"
assert_eq "16384 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$A")" 2>/dev/null)" "CRI: the pod is sized (annotation tcp, entry's udp)"
# upgrade: the old pod gets SIGTERM, the new one starts
CHAINED=$(csnap)
kill -TERM $W
wait $W
assert_eq "0 $CHAINED" "$? $(csnap)" "upgrade: the old installer's SIGTERM leaves every file as it was"
cwatch "$D/pod2-run" "$D/pod2.err"
for _ in $(seq 50); do grep -q "nothing to write" "$D/pod2.err" && break; sleep 0.1; done
assert_eq "$CHAINED" "$(csnap)" "upgrade: the new installer finds nshash chained and writes nothing"
assert_contains "$(cat "$D/pod2.err")" "nshash is first in $C/net.d/10-$NET.conflist (nothing to write)" "... saying so"
B=$(cni_cri_runp "$D/err" pod-b uid-b default)
[ -n "$B" ] && pass "CRI: RunPodSandbox after the upgrade" || fail "RunPodSandbox failed: $(cat "$D/err")"
assert_eq "4096 1024" "$(netns_sizes_of_pid "$(sandbox_pid "$B")" 2>/dev/null)" "CRI: sized by the entry's defaults"
# removal: uninstall (kubectl exec in the running pod), then the pods go
"$INST" --cni-bin-dir "$C/cni-bin" --cni-net-dir "$C/net.d" --plugin "$CNI_PLUGIN" --run-dir "$D/pod2-run" uninstall 2>"$D/un.err"
assert_eq "0 $(sed 's/loopback portmap/loopback nshash portmap/' <<<"$CBEFORE")" "$? $(csnap)" \
	"uninstall: containerd's conflist byte for byte as before (mode 0600), the binary kept"
cri_reloaded
"${CRI[@]}" "$CRI_SOCK" stopp "$A" 2>"$D/err" && "${CRI[@]}" "$CRI_SOCK" rmp "$A" 2>>"$D/err"
assert_eq "0" "$?" "CRI: a pod made while chained is stopped and removed after uninstall ($(cat "$D/err"))"
"$INST" --cni-bin-dir "$C/cni-bin" --cni-net-dir "$C/net.d" --run-dir "$D/pod2-run" uninstall --remove-binary 2>"$D/un.err"
assert_eq "0 $CBEFORE" "$? $(csnap)" "uninstall --remove-binary: no nshash file left in containerd's dirs"
# containerd 1.6 tears a pod's network down with the conflist it has loaded
# now (go-cni), not the one the pod was made with: no nshash call for DEL
"${CRI[@]}" "$CRI_SOCK" stopp "$B" 2>"$D/err" && "${CRI[@]}" "$CRI_SOCK" rmp "$B" 2>>"$D/err"
assert_eq "0" "$?" "CRI: a pod made while chained is stopped and removed with the binary gone too ($(cat "$D/err"))"
P=$(cni_cri_runp "$D/err" pod-c uid-c default io.nshash.tcp=16384)
[ -n "$P" ] && pass "CRI: a pod after removal starts (no nshash in the chain)" || fail "RunPodSandbox failed: $(cat "$D/err")"
assert_contains "$(nsenter -t "$(sandbox_pid "$P")" -n ip -4 -o addr show dev eth0 2>/dev/null)" "$SUBNET." "... with its network"
"${CRI[@]}" "$CRI_SOCK" stopp "$P" && "${CRI[@]}" "$CRI_SOCK" rmp "$P"
assert_eq "0 0 0" "$(ctr -n k8s.io task ls -q | wc -l) $(ctr -n k8s.io containers ls -q | wc -l) $(count_pins_under "$NETNS_DIR/")" "CRI: no sandbox, container or netns pin left"
grep -q "nshash" "$C/containerd.log" && echo "# containerd's log on nshash: $(grep -c nshash "$C/containerd.log") line(s)"
assert_eq "" "$(grep 'failed to find plugin "nshash"' "$C/containerd.log")" "containerd never missed the nshash binary"
kill -TERM $W
wait $W
assert_host_untouched
