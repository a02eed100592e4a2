#!/usr/bin/env python3
"""bench/judge0.py — the Judge0 dialect (SPEC §16) in `make bench` (run by bench/run, or alone).

One C program (a+b) and 20 inputs, one server (`--listen` and `--judge0`), in
one run, the three ways alternated round by round (the order rotates):
  * batch: the Judge0 way, POST /submissions/batch of 20 submissions of the
    source (one a test), then GET /submissions/batch?tokens=... until all are
    done (every BENCH_JUDGE0_POLL seconds); the dialect makes them one judge
    job, compiled once;
  * native: the same 20 tests as one POST /judge (`parallel` = the core count);
  * singles: 20 POST /submissions?wait=true, the core count of clients at a
    time: a job, so a compile, each.
Each way's compiles are read from the server's own /metrics
(ward_judge_compiles_total) before and after.  Prints a markdown section on
stdout; details on stderr.

Knobs (environment): WARD (default build/ward), BENCH_JUDGE0_ROUNDS (15: the
median of each is reported), BENCH_JUDGE0_POLL (0.02 s).
"""
import calendar
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

WARD = os.environ.get("WARD", "build/ward")
ROUNDS = int(os.environ.get("BENCH_JUDGE0_ROUNDS", "15"))
POLL = float(os.environ.get("BENCH_JUDGE0_POLL", "0.02"))
N = 20  # Judge0's max_submission_batch_size
NCPU = os.cpu_count() or 1
SRC = "#include <stdio.h>\nint main(void){long a,b;if(scanf(\"%ld %ld\",&a,&b)!=2)return 1;printf(\"%ld\\n\",a+b);return 0;}\n"
TESTS = [("%d %d\n" % (i, 7 * i + 3), "%d\n" % (8 * i + 3)) for i in range(N)]


def start_server(tmp):
    log = os.path.join(tmp, "judge0.log")
    open(log, "w").close()
    args = [WARD, "serve", "--listen", "127.0.0.1:0", "--judge0", "127.0.0.1:0", "--log", log,
            "--max-concurrent", str(NCPU), "--pool", str(NCPU), "--judge0-max-queue", "1000"]
    if os.path.exists("languages.json"):
        args += ["--languages", "languages.json"]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        text = open(log).read()
        n = re.search(r'"event":"listening","message":"([^ ]*) ', text)
        j = re.search(r'"event":"listening-dialect","message":"judge0 ([^"]*)"', text)
        if n and j:
            return p, n.group(1), j.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    sys.exit("bench/judge0.py: ward serve did not start")


class Client:
    """One keep-alive connection, as a Judge0 client library holds one."""

    def __init__(self, addr):
        h, port = addr.rsplit(":", 1)
        self.c = http.client.HTTPConnection(h, int(port), timeout=600)

    def call(self, method, path, body=None):
        self.c.request(method, path, json.dumps(body) if body is not None else None,
                       {"Content-Type": "application/json"})
        r = self.c.getresponse()
        return r.status, json.loads(r.read())

    def close(self):
        self.c.close()


def compiles(addr):
    c = Client(addr)
    c.c.request("GET", "/metrics")
    text = c.c.getresponse().read().decode()
    c.close()
    m = re.search(r"^ward_judge_compiles_total (\d+)$", text, re.M)
    return int(m.group(1)) if m else -1


def sub(i):
    return {"language_id": 50, "source_code": SRC, "stdin": TESTS[i][0], "expected_output": TESTS[i][1]}


def way_batch(native, j0):
    c = Client(j0)
    st, toks = c.call("POST", "/submissions/batch?base64_encoded=false", {"submissions": [sub(i) for i in range(N)]})
    assert st == 201 and len(toks) == N, (st, toks)
    path = "/submissions/batch?base64_encoded=false&fields=status_id,stdout,created_at,finished_at&tokens=" + ",".join(t["token"] for t in toks)
    while True:
        st, b = c.call("GET", path)
        if all(x["status_id"] > 2 for x in b["submissions"]):
            break
        time.sleep(POLL)
    c.close()
    got = [(x["status_id"], x["stdout"]) for x in b["submissions"]]
    assert got == [(3, t[1]) for t in TESTS], got
    # the server's own span, without the polling: first created_at to last finished_at
    ts = lambda v: calendar.timegm(time.strptime(v[:19], "%Y-%m-%dT%H:%M:%S")) + float(v[19:-1])
    return max(ts(x["finished_at"]) for x in b["submissions"]) - min(ts(x["created_at"]) for x in b["submissions"])


def way_native(native, j0):
    c = Client(native)
    st, a = c.call("POST", "/judge", {"language": "c", "files": [{"content": SRC}], "parallel": NCPU,
                                      "tests": [{"id": str(i), "stdin": t[0], "expected_stdout": t[1]}
                                                for i, t in enumerate(TESTS)]})
    c.close()
    assert st == 200 and a["verdict"] == "AC", (st, a.get("verdict"), a.get("error"))


def way_singles(native, j0):
    def one(i):
        c = Client(j0)
        st, a = c.call("POST", "/submissions?base64_encoded=false&wait=true&fields=status_id,stdout", sub(i))
        c.close()
        return st == 201 and a["status_id"] == 3 and a["stdout"] == TESTS[i][1]
    with cf.ThreadPoolExecutor(NCPU) as ex:
        ok = list(ex.map(one, range(N)))
    assert all(ok), ok


WAYS = {"batch": way_batch, "native": way_native, "singles": way_singles}


def main():
    tmp = tempfile.mkdtemp(prefix="ward-bench-judge0.")
    p, native, j0 = start_server(tmp)
    res = {k: [] for k in WAYS}
    res["span"] = []
    comp = {k: [] for k in WAYS}
    try:
        for f in WAYS.values():  # warm-up: the pool, the page cache, gcc
            f(native, j0)
        order = list(WAYS)
        for r in range(ROUNDS):
            for k in order[r % 3:] + order[:r % 3]:
                c0 = compiles(native)
                t = time.monotonic()
                span = WAYS[k](native, j0)
                res[k].append(time.monotonic() - t)
                if span is not None:
                    res["span"].append(span)
                comp[k].append(compiles(native) - c0)
    finally:
        p.terminate()
        p.wait()
    print(json.dumps({"seconds": res, "compiles": comp}), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in res.items()}
    paired = statistics.median(b / n for b, n in zip(res["batch"], res["native"]))
    cmp_ = {k: "/".join(sorted({str(x) for x in v})) for k, v in comp.items()}
    print("### Judge0 dialect: a batch of %d submissions of one C program, %d cores\n" % (N, NCPU))
    print("| how | total (median of %d, alternated) | per submission | against native | compiles (/metrics) |" % ROUNDS)
    print("| --- | ---: | ---: | ---: | ---: |")
    print("| one native POST /judge of the %d tests, `parallel` %d | %.3f s | %.1f ms | 1.00x | %s |" %
          (N, NCPU, med["native"], med["native"] / N * 1000, cmp_["native"]))
    print("| Judge0 POST /submissions/batch, then GET .../batch every %g s until done | %.3f s | %.1f ms | %.2fx | %s |" %
          (POLL, med["batch"], med["batch"] / N * 1000, med["batch"] / med["native"], cmp_["batch"]))
    print("| ... the server's span of it (first `created_at` to last `finished_at`, no polling) | %.3f s | %.1f ms | %.2fx | |" %
          (med["span"], med["span"] / N * 1000, med["span"] / med["native"]))
    print("| %d Judge0 POST /submissions?wait=true, %d clients | %.3f s | %.1f ms | %.2fx | %s |\n" %
          (N, NCPU, med["singles"], med["singles"] / N * 1000, med["singles"] / med["native"], cmp_["singles"]))
    print("The dialect adds %+.1f %% over the native job, polling included (%+.1f %% as the median of each "
          "round's batch/native ratio; the goal: at most +10 %%); compiling once, the batch takes %.2fx less time "
          "than %d single submissions that compile each." %
          ((med["batch"] / med["native"] - 1) * 100, (paired - 1) * 100, med["singles"] / med["batch"], N))


if __name__ == "__main__":
    main()
