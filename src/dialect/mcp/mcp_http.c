/* mcp_http.c — MCP's streamable HTTP transport (SPEC §21) as a listener of
 * ward serve (`--mcp ADDR`, listeners.c): the same tokens (Authorization:
 * Bearer), body limits, admission, quotas, maxima, workers and log as the
 * native API.
 *
 *   POST /mcp    one JSON-RPC message.  initialize makes an MCP session
 *                (its id in Mcp-Session-Id; at most --client-sessions of a
 *                client's and --max-sessions in all); every other message
 *                names it.  Notifications and responses: 202.  Requests
 *                but tools/call are answered at once, on the I/O thread;
 *                tools/call is admitted and runs on a worker, answered as
 *                JSON, or as server-sent events (progress notifications,
 *                then the response) when it carries a progressToken and
 *                the client takes text/event-stream.
 *   GET /mcp     405: ward sends nothing unasked.
 *   DELETE /mcp  the MCP session ends: its calls are cancelled, the ward
 *                session kept for it ends.
 *
 * An MCP session idles out after --session-max-idle (at most 600 s) without
 * a request.  Owns the MCP sessions of its listener (struct mcp_http). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dialect/mcp/mcp.h"

struct hsess {
	char id[100];   /* NODEID "." 32 hex: a load balancer pins it as a session */
	char owner[96]; /* the client that made it (req.who) */
	struct mcp_conn conn;
	double idle_end;
	unsigned refs; /* requests holding it */
	bool gone;     /* out of the list: freed at its last put */
	struct hsess *next;
};

struct mcp_http {
	struct server *s;
	pthread_mutex_t lock; /* list, n, each hsess's refs, idle_end, gone */
	struct hsess *list;
	unsigned n;
};

/* A request's extras (r->ext): the MCP session it names. */
struct mcp_ext {
	char sid[100];
	bool header; /* the answer carries Mcp-Session-Id (initialize's) */
};

/* The longest a call's run may take when it names no timeout: the maximum. */
static double longest_run(struct server *s)
{
	return s->o.max.timeout_s;
}

static double idle_s(struct server *s)
{
	return fmin(600, s->o.session_max_idle);
}

static void hsess_free(struct hsess *m)
{
	mcp_conn_end(&m->conn);
	pthread_mutex_destroy(&m->conn.lock);
	pthread_mutex_destroy(&m->conn.mk);
	free(m);
}

static void hsess_put(struct mcp_http *h, struct hsess *m)
{
	pthread_mutex_lock(&h->lock);
	bool last = --m->refs == 0 && m->gone;
	m->idle_end = now_mono() + idle_s(h->s);
	pthread_mutex_unlock(&h->lock);
	if (last)
		hsess_free(m);
}

/* id's session if it is who's: held (hsess_put), its idle time restarted. */
static struct hsess *hsess_get(struct mcp_http *h, const char *id, const char *who)
{
	pthread_mutex_lock(&h->lock);
	struct hsess *m = h->list;
	while (m && strcmp(m->id, id))
		m = m->next;
	if (m && strcmp(m->owner, who))
		m = NULL;
	if (m) {
		m->refs++;
		m->idle_end = now_mono() + idle_s(h->s);
	}
	pthread_mutex_unlock(&h->lock);
	return m;
}

/* Out of the list (under lock); true when no request holds it. */
static bool hsess_unlink(struct mcp_http *h, struct hsess *m)
{
	for (struct hsess **pp = &h->list; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			h->n--;
			break;
		}
	m->gone = true;
	return m->refs == 0;
}

static unsigned owner_count(struct mcp_http *h, const char *who)
{
	unsigned k = 0;
	for (struct hsess *m = h->list; m; m = m->next)
		k += !strcmp(m->owner, who);
	return k;
}

/* A new MCP session of r's client, held; NULL with the answer set. */
static struct hsess *hsess_new(struct mcp_http *h, struct req *r, const json_t *id)
{
	struct server *s = h->s;
	struct hsess *m = calloc(1, sizeof(*m));
	unsigned char b[16];
	if (!m || getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		free(m);
		set_answer(r, 500, mcp_error(id, MCP_INTERNAL_ERROR, "cannot make a session id"), "application/json");
		return NULL;
	}
	int k = snprintf(m->id, sizeof(m->id), "%s.", s->o.node_id);
	for (size_t i = 0; i < sizeof(b); i++)
		k += snprintf(m->id + k, sizeof(m->id) - (size_t)k, "%02x", b[i]);
	snprintf(m->owner, sizeof(m->owner), "%s", r->who);
	mcp_conn_init(&m->conn, s, r->who);
	m->refs = 1;
	m->idle_end = now_mono() + idle_s(s);
	pthread_mutex_lock(&h->lock);
	bool all = h->n >= s->o.max_sessions, mine = owner_count(h, r->who) >= s->o.client_sessions;
	if (!all && !mine) {
		m->next = h->list;
		h->list = m;
		h->n++;
	}
	pthread_mutex_unlock(&h->lock);
	if (!all && !mine)
		return m;
	hsess_free(m);
	r->retry_after = 5;
	set_answer(r, 429,
	           all ? mcp_error(id, MCP_INTERNAL_ERROR,
	                           "the runner holds --max-sessions (%u) MCP sessions already; "
	                           "retry later",
	                           s->o.max_sessions)
	               : mcp_error(id, MCP_INTERNAL_ERROR,
	                           "client '%s' holds --client-sessions (%u) MCP sessions "
	                           "already; end one (DELETE /mcp) first",
	                           r->who, s->o.client_sessions),
	           "application/json");
	return NULL;
}

static const char *header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static void answer_empty(struct req *r, unsigned code)
{
	set_answer(r, code, strdup(""), "application/json");
}

/* POST /mcp with its whole body, on the I/O thread: everything but a
 * tools/call is answered here (false); a tools/call goes on (true). */
static bool mcp_prepare(struct server *s, struct req *r)
{
	struct mcp_http *h = r->ln->state;
	struct mcp_ext *x = calloc(1, sizeof(*x));
	if (!x) {
		set_error(r, 500, "out of memory");
		return false;
	}
	r->ext = x;
	json_t *msg;
	char *reply;
	enum mcp_kind k = mcp_read(r->body ? r->body : "", r->len, WARD_JSON_MAX_VALUES, &msg, &reply);
	if (k == MCP_BAD) {
		set_answer(r, 400, reply, "application/json");
		return false;
	}
	json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *pv = header(r, "MCP-Protocol-Version");
	bool go = false;
	struct mcp_call *call = NULL;
	struct hsess *m = NULL;
	if (pv && !mcp_version_known(pv)) {
		set_answer(r, 400,
		           mcp_error(id, MCP_INVALID_REQUEST,
		                     "MCP-Protocol-Version %.40s is not one ward "
		                     "speaks (newest: %s)",
		                     pv, MCP_LATEST_VERSION),
		           "application/json");
	} else if (k == MCP_REQUEST && !strcmp(method, "initialize")) {
		if ((m = hsess_new(h, r, id))) {
			set_answer(r, 200, mcp_answer(&m->conn, msg, &call), "application/json");
			snprintf(x->sid, sizeof(x->sid), "%s", m->id);
			x->header = true;
			log_event(s, "mcp-session-new", "%s for %s", m->id, r->who);
		}
	} else if (!header(r, "Mcp-Session-Id")) {
		set_answer(r, 400,
		           mcp_error(id, MCP_INVALID_REQUEST,
		                     "no Mcp-Session-Id header: send initialize "
		                     "first, then its Mcp-Session-Id with every message"),
		           "application/json");
	} else if (!(m = hsess_get(h, header(r, "Mcp-Session-Id"), r->who))) {
		set_answer(r, 404,
		           mcp_error(id, MCP_INVALID_REQUEST,
		                     "no such MCP session: it ended, expired or is "
		                     "another client's; initialize a new one"),
		           "application/json");
	} else if (k != MCP_REQUEST) { /* a notification (cancelled: at once, here) or a response */
		if (k == MCP_NOTIFICATION)
			free(mcp_answer(&m->conn, msg, &call));
		answer_empty(r, 202);
	} else if (strcmp(method, "tools/call")) {
		char *resp = mcp_answer(&m->conn, msg, &call);
		set_answer(r, 200, resp ? resp : mcp_error(id, MCP_INTERNAL_ERROR, "out of memory"),
		           "application/json");
	} else { /* to a worker, as a stream when it wants progress */
		json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
		snprintf(x->sid, sizeof(x->sid), "%s", m->id);
		go = !json_object_get(meta, "progressToken") || stream_want(s, r);
	}
	if (m)
		hsess_put(h, m);
	json_decref(msg);
	return go;
}

/* A progress notification as one event of r's stream (the main thread). */
static void emit(struct mcp_call *call, char *json, void *arg)
{
	(void)arg;
	stream_event(call->arg, "message", json, strlen(json));
}

/* tools/call, on a worker. */
static void mcp_run(struct req *r)
{
	struct mcp_http *h = r->ln->state;
	struct mcp_ext *x = r->ext;
	struct hsess *m = hsess_get(h, x->sid, r->who);
	json_t *msg = NULL;
	char *reply = NULL;
	if (!m) {
		set_answer(r, 404, mcp_error(NULL, MCP_INVALID_REQUEST, "the MCP session ended: initialize a new one"),
		           "application/json");
		return;
	}
	mcp_read(r->body ? r->body : "", r->len, WARD_JSON_MAX_VALUES, &msg, &reply);
	struct mcp_call *call = NULL;
	char *resp = msg ? mcp_answer(&m->conn, msg, &call) : reply;
	if (call) {
		if (call->token && r->live &&
		    stream_start_messages(r, (call->total > 0 ? call->total : longest_run(h->s)) + 10))
			mcp_call_begin(&m->conn, call, r, emit, NULL);
		resp = mcp_call_run(&m->conn, call);
		mcp_call_done(&m->conn, call);
	}
	if (resp)
		set_answer(r, 200, resp, "application/json");
	else if (!stream_started(r)) /* cancelled: no response, the POST ends */
		answer_empty(r, 202);
	json_decref(msg);
	hsess_put(h, m);
}

static void mcp_get(struct server *s, struct req *r)
{
	(void)s;
	r->allow = "POST, DELETE";
	set_answer(r, 405,
	           mcp_error(NULL, MCP_INVALID_REQUEST, "ward sends no messages unasked: POST requests to /mcp"),
	           "application/json");
}

static void mcp_delete(struct server *s, struct req *r)
{
	struct mcp_http *h = r->ln->state;
	const char *id = header(r, "Mcp-Session-Id");
	struct hsess *m = id ? hsess_get(h, id, r->who) : NULL;
	if (!m) {
		set_answer(r, id ? 404 : 400,
		           mcp_error(NULL, MCP_INVALID_REQUEST, "%s",
		                     id ? "no such MCP session" : "no Mcp-Session-Id header"),
		           "application/json");
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (!m->gone)
		hsess_unlink(h, m);
	pthread_mutex_unlock(&h->lock);
	mcp_conn_end(&m->conn); /* its calls cancelled, its ward session ends now */
	log_event(s, "mcp-session-end", "%s (%s): deleted", m->id, m->owner);
	hsess_put(h, m);
	answer_empty(r, 204);
}

static void mcp_headers(struct req *r, struct MHD_Response *resp)
{
	const struct mcp_ext *x = r->ext;
	if (x && x->header)
		MHD_add_response_header(resp, "Mcp-Session-Id", x->sid);
}

/* The envelope's errors (401, 413, 429, 503) as JSON-RPC errors. */
static char *error_json(const char *msg)
{
	return mcp_error(NULL, MCP_INVALID_REQUEST, "%s", msg);
}

static void not_found(struct server *s, struct req *r)
{
	(void)s;
	set_answer(r, 404, mcp_error(NULL, MCP_INVALID_REQUEST, "no such endpoint: %s (MCP is at /mcp)", r->path),
	           "application/json");
}

static int mcp_start(struct server *s, void **state)
{
	struct mcp_http *h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->s = s;
	pthread_mutex_init(&h->lock, NULL);
	*state = h;
	return 0;
}

/* A call whose event stream's connection ended is cancelled: nobody
 * reads its answer (the client closed, or a proxy cut it). */
static void cancel_orphan(struct mcp_call *call, void *arg)
{
	(void)arg;
	if (call->arg && stream_gone(call->arg))
		call->cancel = 1;
}

/* Once a second: progress of the calls that want it, calls whose client
 * went away cancelled; idle sessions end. */
static void mcp_tick(struct server *s, void *state)
{
	(void)s;
	struct mcp_http *h = state;
	struct hsess *done = NULL;
	double t = now_mono();
	pthread_mutex_lock(&h->lock);
	for (struct hsess *m = h->list, *nx; m; m = nx) {
		nx = m->next;
		mcp_progress(&m->conn, emit, NULL);
		mcp_calls_each(&m->conn, cancel_orphan, NULL);
		if (t >= m->idle_end && m->refs == 0 && hsess_unlink(h, m)) {
			m->next = done;
			done = m;
		}
	}
	pthread_mutex_unlock(&h->lock);
	while (done) {
		struct hsess *m = done;
		done = m->next;
		log_event(h->s, "mcp-session-end", "%s (%s): idle", m->id, m->owner);
		hsess_free(m);
	}
}

static void mcp_stop(struct server *s, void *state)
{
	(void)s;
	struct mcp_http *h = state;
	while (h->list) {
		struct hsess *m = h->list;
		h->list = m->next;
		hsess_free(m);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
}

#define R(m, ...)                                                                 \
	{                                                                         \
		.path = "/mcp", .method = m, .allow = "POST, DELETE", __VA_ARGS__ \
	}
static const struct route routes[] = {
	R("POST", .prepare = mcp_prepare, .run = mcp_run),
	R("GET", .answer = mcp_get),
	R("DELETE", .answer = mcp_delete),
};

const struct api mcp_api = {
	.name = "mcp",
	.routes = routes,
	.nroutes = sizeof(routes) / sizeof(routes[0]),
	.error_json = error_json,
	.not_found = not_found,
	.headers = mcp_headers,
	.start = mcp_start,
	.tick = mcp_tick,
	.stop = mcp_stop,
};
