#!/bin/bash
# tests/house/sizes.sh — no source file over 1,000 lines and no function
# over 80 (issue 31.5; tools/sizes.py counts them).
. "$(dirname "$0")/../lib.sh"
out=$(python3 "$ROOT/tools/sizes.py" --check 2>&1)
rc=$?
expect_eq "no file over 1,000 lines, no function over 80 (tools/sizes.py)" "0" "$rc"
[ "$rc" = 0 ] || echo "$out" | grep -v ' over$' | sed 's/^/# /'
