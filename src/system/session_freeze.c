/* session_freeze.c — freezing a session and thawing it (ward.h's
 * ward_session_freeze, ward_session_thaw), supervisor side, on the host.
 *
 * Every process of the session stops where it is (sandbox/freezer.c: the
 * session cgroup's tree), keeping its memory; PID 1 and its file workers
 * too, so the files API waits until the thaw (save and fork read the files
 * from the host instead: session_save.c).  A frozen session holds no
 * thread of ward's (a host with hundreds paused holds no stack for them):
 * the armer ends before the freeze (it may be asking PID 1), the listener
 * thread (and its budget check) after it, the egress proxy's thread, and
 * each background process's thread once it has drained what its pipes
 * hold; their state stays in the session (session_bg.c, session_seccomp.c,
 * egress.c, session_exec.c).  The thaw starts them again: the listener,
 * the proxy's and the background threads before the processes go on (no
 * call is made unheard; one that cannot start leaves the session frozen,
 * the thaw's error saying so), the armer after.  The session's clocks
 * stop: the time spent frozen is not counted in a background process's
 * timeout_s (session_bg.c), and a frozen session's CPU does not grow.
 * What a caller's own deadlines do (a server's TTL) is the caller's:
 * ward_session_frozen_seconds says how long it was frozen.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/errf.h"
#include "core/supervise.h"
#include "sandbox/cgroup.h"
#include "sandbox/freezer.h"
#include "system/egress.h"
#include "system/session.h"

/* How long the kernel gets to stop every task (one in an uninterruptible
 * sleep stops only as it leaves it). */
#define FREEZE_WAIT_S 5.0

int session_freezer_open(struct ward_session *s, char *err, size_t errlen)
{
	char why[256] = "";
	int r = freezer_open(s->parts.cg, s->parts.pid, &s->freezer, why, sizeof(why));
	if (r == -ENOTSUP) { /* the session works; freezing it says why not */
		snprintf(s->freeze_none, sizeof(s->freeze_none), "%s", why);
		return 0;
	}
	if (r < 0)
		base_errf(err, errlen, "%s", why);
	return r;
}

bool ward_session_frozen(struct ward_session *s)
{
	return __atomic_load_n(&s->frozen, __ATOMIC_ACQUIRE);
}

double ward_session_frozen_seconds(struct ward_session *s)
{
	pthread_mutex_lock(&s->lock);
	double t = s->frozen_total + (s->frozen ? monotonic_now() - s->frozen_since : 0);
	pthread_mutex_unlock(&s->lock);
	return t;
}

int session_refuse_frozen(struct ward_session *s, char *err, size_t errlen)
{
	if (!ward_session_frozen(s))
		return 0;
	base_errf(err, errlen, "the session is frozen (paused): thaw (resume) it first");
	return -EBUSY;
}

/* Frozen: its threads end (see the header). */
static void park_threads(struct ward_session *s)
{
	session_watch_park(s->watch, true);
	session_bg_park(s->bg, true);
	egress_park(s->parts.egress, true);
}

/* Its threads, started again while still frozen (then they wait without
 * a timeout): 0, or -errno with none of them started. */
static int start_threads(struct ward_session *s, char *err, size_t errlen)
{
	int r = session_watch_park(s->watch, false);
	if (r == 0 && (r = session_bg_park(s->bg, false)) < 0)
		session_watch_park(s->watch, true);
	if (r == 0 && (r = egress_park(s->parts.egress, false)) < 0) {
		session_bg_park(s->bg, true);
		session_watch_park(s->watch, true);
	}
	if (r < 0)
		base_errf(err, errlen, "cannot start the session's threads again (%s): retry the thaw", strerror(-r));
	return r;
}

/* Thawed: its threads look at the clock again; the armer starts. */
static void wake_threads(struct ward_session *s)
{
	session_watch_wake(s->watch);
	session_bg_wake(s->bg);
	session_armer_park(s, false);
}

int ward_session_freeze(struct ward_session *s, char *err, size_t errlen)
{
	if (!s->freezer) {
		base_errf(err, errlen, "this session cannot be frozen: %s",
		          s->freeze_none[0] ? s->freeze_none : "no freezer");
		return -ENOTSUP;
	}
	pthread_mutex_lock(&s->freeze_lock);
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (session_killed(s) || !ward_session_alive(s))
		r = -ESRCH;
	else if (s->frozen)
		r = 1;
	else if (s->foreground)
		r = -EBUSY;
	else {
		s->frozen = true; /* from now on calls are refused */
		s->frozen_since = monotonic_now();
	}
	pthread_mutex_unlock(&s->lock);
	if (r == -ESRCH)
		base_errf(err, errlen, "the session is gone");
	if (r == -EBUSY)
		base_errf(err, errlen,
		          "an exec is running in the session: wait for it to end, or cancel it, then freeze");
	bool froze = r == 0; /* this call set frozen */
	if (froze)
		session_armer_park(s, true);
	if (froze && (r = freezer_set(s->freezer, true, FREEZE_WAIT_S)) < 0)
		base_errf(err, errlen, "cannot freeze the session: %s", strerror(-r));
	else if (froze && session_killed(s)) {
		/* killed since the look above: ward_session_kill found nothing
		 * frozen to thaw, and a frozen task dies only thawed (v1) */
		base_errf(err, errlen, "the session is gone");
		r = -ESRCH;
	}
	if (froze && r < 0) {
		freezer_set(s->freezer, false, FREEZE_WAIT_S);
		pthread_mutex_lock(&s->lock);
		s->frozen = false;
		pthread_mutex_unlock(&s->lock);
		wake_threads(s);
	}
	if (r == 0) /* stopped: its threads end (see the header) */
		park_threads(s);
	pthread_mutex_unlock(&s->freeze_lock);
	return r < 0 ? r : 0;
}

int ward_session_thaw(struct ward_session *s, char *err, size_t errlen)
{
	if (!s->freezer)
		return 0;
	pthread_mutex_lock(&s->freeze_lock);
	bool was = ward_session_frozen(s);
	int r = was ? start_threads(s, err, errlen) : 0;
	if (r == 0 && was && (r = freezer_set(s->freezer, false, FREEZE_WAIT_S)) < 0) {
		base_errf(err, errlen, "cannot thaw the session: %s", strerror(-r));
		park_threads(s); /* still frozen: parked again */
	}
	pthread_mutex_lock(&s->lock);
	if (r == 0 && s->frozen) {
		s->frozen_total += monotonic_now() - s->frozen_since;
		s->frozen = false;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == 0)
		wake_threads(s);
	pthread_mutex_unlock(&s->freeze_lock);
	return r;
}
