#!/usr/bin/env python3
"""bench/mcp.py — MCP over stdio (SPEC §21) in `make bench` (run by bench/run, or alone).

What an agent's first tool call costs against a shell's `ward run`, in one run
on one machine, interleaved round by round:
  * ward run: `ward run -- python3 -c 'print(1)'`, spawn to exit;
  * MCP first call: `ward mcp` started and initialized (initialize, then
    notifications/initialized: not timed), then the first tools/call of
    run_code {"language": "python", "code": "print(1)"}, from sending it to its
    response — the first call of the process, nothing warmed by an earlier one;
  * MCP later call: the same call again in the same process;
  * and, apart, what comes before the clock: `ward mcp`'s start to the answer
    of initialize (its language table's toolchains are probed at start).
Each round starts a fresh `ward mcp`.  Prints a markdown section on stdout
(the ratio of the medians; the goal is at most 1.5); details on stderr.

Knobs (environment): WARD (default build/ward), BENCH_MCP_ROUNDS (20).
"""
import json
import os
import select
import statistics
import subprocess
import sys
import time

WARD = os.environ.get("WARD", "build/ward")
ROUNDS = int(os.environ.get("BENCH_MCP_ROUNDS", "20"))
CALL = {"name": "run_code", "arguments": {"language": "python", "code": "print(1)"}}


def ward_run():
    t = time.perf_counter()
    r = subprocess.run([WARD, "run", "--", "python3", "-c", "print(1)"], capture_output=True)
    d = time.perf_counter() - t
    if r.returncode != 0 or r.stdout != b"1\n":
        sys.exit(f"bench/mcp.py: ward run failed: {r.returncode} {r.stderr[:300]!r}")
    return d


class Mcp:
    def __init__(self):
        self.p = subprocess.Popen([WARD, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.n = 0

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            r, _, _ = select.select([self.p.stdout], [], [], 60)
            if not r:
                sys.exit(f"bench/mcp.py: no answer to {method}")
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.n:
                return m

    def init(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def timed_call(self):
        t = time.perf_counter()
        m = self.request("tools/call", CALL)
        d = time.perf_counter() - t
        s = m.get("result", {}).get("structuredContent", {})
        if s.get("stdout") != "1\n":
            sys.exit(f"bench/mcp.py: run_code failed: {json.dumps(m)[:400]}")
        return d

    def close(self):
        self.p.stdin.close()
        self.p.wait(30)


def main():
    runs, firsts, laters, starts = [], [], [], []
    ward_run()  # the page cache warm for both
    for i in range(ROUNDS):
        t = time.perf_counter()
        m = Mcp()
        m.init()
        starts.append(time.perf_counter() - t)
        if i % 2:
            firsts.append(m.timed_call())
            runs.append(ward_run())
        else:
            runs.append(ward_run())
            firsts.append(m.timed_call())
        laters.append(m.timed_call())
        m.close()
    med = lambda v: statistics.median(v) * 1000
    r, f, l, s = med(runs), med(firsts), med(laters), med(starts)
    print(f"ward run {r:.1f} ms, MCP first call {f:.1f} ms, later {l:.1f} ms", file=sys.stderr)
    print("## MCP over stdio (SPEC §21): the first tool call against `ward run`\n")
    print(f"`print(1)` in Python, {ROUNDS} rounds interleaved, each with a fresh `ward mcp` "
          "(started and initialized before the clock starts); medians.\n")
    print("| | ms | ratio to `ward run` |")
    print("| --- | ---: | ---: |")
    print(f"| `ward run -- python3 -c 'print(1)'` (spawn to exit) | {r:.1f} | 1.00 |")
    print(f"| MCP `run_code` over stdio, the process's first call (request to response) | {f:.1f} | {f / r:.2f} |")
    print(f"| MCP `run_code`, a later call in the same process | {l:.1f} | {l / r:.2f} |")
    print(f"| (before the clock) `ward mcp` started to initialize answered | {s:.1f} | |")
    print(f"\nGoal: the first call at most 1.5 x `ward run`: {'met' if f / r <= 1.5 else 'NOT met'} ({f / r:.2f}).")


if __name__ == "__main__":
    main()
