# ward_kernel.sh — the code interpreter's bash kernel (SPEC §18): one bash
# per code context, inside the sandbox, under its limits; a cell is eval'd
# in that one shell, so variables, functions, `cd` and exports persist from
# call to call (as in E2B's bash_kernel).
#
# Run as `bash --noprofile --norc -c THIS`.  Its stdout and stderr are the
# cell's own output, raw; ward cuts them into stdout/stderr events.  First
# it says "\036__ready__ bash VERSION" on stdout.  stdin, per request:
# "TOKEN A B C\n" and then A bytes of code run before the cell (its
# env_vars exported), B bytes of the cell, C bytes run after it (those
# unset).  After each cell: "\036TOKEN STATUS\n" on stdout and "\036TOKEN\n"
# on stderr (the cell's end, once each stream has carried all its output;
# TOKEN is 128 random bits, new for each request, so no output forges it).
# A cell reads /dev/null, never the requests.  SIGINT ends the cell's
# foreground program; the shell lives on.
trap : INT
cd -- "${PWD:-$HOME}" 2>/dev/null
printf '\036__ready__ bash %s\n' "$BASH_VERSION"
while IFS=' ' read -r __ward_tok __ward_a __ward_b __ward_c; do
	LC_ALL=C IFS= read -r -N "$__ward_a" __ward_pre
	LC_ALL=C IFS= read -r -N "$__ward_b" __ward_code
	LC_ALL=C IFS= read -r -N "$__ward_c" __ward_post
	eval "$__ward_pre" </dev/null
	eval "$__ward_code" </dev/null
	__ward_rc=$?
	eval "$__ward_post" </dev/null
	printf '\036%s %d\n' "$__ward_tok" "$__ward_rc"
	printf '\036%s\n' "$__ward_tok" >&2
done
