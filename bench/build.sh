#!/bin/bash
# bench/build.sh — `ward image build` (SPEC §19) against `docker build` on
# this host, in one interleaved run: a 10-step Dockerfile (copies and small
# RUNs) built from scratch by each (the same Debian base present in both,
# --no-cache, the classic builder, --network none, a dockerd of this
# script's own: tests/image/dockerd.bash); ward's rebuild with every step
# cached; and the overhead of a `RUN true` step (its time on the build's
# progress line, and the whole build of FROM + RUN true, --no-cache) against
# `ward run --image BASE -- true`.  Prints markdown (for
# docs/benchmarks.md); BENCH_BUILD_N rounds (default 5), medians.
# Goals (issue 33): ≤ 0.8x docker build; cached rebuild ≤ 0.2 s; RUN true
# ≤ 2x ward run.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WARD=${WARD:-$ROOT/build/ward}
N=${BENCH_BUILD_N:-5}
[ "$(id -u)" = 0 ] || { echo "bench/build.sh: needs root" >&2; exit 1; }
T=$(mktemp -d /tmp/ward-bench-build.XXXXXX)
. "$ROOT/tests/image/dockerd.bash"
trap 'dockerd_stop; rm -rf "$T"' EXIT
S=$T/store
P=$("$ROOT/tests/image/build-image" python3 python3) || exit 1
"$WARD" image import --quiet --image-store "$S" py:1 "oci:$P:1" >/dev/null || exit 1
have_docker=1
if ! dockerd_start || ! dockerd_load_oci "$P" 1 py:1; then
	have_docker=0
	echo "bench/build.sh: no docker here (${DOCKERD_WHY:-load failed}): ward's figures only" >&2
fi

C=$T/ctx
mkdir -p "$C/src"
for i in 1 2 3; do head -c 65536 /dev/urandom | base64 >"$C/src/f$i.txt"; done
cat >"$C/Dockerfile" <<'DF'
FROM py:1
ENV APP=/srv/app
COPY src/f1.txt /srv/app/
RUN mkdir -p /srv/app/data && echo one > /srv/app/data/one
COPY src/f2.txt /srv/app/
RUN python3 -c 'open("/srv/app/data/two", "w").write("2")'
WORKDIR /srv/app
COPY src/f3.txt ./
RUN ls -l > listing
RUN rm /srv/app/data/one
DF
mkdir -p "$T/true"
printf 'FROM py:1\nRUN true\n' >"$T/true/Dockerfile"

now() { date +%s.%N; }
timed() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || echo "bench/build.sh: failed: $*" >&2; t1=$(now); echo "$t1 - $t0" | bc; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$WARD" image build --image-store "$S" -t app:1 "$C" >/dev/null 2>&1 # fill the cache once
: >"$T/ward" >"$T/docker" >"$T/cached" >"$T/runtrue" >"$T/wardrun" >"$T/runstep"
for _ in $(seq 1 "$N"); do
	timed "$WARD" image build --image-store "$S" --no-cache -t app:1 "$C" >>"$T/ward"
	[ $have_docker = 1 ] && timed env DOCKER_BUILDKIT=0 "${DK[@]}" build --no-cache --network none -q -t app:1 "$C" >>"$T/docker"
	timed "$WARD" image build --image-store "$S" -t app:1 "$C" >>"$T/cached"
	timed "$WARD" image build --image-store "$S" --no-cache -t t:1 "$T/true" >>"$T/runtrue"
	"$WARD" image build --image-store "$S" --no-cache -t t:1 "$T/true" 2>&1 >/dev/null |
		awk '/RUN true/ {sub(/s$/, "", $NF); print $NF}' >>"$T/runstep"
	for _ in 1 2 3; do timed "$WARD" run --image-store "$S" --image py:1 -- true >>"$T/wardrun"; done
done
w=$(median <"$T/ward")
c=$(median <"$T/cached")
r=$(median <"$T/runtrue")
wr=$(median <"$T/wardrun")
rs=$(median <"$T/runstep")
fmt() { printf '%.3f s' "$1"; }
ratio() { printf '%.2fx' "$(echo "$1 / $2" | bc -l)"; }
echo "## Building images (SPEC §19)"
echo
echo "\`ward image build\` against \`docker build\` (Debian's docker.io $(dockerd --version 2>/dev/null | awk '{print $3}' | tr -d ,), classic builder, \`--network none\`) on this host, the same Debian base (python3, 208 MB) present in both; medians of $N rounds, interleaved. The Dockerfile: 10 steps after FROM (3 COPY of 88 KB files, 4 small RUNs, ENV, WORKDIR)."
echo
echo "| measure | ward | docker build | ratio | goal |"
echo "| --- | --- | --- | --- | --- |"
if [ $have_docker = 1 ]; then
	d=$(median <"$T/docker")
	echo "| 10 steps, nothing cached | $(fmt "$w") | $(fmt "$d") | $(ratio "$w" "$d") | ≤ 0.8x |"
else
	echo "| 10 steps, nothing cached | $(fmt "$w") | (no docker here) | | ≤ 0.8x |"
fi
echo "| the same, every step cached | $(fmt "$c") | | | ≤ 0.2 s |"
echo
echo "| measure | time | against \`ward run --image py:1 -- true\` ($(fmt "$wr")) | goal |"
echo "| --- | --- | --- | --- |"
echo "| the \`RUN true\` step (its progress line: sandbox, run, layer, cache entry) | $(fmt "$rs") | $(ratio "$rs" "$wr") | ≤ 2x |"
echo "| the whole build of FROM + \`RUN true\`, --no-cache (ward-net's start, the store, the commit's fsyncs too) | $(fmt "$r") | $(ratio "$r" "$wr") | |"
