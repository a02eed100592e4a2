/* e2b_multipart.c — a multipart/form-data body (RFC 7578), as E2B's SDK
 * uploads files: one part per file, name "file", filename the path.
 *
 * By hand rather than libmicrohttpd's post processor: the parts must keep
 * their filename with its directories, and an empty part (an empty file)
 * must still be a part.  One parser, fed the body as it comes (POST /files
 * streams into the sandbox: mp_stream), or whole (mp_parse, the parts
 * pointing into it); bounded: at most max_parts parts, a part's headers
 * (and what precedes the first delimiter) at most 8 KiB, a part's data
 * matched against the delimiter without a copy.  The unit tests drive it
 * with a mutation fuzzer, whole and in random pieces (tests/unit/test_e2b.c). */
#define _GNU_SOURCE
#include <stdint.h>
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
			if (*c == '%' && ve - c >= 3 &&
			    (!strncasecmp(c, "%22", 3) || !strncasecmp(c, "%0d", 3) || !strncasecmp(c, "%0a", 3))) {
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

/* ---- the same body as it comes (an upload never held whole) ----
 *
 * Headers (and what comes before the first delimiter, and after each) are
 * gathered in hbuf, at most MAX_HEADERS; a part's data is matched against
 * the delimiter byte by byte (Knuth-Morris-Pratt: a delimiter split across
 * pieces is found, and the bytes held while it might be one are a prefix
 * of it, so nothing is buffered), and handed on in runs as it comes. */

enum { MS_PRE, MS_AFTER, MS_HEADERS, MS_DATA, MS_DONE };

struct mp_stream {
	struct mp_sink sink;
	char delim[MAX_BOUNDARY + 5];
	size_t dl;
	size_t pi[MAX_BOUNDARY + 5]; /* the delimiter's prefix function */
	size_t m;                    /* delimiter bytes matched (held) in MS_DATA */
	int state;
	size_t nparts, max_parts;
	char hbuf[MAX_HEADERS];
	size_t hlen;
	uint64_t fed;     /* bytes fed so far */
	uint64_t end_off; /* at a part's end: where its delimiter ended (mp_parse) */
};

struct mp_stream *mp_stream_new(const char *ctype, size_t max_parts, const struct mp_sink *sink, char *err,
                                size_t errlen)
{
	char b[MAX_BOUNDARY + 1];
	if (!boundary_of(ctype, b, sizeof(b))) {
		fail(err, errlen, "Content-Type is not multipart/form-data with a boundary (1 to 70 characters)");
		return NULL;
	}
	struct mp_stream *m = calloc(1, sizeof(*m));
	if (!m) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	m->sink = *sink;
	m->max_parts = max_parts;
	m->dl = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%s", b);
	for (size_t i = 1, k = 0; i < m->dl; i++) {
		while (k && m->delim[i] != m->delim[k])
			k = m->pi[k - 1];
		if (m->delim[i] == m->delim[k])
			k++;
		m->pi[i] = k;
	}
	return m;
}

void mp_stream_free(struct mp_stream *m)
{
	free(m);
}

static void hbuf_drop(struct mp_stream *m, size_t k)
{
	memmove(m->hbuf, m->hbuf + k, m->hlen - k);
	m->hlen -= k;
}

/* A step of the states but data, over hbuf: 1 when it moved on, 0 when
 * it needs more bytes, -1 on a malformed body. */
static int ms_step(struct mp_stream *m, char *err, size_t errlen)
{
	if (m->state == MS_PRE) {
		/* the first delimiter may open the body; the others follow a CRLF */
		if (m->hlen >= m->dl - 2 && memcmp(m->hbuf, m->delim + 2, m->dl - 2) == 0) {
			hbuf_drop(m, m->dl - 2);
			m->state = MS_AFTER;
			return 1;
		}
		const char *p = memmem(m->hbuf, m->hlen, m->delim, m->dl);
		if (p) {
			hbuf_drop(m, (size_t)(p - m->hbuf) + m->dl);
			m->state = MS_AFTER;
			return 1;
		}
		return m->hlen == sizeof(m->hbuf) ? fail(err, errlen, "no boundary line") : 0;
	}
	if (m->state == MS_AFTER) {
		/* "--" ends the body, else CRLF and a part */
		size_t i = 0;
		if (m->hlen >= 2 && m->hbuf[0] == '-' && m->hbuf[1] == '-') {
			m->state = MS_DONE;
			return 1;
		}
		while (i < m->hlen && (m->hbuf[i] == ' ' || m->hbuf[i] == '\t'))
			i++;
		if (m->hlen - i < 2)
			return m->hlen == sizeof(m->hbuf) ? fail(err, errlen, "a boundary line does not end") : 0;
		if (m->hbuf[i] != '\r' || m->hbuf[i + 1] != '\n')
			return fail(err, errlen, "a boundary line is followed by neither CRLF nor \"--\"");
		if (m->nparts == m->max_parts) {
			snprintf(err, errlen, "multipart body: more than %zu parts: send fewer files at once",
			         m->max_parts);
			return -1;
		}
		hbuf_drop(m, i + 2);
		m->state = MS_HEADERS;
		return 1;
	}
	/* MS_HEADERS */
	const char *he = memmem(m->hbuf, m->hlen, "\r\n\r\n", 4);
	if (!he)
		return m->hlen == sizeof(m->hbuf)
		               ? fail(err, errlen, "a part's headers do not end (a blank line) within 8 KiB")
		               : 0;
	struct mp_part part = {0};
	bool named = part_headers(m->hbuf, he, &part);
	int rc = named ? m->sink.part(m->sink.arg, part.name, part.filename) : -1;
	free(part.name);
	free(part.filename);
	if (!named)
		return fail(err, errlen, "a part has no Content-Disposition with a name");
	if (rc < 0)
		return -1; /* the sink says why */
	m->nparts++;
	hbuf_drop(m, (size_t)(he - m->hbuf) + 4);
	m->state = MS_DATA;
	m->m = 0;
	return 1;
}

/* Data bytes of p (at offset base of the body) until the delimiter: how
 * many were taken (through the delimiter, which ends the part), or -1 when
 * the sink stops. */
static ssize_t ms_data(struct mp_stream *m, const char *p, size_t n, uint64_t base)
{
	size_t run = 0; /* p[run, i) is data not yet handed on */
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (m->m == 0 && c != m->delim[0])
			continue; /* the common case: plain data */
		if (m->m == 0 && i > run && m->sink.data(m->sink.arg, p + run, i - run) < 0)
			return -1;
		while (m->m && c != m->delim[m->m]) {
			/* the held bytes but the longest prefix of the delimiter they end in are data */
			size_t keep = m->pi[m->m - 1];
			if (m->sink.data(m->sink.arg, m->delim, m->m - keep) < 0)
				return -1;
			m->m = keep;
		}
		if (c == m->delim[m->m])
			m->m++;
		run = i + 1;
		if (m->m == 0) {
			run = i; /* c is data: a run begins here */
			continue;
		}
		if (m->m == m->dl) {
			m->m = 0;
			m->state = MS_AFTER;
			m->end_off = base + i + 1;
			return m->sink.end(m->sink.arg) < 0 ? -1 : (ssize_t)(i + 1);
		}
	}
	if (m->m == 0 && n > run && m->sink.data(m->sink.arg, p + run, n - run) < 0)
		return -1;
	return (ssize_t)n;
}

int mp_stream_feed(struct mp_stream *m, const char *p, size_t n, char *err, size_t errlen)
{
	m->fed += n;
	for (;;) {
		if (m->state == MS_DONE)
			return 0; /* the epilogue is ignored */
		if (m->state == MS_DATA && m->hlen) {
			/* what came after a part's headers in the same piece */
			char tmp[MAX_HEADERS];
			size_t k = m->hlen;
			memcpy(tmp, m->hbuf, k);
			m->hlen = 0;
			ssize_t used = ms_data(m, tmp, k, m->fed - n - k); /* hbuf's bytes came just before p's */
			if (used < 0)
				return -1;
			memcpy(m->hbuf, tmp + used, k - (size_t)used);
			m->hlen = k - (size_t)used;
			continue;
		}
		if (m->state == MS_DATA) {
			if (!n)
				return 0;
			ssize_t used = ms_data(m, p, n, m->fed - n);
			if (used < 0)
				return -1;
			p += used;
			n -= (size_t)used;
			continue;
		}
		int r = ms_step(m, err, errlen);
		if (r < 0)
			return -1;
		if (r)
			continue;
		if (!n)
			return 0;
		size_t k = sizeof(m->hbuf) - m->hlen < n ? sizeof(m->hbuf) - m->hlen : n;
		memcpy(m->hbuf + m->hlen, p, k);
		m->hlen += k;
		p += k;
		n -= k;
	}
}

int mp_stream_finish(struct mp_stream *m, char *err, size_t errlen)
{
	if (m->state == MS_DONE)
		return 0;
	if (m->state == MS_DATA)
		return fail(err, errlen, "a part does not end with the boundary: the body was cut short");
	return fail(err, errlen,
	            m->state == MS_PRE ? "no boundary line" : "the body ends without its last boundary (\"--\")");
}

/* ---- a body held whole: the same parser, the parts pointing into it ---- */

struct collect {
	struct mp_stream *m;
	const char *body;
	struct mp_part *v;
	size_t n, max;
	size_t len; /* the current part's data so far */
};

static int co_part(void *arg, const char *name, const char *filename)
{
	struct collect *c = arg;
	struct mp_part *p = &c->v[c->n++]; /* mp_stream keeps to max_parts */
	p->name = strdup(name);
	p->filename = filename ? strdup(filename) : NULL;
	c->len = 0;
	return p->name && (!filename || p->filename) ? 0 : -1;
}

static int co_data(void *arg, const char *p, size_t n)
{
	(void)p;
	((struct collect *)arg)->len += n;
	return 0;
}

static int co_end(void *arg)
{
	struct collect *c = arg;
	struct mp_part *p = &c->v[c->n - 1];
	p->len = c->len;
	p->data = c->body + (c->m->end_off - c->m->dl - c->len);
	return 0;
}

int mp_parse(const char *ctype, const char *body, size_t len, size_t max_parts, struct mp_part **parts, size_t *n,
             char *err, size_t errlen)
{
	*parts = NULL;
	*n = 0;
	if (errlen)
		err[0] = 0;
	struct collect c = {.body = body, .max = max_parts};
	c.v = calloc(max_parts ? max_parts : 1, sizeof(*c.v));
	if (!c.v)
		return fail(err, errlen, "out of memory");
	const struct mp_sink sink = {co_part, co_data, co_end, &c};
	c.m = mp_stream_new(ctype, max_parts, &sink, err, errlen);
	int rc = c.m && mp_stream_feed(c.m, body, len, err, errlen) == 0 && mp_stream_finish(c.m, err, errlen) == 0
	                 ? 0
	                 : -1;
	if (rc < 0 && c.m && !err[0])
		fail(err, errlen, "out of memory");
	mp_stream_free(c.m);
	if (rc < 0) {
		mp_free(c.v, c.n);
		return -1;
	}
	*parts = c.v;
	*n = c.n;
	return 0;
}
