#!/bin/bash
# tests/e2b/tokens.sh — a sandbox's traffic token (trafficAccessToken, what
# an owner gives to whoever may only see its ports) opens its ports and its
# code interpreter, never envd: no file read, no process started with it
# alone (review finding 4); the envd token does both.  Raw HTTP.
. "$(dirname "$0")/lib.bash"
start_alice tokens || exit 1
PYTHONPATH=$E2B_DIR timeout -k 5 120 python3 - "$E2B_URL" <<'PY'
import json, sys, urllib.error, urllib.request
from raw import checker, create, envelope
url = sys.argv[1]
ok = checker("e2b tokens")
sb = create(url)
sid, acc, tra = sb["sandboxID"], sb["envdAccessToken"], sb["trafficAccessToken"]

def call(path, headers, data=None, ctype=None):
    h = dict(headers, **{"E2b-Sandbox-Id": sid})
    if ctype:
        h["Content-Type"] = ctype
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, data=data, headers=h), timeout=60) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code

start = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "echo pwned"]}})
connect = {"Connect-Protocol-Version": "1"}
ok("the envd token reads a file", call("/files?path=/etc/hostname", {"X-Access-Token": acc}) == 200)
ok("the traffic token as X-Access-Token reads no file",
   call("/files?path=/etc/hostname", {"X-Access-Token": tra}) == 401)
ok("the traffic token in its own header reads no file",
   call("/files?path=/etc/hostname", {"E2B-Traffic-Access-Token": tra}) == 401)
ok("the traffic token starts no process",
   call("/process.Process/Start", dict(connect, **{"E2B-Traffic-Access-Token": tra}), start,
        "application/connect+json") == 401)
ok("the envd token starts one",
   call("/process.Process/Start", dict(connect, **{"X-Access-Token": acc}), start, "application/connect+json") == 200)
ok("the traffic token opens the code interpreter's contexts (what its SDK sends)",
   call("/contexts", {"E2B-Traffic-Access-Token": tra, "E2b-Sandbox-Port": "49999"},
        json.dumps({"language": "python"}).encode(), "application/json") == 200)
ok("no token opens nothing", call("/files?path=/etc/hostname", {}) == 401)
sys.exit(0)
PY
stop_e2b tokens
