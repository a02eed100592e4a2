#!/bin/bash
# tests/escape/namespaces.sh — new and joined namespaces.  An unprivileged
# user namespace hands back every capability over fresh mount and network
# namespaces, and with them the kernel surface CAP_SYS_ADMIN/CAP_NET_ADMIN
# guard (the root of many container escapes, e.g. CVE-2022-0185,
# CVE-2023-32233).  unshare/clone with any CLONE_NEW* flag and setns get
# EPERM; clone3 gets ENOSYS (its flags are out of the filter's sight, and
# libc falls back to clone); the nested user namespace and its chain
# (unshare -> uid_map -> mount) never start.  Ordinary fork and threads work.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

wrun -- /helpers/esc_syscall eperm-all
expect_clean "namespaces: helper ran to the end"
for f in NEWUSER NEWNS NEWNET NEWPID NEWIPC NEWUTS NEWCGROUP NEWTIME; do
	expect_blocked "namespaces: unshare(CLONE_$f) EPERM" "unshare(CLONE_$f)" EPERM
done
expect_blocked "namespaces: clone(CLONE_NEWUSER) EPERM" "clone(CLONE_NEWUSER)" EPERM
expect_blocked "namespaces: clone(CLONE_NEWNS|CLONE_NEWPID) EPERM" "clone(CLONE_NEWNS|CLONE_NEWPID)" EPERM
expect_blocked "namespaces: clone3 ENOSYS" "clone3(CLONE_NEWUSER)" ENOSYS
expect_blocked "namespaces: setns(user) EPERM" "setns(user)" EPERM
expect_blocked "namespaces: setns(mnt) EPERM" "setns(mnt)" EPERM

# The nested user namespace as a user would try it (util-linux unshare).
wrun --shell 'unshare -U -r -m sh -c "mount -t tmpfs ward-esc /tmp && echo NESTED-ROOT"; echo "rc=$?"'
expect_not_contains "nested userns: unshare -Urm never got root" "$OUT" NESTED-ROOT
expect_contains "nested userns: unshare(1) failed" "$OUT" "rc=1"
host_mount_clean "nested userns: host mount table unchanged"

# What must keep working: fork, threads (clone with CLONE_THREAD), vfork.
wrun --shell 'a=$(echo sub); ( exit 3 ); b=$?; /usr/bin/python3 -c "import threading; t=threading.Thread(target=print, args=(\"thr\",)); t.start(); t.join()" ; echo "$a $b"'
expect_eq "namespaces: fork, subshells and threads still work" $'thr\nsub 3' "${OUT%$'\n'}"
