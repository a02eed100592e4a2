/* e2b_life.c — a sandbox's life past its running (SPEC §18): pause,
 * resume (connect, autoResume on the data plane), autoPause at the
 * timeout, kill of a paused one, and the state directory that keeps
 * paused sandboxes across a restart.
 *
 * A pause freezes the session (cgroup freezer: its processes keep their
 * memory while the runner lives, use no CPU, and libward's threads for it
 * go idle) and writes its files (its /work, the home) to
 * STATE/ID/files, then its record (id, owner, tokens, template, metadata,
 * the create body) to STATE/ID/record.json.  {"memory": false} ends the
 * session instead.  A resume thaws the frozen session; one whose session
 * is gone (memory false, its pause outlived --session-max-ttl, or the
 * runner restarted) is made again from its create body, its files
 * restored, under the same id and tokens: files without processes, as
 * E2B's memory:false.  A resume that cannot restore every file answers
 * 507 and stays paused.  Caps: --e2b-max-paused sandboxes, their files
 * within --e2b-paused-bytes in all (a pause past them 429 / 507).
 * autoPause's pauses are made by a thread of their own (the pauser),
 * queued by the sweep: a pause of a big home never holds the sweep. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"
#include "image/store.h"

#define STATE_DEFAULT "/var/lib/ward/e2b"
#define MAX_PAUSED_DEFAULT 64
#define PAUSED_BYTES_DEFAULT (4ull << 30)
#define RESUME_MIN_S 300.0     /* an auto-resumed sandbox's timeout: at least E2B's default */
#define AUTOPAUSE_GRACE_S 60.0 /* a queued autoPause's session lives this long for it */

bool e2b_is_paused(struct e2b *e, struct e2b_sbx *x)
{
	pthread_mutex_lock(&e->lock);
	bool p = x->paused;
	pthread_mutex_unlock(&e->lock);
	return p;
}

/* STATE/ID removed (never following a link). */
static void state_drop(struct e2b *e, const char *id)
{
	int fd = open(e->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	store_rm_tree(fd, id);
	close(fd);
}

static int write_record(struct e2b *e, const struct e2b_sbx *x, char *err, size_t n)
{
	json_t *md = x->meta ? json_incref(x->meta) : json_object();
	json_t *v =
		json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:s,s:f,s:b,s:b,s:b,s:f,s:f,s:I}", "id", x->id, "owner", x->owner,
	                  "access", x->access, "traffic", x->traffic, "template", x->tmpl, "metadata", md, "recipe",
	                  x->recipe ? x->recipe : "{}", "timeout", x->timeout_s, "autoPause", x->auto_pause,
	                  "autoPauseFiles", x->auto_pause_files, "autoResume", x->auto_resume, "startedAt",
	                  x->started_rt, "pausedAt", x->paused_rt, "bytes", (json_int_t)x->saved_bytes);
	if (v) /* its ports' bytes: a resume, after a restart too, does not give them back */
		json_object_set_new(v, "portBytes", json_integer((json_int_t)x->port_used));
	char tmp[700], path[700];
	snprintf(tmp, sizeof(tmp), "%s/%s/record.json.tmp", e->state, x->id);
	snprintf(path, sizeof(path), "%s/%s/record.json", e->state, x->id);
	int rc = v ? json_dump_file(v, tmp, JSON_COMPACT) : -1;
	json_decref(v);
	if (rc < 0 || rename(tmp, path) < 0) {
		snprintf(err, n, "cannot write %s: %s (is --e2b-state writable?)", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* path and its parents made (0700) where missing. */
static int mkdir_parents(const char *path)
{
	char p[512];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0700) < 0 && errno != EEXIST)
				return -1;
			*s = '/';
		}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* How many sandboxes are paused, and their files' bytes. */
static void paused_count(struct e2b *e, unsigned *n, uint64_t *bytes)
{
	*n = 0;
	*bytes = 0;
	pthread_mutex_lock(&e->lock);
	for (struct e2b_sbx *x = e->sbxs; x; x = x->next)
		if (x->paused) {
			(*n)++;
			*bytes += x->saved_bytes;
		}
	pthread_mutex_unlock(&e->lock);
}

/* x's files saved under --e2b-state/ID/files, at most max bytes: 0, 507
 * (over max: err says the size reached) or 500. */
static unsigned save_files(struct e2b *e, struct e2b_sbx *x, struct sess *ss, uint64_t max,
                           struct ward_session_saved *info, char *err, size_t n)
{
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/%s", e->state, x->id);
	state_drop(e, x->id); /* a pause that failed half-way before */
	if (mkdir_parents(e->state) < 0 || mkdir(dir, 0700) < 0) {
		snprintf(err, n, "cannot make %s: %s (give --e2b-state a directory ward may write)", dir,
		         strerror(errno));
		return 500;
	}
	char files[760];
	snprintf(files, sizeof(files), "%s/files", dir);
	int r = ward_session_save(ss->ws, files, max, info, err, n);
	return r == -EFBIG ? 507 : r < 0 ? 500 : 0;
}

unsigned e2b_pause_sbx(struct e2b *e, struct e2b_sbx *x, bool memory, char *err, size_t n)
{
	struct server *s = e->s;
	unsigned code = 0;
	pthread_mutex_lock(&e->life_lock);
	if (e2b_is_paused(e, x)) {
		snprintf(err, n, "sandbox '%s' is already paused", x->id);
		code = 409;
		goto out;
	}
	struct sess *ss = x->gone ? NULL : e2b_sess(e, x);
	if (!ss) {
		snprintf(err, n, "sandbox '%s' not found (it was killed or timed out)", x->id);
		code = 404;
		goto out;
	}
	unsigned np;
	uint64_t used;
	paused_count(e, &np, &used);
	unsigned max_paused = s->o.e2b_max_paused ? s->o.e2b_max_paused : MAX_PAUSED_DEFAULT;
	uint64_t cap = s->o.e2b_paused_bytes ? s->o.e2b_paused_bytes : PAUSED_BYTES_DEFAULT;
	if (np >= max_paused || used >= cap) {
		sess_unref(s, ss);
		snprintf(err, n,
		         "%u sandboxes are paused already (--e2b-max-paused %u, --e2b-paused-bytes %llu): "
		         "kill or resume one first",
		         np, max_paused, (unsigned long long)cap);
		code = 429;
		goto out;
	}
	/* frozen first: the files saved are those of the stopped processes */
	bool frozen = memory && ward_session_freeze(ss->ws, err, n) == 0;
	struct ward_session_saved info = {0};
	code = save_files(e, x, ss, cap - used, &info, err, n);
	if (!code) {
		uint64_t port_used, port_cap;
		ward_session_net(ss->ws, &port_used, &port_cap);
		pthread_mutex_lock(&e->lock);
		x->paused_rt = now_real();
		x->saved_bytes = info.bytes;
		x->port_used = port_used;
		pthread_mutex_unlock(&e->lock);
		if (write_record(e, x, err, n) < 0)
			code = 500;
	}
	if (code) {
		state_drop(e, x->id);
		char why[200];
		if (frozen)
			ward_session_thaw(ss->ws, why, sizeof(why));
		sess_unref(s, ss);
		goto out;
	}
	pthread_mutex_lock(&e->lock);
	x->paused = true; /* before its session goes: the sweep keeps it */
	x->paused_mem = frozen;
	if (!frozen)
		x->sid[0] = 0;
	pthread_mutex_unlock(&e->lock);
	if (frozen)
		sess_pause(s, ss, true, s->o.session_max_ttl); /* its clocks stop; ended (files kept) past the ttl */
	else
		sess_drop(s, ss);
	if (frozen)
		sess_unref(s, ss);
	log_event(s, "e2b-sandbox-pause", "%s (%s, %llu bytes of files)", x->id, frozen ? "frozen" : "files only",
	          (unsigned long long)info.bytes);
out:
	pthread_mutex_unlock(&e->life_lock);
	return code;
}

unsigned e2b_resume_sbx(struct e2b *e, struct e2b_sbx *x, double ttl_s, bool cold, char *err, size_t n)
{
	struct server *s = e->s;
	unsigned code = 0;
	pthread_mutex_lock(&e->life_lock);
	if (x->gone) {
		snprintf(err, n, "paused sandbox '%s' not found (it was killed)", x->id);
		code = 404;
		goto out;
	}
	if (!e2b_is_paused(e, x))
		goto out; /* another call resumed it */
	ttl_s = fmin(ttl_s, s->o.session_max_ttl);
	struct sess *ss = x->paused_mem ? e2b_sess(e, x) : NULL;
	if (ss && !cold && ward_session_thaw(ss->ws, err, n) == 0) {
		sess_pause(s, ss, false, 0);
		sess_set_end(s, ss, ttl_s);
		sess_unref(s, ss);
	} else {
		if (ss) { /* cold, or it cannot thaw: made again from its files */
			uint64_t port_used, port_cap;
			ward_session_net(ss->ws, &port_used, &port_cap); /* what its frozen session relayed since */
			sess_drop(s, ss);
			pthread_mutex_lock(&e->lock);
			x->port_used = port_used;
			x->sid[0] = 0;
			pthread_mutex_unlock(&e->lock);
		}
		struct sess *slot;
		struct ward_session *ws;
		double ttl;
		char files[760];
		snprintf(files, sizeof(files), "%s/%s/files", e->state, x->id);
		code = e2b_make(e, x->owner, x->recipe, ttl_s, NULL, files, &slot, &ws, &ttl, err, n);
		if (code)
			goto out;
		ward_session_charge_net(ws, x->port_used); /* its ports' bytes so far: still spent */
		char sid[sizeof(x->sid)];
		snprintf(sid, sizeof(sid), "%s", slot->id);
		sess_commit(s, slot, ws, ttl, ttl + 1);
		pthread_mutex_lock(&e->lock);
		snprintf(x->sid, sizeof(x->sid), "%s", sid);
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_lock(&e->lock);
	x->paused = false;
	x->paused_mem = false;
	x->saved_bytes = 0;
	pthread_mutex_unlock(&e->lock);
	state_drop(e, x->id);
	log_event(s, "e2b-sandbox-resume", "%s (session %s)", x->id, x->sid);
out:
	pthread_mutex_unlock(&e->life_lock);
	return code;
}

void e2b_end(struct e2b *e, struct e2b_sbx *x)
{
	pthread_mutex_lock(&e->life_lock);
	struct sess *ss = e2b_sess(e, x);
	e2b_unlist(e, x);
	if (ss)
		sess_drop(e->s, ss);
	state_drop(e, x->id);
	pthread_mutex_unlock(&e->life_lock);
}

unsigned e2b_wake(struct ereq *q, struct e2b_sbx *x)
{
	if (!e2b_is_paused(q->e, x))
		return 0;
	if (!x->auto_resume) {
		snprintf(q->message, sizeof(q->message),
		         "sandbox %s is paused: resume it with connect (Sandbox.connect), or create it with "
		         "lifecycle.autoResume",
		         x->id);
		return 502;
	}
	char err[400];
	unsigned code = e2b_resume_sbx(q->e, x, fmax(x->timeout_s, RESUME_MIN_S), false, err, sizeof(err));
	if (code) {
		snprintf(q->message, sizeof(q->message), "sandbox %s is paused and cannot resume: %s", x->id, err);
		return 502;
	}
	return 0;
}

/* POST /sandboxes/{id}/pause {} or {"memory": bool} */
enum MHD_Result e2b_pause(struct ereq *q)
{
	json_t *b = q->len ? json_loadb(q->body, q->len, 0, NULL) : json_object();
	json_t *m = json_object_get(b, "memory");
	bool bad = !json_is_object(b) || (m && !json_is_boolean(m));
	bool memory = !json_is_false(m);
	json_decref(b);
	if (bad)
		return e2b_api_error(q, 400, "give {} or {\"memory\": true|false}");
	struct e2b_sbx *x = e2b_own(q, q->arg);
	if (!x)
		return e2b_not_found(q, q->arg);
	char err[600];
	unsigned code = e2b_pause_sbx(q->e, x, memory, err, sizeof(err));
	e2b_sbx_put(q->e, x);
	if (code == 404)
		return e2b_not_found(q, q->arg);
	if (code)
		return e2b_api_error(q, code, "%s", err);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

/* ---- autoPause's thread ---- */

void e2b_autopause(struct e2b *e, struct e2b_sbx *x, struct sess *ss)
{
	pthread_mutex_lock(&e->lock);
	bool queue = !x->ap_queued && !x->gone && !e->pauser.stop && e->pauser.n;
	if (queue) {
		x->ap_queued = true; /* (no other queues it now) */
		x->refs++;
	}
	pthread_mutex_unlock(&e->lock);
	if (!queue)
		return;
	/* pauses before it in the queue may take a while: it waits alive
	 * (pushed back before the pauser may see it: a failed pause ends it) */
	sess_set_end(e->s, ss, AUTOPAUSE_GRACE_S);
	pthread_mutex_lock(&e->lock);
	struct e2b_sbx **pp = &e->ap_queue;
	while (*pp)
		pp = &(*pp)->ap_next;
	x->ap_next = NULL;
	*pp = x;
	pthread_cond_signal(&e->ap_cond);
	pthread_mutex_unlock(&e->lock);
}

static void *pauser_take(void *ctx, int thread)
{
	struct e2b *e = ctx;
	struct e2b_sbx *x = e->ap_queue;
	if (x)
		e->ap_queue = x->ap_next;
	return x;
}

static void pauser_run(void *ctx, void *job, int thread)
{
	struct e2b *e = ctx;
	struct e2b_sbx *x = job;
	char err[400];
	unsigned code = e2b_pause_sbx(e, x, !x->auto_pause_files, err, sizeof(err));
	struct sess *ss = code && code != 409 ? e2b_sess(e, x) : NULL;
	if (ss) { /* it ends now, at its timeout, not at the grace's end */
		sess_set_end(e->s, ss, 0);
		sess_unref(e->s, ss);
	}
	if (code && code != 409)
		log_event(e->s, "e2b-autopause-failed", "%s: %s (it ends at its timeout)", x->id, err);
	else if (!code)
		log_event(e->s, "e2b-autopause", "%s", x->id);
	pthread_mutex_lock(&e->lock);
	x->ap_queued = code && code != 409; /* failed: never queued again (it ends) */
	pthread_mutex_unlock(&e->lock);
	e2b_sbx_put(e, x);
}

void e2b_life_stop(struct e2b *e)
{
	workq_stop(&e->pauser);
	pthread_mutex_lock(&e->lock);
	struct e2b_sbx *q = e->ap_queue;
	e->ap_queue = NULL;
	pthread_mutex_unlock(&e->lock);
	while (q) {
		struct e2b_sbx *x = q;
		q = x->ap_next;
		x->ap_queued = false;
		e2b_sbx_put(e, x);
	}
	pthread_cond_destroy(&e->ap_cond);
}

/* ---- the state directory, at start ---- */

static bool id_ok(const char *id)
{
	size_t k = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789");
	return k > 0 && k < 80 && !id[k];
}

static struct e2b_sbx *record_load(struct e2b *e, const char *name)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%s/record.json", e->state, name);
	json_t *v = json_load_file(path, 0, NULL);
	const char *id = NULL, *owner = NULL, *access = NULL, *traffic = NULL, *tmpl = NULL, *recipe = NULL;
	json_t *md = NULL;
	double timeout = 0, started = 0, paused = 0;
	int ap = 0, apf = 0, ar = 0;
	json_int_t bytes = 0;
	struct e2b_sbx *x = NULL;
	if (!v ||
	    json_unpack(v, "{s:s,s:s,s:s,s:s,s:s,s:o,s:s,s:F,s:b,s:b,s:b,s:F,s:F,s:I}", "id", &id, "owner", &owner,
	                "access", &access, "traffic", &traffic, "template", &tmpl, "metadata", &md, "recipe", &recipe,
	                "timeout", &timeout, "autoPause", &ap, "autoPauseFiles", &apf, "autoResume", &ar, "startedAt",
	                &started, "pausedAt", &paused, "bytes", &bytes) < 0 ||
	    strcmp(id, name) != 0 || strlen(owner) >= sizeof(x->owner) || strlen(access) >= sizeof(x->access) ||
	    strlen(traffic) >= sizeof(x->traffic) || strlen(tmpl) >= sizeof(x->tmpl))
		goto out;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	snprintf(x->id, sizeof(x->id), "%s", id);
	snprintf(x->owner, sizeof(x->owner), "%s", owner);
	snprintf(x->access, sizeof(x->access), "%s", access);
	snprintf(x->traffic, sizeof(x->traffic), "%s", traffic);
	snprintf(x->tmpl, sizeof(x->tmpl), "%s", tmpl);
	x->meta = json_is_object(md) ? json_incref(md) : json_object();
	x->recipe = strdup(recipe);
	x->timeout_s = timeout;
	x->auto_pause = ap;
	x->auto_pause_files = apf;
	x->auto_resume = ar;
	x->started_rt = started;
	x->paused_rt = paused;
	x->end_rt = paused;
	x->saved_bytes = bytes > 0 ? (uint64_t)bytes : 0;
	json_int_t port = json_integer_value(json_object_get(v, "portBytes"));
	x->port_used = port > 0 ? (uint64_t)port : 0;
	x->paused = true;
	json_t *r = json_loads(recipe, 0, NULL);
	x->private_traffic = json_is_false(json_object_get(json_object_get(r, "network"), "allowPublicTraffic"));
	json_decref(r);
	if (!x->meta || !x->recipe) {
		json_decref(x->meta);
		free(x->recipe);
		free(x);
		x = NULL;
	}
out:
	json_decref(v);
	return x;
}

int e2b_life_start(struct e2b *e)
{
	pthread_cond_init(&e->ap_cond, NULL);
	e->pauser = (struct workq){.lock = &e->lock,
	                           .cond = &e->ap_cond,
	                           .take = pauser_take,
	                           .run = pauser_run,
	                           .ctx = e,
	                           .name = "e2b-pauser"};
	int rc = workq_start(&e->pauser, 1);
	if (rc) {
		fprintf(stderr, "ward serve: cannot start the E2B pauser thread: %s\n", strerror(rc));
		return -1;
	}
	snprintf(e->state, sizeof(e->state), "%s", e->s->o.e2b_state ? e->s->o.e2b_state : STATE_DEFAULT);
	DIR *d = opendir(e->state);
	if (!d)
		return 0; /* made at the first pause */
	struct dirent *de;
	unsigned n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		struct e2b_sbx *x = id_ok(de->d_name) ? record_load(e, de->d_name) : NULL;
		if (!x) { /* a pause cut short (no record): nothing to resume */
			log_event(e->s, "e2b-state-skip", "%s/%s: not a paused sandbox's record; removed", e->state,
			          de->d_name);
			if (id_ok(de->d_name))
				state_drop(e, de->d_name);
			continue;
		}
		e2b_list_add(e, x);
		n++;
	}
	closedir(d);
	if (n)
		log_event(e->s, "e2b-state", "%u paused sandboxes from %s (they resume with their files)", n, e->state);
	return 0;
}
