/* answer.c — a request's answer as its handler, the admission or a worker
 * sets it: the status code, the body and its type, the error message that
 * the log keeps.  http.c sends it.
 *
 * Owns r->code, r->resp, r->ctype and r->message.  Never sends anything,
 * takes no lock: the request belongs to one thread at a time. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "server/server.h"

void set_answer(struct req *r, unsigned code, char *body, const char *ctype)
{
	free(r->resp);
	r->code = code;
	r->resp = body;
	r->resp_len = 0;
	r->ctype = ctype;
}

/* An answer of bytes (a file), NULs and all. */
void set_answer_bytes(struct req *r, unsigned code, char *body, size_t len, const char *ctype)
{
	set_answer(r, code, body ? body : calloc(1, 1), ctype);
	r->resp_len = body ? len : 0;
}

void set_error(struct req *r, unsigned code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	/* a dialect's listener answers errors in its API's shape */
	if (r->ln && r->ln->api->error) {
		r->ln->api->error(r, code);
		return;
	}
	char *(*shape)(const char *) = r->ln && r->ln->api->error_json ? r->ln->api->error_json : ward_error_to_json;
	set_answer(r, code, shape(r->message), "application/json");
}
