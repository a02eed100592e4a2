/* tests/unit/test_workq.c — base/workq.h: every job queued is run once,
 * by the threads named so, each with its own number; the owner's take
 * decides the order (a job it holds back is not run); stop joins them,
 * and stops nothing on a zeroed queue. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "base/workq.h"
#include "unit.h"

struct owner {
	pthread_mutex_t lock;
	pthread_cond_t cond, ran;
	int queue[64], nq, done[64], ndone;
	int vals[64]; /* vals[i] == i: what a job points at */
	bool held;    /* job 0 held back by take */
	int thread_seen[4];
	bool named;
};

static void *take(void *ctx, int thread)
{
	struct owner *o = ctx;
	for (int i = 0; i < o->nq; i++)
		if (!(o->held && o->queue[i] == 0)) {
			int v = o->queue[i];
			memmove(&o->queue[i], &o->queue[i + 1], (size_t)(o->nq - i - 1) * sizeof(int));
			o->nq--;
			return &o->vals[v];
		}
	return NULL;
}

static void run(void *ctx, void *job, int thread)
{
	struct owner *o = ctx;
	char name[16] = "";
	pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_mutex_lock(&o->lock);
	o->done[o->ndone++] = *(int *)job;
	if (thread >= 0 && thread < 4)
		o->thread_seen[thread]++;
	o->named |= strcmp(name, "unit-workq") == 0;
	pthread_cond_broadcast(&o->ran);
	pthread_mutex_unlock(&o->lock);
}

void test_workq(void)
{
	struct workq zero;
	memset(&zero, 0, sizeof(zero));
	workq_stop(&zero);
	CHECK("workq: a zeroed queue stops (nothing to join)", zero.n == 0);

	struct owner o;
	memset(&o, 0, sizeof(o));
	for (int i = 0; i < 64; i++)
		o.vals[i] = i;
	pthread_mutex_init(&o.lock, NULL);
	pthread_cond_init(&o.cond, NULL);
	pthread_cond_init(&o.ran, NULL);
	struct workq q = {.lock = &o.lock, .cond = &o.cond, .take = take, .run = run, .ctx = &o, .name = "unit-workq"};
	CHECK("workq: three threads start", workq_start(&q, 3) == 0 && q.n == 3);
	pthread_mutex_lock(&o.lock);
	o.held = true;
	for (int i = 0; i < 20; i++)
		o.queue[o.nq++] = i;
	pthread_cond_broadcast(&o.cond);
	while (o.ndone < 19)
		pthread_cond_wait(&o.ran, &o.lock);
	int seen = 0;
	for (int i = 0; i < o.ndone; i++)
		seen |= 1 << o.done[i];
	CHECK("workq: every job but the one take holds back ran, once",
	      o.ndone == 19 && seen == (0xfffff & ~1) && o.nq == 1);
	o.held = false;
	pthread_cond_signal(&o.cond);
	while (o.ndone < 20)
		pthread_cond_wait(&o.ran, &o.lock);
	CHECK("workq: ... and it, once take lets it go", o.done[19] == 0 && o.nq == 0);
	CHECK("workq: the threads have their name", o.named);
	pthread_mutex_unlock(&o.lock);
	workq_stop(&q);
	CHECK("workq: stop joins them all", q.n == 0 && q.stop);
	pthread_cond_destroy(&o.ran);
	pthread_cond_destroy(&o.cond);
	pthread_mutex_destroy(&o.lock);
}
