#!/bin/bash
# ward serve: a fatal system call in a session (SPEC §11 with §3's seccomp
# rules) ends the exec it was made in, as it ends a one-shot run: status
# signal 31, exit 159, stderr names the call, nothing after it ran — where
# the session used to close the filter's listener and the call failed with
# ENOSYS, the program going on.  The session lives on: the next exec runs,
# a daemon an earlier exec left keeps running, and a fatal call in a
# background process ends that process as signal 31 too.
. "$(dirname "$0")/lib.bash"
start_server s || exit 0
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
ex() { curl -s --max-time 30 -XPOST "$URL/sessions/$sid/exec" -d "$1"; }

# a daemon left by an earlier exec: it must outlive the fatal exec
R=$(ex '{"command": "setsid sh -c \"sleep 60\" </dev/null >/dev/null 2>&1 & echo started"}')
expect_eq "a daemon is started" started "$(jg "$R" 'd["stdout"].strip()')"

R=$(ex '{"command": "echo before; mount -t tmpfs ward-esc /tmp; echo after rc=$?"}')
expect_eq "mount(8) in a session: the exec ends with SIGSYS" "signal 31 159" \
	"$(jg "$R" 'd["status"]+" "+str(d["signal"])+" "+str(d["exit_code"])')"
expect_contains "stderr names the call" "$(jg "$R" 'd["stderr"]')" 'ward: seccomp: blocked mount(2)'
expect_eq "nothing ran after it" before "$(jg "$R" 'd["stdout"].strip()')"

R=$(ex '{"command": "echo next; pgrep -c sleep"}')
expect_eq "the next exec runs" next "$(jg "$R" 'd["stdout"].splitlines()[0]')"
expect_eq "the earlier exec's daemon lives on" 1 "$(jg "$R" 'd["stdout"].splitlines()[1]')"

# the same from a python program (a raw syscall, its return never seen)
R=$(ex '{"argv": ["python3", "-c", "import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.mount(None, None, None, 0, None); print(\"returned\", r, ctypes.get_errno())"]}')
expect_eq "mount(2) from python: signal 31" "signal 31" "$(jg "$R" 'd["status"]+" "+str(d["signal"])')"
expect_not_contains "mount(2): the call never returned (no ENOSYS)" "$(jg "$R" 'd["stdout"]')" returned

# a background process
P=$(ex '{"background": true, "command": "sleep 0.2; mount -t tmpfs x /tmp; echo after"}')
pid=$(jg "$P" 'd["pid"]')
PROC=$(wait_proc_exited "$sid" "$pid")
expect_eq "a background process: ends as signal 31" "159" \
	"$(jg "$PROC" 'd["exit_code"]')"
O=$(curl -s "$URL/sessions/$sid/processes/$pid/output")
expect_contains "a background process: its stderr names the call" "$O" 'blocked mount(2)'
expect_not_contains "a background process: nothing after it" "$O" '"after'

R=$(ex '{"command": "echo still here"}')
expect_eq "the session is still usable" "still here" "$(jg "$R" 'd["stdout"].strip()')"
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null
