#!/bin/bash
# The Judge0 dialect as a shared service (issue 30, items 6 and 7):
# - GET /submissions/batch is made on a worker, its size bounded before it
#   is made and counted in the answer budget: a token given twice is a 400
#   (twenty copies of one 8 MB submission were a 720 MB answer), and an
#   answer larger than the client's share of --max-answer-total is a 503,
#   never built;
#   A poll makes no sandbox: it is answered while the dialect's runs hold
#   every slot (a light route).
# - --judge0-max-queue counts waiting work only, each client within its
#   share (--judge0-client-queue): finished submissions of one client never
#   lock the others out for --judge0-keep, and one client's waiting ones
#   leave the others room; a client over its share is refused before its
#   body waits for a worker.
. "$(dirname "$0")/dialect.bash"

printf 'alice tok-alice-0123456789\nbob tok-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_dialects shares --judge0 127.0.0.1:0 --token-file "$SERVE_TMP/tokens" --judge0-max-queue 40 \
	--max-output 65536 --max-body 8388608 --max-answer-client 70000000 || exit 0
J=$(dialect_url judge0)

out=$(timeout 600 /usr/bin/python3 - "$J" "$DDIR" <<'PY'
import json, sys, time
J = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import j0http
def call(method, path, body=None, who="alice"):
    return j0http.call(J, method, path, body, f"tok-{who}-0123456789")
def settle(tokens, who="alice"):
    for _ in range(1200):
        c, b = call("GET", "/submissions/batch?fields=status_id&tokens=" + ",".join(tokens), who=who)
        if c == 200 and all(x["status_id"] > 2 for x in b["submissions"]):
            return True
        time.sleep(0.1)
    return False
out = {}
quick = {"language_id": 71, "source_code": "print(1)"}
# item 6: four 3.5 MB submissions (each source all \x01: 21 MB as JSON)
import base64
big = {"language_id": 71, "source_code": base64.b64encode(b"#" + b"\x01" * 3500000 + b"\nprint(1)").decode()}
bt = []
for _ in range(4):
    c, a = call("POST", "/submissions?base64_encoded=true", big)
    bt.append(a.get("token", "") if isinstance(a, dict) else "")
t1, t2 = bt[0], bt[1]
out["big"] = [all(bt), settle(bt)]
c, a = call("GET", f"/submissions/batch?fields=status_id&tokens={t1},{t1}")
out["twice"] = [c, a]
c, a = call("GET", f"/submissions/batch?fields=status_id&tokens={t1},{t2}")
out["distinct"] = [c, [x["status_id"] for x in a["submissions"]] if c == 200 else a]
c, a = call("GET", "/submissions/batch?fields=source_code&tokens=" + ",".join(bt))
out["over_share"] = [c, a if c != 200 else len(json.dumps(a))]
c, a = call("GET", f"/submissions/{t1}?fields=source_code,status_id")
out["one_big"] = [c, a.get("status_id") if isinstance(a, dict) else a]
# item 7: alice's 60 finished submissions (more than --judge0-max-queue) do not lock bob out
toks, done = [], True
for _ in range(3): # (her share of waiting work is 20: one batch at a time)
    c, a = call("POST", "/submissions/batch", {"submissions": [quick] * 20})
    toks += [x["token"] for x in a] if c == 201 else []
    done = done and settle(toks[-20:])
out["alice60"] = [len(toks), done]
for _ in range(16): # one at a time: the old count (every one held) reached --judge0-max-queue here
    c, a = call("POST", "/submissions", quick)
    if c == 201:
        settle([a["token"]])
c, a = call("POST", "/submissions", quick, who="bob")
out["bob_after_finished"] = [c, a]
c, a = call("POST", "/submissions", quick)
out["alice_after_finished"] = [c, a]
settle([a.get("token", "")] if isinstance(a, dict) else [])
# alice's waiting share (20 of 40): her 21st waiting one is refused, bob's is not
slow = {"language_id": 71, "source_code": "import time; time.sleep(1)"}
c, a = call("POST", "/submissions/batch", {"submissions": [slow] * 20})
out["alice_slow20"] = c
slow_toks = [x["token"] for x in a] if c == 201 else []
c, b = call("GET", "/submissions/batch?fields=status_id&tokens=" + ",".join(slow_toks))
out["poll_busy"] = [c, sorted({x["status_id"] for x in b["submissions"]}) if c == 200 else b]
c, a = call("POST", "/submissions", slow)
out["alice_21st"] = [c, a]
c, a = call("POST", "/submissions", quick, who="bob")
out["bob_beside"] = [c, a]
print(json.dumps(out))
PY
)
expect_eq "setup: four 3.5 MB submissions, finished" "[True, True]" "$(jg "$out" 'd["big"]')"
expect_eq "hostile: a token given twice in GET /submissions/batch is a 400 (no answer of repeats)" \
	"400 a token is given twice in tokens: give each token once" "$(jg "$out" 'str(d["twice"][0]) + " " + d["twice"][1]["error"]')"
expect_eq "GET /submissions/batch of two tokens, from a worker: both finished" "200 [3, 3]" "$(jg "$out" 'str(d["distinct"][0]) + " " + str(d["distinct"][1])')"
expect_eq "hostile: a batch answer larger than the client's share of the answer budget: 503, never built" 503 "$(jg "$out" 'd["over_share"][0]')"
expect_contains "hostile: ... the 503 says which budget" "$(jg "$out" 'd["over_share"][1]')" "--max-answer-client"
expect_eq "one submission's large answer (within the share) still comes" "200 3" "$(jg "$out" 'str(d["one_big"][0]) + " " + str(d["one_big"][1])')"
expect_eq "hostile: alice's finished submissions do not count: she sends 60, one batch at a time (--judge0-max-queue 40)" "[60, True]" "$(jg "$out" 'd["alice60"]')"
expect_eq "hostile: alice's finished submissions do not lock bob out (201, not 503 for --judge0-keep)" 201 "$(jg "$out" 'd["bob_after_finished"][0]')"
expect_eq "... nor alice herself" 201 "$(jg "$out" 'd["alice_after_finished"][0]')"
expect_eq "setup: alice has 20 waiting" 201 "$(jg "$out" 'd["alice_slow20"]')"
expect_eq "a batch poll is answered while her group (20 runs of 1 s) holds every slot: still In Queue/Processing" \
	"True" "$(jg "$out" 'd["poll_busy"][0] == 200 and max(d["poll_busy"][1]) <= 2')"
expect_eq "hostile: alice's 21st waiting submission is over her share (--judge0-client-queue, 20): 503 queue is full" \
	"503 queue is full" "$(jg "$out" 'str(d["alice_21st"][0]) + " " + d["alice_21st"][1]["error"]')"
expect_eq "... while bob's comes in beside her (201)" 201 "$(jg "$out" 'd["bob_beside"][0]')"
expect_contains "the log names alice's share" "$(cat "$SRV_LOG")" "its share, --judge0-client-queue, is 20"
stop_dialects shares
