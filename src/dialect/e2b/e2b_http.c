/* e2b_http.c — the E2B API (--e2b ADDR) as a listener of the server's one
 * request life (struct api, src/server/listeners.c): its route table, its
 * route choice (a sandbox's own port is relayed, e2b_ports.c), its
 * credentials, its error shape.  What the native listener has, it has:
 * admission, deadlines, per-address and per-client caps, the answer
 * budget, the log and the quotas (src/server/http.c).
 *
 * Credentials: the control plane's X-API-KEY is a ward token (its name
 * owns the sandboxes it makes); the data plane names its sandbox in
 * E2b-Sandbox-Id and must carry one of that sandbox's own tokens
 * (X-Access-Token, or E2B-Traffic-Access-Token): an unknown sandbox is 502
 * (what E2B's proxy answers, and what makes the SDK's isRunning false), a
 * missing or wrong token 401.  A data-plane request counts as its
 * sandbox's owner's (r->who). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dialect/e2b/e2b.h"
#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_vol.h"

const char *e2b_header(struct ereq *q, const char *name)
{
	return MHD_lookup_connection_value(q->c, MHD_HEADER_KIND, name);
}

int e2b_conn_fd(struct ereq *q)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(q->c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

bool e2b_client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

const char *e2b_query(struct ereq *q, const char *name)
{
	return MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, name);
}

static bool interp_route(const struct route *rt, struct ereq *q);

/* The data plane's sandbox (held in q->x) and token: 0, or the status
 * (400, 401, 502) with why in q->message. */
static unsigned data_auth(struct ereq *q)
{
	const char *id = e2b_header(q, "E2b-Sandbox-Id");
	if (!id || !*id) {
		snprintf(q->message, sizeof(q->message),
		         "no E2b-Sandbox-Id header: set E2B_SANDBOX_URL to this listener "
		         "(the SDK then sends it; e2b >= 2.14.1, @e2b/code-interpreter >= 2.7.0)");
		return 400;
	}
	struct e2b_sbx *x = e2b_sbx_get(q->e, id);
	if (!x) {
		snprintf(q->message, sizeof(q->message),
		         "sandbox %.80s is not running: it was killed, timed out or never existed", id);
		return 502;
	}
	/* envd (processes, files) takes only the envd token; the traffic
	 * token, which an owner gives to whoever may only see a port, opens
	 * the code interpreter's routes (port 49999: its contexts calls carry
	 * nothing else) and never a shell or a file: the route decides, never
	 * a header the client sets */
	const char *tok = e2b_header(q, "X-Access-Token");
	const char *traffic = e2b_header(q, "E2B-Traffic-Access-Token");
	bool proven = e2b_access_ok(x, tok) || (interp_route(q->r->route, q) && e2b_token_ok(x, traffic));
	/* paused: woken (autoResume) or refused by e2b_wake, on the worker
	 * that runs the call, never here on an I/O thread (a resume from
	 * files takes as long as their copy) */
	q->wake = proven && e2b_is_paused(q->e, x);
	if (!proven) {
		e2b_sbx_put(q->e, x);
		snprintf(q->message, sizeof(q->message),
		         "missing or wrong access token for sandbox %s: send the "
		         "envdAccessToken that created or connected it as X-Access-Token%s",
		         id,
		         e2b_token_ok(x, tok) || e2b_token_ok(x, traffic)
		                 ? " (the traffic token opens only the sandbox's ports and its code interpreter)"
		                 : "");
		return 401;
	}
	q->x = x;
	snprintf(q->who, sizeof(q->who), "%s", x->owner); /* its answers count in its owner's share */
	return 0;
}

struct ereq *e2b_q(struct req *r)
{
	return r->ext;
}

/* A paused sandbox's call (q->wake), on its worker: resumed (autoResume),
 * or false with the 502 answered. */
static bool e2b_woken(struct ereq *q)
{
	if (!q->wake)
		return true;
	q->wake = false;
	unsigned code = e2b_wake(q, q->x);
	if (!code)
		return true;
	set_error(q->r, code, "%s", q->message);
	return false;
}

/* A handler of the dialect's (fn(struct ereq *)) as a route's run, on a
 * worker: the body is r's, what it answers is r's. */
#define E2B_RUN(fn)                                                                 \
	static void run_##fn(struct req *r)                                         \
	{                                                                           \
		struct ereq *q = r->ext;                                            \
		q->body = r->body;                                                  \
		q->len = r->len;                                                    \
		if (!e2b_woken(q))                                                  \
			return;                                                     \
		fn(q);                                                              \
		if (!r->message[0] && q->message[0])                                \
			snprintf(r->message, sizeof(r->message), "%s", q->message); \
	}
E2B_RUN(e2b_create)
E2B_RUN(e2b_list)
E2B_RUN(e2b_connect_sbx)
E2B_RUN(e2b_timeout)
E2B_RUN(e2b_metrics)
E2B_RUN(e2b_info)
E2B_RUN(e2b_kill)
E2B_RUN(e2b_health)
E2B_RUN(files_get)
E2B_RUN(files_post)
E2B_RUN(px_start)
E2B_RUN(px_connect)
E2B_RUN(px_list)
E2B_RUN(px_send_input)
E2B_RUN(px_close_stdin)
E2B_RUN(px_send_signal)
E2B_RUN(fs_stat)
E2B_RUN(fs_list)
E2B_RUN(fs_mkdir)
E2B_RUN(fs_move)
E2B_RUN(fs_remove)
E2B_RUN(fs_watch)
E2B_RUN(ci_execute)
E2B_RUN(ci_ctx_create)
E2B_RUN(ci_ctx_list)
E2B_RUN(ci_ctx_delete)
E2B_RUN(ci_ctx_restart)
E2B_RUN(ports_relay)
E2B_RUN(e2b_pause)
E2B_RUN(e2b_fork)
E2B_RUN(e2b_network)
E2B_RUN(e2b_snapshot)
E2B_RUN(e2b_snapshots)
E2B_RUN(e2b_snapshot_delete)
E2B_RUN(tm_create)
E2B_RUN(tm_post_v2)
E2B_RUN(tm_get)
E2B_RUN(tm_upload)
E2B_RUN(vol_create)
E2B_RUN(vol_list)
E2B_RUN(vol_info)
E2B_RUN(vol_delete)
E2B_RUN(vc_answer)

static bool e2b_prepare(struct server *s, struct req *r);
static bool e2b_check(struct server *s, struct req *r);
static bool relay_check(struct server *s, struct req *r);
static bool e2b_now(struct server *s, struct req *r);
static bool e2b_prepare_link(struct server *s, struct req *r);
static bool vc_prepare(struct server *s, struct req *r);
static bool vc_feed_r(struct req *r, const char *p, size_t *n);
static bool upload_feed(struct req *r, const char *p, size_t *n);

/* The control plane: an API key's (not open); the data plane: open, its
 * sandbox's token checked when the headers are in (e2b_check: a keyless
 * peer's body is never held).  A create, a command, a code execution, a
 * pause and a connect that resumes are runs of the key's (--client-rate);
 * the rest is unmetered (--client-concurrency still counts it while it
 * holds a worker).  Every body is bytes to the server
 * (a Connect envelope, a multipart upload): the handlers parse them. */
#define ROUTE(p, m, al, fn, prep, ...)                                                                          \
	{                                                                                                       \
		.path = p, .method = m, .allow = al, .raw = true, .prepare = prep, .run = run_##fn, __VA_ARGS__ \
	}
#define CTL(p, m, al, fn, ...) ROUTE(p, m, al, fn, e2b_prepare, __VA_ARGS__)
#define DATA(p, m, al, fn, ...) ROUTE(p, m, al, fn, e2b_prepare, .open = true, .check = e2b_check, __VA_ARGS__)
/* A call that never waits (a record read, a signal, stdin queued): all of
 * it in prepare, on the I/O thread, never queued (as the native stdin). */
#define CTL_NOW(p, m, al, fn) ROUTE(p, m, al, fn, e2b_now, .unmetered = true)
#define DATA_NOW(p, m, al, fn) ROUTE(p, m, al, fn, e2b_now, .open = true, .check = e2b_check, .unmetered = true)
static const struct route routes[] = {
	CTL("/v2/sandboxes", "POST", "GET, HEAD, POST", e2b_create),
	CTL("/sandboxes", "POST", "GET, HEAD, POST", e2b_create),
	/* a list's answer is as large as its sandboxes' metadata: made on a worker */
	CTL("/v2/sandboxes", "GET", "GET, HEAD, POST", e2b_list, .light = true, .unmetered = true),
	CTL("/sandboxes", "GET", "GET, HEAD, POST", e2b_list, .light = true, .unmetered = true),
	/* a connect that resumes makes a session: a run of the key's (one to a
	 * running sandbox is connect_live, e2b_choose) */
	CTL("/v2/sandboxes/{id}/connect", "POST", "POST", e2b_connect_sbx),
	CTL("/sandboxes/{id}/connect", "POST", "POST", e2b_connect_sbx),
	CTL_NOW("/sandboxes/{id}/timeout", "POST", "POST", e2b_timeout),
	CTL("/sandboxes/{id}/metrics", "GET", "GET, HEAD", e2b_metrics, .light = true, .unmetered = true),
	CTL_NOW("/sandboxes/{id}", "GET", "GET, HEAD, DELETE", e2b_info),
	CTL("/sandboxes/{id}", "DELETE", "GET, HEAD, DELETE", e2b_kill, .light = true, .unmetered = true),
	/* a sandbox's life (issue 32): e2b_life.c, e2b_fork.c, e2b_network.c, e2b_snapshot.c; a
	 * fork makes sandboxes and a snapshot writes the store: runs of the key's */
	CTL("/sandboxes/{id}/pause", "POST", "POST", e2b_pause),
	CTL("/sandboxes/{id}/fork", "POST", "POST", e2b_fork),
	CTL("/sandboxes/{id}/network", "PUT", "PUT", e2b_network, .light = true, .unmetered = true),
	CTL("/sandboxes/{id}/snapshots", "POST", "POST", e2b_snapshot),
	CTL("/snapshots", "GET", "GET, HEAD", e2b_snapshots, .light = true, .unmetered = true),
	CTL("/templates/{id}", "DELETE", "GET, HEAD, DELETE", e2b_snapshot_delete, .light = true, .unmetered = true),
	/* templates (e2b_templates.c): "{path}" is the rest of the path, parsed there; a build
	 * runs on the dialect's own bounded worker; an upload link carries its own token */
	CTL("/v3/templates", "POST", "POST", tm_create, .light = true, .unmetered = true),
	CTL("/v2/templates{path}", "POST", "POST", tm_post_v2, .light = true, .unmetered = true),
	CTL("/templates{path}", "GET", "GET, HEAD, DELETE", tm_get, .light = true, .unmetered = true),
	ROUTE("/ward/template-files/{id}", "PUT", "PUT", tm_upload, e2b_prepare_link, .open = true, .unmetered = true),
	/* volumes (e2b_volumes.c): a create makes and formats an image, a delete wipes one */
	CTL("/volumes", "POST", "GET, HEAD, POST", vol_create),
	CTL("/volumes", "GET", "GET, HEAD, POST", vol_list, .light = true, .unmetered = true),
	CTL("/volumes/{id}", "GET", "GET, HEAD, DELETE", vol_info, .light = true, .unmetered = true),
	CTL("/volumes/{id}", "DELETE", "GET, HEAD, DELETE", vol_delete),
	DATA("/health", "GET", "GET, HEAD", e2b_health, .light = true, .unmetered = true),
	DATA("/files", "GET", "GET, HEAD, POST", files_get, .light = true, .unmetered = true),
	DATA("/files", "POST", "GET, HEAD, POST", files_post, .feed = upload_feed, .unmetered = true),
	DATA("/process.Process/Start", "POST", "POST", px_start),
	DATA("/process.Process/Connect", "POST", "POST", px_connect, .light = true, .unmetered = true),
	DATA_NOW("/process.Process/List", "POST", "POST", px_list),
	DATA_NOW("/process.Process/SendInput", "POST", "POST", px_send_input),
	DATA_NOW("/process.Process/CloseStdin", "POST", "POST", px_close_stdin),
	DATA_NOW("/process.Process/SendSignal", "POST", "POST", px_send_signal),
	DATA("/filesystem.Filesystem/Stat", "POST", "POST", fs_stat, .light = true, .unmetered = true),
	DATA("/filesystem.Filesystem/ListDir", "POST", "POST", fs_list, .light = true, .unmetered = true),
	DATA("/filesystem.Filesystem/MakeDir", "POST", "POST", fs_mkdir, .unmetered = true),
	DATA("/filesystem.Filesystem/Move", "POST", "POST", fs_move, .unmetered = true),
	DATA("/filesystem.Filesystem/Remove", "POST", "POST", fs_remove, .unmetered = true),
	DATA("/filesystem.Filesystem/WatchDir", "POST", "POST", fs_watch, .light = true, .unmetered = true),
	DATA("/execute", "POST", "POST", ci_execute),
	DATA("/contexts", "POST", "GET, HEAD, POST", ci_ctx_create, .unmetered = true),
	DATA_NOW("/contexts", "GET", "GET, HEAD, POST", ci_ctx_list),
	DATA("/contexts/{id}", "DELETE", "DELETE", ci_ctx_delete, .light = true, .unmetered = true),
	DATA("/contexts/{id}/restart", "POST", "POST", ci_ctx_restart, .unmetered = true),
};
/* A connect to a sandbox that runs: its timeout set, no session made */
static const struct route connect_live =
	CTL("/sandboxes/{id}/connect", "POST", "POST", e2b_connect_sbx, .unmetered = true);
/* The code interpreter's routes (port 49999): the traffic token opens them */
static bool interp_route(const struct route *rt, struct ereq *q)
{
	if (rt->run == run_e2b_health) { /* envd's and the interpreter's: by its port */
		const char *port = e2b_header(q, "E2b-Sandbox-Port");
		return port && strcmp(port, "49999") == 0;
	}
	return rt->run == run_ci_execute || rt->run == run_ci_ctx_create || rt->run == run_ci_ctx_list ||
	       rt->run == run_ci_ctx_delete || rt->run == run_ci_ctx_restart;
}
/* A request to a sandbox's own port (e2b_ports.c): its body held
 * (--max-body), relayed from the I/O thread, its answer's head awaited by
 * the dialect's pump, never a worker (but a paused sandbox's resume), the
 * answer's body streamed. */
static const struct route relay_route = ROUTE("*", "*", "*", ports_relay, e2b_prepare, .open = true,
                                              .check = relay_check, .light = true, .unmetered = true);
/* A volume's content (e2b_volfiles.c): its own token, checked when the
 * headers are in; an upload written as it comes; the answer on a worker. */
#define VC_PATH "/volumecontent/"
static const struct route vc_route =
	ROUTE("*", "*", "*", vc_answer, vc_prepare, .open = true, .feed = vc_feed_r, .light = true, .unmetered = true);

/* The route, and the request's part of the dialect (r->ext): a sandbox's
 * port (E2b-Sandbox-Port, or a Host PORT-ID.DOMAIN) is relayed; envd's,
 * the interpreter's and the control plane's paths are the table's. */
static const struct route *e2b_choose(struct req *r, const char *url, const char *method)
{
	struct ereq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	r->ext = q;
	q->r = r;
	q->s = r->srv;
	q->e = r->ln->state;
	q->c = r->conn;
	q->uri = r->uri;
	snprintf(q->method, sizeof(q->method), "%s", method);
	snprintf(q->path, sizeof(q->path), "%s", url);
	if (ports_target(q, &q->port, q->port_id, sizeof(q->port_id)))
		return &relay_route;
	if (strncmp(url, VC_PATH, strlen(VC_PATH)) == 0)
		return &vc_route;
	const struct route *rt =
		route_find_in(routes, sizeof(routes) / sizeof(routes[0]), url, method, &r->args, &r->allow);
	const char *arg = r->args.sid;
	if (rt && strstr(rt->path, "{path}")) {
		/* a template's rest of the path: segments of [A-Za-z0-9._-] */
		arg = r->args.fpath;
		size_t k = strlen(arg);
		if (!k || k >= sizeof(q->arg) ||
		    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") != k)
			return NULL;
	}
	size_t k = strnlen(arg, sizeof(q->arg) - 1); /* both fit: {id} is under 100 bytes, {path} checked */
	memcpy(q->arg, arg, k);
	q->arg[k] = 0;
	if (rt && rt->run == run_e2b_connect_sbx) {
		/* metered only when it resumes (the owner is the handler's to check) */
		struct e2b_sbx *x = e2b_sbx_get(q->e, q->arg);
		if (x && !e2b_is_paused(q->e, x))
			rt = &connect_live;
		if (x)
			e2b_sbx_put(q->e, x);
	}
	return rt;
}

/* The data plane's sandbox and token, when the headers are in (the
 * control plane's key is the server's token check, api->token). */
static bool e2b_check(struct server *s, struct req *r)
{
	struct ereq *q = r->ext;
	snprintf(q->who, sizeof(q->who), "%s", r->who);
	unsigned st = data_auth(q);
	if (st) {
		set_error(r, st, "%s", q->message);
		return false;
	}
	/* its sandbox's owner's: the quotas and the answer budget count there */
	snprintf(r->who, sizeof(r->who), "%s", q->who);
	snprintf(r->client, sizeof(r->client), "%s%s%s", r->who, r->sub[0] ? "/" : "", r->sub);
	conn_trust(s, r->conn);
	return true;
}

static bool relay_check(struct server *s, struct req *r)
{
	(void)s;
	return ports_check(r->ext);
}

/* With the body (at the headers for an upload): an upload begins (its
 * pump wakes a paused sandbox, never the I/O thread), a relay goes. */
static bool e2b_prepare(struct server *s, struct req *r)
{
	(void)s;
	struct ereq *q = r->ext;
	if (r->route == &relay_route) {
		/* its sandbox and token: ports_check's and ports_relay's; its
		 * client the sandbox's owner (a tenant's port hammered costs that
		 * tenant's --client-concurrency, nobody else's) */
		struct e2b_sbx *x = e2b_sbx_get(q->e, q->port_id);
		if (x) {
			snprintf(r->who, sizeof(r->who), "%s", x->owner);
			snprintf(r->client, sizeof(r->client), "%s%s%s", r->who, r->sub[0] ? "/" : "", r->sub);
			e2b_sbx_put(q->e, x);
		}
		return ports_prepare(q);
	}
	if (!r->route->open)
		snprintf(q->who, sizeof(q->who), "%s", r->who);
	if (r->route->feed == upload_feed)
		files_upload_begin(q);
	return true;
}

/* A template's upload link (tm_upload): its own token, in its query */
static bool e2b_prepare_link(struct server *s, struct req *r)
{
	(void)s;
	struct ereq *q = r->ext;
	snprintf(q->who, sizeof(q->who), "%s", r->who);
	return true;
}

/* A volume's content request: its token and path checked, an upload's
 * file begun (what it refuses is answered on the worker, its body dropped). */
static bool vc_prepare(struct server *s, struct req *r)
{
	(void)s;
	struct ereq *q = r->ext;
	snprintf(q->who, sizeof(q->who), "%s", r->who);
	if (vc_begin(q)) {
		/* the volume's owner's: the quotas and the answer budget count there */
		snprintf(r->who, sizeof(r->who), "%s", q->who);
		snprintf(r->client, sizeof(r->client), "%s%s%s", r->who, r->sub[0] ? "/" : "", r->sub);
	}
	return true;
}

/* A pumped body's piece taken (false: the server stops, it was cut). */
static bool fed(struct req *r, bool ok)
{
	if (!ok)
		set_error(r, 503, "the server is stopping: the upload was cut; retry on another runner");
	return ok;
}

static bool vc_feed_r(struct req *r, const char *p, size_t *n)
{
	return fed(r, vc_feed(r->ext, p, n));
}

static bool e2b_now(struct server *s, struct req *r)
{
	if (!e2b_prepare(s, r))
		return false;
	struct ereq *q = r->ext;
	if (q->wake)
		return true; /* its sandbox is paused: on a worker, which wakes it */
	r->route->run(r);
	hold_answer(s, r); /* in the answer budget until sent, as a worker's */
	return false;      /* answered */
}

static bool upload_feed(struct req *r, const char *p, size_t *n)
{
	return fed(r, files_upload_feed(r->ext, p, n));
}

static void e2b_release(struct req *r)
{
	struct ereq *q = r->ext;
	if (!q)
		return;
	files_upload_free(q);
	ports_free(q);
	relay_body_give(q->e, q->who, q->relay_body);
	vc_free(q);
	if (q->x)
		e2b_sbx_put(q->e, q->x);
	free(q);
	r->ext = NULL;
}

static const char *e2b_token(struct MHD_Connection *c)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
}

/* A Connect stream's (process.Process/Start and Connect,
 * filesystem.Filesystem/WatchDir): its clients read a refusal of the
 * runner's (429, 503) only from an end-stream frame, with HTTP 200. */
static bool connect_stream(const struct route *rt)
{
	return rt && (rt->run == run_px_start || rt->run == run_px_connect || rt->run == run_fs_watch);
}

/* The server's errors in E2B's shape: {"code": N, "message": ...}; on a
 * Connect stream, a refusal of the runner's as its end-stream frame. */
static void e2b_error(struct req *r, unsigned code)
{
	if ((code == 429 || code == 503) && connect_stream(r->route)) {
		json_t *v = json_pack("{s:{s:s,s:s}}", "error", "code",
		                      code == 429 ? "resource_exhausted" : "unavailable", "message", r->message);
		char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(v);
		char *buf = NULL;
		size_t len = 0;
		if (t && cx_frame(&buf, &len, 0x02, t, strlen(t))) {
			free(t);
			set_answer_bytes(r, 200, buf, len, "application/connect+json");
			return;
		}
		free(t);
		free(buf);
	}
	json_t *v = json_pack("{s:i,s:s}", "code", (int)code, "message", r->message);
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	set_answer(r, code, t, "application/json");
}

static void e2b_no_route(struct server *s, struct req *r)
{
	(void)s;
	set_error(r, 404, "no such endpoint on the E2B listener: %s", r->path);
}

/* An answer of the dialect's, on r (sent by the server's I/O threads,
 * held in the answer budget until taken). */
enum MHD_Result e2b_answer(struct ereq *q, unsigned code, const char *ctype, char *body, size_t len)
{
	struct req *r = q->r;
	q->code = code;
	if (code == 429 || code == 503)
		r->retry_after = 1;
	set_answer_bytes(r, code, body, len, ctype ? ctype : "application/json");
	return MHD_YES;
}

enum MHD_Result e2b_answer_json(struct ereq *q, unsigned code, json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	if (!t)
		return MHD_NO;
	return e2b_answer(q, code, "application/json", t, strlen(t));
}

enum MHD_Result e2b_api_error(struct ereq *q, unsigned code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->message, sizeof(q->message), fmt, ap);
	va_end(ap);
	return e2b_answer_json(q, code, json_pack("{s:i,s:s}", "code", (int)code, "message", q->message));
}

static int e2b_api_start(struct server *s, void **state)
{
	struct e2b *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	e->s = s;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->mk_lock, NULL);
	pthread_mutex_init(&e->life_lock, NULL);
	pthread_cond_init(&e->mk_cond, NULL);
	pthread_cond_init(&e->settled, NULL);
	*state = e;
	if (e2b_makers_start(e) < 0 || e2b_life_start(e) < 0 || tm_start(e) < 0 || ws_start(e) < 0 ||
	    vol_start(e) < 0 || watch_start(e) < 0)
		return -1;
	const char *bound = "";
	for (size_t i = 0; i < s->nlisteners; i++)
		if (s->listeners[i].api == &e2b_api)
			bound = s->listeners[i].bound;
	/* getHost(port) is PORT-ID.DOMAIN: by default one a local browser opens (*.localhost) */
	const char *colon = strrchr(bound, ':');
	if (s->o.e2b_domain)
		snprintf(e->domain, sizeof(e->domain), "%s", s->o.e2b_domain);
	else
		snprintf(e->domain, sizeof(e->domain), "localhost:%s", colon ? colon + 1 : "");
	log_event(s, "e2b-listening", "%s (E2B_API_URL and E2B_SANDBOX_URL: http://%s)", bound, bound);
	return 0;
}

static void e2b_api_stop(struct server *s, void *state)
{
	struct e2b *e = state;
	if (!e)
		return;
	e->stopping = 1;
	ws_free(e);
	e2b_life_stop(e);
	e2b_makers_stop(e);
	tm_stop(e);
	vol_stop(e);
	ci_settle_all(e);
	watch_stop(e);
	e2b_records_free(e);
	pthread_cond_destroy(&e->settled);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->mk_lock);
	pthread_mutex_destroy(&e->life_lock);
	pthread_cond_destroy(&e->mk_cond);
	free(e);
}

static void e2b_api_closing(struct server *s, void *state)
{
	(void)s;
	ws_close_all(state);
}

static void e2b_api_tick(struct server *s, void *state)
{
	(void)s;
	e2b_prune(state);
}

const struct api e2b_api = {
	.name = "e2b",
	.routes = routes,
	.nroutes = sizeof(routes) / sizeof(routes[0]),
	.error = e2b_error,
	.token = e2b_token,
	.token_hint = "set E2B_API_KEY to a ward token (--token-file)",
	.not_found = e2b_no_route,
	.choose = e2b_choose,
	.release = e2b_release,
	.uri = true,
	.keepalive_s = E2B_KEEPALIVE_S,
	.drain_refused = true, /* the SDK's uploads are fetch()es: they read no answer while they send */
	.upgrade = true,       /* WebSockets to a sandbox's port (e2b_ws.c) */
	.closing = e2b_api_closing,
	.start = e2b_api_start,
	.tick = e2b_api_tick,
	.stop = e2b_api_stop,
	.metrics = e2b_prometheus, /* its ports' bytes (e2b_metrics.c) */
};
