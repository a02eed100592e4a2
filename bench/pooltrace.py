#!/usr/bin/env python3
"""bench/pooltrace.py — where the time of one pooled (or fresh) POST /exec goes.

Starts `ward serve --pool 4` with WARD_TRACE=1, waits until the pool is
full, sends N requests of `true` one at a time with a pause between them
(the pool refills meanwhile: the latency a client with occasional requests
sees), stops the server, and pairs the trace lines of each request:

  http:*           the server's HTTP phases, µs since the request began
  handover ...     libward's run phases, µs since ward_run began
  init:* / cmd:*   PID 1's and the command's, µs since the sandbox was built
                   (the cmd: lines come back in the result's stderr)

Prints the median of each step.  Standard library only; runs where
bench/scale.sh runs (WARD: the binary; WARD_LD_LIBRARY_PATH: libraries for
the server only, as bench/pack-device.sh packs them).

    bench/pooltrace.py [--fresh] [N] [PAUSE_MS]       (defaults 100 and 20)

--fresh: no pool, so each request clones a sandbox of its own (through a
spawner helper, as a server does by default), and the steps are those of
the fresh path: validation to the spawner's clone, PID 1's mounts and
filters, the command, the report.
"""
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

FRESH = "--fresh" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--fresh"]
N = int(ARGS[0]) if len(ARGS) > 0 else 100
PAUSE = (int(ARGS[1]) if len(ARGS) > 1 else 20) / 1000.0
WARD = os.environ.get("WARD", "build/ward")

tmp = tempfile.mkdtemp(prefix="ward-pooltrace.")
log, err = os.path.join(tmp, "log"), os.path.join(tmp, "err")
env = dict(os.environ, WARD_TRACE="1")
if os.environ.get("WARD_LD_LIBRARY_PATH"):  # libraries for ward-net only (a packed .devbench/)
    env["LD_LIBRARY_PATH"] = os.environ["WARD_LD_LIBRARY_PATH"]
srv = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0"] + ([] if FRESH else ["--pool", "4"]) +
                       ["--max-concurrent", "2", "--log", log], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=open(err, "wb"), env=env)
try:
    port = None
    for _ in range(400):
        try:
            m = re.search(r'"listening","message":"127\.0\.0\.1:(\d+)', open(log).read())
            if m:
                port = int(m.group(1))
                break
        except OSError:
            pass
        time.sleep(0.05)
    if not port:
        sys.exit("pooltrace: ward serve did not start: " + open(err, errors="replace").read()[-500:])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def metric(name):
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
        m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
        return float(m.group(1)) if m else -1

    for _ in range(0 if FRESH else 200):
        if metric("ward_pool_ready") >= 4:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    start_at = os.path.getsize(err)  # the probe run and the pool's builds come before
    client, cmd = [], []
    for i in range(N):
        t0 = time.perf_counter()
        c.request("POST", "/exec", body='{"argv":["true"]}', headers={"Content-Type": "application/json"})
        d = json.loads(c.getresponse().read())
        client.append((time.perf_counter() - t0) * 1e6)
        cmd.append(dict((k, float(v)) for k, v in re.findall(r"ward-trace: (cmd:\S+) (\d+)", d["stderr"])))
        time.sleep(PAUSE)
    hits = metric('ward_pool_takes_total{result="hit"}')
finally:
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()

with open(err, "rb") as f:
    f.seek(start_at)
    lines = f.read().decode(errors="replace").splitlines()
seq = {}
for ln in lines:
    m = re.match(r"ward-trace: (\S+) (\d+)(?: cpu=\d+)?$", ln)
    if m:
        seq.setdefault(m.group(1), []).append(float(m.group(2)))


def nth(name, i):
    v = seq.get(name, [])
    return v[i] if i < len(v) else None


steps = {}


def add(name, v):
    if v is not None:
        steps.setdefault(name, []).append(v)




def fresh_steps(i):
    """One fresh request's steps: libward's, PID 1's and the command's
    phases share ward_run's start as their origin."""
    a, p, r, ans, done = (nth("http:" + k, i) for k in ("admitted", "picked", "ran", "answering", "completed"))
    ph = dict((k, nth(k, i)) for k in ("netns", "spawn", "attach", "init:ns", "init:mounts", "init:seccomp",
                                        "init:handover", "init:cmd-exited", "supervised", "teardown"))
    cm = cmd[i] if i < len(cmd) else {}

    def d(x, y):
        return x - y if x is not None and y is not None else None

    add("1 http: headers and body read, JSON decoded, admitted", a)
    add("2 http: queued until a worker picks it", d(p, a))
    add("3 ward_run: validate, uid, plan, cgroup, network namespace", ph["netns"])
    add("4 spawner helper: clone PID 1 into its namespaces", d(ph["spawn"], ph["netns"]))
    add("5 ward_run: uid/gid maps, cgroup attach, go", d(ph["attach"], ph["spawn"]))
    add("6 PID 1: mounts (its root, /proc and its masks, /dev/pts, tmpfs)", d(ph["init:mounts"], ph["init:ns"]))
    add("7 PID 1: Landlock and seccomp", d(ph["init:seccomp"], ph["init:mounts"]))
    add("8 PID 1: the command's process and its fds", d(cm.get("cmd:fds"), ph["init:handover"]))
    add("9 command: rlimits, uid 1000, no capabilities, Landlock", d(cm.get("cmd:landlock"), cm.get("cmd:fds")))
    add("10 command: execve, run and exit of true", d(ph["init:cmd-exited"], cm.get("cmd:landlock")))
    add("11 supervisor: the status in (PID 1's report)", d(ph["supervised"], ph["init:cmd-exited"]))
    add("12 ward_run: result, cgroup usage, hand the sandbox to the reaper", d(ph["teardown"], ph["supervised"]))
    add("13 http: result to JSON, after ward_run", d(d(r, p), ph["teardown"]))
    add("14 http: resumed, answer handler", d(ans, r))
    add("15 http: answer sent (completed)", d(done, ans))
    add("server: request began to completed", done)


for i in range(N):
    if FRESH:
        fresh_steps(i)
        continue
    a, p, r, ans, done = (nth("http:" + k, i) for k in ("admitted", "picked", "ran", "answering", "completed"))
    h, sup, td = nth("handover", i), nth("supervised", i), nth("teardown", i)
    ih, ix = nth("init:handover", i), nth("init:cmd-exited", i)
    cm = cmd[i] if i < len(cmd) else {}
    add("1 http: headers and body read, JSON decoded, admitted", a)
    add("2 http: queued until a worker picks it", p - a if p is not None and a is not None else None)
    add("3 ward_run: validate, take a pooled sandbox, hand the command over", h)
    if ih is not None and "cmd:fds" in cm:
        add("4 PID 1: read the handover, start the command; its fds", cm["cmd:fds"] - ih)
    if "cmd:caps" in cm and "cmd:fds" in cm:
        add("5 command: rlimits, uid 1000, no capabilities", cm["cmd:caps"] - cm["cmd:fds"])
    if "cmd:landlock" in cm and "cmd:caps" in cm:
        add("6 command: Landlock", cm["cmd:landlock"] - cm["cmd:caps"])
    # (the seccomp filter is PID 1's, loaded before the sandbox waited)
    if ix is not None and "cmd:landlock" in cm:
        add("7 command: execve, run and exit of true", ix - cm["cmd:landlock"])
    if sup is not None and h is not None and ix is not None and ih is not None:
        add("8 supervisor: from the handover until the status is in (steps 4-7 and the report)", sup - h)
    if td is not None and sup is not None:
        add("9 ward_run: result, cgroup usage, retire the sandbox", td - sup)
    if r is not None and p is not None and td is not None:
        add("10 http: result to JSON, after ward_run", (r - p) - td)
    if ans is not None and r is not None:
        add("11 http: resumed, answer handler", ans - r)
    if done is not None and ans is not None:
        add("12 http: answer sent (completed)", done - ans)
    add("server: request began to completed", done)

if FRESH:
    print("pooltrace --fresh: %d requests of `true`, %.0f ms apart, no pool (a sandbox cloned for each); %d cores, %s"
          % (N, PAUSE * 1000, os.cpu_count(), os.uname().release))
else:
    print("pooltrace: %d requests of `true`, %.0f ms apart, --pool 4; %d took a pooled sandbox; %d cores, %s"
          % (N, PAUSE * 1000, hits, os.cpu_count(), os.uname().release))
print("")
print("| step | median µs | p90 µs | n |")
print("| --- | ---: | ---: | ---: |")
for k in sorted(steps, key=lambda s: (not s[0].isdigit(), int(s.split()[0]) if s[0].isdigit() else 0)):
    v = sorted(steps[k])
    print("| %s | %.0f | %.0f | %d |" % (k, statistics.median(v), v[int(len(v) * 0.9)], len(v)))
cl = sorted(client)
print("| client: send to answer (python http.client) | %.0f | %.0f | %d |" % (statistics.median(cl), cl[int(len(cl) * 0.9)], len(cl)))
