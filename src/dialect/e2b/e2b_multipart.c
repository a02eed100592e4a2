/* e2b_multipart.c — a multipart/form-data body (RFC 7578), as E2B's SDK
 * uploads files: one part per file, name "file", filename the path.
 *
 * By hand rather than libmicrohttpd's post processor: the body is already
 * held whole (bounded by --max-body, read before any of it is used), the
 * parts must keep their filename with its directories, and an empty part
 * (an empty file) must still be a part; over a buffer the parser is short,
 * never copies data, and is bounded: at most max_parts parts, a part's
 * headers at most 8 KiB, every search within the body.  The unit tests
 * drive it with a mutation fuzzer (tests/unit/test_e2b.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dialect/e2b/e2b_int.h"

#define MAX_HEADERS 8192
#define MAX_BOUNDARY 70 /* RFC 2046 */

/* boundary=... of ctype (quoted or not) into b; false when none. */
static bool boundary_of(const char *ctype, char *b, size_t n)
{
	if (!ctype || strncasecmp(ctype, "multipart/form-data", 19) != 0)
		return false;
	const char *p = strcasestr(ctype, "boundary=");
	if (!p)
		return false;
	p += 9;
	size_t k;
	if (*p == '"') {
		p++;
		k = strcspn(p, "\"");
		if (p[k] != '"')
			return false;
	} else
		k = strcspn(p, "; \t");
	if (k == 0 || k > MAX_BOUNDARY || k >= n)
		return false;
	memcpy(b, p, k);
	b[k] = 0;
	return true;
}

/* The value of param (name or filename) in a Content-Disposition line
 * (within [h, end)): malloc'd, the quotes removed and FormData's escapes
 * (%22 %0D %0A) undone; NULL when absent. */
static char *disp_param(const char *h, const char *end, const char *param)
{
	size_t pl = strlen(param);
	for (const char *p = h; p + pl + 1 < end; p++) {
		if (strncasecmp(p, param, pl) != 0 || p[pl] != '=' || (p > h && p[-1] != ' ' && p[-1] != ';'))
			continue;
		const char *v = p + pl + 1, *ve;
		if (v < end && *v == '"') {
			v++;
			ve = v;
			while (ve < end && *ve != '"')
				ve += (*ve == '\\' && ve + 1 < end) ? 2 : 1;
			if (ve >= end)
				return NULL;
		} else {
			ve = v;
			while (ve < end && *ve != ';' && *ve != '\r')
				ve++;
		}
		char *out = malloc((size_t)(ve - v) + 1);
		if (!out)
			return NULL;
		size_t k = 0;
		for (const char *c = v; c < ve; c++) {
			if (*c == '%' && ve - c >= 3 && (!strncasecmp(c, "%22", 3) || !strncasecmp(c, "%0d", 3) ||
							 !strncasecmp(c, "%0a", 3))) {
				out[k++] = c[2] == '2' ? '"' : (c[2] == 'd' || c[2] == 'D') ? '\r' : '\n';
				c += 2;
			} else if (*c == '\\' && c + 1 < ve)
				out[k++] = *++c;
			else
				out[k++] = *c;
		}
		out[k] = 0;
		return out;
	}
	return NULL;
}

/* The Content-Disposition of a part's headers [h, end). */
static bool part_headers(const char *h, const char *end, struct mp_part *p)
{
	while (h < end) {
		const char *le = memmem(h, (size_t)(end - h), "\r\n", 2);
		if (!le)
			le = end;
		if (le - h > 20 && strncasecmp(h, "Content-Disposition:", 20) == 0) {
			/* a second one replaces the first (the fuzzer's find) */
			free(p->name);
			free(p->filename);
			p->name = disp_param(h + 20, le, "name");
			p->filename = disp_param(h + 20, le, "filename");
		}
		h = le + 2;
	}
	return p->name != NULL;
}

void mp_free(struct mp_part *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].name);
		free(p[i].filename);
	}
	free(p);
}

static int fail(char *err, size_t n, const char *msg)
{
	snprintf(err, n, "multipart body: %s", msg);
	return -1;
}

int mp_parse(const char *ctype, const char *body, size_t len, size_t max_parts, struct mp_part **parts, size_t *n,
	     char *err, size_t errlen)
{
	char b[MAX_BOUNDARY + 1], delim[MAX_BOUNDARY + 5];
	*parts = NULL;
	*n = 0;
	if (!boundary_of(ctype, b, sizeof(b)))
		return fail(err, errlen, "Content-Type is not multipart/form-data with a boundary (1 to 70 characters)");
	/* the first delimiter may open the body; the others follow a CRLF */
	int dl = snprintf(delim, sizeof(delim), "\r\n--%s", b);
	const char *end = body + len;
	const char *p;
	if (len >= (size_t)dl - 2 && memcmp(body, delim + 2, (size_t)dl - 2) == 0)
		p = body + dl - 2;
	else {
		p = memmem(body, len, delim, (size_t)dl);
		if (!p)
			return fail(err, errlen, "no boundary line");
		p += dl;
	}
	struct mp_part *v = calloc(max_parts ? max_parts : 1, sizeof(*v));
	if (!v)
		return fail(err, errlen, "out of memory");
	for (;;) {
		/* after a delimiter: "--" ends the body, else CRLF and a part */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			goto bad_delim;
		p += 2;
		if (*n == max_parts) {
			mp_free(v, *n);
			snprintf(err, errlen, "multipart body: more than %zu parts: send fewer files at once", max_parts);
			return -1;
		}
		size_t hl = (size_t)(end - p) < MAX_HEADERS ? (size_t)(end - p) : MAX_HEADERS;
		const char *he = memmem(p, hl, "\r\n\r\n", 4);
		const char *data;
		if (he)
			data = he + 4;
		else if (hl >= 2 && p[0] == '\r' && p[1] == '\n')
			he = p, data = p + 2; /* no headers at all */
		else {
			mp_free(v, *n);
			return fail(err, errlen, "a part's headers do not end (a blank line) within 8 KiB");
		}
		struct mp_part *part = &v[(*n)++];
		if (!part_headers(p, he, part)) {
			mp_free(v, *n);
			return fail(err, errlen, "a part has no Content-Disposition with a name");
		}
		const char *de = memmem(data, (size_t)(end - data), delim, (size_t)dl);
		if (!de) {
			mp_free(v, *n);
			return fail(err, errlen, "a part does not end with the boundary: the body was cut short");
		}
		part->data = data;
		part->len = (size_t)(de - data);
		p = de + dl;
	}
	*parts = v;
	return 0;
bad_delim:
	mp_free(v, *n);
	*n = 0;
	return fail(err, errlen, "a boundary line is followed by neither CRLF nor \"--\"");
}
