#!/bin/bash
# Judge0's additional_files and language 89 (SPEC §16): the zip is unpacked
# by ward-unzip inside a sandbox, before the compile, and its files sit
# beside the program in every run; hostile zips ("../", absolute names, a
# symlink out then a file through it, a 1 GB bomb, not a zip, a field over
# the maxima) end as Compilation Error naming why, and nothing reaches the
# host.  Then --judge0-additional-files off refuses the field.
#
# Bounded whatever the sandbox does: the bomb is 1 GB of zeros compressed
# (1 MB here), the server's own caps end it; the temporary files are in
# SERVE_TMP (removed by lib.bash) and the canary directory the symlink
# points at is removed with it.
. "$(dirname "$0")/dialect.bash"

[ -x "$ROOT/build/ward-unzip" ] || { skip "build/ward-unzip is not built"; exit 0; }
start_dialects files --judge0 127.0.0.1:0 --max-body 33554432 --max-body-total 268435456 || exit 0
J=$(dialect_url judge0)
CANARY=$SERVE_TMP/canary
mkdir -p "$CANARY"
rss0=$(awk '/VmRSS/{print $2}' /proc/$SRV_PID/status)

timeout 400 /usr/bin/python3 - "$J" "$CANARY" <<'PY'
import base64, io, json, os, sys, time, urllib.request, urllib.error, zipfile
J, CANARY = sys.argv[1], sys.argv[2]
def check(name, ok, detail=""):
    print(("PASS: " if ok else "FAIL: ") + "judge0 files: " + name + ("" if ok else ": " + str(detail)[:600]))
def call(path, body=None, method=None):
    req = urllib.request.Request(J + path, data=json.dumps(body).encode() if body is not None else None,
                                 method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw
def zipped(entries):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, *mode in entries:
            zi = zipfile.ZipInfo(name)
            zi.compress_type = zipfile.ZIP_DEFLATED
            if mode:
                zi.external_attr = mode[0] << 16
            z.writestr(zi, data)
    return b.getvalue()
b64 = lambda b: base64.b64encode(b).decode()
F = "status,compile_output,stdout,stderr,message"
def sub(lid, src, zipb, **kw):
    body = {"language_id": lid, "additional_files": b64(zipb) if isinstance(zipb, bytes) else zipb, **kw}
    if src is not None:
        body["source_code"] = src
    return call("/submissions?wait=true&fields=" + F, body)
walk = "import os\nfor r,d,f in sorted(os.walk('.')):\n  print(r, sorted(d), sorted(f))\n"

code, cfg = call("/config_info")
check("config_info: enable_additional_files true, max_extract_size 10240", cfg["enable_additional_files"] is True and cfg["max_extract_size"] == 10240, cfg)
code, langs = call("/languages")
check("languages: 89 Multi-file program listed", {"id": 89, "name": "Multi-file program"} in langs, langs)

# beside the program, in the working directory, before the compile
z = zipped([("data.txt", "41\n"), ("inc/x.h", "#define X 1\n"), ("main.c", "int main(){return 7;}"), ("other.c", "int main(){return 8;}")])
c = '#include <stdio.h>\n#include "inc/x.h"\nint main(){FILE*f=fopen("data.txt","r");int v;if(fscanf(f,"%d",&v)!=1)return 2;printf("%d\\n",v+X);}'
code, a = sub(50, c, z, expected_output="42")
check("C: a header and a data file of the zip, compiled against and read at run time", code == 201 and a["status"]["id"] == 3 and a["stdout"] == "42\n", a)
check("... the submission's main.c wins over the zip's (unzip -n), other.c is not compiled", a["status"]["id"] == 3, a)
code, a = sub(71, walk + "print(open('data.txt').read(), end='')", zipped([("data.txt", "py data\n"), ("d/e/f.txt", "x")]))
check("Python: the zip's tree beside main.py", code == 201 and a["stdout"] == ". ['d'] ['data.txt', 'main.py']\n./d ['e'] []\n./d/e [] ['f.txt']\npy data\n", a)
code, a = call("/submissions?base64_encoded=true&wait=true&fields=status,stdout,additional_files",
               {"language_id": 71, "source_code": b64(b"print(open('data.txt').read(), end='')"), "additional_files": b64(zipped([("data.txt", "b64\n")]))})
check("base64_encoded=true: the zip is base64 either way, and fields answer it base64", a["status"]["id"] == 3 and base64.b64decode(a["stdout"]) == b"b64\n" and base64.b64decode(a["additional_files"])[:2] == b"PK", a)
code, a = call("/submissions?wait=true&fields=status,stdout", {"language_id": 71, "source_code": "print(open('data.txt').read(), end='')", "additional_files": b64(zipped([("data.txt", "x\n")]))[:-4] + "\n!!"})
check("lenient base64 (Ruby's decode64): a damaged tail is a damaged zip, Compilation Error", code == 201 and a["status"]["id"] in (3, 6), a)
# a batch sharing source and zip compiles once and unpacks once; each test sees the files
subs = [{"language_id": 50, "source_code": c, "additional_files": b64(z), "expected_output": "42"} for _ in range(3)]
code, toks = call("/submissions/batch", {"submissions": subs})
tl = ",".join(t["token"] for t in toks)
for _ in range(600):
    code, b = call("/submissions/batch?fields=status_id&tokens=" + tl)
    if all(x["status_id"] > 2 for x in b["submissions"]):
        break
    time.sleep(0.1)
check("batch of 3 with one zip: all Accepted", [x["status_id"] for x in b["submissions"]] == [3, 3, 3], b)

# language 89: the zip's compile then run scripts
code, a = sub(89, None, zipped([("compile", "gcc -o prog a.c\n"), ("a.c", '#include <stdio.h>\nint main(){puts("multi ok");}'), ("run", "./prog\n")]))
check("89: compile then run scripts", code == 201 and a["status"]["id"] == 3 and a["stdout"] == "multi ok\n", a)
code, a = sub(89, None, zipped([("run", "read x; echo got $x; ls\n")]), stdin="7\n")
check("89: no compile script: run alone, with stdin", code == 201 and a["status"]["id"] == 3 and a["stdout"] == "got 7\nrun\n", a)
code, a = sub(89, None, zipped([("compile.sh", "echo built > out.txt\n"), ("run.sh", "cat out.txt\n"), ("run", "echo old names\n")]))
check("89: compile.sh and run.sh (Judge0 master's names) go first", code == 201 and a["status"]["id"] == 3 and a["stdout"] == "built\n", a)
code, a = sub(89, None, zipped([("data", "x")]))
check("89: no run script: bash's exit 127, NZEC, as Judge0", a["status"]["id"] == 11 and "run" in (a["stderr"] or ""), a)
code, l89 = call("/languages/89")
check("/languages/89: Multi-file program, no source file", l89.get("name") == "Multi-file program" and l89.get("source_file") is None, l89)
code, a = sub(89, None, zipped([("compile", "exit 3\n"), ("run", "echo no\n")]))
check("89: a failing compile script is Compilation Error", a["status"]["id"] == 6, a)
code, a = sub(89, "print(1)", zipped([("run", "echo")]))
check("89: source_code must be blank (422)", code == 422 and a == {"source_code": ["must be blank"]}, a)
code, a = call("/submissions", {"language_id": 89})
check("89: additional_files can't be blank (422)", code == 422 and a == {"additional_files": ["can't be blank"]}, a)

# hostile zips: each ends as Compilation Error saying why, the host untouched
def hostile(name, zipb, want, src=walk):
    t0 = time.time()
    code, a = sub(71, src, zipb)
    check(f"hostile: {name}: Compilation Error ({want})", code == 201 and a["status"]["id"] == 6 and want in (a["compile_output"] or ""), a)
    return a, time.time() - t0
hostile("a '../' entry", zipped([("ok.txt", "x"), ("../ward-d3-evil-dotdot", "x")]), "'..' part")
hostile("an absolute name", zipped([("/tmp/ward-d3-evil-abs", "x")]), "absolute name")
hostile("not a zip", b"this is not a zip archive, only text" * 10, "not a zip")
hostile("an empty field's garbage", b"\x00" * 64, "not a zip")
bomb = io.BytesIO()
with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
    with zf.open("zeros", "w", force_zip64=True) as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(1024):
            f.write(chunk)
check("the bomb is 1 GB unpacked, about 1 MB packed", len(bomb.getvalue()) < 2 << 20, len(bomb.getvalue()))
a, dt = hostile("a zip bomb (1 GB of zeros)", bomb.getvalue(), "max_extract_size")
check("... stopped within seconds", dt < 30, dt)
many = zipped([(f"f{i}", "") for i in range(1200)])
hostile("1200 entries", many, "more than 1000")
# a symlink out of /work (to a directory of the host), then a file through it
sym = zipped([("link", CANARY, 0o120777), ("link/evil", "through the link")])
code, a = sub(71, walk + "import os\nprint(os.path.islink('link'))", sym)
check("hostile: symlink then a file through it: the link is never made (a directory is)", a["status"]["id"] == 3 and a["stdout"].endswith("False\n") and "./link [] ['evil']" in a["stdout"], a)
check("... and nothing reached the host's directory it pointed at", os.listdir(CANARY) == [], os.listdir(CANARY))
leaks = [p for p in ("/tmp/ward-d3-evil-abs", "/ward-d3-evil-dotdot", "/tmp/ward-d3-evil-dotdot") if os.path.exists(p)]
check("hostile: nothing of the '../' or absolute entries on the host", leaks == [], leaks)

# a field over the maxima
big = "A" * (15 << 20)
code, a = call("/submissions", {"language_id": 71, "source_code": "print(1)", "additional_files": big})
check("hostile: additional_files of 15 MB base64: 422 too large", code == 422 and "too large" in a["additional_files"][0], a)
code, a = call("/submissions", {"language_id": 71, "source_code": "print(1)", "additional_files": 42})
check("additional_files not a string: 422", code == 422 and "additional_files" in a, a)
PY

# The limits beneath ward-unzip's own count: with its cap lifted (native
# /exec, the same program and bomb), the sandbox's /work tmpfs ends it.
out=$(timeout 120 /usr/bin/python3 - "$URL" "$ROOT/build/ward-unzip" <<'PY'
import base64, io, json, sys, urllib.request, zipfile
bomb = io.BytesIO()
with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
    with zf.open("zeros", "w", force_zip64=True) as f:
        for _ in range(1024):
            f.write(b"\0" * (1 << 20))
files = [{"path": ".u", "content": base64.b64encode(open(sys.argv[2], "rb").read()).decode(), "encoding": "base64", "mode": 0o755},
         {"path": "z.zip", "content": base64.b64encode(bomb.getvalue()).decode(), "encoding": "base64"}]
body = {"argv": ["./.u", "z.zip", "100000000", "100000"], "files": files, "limits": {"timeout_s": 20, "tmp_size_mb": 16, "fsize_mb": 1024}}
req = urllib.request.Request(sys.argv[1] + "/exec", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
print(json.dumps(json.loads(urllib.request.urlopen(req, timeout=60).read())))
PY
)
expect_eq "backstop: ward-unzip without its cap: the bomb ends on the sandbox's 16 MB /work tmpfs" 1 "$(jg "$out" 'int(d["exit_code"] == 1 and "No space left" in d["stderr"])')"

rss1=$(awk '/VmRSS/{print $2}' /proc/$SRV_PID/status)
# (under ASan its quarantine keeps what was freed resident: 256 MB more allowed)
cap=$(( ${WARD_ASAN:-0} == 1 ? 400000 : 150000 ))
expect_eq "the server's memory after the bomb and the 15 MB field stays bounded (< $cap KB more: $((rss1 - rss0)) KB)" 1 "$(( rss1 - rss0 < cap ? 1 : 0 ))"
big=$(head -c $((40 << 20)) /dev/zero | tr '\0' A)
code=$(printf '{"language_id":71,"source_code":"print(1)","additional_files":"%s"}' "$big" |
	curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @- "$J/submissions")
expect_eq "hostile: a 40 MB body (over --max-body): 413" 413 "$code"

stop_dialects files
# the operator's switch: off refuses the field, as Judge0 with ENABLE_ADDITIONAL_FILES=false
start_dialects files-off --judge0 127.0.0.1:0 --judge0-additional-files off || exit 0
J=$(dialect_url judge0)
out=$(curl -s "$J/config_info")
expect_eq "--judge0-additional-files off: config_info says false" False "$(jg "$out" 'd["enable_additional_files"]')"
out=$(curl -s -H 'Content-Type: application/json' -d '{"language_id":71,"source_code":"print(1)","additional_files":"UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA=="}' "$J/submissions")
expect_eq "... and a submission with additional_files: 422 not allowed" "setting additional files is not allowed" "$(jg "$out" 'd["additional_files"][0]')"
out=$(curl -s "$J/languages")
expect_not_contains "... and language 89 is not listed" "$out" '"id":89'
stop_dialects files-off
