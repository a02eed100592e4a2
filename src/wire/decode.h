/* decode.h — the checks every JSON decoder of ward's shares (implemented in
 * decode.c): a member that is absent or null counts as not given, each value
 * is checked for its type and shape, and a message names the offending
 * field ("files[2].mode: must be an integer from 0 to 4095").  The /exec
 * request (request_json.c) and the test job (src/testjob/testjob_json.c) are both
 * decoded with these, so the two formats can never drift apart on what a
 * limit, an env or a file's content looks like.
 *
 * Every function returning int gives 0, or -1 with the message in err. */
#ifndef WARD_WIRE_DECODE_H
#define WARD_WIRE_DECODE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"
#include "wire/wire.h"

/* Format the message into err and return -1. */

/* An empty decoded request, as every document starts: the request's
 * defaults, capture on, no stdin fd. */
void wire_request_doc_init(struct ward_request_doc *doc);
/* Parse a document: duplicate keys refused, NULs allowed in strings, depth
 * bounded by jansson.  NULL with "malformed JSON at line L, column C: ..."
 * in err. */
json_t *wire_load(const char *body, size_t len, char *err, size_t errlen);

/* The member key of o, or NULL when it is absent or null (clients written
 * in Python send None for "use the default"). */
json_t *wire_member(const json_t *o, const char *key);
/* The same, and "" counts as not given too: only for members where the
 * empty string cannot mean anything else (SPEC §5: workdir and command). */
json_t *wire_member_nonempty(const json_t *o, const char *key);

/* A C string borrowed from the document: refused when it holds a NUL
 * (documents are parsed with JSON_ALLOW_NUL so that file contents may). */
int wire_cstr(const json_t *v, const char *field, const char **out, char *err, size_t errlen);
/* A non-negative whole number no larger than max (an integral real too). */
int wire_uint(const json_t *v, const char *field, uint64_t max, uint64_t *out, char *err, size_t errlen);
/* Content with an encoding (NULL or "utf-8": the string's bytes; "base64").
 * *owned gets the decoded buffer when one was made. */
int wire_content(const json_t *v, const char *encoding, const char *field, const unsigned char **data, size_t *len,
                 unsigned char **owned, char *err, size_t errlen);

/* An array of strings (checked to be an array by the caller) as a
 * NULL-terminated, malloc'd array in *out of strings borrowed from the
 * document; elements are named "NAME[i]" in messages. */
int wire_string_array(const json_t *a, const char *name, char ***out, char *err, size_t errlen);
/* A file object's "encoding", "content" and "mode" (at most max_mode) into
 * wf; at names the object in messages ("files[3]"). */
int wire_decode_file_body(const json_t *f, const char *at, uint64_t max_mode, struct ward_file *wf,
                          unsigned char **owned, char *err, size_t errlen);
/* "env": {NAME: value} into doc->env and doc->req.env. */
int wire_decode_env(struct ward_request_doc *doc, const json_t *o, char *err, size_t errlen);
/* "limits": {...} into req->limits, named as in SPEC §5. */
int wire_decode_limits(struct ward_request *req, const json_t *o, char *err, size_t errlen);
/* root's "network" and "isolation" members, when given, into doc->req
 * (and doc->isolation_set). */
int wire_decode_network_isolation(struct ward_request_doc *doc, const json_t *root, char *err, size_t errlen);

#endif
