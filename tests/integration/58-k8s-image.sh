#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The DaemonSet's image for real: `make image` builds it FROM scratch from
# this tree's static binaries (nothing pulled), and it runs under podman
# (--pull=never) with the manifest's command, environment and security
# settings (read-only root, every capability dropped but CHOWN,
# DAC_OVERRIDE, FOWNER, uid 0) against scratch node dirs bind-mounted where
# the manifest mounts the node's: it chains, `ready` passes through
# `podman exec`, the status file is written, `uninstall` through exec
# restores the node's file byte for byte, SIGTERM stops it promptly; the
# node container (nshash serve) beside it serves the installer's status and
# nshash's metrics, answers its liveness probe and stops on SIGTERM; the
# record container samples a pod sized with auto into the history and stops
# on SIGTERM; the state-dir init container makes the state dir 0700 without a shell.
# Private podman storage; the image is removed with it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cni.sh"
. "$(dirname "$0")/../lib/engines.sh"
test_needs root podman
python3 -c 'import yaml' 2>/dev/null || cannot_run "python3-yaml missing"
K=$TOP/packaging/kubernetes
D=$(make_state_dir)
engines_podman_setup "$D/podman" || cannot_run "podman setup failed"
VERSION=$(make -s -C "$TOP" --no-print-directory --eval 'print-version: ; @echo $(VERSION)' print-version)
IMG=localhost/nshash-cni-t58
t0=$(date +%s%N)
make -s -C "$TOP" --no-print-directory image IMAGE=$IMG >"$D/build.log" 2>&1
rc=$?
echo "# make image: $((($(date +%s%N) - t0) / 1000000)) ms"
assert_eq 0 $rc "make image builds offline ($(tail -3 "$D/build.log" | tr '\n' ' '))"
assert_eq "$IMG:$VERSION" "$(podman images --format '{{.Repository}}:{{.Tag}}' "$IMG")" "tagged with the version ($VERSION)"
SIZE=$(podman image inspect -f '{{.Size}}' "$IMG:$VERSION")
echo "# image size: $SIZE bytes"
assert_eq 1 "$(podman image inspect -f '{{len .RootFS.Layers}}' "$IMG:$VERSION" | awk '{print ($1 <= 4)}')" "a few layers, FROM scratch"
assert_eq "nshash $VERSION" "$(podman run --rm --pull=never --entrypoint /usr/bin/nshash "$IMG:$VERSION" --version 2>&1 | head -1 | grep -oE "^nshash [0-9.]+")" \
	"the image's CLI runs (static) and is this version"
podman run --rm --pull=never --entrypoint /bin/sh "$IMG:$VERSION" -c true >/dev/null 2>&1
assert_eq 125 "$(($? >= 125 ? 125 : $?))" "no shell in the image"

# the manifest's install-cni container, as podman arguments
mapfile -t SPEC < <(python3 - "$K/nshash-cni.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
spec = ds["spec"]["template"]["spec"]
c = [x for x in spec["containers"] if x["name"] == "install-cni"][0]
sc = c["securityContext"]
print("CMD " + "\x1f".join(c["command"]))
print("ENV " + "\x1f".join("%s=%s" % (e["name"], e["value"]) for e in c["env"]))
print("SEC " + "\x1f".join(
    (["--read-only"] if sc.get("readOnlyRootFilesystem") else []) +
    (["--cap-drop=all"] if sc["capabilities"]["drop"] == ["ALL"] else []) +
    ["--cap-add=" + ",".join(sc["capabilities"]["add"]), "--user=%d" % sc["runAsUser"]] +
    (["--security-opt=no-new-privileges"] if sc.get("allowPrivilegeEscalation") is False else [])))
print("MNT " + "\x1f".join(m["mountPath"] for m in c["volumeMounts"]))
print("READY " + "\x1f".join(c["readinessProbe"]["exec"]["command"]))
init = [x for x in spec["initContainers"] if x["name"] == "state-dir"][0]
print("INIT " + "\x1f".join(init["command"]))
print("GRACE %d" % spec["terminationGracePeriodSeconds"])
n = [x for x in spec["containers"] if x["name"] == "node"][0]
nsc = n["securityContext"]
print("NCMD " + "\x1f".join(n["command"]))
print("NSEC " + "\x1f".join(
    (["--read-only"] if nsc.get("readOnlyRootFilesystem") else []) +
    (["--privileged"] if nsc.get("privileged") else []) + ["--user=%d" % nsc["runAsUser"]] +
    (["--pid=host"] if spec.get("hostPID") else [])))
print("NMNT " + "\x1f".join("%s:%s:%s" % (m["mountPath"], "ro" if m.get("readOnly") else "rw", m.get("mountPropagation", "None"))
                            for m in n["volumeMounts"]))
print("NLIVE %s %s" % (n["livenessProbe"]["httpGet"]["path"], n["livenessProbe"]["httpGet"]["port"]))
r = [x for x in spec["containers"] if x["name"] == "record"][0]
rsc = r["securityContext"]
print("RCMD " + "\x1f".join(r["command"]))
print("RSEC " + "\x1f".join(
    (["--read-only"] if rsc.get("readOnlyRootFilesystem") else []) +
    (["--privileged"] if rsc.get("privileged") else []) + ["--user=%d" % rsc["runAsUser"]] +
    (["--pid=host"] if spec.get("hostPID") else [])))
print("RMNT " + "\x1f".join("%s:%s:%s" % (m["mountPath"], "ro" if m.get("readOnly") else "rw", m.get("mountPropagation", "None"))
                            for m in r["volumeMounts"]))
PY
)
field() { local l; for l in "${SPEC[@]}"; do [ "${l%% *}" = "$1" ] && printf '%s' "${l#* }"; done; }
IFS=$'\x1f' read -r -a CMD <<<"$(field CMD)"
IFS=$'\x1f' read -r -a ENVS <<<"$(field ENV)"
IFS=$'\x1f' read -r -a SEC <<<"$(field SEC)"
IFS=$'\x1f' read -r -a READY <<<"$(field READY)"
IFS=$'\x1f' read -r -a INIT <<<"$(field INIT)"
GRACE=$(field GRACE)
IFS=$'\x1f' read -r -a NCMD <<<"$(field NCMD)"
IFS=$'\x1f' read -r -a NSEC <<<"$(field NSEC)"
read -r LIVE_PATH LIVE_PORT <<<"$(field NLIVE)"
IFS=$'\x1f' read -r -a RCMD <<<"$(field RCMD)"
IFS=$'\x1f' read -r -a RSEC <<<"$(field RSEC)"
assert_eq "/host/opt/cni/bin /host/etc/cni/net.d /etc/nshash-cni /run/nshash-cni" "$(field MNT | tr '\037' ' ')" "the manifest's mounts (mapped here)"
ENV_ARGS=()
for e in "${ENVS[@]}"; do ENV_ARGS+=(-e "$e"); done

# scratch node dirs where the manifest mounts the node's
N=$D/node
mkdir -p "$N/bin" "$N/net" "$N/run" "$N/entry" "$N/hostrun"
cp "$K/nshash-entry.json" "$N/entry/"
cat >"$N/net/10-flannel.conflist" <<'JSON'
{"name": "cbr0", "cniVersion": "0.3.1",
 "plugins": [{"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}},
             {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
chmod 0600 "$N/net/10-flannel.conflist" && chown 4321:4321 "$N/net/10-flannel.conflist"
snap() { (cd "$N/net" && for f in $(ls -A | LC_ALL=C sort); do echo "$f $(stat -c '%a %u:%g' "$f") $(md5sum <"$f" | cut -c1-32)"; done); }
BEFORE=$(snap)
MOUNTS=(-v "$N/bin:/host/opt/cni/bin" -v "$N/net:/host/etc/cni/net.d" -v "$N/entry:/etc/nshash-cni:ro" -v "$N/run:/run/nshash-cni")
NAME=nshash-t58-$$
podman run -d --pull=never --name "$NAME" --network none "${SEC[@]}" "${ENV_ARGS[@]}" "${MOUNTS[@]}" \
	--entrypoint "${CMD[0]}" "$IMG:$VERSION" "${CMD[@]:1}" >/dev/null 2>"$D/run.err"
assert_eq 0 $? "the install container starts with the manifest's settings ($(cat "$D/run.err"))"
on_exit "podman rm -f -t 0 $NAME"
for _ in $(seq 50); do [ "$(jq -r '.plugins[0].type' "$N/net/10-flannel.conflist" 2>/dev/null)" = nshash ] && break; sleep 0.1; done
assert_eq '["nshash","flannel","portmap"]' "$(jq -c '[.plugins[].type]' "$N/net/10-flannel.conflist")" "it chains nshash first into the node's conflist"
assert_eq "600 4321:4321" "$(stat -c '%a %u:%g' "$N/net/10-flannel.conflist")" "... keeping its mode and owner (CAP_CHOWN, CAP_FOWNER)"
cmp -s "$TOP/build/cni/nshash" "$N/bin/nshash" && pass "the plugin is in the node's bin dir" || fail "plugin not installed"
out=$(podman exec "$NAME" "${READY[@]}" 2>&1)
assert_eq 0 $? "the readiness probe (podman exec ${READY[*]}) passes ($out)"
LOG=$(podman logs "$NAME" 2>&1)
assert_contains "$LOG" "chained nshash first into /host/etc/cni/net.d/10-flannel.conflist" "the log says what it wrote"
assert_contains "$LOG" "missing CAP_SYS_ADMIN" "... and that the plugin's STATUS could not probe from this container (the config is valid)"
for _ in $(seq 20); do [ -s "$N/run/install.prom" ] && break; sleep 0.1; done
assert_eq "nshash_cni_installed 1 nshash_cni_ready 1 nshash_cni_chain_writes_total 1 nshash_cni_config_refused_total 0" \
	"$(grep -v '^#' "$N/run/install.prom" | tr '\n' ' ' | sed 's/ $//')" "the status file in the run dir (emptyDir)"

# the node container beside it, as the manifest runs it: its command as it
# is (127.0.0.1:9490: in a netns of this test's, not the machine's), its
# security settings, the state dir (a scratch one) and the emptyDir the
# installer writes (read-only here)
assert_eq "/run/nshash:rw:Bidirectional /run/nshash-cni:ro:None /run/netns:ro:HostToContainer /var/run/netns:ro:HostToContainer /var/lib/nshash:ro:None" "$(field NMNT | tr '\037' ' ')" "the node container's mounts (mapped here)"
assert_eq "--read-only --privileged --user=0 --pid=host" "${NSEC[*]}" "... and its security settings (privileged, hostPID)"
NSTATE=$(make_state_dir)
NNS=nshash-t58-$$
ip netns add "$NNS" && ip -n "$NNS" link set lo up || cannot_run "ip netns add $NNS"
on_exit "ip netns del $NNS"
podman run -d --pull=never --name "$NAME-node" --network "ns:/run/netns/$NNS" "${NSEC[@]}" \
	--mount "type=bind,source=$NSTATE,destination=/run/nshash,bind-propagation=rshared" -v "$N/run:/run/nshash-cni:ro" \
	-v /run/netns:/run/netns:ro,rslave -v /run/netns:/var/run/netns:ro,rslave -v "$NSTATE:/var/lib/nshash:ro" \
	--entrypoint "${NCMD[0]}" "$IMG:$VERSION" "${NCMD[@]:1}" >/dev/null 2>"$D/node.err"
assert_eq 0 $? "the node container starts: ${NCMD[*]} ($(cat "$D/node.err"))"
on_exit "podman rm -f -t 0 $NAME-node"
nget() { ip netns exec "$NNS" curl -s --max-time 20 "$@"; }
code=
for _ in $(seq 100); do
	code=$(nget -o "$D/healthz" -w '%{http_code}' "http://127.0.0.1:$LIVE_PORT$LIVE_PATH")
	[ "$code" = 200 ] && break
	sleep 0.1
done
assert_eq "200 ok" "$code $(cat "$D/healthz" 2>/dev/null)" "the liveness probe's GET $LIVE_PATH on port $LIVE_PORT: 200 ok"
M=$(nget "http://127.0.0.1:$LIVE_PORT/metrics")
assert_eq "nshash_cni_installed 1|nshash_cni_ready 1" "$(grep -E '^nshash_cni_(installed|ready) ' <<<"$M" | tr '\n' '|' | sed 's/|$//')" \
	"GET /metrics: the install container's install.prom, through the shared emptyDir"
assert_eq 'nshash_cni_adds_total{outcome="sized"} 0|nshash_cni_adds_total{outcome="warned"} 0|nshash_cni_adds_total{outcome="refused"} 0' \
	"$(grep '^nshash_cni_adds_total' <<<"$M" | tr '\n' '|' | sed 's/|$//')" "... the plugin's ADD counters of the (scratch) state dir"
assert_eq 'nshash_serve_gc_runs_total{result="ok"} 1|nshash_serve_gc_runs_total{result="failed"} 0' \
	"$(grep '^nshash_serve_gc_runs_total' <<<"$M" | tr '\n' '|' | sed 's/|$//')" "... serve's gc at start, done in the scratch image"
assert_eq 2 "$(grep -cE '^nshash_shared_buckets\{proto="(tcp|udp)"\} [0-9]+$' <<<"$M")" "... the shared tables' sizes (the node's netns seen with hostPID)"
assert_eq 'nshash_serve_textfiles_skipped 0' "$(grep '^nshash_serve_textfiles_skipped' <<<"$M")" "... no textfile skipped"
assert_eq "/run/nshash-cni false" "$(podman inspect -f '{{range .Mounts}}{{if eq .Destination "/run/nshash-cni"}}{{.Destination}} {{.RW}}{{end}}{{end}}' "$NAME-node")" \
	"the node container mounts the installer's run dir read-only"
t0=$(date +%s%N)
podman stop -t "$GRACE" "$NAME-node" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# node container: podman stop (SIGTERM) to exit: $ms ms"
assert_eq 0 "$(podman inspect -f '{{.State.ExitCode}}' "$NAME-node")" "the node container: SIGTERM, exit 0"
[ "$ms" -lt $((GRACE * 1000)) ] && pass "... stopped in $ms ms, before the grace period's SIGKILL (${GRACE} s)" || fail "node stop took $ms ms"
assert_contains "$(podman logs "$NAME-node" 2>&1)" "signal 15: exiting" "... by its own handler (PID 1)"

# the record container, as the manifest runs it (its command as it is,
# --every 60: the run at start), on the node container's scratch state dir
# where the plugin marked a pod it sized with auto; its /var/lib/nshash (the
# history beside the default state dir) is that dir too, where this
# plugin's state dir keeps its history
assert_eq "/run/nshash:rw:HostToContainer /var/lib/nshash:rw:None /run/netns:ro:HostToContainer" "$(field RMNT | tr '\037' ' ')" "the record container's mounts (mapped here)"
assert_eq "--read-only --privileged --user=0 --pid=host" "${RSEC[*]}" "... and its security settings (privileged, hostPID)"
cni_node_policy "$D/node.json" "$NSTATE"
cni_pin_netns "$NSTATE/apod"
on_exit "umount '$NSTATE/apod' 2>/dev/null"
cni_call ADD "$NSTATE/apod" '{"cniVersion":"1.0.0","name":"k8s","type":"nshash","tcp":"auto","udp":"auto"}' \
	"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-x2k9p"
assert_eq 0 "$CNI_RC" "ADD with auto marks the pod's netns ($CNI_ERR)"
nsenter --net="$NSTATE/apod" ip link set lo up
hold_sockets 40 0 "$D/held" --net="$NSTATE/apod"
holder=$HOLDER
podman run -d --pull=never --name "$NAME-record" --network none "${RSEC[@]}" \
	--mount "type=bind,source=$NSTATE,destination=/run/nshash,bind-propagation=rslave" \
	--mount "type=bind,source=$NSTATE,destination=/var/lib/nshash" -v /run/netns:/run/netns:ro,rslave \
	--entrypoint "${RCMD[0]}" "$IMG:$VERSION" "${RCMD[@]:1}" >/dev/null 2>"$D/record.err"
assert_eq 0 $? "the record container starts: ${RCMD[*]} ($(cat "$D/record.err"))"
on_exit "podman rm -f -t 0 $NAME-record"
for _ in $(seq 100); do podman logs "$NAME-record" 2>&1 | grep -q '^sampled ' && break; sleep 0.1; done
assert_eq "sampled 1 of" "$(podman logs "$NAME-record" 2>&1 | grep -o '^sampled 1 of')" "it samples the marked netns at start (the image's /usr/bin/nshash record)"
assert_eq "cni:shop:pod=web 0 40 128 128" "$("$BUILD/nshash" --state-dir "$NSTATE" history --json | jq -r '.[] | "\(.workload) \(.tcpPeak) \(.udpPeak) \(.autoTcp) \(.autoUdp)"')" \
	"... into the node's STATE/history: the pod's 40 UDP sockets and no TCP, auto 128 each (the floor)"
t0=$(date +%s%N)
podman stop -t "$GRACE" "$NAME-record" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# record container: podman stop (SIGTERM) to exit: $ms ms"
assert_eq 0 "$(podman inspect -f '{{.State.ExitCode}}' "$NAME-record")" "the record container: SIGTERM, exit 0"
[ "$ms" -lt $((GRACE * 1000)) ] && pass "... stopped in $ms ms, before the grace period's SIGKILL (${GRACE} s)" || fail "record stop took $ms ms"
assert_contains "$(podman logs "$NAME-record" 2>&1)" "signal 15: stopping" "... by its own handler (PID 1)"
kill $holder
wait $holder 2>/dev/null
cni_call DEL "$NSTATE/apod" '{"cniVersion":"1.0.0","name":"k8s","type":"nshash","tcp":"auto","udp":"auto"}'
umount "$NSTATE/apod"
unset NSHASH_POLICY

# removal: kubectl exec ... nshash-cni-install uninstall (as docs/cni.md says), then the pod goes
out=$(podman exec "$NAME" nshash-cni-install uninstall 2>&1)
assert_eq "0 $BEFORE" "$? $(snap)" "uninstall through exec: the node's file byte for byte, mode, owner as before ($out)"
out=$(podman exec "$NAME" "${READY[@]}" 2>&1)
assert_eq 1 $? "ready fails after uninstall"
assert_contains "$out" "not ready: uninstalled" "... saying so"
t0=$(date +%s%N)
podman stop -t "$GRACE" "$NAME" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# podman stop (SIGTERM) to exit: $ms ms"
assert_eq "0 $BEFORE" "$(podman inspect -f '{{.State.ExitCode}}' "$NAME") $(snap)" "SIGTERM: exit 0, nothing rechained"
[ "$ms" -lt $((GRACE * 1000)) ] && pass "SIGTERM: stopped in $ms ms, before the grace period's SIGKILL (${GRACE} s)" || fail "stop took $ms ms"
assert_contains "$(podman logs "$NAME" 2>&1)" "signal 15: stopping" "... by its own handler (PID 1)"

# the state-dir init container
podman run --rm --pull=never --network none "${SEC[@]}" -v "$N/hostrun:/host/run" --entrypoint "${INIT[0]}" "$IMG:$VERSION" "${INIT[@]:1}" >/dev/null 2>"$D/init.err"
assert_eq "0 700 0:0" "$? $(stat -c '%a %u:%g' "$N/hostrun/nshash")" "state-dir init: the node's /run/nshash made 0700 root:root"
rmdir "$N/hostrun/nshash" && ln -s /etc "$N/hostrun/nshash"
podman run --rm --pull=never --network none "${SEC[@]}" -v "$N/hostrun:/host/run" --entrypoint "${INIT[0]}" "$IMG:$VERSION" "${INIT[@]:1}" >/dev/null 2>"$D/init.err"
assert_eq 1 $? "state-dir init: a symbolic link is refused"
assert_contains "$(cat "$D/init.err")" "/host/run/nshash is a symbolic link: remove it" "... saying so"
podman rmi -f "$IMG:$VERSION" >/dev/null 2>&1
