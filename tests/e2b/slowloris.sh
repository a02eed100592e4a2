#!/bin/bash
# tests/e2b/slowloris.sh — the E2B listener under slowloris (issue 30.1): one
# unauthenticated address opens every connection the runner allows
# (--max-connections 64) and never finishes its headers, trickling a byte
# a tick so that no idle timeout fires.  The E2B listener's connections are
# the server's (conns.c), as the native listener's are
# (tests/serve/conn_per_addr.sh): the address keeps --max-conns-per-addr
# (32) pending ones, the oldest are cut, and the real SDK then creates a
# sandbox and runs a command.  Bounded: the flooder stops when the SDK is
# done, or after 120 s.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice slow --max-connections 64 --header-timeout 60 || exit 1
cat >"$SERVE_TMP/loris.py" <<'PY'
import os, socket, sys, time
host, port, n, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
socks, cut = [], 0
for i in range(n):
    try:
        s = socket.create_connection((host, port), timeout=2)
        s.sendall(b"POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        socks.append(s)
    except OSError:
        break
print("opened %d" % len(socks), flush=True)
end = time.monotonic() + 120
while time.monotonic() < end and not os.path.exists(stop):
    for s in list(socks):
        try:
            s.send(b"X")                    # one byte a tick: never idle
            if s.recv(1) == b"":
                raise OSError
        except BlockingIOError:
            pass
        except OSError:
            socks.remove(s); s.close(); cut += 1
    time.sleep(0.5)
print("cut by the server %d, %d still open" % (cut, len(socks)), flush=True)
PY
a=${E2B_URL#http://}
python3 "$SERVE_TMP/loris.py" "${a%:*}" "${a##*:}" 64 "$SERVE_TMP/stop" >"$SERVE_TMP/loris.out" 2>&1 &
LORIS=$!
cut_total() {
	curl -s -H "Authorization: Bearer $KEY_ALICE" "$URL/metrics" |
		sed -n 's/^ward_connections_cut_total{reason="address"} //p'
}
wait_for grep -qs opened "$SERVE_TMP/loris.out"
# the flood settles: all but 32 cut (on a listener without the server's
# connection records, none ever is, and the SDK below finds no place)
for _ in $(seq 100); do [ "$(cut_total)" -ge 32 ] 2>/dev/null && break; sleep 0.1; done
check "e2b slowloris: the flooder's oldest pending connections were cut (32 of them at least)" test "$(cut_total)" -ge 32
SDK_TIMEOUT=90 sdk_checked shared.mjs create
touch "$SERVE_TMP/stop"
wait "$LORIS"
sed 's/^/# /' "$SERVE_TMP/loris.out"
stop_e2b slow
