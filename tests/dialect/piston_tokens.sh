#!/bin/bash
# Header-less Piston clients on a runner with tokens (issue 30, item 10):
# piston-client cannot send a header, so against --token-file it got 401
# and threw TypeError.  --piston-client NAME makes every request on the
# --piston listener that carries no token client NAME, with NAME's quotas
# (here --client-rate 2: its third run in a minute is a 429), driven by
# the real package; the native listener still wants its token.
. "$(dirname "$0")/dialect.bash"

printf 'grader tok-grader-0123456789\n' >"$SERVE_TMP/tokens"
start_dialects ptokens --piston 127.0.0.1:0 --piston-client grader --token-file "$SERVE_TMP/tokens" --client-rate 2 || exit 0
P=$(dialect_url piston)
if node_modules_ready; then
	cp "$DDIR/piston_tokens.mjs" "$NODE_DIR/"
	timeout 300 node "$NODE_DIR/piston_tokens.mjs" "$P" grader
else
	skip "piston-client: npm ci failed (no registry?)"
fi
expect_contains "the log counts the Piston listener's runs as client grader" "$(grep '"path":"/api/v2/execute"' "$SRV_LOG" | head -1)" '"client":"grader"'
expect_eq "the native listener still wants a token (401)" 401 "$(curl -s -o /dev/null -w '%{http_code}' "$URL/languages")"
expect_contains "a client name with a space is refused at start, saying what a name is" \
	"$(timeout 10 "$WARD" serve --listen 127.0.0.1:0 --piston 127.0.0.1:0 --piston-client 'a b' 2>&1 </dev/null)" \
	"--piston-client 'a b': give 1 to 63 of"
stop_dialects ptokens
