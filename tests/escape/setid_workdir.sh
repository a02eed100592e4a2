#!/bin/bash
# tests/escape/setid_workdir.sh — set-id files planted in host directories.
# --workdir and writable binds are host directories; with an idmapped mount
# what the sandbox creates there may be owned on the host by the directory's
# owner — root, for a root-owned workdir — and a setuid-root file there is
# a root shell for any local user who runs it (nosuid protects only the
# sandbox's own view).  Every call that sets a mode (chmod family, open,
# creat, mknod, mkdir, openat2) is tried in a root-owned 0755 workdir, a
# 0777 one and a writable bind; afterwards the host sees no set-id file at
# all, and plain files still get written.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

chmod 0755 "$T"
mkdir -p "$T/root755" "$T/any777" "$T/bind"
chmod 0755 "$T/root755"; chmod 0777 "$T/any777" "$T/bind"
for case in "root755:--workdir $T/root755:/work" "any777:--workdir $T/any777:/work" "bind:--bind $T/bind:/rw:/rw"; do
	name=${case%%:*}; rest=${case#*:}; opt=${rest%:*}; inside=${rest##*:}
	# shellcheck disable=SC2086
	wrun $opt -- /helpers/esc_setid "$inside"
	expect_clean "set-id ($name): helper ran, nothing planted"
	expect_blocked "set-id ($name): chmod 06755 refused" "chmod(06755)" EPERM
	expect_blocked "set-id ($name): open(O_CREAT, 04755) refused" "open(O_CREAT, 04755)" EPERM
	expect_blocked "set-id ($name): openat2 refused" "openat2(O_CREAT, 04755)" ENOSYS
	bad=$(find "$T/$name" -perm /6000 2>/dev/null | tr '\n' ' ')
	expect_eq "set-id ($name): the host sees no set-id file" "" "$bad"
	check "set-id ($name): plain files were written" test -f "$T/$name/chmod"
done
# The shell way: cp + chmod u+s, install -m 4755.
wrun --workdir "$T/root755" --shell 'cp /bin/true s1; chmod u+s s1; install -m 4755 /bin/true s2; chmod g+s s1; true'
expect_eq "set-id: cp/chmod/install from a shell plant nothing" "" "$(find "$T/root755" -perm /6000 | tr '\n' ' ')"
