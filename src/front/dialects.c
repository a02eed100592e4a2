/* dialects.c — the table of dialects (dialects.h): each one's listener
 * added when its option names an address.  A new dialect: a struct dialect here, and its
 * entry in ward_dialects. */
#define _GNU_SOURCE
#include <stddef.h>

#include "dialect/e2b/e2b.h"
#include "dialect/judge0/judge0.h"
#include "dialect/mcp/mcp.h"
#include "dialect/piston/piston.h"
#include "front/dialects.h"
#include "server/server.h"

static int piston_add(struct server *s)
{
	if (listener_add(s, &piston_api, s->o.piston_listen) < 0)
		return -1;
	/* --piston-client: header-less clients are that one client */
	if (s->o.piston_listen[0] && s->o.piston_client[0])
		s->listeners[s->nlisteners - 1].client = s->o.piston_client;
	return 0;
}

static int judge0_add(struct server *s)
{
	return listener_add(s, &judge0_api, s->o.judge0_listen);
}

static int mcp_add(struct server *s)
{
	return listener_add(s, &mcp_api, s->o.mcp_listen);
}

static int e2b_add(struct server *s)
{
	return listener_add(s, &e2b_api, s->o.e2b_listen);
}

static const struct dialect piston = {.name = "piston", .add = piston_add};
static const struct dialect judge0 = {.name = "judge0", .add = judge0_add};
static const struct dialect mcp = {.name = "mcp", .add = mcp_add};
static const struct dialect e2b = {.name = "e2b", .add = e2b_add};

const struct dialect *const ward_dialects[] = {&piston, &judge0, &mcp, &e2b, NULL};
