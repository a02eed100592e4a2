/* The Dockerfile parser (src/image/build_parse.c): what Docker accepts
 * and ward builds comes out as steps; what ward does not build is refused
 * naming the line and the instruction; substitution as Docker does it. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "image/build_parse.h"
#include "unit.h"

static int parse(const char *text, struct bfile *f, char *err, size_t errlen)
{
	return build_parse(text, strlen(text), f, err, errlen);
}

static const char *vars(void *ctx, const char *name)
{
	(void)ctx;
	if (!strcmp(name, "A"))
		return "alpha";
	if (!strcmp(name, "EMPTY"))
		return "";
	if (!strcmp(name, "SP"))
		return "a b";
	return NULL;
}

static bool expands(const char *in, const char *want)
{
	char *out = NULL, e[200];
	int rc = build_expand(in, '\\', vars, NULL, &out, e, sizeof(e));
	bool ok = rc == 0 && out && !strcmp(out, want);
	if (!ok)
		printf("  expand [%s]: got [%s] (%s)\n", in, out ? out : "(null)", rc ? e : "");
	free(out);
	return ok;
}

static void check_expand(void)
{
	CHECK("expand: $A and ${A}", expands("$A-${A}", "alpha-alpha"));
	CHECK("expand: unset is empty", expands("[$NOPE]", "[]"));
	CHECK("expand: ${X:-word}", expands("${NOPE:-d}${EMPTY:-e}${A:-x}", "dealpha"));
	CHECK("expand: ${X:+word}", expands("${A:+set}${NOPE:+no}${EMPTY:+no}", "set"));
	CHECK("expand: nested default", expands("${NOPE:-${A}}", "alpha"));
	CHECK("expand: single quotes literal", expands("'$A'", "$A"));
	CHECK("expand: double quotes expand", expands("\"$A b\"", "alpha b"));
	CHECK("expand: escape", expands("\\$A", "$A"));
	CHECK("expand: a lone $", expands("5$ and $", "5$ and $"));
	char *out, e[200];
	CHECK("expand: ${A?x} refused", build_expand("${A?x}", '\\', vars, NULL, &out, e, sizeof(e)) < 0 &&
						 strstr(e, "${NAME:-word}"));
	CHECK("expand: unclosed ${ refused", build_expand("${A", '\\', vars, NULL, &out, e, sizeof(e)) < 0);
	CHECK("expand: unclosed quote refused", build_expand("'abc", '\\', vars, NULL, &out, e, sizeof(e)) < 0);
}

static void check_forms(void)
{
	struct bfile f;
	char e[400];
	const char *df = "# syntax=docker/dockerfile:1\n"
			 "ARG BASE=deb\n"
			 "FROM $BASE AS build\n"
			 "# a comment\n"
			 "RUN apt-get update && \\\n"
			 "# a comment inside\n"
			 "    apt-get install -y x\n"
			 "RUN [\"/bin/echo\", \"hi\"]\n"
			 "COPY --chown=1:2 --chmod=0755 a b /dst/\n"
			 "env K1=v1 K2=\"two words\"\n"
			 "ENV OLD value with spaces\n"
			 "LABEL a.b=c\n"
			 "EXPOSE 80 443/tcp\n"
			 "WORKDIR /app\n"
			 "USER 1000:1000\n"
			 "SHELL [\"/bin/bash\", \"-c\"]\n"
			 "CMD python3 app.py\n"
			 "ENTRYPOINT [\"/entry\"]\n"
			 "STOPSIGNAL SIGTERM\n"
			 "FROM scratch\n"
			 "COPY --from=build /x /y\n";
	int rc = parse(df, &f, e, sizeof(e));
	CHECK("parse: a Dockerfile of every instruction", rc == 0 && f.n == 17);
	if (rc)
		printf("  %s\n", e);
	if (rc == 0 && f.n == 17) {
		CHECK("parse: global ARG", f.v[0].op == BS_ARG && !strcmp(f.v[0].args[0], "BASE") &&
						   !strcmp(f.v[0].args[1], "deb"));
		CHECK("parse: FROM AS", f.v[1].op == BS_FROM && !strcmp(f.v[1].args[0], "$BASE") &&
						!strcmp(f.v[1].from, "build") && f.v[1].line == 3);
		CHECK("parse: continuation, comment inside dropped",
		      f.v[2].op == BS_RUN && !f.v[2].exec && f.v[2].nargs == 1 &&
			      !strcmp(f.v[2].args[0], "apt-get update &&     apt-get install -y x") && f.v[2].line == 5);
		CHECK("parse: exec form", f.v[3].exec && f.v[3].nargs == 2 && !strcmp(f.v[3].args[1], "hi"));
		CHECK("parse: COPY flags and words", f.v[4].op == BS_COPY && !strcmp(f.v[4].chown, "1:2") &&
							     !strcmp(f.v[4].chmod, "0755") && f.v[4].nargs == 3 &&
							     !strcmp(f.v[4].args[2], "/dst/"));
		CHECK("parse: ENV pairs, lower case", f.v[5].op == BS_ENV && f.v[5].nargs == 4 &&
							       !strcmp(f.v[5].args[3], "\"two words\""));
		CHECK("parse: ENV legacy", f.v[6].nargs == 2 && !strcmp(f.v[6].args[1], "value with spaces"));
		CHECK("parse: EXPOSE words", f.v[8].op == BS_EXPOSE && f.v[8].nargs == 2);
		CHECK("parse: WORKDIR, USER", !strcmp(f.v[9].args[0], "/app") && !strcmp(f.v[10].args[0], "1000:1000"));
		CHECK("parse: SHELL, CMD shell, ENTRYPOINT exec",
		      f.v[11].exec && !f.v[12].exec && !strcmp(f.v[12].args[0], "python3 app.py") && f.v[13].exec);
		CHECK("parse: COPY --from", !strcmp(f.v[16].from, "build") && f.v[16].line == 21);
		CHECK("parse: text kept for the cache", !strcmp(f.v[8].text, "EXPOSE 80 443/tcp"));
	}
	build_file_free(&f);

	rc = parse("# escape=`\nFROM x\nRUN echo a `\n  b\nCOPY [\"a b\", \"/c\"]\n", &f, e, sizeof(e));
	CHECK("parse: escape=` directive", rc == 0 && f.n == 3 && f.escape == '`' &&
						   !strcmp(f.v[1].args[0], "echo a   b") && f.v[2].exec);
	build_file_free(&f);
	rc = parse("FROM x\n# escape=`\nRUN a \\\n b\n", &f, e, sizeof(e));
	CHECK("parse: a directive after an instruction is a comment", rc == 0 && f.escape == '\\' && f.n == 2);
	build_file_free(&f);

	rc = parse("FROM x\nRUN <<EOF\necho one\necho two\nEOF\nRUN python3 <<-END\n\tprint(1)\n\tEND\nUSER u\n", &f, e,
		   sizeof(e));
	CHECK("parse: heredocs", rc == 0 && f.n == 4 && !strcmp(f.v[1].args[0], "echo one\necho two\n") &&
					 !strcmp(f.v[2].args[0], "python3 <<-END\nprint(1)\nEND") && f.v[3].line == 9);
	if (rc)
		printf("  %s\n", e);
	build_file_free(&f);
	rc = parse("FROM x\nRUN [\"a\", 1]\n", &f, e, sizeof(e));
	CHECK("parse: not an array of strings: the shell form", rc == 0 && !f.v[1].exec);
	build_file_free(&f);
	rc = parse("FROM x\r\nRUN a\r\n", &f, e, sizeof(e));
	CHECK("parse: CRLF", rc == 0 && !strcmp(f.v[1].args[0], "a"));
	build_file_free(&f);
}

static bool refused(const char *df, const char *want)
{
	struct bfile f;
	char e[400] = "";
	int rc = build_parse(df, strlen(df), &f, e, sizeof(e));
	bool ok = rc < 0 && strstr(e, want);
	if (!ok)
		printf("  [%s]: rc %d, [%s]\n", df, rc, e);
	if (rc == 0)
		build_file_free(&f);
	return ok;
}

static void check_refusals(void)
{
	CHECK("refuse: ONBUILD, naming line and instruction",
	      refused("FROM x\nRUN a\nONBUILD RUN b\n", "line 3: ONBUILD: ward does not build"));
	CHECK("refuse: VOLUME", refused("FROM x\nVOLUME /data\n", "line 2: VOLUME"));
	CHECK("refuse: HEALTHCHECK", refused("FROM x\nHEALTHCHECK CMD true\n", "HEALTHCHECK"));
	CHECK("refuse: ADD from a URL", refused("FROM x\nADD https://e.x/f /f\n", "line 2: ADD: 'https://e.x/f'"));
	CHECK("refuse: RUN --mount", refused("FROM x\nRUN --mount=type=cache,target=/c true\n", "line 2: RUN: the flag"));
	CHECK("refuse: COPY --link", refused("FROM x\nCOPY --link a /b\n", "'--link'"));
	CHECK("refuse: COPY one word", refused("FROM x\nCOPY a\n", "one source and a destination"));
	CHECK("refuse: no FROM", refused("RUN a\n", "line 1: RUN: before the first FROM"));
	CHECK("refuse: empty", refused("# nothing\n", "no FROM"));
	CHECK("refuse: FROM --platform", refused("FROM --platform=linux/arm64 x\n", "the flag"));
	CHECK("refuse: bad substitution", refused("FROM x\nWORKDIR ${A?oops}\n", "line 2: WORKDIR:"));
	CHECK("refuse: SHELL not JSON", refused("FROM x\nSHELL bash -c\n", "JSON form"));
	CHECK("refuse: unended heredoc", refused("FROM x\nRUN <<EOF\necho\n", "never ended"));
	struct bfile f;
	char e[200];
	CHECK("refuse: a NUL byte", build_parse("FROM x\0\n", 8, &f, e, sizeof(e)) < 0 && strstr(e, "NUL"));
	CHECK("refuse: escape directive value", refused("# escape=x\nFROM x\n", "escape directive"));
	CHECK("refuse: ENV without =", refused("FROM x\nENV a=b c\n", "not NAME=VALUE"));
	CHECK("refuse: ARG bad name", refused("FROM x\nARG 1x\n", "not a variable name"));
	size_t big = BUILD_FILE_MAX + 1;
	char *t = malloc(big);
	if (t) {
		memset(t, '#', big);
		CHECK("refuse: over the file cap", build_parse(t, big, &f, e, sizeof(e)) < 0 && strstr(e, "at most"));
		free(t);
	}
	/* a million-line continuation is one line over 64 KiB: refused */
	size_t n = 200000;
	t = malloc(n * 3 + 16);
	if (t) {
		strcpy(t, "FROM x\nRUN ");
		size_t k = strlen(t);
		for (size_t i = 0; i < n; i++, k += 3)
			memcpy(t + k, "a\\\n", 3);
		CHECK("refuse: an instruction over 64 KiB", build_parse(t, k, &f, e, sizeof(e)) < 0 && strstr(e, "64 KiB"));
		free(t);
	}
}

void test_build(void)
{
	check_expand();
	check_forms();
	check_refusals();
}
