"""tests/e2b/ports_strict.py PART E2B_URL — the port relay as a strict proxy
(tests/e2b/ports_strict.sh runs each PART against its own ward serve; raw
sockets, since the SDK sends none of these requests; PASS:/FAIL: lines).

framing  a request body's framing is ward's alone (RFC 9112 §6.3; the second
         review's relay_cl_te): Content-Length with Transfer-Encoding, two
         differing Content-Lengths, a transfer coding but chunked answer
         400/501 and close the connection, and the sandbox's server sees
         nothing; a chunked body goes up with the length of the bytes ward
         decoded, never the client's Content-Length or Transfer-Encoding
status   the sandbox's server's status is checked (relay_status): a 101 to a
         request that asked for no upgrade is a 502; interim answers (100,
         103) are skipped for the final one; a 304, a 204 and a HEAD's answer
         go with no body whatever the server sent after its head, and the
         connection's next request is answered right
keys     one key's sandboxes, opened by anyone (no key), take at most
         --e2b-key-sockets (by default half of the cap in all) WebSockets:
         another key's sandbox still upgrades (ws_cap)
bodies   request bodies sent to a public port (no key) and stalled take at
         most the relays' share of --max-body-total: another key's create,
         and another key's relay, still answer (relay_body)"""
import json, socket, sys, time, urllib.error, urllib.request
from raw import checker, envelope, metric

part, url, native = sys.argv[1], sys.argv[2], sys.argv[3]
HOST, PORT = url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1])
ALICE, BOB = "sekrit-alice-0123456789", "sekrit-bob-0123456789"
ok = checker("e2b ports strict " + part)


def create(key):
    r = urllib.request.Request(url + "/v2/sandboxes", data=json.dumps({"timeout": 300}).encode(),
                               headers={"X-API-KEY": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=120) as f:
            return f.status, json.loads(f.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def run(sb, cmd):
    body = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}})
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"],
         "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
    urllib.request.urlopen(urllib.request.Request(url + "/process.Process/Start", data=body, headers=h),
                           timeout=60).read()


def raw(req, timeout=30):
    """req's bytes sent on a new connection, everything read to its close"""
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    s.sendall(req)
    out = b""
    try:
        while True:
            k = s.recv(65536)
            if not k:
                break
            out += k
    except OSError:
        pass
    s.close()
    return out


def host(sb, port=8080):
    return "%d-%s.ward.invalid" % (port, sb["sandboxID"])


def serve(sb, code):
    """code (a Python server on 127.0.0.1:8080) started in sb, and up"""
    run(sb, "cat > /tmp/srv.py <<'EOF'\n" + code + "EOF\ncd /tmp && (python3 /tmp/srv.py >/dev/null 2>&1 &)")
    for _ in range(200):
        a = raw(("GET /up HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host(sb)).encode())
        if a.startswith(b"HTTP/1.1 200"):
            return True
        time.sleep(0.1)
    return False


def final(a):
    """an answer's bytes without the 100 Continue MHD may send first: (head, the rest)"""
    while a.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):
        a = a[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
    return tuple(a.split(b"\r\n\r\n", 1)) if b"\r\n\r\n" in a else (a, b"")


def answer(s):
    """one answer read from s: its head and its body (its Content-Length)"""
    a = b""
    while b"\r\n\r\n" not in a:
        k = s.recv(65536)
        if not k:
            return a, b""
        a += k
    head, body = a.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":", 1)[1])
    while len(body) < n:
        k = s.recv(65536)
        if not k:
            break
        body += k
    return head, body


def status(a):
    try:
        return int(a.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


# A server that reads each request to its end (the relay's HTTP/1.0: the
# request ends where the relay shuts its side) and answers by its path; every
# request it read appended to /tmp/seen, which GET /seen answers.
SERVER = r'''
import socket, threading
lock = threading.Lock()
def serve(c):
    q = b""
    while True:
        k = c.recv(65536)
        if not k: break
        q += k
        if q.startswith(b"GET /up ") or q.startswith(b"GET /seen ") or (b"\r\n\r\n" in q and q.startswith(b"GET /s")) or q.startswith(b"HEAD "):
            break
    path = q.split(b" ")[1] if b" " in q else b""
    if path == b"/seen":
        b = open("/tmp/seen", "rb").read() if __import__("os").path.exists("/tmp/seen") else b""
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(b) + b); c.close(); return
    if path != b"/up":
        with lock:
            open("/tmp/seen", "ab").write(b"<<" + q + b">>")
    if path == b"/s101":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nNOT-HTTP")
    elif path == b"/s100":
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                  b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\nX-Final: 1\r\n\r\nfinal")
    elif path in (b"/s304", b"/s204"):
        c.sendall(b"HTTP/1.0 " + path[2:] + b" X\r\nX-Up: 1\r\n\r\nJUNK-AFTER-A-BODILESS-HEAD")
    elif q.startswith(b"HEAD "):
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nJUNK-HEAD")
    else:
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(q) + q)
    c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080)); s.listen(64)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def seen(sb):
    a = raw(("GET /seen HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host(sb)).encode())
    return a.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in a else b""


if part == "framing":
    st, sb = create(ALICE)
    ok("a sandbox", st == 201, st)
    ok("its server up", serve(sb, SERVER))
    H = host(sb)
    smuggled = b"GET /smuggled HTTP/1.0\r\nX: y\r\n\r\n"
    after = ("GET /next HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % H).encode()
    cases = [
        ("Content-Length and Transfer-Encoding: chunked", 400,
         ("POST /a HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" % H).encode()
         + b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n" + after),
        ("two differing Content-Lengths", 400,
         ("POST /b HTTP/1.1\r\nHost: %s\r\nContent-Length: 3\r\nContent-Length: 10\r\n\r\nabcdefghij" % H).encode()
         + after),
        ("Transfer-Encoding other than chunked", 501,
         ("POST /c HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" % H).encode()
         + after),
    ]
    for name, want, req in cases:
        a = raw(req)
        head = a.split(b"\r\n\r\n", 1)[0].lower()
        if want == 501 and a == b"":  # libmicrohttpd 0.9.75 closes on such a coding itself, answering nothing
            print("# %s: closed by libmicrohttpd, no answer (that nothing went up is checked below)" % name)
            continue
        ok("%s: %d, the connection closed after it (no second answer)" % (name, want),
           status(a) == want and b"connection: close" in head and a.count(b"HTTP/1.1 ") == 1, a[:300])
    got = seen(sb)
    ok("the sandbox's server read none of them", b"/a " not in got and b"/b " not in got and b"/c " not in got
       and b"/smuggled" not in got and b"/next" not in got, got[:400])
    body = b"x" * 30
    a = raw(("POST /chunked HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % H).encode()
            + b"a\r\n" + body[:10] + b"\r\n14\r\n" + body[10:] + b"\r\n0\r\n\r\n")
    head, up = final(a)  # up: the request the sandbox's server read, echoed
    ok("a chunked body is relayed with the length ward decoded (30), no Transfer-Encoding",
       status(head) == 200 and up.lower().count(b"content-length:") == 1 and b"\r\nContent-Length: 30\r\n" in up
       and b"transfer-encoding" not in up.lower() and up.endswith(b"\r\n\r\n" + body), a[:400])
    a = raw(("POST /expect HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
             "Connection: close\r\n\r\nhello" % H).encode())
    head, up = final(a)
    ok("a Content-Length body goes with one Content-Length, ward's, and no Expect",
       status(head) == 200 and up.lower().count(b"content-length:") == 1 and b"\r\nContent-Length: 5\r\n" in up
       and b"expect:" not in up.lower() and up.endswith(b"\r\n\r\nhello"), a[:400])

elif part == "status":
    st, sb = create(ALICE)
    ok("a sandbox", st == 201, st)
    ok("its server up", serve(sb, SERVER))
    H = host(sb)
    nxt = ("GET /second HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % H).encode()
    a = raw(("GET /s101 HTTP/1.1\r\nHost: %s\r\n\r\n" % H).encode() + nxt)
    ok("a 101 to a request that asked for no upgrade: 502, and the connection goes on as HTTP",
       status(a) == 502 and b"NOT-HTTP" not in a and a.count(b"HTTP/1.1 200 OK") == 1, a[:400])
    a = raw(("GET /s100 HTTP/1.1\r\nHost: %s\r\n\r\n" % H).encode() + nxt)
    ok("100 and 103 skipped: the final 200 and its body are the answer",
       status(a) == 200 and b"X-Final: 1" in a.split(b"\r\n\r\n", 1)[0] and b"Early" not in a
       and a.split(b"\r\n\r\n", 1)[1].startswith(b"final") and a.count(b"HTTP/1.1 200 OK") == 2, a[:400])
    for what, req, want in (("a 304", "GET /s304", 304), ("a 204", "GET /s204", 204), ("a HEAD's answer", "HEAD /h", 200)):
        a = raw(("%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (req, H)).encode() + nxt)
        first, rest = a.split(b"\r\n\r\n", 1) if b"\r\n\r\n" in a else (a, b"")
        ok("%s goes with no body (no chunk, nothing the server sent after its head): the next request's answer "
           "follows its head" % what,
           status(first) == want and b"chunked" not in first.lower() and rest.startswith(b"HTTP/1.1 200 OK")
           and b"JUNK" not in a, a[:400])
        if want == 200:
            ok("a HEAD's answer says the server's Content-Length (9)", b"\r\nContent-Length: 9" in first, first)

elif part == "keys":
    WS = r'''
import socket, threading
def serve(c):
    b = b""
    while b"\r\n\r\n" not in b:
        k = c.recv(4096)
        if not k: return
        b += k
    if b.startswith(b"GET /up "):
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"); c.close(); return
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    while c.recv(4096): pass
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080)); s.listen(64)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
'''
    boxes = []
    for key in (ALICE, ALICE, BOB):
        st, sb = create(key)
        ok("a sandbox", st == 201, st)
        ok("its WebSocket server up", serve(sb, WS))
        boxes.append(sb)

    def upgrade(sb):
        """a WebSocket handshake to sb's port 8080, no key: (status, head and body, socket)"""
        s = socket.create_connection((HOST, PORT), timeout=30)
        s.sendall(("GET /chat HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" % host(sb)).encode())
        head, body = answer(s)
        return status(head), head + (body if status(head) != 101 else b""), s

    held, sts = [], []
    for sb in boxes[:2]:  # alice's two sandboxes, 5 asked of each (4 each would take all 8), no key sent
        for _ in range(5):
            st, head, s = upgrade(sb)
            sts.append(st)
            if st == 101:
                held.append(s)
            else:
                s.close()
    # --max-connections 16: 8 in all, 4 for one key's sandboxes (--e2b-max-sockets 4: 4 each)
    # the first's 5th is its own cap's (429); the second's all its key's (503)
    ok("one key's sandboxes: 4 WebSockets (half of the 8 in all), then 503", sts == [101] * 4 + [429] + [503] * 5, sts)
    st, head, s = upgrade(boxes[1])
    ok("the 503 names --e2b-key-sockets", st == 503 and b"--e2b-key-sockets" in head, head[:400])
    s.close()
    st, head, s = upgrade(boxes[2])
    ok("another key's sandbox still upgrades: 101", st == 101, (st, head[:300]))
    s.close()
    for s in held[:1]:
        s.close()
    for _ in range(100):  # its room back once the pump saw it close
        st, head, s = upgrade(boxes[1])
        s.close()
        if st == 101:
            break
        time.sleep(0.1)
    ok("a closed one gives its key's room back", st == 101, st)
    for s in held[1:]:
        s.close()

elif part == "bodies":
    # --max-body 1 MiB, --max-body-total 8 MiB: the relays' bodies 4 MiB in all, 2 MiB one key's sandboxes'
    MB = 1 << 20
    st, a1 = create(ALICE)
    st2, b1 = create(BOB)
    ok("sandboxes", st == 201 and st2 == 201, (st, st2))

    def post(sb, n, last=True):
        """a POST of n bytes to sb's port 8080, no key (nothing need listen), its last byte held back
        unless last: the socket"""
        s = socket.create_connection((HOST, PORT), timeout=60)
        s.sendall(("POST /up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (host(sb), n)).encode())
        s.sendall(b"x" * (n if last else n - 1))
        return s

    # a stranger's two bodies to alice's port, all but a byte sent, held (ward's gauge says so)
    held = [post(a1, MB, last=False) for _ in range(2)]
    for _ in range(200):
        if metric(native, "ward_body_bytes") >= 2 * MB:
            break
        time.sleep(0.05)
    ok("two stalled 1 MiB bodies held", metric(native, "ward_body_bytes") >= 2 * MB, metric(native, "ward_body_bytes"))
    s = post(a1, MB)
    head, body = answer(s)
    s.close()
    ok("one key's sandboxes' relays hold 2 MiB of bodies at most (a quarter of --max-body-total): the third 503",
       status(head) == 503 and b"quarter of --max-body-total" in body, head[:200] + body[:300])
    # the review's attack: 8 stalled bodies to alice's port; the 6 past her share are never held
    held += [post(a1, MB, last=False) for _ in range(6)]
    st, j = create(BOB)
    ok("meanwhile another key's create answers (201, not --max-body-total's 503)", st == 201, (st, j))
    s = post(b1, MB)
    head, body = answer(s)
    s.close()
    # nothing listens on bob's 8080: past the bodies' budget, the relay reached the connect
    ok("another key's relay with a 1 MiB body still goes (502 from its connect, not 503)",
       status(head) == 502 and b"port is not open" in body, head[:200] + body[:300])
    for s in held:
        s.close()
    for _ in range(100):  # the room comes back as the server sees them closed
        s = post(a1, MB)
        head, body = answer(s)
        s.close()
        if status(head) == 502:
            break
        time.sleep(0.1)
    ok("their room given back when they close: alice's port takes 1 MiB again (502 from the connect)",
       status(head) == 502, head[:200] + body[:300])
sys.exit(0)
