#!/bin/bash
# ward serve: DeepTutor's runner-sidecar wire format, unchanged — request
# shape {command, argv, workdir, env, mounts, limits{...}} and the answer's
# keys — plus argv without a shell, files, stdin, and --allow-root.
. "$(dirname "$0")/lib.bash"

ROOTDIR=$SERVE_TMP/allowed
chmod 0755 "$SERVE_TMP" # the sandbox binds mounts as its own (unprivileged) uid
mkdir -p "$ROOTDIR/job/sub" "$ROOTDIR/data" "$SERVE_TMP/outside"
echo "secret" >"$SERVE_TMP/outside/secret.txt"
echo "dataset" >"$ROOTDIR/data/in.txt"
ln -s "$SERVE_TMP/outside" "$ROOTDIR/escape"       # a symlink inside the root leading out
ln -s "$ROOTDIR/data" "$ROOTDIR/innerlink"          # a symlink that stays inside: refused too
chmod 0777 "$ROOTDIR/job" "$ROOTDIR/job/sub"
start_server dt --allow-root "$ROOTDIR" --max-concurrent 2 || exit 0

# DeepTutor's RunnerSidecarBackend request, field for field
req=$(python3 -c '
import json,sys
print(json.dumps({"command": "echo hello; echo oops >&2; exit 2",
  "argv": None, "workdir": None, "env": {"GREETING": "hi"},
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
