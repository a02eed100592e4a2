#!/bin/bash
# tests/escape/workdir_symlink.sh — symlinks planted for the cleanup.  The
# sandbox leaves links in /work pointing at host paths (a host file, its
# directory, /), hoping that ward's own work after the run (removing an
# ephemeral /work, fixing ownership of a --workdir, test-job cleanup)
# follows them with the supervisor's privileges — the pattern of Docker cp
# CVE-2018-15664 and many "symlink at cleanup" bugs.  After the run the host
# file has the same content, owner and mode, and its directory still holds
# exactly what it held.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

H=$T/host; W=$T/work
mkdir -p "$H" "$W"; chmod 0777 "$W"
echo host-secret >"$H/secret"; chmod 0600 "$H/secret"
state() { stat -c '%u:%g %a %s' "$H/secret"; cat "$H/secret"; ls -A "$H"; stat -c '%u:%g %a' "$H"; }
before=$(state)
plant='ln -s '"$H"'/secret /work/link; ln -s '"$H"' /work/dirlink; ln -s / /work/rootlink;
mkdir -p /work/sub/deeper; ln -s '"$H"'/secret /work/sub/deeper/x; ln -s '"$H"' /work/sub/d;
echo WARD-ESC >/work/link 2>/dev/null; echo WARD-ESC >'"$H"'/secret 2>/dev/null; ls -la /work >/dev/null; echo planted'

wrun --workdir "$W" --shell "$plant"
expect_eq "workdir symlink: links planted in --workdir" planted "${OUT%$'\n'}"
check "workdir symlink: the links are there (ward does not follow or remove them)" test -L "$W/link"
expect_eq "workdir symlink: host file and directory unchanged" "$before" "$(state)"

wrun --shell "$plant"
expect_eq "workdir symlink: links planted in an ephemeral /work" planted "${OUT%$'\n'}"
expect_eq "workdir symlink: host unchanged after ephemeral /work cleanup" "$before" "$(state)"

# A link where ward itself might write (its /tmp, /dev/shm).
wrun --shell 'ln -s '"$H"'/secret /tmp/x; ln -s '"$H"' /dev/shm/d; echo planted'
expect_eq "workdir symlink: host unchanged after /tmp and /dev/shm links" "$before" "$(state)"
