/* e2b_http.c — the E2B listener (--e2b ADDR): a libmicrohttpd daemon of
 * its own, one thread per connection, beside the native one; a request's
 * body (bounded by --max-body, and by --request-timeout from its first
 * byte), its route, its credentials, its answer.  What it shares with the
 * native listener: its connections are the server's records (conns.c:
 * the header deadline, the request timeout for a body and an answer,
 * pending ones per address cut for room), its whole answers are held in
 * the answer budget until taken (admission.c), its requests are lines of
 * the server's log and counts (http.c's log_request).  Not yet: the
 * server's admission queue and its workers (a request runs on its
 * connection's thread; a stream holds that thread for its life).
 *
 * Credentials: the control plane's X-API-KEY is a ward token (its name
 * owns the sandboxes it makes); the data plane names its sandbox in
 * E2b-Sandbox-Id and must carry one of that sandbox's own tokens
 * (X-Access-Token, or E2B-Traffic-Access-Token): an unknown sandbox is 502
 * (what E2B's proxy answers, and what makes the SDK's isRunning false), a
 * missing or wrong token 401. */
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

static const struct eroute routes[] = {
	{"POST", "/v2/sandboxes", false, e2b_create, false},
	{"POST", "/sandboxes", false, e2b_create, false},
	{"GET", "/v2/sandboxes", false, e2b_list, false},
	{"GET", "/sandboxes", false, e2b_list, false},
	{"POST", "/v2/sandboxes/{id}/connect", false, e2b_connect_sbx, false},
	{"POST", "/sandboxes/{id}/connect", false, e2b_connect_sbx, false},
	{"POST", "/sandboxes/{id}/timeout", false, e2b_timeout, false},
	{"GET", "/sandboxes/{id}/metrics", false, e2b_metrics, false},
	{"GET", "/sandboxes/{id}", false, e2b_info, false},
	{"DELETE", "/sandboxes/{id}", false, e2b_kill, false},
	/* a sandbox's life (issue 32): e2b_life.c, e2b_fork.c, e2b_network.c, e2b_snapshot.c */
	{"POST", "/sandboxes/{id}/pause", false, e2b_pause, false},
	{"POST", "/sandboxes/{id}/fork", false, e2b_fork, false},
	{"PUT", "/sandboxes/{id}/network", false, e2b_network, false},
	{"POST", "/sandboxes/{id}/snapshots", false, e2b_snapshot, false},
	{"GET", "/snapshots", false, e2b_snapshots, false},
	{"DELETE", "/templates/{id}", false, e2b_snapshot_delete, false},
	{"GET", "/health", true, e2b_health, false},
	{"GET", "/files", true, files_get, false},
	{"POST", "/files", true, files_post, true},
	{"POST", "/process.Process/Start", true, px_start, false},
	{"POST", "/process.Process/Connect", true, px_connect, false},
	{"POST", "/process.Process/List", true, px_list, false},
	{"POST", "/process.Process/SendInput", true, px_send_input, false},
	{"POST", "/process.Process/CloseStdin", true, px_close_stdin, false},
	{"POST", "/process.Process/SendSignal", true, px_send_signal, false},
	{"POST", "/filesystem.Filesystem/Stat", true, fs_stat, false},
	{"POST", "/filesystem.Filesystem/ListDir", true, fs_list, false},
	{"POST", "/filesystem.Filesystem/MakeDir", true, fs_mkdir, false},
	{"POST", "/filesystem.Filesystem/Move", true, fs_move, false},
	{"POST", "/filesystem.Filesystem/Remove", true, fs_remove, false},
	{"POST", "/filesystem.Filesystem/WatchDir", true, fs_watch, false},
	{"POST", "/execute", true, ci_execute, false},
	{"POST", "/contexts", true, ci_ctx_create, false},
	{"GET", "/contexts", true, ci_ctx_list, false},
	{"DELETE", "/contexts/{id}", true, ci_ctx_delete, false},
	{"POST", "/contexts/{id}/restart", true, ci_ctx_restart, false},
	/* templates (e2b_templates.c); "{*}": the rest of the path, parsed there */
	{"POST", "/v3/templates", false, tm_create, false},
	{"POST", "/v2/templates/{*}", false, tm_post_v2, false},
	{"GET", "/templates/{*}", false, tm_get, false},
	{"PUT", "/ward/template-files/{id}", false, tm_upload, false},
	/* volumes (e2b_volumes.c); their content API is e2b_volfiles.c's (vc_begin) */
	{"POST", "/volumes", false, vol_create, false},
	{"GET", "/volumes", false, vol_list, false},
	{"GET", "/volumes/{id}", false, vol_info, false},
	{"DELETE", "/volumes/{id}", false, vol_delete, false},
};

/* path against pattern: exact, or "{id}" matching one segment of
 * [A-Za-z0-9._-] into arg. */
static bool match(const char *pat, const char *path, char *arg, size_t n)
{
	const char *brace = strstr(pat, "{id}");
	size_t pl = strlen(pat);
	if (!brace && pl > 3 && !strcmp(pat + pl - 3, "{*}")) { /* a prefix, then segments of the same set */
		const char *p = path + pl - 3;
		size_t k = strlen(p);
		if (strncmp(pat, path, pl - 3) || !k || k >= n ||
		    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") != k)
			return false;
		memcpy(arg, p, k + 1);
		return true;
	}
	if (!brace)
		return strcmp(pat, path) == 0;
	size_t pre = (size_t)(brace - pat);
	if (strncmp(pat, path, pre) != 0)
		return false;
	const char *p = path + pre;
	size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
	if (k == 0 || k >= n)
		return false;
	if (strcmp(p + k, brace + 4) != 0)
		return false;
	memcpy(arg, p, k);
	arg[k] = 0;
	return true;
}

static const struct eroute *route(struct ereq *q, bool *path_known)
{
	*path_known = false;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!match(routes[i].path, q->path, q->arg, sizeof(q->arg)))
			continue;
		*path_known = true;
		if (strcmp(routes[i].method, q->method) == 0 ||
		    (strcmp(q->method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0))
			return &routes[i];
	}
	return NULL;
}

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

/* A whole answer: held in the answer budget and its client's share until
 * it is taken (on_completed lets it go), and taken within the request
 * timeout (the connection's deadline).  One that does not fit is a 503. */
enum MHD_Result e2b_answer(struct ereq *q, unsigned code, const char *ctype, char *body, size_t len)
{
	struct server *s = q->s;
	if (q->ans.bytes) /* reserved before it was made (files_get): what it took */
		answer_unhold(s, &q->ans, q->ans.bytes > len + 1 ? q->ans.bytes - (len + 1) : 0);
	int why = q->ans.bytes ? 0 : answer_hold(s, q->who, len + 1, &q->ans);
	if (why < 0) {
		char msg[400];
		answer_hold_error(s, why, len + 1, msg, sizeof(msg));
		snprintf(q->message, sizeof(q->message), "%s", msg);
		free(body);
		json_t *v = json_pack("{s:i,s:s}", "code", 503, "message", msg);
		body = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(v);
		len = body ? strlen(body) : 0;
		code = 503;
		ctype = "application/json";
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body ? body : (char *)"",
	                                                         body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (code == 429 || code == 503)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	q->code = code;
	enum MHD_Result rc = MHD_queue_response(q->c, code, r);
	MHD_destroy_response(r);
	conn_set_deadline(s, q->c, now_mono() + s->o.request_timeout);
	return rc;
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

/* The control plane's caller: the token named by X-API-KEY (checked as
 * auth.c checks a bearer token); without a token file, the peer's address. */
static bool control_auth(struct ereq *q)
{
	struct server *s = q->s;
	if (!s->ntokens)
		return true; /* q->who: the peer's address */
	const char *key = e2b_header(q, "X-API-Key");
	const struct token *t = key ? token_find(s, key) : NULL;
	if (!t)
		return false;
	snprintf(q->who, sizeof(q->who), "%s", t->name);
	return true;
}

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
	 * nothing else) and never a shell or a file */
	const char *tok = e2b_header(q, "X-Access-Token");
	const char *traffic = e2b_header(q, "E2B-Traffic-Access-Token");
	const char *port = e2b_header(q, "E2b-Sandbox-Port");
	bool interp = port && strcmp(port, "49999") == 0;
	bool proven = e2b_access_ok(x, tok) || (interp && e2b_token_ok(x, traffic));
	unsigned woke = proven ? e2b_wake(q, x) : 0; /* paused: autoResume */
	if (woke) {
		e2b_sbx_put(q->e, x);
		return woke;
	}
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

/* The body is in: credentials, then the endpoint. */
static enum MHD_Result dispatch(struct ereq *q)
{
	if (q->busy)
		return e2b_api_error(q, 503,
		                     "the runner holds --max-body-total (%zu bytes) of request bodies already; "
		                     "retry later",
		                     q->s->o.max_body_total);
	if (q->too_big)
		return e2b_api_error(q, 413, "the body is larger than --max-body (%zu bytes): send less at once",
		                     q->s->o.max_body);
	if (!q->rt) {
		if (q->known)
			return e2b_api_error(q, 405, "%s is not allowed on %s", q->method, q->path);
		return e2b_api_error(q, 404, "no such endpoint on the E2B listener: %s", q->path);
	}
	unsigned refused = q->rt->upload ? q->refused : q->rt->data ? data_auth(q) : 0;
	if (refused)
		return e2b_api_error(q, refused, "%s", q->message);
	/* a template's upload link carries its own token (the SDK sends no key with it) */
	if (!q->rt->data && q->rt->fn != tm_upload && !control_auth(q))
		return e2b_api_error(q, 401,
		                     "missing or wrong API key: set E2B_API_KEY to a ward token (--token-file)");
	/* proven: the connection no longer counts against its address
	 * (conns.c), for its life with a token, else for this request */
	conn_trust(q->s, q->c);
	return q->rt->fn(q);
}

static bool body_append(struct ereq *q, const char *data, size_t n)
{
	struct server *s = q->s;
	if (q->busy)
		return true;
	if (q->too_big || q->len + n > s->o.max_body) {
		q->too_big = true;
		return true; /* read on, keep nothing: the 413 goes out at the end */
	}
	if (q->len + n + 1 > q->cap) {
		size_t cap = q->cap ? q->cap : 4096;
		while (cap < q->len + n + 1)
			cap *= 2;
		if (cap > s->o.max_body + 1)
			cap = s->o.max_body + 1;
		/* the native listener's budget of held bodies (--max-body-total) */
		if (!body_reserve(s, cap - q->cap)) {
			q->busy = true;
			return true; /* read on, keep nothing: the 503 goes out at the end */
		}
		char *b = realloc(q->body, cap);
		if (!b) {
			__atomic_sub_fetch(&s->body_bytes, cap - q->cap, __ATOMIC_RELAXED);
			return false;
		}
		q->body = b;
		q->cap = cap;
	}
	memcpy(q->body + q->len, data, n);
	q->len += n;
	q->body[q->len] = 0;
	return true;
}

/* The request line's URI as sent (its query too, which a relay to a
 * sandbox's port passes on as it came): the request's record begins here. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	struct ereq *q = calloc(1, sizeof(*q));
	if (q && uri && strlen(uri) < 8192)
		q->uri = strdup(uri);
	return q;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	struct e2b *e = cls;
	struct ereq *q = *ctx;
	(void)version;
	if (!q || !q->c) {
		if (!q)
			q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		q->e = e;
		q->s = e->s;
		q->c = c;
		q->t0 = now_mono();
		snprintf(q->method, sizeof(q->method), "%s", method);
		snprintf(q->path, sizeof(q->path), "%s", url);
		/* the peer's address until a token names the client */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		addr_key(ci ? ci->client_addr : NULL, q->who, sizeof(q->who));
		*ctx = q;
		/* the headers are in: the body and the answer have the request timeout */
		conn_set_deadline(e->s, c, q->t0 + e->s->o.request_timeout);
		/* a sandbox's own port: relayed, its body as it comes */
		int port;
		char id[100];
		if (ports_target(q, &port, id, sizeof(id))) {
			ports_begin(q, port, id);
			return MHD_YES;
		}
		if (vc_begin(q)) /* a volume's content: its own token, its body as it comes */
			return MHD_YES;
		q->rt = route(q, &q->known);
		/* an upload is checked now, and its body goes into the sandbox as it comes */
		if (q->rt && q->rt->upload && !(q->refused = data_auth(q))) {
			conn_trust(e->s, c);
			files_upload_begin(q);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		/* a body that trickles on past the request timeout is cut */
		if (now_mono() - q->t0 > q->s->o.request_timeout) {
			q->late = true;
			return MHD_NO;
		}
		size_t n = *upload_size;
		*upload_size = 0;
		if (q->relay) {
			ports_feed(q, upload, n);
			return MHD_YES;
		}
		if (q->vol) {
			vc_feed(q, upload, n);
			return MHD_YES;
		}
		if (q->rt && q->rt->upload) {
			files_upload_feed(q, upload, n); /* nothing when refused: read, dropped */
			return MHD_YES;
		}
		return body_append(q, upload, n) ? MHD_YES : MHD_NO;
	}
	if (q->relay)
		return ports_answer(q);
	if (q->vol)
		return vc_answer(q);
	return dispatch(q);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	struct e2b *e = cls;
	struct ereq *q = *ctx;
	if (!q)
		return;
	if (!q->c) { /* its head never made a request */
		*ctx = NULL;
		free(q->uri);
		free(q);
		return;
	}
	/* the next request on a kept-alive connection gets its own header time */
	conn_set_deadline(e->s, c, now_mono() + e->s->o.header_timeout);
	conn_idle(e->s, c);
	answer_unhold(e->s, &q->ans, q->ans.bytes);
	*ctx = NULL;
	/* the server's request log and counts, as every listener's */
	int code = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? (int)q->code : 0;
	if (q->late && !q->message[0])
		snprintf(q->message, sizeof(q->message), "the body took longer than --request-timeout");
	struct log_req l = {.client = q->who,
	                    .method = q->method,
	                    .path = q->path,
	                    .cut = conn_cut_reason(e->s, c),
	                    .toe = toe,
	                    .code = code,
	                    .t_start = q->t0};
	log_request(e->s, &l, q->message, sizeof(q->message));
	metrics_count_http(e->s, code);
	files_upload_free(q);
	ports_free(q);
	vc_free(q);
	free(q->uri);
	if (q->x)
		e2b_sbx_put(e, q->x);
	if (q->cap)
		__atomic_sub_fetch(&e->s->body_bytes, q->cap, __ATOMIC_RELAXED);
	free(q->body);
	free(q);
}

int e2b_start(struct server *s)
{
	if (!s->o.e2b_listen[0])
		return 0;
	struct e2b *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	e->s = s;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->mk_lock, NULL);
	pthread_mutex_init(&e->life_lock, NULL);
	pthread_cond_init(&e->mk_cond, NULL);
	s->e2b = e;
	char bound[160];
	e->listen_fd = make_listener(s->o.e2b_listen, bound, sizeof(bound));
	if (e->listen_fd < 0 || e2b_makers_start(e) < 0 || e2b_life_start(e) < 0 || tm_start(e) < 0 || vol_start(e) < 0)
		return -1;
	/* idle connections: the native listener's bound; a stream says
	 * keepalive every E2B_KEEPALIVE_S, well within it */
	unsigned timeout = (unsigned)ceil(fmax(s->o.header_timeout, E2B_KEEPALIVE_S)) + 5;
	e->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0,
	                        NULL, NULL, on_request, e, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s,
	                        MHD_OPTION_LISTEN_SOCKET, e->listen_fd, MHD_OPTION_CONNECTION_LIMIT,
	                        s->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
	                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, e, MHD_OPTION_NOTIFY_CONNECTION,
	                        on_connection, s, MHD_OPTION_URI_LOG_CALLBACK, uri_log, e, MHD_OPTION_END);
	if (!e->d) {
		fprintf(stderr, "ward serve: cannot start the E2B listener on %s\n", bound);
		return -1;
	}
	/* getHost(port) is PORT-ID.DOMAIN: by default one a local browser opens (*.localhost) */
	if (s->o.e2b_domain)
		snprintf(e->domain, sizeof(e->domain), "%s", s->o.e2b_domain);
	else
		snprintf(e->domain, sizeof(e->domain), "localhost:%s", strrchr(bound, ':') + 1);
	log_event(s, "e2b-listening", "%s (E2B_API_URL and E2B_SANDBOX_URL: http://%s)", bound, bound);
	return 0;
}

void e2b_stop(struct server *s)
{
	struct e2b *e = s->e2b;
	if (!e)
		return;
	e->stopping = 1;
	if (e->d)
		MHD_stop_daemon(e->d); /* closes the listening socket; waits for the connections' threads */
	else if (e->listen_fd >= 0)
		close(e->listen_fd);
	e2b_makers_stop(e);
	tm_stop(e);
	vol_stop(e);
	e2b_records_free(e);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->mk_lock);
	pthread_mutex_destroy(&e->life_lock);
	pthread_cond_destroy(&e->mk_cond);
	free(e);
	s->e2b = NULL;
}

void e2b_sweep(struct server *s)
{
	if (s->e2b)
		e2b_prune(s->e2b);
}
