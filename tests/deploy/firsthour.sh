#!/bin/bash
# tests/deploy/firsthour.sh — the first hour of a new user (issue 34 item
# 5): make demo installs only what building needs; the demo ends saying how
# to put ward on PATH; `make install PREFIX=DIR` after a plain `make` gives
# a ward that finds its helpers and language table there; the man page,
# made from the --help texts, installed; `ward run --image` on an empty
# store says how to import one; `ward serve`'s log is JSON lines only, what
# libmicrohttpd says included; no stray files tracked.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
T=$(mktemp -d /tmp/ward-firsthour.XXXXXX)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; rm -rf "$T"' EXIT

# ---- make demo's packages: building's, not the test toolchain ----
build=" $("$ROOT/scripts/install-deps" build --list) "
all=" $("$ROOT/scripts/install-deps" --list) "
heavy=""
for p in qemu-system-x86 openjdk-17-jdk-headless golang-go rustc nginx-light haproxy docker.io nodejs; do
	case "$build" in *" $p "*) heavy="$heavy $p" ;; esac
	case "$all" in *" $p "*) ;; *) fail "install-deps: make check's set has $p" ;; esac
done
expect_eq "install-deps build (make demo): none of the test toolchain" "" "$heavy"
for p in libseccomp-dev libjansson-dev libmicrohttpd-dev libarchive-dev xxd python3; do
	case "$build" in *" $p "*) ;; *) fail "install-deps build: has $p" ;; esac
done
expect_contains "make demo installs with install-deps build" "$(sed -n '/^demo:/,/^$/p' "$ROOT/Makefile")" "install-deps build"

# ---- the demo's last words: how to run ward from here or put it on PATH ----
out=$(cd "$ROOT" && timeout 120 scripts/demo 2>&1)
expect_contains "demo: ends with how to put ward on PATH" "$(tail -5 <<<"$out")" "export PATH=\"$ROOT/build:\$PATH\""

# ---- make install PREFIX=DIR after a plain make ----
P=$T/prefix
if out=$(cd "$ROOT" && make -s install PREFIX="$P" 2>&1); then pass "make install PREFIX=DIR after make"
else fail "make install PREFIX=DIR after make" "$(tail -c 400 <<<"$out")"; fi
out=$("$P/bin/ward" image ls --image-store "$T/store" 2>&1)
expect_not_contains "installed ward finds ward-net in PREFIX/libexec/ward" "$out" "cannot run ward-net"
"$P/bin/ward" serve --listen 127.0.0.1:0 --log "$T/inst.log" 2>"$T/inst.err" &
SRV=$!
addr=$(listening_addr "$T/inst.log" "$SRV")
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=
check "installed ward serve starts" test -n "$addr"
expect_not_contains "installed ward-net finds PREFIX/share/ward/languages.json" "$(cat "$T/inst.log")" "no language table found"
check "make install puts the man page in PREFIX/share/man/man1" test -s "$P/share/man/man1/ward.1"

# ---- the man page says what --help says ----
page=$(MANWIDTH=200 man -l "$ROOT/build/ward.1" 2>/dev/null)
missing=""
for o in $( { "$ROOT/build/ward" run --help; "$ROOT/build/ward" serve --help; } 2>&1 | grep -oE '^ {1,4}--[a-z0-9-]+' | sort -u); do
	grep -qe "$o" <<<"$page" || missing="$missing $o"
done
expect_eq "man page: every option of ward run --help and ward serve --help" "" "$missing"

# ---- --image on an empty store ----
out=$("$ROOT/build/ward" run --image py --image-store "$T/no-store" -- true 2>&1)
expect_contains "ward run --image on an empty store says how to import one" "$out" "ward image import NAME"

# ---- ward serve's log: JSON lines only (libmicrohttpd's own messages too) ----
"$ROOT/build/ward" serve --listen 127.0.0.1:0 --piston 127.0.0.1:0 --judge0 127.0.0.1:0 --e2b 127.0.0.1:0 \
	--max-concurrent 1 2>"$T/serve.err" &
SRV=$!
addr=$(listening_addr "$T/serve.err" "$SRV")
[ -n "$addr" ] && curl -s -m 10 -o /dev/null -d '{"argv": ["true"]}' "http://$addr/exec"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=
bad=$(python3 -c '
import json, sys
for line in open(sys.argv[1], errors="replace"):
    try: json.loads(line)
    except ValueError: print(line.rstrip()[:160])' "$T/serve.err")
check "serve's log: it ran (four listeners, one request)" test -n "$addr"
expect_eq "serve's log on stderr: every line is JSON" "" "$bad"

# ---- nothing stray tracked ----
stray=$(cd "$ROOT" && git ls-files | grep -E '(^|/)(st2\.[0-9]+|strace[^/]*\.(out|log)|core(\.[0-9]+)?|[^/]+\.orig|[^/]+\.rej)$')
expect_eq "no stray files tracked (strace dumps, cores, patch leftovers)" "" "$stray"
