/* sessions.c — the sessions a runner holds (SPEC §11): the table, ids,
 * owners, counts against --max-sessions and --client-sessions, reference
 * counts, and their ends: DELETE, expiry (the once-a-second sweep), and the
 * server's stop.
 *
 * Owns s->sessions, s->dying and each struct sess.  A session is made on a
 * worker thread (workers live as long as the server, and a session's PID 1
 * dies with the thread that made it) and destroyed where its last
 * reference is dropped only by DELETE (a worker), the sweep or the stop
 * (the main thread): never on an I/O thread.  A call on a session holds a
 * reference from its lookup to its answer; ward_session_destroy runs only
 * when none is held. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server/server.h"
#include "server/session_json.h"

double now_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* NODEID "." 32 lowercase hex digits: 128 bits from getrandom. */
static int sess_new_id(struct server *s, char *id, size_t n)
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	int k = snprintf(id, n, "%s.", s->o.node_id);
	for (size_t i = 0; i < sizeof(b) && k + 2 < (int)n; i++)
		k += snprintf(id + k, n - (size_t)k, "%02x", b[i]);
	return 0;
}

/* Sessions of owner in the table, and those being made.  Under sess_lock. */
static unsigned owner_count(struct server *s, const char *owner)
{
	unsigned k = 0;
	for (struct sess *x = s->sessions; x; x = x->next)
		k += strcmp(x->owner, owner) == 0;
	for (struct sess *x = s->making; x; x = x->next)
		k += strcmp(x->owner, owner) == 0;
	return k;
}

/* A place for a new session of r's client, or NULL with the 429 set. */
struct sess *sess_place(struct server *s, const char *owner, unsigned *code, char *msg, size_t n)
{
	struct sess *x = calloc(1, sizeof(*x));
	if (!x || sess_new_id(s, x->id, sizeof(x->id)) < 0) {
		free(x);
		*code = 500;
		snprintf(msg, n, "cannot make a session id (out of memory or no randomness)");
		return NULL;
	}
	snprintf(x->owner, sizeof(x->owner), "%s", owner);
	pthread_mutex_lock(&s->sess_lock);
	unsigned all = s->nsessions + s->nmaking, mine = owner_count(s, owner);
	bool ok = all < s->o.max_sessions && mine < s->o.client_sessions;
	if (ok) {
		x->next = s->making;
		s->making = x;
		s->nmaking++;
	}
	pthread_mutex_unlock(&s->sess_lock);
	if (ok)
		return x;
	free(x);
	*code = 429;
	if (all >= s->o.max_sessions)
		snprintf(msg, n, "the runner holds --max-sessions (%u) sessions already; delete one or retry later",
		         s->o.max_sessions);
	else
		snprintf(msg, n, "client '%s' holds --client-sessions (%u) sessions already; delete one first", owner,
		         s->o.client_sessions);
	return NULL;
}

struct sess *sess_reserve(struct server *s, struct req *r)
{
	unsigned code;
	char msg[300];
	struct sess *x = sess_place(s, r->who, &code, msg, sizeof(msg));
	if (!x) {
		r->retry_after = code == 429 ? 5 : 0;
		set_error(r, code, "%s", msg);
	}
	return x;
}

static void unlink_from(struct sess **head, struct sess *x)
{
	for (struct sess **pp = head; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			return;
		}
}

/* The reserved place x: made (ws set: into the table) or not (freed). */
void sess_commit(struct server *s, struct sess *x, struct ward_session *ws, double ttl_s, double idle_s)
{
	pthread_mutex_lock(&s->sess_lock);
	unlink_from(&s->making, x);
	s->nmaking--;
	if (ws) {
		double t = now_mono();
		x->ws = ws;
		x->created_rt = now_real();
		x->ttl_s = ttl_s;
		x->idle_s = idle_s;
		x->end = t + ttl_s;
		x->idle_end = t + idle_s;
		x->hard_end = fmax(t + s->o.session_max_ttl, x->end);
		x->next = s->sessions;
		s->sessions = x;
		s->nsessions++;
		s->sm.created++;
	}
	pthread_mutex_unlock(&s->sess_lock);
	if (!ws)
		free(x);
}

/* The real times a session ends at (its ttl, its idle deadline). */
void sess_times(const struct sess *x, double *expires, double *idle_expires)
{
	double off = now_real() - now_mono();
	*expires = x->end + off;
	*idle_expires = fmin(x->idle_end, x->end) + off;
}

/* Has x ended at t?  Never alive past hard_end; paused, at its pause's
 * end; else at its ttl, or idle past idle_s (when idle counts). */
static bool sess_over(const struct sess *x, double t, bool idle_counts)
{
	if (t >= x->hard_end)
		return true;
	return x->paused ? t >= x->pause_end : t >= x->end || (idle_counts && t >= x->idle_end);
}

/* The session r names, if it is r's client's and alive: held in r->sess
 * (sess_release drops it), the call counted as activity.  Else the 404,
 * the same for an unknown id, another client's, an expired or a deleted
 * one. */
struct sess *sess_get(struct server *s, const char *owner, const char *id)
{
	struct sess *found = NULL;
	double t = now_mono();
	pthread_mutex_lock(&s->sess_lock);
	for (struct sess *x = s->sessions; x; x = x->next)
		if (strcmp(x->id, id) == 0) {
			if (strcmp(x->owner, owner) == 0 && !sess_over(x, t, true))
				found = x;
			break;
		}
	if (found) {
		found->refs++;
		found->idle_end = t + found->idle_s;
	}
	pthread_mutex_unlock(&s->sess_lock);
	return found;
}

bool sess_find(struct server *s, struct req *r)
{
	r->sess = sess_get(s, r->who, r->args.sid);
	if (!r->sess)
		set_error(r, 404, "%s", SESS_404);
	return r->sess != NULL;
}

int sess_pause_by_id(struct server *s, const char *id, const char *owner, bool pause, double timeout_s, char *err,
                     size_t errlen)
{
	struct sess *x = sess_get(s, owner, id);
	if (!x) {
		snprintf(err, errlen, "%s", SESS_404);
		return -ENOENT;
	}
	int r = pause ? ward_session_freeze(x->ws, err, errlen) : ward_session_thaw(x->ws, err, errlen);
	if (r == 0)
		sess_pause(s, x, pause, timeout_s > 0 ? timeout_s : s->o.session_max_ttl);
	sess_unref(s, x);
	return r;
}

/* Drop a reference; the call's end counts as activity too. */
void sess_unref(struct server *s, struct sess *x)
{
	pthread_mutex_lock(&s->sess_lock);
	x->refs--;
	x->idle_end = now_mono() + x->idle_s;
	pthread_cond_broadcast(&s->sess_cond);
	pthread_mutex_unlock(&s->sess_lock);
}

void sess_release(struct req *r)
{
	if (r->sess)
		sess_unref(r->srv, r->sess);
	r->sess = NULL;
}

/* Out of the table for good: no lookup finds it, what runs in it is
 * cancelled.  Under sess_lock. */
static void sess_retire(struct server *s, struct sess *x)
{
	unlink_from(&s->sessions, x);
	s->nsessions--;
	x->cancel = 1;
}

static void sess_destroy(struct server *s, struct sess *x, const char *why)
{
	log_event(s, "session-end", "%s (%s): %s", x->id, x->owner, why);
	ward_session_destroy(x->ws);
	free(x->recipe);
	free(x);
}

/* Into the dying list (under sess_lock): its sandbox is killed now, so a
 * call blocked on it (a stdin write, a files call, an exec) wakes with an
 * error instead of keeping it alive; it is destroyed once no call holds it. */
static void sess_doom(struct server *s, struct sess *x)
{
	x->retired = true;
	sess_retire(s, x);
	ward_session_kill(x->ws);
	x->next = s->dying;
	s->dying = x;
}

/* DELETE: r holds x.  With no other call on it, it is destroyed here,
 * before the 204; else (a call queued or running: it is cancelled and its
 * sandbox killed, and waiting for it here could hold the only worker it
 * needs) the sweep frees it once the last call is over. */
void sess_delete(struct server *s, struct req *r)
{
	struct sess *x = r->sess;
	r->sess = NULL;
	sess_drop(s, x);
}

void sess_drop(struct server *s, struct sess *x)
{
	pthread_mutex_lock(&s->sess_lock);
	bool mine = !x->retired, now = mine && x->refs == 1;
	if (mine) {
		s->sm.deleted++;
		if (now) {
			x->retired = true;
			sess_retire(s, x);
		} else
			sess_doom(s, x);
	}
	x->refs--;
	pthread_mutex_unlock(&s->sess_lock);
	if (now)
		sess_destroy(s, x, "deleted");
}

/* Whether x has ended since r found it (its call then answers 404). */
bool sess_retired(struct server *s, struct sess *x)
{
	pthread_mutex_lock(&s->sess_lock);
	bool gone = x->retired;
	pthread_mutex_unlock(&s->sess_lock);
	return gone;
}

/* The dying sessions no call holds, taken off the list.  Under sess_lock. */
static struct sess *take_unheld(struct server *s)
{
	struct sess *done = NULL;
	for (struct sess **pp = &s->dying; *pp;) {
		struct sess *x = *pp;
		if (x->refs == 0) {
			*pp = x->next;
			x->next = done;
			done = x;
		} else
			pp = &x->next;
	}
	return done;
}

/* Once a second (the main thread): sessions past their ttl, or idle past
 * idle_s with no call in flight, end; the dying ones no call holds any
 * more are destroyed; a session whose sandbox died is ended too. */
void sessions_sweep(struct server *s)
{
	double t = now_mono();
	pthread_mutex_lock(&s->sess_lock);
	for (struct sess *x = s->sessions, *nx; x; x = nx) {
		nx = x->next;
		bool dead = !ward_session_alive(x->ws);
		/* paused: its clocks stand still, but for the pause's own end */
		if (sess_over(x, t, x->refs == 0) || dead) {
			sess_doom(s, x);
			s->sm.expired++;
		}
	}
	struct sess *done = take_unheld(s);
	pthread_mutex_unlock(&s->sess_lock);
	while (done) {
		struct sess *x = done;
		done = x->next;
		sess_destroy(s, x, "expired");
	}
}

/* The server stops (after the drain): every session ends, each destroyed
 * once the calls still on it (cancelled) are over, at most about 10 s. */
void sessions_stop(struct server *s)
{
	pthread_mutex_lock(&s->sess_lock);
	while (s->sessions)
		sess_doom(s, s->sessions);
	pthread_mutex_unlock(&s->sess_lock);
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&s->sess_lock);
		struct sess *done = take_unheld(s);
		bool left = s->dying != NULL;
		pthread_mutex_unlock(&s->sess_lock);
		while (done) {
			struct sess *x = done;
			done = x->next;
			sess_destroy(s, x, "the server stops");
		}
		if (!left)
			return;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	log_event(s, "sessions-left", "calls still hold sessions after 10 s; they end with the server");
}

/* A drain that ran out of time: what runs in sessions is cancelled, and
 * every session's sandbox killed, so that no call on one holds the stop. */
void sessions_cancel(struct server *s)
{
	pthread_mutex_lock(&s->sess_lock);
	for (struct sess *x = s->sessions; x; x = x->next) {
		x->cancel = 1;
		ward_session_kill(x->ws);
	}
	pthread_mutex_unlock(&s->sess_lock);
}

/* The client's sessions, as GET /sessions lists them (on the I/O thread:
 * the table alone, no call into a session). */
void answer_session_list(struct server *s, struct req *r)
{
	/* ?node=NODE (a balancer routes on it): this runner's list only */
	const char *node = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "node");
	if (node && strcmp(node, s->o.node_id) != 0) {
		char shown[72];
		snprintf(shown, sizeof(shown), "%.64s", node);
		for (char *c = shown; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
				*c = '_';
		set_error(r, 404, "this runner is node '%s', not '%s': ask that node for its sessions", s->o.node_id,
		          shown);
		return;
	}
	pthread_mutex_lock(&s->sess_lock);
	size_t n = 0;
	for (struct sess *x = s->sessions; x; x = x->next)
		n += strcmp(x->owner, r->who) == 0;
	struct sj_session *v = calloc(n ? n : 1, sizeof(*v));
	char(*ids)[100] = calloc(n ? n : 1, sizeof(*ids));
	size_t k = 0;
	for (struct sess *x = s->sessions; v && ids && x; x = x->next)
		if (strcmp(x->owner, r->who) == 0) {
			snprintf(ids[k], sizeof(ids[k]), "%s", x->id);
			v[k].id = ids[k];
			v[k].created_at = x->created_rt;
			sess_times(x, &v[k].expires_at, &v[k].idle_expires_at);
			k++;
		}
	pthread_mutex_unlock(&s->sess_lock);
	if (v && ids)
		set_answer(r, 200, sj_sessions_json(v, k), "application/json");
	else
		set_error(r, 500, "out of memory");
	free(v);
	free(ids);
}

/* Whether x is busy (a call other than the asker's holds it). */
bool sess_busy(struct server *s, struct sess *x)
{
	pthread_mutex_lock(&s->sess_lock);
	bool busy = x->refs > 1;
	pthread_mutex_unlock(&s->sess_lock);
	return busy;
}

void sess_count_exec(struct server *s, struct sess *x, enum ward_status st)
{
	pthread_mutex_lock(&s->sess_lock);
	x->execs++;
	if ((unsigned)st <= WARD_ST_ERROR)
		s->sm.execs[st]++;
	pthread_mutex_unlock(&s->sess_lock);
}

/* Paused (POST .../pause): its ttl and idle deadlines stop, and it ends
 * timeout_s from now if still paused; resumed: they go on from where they
 * stood (the time paused added to both).  Pausing a paused session changes
 * nothing (its pause's end stands), and neither a pause nor a resume takes
 * it past its hard_end: pauses cannot keep it for ever. */
void sess_pause(struct server *s, struct sess *x, bool on, double timeout_s)
{
	pthread_mutex_lock(&s->sess_lock);
	double t = now_mono();
	if (on && !x->paused) {
		x->paused = true;
		x->paused_at = t;
		x->pause_end = fmin(t + timeout_s, x->hard_end);
	}
	if (!on && x->paused) {
		x->paused = false;
		x->end = fmin(x->end + (t - x->paused_at), x->hard_end);
		x->idle_end = fmin(fmax(x->idle_end + (t - x->paused_at), t + x->idle_s), x->hard_end);
	}
	pthread_mutex_unlock(&s->sess_lock);
}

void sess_set_end(struct server *s, struct sess *x, double ttl_s)
{
	pthread_mutex_lock(&s->sess_lock);
	double t = now_mono();
	x->ttl_s = t + ttl_s - (x->end - x->ttl_s); /* from its start, as ttl_s always is */
	x->end = t + ttl_s;
	x->idle_s = fmax(x->idle_s, ttl_s);
	x->idle_end = fmax(x->idle_end, x->end);
	x->hard_end = fmax(x->hard_end, x->end); /* (an explicit new end, at most --session-max-ttl from now) */
	pthread_mutex_unlock(&s->sess_lock);
}
