#!/bin/bash
# The README's files-out and streaming examples, as written there: plot.py
# and the Python snippets are cut out of README.md and run against a real
# ward serve (their URL pointed at it), so that the documentation's example
# is one that works.  The progress lines must arrive before the result, and
# the PNG must come back whole (its signature and its IEND chunk).
. "$(dirname "$0")/lib.bash"
README=$ROOT/README.md

heredoc() { # heredoc FIRST-LINE-PATTERN — the lines of the README heredoc whose opener matches
	awk -v pat="$1" '
		found && /^    EOF$/ { exit }
		found { sub(/^    /, ""); print }
		index($0, pat) && /<<.EOF.$/ { found = 1 }' "$README"
}
cd "$SERVE_TMP" || exit 1
heredoc "cat > plot.py" >plot.py
expect_contains "README: plot.py is there" "$(cat plot.py)" "chunk(b\"IEND\""
start_server r || exit 0
# the streaming + collect snippet: the one that imports Runner
snippet=$(awk '
	/^    python3 - <<.EOF.$/ { inb = 1; buf = ""; next }
	inb && /^    EOF$/ { if (buf ~ /exec_stream/) { printf "%s", buf; exit } inb = 0; next }
	inb { line = $0; sub(/^    /, "", line); buf = buf line "\n" }' "$README")
expect_contains "README: the streaming snippet is there" "$snippet" "exec_stream"
snippet=${snippet//http:\/\/127.0.0.1:8900/$URL}
# record when each event came: the snippet's prints, timestamped
OUT=$(cd "$SERVE_TMP" && WARD_SRC=$ROOT timeout 60 python3 -u -c "$snippet" 2>&1)
expect_contains "the snippet printed live lines" "$OUT" "live: row 1/64"
expect_contains "... all of them" "$OUT" "row 64/64"
python3 - "$SERVE_TMP/plot.png" <<'PY' && pass "the PNG came back whole" || fail "the PNG came back whole" "$(ls -l "$SERVE_TMP")"
import sys
d = open(sys.argv[1], "rb").read()
sys.exit(0 if d.startswith(b"\x89PNG\r\n\x1a\n") and d[-8:-4] == b"IEND" else 1)
PY
# the lines came before the run ended: a plot.py that sleeps between rows
sed -i 's/print(f"row {y + 1}\/{h}", flush=True)/print(f"row {y + 1}\/{h}", flush=True); __import__("time").sleep(0.02)/' plot.py
TIMES=$(cd "$SERVE_TMP" && WARD_SRC=$ROOT timeout 60 python3 -u -c "$snippet" 2>&1 | python3 -c '
import sys, time
t0 = time.monotonic(); first = None
for line in sys.stdin:
    if first is None and line.startswith("live:"):
        first = time.monotonic() - t0
print("%.3f %.3f" % (first if first is not None else -1, time.monotonic() - t0))')
read -r first end <<<"$TIMES"
python3 -c "import sys; f, e = map(float, sys.argv[1:]); sys.exit(0 if 0 <= f < e - 0.5 else 1)" "$first" "$end" &&
	pass "the first line arrives while the program still runs ($first s of $end s)" ||
	fail "the first line arrives while the program still runs" "first at $first s, end at $end s"
