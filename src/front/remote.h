/* remote.h — the client side of ward serve (src/front/remote.c).  The entry
 * point, ward_remote_run(), is declared in frontends.h with the other
 * front ends; this header holds what the tests reach beneath it. */
#ifndef WARD_REMOTE_H
#define WARD_REMOTE_H

/* The /exec endpoint for a runner URL: "http://h:p" and "http://h:p/" give
 * "http://h:p/exec"; a URL already ending in /exec is kept.  malloc'd, or
 * NULL. */
char *remote_exec_url(const char *url);

/* A runner's base URL (trailing '/' dropped) and a path ("/sessions/ID/exec"):
 * malloc'd, or NULL. */
char *remote_url_join(const char *url, const char *path);

struct ward_request;
struct ward_result;
/* ward_remote_run at a given endpoint (a session's .../exec): the request
 * POSTed there (with only the limits in `limits`, 1 << LIM_x), its output
 * streamed live to req->stream_fd unless req->capture, the result into
 * res.  0, or -1 with res->error set. */
int remote_exec_at(const char *endpoint, const char *token, const struct ward_request *req, unsigned limits,
                   struct ward_result *res);

/* One HTTP call to a runner (src/front/session_cli.c's). */
#include <stddef.h>
struct remote_call {
	const char *url, *token;   /* the runner's base URL; token may be NULL */
	const char *method, *path; /* "POST", "/sessions" */
	const void *body;          /* NULL: none */
	size_t len;
	double timeout_s; /* the call's own time (plus 120 s) */
};
int remote_call(const struct remote_call *rc, long *code, char **answer, size_t *alen, char *err, size_t errlen);

/* Write all n bytes of p to fd (retrying short writes and EINTR); a
 * failed write drops the rest (the reader went away). */
void remote_write_all(int fd, const char *p, size_t n);

#endif
