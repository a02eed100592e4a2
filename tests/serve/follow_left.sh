#!/bin/bash
# ward serve: a follow stream (GET .../output?follow=1) parked on a silent
# process ends when its client leaves.  A parked connection is neither read
# nor written, so a closed socket went unseen until the process said
# something or ended: the connection, its --max-connections slot and its
# stream stayed (review3: 50 closed clients, ward_connections still 51).
# Now a parked stream looks at its client at each of the ticker's ticks.
# 50 follow streams on `sleep 600`, their clients closed: the server's
# connections are back to their count before them, waited for 20 s at
# most.  Before, they stayed until the stream's keepalive line, 30 s after
# its last output, failed to send; now the next tick (0.1 s) ends them.
. "$(dirname "$0")/lib.bash"
start_server s --max-connections 128 --max-conns-per-addr 0 --request-timeout 200 || exit 0
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
idle=$(jg "$(curl -s -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "command": "sleep 600"}')" 'd["pid"]')
conns() { curl -s "$URL/metrics" | awk '$1 ~ /^ward_connections\{/ {n += $2} END {print n + 0}'; }
base=$(conns)
timeout 60 python3 - "$PORT" "$sid" "$idle" <<'PY'
import socket, sys
port, sid, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cs = []
for _ in range(50):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(("GET /sessions/%s/processes/%s/output?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n" % (sid, pid)).encode())
    c.recv(100)  # its head: the stream is on, and parked
    cs.append(c)
for c in cs:
    c.close()
PY
held=$(conns)
left=$held
for _ in $(seq 200); do
	left=$(conns)
	[ "$left" -le "$base" ] && break
	sleep 0.1
done
expect_eq "50 follow streams on a silent process, their clients gone: the server's connections back to $base (right after: $held)" "$base" "$left"
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null
stop_checked s "follow left"
