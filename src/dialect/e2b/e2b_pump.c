/* e2b_pump.c — a request body pumped by a thread of its own (SPEC §18):
 * envd's uploads (e2b_upload.c) and volume uploads (e2b_volfiles.c).
 *
 * Nothing that can wait (a sandbox's file worker, a slow or frozen disk)
 * runs on an I/O thread: the I/O thread only copies each piece into the
 * pump's bounded buffer (PUMP_BUF); the pump swaps it for its spare and
 * hands it to its sink.  A full buffer parks the connection (conn_park)
 * until the pump took it.  A pump holds 2 x PUMP_BUF, counted in
 * --max-body-total (which so bounds how many run at once); the request
 * timeout still bounds its time.  The pump looks every PUMP_LOOK_S while
 * it waits (its sink's look: a session retired, say). */
#define _GNU_SOURCE
#include "dialect/e2b/e2b_pump.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"

#define PUMP_BUF (128 * 1024)
#define PUMP_LOOK_S 0.2

struct body_pump {
	struct e2b *e;
	struct server *s;
	struct pump_sink sink;
	char *spare; /* the pump's half of the two buffers */
	int ev;      /* eventfd: the pump took a piece (the parked connection's fd) */
	struct park park;
	/* between the I/O thread, the pump and the worker that answers, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *buf; /* what the I/O thread put, not yet taken */
	size_t len;
	bool eof;  /* the body ended: the pump finishes */
	bool gone; /* the request is over: the pump frees itself */
	bool done; /* the pump is over */
};

static void pump_free(struct body_pump *p, bool sink)
{
	if (p->ev >= 0)
		close(p->ev);
	free(p->buf);
	free(p->spare);
	__atomic_sub_fetch(&p->s->body_bytes, 2 * PUMP_BUF, __ATOMIC_RELAXED);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	if (sink && p->sink.free)
		p->sink.free(p->sink.arg);
	free(p);
}

/* One look: the next piece (swapped into p->spare, its length), whether
 * the body is over (or its request). */
static size_t pump_take(struct body_pump *p, bool *over)
{
	pthread_mutex_lock(&p->lock);
	if (!p->len && !p->eof && !p->gone) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(PUMP_LOOK_S * 1e9);
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	size_t n = p->gone ? 0 : p->len;
	*over = p->gone || (p->eof && !p->len);
	char *t = p->buf;
	p->buf = p->spare;
	p->spare = t;
	p->len = 0;
	pthread_mutex_unlock(&p->lock);
	uint64_t one = 1;
	if (n && write(p->ev, &one, sizeof(one)) < 0) {
		/* the counter is full: the connection is woken anyway */
	}
	return n;
}

static void *pump_run(void *arg)
{
	struct body_pump *p = arg;
	struct e2b *e = p->e;
	pthread_setname_np(pthread_self(), p->sink.name);
	if (p->sink.start)
		p->sink.start(p->sink.arg);
	for (bool over = false; !over;) {
		size_t n = pump_take(p, &over);
		if (p->sink.look)
			p->sink.look(p->sink.arg);
		if (n)
			p->sink.take(p->sink.arg, p->spare, n);
	}
	pthread_mutex_lock(&p->lock);
	bool gone = p->gone;
	pthread_mutex_unlock(&p->lock);
	p->sink.finish(p->sink.arg, gone);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	gone = p->gone;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (gone)
		pump_free(p, true);
	e2b_detached_done(e);
	return NULL;
}

struct body_pump *pump_begin(struct ereq *q, const struct pump_sink *sink, unsigned *code, char *err, size_t n)
{
	if (!body_reserve(q->s, 2 * PUMP_BUF)) {
		*code = 503;
		snprintf(err, n, "the runner holds --max-body-total (%zu bytes) of request bodies already; retry later",
		         q->s->o.max_body_total);
		return NULL;
	}
	struct body_pump *p = calloc(1, sizeof(*p));
	if (!p) {
		__atomic_sub_fetch(&q->s->body_bytes, 2 * PUMP_BUF, __ATOMIC_RELAXED);
		*code = 500;
		snprintf(err, n, "out of memory for the upload");
		return NULL;
	}
	p->e = q->e;
	p->s = q->s;
	p->sink = *sink;
	p->ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->park = (struct park){.conn = q->c, .fd = p->ev};
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->buf = malloc(PUMP_BUF);
	p->spare = malloc(PUMP_BUF);
	if (p->ev < 0 || !p->buf || !p->spare) {
		*code = 500;
		snprintf(err, n, "out of memory or descriptors for the upload");
	} else if (!e2b_detach(p->e, pump_run, p)) {
		*code = 503;
		snprintf(err, n, "no thread to spare for the upload: retry later");
	} else {
		return p;
	}
	pump_free(p, false);
	return NULL;
}

bool pump_feed(struct body_pump *p, struct server *s, const char *data, size_t *n)
{
	uint64_t c;
	if (read(p->ev, &c, sizeof(c)) < 0) {
		/* nothing taken since the last look */
	}
	pthread_mutex_lock(&p->lock);
	size_t k = p->done ? *n : *n < PUMP_BUF - p->len ? *n : PUMP_BUF - p->len;
	if (!p->done && k) {
		memcpy(p->buf + p->len, data, k);
		p->len += k;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	bool parked = k == *n || conn_park(s, &p->park);
	*n = k;
	return parked;
}

void pump_end(struct body_pump *p)
{
	pthread_mutex_lock(&p->lock);
	p->eof = true;
	pthread_cond_broadcast(&p->cond);
	while (!p->done)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void pump_release(struct body_pump *p)
{
	pthread_mutex_lock(&p->lock);
	bool running = !p->done;
	p->gone = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (!running)
		pump_free(p, true);
}
