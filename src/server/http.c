/* http.c — the HTTP glue on libmicrohttpd: the listening socket, the I/O
 * threads' callbacks, and a request's life on them: identify its client,
 * route it, read its whole body, hand it to admission, send its answer
 * (when a worker is done with it), log it and free it.
 *
 * Owns s->d, s->listen_fd and each struct req from its first callback to
 * on_completed (but from its admission until a worker is done with it).
 * Never blocks an I/O thread: no sandbox runs here, a body is read as it
 * comes, and a request that must wait waits in the queue, its connection
 * suspended. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/supervise.h"
#include "server/server.h"

/* A client name from a header: printable, short, no quoting troubles. */
static void sanitize(char *dst, size_t n, const char *src)
{
	size_t k = 0;
	for (; src && *src && k + 1 < n && k < 64; src++) {
		unsigned char ch = (unsigned char)*src;
		dst[k++] = (ch > 32 && ch < 127 && ch != '"' && ch != '\\') ? (char)ch : '_';
	}
	dst[k] = 0;
}

/* An answer made while it is sent (sessions.c makes it): its deadline is
 * its own (the session's end), not the request timeout. */
static enum MHD_Result send_stream(struct req *r)
{
	struct MHD_Response *resp = r->stream;
	r->stream = NULL;
	enum MHD_Result rc = MHD_queue_response(r->conn, r->code, resp);
	MHD_destroy_response(resp);
	r->state = S_ANSWERED;
	return rc;
}

/* Queue r's answer on its connection (from an I/O thread). */
static enum MHD_Result send_answer(struct req *r)
{
	struct server *s = r->srv;
	if (r->stream)
		return send_stream(r);
	if (!r->resp) {
		/* only allocation failures get here: close rather than lie */
		r->code = 0;
		return MHD_NO;
	}
	size_t len = r->resp_len ? r->resp_len : strlen(r->resp);
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, r->resp, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->resp = NULL; /* the response owns it now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype ? r->ctype : "application/json");
	if (r->code == 429 || r->code == 503) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%u", r->retry_after ? r->retry_after : 1);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (r->truncated)
		MHD_add_response_header(resp, "X-Ward-Truncated", "1");
	if (r->code == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ward\"");
	if (r->code == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow ? r->allow : "POST");
	if (r->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (r->ln && r->ln->api->headers)
		r->ln->api->headers(r, resp);
	enum MHD_Result rc = MHD_queue_response(r->conn, r->code, resp);
	MHD_destroy_response(resp);
	r->state = S_ANSWERED;
	/* the whole answer must be taken within the request timeout */
	conn_set_deadline(s, r->conn, now_mono() + s->o.request_timeout);
	return rc;
}

/* The listening socket, made here (CLOEXEC, our choice of address family)
 * and handed to MHD. */
int make_listener(const char *spec, char *bound, size_t boundlen)
{
	char host[128];
	const char *port;
	if (spec[0] == '[') {
		const char *close_br = strchr(spec, ']');
		if (!close_br || close_br[1] != ':')
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(close_br - spec - 1), spec + 1);
		port = close_br + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon)
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int e = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (e) {
		fprintf(stderr, "ward serve: --listen %s: %s\n", spec, gai_strerror(e));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 511) < 0) {
		fprintf(stderr, "ward serve: cannot listen on %s: %s\n", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[64] = "?", p[16] = "?";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(bound, boundlen, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, p);
	return fd;
bad:
	fprintf(stderr, "ward serve: --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:8900 or [::1]:8900\n", spec);
	return -1;
}

/* A new request: its names for the log, its endpoint, and the request
 * timeout as its connection's deadline. */
static struct req *req_new(struct server *s, struct listener *ln, struct MHD_Connection *c, const char *url,
                           const char *method, struct req *r)
{
	if (!r)
		r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->srv = s;
	r->ln = ln;
	r->conn = c;
	r->t_start = now_mono();
	sanitize(r->method, sizeof(r->method), method);
	sanitize(r->path, sizeof(r->path), url);
	if (ln && ln->api->choose)
		r->route = ln->api->choose(r, url, method);
	else
		r->route = ln ? route_find_in(ln->api->routes, ln->api->nroutes, url, method, &r->args, &r->allow)
		              : route_find(url, method, &r->args, &r->allow);
	conn_set_deadline(s, c, r->t_start + s->o.request_timeout);
	return r;
}

/* Who is asking: the token's name, else the listener's client (*named
 * set: it is authorized as a token is), else the peer's address; the quotas
 * count there.  X-Ward-Client (the application holding the token names its
 * own users) only names a sub-client within it.  The token, or NULL. */
static const struct token *identify(struct server *s, struct req *r, bool *named)
{
	struct MHD_Connection *c = r->conn;
	const struct token *tok = NULL;
	if (s->ntokens && r->ln && r->ln->api->token) {
		const char *g = r->ln->api->token(c);
		tok = g ? token_find(s, g) : NULL;
	} else if (s->ntokens)
		tok = authorize(s, c);
	if (tok) {
		snprintf(r->who, sizeof(r->who), "%s", tok->name);
		conn_trust(s, c);
	} else if (r->ln && r->ln->client) {
		/* a listener whose clients send no header (--piston-client):
		 * every request on it is that one client, with its quotas */
		snprintf(r->who, sizeof(r->who), "%s", r->ln->client);
		*named = true;
	} else {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		addr_key(ci ? ci->client_addr : NULL, r->who, sizeof(r->who));
	}
	sanitize(r->sub, sizeof(r->sub), MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Ward-Client"));
	snprintf(r->client, sizeof(r->client), "%s%s%s", r->who, r->sub[0] ? "/" : "", r->sub);
	return tok;
}

/* Whether the body the headers announce may be read: within --max-body,
 * and within what --max-body-total has left; else the 413 / 503. */
static bool body_welcome(struct server *s, struct req *r)
{
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
	if (want > s->o.max_body) {
		set_error(r, 413, "the body is larger than --max-body (%zu bytes)", s->o.max_body);
		return false;
	}
	if (want + __atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED) > s->o.max_body_total) {
		r->retry_after = 1;
		set_error(r, 503,
		          "the runner holds --max-body-total (%zu bytes) of request bodies already; "
		          "retry later",
		          s->o.max_body_total);
		return false;
	}
	return true;
}

/* A request's body framing, as its headers say it: each Content-Length
 * and Transfer-Encoding header counted (MHD keeps them all, but reads the
 * first Content-Length alone). */
struct framing {
	unsigned cl, te;
	bool bad_name;    /* a header name MHD kept from a malformed line (see framing_of) */
	bool cl_bad;      /* a Content-Length that is not a plain decimal number */
	bool not_chunked; /* a transfer coding other than chunked alone */
};

static enum MHD_Result framing_of(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct framing *f = cls;
	(void)kind;
	if (!k)
		return MHD_YES;
	/* MHD 0.9.75 keeps "Transfer-Encoding : chunked" as the name
	 * "Transfer-Encoding ", and a folded line's text at the end of the
	 * name ("Transfer-Encoding:\r\n chunked": "Transfer-Encodingchunked"),
	 * where a proxy may have read a Transfer-Encoding (RFC 9112 §5.1, §5.2) */
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	size_t cl = strlen(MHD_HTTP_HEADER_CONTENT_LENGTH), te = strlen(MHD_HTTP_HEADER_TRANSFER_ENCODING);
	if (!k[0] || k[strspn(k, tchar)] != 0 || (strncasecmp(k, MHD_HTTP_HEADER_CONTENT_LENGTH, cl) == 0 && k[cl]) ||
	    (strncasecmp(k, MHD_HTTP_HEADER_TRANSFER_ENCODING, te) == 0 && k[te]))
		f->bad_name = true;
	else if (strcasecmp(k, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		f->cl++;
		f->cl_bad |= !v || !v[0] || v[strspn(v, "0123456789")] != 0;
	} else if (strcasecmp(k, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		f->te++;
		f->not_chunked |= !v || strcasecmp(v, "chunked") != 0;
	}
	return MHD_YES;
}

/* Whether r's body framing is one that a proxy in front could read
 * otherwise than libmicrohttpd (RFC 9112 §6.3, request smuggling: MHD
 * 0.9.75 reads the first of two Content-Lengths, chunked over a
 * Content-Length, and the bytes past what it read as the next request).
 * A header line MHD misread, Content-Length with Transfer-Encoding,
 * Content-Length twice (even the same), one not a plain number, or
 * Transfer-Encoding twice answer 400; a coding other than chunked 501
 * (MHD would read that body to the connection's end).  In r's API's
 * shape, its connection closed after it: the bytes behind are never read
 * as a request. */
static bool framing_refused(struct req *r)
{
	struct framing f = {0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, framing_of, &f);
	const char *why = f.bad_name      ? "a header line that is not NAME: VALUE (whitespace before the colon, or "
	                                    "a line folded): send each header on one line"
	                  : f.cl && f.te  ? "both Content-Length and Transfer-Encoding: send one of them"
	                  : f.cl > 1      ? "more than one Content-Length: send one"
	                  : f.cl_bad      ? "a Content-Length that is not a decimal number: send the body's length"
	                  : f.te > 1      ? "more than one Transfer-Encoding: send Transfer-Encoding: chunked once"
	                  : f.not_chunked ? "a Transfer-Encoding other than chunked: send the body as it is, or chunked"
	                                  : NULL;
	if (!why)
		return false;
	set_error(r, f.not_chunked && !f.bad_name && !f.cl && f.te == 1 ? 501 : 400,
	          "a request with %s (a proxy could read another body, or another request, than ward did); "
	          "its connection is closed",
	          why);
	r->close = true;
	return true;
}

/* r's listener reads a refused body to its end before answering. */
static bool drains(const struct req *r)
{
	return r->ln && r->ln->api->drain_refused;
}

/* The headers are in: answer at once (an error, or a GET endpoint), or go
 * on to read the body. */
static enum MHD_Result req_begin(struct server *s, struct req *r, const char *method, bool authorized)
{
	const struct route *rt = r->route;
	if (framing_refused(r))
		; /* before anything reads it: answered at once, the connection closed */
	else if (!rt && r->allow)
		set_error(r, 405, "%s %s is not allowed: use %s", r->method, r->path, r->allow);
	else if (!rt && r->ln && r->ln->api->not_found)
		r->ln->api->not_found(s, r);
	else if (!rt)
		set_error(r, 404, "no such endpoint: %s (use /exec, /test, /sessions, /health or /metrics)", r->path);
	else if (!rt->open && s->ntokens && !authorized)
		set_error(r, 401, "missing or wrong token: %s",
		          r->ln && r->ln->api->token_hint ? r->ln->api->token_hint
		                                          : "send Authorization: Bearer <token>");
	else if (rt->check && !rt->check(s, r)) {
		if (drains(r))
			return MHD_YES; /* S_NEW: the body is dropped, never held; the answer goes at its end */
	} else if (rt->answer)
		rt->answer(s, r);
	else if (rt->feed) {
		/* streamed where it goes: checked now, never held */
		if (!rt->prepare || rt->prepare(s, r)) {
			r->state = S_BODY;
			return MHD_YES;
		}
	} else if (body_welcome(s, r)) {
		r->state = S_BODY;
		return MHD_YES; /* read the body */
	} else if (r->code == 413 && drains(r))
		return MHD_YES; /* S_NEW: the body is dropped, the 413 goes at its end */
	return send_answer(r);
}

/* n more bytes of the body, within --max-body and --max-body-total. */
static enum MHD_Result body_append(struct server *s, struct req *r, const char *upload, size_t n)
{
	if (r->len + n > s->o.max_body) {
		/* a chunked body with no Content-Length grew too large: try a
		 * 413 at once; libmicrohttpd 0.9.75 refuses an answer before
		 * the body is complete and closes the connection instead, which
		 * still stops the upload (the log keeps the reason) */
		body_release(s, r);
		set_error(r, 413, "the body is larger than --max-body (%zu bytes)", s->o.max_body);
		if (drains(r)) {
			r->state = S_NEW; /* the rest is dropped; the 413 goes at its end */
			return MHD_YES;
		}
		return send_answer(r);
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		if (cap > s->o.max_body + 1)
			cap = s->o.max_body + 1;
		if (!body_reserve(s, cap - r->cap)) {
			body_release(s, r);
			r->retry_after = 1;
			set_error(r, 503,
			          "the runner holds --max-body-total (%zu bytes) of request bodies already; "
			          "retry later",
			          s->o.max_body_total);
			return send_answer(r); /* as above: MHD 0.9.75 closes instead */
		}
		char *p = realloc(r->body, cap);
		if (!p) {
			__atomic_sub_fetch(&s->body_bytes, cap - r->cap, __ATOMIC_RELAXED);
			return MHD_NO;
		}
		r->body = p;
		r->cap = cap;
	}
	memcpy(r->body + r->len, upload, n);
	r->len += n;
	r->body[r->len] = 0;
	return MHD_YES;
}

/* The whole body is in: check, decode and queue it; answers the errors
 * itself.  Returns true when r was queued (and its connection suspended). */
static bool dispatch(struct server *s, struct req *r)
{
	char err[512];
	/* unhealthy first: a load balancer should move on, whatever the body */
	if (!admit_healthy(s, r))
		return false;
	/* before any parsing, on /test too: see WARD_JSON_MAX_VALUES */
	if (!r->route->raw &&
	    ward_json_check_values(r->body ? r->body : "", r->len, WARD_JSON_MAX_VALUES, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (r->route->prepare && !r->route->feed && !r->route->prepare(s, r))
		return r->state == S_WAIT; /* answered, or answered later (req_defer) */
	if (r->route->streams && !stream_want(s, r))
		return false;
	return admit_and_queue(s, r);
}

static enum MHD_Result on_any_request(struct server *s, struct listener *ln, struct MHD_Connection *c, const char *url,
                                      const char *method, const char *upload, size_t *upload_size, void **ctx)
{
	struct req *r = *ctx;

	if (!r || !r->srv) { /* its first call (r: the URI's record, uri_log) */
		r = req_new(s, ln, c, url, method, r);
		if (!r)
			return MHD_NO;
		*ctx = r;
		bool named = false;
		const struct token *tok = identify(s, r, &named);
		return req_begin(s, r, method, tok != NULL || named);
	}
	if (r->state == S_BODY && *upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->route->feed) {
			size_t took = n;
			if (r->route->feed(r, upload, &took)) {
				*upload_size = n - took; /* the rest once its connection is resumed */
				return MHD_YES;
			}
			r->state = S_NEW; /* the rest is read and dropped; the answer goes at its end */
			return MHD_YES;
		}
		return body_append(s, r, upload, n);
	}
	if (r->state == S_BODY) {
		if (dispatch(s, r))
			return MHD_YES;
		body_release(s, r);
		doc_release(r);
		return send_answer(r);
	}
	if (r->state == S_NEW && *upload_size) { /* a fed body refused midway: dropped */
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->state == S_NEW && r->resp)
		return send_answer(r);
	if (r->state == S_READY) {
		trace_phase("http:answering", r->t_start);
		return send_answer(r);
	}
	if (r->state == S_STREAM) /* the run has begun: its stream goes out as it runs */
		return send_stream(r);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	return on_any_request(cls, NULL, c, url, method, upload, upload_size, ctx);
}

/* A request on a dialect's listener (listeners.c): cls is the listener. */
static enum MHD_Result on_listener_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                           const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	struct listener *ln = cls;
	return on_any_request(ln->s, ln, c, url, method, upload, upload_size, ctx);
}

/* A request's line in the log: code 0 when the connection ended before
 * the answer was sent, and why (written into message when it is empty). */
void log_request(struct server *s, const struct log_req *l, char *message, size_t n)
{
	char t[40];
	rfc3339(t, sizeof(t));
	if (l->toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !message[0]) {
		enum MHD_RequestTerminationCode toe = l->toe;
		const char *why = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout"
		                  : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT  ? "client closed"
		                  : toe == MHD_REQUEST_TERMINATED_READ_ERROR    ? "read error"
		                                                                : "aborted";
		snprintf(message, n, "connection ended before the answer was sent (%s%s)",
		         l->cut ? "cut by the server: " : "", l->cut ? l->cut : why);
	}
	struct ward_log_entry e = {
		.time = t,
		.client = l->client,
		.method = l->method,
		.path = l->path,
		.http_status = l->code,
		.wall_ms = (uint64_t)((now_mono() - l->t_start) * 1000),
		.sandbox_status = l->sandbox_status,
		.message = message[0] ? message : NULL,
	};
	log_write(s, &e);
}

/* Log r and free it (its connection is done with). */
void req_finish(struct server *s, struct req *r, enum MHD_RequestTerminationCode toe, const char *cut, int code)
{
	struct log_req l = {.client = r->client,
	                    .method = r->method,
	                    .path = r->path,
	                    .cut = cut,
	                    .toe = toe,
	                    .code = code,
	                    .t_start = r->t_start,
	                    .sandbox_status = r->sandbox_status};
	log_request(s, &l, r->message, sizeof(r->message));
	body_release(s, r);
	free(r->resp);
	answer_done(s, r); /* MHD frees the answer it sent now */
	doc_release(r);
	sess_release(r);
	if (r->ln && r->ln->api->release)
		r->ln->api->release(r);
	else
		free(r->ext);
	free(r->uri);
	if (r->stream)
		MHD_destroy_response(r->stream);
	stream_release(r);
	free(r);
}

/* The request is over (answered, or the connection died): log it and free
 * it, but a stream whose run still goes on, which its worker ends. */
static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	struct req *r = *ctx;
	struct server *s = r && r->srv ? r->srv : cls;
	if (!r)
		return;
	if (!r->srv) { /* its head never made a request: just its URI's record */
		*ctx = NULL;
		free(r->uri);
		free(r);
		return;
	}
	*ctx = NULL;
	int code = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? (int)r->code : 0;
	const char *cut = conn_cut_reason(s, c);
	/* an orphan is the worker's at once, which may free it before the next
	 * line here: what is needed of r is read first */
	double t_start = r->t_start;
	bool admitted = r->t_admit > 0;
	bool orphan = r->live && stream_orphan(r, toe, cut);
	if (admitted)
		trace_phase("http:completed", t_start);
	metrics_count_http(s, code);
	pthread_mutex_lock(&s->lock);
	if (admitted) /* the worker is done with it (MHD does not end suspended requests), or owns the orphan */
		s->answering--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	/* the next request on a kept-alive connection gets its own header time */
	conn_set_deadline(s, c, now_mono() + s->o.header_timeout);
	conn_idle(s, c);
	if (!orphan)
		req_finish(s, r, toe, cut, code);
}

/* MHD's URL decoding but for %00, which it would decode to a NUL that
 * ends the string there ("a%00/../x" read as "a"): it becomes 0x01, which
 * no path guard lets through (sessions.c refuses control bytes). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	for (char *p = s; (p = strstr(p, "%00")); p += 3)
		memcpy(p, "%01", 3);
	return MHD_http_unescape(s);
}

/* The request line's URI as sent, its query too (an API that relays it
 * wants it raw): the request's record begins here. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	struct req *r = calloc(1, sizeof(*r));
	if (r && uri && strlen(uri) < 8192)
		r->uri = strdup(uri);
	return r;
}

/* MHD on s->listen_fd: pool_threads I/O threads (epoll), the connection
 * limit, and an idle timeout beyond the deadlines that conns.c enforces.
 * The logger comes first: MHD prints what it says about the options before
 * it on stderr itself, and the log is JSON lines only.  -1 with a message. */
struct MHD_Daemon *http_daemon(struct server *s, struct listener *l, int fd, unsigned pool_threads)
{
	double idle = fmax(s->o.header_timeout, s->o.request_timeout);
	if (l && l->api->keepalive_s > idle)
		idle = l->api->keepalive_s;
	unsigned timeout = (unsigned)ceil(idle) + 5;
	MHD_AccessHandlerCallback cb = l ? on_listener_request : on_request;
	void *cls = l ? (void *)l : (void *)s;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (l && l->api->upgrade)
		flags |= MHD_ALLOW_UPGRADE;
	return MHD_start_daemon(
		flags, 0, NULL, NULL, cb, cls, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_THREAD_POOL_SIZE, pool_threads > 1 ? pool_threads : 0u, MHD_OPTION_CONNECTION_LIMIT,
		s->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
		MHD_OPTION_URI_LOG_CALLBACK, l && l->api->uri ? uri_log : NULL, NULL, MHD_OPTION_END);
}

int http_start(struct server *s, const char *bound)
{
	s->d = http_daemon(s, NULL, s->listen_fd, 2u);
	if (!s->d) {
		fprintf(stderr, "ward serve: cannot start the HTTP server on %s\n", bound);
		return -1;
	}
	return 0;
}
