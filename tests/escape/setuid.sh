#!/bin/bash
# tests/escape/setuid.sh — setuid binaries grant nothing inside: a
# setuid-root copy of a helper in a --bind directory, /usr/bin/su and
# /usr/bin/passwd.  no_new_privs (and nosuid binds) keep every id the
# sandbox user's; su and passwd fail, and the host's /etc/shadow and
# /etc/passwd are unchanged.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

mkdir -p "$T/suid"; chmod 0755 "$T"  # the sandbox user must reach the bind source
cp "$HELPERS/esc_suid" "$T/suid/esc_suid"
chown 0:0 "$T/suid/esc_suid"; chmod 4755 "$T/suid/esc_suid"
check "setuid: the copy is setuid root on the host" test -u "$T/suid/esc_suid"
shadow_before=$(sha256sum /etc/shadow /etc/passwd /etc/group 2>/dev/null)

for how in --bind --ro-bind; do
	wrun "$how" "$T/suid:/suid" -- /suid/esc_suid
	expect_clean "setuid: $how copy: ran, no escape"
	expect_blocked "setuid: $how copy: euid is not 0" "euid 0"
	expect_blocked "setuid: $how copy: setuid(0) fails" "setuid(0)"
	expect_contains "setuid: $how copy: no_new_privs set" "$OUT" "NNP 1"
	expect_not_contains "setuid: $how copy: no id is 0" "$(printf %s "$OUT" | grep ^IDS)" " 0"
done

wrun --shell 'echo x | su -c "id -u" root 2>&1; echo "su rc=$?"; id -u'
expect_contains "setuid: su fails" "$OUT" "su rc="
expect_not_contains "setuid: su gives no root shell" "$OUT" "su rc=0"
expect_not_contains "setuid: su never printed uid 0" "$(printf %s "$OUT" | grep -x 0)" 0
wrun --shell 'printf "a\na\n" | passwd root 2>&1; echo "passwd rc=$?"; passwd -d root 2>&1; echo "passwd -d rc=$?"'
expect_not_contains "setuid: passwd root fails" "$OUT" "passwd rc=0"
expect_not_contains "setuid: passwd -d root fails" "$OUT" "passwd -d rc=0"
expect_eq "setuid: host /etc/shadow, passwd, group unchanged" "$shadow_before" \
	"$(sha256sum /etc/shadow /etc/passwd /etc/group 2>/dev/null)"
