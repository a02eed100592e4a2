#!/usr/bin/env python3
"""bench/session.py — sessions (SPEC §11) in `make bench` (run by bench/run, or alone).

One run, on one machine, interleaved:
  * latency of an exec of `true` in an existing session (POST /sessions/ID/exec),
    of a pooled POST /exec (a server with --pool) and of a fresh POST /exec (a
    server without a pool), one client, requests 30 ms apart, keep-alive;
    against bare fork+exec of `true` measured here too (posix_spawn + wait);
  * memory of an idle session, ward's own share: what the server's PSS grows
    by per session, plus the PSS of each session's PID 1 (ward-init), from
    /proc/PID/smaps_rollup; and how many such sessions 1 GiB holds.
Prints a markdown section on stdout; details on stderr.

Knobs (environment): WARD (default build/ward), BENCH_SESSION_N (60 requests
of each kind), BENCH_SESSION_IDLE (16 idle sessions for the memory figure),
WARD_BEFORE (a ward binary built before a change, e.g. from main: its
session exec and its fresh POST /exec are measured too, on a server of its own, interleaved with the
others, and bench/sessexec's libward row gets a before figure; the
sessexec next to it, DIR/bench/sessexec, is built from this tree's
bench/sessexec.c against DIR/libward.a when it is missing or older).
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
BEFORE = os.environ.get("WARD_BEFORE", "")
N = int(os.environ.get("BENCH_SESSION_N", "60"))
IDLE = int(os.environ.get("BENCH_SESSION_IDLE", "16"))


def build_before_sessexec():
    """bench/sessexec.c against the before build's libward.a, next to its binary; True when it is there."""
    d = os.path.dirname(BEFORE) or "."
    exe, lib = os.path.join(d, "bench", "sessexec"), os.path.join(d, "libward.a")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sessexec.c")
    inc = os.path.join(os.path.dirname(os.path.abspath(d)), "include")
    if os.path.exists(exe) and os.path.getmtime(exe) >= max(os.path.getmtime(src), os.path.getmtime(lib)):
        return True
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    return subprocess.call([os.environ.get("CC", "cc"), "-std=gnu11", "-O2", "-g", "-I" + inc, "-o", exe, src, lib,
                            "-lseccomp", "-ljansson", "-lmicrohttpd", "-lxml2", "-larchive", "-lpthread", "-lm", "-ldl"]) == 0


def libward_row():
    """bench/sessexec's session and bare medians, the session's p99, and the before build's median and p99
    (or None) (ms), or None."""
    exe = os.path.join(os.path.dirname(WARD) or ".", "bench", "sessexec")
    if not os.access(exe, os.X_OK):
        return None
    env = dict(os.environ)
    env.pop("WARD_BEFORE", None)
    if BEFORE and build_before_sessexec():
        env["WARD_BEFORE"] = BEFORE
    try:
        out = subprocess.run([exe, str(N), "0.03"], capture_output=True, text=True, timeout=600,
                             env=env).stdout.split()
        prev = (float(out[7]), float(out[8])) if len(out) >= 9 else None
        return float(out[1]), float(out[2]), float(out[4]), prev
    except (subprocess.SubprocessError, IndexError, ValueError):
        return None


def migration_line():
    """What a cgroup migration costs here (favordynmods or not): ward doctor's line."""
    try:
        d = json.loads(subprocess.run([WARD, "doctor", "--json"], capture_output=True, text=True,
                                      timeout=60).stdout)
        return d["checks"]["migration"]["detail"]
    except (subprocess.SubprocessError, ValueError, KeyError, TypeError):
        pass
    return "no migration figure"


def start_server(tmp, name, *args, ward=None):
    log = os.path.join(tmp, name + ".log")
    open(log, "w").close()
    p = subprocess.Popen([ward or WARD, "serve", "--listen", "127.0.0.1:0", "--log", log, "--max-sessions", "64",
                          "--client-sessions", "64", *args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        m = re.search(r'"event":"listening","message":"([^ ]*) ', open(log).read())
        if m:
            host, port = m.group(1).rsplit(":", 1)
            return p, http.client.HTTPConnection(host, int(port), timeout=60)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit("bench/session.py: ward serve did not start (%s)" % open(log).read()[-300:])


def call(c, method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    return r.status, data


def timed(c, method, path, body):
    t0 = time.perf_counter()
    st, _ = call(c, method, path, body)
    dt = (time.perf_counter() - t0) * 1000
    if st not in (200, 201):
        sys.exit("bench/session.py: %s %s answered %d" % (method, path, st))
    return dt


def bare_once():
    t0 = time.perf_counter()
    subprocess.call(["/bin/true"])
    return (time.perf_counter() - t0) * 1000


def pss_kb(pid):
    try:
        for line in open("/proc/%d/smaps_rollup" % pid):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants_named(root, name):
    """pids under root (any depth) whose comm is name"""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append((int(d), st[st.index("(") + 1:st.rindex(")")]))
    out, todo = [], [root]
    while todo:
        for pid, comm in kids.get(todo.pop(), []):
            todo.append(pid)
            if comm == name:
                out.append(pid)
    return out


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * 0.99))]


def main():
    tmp = tempfile.mkdtemp(prefix="ward-bench-session.")
    servers = []
    try:
        pooled, cp = start_server(tmp, "pooled", "--pool", "4")
        servers.append(pooled)
        fresh, cf = start_server(tmp, "fresh")
        servers.append(fresh)
        sess, cs = start_server(tmp, "session")
        servers.append(sess)
        st, body = call(cs, "POST", "/sessions", {})
        if st != 201:
            print("Sessions: skipped (POST /sessions answered %d: %s)" % (st, body[:200].decode(errors="replace")))
            return
        sid = json.loads(body)["id"]
        ex = {"argv": ["true"]}
        warm = [(cs, "/sessions/%s/exec" % sid), (cp, "/exec"), (cf, "/exec")]
        if BEFORE:
            prev, cb = start_server(tmp, "session-before", ward=BEFORE)
            servers.append(prev)
            st, body = call(cb, "POST", "/sessions", {})
            if st != 201:
                sys.exit("bench/session.py: the before build's POST /sessions answered %d" % st)
            bid = json.loads(body)["id"]
            warm.append((cb, "/sessions/%s/exec" % bid))
            prevf, cbf = start_server(tmp, "fresh-before", ward=BEFORE)
            servers.append(prevf)
            warm.append((cbf, "/exec"))
        for c, path in warm:
            timed(c, "POST", path, ex)  # warm-up
        lat = {"session": [], "pooled": [], "fresh": [], "health": [], "before": [], "first": [],
               "before-first": [], "burst": [], "before-burst": [], "before-fresh": []}
        bare = []
        for _ in range(N):
            bare.append(bare_once())  # in the same rhythm as the requests: same idle, same load
            time.sleep(0.03)
            lat["health"].append(timed(cs, "GET", "/health", None))
            time.sleep(0.03)
            lat["session"].append(timed(cs, "POST", "/sessions/%s/exec" % sid, ex))
            # a second exec right behind it: a burst after an idle moment
            lat["burst"].append(timed(cs, "POST", "/sessions/%s/exec" % sid, ex))
            time.sleep(0.03)
            if BEFORE:
                lat["before"].append(timed(cb, "POST", "/sessions/%s/exec" % bid, ex))
                lat["before-burst"].append(timed(cb, "POST", "/sessions/%s/exec" % bid, ex))
                time.sleep(0.03)
            lat["pooled"].append(timed(cp, "POST", "/exec", ex))
            time.sleep(0.03)
            lat["fresh"].append(timed(cf, "POST", "/exec", ex))
            time.sleep(0.03)
            if BEFORE:
                lat["before-fresh"].append(timed(cbf, "POST", "/exec", ex))
                time.sleep(0.03)
            # a new session's first exec, 30 ms after the session was made
            for c, key in ((cs, "first"), *(((cb, "before-first"),) if BEFORE else ())):
                st, body = call(c, "POST", "/sessions", {})
                if st != 201:
                    sys.exit("bench/session.py: POST /sessions answered %d" % st)
                nid = json.loads(body)["id"]
                time.sleep(0.03)
                lat[key].append(timed(c, "POST", "/sessions/%s/exec" % nid, ex))
                call(c, "DELETE", "/sessions/%s" % nid)
                time.sleep(0.03)
        # the same exec back to back (no idle time between calls)
        lat["session-b2b"] = [timed(cs, "POST", "/sessions/%s/exec" % sid, ex) for _ in range(N)]
        if BEFORE:
            lat["before-b2b"] = [timed(cb, "POST", "/sessions/%s/exec" % bid, ex) for _ in range(N)]
        call(cs, "DELETE", "/sessions/%s" % sid)

        # memory of idle sessions (a server of its own, no pool: only sessions)
        idle, ci = start_server(tmp, "idle", "--spawners", "0")
        servers.append(idle)
        time.sleep(0.5)
        before = pss_kb(idle.pid)
        ids = []
        for _ in range(IDLE):
            st, body = call(ci, "POST", "/sessions", {})
            if st != 201:
                break
            ids.append(json.loads(body)["id"])
        time.sleep(0.5)
        after = pss_kb(idle.pid)
        inits = descendants_named(idle.pid, "ward-init")
        init_kb = sum(pss_kb(p) for p in inits)
        n = len(ids)
        per_kb = ((after - before) + init_kb) / n if n else 0
        for i in ids:
            call(ci, "DELETE", "/sessions/%s" % i)

        b = med(bare)
        print("## Sessions\n")
        print("bench/session.py: one client, %d requests of each kind interleaved, 30 ms apart, keep-alive "
              "(send to answer), each kind on a server of its own; bare fork+exec of `true` (Python's "
              "subprocess.call) interleaved with them, 30 ms apart too.\n" % N)
        print("| request | median ms | p99 ms | × bare |")
        print("| --- | ---: | ---: | ---: |")
        print("| bare fork+exec of `true` | %.2f | %.2f | 1.00× |" % (b, p99(bare)))
        rows = [("session", "exec of `true` in an existing session"),
                ("session-b2b", "... the same, back to back (no gap between calls)"),
                ("burst", "... the second of two right behind each other, after 30 ms idle"),
                ("first", "a new session's first exec (30 ms after POST /sessions)")]
        if BEFORE:
            rows += [("before", "exec of `true` in an existing session, the before build (WARD_BEFORE)"),
                     ("before-b2b", "... the same, back to back"),
                     ("before-burst", "... the second of two right behind each other, the before build"),
                     ("before-first", "a new session's first exec, the before build")]
        for k, label in (*rows,
                         ("pooled", "POST /exec, pooled (`--pool 4`)"), ("fresh", "POST /exec, fresh sandbox"),
                         *((("before-fresh", "POST /exec, fresh sandbox, the before build"),) if BEFORE else ()),
                         ("health", "GET /health: the HTTP round trip alone (no sandbox)")):
            print("| %s | %.2f | %.2f | %.2f× |" % (label, med(lat[k]), p99(lat[k]), med(lat[k]) / b))
        lib = libward_row()
        if lib:
            print("| exec of `true` in a session through libward (bench/sessexec.c, no HTTP; bare in its "
                  "own run: %.2f ms) | %.2f | %.2f | %.2f× |" % (lib[2], lib[0], lib[1], lib[0] / lib[2]))
            if lib[3]:
                print("| ... the same, the before build's libward (WARD_BEFORE), interleaved in that run | %.2f | "
                      "%.2f | %.2f× |" % (lib[3][0], lib[3][1], lib[3][0] / lib[2]))
        print("\nfresh / pooled POST /exec: %.2f×%s (medians)" % (
            med(lat["fresh"]) / med(lat["pooled"]),
            ", the before build's fresh / pooled: %.2f×" % (med(lat["before-fresh"]) / med(lat["pooled"])) if BEFORE else ""))
        print("\n`ward doctor` on this host: %s\n" % migration_line())
        print("\nAn idle session, ward's own memory (%d sessions; PSS, so pages the server shares with the PID 1s "
              "it cloned count once): the server's PSS changed by %+.0f KiB, their %d PID 1s hold %.0f KiB: "
              "%.0f KiB a session together, so 1 GiB holds about %d idle sessions "
              "(the kernel's own objects for each sandbox — namespaces, the tmpfs superblocks, cgroups — "
              "are not in this figure).\n" % (n, after - before, len(inits), init_kb, per_kb,
                                               (1 << 20) / per_kb if per_kb else 0))
    finally:
        for p in servers:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.call(["rm", "-rf", tmp])


main()
