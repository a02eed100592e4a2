#!/bin/bash
# The Piston dialect (SPEC §16): ward serve --piston, driven by the real npm
# piston-client 1.0.2 (tests/dialect/package-lock.json, `npm ci` into
# build/dialect-node once per lock) and by curl for what that client cannot
# send: Piston's 400 messages, the /api/v2/piston/ paths, encodings, the
# version fallback, hostile names and limits.
. "$(dirname "$0")/dialect.bash"

start_dialects piston --piston 127.0.0.1:0 || exit 0
P=$(dialect_url piston)

if node_modules_ready; then
	# an ES module resolves its imports beside itself: run a copy there
	cp "$DDIR/piston_client.mjs" "$NODE_DIR/"
	timeout 300 node "$NODE_DIR/piston_client.mjs" "$P" "$DDIR/programs"
else
	skip "piston-client: npm ci failed (no registry?)"
fi

pexec() { # BODY: the answer in $ANS, the code in $CODE
	local out
	out=$(curl -s -m 120 -w '\n%{http_code}' -H 'Content-Type: text/plain' --data-binary "$1" "$P${2:-/api/v2/execute}")
	CODE=${out##*$'\n'}; ANS=${out%$'\n'*}
}
pexec '{"version":"*","files":[]}'
expect_eq "400: language" '400 {"message":"language is required as a string"}' "$CODE $ANS"
pexec '{"language":"python","version":3,"files":[]}'
expect_eq "400: version" '400 {"message":"version is required as a string"}' "$CODE $ANS"
pexec '{"language":"python"}'
expect_eq "400: files" '400 {"message":"files is required as an array"}' "$CODE $ANS"
pexec '{"language":"python","files":[{"content":1}]}'
expect_eq "400: files[0].content" '400 {"message":"files[0].content is required as a string"}' "$CODE $ANS"
pexec '{"language":"python","files":[{"content":"eA==","encoding":"base64"}]}'
expect_eq "400: no utf8 file" '400 {"message":"files must include at least one utf8 encoded file"}' "$CODE $ANS"
pexec '{"language":"python","files":[{"content":"x"}],"run_timeout":"3"}'
expect_eq "400: a limit not a number" '400 {"message":"If specified, run_timeout must be a number"}' "$CODE $ANS"
pexec '{"language":"python","files":[{"content":"x"}],"run_timeout":1000000000000}'
expect_contains "hostile: run_timeout 10^12 is refused by the configured limit" "$CODE $ANS" '400 {"message":"run_timeout cannot exceed the configured limit of'
pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"../../x","content":"y"}]}'
expect_contains "hostile: a file named ../../x is refused" "$CODE $ANS" "400"
expect_contains "hostile: ... naming it" "$ANS" "files[1].name '../../x' escapes"
# names Piston's path.join takes (a/./b, a//b are a/b); the rest a 400 in its shape, never a 500 with no body
pexec '{"language":"python","files":[{"content":"print(open(\"a/b\").read(), open(\"c/d\").read())"},{"name":"a/./b","content":"x"},{"name":"c//d/","content":"y"}]}'
expect_eq "names a/./b and c//d/ are a/b and c/d (as Piston's path.join)" "200 x y" "$CODE $(jg "$ANS" 'd["run"]["stdout"].strip()')"
for name in . ./ a/..; do
	pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"'"$name"'","content":"y"}]}'
	expect_contains "hostile: a file named '$name': 400 with Piston's {message}, not a 500 with no body" "$CODE $ANS" '400 {"message":"files[1].name'
done
pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"main.py","content":"y"}]}'
expect_contains "hostile: a second file named as the main file (main.py): 400 saying so" "$CODE $ANS" "400 {\"message\":\"files[1].name 'main.py' names the same file as files[0] (the main file)"
pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"x","content":"y"},{"name":"./x","content":"z"}]}'
expect_contains "hostile: x and ./x: one file named twice, 400" "$CODE $ANS" "400 {\"message\":\"files[2].name 'x' names the same file as files[1]"
pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"x","content":"y"},{"name":"x/y","content":"z"}]}'
expect_contains "hostile: x and x/y (a file and a directory of one name): 400" "$CODE $ANS" "400 {\"message\":\"files[2].name 'x/y' and files[1]"
pexec '{"language":"python","files":[{"content":"print(1)"},{"name":"'"$(head -c 300 /dev/zero | tr '\0' a)"'","content":"y"}]}'
expect_contains "hostile: a name part of 300 bytes: 400" "$CODE $ANS" '400 {"message":"files[1].name'
pexec '{"language":"python","version":"latest","files":[{"content":"x"}]}'
expect_eq "latest matches nothing (as Piston's semver)" '400 {"message":"python-latest runtime is unknown"}' "$CODE $ANS"
pexec '{"language":"python","version":"3.10.0","files":[{"content":"x"}]}'
expect_eq "an exact pin of another minor, no fallback: unknown" '400 {"message":"python-3.10.0 runtime is unknown"}' "$CODE $ANS"
pexec '{"language":"python","version":">=3.9 <4","files":[{"content":"import sys\nprint(input(), sys.argv[1:])"},{"name":"data/x.txt","content":"y"}],"stdin":"a","args":"one two"}' /api/v2/piston/execute
expect_eq "ranges, /api/v2/piston/, args as a string is one argument, stdin's newline" "200 a ['one two']" "$CODE $(jg "$ANS" 'd["run"]["stdout"].strip()')"
pexec '{"language":"python","files":[{"content":"7072696e7428312b3129","encoding":"hex"},{"content":"x"}]}'
expect_eq "hex encoding" "2" "$(jg "$ANS" 'd["run"]["stdout"].strip()')"
pexec '{"language":"python","files":[{"content":"print(\"x\" * 100000000, end=\"\")"}],"run_memory_limit":-1}'
expect_eq "an endless print: OL" "OL SIGKILL stdout length exceeded" "$(jg "$ANS" 'd["run"]["status"]+" "+d["run"]["signal"]+" "+d["run"]["message"]')"
expect_eq "GET /: Piston's banner" '{"message":"Piston v3.1.1 (ward)"}' "$(curl -s "$P/")"
expect_eq "packages: 501" 501 "$(curl -s -o /dev/null -w '%{http_code}' "$P/api/v2/packages")"
expect_eq "anything else: Piston's 404" '{"message":"Not Found"} 404' "$(curl -s -w ' %{http_code}' "$P/nope")"
expect_eq "the native API is not on the dialect's port" 404 "$(curl -s -o /dev/null -w '%{http_code}' "$P/exec")"
expect_eq "the native listener still answers" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")"

stop_dialects piston
# --piston-version-fallback major: an exact pin reaches the installed 3.x, and says which
start_dialects fallback --piston 127.0.0.1:0 --piston-version-fallback major || exit 0
P=$(dialect_url piston)
pexec '{"language":"python","version":"3.10.0","files":[{"content":"print(1)"}]}'
expect_eq "fallback major: 3.10.0 reaches python 3.x, the answer names the real version" "200 1 3" "$CODE $(jg "$ANS" 'd["run"]["stdout"].strip()+" "+d["version"].split(".")[0]')"
pexec '{"language":"python","version":"2.7.0","files":[{"content":"print(1)"}]}'
expect_eq "fallback major: not another major" 400 "$CODE"
stop_dialects fallback
