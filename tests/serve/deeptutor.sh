#!/bin/bash
# ward serve: DeepTutor's runner-sidecar wire format, unchanged.  First with
# DeepTutor's own client (RunnerSidecarBackend, ../shared/thirdparty/deeptutor,
# unmodified; through tests/serve/deeptutor_client.py) in every shape the app
# sends — its defaults ("workdir": "", "argv": [], "mounts": []), of_argv,
# its code-execution tool's workspace mount and run directory, a timeout, a
# nonzero exit — then by hand: the same defaults, argv without a shell,
# files, stdin, and --allow-root.
. "$(dirname "$0")/lib.bash"

DT=${WARD_DEEPTUTOR:-$ROOT/../shared/thirdparty/deeptutor}
ROOTDIR=$SERVE_TMP/allowed
chmod 0755 "$SERVE_TMP" # the sandbox binds mounts as its own (unprivileged) uid
mkdir -p "$ROOTDIR/job/sub" "$ROOTDIR/data" "$SERVE_TMP/outside"
echo "secret" >"$SERVE_TMP/outside/secret.txt"
echo "dataset" >"$ROOTDIR/data/in.txt"
ln -s "$SERVE_TMP/outside" "$ROOTDIR/escape"       # a symlink inside the root leading out
ln -s "$ROOTDIR/data" "$ROOTDIR/innerlink"          # a symlink that stays inside: refused too
chmod 0777 "$ROOTDIR/job" "$ROOTDIR/job/sub"
# --pool 1: a request with DeepTutor's defaults must take a pooled sandbox,
# as one without those fields does (it binds nothing)
start_server dt --allow-root "$ROOTDIR" --max-concurrent 2 --pool 1 || exit 0
pool_full() { [ "$(metric ward_pool_ready)" = 1 ]; }
hits() { metric 'ward_pool_takes_total{result="hit"}'; }

# dt CASES — run CASES (JSON, see deeptutor_client.py) through the real client
dt() { printf '%s' "$1" | timeout 120 /usr/bin/python3 "$ROOT/tests/serve/deeptutor_client.py" "$DT" "$URL"; }
# r CASE EXPR — EXPR on the ExecResult of CASE (as `d`) in the last dt output
r() { jg "$OUT" "(lambda d: $2)(d[\"$1\"][\"result\"])"; }

deeptutor_client_tests() {
	local ws=$ROOTDIR/ws run=$ROOTDIR/ws/run-1 h0 cases
	OUT=$(dt '[{"name": "health", "health": true},
		{"name": "defaults", "command": "echo hello; echo oops >&2; exit 3"}]')
	expect_eq "deeptutor client: health() says reachable" '[true, "runner reachable"]' "$(jg "$OUT" 'd["health"]["result"]')"
	# the client really sends its defaults: what follows is what it put on the wire
	expect_eq "deeptutor client: its body carries workdir \"\", argv [], mounts [], env {}" \
		'["", [], [], {}]' "$(jg "$OUT" '[d["defaults"]["sent"][k] for k in ("workdir", "argv", "mounts", "env")]')"
	expect_eq "deeptutor client: ExecRequest(command) with its defaults runs (no error)" "" "$(r defaults 'd["error"]')"
	expect_eq "deeptutor client: stdout, stderr, a nonzero exit_code, timed_out" \
		'["hello\n", "oops\n", 3, false]' "$(r defaults '[d["stdout"], d["stderr"], d["exit_code"], d["timed_out"]]')"

	# the defaults bind nothing: such a request takes a pooled sandbox
	check "deeptutor client: the pool is full before the next request" wait_for pool_full
	h0=$(hits)
	OUT=$(dt '[{"name": "pooled", "command": "echo pooled"}]')
	expect_eq "deeptutor client: a request with the defaults takes a pooled sandbox, as without them" \
		"$((h0 + 1)) pooled" "$(hits) $(r pooled 'd["stdout"].strip()')"

	# DeepTutor's code-execution tool: the program is written into a fresh run
	# directory of the user's workspace, the workspace is mounted read-write at
	# its own path, the run directory is the workdir; the files the program
	# leaves there are the user's artifacts
	mkdir -p "$run"
	chmod 0777 "$ws" "$run"
	echo "input data" >"$ws/in.txt"
	cat >"$run/main.py" <<-EOF
		import os
		print(open("$ws/in.txt").read().strip())
		open("result.txt", "w").write("42\\n")
		open("$run/plot.txt", "w").write("by absolute path\\n")
	EOF
	cases=$(/usr/bin/python3 -c 'import json, sys
ws, run = sys.argv[1], sys.argv[2]
print(json.dumps([
 {"name": "code", "command": "python3 main.py", "workdir": run,
  "mounts": [{"host_path": ws, "sandbox_path": ws, "read_only": False}], "limits": {"timeout_s": 30}},
 {"name": "argv", "argv": ["printf", "%s|", "$HOME;id", "a b", "*"]},
 {"name": "argv-noshell", "argv": ["no-such-program-xyz"]},
 {"name": "argv-exit", "argv": ["sh", "-c", "exit 7"]},
 {"name": "env", "command": "echo \"$GREETING\"", "env": {"GREETING": "hi there"}},
 {"name": "timeout", "command": "sleep 30", "limits": {"timeout_s": 1}},
 {"name": "output", "command": "head -c 100000 /dev/zero | tr \"\\0\" a"},
 {"name": "outside", "command": "true", "workdir": "/etc"},
]))' "$ws" "$run")
	OUT=$(dt "$cases")
	expect_eq "deeptutor client: code tool: runs, reads the workspace at its own path" \
		'["input data\n", 0, ""]' "$(r code '[d["stdout"], d["exit_code"], d["error"]]')"
	expect_eq "deeptutor client: code tool: a file written in the workdir is on the host" "42" "$(cat "$run/result.txt" 2>&1)"
	expect_eq "deeptutor client: code tool: a file written by its absolute path is on the host" \
		"by absolute path" "$(cat "$run/plot.txt" 2>&1)"
	expect_eq "deeptutor client: of_argv sends both command and argv" \
		"[\"printf '%s|' '\$HOME;id' 'a b' '*'\", [\"printf\", \"%s|\", \"\$HOME;id\", \"a b\", \"*\"]]" \
		"$(jg "$OUT" '[d["argv"]["sent"]["command"], d["argv"]["sent"]["argv"]]')"
	expect_eq "deeptutor client: of_argv runs with its arguments intact" '$HOME;id|a b|*|' "$(r argv 'd["stdout"]')"
	# a shell would say "sh: 1: no-such-program-xyz: not found": ward ran argv
	expect_contains "deeptutor client: of_argv runs argv, not the shell string" \
		"$(r argv-noshell 'd["stderr"]') $(r argv-noshell 'd["exit_code"]')" "ward: cannot run 'no-such-program-xyz'"
	expect_eq "deeptutor client: of_argv's exit_code" 7 "$(r argv-exit 'd["exit_code"]')"
	expect_eq "deeptutor client: env reaches the command" "hi there" "$(r env 'd["stdout"].strip()')"
	expect_eq "deeptutor client: a timeout: timed_out, exit_code 124, no error" \
		'[true, 124, ""]' "$(r timeout '[d["timed_out"], d["exit_code"], d["error"]]')"
	expect_eq "deeptutor client: its default max_output_chars caps stdout (head and tail kept)" \
		"true" "$(r output '0 < len(d["stdout"]) <= 10200 and d["stdout"].startswith("aaaa") and d["stdout"].endswith("aaaa")')"
	# a refusal is an HTTP 400: the client says so in error, never as a run
	expect_contains "deeptutor client: a workdir outside --allow-root comes back as error" \
		"$(r outside 'd["error"]')" "runner unavailable: HTTPStatusError"
}

if [ ! -f "$DT/deeptutor/services/sandbox/backends.py" ]; then
	# As tests/run-vm does for the VM script: in CI the client is always
	# beside the clone, so missing there is a failure; elsewhere say so on
	# stderr, and run the checks that need no client.
	if [ -n "${CI:-}" ]; then
		fail "deeptutor client" "DeepTutor's client not found (looked for $DT; set WARD_DEEPTUTOR)"
	else
		echo "tests/serve/deeptutor.sh: SKIPPED the checks through DeepTutor's own client: $DT not found" \
			"(set WARD_DEEPTUTOR to its directory to run them)" >&2
	fi
elif ! /usr/bin/python3 -c 'import httpx' 2>/dev/null; then
	fail "deeptutor client" "python3-httpx is missing (DeepTutor's client needs it): run scripts/install-deps"
else
	deeptutor_client_tests
fi

# --- by hand ---------------------------------------------------------------
# RunnerSidecarBackend's body for ExecRequest(command=...), field for field
req=$(python3 -c '
import json,sys
print(json.dumps({"command": "echo hello; echo oops >&2; exit 2",
  "argv": [], "workdir": "", "env": {"GREETING": "hi"},
  "mounts": [], "limits": {"timeout_s": 10, "memory_mb": 256, "cpu_seconds": 10, "max_output_chars": 10000}}))')
r=$(post_exec "$req")
b=$(body_of "$r")
expect_eq "DeepTutor request answers 200" 200 "$(code_of "$r")"
for k in stdout stderr exit_code timed_out error; do
	check "answer has $k" python3 -c 'import json,sys; assert sys.argv[2] in json.loads(sys.argv[1])' "$b" "$k"
done
expect_eq "stdout" "hello" "$(jget "$b" 'd["stdout"].strip()')"
expect_eq "stderr" "oops" "$(jget "$b" 'd["stderr"].strip()')"
expect_eq "exit_code" 2 "$(jget "$b" 'd["exit_code"]')"
expect_eq "timed_out" false "$(jget "$b" 'd["timed_out"]')"
expect_eq "error empty for the child's failure" "" "$(jget "$b" 'd["error"]')"
expect_eq "isolation reported" system "$(jget "$b" 'd["isolation"]')"

r=$(post_exec '{"command":"echo nulls","argv":null,"workdir":null,"env":null,"mounts":null,"limits":null,"files":null,"stdin":null,"network":null}')
expect_eq "every field null: runs as if absent" '200 nulls' "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(post_exec '{"argv":[],"workdir":"","mounts":[]}')
expect_contains "argv [] and no command: 400 naming the problem" "$(code_of "$r") $(body_of "$r")" \
	'400 {"error":"argv: is empty and there is no command'
r=$(post_exec '{"command":"","argv":[],"workdir":""}')
expect_contains "command \"\" and argv []: 400, nothing to run" "$(code_of "$r") $(body_of "$r")" '400 {"error":"argv: is empty'
r=$(post_exec '{"command":"echo from-command","argv":[]}')
expect_eq "argv [] next to command: the command runs (DeepTutor sends both)" 'from-command' "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(post_exec '{"command":"echo '"'"'$HOME;id'"'"'","argv":["echo","$HOME;id"]}')
expect_eq "DeepTutor's command+argv pair runs argv" '$HOME;id' "$(jget "$(body_of "$r")" 'd["stdout"].rstrip("\n")')"
r=$(post_exec '{"argv":["echo","$HOME;id"]}')
expect_eq "argv runs without a shell" '$HOME;id' "$(jget "$(body_of "$r")" 'd["stdout"].rstrip("\n")')"
r=$(post_exec '{"argv":["sh","-c","echo $0 $1","a b","c;d"]}')
expect_eq "argv keeps arguments intact" 'a b c;d' "$(jget "$(body_of "$r")" 'd["stdout"].rstrip("\n")')"
r=$(post_exec '{"argv":["echo","from-argv"],"command":"echo from-command"}')
expect_eq "argv wins over command" 'from-argv' "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(post_exec '{"command":"echo \"$GREETING\"","env":{"GREETING":"hi there"}}')
expect_eq "env reaches the command" 'hi there' "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"

r=$(post_exec '{"command":"sleep 5","limits":{"timeout_s":0.5}}')
b=$(body_of "$r")
expect_eq "timeout: timed_out" "true 124 timeout" "$(jget "$b" 'd["timed_out"]') $(jget "$b" 'd["exit_code"]') $(jget "$b" 'd["status"]')"

r=$(post_exec '{"command":"head -c 100000 /dev/zero | tr \"\\0\" a","limits":{"max_output_chars":1000}}')
b=$(body_of "$r")
expect_eq "max_output_chars caps stdout" "true 100000" "$(jget "$b" 'd["stdout_truncated"]') $(jget "$b" 'd["stdout_bytes"]')"
check "capped stdout is short" test "$(jget "$b" 'len(d["stdout"])')" -le 1100

# files and stdin
req=$(python3 -c '
import json,base64
print(json.dumps({"command": "cat main.py; od -An -tx1 blob.bin; ls -l run.sh | cut -c1-10; cat",
  "files": [{"path": "main.py", "content": "print(1)\n"},
            {"path": "blob.bin", "content": base64.b64encode(b"\x00\x01\xfe").decode(), "encoding": "base64"},
            {"path": "run.sh", "content": "#!/bin/sh\n", "mode": 0o755}],
  "stdin": "line-from-stdin\n"}))')
r=$(post_exec "$req")
b=$(body_of "$r")
expect_contains "files: utf-8 content written" "$b" 'print(1)'
expect_contains "files: base64 content written" "$b" '00 01 fe'
expect_contains "files: mode applied" "$b" '-rwxr-xr-x'
expect_contains "stdin fed to the command" "$b" 'line-from-stdin'

# workdir and mounts under --allow-root
r=$(post_exec "{\"command\":\"pwd; echo made > out.txt\",\"workdir\":\"$ROOTDIR/job\"}")
expect_eq "workdir under --allow-root runs" 200 "$(code_of "$r")"
expect_eq "workdir is the cwd's contents" "made" "$(cat "$ROOTDIR/job/out.txt" 2>/dev/null)"
r=$(post_exec "{\"command\":\"cat /data/in.txt\",\"mounts\":[{\"host_path\":\"$ROOTDIR/data\",\"sandbox_path\":\"/data\",\"read_only\":true}]}")
expect_eq "mount under --allow-root runs" "dataset" "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"

for bad in "/etc" "$SERVE_TMP/outside" "$ROOTDIR/../outside" "$ROOTDIR/escape" "$ROOTDIR/escape/" "$ROOTDIR/innerlink" "$ROOTDIR/nope" "relative/path" "${ROOTDIR}x"; do
	r=$(post_exec "{\"command\":\"true\",\"workdir\":\"$bad\"}")
	expect_contains "workdir $bad refused" "$(code_of "$r") $(body_of "$r")" '400 {"error":"workdir'
	r=$(post_exec "{\"command\":\"true\",\"mounts\":[{\"host_path\":\"$bad\",\"sandbox_path\":\"/data\"}]}")
	expect_contains "mount $bad refused" "$(code_of "$r") $(body_of "$r")" '400 {"error":"mounts[0].host_path'
done
r=$(post_exec "{\"command\":\"true\",\"mounts\":[{\"host_path\":\"$ROOTDIR/data\",\"sandbox_path\":\"/data\"},{\"host_path\":\"$ROOTDIR/escape/secret.txt\",\"sandbox_path\":\"/s\"}]}")
expect_contains "a symlink in the second mount is refused" "$(code_of "$r") $(body_of "$r")" '400 {"error":"mounts[1].host_path'
r=$(post_exec "{\"command\":\"true\",\"rootfs\":\"/\"}")
expect_contains "rootfs outside --allow-root refused" "$(code_of "$r") $(body_of "$r")" '400 {"error":"rootfs'
check "nothing outside was touched" test "$(cat "$SERVE_TMP/outside/secret.txt")" = secret
stop_server "$SRV_PID"
