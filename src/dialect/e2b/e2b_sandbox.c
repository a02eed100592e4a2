/* e2b_sandbox.c — E2B's control plane (SPEC §17): a sandbox is a session
 * of the server (sessions.c) plus a record here: its E2B id (lowercase
 * letters and digits, the node id first), its two tokens, its template and
 * metadata.  Sessions are made by the maker threads (which live as long as
 * the server: a session's PID 1 dies with the thread that made it).
 *
 * Owns e->sbxs and the makers.  An unknown id, another key's sandbox and an
 * ended one answer alike: 404 {"code":404} here, 502 on the data plane. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/request.h"
#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_vol.h"
#include "ward_image.h"

#define DEFAULT_TIMEOUT_S 300 /* E2B's own default */
#define MAX_ENVS 256

struct make_job {
	const struct ward_session_opts *o;
	struct ward_session *src; /* a fork of it (its files), or NULL: a new one */
	uint64_t max_bytes;
	struct ward_session *ws;
	char err[512];
	bool done;
	pthread_cond_t cond;
	struct make_job *next;
};

static void *maker_take(void *ctx, int thread)
{
	struct e2b *e = ctx;
	struct make_job *j = e->jobs;
	if (j)
		e->jobs = j->next;
	return j;
}

static void maker_run(void *ctx, void *job, int thread)
{
	struct e2b *e = ctx;
	struct make_job *j = job;
	struct ward_session *ws = NULL;
	if (!j->src)
		ws = ward_session_new(j->o, j->err, sizeof(j->err));
	else if (ward_session_fork(j->src, j->o, 1, j->max_bytes, &ws, j->err, sizeof(j->err)) < 0)
		ws = NULL;
	pthread_mutex_lock(&e->mk_lock);
	j->ws = ws;
	j->done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&e->mk_lock);
}

int e2b_makers_start(struct e2b *e)
{
	e->makers = (struct workq){.lock = &e->mk_lock,
	                           .cond = &e->mk_cond,
	                           .take = maker_take,
	                           .run = maker_run,
	                           .ctx = e,
	                           .name = "e2b-maker"};
	int rc = workq_start(&e->makers, E2B_MAKERS);
	if (rc) {
		fprintf(stderr, "ward serve: cannot start the E2B maker thread: %s\n", strerror(rc));
		return -1;
	}
	return 0;
}

void e2b_makers_stop(struct e2b *e)
{
	workq_stop(&e->makers);
}

/* A session made by a maker thread (a fork of src's files when src);
 * NULL with err set. */
static struct ward_session *make_session(struct e2b *e, const struct ward_session_opts *o, struct ward_session *src,
                                         char *err, size_t n)
{
	struct make_job j = {.o = o, .src = src, .max_bytes = (uint64_t)e->s->o.e2b_disk_mb << 20};
	pthread_cond_init(&j.cond, NULL);
	pthread_mutex_lock(&e->mk_lock);
	if (e->makers.stop) {
		pthread_mutex_unlock(&e->mk_lock);
		pthread_cond_destroy(&j.cond);
		snprintf(err, n, "the server is stopping");
		return NULL;
	}
	struct make_job **pp = &e->jobs;
	while (*pp)
		pp = &(*pp)->next;
	*pp = &j;
	pthread_cond_signal(&e->mk_cond);
	while (!j.done)
		pthread_cond_wait(&j.cond, &e->mk_lock);
	pthread_mutex_unlock(&e->mk_lock);
	pthread_cond_destroy(&j.cond);
	if (!j.ws)
		snprintf(err, n, "%s", j.err);
	return j.ws;
}

/* ---- records ---- */

void e2b_hex_random(char *out, size_t bytes)
{
	unsigned char b[32];
	if (bytes > sizeof(b) || getrandom(b, bytes, 0) != (ssize_t)bytes)
		abort(); /* getrandom does not fail for 32 bytes once the pool is up */
	for (size_t i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void sbx_free(struct e2b_sbx *x)
{
	ci_free_all(x);
	json_decref(x->meta);
	free(x->recipe);
	explicit_bzero(x->access, sizeof(x->access));
	explicit_bzero(x->traffic, sizeof(x->traffic));
	free(x);
}

struct e2b_sbx *e2b_sbx_get(struct e2b *e, const char *id)
{
	pthread_mutex_lock(&e->lock);
	struct e2b_sbx *x = e->sbxs;
	while (x && strcmp(x->id, id) != 0)
		x = x->next;
	if (x)
		x->refs++;
	pthread_mutex_unlock(&e->lock);
	return x;
}

void e2b_sbx_put(struct e2b *e, struct e2b_sbx *x)
{
	pthread_mutex_lock(&e->lock);
	bool last = --x->refs == 0 && x->gone;
	pthread_mutex_unlock(&e->lock);
	if (last)
		sbx_free(x);
}

void e2b_unlist(struct e2b *e, struct e2b_sbx *x)
{
	pthread_mutex_lock(&e->lock);
	bool was = !x->gone;
	for (struct e2b_sbx **pp = &e->sbxs; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	x->gone = true;
	bool now = was && x->refs == 0;
	pthread_mutex_unlock(&e->lock);
	if (now)
		sbx_free(x);
}

/* Constant time in the token's length. */
bool e2b_access_ok(const struct e2b_sbx *x, const char *tok)
{
	if (!tok)
		return false;
	size_t n = strlen(x->access), g = strlen(tok);
	unsigned char d = (unsigned char)(g != n);
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)((i < g ? (unsigned char)tok[i] : 0) ^ (unsigned char)x->access[i]);
	return d == 0;
}

bool e2b_token_ok(const struct e2b_sbx *x, const char *tok)
{
	if (!tok)
		return false;
	size_t n = strlen(x->access), g = strlen(tok);
	unsigned char d1 = (unsigned char)(g != n), d2 = (unsigned char)(g != strlen(x->traffic));
	for (size_t i = 0; i < n; i++) {
		unsigned char c = i < g ? (unsigned char)tok[i] : 0;
		d1 |= c ^ (unsigned char)x->access[i];
		d2 |= c ^ (unsigned char)x->traffic[i];
	}
	return d1 == 0 || d2 == 0;
}

struct sess *e2b_sess(struct e2b *e, struct e2b_sbx *x)
{
	char sid[sizeof(x->sid)];
	pthread_mutex_lock(&e->lock); /* a resume gives it a new session */
	snprintf(sid, sizeof(sid), "%s", x->sid);
	pthread_mutex_unlock(&e->lock);
	return sid[0] ? sess_get(e->s, x->owner, sid) : NULL;
}

struct sess *e2b_running(struct ereq *q, struct e2b_sbx **xp)
{
	struct e2b_sbx *x = e2b_own(q, q->arg);
	struct sess *ss = x && !e2b_is_paused(q->e, x) ? e2b_sess(q->e, x) : NULL;
	if (!ss && x)
		e2b_sbx_put(q->e, x);
	*xp = ss ? x : NULL;
	return ss;
}

void e2b_list_add(struct e2b *e, struct e2b_sbx *x)
{
	pthread_mutex_lock(&e->lock);
	x->next = e->sbxs;
	e->sbxs = x;
	pthread_mutex_unlock(&e->lock);
}

/* Every record, held (*n of them; free the array, put each). */
static struct e2b_sbx **snapshot(struct e2b *e, size_t *n)
{
	pthread_mutex_lock(&e->lock);
	size_t k = 0;
	for (struct e2b_sbx *x = e->sbxs; x; x = x->next)
		k++;
	struct e2b_sbx **v = calloc(k ? k : 1, sizeof(*v));
	*n = 0;
	for (struct e2b_sbx *x = e->sbxs; v && x; x = x->next) {
		x->refs++;
		v[(*n)++] = x;
	}
	pthread_mutex_unlock(&e->lock);
	return v;
}

static void snapshot_put(struct e2b *e, struct e2b_sbx **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		e2b_sbx_put(e, v[i]);
	free(v);
}

static double end_rt(struct server *s, struct sess *ss);

void e2b_prune(struct e2b *e)
{
	size_t n;
	struct e2b_sbx **v = snapshot(e, &n);
	for (size_t i = 0; v && i < n; i++) {
		struct e2b_sbx *x = v[i];
		if (e2b_is_paused(e, x)) {
			struct sess *ss = e2b_sess(e, x);
			if (ss)
				sess_unref(e->s, ss);
			else { /* its frozen session ended: its files remain */
				pthread_mutex_lock(&e->lock);
				x->paused_mem = false;
				pthread_mutex_unlock(&e->lock);
			}
			continue;
		}
		struct sess *ss = e2b_sess(e, x);
		/* autoPause: paused before its timeout, by the pauser thread (a
		 * pause of a big home is long: never the sweep's) */
		if (ss && x->auto_pause && end_rt(e->s, ss) - now_real() < 2.5) {
			e2b_autopause(e, x, ss);
			sess_unref(e->s, ss);
			continue;
		}
		if (ss) {
			sess_unref(e->s, ss);
			continue;
		}
		log_event(e->s, "e2b-sandbox-end", "%s (session %s)", v[i]->id, v[i]->sid);
		e2b_unlist(e, v[i]);
	}
	snapshot_put(e, v, n);
}

void e2b_records_free(struct e2b *e)
{
	while (e->sbxs) {
		struct e2b_sbx *x = e->sbxs;
		e->sbxs = x->next;
		sbx_free(x);
	}
}

struct e2b_sbx *e2b_own(struct ereq *q, const char *id)
{
	struct e2b_sbx *x = e2b_sbx_get(q->e, id);
	if (x && strcmp(x->owner, q->who) != 0) {
		e2b_sbx_put(q->e, x);
		return NULL;
	}
	return x;
}

enum MHD_Result e2b_not_found(struct ereq *q, const char *id)
{
	return e2b_api_error(q, 404,
	                     "sandbox \"%.80s\" not found (it was killed, timed out, belongs to another "
	                     "API key, or never existed)",
	                     id);
}

static double end_rt(struct server *s, struct sess *ss)
{
	double ex, idle;
	pthread_mutex_lock(&s->sess_lock);
	sess_times(ss, &ex, &idle);
	pthread_mutex_unlock(&s->sess_lock);
	return ex;
}

void e2b_iso_time(char *buf, size_t n, double t)
{
	time_t sec = (time_t)t;
	struct tm tm;
	gmtime_r(&sec, &tm);
	char b[32];
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", b, (int)((t - (double)sec) * 1000));
}

/* The Sandbox object of create and connect. */
json_t *e2b_sandbox_json(struct e2b *e, const struct e2b_sbx *x)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "sandboxID", x->id, "templateID", x->tmpl, "clientID", "ward",
	                 "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", x->access, "trafficAccessToken",
	                 x->traffic, "domain", e->domain);
}

/* A listed sandbox (and, detail, getInfo's). */
static json_t *listed_json(const struct e2b *e, const struct e2b_sbx *x, double end, bool detail)
{
	char st[40], en[40];
	e2b_iso_time(st, sizeof(st), x->started_rt);
	e2b_iso_time(en, sizeof(en), end);
	json_t *md = x->meta ? json_incref(x->meta) : json_object();
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:o,s:s}", "sandboxID", x->id, "templateID", x->tmpl,
	                      "clientID", "ward", "startedAt", st, "endAt", en, "state",
	                      x->paused ? "paused" : "running", "cpuCount", (int)x->cpu, "memoryMB", (int)x->memory_mb,
	                      "metadata", md, "envdVersion", E2B_ENVD_VERSION);
	if (v && detail) {
		json_object_set_new(v, "domain", x->paused ? json_null() : json_string(e->domain));
		json_object_set_new(v, "lifecycle",
		                    json_pack("{s:s,s:b}", "onTimeout", x->auto_pause ? "pause" : "kill", "autoResume",
		                              x->auto_resume));
	}
	/* its volumes as asked: [{name, path}] */
	json_t *r = v && x->recipe && strstr(x->recipe, "\"volumeMounts\"") ? json_loads(x->recipe, 0, NULL) : NULL;
	if (json_is_array(json_object_get(r, "volumeMounts")))
		json_object_set(v, "volumeMounts", json_object_get(r, "volumeMounts"));
	json_decref(r);
	return v;
}

/* ---- POST /v2/sandboxes ---- */

struct create_in {
	const char *tmpl;
	double timeout_s;
	char *env[MAX_ENVS + 4];
	size_t nenv;
	const char *allow[EGRESS_MAX_PATTERNS];
	size_t nallow;
	bool net_off, net_asked;
	bool private_traffic; /* network.allowPublicTraffic: false */
	json_t *meta;
	unsigned cpu;         /* cores: 1, or a built template's cpuCount */
	unsigned memory_mb;   /* --e2b-memory, or a built template's memoryMB */
	struct tm_pick built; /* a template built here (its start command runs at create) */
	char base[200];       /* a snapshot's template (its shape and root), or "" */
	char home[700];       /* and its home's files, restored into the new sandbox */
	struct vol_mounts vm; /* volumeMounts (e2b_volumes.c) */
};

static void create_in_free(struct create_in *c)
{
	for (size_t i = 0; i < c->nenv; i++)
		free(c->env[i]);
	json_decref(c->meta);
	vol_mounts_free(&c->vm);
}

static bool add_env(struct create_in *c, const char *k, const char *v)
{
	if (c->nenv >= MAX_ENVS + 3)
		return false;
	if (asprintf(&c->env[c->nenv], "%s=%s", k, v) < 0)
		return false;
	c->nenv++;
	return true;
}

/* The body's fields; false with the message in err. */
static bool create_parse(struct server *s, json_t *b, struct create_in *c, char *err, size_t n)
{
	json_t *t = json_object_get(b, "templateID");
	c->tmpl = json_is_string(t) ? json_string_value(t) : "base";
	json_t *to = json_object_get(b, "timeout");
	c->timeout_s = DEFAULT_TIMEOUT_S;
	if (to && !json_is_null(to)) {
		if (!json_is_number(to) || json_number_value(to) < 0) {
			snprintf(err, n, "timeout: give whole seconds");
			return false;
		}
		c->timeout_s = json_number_value(to);
	}
	if (c->timeout_s > s->o.session_max_ttl)
		c->timeout_s = s->o.session_max_ttl; /* E2B caps it too (at its plan's limit) */
	if (c->timeout_s < 1)
		c->timeout_s = 1;
	add_env(c, "HOME", E2B_HOME);
	add_env(c, "USER", "user");
	add_env(c, "LOGNAME", "user");
	json_t *ev = json_object_get(b, "envVars");
	const char *k;
	json_t *v;
	if (ev && json_is_object(ev))
		json_object_foreach(ev, k, v)
		{
			if (!json_is_string(v) || !*k || strchr(k, '=') || !add_env(c, k, json_string_value(v))) {
				snprintf(err, n, "envVars: at most %d, each a name without '=' and a string", MAX_ENVS);
				return false;
			}
		}
	json_t *md = json_object_get(b, "metadata");
	c->meta = json_is_object(md) ? json_incref(md) : json_object();
	if (json_is_object(md) && (json_object_size(md) > 256 ||
	                           json_dumpb(md, NULL, 0, JSON_COMPACT | JSON_ENSURE_ASCII) > E2B_METADATA_MAX)) {
		snprintf(err, n,
		         "metadata: at most 256 keys and %d bytes (as compact JSON): every list of the "
		         "sandboxes carries it; keep large data in the sandbox's files",
		         E2B_METADATA_MAX);
		return false;
	}
	json_t *ai = json_object_get(b, "allow_internet_access");
	if (json_is_false(ai))
		c->net_off = true;
	json_t *net = json_object_get(b, "network");
	c->private_traffic = json_is_false(json_object_get(net, "allowPublicTraffic"));
	json_t *out = json_is_object(net) ? json_object_get(net, "allowOut") : NULL;
	if (json_is_array(out) && json_array_size(out)) {
		size_t i;
		json_array_foreach(out, i, v)
		{
			if (!json_is_string(v) || c->nallow == EGRESS_MAX_PATTERNS) {
				snprintf(err, n, "network.allowOut: at most %d names", EGRESS_MAX_PATTERNS);
				return false;
			}
			c->allow[c->nallow++] = json_string_value(v);
		}
		c->net_asked = true;
	}
	return true;
}

/* The session's shape from what was asked, under the operator's ceiling:
 * allowInternetAccess (true or absent) asks for the ceiling itself. */
static bool shape_build(struct e2b *e, const char *who, struct create_in *c, struct ward_request *q, char *err,
                        size_t n)
{
	struct server *s = e->s;
	ward_request_init(q);
	q->isolation = WARD_ISO_SYSTEM;
	q->limits = s->o.defaults;
	/* sizes an agent can live in (SPEC §18), within the maxima (config.c) */
	q->limits.memory_mb = c->memory_mb = s->o.e2b_memory_mb;
	q->limits.pids = s->o.e2b_pids;
	q->limits.tmp_size_mb = s->o.e2b_disk_mb;
	q->limits.fsize_mb = s->o.e2b_disk_mb;
	q->env = c->env;
	q->work_link = E2B_HOME;
	q->mounts = c->vm.m;
	q->nmounts = c->vm.n;
	static char *const argv[] = {"true", NULL};
	q->argv = argv; /* a shape's argv is not run; validation wants one */
	const struct egress_policy *pol = &s->o.egress;
	q->net = WARD_NET_LOOPBACK; /* a sandbox's servers on 127.0.0.1 (its ports, SPEC §18); no route out */
	if (!c->net_off && c->net_asked) {
		q->net = WARD_NET_ALLOW;
		q->egress_allow = c->allow;
		q->negress_allow = c->nallow;
	} else if (!c->net_off && pol->nallow) {
		q->net = WARD_NET_ALLOW;
		q->egress_allow = pol->allow;
		q->negress_allow = pol->nallow;
	}
	const char *tmpl = c->base[0] ? c->base : c->tmpl;
	/* a template built here (e2b_templates.c), sized by its build */
	if (tm_find(e, tmpl, who, &c->built)) {
		q->image = c->built.root;
		q->limits.memory_mb = c->memory_mb = c->built.mem;
		c->cpu = c->built.cpu;
	} else if (strcmp(tmpl, "base") != 0) {
		bool found = false;
		for (size_t i = 0; i < s->nimages; i++)
			if (strcmp(s->images[i].name, tmpl) == 0) {
				q->image = s->images[i].root;
				found = true;
			}
		/* the code interpreter's default template: the image of that
		 * name where one is offered (make code-interpreter-image), else
		 * the base root */
		if (!found && strcmp(tmpl, "code-interpreter-v1") != 0) {
			int k = snprintf(err, n, "template '%.64s' is not offered here: use base", c->tmpl);
			for (size_t i = 0; i < s->nimages && k > 0 && (size_t)k < n; i++)
				k += snprintf(err + k, n - (size_t)k, ", %s", s->images[i].name);
			if (k > 0 && (size_t)k < n)
				snprintf(err + k, n - (size_t)k, " (ward serve --image NAME offers one)");
			return false;
		}
	}
	if (egress_policy_apply(pol, q, err, n) < 0 || ward_request_validate(q, err, n) < 0)
		return false;
	return true;
}

/* The E2B id of session id "NODE.HEX": NODE's letters and digits,
 * lowercased, then HEX. */
static void e2b_id(const char *sid, char *out, size_t n)
{
	size_t k = 0;
	const char *dot = strrchr(sid, '.');
	for (const char *p = sid; *p && p != dot && k + 1 < n; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
			out[k++] = *p;
		else if (*p >= 'A' && *p <= 'Z')
			out[k++] = (char)(*p - 'A' + 'a');
	for (const char *p = dot ? dot + 1 : ""; *p && k + 1 < n; p++)
		out[k++] = *p;
	out[k] = 0;
}

static struct e2b_sbx *record_new(struct ereq *q, struct sess *slot, struct create_in *c, double ttl)
{
	struct e2b_sbx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->sid, sizeof(x->sid), "%s", slot->id);
	e2b_id(slot->id, x->id, sizeof(x->id));
	snprintf(x->owner, sizeof(x->owner), "%s", q->who);
	snprintf(x->tmpl, sizeof(x->tmpl), "%s", c->tmpl);
	e2b_hex_random(x->access, 16);
	e2b_hex_random(x->traffic, 16);
	x->meta = c->meta;
	c->meta = NULL;
	x->private_traffic = c->private_traffic;
	x->cpu = c->cpu ? c->cpu : 1;
	x->memory_mb = c->memory_mb;
	x->started_rt = now_real();
	x->end_rt = x->started_rt + ttl;
	return x;
}

/* A built template's start command (setStartCmd), in the background from
 * its image's WORKDIR, within --max-timeout as any command: E2B boots its
 * sandboxes with it running.  A failure is logged; the sandbox stands. */
static void start_cmd(struct ereq *q, struct ward_session *ws, struct create_in *c, const struct e2b_sbx *x)
{
	struct ward_request r;
	ward_request_init(&r);
	char *argv[] = {"/bin/sh", "-c", c->built.start, NULL};
	r.argv = argv;
	r.isolation = WARD_ISO_SYSTEM;
	const struct ward_limits *max = &q->s->o.max;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = max->timeout_s;
	r.limits.cpu_s = max->cpu_s > 0 ? max->cpu_s : max->timeout_s;
	r.limits.output_limit = E2B_OUTPUT_KEPT;
	const char *wd = ward_image_root_image(c->built.root)->workdir;
	char err[400];
	int pid;
	if (ward_session_spawn(ws, &r, wd && wd[0] == '/' ? wd : NULL, false, &pid, err, sizeof(err)) < 0)
		log_event(q->s, "e2b-start-cmd-failed", "%s: %s", x->id, err);
}

/* The session of a create body b for owner (0, or the status with why in
 * err): a fork of src's files, else the files saved in files (a resume's:
 * they are the sandbox's whole home, never laid over the snapshot's it was
 * made from), else its snapshot template's home. */
static unsigned make_from(struct e2b *e, const char *owner, json_t *b, double ttl_s, struct ward_session *src,
                          const char *files, struct create_in *c, struct sess **slot, struct ward_session **ws,
                          double *ttl, char *err, size_t n)
{
	struct server *s = e->s;
	struct ward_request shape;
	if (!create_parse(s, b, c, err, n))
		return 400;
	unsigned vc = vol_mounts_take(e, owner, json_object_get(b, "volumeMounts"), &c->vm, err, n);
	if (vc)
		return vc;
	bool offered = !strcmp(c->tmpl, "base") || !strcmp(c->tmpl, "code-interpreter-v1");
	for (size_t i = 0; i < s->nimages && !offered; i++)
		offered = strcmp(s->images[i].name, c->tmpl) == 0;
	if (!offered) /* a snapshot of owner's (e2b_snapshot.c)? */
		e2b_snapshot_base(s, owner, c->tmpl, c->base, sizeof(c->base), c->home, sizeof(c->home));
	if (!shape_build(e, owner, c, &shape, err, n))
		return 400;
	if (ttl_s > 0)
		c->timeout_s = fmin(ttl_s, s->o.session_max_ttl);
	*ttl = c->timeout_s;
	unsigned code; /* a create or a fork is a run of the key's: admission counted it (e2b_http.c) */
	*slot = sess_place(s, owner, &code, err, n);
	if (!*slot)
		return code;
	c->env[c->nenv] = NULL;
	struct ward_session_opts o;
	memset(&o, 0, sizeof(o));
	o.shape = shape;
	o.call_timeout_s = s->o.session_call_timeout;
	o.bg_output_bytes = s->o.session_bg_output;
	o.bg_output_shared = &s->bg_output;
	o.work_size_mb = s->o.e2b_disk_mb; /* the home */
	o.net_bytes = s->o.e2b_port_bytes; /* what its ports relay (e2b_ports.c) */
	/* its CPU in all: --e2b-cpu, else one core for its life (cpuCount 1) */
	o.cpu_budget_s = s->o.e2b_cpu_s > 0 ? s->o.e2b_cpu_s : c->timeout_s * (c->cpu ? c->cpu : 1);
	char why[512];
	*ws = make_session(e, &o, src, why, sizeof(why));
	if (!*ws) {
		sess_commit(s, *slot, NULL, 0, 0);
		snprintf(err, n, "cannot make the sandbox: %s", why);
		return 500;
	}
	const char *home = src ? NULL : files ? files : c->home[0] ? c->home : NULL;
	struct ward_session_saved info;
	if (home && ward_session_restore(*ws, home, (uint64_t)s->o.e2b_disk_mb << 20, &info, why, sizeof(why)) < 0) {
		sess_commit(s, *slot, NULL, 0, 0);
		ward_session_destroy(*ws);
		*ws = NULL;
		if (files)
			snprintf(err, n, "cannot restore its paused files: %s", why);
		else
			snprintf(err, n, "cannot restore snapshot %s's files: %s", c->tmpl, why);
		return files ? 507 : 500; /* never a sandbox with some of its files */
	}
	return 0;
}

unsigned e2b_make(struct e2b *e, const char *owner, const char *recipe, double ttl_s, struct ward_session *src,
                  const char *files, struct sess **slot, struct ward_session **ws, double *ttl, char *err, size_t n)
{
	json_t *b = json_loads(recipe ? recipe : "{}", 0, NULL);
	if (!json_is_object(b)) {
		json_decref(b);
		snprintf(err, n, "the sandbox's saved create body is not JSON");
		return 500;
	}
	struct create_in c;
	memset(&c, 0, sizeof(c));
	unsigned code = make_from(e, owner, b, ttl_s, src, files, &c, slot, ws, ttl, err, n);
	create_in_free(&c);
	json_decref(b);
	return code;
}

struct e2b_sbx *e2b_record_like(struct e2b *e, const struct e2b_sbx *like, struct sess *slot, double ttl)
{
	struct e2b_sbx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->sid, sizeof(x->sid), "%s", slot->id);
	e2b_id(slot->id, x->id, sizeof(x->id));
	snprintf(x->owner, sizeof(x->owner), "%s", like->owner);
	snprintf(x->tmpl, sizeof(x->tmpl), "%s", like->tmpl);
	e2b_hex_random(x->access, 16);
	e2b_hex_random(x->traffic, 16);
	x->meta = like->meta ? json_incref(like->meta) : json_object();
	x->recipe = strdup(like->recipe ? like->recipe : "{}");
	x->private_traffic = like->private_traffic;
	x->cpu = like->cpu;
	x->memory_mb = like->memory_mb;
	x->auto_pause = like->auto_pause;
	x->auto_pause_files = like->auto_pause_files;
	x->auto_resume = like->auto_resume;
	x->timeout_s = ttl;
	x->started_rt = now_real();
	x->end_rt = x->started_rt + ttl;
	if (!x->meta || !x->recipe) {
		sbx_free(x);
		return NULL;
	}
	return x;
}

void e2b_record_drop(struct e2b_sbx *x)
{
	sbx_free(x);
}

enum MHD_Result e2b_create(struct ereq *q)
{
	struct server *s = q->s;
	json_error_t je;
	json_t *b = json_loadb(q->body ? q->body : "{}", q->len ? q->len : 2, 0, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		return e2b_api_error(q, 400, "the body is not a JSON object: %s", je.text);
	}
	struct create_in c;
	memset(&c, 0, sizeof(c));
	char err[600] = "";
	enum MHD_Result rc;
	struct sess *slot;
	struct ward_session *ws;
	double ttl;
	unsigned code = make_from(q->e, q->who, b, 0, NULL, NULL, &c, &slot, &ws, &ttl, err, sizeof(err));
	if (code) {
		rc = e2b_api_error(q, code, "%s", err);
		goto out;
	}
	/* its record before it is committed: a sandbox is committed only with one */
	struct e2b_sbx *x = record_new(q, slot, &c, ttl);
	if (x) {
		json_t *ap = json_object_get(b, "autoPause");
		json_t *ar = json_object_get(json_object_get(b, "autoResume"), "enabled");
		x->auto_pause = json_is_true(ap);
		x->auto_pause_files = json_is_false(json_object_get(b, "autoPauseMemory"));
		x->auto_resume = json_is_true(ar);
		x->timeout_s = ttl;
		/* made again (a resume, a fork) with files of its own: from the
		 * snapshot's template, which outlives the snapshot's deletion */
		json_t *recipe = c.base[0] ? json_copy(b) : json_incref(b);
		if (recipe && c.base[0])
			json_object_set_new(recipe, "templateID", json_string(c.base));
		x->recipe = recipe ? json_dumps(recipe, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(recipe);
	}
	if (!x || !x->recipe) {
		sess_commit(s, slot, NULL, 0, 0);
		ward_session_destroy(ws);
		if (x)
			sbx_free(x);
		rc = e2b_api_error(q, 500, "out of memory for the sandbox's record");
		goto out;
	}
	if (c.built.start[0])
		start_cmd(q, ws, &c, x);
	sess_commit(s, slot, ws, ttl, ttl + 1);
	e2b_list_add(q->e, x);
	log_event(s, "e2b-sandbox-new", "%s (session %s) for %s, template %s", x->id, x->sid, q->who, x->tmpl);
	rc = e2b_answer_json(q, 201, e2b_sandbox_json(q->e, x));
out:
	create_in_free(&c);
	json_decref(b);
	return rc;
}

/* ---- the others ---- */

/* "k=v&k2=v2" (each part percent-encoded twice more): does x's metadata
 * hold every pair? */
static void pct_decode(char *t)
{
	char *w = t;
	for (char *p = t; *p; p++) {
		if (*p == '%' && p[1] && p[2]) {
			char h[3] = {p[1], p[2], 0};
			char *end;
			long v = strtol(h, &end, 16);
			if (!*end) {
				*w++ = (char)v;
				p += 2;
				continue;
			}
		}
		*w++ = *p == '+' ? ' ' : *p;
	}
	*w = 0;
}

static bool metadata_match(const struct e2b_sbx *x, const char *filter)
{
	if (!filter || !*filter)
		return true;
	const json_t *md = x->meta;
	char *f = strdup(filter);
	bool ok = md && f;
	char *save = NULL;
	for (char *kv = f ? strtok_r(f, "&", &save) : NULL; ok && kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			ok = false;
			break;
		}
		*eq = 0;
		char *k = kv, *v = eq + 1;
		pct_decode(k);
		pct_decode(k);
		pct_decode(v);
		pct_decode(v);
		json_t *have = json_object_get(md, k);
		ok = json_is_string(have) && strcmp(json_string_value(have), v) == 0;
	}
	free(f);
	return ok;
}

enum MHD_Result e2b_list(struct ereq *q)
{
	struct e2b *e = q->e;
	const char *md = e2b_query(q, "metadata");
	const char *state = e2b_query(q, "state");
	json_t *arr = json_array();
	bool want_run = !state || strstr(state, "running"), want_paused = !state || strstr(state, "paused");
	size_t n;
	struct e2b_sbx **v = snapshot(e, &n);
	for (size_t i = 0; v && i < n; i++) {
		struct e2b_sbx *x = v[i];
		if (strcmp(x->owner, q->who) != 0 || !metadata_match(x, md))
			continue;
		if (e2b_is_paused(e, x)) {
			if (want_paused)
				json_array_append_new(arr, listed_json(q->e, x, x->paused_rt, false));
			continue;
		}
		if (!want_run)
			continue;
		struct sess *ss = e2b_sess(e, x);
		if (!ss)
			continue;
		double end = end_rt(q->s, ss);
		sess_unref(q->s, ss);
		json_array_append_new(arr, listed_json(q->e, x, end, false));
	}
	snapshot_put(e, v, n);
	return e2b_answer_json(q, 200, arr);
}

enum MHD_Result e2b_info(struct ereq *q)
{
	struct e2b_sbx *x = e2b_own(q, q->arg);
	if (x && e2b_is_paused(q->e, x)) {
		json_t *v = listed_json(q->e, x, x->paused_rt, true);
		e2b_sbx_put(q->e, x);
		return e2b_answer_json(q, 200, v);
	}
	struct sess *ss = x ? e2b_sess(q->e, x) : NULL;
	if (!ss) {
		if (x)
			e2b_sbx_put(q->e, x);
		return e2b_not_found(q, q->arg);
	}
	double end = end_rt(q->s, ss);
	sess_unref(q->s, ss);
	json_t *v = listed_json(q->e, x, end, true);
	e2b_sbx_put(q->e, x);
	return e2b_answer_json(q, 200, v);
}

enum MHD_Result e2b_kill(struct ereq *q)
{
	struct e2b_sbx *x = e2b_own(q, q->arg);
	struct sess *ss = x && !e2b_is_paused(q->e, x) ? e2b_sess(q->e, x) : NULL;
	if (ss)
		sess_unref(q->s, ss);
	else if (!x || !e2b_is_paused(q->e, x)) { /* a paused one: what it saved goes too */
		if (x)
			e2b_sbx_put(q->e, x);
		return e2b_not_found(q, q->arg);
	}
	/* killed now, destroyed once no call holds it */
	e2b_end(q->e, x);
	log_event(q->s, "e2b-sandbox-kill", "%s by %s", x->id, q->who);
	e2b_sbx_put(q->e, x);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

/* {"timeout": seconds} of a body (0 when absent). */
static double body_timeout(struct ereq *q, bool *bad)
{
	*bad = false;
	if (!q->len)
		return 0;
	json_t *b = json_loadb(q->body, q->len, 0, NULL);
	json_t *t = json_object_get(b, "timeout");
	double v = 0;
	if (t && !json_is_number(t))
		*bad = true;
	else if (t)
		v = json_number_value(t);
	if (!b || v < 0)
		*bad = true;
	json_decref(b);
	return v;
}

enum MHD_Result e2b_timeout(struct ereq *q)
{
	bool bad;
	double t = body_timeout(q, &bad);
	if (bad || t <= 0)
		return e2b_api_error(q, 400, "give {\"timeout\": seconds}, more than 0");
	struct e2b_sbx *x;
	/* a paused one: 404, as E2B (connect with a timeout resumes it) */
	struct sess *ss = e2b_running(q, &x);
	if (!ss)
		return e2b_not_found(q, q->arg);
	sess_set_end(q->s, ss, fmin(t, q->s->o.session_max_ttl));
	sess_unref(q->s, ss);
	e2b_sbx_put(q->e, x);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

enum MHD_Result e2b_connect_sbx(struct ereq *q)
{
	bool bad;
	double t = body_timeout(q, &bad);
	json_t *b = q->len ? json_loadb(q->body, q->len, 0, NULL) : NULL;
	json_t *mem = json_object_get(b, "memory");
	bool cold = json_is_false(mem); /* onResume 'reboot': from its files */
	bad = bad || (mem && !json_is_boolean(mem));
	json_decref(b);
	if (bad)
		return e2b_api_error(q, 400, "give {}, {\"timeout\": seconds} or {\"memory\": false}");
	struct e2b_sbx *x = e2b_own(q, q->arg);
	if (x && e2b_is_paused(q->e, x)) { /* resumed: 201, the same id and tokens */
		char err[600];
		unsigned code = e2b_resume_sbx(q->e, x, t > 0 ? t : DEFAULT_TIMEOUT_S, cold, err, sizeof(err));
		json_t *v = code ? NULL : e2b_sandbox_json(q->e, x);
		e2b_sbx_put(q->e, x);
		if (code)
			return e2b_api_error(q, code, "%s", err);
		return e2b_answer_json(q, 201, v);
	}
	struct sess *ss = x ? e2b_sess(q->e, x) : NULL;
	if (!ss) {
		if (x)
			e2b_sbx_put(q->e, x);
		return e2b_not_found(q, q->arg);
	}
	/* E2B: connecting extends the timeout, never shortens it */
	if (t > 0 && now_real() + t > end_rt(q->s, ss))
		sess_set_end(q->s, ss, fmin(t, q->s->o.session_max_ttl));
	sess_unref(q->s, ss);
	json_t *v = e2b_sandbox_json(q->e, x);
	e2b_sbx_put(q->e, x);
	return e2b_answer_json(q, 200, v);
}

/* GET /health: 204 while the sandbox lives (the data plane's auth found
 * it), 502 once its session ended. */
enum MHD_Result e2b_health(struct ereq *q)
{
	const char *port = e2b_header(q, "E2b-Sandbox-Port");
	if (port && strcmp(port, "49999") == 0)
		return ci_health(q); /* the code interpreter's own */
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss)
		return e2b_api_error(q, 502, "sandbox %s is not running", q->x->id);
	bool alive = ward_session_alive(ss->ws);
	sess_unref(q->s, ss);
	if (!alive)
		return e2b_api_error(q, 502, "sandbox %s is not running", q->x->id);
	return e2b_answer(q, 204, NULL, NULL, 0);
}
