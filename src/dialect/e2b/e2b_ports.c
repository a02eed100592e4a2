/* e2b_ports.c — a server a sandbox runs, reached from outside through the
 * E2B listener (SPEC §18 "Ports"): a request whose Host is PORT-ID.DOMAIN
 * (what getHost(port) gives), or that carries E2b-Sandbox-Id and
 * E2b-Sandbox-Port, for a port that is neither envd's (49983) nor the code
 * interpreter's (49999), is relayed to 127.0.0.1:PORT inside that
 * sandbox's network namespace (ward_session_connect).
 *
 * Plain HTTP, on a worker (a request of the server's life: admission,
 * deadlines, the log): the request goes upstream as HTTP/1.0 (so that the
 * answer is never chunked and ends when the server closes), its body held
 * whole within --max-body (a chunked one answers 411: HTTP/1.0 needs its
 * length), written within the request timeout; the answer's status and
 * headers come back within it, its body as it comes (the client's
 * connection parked while the sandbox's server says nothing).  A sandbox made with
 * network.allowPublicTraffic false wants its traffic token
 * (e2b-traffic-access-token), else 403; an unknown sandbox and a port
 * nothing listens on answer 502 with E2B's JSON, a paused one too unless
 * made with autoResume (then this request resumes it).  Bounded: the answer's
 * head at most 16 KiB within the request timeout; the relay itself lives
 * as long as its two ends (a client that stops reading is MHD's idle
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
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"

#define ENVD_PORT 49983
#define INTERP_PORT 49999
#define HEAD_MAX 16384
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
	uint64_t left;       /* the answer's body still to relay (its Content-Length), or UINT64_MAX */
	struct e2b *e;
	struct server *s;
	struct park park; /* its client's connection, parked until fd has more */
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

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
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

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct head_out *h = cls;
	(void)kind;
	if (!k || !v || hop_header(k) || strpbrk(k, "\r\n") || strpbrk(v, "\r\n"))
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

/* A refusal in E2B's proxy's shape. */
static enum MHD_Result refusal(struct ereq *q, struct relay *r)
{
	json_t *v = json_pack("{s:s,s:s,s:i}", "sandboxId", r->id, "message", r->msg, "code", (int)r->status);
	if (v && r->status == 502)
		json_object_set_new(v, "port", json_integer(r->port));
	snprintf(q->message, sizeof(q->message), "%s", r->msg);
	return e2b_answer_json(q, r->status, v);
}

bool ports_check(struct ereq *q)
{
	struct relay *r = calloc(1, sizeof(*r));
	if (!r)
		return true; /* the worker refuses it */
	r->port = q->port;
	snprintf(r->id, sizeof(r->id), "%.*s", (int)sizeof(r->id) - 1, q->port_id);
	struct e2b_sbx *x = e2b_sbx_get(q->e, q->port_id);
	r->e = q->e;
	if (!x)
		refuse(r, 502, "The sandbox was not found", NULL);
	else if (!traffic_refused(q, x, r) && ports_charge(q->e, r->id, 0) == -EDQUOT)
		charge_refused(r, -EDQUOT); /* spent: its body is never held */
	if (x)
		e2b_sbx_put(q->e, x);
	bool ok = !r->status;
	if (!ok)
		refusal(q, r);
	free(r);
	return ok;
}

static void ports_begin(struct ereq *q, int port, const char *id)
{
	struct relay *r = calloc(1, sizeof(*r));
	if (!r)
		return;
	q->relay = r;
	r->fd = -1;
	r->port = port;
	r->left = UINT64_MAX;
	r->e = q->e;
	const char *upg = e2b_header(q, "Upgrade"), *conn = e2b_header(q, MHD_HTTP_HEADER_CONNECTION);
	r->upgrade = upg && conn && strcasestr(conn, "upgrade") && !strpbrk(upg, "\r\n");
	snprintf(r->id, sizeof(r->id), "%s", id);
	struct e2b_sbx *x = e2b_sbx_get(q->e, id);
	if (!x) {
		refuse(r, 502, "The sandbox was not found", NULL);
		return;
	}
	snprintf(q->who, sizeof(q->who), "%s", x->owner);
	struct sess *ss = NULL;
	if (traffic_refused(q, x, r)) {
		/* answered 403 */
	} else if (e2b_wake(q, x)) /* paused: resumed with autoResume, else 502 (never a frozen server's hang) */
		refuse(r, 502, q->message, NULL);
	else if (!(ss = e2b_sess(q->e, x)))
		refuse(r, 502, "The sandbox was not found", NULL);
	else if (!e2b_header(q, MHD_HTTP_HEADER_CONTENT_LENGTH) && e2b_header(q, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		refuse(r, 411, "a chunked body cannot be relayed to a sandbox's port: send its Content-Length", NULL);
	else if ((r->status = ws_reserve(q->e, id, r->msg, sizeof(r->msg))) != 0)
		; /* over its caps (a relay as a WebSocket): r->msg says which */
	else {
		r->reserved = true;
		char err[300];
		r->fd = ward_session_connect(ss->ws, port, 5.0, err, sizeof(err));
		if (r->fd < 0)
			refuse(r, 502, "The sandbox is running but port is not open", err);
		/* a server that never reads the request holds this worker at
		 * most the request timeout */
		double rt = q->s->o.request_timeout;
		struct timeval tv = {.tv_sec = (time_t)rt, .tv_usec = (suseconds_t)((rt - (double)(time_t)rt) * 1e6)};
		if (r->fd >= 0)
			setsockopt(r->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (ss)
		sess_unref(q->s, ss);
	e2b_sbx_put(q->e, x);
	if (r->fd < 0)
		return;
	/* the request's head, as HTTP/1.0 (its answer is never chunked), an
	 * upgrade's as HTTP/1.1 with its Upgrade headers */
	struct head_out h = {.buf = r->head, .cap = sizeof(r->head)};
	h.len = (size_t)snprintf(h.buf, h.cap, "%s %s HTTP/1.%d\r\n", q->method, q->uri ? q->uri : q->path,
	                         r->upgrade ? 1 : 0);
	if (r->upgrade)
		h.len += (size_t)snprintf(h.buf + h.len, h.cap - h.len, "Connection: Upgrade\r\nUpgrade: %.2000s\r\n",
		                          upg);
	MHD_get_connection_values(q->c, MHD_HEADER_KIND, add_header, &h);
	bool fits = !h.over && h.len + 2 < h.cap;
	if (fits) { /* one write: a second small one would wait on the first's ACK (Nagle) */
		memcpy(h.buf + h.len, "\r\n", 2);
		h.len += 2;
	}
	int rc = fits ? ports_charge(r->e, r->id, h.len + q->len) : 0; /* its head and body, before they go */
	if (rc) {
		charge_refused(r, rc);
		close(r->fd);
		r->fd = -1;
	} else if (!fits || !write_all(r->fd, h.buf, h.len)) {
		refuse(r, h.over ? 431 : 502, "the request's headers are too large, or the sandbox's server closed",
		       NULL);
		close(r->fd);
		r->fd = -1;
	}
}

static void ports_feed(struct ereq *q, const char *p, size_t n)
{
	struct relay *r = q->relay;
	if (r && r->fd >= 0 && !write_all(r->fd, p, n))
		shutdown(r->fd, SHUT_WR); /* the server stopped reading: its answer says what it makes of it */
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
		int rc = k > 0 ? ports_charge(r->e, r->id, (uint64_t)k) : 0;
		if (rc) { /* spent (or the sandbox gone): the answer ends short */
			if (rc == -EDQUOT)
				ports_cut(r->e, r->id, "an answer");
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (k > 0 && r->left != UINT64_MAX)
			r->left -= (uint64_t)k;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 &&
		    errno == EAGAIN) /* nothing yet: parked until the socket has more (the ticker watches it) */
			return conn_park(r->s, &r->park) ? 0 : MHD_CONTENT_READER_END_WITH_ERROR;
		return k > 0 ? k : k == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
	}
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

/* The answer's head read (within the request timeout, while its client
 * stays: client, its connection's fd): its end, or NULL. */
static char *read_head(struct relay *r, double timeout_s, int client)
{
	double until = now_mono() + timeout_s;
	if (!r->upgrade)
		shutdown(r->fd, SHUT_WR); /* the request is all sent */
	for (;;) {
		char *end = memmem(r->head, r->hlen, "\r\n\r\n", 4);
		if (end)
			return end;
		double left = until - now_mono();
		struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = client, .events = POLLRDHUP}};
		if (r->hlen == sizeof(r->head) || left <= 0 ||
		    poll(p, client >= 0 ? 2 : 1, (int)(left * 1000) + 1) <= 0)
			return NULL;
		if (client >= 0 && p[1].revents) /* the client left: its worker is free */
			return NULL;
		ssize_t k = read(r->fd, r->head + r->hlen, sizeof(r->head) - r->hlen);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return NULL;
		r->hlen += (size_t)k;
	}
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

static enum MHD_Result ports_answer(struct ereq *q)
{
	struct relay *r = q->relay;
	if (!r)
		return e2b_api_error(q, 500, "out of memory for the relay");
	if (!r->status && r->fd >= 0) {
		r->hlen = 0;
		char *end = read_head(r, q->s->o.request_timeout, e2b_conn_fd(q));
		unsigned code = 0;
		int rc = 0;
		if (!end || sscanf(r->head, "HTTP/%*d.%*d %3u", &code) != 1 || code < 100 || code > 599)
			refuse(r, 502,
			       "the sandbox's server answered no HTTP head (within the request timeout, 16 KiB)", NULL);
		else if ((rc = ports_charge(r->e, r->id, r->hlen)) != 0) /* its head, and what came with it */
			charge_refused(r, rc);
		else if (r->upgrade && code == 101) {
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
			conn_set_deadline(q->s, q->c, 0);
			/* no longer a pending connection that a full server cuts:
			 * the upgraded ones have their own caps (e2b_ws.c) */
			conn_trust(q->s, q->c);
			return MHD_YES;
		} else {
			*end = 0;
			r->hpos = (size_t)(end - r->head) + 4;
			/* a known length goes as it is, not chunked, through a
			 * RELAY_BLOCK buffer of the answer's own (MHD copies a chunked
			 * one through the connection's 32 KiB pool); one without, or a
			 * bodiless answer, until the server closes (HTTP/1.0) */
			bool bodiless = code < 200 || code == 204 || code == 304 || !strcmp(q->method, "HEAD");
			r->left = bodiless ? UINT64_MAX : head_length(r->head);
			struct MHD_Response *resp =
				MHD_create_response_from_callback(r->left == UINT64_MAX ? MHD_SIZE_UNKNOWN : r->left,
			                                          RELAY_BLOCK, body_read, r, body_free);
			if (!resp)
				return MHD_NO;
			q->relay = NULL; /* the response owns it now */
			r->s = q->s;
			r->park.conn = q->c;
			r->park.fd = r->fd;
			fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) | O_NONBLOCK);
			copy_headers(resp, r->head, NULL);
			q->code = code;
			q->r->code = code;
			q->r->stream = resp;              /* sent by the I/O threads when the run is done */
			conn_set_deadline(q->s, q->c, 0); /* as long as the server sends */
			return MHD_YES;
		}
	}
	return refusal(q, r);
}

/* On a worker: the request relayed (its body held whole, within
 * --max-body), its answer's head read, its body sent as it comes (the
 * connection parked while the sandbox's server says nothing). */
enum MHD_Result ports_relay(struct ereq *q)
{
	/* a queued relay whose client left runs nothing (no connect, no wait upstream) */
	if (e2b_client_gone(e2b_conn_fd(q)))
		return e2b_api_error(q, 502, "the client left before its request to sandbox %s was relayed",
		                     q->port_id);
	ports_begin(q, q->port, q->port_id);
	if (q->len)
		ports_feed(q, q->body, q->len);
	return ports_answer(q);
}
