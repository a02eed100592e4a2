#!/bin/bash
# bench/e2b.sh — E2B's SDK against ward serve --e2b in `make bench` (bench/run
# runs it; alone: bench/e2b.sh).  One server with --pool 2 and --e2b: the real
# SDK (tests/e2b's lockfile, npm ci into build/e2b-node) times Sandbox.create()
# to the first commands.run('true') result and a commands.run('true') in a live
# sandbox, against a pooled POST /exec of `true`, interleaved (bench/e2b.mjs).
# Prints a markdown section on stdout; skips (exit 3) without node/npm.
. "$(dirname "$0")/e2b_node.bash" e2b.mjs
e2b_serve "$(mktemp -d /tmp/ward-bench-e2b.XXXXXX)" --pool 2
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
