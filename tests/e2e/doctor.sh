#!/bin/bash
# tests/e2e/doctor.sh — `ward doctor` (SPEC §7).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

OUT=$(timeout 20 "$WARD" doctor 2>"$T/err" </dev/null); rc=$?
expect_eq "doctor: exit 0 (system available here)" 0 "$rc"
for w in namespace seccomp landlock cgroup egress; do
	if printf '%s' "$OUT" | grep -qi "$w"; then pass "doctor: names $w"; else fail "doctor: names $w" "$(printf %s "$OUT" | head -c 300)"; fi
done
if [ "$(id -u)" = 0 ]; then expect_contains "doctor: says it runs as root" "$(printf %s "$OUT" | tr A-Z a-z)" root; fi

OUT=$(timeout 20 "$WARD" doctor --json 2>"$T/err" </dev/null); rc=$?
expect_eq "doctor --json: exit 0" 0 "$rc"
expect_eq "doctor --json: parses as an object" dict "$(jg "$OUT" 'type(d).__name__')"
flat=$(jg "$OUT" 'json.dumps(d).lower()')
for w in namespace seccomp landlock cgroup; do expect_contains "doctor --json: names $w" "$flat" "$w"; done
# It reports this host's cgroup version and Landlock ABI truthfully.
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then v=2; else v=1; fi
expect_eq "doctor --json: cgroup version $v appears" true "$(jg "$OUT" "any(('v$v' in k or ': $v' in k or 'version\": $v' in k or 'version\": \"$v' in k or '\"cgroup-v$v\"' in k) for k in [json.dumps(d).lower()])")"
abi=$(/usr/bin/python3 -c 'import ctypes
libc=ctypes.CDLL(None, use_errno=True)
print(libc.syscall(444, None, 0, 1))' 2>/dev/null)
if [ -n "$abi" ] && [ "$abi" -gt 0 ] 2>/dev/null; then
	expect_contains "doctor --json: Landlock ABI $abi" "$flat" "$abi"
fi
# oom-shield: whether root here may set a session's PID 1 to oom_score_adj
# -1000 (CAP_SYS_RESOURCE), read from this shell's own capabilities
eff=$(awk '/^CapEff:/{print $2}' /proc/self/status)
if [ "$(id -u)" = 0 ] && [ $(( 0x$eff >> 24 & 1 )) = 1 ]; then want=ok; else want=no; fi
line=$("$WARD" doctor 2>/dev/null | grep -E '^\s+oom-shield ')
expect_eq "doctor: oom-shield says whether a session's PID 1 can be shielded here" "$want" "$(echo $line | awk '{print $2}')"
