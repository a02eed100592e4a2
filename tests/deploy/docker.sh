#!/bin/bash
# tests/deploy/docker.sh — the least-privilege table of docs/deploy.md (SPEC
# §20), each row with Debian's Docker on this host: what `ward run` and
# `ward doctor` do inside ward's image (make image) under each set of flags,
# and that doctor and the errors name the container's restriction and its
# fix, never a host sysctl.  Podman's rows where Podman starts containers.
set -u
. "$(dirname "$0")/lib.bash"
docker_up
image_up

# ---- the image itself ----
ep=$("$DOCKER" image inspect ward:latest --format '{{json .Config.Entrypoint}} {{index .Config.Labels "org.opencontainers.image.version"}}')
expect_eq "image: entrypoint ward, labelled with ward's version" "[\"ward\"] $("$WARD" --version | awk '{print $2}')" "$ep"
tags=$("$DOCKER" image inspect ward:latest --format '{{join .RepoTags " "}}')
expect_contains "image: tagged ward:VERSION" "$tags" "ward:$("$WARD" --version | awk '{print $2}')"
out=$(in_ctr -- --version)
expect_contains "image: docker run ward:latest --version runs ward" "$out" "ward $("$WARD" --version | awk '{print $2}')"

# ---- row 0: Docker's defaults ----
out=$(in_ctr -- run -- true; echo "rc=$?")
expect_contains "defaults: ward run refuses (125)" "$out" "rc=125"
expect_contains "defaults: the error names Docker's seccomp profile and ward's" "$out" "seccomp=deploy/seccomp.json"
expect_not_contains "defaults: ... not a host sysctl" "$out" "unprivileged_userns_clone"
out=$(in_ctr -- doctor)
expect_contains "defaults: doctor's namespaces line names the profile" \
	"$(grep '^  namespaces' <<<"$out")" "Docker's seccomp profile refuses"

# ---- row 1: ward's profile, /proc still masked ----
out=$(in_ctr "${ROW_PROFILE[@]}" -- run -- true; echo "rc=$?")
expect_contains "profile only: ward run refuses (125)" "$out" "rc=125"
expect_contains "profile only: the error names the masked /proc" "$out" "Docker masks paths under /proc"
expect_contains "profile only: ... and its fix" "$out" "systempaths=unconfined"
out=$(in_ctr "${ROW_PROFILE[@]}" -- doctor)
expect_contains "profile only: doctor's namespaces line is ok" "$(grep '^  namespaces' <<<"$out")" " ok "
expect_contains "profile only: doctor's system line names the masked /proc" \
	"$(grep '^  system' <<<"$out")" "masks paths under /proc"

# ---- row 2: ward's profile and an unmasked /proc, no capability ----
out=$(in_ctr "${ROW_UNMASKED[@]}" -- run --json -- sh -c 'echo hi; id -u')
expect_eq "profile + unmasked /proc: a sandbox runs (status ok, uid 1000 inside)" "ok hi 1000" \
	"$(jg "$out" 'd["status"] + " " + " ".join(d["stdout"].split())')"
expect_eq "profile + unmasked /proc: memory and pids from rlimits" "rlimit rlimit" \
	"$(jg "$out" 'd["enforced"]["memory"] + " " + d["enforced"]["pids"]')"
# the sandbox's own filter still stands inside the container's: no user
# namespace, no mount for the code that runs
# (two runs: a run killed for its mount may lose what it printed just before
# to a slow reader of the container's output, which is not what this checks)
out=$(in_ctr "${ROW_UNMASKED[@]}" -- run -- sh -c 'unshare -U true && echo ESCAPED; echo between')
expect_eq "profile + unmasked /proc: the code inside cannot make a namespace" "between" "$(grep -E '^(ESCAPED|between)$' <<<"$out")"
out=$(in_ctr "${ROW_UNMASKED[@]}" -- run -- sh -c 'mount -t tmpfs x /tmp && echo MOUNTED')
expect_contains "profile + unmasked /proc: ... nor mount (ward's own filter kills it)" "$out" "blocked mount(2)"
expect_not_contains "profile + unmasked /proc: ... the mount never made" "$out" "MOUNTED"
# a fork loop, bounded at 200 even if nothing stops it
out=$(in_ctr "${ROW_UNMASKED[@]}" -- run --json --pids 16 --timeout 5 --shell 'i=0; while [ $i -lt 200 ]; do sleep 3 & i=$((i+1)); done 2>/dev/null; echo started $i')
expect_eq "profile + unmasked /proc: --pids holds (rlimit)" "rlimit" "$(jg "$out" 'd["enforced"]["pids"]')"
out=$(in_ctr "${ROW_UNMASKED[@]}" -- doctor)
expect_contains "profile + unmasked /proc: doctor's system line is ok" "$(grep '^  system' <<<"$out")" " ok "
cgline=$(grep '^  cgroup' <<<"$out")
expect_contains "profile + unmasked /proc: doctor names the read-only cgroupfs" "$cgline" "Docker mounts the cgroup filesystem read-only"
expect_contains "profile + unmasked /proc: ... and its fix" "$cgline" "deploy/cgroup-subtree"
expect_not_contains "profile + unmasked /proc: ... not 'run ward as root'" "$cgline" "run ward as root"
out=$(in_ctr "${ROW_UNMASKED[@]}" -- run --net loopback -- true; echo "rc=$?")
expect_contains "profile + unmasked /proc: --net loopback refused without a memory cgroup" "$out" "rc=125"

# ---- row 2b: Compose 1.29's way to an unmasked procfs: a volume of type proc ----
vol=ward-test-proc-$$
"$DOCKER" volume create --driver local --opt type=proc --opt device=proc --opt o=subset=pid,hidepid=invisible "$vol" >/dev/null
out=$(in_ctr "${ROW_PROFILE[@]}" -v "$vol:/run/ward/proc" -- run --json -- sh -c 'ls /proc | grep -c "^[0-9]"')
expect_eq "profile + a proc volume (no systempaths): a sandbox runs, seeing only its own few processes" "ok True" \
	"$(jg "$out" 'd["status"] + " " + str(int(d["stdout"]) < 8)')"
"$DOCKER" volume rm -f "$vol" >/dev/null

# ---- row 3: + a cgroup subtree of the host's (deploy/cgroup-subtree) ----
sub=ward-test-deploy-$$
"$ROOT/deploy/cgroup-subtree" create "$sub" 1024
read -ra cgflags <<<"$("$ROOT/deploy/cgroup-subtree" flags "$sub")"
out=$(in_ctr "${ROW_UNMASKED[@]}" "${cgflags[@]}" -- run --json --memory 64 -- python3 -c 'x = bytearray(300 << 20)')
expect_eq "cgroup subtree: memory from the cgroup, and a 300 MB hog is a memory kill" "cgroup-v1 memory" \
	"$(jg "$out" 'd["enforced"]["memory"] + " " + d["status"]')"
out=$(in_ctr "${ROW_UNMASKED[@]}" "${cgflags[@]}" -- run --json --net loopback -- python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("listening")')
expect_eq "cgroup subtree: --net loopback works" "ok listening" "$(jg "$out" 'd["status"] + " " + d["stdout"].strip()')"
out=$(in_ctr "${ROW_UNMASKED[@]}" "${cgflags[@]}" -- doctor)
expect_contains "cgroup subtree: doctor's cgroup line is ok" "$(grep '^  cgroup' <<<"$out")" " ok "
expect_contains "cgroup subtree: egress available" "$(grep '^  egress' <<<"$out")" " ok "
# (an emptied ward-slot-N stays by design: ward run keeps its cgroup for
# the next ward run, at most 8; one that still holds a process counts)
left=$(find /sys/fs/cgroup/memory/ward-containers/"$sub" -mindepth 3 -type d 2>/dev/null |
	while read -r d; do
		case "$d" in */ward-slot-[0-9]) [ -s "$d/cgroup.procs" ] || continue ;; esac
		echo "$d"
	done)
expect_eq "cgroup subtree: no run cgroup left under it once the containers are gone" "" "$left"
"$ROOT/deploy/cgroup-subtree" remove "$sub"
check "cgroup subtree: removed" test ! -e /sys/fs/cgroup/memory/ward-containers/"$sub"

# ---- --privileged: Judge0's and Piston's way ----
out=$(in_ctr --privileged -- doctor; echo "rc=$?")
case "$out" in
*"unable to apply caps"*) echo "SKIP: --privileged does not start on this host: its root lacks capabilities (CAP_SYS_RESOURCE...)" >&2 ;;
*) expect_contains "privileged: doctor's system line is ok" "$(grep '^  system' <<<"$out")" " ok " ;;
esac

# ---- Podman (Debian's 4.3), in a store of the tests' own ----
if command -v podman >/dev/null; then
	P=(podman --root "$WARD_DOCKER_DIR-podman/root" --runroot "$WARD_DOCKER_DIR-podman/run" --cgroup-manager cgroupfs
		--events-backend file)
	timeout 120 "${P[@]}" load -i "$IMAGE_TAR" >/dev/null 2>&1
	out=$(timeout 120 "${P[@]}" run --rm --network none --security-opt "seccomp=$SECCOMP" --security-opt unmask=ALL \
		ward:latest run --json -- true 2>&1)
	case "$out" in
	*"error setting rlimit"*) echo "SKIP: Podman does not start containers on this host: its runtime cannot set the container's rlimits (the host's root lacks CAP_SYS_RESOURCE)" >&2 ;;
	*) expect_eq "podman: profile + unmask=ALL: a sandbox runs" ok "$(jg "$out" 'd["status"]')" ;;
	esac
fi
