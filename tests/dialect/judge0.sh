#!/bin/bash
# The Judge0 dialect (SPEC §16): ward serve --judge0, driven by a client
# replaying the official SDK's requests and the two hand-written patterns
# (tests/dialect/judge0_client.py), then the submission cap under 10,000
# submissions without wait, and the callback allow-list.
. "$(dirname "$0")/dialect.bash"

start_dialects judge0 --judge0 127.0.0.1:0 --judge0-callback-allow localhost --judge0-max-queue 200 || exit 0
J=$(dialect_url judge0)
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
expect_eq "hostile: ... the server's memory stays bounded (< 200 MB more)" 1 "$(( rss1 - rss0 < 200000 ? 1 : 0 ))"
