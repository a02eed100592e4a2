#!/bin/bash
# bench/container.sh [RUNS] [ROUNDS] — `ward run -- true` inside ward's
# image (make image) under Debian's Docker with docs/deploy.md's flags,
# against the same on the host, interleaved in one run (SPEC §20's speed
# figure: inside ≤ 1.1x the host).  Two container rows: ward's profile and
# an unmasked /proc (limits from rlimits), and the same with a cgroup
# subtree of the host's (deploy/cgroup-subtree: limits from cgroups, as on
# the host).  Each round times RUNS runs in a loop inside the container (a
# long-lived one: `docker exec` starts the loop, outside the timing) and on
# the host; the figure is the median of the rounds' ratios.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/deploy/lib.bash"
RUNS=${1:-20}
ROUNDS=${2:-7}
docker_up
image_up
sub=ward-bench-$$
"$ROOT/deploy/cgroup-subtree" create "$sub"
read -ra cgflags <<<"$("$ROOT/deploy/cgroup-subtree" flags "$sub")"
c1=$("$DOCKER" run -d --network none "${ROW_UNMASKED[@]}" --entrypoint sleep ward:latest infinity)
c2=$("$DOCKER" run -d --network none "${ROW_UNMASKED[@]}" "${cgflags[@]}" --entrypoint sleep ward:latest infinity)
trap '"$DOCKER" rm -f "$c1" "$c2" >/dev/null; "$ROOT/deploy/cgroup-subtree" remove "$sub"' EXIT
# µs per run of RUNS runs, timed where they run
loop='s=$(date +%s%N); i=0; while [ $i -lt '"$RUNS"' ]; do ward run -- true || exit 1; i=$((i+1)); done; e=$(date +%s%N); echo $(( (e - s) / '"$RUNS"' / 1000 ))'
host() { PATH=$ROOT/build:$PATH sh -c "$loop"; }
ctr() { "$DOCKER" exec "$1" sh -c "$loop"; }
ctr "$c1" >/dev/null && ctr "$c2" >/dev/null && host >/dev/null # warm
printf '%-6s %10s %14s %14s %8s %8s\n' round host_us rlimit_row_us cgroup_row_us ratio1 ratio2
r1=() r2=()
for r in $(seq "$ROUNDS"); do
	h=$(host) a=$(ctr "$c1") b=$(ctr "$c2")
	x=$(awk -v a="$a" -v h="$h" 'BEGIN{printf "%.3f", a / h}')
	y=$(awk -v b="$b" -v h="$h" 'BEGIN{printf "%.3f", b / h}')
	r1+=("$x") r2+=("$y")
	printf '%-6s %10s %14s %14s %8s %8s\n' "$r" "$h" "$a" "$b" "$x" "$y"
done
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "median ratio, container/host: profile + unmasked /proc (rlimits) $(med "${r1[@]}"), + cgroup subtree $(med "${r2[@]}")"
