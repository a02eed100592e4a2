#!/bin/bash
# The prepared root (src/sandbox/mounts.c: mounts_prepare_root): a spawner
# helper applies the plain shape's fixed mounts (/usr, /etc's files, /dev's
# nodes, the symlinks) once, read-only, in a mount namespace of its own, and
# each PID 1 it clones takes a copy instead of building them.  A sandbox
# built so looks exactly like one `ward run` builds, cannot write to that
# shared tree, cannot leave anything in it for the next run, and the host's
# mount table never shows it.
. "$(dirname "$0")/lib.bash"

start_server prep --spawners 1 --max-concurrent 2 || exit 0
sh_run() { body_of "$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["sh","-c",sys.argv[1]]}))' "$1")")"; }
out() { jg "$1" 'd["stdout"]'; }

# --- used, and the same sandbox as ward run's -------------------------------------
r=$(sh_run 'stat -c %u /')
expect_eq "prepared: a served sandbox's root comes prepared (owned by the host, unmapped inside)" "65534" "$(out "$r" | tr -d '\n')"
LIST='for d in / /etc /dev; do ls -A "$d" | while read -r f; do p=$d/$f; [ -L "$p" ] && t=$(readlink "$p") || t=-; echo "$p $(stat -c %a:%F "$p") $t"; done; done'
mine=$(out "$(sh_run "$LIST")")
theirs=$("$WARD" run -- sh -c "$LIST")
expect_eq "prepared: /, /etc and /dev hold the same names, modes, types and link targets as ward run's" "$theirs" "$mine"
MNT='awk '\''{print $5, $6}'\'' /proc/self/mountinfo | sort'
expect_eq "prepared: the same mount points, with the same flags, as ward run's" \
	"$("$WARD" run -- sh -c "$MNT")" "$(out "$(sh_run "$MNT")")"
r=$(sh_run 'cat /etc/passwd | grep -c sandbox; getent passwd 1000 | cut -d: -f1; echo hi > /tmp/t && cat /tmp/t; cd /work && echo w > w && cat w')
expect_eq "prepared: /etc's generated files, /tmp and /work work" "1 sandbox hi w" "$(out "$r" | xargs)"

# --- read-only, and nothing left in it ---------------------------------------------
r=$(sh_run 'for p in /x /etc/x /etc/passwd /dev/x /usr/x; do (echo x > "$p") 2>/dev/null && echo "wrote $p"; done
rm -f /etc/passwd 2>/dev/null && echo removed; chmod 777 /etc 2>/dev/null && echo chmod; mkdir /etc/d 2>/dev/null && echo mkdir
ln -s /tmp /etc/l 2>/dev/null && echo link; touch -d 2001-01-01 /etc/hosts 2>/dev/null && echo touched; echo done')
expect_eq "prepared: no write, remove, chmod, mkdir, link or touch reaches the shared tree" "done" "$(out "$r" | tr -d '\n')"
r=$(sh_run 'grep " / " /proc/self/mountinfo | cut -d" " -f6')
expect_contains "prepared: the root is mounted read-only" "$(out "$r")" "ro"
sleep 1.2 # the helper's plan, and with it the prepared root, is made again after a second
r=$(sh_run 'ls /etc; stat -c %Y /etc/hosts')
expect_contains "prepared: the next run's /etc is as it was (the generated files made again)" "$(out "$r")" "passwd"
expect_not_contains "prepared: ... with nothing a run tried to leave" "$(out "$r")" "/etc/x"

# --- where it lives --------------------------------------------------------------------
helper=$(ps -o pid=,comm= --ppid "$SRV_PID" | awk '$2=="ward-spawner"{print $1}' | head -1)
expect_eq "prepared: the host's mount table never shows it" "0" "$(grep -c ' /run/ward/root' /proc/self/mountinfo)"
for _ in 1 2 3; do sh_run true >/dev/null; sleep 0.4; done
n=$(awk '$5=="/run/ward/root"' /proc/"$helper"/mountinfo | wc -l)
expect_eq "prepared: the helper's namespace holds it once, however often it was made again" "1" "$n"
expect_contains "prepared: ... read-only there" "$(awk '$5=="/run/ward/root"{print $6}' /proc/"$helper"/mountinfo)" "ro"

# --- sessions come prepared too; what a helper does not clone builds its own ----------------
r=$(http POST /sessions --data-binary '{}')
sid=$(jg "$(body_of "$r")" 'd["id"]')
r=$(http POST "/sessions/$sid/exec" --data-binary '{"argv":["sh","-c","stat -c %u /; touch /etc/x 2>/dev/null || echo read-only"]}')
expect_eq "prepared: a session's root comes prepared too, read-only (a helper clones its PID 1)" "65534 read-only" \
	"$(jg "$(body_of "$r")" 'd["stdout"]' | xargs)"
http DELETE "/sessions/$sid" >/dev/null
W=$(mktemp -d /tmp/ward-prep.XXXXXX)
chmod 755 "$W"
start_server prep-root --spawners 1 --allow-root "$W" || exit 0
r=$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["stat","-c","%u","/"],"workdir":sys.argv[1]}))' "$W")")
expect_eq "prepared: a request with a workdir (no helper's shape) builds its whole root, owned by the sandbox user" \
	"200 1000" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["stdout"].strip()')"
rm -rf "$W"
