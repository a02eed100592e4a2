#!/bin/bash
# `ward judge` (SPEC §15): a line a test and a summary, exit 0 / 1 / 125,
# --json, --remote against a runner; and every language of the shipped
# table judged with its test program where its toolchain is installed (a
# missing one is skipped, named, never a failure).
. "$(dirname "$0")/judge.bash"
T=$SERVE_TMP
P=$JDIR/programs
mkdir -p "$T/t"
printf '1 2\n' >"$T/t/1.in"; printf '3\n' >"$T/t/1.out"
printf '2 2\n' >"$T/t/2.in"; printf '5\n' >"$T/t/2.ans"
printf '5 5\n' >"$T/t/10.in"; printf '10\n' >"$T/t/10.out"
out=$("$WARD" judge --lang python "$P/main.py" --tests "$T/t" 2>&1); rc=$?
expect_eq "cli: a failing test: exit 1" 1 "$rc"
expect_eq "cli: a line a test, in natural order" "1 2 10" "$(printf '%s\n' "$out" | awk '/^test/{printf "%s%s", s, $2; s=" "}')"
expect_contains "cli: the failing one says WA" "$(printf '%s\n' "$out" | grep '^test 2 ')" "WA"
expect_contains "cli: a summary" "$out" "WA: 2/3 passed; first failed: 2"
rm "$T/t/2.in" "$T/t/2.ans"
"$WARD" judge --lang py "$P/main.py" --tests "$T/t" >/dev/null 2>&1
expect_eq "cli: every test AC: exit 0" 0 $?
j=$("$WARD" judge --lang c "$P/main.c" --tests "$T/t" --json 2>/dev/null)
expect_eq "cli: --json is the answer" "AC 2" "$(jg "$j" 'd["verdict"]+" "+str(d["summary"]["total"])')"
printf 'int main(void) { return x; }\n' >"$T/ce.c"
out=$("$WARD" judge --lang c "$T/ce.c" --tests "$T/t" 2>&1); rc=$?
expect_eq "cli: CE: exit 1" 1 "$rc"
expect_contains "cli: CE: the compiler's message" "$out" "error"
# hostile: a compile error that carries terminal escapes (a window title, clear
# screen, a C1 CSI) reaches the grader's terminal as visible \xHH, never raw
printf 'int main(void) { return 0; }\n#error "\033]0;pwned\007\033[2J\302\233H"\n' >"$T/esc.c"
out=$("$WARD" judge --lang c "$T/esc.c" --tests "$T/t" 2>&1)
expect_contains "cli: hostile: escapes in compiler output are shown as \\xHH" "$out" '#error "\x1b]0;pwned\x07\x1b[2J\x9bH"'
expect_eq "cli: hostile: ... no ESC, BEL or C1 byte reaches the terminal" 0 "$(printf '%s' "$out" | LC_ALL=C grep -c $'[\033\007]\|\302[\200-\237]')"
"$WARD" judge --lang cobol "$P/main.c" --tests "$T/t" >/dev/null 2>&1
expect_eq "cli: an unknown language: exit 125" 125 $?
"$WARD" judge --lang c "$P/main.c" --tests "$T/nope" >/dev/null 2>&1
expect_eq "cli: a missing tests directory: exit 125" 125 $?
mkdir -p "$T/empty"
"$WARD" judge --lang c "$P/main.c" --tests "$T/empty" >/dev/null 2>&1
expect_eq "cli: an empty tests directory: exit 125" 125 $?

if start_server cli --max-concurrent 2; then
	out=$("$WARD" judge --remote "$URL" --lang cpp "$P/main.cpp" --tests "$T/t" 2>&1); rc=$?
	expect_eq "cli: --remote: exit 0" 0 "$rc"
	expect_contains "cli: --remote: the summary" "$out" "AC: 2/2 passed"
	"$WARD" judge --remote "$URL" --lang cobol "$P/main.c" --tests "$T/t" >/dev/null 2>&1
	expect_eq "cli: --remote: refused: exit 125" 125 $?
	expect_contains "cli: ward languages --remote" "$("$WARD" languages --remote "$URL")" "python"
fi

# every language of the table, where its toolchain is here
list=$("$WARD" languages --all --json)
for f in "$P"/*; do
	b=${f##*/}
	case ${b##*.} in
	c) l=c ;; cpp) l=cpp ;; py) l=python ;; js) l=javascript ;; java) l=java ;; go) l=go ;;
	rs) l=rust ;; rb) l=ruby ;; php) l=php ;; sh) l=bash ;; lua) l=lua ;; pl) l=perl ;; *) continue ;;
	esac
	on=$(jg "$list" '[x["enabled"] for x in d if x["id"]=="'$l'"][0]')
	if [ "$on" != true ]; then
		echo "SKIP: language $l: $(jg "$list" '[x["why"] for x in d if x["id"]=="'$l'"][0]')"
		continue
	fi
	out=$("$WARD" judge --lang "$l" "$f" --tests "$JDIR/sum" 2>&1)
	expect_eq "languages: $l judges its test program" "AC: 2/2 passed" "$(printf '%s\n' "$out" | tail -1)"
done
