/* session_api.c — the endpoints of sessions (SPEC §11) but the table's
 * (sessions.c): each checks its request on the I/O thread (prepare_*:
 * the body, the path, the session it names, held from there), then runs
 * on a worker (run_*: the libward call) — but the output of a background
 * process, which is sent as it comes from the I/O threads: a follow
 * stream with nothing to send parks its connection (suspended) and a
 * ticker thread wakes the parked ones ten times a second (a run's stream,
 * stream.c, also as soon as its socket has something), so that no stream
 * holds a worker, however slowly its client reads.
 *
 * Owns the follow streams (struct follow) and s->parked.  Never calls into
 * a session on an I/O thread but ward_session_proc_output with no wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/request.h"
#include "server/server.h"
#include "server/session_json.h"

#define FILE_READ_MAX_DFLT (16u << 20)

/* A libward errno as an HTTP status. */
static unsigned errno_code(int e)
{
	switch (e) {
	case -ENOENT:
	case -ESRCH:
		return 404;
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG:
		return 507;
	case -EACCES:
	case -EPERM:
	case -ELOOP:
	case -EXDEV:
		return 403;
	case -EISDIR:
	case -ENOTDIR:
	case -EEXIST:
	case -ENOTEMPTY:
		return 409;
	case -EAGAIN:
		return 429;
	case -EMSGSIZE:
		return 413;
	case -EPIPE:
		return 409;
	case -EINVAL:
		return 400;
	case -ENOSYS:
	case -ENOTSUP:
		return 501;
	case -EBUSY:
		return 409;
	case -ETIMEDOUT:
		return 504;
	default:
		return 500;
	}
}

static void set_lib_error(struct req *r, int rc, const char *err, const char *what)
{
	if (rc == -EAGAIN)
		r->retry_after = 1;
	set_error(r, errno_code(rc), "%s: %s", what, err[0] ? err : strerror(-rc));
}

/* ---- POST /sessions ---- */

/* Limits within the maxima, and the session's own: ttl_s, idle_s,
 * work_size_mb. */
static bool check_session_limits(struct server *s, struct req *r, const struct sj_session_extras *x)
{
	const struct serve_opts *o = &s->o;
	if (x->ttl_set && !(x->ttl_s > 0 && x->ttl_s <= o->session_max_ttl)) {
		set_error(r, 400, "ttl_s: give seconds, more than 0 and at most --session-max-ttl (%g)",
		          o->session_max_ttl);
		return false;
	}
	if (x->idle_set && !(x->idle_s > 0 && x->idle_s <= o->session_max_idle)) {
		set_error(r, 400, "idle_s: give seconds, more than 0 and at most --session-max-idle (%g)",
		          o->session_max_idle);
		return false;
	}
	if (x->work_set && !(x->work_size_mb >= 1 && x->work_size_mb <= (double)o->max_work_size)) {
		set_error(r, 400, "limits.work_size_mb: give 1 to --max-work-size (%zu)", o->max_work_size);
		return false;
	}
	char err[512];
	/* a session collects nothing itself: each exec's caps are checked with it */
	r->doc.req.limits.collect_max_files = o->defaults.collect_max_files;
	r->doc.req.limits.collect_max_bytes = o->defaults.collect_max_bytes;
	if (ward_limits_within(&r->doc.req.limits, &o->max, err, sizeof(err)) < 0 ||
	    egress_policy_apply(&o->egress, &r->doc.req, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (ward_request_validate(&r->doc.req, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	return true;
}

/* The body decoded as a request (a command put in for the decoder). */
static bool decode_shape(struct server *s, struct req *r)
{
	char err[512];
	size_t len = 0;
	char *b = sj_with_argv(r->body ? r->body : "", r->len, &len, err, sizeof(err));
	if (!b || ward_request_from_json_under(b, len, &s->o.defaults, &r->doc, err, sizeof(err)) < 0) {
		free(b);
		set_error(r, 400, "%s", err);
		return false;
	}
	free(b);
	r->have_doc = true;
	r->doc.req.isolation = WARD_ISO_SYSTEM;
	body_release(s, r);
	return true;
}

bool prepare_session_new(struct server *s, struct req *r)
{
	char err[512];
	struct sj_session_extras *x = calloc(1, sizeof(*x));
	if (!x) {
		set_error(r, 500, "out of memory");
		return false;
	}
	r->ext = x;
	if (sj_session_extras(r->body ? r->body : "", r->len, x, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	sj_recipe(r->body ? r->body : "", r->len, x->recipe, sizeof(x->recipe));
	return decode_shape(s, r) && hold_paths(s, r) && image_resolve(s, r, &r->doc.req) &&
	       check_session_limits(s, r, x);
}

static void answer_made(struct server *s, struct req *r, struct sess *x, struct ward_session *ws)
{
	struct ward_enforced e;
	memset(&e, 0, sizeof(e));
	ward_session_enforced(ws, &e);
	struct sj_session v = {.id = x->id, .created_at = now_real(), .enforced = &e};
	pthread_mutex_lock(&s->sess_lock);
	sess_times(x, &v.expires_at, &v.idle_expires_at);
	pthread_mutex_unlock(&s->sess_lock);
	set_answer(r, 201, sj_session_json(&v), "application/json");
}

/* A new session's options: the request's shape, its extras, the runner's
 * bounds. */
static void session_opts(struct server *s, struct req *r, struct ward_session_opts *o)
{
	const struct sj_session_extras *x = r->ext;
	memset(o, 0, sizeof(*o));
	o->shape = r->doc.req;
	o->work_size_mb = x->work_set ? (uint64_t)x->work_size_mb : 0;
	o->cpu_budget_s = x->cpu_set ? x->cpu_s : 0;
	o->call_timeout_s = s->o.session_call_timeout;
	o->bg_output_bytes = s->o.session_bg_output;
	o->bg_output_shared = &s->bg_output;
}

/* Into the table: made, with what forks it again. */
static void session_commit(struct server *s, struct req *r, struct sess *slot, struct ward_session *ws)
{
	const struct sj_session_extras *x = r->ext;
	slot->recipe = x->recipe[0] ? strdup(x->recipe) : NULL;
	sess_commit(s, slot, ws, x->ttl_set ? x->ttl_s : 3600, x->idle_set ? x->idle_s : 600);
}

void run_session_new(struct req *r)
{
	struct server *s = r->srv;
	struct sess *slot = sess_reserve(s, r);
	if (!slot)
		return;
	struct ward_session_opts o;
	session_opts(s, r, &o);
	char err[512] = "";
	/* made here, on a worker: its PID 1 lives as long as this thread */
	struct ward_session *ws = ward_session_new(&o, err, sizeof(err));
	if (!ws) {
		sess_commit(s, slot, NULL, 0, 0);
		set_error(r, 500, "cannot make the session: %s", err);
		doc_release(r);
		return;
	}
	session_commit(s, r, slot, ws);
	log_event(s, "session-new", "%s for %s", slot->id, r->who);
	answer_made(s, r, slot, ws);
	doc_release(r);
}

/* ---- the session's own endpoints ---- */

bool prepare_session(struct server *s, struct req *r)
{
	return sess_find(s, r);
}

void run_session_info(struct req *r)
{
	struct server *s = r->srv;
	struct sess *x = r->sess;
	struct sj_session v = {.id = x->id, .created_at = x->created_rt, .detail = true};
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	ward_session_usage(x->ws, &v.usage);
	v.cpu_spent = ward_session_cpu_spent(x->ws);
	v.egress = ward_session_egress(x->ws, &v.egress_tried, &v.egress_allowed) == 0;
	if (ward_session_procs(x->ws, &p, &n) < 0)
		p = NULL, n = 0;
	v.procs = p;
	v.nprocs = n;
	v.busy = sess_busy(s, x);
	pthread_mutex_lock(&s->sess_lock);
	v.execs = x->execs;
	v.paused = x->paused;
	sess_times(x, &v.expires_at, &v.idle_expires_at);
	pthread_mutex_unlock(&s->sess_lock);
	set_answer(r, 200, sj_session_json(&v), "application/json");
	ward_session_procs_free(p, n);
}

void run_session_delete(struct req *r)
{
	sess_delete(r->srv, r);
	set_answer(r, 204, strdup(""), "application/json");
}

/* ---- POST /sessions/{id}/exec ---- */

bool prepare_session_exec(struct server *s, struct req *r)
{
	char err[512];
	struct sj_exec_extras *x = calloc(1, sizeof(*x));
	if (!x) {
		set_error(r, 500, "out of memory");
		return false;
	}
	r->ext = x;
	if (sj_exec_extras(r->body ? r->body : "", r->len, x, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (x->cwd[0] && x->cwd[0] != '/') {
		set_error(r, 400, "cwd: '%s' is not absolute; give a path inside the sandbox such as /work/sub",
		          x->cwd);
		return false;
	}
	if (!prepare_exec(s, r))
		return false;
	if (x->background && r->doc.req.collect) {
		set_error(r, 400,
		          "collect: a background exec has no end to collect the files at: run it without "
		          "\"background\", or collect with a later exec");
		return false;
	}
	if (x->stdin_pipe)
		r->doc.req.stdin_set = false;
	if (!sess_find(s, r))
		return false;
	if (ward_session_frozen(r->sess->ws)) { /* (the library's refusal would be a result's error) */
		set_error(r, 409, "the session is paused: resume it first (POST /sessions/%s/resume)", r->sess->id);
		return false;
	}
	return true;
}

void run_session_exec(struct req *r)
{
	struct server *s = r->srv;
	struct sess *x = r->sess;
	const struct sj_exec_extras *e = r->ext;
	struct ward_request *q = &r->doc.req;
	/* an MCP call's own cancel; the session's end kills its sandbox anyway */
	q->cancel = r->cancel ? r->cancel : &x->cancel;
	const char *cwd = e->cwd[0] ? e->cwd : NULL;
	char err[512] = "";
	if (e->background) {
		int pid = 0;
		int rc = ward_session_spawn(x->ws, q, cwd, e->stdin_pipe, &pid, err, sizeof(err));
		if (rc < 0)
			set_lib_error(r, rc, err, "cannot start the process");
		else
			set_answer(r, 202, sj_pid_json(pid), "application/json");
		sess_count_exec(s, x, rc < 0 ? WARD_ST_ERROR : WARD_ST_OK);
		doc_release(r);
		return;
	}
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	stream_start(r, q);
	ward_session_exec(x->ws, q, cwd, &res);
	stream_totals(r, &res.out, &res.err);
	set_answer(r, 200, ward_result_to_json(&res), "application/json");
	r->sandbox_status = ward_status_name(res.status);
	if (res.error[0])
		snprintf(r->message, sizeof(r->message), "%s", res.error);
	sess_count_exec(s, x, res.status);
	metrics_count_egress(s, r, &res);
	ward_result_free(&res);
	doc_release(r);
}

/* ---- files ---- */

/* The guard of SPEC §6 before anything reaches the session: relative, no
 * "..", no control byte (a %00 arrives as 0x01, see http.c). */
static bool path_ok(struct req *r, bool empty_ok)
{
	const char *p = r->args.fpath;
	if (!*p && !empty_ok) {
		set_error(r, 400, "path: name a file under /work (/sessions/ID/files/PATH)");
		return false;
	}
	if (*p == '/') {
		set_error(r, 400, "path: '%s' is absolute; give it relative to /work", p);
		return false;
	}
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			set_error(r, 400, "path: has a control byte (or NUL); such names are refused");
			return false;
		}
	for (const char *c = p; *c;) {
		size_t k = strcspn(c, "/");
		if (k == 2 && c[0] == '.' && c[1] == '.') {
			set_error(r, 400, "path: has a '..' component; give a path below /work");
			return false;
		}
		c += k + (c[k] == '/');
	}
	return true;
}

bool prepare_session_file(struct server *s, struct req *r)
{
	bool list = strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0;
	if (!path_ok(r, list))
		return false;
	return sess_find(s, r);
}

static bool mode_arg(struct req *r, mode_t *mode)
{
	const char *m = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "mode");
	*mode = 0;
	if (!m)
		return true;
	char *end;
	unsigned long v = strtoul(m, &end, 8);
	if (!*m || *end || v > 0777) {
		set_error(r, 400, "mode: give octal permission bits, 0 to 0777 (e.g. ?mode=0755)");
		return false;
	}
	*mode = (mode_t)v;
	return true;
}

void run_session_put_file(struct req *r)
{
	mode_t mode;
	if (!mode_arg(r, &mode))
		return;
	char err[512] = "";
	int rc = ward_session_write(r->sess->ws, r->args.fpath, r->body ? r->body : "", r->len, mode, err, sizeof(err));
	if (rc < 0)
		set_lib_error(r, rc, err, "cannot write the file");
	else
		set_answer(r, 201, strdup(""), "application/json");
}

void run_session_get_file(struct req *r)
{
	struct server *s = r->srv;
	char err[512] = "";
	struct ward_dirent *d = NULL;
	size_t n = 0, kept = 0;
	bool cut = false;
	/* a listing's text stays within --max-output, as an exec's stream does
	 * (answer_bound counts that), however many entries the directory has */
	size_t max = s->o.max.output_limit ? s->o.max.output_limit : FILE_READ_MAX_DFLT;
	int rc = ward_session_list_max(r->sess->ws, r->args.fpath, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES,
	                               &d, &n, &cut, err, sizeof(err));
	if (rc == 0) {
		set_answer(r, 200, sj_list_json(d, n, max, &kept), "application/json");
		r->truncated = cut || kept < n;
		ward_session_list_free(d, n);
		return;
	}
	if (rc != -ENOTDIR) {
		set_lib_error(r, rc, err, "cannot read the path");
		return;
	}
	unsigned char *data = NULL;
	size_t len = 0;
	err[0] = 0;
	rc = ward_session_read(r->sess->ws, r->args.fpath, max, &data, &len, err, sizeof(err));
	if (rc == -EFBIG) {
		set_error(r, 413,
		          "the file is larger than the most this runner sends (--max-output, %zu bytes); "
		          "split it inside the session",
		          max);
		return;
	}
	if (rc < 0) {
		set_lib_error(r, rc, err, "cannot read the file");
		return;
	}
	set_answer_bytes(r, 200, (char *)data, len, "application/octet-stream");
}

void run_session_rm_file(struct req *r)
{
	char err[512] = "";
	int rc = ward_session_remove(r->sess->ws, r->args.fpath, err, sizeof(err));
	if (rc < 0)
		set_lib_error(r, rc, err, "cannot remove the path");
	else
		set_answer(r, 204, strdup(""), "application/json");
}

/* ---- processes ---- */

void run_session_procs(struct req *r)
{
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	int rc = ward_session_procs(r->sess->ws, &p, &n);
	if (rc < 0) {
		set_lib_error(r, rc, "", "cannot list the processes");
		return;
	}
	set_answer(r, 200, sj_procs_json(p, n), "application/json");
	ward_session_procs_free(p, n);
}

/* On the I/O thread, once the body is in: a stdin write never waits for
 * the process to read (the library queues what the pipe has no room for,
 * and refuses past its bound), so it takes no worker; the answer is made
 * here and prepare's false sends it. */
bool prepare_proc_stdin(struct server *s, struct req *r)
{
	if (!sess_find(s, r))
		return false;
	const char *c = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "close");
	bool close_after = c && strcmp(c, "0") != 0;
	char err[512] = "";
	int rc = ward_session_proc_stdin(r->sess->ws, r->args.pid, r->body ? r->body : "", r->len, close_after, err,
	                                 sizeof(err));
	sess_release(r);
	if (rc < 0)
		set_lib_error(r, rc, err, "cannot write to its stdin");
	else
		set_answer(r, 204, strdup(""), "application/json");
	return false;
}

bool prepare_proc_signal(struct server *s, struct req *r)
{
	char err[256];
	int sig;
	if (sj_signal(r->body ? r->body : "", r->len, &sig, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	r->args.sig = sig;
	return sess_find(s, r);
}

void run_proc_signal(struct req *r)
{
	char err[512] = "";
	int rc = ward_session_proc_signal(r->sess->ws, r->args.pid, r->args.sig, err, sizeof(err));
	if (rc < 0)
		set_lib_error(r, rc, err, "cannot signal the process");
	else
		set_answer(r, 204, strdup(""), "application/json");
}

/* ---- POST /sessions/{id}/pause, /resume, /fork (ward's extension) ---- */

bool prepare_session_pause(struct server *s, struct req *r)
{
	char err[256];
	struct sj_pause *p = calloc(1, sizeof(*p));
	if (!p) {
		set_error(r, 500, "out of memory");
		return false;
	}
	r->ext = p;
	if (sj_pause(r->body ? r->body : "", r->len, p, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (p->timeout_set && !(p->timeout_s > 0 && p->timeout_s <= s->o.session_max_ttl)) {
		set_error(r, 400, "timeout_s: give seconds, more than 0 and at most --session-max-ttl (%g)",
		          s->o.session_max_ttl);
		return false;
	}
	return sess_find(s, r);
}

/* Its processes stop, keeping their memory; its ttl and idle clocks stop
 * (it ends timeout_s from now if still paused: --session-max-ttl unless
 * given). */
void run_session_pause(struct req *r)
{
	const struct sj_pause *p = r->ext;
	char err[512] = "";
	int rc = sess_pause_by_id(r->srv, r->sess->id, r->who, true, p->timeout_set ? p->timeout_s : 0, err,
	                          sizeof(err));
	if (rc < 0) {
		set_lib_error(r, rc, err, "cannot pause the session");
		return;
	}
	log_event(r->srv, "session-pause", "%s", r->sess->id);
	set_answer(r, 204, strdup(""), "application/json");
}

void run_session_resume(struct req *r)
{
	char err[512] = "";
	int rc = sess_pause_by_id(r->srv, r->sess->id, r->who, false, 0, err, sizeof(err));
	if (rc < 0) {
		set_lib_error(r, rc, err, "cannot resume the session");
		return;
	}
	log_event(r->srv, "session-resume", "%s", r->sess->id);
	set_answer(r, 204, strdup(""), "application/json");
}

/* The most sessions one fork makes. */
#define FORK_MAX 16

/* The source, then its creating body (kept without files) decoded as a
 * POST /sessions would be: the forks get its shape, limits and ttl. */
bool prepare_session_fork(struct server *s, struct req *r)
{
	char err[256];
	unsigned n;
	if (sj_fork(r->body ? r->body : "", r->len, FORK_MAX, &n, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (!sess_find(s, r))
		return false;
	char *recipe = r->sess->recipe ? strdup(r->sess->recipe) : NULL;
	if (!recipe) {
		set_error(r, 409,
		          "this session cannot be forked: the body that made it, without its files, is over %d "
		          "bytes",
		          SJ_RECIPE_MAX);
		return false;
	}
	body_release(s, r);
	r->body = recipe; /* (not counted in --max-body-total: at most SJ_RECIPE_MAX) */
	r->len = strlen(recipe);
	if (!prepare_session_new(s, r))
		return false;
	((struct sj_session_extras *)r->ext)->fork_n = n;
	return true;
}

/* fork_n sessions with the source's files of this moment (no process). */
void run_session_fork(struct req *r)
{
	struct server *s = r->srv;
	unsigned n = ((const struct sj_session_extras *)r->ext)->fork_n, k = 0;
	struct sess *slot[FORK_MAX];
	struct ward_session *ws[FORK_MAX];
	while (k < n && (slot[k] = sess_reserve(s, r)))
		k++;
	char err[512] = "";
	int rc = k < n ? -EAGAIN : 0; /* (sess_reserve said why) */
	if (rc == 0) {
		struct ward_session_opts o;
		session_opts(s, r, &o);
		o.shape.files = NULL; /* the source's files are copied instead */
		o.shape.nfiles = 0;
		/* (bounded by the source's /work size and each fork's memory_mb: libward's) */
		rc = ward_session_fork(r->sess->ws, &o, n, UINT64_MAX, ws, err, sizeof(err));
		if (rc < 0)
			set_lib_error(r, rc, err, "cannot fork the session");
	}
	for (unsigned i = 0; rc < 0 && i < k; i++)
		sess_commit(s, slot[i], NULL, 0, 0);
	struct sj_session v[FORK_MAX];
	struct ward_enforced e[FORK_MAX];
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		session_commit(s, r, slot[i], ws[i]);
		log_event(s, "session-new", "%s for %s, forked from %s", slot[i]->id, r->who, r->sess->id);
		ward_session_enforced(ws[i], &e[i]);
		v[i] = (struct sj_session){.id = slot[i]->id, .created_at = now_real(), .enforced = &e[i]};
		pthread_mutex_lock(&s->sess_lock);
		sess_times(slot[i], &v[i].expires_at, &v[i].idle_expires_at);
		pthread_mutex_unlock(&s->sess_lock);
	}
	if (rc == 0)
		set_answer(r, 201, sj_sessions_json(v, n), "application/json");
	doc_release(r);
}

/* ---- GET /sessions/{id}/processes/{pid}/output ---- */

/* One output stream being sent: the session by id and owner (looked up
 * again at each step: it holds no reference while parked), the offsets so
 * far, and the NDJSON not yet taken by MHD. */
struct follow {
	struct park park; /* its connection, while parked */
	struct server *s;
	char sid[100], owner[96];
	int pid;
	bool follow, done;
	uint64_t off[2];
	char *buf;
	size_t len, pos;
	size_t held; /* len, counted in the server's --max-answer-total */
};

/* Append one NDJSON line (taking line; n is strlen(line)); false when out
 * of memory. */
static bool follow_add(struct follow *f, char *line)
{
	if (!line)
		return false;
	size_t n = strlen(line);
	char *b = realloc(f->buf, f->len + n + 1);
	if (!b) {
		free(line);
		return false;
	}
	f->buf = b;
	memcpy(b + f->len, line, n);
	b[f->len + n] = '\n';
	f->len += n + 1;
	free(line);
	return true;
}

/* What f has to send counts in the answers' budget: when it does not fit
 * now, it is dropped and fetched again later (the offsets go back). */
static bool follow_hold(struct follow *f, const uint64_t was[2])
{
	if (!f->len || answer_reserve(f->s, f->len)) {
		f->held = f->len;
		return true;
	}
	free(f->buf);
	f->buf = NULL;
	f->len = 0;
	f->off[0] = was[0];
	f->off[1] = was[1];
	f->done = false;
	return false;
}

static void follow_unhold(struct follow *f)
{
	answer_release(f->s, f->held);
	f->held = 0;
}

/* The status name of background process id (once it has exited). */
static const char *proc_status(struct ward_session *ws, int id)
{
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	const char *name = NULL;
	if (ward_session_procs(ws, &p, &n) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (p[i].id == id && !p[i].running)
			name = ward_status_name(p[i].status);
	ward_session_procs_free(p, n);
	return name;
}

/* The session's output since f's offsets, as lines; the end line once it
 * has exited (or the session or process is gone).  false: nothing new. */
/* f's session, held (sess_unref), or NULL when it is gone. */
static struct sess *follow_sess(struct follow *f)
{
	struct req q; /* just what sess_find reads */
	memset(&q, 0, sizeof(q));
	snprintf(q.args.sid, sizeof(q.args.sid), "%s", f->sid);
	snprintf(q.who, sizeof(q.who), "%s", f->owner);
	q.srv = f->s;
	if (!sess_find(f->s, &q)) {
		free(q.resp);
		return NULL;
	}
	return q.sess;
}

static bool follow_fetch(struct follow *f)
{
	struct sess *x = follow_sess(f);
	if (!x) {
		f->done = true;
		return follow_add(f, sj_end_json(f->pid, 0, NULL, "the session is gone (deleted or expired)", NULL));
	}
	struct ward_stream st[2];
	memset(st, 0, sizeof(st));
	bool exited = false;
	int code = 0;
	char err[256] = "";
	int rc = ward_session_proc_output(x->ws, f->pid, f->off[0], f->off[1], 0, &st[0], &st[1], &exited, &code, err,
	                                  sizeof(err));
	const char *status = exited ? proc_status(x->ws, f->pid) : NULL;
	sess_unref(f->s, x);
	if (rc < 0) {
		f->done = true;
		return follow_add(f, sj_end_json(f->pid, 0, NULL, err[0] ? err : "no such process", NULL));
	}
	bool any = false, more = false;
	uint64_t was[2] = {f->off[0], f->off[1]};
	static const char *const names[2] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		if (st[i].len)
			any |= follow_add(f, sj_event_json(names[i], st[i].data, st[i].len, NULL));
		more |= st[i].len == WARD_SESSION_OUTPUT_CHUNK; /* a chunk's worth: there may be more */
		if (st[i].bytes > f->off[i])
			f->off[i] = st[i].bytes;
		free(st[i].data);
	}
	if (!more && (exited || !f->follow)) {
		f->done = true;
		if (exited)
			follow_add(f, sj_end_json(f->pid, code, status, NULL, NULL));
	}
	return follow_hold(f, was) && (any || f->done);
}

/* Park a stream's connection until the ticker wakes it (from its own
 * callback: the pattern MHD prescribes, suspend then return 0).  false
 * when the server stops: the stream ends. */
bool conn_park(struct server *s, struct park *p)
{
	pthread_mutex_lock(&s->park_lock);
	bool park = !s->ticker_stop;
	if (park) {
		MHD_suspend_connection(p->conn);
		p->ready = false;
		p->next = s->parked;
		s->parked = p;
		uint64_t one = 1;
		if (p->fd >= 0 && write(s->park_wake, &one, sizeof(one)) < 0) {
			/* the counter is full: the ticker is awake anyway */
		}
	}
	pthread_mutex_unlock(&s->park_lock);
	return park;
}

static ssize_t follow_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct follow *f = cls;
	(void)pos;
	if (f->pos == f->len) {
		follow_unhold(f);
		f->pos = f->len = 0;
		if (f->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		uint64_t woken;
		if (f->park.fd >= 0 && read(f->park.fd, &woken, sizeof(woken)) < 0) {
			/* EAGAIN: not woken since it last looked (a tick) */
		}
		if (!follow_fetch(f)) /* nothing yet; a client that left ends it (it is looked at each tick) */
			return !conn_client_gone(f->park.conn) && conn_park(f->s, &f->park)
			               ? 0
			               : MHD_CONTENT_READER_END_OF_STREAM;
		if (f->len == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
	}
	size_t k = f->len - f->pos < max ? f->len - f->pos : max;
	memcpy(out, f->buf + f->pos, k);
	f->pos += k;
	return (ssize_t)k;
}

static void follow_free(void *cls)
{
	struct follow *f = cls;
	if (f->park.fd >= 0) {
		struct sess *x = follow_sess(f);
		if (x) { /* else it ended, and with it the duplicate */
			ward_session_unnotify(x->ws, f);
			sess_unref(f->s, x);
		}
		close(f->park.fd);
	}
	follow_unhold(f);
	free(f->buf);
	free(f);
}

/* On the I/O thread: the session and process checked now (404 else); the
 * answer is made as it is sent. */
void answer_proc_output(struct server *s, struct req *r)
{
	if (!sess_find(s, r))
		return;
	/* the process first: a 404 (or the library's refusal) rather than a stream that says so */
	struct ward_stream o, e;
	memset(&o, 0, sizeof(o));
	memset(&e, 0, sizeof(e));
	char err[256] = "";
	int rc = ward_session_proc_output(r->sess->ws, r->args.pid, UINT64_MAX, UINT64_MAX, 0, &o, &e, NULL, NULL, err,
	                                  sizeof(err));
	free(o.data);
	free(e.data);
	struct follow *f = rc < 0 ? NULL : calloc(1, sizeof(*f));
	const char *fl = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "follow");
	if (f) {
		f->s = s;
		f->follow = fl && strcmp(fl, "0") != 0;
		/* its session wakes it when a background process has something
		 * new (the ticker resumes it at once); else the ticks alone */
		f->park.fd = f->follow ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
		if (f->park.fd >= 0 && ward_session_notify(r->sess->ws, f->park.fd, f, r->args.pid) < 0) {
			close(f->park.fd);
			f->park.fd = -1;
		}
	}
	double end = r->sess->end;
	sess_release(r);
	if (rc < 0) {
		set_lib_error(r, rc, err, "cannot read its output");
		return;
	}
	if (!f) {
		set_error(r, 500, "out of memory");
		return;
	}
	f->park.conn = r->conn;
	f->pid = r->args.pid;
	snprintf(f->sid, sizeof(f->sid), "%s", r->args.sid);
	snprintf(f->owner, sizeof(f->owner), "%s", r->who);
	r->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, follow_read, f, follow_free);
	if (!r->stream) {
		follow_free(f);
		set_error(r, 500, "out of memory");
		return;
	}
	MHD_add_response_header(r->stream, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
	r->code = 200;
	/* a follow lasts at most as long as its session */
	if (f->follow)
		conn_set_deadline(s, r->conn, end + 1);
}

/* Every parked stream looks again this often: what a stream with no fd
 * of its own waits at most (a session's streams have one: its
 * ward_session_notify).  WARD_TEST_TICK_S (seconds) replaces it, for tests
 * that show a stream answers on its fd's wake alone. */
#define TICK_S 0.1
#define TICK_WATCH 1024 /* parked fds watched at once (the others wait for the tick) */

/* Resume the parked streams that are ready, or all of them on a tick.
 * Called with park_lock held. */
static void ticker_resume(struct server *s, bool all)
{
	for (struct park **pp = &s->parked; *pp;) {
		struct park *p = *pp;
		if (all || p->ready) {
			*pp = p->next;
			MHD_resume_connection(p->conn);
		} else {
			pp = &p->next;
		}
	}
}

/* Wait for a parked stream's fd (or a new one parked) until the next
 * tick; mark those that have something ready (libward joins small writes
 * into one message: each wakes the stream). */
static void ticker_wait(struct server *s, double until)
{
	struct pollfd pf[TICK_WATCH + 1];
	struct park *who[TICK_WATCH + 1];
	nfds_t n = 0;
	pf[n++] = (struct pollfd){.fd = s->park_wake, .events = POLLIN};
	pthread_mutex_lock(&s->park_lock);
	for (struct park *p = s->parked; p && n <= TICK_WATCH; p = p->next)
		if (p->fd >= 0) {
			who[n] = p;
			pf[n++] = (struct pollfd){.fd = p->fd, .events = POLLIN};
		}
	pthread_mutex_unlock(&s->park_lock);
	double left = until - now_mono();
	if (poll(pf, n, left > 0 ? (int)(left * 1000) + 1 : 0) <= 0)
		return;
	uint64_t v;
	if ((pf[0].revents & POLLIN) && read(s->park_wake, &v, sizeof(v)) < 0) {
		/* nothing to take: another round saw it */
	}
	/* only this thread takes a stream off the list: who[] are all still parked */
	pthread_mutex_lock(&s->park_lock);
	for (nfds_t i = 1; i < n; i++)
		if (pf[i].revents)
			who[i]->ready = true;
	pthread_mutex_unlock(&s->park_lock);
}

static void *ticker_main(void *arg)
{
	struct server *s = arg;
	double next_tick = now_mono() + s->tick_s;
	for (;;) {
		pthread_mutex_lock(&s->park_lock);
		bool stop = s->ticker_stop;
		double now = now_mono();
		bool tick = stop || now >= next_tick;
		ticker_resume(s, tick);
		if (tick)
			next_tick = now + s->tick_s;
		pthread_mutex_unlock(&s->park_lock);
		if (stop)
			return NULL;
		ticker_wait(s, next_tick);
	}
}

int ticker_start(struct server *s)
{
	const char *t = getenv("WARD_TEST_TICK_S");
	s->tick_s = t && atof(t) > 0 ? atof(t) : TICK_S;
	s->park_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->park_wake < 0) {
		fprintf(stderr, "ward serve: cannot make the follow ticker's eventfd: %s\n", strerror(errno));
		return -1;
	}
	int e = pthread_create(&s->ticker, NULL, ticker_main, s);
	if (e) {
		fprintf(stderr, "ward serve: cannot start the follow ticker thread: %s\n", strerror(e));
		return -1;
	}
	s->ticker_started = true;
	return 0;
}

void ticker_stop(struct server *s)
{
	if (!s->ticker_started)
		return;
	pthread_mutex_lock(&s->park_lock);
	s->ticker_stop = true;
	uint64_t one = 1;
	if (write(s->park_wake, &one, sizeof(one)) < 0) {
		/* the counter is full: the ticker is awake anyway */
	}
	pthread_mutex_unlock(&s->park_lock);
	pthread_join(s->ticker, NULL);
	s->ticker_started = false;
	close(s->park_wake);
	s->park_wake = -1;
}
