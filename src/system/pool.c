/* pool.c — sandboxes built ahead of demand (ward.h: ward_pool_new).
 *
 * A thread of the pool's own keeps `size` system-level sandboxes ready: each
 * one's PID 1 has its namespaces, root, cgroup and host uid, and waits on
 * its sync pipe for a command (supervisor.c, handover.c).  A request of
 * the pool's shape takes one; the sandbox runs that one command, and once
 * its answer is out the same thread tears it down (pool_retire) and builds
 * a replacement.  A sandbox is never given a second command.
 *
 * ward_pool_free kills what is left; PID 1s also die with the thread that
 * cloned them (PR_SET_PDEATHSIG): the filler, or the main thread, where a
 * spawner helper (spawner.h) cloned them.
 *
 * Depends on supervisor.h (what a sandbox is) and spawner.h (who clones
 * it); neither knows the pool.  Runs on the host, in ward; its thread owns
 * the sandboxes it holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/supervise.h"
#include "image/root.h"
#include "system/pool.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

struct ward_pool {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a sandbox was taken or made, or stop */
	struct ward_request shape;
	struct sandbox **ready;
	unsigned size, nready;
	struct sandbox **retired; /* used, to destroy */
	unsigned nretired, max_retired;
	unsigned running; /* runs in progress (pool_busy) */
	bool stop, started;
	uint64_t hits, misses, failures;
	unsigned failures_in_row;
	char error[512]; /* the last build failure */
	pthread_t filler;
};

static void timed_wait(struct ward_pool *p, double secs)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long ns = ts.tv_nsec + (long long)(secs * 1e9);
	ts.tv_sec += (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	pthread_cond_timedwait(&p->changed, &p->lock, &ts);
}

static void *filler_main(void *arg)
{
	struct ward_pool *p = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		/* Background work waits while runs are in progress: on a small
		 * machine, building and tearing down next to a run slows that
		 * run down (namespace and cgroup setup contend in the kernel).
		 * Unless the pool is empty, or used sandboxes pile up. */
		bool urgent = p->nready == 0 || p->nretired >= p->max_retired / 2;
		if (p->running && !urgent) {
			pthread_cond_wait(&p->changed, &p->lock);
			continue;
		}
		if (p->nretired) {
			struct sandbox *old = p->retired[--p->nretired];
			pthread_mutex_unlock(&p->lock);
			sandbox_destroy(old);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (p->nready >= p->size) {
			pthread_cond_wait(&p->changed, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		char err[512] = "";
		struct sandbox *sb =
			sandbox_build(&p->shape, true, monotonic_now(), spawner_cloner(), err, sizeof(err));
		pthread_mutex_lock(&p->lock);
		if (!sb) {
			p->failures++;
			snprintf(p->error, sizeof(p->error), "%s", err);
			pthread_cond_broadcast(&p->changed);
			/* back off while the host cannot make sandboxes: the
			 * requests build their own meanwhile and report why */
			unsigned n = ++p->failures_in_row;
			if (!p->stop)
				timed_wait(p, n < 5 ? 0.05 * n : 1.0);
			continue;
		}
		p->failures_in_row = 0;
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			sandbox_destroy(sb);
			pthread_mutex_lock(&p->lock);
			break;
		}
		p->ready[p->nready++] = sb;
		pthread_cond_broadcast(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct ward_pool *ward_pool_new(unsigned size, enum ward_net net, char *err, size_t errlen)
{
	return ward_pool_new_on(size, net, NULL, err, errlen);
}

struct ward_pool *ward_pool_new_on(unsigned size, enum ward_net net, const struct ward_image_root *image, char *err,
                                   size_t errlen)
{
	if (size == 0 || size > 4096) {
		snprintf(err, errlen, "a pool holds 1 to 4096 sandboxes");
		return NULL;
	}
	struct ward_pool *p = calloc(1, sizeof(*p));
	if (p) {
		p->ready = calloc(size, sizeof(*p->ready));
		/* used sandboxes waiting for teardown: beyond this many, the
		 * requests' threads tear down their own (backpressure) */
		p->max_retired = size + 16;
		p->retired = calloc(p->max_retired, sizeof(*p->retired));
	}
	if (!p || !p->ready || !p->retired) {
		if (p) {
			free(p->ready);
			free(p->retired);
		}
		free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->changed, NULL);
	ward_request_init(&p->shape);
	p->shape.net = net;
	p->shape.isolation = WARD_ISO_SYSTEM;
	if (image) { /* the image's root, as image_root_apply gives it to each request */
		struct ward_request on;
		char **env = NULL;
		p->shape.image = image;
		if (image_root_apply(&p->shape, &on, &env, err, errlen) < 0) {
			ward_pool_free(p);
			return NULL;
		}
		free(env);
		on.env = NULL;
		p->shape = on;
	}
	p->size = size;
	int e = pthread_create(&p->filler, NULL, filler_main, p);
	if (e) {
		snprintf(err, errlen, "cannot start the pool's thread: %s", strerror(e));
		ward_pool_free(p);
		return NULL;
	}
	p->started = true;
	/* Return once the pool is full, or say why it cannot fill. */
	double until = monotonic_now() + 60;
	pthread_mutex_lock(&p->lock);
	while (p->nready < p->size && p->failures < 3 && monotonic_now() < until)
		timed_wait(p, 0.5);
	bool failed = p->nready == 0;
	if (failed)
		snprintf(err, errlen, "cannot build sandboxes ahead: %s",
		         p->error[0] ? p->error : "timed out waiting for the first one");
	pthread_mutex_unlock(&p->lock);
	if (failed) {
		ward_pool_free(p);
		return NULL;
	}
	return p;
}

struct sandbox *pool_take(struct ward_pool *p, const struct ward_request *req)
{
	if (!sandbox_same_shape(&p->shape, req))
		return NULL;
	struct sandbox *sb = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->nready) {
		sb = p->ready[--p->nready];
		p->hits++;
		pthread_cond_broadcast(&p->changed);
	} else
		p->misses++;
	pthread_mutex_unlock(&p->lock);
	return sb;
}

void pool_busy(struct ward_pool *p, int delta)
{
	pthread_mutex_lock(&p->lock);
	p->running += (unsigned)delta;
	if (p->running == 0)
		pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
}

bool pool_retire(struct ward_pool *p, struct sandbox *sb)
{
	bool ok = false;
	pthread_mutex_lock(&p->lock);
	if (!p->stop && p->nretired < p->max_retired) {
		p->retired[p->nretired++] = sb;
		pthread_cond_broadcast(&p->changed);
		ok = true;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

void ward_pool_stats(struct ward_pool *p, struct ward_pool_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = (struct ward_pool_stats){
		.size = p->size, .ready = p->nready, .hits = p->hits, .misses = p->misses, .failures = p->failures};
	pthread_mutex_unlock(&p->lock);
}

void ward_pool_free(struct ward_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	if (p->started)
		pthread_join(p->filler, NULL);
	for (unsigned i = 0; i < p->nready; i++)
		sandbox_destroy(p->ready[i]);
	for (unsigned i = 0; i < p->nretired; i++)
		sandbox_destroy(p->retired[i]);
	free(p->retired);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
	free(p->ready);
	free(p);
}
