# tests/deploy/lib.bash — sourced by tests/deploy/*.sh (SPEC §20): Debian's
# Docker (docker.io 20.10, /usr/bin/docker: another client earlier on PATH
# is not the one tested), a daemon of the tests' own when none answers, and
# ward's image (make image) loaded into it.
#
# The daemon: $WARD_DOCKER_HOST, else unix:///var/lib/ward-test-docker/
# docker.sock, started here when it does not answer (its own data root,
# exec root and pidfile beside that socket; no bridge, no iptables rules: the
# tests use networks they create) and left running for the next script and
# for other helpers' tests; never stopped here.  Where Docker cannot run,
# the script says why on stderr and skips; under CI that is a failure.
# shellcheck shell=bash
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
DOCKER=/usr/bin/docker
WARD_DOCKER_DIR=${WARD_DOCKER_DIR:-/var/lib/ward-test-docker}
export DOCKER_HOST=${WARD_DOCKER_HOST:-unix://$WARD_DOCKER_DIR/docker.sock}
SECCOMP=$ROOT/deploy/seccomp.json
IMAGE_TAR=$ROOT/build/ward-image.tar

# The rows of docs/deploy.md's table, as `docker run` flags (one place: the
# tests of every row, the bench and tests/deploy/kubernetes.sh read these).
ROW_PROFILE=(--security-opt "seccomp=$SECCOMP")
ROW_UNMASKED=(--security-opt "seccomp=$SECCOMP" --security-opt systempaths=unconfined)

# cannot_run WHY: Docker cannot run here; skip (a failure under CI).
cannot_run() {
	if [ -n "${CI:-}" ]; then fail "deploy: $1"; else echo "SKIP: $(basename "$0"): $1" >&2; fi
	exit 0
}

docker_ok() { timeout 20 "$DOCKER" version >/dev/null 2>&1; }

# docker_up: a daemon that answers on DOCKER_HOST, started when none does.
docker_up() {
	[ "$(id -u)" = 0 ] || cannot_run "needs root"
	[ -x "$DOCKER" ] && [ -x /usr/sbin/dockerd ] ||
		cannot_run "Debian's Docker is not installed (apt-get install docker.io docker-compose)"
	docker_ok && return 0
	[ -n "${WARD_DOCKER_HOST:-}" ] && cannot_run "no Docker daemon answers on $WARD_DOCKER_HOST"
	local d=$WARD_DOCKER_DIR
	mkdir -p "$d/data" "$d/exec"
	(
		flock 9
		docker_ok && exit 0
		setsid /usr/sbin/dockerd --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/docker.pid" \
			-H "$DOCKER_HOST" --bridge=none --iptables=false --ip-masq=false \
			</dev/null >>"$d/dockerd.log" 2>&1 &
		for _ in $(seq 120); do docker_ok && exit 0; sleep 0.5; done
		exit 1
	) 9>"$d/.lock" || cannot_run "dockerd did not start: $(tail -3 "$d/dockerd.log" 2>/dev/null | tr '\n' ' ')"
}

# image_up: build/ward-image.tar made (make image: cached, rebuilt when ward
# changed) and loaded, when the daemon does not hold that very image yet.
image_up() {
	local out
	out=$(cd "$ROOT" && make -s image 2>&1) || { fail "deploy: make image" "$(tail -c 600 <<<"$out")"; exit 0; }
	local want have
	want=$(tar -xOf "$IMAGE_TAR" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Config"].split("/")[-1].removesuffix(".json"))')
	have=$("$DOCKER" image inspect ward:latest --format '{{.Id}}' 2>/dev/null)
	case "$have" in *"$want") return 0 ;; esac
	"$DOCKER" load -i "$IMAGE_TAR" >/dev/null || { fail "deploy: docker load" "$IMAGE_TAR"; exit 0; }
}

# in_ctr FLAGS... -- CMD...: run CMD (ward's arguments) in a fresh
# container of the image, no network, bounded; stdout and stderr together.
in_ctr() {
	local flags=()
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	timeout -k 5 120 "$DOCKER" run --rm --network none "${flags[@]}" ward:latest "$@" 2>&1
}
