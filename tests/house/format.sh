#!/bin/bash
# tests/house/format.sh — every source is as .clang-format says (issue
# 31.6): `make format-check` (clang-format --dry-run -Werror) changes
# nothing; `make format` fixes what it names.
. "$(dirname "$0")/../lib.sh"
command -v clang-format >/dev/null || { fail "clang-format is installed" "apt-get install clang-format"; exit 0; }
out=$(make -s -C "$ROOT" format-check 2>&1)
rc=$?
expect_eq "make format-check: the tree is formatted (make format)" "0" "$rc"
[ "$rc" = 0 ] || echo "$out" | grep -m 10 'error:' | sed 's/^/# /'
