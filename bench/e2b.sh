#!/bin/bash
# bench/e2b.sh — E2B's SDK against ward serve --e2b in `make bench` (bench/run
# runs it; alone: bench/e2b.sh).  One server with --pool 2 and --e2b: the real
# SDK (tests/e2b's lockfile, npm ci into build/e2b-node) times Sandbox.create()
# to the first commands.run('true') result and a commands.run('true') in a live
# sandbox, against a pooled POST /exec of `true`, interleaved (bench/e2b.mjs).
# Prints a markdown section on stdout; skips (exit 3) without node/npm.
. "$(dirname "$0")/e2b_node.bash" e2b.mjs
T=$(mktemp -d /tmp/ward-bench-e2b.XXXXXX)
echo "bench bench-token-0123456789" >"$T/tokens"
"$WARD" serve --listen 127.0.0.1:0 --e2b 127.0.0.1:0 --pool 2 --token-file "$T/tokens" --log "$T/log" </dev/null >"$T/out" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; kill -KILL $pid 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do
	e=$(sed -n 's/.*"event":"e2b-listening","message":"\([^ ]*\) .*/\1/p' "$T/log" 2>/dev/null | head -1)
	n=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$T/log" 2>/dev/null | head -1)
	[ -n "$e" ] && [ -n "$n" ] && break
	sleep 0.1
done
[ -n "$e" ] || { echo "bench/e2b.sh: ward serve did not start: $(head -c 400 "$T/out")" >&2; exit 2; }
sleep 1 # the pool fills
j=$(cd "$NODE_DIR" && E2B_API_URL=http://$e E2B_SANDBOX_URL=http://$e E2B_API_KEY=bench-token-0123456789 WARD_URL=http://$n \
	timeout 300 node e2b.mjs) || { echo "bench/e2b.sh: e2b.mjs failed: $j" >&2; exit 2; }
echo "$j" >"${BENCH_OUT:-bench/out}/e2b.json" 2>/dev/null || true
python3 - "$j" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
c, r, p = d["create_to_first_result"], d["command_in_live_sandbox"], d["pooled_exec"]
print("The real `e2b` 2.51.0 SDK against `ward serve --e2b` (plain HTTP on 127.0.0.1, %d rounds, interleaved; ms):\n" % d["n"])
print("| what | median | p90 |\n| --- | ---: | ---: |")
print("| `Sandbox.create()` to the first `commands.run('true')` result | %.1f | %.1f |" % (c["median"], c["p90"]))
print("| `commands.run('true')` in a live sandbox | %.1f | %.1f |" % (r["median"], r["p90"]))
print("| pooled `POST /exec` of `true` (same server, `--pool 2`) | %.1f | %.1f |" % (p["median"], p["p90"]))
print("\nA command in a live sandbox costs %.1fx a pooled /exec (goal: at most 2x); create-to-first-result goal: 20 ms (E2B's cloud: 80-440 ms)." % (r["median"] / p["median"]))
PY
