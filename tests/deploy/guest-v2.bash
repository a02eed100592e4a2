#!/bin/bash
# tests/deploy/guest-v2.bash — docs/deploy.md's cgroup v2 rows, in the
# throwaway guest (pure cgroup v2, AppArmor on):
#   bash ../shared/vm/run-in-vm.sh 'bash tests/deploy/guest-v2.bash'
# after `make image` on the host (VMTEST_MEM=4096; about 6 minutes, most of
# it `docker load` into the vfs driver).  Not in tests/run's list: too slow
# for every run; docs/deploy.md records what it printed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
cd "$ROOT"
D=/tmp/ward-guest-docker
mkdir -p "$D"
/usr/sbin/dockerd --data-root "$D/data" --exec-root "$D/exec" --pidfile "$D/pid" -H "unix://$D/sock" --bridge=none \
	--iptables=false --ip-masq=false --storage-driver vfs >"$D/log" 2>&1 &
export DOCKER_HOST=unix://$D/sock
for _ in $(seq 120); do /usr/bin/docker info >/dev/null 2>&1 && break; sleep 1; done
/usr/bin/docker load -i build/ward-image.tar >/dev/null || { fail "guest: docker load" "$(tail -3 "$D/log")"; exit 0; }
B=(--rm --network none --security-opt "seccomp=$ROOT/deploy/seccomp.json" --security-opt systempaths=unconfined)
S=("${B[@]}" --security-opt apparmor=unconfined)
out=$(/usr/bin/docker run "${B[@]}" ward:latest run -- true 2>&1)
expect_contains "guest: AppArmor's docker-default refuses mounts, and ward says so" "$out" "apparmor=unconfined"
out=$(/usr/bin/docker run "${S[@]}" ward:latest run --json -- true)
expect_eq "guest: profile + unmasked /proc + apparmor=unconfined: a sandbox, rlimits" "ok rlimit" \
	"$(jg "$out" 'd["status"] + " " + d["enforced"]["memory"]')"
deploy/cgroup-subtree create guest 512
read -ra cg <<<"$(deploy/cgroup-subtree flags guest)"
out=$(/usr/bin/docker run "${S[@]}" "${cg[@]}" ward:latest run --json --memory 64 -- python3 -c 'x = bytearray(200 << 20)')
expect_eq "guest: + a subtree, --cgroupns=host: a memory kill from cgroup v2" "memory cgroup-v2" \
	"$(jg "$out" 'd["status"] + " " + d["enforced"]["memory"]')"
out=$(/usr/bin/docker run "${S[@]}" --cgroupns=private -v /sys/fs/cgroup/ward-containers/guest/ctr:/sys/fs/cgroup \
	ward:latest run -- true 2>&1)
expect_contains "guest: + a subtree, --cgroupns=private: the moves are refused" "$out" "cannot move the sandbox into its cgroup"
deploy/cgroup-subtree remove guest
kill "$(cat "$D/pid")"
