#!/bin/bash
# tests/escape/pid1_cmdline.sh — PID 1 is a copy of ward, and its command
# line is ward's: a server's options and host paths (--token-file, --log).
# /proc/1/cmdline is world-readable, so PID 1 must have overwritten it
# before the command's first instruction, under `ward run`, `ward serve`
# (through a spawner helper or the server's own clone) and --pool alike.
#
# The race is made certain instead of likely: strace delays the return of
# every clone(2) by 0.3 s, PID 1's clone of the command included, so that
# the command runs (and reads /proc/1/cmdline) while PID 1 has not yet
# returned from that clone — a PID 1 that cleans up only afterwards is seen.
# Repeated untraced runs check the same without the tracer.  /proc/1/cmdline
# must read exactly "ward-init\0" (its length tells nothing either), comm is
# ward-init and /proc/1/environ stays closed.
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.bash"

if ! command -v strace >/dev/null; then
	fail "pid1 cmdline: strace" "install strace (scripts/install-deps)"
	exit 0
fi
MARK=cmdline-probe-$$
printf 'ward-init\0' >"$SERVE_TMP/want"
TRACE=(strace -f -qq -o /dev/null -e trace=clone -e inject=clone:delay_exit=300000)

# run_cmdline NAME [PREFIX...] — `ward run` with a distinctive option; its
# command is `cat /proc/1/cmdline` itself, the bytes compared exactly.
run_cmdline() {
	local name=$1; shift
	timeout -k 2 60 "$@" "$WARD" run --timeout 20 --env "X=$MARK" -- cat /proc/1/cmdline \
		>"$SERVE_TMP/got" 2>"$SERVE_TMP/err" </dev/null
	if cmp -s "$SERVE_TMP/want" "$SERVE_TMP/got"; then return 0; fi
	fail "$name" "/proc/1/cmdline read [$(tr '\0' ' ' <"$SERVE_TMP/got" | head -c 300)] $(head -c 200 "$SERVE_TMP/err")"
	return 1
}

ok=1
for i in 1 2 3; do run_cmdline "run (traced) $i: /proc/1/cmdline is ward-init from the first instruction" "${TRACE[@]}" || ok=0; done
[ $ok = 1 ] && pass "run (traced, 3 runs): /proc/1/cmdline is ward-init from the command's first instruction"
ok=1
for i in $(seq 30); do run_cmdline "run $i: /proc/1/cmdline is ward-init" || { ok=0; break; }; done
[ $ok = 1 ] && pass "run (30 runs): /proc/1/cmdline is exactly ward-init"

OUT=$(timeout -k 2 30 "$WARD" run --timeout 20 --shell 'cat /proc/1/comm; cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON-READ' </dev/null 2>&1)
expect_eq "run: /proc/1/comm is ward-init and /proc/1/environ is closed" ward-init "$OUT"

# --- servers: distinctive options (a token file, a log) on their command line
echo "tok-$MARK" >"$SERVE_TMP/tokens-$MARK"
AUTH=(-H "Authorization: Bearer tok-$MARK")

# start_traced NAME ARGS... — like start_server, under strace; the server is
# strace's child, and both are killed by pid at the end.
start_traced() {
	local name=$1; shift
	SRV_LOG=$SERVE_TMP/$name.log
	: >"$SRV_LOG"
	"${TRACE[@]}" "$WARD" serve --listen 127.0.0.1:0 --log "$SRV_LOG" "$@" </dev/null >"$SERVE_TMP/$name.out" 2>&1 &
	local tracer=$! srv="" _
	# the server is strace's child named ward or ward-net (strace may fork a
	# short-lived probe child first: taking that one left the server running)
	for _ in $(seq 50); do
		srv=$(ps -o pid=,comm= --ppid "$tracer" | awk '$2 ~ /^ward/ { print $1; exit }')
		[ -n "$srv" ] && break
		sleep 0.1
	done
	SRV_PID=${srv:-$tracer}
	_SERVE_PIDS="$_SERVE_PIDS $SRV_PID $tracer"
	local addr
	addr=$(listening_addr "$SRV_LOG" "$tracer" 300)
	if [ -z "$addr" ]; then
		fail "start server $name" "ward serve did not start: $(head -c 600 "$SERVE_TMP/$name.out" "$SRV_LOG")"
		return 1
	fi
	URL=http://$addr
}

# serve_cmdline NAME N — N requests, each `cat /proc/1/cmdline`.
serve_cmdline() {
	local name=$1 n=$2 i r
	for i in $(seq "$n"); do
		r=$(post_exec '{"argv": ["cat", "/proc/1/cmdline"], "limits": {"timeout_s": 20}}' "${AUTH[@]}")
		case "$r" in
		*'"stdout":"ward-init\u0000"'*) ;;
		*) fail "$name" "request $i: $(printf %s "$r" | head -c 400)"; return ;;
		esac
		case "$r" in *"$MARK"*) fail "$name" "request $i shows the server's options"; return ;; esac
	done
	pass "$name ($n requests): /proc/1/cmdline is exactly ward-init"
}

for mode in "--spawners 1" "--spawners 0" "--pool 2 --spawners 0" "--pool 2 --spawners 1"; do
	# shellcheck disable=SC2086
	if start_traced "traced${mode// /_}" --token-file "$SERVE_TMP/tokens-$MARK" $mode; then
		serve_cmdline "serve $mode (traced)" 3
		stop_server "$SRV_PID"
	fi
	# shellcheck disable=SC2086
	if start_server "plain${mode// /_}" --token-file "$SERVE_TMP/tokens-$MARK" $mode; then
		serve_cmdline "serve $mode" 20
		stop_server "$SRV_PID"
	fi
done
