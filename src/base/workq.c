/* workq.c — the threads of a work queue (workq.h). */
#define _GNU_SOURCE
#include "base/workq.h"

static void *workq_main(void *arg)
{
	struct workq *q = arg;
	pthread_setname_np(pthread_self(), q->name);
	pthread_mutex_lock(q->lock);
	int me = q->named++;
	while (!q->stop) {
		void *job = q->take(q->ctx, me);
		if (!job) {
			pthread_cond_wait(q->cond, q->lock);
			continue;
		}
		pthread_mutex_unlock(q->lock);
		q->run(q->ctx, job, me);
		pthread_mutex_lock(q->lock);
	}
	pthread_mutex_unlock(q->lock);
	return NULL;
}

int workq_start(struct workq *q, int n)
{
	for (; q->n < n && q->n < WORKQ_MAX; q->n++) {
		int rc = pthread_create(&q->t[q->n], NULL, workq_main, q);
		if (rc)
			return rc;
	}
	return 0;
}

void workq_stop(struct workq *q)
{
	if (!q->lock)
		return; /* never set up */
	pthread_mutex_lock(q->lock);
	q->stop = true;
	pthread_cond_broadcast(q->cond);
	pthread_mutex_unlock(q->lock);
	for (int i = 0; i < q->n; i++)
		pthread_join(q->t[i], NULL);
	q->n = 0;
}
