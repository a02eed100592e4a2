/* dialect.h — a server and a request as a dialect's decoder sees them, for
 * the fuzz targets of Piston's and Judge0's (fuzz_piston.c, fuzz_judge0.c):
 * the shipped language table, every entry enabled; the runner's default
 * maxima and defaults; a request on api's listener holding body.  Nothing
 * runs: the decoders read the body and set an answer when they refuse. */
#ifndef WARD_FUZZ_DIALECT_H
#define WARD_FUZZ_DIALECT_H

#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "langs.h"
#include "server/server.h"

static struct server *fuzz_server(void)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	fuzz_langs_load(&s->langs);
	ward_maxima_init(&s->o.max);
	ward_defaults_under(&s->o.max, &s->o.defaults);
	s->o.judge0_max_runs = 20;
	s->o.piston_version_fallback = 1;
	return s;
}

/* A request of body's bytes (a copy, so that a read beyond them is seen). */
static struct req *fuzz_req(struct server *s, struct listener *ln, const void *body, size_t len)
{
	struct req *r = calloc(1, sizeof(*r));
	if (!r || !(r->body = malloc(len ? len : 1)))
		abort();
	memcpy(r->body, body, len);
	r->len = r->cap = len;
	r->srv = s;
	r->ln = ln;
	return r;
}

static void fuzz_req_free(struct req *r)
{
	free(r->body);
	free(r->resp);
	free(r);
}

#endif
