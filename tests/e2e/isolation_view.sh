#!/bin/bash
# tests/e2e/isolation_view.sh — what the system sandbox looks like from
# inside (SPEC §3): user, capabilities, namespaces, the filesystem.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
mk() { echo "$((RANDOM % 900 + 100)).$$$RANDOM"; }

# ---- user and privileges
wr --timeout 10 --shell 'id -u; id -g'
uid=$(printf '%s\n' "$OUT" | sed -n 1p); gid=$(printf '%s\n' "$OUT" | sed -n 2p)
expect_eq "id runs" 0 "$RC"
if [ -n "$uid" ] && [ "$uid" != 0 ]; then pass "uid inside is not 0 ($uid)"; else fail "uid inside is not 0" "uid=[$uid] err=$ERR"; fi
if [ -n "$gid" ] && [ "$gid" != 0 ]; then pass "gid inside is not 0 ($gid)"; else fail "gid inside is not 0" "gid=[$gid]"; fi

# The host uid of a sandboxed process, seen from the host while it sleeps.
M=$(mk)
timeout -k 2 20 "$WARD" run --timeout 10 -- sleep "$M" </dev/null >/dev/null 2>&1 &
wpid=$!
hp=""
for _ in $(seq 50); do hp=$(marker_pids "$M" | head -1); [ -n "$hp" ] && break; sleep 0.1; done
if [ -n "$hp" ]; then
	huid=$(awk '/^Uid:/{print $2" "$3" "$4" "$5}' "/proc/$hp/status")
	hgid=$(awk '/^Gid:/{print $2" "$3" "$4" "$5}' "/proc/$hp/status")
	case " $huid " in *" 0 "*) fail "host uid of the sandbox is not root" "Uid: $huid" ;; *) pass "host uid of the sandbox is not root ($huid)" ;; esac
	case " $hgid " in *" 0 "*) fail "host gid of the sandbox is not root" "Gid: $hgid" ;; *) pass "host gid of the sandbox is not root ($hgid)" ;; esac
	hcap=$(awk '/^CapEff:/{print $2}' "/proc/$hp/status")
	expect_eq "host view: CapEff of the sandboxed process is 0" 0000000000000000 "$hcap"
	# Its namespaces differ from ours.
	for ns in user mnt pid ipc uts cgroup net; do
		a=$(readlink "/proc/self/ns/$ns"); b=$(readlink "/proc/$hp/ns/$ns")
		if [ -n "$b" ] && [ "$a" != "$b" ]; then pass "own $ns namespace"; else fail "own $ns namespace" "host=$a sandbox=$b"; fi
	done
	kill "$hp" 2>/dev/null
else
	fail "sandboxed sleep visible on the host" "no process 'sleep $M' found"
fi
wait "$wpid" 2>/dev/null

# Capabilities, no_new_privs, seccomp, from inside.
wr --timeout 10 -- cat /proc/self/status
st=$OUT
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	expect_eq "$c is 0" 0000000000000000 "$(printf '%s\n' "$st" | awk -v k="$c:" '$1==k{print $2}')"
done
expect_eq "NoNewPrivs 1" 1 "$(printf '%s\n' "$st" | awk '$1=="NoNewPrivs:"{print $2}')"
expect_eq "Seccomp filter mode (2)" 2 "$(printf '%s\n' "$st" | awk '$1=="Seccomp:"{print $2}')"
# The shell (a child) has the same view.
wr --timeout 10 --shell 'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/$$/status | tr -s "\t" " " | tr "\n" ";"'
expect_eq "shell: caps and nnp" "CapEff: 0000000000000000;CapBnd: 0000000000000000;NoNewPrivs: 1;" "$OUT"

# ---- UTS, PID
wr --timeout 10 -- cat /proc/sys/kernel/hostname
if [ -n "$OUT" ] && [ "$OUT" != "$(cat /proc/sys/kernel/hostname)" ]; then pass "hostname differs from host ($OUT)"
else fail "hostname differs from host" "inside=[$OUT] host=[$(hostname)]"; fi

wr --timeout 10 --shell 'echo $$; ls /proc | grep -c "^[0-9]"'
p=$(printf '%s\n' "$OUT" | sed -n 1p); n=$(printf '%s\n' "$OUT" | sed -n 2p)
if [ -n "$p" ] && [ "$p" -le 5 ] 2>/dev/null; then pass "command pid is small ($p)"; else fail "command pid is small" "pid=[$p]"; fi
if [ -n "$n" ] && [ "$n" -le 6 ] 2>/dev/null; then pass "/proc shows only sandbox processes ($n)"; else fail "/proc shows only sandbox processes" "count=[$n]"; fi
wr --timeout 10 --shell 'cat /proc/1/comm; tr "\0" " " </proc/1/cmdline'
expect_contains "/proc/1 is ward's init" "$OUT" ward
wr --timeout 10 --shell 'ps -e -o pid=,comm= | wc -l'
if [ "${OUT:-99}" -le 5 ] 2>/dev/null; then pass "ps sees only the sandbox ($OUT)"; else fail "ps sees only the sandbox" "ps lines=[$OUT] err=$ERR"; fi
# A host pid is not reachable (kill -0 on our own pid fails inside).
wr --timeout 10 --shell "kill -0 $$ 2>/dev/null && echo reached || echo unreachable"
expect_eq "host pid not signalable" unreachable "$OUT"

# ---- the filesystem
for d in /home /root /run /var /sys /boot /mnt /srv /opt /media; do
	wr --timeout 10 --shell "if [ -e $d ]; then ls -A $d | head -3; echo present; else echo absent; fi"
	case "$OUT" in absent|present) pass "no host $d" ;; *) fail "no host $d" "inside: $(printf %s "$OUT" | tr '\n' ' ')" ;; esac
done
wr --timeout 10 --shell 'test -e /etc/shadow && echo shadow; test -e /etc/gshadow && echo gshadow; test -e /etc/ssh && echo ssh; test -e /etc/sudoers && echo sudoers; echo done'
expect_eq "no /etc/shadow, gshadow, ssh, sudoers" done "$OUT"
wr --timeout 10 -- ls -A /etc
allowed=" passwd group hosts nsswitch.conf protocols services ld.so.cache localtime ssl ca-certificates ca-certificates.conf alternatives hostname resolv.conf ld.so.conf ld.so.conf.d mime.types java-17-openjdk "
extra=""; for f in $OUT; do case "$allowed" in *" $f "*) ;; *) extra="$extra $f" ;; esac; done
expect_eq "/etc holds only the minimal set" "" "$extra"
for f in passwd group hosts nsswitch.conf; do
	case " $OUT " in *[[:space:]]$f[[:space:]]*) pass "/etc/$f present" ;; *) fail "/etc/$f present" "/etc: $(echo $OUT)" ;; esac
done
wr --timeout 10 --shell 'u=$(id -u); grep -c ":$u:" /etc/passwd; wc -l </etc/passwd; id -un'
expect_eq "/etc/passwd names the sandbox user" 1 "$(printf '%s\n' "$OUT" | sed -n 1p)"
hostlines=$(wc -l </etc/passwd)
pl=$(printf '%s\n' "$OUT" | sed -n 2p)
if [ -n "$pl" ] && [ "$pl" -lt "$hostlines" ] && [ "$pl" -le 5 ]; then pass "/etc/passwd is minimal ($pl lines)"
else fail "/etc/passwd is minimal" "$pl lines (host $hostlines)"; fi

wr --timeout 10 -- ls -A /dev
allowed=" null zero full random urandom shm pts ptmx fd stdin stdout stderr "
extra=""; for f in $OUT; do case "$allowed" in *" $f "*) ;; *) extra="$extra $f" ;; esac; done
expect_eq "/dev holds only null zero full random urandom shm pts ptmx (+fd links)" "" "$extra"
for f in null zero full random urandom shm pts; do
	case " $(echo $OUT) " in *" $f "*) pass "/dev/$f present" ;; *) fail "/dev/$f present" "/dev: $(echo $OUT)" ;; esac
done
wr --timeout 10 --shell 'head -c 4 /dev/zero | od -An -tx1 | tr -d " "; head -c 16 /dev/urandom | wc -c; echo x >/dev/null && echo nullok; echo x 2>/dev/null >/dev/full || echo fullerr'
expect_eq "/dev nodes work" "00000000 16 nullok fullerr" "$(echo $OUT)"
guard "/dev/shm/$X"
wr --timeout 10 --env X=$X --shell 'ls -A /dev/pts; echo hi >/dev/shm/$X && cat /dev/shm/$X; awk "\$5==\"/dev/shm\"{print \$9}" /proc/self/mountinfo'
expect_eq "/dev/pts is a private instance, /dev/shm a writable tmpfs" "ptmx hi tmpfs" "$(echo $OUT)"
# mknod cannot make a device inside.
guard "/tmp/$X-sda"
wr --timeout 10 --env X=$X --shell 'mknod /tmp/$X-sda b 8 0 2>/dev/null && echo made || echo refused'
expect_eq "mknod refused" refused "$OUT"

# /tmp: a tmpfs with the --tmp-size limit.
guard "/tmp/$X-big"
wr --timeout 20 --tmp-size 8 --env X=$X --shell 'awk "\$5==\"/tmp\"{print \$9}" /proc/self/mountinfo; (head -c 16777216 /dev/zero >/tmp/$X-big) 2>&1; echo rc=$?; stat -c %s /tmp/$X-big'
expect_contains "/tmp is tmpfs" "$OUT" tmpfs
expect_contains "writing past --tmp-size fails" "$OUT" "No space left on device"
sz=$(printf '%s\n' "$OUT" | tail -1)
if [ -n "$sz" ] && [ "$sz" -le $((8 << 20)) ] 2>/dev/null && [ "$sz" -gt $((6 << 20)) ]; then pass "/tmp holds ~8 MiB at most ($sz)"
else fail "/tmp holds ~8 MiB at most" "size=[$sz]"; fi
wr --timeout 10 --tmp-size 8 --shell 'stat -f -c "%b %S" /tmp'
kb=$(echo "$OUT" | awk '{print $1*$2/1024}')
expect_eq "/tmp size is --tmp-size (KiB)" 8192 "$kb"
# Ephemeral /work has the same size limit and is writable and the cwd.
guard "$PWD/$X-big" "/work/$X-big"
wr --timeout 20 --tmp-size 8 --env X=$X --shell 'pwd; awk "\$5==\"/work\"{print \$9}" /proc/self/mountinfo; head -c 16777216 /dev/zero >$X-big 2>/dev/null; echo rc=$?; stat -c %s $X-big'
expect_eq "ephemeral /work: cwd, tmpfs, limited" "/work tmpfs rc=1" "$(printf '%s\n' "$OUT" | head -3 | tr '\n' ' ' | sed 's/ $//')"
sz=$(printf '%s\n' "$OUT" | tail -1)
if [ -n "$sz" ] && [ "$sz" -le $((8 << 20)) ] 2>/dev/null; then pass "ephemeral /work holds 8 MiB at most ($sz)"; else fail "ephemeral /work holds 8 MiB at most" "size=[$sz]"; fi

# A file written in /tmp or the ephemeral /work never reaches the host.
name=$X-leak
guard "/tmp/$name" "/work/$name" "/$name"
wr --timeout 10 --shell "echo x >/tmp/$name && echo x >/work/$name && echo wrote"
expect_eq "wrote in /tmp and /work" wrote "$OUT"
if [ -e "/tmp/$name" ] || [ -e "/work/$name" ] || [ -e "/$name" ]; then fail "sandbox /tmp is not the host's" "/tmp/$name on host"
else pass "sandbox /tmp is not the host's"; fi
wr --timeout 10 --shell "cat /tmp/$name 2>/dev/null || echo gone"
expect_eq "/tmp is fresh for each run" gone "$OUT"

# System dirs are read-only binds.
for d in /usr /bin /lib /etc /; do
	guard "${d%/}/$X"
	wr --timeout 10 --shell "touch ${d%/}/$X 2>&1; echo rc=\$?"
	expect_contains "$d is not writable" "$OUT" "rc=1"
done
guard "/usr/$X-x"
wr --timeout 10 --env X=$X --shell '(touch /usr/$X-x) 2>&1; awk "\$5==\"/usr\"{print \$6}" /proc/self/mountinfo'
expect_contains "/usr: EROFS" "$OUT" "Read-only file system"
case "$(printf '%s\n' "$OUT" | tail -1)" in ro,*|ro|*,ro|*,ro,*) pass "/usr mounted ro" ;; *) fail "/usr mounted ro" "mount opts: $(printf '%s\n' "$OUT" | tail -1)" ;; esac
wr --timeout 10 --shell 'awk "\$5==\"/\"{print \$9}" /proc/self/mountinfo | tail -1'
expect_eq "root is a tmpfs" tmpfs "$OUT"
# Host files that are not system dirs are absent.
wr --timeout 10 --shell "ls $ROOT 2>/dev/null | head -1; ls /proc/1/root/$ROOT 2>/dev/null | head -1; echo end"
expect_eq "the repository (host path) is not visible" end "$OUT"

# ---- --workdir: host files at /work, writes come back, cwd is /work.
W=$T/work; mkdir -p "$W"; chmod 0777 "$W"; echo host-data >"$W/in.txt"
wr --timeout 10 --workdir "$W" --shell 'pwd; cat in.txt; echo sandbox-data >out.txt; mkdir sub && echo y >sub/f'
expect_eq "workdir: cwd /work and host file visible" "/work host-data" "$(echo $OUT)"
expect_eq "workdir: write comes back" sandbox-data "$(cat "$W/out.txt" 2>&1)"
expect_eq "workdir: subdir write comes back" y "$(cat "$W/sub/f" 2>&1)"
# A workdir owned by an ordinary user: what the sandbox writes there is that
# user's (or the sandbox's), never root's.
U=$T/userwork; mkdir -p "$U"; chown 4242:4242 "$U"; chmod 0755 "$U"
wr --timeout 10 --workdir "$U" --shell 'echo x >f && mkdir d && echo written'
expect_eq "user-owned workdir (0755) is writable" written "$OUT"
own=$(stat -c %u:%g "$U/f" 2>/dev/null)
case "$own" in 0:*|*:0|"") fail "user-owned workdir: files not owned by root on the host" "owner=[$own]" ;;
*) pass "user-owned workdir: files not owned by root on the host ($own)" ;; esac
# Root-owned 0755 workdir (ward run by root on its own dir): writes come back.
RW=$T/rootwork; mkdir -p "$RW"; chmod 0755 "$RW"
wr --timeout 10 --workdir "$RW" --shell 'echo x >f && echo written'
expect_eq "root-owned 0755 workdir is writable" written "$OUT"
# Whatever the mapping, the sandbox must not plant a set-id file that the
# host sees as root's (a root shell for any local user).
for dir in "$RW" "$W" "$U"; do
	wr --timeout 10 --workdir "$dir" --shell 'cp /bin/true suid; chmod 6755 suid 2>/dev/null; mkdir -p sgid; chmod 2777 sgid 2>/dev/null; cp /bin/true sgid/t 2>/dev/null; chmod 2755 sgid/t 2>/dev/null; echo done'
	[ "$OUT" = done ] || fail "workdir $(stat -c %U:%a "$dir"): the set-id attempt ran" "out=[$OUT] err=[$ERR]"
	bad=$(find "$dir" \( -perm -4000 -user 0 \) -o \( -perm -2000 -group 0 -type f \) 2>/dev/null | tr '\n' ' ')
	expect_eq "workdir $(stat -c %U:%a "$dir"): no root set-id file reaches the host" "" "$bad"
	rm -rf "$dir/suid" "$dir/sgid"
done
# The parent of the workdir stays invisible.
echo secret >"$T/outside.txt"
wr --timeout 10 --workdir "$W" --shell 'cat ../outside.txt 2>/dev/null; cat /work/../outside.txt 2>/dev/null; echo end'
expect_eq "workdir: host parent not reachable" end "$OUT"
# A symlink in the workdir that points out resolves inside the sandbox.
ln -sf "$T/outside.txt" "$W/link"
wr --timeout 10 --workdir "$W" --shell 'cat link 2>/dev/null; echo end'
expect_eq "workdir: symlink to a host path does not reach it" end "$OUT"
rm -f "$W/link"

# ---- --bind (rw) and --ro-bind
B=$T/bind; mkdir -p "$B"; chmod 0777 "$B"; echo bound >"$B/f"
R=$T/robind; mkdir -p "$R"; echo robound >"$R/f"; chmod 0777 "$R"; chmod 0666 "$R/f"
wr --timeout 10 --bind "$B:/data" --ro-bind "$R:/ro" --shell 'cat /data/f /ro/f; echo new >/data/new; (echo x >/ro/new) 2>&1; (echo x >>/ro/f) 2>&1; echo end'
expect_contains "bind: host file visible" "$OUT" bound
expect_contains "ro-bind: host file visible" "$OUT" robound
expect_eq "bind: write comes back" new "$(cat "$B/new" 2>&1)"
if [ -e "$R/new" ] || [ "$(cat "$R/f")" != robound ]; then fail "ro-bind: read-only (even where host perms allow)" "host copy changed"
else pass "ro-bind: read-only (even where host perms allow)"; fi
expect_contains "ro-bind: EROFS" "$OUT" "Read-only file system"
wr --timeout 10 --ro-bind "$R:/ro" --shell 'awk "\$5==\"/ro\"{print \$6}" /proc/self/mountinfo'
case "$OUT" in ro|ro,*) pass "ro-bind mounted ro" ;; *) fail "ro-bind mounted ro" "opts=[$OUT]" ;; esac
# Remounting it rw from inside fails.
wr --timeout 10 --ro-bind "$R:/ro" --shell 'mount -o remount,rw /ro 2>/dev/null; echo x >/ro/new2 2>/dev/null; echo end'
check "ro-bind: remount rw from inside fails" test ! -e "$R/new2"
# A bind below a directory that only ward's caller (root) may enter: ward
# opens the caller's path, the sandbox uid's rights do not matter.
P7=$(mktemp -d /tmp/ward-test.XXXXXX); chmod 0700 "$P7"; mkdir "$P7/d"; echo private-ok >"$P7/d/f"; chmod 0755 "$P7/d"; chmod 0644 "$P7/d/f"
wr --timeout 10 --ro-bind "$P7/d:/ro" -- cat /ro/f
expect_eq "ro-bind below a 0700 dir of the caller" private-ok "$OUT${ERR:+ [$ERR]}"
wr --timeout 10 --bind "$P7/d:/rw" -- cat /rw/f
expect_eq "bind below a 0700 dir of the caller" private-ok "$OUT${ERR:+ [$ERR]}"
rm -rf "$P7"
# Without :PATH the host path is used.
wr --timeout 10 --ro-bind "$R" --shell "cat $R/f"
expect_eq "ro-bind HOST (same path inside)" robound "$OUT"
# A bind's own subtree only: a sibling of it is not visible.
mkdir -p "$T/sib"; echo s >"$T/sib/x"
wr --timeout 10 --ro-bind "$R:/ro" --shell 'cat /ro/../sib/x 2>/dev/null; ls /ro; echo end'
expect_eq "bind exposes only its own subtree" "f end" "$(echo $OUT)"
