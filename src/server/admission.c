/* admission.c — whether a request may run now, and its place until it
 * does: one decision under s->lock (the runner is draining, unhealthy or
 * full: slots + queue; then the client's and sub-client's quotas), a 429
 * or 503 with Retry-After beyond that; the queue the workers take from;
 * and the memory budgets (--max-body-total, --max-answer-total) that every
 * request body, decoded request and answer is counted in.
 *
 * Owns the queue, s->queued/running/answering, s->clients and the budgets.
 * Never blocks an I/O thread beyond s->lock: a request that does not fit
 * is refused, never waited for. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/supervise.h"
#include "server/server.h"

#define MAX_CLIENTS 4096  /* client records kept for quotas; idle ones are evicted */
#define MAX_SUBCLIENTS 64 /* X-Ward-Client names kept per client for --subclient-* */

/* One client's quota state: a client (a token's name, or an address), or
 * a sub-client (an X-Ward-Client name within one, in its subs list). */
struct client {
	char key[160];
	unsigned active;     /* queued + running */
	double tokens;       /* token bucket for --client-rate (--subclient-rate) */
	double last;         /* when tokens was last refilled */
	struct client *next; /* the hash chain, or the parent's subs list */
	struct client *subs; /* its sub-clients (at most MAX_SUBCLIENTS) */
	unsigned nsubs;
	size_t answers; /* bytes of its answers held until sent (--max-answer-client) */
};

/* Take more bytes of a budget (*held of at most max), atomically; false
 * when they do not fit. */
static bool budget_take(size_t *held, size_t max, size_t more)
{
	size_t cur = __atomic_load_n(held, __ATOMIC_RELAXED);
	do {
		if (more > max || cur > max - more)
			return false;
	} while (!__atomic_compare_exchange_n(held, &cur, cur + more, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

/* Request bodies are held from the first byte to decoding (or, for /test,
 * to the end of the run), and an /exec request's decoded form from then
 * to the end of its run: their sum is capped, so that neither many
 * connections each sending a large body slowly nor a queue full of large
 * requests can hold the server's memory. */
bool body_reserve(struct server *s, size_t more)
{
	return budget_take(&s->body_bytes, s->o.max_body_total, more);
}

void body_release(struct server *s, struct req *r)
{
	if (r->cap)
		__atomic_sub_fetch(&s->body_bytes, r->cap, __ATOMIC_RELAXED);
	free(r->body);
	r->body = NULL;
	r->len = r->cap = 0;
}

/* An answer made as it is sent (a follow stream) holds its pending bytes
 * in the same budget, a piece at a time. */
bool answer_reserve(struct server *s, size_t n)
{
	return budget_take(&s->answer_bytes, s->o.max_answer_total, n);
}

void answer_release(struct server *s, size_t n)
{
	if (n)
		__atomic_sub_fetch(&s->answer_bytes, n, __ATOMIC_RELAXED);
}

static struct client *client_get(struct server *s, const char *key);

/* An answer is held from its encoding until its client has taken it or
 * the connection ends, and a client that does not read keeps it that long:
 * so answers have a budget of their own, and each client a share of it
 * (--max-answer-client), so that one client's unread answers cannot take
 * the budget from the others.  One that does not fit now is dropped for a
 * 503 (the run has happened; the server's memory stays bounded). */
int answer_hold(struct server *s, const char *who, size_t n, struct answer_hold *h)
{
	pthread_mutex_lock(&s->lock);
	struct client *c = client_get(s, who); /* NULL (the table is full): the total alone */
	bool total = budget_take(&s->answer_bytes, s->o.max_answer_total, n);
	bool mine = !c || (n <= s->o.max_answer_client && c->answers <= s->o.max_answer_client - n);
	if (total && !mine) /* the total has room, this client's share has not */
		__atomic_sub_fetch(&s->answer_bytes, n, __ATOMIC_RELAXED);
	bool fits = total && mine;
	if (fits && c)
		c->answers += n;
	pthread_mutex_unlock(&s->lock);
	if (!fits)
		return total ? -2 : -1;
	h->cl = c;
	h->bytes += n;
	return 0;
}

void answer_unhold(struct server *s, struct answer_hold *h, size_t n)
{
	if (n > h->bytes)
		n = h->bytes;
	if (!n)
		return;
	__atomic_sub_fetch(&s->answer_bytes, n, __ATOMIC_RELAXED);
	if (h->cl) {
		pthread_mutex_lock(&s->lock);
		h->cl->answers -= n;
		pthread_mutex_unlock(&s->lock);
	}
	h->bytes -= n;
	if (!h->bytes)
		h->cl = NULL;
}

void answer_hold_error(struct server *s, int why, size_t n, char *msg, size_t len)
{
	if (why == -2)
		snprintf(msg, len,
		         "the answer (%zu bytes) does not fit in this client's share of the answer budget "
		         "(--max-answer-client, %zu bytes) now: its answers not yet taken hold it; read them, then "
		         "retry",
		         n, s->o.max_answer_client);
	else
		snprintf(msg, len,
		         "the answer (%zu bytes) does not fit in --max-answer-total (%zu bytes) now: answers not yet "
		         "taken by their clients hold it; retry later",
		         n, s->o.max_answer_total);
}

void hold_answer(struct server *s, struct req *r)
{
	if (!r->resp)
		return;
	size_t n = (r->resp_len ? r->resp_len : strlen(r->resp)) + 1;
	/* a run that held room before it made its answer (a file's read)
	 * keeps what the answer takes of it */
	if (r->answer.bytes >= n) {
		answer_unhold(s, &r->answer, r->answer.bytes - n);
		return;
	}
	int why = answer_hold(s, r->who, n - r->answer.bytes, &r->answer);
	if (why == 0)
		return;
	char msg[400];
	answer_hold_error(s, why, n, msg, sizeof(msg));
	r->retry_after = 1;
	set_error(r, 503, "%s", msg);
}

void answer_done(struct server *s, struct req *r)
{
	answer_unhold(s, &r->answer, r->answer.bytes);
}

/* A record with no run and a full bucket holds nothing worth keeping. */
static bool client_idle(const struct client *c, unsigned rate, double t)
{
	return c->active == 0 && c->nsubs == 0 && c->answers == 0 &&
	       (!rate || c->tokens + (t - c->last) * rate / 60.0 >= rate);
}

/* Drop c's idle sub-clients. */
static void subs_evict(struct server *s, struct client *c, double t)
{
	for (struct client **pp = &c->subs; *pp;) {
		struct client *u = *pp;
		if (client_idle(u, s->o.subclient_rate, t)) {
			*pp = u->next;
			free(u);
			c->nsubs--;
			s->nclients--;
		} else
			pp = &u->next;
	}
}

/* Drop every idle record but keep (whose sub-client is being made): called
 * when the table is full. */
static void clients_evict(struct server *s, const struct client *keep)
{
	double t = now_mono();
	for (unsigned i = 0; i < CLIENT_BUCKETS; i++)
		for (struct client **pp = &s->clients[i]; *pp;) {
			struct client *c = *pp;
			subs_evict(s, c, t);
			if (c != keep && client_idle(c, s->o.client_rate, t)) {
				*pp = c->next;
				free(c);
				s->nclients--;
			} else
				pp = &c->next;
		}
}

static struct client *client_new(struct server *s, const char *key, unsigned rate, const struct client *keep)
{
	if (s->nclients >= MAX_CLIENTS)
		clients_evict(s, keep);
	if (s->nclients >= MAX_CLIENTS)
		return NULL;
	struct client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->key, sizeof(c->key), "%s", key);
	c->tokens = rate;
	c->last = now_mono();
	s->nclients++;
	return c;
}

static struct client *client_get(struct server *s, const char *key)
{
	unsigned h = 5381;
	for (const char *p = key; *p; p++)
		h = h * 33 + (unsigned char)*p;
	struct client **b = &s->clients[h % CLIENT_BUCKETS];
	for (struct client *c = *b; c; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	struct client *c = client_new(s, key, s->o.client_rate, NULL);
	if (c) {
		c->next = *b;
		*b = c;
	}
	return c;
}

/* The sub-client NAME of c; a client keeps at most MAX_SUBCLIENTS, so
 * that many distinct X-Ward-Client values cannot fill the table. */
static struct client *sub_get(struct server *s, struct client *c, const char *name)
{
	for (struct client *u = c->subs; u; u = u->next)
		if (strcmp(u->key, name) == 0)
			return u;
	if (c->nsubs >= MAX_SUBCLIENTS)
		subs_evict(s, c, now_mono());
	if (c->nsubs >= MAX_SUBCLIENTS)
		return NULL;
	struct client *u = client_new(s, name, s->o.subclient_rate, c);
	if (u) {
		u->next = c->subs;
		c->subs = u;
		c->nsubs++;
	}
	return u;
}

/* c's bucket refilled for rate runs a minute: 0 when it holds a run,
 * else the seconds until it does (counted as refused). */
static unsigned bucket_wait(struct server *s, struct client *c, unsigned rate)
{
	double t = now_mono(), per_s = rate / 60.0;
	c->tokens = fmin(rate, c->tokens + (t - c->last) * per_s);
	c->last = t;
	if (c->tokens >= 1)
		return 0;
	s->m.rejected_client_rate++;
	return (unsigned)ceil((1 - c->tokens) / per_s);
}

/* Whether c (named name) may start one more run under its limits; sets
 * the 429 when not.  Refills c's bucket, takes nothing. */
static bool quota_allows(struct server *s, struct req *r, struct client *c, const char *name, unsigned conc,
                         unsigned rate)
{
	if (conc && c->active >= conc) {
		s->m.rejected_client_conc++;
		r->retry_after = 1;
		set_error(r, 429, "client '%s' already has %u runs in progress (limit %u); retry later", name,
		          c->active, conc);
		return false;
	}
	unsigned wait = rate ? bucket_wait(s, c, rate) : 0;
	if (wait) {
		r->retry_after = wait;
		set_error(r, 429, "client '%s' is over its %u runs per minute; retry in %u s", name, rate, wait);
		return false;
	}
	return true;
}

/* The client's quota (its token's name, or its address), then, when the
 * request names one and --subclient-* are set, its sub-client's: the
 * header can split a client's quota, never add to it.  On success both
 * hold the run (r->cl, r->subcl). */
static bool admit_quotas(struct server *s, struct req *r)
{
	struct client *c = client_get(s, r->who);
	if (!c) {
		s->m.rejected_busy++;
		r->retry_after = 1;
		set_error(r, 429, "too many distinct clients at once; retry later");
		return false;
	}
	/* an unmetered request (a read, a relay) is no run for --client-rate,
	 * but it holds a worker: --client-concurrency counts it, so that one
	 * client's requests never hold every worker */
	unsigned rate = r->route->unmetered ? 0 : s->o.client_rate;
	unsigned subrate = r->route->unmetered ? 0 : s->o.subclient_rate;
	if (!quota_allows(s, r, c, r->who, s->o.client_concurrency, rate))
		return false;
	struct client *u = NULL;
	if (r->sub[0] && (s->o.subclient_concurrency || subrate)) {
		u = sub_get(s, c, r->sub);
		if (!u) {
			s->m.rejected_busy++;
			r->retry_after = 1;
			set_error(r, 429,
			          "client '%s' has %d X-Ward-Client names with runs or rate state already; retry later",
			          r->who, MAX_SUBCLIENTS);
			return false;
		}
		if (!quota_allows(s, r, u, r->client, s->o.subclient_concurrency, subrate))
			return false;
	}
	if (rate)
		c->tokens -= 1;
	c->active++;
	r->cl = c;
	if (u) {
		if (subrate)
			u->tokens -= 1;
		u->active++;
		r->subcl = u;
	}
	return true;
}

/* Sets the 503 when the backend is unhealthy.  Called with s->lock held. */
static bool refuse_unhealthy(struct server *s, struct req *r)
{
	if (s->healthy)
		return false;
	s->m.rejected_unhealthy++;
	r->retry_after = (unsigned)PROBE_BAD_INTERVAL;
	set_error(r, 503, "no healthy backend: %s", s->health_reason);
	return true;
}

/* Take a place for r (queue + slot, then the client's quota), or set a 429
 * / 503.  Called with s->lock held. */
static bool admit(struct server *s, struct req *r)
{
	if (s->draining) {
		r->retry_after = 5;
		set_error(r, 503, "the runner is shutting down: retry on another runner");
		return false;
	}
	if (refuse_unhealthy(s, r))
		return false;
	if (s->queued + s->running + s->borrowed >= s->o.max_concurrent + s->o.queue) {
		s->m.rejected_busy++;
		r->retry_after = 1;
		set_error(r, 429,
		          "the runner is busy: %u running and %u queued (--max-concurrent %u, --queue %u); retry later",
		          s->running, s->queued, s->o.max_concurrent, s->o.queue);
		return false;
	}
	if (s->o.client_concurrency || s->o.subclient_concurrency ||
	    ((s->o.client_rate || s->o.subclient_rate) && !r->route->unmetered))
		return admit_quotas(s, r);
	return true;
}

/* Before a body is decoded: an unhealthy runner refuses at once, so that a
 * load balancer moves on whatever the body.  False with the 503 set. */
bool admit_healthy(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	bool refused = refuse_unhealthy(s, r);
	pthread_mutex_unlock(&s->lock);
	return !refused;
}

/* r at the queue's tail, its connection suspended until a worker is done
 * with it.  Called with s->lock held. */
static void queue_push(struct server *s, struct req *r)
{
	/* suspend before a worker can resume: the order MHD needs */
	MHD_suspend_connection(r->conn);
	conn_set_deadline(s, r->conn, 0);
	if (!s->ntokens)
		conn_trust(s, r->conn); /* until the request is over: see conn_idle */
	r->state = S_WAIT;
	r->t_admit = now_mono();
	trace_phase("http:admitted", r->t_start);
	r->qnext = NULL;
	if (s->qtail)
		s->qtail->qnext = r;
	else
		s->qhead = r;
	s->qtail = r;
	s->queued++;
	s->answering++;
	pthread_cond_signal(&s->work);
}

/* Admit r and queue it; false with the 429 / 503 set. */
bool admit_and_queue(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	bool ok = admit(s, r);
	if (ok)
		queue_push(s, r);
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* The next queued request for a worker (it is running from now on), or
 * NULL once the server stops and the queue is empty. */
struct req *queue_take(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	/* a judge's borrowed slots count as runs (slots_borrow); a light
	 * request (no sandbox) at the head needs a free worker only */
	while (!s->stopping &&
	       (!s->qhead || (s->running + s->borrowed >= s->o.max_concurrent && !s->qhead->route->light)))
		pthread_cond_wait(&s->work, &s->lock);
	struct req *r = s->qhead;
	if (r) {
		s->qhead = r->qnext;
		if (!s->qhead)
			s->qtail = NULL;
		s->queued--;
		s->running++;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

unsigned slots_borrow(struct server *s, unsigned want)
{
	pthread_mutex_lock(&s->lock);
	unsigned busy = s->running + s->borrowed + s->queued;
	unsigned idle = busy < s->o.max_concurrent ? s->o.max_concurrent - busy : 0;
	unsigned n = want < idle ? want : idle;
	s->borrowed += n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void slots_return(struct server *s, unsigned n)
{
	pthread_mutex_lock(&s->lock);
	s->borrowed -= n;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
}

/* A worker is done with r: its slot and quotas are free (a streamed
 * answer: its connection is not suspended by the queue any more). */
void queue_release(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	s->running--;
	if (r->cl) {
		r->cl->active--;
		r->cl = NULL;
	}
	if (r->subcl) {
		r->subcl->active--;
		r->subcl = NULL;
	}
	if (s->borrowed)
		pthread_cond_broadcast(&s->work); /* a worker may wait for a judge's borrowed slot */
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* ... and its connection resumes to send the answer. */
void queue_done(struct server *s, struct req *r)
{
	queue_release(s, r);
	r->state = S_READY;
	/* r belongs to the I/O thread from here on */
	MHD_resume_connection(r->conn);
}

void req_defer(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	MHD_suspend_connection(r->conn);
	conn_set_deadline(s, r->conn, 0);
	r->state = S_WAIT;
	r->t_admit = now_mono();
	s->answering++;
	pthread_mutex_unlock(&s->lock);
}

void req_answer(struct server *s, struct req *r)
{
	hold_answer(s, r);
	r->state = S_READY;
	MHD_resume_connection(r->conn); /* r is the I/O thread's from here on */
}

void clients_free(struct server *s)
{
	for (unsigned i = 0; i < CLIENT_BUCKETS; i++)
		while (s->clients[i]) {
			struct client *c = s->clients[i];
			s->clients[i] = c->next;
			while (c->subs) {
				struct client *u = c->subs;
				c->subs = u->next;
				free(u);
			}
			free(c);
		}
}
