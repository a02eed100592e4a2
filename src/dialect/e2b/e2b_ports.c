/* e2b_ports.c — a server a sandbox runs, reached from outside through the
 * E2B listener (SPEC §18 "Ports"): a request whose Host is PORT-ID.DOMAIN
 * (what getHost(port) gives), or that carries E2b-Sandbox-Id and
 * E2b-Sandbox-Port, for a port that is neither envd's (49983) nor the code
 * interpreter's (49999), is relayed to 127.0.0.1:PORT inside that
 * sandbox's network namespace (ward_session_connect_start).
 *
 * Plain HTTP, a request of the server's life (deadlines, the log): its
 * body held whole within --max-body and its owner's share of the relays'
 * (e2b_ws.c: a stranger's bodies to a public port never take the API's
 * budget), its framing ward's alone (http.c refused a request whose
 * framing a proxy could read otherwise, RFC 9112 §6.3; upstream goes the
 * length of the bytes ward holds, never the client's), then, on
 * the I/O thread, the connect begun and the request written as far as
 * the socket takes it, as HTTP/1.0 (so that the answer is never chunked
 * and ends when the server closes); its
 * connection suspended (req_defer) while the dialect's pump thread
 * (e2b_ws.c) writes the rest and reads the answer's status and headers,
 * then resumes it with them (req_answer): no worker waits on a sandbox's
 * server.  The answer's status is checked: interim ones (1xx) skipped, a
 * 101 to a request that asked for no upgrade a 502, a 204, a 304 and a
 * HEAD's answer sent with no body.  Its body goes as it comes (the
 * client's connection parked while the sandbox's server says nothing).
 * A sandbox made with
 * network.allowPublicTraffic false wants its traffic token
 * (e2b-traffic-access-token), else 403; an unknown sandbox and a port
 * nothing listens on answer 502 with E2B's JSON, a paused one too unless
 * made with autoResume (then this request resumes it, on a worker, which
 * hands the relay to the pump once it runs).  Bounded: the connect within
 * 5 s, the answer's head at most 16 KiB within the request timeout (a
 * client that leaves meanwhile ends the wait); the relay itself lives as
 * long as its two ends (a client that stops reading is MHD's idle
 * timeout's).
 *
 * Each relay holds a room among its sandbox's connections until its
 * answer ends (e2b_ws.c's caps: 429 / 503 past them), and every byte it
 * moves is charged to its sandbox (ports_charge: 403 once its
 * --e2b-port-bytes are spent; a relay under way is cut).  An upgrade
 * (Connection: Upgrade, Upgrade: websocket) goes upstream as HTTP/1.1
 * with its Upgrade headers; an upstream 101 is answered 101 with the
 * upstream's headers, and the two sockets are then pumped both ways by
 * e2b_ws.c; any other answer is relayed as above (its body at most its
 * Content-Length: an HTTP/1.1 server may keep the connection). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"

#define ENVD_PORT 49983
#define INTERP_PORT 49999
#define HEAD_MAX 16384
#define CONNECT_S 5.0            /* a connect the sandbox's backlog holds, at most */
#define RELAY_BLOCK (256 * 1024) /* an answer's reads from upstream, at most */

struct relay {
	int fd;          /* the upstream socket, or -1 */
	unsigned status; /* an error to answer instead (403, 411, 502), or 0 */
	char msg[400];
	int port;
	char id[80];
	char head[HEAD_MAX]; /* the answer's head, and what came after it */
	size_t hlen, hpos;   /* read so far; where the body's first bytes begin */
	bool upgrade;        /* a WebSocket's handshake: HTTP/1.1, its Upgrade headers relayed */
	bool reserved;       /* it holds room in e2b_ws.c's caps */
	size_t interim;      /* the bytes of interim answers (1xx) skipped before its head */
	uint64_t left;       /* the answer's body still to relay (its Content-Length), or UINT64_MAX */
	struct e2b *e;
	struct server *s;
	struct park park; /* its client's connection, parked until fd has more */
	/* until the answer's head is in: the pump's */
	struct ereq *q;
	char out[HEAD_MAX]; /* the request's head */
	size_t olen, sent;  /* its length; what of it and the body went */
	bool connecting;    /* the connect still goes (the sandbox's backlog is full) */
	struct pump_watch w;
};

/* The port and sandbox a request is for, when it is one to relay: by the
 * headers, else by its Host's first label (PORT-ID). */
bool ports_target(struct ereq *q, int *port, char *id, size_t n)
{
	const char *hp = e2b_header(q, "E2b-Sandbox-Port"), *hid = e2b_header(q, "E2b-Sandbox-Id");
	char label[128] = "";
	if (hp && hid) {
		*port = atoi(hp);
		snprintf(id, n, "%s", hid);
	} else {
		const char *host = e2b_header(q, MHD_HTTP_HEADER_HOST);
		size_t k = host ? strcspn(host, ".:") : 0;
		if (!host || host[k] != '.' || k >= sizeof(label))
			return false;
		memcpy(label, host, k);
		label[k] = 0;
		char *dash = strchr(label, '-');
		if (!dash || dash == label || strspn(label, "0123456789") != (size_t)(dash - label))
			return false;
		*port = atoi(label);
		snprintf(id, n, "%s", dash + 1);
	}
	return *port > 0 && *port <= 65535 && *port != ENVD_PORT && *port != INTERP_PORT && id[0];
}

/* Headers that are the hop's own, or the router's: not relayed. */
static bool hop_header(const char *k)
{
	static const char *const hop[] = {"Connection",
	                                  "Keep-Alive",
	                                  "Proxy-Connection",
	                                  "Proxy-Authorization",
	                                  "TE",
	                                  "Trailer",
	                                  "Transfer-Encoding",
	                                  "Upgrade",
	                                  "E2b-Sandbox-Id",
	                                  "E2b-Sandbox-Port",
	                                  "E2B-Traffic-Access-Token",
	                                  "X-Access-Token"};
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strcasecmp(k, hop[i]) == 0)
			return true;
	return false;
}

struct head_out {
	char *buf;
	size_t len, cap;
	bool over;
};

/* A request header relayed: neither the hop's nor its body's framing (the
 * relay sends the length of the body ward holds; Expect was MHD's to
 * answer, the body is all here). */
static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct head_out *h = cls;
	(void)kind;
	if (!k || !v || hop_header(k) || strcasecmp(k, "Content-Length") == 0 || strcasecmp(k, "Expect") == 0 ||
	    strpbrk(k, "\r\n") || strpbrk(v, "\r\n"))
		return MHD_YES;
	size_t need = strlen(k) + strlen(v) + 4;
	if (h->len + need + 32 > h->cap) {
		h->over = true;
		return MHD_NO;
	}
	h->len += (size_t)snprintf(h->buf + h->len, h->cap - h->len, "%s: %s\r\n", k, v);
	return MHD_YES;
}

static void refuse(struct relay *r, unsigned status, const char *msg, const char *why)
{
	r->status = status;
	snprintf(r->msg, sizeof(r->msg), "%.250s%s%.140s%s", msg, why ? " (" : "", why ? why : "", why ? ")" : "");
}

/* x's traffic token wanted and not given: the 403 in r. */
static bool traffic_refused(struct ereq *q, struct e2b_sbx *x, struct relay *r)
{
	if (!x->private_traffic || e2b_token_ok(x, e2b_header(q, "E2B-Traffic-Access-Token")))
		return false;
	refuse(r, 403,
	       "Sandbox is secured with traffic access token. Token header "
	       "'e2b-traffic-access-token' is missing or wrong",
	       NULL);
	return true;
}

/* A refusal in E2B's proxy's shape. */
static enum MHD_Result refusal(struct ereq *q, struct relay *r)
{
	json_t *v = json_pack("{s:s,s:s,s:i}", "sandboxId", r->id, "message", r->msg, "code", (int)r->status);
	if (v && r->status == 502)
		json_object_set_new(v, "port", json_integer(r->port));
	snprintf(q->message, sizeof(q->message), "%s", r->msg);
	return e2b_answer_json(q, r->status, v);
}

int ports_charge(struct e2b *e, const char *id, uint64_t n)
{
	struct e2b_sbx *x = e2b_sbx_get(e, id);
	struct sess *ss = x ? e2b_sess(e, x) : NULL;
	int rc = ss ? ward_session_charge_net(ss->ws, n) : -ESRCH;
	if (ss)
		sess_unref(e->s, ss);
	if (x)
		e2b_sbx_put(e, x);
	if (!rc)
		__atomic_add_fetch(&e->port_bytes, n, __ATOMIC_RELAXED);
	return rc;
}

void ports_cut(struct e2b *e, const char *id, const char *what)
{
	__atomic_add_fetch(&e->port_cut, 1, __ATOMIC_RELAXED);
	log_event(e->s, "e2b-port-bytes", "sandbox %s: %s cut: its --e2b-port-bytes are spent", id, what);
}

/* A charge of r's sandbox that failed (rc): the 403 (its bytes spent:
 * they do not come back, so not a 429 to retry) or the 502 in r. */
static void charge_refused(struct relay *r, int rc)
{
	if (rc == -EDQUOT) {
		__atomic_add_fetch(&r->e->port_refused, 1, __ATOMIC_RELAXED);
		refuse(r, 403,
		       "The sandbox's ports have relayed all the bytes they may (ward's --e2b-port-bytes): "
		       "make a new sandbox, or ask the operator to raise it",
		       NULL);
	} else
		refuse(r, 502, "The sandbox was not found", NULL);
}

/* The bytes r's body may take: a chunked one --max-body, else its
 * Content-Length (its framing checked already, http.c's framing_refused:
 * one plain number, or chunked alone). */
static uint64_t body_want(struct ereq *q)
{
	if (e2b_header(q, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return q->s->o.max_body;
	const char *cl = e2b_header(q, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return cl ? strtoull(cl, NULL, 10) : 0;
}

bool ports_check(struct ereq *q)
{
	struct relay *r = calloc(1, sizeof(*r));
	if (!r)
		return true; /* the worker refuses it */
	r->port = q->port;
	snprintf(r->id, sizeof(r->id), "%.*s", (int)sizeof(r->id) - 1, q->port_id);
	r->e = q->e;
	uint64_t want = 0;
	struct e2b_sbx *x = e2b_sbx_get(q->e, q->port_id);
	if (!x)
		refuse(r, 502, "The sandbox was not found", NULL);
	else if (traffic_refused(q, x, r))
		; /* answered 403 */
	else if (ports_charge(q->e, r->id, 0) == -EDQUOT)
		charge_refused(r, -EDQUOT); /* spent: its body is never held */
	else if ((want = body_want(q)) && want <= q->s->o.max_body) {
		/* its body in its owner's share of the relays' (a stranger's
		 * bodies to a public port never take what the API's calls need) */
		snprintf(q->who, sizeof(q->who), "%s", x->owner);
		if ((r->status = relay_body_take(q->e, q->who, want, r->msg, sizeof(r->msg))) != 0)
			q->r->retry_after = 1;
		else
			q->relay_body = want;
	}
	if (x)
		e2b_sbx_put(q->e, x);
	bool ok = !r->status;
	if (!ok)
		refusal(q, r);
	free(r);
	return ok;
}

/* q's relay begun (q->relay): refused (its status set), the connect begun
 * and the request's head made (its fd), or (true) left to a worker: its
 * sandbox is paused and made with autoResume (a resume takes as long as
 * its files' copy), and this is the I/O thread (on_worker false). */
static bool ports_begin(struct ereq *q, bool on_worker)
{
	struct relay *r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	const char *id = q->port_id;
	q->relay = r;
	r->q = q;
	r->fd = -1;
	r->port = q->port;
	r->left = UINT64_MAX;
	r->e = q->e;
	r->s = q->s;
	const char *upg = e2b_header(q, "Upgrade"), *conn = e2b_header(q, MHD_HTTP_HEADER_CONNECTION);
	r->upgrade = upg && conn && strcasestr(conn, "upgrade") && !strpbrk(upg, "\r\n");
	snprintf(r->id, sizeof(r->id), "%.*s", (int)sizeof(r->id) - 1, id);
	struct e2b_sbx *x = e2b_sbx_get(q->e, id);
	if (!x) {
		refuse(r, 502, "The sandbox was not found", NULL);
		return false;
	}
	if (!on_worker && x->auto_resume && e2b_is_paused(q->e, x)) {
		e2b_sbx_put(q->e, x);
		ports_free(q); /* begun again on the worker */
		return true;
	}
	snprintf(q->who, sizeof(q->who), "%s", x->owner);
	struct sess *ss = NULL;
	if (traffic_refused(q, x, r)) {
		/* answered 403 */
	} else if (e2b_wake(q, x)) /* paused: resumed with autoResume, else 502 (never a frozen server's hang) */
		refuse(r, 502, q->message, NULL);
	else if (!(ss = e2b_sess(q->e, x)))
		refuse(r, 502, "The sandbox was not found", NULL);
	else if ((r->status = ws_reserve(q->e, id, x->owner, r->msg, sizeof(r->msg))) != 0)
		; /* over its caps (a relay as a WebSocket): r->msg says which */
	else {
		r->reserved = true;
		char err[300];
		r->fd = ward_session_connect_start(ss->ws, r->port, &r->connecting, err, sizeof(err));
		if (r->fd < 0)
			refuse(r, 502, "The sandbox is running but port is not open", err);
	}
	if (ss)
		sess_unref(q->s, ss);
	e2b_sbx_put(q->e, x);
	if (r->fd < 0)
		return false;
	/* the request's head, as HTTP/1.0 (its answer is never chunked), an
	 * upgrade's as HTTP/1.1 with its Upgrade headers */
	struct head_out h = {.buf = r->out, .cap = sizeof(r->out)};
	h.len = (size_t)snprintf(h.buf, h.cap, "%s %s HTTP/1.%d\r\n", q->method, q->uri ? q->uri : q->path,
	                         r->upgrade ? 1 : 0);
	if (r->upgrade)
		h.len += (size_t)snprintf(h.buf + h.len, h.cap - h.len, "Connection: Upgrade\r\nUpgrade: %.2000s\r\n",
		                          upg);
	MHD_get_connection_values(q->c, MHD_HEADER_KIND, add_header, &h);
	/* the body's length: the bytes ward holds (MHD decoded a chunked one) */
	size_t blen = q->r->body ? q->r->len : 0;
	if (blen || e2b_header(q, MHD_HTTP_HEADER_CONTENT_LENGTH) || e2b_header(q, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		h.len += (size_t)snprintf(h.buf + h.len, h.cap > h.len ? h.cap - h.len : 0, "Content-Length: %zu\r\n",
		                          blen);
	int rc = 0;
	if (h.over || h.len + 2 >= h.cap)
		refuse(r, 431, "the request's headers are too large", NULL);
	else if ((rc = ports_charge(r->e, r->id, h.len + 2 + blen)) != 0)
		charge_refused(r, rc); /* its head and body, before they go */
	if (r->status) {
		close(r->fd);
		r->fd = -1;
		return false;
	}
	memcpy(h.buf + h.len, "\r\n", 2);
	r->olen = h.len + 2;
	return false;
}

/* The request's head and body to the upstream, as far as its socket
 * takes them now (head and body in one call: a second small write would
 * wait on the first's ACK, Nagle); a server that stopped reading gets no
 * more (its answer says what it makes of it). */
static void relay_send(struct relay *r)
{
	const struct req *rq = r->q->r;
	size_t blen = rq->body ? rq->len : 0;
	while (r->sent < r->olen + blen) {
		struct iovec v[2];
		int n = 0;
		if (r->sent < r->olen)
			v[n++] = (struct iovec){r->out + r->sent, r->olen - r->sent};
		size_t boff = r->sent > r->olen ? r->sent - r->olen : 0;
		if (boff < blen)
			v[n++] = (struct iovec){rq->body + boff, blen - boff};
		struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
		ssize_t k = sendmsg(r->fd, &m, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k < 0)
			break;
		r->sent += (size_t)k;
	}
	r->sent = r->olen + blen;
	if (!r->upgrade)
		shutdown(r->fd, SHUT_WR); /* the request is all sent */
}

static bool relay_sent(const struct relay *r)
{
	const struct req *rq = r->q->r;
	return r->sent >= r->olen + (rq->body ? rq->len : 0);
}

/* On the pump thread: the connect's end, the request written, the
 * answer's head read (at most HEAD_MAX); true when that is done, or the
 * relay refused (502: no head within the request timeout, 16 KiB, or a
 * server that closed first; the client left; 503: the server stops). */
static bool relay_ready(struct pump_watch *w, int i, unsigned ev)
{
	struct relay *r = w->arg;
	if (i < 0) {
		if (ev == PUMP_STOP)
			refuse(r, 503, "the server is stopping: retry on another runner", NULL);
		else if (r->connecting)
			refuse(r, 502, "The sandbox is running but port is not open",
			       "its server accepts no connection: its backlog is full");
		else
			refuse(r, 502,
			       "the sandbox's server answered no HTTP head (within the request timeout, 16 KiB)",
			       ev ? "it cannot be watched" : NULL);
		return true;
	}
	if (i == 1) {
		refuse(r, 502, "the client left before the sandbox's server answered", NULL);
		return true;
	}
	if (r->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err) {
			refuse(r, 502, "The sandbox is running but port is not open", strerror(err));
			return true;
		}
		r->connecting = false;
		w->deadline = now_mono() + r->s->o.request_timeout;
	}
	if (!relay_sent(r))
		relay_send(r);
	w->events[0] = EPOLLIN | (relay_sent(r) ? 0 : EPOLLOUT);
	if (!(ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return false;
	/* (the interim answers skipped count in the 16 KiB) */
	ssize_t k = read(r->fd, r->head + r->hlen, sizeof(r->head) - r->hlen - r->interim);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return false;
	if (k > 0)
		r->hlen += (size_t)k;
	bool whole;
	for (;;) {
		char *end = memmem(r->head, r->hlen, "\r\n\r\n", 4);
		unsigned code = 0;
		whole = end != NULL;
		if (!end || sscanf(r->head, "HTTP/%*d.%*d %3u", &code) != 1 || code < 100 || code > 199 || code == 101)
			break;
		/* an interim answer (100 Continue, 102, 103 Early Hints): not
		 * the answer, which is the next head (the client had its own
		 * 100 from MHD; the body is all sent) */
		size_t n = (size_t)(end - r->head) + 4;
		memmove(r->head, r->head + n, r->hlen - n);
		r->hlen -= n;
		r->interim += n;
	}
	if (!whole && (k <= 0 || r->hlen + r->interim == sizeof(r->head)))
		refuse(r, 502, "the sandbox's server answered no HTTP head (within the request timeout, 16 KiB)",
		       k < 0    ? strerror(errno)
		       : k == 0 ? "it closed first"
		                : NULL);
	return whole || r->status;
}

static enum MHD_Result relay_answer(struct ereq *q, struct relay *r);

/* Why, for the log's line (a worker's run does it for its own). */
static void relay_logged(struct ereq *q)
{
	if (!q->r->message[0] && q->message[0])
		snprintf(q->r->message, sizeof(q->r->message), "%s", q->message);
}

/* The pump is done with r: the client's connection resumed with the
 * answer (or its refusal). */
static void relay_finish(struct pump_watch *w)
{
	struct relay *r = w->arg;
	struct ereq *q = r->q;
	struct req *rq = q->r;
	struct server *s = r->s;
	if (!r->status && !r->upgrade && !relay_sent(r))
		shutdown(r->fd, SHUT_WR); /* answered before it took the whole body: the rest is not sent */
	relay_answer(q, r);               /* r may be the answer's from here on */
	relay_logged(q);
	req_answer(s, rq);
}

/* r to the pump, the client's connection already suspended. */
static void relay_watch(struct relay *r)
{
	if (!r->connecting)
		relay_send(r); /* a small request goes at once */
	bool all = relay_sent(r);
	r->w = (struct pump_watch){
		.fd = {r->fd, e2b_conn_fd(r->q)},
		.events = {r->connecting ? EPOLLOUT : EPOLLIN | (all ? 0 : EPOLLOUT), EPOLLRDHUP},
		.deadline = now_mono() + (r->connecting ? CONNECT_S : r->s->o.request_timeout),
		.ready = relay_ready,
		.finish = relay_finish,
		.arg = r,
	};
	if (!pump_watch(r->e, &r->w)) {
		refuse(r, 503, "the server is stopping: retry on another runner", NULL);
		relay_finish(&r->w);
	}
}

void ports_free(struct ereq *q)
{
	struct relay *r = q->relay;
	if (!r)
		return;
	if (r->reserved) /* a relay that did not stream */
		ws_unreserve(r->e, r->id);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	q->relay = NULL;
}

/* The answer's body: what came with its head, then the socket to its end. */
static ssize_t body_read(void *cls, uint64_t off, char *out, size_t max)
{
	struct relay *r = cls;
	(void)off;
	if (!r->left)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (max > r->left)
		max = (size_t)r->left;
	if (r->hpos < r->hlen) {
		size_t k = r->hlen - r->hpos < max ? r->hlen - r->hpos : max;
		memcpy(out, r->head + r->hpos, k);
		r->hpos += k;
		if (r->left != UINT64_MAX)
			r->left -= k;
		return (ssize_t)k;
	}
	for (;;) {
		ssize_t k = read(r->fd, out, max);
		if (k > 0 && r->left != UINT64_MAX)
			r->left -= (uint64_t)k;
		int rc = k > 0 ? ports_charge(r->e, r->id, (uint64_t)k) : 0;
		if (rc) { /* spent (or the sandbox gone): the answer ends short */
			if (rc == -EDQUOT)
				ports_cut(r->e, r->id, "an answer");
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 &&
		    errno == EAGAIN) /* nothing yet: parked until the socket has more (the ticker watches it) */
			return conn_park(r->s, &r->park) ? 0 : MHD_CONTENT_READER_END_WITH_ERROR;
		return k > 0 ? k : k == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static ssize_t no_body(void *cls, uint64_t off, char *out, size_t max)
{
	(void)cls;
	(void)off;
	(void)out;
	(void)max;
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void body_free(void *cls)
{
	struct relay *r = cls;
	if (r->reserved) /* its room among its sandbox's connections */
		ws_unreserve(r->e, r->id);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

/* The upstream's head lines (after its status line) as the answer's
 * headers, the hop's own and Content-Length left out (keep: the one hop
 * header kept, an upgrade's Upgrade). */
static void copy_headers(struct MHD_Response *resp, char *head, const char *keep)
{
	char *save = NULL;
	strtok_r(head, "\r\n", &save); /* the status line */
	for (char *l = strtok_r(NULL, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save)) {
		char *colon = strchr(l, ':');
		if (!colon)
			continue;
		*colon = 0;
		const char *v = colon + 1 + strspn(colon + 1, " \t");
		if (strcasecmp(l, "Content-Length") != 0 && (!hop_header(l) || (keep && strcasecmp(l, keep) == 0)))
			MHD_add_response_header(resp, l, v);
	}
}

/* The head's Content-Length (the head NUL-terminated), or UINT64_MAX:
 * none, or not one number. */
static uint64_t head_length(const char *head)
{
	for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n"))
		if (strncasecmp(l + 2, "Content-Length:", 15) == 0) {
			const char *v = l + 17 + strspn(l + 17, " \t");
			char *e;
			errno = 0;
			unsigned long long n = strtoull(v, &e, 10);
			return e == v || errno || *v == '-' || (*e && !strchr(" \t\r", *e)) ? UINT64_MAX : (uint64_t)n;
		}
	return UINT64_MAX;
}

/* Past the 101: the client's socket and the upstream's to e2b_ws.c. */
static void upgraded(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra_in, size_t extra_size,
                     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct relay *r = cls;
	(void)c;
	(void)req_cls;
	r->reserved = false; /* ws_adopt holds the room now, or gives it back */
	int up = r->fd;
	r->fd = -1;
	ws_adopt(r->e, r->id, sock, urh, up, r->head + r->hpos, r->hlen - r->hpos, extra_in, extra_size);
}

/* Whether all of the answer's body (its Content-Length) is in r's buffer,
 * what came after its head, once the socket was read again (a server
 * sends its head and a small body in two writes). */
static bool relay_whole(struct relay *r)
{
	if (r->left == UINT64_MAX || r->left > sizeof(r->head) - r->hpos)
		return false;
	if (r->hlen - r->hpos < r->left) {
		ssize_t k = read(r->fd, r->head + r->hlen, sizeof(r->head) - r->hlen);
		if (k > 0)
			r->hlen += (size_t)k;
	}
	return r->hlen - r->hpos >= r->left;
}

/* The answer's response, its head read (r->left set): a HEAD's with the
 * server's length and no body; one whole in r's buffer, sent from it;
 * else read from the upstream as it comes (the response owns r then);
 * NULL out of memory. */
static struct MHD_Response *answer_of(struct ereq *q, struct relay *r, bool whole)
{
	uint64_t told = head_length(r->head);
	struct MHD_Response *resp;
	if (!strcmp(q->method, "HEAD") && told != UINT64_MAX) /* (MHD never calls a HEAD's reader) */
		resp = MHD_create_response_from_callback(told, RELAY_BLOCK, no_body, NULL, NULL);
	else if (whole) /* sent with its head, in one write; the relay is q's */
		resp = MHD_create_response_from_buffer((size_t)r->left, r->head + r->hpos, MHD_RESPMEM_MUST_COPY);
	else {
		resp = MHD_create_response_from_callback(r->left == UINT64_MAX ? MHD_SIZE_UNKNOWN : r->left,
		                                         RELAY_BLOCK, body_read, r, body_free);
		if (resp) {
			q->relay = NULL; /* the response owns it now */
			r->park.conn = q->c;
			r->park.fd = r->fd;
		}
		return resp;
	}
	if (resp) { /* the upstream is done with */
		close(r->fd);
		r->fd = -1;
	}
	return resp;
}

/* r's answer (its head in, or its refusal) as q's. */
static enum MHD_Result relay_answer(struct ereq *q, struct relay *r)
{
	if (!r->status) {
		char *end = memmem(r->head, r->hlen, "\r\n\r\n", 4);
		unsigned code = 0;
		int rc = 0;
		if (!end || sscanf(r->head, "HTTP/%*d.%*d %3u", &code) != 1 || code < 100 || code > 599)
			refuse(r, 502,
			       "the sandbox's server answered no HTTP head (within the request timeout, 16 KiB)", NULL);
		else if ((rc = ports_charge(r->e, r->id, r->interim + r->hlen)) != 0) /* its heads, and after */
			charge_refused(r, rc);
		else if (code == 101 && !r->upgrade)
			refuse(r, 502,
			       "the sandbox's server switched protocols (101) for a request that asked for no upgrade",
			       NULL);
		else if (code == 101) {
			/* the relay stays q's (freed when the connection ends): upgraded() takes its socket */
			struct MHD_Response *resp = MHD_create_response_for_upgrade(upgraded, r);
			if (!resp)
				return MHD_NO;
			*end = 0;
			r->hpos = (size_t)(end - r->head) + 4;
			copy_headers(resp, r->head, "Upgrade");
			q->code = code;
			q->r->code = code;
			q->r->stream = resp;
			/* no longer a pending connection that a full server cuts:
			 * the upgraded ones have their own caps (e2b_ws.c) */
			conn_trust(q->s, q->c);
			return MHD_YES;
		} else {
			*end = 0;
			r->hpos = (size_t)(end - r->head) + 4;
			/* a known length goes as it is, not chunked, through a
			 * RELAY_BLOCK buffer of the answer's own (MHD copies a chunked
			 * one through the connection's 32 KiB pool); one without until
			 * the server closes (HTTP/1.0); a bodiless answer (204, 304, to
			 * a HEAD) with none, whatever the server sent after its head */
			bool bodiless = code == 204 || code == 304 || !strcmp(q->method, "HEAD");
			r->left = bodiless ? 0 : head_length(r->head);
			struct MHD_Response *resp;
			size_t had = r->hlen;
			bool whole = relay_whole(r);
			if (r->hlen > had && (rc = ports_charge(r->e, r->id, r->hlen - had)) != 0) {
				close(r->fd); /* the rest of its body: spent before it went */
				r->fd = -1;
				charge_refused(r, rc);
				return refusal(q, r);
			}
			if (!(resp = answer_of(q, r, whole)))
				return MHD_NO;
			copy_headers(resp, r->head, NULL);
			q->code = code;
			q->r->code = code;
			q->r->stream = resp; /* sent by the I/O threads once resumed: as long as the server sends */
			return MHD_YES;
		}
	}
	return refusal(q, r);
}

/* With its body (prepare, on the I/O thread): begun here, its answer's
 * head awaited by the pump, the connection suspended meanwhile (false);
 * or answered now (false); or (true) to a worker, which resumes its
 * sandbox first (ports_relay). */
bool ports_prepare(struct ereq *q)
{
	if (ports_begin(q, false))
		return true;
	struct relay *r = q->relay;
	if (!r)
		e2b_api_error(q, 500, "out of memory for the relay");
	else if (r->fd < 0) {
		refusal(q, r);
		relay_logged(q);
	} else {
		req_defer(q->s, q->r);
		relay_watch(r);
	}
	return false;
}

static void ports_handoff(struct req *rq)
{
	struct ereq *q = rq->ext;
	relay_watch(q->relay);
}

/* On a worker: a relay to a paused sandbox (autoResume) resumes it, then
 * goes to the pump once the worker lets go of it (r->handoff). */
enum MHD_Result ports_relay(struct ereq *q)
{
	/* a queued relay whose client left runs nothing (no connect, no wait upstream) */
	if (e2b_client_gone(e2b_conn_fd(q)))
		return e2b_api_error(q, 502, "the client left before its request to sandbox %s was relayed",
		                     q->port_id);
	ports_begin(q, true);
	struct relay *r = q->relay;
	if (!r)
		return e2b_api_error(q, 500, "out of memory for the relay");
	if (r->fd < 0)
		return refusal(q, r);
	q->r->handoff = ports_handoff;
	return MHD_YES;
}
