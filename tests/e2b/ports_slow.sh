#!/bin/bash
# tests/e2b/ports_slow.sh — a sandbox's slow server holds no worker (the
# review's H2): with --max-concurrent 2, four relays to a server that
# accepts and never answers are all accepted upstream at once (they wait
# on the dialect's pump, not on workers; the server's accepts are counted
# in a file read through /proc/PID/root, never by sleeping), and meanwhile
# another sandbox's server answers through the proxy and a create answers.
# The answer's head: one that comes in pieces is relayed whole, one over
# 16 KiB and one cut mid-head answer 502; a client that leaves ends its
# wait; a connect that a server's full backlog holds waits on no thread
# (another request answers before it), then answers 502; the server's stop
# answers the waiting ones 503 and exits cleanly.
# Raw HTTP; every wait bounded.
. "$(dirname "$0")/lib.bash"
start_alice ports_slow --max-concurrent 2 --request-timeout 60 || exit 1
mark=ward-test-slow-$$-$RANDOM
PYTHONPATH=$E2B_DIR timeout -k 5 200 python3 - "$E2B_URL" "$mark" "$SRV_LOG" >"$SERVE_TMP/slow.out" 2>&1 <<'PY' &
import glob, json, os, select, socket, sys, time, urllib.error, urllib.request
from raw import checker, create, run, KEY
url, mark, log = sys.argv[1:4]
host, port = url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1])
ok = checker("e2b ports slow")
a, b = create(url), create(url)
slow = ("import socket, sys\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('127.0.0.1', 8000)); s.listen(64); open('/tmp/ready', 'w').close()\n"
        "held = []\n"
        "while True:\n"
        "    c, _ = s.accept(); held.append(c)\n"
        "    f = open('/tmp/accepts', 'a'); f.write('x\\n'); f.close()\n")
backlog = ("import socket, time\n"
           "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
           "s.bind(('127.0.0.1', 8002)); s.listen(0); open('/tmp/ready2', 'w').close()\n"
           "time.sleep(3600)\n")
tricky = ("import socket, threading, time\n"
          "def serve(c):\n"
          "    q = b''\n"
          "    while b'\\r\\n\\r\\n' not in q:\n"
          "        k = c.recv(65536)\n"
          "        if not k: break\n"
          "        q += k\n"
          "    p = q.split(b' ')[1] if b' ' in q else b''\n"
          "    if p == b'/pieces':\n"
          "        for part in (b'HTTP/1.0 200 OK\\r\\n', b'Content-Length: 5\\r\\nX-A', b': b\\r\\n', b'\\r\\n', b'hello'):\n"
          "            c.sendall(part); time.sleep(0.3)\n"
          "    elif p == b'/big':\n"
          "        c.sendall(b'HTTP/1.0 200 OK\\r\\nX-Big: ' + b'a' * 17000 + b'\\r\\n\\r\\nhi')\n"
          "    elif p == b'/cut':\n"
          "        c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Le')\n"
          "    else:\n"
          "        c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok')\n"
          "    c.close()\n"
          "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('127.0.0.1', 8001)); s.listen(64)\n"
          "while True:\n"
          "    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()\n")
run(url, a, "cat > /tmp/slow.py <<'EOF'\n" + slow + "EOF\ncd /tmp && (python3 /tmp/slow.py " + mark + " >/dev/null 2>&1 &)")
run(url, a, "cat > /tmp/backlog.py <<'EOF'\n" + backlog + "EOF\ncd /tmp && (python3 /tmp/backlog.py " + mark +
    " >/dev/null 2>&1 &)")
run(url, b, "cat > /tmp/tricky.py <<'EOF'\n" + tricky + "EOF\ncd /tmp && (python3 /tmp/tricky.py >/dev/null 2>&1 &)")

def get(sb, p, path, timeout=30):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": str(p)}
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, headers=h), timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers
    except OSError as e:  # its timeout: no answer
        return 0, repr(e).encode(), {}

def until(cond, n=300):  # bounded: n tries 0.1 s apart
    for _ in range(n):
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    return None

def server_pid(name):  # a server of sandbox A's, by the mark in its argv, seen from the host
    for p in glob.glob("/proc/[0-9]*"):
        try:
            if open(p + "/cmdline", "rb").read().endswith(b"/tmp/" + name + b"\0" + mark.encode() + b"\0"):
                return p
        except OSError:
            pass
    return None

def accepts(p):
    try:
        return open(p + "/root/tmp/accepts").read().count("x")
    except OSError:
        return 0

def ready_pid(name, ready):
    p = server_pid(name)
    return p if p and os.path.exists(p + "/root/tmp/" + ready) else None

pid = until(lambda: ready_pid(b"slow.py", "ready"))
ok("the slow server runs in sandbox A", pid is not None)
ok("sandbox B's server answers through the proxy", until(lambda: get(b, 8001, "/quick")[0] == 200) is not None)
held = []
for _ in range(4):
    c = socket.create_connection((host, port), timeout=90)
    c.sendall(("GET /never HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8000\r\n\r\n"
               % a["sandboxID"]).encode())
    held.append(c)
n = until(lambda: accepts(pid) >= 4 and accepts(pid), 300) if pid else None
ok("4 relays to a server that never answers, 2 workers: all 4 accepted upstream (none waits for a worker)",
   n == 4, "accepted %s of 4" % (accepts(pid) if pid else "?"))
st, body, _ = get(b, 8001, "/quick", timeout=20)
ok("meanwhile another sandbox's server answers through the proxy", (st, body) == (200, b"ok"), (st, body))
try:
    made = create(url)
except Exception as e:  # its timeout: a create waiting for a worker
    made = repr(e)
ok("meanwhile a create answers", "sandboxID" in made, made)
st, body, hd = get(b, 8001, "/pieces")
ok("a head that comes in pieces is relayed whole", (st, body, hd.get("X-A")) == (200, b"hello", "b"), (st, body))
st, body, _ = get(b, 8001, "/big")
ok("a head over 16 KiB: 502", st == 502 and b"16 KiB" in body, (st, body[:200]))
st, body, _ = get(b, 8001, "/cut")
ok("an upstream that closes mid-head: 502", st == 502 and b"no HTTP head" in body, (st, body[:200]))
ok("sandbox A's server with a full backlog runs", until(lambda: ready_pid(b"backlog.py", "ready2")) is not None)
blk = []
for _ in range(3):  # its queue takes one; the others' connects wait for room
    c = socket.create_connection((host, port), timeout=90)
    c.sendall(("GET /b HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8002\r\n\r\n"
               % a["sandboxID"]).encode())
    blk.append(c)
quick = socket.create_connection((host, port), timeout=90)
quick.sendall(("GET /quick HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8001\r\n"
               "Connection: close\r\n\r\n" % b["sandboxID"]).encode())
first, _, _ = select.select(blk + [quick], [], [], 60)
ok("connects a full backlog holds wait on no thread: a request sent after them answers first",
   quick in first and not any(c in first for c in blk), "readable first: %d of the 3, quick %s"
   % (sum(c in first for c in blk), quick in first))
quick.close()
refused = []
for _ in range(60):  # the connects' 5 s (bounded)
    ready, _, _ = select.select([c for c in blk if c not in refused], [], [], 1)
    refused += ready
    if len(refused) >= 2:
        break
got = [c.recv(1000) for c in refused]
ok("a connect the backlog holds past 5 s: 502, saying so", len(got) >= 1 and
   all(g.startswith(b"HTTP/1.1 502") and b"backlog is full" in g for g in got), got[:1])
held += [c for c in blk if c not in refused]
held.pop().close()
left = until(lambda: "the client left before the sandbox's server answered" in open(log).read(), 100)
ok("a client that leaves ends its relay's wait (logged)", left is not None)
print("HOLDING", flush=True)
for c in held:  # the server stops now (the script's caller): each waiting relay answered
    try:
        got = c.recv(200)
    except OSError as e:
        got = repr(e).encode()
    ok("the server's stop answers a waiting relay 503", got.startswith(b"HTTP/1.1 503"), got[:100])
PY
py=$!
for _ in $(seq 1500); do grep -q '^HOLDING' "$SERVE_TMP/slow.out" && break; kill -0 $py 2>/dev/null || break; sleep 0.1; done
stop_e2b ports_slow
wait $py
rc=$?
grep -v '^HOLDING' "$SERVE_TMP/slow.out"
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "ports_slow.py" "exited $rc: $(tail -c 600 "$SERVE_TMP/slow.out")"
