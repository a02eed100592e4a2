/* libFuzzer target for Judge0's decoders (src/dialect/judge0/judge0.c):
 * the input is a flags byte, a "fields" query value, a NUL, then a POST
 * /submissions (or /submissions/batch) body.  Flags: bit 0 is
 * base64_encoded=true.  The body is loaded as run_create and run_batch
 * load it; each submission (the body, or each of its "submissions") is
 * decoded (j0_decode_sub: numbers, base64, texts, limits, the zip's size)
 * and, when the fields pass j0_fields_ok, answered as GET
 * /submissions/{token} answers it (j0_sub_json, its size bounded by
 * j0_sub_json_bound).  A refused submission has its 422; a decoded one's
 * limits lie within Judge0's bounds.  The lenient base64 decoder is fed the
 * whole input too.  judge0.c is included for its static body loader. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect.h"
#include "dialect/judge0/judge0.c"

static struct server *srv;
static struct j0 jst;
static struct listener ln = {.api = &judge0_api, .state = &jst};

static void one(struct req *r, json_t *o, bool b64, const char *fields)
{
	free(r->resp);
	r->resp = NULL;
	r->code = 0;
	struct j0_sub *x = j0_decode_sub(r, &jst, o, b64);
	if (!x) {
		if (r->code != 422 && r->code != 500)
			abort(); /* a refusal says why, in Judge0's shape */
		return;
	}
	if (!x->lang || !(x->cpu_time_limit >= 0 && x->cpu_time_limit <= jst.lim.cpu_max) ||
	    !(x->wall_time_limit > 0 && x->wall_time_limit <= jst.lim.wall_max) || x->memory_limit < 2048 ||
	    x->memory_limit > jst.lim.memory_max || x->runs < 1 || x->runs > srv->o.judge0_max_runs)
		abort(); /* a limit out of Judge0's bounds, lowered to the runner's maxima */
	if (j0_fields_ok(r, fields) && j0_sub_answerable(x, fields, b64)) {
		size_t n = 0;
		char *t = j0_sub_text(x, fields, b64, &n);
		json_t *back = t ? json_loads(t, 0, NULL) : NULL;
		if (t && (strlen(t) != n || !json_is_object(back)))
			abort(); /* the answer is one JSON object of the length counted */
		json_decref(back);
		free(t);
	}
	j0_sub_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!srv) {
		srv = fuzz_server();
		jst.s = srv;
		j0_limits_init(&jst);
	}
	size_t n64;
	free(judge0_b64_lenient((const char *)data, size, &n64));
	if (size < 1)
		return 0;
	bool b64 = data[0] & 1;
	const char *rest = (const char *)data + 1;
	size_t rn = size - 1;
	const char *nul = memchr(rest, 0, rn);
	char *fields = NULL;
	if (nul) {
		fields = strndup(rest, (size_t)(nul - rest));
		rn -= (size_t)(nul - rest) + 1;
		rest = nul + 1;
	}
	struct req *r = fuzz_req(srv, &ln, rest, rn);
	json_t *o = load(r);
	if (o) {
		json_t *batch = json_object_get(o, "submissions"), *v;
		size_t i;
		if (json_is_array(batch))
			json_array_foreach(batch, i, v)
			{
				if (i == 20)
					break;
				one(r, v, b64, fields);
			}
		else
			one(r, o, b64, fields);
		json_decref(o);
	}
	free(fields);
	fuzz_req_free(r);
	return 0;
}
