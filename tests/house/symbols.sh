#!/bin/bash
# tests/house/symbols.sh — the installed libward exports its API and nothing
# else (issue 31.4): every global symbol of build/libward.a (what
# `make install` installs) is a function declared in
# include/ward*.h, every function declared there is exported, and a program
# that defines names libward uses inside (sweep, probe, set_error,
# parse_u64, base64_encode, jw_object_begin) links against it and runs.
. "$(dirname "$0")/../lib.sh"
LIB=$ROOT/build/libward.a
[ -f "$LIB" ] || { fail "build/libward.a exists" "run make all first"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

nm -g --defined-only "$LIB" | awk 'NF==3 {print $3}' | sort -u >"$T/exported"
# Function declarations of the public headers: an identifier ward_* before
# "(" at the start of a declaration (after its return type).
sed -e 's://.*$::' "$ROOT"/include/ward*.h | tr '\n' ' ' | sed 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/: :g' |
	grep -o "[ *]ward_[a-z_0-9]* *(" | grep -o "ward_[a-z_0-9]*" | sort -u >"$T/declared"

n=$(wc -l <"$T/exported")
[ "$n" -gt 20 ] && pass "libward exports its API ($n symbols)" || fail "libward exports its API" "only $n symbols"
other=$(grep -v '^ward_' "$T/exported" | head -5 | tr '\n' ' ')
expect_eq "every exported symbol is a ward_ name" "" "$other"
extra=$(comm -23 "$T/exported" "$T/declared" | head -5 | tr '\n' ' ')
expect_eq "every exported symbol is declared in include/ward*.h" "" "$extra"
missing=$(comm -13 "$T/exported" "$T/declared" | head -5 | tr '\n' ' ')
expect_eq "every function declared in include/ward*.h is exported" "" "$missing"

# The collision a program would meet: its own names beside libward's.
cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include "ward.h"
#include "ward_image.h"
#include "ward_judge.h"
#include "all.h"
int sweep(void) { return 1; }
int probe(void) { return 2; }
void set_error(void) {}
int parse_u64(void) { return 3; }
int base64_encode(void) { return 4; }
int jw_object_begin(void) { return 5; }
int main(void)
{
	struct ward_request r;
	ward_request_init(&r);
	printf("%d %d\n", r.limits.pids > 0 && all[0] != NULL, sweep() + probe() + parse_u64() + base64_encode() + jw_object_begin());
	return 0;
}
C
# every API function referenced, so that every member of the library is linked
{ echo 'static void *const all[] = {'; sed 's/.*/(void *)&,/' "$T/declared"; echo '};'; } >"$T/all.h"
if cc -std=gnu11 -I"$ROOT/include" -I"$T" -o "$T/prog" "$T/prog.c" "$LIB" -lseccomp -ljansson -lmicrohttpd -lxml2 -larchive \
	-lpthread -lm -ldl 2>"$T/ld.err"; then
	pass "a program with libward's internal names links against it"
	expect_eq "and runs" "1 15" "$("$T/prog")"
else
	fail "a program with libward's internal names links against it" "$(head -c 400 "$T/ld.err")"
fi
