#!/bin/bash
# ward serve: what a follow stream of a background process's output holds
# (GET /sessions/{id}/processes/{pid}/output?follow=1) is counted in
# --max-answer-total, and it is bounded: the output is fetched a chunk
# (256 KiB a stream) at a time, not all the process kept.  A client that
# takes nothing (a 4 KiB receive buffer, never read) stalls the stream once
# the sockets are full; the server's ward_answer_bytes then shows what the
# stream holds — more than nothing, at most two chunks encoded — and drops
# back to 0 when the client goes.  Before, the stream's buffer was in no
# budget (the gauge stayed 0) and held everything the process kept at once.
. "$(dirname "$0")/lib.bash"
start_server s || exit 0
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
# 12 MB of output: more than the loopback sockets take (a few MB), bounded
P=$(curl -s -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "limits": {"max_output_chars": 16000000},
	"command": "head -c 12000000 /dev/zero | tr \"\\000\" x; echo END"}')
pid=$(jg "$P" 'd["pid"]')
PROC=$(wait_proc_exited "$sid" "$pid")
expect_eq "the writer has ended" exited "$(jg "$PROC" 'd["state"]')"

python3 - "$PORT" "$sid" "$pid" "$URL" >"$SERVE_TMP/held" <<'PY' &
import socket, sys, time, urllib.request
port, sid, pid, url = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
c = socket.socket()
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
c.connect(("127.0.0.1", port))
c.sendall(("GET /sessions/%s/processes/%s/output?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n" % (sid, pid)).encode())
c.recv(100)
def held():
    for l in urllib.request.urlopen(url + "/metrics", timeout=10).read().decode().splitlines():
        if l.startswith("ward_answer_bytes "):
            return int(l.split()[1])
last, same = -1, 0
for _ in range(100):  # until the stall settles (bounded: 10 s)
    time.sleep(0.1)
    h = held()
    same = same + 1 if h == last else 0
    last = h
    if same >= 5:
        break
print(last)
c.close()
PY
wait $!
h=$(cat "$SERVE_TMP/held")
[ -n "$h" ] && [ "$h" -gt 0 ] 2>/dev/null && pass "a stalled follow's pending output is counted ($h bytes)" ||
	fail "a stalled follow's pending output is counted" "ward_answer_bytes: '$h'"
[ -n "$h" ] && [ "$h" -le $((2 * 6 * 262144 + 4096)) ] 2>/dev/null && pass "and bounded: at most two chunks encoded" ||
	fail "and bounded: at most two chunks encoded" "$h bytes"
wait_for sh -c "[ \"\$(curl -s $URL/metrics | awk '\$1==\"ward_answer_bytes\"{print \$2}')\" = 0 ]" &&
	pass "the client gone, the budget is back to 0" || fail "the client gone, the budget is back to 0" "$(metric ward_answer_bytes)"
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null
