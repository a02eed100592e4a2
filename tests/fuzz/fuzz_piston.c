/* libFuzzer target for Piston's decoders (src/dialect/piston/piston.c,
 * semver.c): the first byte picks
 *   0  POST /api/v2/execute's body    decode_execute (files' base64, hex
 *                                     and names, limits, args, stdin)
 *   1  a version range                piston_semver_satisfies, against the
 *                                     first line as the version
 * A decoded job's files have paths, none absolute, none with a ".."
 * component; its limits lie within the runner's maxima.  piston.c is
 * included for its static decoder. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect.h"
#include "dialect/piston/piston.c"

static struct server *srv;
static struct listener ln = {.api = &piston_api};

static bool escapes(const char *p)
{
	if (!p || !*p || p[0] == '/')
		return true;
	for (const char *c = p; *c;) {
		size_t k = strcspn(c, "/");
		if (k == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += k;
		c += *c == '/';
	}
	return false;
}

static void execute(const char *b, size_t n)
{
	struct req *r = fuzz_req(srv, &ln, b, n);
	struct exec_doc *d = calloc(1, sizeof(*d));
	struct ward_judge_job job;
	struct ward_judge_test t;
	const struct ward_language *lang = NULL;
	char range[256];
	memset(&job, 0, sizeof(job));
	memset(&t, 0, sizeof(t));
	if (!d)
		abort();
	if (decode_execute(srv, r, d, &job, &t, &lang, range, sizeof(range))) {
		if (!lang || !job.nfiles || job.ntests != 1)
			abort();
		for (size_t i = 0; i < job.nfiles; i++)
			if (escapes(job.files[i].path) || (job.files[i].len && !job.files[i].data))
				abort();
		if (job.run_limits.l.timeout_s > srv->o.max.timeout_s ||
		    job.compile_limits.timeout_s > srv->o.max.timeout_s ||
		    job.run_limits.l.memory_mb > srv->o.max.memory_mb)
			abort(); /* a limit beyond the runner's maxima */
	} else if (r->code != 400 || !r->resp)
		abort(); /* a refusal is a 400 with Piston's message */
	exec_doc_free(d);
	free(d);
	fuzz_req_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!srv)
		srv = fuzz_server();
	if (size < 1)
		return 0;
	const char *b = (const char *)data + 1;
	size_t n = size - 1;
	if (data[0] % 2 == 0) {
		execute(b, n);
		return 0;
	}
	char *s = strndup(b, n), *nl = s ? strchr(s, '\n') : NULL;
	if (!s)
		abort();
	bool bad;
	if (nl) {
		*nl = 0;
		(void)piston_semver_satisfies(s, nl + 1, &bad);
	} else
		(void)piston_semver_satisfies("3.11.2", s, &bad);
	free(s);
	return 0;
}
