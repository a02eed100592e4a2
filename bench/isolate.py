#!/usr/bin/env python3
"""bench/isolate.py — ward against isolate's `--run` in a prepared box (issue 35.1), in `make bench`.

One run, interleaved, each sample the same command (`/bin/true`) under the same limits
(256 MB of memory, 1 s of CPU, 16 pids):
  * `isolate --run` in a box made once (`--init` before the loop): the unit a Judge0 or
    Piston worker repeats;
  * `ward run -- /bin/true` (a fresh sandbox, the whole process);
  * a pooled `POST /exec` (`ward serve --pool 4`, one client, keep-alive);
  * the before build's `ward run` (WARD_BEFORE), when given.
Wall time per sample (spawn to exit, or request to answer), and CPU: for isolate and `ward
run`, the children's rusage of each sample (every process of the tree is reaped inside it);
for the server, the CPU of it and its spawner helpers (their own and their reaped
children's, from /proc) over the whole loop, divided by the requests, after the pool has
refilled.

isolate is never committed nor installed: it is built here from a source tree given by
ISOLATE_SRC (e.g. `git archive v1.10.1` of github.com/ioi/isolate: 1.10.1 is the last
release with cgroup v1, 2.x needs cgroup v2), into a temporary directory with a config of
its own (boxes under it, uids 2900000+, ward's are 3000000+).  Without ISOLATE_SRC, without
libcap's headers, or when isolate cannot make a box here, the section says so and the run
goes on.  nsjail (NSJAIL, a binary) gets a row the same way; Debian 12 does not package it.

Knobs (environment): WARD (default build/ward), WARD_BEFORE, ISOLATE_SRC, NSJAIL,
BENCH_ISOLATE_N (100 samples of each).  Prints a markdown section on stdout.
"""
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from procstat import tree_cpu_ms

WARD = os.environ.get("WARD", "build/ward")
BEFORE = os.environ.get("WARD_BEFORE", "")
SRC = os.environ.get("ISOLATE_SRC", "")
NSJAIL = os.environ.get("NSJAIL", "")
N = int(os.environ.get("BENCH_ISOLATE_N", "100"))
BOX = 900 + os.getpid() % 99  # a box id of this run's own


def skip(why):
    print("## ward against isolate and nsjail\n")
    print("Skipped: %s.\n" % why)
    sys.exit(0)


def build_isolate(tmp):
    """isolate built from SRC into tmp, with its config there; (path, version line) or a reason (str)."""
    if not SRC or not os.path.isfile(os.path.join(SRC, "isolate.c")):
        return "no isolate source tree (set ISOLATE_SRC to a checkout of github.com/ioi/isolate, e.g. v1.10.1 " \
               "on cgroup v1, 2.x on cgroup v2)"
    build = os.path.join(tmp, "isolate-build")
    shutil.copytree(SRC, build, ignore=shutil.ignore_patterns(".git", "*.o", "isolate"))
    cf = os.path.join(tmp, "isolate.cf")
    boxes = os.path.join(tmp, "boxes")
    os.mkdir(boxes, 0o700)
    with open(cf, "w") as f:
        f.write("box_root = %s\ncg_root = /sys/fs/cgroup\nfirst_uid = 2900000\nfirst_gid = 2900000\n"
                "num_boxes = 1000\n" % boxes)
    r = subprocess.run(["make", "-C", build, "isolate", "CONFIG=" + cf], capture_output=True, text=True)
    exe = os.path.join(build, "isolate")
    if r.returncode != 0 or not os.access(exe, os.X_OK):
        return "isolate did not build from %s (libcap's headers: apt-get install libcap-dev): %s" % (
            SRC, (r.stderr or r.stdout).strip().splitlines()[-1:])
    v = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.splitlines()
    return exe, (v[0] if v else "isolate, version unknown")


def cleanup_box(exe, box):
    """isolate's --cleanup of box, and the box's cgroups (isolate 1.x leaves them for the next --init)."""
    for cg in (["--cg"], []):
        subprocess.run([exe, "--box-id=%d" % box, *cg, "--cleanup"], capture_output=True)
    root = "/sys/fs/cgroup"
    for d in [root] + [os.path.join(root, c) for c in os.listdir(root)]:
        try:
            os.rmdir(os.path.join(d, "box-%d" % box))
        except OSError:
            pass


def cgroup_v2():
    return os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def run_once(argv, env=None):
    """wall ms and CPU ms (the tree's, reaped) of one run; None when it did not exit 0."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    p.returncode = 0
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return wall, (ru.ru_utime + ru.ru_stime) * 1000


def start_server(tmp):
    log = os.path.join(tmp, "serve.log")
    open(log, "w").close()
    p = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--log", log, "--pool", "4"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        m = re.search(r'"event":"listening","message":"([^ ]*) ', open(log).read())
        if m:
            host, port = m.group(1).rsplit(":", 1)
            return p, http.client.HTTPConnection(host, int(port), timeout=60)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit("bench/isolate.py: ward serve did not start (%s)" % open(log).read()[-300:])


EXEC = json.dumps({"argv": ["/bin/true"], "limits": {"memory_mb": 256, "cpu_seconds": 1, "pids": 16}})


def post_exec(c):
    t0 = time.perf_counter()
    c.request("POST", "/exec", body=EXEC, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    wall = (time.perf_counter() - t0) * 1000
    if r.status != 200 or json.loads(body).get("exit_code") != 0:
        sys.exit("bench/isolate.py: POST /exec answered %d: %s" % (r.status, body[:200]))
    return wall


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def main():
    tmp = tempfile.mkdtemp(prefix="ward-bench-isolate.")
    server = None
    iso = None
    try:
        built = build_isolate(tmp)
        if isinstance(built, str):
            skip(built)
        iso, version = built
        cg = ["--cg"]
        init = subprocess.run([iso, "--box-id=%d" % BOX, *cg, "--init"], capture_output=True, text=True)
        if init.returncode != 0:  # no cgroup mode here (e.g. 1.x on v2): isolate's own limits only
            cg = []
            init = subprocess.run([iso, "--box-id=%d" % BOX, "--init"], capture_output=True, text=True)
            if init.returncode != 0:
                skip("%s cannot make a box here: %s" % (version, init.stderr.strip()[:200]))
        mem = ["--cg-mem=262144"] if cg else ["--mem=262144"]
        kinds = {
            "isolate": [iso, "--box-id=%d" % BOX, *cg, *mem, "--time=1", "--processes=16", "--run", "--",
                        "/bin/true"],
            "ward": [WARD, "run", "--memory", "256", "--cpu", "1", "--pids", "16", "--", "/bin/true"],
        }
        if BEFORE:
            kinds["before"] = [BEFORE, *kinds["ward"][1:]]
        if NSJAIL and os.access(NSJAIL, os.X_OK):
            kinds["nsjail"] = [NSJAIL, "-Mo", "-q", "--rlimit_as", "256", "--time_limit", "1", "--rlimit_cpu", "1",
                               "--max_cpus", "1", "-R", "/usr", "-R", "/lib", "-R", "/lib64", "-R", "/bin",
                               "--", "/bin/true"]
        for k, argv in kinds.items():  # each once, and it must work
            if run_once(argv) is None:
                skip("%s did not exit 0 once on its own (%s)" % (k, " ".join(argv)))
        server, c = start_server(tmp)
        for _ in range(5):
            post_exec(c)
        time.sleep(0.5)
        wall = {k: [] for k in kinds}
        cpu = {k: [] for k in kinds}
        wall["pooled"] = []
        srv_cpu = 0.0
        order = list(kinds.items())
        for i in range(N):
            # rotated each round: on cgroup v1 the first move into a cgroup after an idle moment
            # waits for an RCU grace period and those right behind it do not, so no kind is always first
            for k, argv in order[i % len(order):] + order[:i % len(order)]:
                r = run_once(argv)
                if r:
                    wall[k].append(r[0])
                    cpu[k].append(r[1])
                time.sleep(0.01)
            c0 = tree_cpu_ms(server.pid)
            wall["pooled"].append(post_exec(c))
            time.sleep(0.05)  # the pool refills: its CPU is this request's
            srv_cpu += tree_cpu_ms(server.pid) - c0
        pooled_cpu = srv_cpu / N
        ref_w, ref_c = med(wall["isolate"]), med(cpu["isolate"])
        print("## ward against isolate and nsjail\n")
        print("bench/isolate.py: `/bin/true` under 256 MB, 1 s of CPU and 16 pids, %d samples of each kind "
              "interleaved (the order rotated each round), 10 ms apart; %s (built from ISOLATE_SRC%s), kernel %s, cgroup %s; medians. CPU: the "
              "children's rusage of each sample; the pooled request's: the server's and its helpers' CPU "
              "(/proc, reaped children included) across each request and its pool refill.\n"
              % (N, version, ", `--cg`" if cg else ", no cgroup mode here", os.uname().release,
                 "v2" if cgroup_v2() else "v1"))
        print("| | wall ms | × isolate `--run` | CPU ms | × isolate |")
        print("| --- | ---: | ---: | ---: | ---: |")
        label = {"isolate": "isolate `--run` in a prepared box", "ward": "`ward run -- /bin/true`",
                 "before": "`ward run`, the before build (WARD_BEFORE)", "nsjail": "nsjail `-Mo`"}
        for k in kinds:
            w, cp = med(wall[k]), med(cpu[k])
            print("| %s | %.2f | %.2f× | %.2f | %.2f× |" % (label[k], w, w / ref_w, cp, cp / ref_c))
        w = med(wall["pooled"])
        print("| pooled `POST /exec` (`--pool 4`, one client, HTTP included) | %.2f | %.2f× | %.2f | %.2f× |"
              % (w, w / ref_w, pooled_cpu, pooled_cpu / ref_c))
        if not (NSJAIL and os.access(NSJAIL, os.X_OK)):
            print("\nnsjail: no row (NSJAIL names no binary; Debian 12 does not package it).")
        print()
    finally:
        if server:
            server.terminate()
            server.wait()
        if iso:
            cleanup_box(iso, BOX)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
