#!/bin/bash
# tests/house/structure.sh — the house's drawing (tools/structure.py, from
# the includes of src/): no arrow the design forbids (core/ → system/, a
# level → the dispatcher, sandbox/ → anything of ward's above it).
. "$(dirname "$0")/../lib.sh"
out=$(python3 "$ROOT/tools/structure.py" --check --no-circles 2>&1)
rc=$?
expect_eq "no forbidden arrow and no circle between src/'s folders" "0" "$rc"
expect_not_contains "core/ includes nothing of system/" "$out" "core -> system"
[ "$rc" = 0 ] || echo "$out" | grep -E 'forbidden|circle' | sed 's/^/# /'
# the dialects are registered by the front end (src/front/dialects.c),
# not included by the server (issue 31.3): no circle server <-> dialect
drawing=$(python3 "$ROOT/tools/structure.py" 2>&1)
expect_not_contains "server/ includes nothing of dialect/ (dialects registered, not included)" "$drawing" "server -> dialect"
