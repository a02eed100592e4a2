#!/bin/bash
# tests/e2b/answers.sh — E2B answers within the answer budget (issue 30.2):
# GET /files of an 8 MiB file on connections that never read their
# answers.  Each read holds what it may bring in --max-answer-total and its
# client's --max-answer-client (40 MiB here) before it reads, and its answer
# until it is taken: a client's unread answers stop at its share (503 with
# Retry-After beyond it), the total never passes its cap, and everything
# comes back when the connections close; the request log and its counts
# are the server's.  Raw sockets; bounded by socket timeouts.
. "$(dirname "$0")/lib.bash"
start_alice answers --max-output 1048576 --max-answer-total 134217728 --max-answer-client 83886080 || exit 1
PYTHONPATH=$E2B_DIR timeout -k 5 120 python3 - "$E2B_URL" "$URL" <<'PY'
import socket, sys, time, urllib.request
from raw import checker, create, data_plane, metric, run
url, native = sys.argv[1], sys.argv[2]
host, port = url.split("//")[1].rsplit(":", 1)
ok = checker("e2b answers")
held = lambda: metric(native, "ward_answer_bytes")
sb = create(url)
run(url, sb, "head -c 8388608 /dev/zero > /home/user/big")
socks, codes = [], []
for i in range(10):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # reads nothing more
    s.settimeout(30)
    s.connect((host, int(port)))
    s.sendall(b"GET /files?path=/home/user/big HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n\r\n"
              % (sb["sandboxID"].encode(), sb["envdAccessToken"].encode()))
    head = b""
    while b"\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    codes.append(int(head.split()[1]) if head.count(b" ") >= 1 else 0)
    socks.append(s)
ok("unread answers stop at the client's share: 200s, then 503", codes.count(200) in range(1, 6) and codes.count(503) >= 5
   and set(codes) <= {200, 503}, codes)
h = held()
ok("the answer budget holds no more than --max-answer-client", 0 < h <= 80 << 20, h)
for s in socks:
    s.close()
for _ in range(100):
    if held() == 0:
        break
    time.sleep(0.1)
ok("closed: the budget is back to 0", held() == 0, held())
r = urllib.request.Request(url + "/files?path=/home/user/big", headers=data_plane(sb))
ok("a read that is taken is answered", len(urllib.request.urlopen(r, timeout=60).read()) == 8 << 20)
PY
# the server's request log has them, one line each, as any listener's requests
check "e2b answers: the request log has the 503s, the client named and the reason" \
	grep -q '"client":"alice","method":"GET","path":"/files","http_status":503.*answer budget' "$SRV_LOG"
check "e2b answers: ward_http_requests_total counts them" \
	test "$(curl -s -H "Authorization: Bearer $KEY_ALICE" "$URL/metrics" | sed -n 's/^ward_http_requests_total{code="503"} //p')" -ge 5
stop_e2b answers
