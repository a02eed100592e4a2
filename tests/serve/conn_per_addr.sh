#!/bin/bash
# ward serve: one address cannot take the connection budget (security
# review, finding 6).  300 connections from 127.0.0.1 that never finish
# their headers (more than --max-connections 256; the header timeout, 30 s,
# outlasts the test) hold at most --max-conns-per-addr (32) places: the
# oldest are cut.  Meanwhile another address (127.0.0.2: all of 127/8 is
# loopback) gets GET /health and an authenticated POST /exec answered, and
# so does a new connection from the flooding address itself; a connection
# that has shown a valid token, and (without tokens) one whose run is
# admitted, is never cut.  Also while the flooder reconnects every socket
# the server cuts.  Sockets: 300 at a time, at most 600 reconnections.
. "$(dirname "$0")/lib.bash"

printf 'alice tokA\n' >"$SERVE_TMP/tokens"
start_server addr --token-file "$SERVE_TMP/tokens" --max-concurrent 2 --header-timeout 30 --request-timeout 30 \
	--max-connections 256 || exit 0   # --max-conns-per-addr: its default, 32

python3 - "$PORT" <<'PY'
import socket, subprocess, sys, time
port = int(sys.argv[1])
url = "http://127.0.0.1:%d" % port
AUTH = ["-H", "Authorization: Bearer tokA"]

def ok(name, cond, why=""):
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else ": " + why), flush=True)

def curl(src, *args, t=10):
    """(code, seconds) of one request from source address src"""
    p = subprocess.run(["curl", "-s", "--interface", src, "--max-time", str(t), "-o", "/dev/null",
                        "-w", "%{http_code} %{time_total}", *args], capture_output=True, text=True)
    code, secs = (p.stdout.split() + ["000", "99"])[:2]
    return code, float(secs)

def metric(name):
    p = subprocess.run(["curl", "-s", "--interface", "127.0.0.2", "--max-time", "3", *AUTH, url + "/metrics"],
                       capture_output=True, text=True)
    for l in p.stdout.splitlines():
        if l.split(" ")[0] == name:
            return int(float(l.split()[1]))
    return -1

def exchange(s, req):
    """send one request on s, read one answer; its status code or 0"""
    s.sendall(req)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return 0
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    while n and len(body) < n[0]:
        chunk = s.recv(65536)
        if not chunk:
            return 0
        body += chunk
    return int(head.split()[1])

def slow(src):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")   # headers never finished
    s.setblocking(False)
    return s

def is_cut(s):
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True

# a kept-alive connection from the flooding address that has shown a token
# (POST: libmicrohttpd closes after a GET answered before its end)
keep = socket.socket()
keep.bind(("127.0.0.1", 0))
keep.settimeout(10)
keep.connect(("127.0.0.1", port))
BODY = b'{"command":"true"}'
REQ = b"POST /exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tokA\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
ok("a kept-alive connection with a token is answered", exchange(keep, REQ) == 200)

flood = []
try:
    for i in range(300):
        flood.append(slow("127.0.0.1"))
except OSError as e:
    pass
ok("300 slow connections from 127.0.0.1 opened", len(flood) == 300, "%d opened" % len(flood))

code, secs = curl("127.0.0.2", url + "/health")
ok("GET /health from another address answers while 127.0.0.1 floods", code == "200", "%s after %.1f s" % (code, secs))
code, secs = curl("127.0.0.2", *AUTH, "--data-binary", '{"command":"echo x"}', url + "/exec", t=20)
ok("an authenticated POST /exec from another address runs", code == "200", "%s after %.1f s" % (code, secs))

for _ in range(100):   # the flood settles: all but 32 cut
    if metric('ward_connections_cut_total{reason="address"}') >= 268:
        break
    time.sleep(0.1)
cut = metric('ward_connections_cut_total{reason="address"}')
ok("the oldest were cut: 127.0.0.1 keeps 32 pending connections", cut == 268 and
   metric('ward_connections{state="pending"}') == 32, "cut %d, pending %d" % (cut, metric('ward_connections{state="pending"}')))
alive = [s for s in flood if not is_cut(s)]
ok("the flooder sees 268 of its connections closed, 32 still open", len(alive) == 32, "%d open" % len(alive))

code, secs = curl("127.0.0.1", *AUTH, "--data-binary", '{"command":"echo x"}', url + "/exec", t=20)
ok("a new connection with a token from the flooding address runs", code == "200", "%s after %.1f s" % (code, secs))
code, secs = curl("127.0.0.1", url + "/health")
ok("a new connection from the flooding address gets /health", code == "200", "%s after %.1f s" % (code, secs))
ok("the kept-alive connection with a token is still answered", exchange(keep, REQ) == 200)

# the flooder reconnects each socket the server cuts (at most 600 times)
start, again, worst, codes = time.monotonic(), 0, 0.0, set()
while time.monotonic() - start < 6:
    for i, s in enumerate(flood):
        if again < 600 and is_cut(s):
            s.close()
            try:
                flood[i] = slow("127.0.0.1")
                again += 1
            except OSError:
                pass
    code, secs = curl("127.0.0.2", url + "/health")
    codes.add(code)
    worst = max(worst, secs)
ok("the flooder reconnected what was cut", again > 0, "no reconnection")
ok("/health from another address answers while the flooder reconnects", codes == {"200"} and worst < 10,
   "%r, worst %.1f s" % (codes, worst))
for s in flood:
    s.close()
keep.close()
PY
check "server alive" kill -0 "$SRV_PID"
check "the log has one connections-cut line a second, not one a connection" \
	test "$(grep -c '"event":"connections-cut"' "$SRV_LOG")" -lt 30
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit" 0 "$rc"

# without tokens a run admitted from the flooding address is not cut
start_server addr_notoken --max-concurrent 2 --header-timeout 30 --request-timeout 30 || exit 0
python3 - "$PORT" <<'PY'
import socket, subprocess, sys, time
port = int(sys.argv[1])
url = "http://127.0.0.1:%d" % port

def ok(name, cond, why=""):
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else ": " + why), flush=True)

def curl(src, *args, t=10):
    p = subprocess.run(["curl", "-s", "--interface", src, "--max-time", str(t), "-o", "/dev/null",
                        "-w", "%{http_code} %{time_total}", *args], capture_output=True, text=True)
    code, secs = (p.stdout.split() + ["000", "99"])[:2]
    return code, float(secs)

run = subprocess.Popen(["curl", "-s", "--interface", "127.0.0.1", "--max-time", "30", "-o", "/dev/null",
                        "-w", "%{http_code}", "--data-binary", '{"command":"sleep 4"}', url + "/exec"],
                       stdout=subprocess.PIPE, text=True)
for _ in range(100):
    m = subprocess.run(["curl", "-s", "--interface", "127.0.0.2", "--max-time", "3", url + "/metrics"],
                       capture_output=True, text=True).stdout
    if "ward_in_flight 1\n" in m:
        break
    time.sleep(0.1)
ok("a run from 127.0.0.1 is in flight", "ward_in_flight 1\n" in m)
flood = []
try:
    for i in range(300):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\n")
        flood.append(s)
except OSError:
    pass
code, secs = curl("127.0.0.2", url + "/health")
ok("no tokens: GET /health from another address answers while 127.0.0.1 floods", code == "200",
   "%s after %.1f s" % (code, secs))
code, secs = curl("127.0.0.2", "--data-binary", '{"command":"echo x"}', url + "/exec", t=20)
ok("no tokens: POST /exec from another address runs", code == "200", "%s after %.1f s" % (code, secs))
out, _ = run.communicate(timeout=40)
ok("no tokens: the admitted run from the flooding address is not cut", out == "200", out)
for s in flood:
    s.close()
PY
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit without tokens" 0 "$rc"
