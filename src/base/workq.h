/* workq.h — a few threads that take jobs from their owner's queue, one at
 * a time, and stop together: the loop the E2B makers, its pauser, its
 * WatchDir listers, its template worker and Judge0's runners each wrote
 * by hand.  The queue
 * is the owner's (its order, its fairness), under the owner's lock; the
 * threads only wait on the owner's condition, take, run and go back. */
#ifndef WARD_BASE_WORKQ_H
#define WARD_BASE_WORKQ_H

#include <pthread.h>
#include <stdbool.h>

#define WORKQ_MAX 64

struct workq {
	pthread_mutex_t *lock; /* the owner's: guards its queue and stop */
	pthread_cond_t *cond;  /* the owner's: signalled when a job is queued */
	/* under lock: the next job taken out of the queue, or NULL to wait */
	void *(*take)(void *ctx, int thread);
	/* with the lock released: the job done (thread: 0 to n-1, its own) */
	void (*run)(void *ctx, void *job, int thread);
	void *ctx;
	const char *name; /* the threads', as /proc shows them (15 bytes at most) */
	bool stop;        /* under lock: the threads end (set by workq_stop, or by the owner first) */
	int n;            /* threads started */
	int named;        /* threads that took their number */
	pthread_t t[WORKQ_MAX];
};

/* n threads (at most WORKQ_MAX) started; 0, or pthread_create's error
 * (those already started run until workq_stop). */
int workq_start(struct workq *q, int n);
/* Every thread told to stop (a job running finishes first) and joined;
 * what is still queued is the owner's.  A zeroed q (never set up): nothing. */
void workq_stop(struct workq *q);

#endif
