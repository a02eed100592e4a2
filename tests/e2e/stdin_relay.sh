#!/bin/bash
# tests/e2e/stdin_relay.sh — `--stdin -` and `--stdin FILE` are relayed
# through a pipe: the command never holds ward's own fd.  Given the caller's
# terminal, a sandbox could reconfigure it (`stty -echo raw` left the
# caller's shell without echo) or write escape sequences to it past the
# output caps; given a host file, it learns the file's host path.  The relay
# keeps every byte, passes end-of-file on, and never holds up the timeout.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

# On a terminal: ward's stdin is a fresh pty's slave.  Inside, fd 0 must be
# a pipe, stty must fail, and writing to fd 0 must not reach the terminal;
# afterwards the terminal still echoes and nothing was written to it.
tty_run() {
	/usr/bin/python3 - "$WARD" <<'PY'
import os, pty, subprocess, sys, termios
ward = sys.argv[1]
m, s = pty.openpty()
before = termios.tcgetattr(s)
os.write(m, b"typed-line\n\x04")  # a line, then end-of-file (^D), typed ahead
p = subprocess.run([ward, "run", "--timeout", "20", "--stdin", "-", "--shell",
                    "readlink /proc/self/fd/0; read -r l; echo got=$l; cat >/dev/null; echo eof-seen;"
                    " stty -echo raw 2>/dev/null && echo STTY-WORKED;"
                    " printf 'ESC-MARK\\033[2J' >&0 2>/dev/null; echo done"],
                   stdin=s, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
after = termios.tcgetattr(s)
os.set_blocking(m, False)
try:
    seen = os.read(m, 4096)
except BlockingIOError:
    seen = b""
out = p.stdout.decode(errors="replace").split()
print("fd0=%s" % ("pipe" if out and out[0].startswith("pipe:[") else (out[0] if out else "none")))
print("stty=%s" % ("worked" if "STTY-WORKED" in out else "failed"))
print("echo=%s" % ("kept" if after[3] & termios.ECHO and after[3] == before[3] else "changed"))
print("written=%s" % ("yes" if b"ESC-MARK" in seen else "no"))
print("typed=%s" % ("yes" if "got=typed-line" in out and "eof-seen" in out else "no"))
print("done=%s" % ("yes" if "done" in out else "no"))
PY
}
R=$(tty_run 2>&1)
expect_contains "tty: inside, fd 0 is a pipe, not the caller's terminal" "$R" "fd0=pipe"
expect_contains "tty: stty inside fails (not a tty)" "$R" "stty=failed"
expect_contains "tty: the caller's terminal keeps its settings (echo on)" "$R" "echo=kept"
expect_contains "tty: nothing the sandbox writes to fd 0 reaches the terminal" "$R" "written=no"
expect_contains "tty: a line typed at the terminal, then ^D, reach the command" "$R" "typed=yes"
expect_contains "tty: the command ran to its end" "$R" "done=yes"

# Bytes arrive intact: 5 MB from a pipe and from a file redirect.
head -c 5000000 /dev/urandom >"$T/in"
want=$(md5sum <"$T/in" | cut -d' ' -f1)
got=$(timeout -k 2 30 "$WARD" run --timeout 20 --stdin - -- md5sum <"$T/in" 2>&1 | cut -d' ' -f1)
expect_eq "5 MB through --stdin - (a file as ward's stdin) arrives intact" "$want" "$got"
got=$(cat "$T/in" | timeout -k 2 30 "$WARD" run --timeout 20 --stdin - -- md5sum 2>&1 | cut -d' ' -f1)
expect_eq "5 MB through --stdin - (a pipe) arrives intact" "$want" "$got"
got=$(timeout -k 2 30 "$WARD" run --timeout 20 --stdin "$T/in" -- md5sum </dev/null 2>&1 | cut -d' ' -f1)
expect_eq "5 MB through --stdin FILE arrives intact" "$want" "$got"
# A reader inside that is slow: the relay waits for it.
got=$(cat "$T/in" | timeout -k 2 30 "$WARD" run --timeout 20 --stdin - --shell 'sleep 1; md5sum' 2>&1 | cut -d' ' -f1)
expect_eq "5 MB to a command that reads late arrives intact" "$want" "$got"

# --stdin FILE is relayed too: the command sees a pipe, not the host path.
OUT=$(timeout -k 2 30 "$WARD" run --timeout 20 --stdin "$T/in" -- readlink /proc/self/fd/0 </dev/null 2>&1)
expect_contains "--stdin FILE: fd 0 is a pipe" "$OUT" "pipe:["
expect_not_contains "--stdin FILE: the host path does not show" "$OUT" "$T"

# End-of-file is passed on, in pieces as they come.
OUT=$( (echo a; sleep 1; echo b) | timeout -k 2 30 "$WARD" run --timeout 20 --stdin - -- cat 2>&1)
expect_eq "input in pieces, then end-of-file: cat sees both and ends" "a b" "$(echo $OUT)"
# An input that never ends does not hold up the timeout (ward's own return
# is timed: the pipeline would wait for its writer).
t0=$(date +%s%N)
{ sleep 30 & echo $! >"$T/sleeper"; wait; } | {
	timeout -k 2 30 "$WARD" run --timeout 1 --stdin - -- cat >/dev/null 2>&1
	echo "$? $(( ($(date +%s%N) - t0) / 1000000 ))" >"$T/idle"; kill "$(cat "$T/sleeper")"; }
read -r rc ms <"$T/idle"
expect_eq "an endless idle stdin: the timeout still lands (124)" 124 "$rc"
if [ "$ms" -lt 5000 ]; then pass "an endless idle stdin: ward returns at its timeout ($ms ms)"
else fail "an endless idle stdin: ward returns at its timeout" "$ms ms"; fi

# In the background of its terminal (job control: another process group in
# the foreground), reading the terminal (input typed for the foreground)
# would stop ward with SIGTTIN, and a stopped ward enforces no timeout while
# the sandbox runs on.  Instead the relay sees end of input: `cat` ends at
# once, and the input is left to the foreground.
bg_run() {
	/usr/bin/python3 - "$WARD" <<'PY'
import fcntl, os, pty, signal, subprocess, sys, termios, time
ward = sys.argv[1]
m, s = pty.openpty()
os.write(m, b"typed-for-the-foreground\n")
def ctty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
script = ('set -m; "$0" run --timeout 20 --stdin - -- sh -c "cat; echo cat-ended" & echo pid=$!; wait $!; echo rc=$?')
t0 = time.time()
p = subprocess.Popen(["bash", "-c", script, ward], stdin=s, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     start_new_session=True, preexec_fn=ctty)
try:
    out, _ = p.communicate(timeout=15)
except subprocess.TimeoutExpired:
    out = b"timed out"
    p.kill()
took = time.time() - t0
text = out.decode(errors="replace")
for line in text.split():
    if line.startswith("pid="):
        try:
            os.kill(int(line[4:]), signal.SIGKILL)  # ours, if still there
        except (ProcessLookupError, ValueError):
            pass
print("ended=%s rc=%s fast=%s" % ("yes" if "cat-ended" in text else "no",
      ([l[3:] for l in text.split() if l.startswith("rc=")] or ["none"])[0], "yes" if took < 10 else "no"))
PY
}
expect_eq "in the background of its terminal: end of input, not a stopped ward" "ended=yes rc=0 fast=yes" "$(bg_run 2>&1)"
