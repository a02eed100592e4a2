/* routes.c — the routing table: which path is which endpoint, with its
 * method and handlers (struct route, server.h).  The one place an endpoint
 * is added.  A path is an exact string or a pattern whose parts {id} (a
 * session id), {pid} (a number) and {path} (the rest) are handed to the
 * handler in struct route_args.
 *
 * Owns nothing mutable.  Never decides anything about a request but which
 * endpoint it names: http.c checks the token, the handlers do the rest.
 * A dialect's listener (listeners.c) has a table of its own, matched the
 * same way (route_find_in). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define SESSION_ROUTE(p, m, al, ...)                             \
	{                                                        \
		.path = p, .method = m, .allow = al, __VA_ARGS__ \
	}
static const struct route routes[] = {
	{.path = "/health", .method = "GET", .allow = "GET, HEAD", .open = true, .answer = answer_health},
	{.path = "/exec", .method = "POST", .allow = "POST", .streams = true, .prepare = prepare_exec, .run = run_exec},
	{.path = "/test", .method = "POST", .allow = "POST", .streams = true, .run = run_test},
	{.path = "/judge", .method = "POST", .allow = "POST", .streams = true, .run = run_judge},
	{.path = "/languages", .method = "GET", .allow = "GET, HEAD", .answer = answer_languages},
	{.path = "/metrics", .method = "GET", .allow = "GET, HEAD", .answer = answer_metrics},
	SESSION_ROUTE("/sessions", "POST", "GET, HEAD, POST", .prepare = prepare_session_new, .run = run_session_new),
	SESSION_ROUTE("/sessions", "GET", "GET, HEAD, POST", .answer = answer_session_list),
	SESSION_ROUTE("/sessions/{id}", "GET", "GET, HEAD, DELETE", .prepare = prepare_session,
                      .run = run_session_info),
	SESSION_ROUTE("/sessions/{id}", "DELETE", "GET, HEAD, DELETE", .prepare = prepare_session,
                      .run = run_session_delete),
	SESSION_ROUTE("/sessions/{id}/exec", "POST", "POST", .streams = true, .prepare = prepare_session_exec,
                      .run = run_session_exec),
	SESSION_ROUTE("/sessions/{id}/files{path}", "GET", "GET, HEAD, PUT, DELETE", .prepare = prepare_session_file,
                      .run = run_session_get_file),
	SESSION_ROUTE("/sessions/{id}/files{path}", "PUT", "GET, HEAD, PUT, DELETE", .raw = true,
                      .prepare = prepare_session_file, .run = run_session_put_file),
	SESSION_ROUTE("/sessions/{id}/files{path}", "DELETE", "GET, HEAD, PUT, DELETE", .prepare = prepare_session_file,
                      .run = run_session_rm_file),
	SESSION_ROUTE("/sessions/{id}/pause", "POST", "POST", .prepare = prepare_session_pause,
                      .run = run_session_pause),
	SESSION_ROUTE("/sessions/{id}/resume", "POST", "POST", .prepare = prepare_session, .run = run_session_resume),
	SESSION_ROUTE("/sessions/{id}/fork", "POST", "POST", .prepare = prepare_session_fork, .run = run_session_fork),
	SESSION_ROUTE("/sessions/{id}/processes", "GET", "GET, HEAD", .prepare = prepare_session,
                      .run = run_session_procs),
	SESSION_ROUTE("/sessions/{id}/processes/{pid}/output", "GET", "GET, HEAD", .answer = answer_proc_output),
	SESSION_ROUTE("/sessions/{id}/processes/{pid}/stdin", "POST", "POST", .raw = true,
                      .prepare = prepare_proc_stdin),
	SESSION_ROUTE("/sessions/{id}/processes/{pid}/signal", "POST", "POST", .prepare = prepare_proc_signal,
                      .run = run_proc_signal),
};

/* One part of a pattern against the path at *pp; advances both. */
static bool match_part(const char **pat, const char **pp, struct route_args *a)
{
	const char *p = *pp;
	if (strncmp(*pat, "{id}", 4) == 0) {
		size_t k = strcspn(p, "/");
		if (k == 0 || k >= sizeof(a->sid))
			return false;
		memcpy(a->sid, p, k);
		a->sid[k] = 0;
		*pp = p + k;
		*pat += 4;
		return true;
	}
	if (strncmp(*pat, "{pid}", 5) == 0) {
		size_t k = strspn(p, "0123456789");
		if (k == 0 || k > 9)
			return false;
		a->pid = atoi(p);
		*pp = p + k;
		*pat += 5;
		return true;
	}
	if (strncmp(*pat, "{path}", 6) == 0) {
		/* "", or "/" and the rest */
		if (*p && *p != '/')
			return false;
		size_t k = strlen(p + (*p == '/'));
		if (k >= sizeof(a->fpath))
			return false;
		memcpy(a->fpath, p + (*p == '/'), k + 1);
		*pp = p + strlen(p);
		*pat += 6;
		return true;
	}
	if (**pat != *p)
		return false;
	(*pat)++;
	(*pp)++;
	return true;
}

static bool match(const char *pat, const char *path, struct route_args *a)
{
	while (*pat)
		if (!match_part(&pat, &path, a))
			return false;
	return *path == 0;
}

/* A GET endpoint takes HEAD too. */
static bool method_is(const struct route *rt, const char *method)
{
	if (strcmp(rt->method, "GET") == 0)
		return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	return strcmp(method, rt->method) == 0;
}

/* The endpoint of path and method, its parts in *a; NULL when none, with
 * *allow the methods the path takes (a 405) or NULL (a 404). */
const struct route *route_find_in(const struct route *table, size_t n, const char *path, const char *method,
                                  struct route_args *a, const char **allow)
{
	*allow = NULL;
	for (size_t i = 0; i < n; i++) {
		memset(a, 0, sizeof(*a));
		if (!match(table[i].path, path, a))
			continue;
		if (method_is(&table[i], method))
			return &table[i];
		*allow = table[i].allow;
	}
	memset(a, 0, sizeof(*a));
	return NULL;
}

/* The native API's (--listen). */
const struct route *route_find(const char *path, const char *method, struct route_args *a, const char **allow)
{
	return route_find_in(routes, sizeof(routes) / sizeof(routes[0]), path, method, a, allow);
}
