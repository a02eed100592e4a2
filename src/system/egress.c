/* egress.c — ward's egress proxy (egress.h, SPEC §13): a small HTTP proxy
 * for one sandbox, written by hand with plain sockets (no library does a
 * small, bounded CONNECT proxy that decides by ward's own policy, and ward
 * takes no dependency for it).  Runs in ward's process, on the host, in a
 * thread of its own: every byte it reads comes from the sandbox or from a
 * host it let the sandbox reach, so all of it is hostile.
 *
 * What it does:
 *   - accepts on the listening socket PID 1 made at 127.0.0.1:3128 in the
 *     sandbox's network namespace (a socket stays in the namespace it was
 *     made in, whoever holds it: the sandbox reaches this one and nothing
 *     else of the host's);
 *   - reads one request head (egress_head.c; at most EGRESS_HEAD_MAX: 431 beyond): CONNECT
 *     host:port (TLS; then bytes both ways), or an absolute-URI request for
 *     http:// (rewritten to origin form, with Host set from the URI and
 *     Connection: close, so one client connection reaches one upstream);
 *   - decides by core/egress.c: a pattern must match the name and port; a
 *     literal only when listed; a pinned name goes to its pin; any other
 *     name is resolved here, once, and its first public address is the one
 *     it connects to (no second resolution, so a rebinding answer cannot
 *     swap it);
 *   - relays without copying: once a connection reaches its upstream,
 *     each direction moves socket -> pipe -> socket with splice(2), the
 *     kernel handing on references to the pages it received (the copy
 *     through two user-space buffers cost most of this thread's CPU, and
 *     on a busy 2-core host the proxy's CPU is its speed); the counts are
 *     splice's return values, each read asking no more than egress_bytes
 *     still allows; with no pipe to be had it copies, as before;
 *   - is bounded: EGRESS_MAX_CONNS at once (more are closed when
 *     accepted), two EGRESS_BUF buffers each until it relays, then two
 *     pipes (64 KiB, grown to EGRESS_PIPE_MAX while full within
 *     EGRESS_PIPE_TOTAL for the proxy), head / connect / idle / total
 *     timeouts, and limits.egress_bytes for the proxy's whole life, request
 *     heads included, refused ones too (beyond: connections cut and new
 *     ones refused);
 *   - is throttled: every accepted connection takes a token that only one
 *     reaching its upstream gives back (egress.h: EGRESS_REFUSE_BURST,
 *     EGRESS_REFUSE_RATE), so a loop of refused requests costs this thread
 *     a bounded share of a core, not as much as the loop itself.
 * Every fd is CLOEXEC and non-blocking, but resolution: getaddrinfo blocks
 * this thread (only this sandbox's proxy; a pinned name never resolves).
 * The supervisor's loop never waits on it: stopping it is a pipe write and
 * a join of a loop that wakes at least once a second (at most 2 s: a thread
 * held longer by a resolution is left to free itself). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/egress.h"
#include "system/egress.h"
#include "system/egress_head.h"
#include "system/egress_rules.h"

enum conn_state { C_FREE = 0, C_HEAD, C_CONNECTING, C_RELAY, C_REPLY };

/* One direction's bytes in flight.  A relaying connection moves them
 * through a pipe with splice(2), socket to pipe to socket, so they never
 * enter this process (the kernel hands on references to the pages it
 * received); d carries what the proxy wrote itself (its answers, a
 * rewritten head and the early bytes read with it), which always goes out
 * before anything piped, and the whole relay where no pipe can be had
 * (out of fds: the copy through d is the fallback, never an error). */
struct buf {
	char *d;
	size_t len, off; /* bytes d[off..len) wait to be written */
	int pipe[2];     /* made at the relay's first read; -1: none yet */
	size_t piped;    /* bytes in the pipe, read and counted, not yet written */
	size_t pipe_sz;  /* what the pipe holds at most */
	bool copy;       /* no pipe: relay through d */
	bool nogrow;     /* its pipe may not grow (pipe_grow) */
	bool dry, full;  /* its source had nothing, its sink took nothing: not tried again before poll says so */
	bool woke;       /* poll found its source readable, and nothing was read from it since */
};

struct conn {
	enum conn_state st;
	int cfd, ufd; /* the sandbox's side, the upstream */
	struct buf c2u, u2c;
	bool c_eof, u_eof, c_shut, u_shut;
	bool capped; /* egress_bytes is spent: no more reading; cut once drained */
	bool token;  /* holds a token of the bucket (until it relays) */
	double born, last;
	double read_at;      /* a partial head: not read again before this */
	uint64_t head_bytes; /* read while in C_HEAD (charged; its record's bytes_out) */
	int rec;             /* its record, or -1 (beyond the first 64) */
	uint64_t moved;      /* bytes read or written, both ways: progress */
};

struct egress_proxy {
	pthread_t th;
	bool running;
	int lfd, stop[2];
	struct egress_rules pol; /* who may be reached (egress_rules.c) */
	uint64_t cap, used;
	double accept_pause;      /* accept failed (no fd, no memory): not before this */
	double tokens, tokens_at; /* the bucket (egress.h), as of tokens_at */
	bool dry;                 /* it ran out: the listener waits for EGRESS_REFUSE_RESUME */
	struct conn conns[EGRESS_MAX_CONNS];
	pthread_mutex_t mu; /* the records and counts below */
	struct ward_egress rec[WARD_EGRESS_MAX_RECORDS];
	size_t nrec;
	uint64_t tried, allowed, throttled;
	uint64_t cpu_us;     /* the thread's CPU when it ended (done) */
	bool done, orphan;   /* the thread is ending; egress_stop left it to free us */
	bool park_wanted;    /* egress_park asks the thread to end (a 'p' on stop wakes it) */
	bool parked;         /* its thread ended for a freeze (egress_park), its state kept */
	uint64_t cpu_parked; /* the CPU of the threads that ended so */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- records */

static int add_record(struct egress_proxy *p, const char *host, unsigned port, bool allowed, const char *reason,
                      uint64_t head_bytes)
{
	pthread_mutex_lock(&p->mu);
	int i = -1;
	p->tried++;
	if (allowed)
		p->allowed++;
	if (p->nrec < WARD_EGRESS_MAX_RECORDS) {
		i = (int)p->nrec++;
		struct ward_egress *r = &p->rec[i];
		memset(r, 0, sizeof(*r));
		snprintf(r->host, sizeof(r->host), "%s", host);
		r->port = port;
		r->allowed = allowed;
		r->bytes_out = head_bytes;
		snprintf(r->reason, sizeof(r->reason), "%s", reason ? reason : "");
	}
	pthread_mutex_unlock(&p->mu);
	return i;
}

static void count_bytes(struct egress_proxy *p, struct conn *c, size_t n, bool out)
{
	p->used += n;
	if (c->rec < 0)
		return;
	pthread_mutex_lock(&p->mu);
	if (out)
		p->rec[c->rec].bytes_out += n;
	else
		p->rec[c->rec].bytes_in += n;
	pthread_mutex_unlock(&p->mu);
}

/* An allowed connection ended early, and why (kept in its record). */
static void note_cut(struct egress_proxy *p, struct conn *c, const char *why)
{
	if (c->rec < 0)
		return;
	pthread_mutex_lock(&p->mu);
	if (!p->rec[c->rec].reason[0])
		snprintf(p->rec[c->rec].reason, sizeof(p->rec[c->rec].reason), "%s", why);
	pthread_mutex_unlock(&p->mu);
}

int egress_records(struct egress_proxy *p, size_t from, struct ward_result *res)
{
	res->egress_on = true;
	pthread_mutex_lock(&p->mu);
	size_t n = p->nrec > from ? p->nrec - from : 0;
	res->egress_truncated = p->tried > p->nrec;
	free(res->egress);
	res->egress = NULL;
	res->negress = 0;
	int r = 0;
	if (n) {
		res->egress = malloc(n * sizeof(*res->egress));
		if (res->egress) {
			memcpy(res->egress, p->rec + from, n * sizeof(*res->egress));
			res->negress = n;
		} else
			r = -ENOMEM;
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

void egress_counts(struct egress_proxy *p, uint64_t *tried, uint64_t *allowed)
{
	pthread_mutex_lock(&p->mu);
	*tried = p->tried;
	*allowed = p->allowed;
	pthread_mutex_unlock(&p->mu);
}

uint64_t egress_throttled(struct egress_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	uint64_t n = p->throttled;
	pthread_mutex_unlock(&p->mu);
	return n;
}

static uint64_t thread_cpu_us(pthread_t th)
{
	clockid_t cid;
	struct timespec ts;
	if (pthread_getcpuclockid(th, &cid) != 0 || clock_gettime(cid, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t egress_cpu_us(struct egress_proxy *p)
{
	/* under the lock: a thread not done yet cannot end meanwhile */
	pthread_mutex_lock(&p->mu);
	uint64_t us = p->cpu_parked + (p->done ? p->cpu_us : p->parked ? 0 : thread_cpu_us(p->th));
	pthread_mutex_unlock(&p->mu);
	return us;
}

/* ------------------------------------------------------------------ bucket */

static void tokens_refill(struct egress_proxy *p, double t)
{
	if (t > p->tokens_at) {
		p->tokens += (t - p->tokens_at) * EGRESS_REFUSE_RATE;
		if (p->tokens > EGRESS_REFUSE_BURST)
			p->tokens = EGRESS_REFUSE_BURST;
	}
	p->tokens_at = t;
}

/* A connection reached its upstream: its token back. */
static void token_back(struct egress_proxy *p, struct conn *c)
{
	if (!c->token)
		return;
	c->token = false;
	if (++p->tokens > EGRESS_REFUSE_BURST)
		p->tokens = EGRESS_REFUSE_BURST;
}

/* ------------------------------------------------------------ connections */

static void conn_reset(struct conn *c)
{
	memset(c, 0, sizeof(*c));
	c->cfd = c->ufd = -1;
	c->rec = -1;
	c->c2u.pipe[0] = c->c2u.pipe[1] = c->u2c.pipe[0] = c->u2c.pipe[1] = -1;
}

static void buf_free(struct buf *b)
{
	free(b->d);
	for (int i = 0; i < 2; i++)
		if (b->pipe[i] >= 0)
			close(b->pipe[i]);
}

static void conn_close(struct conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	buf_free(&c->c2u);
	buf_free(&c->u2c);
	conn_reset(c);
}

/* Nothing of this direction waits to be written. */
static bool drained(const struct buf *b)
{
	return b->off >= b->len && !b->piped;
}

/* Answer the sandbox with an error (status line, a one-line reason) and
 * close once it is written. */
static void reply_error(struct conn *c, int code, const char *status, const char *why)
{
	char body[200];
	int bl = snprintf(body, sizeof(body), "ward egress: %s\n", why);
	if (bl < 0 || (size_t)bl >= sizeof(body))
		bl = (int)sizeof(body) - 1;
	int n = snprintf(
		c->u2c.d, EGRESS_BUF,
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code,
		status, bl, body);
	c->u2c.len = n > 0 && n < EGRESS_BUF ? (size_t)n : 0;
	c->u2c.off = 0;
	if (c->ufd >= 0) {
		close(c->ufd);
		c->ufd = -1;
	}
	c->st = C_REPLY;
}

static void head_in(struct egress_proxy *p, struct conn *c, double t);

/* Accept while the bucket has tokens (the rest wait in the sandbox's
 * accept queue), and read each one's head at once: it is usually there
 * already, and a refusal then costs one wake of this thread, not three. */
static void accept_conns(struct egress_proxy *p, double t)
{
	tokens_refill(p, t);
	if (p->dry && p->tokens < EGRESS_REFUSE_RESUME)
		return;
	p->dry = false;
	for (int k = 0; k < EGRESS_MAX_CONNS && p->tokens >= 1; k++) {
		int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			/* out of fds or memory: the listener stays readable, so
			 * poll would wake at once again; try again in a second */
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				p->accept_pause = t + 1;
			return;
		}
		p->tokens -= 1; /* kept by one closed at once, too */
		if (p->tokens < 1) {
			p->dry = true;
			pthread_mutex_lock(&p->mu);
			p->throttled++;
			pthread_mutex_unlock(&p->mu);
		}
		struct conn *c = NULL;
		for (size_t i = 0; i < EGRESS_MAX_CONNS && !c; i++)
			if (p->conns[i].st == C_FREE)
				c = &p->conns[i];
		if (c) {
			c->c2u.d = malloc(EGRESS_BUF);
			c->u2c.d = malloc(EGRESS_BUF);
		}
		if (!c || !c->c2u.d || !c->u2c.d) {
			if (c)
				conn_close(c);
			close(fd); /* too many at once: the sandbox sees a reset */
			continue;
		}
		c->cfd = fd;
		c->ufd = -1;
		c->rec = -1;
		c->st = C_HEAD;
		c->token = true;
		c->born = c->last = t;
		head_in(p, c, t);
	}
}

/* The head is in: decide, and connect or answer. */
static void start_upstream(struct egress_proxy *p, struct conn *c, const struct head *h)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	char msg[96];
	const char *why = p->used >= p->cap ? "egress_bytes limit reached"
	                                    : egress_decide(&p->pol, h->host, h->port, &sa, &salen, msg, sizeof(msg));
	c->rec = add_record(p, h->host, h->port, why == NULL, why, c->head_bytes);
	if (why) {
		reply_error(c, 403, "Forbidden", why);
		return;
	}
	/* What comes after the head: CONNECT's early bytes stay as they are;
	 * a plain request's head is rewritten before them. */
	size_t rest = c->c2u.len - h->head_len;
	if (!h->connect) {
		char authority[300];
		bool v6 = strchr(h->host, ':') != NULL;
		snprintf(authority, sizeof(authority), h->port == 80 ? "%s%s%s" : "%s%s%s:%u", v6 ? "[" : "", h->host,
		         v6 ? "]" : "", h->port);
		char *nb = malloc(EGRESS_BUF);
		size_t hl = nb ? egress_rewrite_head(c->c2u.d, h, authority, nb) : 0;
		if (!hl || hl + rest > EGRESS_BUF) {
			free(nb);
			reply_error(c, 431, "Request Header Fields Too Large", "the request head is too large");
			return;
		}
		memcpy(nb + hl, c->c2u.d + h->head_len, rest);
		free(c->c2u.d);
		c->c2u.d = nb;
		c->c2u.len = hl + rest;
	} else {
		memmove(c->c2u.d, c->c2u.d + h->head_len, rest);
		c->c2u.len = rest;
	}
	c->c2u.off = 0; /* its bytes were charged as they were read (read_head) */
	c->ufd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->ufd < 0 || (connect(c->ufd, (struct sockaddr *)&sa, salen) < 0 && errno != EINPROGRESS)) {
		snprintf(msg, sizeof(msg), "cannot connect: %s", strerror(errno));
		note_cut(p, c, msg);
		reply_error(c, 502, "Bad Gateway", msg);
		return;
	}
	c->st = C_CONNECTING;
	if (h->connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		memcpy(c->u2c.d, ok, sizeof(ok) - 1);
		c->u2c.len = sizeof(ok) - 1;
		c->u2c.off = 0;
	}
}

/* Read what there is of a request head.  Every byte counts toward
 * egress_bytes as it is read, whatever becomes of the request: refused and
 * malformed heads spend the budget as forwarded ones do. */
static void read_head(struct egress_proxy *p, struct conn *c, double t)
{
	size_t room = EGRESS_HEAD_MAX - c->c2u.len;
	if (p->used >= p->cap) {
		reply_error(c, 403, "Forbidden", "egress_bytes limit reached");
		return;
	}
	if (p->cap - p->used < room)
		room = (size_t)(p->cap - p->used);
	ssize_t n = recv(c->cfd, c->c2u.d + c->c2u.len, room, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	p->used += (size_t)n;
	c->head_bytes += (size_t)n;
	c->c2u.len += (size_t)n;
	c->read_at = t + EGRESS_HEAD_DEFER_MS / 1000.0; /* when the head is not all in yet */
	struct head h;
	memset(&h, 0, sizeof(h));
	int code = egress_parse_head(c->c2u.d, c->c2u.len, &h);
	if (code == 431)
		reply_error(c, 431, "Request Header Fields Too Large", "the request head is over 16 KiB");
	else if (code == 400)
		reply_error(
			c, 400, "Bad Request",
			"give CONNECT host:port HTTP/1.1, or an absolute http:// URI, then headers and a blank line");
	else if (h.head_len)
		start_upstream(p, c, &h);
	else if (p->used >= p->cap)
		reply_error(c, 403, "Forbidden", "egress_bytes limit reached");
}

/* ------------------------------------------------------------------ relay */

/* This direction's pipe, made on first use; false when there is none to
 * be had (then d carries the bytes).  Once it is made, d (drained: fill
 * comes here only then) is freed: a relaying connection holds its pipes
 * instead of its buffers.  Its use is bounded by its size: the sockets are
 * polled for reading only while it is empty. */
static bool pipe_ready(struct buf *b)
{
	if (b->pipe[0] >= 0)
		return true;
	if (b->copy || pipe2(b->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		b->copy = true;
		return false;
	}
	int sz = fcntl(b->pipe[1], F_GETPIPE_SZ);
	b->pipe_sz = sz > 0 ? (size_t)sz : 4096;
	free(b->d);
	b->d = NULL;
	b->off = b->len = 0;
	return true;
}

/* A pipe that a read filled grows (x4, to EGRESS_PIPE_MAX) while the
 * proxy's pipes hold at most EGRESS_PIPE_TOTAL together: a bulk transfer
 * then moves in a few large splices rather than many 64 KiB ones (fewer
 * syscalls and wakes; it is the proxy's CPU per byte that bounds its speed
 * on a busy host). */
static void pipe_grow(struct egress_proxy *p, struct buf *b)
{
	if (b->piped < b->pipe_sz || b->pipe_sz >= EGRESS_PIPE_MAX || b->nogrow)
		return;
	size_t total = 0, want = b->pipe_sz * 4 > EGRESS_PIPE_MAX ? EGRESS_PIPE_MAX : b->pipe_sz * 4;
	for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
		total += p->conns[i].c2u.pipe_sz + p->conns[i].u2c.pipe_sz;
	int sz = total - b->pipe_sz + want <= EGRESS_PIPE_TOTAL ? fcntl(b->pipe[1], F_SETPIPE_SZ, (int)want) : -1;
	if (sz > 0)
		b->pipe_sz = (size_t)sz;
	else
		b->nogrow = true; /* no room (or the kernel's limit): it stays as it is */
}

/* Move bytes from fd into b (into its pipe while it has room; into d when
 * d is empty), within the byte budget: each read asks for no more than the
 * budget still allows, and counts what it got.  false when the connection
 * must end (why set). */
static bool fill(struct egress_proxy *p, struct conn *c, int fd, struct buf *b, bool *eof, bool out, const char **why)
{
	if (b->off < b->len || *eof)
		return true;
	if (p->used >= p->cap) {
		c->capped = true; /* what is buffered still goes out */
		return true;
	}
	if (b->dry)
		return true;
	bool piped = pipe_ready(b);
	if (piped && b->piped >= b->pipe_sz)
		return true;
	size_t room = piped ? b->pipe_sz - b->piped : EGRESS_BUF;
	if (p->cap - p->used < room)
		room = (size_t)(p->cap - p->used);
	ssize_t n = piped ? splice(fd, NULL, b->pipe[1], NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
	                  : recv(fd, b->d, room, 0);
	/* splice stops at TCP's urgent mark (tcp_read_sock never steps over
	 * it, whatever SO_OOBINLINE says): it then finds nothing where poll
	 * said readable, or ends early, as at EOF.  recv steps over the mark
	 * as the copy always did, into d, once the pipe is empty (d goes out
	 * before the pipe's next bytes); that is also how EOF is confirmed. */
	bool stuck = piped && (n == 0 || (n < 0 && errno == EAGAIN && b->woke));
	b->woke = false;
	if (stuck && b->piped) {
		n = -1; /* looked at again once the pipe is empty */
		errno = EAGAIN;
	} else if (stuck && (b->d || (b->d = malloc(EGRESS_BUF)))) {
		piped = false;
		n = recv(fd, b->d, room < EGRESS_BUF ? room : EGRESS_BUF, 0);
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		/* nothing to read, or the pipe is full (its slots, not its
		 * bytes): either way poll says when to try again (the socket
		 * is polled for reading once the pipe is empty) */
		b->dry = errno == EAGAIN;
		return true;
	}
	if (n < 0) {
		*why = "connection reset";
		return false;
	}
	if (n == 0) {
		*eof = true;
		return true;
	}
	if (piped) {
		b->piped += (size_t)n;
		pipe_grow(p, b);
	} else {
		b->off = 0;
		b->len = (size_t)n;
	}
	c->moved += (size_t)n;
	count_bytes(p, c, (size_t)n, out);
	return true;
}

/* Write what b holds to fd: d's bytes first, then the pipe's. */
static bool flush(struct conn *c, int fd, struct buf *b, const char **why)
{
	bool piped = b->off >= b->len;
	if ((piped && !b->piped) || b->full)
		return true;
	/* a splice to a peer gone raises SIGPIPE (it has no MSG_NOSIGNAL):
	 * this thread blocks every signal, so it stays pending, harmless */
	ssize_t n = piped ? splice(b->pipe[0], NULL, fd, NULL, b->piped, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
	                  : send(fd, b->d + b->off, b->len - b->off, MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		b->full = errno == EAGAIN;
		return true;
	}
	if (n < 0) {
		*why = "connection reset";
		return false;
	}
	c->moved += (size_t)n;
	if (piped) {
		b->piped -= (size_t)n;
		return true;
	}
	b->off += (size_t)n;
	if (b->off == b->len) {
		b->off = b->len = 0;
		if (b->pipe[0] >= 0) { /* it carried bytes past TCP's urgent mark: the pipe again */
			free(b->d);
			b->d = NULL;
		}
	}
	return true;
}

/* A head's bytes in; an answer of the proxy's own goes out at once when
 * the socket takes it (nearly always: it is the first thing written). */
static void head_in(struct egress_proxy *p, struct conn *c, double t)
{
	const char *why = NULL;
	read_head(p, c, t);
	if (c->st == C_REPLY && (!flush(c, c->cfd, &c->u2c, &why) || c->u2c.off >= c->u2c.len))
		conn_close(c);
}

/* Move what can move both ways without waiting, a few rounds at most (a
 * round trip through poll per buffer would halve a download's speed);
 * false when the connection must end (why set). */
static bool pump(struct egress_proxy *p, struct conn *c, const char **why)
{
	for (int round = 0; round < 8; round++) {
		uint64_t before = c->moved;
		if (!fill(p, c, c->cfd, &c->c2u, &c->c_eof, true, why) ||
		    !fill(p, c, c->ufd, &c->u2c, &c->u_eof, false, why) || !flush(c, c->ufd, &c->c2u, why) ||
		    !flush(c, c->cfd, &c->u2c, why))
			return false;
		if (c->moved == before)
			break;
	}
	return true;
}

/* One wake of a relaying connection: move what can move, pass EOF on
 * once its direction is drained, close when both are done. */
static void relay(struct egress_proxy *p, struct conn *c, short cev, short uev, double t)
{
	const char *why = NULL;
	uint64_t before = c->moved;
	/* a reset, or a hang-up on a side whose reading is over already:
	 * nothing more can move that way (and poll would wake for it again) */
	bool ok = !((cev | uev) & POLLERR) && !((cev & POLLHUP) && c->c_eof) && !((uev & POLLHUP) && c->u_eof);
	if (!ok)
		why = "connection reset";
	/* what poll found ready is tried again (a hang-up or an error: all of it) */
	short any = (short)(POLLHUP | POLLERR);
	c->c2u.dry &= !(cev & (POLLIN | any));
	c->u2c.dry &= !(uev & (POLLIN | any));
	c->c2u.woke = cev & POLLIN;
	c->u2c.woke = uev & POLLIN;
	c->u2c.full &= !(cev & (POLLOUT | any));
	c->c2u.full &= !(uev & (POLLOUT | any));
	ok = ok && pump(p, c, &why);
	if (!ok) {
		/* a peer's reset is how a connection often ends: only ward's
		 * own cuts are noted */
		if (strcmp(why, "connection reset") != 0)
			note_cut(p, c, why);
		conn_close(c);
		return;
	}
	if (c->c_eof && drained(&c->c2u) && !c->u_shut) {
		shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}
	if (c->u_eof && drained(&c->u2c) && !c->c_shut) {
		shutdown(c->cfd, SHUT_WR);
		c->c_shut = true;
	}
	if (c->c_shut && c->u_shut)
		conn_close(c);
	else if (before != c->moved)
		c->last = t;
}

static void connected(struct egress_proxy *p, struct conn *c, double t)
{
	int e = 0;
	socklen_t el = sizeof(e);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		char msg[96];
		snprintf(msg, sizeof(msg), "cannot connect: %s", strerror(e));
		note_cut(p, c, msg);
		reply_error(c, 502, "Bad Gateway", msg);
		return;
	}
	c->st = C_RELAY;
	c->last = t;
	token_back(p, c);
}

/* Timeouts: a head, a connect, an idle or too long connection; and a
 * connection whose byte budget is spent, once what it buffered is out. */
static void expire(struct egress_proxy *p, struct conn *c, double t)
{
	const char *why = NULL;
	if (c->capped && drained(&c->c2u) && drained(&c->u2c))
		why = "egress_bytes limit reached";
	else if (c->st == C_HEAD && t - c->born > EGRESS_HEAD_TIMEOUT_S)
		why = "no request head in time";
	else if (c->st == C_CONNECTING && t - c->last > EGRESS_CONNECT_TIMEOUT_S)
		why = "connect timed out";
	else if (t - c->last > EGRESS_IDLE_TIMEOUT_S)
		why = "idle timeout";
	else if (t - c->born > EGRESS_TOTAL_TIMEOUT_S)
		why = "connection time limit";
	if (!why)
		return;
	note_cut(p, c, why);
	conn_close(c);
}

/* --------------------------------------------------------------- the loop */

static short conn_events(const struct conn *c, bool client, double t)
{
	switch (c->st) {
	case C_HEAD:
		return client && t >= c->read_at ? POLLIN : 0;
	case C_CONNECTING:
		return client ? 0 : POLLOUT;
	case C_REPLY:
		return client ? POLLOUT : 0;
	case C_RELAY:
		if (client)
			return (short)((drained(&c->c2u) && !c->c_eof && !c->capped ? POLLIN : 0) |
			               (drained(&c->u2c) ? 0 : POLLOUT));
		return (short)((drained(&c->u2c) && !c->u_eof && !c->capped ? POLLIN : 0) |
		               (drained(&c->c2u) ? 0 : POLLOUT));
	default:
		return 0;
	}
}

static void serve_conn(struct egress_proxy *p, struct conn *c, short cev, short uev, double t)
{
	const char *why = NULL;
	switch (c->st) {
	case C_HEAD:
		if (cev)
			head_in(p, c, t);
		break;
	case C_CONNECTING:
		if (cev & (POLLERR | POLLHUP)) {
			conn_close(c); /* the client reset: poll reports it whatever was asked, at once, again */
			break;
		}
		if (uev)
			connected(p, c, t);
		if (c->st == C_RELAY)
			relay(p, c, 0, POLLOUT, t);
		break;
	case C_REPLY:
		if (cev && (!flush(c, c->cfd, &c->u2c, &why) || c->u2c.off >= c->u2c.len))
			conn_close(c);
		break;
	case C_RELAY:
		relay(p, c, cev, uev, t);
		break;
	default:
		break;
	}
}

static void proxy_free(struct egress_proxy *p)
{
	for (int i = 0; i < 2; i++)
		if (p->stop[i] >= 0)
			close(p->stop[i]);
	if (p->lfd >= 0)
		close(p->lfd);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->pol.mu);
	free(p);
}

static void *proxy_main(void *arg)
{
	struct egress_proxy *p = arg;
	struct pollfd pf[2 + 2 * EGRESS_MAX_CONNS];
	for (;;) {
		size_t n = 0;
		double t0 = now_s(), wake = t0 + 1; /* at least once a second */
		tokens_refill(p, t0);
		if (p->dry && p->tokens >= EGRESS_REFUSE_RESUME)
			p->dry = false;
		bool listen = t0 >= p->accept_pause && !p->dry;
		if (t0 >= p->accept_pause && p->dry)
			wake = t0 + (EGRESS_REFUSE_RESUME - p->tokens) / EGRESS_REFUSE_RATE;
		pf[n++] = (struct pollfd){.fd = p->stop[0], .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = listen ? p->lfd : -1, .events = POLLIN};
		for (size_t i = 0; i < EGRESS_MAX_CONNS; i++) {
			struct conn *c = &p->conns[i];
			if (c->st == C_HEAD && c->read_at > t0 && c->read_at < wake)
				wake = c->read_at;
			pf[n++] = (struct pollfd){.fd = c->st ? c->cfd : -1,
			                          .events = c->st ? conn_events(c, true, t0) : 0};
			pf[n++] = (struct pollfd){.fd = c->st ? c->ufd : -1,
			                          .events = c->st ? conn_events(c, false, t0) : 0};
		}
		int r = poll(pf, n, (int)((wake - t0) * 1000) + 1);
		if (r < 0 && errno != EINTR)
			break;
		char cmd = 'x';
		if (pf[0].revents && (read(p->stop[0], &cmd, 1) != 1 || cmd == 'x'))
			break;
		if (pf[0].revents) { /* 'p': parked, unless egress_park gave up on it meanwhile */
			uint64_t cpu = thread_cpu_us(pthread_self());
			pthread_mutex_lock(&p->mu);
			bool park = p->park_wanted;
			if (park) {
				p->cpu_parked += cpu;
				p->parked = true;
			}
			pthread_mutex_unlock(&p->mu);
			if (park)
				return NULL; /* everything stays: connections, listener, bucket */
		}
		double t = now_s();
		for (size_t i = 0; i < EGRESS_MAX_CONNS; i++) {
			struct conn *c = &p->conns[i];
			short cev = pf[2 + 2 * i].revents, uev = pf[3 + 2 * i].revents;
			if (c->st && (cev || uev))
				serve_conn(p, c, cev, uev, t);
			if (c->st)
				expire(p, c, t);
		}
		/* the listener, or the bucket refilled while it was left out */
		if ((pf[1].revents & POLLIN) || (p->dry && t >= p->accept_pause && t >= wake))
			accept_conns(p, t);
	}
	for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
		if (p->conns[i].st)
			conn_close(&p->conns[i]);
	/* egress_stop gave up waiting (a resolution held us): ours to free */
	uint64_t cpu = thread_cpu_us(pthread_self());
	pthread_mutex_lock(&p->mu);
	p->cpu_us = cpu;
	p->done = true;
	bool orphan = p->orphan;
	pthread_mutex_unlock(&p->mu);
	if (orphan)
		proxy_free(p);
	return NULL;
}

int egress_set_allow(struct egress_proxy *p, const char *const *allow, size_t n, char *err, size_t errlen)
{
	if (n > EGRESS_MAX_PATTERNS) {
		snprintf(err, errlen, "too many egress patterns: at most %d", EGRESS_MAX_PATTERNS);
		return -EINVAL;
	}
	struct egress_pattern *want = calloc(n ? n : 1, sizeof(*want));
	if (!want) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (egress_pattern_parse(allow[i], &want[i], err, errlen) < 0) {
			free(want);
			return -EINVAL;
		}
	egress_rules_set_allow(&p->pol, want, n);
	free(want);
	return 0;
}

/* -------------------------------------------------------------- lifecycle */

/* The runner's own addresses: a name resolving to one is refused unpinned
 * (a service bound to a public interface of the runner is the host's). */
static void own_addresses(struct egress_proxy *p)
{
	p->pol.nown = egress_own_addresses(p->pol.own, sizeof(p->pol.own) / sizeof(p->pol.own[0]));
}

static int configure(struct egress_proxy *p, const struct ward_request *shape, char *err, size_t errlen)
{
	if (shape->negress_allow > EGRESS_MAX_PATTERNS || shape->negress_resolve > EGRESS_MAX_PATTERNS) {
		snprintf(err, errlen, "too many egress patterns or pins: at most %d each", EGRESS_MAX_PATTERNS);
		return -1;
	}
	for (size_t i = 0; i < shape->negress_allow; i++)
		if (egress_pattern_parse(shape->egress_allow[i], &p->pol.allow[p->pol.nallow++], err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < shape->negress_resolve; i++)
		if (egress_pin_parse(shape->egress_resolve[i], &p->pol.pins[p->pol.npins++], err, errlen) < 0)
			return -1;
	p->cap = shape->limits.egress_bytes;
	own_addresses(p);
	return 0;
}

/* Its thread, which takes no signal of the process's: 0 or an errno. */
static int proxy_thread(struct egress_proxy *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&p->th, NULL, proxy_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->running = r == 0;
	return r;
}

struct egress_proxy *egress_start(int listen_fd, const struct ward_request *shape, char *err, size_t errlen)
{
	struct egress_proxy *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		close(listen_fd);
		return NULL;
	}
	p->lfd = listen_fd;
	p->stop[0] = p->stop[1] = -1;
	p->tokens = EGRESS_REFUSE_BURST;
	p->tokens_at = now_s();
	for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
		conn_reset(&p->conns[i]);
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->pol.mu, NULL);
	if (configure(p, shape, err, errlen) < 0)
		goto fail;
	int fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0 || pipe2(p->stop, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot set up the egress proxy: %s", strerror(errno));
		goto fail;
	}
	int r = proxy_thread(p);
	if (r != 0) {
		snprintf(err, errlen, "cannot start the egress proxy's thread: %s", strerror(r));
		goto fail;
	}
	return p;
fail:
	egress_stop(p);
	return NULL;
}

/* Tell the proxy's thread (byte why on its stop pipe: 'p' park, 'x'
 * stop) and wait 2 s at most for it to end: whether it did. */
static bool wake_join(struct egress_proxy *p, char why)
{
	ssize_t w;
	do
		w = write(p->stop[1], &why, 1);
	while (w < 0 && errno == EINTR);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	return pthread_timedjoin_np(p->th, NULL, &until) == 0;
}

int egress_park(struct egress_proxy *p, bool park)
{
	if (!p || p->running == !park)
		return 0;
	if (!park) {
		pthread_mutex_lock(&p->mu);
		p->parked = p->park_wanted = false;
		pthread_mutex_unlock(&p->mu);
		return -proxy_thread(p);
	}
	pthread_mutex_lock(&p->mu);
	p->park_wanted = true;
	pthread_mutex_unlock(&p->mu);
	/* A name being resolved holds the thread (egress_stop's reason too): a
	 * tenant's slow name must not hold the freeze, so after 2 s the thread
	 * is left running (the wake it reads later parks nothing). */
	if (!wake_join(p, 'p')) {
		pthread_mutex_lock(&p->mu);
		bool parked = p->parked; /* it decided meanwhile: it ends now */
		p->park_wanted = false;
		pthread_mutex_unlock(&p->mu);
		if (!parked)
			return -ETIMEDOUT;
		pthread_join(p->th, NULL);
	}
	p->running = false;
	return 0;
}

void egress_stop(struct egress_proxy *p)
{
	if (!p)
		return;
	for (size_t i = 0; !p->running && i < EGRESS_MAX_CONNS; i++) /* parked: no thread closes them */
		if (p->conns[i].st)
			conn_close(&p->conns[i]);
	if (p->running) {
		/* The loop wakes at least once a second, but a name resolution
		 * (getaddrinfo) may hold it longer: the run's end does not wait
		 * for that; the thread then frees the proxy itself. */
		if (!wake_join(p, 'x')) {
			pthread_mutex_lock(&p->mu);
			bool done = p->done;
			p->orphan = !done;
			pthread_mutex_unlock(&p->mu);
			if (!done) {
				pthread_detach(p->th);
				return;
			}
			pthread_join(p->th, NULL);
		}
	}
	proxy_free(p);
}
