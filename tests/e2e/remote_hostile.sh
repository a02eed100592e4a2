#!/bin/bash
# tests/e2e/remote_hostile.sh — ward run --remote against a hostile runner
# (a Python server on 127.0.0.1, port 0, one answer a case): files the
# caller never asked for are not written anywhere, and a stream of odd
# events (not JSON, wrong types, a result that is no object, more output
# shown than the result holds) ends as a result or ward's own error,
# never a crash.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
T=$(mktemp -d)
RUNNER=
trap '[ -n "$RUNNER" ] && kill "$RUNNER" 2>/dev/null; rm -rf "$T"' EXIT

# runner CASE — one answer of the fake runner, its port in $T/port
runner() {
	rm -f "$T/port"
	python3 - "$T/port" "$1" <<'PY' &
import base64, http.server, json, sys
case = sys.argv[2]
files = [{"path": "unasked.txt", "size": 1, "mode": 420, "encoding": "base64", "content": base64.b64encode(b"x").decode()}]
res = {"status": "ok", "exit_code": 0, "stdout": "ab", "stderr": "", "error": "", "stdout_bytes": 2}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if case == "many":
            many = [dict(files[0], path="f%d" % i) for i in range(5)] + [dict(files[0], path="big", size=4096,
                    content=base64.b64encode(b"z" * 4096).decode())]
            b = json.dumps(dict(res, files=many, files_truncated=False)).encode()
            ct = "application/json"
        elif case == "files":
            b = json.dumps(dict(res, files=files, files_truncated=False)).encode()
            ct = "application/json"
        else:
            lines = ["not json", "{", "[]", '{"stream": 5, "data": "x"}', '{"stream": "stdout", "data": 7}',
                     '{"stream": "stdout"}', '{"stream": "stderr", "data": "E", "dropped": "yes"}',
                     '{"stream": "stdout", "data": "' + "y" * 5000 + '"}', '{"result": "no object"}',
                     '{"result": []}', json.dumps({"result": dict(res, stdout_bytes=-1)}), '{"result": {"status": 1}}']
            b = ("\n".join(lines) + "\n").encode()
            ct = "application/x-ndjson"
        self.send_response(200); self.send_header("Content-Type", ct)
        self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.timeout = 30
s.handle_request()
PY
	RUNNER=$!
	for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
}

mkdir -p "$T/cwd"
runner files
(cd "$T/cwd" && timeout 60 "$WARD" run --remote "http://127.0.0.1:$(cat "$T/port")" --json -- true \
	>"$T/files.out" 2>"$T/files.err")
rc=$?
wait "$RUNNER" 2>/dev/null; RUNNER=
expect_eq "hostile runner: files nobody asked for: the run's own status" 0 "$rc"
expect_eq "hostile runner: ... are written nowhere (the cwd stays empty)" "" "$(ls -A "$T/cwd")"
expect_not_contains "hostile runner: ... and no --collect-dir is spoken of" "$(cat "$T/files.err")" "collect-dir"

runner stream
timeout 60 "$WARD" run --remote "http://127.0.0.1:$(cat "$T/port")" -- true >"$T/stream.out" 2>"$T/stream.err"
rc=$?
wait "$RUNNER" 2>/dev/null; RUNNER=
check "hostile runner: odd stream events end in a status, not a crash (rc $rc)" test "$rc" -lt 128
expect_not_contains "hostile runner: ... no sanitizer report" "$(cat "$T/stream.err")" "Sanitizer"

# More files, or more bytes, than the caller's caps: the caller's caps hold.
runner many
timeout 60 "$WARD" run --remote "http://127.0.0.1:$(cat "$T/port")" --collect 'f*' --collect-max-files 3 \
	--collect-max-bytes 1000 --collect-dir "$T/many" -- true >/dev/null 2>"$T/many.err"
wait "$RUNNER" 2>/dev/null; RUNNER=
expect_eq "hostile runner: no more files than --collect-max-files, no more bytes than --collect-max-bytes" "3 3" \
	"$(find "$T/many" -type f | wc -l) $(cat "$T/many"/* 2>/dev/null | wc -c)"
expect_contains "hostile runner: ... and ward says a cap was reached" "$(cat "$T/many.err")" "a cap was reached"
