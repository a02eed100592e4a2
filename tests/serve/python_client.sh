#!/bin/bash
# The Python client's own tests (clients/python, python3 -m unittest) against
# a real ward serve, one PASS/FAIL line per test case.
. "$(dirname "$0")/../lib.sh"
cd "$ROOT/clients/python" || exit 1
if [ ! -x "$WARD" ]; then
	fail "python client" "no ward binary at $WARD"
	exit 0
fi
out=$(WARD="$WARD" timeout 300 python3 -m unittest -v 2>&1)
rc=$?
printf '%s\n' "$out" | sed -n 's/^\(test_[a-z_0-9]*\) (.*) \.\.\. \(.*\)$/\1 \2/p' | while read -r name verdict; do
	case "$verdict" in
	ok | skipped*) pass "python client: $name${verdict#ok}" ;;
	*) fail "python client: $name" "$verdict" ;;
	esac
done
if ! grep -q '^test_.* \.\.\. ok$' <<<"$out"; then
	fail "python client: no test ran" "$(printf '%s' "$out" | tail -c 600)"
fi
if [ "$rc" -ne 0 ]; then
	fail "python client: unittest exit status" "$rc: $(printf '%s' "$out" | tail -c 1500)"
fi
