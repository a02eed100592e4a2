#!/bin/bash
# The Judge0 dialect (SPEC §16): ward serve --judge0; compile once per
# batch, counted by /metrics' ward_judge_compiles_total; a client
# replaying the official SDK's requests and the two hand-written patterns
# (tests/dialect/judge0_client.py), then the submission cap under 10,000
# submissions without wait, and the callback allow-list.
. "$(dirname "$0")/dialect.bash"

start_dialects judge0 --judge0 127.0.0.1:0 --judge0-callback-allow localhost --judge0-max-queue 200 || exit 0
J=$(dialect_url judge0)

# Compile once per batch (SPEC §16), counted by the server itself: /metrics'
# ward_judge_compiles_total (one per judge job whose language compiles).
# On a fresh server, so that nothing else compiles meanwhile: a batch of 5
# submissions of one C source adds 1 compile; 5 single submissions of it 5;
# a batch of 5 with two compiler_options 2; one native /judge of 5 tests 1.
out=$(timeout 300 /usr/bin/python3 - "$J" "$URL" "$DDIR/programs/main.c" <<'PY'
import json, sys, time, urllib.request
J, N, src = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
def call(url, body=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read().decode()
def compiles():
    for l in call(N + "/metrics").splitlines():
        if l.startswith("ward_judge_compiles_total "):
            return int(l.split()[1])
    return -1
sub = lambda i, **kw: {"language_id": 50, "source_code": src, "stdin": f"{i} 1", "expected_output": f"sum {i+1} args 0", **kw}
def settle(tokens):
    for _ in range(1200):
        b = json.loads(call(J + "/submissions/batch?fields=status_id&tokens=" + ",".join(tokens)))
        ids = [x["status_id"] for x in b["submissions"]]
        if all(i > 2 for i in ids):
            return ids
        time.sleep(0.1)
    return ids
out = {}
c = compiles()
toks = [t["token"] for t in json.loads(call(J + "/submissions/batch", {"submissions": [sub(i) for i in range(5)]}))]
out["batch"] = [settle(toks), compiles() - c]
c = compiles()
toks = [json.loads(call(J + "/submissions", sub(i)))["token"] for i in range(5)]
out["singles"] = [settle(toks), compiles() - c]
c = compiles()
subs = [sub(i, compiler_options="-O1" if i < 3 else "-O0") for i in range(5)]
toks = [t["token"] for t in json.loads(call(J + "/submissions/batch", {"submissions": subs}))]
out["options"] = [settle(toks), compiles() - c]
c = compiles()
a = json.loads(call(N + "/judge", {"language": "c", "files": [{"content": src}],
                                   "tests": [{"stdin": f"{i} 1", "expected_stdout": f"sum {i+1} args 0"} for i in range(5)]}))
out["native"] = [a["verdict"], compiles() - c]
print(json.dumps(out))
PY
)
expect_eq "compile once: a batch of 5 submissions of one C source: all Accepted" "[3, 3, 3, 3, 3]" "$(jg "$out" 'd["batch"][0]')"
expect_eq "compile once: ... and ward_judge_compiles_total adds exactly 1" 1 "$(jg "$out" 'd["batch"][1]')"
expect_eq "compile once: 5 single submissions of it: all Accepted" "[3, 3, 3, 3, 3]" "$(jg "$out" 'd["singles"][0]')"
expect_eq "compile once: ... and add 5 compiles (one each)" 5 "$(jg "$out" 'd["singles"][1]')"
expect_eq "compile once: a batch of 5 with two compiler_options: all Accepted" "[3, 3, 3, 3, 3]" "$(jg "$out" 'd["options"][0]')"
expect_eq "compile once: ... and adds 2 compiles (the key has the options)" 2 "$(jg "$out" 'd["options"][1]')"
expect_eq "compile once: one native POST /judge of 5 tests adds 1 compile" "AC 1" "$(jg "$out" 'd["native"][0] + " " + str(d["native"][1])')"

timeout 500 /usr/bin/python3 "$DDIR/judge0_client.py" "$J" "$DDIR/programs"

# 10,000 submissions without wait: the cap holds (503 queue is full), memory bounded
rss0=$(awk '/VmRSS/{print $2}' /proc/$SRV_PID/status)
out=$(/usr/bin/python3 - "$J" <<'PY'
import json, sys, urllib.request, urllib.error, collections
c = collections.Counter()
body = json.dumps({"language_id": 71, "source_code": "import time; time.sleep(0.01)"}).encode()
for i in range(10000):
    try:
        with urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/submissions", data=body, headers={"Content-Type": "application/json"}), timeout=30) as r:
            c[r.status] += 1
    except urllib.error.HTTPError as e:
        c[(e.code, json.loads(e.read()).get("error"))] += 1
print(json.dumps({str(k): v for k, v in c.items()}))
PY
)
rss1=$(awk '/VmRSS/{print $2}' /proc/$SRV_PID/status)
expect_contains "hostile: 10,000 submissions without wait: the cap answers 503 queue is full" "$out" '(503, '"'"'queue is full'"'"')'
# (under ASan its quarantine keeps what was freed resident: 256 MB more allowed)
cap=$(( ${WARD_ASAN:-0} == 1 ? 460000 : 200000 ))
expect_eq "hostile: ... the server's memory stays bounded (< $cap KB more: $((rss1 - rss0)) KB)" 1 "$(( rss1 - rss0 < cap ? 1 : 0 ))"
stop_dialects judge0
