#!/usr/bin/env python3
"""bench/judge.py — the judge (SPEC §15) in `make bench` (run by bench/run, or alone).

One C program (a+b), compiled once on the host for the baselines, and 100 small
tests, in one run on one machine:
  * bare: the compiled binary run 100 times by fork+exec with the test's stdin
    (subprocess, `parallel` at a time);
  * /exec: 100 POST /exec calls of the same binary (sent as a file of the
    request, argv ./main, the test's stdin), `parallel` clients, a pooled runner;
  * judge: one POST /judge with the source and the 100 tests, `parallel` =
    the core count: compile once (counted in the total), a fresh sandbox a test.
Prints a markdown section on stdout; details on stderr.

  * with ISOLATE_SRC (see bench/isolate.py: isolate built from its source, never
    committed): the same binary run by isolate's `--run` for each test, in boxes
    made once (one per core), `parallel` at a time, with isolate's cgroup mode where
    the host has it;
and the CPU of each: the judge's is the server's and its helpers' (/proc, reaped
children included) across the POST /judge, less the compile's own usage; bare's
and isolate's, the children's rusage of each run.

Knobs (environment): WARD (default build/ward), BENCH_JUDGE_TESTS (100),
BENCH_JUDGE_ROUNDS (3: the median of each is reported), ISOLATE_SRC.
"""
import base64
import concurrent.futures as cf
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import isolate as iso
from procstat import tree_cpu_ms

WARD = os.environ.get("WARD", "build/ward")
N = int(os.environ.get("BENCH_JUDGE_TESTS", "100"))
ROUNDS = int(os.environ.get("BENCH_JUDGE_ROUNDS", "3"))
NCPU = os.cpu_count() or 1
SRC = "#include <stdio.h>\nint main(void){long a,b;if(scanf(\"%ld %ld\",&a,&b)!=2)return 1;printf(\"%ld\\n\",a+b);return 0;}\n"


def start_server(tmp):
    log = os.path.join(tmp, "judge.log")
    open(log, "w").close()
    p = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--log", log, "--max-concurrent", str(NCPU),
                          "--pool", str(NCPU), "--max-body", str(64 << 20)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        m = re.search(r'"event":"listening","message":"([^ ]*) ', open(log).read())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    sys.exit("bench/judge.py: ward serve did not start")


def post(addr, path, body):
    h, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(h, int(port), timeout=600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data)


def isolate_boxes(tmp, binp):
    """isolate and NCPU boxes with the binary in each: (exe, version, box ids, cg args) or None."""
    if not iso.SRC:
        return None
    built = iso.build_isolate(tmp)
    if isinstance(built, str):
        print("bench/judge.py: no isolate row: %s" % built, file=sys.stderr)
        return None
    exe, version = built
    cg = ["--cg"]
    boxes = [iso.BOX + i for i in range(NCPU)]
    for b in boxes:
        r = subprocess.run([exe, "--box-id=%d" % b, *cg, "--init"], capture_output=True, text=True)
        if r.returncode != 0 and cg:
            cg = []
            r = subprocess.run([exe, "--box-id=%d" % b, "--init"], capture_output=True, text=True)
        if r.returncode != 0:
            print("bench/judge.py: no isolate row: %s" % r.stderr.strip()[:200], file=sys.stderr)
            return None
        d = os.path.join(r.stdout.strip(), "box")
        with open(binp, "rb") as f, open(os.path.join(d, "main"), "wb") as g:
            g.write(f.read())
        os.chmod(os.path.join(d, "main"), 0o755)
    return exe, version, boxes, cg


def main():
    tmp = tempfile.mkdtemp(prefix="ward-bench-judge.")
    src = os.path.join(tmp, "main.c")
    binp = os.path.join(tmp, "main")
    open(src, "w").write(SRC)
    subprocess.run(["gcc", "-O2", "-o", binp, src], check=True)
    tests = [{"id": str(i), "stdin": "%d %d\n" % (i, i + 1), "expected_stdout": "%d\n" % (2 * i + 1)} for i in range(N)]
    exe = base64.b64encode(open(binp, "rb").read()).decode()
    box = isolate_boxes(tmp, binp)
    p, addr = start_server(tmp)
    res = {"bare": [], "exec": [], "judge": [], "compile": [], "bare_cpu": [], "judge_cpu": [], "isolate": [],
           "isolate_cpu": []}
    try:
        post(addr, "/judge", {"language": "c", "files": [{"content": SRC}], "tests": tests[:2]})  # warm-up
        for _ in range(ROUNDS):
            c0 = os.times()
            t = time.monotonic()
            with cf.ThreadPoolExecutor(NCPU) as ex:
                outs = list(ex.map(lambda tc: subprocess.run([binp], input=tc["stdin"].encode(),
                                                             capture_output=True).stdout.decode(), tests))
            res["bare"].append(time.monotonic() - t)
            c1 = os.times()
            res["bare_cpu"].append((c1.children_user + c1.children_system - c0.children_user - c0.children_system) * 1000)
            assert outs == [tc["expected_stdout"] for tc in tests], "bare runs gave wrong answers"

            if box:
                iexe, _, boxes, cg = box
                mem = ["--cg-mem=262144"] if cg else ["--mem=262144"]

                def share(k):
                    out = []
                    for tc in tests[k::NCPU]:
                        r = subprocess.run([iexe, "--box-id=%d" % boxes[k], *cg, *mem, "--time=1", "--processes=16",
                                            "--run", "--", "./main"], input=tc["stdin"].encode(),
                                           capture_output=True)
                        out.append(r.stdout.decode() == tc["expected_stdout"])
                    return out
                c0 = os.times()
                t = time.monotonic()
                with cf.ThreadPoolExecutor(NCPU) as ex:
                    ok = [x for part in ex.map(share, range(NCPU)) for x in part]
                res["isolate"].append(time.monotonic() - t)
                c1 = os.times()
                res["isolate_cpu"].append(
                    (c1.children_user + c1.children_system - c0.children_user - c0.children_system) * 1000)
                assert all(ok), "isolate gave wrong answers"

            def one(tc):
                st, a = post(addr, "/exec", {"argv": ["./main"], "stdin": tc["stdin"],
                                             "files": [{"path": "main", "content": exe, "encoding": "base64",
                                                        "mode": 0o755}]})
                return a.get("stdout") == tc["expected_stdout"]
            t = time.monotonic()
            with cf.ThreadPoolExecutor(NCPU) as ex:
                ok = list(ex.map(one, tests))
            res["exec"].append(time.monotonic() - t)
            assert all(ok), "pooled /exec gave wrong answers"

            time.sleep(0.5)  # the pool refilled after the /exec calls
            c0 = tree_cpu_ms(p.pid)
            t = time.monotonic()
            st, a = post(addr, "/judge", {"language": "c", "files": [{"content": SRC}], "tests": tests,
                                          "parallel": NCPU})
            res["judge"].append(time.monotonic() - t)
            assert st == 200 and a["verdict"] == "AC", (st, a.get("verdict"), a.get("error"))
            time.sleep(0.5)  # and after the judge's tests: their refill is theirs
            cu = a["compile"]["usage"]
            res["judge_cpu"].append(tree_cpu_ms(p.pid) - c0 - cu["cpu_user_ms"] - cu["cpu_sys_ms"])
            res["compile"].append(cu["wall_ms"] / 1000)
    finally:
        p.terminate()
        p.wait()
    if box:
        for b in box[2]:
            iso.cleanup_box(box[0], b)
    med = {k: statistics.median(v) for k, v in res.items() if v}
    print(json.dumps(res), file=sys.stderr)
    per = lambda k: med[k] / N * 1000
    print("### Judging: %d tests of a C program, `parallel` = %d (the core count)\n" % (N, NCPU))
    print("| how | total (median of %d) | per test | against bare |" % ROUNDS)
    print("| --- | ---: | ---: | ---: |")
    print("| bare fork+exec of the compiled binary, %d at a time | %.2f s | %.1f ms | 1.0x |" % (NCPU, med["bare"], per("bare")))
    print("| %d pooled POST /exec of the binary, %d clients | %.2f s | %.1f ms | %.1fx |" %
          (N, NCPU, med["exec"], per("exec"), med["exec"] / med["bare"]))
    print("| one POST /judge (compile %.2f s included) | %.2f s | %.1f ms | %.1fx |" %
          (med["compile"], med["judge"], per("judge"), med["judge"] / med["bare"]))
    tests_only = med["judge"] - med["compile"]
    print("| ... its tests alone (total less the compile) | %.2f s | %.1f ms | %.1fx |\n" %
          (tests_only, tests_only / N * 1000, tests_only / med["bare"]))
    print("CPU per test: bare %.2f ms; the judge's tests %.2f ms (the server's and its helpers' CPU across the "
          "POST /judge and its pool refill, less the compile's; /proc, 10 ms ticks)%s.\n" %
          (med["bare_cpu"] / N, med["judge_cpu"] / N,
           "; isolate `--run` %.2f ms: the judge %.2fx isolate's CPU per test" %
           (med["isolate_cpu"] / N, med["judge_cpu"] / med["isolate_cpu"]) if "isolate_cpu" in med else ""))
    if "isolate" in med:
        print("isolate (%s, `--run` in %d boxes made once, %s, 256 MB, 1 s, 16 pids), %d tests %d at a time: "
              "%.2f s, %.1f ms a test, %.1fx bare; one POST /judge is %.2fx its wall, its tests alone %.2fx.\n"
              % (box[1], NCPU, "--cg" if box[3] else "no cgroup mode here", N, NCPU, med["isolate"],
                 med["isolate"] / N * 1000, med["isolate"] / med["bare"], med["judge"] / med["isolate"],
                 tests_only / med["isolate"]))
    print("Each test is a fresh sandbox (a pooled one when the pool has one ready) with the build's files "
          "handed over in memory; the compile runs once, in its own sandbox, and is counted in the total.")


if __name__ == "__main__":
    main()
