#!/bin/bash
# tests/deploy/kubernetes.sh — deploy/kubernetes/ward.yaml carries the
# settings of the tested table (SPEC §20; no cluster here): the one-shot
# runners' pod has ward's seccomp profile (Localhost, the file
# deploy/seccomp.json), an unmasked /proc in a user namespace, AppArmor
# unconfined, no privilege and no added capability; and those settings,
# translated back into `docker run` flags (the row tests/deploy/docker.sh
# tests), give a working sandbox with the manifest's own uid range.
set -u
. "$(dirname "$0")/lib.bash"
M=$ROOT/deploy/kubernetes/ward.yaml
out=$(/usr/bin/python3 - "$M" <<'PY' 2>&1
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
pod = docs[("Deployment", "ward-runner")]["spec"]["template"]["spec"]
c = pod["containers"][0]
sc, psc = c.get("securityContext", {}), pod.get("securityContext", {})
env = {e["name"]: e.get("value") for e in c.get("env", [])}
print("seccomp", psc.get("seccompProfile", {}).get("type"), psc.get("seccompProfile", {}).get("localhostProfile"))
print("hostUsers", pod.get("hostUsers"))
print("procMount", sc.get("procMount"))
print("apparmor", sc.get("appArmorProfile", {}).get("type"))
print("privileged", sc.get("privileged"))
print("capadd", ",".join(sc.get("capabilities", {}).get("add", [])) or "none")
print("uids", env.get("WARD_UID_BASE"), env.get("WARD_UID_COUNT"))
sts = docs[("StatefulSet", "ward-sessions")]["spec"]["template"]["spec"]["containers"][0]["securityContext"]
print("sessions-privileged", sts.get("privileged"))
PY
)
g() { awk -v k="$1" '$1 == k {$1 = ""; sub(/^ /, ""); print}' <<<"$out"; }
expect_eq "k8s: the runners' seccomp profile is Localhost ward-seccomp.json" "Localhost ward-seccomp.json" "$(g seccomp)"
expect_contains "k8s: ... which the manifest says is deploy/seccomp.json on each node" "$(cat "$M")" \
	"deploy/seccomp.json,
#     copied to each node's /var/lib/kubelet/seccomp/ward-seccomp.json"
expect_eq "k8s: procMount Unmasked (= systempaths=unconfined)" Unmasked "$(g procMount)"
expect_eq "k8s: ... in a user namespace of the pod's own (hostUsers: false)" False "$(g hostUsers)"
expect_eq "k8s: AppArmor unconfined (= apparmor=unconfined)" Unconfined "$(g apparmor)"
expect_eq "k8s: not privileged, no capability added" "False none" "$(g privileged) $(g capadd)"
read -r base count <<<"$(g uids)"
check "k8s: the sandbox uids lie inside the pod's 65536" test "$((base + count))" -le 65536 -a "$base" -gt 0
expect_eq "k8s: the session runners are privileged (they need a writable cgroup; documented)" True "$(g sessions-privileged)"

# the same settings as docker run flags: the row docker.sh tests
docker_up
image_up
flags=()
[ "$(g seccomp)" = "Localhost ward-seccomp.json" ] && flags+=(--security-opt "seccomp=$SECCOMP")
[ "$(g procMount)" = Unmasked ] && flags+=(--security-opt systempaths=unconfined)
[ "$(g apparmor)" = Unconfined ] && flags+=(--security-opt apparmor=unconfined)
[ "$(g privileged)" = True ] && flags+=(--privileged)
expect_eq "k8s: its settings are docs/deploy.md's tested row" "${ROW_UNMASKED[*]} --security-opt apparmor=unconfined" "${flags[*]}"
res=$(in_ctr "${flags[@]}" -e WARD_UID_BASE="$base" -e WARD_UID_COUNT="$count" -- run --json -- id -u)
expect_eq "k8s: with them (and its uid range) a sandbox runs" "ok 1000" "$(jg "$res" 'd["status"] + " " + d["stdout"].strip()')"
