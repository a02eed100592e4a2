/* langs.h — the shipped language table (languages.json at the tree's top,
 * where tests/fuzz/run.sh runs the targets; $WARD_LANGUAGES first) for the
 * fuzz targets whose decoders look a language up: every entry enabled, as a
 * runner's probe would leave them, so that the decoders get past the
 * lookup.  Aborts when the table cannot be read: a target without it would
 * fuzz only the refusal. */
#ifndef WARD_FUZZ_LANGS_H
#define WARD_FUZZ_LANGS_H

#include <stdio.h>
#include <stdlib.h>

#include "ward_judge.h"

static void fuzz_langs_load(struct ward_languages *t)
{
	const char *path = getenv("WARD_LANGUAGES") ? getenv("WARD_LANGUAGES") : "languages.json";
	char err[512];
	if (ward_languages_load(path, t, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: %s: %s (run from the tree's top, or set WARD_LANGUAGES)\n", path, err);
		abort();
	}
	for (size_t i = 0; i < t->n; i++)
		t->v[i].enabled = true;
}

#endif
