"""Replays, request by request, what the official judge0 Python SDK and the
two common hand-written patterns send (research judge.md §5.2), against
ward serve --judge0; prints PASS:/FAIL: lines.  argv: BASE PROGRAMS_DIR"""
import base64, json, os, re, sys, time, urllib.request, urllib.error

BASE, PROG = sys.argv[1], sys.argv[2]
SDK = {"X-Judge0-App": "Judge0 Python SDK", "X-Judge0-App-Version": "0.0.8"}
failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS: " if ok else "FAIL: ") + "judge0: " + name + ("" if ok else ": " + str(detail)[:500]))
    failed += not ok


def call(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json", **(headers or {})}
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw) if raw else None
        except ValueError:
            return e.code, raw


b64 = lambda s: base64.b64encode(s.encode() if isinstance(s, str) else s).decode()
sdk_decode = lambda s: base64.b64decode(s.replace("\n", "").replace("\r", ""), validate=True).decode() if s else s

# --- the SDK's construction: /languages, /config_info (39 keys), /about
code, langs = call("GET", "/languages", headers=SDK)
check("languages parse as [{id, name}]", code == 200 and all(set(l) == {"id", "name"} for l in langs), langs)
ids = {l["id"] for l in langs}
check("languages: 1.13.1 ids for C, C++, Python, JavaScript, Java", {50, 54, 71, 63, 62} <= ids, ids)
keys = ("maintenance_mode enable_wait_result enable_compiler_options allowed_languages_for_compile_options "
        "enable_command_line_arguments enable_submission_delete enable_callbacks callbacks_max_tries callbacks_timeout "
        "enable_additional_files max_queue_size cpu_time_limit max_cpu_time_limit cpu_extra_time max_cpu_extra_time "
        "wall_time_limit max_wall_time_limit memory_limit max_memory_limit stack_limit max_stack_limit "
        "max_processes_and_or_threads max_max_processes_and_or_threads enable_per_process_and_thread_time_limit "
        "allow_enable_per_process_and_thread_time_limit enable_per_process_and_thread_memory_limit "
        "allow_enable_per_process_and_thread_memory_limit max_file_size max_max_file_size number_of_runs "
        "max_number_of_runs redirect_stderr_to_stdout max_extract_size enable_batched_submissions "
        "max_submission_batch_size submission_cache_duration use_docs_as_homepage allow_enable_network enable_network").split()
code, cfg = call("GET", "/config_info", headers=SDK)
check("config_info: exactly the 39 keys of 1.13.1", code == 200 and sorted(cfg) == sorted(keys), set(keys) ^ set(cfg or {}))
check("config_info: types (float limits, int sizes)", isinstance(cfg["cpu_time_limit"], float) and isinstance(cfg["memory_limit"], int))
code, about = call("GET", "/about", headers=SDK)
check("about.version is one the SDK maps", about.get("version") in ("1.13.1", "1.13.1-extra", "1.14.0", "1.14.0-extra"), about)
code, st = call("GET", "/statuses")
check("statuses 1-14", [s["id"] for s in st] == list(range(1, 15)), st)

# --- the SDK's create and poll
src = open(os.path.join(PROG, "main.py")).read()
code, a = call("POST", "/submissions?base64_encoded=true&wait=false",
               {"source_code": b64(src), "language_id": 71, "stdin": b64("2 40\n"), "expected_output": b64("sum 42 args 0")}, SDK)
tok = a.get("token", "") if isinstance(a, dict) else ""
check("SDK create: 201 {token}, a UUID v4", code == 201 and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", tok), a)
for _ in range(600):
    code, s = call("GET", f"/submissions/{tok}?base64_encoded=true&fields=*", headers=SDK)
    if s["status"]["id"] > 2:
        break
    time.sleep(0.1)
check("SDK poll: Accepted", s["status"]["id"] == 3, s)
check("SDK decode of stdout (strict b64)", sdk_decode(s["stdout"]) == "sum 42 args 0\n", s.get("stdout"))
check("created_at parses as %Y-%m-%dT%H:%M:%S.%fZ", bool(time.strptime(s["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ")))
check("time is a string; fields=* has 35 attributes", isinstance(s["time"], str) and len(s) == 35, len(s))

# --- the SDK's batch, in chunks of max_submission_batch_size
sub = lambda i: {"source_code": b64(src), "language_id": 71, "stdin": b64(f"{i} {i}\n"), "expected_output": b64(f"sum {2*i} args 0\n")}
code, toks = call("POST", "/submissions/batch?base64_encoded=true", {"submissions": [sub(i) for i in range(5)]}, SDK)
check("SDK batch create: 201, a token each", code == 201 and len(toks) == 5 and all("token" in t for t in toks), toks)
tl = ",".join(t["token"] for t in toks)
for _ in range(600):
    code, b = call("GET", f"/submissions/batch?base64_encoded=true&fields=*&tokens={tl}", headers=SDK)
    if all(x["status"]["id"] > 2 for x in b["submissions"]):
        break
    time.sleep(0.1)
check("SDK batch poll: all Accepted", [x["status"]["id"] for x in b["submissions"]] == [3] * 5, b)

# --- hand-written pattern 1: wait=true, every enabled language, our own program
files = {50: "main.c", 54: "main.cpp", 71: "main.py", 63: "main.js", 62: "Main.java", 60: "main.go", 73: "main.rs",
         72: "main.rb", 68: "main.php", 46: "main.sh", 64: "main.lua", 85: "main.pl"}
for lid, f in files.items():
    if lid not in ids:
        continue
    code, a = call("POST", "/submissions?base64_encoded=true&wait=true",
                   {"source_code": b64(open(os.path.join(PROG, f)).read()), "language_id": lid, "stdin": b64("2 40"),
                    "command_line_arguments": "x 'y z'", "expected_output": b64("sum 42 args 2\n")},
                   {"X-RapidAPI-Key": "ignored"})
    check(f"wait=true: {f} (id {lid}) Accepted, args as argv", code == 201 and a["status"]["id"] == 3, a)

# --- hand-written pattern 2: batch of one C source, poll with fields
csrc = open(os.path.join(PROG, "main.c")).read()
subs = [{"source_code": csrc, "language_id": 50, "stdin": f"{i} 1", "expected_output": f"sum {i+1} args 0"} for i in range(10)]
subs[3]["expected_output"] = "wrong"
code, toks = call("POST", "/submissions/batch?base64_encoded=false", {"submissions": subs})
tl = ",".join(t["token"] for t in toks)
for _ in range(600):
    code, b = call("GET", f"/submissions/batch?tokens={tl}&base64_encoded=false&fields=token,stdout,stderr,status_id,language_id")
    if all(x["status_id"] > 2 for x in b["submissions"]):
        break
    time.sleep(0.2)
got = [x["status_id"] for x in b["submissions"]]
check("batch then polling: verdicts per test (one WA)", got == [3, 3, 3, 4] + [3] * 6, got)
check("fields=token,stdout,... has exactly those", set(b["submissions"][0]) == {"token", "stdout", "stderr", "status_id", "language_id"}, b["submissions"][0])

# --- statuses that are honest, errors as Judge0 words them
def one(lid, source, **kw):
    return call("POST", "/submissions?base64_encoded=false&wait=true", {"language_id": lid, "source_code": source, **kw})
for name, prog, sid in [("SIGSEGV", "int main(){*(volatile int*)0=1;}", 7), ("SIGFPE", "#include <signal.h>\nint main(){raise(SIGFPE);}", 9),
                        ("SIGABRT", "#include <stdlib.h>\nint main(){abort();}", 10), ("exit 3", "int main(){return 3;}", 11),
                        ("CE", "int main(){return x;}", 6), ("TLE", "int main(){for(;;);}", 5)]:
    code, a = one(50, prog, cpu_time_limit=1)
    check(f"status: {name} is {sid}", a["status"]["id"] == sid, a)
if 62 in ids:
    # Judge0's Java is javac Main.java then java Main: another public class is a Compilation Error there too
    code, a = one(62, "public class Solution { public static void main(String[] a) { System.out.println(1); } }")
    check("Java 62: public class Solution is Compilation Error, as Judge0 (Main.java)", a["status"]["id"] == 6 and "Solution" in (a["compile_output"] or ""), a)
code, a = call("POST", "/submissions?wait=true", {"language_id": 71, "source_code": "import sys; sys.stdout.buffer.write(b'\\xff')"})
check("plain mode, invalid UTF-8: 201 {token, error}", code == 201 and "cannot be converted to UTF-8" in a.get("error", ""), a)
code, a = call("POST", "/submissions", {"source_code": "x"})
check("422 language_id can't be blank", code == 422 and a == {"language_id": ["can't be blank"]}, a)
code, a = call("POST", "/submissions", {"source_code": "x", "language_id": 9999})
check("422 unknown language", code == 422 and a == {"language_id": ["language with id 9999 doesn't exist"]}, a)
code, a = call("POST", "/submissions", {"source_code": "x", "language_id": 71, "wall_time_limit": 100000})
check("422 wall_time_limit over 20", code == 422 and a == {"wall_time_limit": ["must be less than or equal to 20.0"]}, a)
code, a = call("GET", "/submissions/00000000-0000-4000-8000-000000000000")
check("an unknown token: 404", code == 404, a)
code, a = call("GET", f"/submissions/{tok}?fields=stdout,nope")
check("invalid fields: 400", code == 400 and a == {"error": "invalid fields: [nope]"}, a)
code, a = call("POST", "/submissions/batch", {"submissions": [{"language_id": 71, "source_code": "print(1)"}] * 21})
check("hostile: a batch of 21: 400", code == 400 and a["error"] == "number of submissions in a batch should be less than or equal to 20", a)
code, a = call("POST", "/submissions/batch", {"submissions": [{"language_id": 71, "source_code": "print(1)"}] * 20})
check("a batch of 20: 201", code == 201 and len(a) == 20, a)
code, a = one(50, "int main(int c,char**v){return c;}", compiler_options="-O2; touch /tmp/pwned $(id) `id` | cat", command_line_arguments="a; rm -rf / $(id) `x` | y > z")
check("hostile: shell metacharacters in compiler_options reach gcc as argv words (CE, no shell)", a["status"]["id"] == 6, a)
code, a = one(50, "int main(int c,char**v){return c == 11 ? 0 : c;}", command_line_arguments="a; rm -rf / $(id) `x` | y > z")
check("hostile: ... and in command_line_arguments (10 argv words, no shell)", a["status"]["id"] == 3, a)
for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest/meta-data", "http://localhost/x"):
    code, a = call("POST", "/submissions", {"language_id": 71, "source_code": "print(1)", "callback_url": url})
    check(f"hostile: callback_url {url} refused (422, nothing sent)", code == 422 and "callback_url" in a, a)
code, w = call("GET", "/workers")
check("workers", code == 200 and w[0]["queue"] == "judge0", w)
sys.exit(1 if failed else 0)
