/* libFuzzer target for the Dockerfile parser (src/image/build_parse.c):
 * `make fuzz` builds build/fuzz_dockerfile with clang; run it with its seed
 * corpus, e.g.
 *     build/fuzz_dockerfile -max_total_time=60 tests/fuzz/corpus/dockerfile
 * Each input is a Dockerfile: parsed, and every word of every step expanded
 * as the builder would (with a variable set and one unset); a parse that
 * succeeds must give steps that hold together (a FROM first but for ARGs,
 * lines in order, the argument counts each instruction promises). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/build_parse.h"

static const char *get(void *ctx, const char *name)
{
	(void)ctx;
	return name[0] == 'A' ? "a$b\"c" : NULL;
}

static void expand_all(const struct bfile *f)
{
	for (size_t i = 0; i < f->n; i++)
		for (size_t k = 0; k < f->v[i].nargs; k++) {
			char *out = NULL, e[256];
			if (f->v[i].args[k] && build_expand(f->v[i].args[k], f->escape, get, NULL, &out, e, sizeof(e)) == 0)
				free(out);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bfile f;
	char err[512];
	if (build_parse((const char *)data, size, &f, err, sizeof(err)) < 0) {
		if (!err[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	unsigned last = 0;
	bool from = false;
	for (size_t i = 0; i < f.n; i++) {
		const struct bstep *s = &f.v[i];
		if (s->line < last || !s->text)
			abort();
		last = s->line;
		from |= s->op == BS_FROM;
		if (!from && s->op != BS_ARG)
			abort();
		if ((s->op == BS_COPY || s->op == BS_ADD) && s->nargs < 2)
			abort();
		if ((s->op == BS_ENV || s->op == BS_LABEL || s->op == BS_ARG) && s->nargs % 2)
			abort();
		if ((s->op == BS_FROM || s->op == BS_WORKDIR || s->op == BS_USER) && s->nargs != 1)
			abort();
	}
	expand_all(&f);
	build_file_free(&f);
	return 0;
}
