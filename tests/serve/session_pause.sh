#!/bin/bash
# ward serve: pausing, resuming and forking a session (ward's extension of
# SPEC §11; issue 32): POST /sessions/{id}/pause freezes every process of
# the session, keeping its memory, and stops its ttl and idle clocks (it
# ends at the pause's own timeout_s if still paused); /resume lets it go
# on where it stood; /fork makes sessions with its files of that moment —
# files only, no process.  Every process is bounded: ttl_s, timeouts.
. "$(dirname "$0")/lib.bash"

M=$((4600000 + $$ % 100000))
new_session() { # new_session JSON — sets SID
	local r
	r=$(http POST /sessions --data-binary "${1:-{\}}")
	SID=$(jget "$(body_of "$r")" 'd["id"]' 2>/dev/null)
	[ "$(code_of "$r")" = 201 ] || fail "a session is made" "$r"
}
sinfo() { http GET "/sessions/$1"; }
cpu_of() { jg "$(body_of "$(sinfo "$1")")" 'd["usage"]["cpu_ms"]'; }
out_of() { jget "$(body_of "$(http POST "/sessions/$1/exec" --data-binary "{\"command\": \"$2\"}")")" 'd["stdout"].strip()'; }

# a host directory for a mount: what is in it is root's, mode 0600
HOSTD=$SERVE_TMP/hostd
mkdir -p "$HOSTD/secretdir" && chmod 755 "$SERVE_TMP" "$HOSTD" "$HOSTD/secretdir"
echo HOSTSECRET >"$HOSTD/secretdir/secret" && chmod 600 "$HOSTD/secretdir/secret"

start_server pause --allow-root "$HOSTD" || exit 0

# ---- pause and resume: nothing runs, the ttl stands still
new_session '{"ttl_s": 4, "idle_s": 4}'
http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"sleep $M\", \"background\": true, \"limits\": {\"timeout_s\": 120}}" >/dev/null
http POST "/sessions/$SID/exec" --data-binary '{"command": "while :; do :; done", "background": true}' >/dev/null
wait_for markers_up "$M"
r=$(http POST "/sessions/$SID/pause")
expect_eq "pause: 204" 204 "$(code_of "$r")"
expect_eq "a paused session says so" paused "$(jg "$(body_of "$(sinfo "$SID")")" 'd["state"]')"
c0=$(cpu_of "$SID")
sleep 5 # past its ttl_s and idle_s of 4 s
c1=$(cpu_of "$SID")
expect_eq "paused past its ttl and idle time: it is still there" 200 "$(code_of "$(sinfo "$SID")")"
expect_eq "paused: the spinning process used no CPU ($c0 -> $c1 ms)" "$c0" "$c1"
check "paused: its processes are kept" test -n "$(marker_pids "$M")"
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "echo x"}')
expect_eq "an exec on a paused session: 409" 409 "$(code_of "$r")"
expect_contains "the 409 says it is paused" "$r" "paused"
r=$(http PUT "/sessions/$SID/files/f" --data-binary 'x')
expect_eq "the files API on a paused session: 409" 409 "$(code_of "$r")"
r=$(http POST "/sessions/$SID/pause")
expect_eq "pausing a paused session: 204" 204 "$(code_of "$r")"
r=$(http POST "/sessions/$SID/resume")
expect_eq "resume: 204" 204 "$(code_of "$r")"
expect_eq "resumed: an exec runs" x "$(out_of "$SID" "echo x")"
sleep 0.5
c2=$(cpu_of "$SID")
if [ "${c2:-0}" -gt "${c1:-0}" ]; then pass "resumed: the spinning process runs again ($c1 -> $c2 ms)"; else
	fail "resumed: the spinning process" "$c1 -> $c2 ms"; fi
expect_eq "resumed: its ttl had stood still, so it is alive" 200 "$(code_of "$(sinfo "$SID")")"
# a pause's own timeout ends it
r=$(http POST "/sessions/$SID/pause" --data-binary '{"timeout_s": 1}')
expect_eq "pause with timeout_s 1: 204" 204 "$(code_of "$r")"
gone() { [ "$(code_of "$(sinfo "$SID")")" = 404 ]; }
wait_for gone
expect_eq "paused past its timeout_s: ended" 404 "$(code_of "$(sinfo "$SID")")"
wait_for markers_gone "$M"
expect_eq "... and its processes with it" "" "$(marker_pids "$M")"
r=$(http POST "/sessions/$SID/pause")
expect_eq "pause of a gone session: 404" 404 "$(code_of "$r")"

# DELETE of a paused session kills it at once
new_session '{"ttl_s": 60}'
http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"sleep $M\", \"background\": true}" >/dev/null
wait_for markers_up "$M"
http POST "/sessions/$SID/pause" >/dev/null
r=$(http DELETE "/sessions/$SID")
expect_eq "DELETE of a paused session: 204" 204 "$(code_of "$r")"
wait_for markers_gone "$M"
expect_eq "DELETE of a paused session: its processes are gone" "" "$(marker_pids "$M")"

# ---- fork: the files of the moment, no process
new_session '{"ttl_s": 60, "files": [{"path": "given.txt", "content": "given"}]}'
SRC=$SID
out_of "$SRC" "head -c 3000000 /dev/urandom > data; mkdir -p d; ln -s /etc/shadow d/l; echo ok" >/dev/null
http POST "/sessions/$SRC/exec" --data-binary "{\"command\": \"sleep $M\", \"background\": true, \"limits\": {\"timeout_s\": 120}}" >/dev/null
wait_for markers_up "$M"
sum=$(out_of "$SRC" "md5sum < data")
r=$(http POST "/sessions/$SRC/fork" --data-binary '{"count": 2}')
expect_eq "fork of 2: 201" 201 "$(code_of "$r")"
ids=$(jg "$(body_of "$r")" '" ".join(s["id"] for s in d)')
n=0
for F in $ids; do
	n=$((n + 1))
	expect_eq "fork $n: the data file is the source's" "$sum" "$(out_of "$F" "md5sum < data")"
	expect_eq "fork $n: the files of the creating request too, and the link as a link" "given /etc/shadow" \
		"$(out_of "$F" "cat given.txt; echo -n ' '; readlink d/l")"
	expect_eq "fork $n: no process was copied" 0 "$(out_of "$F" "pgrep -c -x sleep || true")"
	expect_eq "fork $n: its files are the sandbox user's (it may change them)" ok "$(out_of "$F" "echo more >> data && rm -r d && echo ok")"
done
expect_eq "fork: two sessions" 2 "$n"
expect_eq "the source is not paused after the fork" idle "$(jg "$(body_of "$(sinfo "$SRC")")" 'd["state"]')"
expect_eq "the source's process runs on" 1 "$(marker_pids "$M" | wc -l)"
expect_eq "the source's files are untouched by the forks" "$sum" "$(out_of "$SRC" "md5sum < data")"
r=$(http POST "/sessions/$SRC/fork" --data-binary '{"count": 17}')
expect_eq "a fork of 17: 400" 400 "$(code_of "$r")"
r=$(http POST "/sessions/$SRC/fork" --data-binary '{"count": "2"}')
expect_eq "a fork with a count that is no number: 400" 400 "$(code_of "$r")"
r=$(http POST "/sessions/$SRC/pause" --data-binary '{"timeout_s": -1}')
expect_eq "a pause with a negative timeout_s: 400" 400 "$(code_of "$r")"
for F in $ids $SRC; do http DELETE "/sessions/$F" >/dev/null; done
wait_for markers_gone "$M"
expect_eq "after DELETE: no process left" "" "$(marker_pids "$M")"

# ---- fork: a mount under /work, moved by the tenant, is not crossed (the
# copy read it as host root: the fork could read a file the tenant cannot)
new_session "{\"ttl_s\": 60, \"mounts\": [{\"host_path\": \"$HOSTD/secretdir\", \"sandbox_path\": \"/work/a/b\", \"read_only\": true}]}"
SRC=$SID
expect_eq "the tenant cannot read the mounted root-only file, and moves its parent" "denied moved" \
	"$(out_of "$SRC" "cat /work/a/b/secret 2>/dev/null || echo -n 'denied '; mv /work/a /work/z && echo moved")"
r=$(http POST "/sessions/$SRC/fork" --data-binary '{"count": 1}')
expect_eq "fork of a session with a mount: 201" 201 "$(code_of "$r")"
F=$(jg "$(body_of "$r")" 'd[0]["id"]')
expect_eq "the fork has not the host's file (the mount was not crossed)" absent \
	"$(out_of "$F" "cat /work/z/b/secret 2>/dev/null || echo absent")"
for x in $F $SRC; do http DELETE "/sessions/$x" >/dev/null; done

# ---- fork: what the copy writes is the fork's memory (its cgroup's), not
# ward serve's (a fork past its memory_mb: tests/unit/test_session_life.c)
mem_of() { jg "$(body_of "$(sinfo "$1")")" 'd["usage"]["memory_bytes"]'; }
serve_mem() { cat "$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print "/sys/fs/cgroup/memory" $3 "/memory.usage_in_bytes"}' "/proc/$SRV_PID/cgroup")" 2>/dev/null || echo 0; }
new_session '{"ttl_s": 60, "limits": {"memory_mb": 32}}'
SRC=$SID
expect_eq "a 32 MB session writes 20 MB" ok "$(out_of "$SRC" "head -c 20000000 /dev/urandom > data && echo ok")"
w0=$(serve_mem)
r=$(http POST "/sessions/$SRC/fork" --data-binary '{"count": 1}')
w1=$(serve_mem)
expect_eq "fork of the 32 MB session: 201" 201 "$(code_of "$r")"
F=$(jg "$(body_of "$r")" 'd[0]["id"]')
m=$(mem_of "$F")
echo "# the fork's cgroup: $m bytes; ward serve's cgroup: $w0 -> $w1 bytes"
if [ "${m:-0}" -ge 20000000 ]; then pass "the fork's 20 MB are charged to the fork's cgroup ($m bytes)"; else
	fail "the fork's 20 MB are charged to the fork's cgroup" "$m bytes"; fi
http DELETE "/sessions/$F" >/dev/null
http DELETE "/sessions/$SRC" >/dev/null
stop_checked pause

# ---- pauses never keep a session past --session-max-ttl from its start:
# one paused and resumed again and again (its ttl_s stands still while
# paused), one paused again before each pause's end
start_server pausecap --session-max-ttl 5 || exit 0
M2=$((M + 1))
new_session '{"ttl_s": 4, "idle_s": 4}'
A=$SID
http POST "/sessions/$A/exec" --data-binary "{\"command\": \"sleep $M2\", \"background\": true, \"limits\": {\"timeout_s\": 60}}" >/dev/null
new_session '{"ttl_s": 4, "idle_s": 4}'
B=$SID
t0=$SECONDS
for _ in $(seq 40); do # about 8 s: 10 cycles; bounded
	[ $((SECONDS - t0)) -ge 8 ] && break
	http POST "/sessions/$A/pause" --data-binary '{"timeout_s": 3}' >/dev/null
	http POST "/sessions/$B/pause" --data-binary '{"timeout_s": 2}' >/dev/null
	sleep 0.6
	http POST "/sessions/$A/resume" >/dev/null
	sleep 0.2
done
expect_eq "paused and resumed for 8 s under --session-max-ttl 5: ended" 404 "$(code_of "$(sinfo "$A")")"
expect_eq "paused again and again for 8 s under --session-max-ttl 5: ended" 404 "$(code_of "$(sinfo "$B")")"
wait_for markers_gone "$M2"
expect_eq "... and its processes with it" "" "$(marker_pids "$M2")"
stop_checked pausecap
