/* egress_head.c — the egress proxy's request head (egress_head.h): every
 * byte here comes from the sandbox, so all of it is hostile; nothing is
 * read beyond the length given, and every field is checked before use. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "system/egress.h"
#include "system/egress_head.h"

/* host[:port] or [v6][:port] of an authority into host (no brackets) and
 * *port (dflt when absent).  false when malformed. */
bool egress_split_authority(const char *a, size_t n, unsigned dflt, char *host, size_t hostlen, unsigned *port)
{
	const char *end = a + n, *hs = a, *he;
	const char *colon;
	if (n && a[0] == '[') {
		he = memchr(a, ']', n);
		if (!he)
			return false;
		hs = a + 1;
		colon = he + 1 < end ? he + 1 : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		colon = memchr(a, ':', n);
		he = colon ? colon : end;
	}
	size_t hl = (size_t)(he - hs);
	if (hl == 0 || hl >= hostlen)
		return false;
	for (const char *c = hs; c < he; c++)
		if (*c <= ' ' || *c == '@' || *c == '/' || (unsigned char)*c >= 0x7f)
			return false;
	memcpy(host, hs, hl);
	host[hl] = 0;
	*port = dflt;
	if (colon) {
		if (colon + 1 >= end || end - colon - 1 > 5)
			return false;
		unsigned v = 0;
		for (const char *c = colon + 1; c < end; c++) {
			if (*c < '0' || *c > '9')
				return false;
			v = v * 10 + (unsigned)(*c - '0');
		}
		if (v == 0 || v > 65535)
			return false;
		*port = v;
	}
	return true;
}

/* A plain request's target: an absolute http:// URI (no user info) into
 * host, port and the origin-form path.  0, or 400. */
static int parse_absolute_uri(const char *t, size_t tl, struct head *h)
{
	if (tl < 8 || strncasecmp(t, "http://", 7) != 0)
		return 400; /* https:// goes through CONNECT; origin form is for servers */
	const char *auth = t + 7, *end = t + tl, *slash = memchr(auth, '/', tl - 7);
	const char *q = memchr(auth, '?', tl - 7);
	if (q && (!slash || q < slash))
		slash = q;
	size_t al = slash ? (size_t)(slash - auth) : tl - 7;
	if (!egress_split_authority(auth, al, 80, h->host, sizeof(h->host), &h->port))
		return 400;
	h->path = slash ? slash : "/";
	h->pathlen = slash ? (size_t)(end - slash) : 1;
	for (size_t i = 0; i < h->pathlen; i++)
		if ((unsigned char)h->path[i] <= ' ' || h->path[i] == 0x7f)
			return 400; /* a bare LF would end the rewritten request line early */
	return 0;
}

/* A plain request's fields, forwarded as they are: each "name: value",
 * the name a token, no bare CR or LF, no folded line.  Anything else a
 * lenient upstream could read as a second Host. */
static bool fields_ok(const char *l, const char *end)
{
	while (l < end) {
		const char *e = memmem(l, (size_t)(end - l), "\r\n", 2);
		const char *colon = memchr(l, ':', (size_t)(e - l));
		if (!colon || colon == l)
			return false;
		for (const char *c = l; c < colon; c++)
			if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || strchr("\"(),/;<=>?@[\\]{}", *c))
				return false;
		for (const char *c = colon + 1; c < e; c++)
			if (*c == '\r' || *c == '\n' || *c == 0)
				return false;
		l = e + 2;
	}
	return true;
}

/* The request line of c2u's head: METHOD SP TARGET SP HTTP/1.x.  0 (the
 * head is complete when h->head_len is set), or an HTTP status to answer. */
int egress_parse_head(const char *b, size_t len, struct head *h)
{
	const char *end = memmem(b, len, "\r\n\r\n", 4);
	if (!end)
		return len >= EGRESS_HEAD_MAX ? 431 : 0;
	h->head_len = (size_t)(end - b) + 4;
	const char *eol = memmem(b, h->head_len, "\r\n", 2);
	const char *sp1 = memchr(b, ' ', (size_t)(eol - b));
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == b || (size_t)(sp1 - b) >= sizeof(h->method) ||
	    (size_t)(eol - sp2 - 1) >= sizeof(h->version))
		return 400;
	memcpy(h->method, b, (size_t)(sp1 - b));
	h->method[sp1 - b] = 0;
	for (const char *c = h->method; *c; c++)
		if (*c < 'A' || *c > 'Z')
			return 400;
	memcpy(h->version, sp2 + 1, (size_t)(eol - sp2 - 1));
	h->version[eol - sp2 - 1] = 0;
	if (strcmp(h->version, "HTTP/1.1") != 0 && strcmp(h->version, "HTTP/1.0") != 0)
		return 400;
	h->fields = eol + 2;
	h->connect = strcmp(h->method, "CONNECT") == 0;
	if (h->connect)
		return egress_split_authority(sp1 + 1, (size_t)(sp2 - sp1 - 1), 0, h->host, sizeof(h->host),
		                              &h->port) &&
		                       h->port
		               ? 0
		               : 400;
	if (!fields_ok(h->fields, b + h->head_len - 2))
		return 400;
	return parse_absolute_uri(sp1 + 1, (size_t)(sp2 - sp1 - 1), h);
}

static bool drop_field(const char *line, size_t n)
{
	static const char *const drop[] = {
		"host:", "connection:", "proxy-connection:", "keep-alive:", "proxy-authorization:"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		size_t k = strlen(drop[i]);
		if (n >= k && strncasecmp(line, drop[i], k) == 0)
			return true;
	}
	return false;
}

/* A plain request's head in origin form, into out (EGRESS_BUF).  Its
 * length, or 0 when it does not fit. */
size_t egress_rewrite_head(const char *b, const struct head *h, const char *authority, char *out)
{
	size_t o = 0;
	int n = snprintf(out, EGRESS_BUF, "%s %.*s %s\r\n", h->method, (int)h->pathlen, h->path, h->version);
	if (n < 0 || n >= EGRESS_BUF)
		return 0;
	o = (size_t)n;
	const char *end = b + h->head_len - 2; /* the blank line's CRLF */
	for (const char *l = h->fields; l < end;) {
		const char *e = memmem(l, (size_t)(end - l), "\r\n", 2);
		size_t ll = (size_t)(e - l) + 2;
		if (!drop_field(l, ll)) {
			if (o + ll >= EGRESS_BUF)
				return 0;
			memcpy(out + o, l, ll);
			o += ll;
		}
		l = e + 2;
	}
	n = snprintf(out + o, EGRESS_BUF - o, "Host: %s\r\nConnection: close\r\n\r\n", authority);
	if (n < 0 || (size_t)n >= EGRESS_BUF - o)
		return 0;
	return o + (size_t)n;
}
