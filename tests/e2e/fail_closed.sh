#!/bin/bash
# tests/e2e/fail_closed.sh — SPEC §1: when the system level cannot be had,
# ward refuses (125, a message naming what is missing, nothing run) and
# never downgrades by itself; `ward doctor` then exits 1 (SPEC §7).
# User namespaces are made unavailable without touching the host: inside a
# user namespace of our own, user.max_user_namespaces is set to 1 and ward
# runs in a child namespace as uid 1000, so it cannot create another one.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
T=$(mktemp -d /tmp/ward-test.XXXXXX); trap 'rm -rf "$T"' EXIT
trap 'exit 143' TERM INT  # so that the EXIT trap cleans up on a timeout too
chmod 0755 "$T"
if ! unshare -U -r true 2>/dev/null || ! unshare --help 2>&1 | grep -q -- --map-user; then exit 0; fi
W=$T/w; mkdir "$W"; chmod 1777 "$W"

# nested LIMIT CMD — run CMD (a sh -c string) as uid 1000 two user
# namespaces down; LIMIT (or "none") is the outer max_user_namespaces.
nested() {
	local lim=$1; shift
	timeout -k 2 30 unshare -U -r sh -c '
		[ "$0" = none ] || echo "$0" >/proc/sys/user/max_user_namespaces || exit 99
		exec unshare -U --map-user=1000 --map-group=1000 -- sh -c "$1"' "$lim" "$1" </dev/null
}

# Control: the same setup without the limit runs (so a refusal below is the
# missing namespaces, not the setup).
OUT=$(nested none "cd /; '$WARD' run --timeout 10 --workdir '$W' --shell 'touch ran; echo RAN' 2>&1"); rc=$?
expect_eq "control: nested ward runs without the limit" "0 RAN" "$rc $OUT"
check "control: it ran" test -e "$W/ran"
rm -f "$W/ran"

OUT=$(nested 1 "cd /; '$WARD' run --timeout 10 --workdir '$W' --shell 'touch ran; echo RAN' 2>&1"); rc=$?
expect_eq "no user namespaces: exit 125" 125 "$rc"
check "no user namespaces: nothing ran" test ! -e "$W/ran"
expect_not_contains "no user namespaces: no output of the command" "$OUT" RAN
if printf '%s' "$OUT" | grep -qi 'namespace'; then pass "no user namespaces: the message names namespaces"
else fail "no user namespaces: the message names namespaces" "[$OUT]"; fi
expect_eq "no user namespaces: one line" 1 "$(printf '%s\n' "$OUT" | grep -c .)"

# --json: the result object says error, with the reason; exit 125.
OUT=$(nested 1 "cd /; '$WARD' run --timeout 10 --json --workdir '$W' --shell 'touch ran' 2>/dev/null"); rc=$?
expect_eq "no user namespaces --json: exit 125" 125 "$rc"
st=$(printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["exit_code"], "namespace" in d["error"].lower())' 2>&1)
expect_eq "no user namespaces --json: status error, 125, error names namespaces" "error 125 True" "$st"
check "no user namespaces --json: nothing ran" test ! -e "$W/ran"

# Never a silent downgrade, even where the application level is allowed.
OUT=$(nested 1 "cd /; WARD_ALLOW_APPLICATION=1 '$WARD' run --timeout 10 --json --workdir '$W' --shell 'touch ran' 2>/dev/null"); rc=$?
expect_eq "no silent downgrade (application allowed): exit 125" 125 "$rc"
check "no silent downgrade: nothing ran" test ! -e "$W/ran"
expect_not_contains "no silent downgrade: no application result" "$OUT" '"isolation":"application"'

# doctor says so and exits 1.
OUT=$(nested 1 "'$WARD' doctor 2>&1"); rc=$?
expect_eq "doctor without namespaces: exit 1" 1 "$rc"
OUT=$(nested 1 "'$WARD' doctor --json 2>/dev/null"); rc=$?
expect_eq "doctor --json without namespaces: exit 1" 1 "$rc"
expect_eq "doctor --json: system false" false "$(printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("system")))' 2>&1)"

# Root inside a user namespace where only uid 0 is mapped (a rootless
# container): ward either runs (as that user) or refuses with a message that
# names what is missing — never an obscure errno.
OUT=$(cd / && timeout -k 2 30 unshare -U -r "$WARD" run --timeout 10 --workdir "$W" --shell 'echo RAN' 2>&1 </dev/null); rc=$?
if [ "$rc" = 0 ] && [ "$OUT" = RAN ]; then pass "root in a userns with one uid: runs"
elif [ "$rc" = 125 ] && printf '%s' "$OUT" | grep -qi -e 'uid' -e 'namespace' -e 'map'; then pass "root in a userns with one uid: refused, naming why"
else fail "root in a userns with one uid: runs, or refuses naming why" "rc=$rc [$OUT]"; fi
