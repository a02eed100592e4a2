/* libFuzzer target for what the server makes of a request's head once
 * libmicrohttpd has split it (src/server/http.c, routes.c, auth.c,
 * session_api.c): the input is the method, a NUL, the URL (as MHD hands it
 * on: unescaped, a C string), a NUL, the X-Ward-Client header, a NUL, then
 * the token an Authorization: Bearer header carries.  It checks
 *   - the names the log and the quotas use (sanitize): printable, no quote
 *     or backslash, within their buffers;
 *   - the endpoint (route_find on the native table, route_find_in on
 *     Piston's and Judge0's): an {id} is 1..99 bytes without '/', a {pid}
 *     a number; a session file's {path} that path_ok lets through is
 *     relative, has no ".." component and no control byte;
 *   - the token (token_find over two loaded tokens): found exactly when the
 *     guess is one of their secrets.
 * http.c and session_api.c are included for their static functions. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/http.c"
#include "server/session_api.c"

extern const struct api piston_api, judge0_api;
static struct server *srv;

static void name_ok(const char *s, size_t cap)
{
	size_t n = strlen(s);
	if (n >= cap || n > 64)
		abort();
	for (; *s; s++)
		if ((unsigned char)*s <= 32 || (unsigned char)*s >= 127 || *s == '"' || *s == '\\')
			abort();
}

static void args_ok(const struct route *rt, const struct route_args *a)
{
	if (!rt)
		return;
	if (strstr(rt->path, "{id}")) {
		size_t k = strlen(a->sid);
		if (k == 0 || k >= sizeof(a->sid) || strchr(a->sid, '/'))
			abort();
	}
	if (strstr(rt->path, "{pid}") && a->pid < 0)
		abort();
	if (strstr(rt->path, "{path}")) {
		struct req *r = calloc(1, sizeof(*r));
		if (!r)
			abort();
		r->args = *a;
		if (path_ok(r, true)) {
			const char *p = r->args.fpath;
			if (p[0] == '/')
				abort();
			for (const char *c = p; *c;) {
				size_t k = strcspn(c, "/");
				if (k == 2 && c[0] == '.' && c[1] == '.')
					abort();
				c += k + (c[k] == '/');
			}
			for (const char *c = p; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f)
					abort();
		} else if (r->code != 400)
			abort();
		free(r->resp);
		free(r);
	}
}

static const char *field(const uint8_t **p, const uint8_t *end, char *buf, size_t n)
{
	size_t k = 0;
	while (*p < end && **p && k + 1 < n)
		buf[k++] = (char)*(*p)++;
	buf[k] = 0;
	if (*p < end)
		(*p)++;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!srv) {
		srv = calloc(1, sizeof(*srv));
		char path[] = "/tmp/ward-fuzz-tokens.XXXXXX";
		int fd = mkstemp(path);
		static const char toks[] = "alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n";
		if (!srv || fd < 0 || write(fd, toks, sizeof(toks) - 1) != (ssize_t)(sizeof(toks) - 1) ||
		    load_tokens(srv, path) < 0 || srv->ntokens != 2)
			abort();
		close(fd);
		unlink(path);
	}
	const uint8_t *p = data, *end = data + size;
	static char method[64], url[8192], sub[512], guess[512];
	field(&p, end, method, sizeof(method));
	field(&p, end, url, sizeof(url));
	field(&p, end, sub, sizeof(sub));
	field(&p, end, guess, sizeof(guess));

	char m[16], u[128], s[72];
	sanitize(m, sizeof(m), method);
	sanitize(u, sizeof(u), url);
	sanitize(s, sizeof(s), sub);
	name_ok(m, sizeof(m));
	name_ok(u, sizeof(u));
	name_ok(s, sizeof(s));

	struct route_args a;
	const char *allow;
	args_ok(route_find(url, method, &a, &allow), &a);
	args_ok(route_find_in(piston_api.routes, piston_api.nroutes, url, method, &a, &allow), &a);
	args_ok(route_find_in(judge0_api.routes, judge0_api.nroutes, url, method, &a, &allow), &a);

	const struct token *t = token_find(srv, guess);
	bool is = !strcmp(guess, "sekrit-alice-0123456789") || !strcmp(guess, "sekrit-bob-0123456789");
	if (is != (t != NULL) || (t && strcmp(t->secret, guess)))
		abort();
	return 0;
}
