/* routes.c — the routing table: which path is which endpoint, with its
 * method and handlers (struct route, server.h).  The one place an endpoint
 * is added.
 *
 * Owns nothing mutable.  Never decides anything about a request but which
 * endpoint it names: http.c checks the method and the token, the handlers
 * do the rest. */
#define _GNU_SOURCE
#include <string.h>

#include "server/server.h"

static const struct route routes[] = {
	{.path = "/health", .method = "GET", .allow = "GET, HEAD", .open = true, .answer = answer_health},
	{.path = "/exec", .method = "POST", .allow = "POST", .prepare = prepare_exec, .run = run_exec},
	{.path = "/test", .method = "POST", .allow = "POST", .run = run_test},
	{.path = "/metrics", .method = "GET", .allow = "GET, HEAD", .answer = answer_metrics},
};

/* The endpoint of path, or NULL. */
const struct route *route_find(const char *path)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(path, routes[i].path) == 0)
			return &routes[i];
	return NULL;
}
