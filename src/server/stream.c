/* stream.c — a run's answer streamed as it runs (SPEC §12): POST /exec,
 * POST /test and POST /sessions/{id}/exec with "Accept:
 * application/x-ndjson" (or text/event-stream) answer 200 at once when the
 * run begins, then one event a line as the program writes, then the
 * result.
 *
 * The worker's run watches the head of the output through a socket pair
 * (ward_request.observe_fd: libward sends each piece as one message and
 * never waits; what the pair's buffer does not take is dropped and
 * announced).  The I/O threads read the other end when MHD asks for more
 * (struct live, live_read): what is there is joined into one event per
 * stream (at most LIVE_CHUNK bytes), a UTF-8 sequence cut between two
 * pieces is carried to the next, and a stream with nothing to send parks
 * its connection until the ticker (session_api.c) wakes it.  So a slow
 * client never slows the program nor holds a worker: after the run the
 * worker leaves the result with the stream and moves on.  Closing the
 * read end (the client went away) cancels the run at once (libward
 * watches for it).
 *
 * Owns struct live.  Its lock guards done, gone, why, toe and the refs;
 * the rest is the worker's until the run begins and the I/O thread's
 * after.  The request itself stays the worker's until stream_finish; a
 * connection that ends before that leaves the request to the worker to
 * log and free (stream_orphan). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server.h"
#include "wire/jsonw.h"
#include "wire/utf8.h"

#define LIVE_CHUNK 65536   /* the most one event carries */
#define LIVE_SNDBUF 262144 /* the socket pair's buffer: what waits for a slow client */

struct live {
	struct park park;
	struct server *s;
	pthread_mutex_t lock;
	unsigned refs; /* the request's, the response's */
	bool sse;
	bool raw;      /* the result is itself the last event, "message" (stream_start_messages) */
	bool started;  /* the worker: the run has begun, the stream is answered */
	bool done;     /* the worker has left the result */
	bool gone;     /* the connection ended before that: the worker ends the request */
	char why[160]; /* then: the cut's reason, or "" */
	enum MHD_RequestTerminationCode toe;
	int rfd, wfd;      /* the socket pair; wfd is the run's observe_fd */
	uint64_t head_cap; /* what the result keeps of a stream's start */
	uint64_t total[2]; /* what the program wrote to each, once done (UINT64_MAX: not known) */
	/* the I/O thread's, from the run's start */
	uint64_t seen[2];          /* bytes of each stream sent or dropped so far */
	unsigned char carry[2][4]; /* a UTF-8 sequence's start, cut off */
	size_t ncarry[2];
	int cur;    /* the stream pend holds, -1 none */
	char *pend; /* its bytes not yet sent, carry first */
	size_t npend;
	char *msg; /* one message */
	char *out; /* events ready for MHD */
	size_t out_len, out_pos, out_cap;
	char *result; /* the last event, once done */
	bool ended;
	/* whole events made by the worker (a judge's tests), under lock,
	 * waiting for the I/O thread */
	char *ev;
	size_t ev_len, ev_cap;
};

/* A message on the socket pair that says: events are waiting (libward's
 * own messages are WARD_OBSERVE_STDOUT / _STDERR, maybe | DROPPED). */
#define LIVE_EVENTS 0x40

static const char *const stream_names[2] = {"stdout", "stderr"};

/* Which stream the client asked for: 1 NDJSON, 2 server-sent events, 0 none. */
static int accept_kind(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	if (!a)
		return 0;
	const char *nd = strcasestr(a, "application/x-ndjson");
	const char *ev = strcasestr(a, "text/event-stream");
	if (nd && (!ev || nd < ev))
		return 1;
	return ev ? 2 : 0;
}

/* On the I/O thread, the body checked: r streams when its client asks.
 * false with a 503 set when the stream cannot be made. */
bool stream_want(struct server *s, struct req *r)
{
	int kind = accept_kind(r->conn);
	if (!kind)
		return true;
	struct live *l = calloc(1, sizeof(*l));
	int sv[2];
	if (!l || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
		free(l);
		r->retry_after = 1;
		set_error(r, 503,
		          "cannot make the output stream: %s; retry later, or ask without Accept: "
		          "application/x-ndjson",
		          strerror(errno));
		return false;
	}
	int buf = LIVE_SNDBUF;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	pthread_mutex_init(&l->lock, NULL);
	l->s = s;
	l->refs = 1;
	l->sse = kind == 2;
	l->rfd = sv[0];
	l->wfd = sv[1];
	l->cur = -1;
	l->total[0] = l->total[1] = UINT64_MAX;
	l->park.conn = r->conn;
	l->park.fd = l->rfd; /* the ticker resumes it when the run sends something */
	r->live = l;
	return true;
}

static void live_unref(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	bool last = --l->refs == 0;
	pthread_mutex_unlock(&l->lock);
	if (!last)
		return;
	if (l->rfd >= 0)
		close(l->rfd);
	if (l->wfd >= 0)
		close(l->wfd);
	pthread_mutex_destroy(&l->lock);
	free(l->pend);
	free(l->msg);
	free(l->out);
	free(l->result);
	free(l->ev);
	free(l);
}

/* The request is freed: its hold on the stream goes. */
void stream_release(struct req *r)
{
	if (r->live)
		live_unref(r->live);
	r->live = NULL;
}

bool stream_started(const struct req *r)
{
	return r->live && r->live->started;
}

bool stream_gone(struct req *r)
{
	struct live *l = r->live;
	if (!l)
		return false;
	pthread_mutex_lock(&l->lock);
	bool gone = l->gone;
	pthread_mutex_unlock(&l->lock);
	return gone;
}

/* ---- the I/O thread's side ---- */

/* n more bytes of events; false when out of memory. */
static bool out_add(struct live *l, const char *p, size_t n)
{
	if (l->out_len + n > l->out_cap) {
		size_t cap = l->out_cap ? l->out_cap : 4096;
		while (cap < l->out_len + n)
			cap *= 2;
		char *o = realloc(l->out, cap);
		if (!o)
			return false;
		l->out = o;
		l->out_cap = cap;
	}
	memcpy(l->out + l->out_len, p, n);
	l->out_len += n;
	return true;
}

/* One event: its JSON framed as a line, or as a server-sent event. */
static void out_event(struct live *l, const char *name, char *json, size_t len)
{
	if (!json)
		return;
	if (l->sse) {
		out_add(l, "event: ", 7);
		out_add(l, name, strlen(name));
		out_add(l, "\ndata: ", 7);
	}
	out_add(l, json, len);
	out_add(l, l->sse ? "\n\n" : "\n", l->sse ? 2 : 1);
	free(json);
}

struct chunk_arg {
	const char *stream, *data;
	size_t len;
	uint64_t dropped;
};

static void emit_chunk(struct jw *w, const void *arg)
{
	const struct chunk_arg *a = arg;
	jw_object_begin(w);
	jw_key(w, "stream");
	jw_cstring(w, a->stream);
	jw_member_string(w, "data", a->data, a->len);
	if (a->dropped)
		jw_member_int(w, "dropped", (int64_t)a->dropped);
	jw_object_end(w);
}

static void out_chunk(struct live *l, int i, const char *data, size_t len, uint64_t dropped)
{
	struct chunk_arg a = {stream_names[i], data, len, dropped};
	size_t n = 0;
	char *j = jw_build(emit_chunk, &a, &n);
	out_event(l, stream_names[i], j, n);
}

/* The pending bytes as an event; a UTF-8 sequence cut at their end is
 * carried to the stream's next bytes, unless whole is set (nothing
 * follows: it is sent as it is, and reads as U+FFFD). */
static void pend_flush(struct live *l, bool whole)
{
	if (l->cur < 0)
		return;
	int i = l->cur;
	size_t keep = whole ? 0 : utf8_partial_tail((const unsigned char *)l->pend, l->npend);
	if (l->npend > keep)
		out_chunk(l, i, l->pend, l->npend - keep, 0);
	memcpy(l->carry[i], l->pend + l->npend - keep, keep);
	l->ncarry[i] = keep;
	l->npend = 0;
	l->cur = -1;
}

/* What is pending is stream i's from here on: the other's goes out, and
 * what was carried of i (an unfinished UTF-8 sequence) begins it. */
static void pend_switch(struct live *l, int i)
{
	if (l->cur != i) {
		pend_flush(l, false);
		l->cur = i;
		memcpy(l->pend, l->carry[i], l->ncarry[i]);
		l->npend = l->ncarry[i];
		l->ncarry[i] = 0;
	}
}

/* Stream i's bytes, joined to what is pending of it. */
static void pend_add(struct live *l, int i, const char *p, size_t n)
{
	pend_switch(l, i);
	memcpy(l->pend + l->npend, p, n);
	l->npend += n;
	l->seen[i] += n;
	if (l->npend >= LIVE_CHUNK)
		pend_flush(l, false);
}

/* Bytes of stream i the client did not keep up with: a marker event. */
static void dropped_event(struct live *l, int i, uint64_t n)
{
	pend_switch(l, i);
	pend_flush(l, true);
	l->seen[i] += n;
	char m[128];
	int k = snprintf(m, sizeof(m), "\n[ward: %llu bytes dropped: the client did not keep up]\n",
	                 (unsigned long long)n);
	out_chunk(l, i, m, (size_t)k, n);
}

/* The events the worker left, into what goes out. */
static void take_events(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	if (l->ev_len && out_add(l, l->ev, l->ev_len))
		l->ev_len = 0;
	pthread_mutex_unlock(&l->lock);
}

/* The run is over: what was carried, what was dropped and not announced
 * yet (libward announces a drop with its next piece: there was none),
 * then the result. */
static void live_end(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	char *res = l->result;
	l->result = NULL;
	uint64_t total[2] = {l->total[0], l->total[1]};
	pthread_mutex_unlock(&l->lock);
	pend_flush(l, false);
	take_events(l);
	for (int i = 0; i < 2; i++) {
		uint64_t head = total[i] < l->head_cap ? total[i] : l->head_cap;
		if (total[i] != UINT64_MAX && l->seen[i] < head)
			dropped_event(l, i, head - l->seen[i]);
	}
	for (int i = 0; i < 2; i++) {
		/* a head spent: the rest of a cut sequence comes in the result */
		if (l->ncarry[i] && l->seen[i] < l->head_cap)
			out_chunk(l, i, (const char *)l->carry[i], l->ncarry[i], 0);
		l->ncarry[i] = 0;
	}
	if (res)
		out_event(l, l->raw ? "message" : "result", res, strlen(res));
	l->ended = true;
}

/* What the run has sent since, as events, up to about LIVE_CHUNK bytes. */
static void live_fill(struct live *l)
{
	while (l->out_len < LIVE_CHUNK) {
		ssize_t n = recv(l->rfd, l->msg, 1 + WARD_OBSERVE_MAX, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) { /* the worker closed its end: the result is there */
			live_end(l);
			return;
		}
		unsigned char id = (unsigned char)l->msg[0];
		if (id == LIVE_EVENTS) {
			take_events(l);
			continue;
		}
		int i = (id & ~WARD_OBSERVE_DROPPED) == WARD_OBSERVE_STDERR ? 1 : 0;
		if (id & WARD_OBSERVE_DROPPED) {
			uint64_t cnt = 0;
			for (int k = 0; k < 8 && k + 1 < n; k++)
				cnt |= (uint64_t)(unsigned char)l->msg[1 + k] << (8 * k);
			dropped_event(l, i, cnt);
		} else {
			pend_add(l, i, l->msg + 1, (size_t)n - 1);
		}
	}
	pend_flush(l, false);
}

/* Has the client closed its connection?  MHD notices only when it sends,
 * and a stream with nothing to send sends nothing: its socket is asked
 * directly (a client that shuts its side for writing counts as gone). */
static bool client_gone(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	struct pollfd pf = {.fd = ci->connect_fd, .events = POLLRDHUP};
	return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t live_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct live *l = cls;
	(void)pos;
	if (l->out_pos == l->out_len) {
		l->out_pos = l->out_len = 0;
		if (l->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		live_fill(l);
		if (l->out_len == 0 && l->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (l->out_len == 0 && client_gone(l->park.conn))
			return MHD_CONTENT_READER_END_WITH_ERROR; /* on_completed cancels the run */
		if (l->out_len == 0)
			return conn_park(l->s, &l->park) ? 0 : MHD_CONTENT_READER_END_WITH_ERROR;
	}
	size_t k = l->out_len - l->out_pos < max ? l->out_len - l->out_pos : max;
	memcpy(buf, l->out + l->out_pos, k);
	l->out_pos += k;
	return (ssize_t)k;
}

/* The response is gone: the client will read no more, so the run (if it
 * still goes) is cancelled. */
static void live_gone(void *cls)
{
	struct live *l = cls;
	shutdown(l->rfd, SHUT_RDWR);
	live_unref(l);
}

/* ---- the worker's side ---- */

/* On the worker, just before the run: answer 200 now and stream from
 * here; q is the request about to run (its output is watched). */
/* Answer 200 now and stream from here; run_s: how long the run may take
 * (the connection's deadline).  false when out of memory (the answer then
 * comes whole, at the end). */
static bool live_answer(struct req *r, double run_s)
{
	struct live *l = r->live;
	struct server *s = r->srv;
	l->pend = malloc(LIVE_CHUNK + WARD_OBSERVE_MAX + 8);
	l->msg = malloc(1 + WARD_OBSERVE_MAX);
	struct MHD_Response *resp =
		l->pend && l->msg ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32768, live_read, l, live_gone)
				  : NULL;
	if (!resp)
		return false;
	pthread_mutex_lock(&l->lock);
	l->refs++; /* the response's */
	pthread_mutex_unlock(&l->lock);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        l->sse ? "text/event-stream" : "application/x-ndjson");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	l->started = true;
	r->stream = resp;
	r->code = 200;
	r->state = S_STREAM;
	pthread_mutex_lock(&s->lock);
	s->m.streamed++;
	pthread_mutex_unlock(&s->lock);
	/* the run, then the whole answer taken within the request timeout */
	conn_set_deadline(s, r->conn, now_mono() + run_s + s->o.request_timeout);
	MHD_resume_connection(r->conn); /* the I/O thread sends the response (http.c) */
	return true;
}

void stream_start(struct req *r, struct ward_request *q)
{
	struct live *l = r->live;
	if (!l)
		return;
	l->head_cap = q->limits.output_limit - q->limits.output_limit / 2;
	if (!live_answer(r, q->limits.timeout_s))
		return;
	q->observe = true;
	q->observe_fd = l->wfd;
}

bool stream_start_events(struct req *r, double run_s)
{
	return r->live && live_answer(r, run_s);
}

bool stream_start_messages(struct req *r, double run_s)
{
	if (!r->live)
		return false;
	r->live->raw = true;
	return live_answer(r, run_s);
}

void stream_event(struct req *r, const char *name, char *json, size_t len)
{
	struct live *l = r->live;
	if (!l || !l->started || !json) {
		free(json);
		return;
	}
	pthread_mutex_lock(&l->lock);
	size_t need = l->ev_len + len + strlen(name) + 32;
	if (need > l->ev_cap) {
		size_t cap = l->ev_cap ? l->ev_cap : 4096;
		while (cap < need)
			cap *= 2;
		char *e = realloc(l->ev, cap);
		if (e) {
			l->ev = e;
			l->ev_cap = cap;
		}
	}
	if (need <= l->ev_cap) {
		if (l->sse)
			l->ev_len += (size_t)sprintf(l->ev + l->ev_len, "event: %s\ndata: ", name);
		memcpy(l->ev + l->ev_len, json, len);
		l->ev_len += len;
		l->ev_len += (size_t)sprintf(l->ev + l->ev_len, "%s", l->sse ? "\n\n" : "\n");
	}
	pthread_mutex_unlock(&l->lock);
	free(json);
	/* wake the I/O thread; a full pair already has its attention */
	unsigned char m = LIVE_EVENTS;
	(void)!send(l->wfd, &m, 1, MSG_DONTWAIT);
}

/* On the worker, after the run: how much the program wrote (the head's
 * drops not announced yet are found from it). */
void stream_totals(struct req *r, const struct ward_stream *out, const struct ward_stream *err)
{
	struct live *l = r->live;
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->total[0] = out->bytes;
	l->total[1] = err->bytes;
	pthread_mutex_unlock(&l->lock);
}

/* The result, framed as the last event (taking json). */
static char *result_event(char *json)
{
	if (!json)
		return NULL;
	size_t n = strlen(json);
	char *e = malloc(n + 16);
	if (e)
		snprintf(e, n + 16, "{\"result\":%s}", json);
	free(json);
	return e;
}

/* The run is over (r->resp is its answer): the slot goes, the result is
 * left with the stream, and r is the I/O thread's; or the worker's still,
 * to log and free, when its connection ended already. */
void stream_finish(struct server *s, struct req *r)
{
	struct live *l = r->live;
	hold_answer(s, r); /* in the answer budget until sent: it may become a 503's error */
	char *res = l->raw ? r->resp : result_event(r->resp);
	r->resp = NULL;
	queue_release(s, r);
	pthread_mutex_lock(&l->lock);
	l->result = res;
	pthread_mutex_unlock(&l->lock);
	/* the end of the socket pair: the reader takes the result after the
	 * last output (and nothing frees l before done is set) */
	close(l->wfd);
	l->wfd = -1;
	pthread_mutex_lock(&l->lock);
	l->done = true;
	bool gone = l->gone;
	pthread_mutex_unlock(&l->lock);
	if (!gone)
		return;
	if (l->toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) { /* it was all sent just before */
		req_finish(s, r, l->toe, NULL, (int)r->code);
		return;
	}
	snprintf(r->message, sizeof(r->message), "the client went away while it ran (%s): the run was cancelled",
	         l->why[0] ? l->why : "connection closed");
	req_finish(s, r, l->toe, NULL, 0);
}

/* On the I/O thread, r's connection has ended: true when its run still
 * goes on (it is cancelled now), and the worker ends the request. */
bool stream_orphan(struct req *r, enum MHD_RequestTerminationCode toe, const char *cut)
{
	struct live *l = r->live;
	pthread_mutex_lock(&l->lock);
	bool orphan = l->started && !l->done;
	if (orphan) {
		l->gone = true;
		l->toe = toe;
		snprintf(l->why, sizeof(l->why), "%s", cut ? cut : "");
		shutdown(l->rfd, SHUT_RDWR); /* libward sees it: the run is cancelled */
	}
	pthread_mutex_unlock(&l->lock);
	return orphan;
}
