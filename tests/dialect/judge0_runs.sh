#!/bin/bash
# Judge0's number_of_runs (SPEC §16): the program runs that many times
# (compiled once), one run at a time, the first run that is not Accepted
# ends them; time and memory are the averages of the runs, the other fields
# the last run's; more than --judge0-max-runs (default 20, Judge0's
# max_number_of_runs) is a 422.  Runs are counted by /metrics'
# ward_judge_tests_total.
. "$(dirname "$0")/dialect.bash"

start_dialects runs --judge0 127.0.0.1:0 --judge0-max-runs 5 || exit 0
J=$(dialect_url judge0)

timeout 300 /usr/bin/python3 - "$J" "$URL" <<'PY'
import json, sys, time, urllib.request, urllib.error
J, N = sys.argv[1], sys.argv[2]
def check(name, ok, detail=""):
    print(("PASS: " if ok else "FAIL: ") + "judge0 runs: " + name + ("" if ok else ": " + str(detail)[:600]))
def call(url, body=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
def metric(name):
    for l in call(N + "/metrics")[1].splitlines():
        if l.startswith(name + " "):
            return int(l.split()[1])
    return -1
F = "&fields=status,stdout,time,memory,wall_time,number_of_runs,compile_output"
code, cfg = call(J + "/config_info")
check("config_info: number_of_runs 1, max_number_of_runs from --judge0-max-runs", cfg["number_of_runs"] == 1 and cfg["max_number_of_runs"] == 5, cfg)

c = '#include <stdio.h>\nint main(){int a,b;if(scanf("%d %d",&a,&b)!=2)return 1;printf("%d\\n",a+b);}'
t0, k0 = metric("ward_judge_tests_total"), metric("ward_judge_compiles_total")
code, a = call(J + "/submissions?wait=true" + F, {"language_id": 50, "source_code": c, "stdin": "2 40", "expected_output": "42", "number_of_runs": 3})
check("3 runs of an Accepted C program: Accepted, number_of_runs 3", code == 201 and a["status"]["id"] == 3 and a["number_of_runs"] == 3 and a["stdout"] == "42\n", a)
check("... it ran 3 times, compiled once", (metric("ward_judge_tests_total") - t0, metric("ward_judge_compiles_total") - k0) == (3, 1),
      (metric("ward_judge_tests_total") - t0, metric("ward_judge_compiles_total") - k0))
check("... time a decimal string, memory whole KB (the averages)", isinstance(a["time"], str) and float(a["time"]) >= 0 and isinstance(a["memory"], int) and a["memory"] > 0, a)

t0 = metric("ward_judge_tests_total")
code, a = call(J + "/submissions?wait=true" + F, {"language_id": 50, "source_code": c, "stdin": "2 40", "expected_output": "41", "number_of_runs": 5})
check("a Wrong Answer ends the runs at the first (Judge0's loop)", a["status"]["id"] == 4 and metric("ward_judge_tests_total") - t0 == 1, (a, metric("ward_judge_tests_total") - t0))
py = "import os, random\nprint(1)\n"
t0 = metric("ward_judge_tests_total")
code, a = call(J + "/submissions?wait=true" + F, {"language_id": 71, "source_code": py, "number_of_runs": 2})
check("an interpreter, 2 runs: both ran", a["status"]["id"] == 3 and metric("ward_judge_tests_total") - t0 == 2, a)

# without wait, and in a batch next to submissions of one run (never grouped with them)
code, toks = call(J + "/submissions/batch", {"submissions": [
    {"language_id": 50, "source_code": c, "stdin": "1 1", "expected_output": "2", "number_of_runs": 4},
    {"language_id": 50, "source_code": c, "stdin": "1 2", "expected_output": "3"},
    {"language_id": 50, "source_code": c, "stdin": "1 3", "expected_output": "4"}]})
tl = ",".join(t["token"] for t in toks)
for _ in range(600):
    code, b = call(J + "/submissions/batch?fields=status_id,number_of_runs,stdout&tokens=" + tl)
    if all(x["status_id"] > 2 for x in b["submissions"]):
        break
    time.sleep(0.1)
check("a batch mixing 4 runs and single runs: each its own result", [(x["status_id"], x["number_of_runs"], x["stdout"]) for x in b["submissions"]] == [(3, 4, "2\n"), (3, 1, "3\n"), (3, 1, "4\n")], b)

for v, msg in ((0, "must be greater than 0"), (6, "must be less than or equal to 5"), ("x", "is not a number")):
    code, a = call(J + "/submissions", {"language_id": 71, "source_code": "print(1)", "number_of_runs": v})
    check(f"number_of_runs {v!r}: 422 {msg}", code == 422 and a == {"number_of_runs": [msg]}, a)
PY
stop_dialects runs
