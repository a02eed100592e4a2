#!/bin/bash
# tests/mcp/stdio_wire.sh — `ward mcp` on the wire (SPEC §21): hostile lines
# (malformed JSON, a batch, a line over --max-body, more values than a
# message may hold (WARD_JSON_MAX_VALUES), an unknown method, a request before initialize, wrong
# argument types) each get their JSON-RPC error and the server goes on;
# stdout carries nothing but JSON-RPC messages; a cancelled call gets no
# response; at the end of stdin the calls sent are finished and answered,
# then the process ends with the connection's session; SIGTERM kills the
# run in flight instead.
. "$(dirname "$0")/../lib.sh"
M=$RANDOM$RANDOM
out=$(WARD="$WARD" M=$M timeout 120 /usr/bin/python3 - <<'PY'
import json, os, select, subprocess, sys, time
p = subprocess.Popen([os.environ["WARD"], "mcp", "--max-body", "400000", "--max-concurrent", "2"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
lines = []
def send(b):
    p.stdin.write(b if isinstance(b, bytes) else (json.dumps(b) + "\n").encode()); p.stdin.flush()
def recv(want_id, secs=30):
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([p.stdout], [], [], 0.5)
        if not r: continue
        l = p.stdout.readline()
        if not l: return None
        lines.append(l)
        m = json.loads(l)
        if m.get("id") == want_id: return m
    return None
def code(m): return m and m.get("error", {}).get("code")
res = {}
send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
res["before_init"] = code(recv(1))
send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "py", "version": "1"}}})
res["version"] = recv(2)["result"]["protocolVersion"]
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send(b'{"jsonrpc":"2.0","id":3,\n')
res["malformed"] = code(recv(None))
send(b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]\n')
res["batch"] = code(recv(None))
send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' + b"a" * 500000 + b'"}}\n')
m = recv(None); res["huge"] = [code(m), "max-body" in m["error"]["message"]]
send(b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":[' + b"0," * 30000 + b'0]}}\n')
res["values_ok"] = "result" in recv(6)
send(b'{"jsonrpc":"2.0","id":16,"method":"ping","params":{"x":[' + b"0," * 150000 + b'0]}}\n')
res["values_many"] = code(recv(None))
send(b'\n\r\n   \n')
send({"jsonrpc": "2.0", "id": 7, "method": "resources/list"})
res["unknown"] = code(recv(7))
send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": ["echo"]}}})
res["types"] = code(recv(8))
send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"})
res["params"] = code(recv(9))
send({"jsonrpc": "2.0", "id": 10, "result": {}})      # a response to nothing: ignored
send({"jsonrpc": "2.0", "id": 11, "method": "ping"})
res["ping"] = recv(11).get("result")
# a cancelled call: no response, the next is served
send({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": "sleep 3" + os.environ["M"] + "1"}}})
time.sleep(1)
send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12, "reason": "test"}})
send({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": "echo after"}}})
m = recv(13)
res["after_cancel"] = m["result"]["structuredContent"]["stdout"]
def markers(m):
    n = 0
    for d in os.listdir("/proc"):
        try: a = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        except Exception: continue
        n += a[0].endswith(b"sleep") and len(a) > 1 and a[1] == m.encode()
    return n
for _ in range(100):   # the kill is at most 50 ms after the cancel; reaping takes a moment
    res["cancelled_gone"] = markers("3" + os.environ["M"] + "1")
    if not res["cancelled_gone"]: break
    time.sleep(0.1)
res["no_response_to_12"] = not any(json.loads(l).get("id") == 12 for l in lines)
# a session with a background process, a call sent just before EOF: the
# call is finished and answered, then the process ends with the session
send({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "run_in_session", "arguments": {"command": "sleep 3" + os.environ["M"] + "2 & echo bg"}}})
res["bg"] = recv(14)["result"]["structuredContent"]["stdout"]
send({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": "sleep 1; echo finished"}}})
p.stdin.close()
try: res["exit"] = p.wait(60)
except subprocess.TimeoutExpired: res["exit"] = "hung"; p.kill()
rest = p.stdout.read()
lines += rest.splitlines(True)
res["drained"] = [json.loads(l)["result"]["structuredContent"]["stdout"] for l in rest.splitlines() if json.loads(l).get("id") == 15]
res["all_json_rpc"] = all(json.loads(l).get("jsonrpc") == "2.0" for l in lines if l.strip())
res["bg_gone"] = markers("3" + os.environ["M"] + "2")
# SIGTERM with a run in flight: the run's tree is killed, ward mcp exits 0
q = subprocess.Popen([os.environ["WARD"], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p = q
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "py", "version": "1"}}})
recv(1)
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": "sleep 3" + os.environ["M"] + "3"}}})
for _ in range(300):
    if markers("3" + os.environ["M"] + "3"): break
    time.sleep(0.1)
res["term_up"] = markers("3" + os.environ["M"] + "3")
q.terminate()
try: res["term_exit"] = q.wait(30)
except subprocess.TimeoutExpired: res["term_exit"] = "hung"; q.kill()
res["term_gone"] = markers("3" + os.environ["M"] + "3")
print(json.dumps(res))
PY
)
expect_eq "a request before initialize: -32600" -32600 "$(jget "$out" 'd["before_init"]')"
expect_eq "an older client's version is spoken" 2024-11-05 "$(jget "$out" 'd["version"]')"
expect_eq "malformed JSON: -32700" -32700 "$(jget "$out" 'd["malformed"]')"
expect_eq "a batch: -32600" -32600 "$(jget "$out" 'd["batch"]')"
expect_eq "a line over --max-body: dropped, -32600 naming it" '[-32600, true]' "$(jget "$out" 'd["huge"]')"
expect_eq "many values within the bounds: answered" true "$(jget "$out" 'd["values_ok"]')"
expect_eq "more values than a message may hold: -32600" -32600 "$(jget "$out" 'd["values_many"]')"
expect_eq "an unknown method: -32601" -32601 "$(jget "$out" 'd["unknown"]')"
expect_eq "an argument of the wrong type: -32602" -32602 "$(jget "$out" 'd["types"]')"
expect_eq "params not an object: -32600" -32600 "$(jget "$out" 'd["params"]')"
expect_eq "the server goes on after all of them" '{}' "$(jget "$out" 'd["ping"]')"
expect_eq "after a cancel the next call is served" 'after' "$(jget "$out" 'd["after_cancel"]' | tr -d '\n')"
expect_eq "a cancelled call gets no response" true "$(jget "$out" 'd["no_response_to_12"]')"
expect_eq "the cancelled run is gone while the server runs on" 0 "$(jget "$out" 'd["cancelled_gone"]')"
expect_eq "a background process in the session" bg "$(jget "$out" 'd["bg"]' | tr -d '\n')"
expect_eq "EOF on stdin: the call sent before it is finished and answered" '["finished\n"]' "$(jget "$out" 'd["drained"]')"
expect_eq "EOF on stdin: then ward mcp exits 0" 0 "$(jget "$out" 'd["exit"]')"
expect_eq "stdout carries only JSON-RPC messages" true "$(jget "$out" 'd["all_json_rpc"]')"
expect_eq "EOF: the session's background process is gone" 0 "$(jget "$out" 'd["bg_gone"]')"
expect_eq "SIGTERM: the run was up" 1 "$(jget "$out" 'd["term_up"]')"
expect_eq "SIGTERM: ward mcp exits 0" 0 "$(jget "$out" 'd["term_exit"]')"
expect_eq "SIGTERM: the run in flight is gone" 0 "$(jget "$out" 'd["term_gone"]')"
