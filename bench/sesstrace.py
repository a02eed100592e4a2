#!/usr/bin/env python3
"""bench/sesstrace.py — where the time of one exec in a live session goes
(POST /sessions/ID/exec; bench/pooltrace.py is the pooled POST /exec's).

Starts `ward serve` with WARD_TRACE=1, makes a session, sends N execs of
`true` one at a time with a pause between them, stops the server, and pairs
the trace lines of each exec.  The session path's lines are in monotonic
time (µs), so the supervisor's (sx:), PID 1's (si:) and the command's (cmd:,
back in the result's stderr) line up:

  sx:*    libward, the supervisor's thread (src/system/session.c)
  si:*    the session's PID 1 and the exec's fork before its command
          (src/system/init_session.c)
  cmd:*   the command's last steps (src/system/command.c)
  http:*  the server's HTTP phases, µs since the request began

Prints the median of each step.  Standard library only.  WARD: the binary.

    bench/sesstrace.py [N] [PAUSE_MS]       (defaults 100 and 30)
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

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100
PAUSE = (int(sys.argv[2]) if len(sys.argv) > 2 else 30) / 1000.0
WARD = os.environ.get("WARD", "build/ward")

tmp = tempfile.mkdtemp(prefix="ward-sesstrace.")
log, err = os.path.join(tmp, "log"), os.path.join(tmp, "err")
env = dict(os.environ, WARD_TRACE="1")
srv = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--spawners", "0", "--log", log],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(err, "wb"), env=env)
cmds = []
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
        sys.exit("sesstrace: ward serve did not start: " + open(err, errors="replace").read()[-500:])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(method, path, body=None):
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()

    st, body = call("POST", "/sessions", {})
    if st != 201:
        sys.exit("sesstrace: POST /sessions answered %d: %s" % (st, body[:300]))
    sid = json.loads(body)["id"]
    path = "/sessions/%s/exec" % sid
    call("POST", path, {"argv": ["true"]})  # warm-up
    time.sleep(0.3)
    start_at = os.path.getsize(err)
    client = []
    for i in range(N):
        t0 = time.perf_counter()
        st, body = call("POST", path, {"argv": ["true"]})
        client.append((time.perf_counter() - t0) * 1e6)
        d = json.loads(body)
        cmds.append(dict((k, float(v)) for k, v in re.findall(r"ward-trace: (cmd:\S+) (\d+)", d.get("stderr", ""))))
        time.sleep(PAUSE)
    call("DELETE", "/sessions/" + sid)
finally:
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()

with open(err, "rb") as f:
    f.seek(start_at)
    lines = f.read().decode(errors="replace").splitlines()
# The lines of exec i: from its sx:call to the next exec's (they are in
# time order: one stderr for the server, PID 1 and the execs' processes);
# the arming's lines there are the next exec's (or this one's, made on its
# path).  The server's http: lines are paired by their count.
seg, seq = [], {}
for ln in lines:
    m = re.match(r"ward-trace: (\S+) (\d+)(?: cpu=\d+)?$", ln)
    if not m:
        continue
    name, v = m.group(1), float(m.group(2))
    if name.startswith("http:"):
        seq.setdefault(name, []).append(v)
        continue
    if name == "sx:call":
        seg.append({})
    if seg:
        seg[-1].setdefault(name, v)


def nth(name, i):
    if not name.startswith("http:"):
        return seg[i].get(name) if i < len(seg) else None
    v = seq.get(name, [])
    return v[i] if i < len(v) else None


steps = {}
ORDER = [
    # (label, from, to): names of trace points, in order on the exec's path.
    # Steps 3-8 are the arming: on the exec's path when it found no armed
    # exec (no sx:armed), else done by the session's armer after the last one.
    ("supervisor: the request checked, the session's environment added", "sx:call", "sx:begin"),
    ("supervisor: an armed exec taken (no armed one: not counted)", "sx:begin", "sx:armed"),
    ("arm: the exec's pipes", "sx:arm", "sx:pipes"),
    ("arm: the exec's cgroup made", "sx:pipes", "sx:cgroup"),
    ("arm: the request on the control socket", "sx:cgroup", "si:request"),
    ("arm: PID 1 forks the exec's process, replies with its pidfd", "si:request", "si:replied"),
    ("arm: the reply read", "si:replied", "sx:reply"),
    ("arm: the process moved into the exec's cgroup", "sx:reply", "sx:attach"),
    ("supervisor: cwd and handover written", "sx:begin", "sx:handover"),
    ("exec's process: wakes with its cwd (from the handover's write)", "sx:handover", "si:handover"),
    ("exec's process: handover read", "si:handover", "si:handover-read"),
    ("exec's process: setsid, fds", "si:handover-read", "cmd:fds"),
    ("exec's process: rlimits, uid, capabilities", "cmd:fds", "cmd:caps"),
    ("exec's process: cwd, Landlock", "cmd:caps", "cmd:landlock"),
    ("command: execve, run and exit of true, PID 1 reaps it", "cmd:landlock", "si:reaped"),
    ("PID 1 -> supervisor: the status read, the loop's end", "si:reaped", "sx:supervised"),
    ("supervisor: the exec's cgroup usage read", "sx:supervised", "sx:usage"),
    ("supervisor: the exec's cgroup removed (or kept)", "sx:usage", "sx:retired"),
    ("supervisor: the result made", "sx:retired", "sx:end"),
]
for i in range(N):
    def at(name):
        if name.startswith("cmd:"):
            return cmds[i].get(name) if i < len(cmds) else None
        return nth(name, i)
    for k, (label, a, b) in enumerate(ORDER):
        x, y = at(a), at(b)
        if x is not None and y is not None:
            steps.setdefault("%d %s" % (k + 1, label), []).append(y - x)
    b, e = at("sx:call"), at("sx:end")
    if b is not None and e is not None:
        steps.setdefault("libward: ward_session_exec, called to returned", []).append(e - b)
    a, p, r, ans, done = (nth("http:" + k, i) for k in ("admitted", "picked", "ran", "answering", "completed"))
    if a is not None:
        steps.setdefault("http: headers and body read, JSON decoded, admitted", []).append(a)
    if done is not None:
        steps.setdefault("http: server, request began to completed", []).append(done)

armed = sum(1 for i in range(min(N, len(seg))) if "sx:armed" in seg[i])
print("sesstrace: %d execs of `true` in one session, %.0f ms apart (%d found their process armed); %d cores, %s"
      % (N, PAUSE * 1000, armed, os.cpu_count(), os.uname().release))
print("")
print("| step | median µs | p90 µs | n |")
print("| --- | ---: | ---: | ---: |")
for k in sorted(steps, key=lambda s: (not s[0].isdigit(), int(s.split()[0]) if s[0].isdigit() else 0)):
    v = sorted(steps[k])
    print("| %s | %.0f | %.0f | %d |" % (k, statistics.median(v), v[int(len(v) * 0.9)], len(v)))
# the slowest execs, step by step: where an outlier's time went
per = []
for i in range(N):
    b, e = nth("sx:call", i), nth("sx:end", i)
    if b is not None and e is not None:
        per.append((e - b, i))
for tot, i in sorted(per)[-3:]:
    parts = []
    for k, (label, a, b2) in enumerate(ORDER):
        x = cmds[i].get(a) if a.startswith("cmd:") and i < len(cmds) else nth(a, i)
        y = cmds[i].get(b2) if b2.startswith("cmd:") and i < len(cmds) else nth(b2, i)
        if x is not None and y is not None and y - x > 200:
            parts.append("step %d %.0f" % (k + 1, y - x))
    print("slow exec %d: %.0f µs (%s)" % (i, tot, ", ".join(parts)), file=sys.stderr)
cl = sorted(client)
print("| client: send to answer (python http.client) | %.0f | %.0f | %d |"
      % (statistics.median(cl), cl[int(len(cl) * 0.9)], len(cl)))
subprocess.call(["rm", "-rf", tmp])
