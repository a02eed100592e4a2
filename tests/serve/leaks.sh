#!/bin/bash
# ward serve: after 1000 sequential requests (runs, errors, 404s, aborted
# connections) the server's fd count, thread count and child processes are
# back to where they started.
. "$(dirname "$0")/lib.bash"

# short deadlines: a connection a client abandons mid-request is cut at its
# deadline (MHD alone may keep it until its idle timeout)
start_server leaks --max-concurrent 2 --header-timeout 2 --request-timeout 2 || exit 0
snap() { # fds threads children
	local fds thr kids
	fds=$(fd_count "$SRV_PID")
	thr=$(ls /proc/"$SRV_PID"/task 2>/dev/null | wc -l)
	kids=$(kids "$SRV_PID")
	echo "$fds $thr $kids"
}
post_exec '{"command":"true"}' >/dev/null   # warm up (first run loads what it caches)
before=$(snap)
python3 - "$PORT" <<'PY'
import http.client, json, socket, sys
port = int(sys.argv[1])
bodies = [json.dumps({"command": "echo x"}), json.dumps({"argv": ["false"]}),
          json.dumps({"command": "exit 3", "files": [{"path": "a/b.txt", "content": "x"}], "stdin": "in"}),
          "{bad json", json.dumps({"command": "true", "limits": {"timeout_s": -1}})]
bad = 0
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for i in range(1000):
    if i % 50 == 49:
        # a client that sends half a request and vanishes
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        s.close()
        continue
    if i % 10 == 9:
        c.request("GET", "/nothing")
    else:
        c.request("POST", "/exec", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status not in (200, 400, 404):
        bad += 1
    if i % 100 == 0:   # fresh connections too, not only keep-alive
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
print("PASS: 1000 requests answered" if bad == 0 else "FAIL: 1000 requests answered: %d odd statuses" % bad)
PY
# past the deadlines (2 s) the sweep and MHD close what the clients left:
# wait for that (up to 10 s) rather than for a fixed time
back() { [ "$(snap)" = "$before" ]; }
wait_for back
after=$(snap)
read -r f0 t0 k0 <<<"$before"
read -r f1 t1 k1 <<<"$after"
expect_eq "fd count back to where it started" "$f0" "$f1"
expect_eq "thread count back to where it started" "$t0" "$t1"
expect_eq "no child processes left" "0 0" "$k0 $k1"
r=$(http GET /metrics)
check "metrics saw the runs" grep -q 'ward_runs_total{status="ok",isolation="system"} [1-9]' <<<"$(body_of "$r")"
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit" 0 "$rc"
