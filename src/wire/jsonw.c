/* jsonw.c — JSON text written straight from C values (see jsonw.h).  Owns
 * the escaping and the two passes (count, then write); never builds a tree
 * and never holds more than the document (to an fd, a small staging
 * buffer).  Knows no ward type: the documents are json.c's and
 * testjob_json.c's. */
#include "wire/jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/utf8.h"

#define JW_STAGE (64u << 10) /* the staging buffer of a document streamed to an fd */

static bool jw_flush(struct jw *w)
{
	size_t off = 0;
	while (off < w->used) {
		ssize_t n = write(w->fd, w->buf + off, w->used - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->failed = true;
			return false;
		}
		off += (size_t)n;
	}
	w->used = 0;
	return true;
}

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	w->len += n;
	if (!w->buf || w->failed)
		return;
	if (w->fd < 0) {
		/* the buffer was sized by counting this same document */
		if (w->len > w->cap) {
			w->failed = true;
			return;
		}
		memcpy(w->buf + w->len - n, s, n);
		return;
	}
	while (n) {
		if (w->used == w->cap && !jw_flush(w))
			return;
		size_t k = w->cap - w->used < n ? w->cap - w->used : n;
		memcpy(w->buf + w->used, s, k);
		w->used += k;
		s += k;
		n -= k;
	}
}

char *jw_build(jw_emit_fn *emit, const void *arg, size_t *len)
{
	struct jw w = {.fd = -1};
	emit(&w, arg);
	size_t n = w.len;
	char *buf = malloc(n + 1);
	if (!buf)
		return NULL;
	w = (struct jw){.buf = buf, .cap = n, .fd = -1};
	emit(&w, arg);
	if (w.failed || w.len != n) { /* emit wrote something else the second time: a bug */
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

int jw_write_fd(jw_emit_fn *emit, const void *arg, int fd)
{
	struct jw w = {.buf = malloc(JW_STAGE), .cap = JW_STAGE, .fd = fd};
	if (!w.buf)
		return -1;
	emit(&w, arg);
	jw_raw(&w, "\n", 1);
	bool ok = !w.failed && jw_flush(&w);
	int saved = errno;
	free(w.buf);
	errno = saved;
	return ok ? 0 : -1;
}

static void jw_separate(struct jw *w)
{
	if (w->more)
		jw_raw(w, ",", 1);
	w->more = true;
}

void jw_object_begin(struct jw *w)
{
	jw_raw(w, "{", 1);
	w->more = false;
}

void jw_object_end(struct jw *w)
{
	jw_raw(w, "}", 1);
	w->more = true; /* the enclosing object or array has this member now */
}

void jw_array_begin(struct jw *w)
{
	jw_raw(w, "[", 1);
	w->more = false;
}

void jw_array_end(struct jw *w)
{
	jw_raw(w, "]", 1);
	w->more = true;
}

void jw_key(struct jw *w, const char *key)
{
	jw_separate(w);
	jw_raw(w, "\"", 1);
	jw_raw(w, key, strlen(key));
	jw_raw(w, "\":", 2);
}

void jw_element(struct jw *w)
{
	jw_separate(w);
}

/* The escape of an ASCII byte that needs one (the set jansson escapes
 * without flags), into out[6]; its length. */
static size_t escape_ascii(unsigned char c, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *named = NULL;
	switch (c) {
	case '"':
		named = "\\\"";
		break;
	case '\\':
		named = "\\\\";
		break;
	case '\b':
		named = "\\b";
		break;
	case '\f':
		named = "\\f";
		break;
	case '\n':
		named = "\\n";
		break;
	case '\r':
		named = "\\r";
		break;
	case '\t':
		named = "\\t";
		break;
	}
	if (named) {
		memcpy(out, named, 2);
		return 2;
	}
	memcpy(out, "\\u00", 4);
	out[4] = hex[c >> 4];
	out[5] = hex[c & 15];
	return 6;
}

void jw_string(struct jw *w, const char *data, size_t len)
{
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0, run = 0; /* s[run..i) goes out as it is */
	jw_raw(w, "\"", 1);
	while (i < len) {
		unsigned char c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		size_t k = c >= 0x80 ? utf8_seq_len(s + i, len - i) : 0;
		if (k) {
			i += k;
			continue;
		}
		jw_raw(w, data + run, i - run);
		char esc[6];
		if (c < 0x80)
			jw_raw(w, esc, escape_ascii(c, esc));
		else
			jw_raw(w, "\xEF\xBF\xBD", 3); /* one U+FFFD per ill-formed byte, as utf8_sanitize */
		run = ++i;
	}
	jw_raw(w, data + run, i - run);
	jw_raw(w, "\"", 1);
}

void jw_base64(struct jw *w, const unsigned char *data, size_t len)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char chunk[4096]; /* a multiple of 4 */
	size_t n = 0;
	jw_raw(w, "\"", 1);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < len ? (uint32_t)data[i + 1] << 8 : 0) |
		             (i + 2 < len ? data[i + 2] : 0);
		chunk[n++] = abc[v >> 18 & 63];
		chunk[n++] = abc[v >> 12 & 63];
		chunk[n++] = i + 1 < len ? abc[v >> 6 & 63] : '=';
		chunk[n++] = i + 2 < len ? abc[v & 63] : '=';
		if (n == sizeof(chunk)) {
			jw_raw(w, chunk, n);
			n = 0;
		}
	}
	jw_raw(w, chunk, n);
	jw_raw(w, "\"", 1);
}

void jw_cstring(struct jw *w, const char *s)
{
	jw_string(w, s ? s : "", s ? strlen(s) : 0);
}

void jw_member_string(struct jw *w, const char *key, const char *data, size_t len)
{
	jw_key(w, key);
	jw_string(w, data ? data : "", data ? len : 0);
}

void jw_member_int(struct jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_member_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

void jw_int(struct jw *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRId64, v);
	jw_raw(w, b, (size_t)n);
}

void jw_bool(struct jw *w, bool v)
{
	jw_raw(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w)
{
	jw_raw(w, "null", 4);
}

void jw_real(struct jw *w, double v, int precision)
{
	char b[48];
	int n = snprintf(b, sizeof(b) - 2, "%.*g", precision, v);
	if (n < 0 || (size_t)n >= sizeof(b) - 2) {
		jw_null(w);
		return;
	}
	/* a dot or an exponent, so that it reads back as a real */
	if (!strchr(b, '.') && !strchr(b, 'e')) {
		memcpy(b + n, ".0", 3);
		n += 2;
	}
	/* "1e+05" -> "1e5", "1e-05" -> "1e-5" */
	char *e = strchr(b, 'e');
	if (e) {
		char *from = e + 1, *to = e + 1;
		if (*from == '+')
			from++;
		else if (*from == '-')
			from = ++to;
		while (*from == '0' && from[1])
			from++;
		memmove(to, from, strlen(from) + 1);
		n = (int)strlen(b);
	}
	jw_raw(w, b, (size_t)n);
}
