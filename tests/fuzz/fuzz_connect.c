/* libFuzzer target for E2B's Connect envelope and its JSON
 * (src/dialect/e2b/e2b_connect.c): a unary call's body, unwrapped
 * (cx_unwrap: 5 bytes of flags and length, then one JSON message), and its
 * "process" read as process.Start reads it (pcfg_read: cmd, args, envs,
 * cwd).  The first byte picks the body's form:
 *   even  the body as sent (an envelope)
 *   odd   the message alone, wrapped here (cx_frame), so that the fuzzer
 *         reaches the JSON without learning the length
 * A decoded process has a program, a NULL-terminated argv, environment
 * entries NAME=value with a name, and an absolute cwd.  Every "path" the
 * message names goes through e2b_map_path (the files API's paths) too.
 * e2b_connect.c is included for its static pcfg_read. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/e2b/e2b_connect.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *wrapped = NULL;
	size_t wlen = 0;
	const char *b = (const char *)data + 1;
	size_t n = size - 1;
	if (data[0] & 1) {
		if (!cx_frame(&wrapped, &wlen, 0, b, n))
			abort();
		b = wrapped, n = wlen;
	}
	char err[512];
	json_t *m = cx_unwrap(b, n, err, sizeof(err));
	free(wrapped);
	if (!m)
		return 0;
	json_t *proc = json_object_get(m, "process");
	struct pcfg *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	if (pcfg_read(proc, c, err, sizeof(err))) {
		if (!c->nargv || !c->argv[0] || !c->argv[0][0] || c->cwd[0] != '/')
			abort();
		for (size_t i = 0; i < c->nenv; i++) {
			const char *eq = strchr(c->env[i], '=');
			if (!eq || eq == c->env[i])
				abort();
		}
	}
	pcfg_free(c);
	free(c);
	const char *path = json_string_value(json_object_get(m, "path"));
	if (path) {
		char rel[4096];
		if (e2b_map_path(path, rel, sizeof(rel), err, sizeof(err)))
			for (const char *q = rel + (rel[0] == '/'); *q;) {
				size_t k = strcspn(q, "/");
				if (k == 0 || (k == 1 && q[0] == '.') || (k == 2 && q[0] == '.' && q[1] == '.'))
					abort(); /* a mapped path: no "", "." or ".." component */
				q += k;
				q += *q == '/';
			}
	}
	json_decref(m);
	return 0;
}
