/* session_seccomp.c — a session's seccomp listener, supervisor side, on the
 * host: a fatal call ends the exec it was made in, as it ends a one-shot run.
 * The same thread compares the session's CPU with its budget a few times a
 * second (session.c's session_budget_check ends every exec past it).
 *
 * The session's PID 1 loads the filter (init.c) and hands its listener
 * over; every exec inherits the filter, so one listener hears them all.  A
 * thread of the session's own waits on it.  A notification is read and
 * never answered: the caller stays blocked in the call, which never runs,
 * until session.c's session_seccomp_kill has found the exec by the caller's
 * cgroup and killed that exec's tree (the rest of the session lives on).
 * Without a reader the kernel would fail the call with ENOSYS and the
 * program would go on: the thread runs as long as the session's PID 1.
 * A call withdrawn before it is read (a signal took the caller out of it)
 * fails with EINTR and never runs.  The caller's cgroup is read by pid, and
 * trusted only when the notification is still pending after the read (so
 * the pid was still the caller's: it cannot have been reused; session.c).
 *
 * A frozen session holds no thread: the freeze parks the watch (its thread
 * ends, the listener stays open, so a call made just before the freeze
 * stays pending: the kernel answers ENOSYS only once the listener is
 * closed), and the thaw starts it again before any process runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "sandbox/seccomp.h"
#include "system/session.h"

struct session_watch {
	struct ward_session *s;
	int listener;
	int stop[2];
	pthread_t thread;
	bool on; /* the thread runs (not parked) */
};

static void *watch_main(void *arg)
{
	struct session_watch *w = arg;
	pthread_setname_np(pthread_self(), "ward-sess-watch");
	/* the session's CPU budget is compared with its usage this often */
	double every = session_budget_interval(w->s);
	for (;;) {
		/* frozen: nothing runs, nothing to compare (a thaw wakes it) */
		int ms = every > 0 && !ward_session_frozen(w->s) ? (int)(every * 1000) : -1;
		struct pollfd p[2] = {{.fd = w->stop[0], .events = POLLIN}, {.fd = w->listener, .events = POLLIN}};
		int n = poll(p, w->listener >= 0 ? 2 : 1, ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		char c = 0;
		if (p[0].revents && (read(w->stop[0], &c, 1) <= 0 || c == 'x'))
			break;
		if (every > 0 && !ward_session_frozen(w->s))
			session_budget_check(w->s);
		if (w->listener < 0)
			continue;
		if (p[1].revents & POLLIN) {
			struct ward_seccomp_event ev;
			if (ward_seccomp_notify_read(w->listener, &ev) == 0)
				session_seccomp_kill(w->s, w->listener, ev.id, ev.pid, ev.text);
		} else if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			break; /* no process uses the filter any more: PID 1 is gone */
		}
	}
	return NULL;
}

/* Its thread: 0, or an errno. */
static int watch_thread(struct session_watch *w)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024); /* it only polls and reads */
	int r = pthread_create(&w->thread, &a, watch_main, w);
	pthread_attr_destroy(&a);
	w->on = r == 0;
	return r;
}

int session_watch_start(struct ward_session *s, int listener, struct session_watch **out)
{
	*out = NULL;
	struct session_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct session_watch){.s = s, .listener = listener, .stop = {-1, -1}};
	int r = pipe2(w->stop, O_CLOEXEC | O_NONBLOCK) < 0 ? errno : watch_thread(w);
	if (r) {
		if (w->stop[0] >= 0) {
			close(w->stop[0]);
			close(w->stop[1]);
		}
		free(w);
		return -r;
	}
	*out = w;
	return 0;
}

void session_watch_wake(struct session_watch *w)
{
	if (w && w->on)
		(void)!write(w->stop[1], "w", 1);
}

/* Its thread ends (it may have ended on its own: PID 1 gone), and what it
 * left in the stop pipe goes, so that a thread started again is not
 * stopped by it. */
static void watch_join(struct session_watch *w)
{
	if (!w->on)
		return;
	(void)!write(w->stop[1], "x", 1);
	pthread_join(w->thread, NULL);
	w->on = false;
	char b[64];
	while (read(w->stop[0], b, sizeof b) > 0)
		;
}

int session_watch_park(struct session_watch *w, bool park)
{
	if (!w)
		return 0;
	if (park) {
		watch_join(w);
		return 0;
	}
	return w->on ? 0 : -watch_thread(w);
}

void session_watch_stop(struct session_watch *w)
{
	if (!w)
		return;
	watch_join(w);
	close(w->stop[0]);
	close(w->stop[1]);
	if (w->listener >= 0)
		close(w->listener);
	free(w);
}
