#!/bin/bash
# tests/e2b/ports_proxy.sh — the port relay reaches the sandbox's own
# servers, never ward's egress proxy on its 127.0.0.1:3128: relayed, it
# would give whoever can reach a public sandbox's ports its egress and its
# byte budget (review note on finding 4's relay).  Raw HTTP, a sandbox with
# egress (the operator's --egress-allow, allowInternetAccess).  And an
# upstream's answer goes out with its Content-Length, never past it, and
# cut where the upstream cut it.
. "$(dirname "$0")/lib.bash"
start_alice ports_proxy --egress-allow example.test:80 || exit 1
PYTHONPATH=$E2B_DIR timeout -k 5 120 python3 - "$E2B_URL" <<'PY'
import json, sys, urllib.error, urllib.request
from raw import checker, run, KEY
url = sys.argv[1]
ok = checker("e2b ports proxy")
req = urllib.request.Request(url + "/sandboxes", data=json.dumps({"templateID": "base", "timeout": 120,
    "allowInternetAccess": True}).encode(), headers={"X-API-Key": KEY, "Content-Type": "application/json"})
sb = json.loads(urllib.request.urlopen(req, timeout=120).read())
# the sandbox has the proxy: its environment says so
def get(port, path="/"):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": str(port)}
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, headers=h), timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
# the proxy is there, inside: the check below is not vacuous
run(url, sb, "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 3128), 2)' && touch /tmp/proxy-there")
fr = urllib.request.Request(url + "/files?path=/tmp/proxy-there",
                            headers={"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]})
try:
    there = urllib.request.urlopen(fr, timeout=30).status == 200
except urllib.error.HTTPError:
    there = False
ok("inside the sandbox, ward's egress proxy listens on 127.0.0.1:3128", there)
code, body = get(3128)
ok("port 3128 (ward's egress proxy) is not relayed: 502", code == 502, (code, body[:200]))
run(url, sb, "cd /tmp && (python3 -m http.server 8123 >/dev/null 2>&1 &) ; sleep 1")
code, body = get(8123)
ok("a server of the sandbox's own is relayed", code == 200, code)
# hostile upstream lengths: an answer goes out with its Content-Length, never more
srv = ("import socket, sys\n"
       "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
       "s.bind(('127.0.0.1', 8125)); s.listen(8)\n"
       "while True:\n"
       "    c, _ = s.accept(); q = c.recv(65536)\n"
       "    n = b'5' if b'GET /over' in q else b'100'\n"
       "    c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Length: ' + n + b'\\r\\n\\r\\nhelloEXTRA-BYTES'); c.close()\n")
run(url, sb, "cat > /tmp/lens.py <<'EOF'\n" + srv + "EOF\ncd /tmp && (python3 /tmp/lens.py >/dev/null 2>&1 &) ; sleep 1")
code, body = get(8125, "/over")
ok("an upstream sending past its Content-Length: only its length relayed", (code, body) == (200, b"hello"), (code, body))
try:
    code, body = get(8125, "/short")
    short = (code, body)
except Exception as e:  # http.client.IncompleteRead: the client sees the answer cut
    short = type(e).__name__
ok("an upstream closing before its Content-Length: the client sees it cut, not padded", short == "IncompleteRead", short)
sys.exit(0)
PY
stop_e2b ports_proxy
