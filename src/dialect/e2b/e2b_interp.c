/* e2b_interp.c — the code interpreter's API (E2b-Sandbox-Port 49999):
 * POST /execute answers NDJSON as the code runs; a context is a kernel
 * process (ward_kernel.py, embedded) in the session, started on its first
 * use, fed one JSON line a request through its stdin pipe and read by
 * offsets from its stdout.  One execution at a time per context (its run
 * lock); state lives in the kernel, so it persists across runCode calls.
 *
 * Deadlines: the SDK aborts a runCode at its timeoutMs and closes the
 * connection; the stream says {"type":"keepalive"} (which the SDK skips)
 * every KEEPALIVE_S, so a client that left is seen within seconds, and the
 * code is interrupted (SIGINT: the kernel and its state live on) or, when
 * that does not end it within INTERRUPT_S, the kernel is killed (the next
 * call starts a fresh one: restartCodeContext's state).  An execution
 * that runs past --max-timeout ends so too, with an error line. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dialect/e2b/e2b_int.h"
#include "ward_kernel_py.h"

#define KEEPALIVE_S 2.0
#define INTERRUPT_S 2.0
#define MAX_CTX_TOTAL 64   /* contexts ever made in one sandbox (removed ones too) */
#define LINE_MAX_BYTES (64u << 20)

static enum MHD_Result ci_error(struct ereq *q, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum MHD_Result ci_error(struct ereq *q, unsigned code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->message, sizeof(q->message), fmt, ap); /* the request's log line says it */
	va_end(ap);
	char *b = strdup(q->message);
	return e2b_answer(q, code, "text/plain", b, b ? strlen(b) : 0);
}

void ci_free_all(struct e2b_sbx *x)
{
	while (x->ctxs) {
		struct e2b_ctx *c = x->ctxs;
		x->ctxs = c->next;
		pthread_mutex_destroy(&c->run);
		free(c);
	}
}

/* removed contexts keep their place (a stream may hold one) with id "" */
static struct e2b_ctx *ctx_find(struct e2b *e, struct e2b_sbx *x, const char *id)
{
	pthread_mutex_lock(&e->lock);
	struct e2b_ctx *c = x->ctxs;
	while (c && (!c->id[0] || strcmp(c->id, id) != 0))
		c = c->next;
	pthread_mutex_unlock(&e->lock);
	return c;
}

static struct e2b_ctx *ctx_new(struct e2b *e, struct e2b_sbx *x, const char *id, const char *cwd)
{
	pthread_mutex_lock(&e->lock);
	unsigned live = 0, all = 0;
	for (struct e2b_ctx *c = x->ctxs; c; c = c->next) {
		all++;
		live += c->id[0] != 0;
	}
	struct e2b_ctx *c = NULL;
	if (live < E2B_MAX_CONTEXTS && all < MAX_CTX_TOTAL)
		c = calloc(1, sizeof(*c));
	if (c) {
		if (id)
			snprintf(c->id, sizeof(c->id), "%s", id);
		else {
			unsigned char b[12];
			if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
				memset(b, 7, sizeof(b));
			for (size_t i = 0; i < sizeof(b); i++)
				sprintf(c->id + 2 * i, "%02x", b[i]);
		}
		snprintf(c->cwd, sizeof(c->cwd), "%s", cwd);
		pthread_mutex_init(&c->run, NULL);
		c->next = x->ctxs;
		x->ctxs = c;
	}
	pthread_mutex_unlock(&e->lock);
	return c;
}

static json_t *ctx_json(const struct e2b_ctx *c)
{
	return json_pack("{s:s,s:s,s:s}", "id", c->id, "language", "python", "cwd", c->cwd);
}

/* Whether kernel pid still runs (and its output is readable). */
static bool kernel_alive(struct ward_session *ws, int pid)
{
	if (pid <= 0)
		return false;
	struct ward_stream o, e;
	memset(&o, 0, sizeof(o));
	memset(&e, 0, sizeof(e));
	bool exited = true;
	int rc = ward_session_proc_output(ws, pid, UINT64_MAX, UINT64_MAX, 0, &o, &e, &exited, NULL, NULL, 0);
	free(o.data);
	free(e.data);
	return rc == 0 && !exited;
}

/* c's kernel, started when it has none (under c->run).  0, or -1 with err. */
static int kernel_ensure(struct ereq *q, struct ward_session *ws, struct e2b_ctx *c, char *err, size_t n)
{
	if (kernel_alive(ws, c->pid))
		return 0;
	char *argv[] = {"python3", "-u", "-c", (char *)ward_kernel_py, NULL};
	char *env[] = {"MPLBACKEND=Agg", "PYTHONUNBUFFERED=1", NULL};
	struct ward_request r;
	ward_request_init(&r);
	r.argv = argv;
	r.env = env;
	r.isolation = WARD_ISO_SYSTEM;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = 0; /* as long as the session */
	r.limits.cpu_s = 0;
	r.limits.output_limit = E2B_OUTPUT_KEPT;
	int pid = 0;
	char cwd[300];
	snprintf(cwd, sizeof(cwd), "%s", c->cwd);
	int rc = ward_session_spawn(ws, &r, cwd, true, &pid, err, n);
	if (rc < 0)
		return -1;
	c->pid = pid;
	c->off[0] = c->off[1] = 0;
	return 0;
}

/* ---- POST /execute ---- */

struct exec_st {
	struct e2b *e;
	struct e2b_sbx *x;  /* held */
	struct e2b_ctx *c;  /* its run lock held */
	char *pend;         /* the kernel's output not yet a whole line */
	size_t plen;
	bool finished, over;
	double last;
	double deadline;    /* --max-timeout from its start */
};

/* Lines of the kernel's output out to the client; __done__ ends it. */
static void take_lines(struct exec_st *st, char **buf, size_t *len)
{
	size_t start = 0;
	for (size_t i = 0; i < st->plen; i++) {
		if (st->pend[i] != '\n')
			continue;
		size_t ll = i - start;
		const char *line = st->pend + start;
		start = i + 1;
		if (ll == 0)
			continue; /* never a blank line: the SDK's JSON.parse("") throws */
		if (ll >= 18 && memcmp(line, "{\"type\": \"__done__\"", 18) == 0) {
			st->finished = true;
			continue;
		}
		char *b = realloc(*buf, *len + ll + 1);
		if (!b)
			continue;
		memcpy(b + *len, line, ll);
		b[*len + ll] = '\n';
		*buf = b;
		*len += ll + 1;
	}
	memmove(st->pend, st->pend + start, st->plen - start);
	st->plen -= start;
}

/* One read of the kernel's output (waiting up to wait_s); false when the
 * kernel is gone (died, killed, the sandbox ended). */
static bool kernel_read(struct exec_st *st, double wait_s, char **buf, size_t *len)
{
	struct sess *ss = e2b_sess(st->e, st->x);
	if (!ss)
		return false;
	struct ward_stream o, er;
	memset(&o, 0, sizeof(o));
	memset(&er, 0, sizeof(er));
	bool exited = false;
	int rc = ward_session_proc_output(ss->ws, st->c->pid, st->c->off[0], st->c->off[1], wait_s, &o, &er, &exited,
					  NULL, NULL, 0);
	sess_unref(st->e->s, ss);
	if (rc < 0) {
		free(o.data);
		free(er.data);
		return false;
	}
	st->c->off[0] = o.bytes > st->c->off[0] ? o.bytes : st->c->off[0];
	st->c->off[1] = er.bytes > st->c->off[1] ? er.bytes : st->c->off[1];
	free(er.data);
	if (o.len && st->plen + o.len <= LINE_MAX_BYTES) {
		char *p = realloc(st->pend, st->plen + o.len);
		if (p) {
			memcpy(p + st->plen, o.data, o.len);
			st->pend = p;
			st->plen += o.len;
		}
	}
	free(o.data);
	take_lines(st, buf, len);
	return !(exited && o.len < WARD_SESSION_OUTPUT_CHUNK && !st->finished);
}

static void add_line(char **buf, size_t *len, json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	if (!t)
		return;
	size_t n = strlen(t);
	char *b = realloc(*buf, *len + n + 1);
	if (b) {
		memcpy(b + *len, t, n);
		b[*len + n] = '\n';
		*buf = b;
		*len += n + 1;
	}
	free(t);
}

static bool exec_produce(void *p, char **buf, size_t *len)
{
	struct exec_st *st = p;
	if (st->over)
		return false;
	for (;;) {
		if (st->e->stopping) {
			st->over = true;
			return false;
		}
		if (!kernel_read(st, 1.0, buf, len)) {
			st->c->pid = 0;
			st->finished = true; /* nothing to interrupt */
			st->over = true;
			add_line(buf, len,
				 json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "KernelDied", "value",
					   "the kernel ended (killed, out of memory, restarted, or the sandbox ended); the "
					   "context starts a fresh one on its next call",
					   "traceback", ""));
			return false;
		}
		if (st->finished) {
			st->over = true;
			return *len > 0;
		}
		double t = now_mono();
		if (t >= st->deadline) { /* exec_free interrupts it */
			st->over = true;
			char msg[200];
			snprintf(msg, sizeof(msg), "the execution ran past the runner's --max-timeout (%g s): interrupted",
				 st->e->s->o.max.timeout_s);
			add_line(buf, len, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "TimeoutError", "value",
						     msg, "traceback", ""));
			return true;
		}
		if (!*len && t - st->last >= KEEPALIVE_S)
			add_line(buf, len, json_pack("{s:s}", "type", "keepalive"));
		if (*len) {
			st->last = t;
			return true;
		}
	}
}

/* The stream is over (done, or its client left): an execution still
 * running is interrupted, or its kernel killed; the context is free. */
static void exec_free(void *p)
{
	struct exec_st *st = p;
	if (!st->finished && st->c->pid > 0) {
		struct sess *ss = e2b_sess(st->e, st->x);
		if (ss) {
			ward_session_proc_signal(ss->ws, st->c->pid, SIGINT, NULL, 0);
			sess_unref(st->e->s, ss);
		}
		double until = now_mono() + INTERRUPT_S;
		while (!st->finished && now_mono() < until) {
			char *junk = NULL;
			size_t jl = 0;
			bool alive = kernel_read(st, 0.2, &junk, &jl);
			free(junk);
			if (!alive)
				break;
		}
		if (!st->finished) {
			ss = e2b_sess(st->e, st->x);
			if (ss) {
				ward_session_proc_signal(ss->ws, st->c->pid, SIGKILL, NULL, 0);
				sess_unref(st->e->s, ss);
			}
			st->c->pid = 0;
		}
	}
	pthread_mutex_unlock(&st->c->run);
	e2b_sbx_put(st->e, st->x);
	free(st->pend);
	free(st);
}

enum MHD_Result ci_execute(struct ereq *q)
{
	json_error_t je;
	json_t *m = json_loadb(q->len ? q->body : "{}", q->len ? q->len : 2, 0, &je);
	if (!json_is_object(m)) {
		json_decref(m);
		return ci_error(q, 400, "the body is not a JSON object: %s", je.text);
	}
	json_t *code = json_object_get(m, "code");
	json_t *cid = json_object_get(m, "context_id");
	json_t *lang = json_object_get(m, "language");
	if (!json_is_string(code)) {
		json_decref(m);
		return ci_error(q, 400, "code: give the code to run");
	}
	if (lang && !json_is_null(lang) &&
	    (!json_is_string(lang) || strcmp(json_string_value(lang), "python") != 0)) {
		json_decref(m);
		return ci_error(q, 400, "language: only python is offered here");
	}
	struct e2b_ctx *c = NULL;
	if (json_is_string(cid)) {
		c = ctx_find(q->e, q->x, json_string_value(cid));
		if (!c) {
			json_decref(m);
			return ci_error(q, 404, "Context %.64s not found", json_string_value(cid));
		}
	} else {
		c = ctx_find(q->e, q->x, "default");
		if (!c)
			c = ctx_new(q->e, q->x, "default", E2B_HOME);
		if (!c) {
			json_decref(m);
			return ci_error(q, 429, "too many code contexts in this sandbox: remove one");
		}
	}
	char rate_err[300];
	if (!client_rate_take(q->s, q->who, &(unsigned){0}, rate_err, sizeof(rate_err))) {
		json_decref(m);
		return ci_error(q, 429, "%s", rate_err); /* an execution is a run of its owner's */
	}
	json_t *ev = json_object_get(m, "env_vars");
	json_t *req = json_pack("{s:O,s:o}", "code", code, "env", json_is_object(ev) ? json_incref(ev) : json_object());
	json_decref(m);
	char *line = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(req);
	if (!line)
		return MHD_NO;
	pthread_mutex_lock(&c->run);
	char err[512] = "";
	struct sess *ss = e2b_sess(q->e, q->x);
	int rc = ss ? kernel_ensure(q, ss->ws, c, err, sizeof(err)) : -1;
	if (rc == 0) {
		size_t n = strlen(line);
		line[n] = '\n';
		rc = ward_session_proc_stdin(ss->ws, c->pid, line, n + 1, false, err, sizeof(err));
	}
	free(line);
	if (ss)
		sess_unref(q->s, ss);
	if (rc < 0) {
		pthread_mutex_unlock(&c->run);
		if (!ss)
			return ci_error(q, 502, "the sandbox was killed or timed out");
		return ci_error(q, 500, "cannot start the kernel (python3 in the sandbox): %s", err);
	}
	struct exec_st *st = calloc(1, sizeof(*st));
	if (!st) {
		pthread_mutex_unlock(&c->run);
		return MHD_NO;
	}
	st->e = q->e;
	st->x = q->x;
	q->x = NULL;
	st->c = c;
	st->last = now_mono();
	st->deadline = st->last + q->s->o.max.timeout_s;
	return cx_stream_start(q, "application/x-ndjson", exec_produce, st, exec_free);
}

/* ---- contexts ---- */

enum MHD_Result ci_ctx_create(struct ereq *q)
{
	json_t *m = json_loadb(q->len ? q->body : "{}", q->len ? q->len : 2, 0, NULL);
	json_t *lang = json_object_get(m, "language"), *cwd = json_object_get(m, "cwd");
	if (lang && !json_is_null(lang) && (!json_is_string(lang) || strcmp(json_string_value(lang), "python") != 0)) {
		json_decref(m);
		return ci_error(q, 400, "language: only python is offered here");
	}
	char w[256];
	snprintf(w, sizeof(w), "%s", json_is_string(cwd) && json_string_value(cwd)[0] == '/' ? json_string_value(cwd)
											     : E2B_HOME);
	json_decref(m);
	struct e2b_ctx *c = ctx_new(q->e, q->x, NULL, w);
	if (!c)
		return ci_error(q, 429, "too many code contexts in this sandbox (%d at once): remove one",
				E2B_MAX_CONTEXTS);
	return e2b_answer_json(q, 200, ctx_json(c));
}

enum MHD_Result ci_ctx_list(struct ereq *q)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&q->e->lock);
	for (struct e2b_ctx *c = q->x->ctxs; c; c = c->next)
		if (c->id[0])
			json_array_append_new(arr, ctx_json(c));
	pthread_mutex_unlock(&q->e->lock);
	return e2b_answer_json(q, 200, arr);
}

/* Kill c's kernel now (a running execution sees it die and ends). */
static void kernel_kill(struct ereq *q, struct e2b_ctx *c)
{
	int pid = c->pid;
	struct sess *ss = e2b_sess(q->e, q->x);
	if (ss && pid > 0)
		ward_session_proc_signal(ss->ws, pid, SIGKILL, NULL, 0);
	if (ss)
		sess_unref(q->s, ss);
}

enum MHD_Result ci_ctx_delete(struct ereq *q)
{
	struct e2b_ctx *c = ctx_find(q->e, q->x, q->arg);
	if (!c)
		return ci_error(q, 404, "Context %s not found", q->arg);
	kernel_kill(q, c);
	pthread_mutex_lock(&c->run);
	c->pid = 0;
	pthread_mutex_lock(&q->e->lock);
	c->id[0] = 0;
	pthread_mutex_unlock(&q->e->lock);
	pthread_mutex_unlock(&c->run);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

enum MHD_Result ci_ctx_restart(struct ereq *q)
{
	struct e2b_ctx *c = ctx_find(q->e, q->x, q->arg);
	if (!c)
		return ci_error(q, 404, "Context %s not found", q->arg);
	kernel_kill(q, c);
	pthread_mutex_lock(&c->run);
	c->pid = 0; /* the next execution starts a fresh kernel */
	pthread_mutex_unlock(&c->run);
	return e2b_answer(q, 204, NULL, NULL, 0);
}
