#!/bin/bash
# bench/deeptutor.sh — ward serve against the runner it replaces: DeepTutor's
# own runner sidecar (../shared/thirdparty/deeptutor/.../runner/server.py,
# unmodified: Python's http.server and subprocess.run with rlimits, no
# isolation), POST /exec of `true` with DeepTutor's own request body (its
# client's defaults, built from its spec.py here), wrk 5 s a cell, at 1 and 8
# clients, two rounds interleaved: DeepTutor, ward, ward --pool 8.  DeepTutor's
# runner binds 0.0.0.0, so it and its wrk run in a network namespace of
# their own (its loopback only).  Prints a markdown section on stdout;
# skipped, with a message, where ../shared is absent.
#
# Knobs: WARD (build/ward), BENCH_DT_SECS (5), BENCH_DT_CLIENTS ("1 8"),
# BENCH_DT_ROUNDS (2), DEEPTUTOR (the tree holding deeptutor/).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WARD=${WARD:-build/ward}
SECS=${BENCH_DT_SECS:-5}
CLIENTS=${BENCH_DT_CLIENTS:-1 8}
ROUNDS=${BENCH_DT_ROUNDS:-2}
DT=${DEEPTUTOR:-$ROOT/../shared/thirdparty/deeptutor}
SERVER=$DT/deeptutor/services/sandbox/runner/server.py
if [ ! -f "$SERVER" ]; then
	echo "bench/deeptutor.sh: skipped: DeepTutor's runner is not at $SERVER (set DEEPTUTOR)" >&2
	printf '## Against the runner ward replaces\n\nSkipped: DeepTutor'"'"'s runner was not found (%s).\n' "$SERVER"
	exit 0
fi
command -v wrk >/dev/null || { echo "bench/deeptutor.sh: wrk is missing (make deps)" >&2; exit 1; }
BODY=$(cd "$DT" && python3 -c '
import json, sys
sys.path.insert(0, ".")
from deeptutor.services.sandbox.spec import ExecRequest
r = ExecRequest(command="true")
print(json.dumps({"command": r.command, "argv": list(r.argv), "workdir": r.workdir, "env": r.env,
                  "mounts": [], "limits": {"timeout_s": r.limits.timeout_s, "memory_mb": r.limits.memory_mb,
                  "cpu_seconds": r.limits.cpu_seconds, "max_output_chars": r.limits.max_output_chars}}))')
[ -n "$BODY" ] || { echo "bench/deeptutor.sh: cannot build DeepTutor's request from its spec.py" >&2; exit 1; }
export BENCH_BODY=$BODY
TMP=$(mktemp -d /tmp/ward-bench-dt.XXXXXX)
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# wrk_at URL C — "REQS P50 P99 BAD ERRS"
wrk_at() {
	local t=$(($2 < $(nproc) ? $2 : $(nproc)))
	wrk -t "$t" -c "$2" -d "${SECS}s" --timeout 30s -s bench/serve_exec.lua "$1/exec" 2>&1 | sed -n 's/^BENCH //p'
}

# deeptutor_cell C — the same, DeepTutor's runner in a network namespace of its own
deeptutor_cell() {
	unshare -n bash -c '
		ip link set lo up
		RUNNER_PORT=18900 python3 "$1" >/dev/null 2>&1 &
		srv=$!
		for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18900/health && break; sleep 0.05; done
		t=$(($2 < $(nproc) ? $2 : $(nproc)))
		wrk -t "$t" -c "$2" -d "$3s" --timeout 30s -s bench/serve_exec.lua http://127.0.0.1:18900/exec 2>&1 | sed -n "s/^BENCH //p"
		kill "$srv"; wait "$srv" 2>/dev/null' _ "$SERVER" "$1" "$SECS"
}

# ward_cell C ARGS... — a ward serve of its own for the cell
ward_cell() {
	local c=$1
	shift
	: >"$TMP/log"
	"$WARD" serve --listen 127.0.0.1:0 --max-concurrent "$(nproc)" --queue 1024 --log "$TMP/log" "$@" \
		</dev/null >"$TMP/out" 2>&1 &
	SRV=$!
	local url=""
	for _ in $(seq 400); do
		url=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$TMP/log" 2>/dev/null | head -1)
		[ -n "$url" ] && break
		sleep 0.05
	done
	[ -n "$url" ] && wrk_at "http://$url" "$c"
	kill -TERM "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=""
}

declare -A cell
for r in $(seq "$ROUNDS"); do
	for c in $CLIENTS; do
		cell[dt,$c,$r]=$(deeptutor_cell "$c")
		cell[ward,$c,$r]=$(ward_cell "$c")
		cell[pool,$c,$r]=$(ward_cell "$c" --pool 8)
		echo "bench/deeptutor.sh: round $r, $c clients: DeepTutor ${cell[dt,$c,$r]} | ward ${cell[ward,$c,$r]} | pool ${cell[pool,$c,$r]}" >&2
	done
done

rate() { awk -v n="${1:-0}" -v s="$SECS" 'BEGIN{printf "%.0f", n/s}'; }
printf '## Against the runner ward replaces\n\n'
printf 'bench/deeptutor.sh: DeepTutor'"'"'s own runner sidecar (unmodified; no isolation) and `ward serve`, POST /exec of `true` with DeepTutor'"'"'s own request body (`%s`), wrk %s s a cell, interleaved, %s rounds. DeepTutor'"'"'s server speaks HTTP/1.0 (a connection per request); ward keeps them alive.\n\n' "$BODY" "$SECS" "$ROUNDS"
printf '| clients | round | DeepTutor req/s | p50 ms | p99 ms | ward req/s | p50 ms | p99 ms | × DeepTutor | ward --pool 8 req/s | p50 ms | p99 ms | × DeepTutor |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for c in $CLIENTS; do
	for r in $(seq "$ROUNDS"); do
		read -r dn dp50 dp99 dbad derr <<<"${cell[dt,$c,$r]}"
		read -r wn wp50 wp99 wbad werr <<<"${cell[ward,$c,$r]}"
		read -r pn pp50 pp99 pbad perr <<<"${cell[pool,$c,$r]}"
		note=""
		[ "${dbad:-0}" != 0 ] || [ "${derr:-0}" != 0 ] && note="$note (DeepTutor: ${dbad:-?} not ok, ${derr:-?} socket errors)"
		[ "${wbad:-0}" != 0 ] || [ "${werr:-0}" != 0 ] && note="$note (ward: ${wbad:-?} not ok, ${werr:-?} socket errors)"
		[ "${pbad:-0}" != 0 ] || [ "${perr:-0}" != 0 ] && note="$note (pool: ${pbad:-?} not ok, ${perr:-?} socket errors)"
		printf '| %s | %s | %s | %.1f | %.1f | %s | %.1f | %.1f | %s× | %s | %.1f | %.1f | %s× |%s\n' "$c" "$r" \
			"$(rate "$dn")" "${dp50:-0}" "${dp99:-0}" "$(rate "$wn")" "${wp50:-0}" "${wp99:-0}" \
			"$(awk -v a="${wn:-0}" -v b="${dn:-0}" 'BEGIN{printf "%.2f", b ? a/b : 0}')" \
			"$(rate "$pn")" "${pp50:-0}" "${pp99:-0}" \
			"$(awk -v a="${pn:-0}" -v b="${dn:-0}" 'BEGIN{printf "%.2f", b ? a/b : 0}')" "$note"
	done
done
