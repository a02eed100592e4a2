# tests/serve/lib.bash — sourced by the tests/serve/*.sh scripts (not a test
# itself: tests/run only runs *.sh).  Starts a real `ward serve` on a port
# the kernel picks, and always kills it by pid when the script ends.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# (not lib.sh's mktmp: called as $(mktmp) it registers its cleanup in a
# subshell, and it would replace this file's EXIT trap)
SERVE_TMP=$(mktemp -d /tmp/ward-serve.XXXXXX)
_SERVE_PIDS=""
_serve_cleanup() {
	# shellcheck disable=SC2086
	stop_pids $_SERVE_PIDS
	rm -rf "$SERVE_TMP"
}
trap _serve_cleanup EXIT

# start_server NAME [ARGS...] — starts ward serve; sets SRV_PID, URL, PORT,
# SRV_LOG.  Returns 1 (and prints a FAIL) when it does not come up.  With
# SERVE_AS=UID set, ward serve runs as that uid (and gid), with no groups:
# a service account's server.
start_server() {
	local name=$1; shift
	SRV_LOG=$SERVE_TMP/$name.log
	: >"$SRV_LOG"
	local as=()
	if [ -n "${SERVE_AS:-}" ]; then
		as=(setpriv --reuid "$SERVE_AS" --regid "$SERVE_AS" --clear-groups)
		chown "$SERVE_AS" "$SRV_LOG"
	fi
	"${as[@]}" "$WARD" serve --listen 127.0.0.1:0 --log "$SRV_LOG" "$@" </dev/null >"$SERVE_TMP/$name.out" 2>&1 &
	SRV_PID=$!
	_SERVE_PIDS="$_SERVE_PIDS $SRV_PID"
	local addr
	addr=$(listening_addr "$SRV_LOG" "$SRV_PID" 200)
	if [ -z "$addr" ]; then
		fail "start server $name" "ward serve did not start: $(head -c 600 "$SERVE_TMP/$name.out" "$SRV_LOG")"
		return 1
	fi
	URL=http://$addr
	PORT=${addr##*:}
}

# wait_for CMD... — up to 10 s for CMD to succeed
wait_for() {
	local _
	for _ in $(seq 100); do "$@" && return 0; sleep 0.1; done
	return 1
}

# For wait_for, which runs its command again each try (a "$(...)" in its
# arguments would be read once, before the first):
# markers_gone M / markers_up M — no process / some process runs `sleep M`
markers_gone() { [ -z "$(marker_pids "$1")" ]; }
markers_up() { [ -n "$(marker_pids "$1")" ]; }
# metric_is NAME OP VALUE [CURL ARGS...] — GET /metrics's NAME compares so
metric_is() {
	local m=$1 op=$2 v=$3
	shift 3
	[ "$(metric "$m" "$@")" "$op" "$v" ] 2>/dev/null
}

# wait_proc_exited SID PID — up to 10 s for background process PID of session
# SID (on $URL) to have exited; prints its entry of GET .../processes (JSON)
wait_proc_exited() {
	local e _
	for _ in $(seq 100); do
		e=$(jg "$(curl -s "$URL/sessions/$1/processes")" '[p for p in d if p["pid"]=='"$2"'][0]')
		[ "$(jg "$e" 'd["state"]')" = exited ] && break
		sleep 0.1
	done
	printf '%s' "$e"
}

# fd_count PID — how many fds PID holds, less the network namespaces and the
# cgroups' files it keeps for reuse (src/system/netns.c, src/sandbox/cgroup.c:
# how many are idle depends on how runs overlapped, with the health probe's
# for one, so a leak check leaves them out), and the socket of each process
# parked in a kept cgroup v1 (src/sandbox/cgroup_park.c: one each)
fd_count() {
	local f n=0
	for f in /proc/"$1"/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		'' | net:\[* | /sys/fs/cgroup/*) ;;
		*) n=$((n + 1)) ;;
		esac
	done
	echo "$((n - $(ps -o comm= --ppid "$1" | grep -cx ward-parked)))"
}

# kids PID — how many children PID has, less its spawner helpers and the
# processes parked in its kept cgroups, which stay
kids() { ps -o comm= --ppid "$1" | grep -vcxE 'ward-(spawner|parked)'; }

# metric NAME [CURL ARGS...] — the value of one line of GET /metrics
metric() {
	local m=$1
	shift
	curl -s --max-time 10 "$@" "$URL/metrics" | awk -v m="$m" '$1==m{print $2}'
}

# server_fds_held PID... — each fd of these processes that is one of the
# server's sockets (listener, connections) or a file of the test's (log,
# stdio), as "PID:TARGET"; empty when none.  (Pipes and socketpairs made
# for a sandbox are new objects.)
server_fds_held() {
	local srv_socks k f t leak=""
	srv_socks=" $(for f in /proc/"$SRV_PID"/fd/*; do readlink "$f"; done 2>/dev/null | grep '^socket:' | tr '\n' ' ')"
	for k in "$@"; do
		for f in /proc/"$k"/fd/*; do
			t=$(readlink "$f" 2>/dev/null)
			case "$t" in *"$SERVE_TMP"*) leak="$leak $k:$t" ;; esac
			case "$srv_socks" in *" $t "*) leak="$leak $k:$t" ;; esac
		done
	done
	printf '%s' "$leak"
}

# stop_server PID — SIGTERM, wait up to 30 s; prints nothing, returns the exit status.
stop_server() {
	local p=$1 rc
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null; rc=$?
	return $rc
}

# stop_checked NAME [LABEL] — SIGTERM to the server started last (by
# start_server NAME): it must exit 0 and, under ASan, report nothing (the
# server's output holds LeakSanitizer's report at exit, if any).
stop_checked() {
	local rc label=${2:-$1}
	stop_server "$SRV_PID"
	rc=$?
	expect_eq "$label: the server stops cleanly on SIGTERM" 0 "$rc"
	expect_not_contains "$label: no sanitizer report" "$(cat "$SERVE_TMP/$1.out")" "Sanitizer"
}

# http METHOD PATH [CURL ARGS...] — prints "CODE BODY" (body on one line).
http() {
	local m=$1 p=$2; shift 2
	curl -s --max-time 60 -X "$m" -w '\n%{http_code}' "$@" "$URL$p" | {
		local body
		body=$(cat)
		printf '%s %s' "${body##*$'\n'}" "${body%$'\n'*}"
	}
}

# post_exec JSON [CURL ARGS...] — POST /exec, prints "CODE BODY".
post_exec() {
	local j=$1; shift
	http POST /exec -H 'Content-Type: application/json' --data-binary "$j" "$@"
}

# code_of "CODE BODY" / body_of "CODE BODY"
code_of() { printf '%s' "${1%% *}"; }
body_of() { printf '%s' "${1#* }"; }
