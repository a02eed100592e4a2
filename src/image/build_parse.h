/* build_parse.h — a Dockerfile, parsed (SPEC §19): text in, a list of
 * steps out, nothing else touched (build_parse.c; fuzzed by
 * tests/fuzz/fuzz_dockerfile.c).  The builder (build.c) expands the words
 * with build_expand as each step runs, with the stage's ARG and ENV values. */
#ifndef WARD_IMAGE_BUILD_PARSE_H
#define WARD_IMAGE_BUILD_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* The bounds of hostile input: bigger files or more steps are refused. */
#define BUILD_FILE_MAX (1u << 20)
#define BUILD_STEPS_MAX 4096

enum bstep_op {
	BS_FROM,
	BS_RUN,
	BS_COPY,
	BS_ADD,
	BS_ENV,
	BS_ARG,
	BS_WORKDIR,
	BS_USER,
	BS_CMD,
	BS_ENTRYPOINT,
	BS_LABEL,
	BS_EXPOSE,
	BS_SHELL,
	BS_STOPSIGNAL,
};

/* One instruction.  args by op:
 *   FROM         [image]; from = the stage's name (AS), or NULL
 *   RUN, CMD, ENTRYPOINT, SHELL
 *                exec (JSON) form: the strings; shell form: [command]
 *                (RUN's heredocs included, as sh takes them)
 *   COPY, ADD    the sources, then the destination (words, unexpanded);
 *                from (--from), chown (--chown), chmod (--chmod) or NULL
 *   ENV, LABEL   name, value, name, value... (values unexpanded)
 *   ARG          name, default (NULL when none), ...
 *   WORKDIR, USER, STOPSIGNAL   [the argument]
 *   EXPOSE       the ports (words) */
struct bstep {
	enum bstep_op op;
	unsigned line;
	char *text; /* "RUN apt-get ..." as written, continuations joined: the cache key and progress */
	bool exec;  /* the JSON form */
	char **args;
	size_t nargs;
	char *from, *chown, *chmod;
};

struct bfile {
	struct bstep *v;
	size_t n;
	char escape; /* '\\' or '`' (the escape= directive) */
};

/* Parses text (len bytes; NULs refused).  Anything outside ward's subset
 * (SPEC §19) is refused here, before any step runs: err names the line and
 * the instruction.  0, or -1 with err. */
int build_parse(const char *text, size_t len, struct bfile *out, char *err, size_t errlen);
void build_file_free(struct bfile *f);

/* A word expanded as Docker does: $NAME, ${NAME}, ${NAME:-word},
 * ${NAME:+word}; quotes removed ('...' literal, "..." expands); the escape
 * character makes the next one literal.  get returns a variable's value or
 * NULL (unset).  *out is malloc'd.  0, or -1 with err (bad syntax). */
typedef const char *(*build_lookup)(void *ctx, const char *name);
int build_expand(const char *word, char escape, build_lookup get, void *ctx, char **out, char *err, size_t errlen);

const char *build_op_name(enum bstep_op op);

#endif
