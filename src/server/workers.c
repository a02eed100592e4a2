/* workers.c — the worker threads (--max-concurrent of them): each takes an
 * admitted request from the queue, runs it (its route's run: ward_run and
 * the like), counts its answer in the answer budget and hands it back to
 * its connection, or hands the request on to the thread that answers it
 * (r->handoff: a relay's pump).  Workers live as long as the server, so that a sandbox's
 * PID 1, which dies with the thread that created it (PR_SET_PDEATHSIG),
 * never dies with a client's connection.
 *
 * Owns s->workers.  The only threads that run a request's sandbox; never
 * reads from or writes to a connection (the I/O threads send the answer). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/supervise.h"
#include "server/server.h"

static void *worker_main(void *arg)
{
	struct server *s = arg;
	struct req *r;
	while ((r = queue_take(s))) {
		trace_phase("http:picked", r->t_start);
		if (r->sess && sess_retired(s, r->sess))
			set_error(r, 404, "%s", SESS_404);
		else
			r->route->run(r);
		trace_phase("http:ran", r->t_start);
		if (r->handoff) { /* its answer is another thread's (its body too, until then) */
			void (*handoff)(struct req *) = r->handoff;
			queue_release(s, r);
			handoff(r);
			continue;
		}
		body_release(s, r); /* not needed any more: release it before the answer is sent */
		if (stream_started(r)) {
			stream_finish(s, r); /* r is the I/O thread's (or gone) from here on */
			continue;
		}
		hold_answer(s, r);
		queue_done(s, r);
	}
	return NULL;
}

/* -1 with a message when not all of them start (those that did are
 * stopped by workers_stop). */
int workers_start(struct server *s)
{
	s->workers = calloc(s->o.max_concurrent, sizeof(pthread_t));
	if (!s->workers)
		return -1;
	for (; s->nworkers < s->o.max_concurrent; s->nworkers++) {
		int e = pthread_create(&s->workers[s->nworkers], NULL, worker_main, s);
		if (e) {
			fprintf(stderr, "ward serve: cannot start worker threads: %s\n", strerror(e));
			return -1;
		}
	}
	return 0;
}

/* Let the workers finish the queue and end. */
void workers_stop(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
}
