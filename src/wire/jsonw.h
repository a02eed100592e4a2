/* jsonw.h — JSON text written straight from C values, for the documents
 * whose size a sandboxed program decides: results and test reports carry
 * its output.
 *
 * jansson copies every string into a tree, then grows one buffer by
 * doubling while it escapes a code point at a time; for 200 MiB of \x01
 * (six bytes each on the wire) that was 2.9 GB of ward's memory and 20 s.
 * Here the text is produced once, in order: counted (to size one buffer
 * exactly), written into that buffer, or streamed to a descriptor through
 * a small one.  Memory is the document and nothing more; time is linear.
 * Strings are escaped as jansson escapes them, ill-formed UTF-8 replaced by
 * U+FFFD as utf8_sanitize() does, so the text is byte for byte what
 * json_dumps(..., JSON_COMPACT) gave. */
#ifndef WARD_JSONW_H
#define WARD_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jw {
	char *buf;   /* NULL: count only */
	size_t len;  /* bytes produced so far (into buf, or counted, or sent to fd) */
	size_t cap;  /* size of buf */
	size_t used; /* fd mode: bytes of buf not yet written */
	int fd;      /* >= 0: buf stages the text for fd */
	bool failed; /* buf too small (a bug), or a write to fd failed */
	bool more;   /* the object or array being written has a member already */
};

/* What writes one document; called once to count and once to write. */
typedef void jw_emit_fn(struct jw *w, const void *arg);

/* The document as a malloc'd, NUL-terminated string of exactly its
 * length (*len when len is non-NULL); NULL when out of memory. */
char *jw_build(jw_emit_fn *emit, const void *arg, size_t *len);
/* The document and a newline written to fd.  0, or -1 (errno set) when a
 * write failed. */
int jw_write_fd(jw_emit_fn *emit, const void *arg, int fd);

void jw_object_begin(struct jw *w);
void jw_object_end(struct jw *w);
void jw_array_begin(struct jw *w);
void jw_array_end(struct jw *w);
/* A member's key (plain ASCII, no escaping needed: ward's own names). */
void jw_key(struct jw *w, const char *key);
/* The separator before an array's element. */
void jw_element(struct jw *w);

/* Bytes as a JSON string: ill-formed UTF-8 becomes U+FFFD, NUL \u0000. */
void jw_string(struct jw *w, const char *data, size_t len);
void jw_cstring(struct jw *w, const char *s);
/* Bytes as a JSON string of their standard base64 (padded), encoded as it
 * is written: counted exactly like every other value, no copy made. */
void jw_base64(struct jw *w, const unsigned char *data, size_t len);
/* The result's "enforced" member (src/wire/json.c), for every object that
 * reports one (results, sessions). */
struct ward_enforced;
void jw_enforced(struct jw *w, const struct ward_enforced *e);
/* A result's "egress" and "egress_truncated" members (SPEC §13). */
struct ward_result;
void jw_egress(struct jw *w, const struct ward_result *r);
/* A result's members (SPEC §4), inside an object the caller opened (a
 * judge's compile: the result and its verdict; src/wire/json.c). */
void jw_result_members(struct jw *w, const struct ward_result *r);
/* A member and its value in one call: bytes (NULL data: the empty
 * string), a whole number, true or false. */
void jw_member_string(struct jw *w, const char *key, const char *data, size_t len);
void jw_member_int(struct jw *w, const char *key, int64_t v);
void jw_member_bool(struct jw *w, const char *key, bool v);
void jw_int(struct jw *w, int64_t v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* A real as jansson writes it with JSON_REAL_PRECISION(precision): %.*g,
 * with ".0" added when that reads as an integer. */
void jw_real(struct jw *w, double v, int precision);

#endif
