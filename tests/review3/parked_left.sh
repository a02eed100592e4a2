#!/bin/bash
# review3 proof (low; not new in this session, made cheaper to hold by
# nothing): a follow stream parked on a silent process stays after its
# client left.  A parked (suspended) connection is never read or written,
# so its closed socket is not seen until the process says something or
# ends: the server keeps the connection, its slot of --max-connections
# and its stream, though nobody holds the other end.  50 follow streams
# on `sleep 120`, their clients closed: the server's ward_connections
# still counts them seconds later.  Prints SHOWN: while it does.
# Bounded: 50 sockets, the session deleted, the server killed by pid.
. "$(dirname "$0")/../serve/lib.bash"
start_server s --max-connections 128 --max-conns-per-addr 0 || exit 0
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
idle=$(jg "$(curl -s -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "command": "sleep 120"}')" 'd["pid"]')
conns() { curl -s "$URL/metrics" | awk '$1 ~ /^ward_connections\{/ {n += $2} END {print n + 0}'; }
base=$(conns)
python3 - "$PORT" "$sid" "$idle" <<'PY'
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
sleep 3
left=$(conns)
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null
echo "ward_connections: $base before, $left three seconds after 50 follow clients closed their sockets"
if [ "$left" -ge $((base + 50)) ]; then
	echo "SHOWN: the 50 closed follow streams are still held by the server (parked on a silent process)"
else
	echo "NOT SHOWN: $left"
fi
