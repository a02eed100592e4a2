/* reaper.c — sandboxes whose run is over, torn down after the answer
 * (reaper.h; ward.h: ward_reaper_start, ward_reaper_stop).
 *
 * Once PID 1 has reported the command's status, every process of the
 * sandbox is gone (PID 1 killed and reaped them first: init.c) and the
 * result is complete; what is left is PID 1's own exit (the kernel's
 * teardown of its namespaces waits for an RCU grace period), the reap, the
 * cgroups' removal and giving the network namespace back.  None of it
 * changes the answer, so in a server one thread does it, while the
 * request's thread answers and takes the next request.  A queue of at most
 * REAPER_MAX, first in first out (each waiting sandbox holds its cgroups and
 * its network namespace); beyond it the requests' threads tear down their own
 * (backpressure).  ward_reaper_stop tears down what is queued before it
 * returns, so a server that stops leaves no sandbox and no cgroup behind.
 *
 * Runs on the host, in ward; depends on supervisor.h only.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "system/reaper.h"
#include "system/supervisor.h"
#include "ward.h"

#define REAPER_MAX 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_more = PTHREAD_COND_INITIALIZER;
static struct sandbox *g_queue[REAPER_MAX]; /* a ring: the oldest goes first */
static unsigned g_head, g_n;
static bool g_running, g_stop;
static pthread_t g_thread;

static void *reaper_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&g_lock);
	for (;;) {
		if (g_n) {
			struct sandbox *sb = g_queue[g_head];
			g_head = (g_head + 1) % REAPER_MAX;
			g_n--;
			pthread_mutex_unlock(&g_lock);
			sandbox_destroy(sb);
			pthread_mutex_lock(&g_lock);
			continue;
		}
		if (g_stop)
			break;
		pthread_cond_wait(&g_more, &g_lock);
	}
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

int ward_reaper_start(void)
{
	pthread_mutex_lock(&g_lock);
	int rc = 0;
	if (!g_running) {
		g_stop = false;
		rc = pthread_create(&g_thread, NULL, reaper_main, NULL) == 0 ? 0 : -1;
		g_running = rc == 0;
	}
	pthread_mutex_unlock(&g_lock);
	return rc;
}

void ward_reaper_stop(void)
{
	pthread_mutex_lock(&g_lock);
	bool was = g_running;
	g_stop = true;
	pthread_cond_signal(&g_more);
	pthread_mutex_unlock(&g_lock);
	if (!was)
		return;
	pthread_join(g_thread, NULL); /* the queue is empty once it returns */
	pthread_mutex_lock(&g_lock);
	g_running = false;
	pthread_mutex_unlock(&g_lock);
}

bool reaper_running(void)
{
	pthread_mutex_lock(&g_lock);
	bool r = g_running && !g_stop;
	pthread_mutex_unlock(&g_lock);
	return r;
}

bool reaper_retire(struct sandbox *sb)
{
	pthread_mutex_lock(&g_lock);
	bool ok = g_running && !g_stop && g_n < REAPER_MAX;
	if (ok) {
		g_queue[(g_head + g_n++) % REAPER_MAX] = sb;
		pthread_cond_signal(&g_more);
	}
	pthread_mutex_unlock(&g_lock);
	return ok;
}
