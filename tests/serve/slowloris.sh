#!/bin/bash
# ward serve: slow and stalled clients never hold a worker or the server.
# 50 connections trickle headers or bodies a byte at a time (defeating an
# idle timeout); /health and /exec must keep answering, and the server must
# cut the stalled connections at their absolute deadlines.  A client that
# never reads its answer is cut too.
. "$(dirname "$0")/lib.bash"

# --max-conns-per-addr above the 50: the deadlines cut them here (the limit: conn_per_addr.sh)
start_server slow --max-concurrent 2 --header-timeout 2 --request-timeout 3 --max-connections 256 --max-conns-per-addr 64 || exit 0

python3 - "$PORT" "$URL" "$SRV_LOG" <<'PY'
import json, socket, subprocess, sys, time
port, url, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def ok(name, cond, why=""):
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else ": " + why), flush=True)

def curl(*args):
    p = subprocess.run(["curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", *args],
                       capture_output=True, text=True)
    code, t = (p.stdout.split() + ["000", "9"])[:2]
    return code, float(t)

socks = []
for i in range(50):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if i % 2 == 0:   # headers never finished
        s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\n")
    else:            # headers done, body trickled
        s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"command\":")
    s.setblocking(False)
    socks.append(s)

start = time.monotonic()
worst = 0.0
codes = set()
closed_at = {}
exec_ok = True
while time.monotonic() - start < 9:
    for i, s in enumerate(socks):
        if i in closed_at:
            continue
        try:
            s.send(b" " if i % 2 else b"X")     # one byte a tick: never idle
            if s.recv(4096) == b"":
                closed_at[i] = time.monotonic() - start
        except BlockingIOError:
            pass
        except OSError:
            closed_at[i] = time.monotonic() - start
    c, t = curl(url + "/health")
    codes.add(c); worst = max(worst, t)
    if time.monotonic() - start < 2:
        c2, _ = curl("--data-binary", '{"command":"echo x"}', url + "/exec")
        exec_ok = exec_ok and c2 == "200"
    time.sleep(0.5)

ok("/health answers while 50 connections stall", codes == {"200"}, repr(codes))
ok("/health answers fast while stalled (< 2.5 s; blocked would be 10 s)", worst < 2.5, "worst %.2fs" % worst)
ok("/exec runs while 50 connections stall", exec_ok)
ok("every stalled connection was cut", len(closed_at) == 50, "%d of 50 cut" % len(closed_at))
ok("stalled connections were cut by their deadlines (< 8 s)", closed_at and max(closed_at.values()) < 8,
   repr(sorted(closed_at.values())[-3:]))
for s in socks:
    s.close()

# a client that asks for a big answer and never reads it
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
body = json.dumps({"command": "head -c 1000000 /dev/zero | tr '\\0' a", "limits": {"max_output_chars": 1000000}}).encode()
s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
t0 = time.monotonic()
cut = False
while time.monotonic() - t0 < 6:  # MHD's own idle timeout (8 s here) would be too late
    with open(log) as f:
        for line in f:
            d = json.loads(line)
            if d.get("path") == "/exec" and d.get("http_status") == 0:
                cut = True
    if cut:
        break
    time.sleep(0.3)
ok("a client that never reads its answer is cut at its deadline", cut)
s.close()
c, t = curl(url + "/health")
ok("healthy afterwards", c == "200", c)
PY
check "server alive" kill -0 "$SRV_PID"
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit" 0 "$rc"

# many slow uploads of large bodies cannot hold the server's memory:
# --max-body-total caps all bodies held at once
start_server bodies --max-body 1048576 --max-body-total 3145728 --request-timeout 3 --header-timeout 2 || exit 0
python3 - "$PORT" "$URL" <<'PY'
import socket, subprocess, sys, time
port, url = int(sys.argv[1]), sys.argv[2]
def ok(name, cond, why=""):
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else ": " + why), flush=True)
def curl(*args):
    p = subprocess.run(["curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", *args],
                       capture_output=True, text=True)
    return p.stdout
socks = []
for i in range(3):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Length: 1048000\r\n\r\n" + b"[" * 1000 + b" " * 900000)
    socks.append(s)
def body_bytes():
    m = subprocess.run(["curl", "-s", "--max-time", "5", url + "/metrics"], capture_output=True, text=True).stdout
    held = [l for l in m.splitlines() if l.startswith("ward_body_bytes ")]
    return int(held[0].split()[1]) if held else -1
t0 = time.monotonic()   # until the server has read them (at most 2 s: before their deadline)
while body_bytes() < 3 * 900000 and time.monotonic() - t0 < 2:
    time.sleep(0.05)
ok("metrics show the bodies held", body_bytes() >= 3 * 900000, repr(body_bytes()))
ok("a new body beyond --max-body-total gets 503", curl("--data-binary", '{"command":"true"}', url + "/exec") == "503")
ok("/health still answers", curl(url + "/health") == "200")
t0 = time.monotonic()   # the stalled uploads pass their deadline (3 s) and are cut
while body_bytes() != 0 and time.monotonic() - t0 < 15:
    time.sleep(0.1)
ok("runs again once the slow uploads are cut", curl("--data-binary", '{"command":"true"}', url + "/exec") == "200")
m = subprocess.run(["curl", "-s", "--max-time", "5", url + "/metrics"], capture_output=True, text=True).stdout
ok("no body held afterwards", "ward_body_bytes 0\n" in m, [l for l in m.splitlines() if "body_bytes " in l])
for s in socks:
    s.close()
PY
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit after the body cap test" 0 "$rc"
