#!/bin/bash
# tests/escape/tiocsti_cve_2017_5226.sh — terminal injection.  TIOCSTI pushes
# bytes into a terminal's input queue, where the shell that owns the
# terminal reads and runs them once the sandbox exits (CVE-2016-7545
# SELinux sandbox, CVE-2017-5226 bubblewrap); CVE-2019-10063 (flatpak)
# slipped past a filter that compared all 64 bits of the request, which the
# kernel truncates to 32; TIOCLINUX pastes the console selection the same
# way.  The filter compares the low 32 bits and kills; TIOCSETD (line
# disciplines: module autoload, CVE-2017-2636) gets EPERM; a pty of the
# sandbox's own keeps working.  For the host terminal, ward runs with a host
# pty as its controlling terminal and stdin (`--stdin -` relays it through a
# pipe, so the command's fd 0 is not the terminal: the filter must hold
# anyway), and afterwards nothing may be waiting in that terminal's input
# queue.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

# On a pty of the sandbox's own.
for m in sti-own sti-own-high linux-own; do
	wrun -- /helpers/esc_tty "$m"
	expect_killed "tty: $m killed by seccomp"
done
wrun -- /helpers/esc_tty setd-own
expect_blocked "tty: TIOCSETD(N_HDLC) EPERM" "TIOCSETD(N_HDLC)" EPERM
wrun -- /helpers/esc_tty pty-works
expect_eq "tty: a pty inside still works (termios, winsize, I/O)" "ok OK pty-works" "$ST ${OUT%$'\n'}"

# On the host's terminal, handed to ward as its controlling tty and stdin.
hostpty() { # MODE -> prints "STATUS SIGNAL INJECTED-BYTES"
	/usr/bin/python3 - "$WARD" "$HELPERS" "$HOSTNS" "$1" <<'PY'
import fcntl, json, os, pty, subprocess, sys, termios, tty
ward, helpers, hostns, mode = sys.argv[1:]
m, s = pty.openpty()
tty.setraw(s)
def drain():
    os.set_blocking(s, False)
    try:
        return os.read(s, 4096)
    except BlockingIOError:
        return b""
    finally:
        os.set_blocking(s, True)
if mode == "calibrate":
    # The detector sees an injection (root may TIOCSTI any tty).
    for ch in b"x\n":
        fcntl.ioctl(s, termios.TIOCSTI, bytes([ch]))
    print("calibrate - %d" % len(drain()))
    sys.exit(0)
def ctty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
p = subprocess.run([ward, "run", "--json", "--stdin", "-", "--timeout", "20",
                    "--ro-bind", helpers + ":/helpers", "--env", "WARD_ESC_HOST=" + hostns,
                    "--", "/helpers/esc_tty", mode],
                   stdin=s, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                   start_new_session=True, preexec_fn=ctty, timeout=60)
try:
    d = json.loads(p.stdout)
except Exception:
    d = {"status": "not-json", "signal": None}
print("%s %s %d" % (d.get("status"), d.get("signal"), len(drain())))
PY
}
expect_eq "tty: injection detector works (calibration)" "calibrate - 2" "$(hostpty calibrate 2>&1)"
for m in sti-fd0 sti-fd0-high linux-fd0; do
	expect_eq "tty: $m on the host terminal: killed, nothing injected" "signal 31 0" "$(hostpty "$m" 2>&1)"
done
