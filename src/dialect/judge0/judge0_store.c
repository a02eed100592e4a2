/* judge0_store.c — the submissions a Judge0 listener holds (SPEC §16).
 *
 * Two kinds, counted apart.  Waiting work (queued or running) is what
 * --judge0-max-queue caps, and each client (its token's name, or its
 * address) has a share of it (--judge0-client-queue): one client cannot
 * fill the queue for the others.  Finished submissions are results kept
 * for --judge0-keep seconds, at most --judge0-max-kept of them and all
 * within --max-body-total; they never refuse new work: when room is needed
 * the oldest finished submission of the client that keeps the most goes
 * first (its token then answers 404, as an expired one does).
 *
 * An answer is made outside the lock from a snapshot (j0_snap): what a
 * request gave never changes, and a finished outcome never changes again;
 * a snapshot's record is not freed until it is let go (refs).
 *
 * Owns j->subs, the counts and j->owners; everything under j->lock. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/judge0/judge0_int.h"

/* A client that holds submissions: its counts. */
struct j0_owner {
	char name[96];
	unsigned waiting, kept;
	struct j0_owner *next;
};

static struct j0_owner **bucket(struct j0 *j, const char *name)
{
	unsigned h = 5381;
	for (const char *p = name; *p; p++)
		h = h * 33 + (unsigned char)*p;
	return &j->owners[h % J0_OWNER_BUCKETS];
}

static struct j0_owner *owner_get(struct j0 *j, const char *name)
{
	struct j0_owner **b = bucket(j, name);
	for (struct j0_owner *o = *b; o; o = o->next)
		if (!strcmp(o->name, name))
			return o;
	struct j0_owner *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->next = *b;
	*b = o;
	return o;
}

/* An owner that holds nothing any more is forgotten. */
static void owner_put(struct j0 *j, struct j0_owner *o)
{
	if (o->waiting || o->kept)
		return;
	for (struct j0_owner **pp = bucket(j, o->name); *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			free(o);
			return;
		}
}

/* Unlink x from the table and free it (the lock held, x not snapped). */
static void drop(struct j0 *j, struct j0_sub **pp)
{
	struct j0_sub *x = *pp;
	*pp = x->next;
	j->nsubs--;
	if (x->status > 2) {
		j->kept--;
		x->owner->kept--;
	} else {
		j->waiting--;
		x->owner->waiting--;
	}
	owner_put(j, x->owner);
	__atomic_sub_fetch(&j->s->body_bytes, x->held, __ATOMIC_RELAXED);
	j0_sub_free(x);
}

/* Drop the oldest finished submission of the client that keeps the most
 * (none being answered now); false when there is none to drop. */
static bool evict_one(struct j0 *j)
{
	struct j0_owner *top = NULL;
	for (unsigned i = 0; i < J0_OWNER_BUCKETS; i++)
		for (struct j0_owner *o = j->owners[i]; o; o = o->next)
			if (o->kept && (!top || o->kept > top->kept))
				top = o;
	if (!top)
		return false;
	struct j0_sub **last = NULL; /* the table is newest first: the last match is the oldest */
	for (struct j0_sub **pp = &j->subs; *pp; pp = &(*pp)->next)
		if ((*pp)->owner == top && (*pp)->status > 2 && !(*pp)->refs)
			last = pp;
	if (!last)
		return false;
	drop(j, last);
	return true;
}

/* The 503 (Judge0's body: queue is full; the log says whose). */
static bool full(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool full(struct req *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	r->retry_after = 1;
	set_answer(r, 503, j0_error_json("queue is full"), "application/json");
	return false;
}

/* Room for n more and bytes among the finished (the lock held). */
static bool make_room(struct j0 *j, size_t n, size_t bytes)
{
	struct server *s = j->s;
	while (j->kept && j->kept + n > s->o.judge0_max_kept && evict_one(j))
		;
	while (!body_reserve(s, bytes))
		if (!evict_one(j))
			return false;
	return true;
}

/* Whether n more of r's client may wait now; false with the 503 set (the
 * lock held). */
static bool may_wait(struct req *r, struct j0 *j, const struct j0_owner *o, size_t n)
{
	struct server *s = r->srv;
	if (j->waiting + n > s->o.judge0_max_queue)
		return full(r, "queue is full: %u submissions wait (--judge0-max-queue %u)", j->waiting,
		            s->o.judge0_max_queue);
	if (o && o->waiting + n > s->o.judge0_client_queue)
		return full(r,
		            "queue is full for client '%s': %u of its submissions wait (its share, "
		            "--judge0-client-queue, is %u)",
		            r->who, o->waiting, s->o.judge0_client_queue);
	return true;
}

bool j0_room(struct req *r, struct j0 *j)
{
	pthread_mutex_lock(&j->lock);
	const struct j0_owner *o = *bucket(j, r->who);
	while (o && strcmp(o->name, r->who))
		o = o->next;
	bool ok = may_wait(r, j, o, 1);
	pthread_mutex_unlock(&j->lock);
	return ok;
}

bool j0_hold(struct req *r, struct j0 *j, struct j0_sub **v, size_t n, bool queue)
{
	struct server *s = r->srv;
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += v[i]->held;
	pthread_mutex_lock(&j->lock);
	struct j0_owner *o = owner_get(j, r->who);
	bool ok = false;
	if (!o)
		full(r, "queue is full: out of memory for the client's record");
	else if (!may_wait(r, j, o, n))
		;
	else if (!make_room(j, n, bytes))
		full(r, "queue is full: the submissions held fill --max-body-total (%zu bytes)", s->o.max_body_total);
	else
		ok = true;
	if (!ok) {
		if (o)
			owner_put(j, o);
		pthread_mutex_unlock(&j->lock);
		return false;
	}
	unsigned group = n > 1 ? ++j->next_group : 0;
	for (size_t i = 0; i < n; i++) {
		struct j0_sub *x = v[i];
		x->group = group;
		x->owner = o;
		x->expires = now_mono() + s->o.judge0_keep;
		x->next = j->subs;
		j->subs = x;
		j->nsubs++;
		j->waiting++;
		o->waiting++;
		if (!queue) {
			x->status = 2; /* the caller runs it now, and answers from it: */
			x->refs++;     /* not dropped meanwhile (it lets go, j0_unref) */
			continue;
		}
		if (j->qtail)
			j->qtail->qnext = x;
		else
			j->qhead = x;
		j->qtail = x;
		j->queued++;
	}
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return true;
}

void j0_unref(struct j0 *j, struct j0_sub *x)
{
	pthread_mutex_lock(&j->lock);
	x->refs--;
	pthread_mutex_unlock(&j->lock);
}

void j0_finished(struct j0 *j, struct j0_sub *x)
{
	j->waiting--;
	x->owner->waiting--;
	j->kept++;
	x->owner->kept++;
}

bool j0_snap(struct j0 *j, const char *token, struct j0_sub *copy)
{
	pthread_mutex_lock(&j->lock);
	struct j0_sub *x = j->subs;
	while (x && strcmp(x->token, token))
		x = x->next;
	if (x) {
		x->refs++;
		*copy = *x;
		copy->next = x; /* the record, for j0_unsnap */
	}
	pthread_mutex_unlock(&j->lock);
	return x != NULL;
}

void j0_unsnap(struct j0 *j, struct j0_sub *copy)
{
	pthread_mutex_lock(&j->lock);
	copy->next->refs--;
	pthread_mutex_unlock(&j->lock);
}

void j0_sweep(struct server *s, void *state)
{
	struct j0 *j = state;
	double now = now_mono();
	pthread_mutex_lock(&j->lock);
	for (struct j0_sub **pp = &j->subs; *pp;) {
		struct j0_sub *x = *pp;
		/* a finished one past its time, not being answered; a waiting one stays */
		if (x->status > 2 && x->expires <= now && !x->refs)
			drop(j, pp);
		else
			pp = &x->next;
	}
	pthread_mutex_unlock(&j->lock);
}

void j0_store_free(struct j0 *j)
{
	while (j->subs)
		drop(j, &j->subs);
}
