#!/bin/bash
# review3 proof (medium): ward_session_notify wakes EVERY stream parked on a
# session at each piece of output of ANY of its background processes
# (session_bg.c drain -> session_notify_all, one eventfd per stream), and
# the ticker resumes each woken stream on the I/O thread, where it looks,
# finds nothing of its own process and parks again.  One tenant's session
# with a process writing one byte every 0.2 ms and N follow streams on
# another, silent process makes the server spin (the ticker and MHD's
# I/O thread, shared by every key).  And the streams stay parked once
# their clients left (a parked stream of a silent process writes nothing,
# so the closed socket is never seen): the storm goes on without them.
# Measured: the server's CPU (utime+stime of its process, /proc) while the
# same chatty process runs 3 s: before any stream, with 100 idle follow
# streams, and after their clients closed.  Prints SHOWN: when the streams
# multiply the server's CPU by more than 5.  Bounded: the writer runs 3 s,
# 100 sockets, all killed by pid at the end.
. "$(dirname "$0")/../serve/lib.bash"
start_server s --max-connections 512 --max-conns-per-addr 0 || exit 0
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
idle=$(jg "$(curl -s -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "command": "sleep 120"}')" 'd["pid"]')
# the chatty process: one byte every 0.2 ms for 3 s (each a separate wake)
cat >"$SERVE_TMP/chatty.json" <<'JSON'
{"background": true, "limits": {"max_output_chars": 1000000},
 "command": "timeout 3 python3 -c 'import os, time; [(os.write(1, b\"x\"), time.sleep(0.0002)) for _ in iter(int, 1)]'; true"}
JSON
cpu() { awk '{print $14 + $15}' "/proc/$SRV_PID/stat"; }
# one round: the chatty process, the server's CPU ticks (1/100 s) meanwhile
round() {
	local before after p
	before=$(cpu)
	p=$(jg "$(curl -s -XPOST "$URL/sessions/$sid/exec" --data-binary @"$SERVE_TMP/chatty.json")" 'd["pid"]')
	[ -n "$p" ] || { echo "the chatty process did not start" >&2; echo 0; return; }
	wait_proc_exited "$sid" "$p" >/dev/null
	after=$(cpu)
	echo $((after - before))
}
before=$(round)
python3 - "$PORT" "$sid" "$idle" >"$SERVE_TMP/py.out" 2>&1 <<'PY' &
import socket, sys, time
port, sid, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cs = []
for _ in range(100):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(("GET /sessions/%s/processes/%s/output?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n" % (sid, pid)).encode())
    c.recv(100)  # its head: the stream is on, and parked
    cs.append(c)
print("open", flush=True)
time.sleep(100)
PY
PY_PID=$!
_SERVE_PIDS="$_SERVE_PIDS $PY_PID"
wait_for grep -q open "$SERVE_TMP/py.out" || { echo "the streams did not open: $(cat "$SERVE_TMP/py.out")"; exit 1; }
with=$(round)
kill "$PY_PID"
wait "$PY_PID" 2>/dev/null
sleep 1
after=$(round)
conns=$(ls -l /proc/"$SRV_PID"/fd 2>/dev/null | grep -c socket)
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null
echo "server CPU ticks (1/100 s) while a process writes a byte every 0.2 ms for 3 s:" \
	"no stream $before, 100 idle follow streams $with, their clients gone $after (the server still holds $conns sockets)"
b=$((before > 0 ? before : 1))
if [ "$with" -gt $((5 * b)) ]; then
	echo "SHOWN: 100 idle streams of another process multiply the server's CPU by $((with / b)) (gone: $((after / b))): every output wakes and resumes every parked stream of the session"
else
	echo "NOT SHOWN: $with against $before"
fi
