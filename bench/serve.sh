#!/bin/bash
# bench/serve.sh — the HTTP runner's benchmark (run by bench/run, or alone).
#
# Requests per second and p50/p99 latency of POST /exec running `true`, at 1,
# 2 and 8 concurrent clients (wrk with bench/serve_exec.lua, keep-alive
# connections), by a server as it starts by default, one that clones its
# sandboxes itself (--spawners 0, no helpers) and one with sandboxes built
# ahead (--pool), next to the same number of `ward run -- true` processes started
# directly (python's subprocess adds well under a millisecond per run); and
# the latency one client with occasional requests sees, with and without the
# pool, against bare fork+exec from bench/run's results in the same run.
# Prints a markdown table on stdout; details on stderr.
#
# Knobs: WARD (default build/ward), BENCH_SERVE_SECS (5 per cell),
# BENCH_SERVE_CLIENTS ("1 2 8"), BENCH_SERVE_MAXC (--max-concurrent, default
# the number of cores), BENCH_SERVE_POOL (--pool, default 8).
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

# start_server ARGS... — sets SRV and URL
start_server() {
	: >"$TMP/log"
	"$WARD" serve --listen 127.0.0.1:0 --max-concurrent "$MAXC" --queue 1024 --log "$TMP/log" "$@" </dev/null >"$TMP/out" 2>&1 &
	SRV=$!
	URL=""
	for _ in $(seq 400); do
		URL=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$TMP/log" 2>/dev/null | head -1)
		[ -n "$URL" ] && break
		sleep 0.05
	done
	[ -n "$URL" ] || { echo "bench/serve.sh: ward serve did not start: $(cat "$TMP/out")" >&2; exit 1; }
	URL=http://$URL
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary '{"argv":["true"]}' "$URL/exec")
	[ "$code" = 200 ] || { echo "bench/serve.sh: POST /exec answered $code" >&2; exit 1; }
}
stop_server() { kill -TERM "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=""; }

# wrk_cell C — "REQS P50 P99 BAD ERRS" of C keep-alive clients for SECS
wrk_cell() {
	local t=$(( $1 < $(nproc) ? $1 : $(nproc) ))
	wrk -t "$t" -c "$1" -d "${SECS}s" --timeout 30s -s bench/serve_exec.lua "$URL/exec" 2>&1 | sed -n 's/^BENCH //p'
}

# spaced — one client, 60 requests 30 ms apart (time for a pool to refill):
# the latency a client with occasional requests sees; prints "MEDIAN P99" ms
spaced() {
	python3 - "${URL#http://}" <<'PY'
import http.client, sys, time
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
lat = []
for i in range(60):
    t0 = time.perf_counter()
    c.request("POST", "/exec", body='{"argv":["true"]}', headers={"Content-Type": "application/json"})
    c.getresponse().read()
    lat.append((time.perf_counter() - t0) * 1000)
    time.sleep(0.03)
lat.sort()
print("%.2f %.2f" % (lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]))
PY
}

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

POOL=${BENCH_SERVE_POOL:-8}
echo "ward serve benchmark: POST /exec of \`true\` vs \`ward run -- true\`, ${SECS}s per cell," \
	"--max-concurrent $MAXC, --pool $POOL, $(nproc) cores, $(uname -r)" >&2
declare -A cell
for mode in plain nospawn pool; do
	case $mode in
	pool) start_server --pool "$POOL" ;;
	nospawn) start_server --spawners 0 ;;
	*) start_server ;;
	esac
	for c in $CLIENTS; do cell[$mode,$c]=$(wrk_cell "$c"); done
	[ "$mode" = nospawn ] && { stop_server; continue; }
	cell[$mode,spaced]=$(spaced)
	if [ "$mode" = plain ]; then
		h=$(wrk -t "$(nproc)" -c 8 -d "${SECS}s" --latency "$URL/health" 2>&1)
		runs_plain=$(curl -s --max-time 10 "$URL/metrics" | grep -E '^ward_runs_total\{status="(ok|error)",isolation="system"\}' | tr '\n' ' ')
	else
		pool_metrics=$(curl -s --max-time 10 "$URL/metrics" | grep -E '^ward_pool_takes_total' | tr '\n' ' ')
	fi
	stop_server
done

printf '| clients | POST /exec req/s | p50 ms | p99 ms | with --spawners 0: req/s | with --pool %s: req/s | p50 ms | p99 ms | ward run runs/s | p50 ms | p99 ms |\n' "$POOL"
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for c in $CLIENTS; do
	read -r reqs sp50 sp99 sbad serr <<<"${cell[plain,$c]}"
	read -r nreqs _ _ nbad nerr <<<"${cell[nospawn,$c]}"
	read -r preqs pp50 pp99 pbad perr <<<"${cell[pool,$c]}"
	read -r runs dp50 dp99 dbad <<<"$(direct "$c")"
	rate() { awk -v n="${1:-0}" -v s="$SECS" 'BEGIN{printf "%.0f", n/s}'; }
	note=""
	[ "${sbad:-0}" != 0 ] || [ "${serr:-0}" != 0 ] && note=" (${sbad:-?} not ok, ${serr:-?} socket errors)"
	[ "${pbad:-0}" != 0 ] || [ "${perr:-0}" != 0 ] && note="$note (pool: ${pbad:-?} not ok, ${perr:-?} socket errors)"
	[ "${nbad:-0}" != 0 ] || [ "${nerr:-0}" != 0 ] && note="$note (--spawners 0: ${nbad:-?} not ok, ${nerr:-?} socket errors)"
	[ "${dbad:-0}" != 0 ] && note="$note (ward run: $dbad failed)"
	printf '| %s | %s | %.1f | %.1f | %s | %s | %.1f | %.1f | %s | %.1f | %.1f |%s\n' "$c" "$(rate "$reqs")" "${sp50:-0}" "${sp99:-0}" \
		"$(rate "$nreqs")" "$(rate "$preqs")" "${pp50:-0}" "${pp99:-0}" "$(rate "$runs")" "${dp50:-0}" "${dp99:-0}" "$note"
done
read -r s_med s_p99 <<<"${cell[plain,spaced]}"
read -r p_med p_p99 <<<"${cell[pool,spaced]}"
bare=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print("%.2f" % [c for c in d["commands"] if c["name"]=="bare"][0]["latency"]["median_ms"])' "${BENCH_OUT:-bench/out}/results.json" 2>/dev/null)
printf '\nOne client with occasional requests (60 requests, 30 ms apart, keep-alive; send to answer): median %s ms (p99 %s) without a pool, %s ms (p99 %s) with `--pool %s`' \
	"$s_med" "$s_p99" "$p_med" "$p_p99" "$POOL"
if [ -n "$bare" ]; then
	printf '; bare fork+exec of `true` in the same run: %s ms, so the pooled request is %s× bare.\n' "$bare" \
		"$(awk -v a="$p_med" -v b="$bare" 'BEGIN{printf "%.2f", a/b}')"
else
	printf '.\n'
fi
printf '\nThe HTTP layer alone (GET /health, 8 clients): %s req/s, p50 %s, p99 %s.\n' \
	"$(awk '/Requests\/sec/{printf "%.0f", $2}' <<<"$h")" "$(awk '$1=="50%"{print $2}' <<<"$h")" "$(awk '$1=="99%"{print $2}' <<<"$h")"
printf '\nServer side: %s; with the pool: %s\n' "$runs_plain" "$pool_metrics"
