#!/usr/bin/env python3
"""bench/session_life.py — a session's lifecycle (issue 32) in `make bench` (run by bench/run, or alone).

One run, one server, interleaved rounds; each round, on a session holding
100 MB of files in /work and a background process holding 100 MB of touched
memory:
  * pause (POST /sessions/ID/pause) and resume (POST .../resume), as a client
    sees them;
  * fork of one (POST .../fork {"count": 1}: a new session and a copy of the
    100 MB), and, as its baseline, a plain POST /sessions of the same shape;
  * an exec of `true` in the session (POST .../exec), the floor of any call.
Prints a markdown section on stdout (medians and p90, and ratios to the
baselines); details on stderr.  The goals (issue 32): pause <= 100 ms, resume
<= 50 ms, fork of 100 MB of files <= 0.3 s.

Knobs (environment): WARD (default build/ward), BENCH_LIFE_N (10 rounds).
"""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time

WARD = os.environ.get("WARD", "build/ward")
N = int(os.environ.get("BENCH_LIFE_N", "10"))
SHAPE = {"ttl_s": 600, "work_size_mb": 256, "limits": {"memory_mb": 512, "pids": 64}}


def start_server(tmp):
    log = os.path.join(tmp, "log")
    p = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--log", log, "--max-concurrent", "2"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        time.sleep(0.05)
        try:
            m = re.search(r"\"event\":\"listening\",\"message\":\"[^ \"]*:(\d+)", open(log).read())
        except OSError:
            m = None
        if m:
            return p, int(m.group(1))
    p.kill()
    sys.exit("bench/session_life.py: ward serve did not start")


class Client:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None):
        t0 = time.perf_counter()
        self.c.request(method, path, body=None if body is None else json.dumps(body))
        r = self.c.getresponse()
        data = r.read()
        dt = time.perf_counter() - t0
        if r.status >= 300:
            sys.exit("bench/session_life.py: %s %s: %d %s" % (method, path, r.status, data[:300]))
        return dt, (json.loads(data) if data else None)


def stats(v):
    v = sorted(v)
    return v[len(v) // 2], v[min(len(v) - 1, int(len(v) * 0.9))]


def main():
    tmp = tempfile.mkdtemp(prefix="ward-bench-life.")
    srv, port = start_server(tmp)
    try:
        c = Client(port)
        _, s = c.call("POST", "/sessions", SHAPE)
        sid = s["id"]
        c.call("POST", "/sessions/%s/exec" % sid, {"command": "head -c 100000000 /dev/urandom > data", "limits": {"timeout_s": 60}})
        c.call("POST", "/sessions/%s/exec" % sid, {
            "command": "head -c 100000000 /dev/urandom | python3 -c \"import sys, time; b = sys.stdin.buffer.read(); time.sleep(3600)\"",
            "background": True})
        for _ in range(100):  # its 100 MB touched
            _, info = c.call("GET", "/sessions/%s" % sid)
            if info["usage"]["memory_bytes"] > 195 << 20:
                break
            time.sleep(0.1)
        print("# session memory %d MB (files in tmpfs and the process)" % (info["usage"]["memory_bytes"] >> 20), file=sys.stderr)
        t = {k: [] for k in ("exec", "pause", "resume", "create", "fork")}
        for i in range(N):
            t["exec"].append(c.call("POST", "/sessions/%s/exec" % sid, {"argv": ["true"]})[0])
            t["pause"].append(c.call("POST", "/sessions/%s/pause" % sid)[0])
            t["resume"].append(c.call("POST", "/sessions/%s/resume" % sid)[0])
            dt, made = c.call("POST", "/sessions", SHAPE)
            t["create"].append(dt)
            c.call("DELETE", "/sessions/%s" % made["id"])
            dt, forks = c.call("POST", "/sessions/%s/fork" % sid, {"count": 1})
            t["fork"].append(dt)
            for f in forks:
                c.call("DELETE", "/sessions/%s" % f["id"])
        c.call("DELETE", "/sessions/%s" % sid)
    finally:
        srv.terminate()
        srv.wait(30)
    med = {k: stats(v) for k, v in t.items()}
    print("### A session's lifecycle: pause, resume, fork (bench/session_life.py)\n")
    print("One server, %d interleaved rounds, on a session holding 100 MB of files in /work and a process holding"
          " 100 MB of memory; times as one client sees them (HTTP round trip included).\n" % N)
    print("| call | median | p90 | ratio to | goal |")
    print("| --- | ---: | ---: | --- | --- |")
    row = lambda name, k, base, goal: print("| %s | %.1f ms | %.1f ms | %s | %s |" % (
        name, med[k][0] * 1e3, med[k][1] * 1e3,
        "%.2fx %s" % (med[k][0] / med[base][0], base) if base else "", goal))
    row("exec of `true` in the session", "exec", None, "")
    row("pause (freeze: 100 MB kept)", "pause", "exec", "<= 100 ms")
    row("resume (thaw)", "resume", "exec", "<= 50 ms")
    row("POST /sessions (same shape)", "create", None, "")
    row("fork of one (100 MB of files copied)", "fork", "create", "<= 300 ms")


if __name__ == "__main__":
    main()
