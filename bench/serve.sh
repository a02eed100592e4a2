#!/bin/bash
# bench/serve.sh — the HTTP runner's benchmark (run by bench/run, or alone).
#
# Requests per second and p50/p99 latency of POST /exec running `true`, at 1,
# 2 and 8 concurrent clients (wrk with bench/serve_exec.lua, keep-alive
# connections), next to the same number of `ward run -- true` processes
# started directly (a C-speed spawn loop per client would be fairer still;
# python's subprocess adds well under a millisecond per run).  Prints a
# markdown table on stdout; details on stderr.
#
# Knobs: WARD (default build/ward), BENCH_SERVE_SECS (5 per cell),
# BENCH_SERVE_CLIENTS ("1 2 8"), BENCH_SERVE_MAXC (--max-concurrent, default
# the number of cores).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WARD=${WARD:-build/ward}
SECS=${BENCH_SERVE_SECS:-5}
CLIENTS=${BENCH_SERVE_CLIENTS:-1 2 8}
MAXC=${BENCH_SERVE_MAXC:-$(nproc)}

command -v wrk >/dev/null || { echo "bench/serve.sh: wrk is missing (make deps)" >&2; exit 1; }
[ -x "$WARD" ] || { echo "bench/serve.sh: no ward binary at $WARD" >&2; exit 1; }
TMP=$(mktemp -d /tmp/ward-bench-serve.XXXXXX)
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

"$WARD" serve --listen 127.0.0.1:0 --max-concurrent "$MAXC" --queue 1024 --log "$TMP/log" </dev/null >"$TMP/out" 2>&1 &
SRV=$!
URL=""
for _ in $(seq 200); do
	URL=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$TMP/log" 2>/dev/null | head -1)
	[ -n "$URL" ] && break
	sleep 0.05
done
[ -n "$URL" ] || { echo "bench/serve.sh: ward serve did not start: $(cat "$TMP/out")" >&2; exit 1; }
URL=http://$URL
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary '{"argv":["true"]}' "$URL/exec")
[ "$code" = 200 ] || { echo "bench/serve.sh: POST /exec answered $code" >&2; exit 1; }

# direct C — C concurrent loops of `ward run -- true` for SECS seconds;
# prints "RUNS P50_MS P99_MS FAILED"
direct() {
	python3 - "$WARD" "$1" "$SECS" <<'PY'
import subprocess, sys, threading, time
ward, c, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lat, bad = [], [0]
lock = threading.Lock()
end = time.monotonic() + secs
def loop():
    mine, nbad = [], 0
    while time.monotonic() < end:
        t0 = time.monotonic()
        rc = subprocess.call([ward, "run", "--", "true"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mine.append((time.monotonic() - t0) * 1000)
        nbad += rc != 0
    with lock:
        lat.extend(mine); bad[0] += nbad
ts = [threading.Thread(target=loop) for _ in range(c)]
for t in ts: t.start()
for t in ts: t.join()
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] if lat else 0
print(len(lat), "%.3f" % pct(0.5), "%.3f" % pct(0.99), bad[0])
PY
}

echo "ward serve benchmark: POST /exec of \`true\` vs \`ward run -- true\`, ${SECS}s per cell," \
	"--max-concurrent $MAXC, $(nproc) cores, $(uname -r)" >&2
printf '| clients | POST /exec req/s | p50 ms | p99 ms | ward run runs/s | p50 ms | p99 ms |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|\n'
for c in $CLIENTS; do
	t=$(( c < $(nproc) ? c : $(nproc) ))
	line=$(wrk -t "$t" -c "$c" -d "${SECS}s" --timeout 30s -s bench/serve_exec.lua "$URL/exec" 2>&1 | grep '^BENCH')
	read -r _ reqs sp50 sp99 sbad serr <<<"$line"
	read -r runs dp50 dp99 dbad <<<"$(direct "$c")"
	srps=$(awk -v n="${reqs:-0}" -v s="$SECS" 'BEGIN{printf "%.0f", n/s}')
	drps=$(awk -v n="${runs:-0}" -v s="$SECS" 'BEGIN{printf "%.0f", n/s}')
	note=""
	[ "${sbad:-0}" != 0 ] || [ "${serr:-0}" != 0 ] && note=" (${sbad:-?} not ok, ${serr:-?} socket errors)"
	[ "${dbad:-0}" != 0 ] && note="$note (ward run: $dbad failed)"
	printf '| %s | %s | %.1f | %.1f | %s | %.1f | %.1f |%s\n' "$c" "$srps" "${sp50:-0}" "${sp99:-0}" "$drps" "${dp50:-0}" "${dp99:-0}" "$note"
done
h=$(wrk -t "$(nproc)" -c 8 -d "${SECS}s" --latency "$URL/health" 2>&1)
printf '\nThe HTTP layer alone (GET /health, 8 clients): %s req/s, p50 %s, p99 %s.\n' \
	"$(awk '/Requests\/sec/{printf "%.0f", $2}' <<<"$h")" "$(awk '$1=="50%"{print $2}' <<<"$h")" "$(awk '$1=="99%"{print $2}' <<<"$h")"
printf '\nServer side: %s\n' "$(curl -s --max-time 10 "$URL/metrics" | grep -E '^ward_runs_total\{status="(ok|error)",isolation="system"\}' | tr '\n' ' ')"
