#!/bin/bash
# ward serve: files out (SPEC §12) — "collect" in POST /exec and in a
# session exec: the files come back base64 in "files" (bytes, size, mode
# exact), the caps cut the list with files_truncated, the server's maxima
# refuse more (400, shown in /health), symlinks are never followed (a link
# to a host file or to /proc/self/root/etc/shadow comes back as nothing), a
# file a session's daemon grows while it is collected is read up to the
# size it had, and a pooled server collects as a fresh one does.
. "$(dirname "$0")/lib.bash"

json() { python3 -c 'import json,sys; print(json.dumps(eval(sys.argv[1])))' "$1"; }
# png_body COLLECT — a body that runs $PNG_PY and collects COLLECT (a JSON list)
png_body() { PROG=$PNG_PY python3 -c 'import json,os,sys; print(json.dumps({"argv": ["python3", "-c", os.environ["PROG"]], "collect": json.loads(sys.argv[1])}))' "$1"; }
# files_of BODY — "path size mode sha256-of-content" per file, sorted
files_of() {
	printf '%s' "$1" | python3 -c 'import json,sys,base64,hashlib
d=json.load(sys.stdin)
for f in sorted(d.get("files") or [], key=lambda f: f["path"]):
    c=base64.b64decode(f["content"]); assert f["encoding"]=="base64"
    print(f["path"], f["size"], f["mode"], len(c), hashlib.sha256(c).hexdigest()[:12])'
}
sha() { python3 -c 'import hashlib,sys; print(hashlib.sha256(eval(sys.argv[1])).hexdigest()[:12])' "$1"; }

# A program that prints progress and writes a PNG (zlib and struct, no
# matplotlib), as docs/files-out.md shows; and every byte value once.
PNG_PY='import struct, zlib, os
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
w, h = 16, 16
raw = b"".join(b"\0" + b"".join(bytes((x * 16, y * 16, 128)) for x in range(w)) for y in range(h))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
os.makedirs("out", exist_ok=True)
print("plotting...", flush=True)
open("out/plot.png", "wb").write(png)
open("out/bytes.bin", "wb").write(bytes(range(256)))
print("done")'

start_server c1 --max-collect-files 10 --max-collect-bytes 1000000 || exit 0

# --- POST /exec ---------------------------------------------------------
r=$(post_exec "$(png_body '["out/"]')")
b=$(body_of "$r")
expect_eq "exec collect: 200" 200 "$(code_of "$r")"
expect_eq "exec collect: the program ran" "ok" "$(jg "$b" 'd["status"]')"
f=$(files_of "$b")
expect_contains "exec collect: out/bytes.bin comes back byte for byte (base64)" "$f" \
	"out/bytes.bin 256 420 256 $(sha 'bytes(range(256))')"
expect_contains "exec collect: out/plot.png comes back" "$f" "out/plot.png "
expect_eq "exec collect: the PNG's signature is intact" '89504e470d0a1a0a' \
	"$(jg "$b" '__import__("base64").b64decode([f for f in d["files"] if f["path"]=="out/plot.png"][0]["content"])[:8].hex()')"
expect_eq "exec collect: files_truncated false" false "$(jg "$b" 'd["files_truncated"]')"
r=$(post_exec '{"command": "echo hi"}')
expect_eq "exec without collect: no files member" "null" "$(jg "$(body_of "$r")" 'd.get("files")')"

# globs: *, **, a directory by name, a file mode
r=$(post_exec "$(json '{"command": "mkdir -p a/b/c; echo 1 >top.png; echo 2 >a/x.png; echo 3 >a/b/c/y.png; echo 4 >a/b/c/z.txt; echo 5 >note.txt; chmod 755 note.txt", "collect": ["*.png", "a/**/*.txt", "note.txt"]}')")
f=$(files_of "$(body_of "$r")" | cut -d' ' -f1,3 | tr '\n' ' ')
expect_eq "exec collect: *.png stays at the top, a/**/*.txt goes deep, a file keeps its mode" \
	"a/b/c/z.txt 420 note.txt 493 top.png 420 " "$f"

# symlinks: to a host file, to /proc/self/root/etc/shadow, a loop — nothing read
r=$(post_exec "$(json '{"command": "mkdir d; ln -s /etc/passwd d/passwd; ln -s /proc/self/root/etc/shadow d/shadow; ln -s loop d/loop; ln -s /etc d/etcdir; echo ok >d/real", "collect": ["d/", "d/etcdir/", "**/*"]}')")
f=$(files_of "$(body_of "$r")" | cut -d' ' -f1 | tr '\n' ' ')
expect_eq "exec collect: symlinks (host file, /proc/self/root, loop, a dir) are skipped" "d/real " "$f"

# caps
r=$(post_exec "$(json '{"command": "for i in 1 2 3 4 5; do echo $i >f$i; done", "collect": ["f*"], "limits": {"collect_max_files": 2}}')")
b=$(body_of "$r")
expect_eq "exec collect: collect_max_files 2 gives two files" 2 "$(jg "$b" 'len(d["files"])')"
expect_eq "exec collect: ... and files_truncated" true "$(jg "$b" 'd["files_truncated"]')"
r=$(post_exec "$(json '{"command": "head -c 600 /dev/zero >big; echo s >small", "collect": ["big", "small"], "limits": {"collect_max_bytes": 500}}')")
b=$(body_of "$r")
expect_eq "exec collect: a file over collect_max_bytes is left out, a smaller one comes" "small" \
	"$(jg "$b" '" ".join(f["path"] for f in d["files"])')"
expect_eq "exec collect: ... and files_truncated" true "$(jg "$b" 'd["files_truncated"]')"

# maxima and bad globs: 400, nothing run
r=$(post_exec '{"command": "true", "collect": ["x"], "limits": {"collect_max_files": 11}}')
expect_eq "exec collect: collect_max_files above --max-collect-files: 400" 400 "$(code_of "$r")"
expect_contains "exec collect: ... naming the field and the option" "$(body_of "$r")" \
	"limits.collect_max_files: 11 is above this runner's maximum 10 (--max-collect-files)"
r=$(post_exec '{"command": "true", "collect": ["x"], "limits": {"collect_max_bytes": 1000001}}')
expect_eq "exec collect: collect_max_bytes above --max-collect-bytes: 400" 400 "$(code_of "$r")"
for g in '../x' '/etc/passwd' 'a/../../x'; do
	r=$(post_exec "$(json '{"command": "true", "collect": ["'"$g"'"]}')")
	expect_eq "exec collect: glob '$g' refused (400)" 400 "$(code_of "$r")"
done
r=$(post_exec '{"command": "true", "collect": "x"}')
expect_eq "exec collect: collect not an array: 400" 400 "$(code_of "$r")"
h=$(http GET /health)
expect_eq "/health: maxima.collect_max_files" 10 "$(jg "$(body_of "$h")" 'd["limits"]["maxima"]["collect_max_files"]')"
expect_eq "/health: defaults.collect_max_bytes (under the maximum)" 1000000 \
	"$(jg "$(body_of "$h")" 'd["limits"]["defaults"]["collect_max_bytes"]')"

# the Python client (clients/python) reads them back too
v=$(cd "$ROOT/clients/python" && URL=$URL timeout 60 python3 -c 'import os; from ward_client import Runner
r = Runner(os.environ["URL"]).exec(argv=["sh", "-c", "printf \"\\000\\377\" >b"], collect=["b"])
print(r.files[0].path, r.files[0].data.hex(), r.files_truncated)' 2>&1)
expect_eq "python client: exec(collect=...) gives the bytes back" "b 00ff False" "$v"

# --- a session exec -----------------------------------------------------
r=$(http POST /sessions --data-binary '{"limits": {"work_size_mb": 16}}')
expect_eq "session: created" 201 "$(code_of "$r")"
sid=$(jg "$(body_of "$r")" 'd["id"]')
sx() { http POST "/sessions/$sid/exec" -H 'Content-Type: application/json' --data-binary "$1"; }
r=$(sx "$(png_body '["out/*.bin"]')")
expect_eq "session exec collect: the file comes back byte for byte" \
	"out/bytes.bin 256 420 256 $(sha 'bytes(range(256))')" "$(files_of "$(body_of "$r")")"
r=$(sx "$(json '{"command": "ln -s /etc/passwd /work/pw; ln -s /proc/self/root/etc/shadow /work/sh; ln -s /proc/1/root/etc/passwd /work/p1; mkfifo /work/fifo", "collect": ["**/*"]}')")
f=$(files_of "$(body_of "$r")" | cut -d' ' -f1 | tr '\n' ' ')
expect_eq "session exec collect: symlinks and a FIFO skipped, earlier files there" "out/bytes.bin out/plot.png " "$f"
# A daemon the session keeps grows a file while execs collect it: each
# collected copy is whole up to the size it had (never more than the cap).
r=$(sx '{"command": "nohup sh -c '"'"'i=0; while [ $i -lt 4000 ]; do printf %0512d 0 >>/work/grow; i=$((i+1)); done'"'"' >/dev/null 2>&1 &"}')
expect_eq "session: a daemon that grows /work/grow started" 200 "$(code_of "$r")"
ok=1
for _ in 1 2 3 4 5; do
	r=$(sx '{"command": "true", "collect": ["grow"], "limits": {"collect_max_bytes": 1000000}}')
	v=$(jg "$(body_of "$r")" 'all(f["size"]==len(__import__("base64").b64decode(f["content"])) and f["size"]<=1000000 for f in d["files"]) and sum(f["size"] for f in d["files"])<=1000000')
	[ "$v" = true ] || { ok=0; fail "session exec collect: a growing file stays within its size and the cap" "$(body_of "$r" | head -c 300)"; }
done
[ $ok = 1 ] && pass "session exec collect: a growing file is read within its size and the cap"
r=$(sx '{"command": "true", "collect": ["x"], "background": true}')
expect_eq "session: a background exec with collect: 400" 400 "$(code_of "$r")"
r=$(sx '{"command": "true", "collect": ["x"], "limits": {"collect_max_files": 11}}')
expect_eq "session exec collect: above --max-collect-files: 400" 400 "$(code_of "$r")"
# ward session exec --collect: into --collect-dir, as ward run does
# (the CLI sends every limit: within this runner's maxima)
WARD_RUNNER_URL=$URL timeout 60 "$WARD" session exec "$sid" --collect 'out/*.png' --collect-dir "$SERVE_TMP/sc" \
	--collect-max-files 10 --collect-max-bytes 1000000 -- true >/dev/null 2>&1
expect_eq "ward session exec --collect: the PNG lands in --collect-dir" 89504e47 \
	"$(head -c 4 "$SERVE_TMP/sc/out/plot.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
(umask 077 && WARD_RUNNER_URL=$URL timeout 60 "$WARD" session exec "$sid" --collect 'w/' --collect-dir "$SERVE_TMP/scm" \
	--collect-max-files 10 --collect-max-bytes 1000000 --shell 'mkdir -p w; echo x >w/s; chmod 0777 w/s' >/dev/null 2>&1)
expect_eq "ward session exec --collect: a 0777 file under umask 077 lands 0700" 700 \
	"$(stat -c %a "$SERVE_TMP/scm/w/s" 2>/dev/null)"
http DELETE "/sessions/$sid" >/dev/null
stop_server "$SRV_PID"

# --- a pooled server ------------------------------------------------------
start_server c2 --pool 2 || exit 0
wait_for metric_is ward_pool_ready = 2
for i in 1 2 3; do
	r=$(post_exec "$(json '{"command": "mkdir -p o; printf run'"$i"' >o/r.txt", "collect": ["o/"]}')")
	expect_eq "pooled exec $i collect: the file comes back" "o/r.txt 4 420 4 $(sha "b'run$i'")" "$(files_of "$(body_of "$r")")"
done
check "pooled: the runs took pooled sandboxes" test "$(metric 'ward_pool_takes_total{result="hit"}')" -ge 2
stop_server "$SRV_PID"

# --- ward run --remote --collect: what a runner says is checked again ------
start_server c3 || exit 0
rm -rf "$SERVE_TMP/rc"
WARD_RUNNER_URL=$URL timeout 60 "$WARD" run --collect 'o/' --collect-dir "$SERVE_TMP/rc" \
	--shell 'mkdir o; printf remote >o/r' >/dev/null 2>&1
expect_eq "ward run --remote --collect: the file lands in --collect-dir" remote "$(cat "$SERVE_TMP/rc/o/r" 2>/dev/null)"
rm -rf "$SERVE_TMP/rc"
(umask 022 && WARD_RUNNER_URL=$URL timeout 60 "$WARD" run --collect 'o/' --collect-dir "$SERVE_TMP/rc" \
	--shell 'mkdir o; printf remote >o/r; chmod 0777 o/r' >/dev/null 2>&1)
expect_eq "ward run --remote --collect: a 0777 file under umask 022 lands 0755" 755 \
	"$(stat -c %a "$SERVE_TMP/rc/o/r" 2>/dev/null)"
stop_server "$SRV_PID"
# A hostile runner answers paths that climb out, are absolute, or cross a
# symlink it hopes is there: nothing is written outside --collect-dir.
mkdir -p "$SERVE_TMP/evil/dir" "$SERVE_TMP/outside"
ln -s "$SERVE_TMP/outside" "$SERVE_TMP/evil/dir/link"
python3 - "$SERVE_TMP/evil.port" <<'PY' &
import base64, http.server, json, sys
files = [{"path": p, "size": 1, "mode": 0o7777, "encoding": "base64", "content": base64.b64encode(b"x").decode()}
         for p in ("../escaped", "/tmp/ward-collect-abs-probe", "link/through", "ok")]
res = {"status": "ok", "exit_code": 0, "stdout": "", "stderr": "", "error": "", "files": files, "files_truncated": False}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        b = json.dumps(res).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.timeout = 30
s.handle_request()
PY
evil=$!
wait_for test -s "$SERVE_TMP/evil.port"
(umask 022 && timeout 60 "$WARD" run --remote "http://127.0.0.1:$(cat "$SERVE_TMP/evil.port")" --collect x \
	--collect-dir "$SERVE_TMP/evil/dir" -- true >/dev/null 2>"$SERVE_TMP/evil.err")
wait "$evil" 2>/dev/null
expect_eq "hostile runner: only the plain path is written" "ok " \
	"$(cd "$SERVE_TMP/evil/dir" && find . -type f | sed 's|^\./||' | tr '\n' ' ')"
expect_eq "hostile runner: a mode 07777 lands under the umask, never set-id or sticky" 755 \
	"$(stat -c %a "$SERVE_TMP/evil/dir/ok" 2>/dev/null)"
check "hostile runner: nothing above --collect-dir" test ! -e "$SERVE_TMP/evil/escaped"
check "hostile runner: nothing at the absolute path" test ! -e /tmp/ward-collect-abs-probe
expect_eq "hostile runner: nothing through a symlink in --collect-dir" "" "$(ls -A "$SERVE_TMP/outside")"
expect_contains "hostile runner: stderr names the refused path" "$(cat "$SERVE_TMP/evil.err")" "'../escaped' not written"
