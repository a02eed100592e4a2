/* e2b_interp.c — the code interpreter's API (E2b-Sandbox-Port 49999):
 * POST /execute answers NDJSON as the code runs; a context is a kernel
 * process in the session, started on its first use, fed its requests
 * through its stdin pipe and read by offsets from its output.  One
 * execution at a time per context (its run lock); state lives in the
 * kernel, so it persists across runCode calls.
 *
 * Languages (SPEC §18), each a kernel of its own, embedded:
 *   python      ward_kernel.py (+ ward_charts.py): IPython's shell where the
 *               template has IPython, else a plain exec/eval loop;
 *   javascript, typescript   ward_kernel.js on the template's node;
 *   bash        ward_kernel.sh on the template's bash.
 * The Python and Node kernels speak a protocol: one JSON event a line on
 * their stdout, bracketed by __ready__ and __done__ lines of their own;
 * their stderr (what the code's children print) is forwarded raw, as
 * stderr events.  The bash kernel's stdout and stderr are the cell's own
 * output, raw, each ended by a marker line carrying the request's random
 * token.  A kernel says it is ready (or what it lacks) before the first
 * execution answers: a template without node or bash, or without the
 * TypeScript compiler, answers 400 with a JSON body naming what is missing.
 *
 * Bounds: a protocol line is kept up to PROTO_LINE_MAX (a longer one, or
 * one the session's kept window cut, is dropped and said in a stderr
 * event); the session keeps KERNEL_KEPT of a kernel's output while the
 * stream lags, and the kernel's pipes wait past that (output_waits_reader:
 * a client that reads slowly slows the kernel, never loses its output);
 * raw output is cut into events as it comes and never held beyond a
 * marker's length.
 *
 * Deadlines: the SDK aborts a runCode at its timeoutMs and closes the
 * connection.  The stream looks at its connection between reads of the
 * kernel (a peer that closed it is gone), and a call that finds the
 * context busy looks at once, so the next runCode after a timeout waits
 * for nothing but the interrupt; the stream also says {"type":"keepalive"}
 * (which the SDK skips) every KEEPALIVE_S.  The code is then interrupted
 * (SIGINT: the kernel and its state live on) or, when that does not end it
 * within INTERRUPT_S, the kernel is killed (the next call starts a fresh
 * one: restartCodeContext's state).  An execution that runs past
 * --max-timeout ends so too, with an error line. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_kernel.h"
#include "ward_charts_py.h"
#include "ward_kernel_js.h"
#include "ward_kernel_py.h"
#include "ward_kernel_sh.h"
#include "wire/utf8.h"

#define KEEPALIVE_S 2.0
#define READS_AT_ONCE 64 /* of a running execution's output, by one look that found only dropped bytes */
#define HOLD_S 10        /* a call waits this long for its context's running execution */
#define INTERRUPT_S 2.0
#define READY_S 30.0     /* a kernel's start, IPython's imports included */
#define MAX_CTX_TOTAL 64 /* contexts ever made in one sandbox (removed ones too) */
/* of a kernel's output, what the session keeps while the stream lags (two
 * streams of each of E2B_MAX_CONTEXTS kernels within a session's 64 MiB of
 * background output, with room left for its commands) */
#define KERNEL_KEPT (2u << 20)

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

/* 400 {"code", "message", "language", "missing"}: a language this template
 * (or this runner) does not give. */
static enum MHD_Result ci_missing(struct ereq *q, const char *lang, const char *missing, const char *msg)
{
	return e2b_answer_json(
		q, 400,
		json_pack("{s:i,s:s,s:s,s:s}", "code", 400, "message", msg, "language", lang, "missing", missing));
}

/* E2B's names for a language (its server's normalisation), NULL when ward
 * has no kernel for it. */
static const char *lang_norm(const char *asked)
{
	static const char *const names[][2] = {
		{"python", "python"}, {"python3", "python"},        {"js", "javascript"}, {"javascript", "javascript"},
		{"ts", "typescript"}, {"typescript", "typescript"}, {"bash", "bash"},
	};
	if (!asked || !*asked)
		return "python";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(asked, names[i][0]) == 0)
			return names[i][1];
	return NULL;
}

/* The language a request asks for: 0, or the 400 already answered. */
static int lang_of(struct ereq *q, json_t *lang, const char **out, enum MHD_Result *answered)
{
	*out = "python";
	if (!lang || json_is_null(lang))
		return 0;
	const char *l = json_is_string(lang) ? lang_norm(json_string_value(lang)) : NULL;
	if (l) {
		*out = l;
		return 0;
	}
	char msg[300];
	snprintf(msg, sizeof(msg),
	         "language '%.40s' has no kernel here: this runner offers python, js, ts and bash (each where the "
	         "template has python3, node, the TypeScript compiler or bash)",
	         json_is_string(lang) ? json_string_value(lang) : "?");
	*answered =
		ci_missing(q, json_is_string(lang) ? json_string_value(lang) : "?", "a kernel for the language", msg);
	return -1;
}

void ci_free_all(struct e2b_sbx *x)
{
	while (x->ctxs) {
		struct e2b_ctx *c = x->ctxs;
		x->ctxs = c->next;
		pthread_cond_destroy(&c->idle);
		free(c);
	}
}

/* c's one execution at a time, held from a call on a worker to its
 * stream's end on an I/O thread (so a flag, not a mutex): false when it
 * stayed busy for HOLD_S (a worker never waits longer). */
static bool ctx_hold(struct e2b *e, struct e2b_ctx *c)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HOLD_S;
	pthread_mutex_lock(&e->lock);
	int rc = 0;
	while (c->busy && rc == 0)
		rc = pthread_cond_timedwait(&c->idle, &e->lock, &until);
	bool held = !c->busy;
	if (held)
		c->busy = true;
	pthread_mutex_unlock(&e->lock);
	return held;
}

static bool ctx_try(struct e2b *e, struct e2b_ctx *c)
{
	pthread_mutex_lock(&e->lock);
	bool held = !c->busy;
	c->busy = true;
	pthread_mutex_unlock(&e->lock);
	return held;
}

static void ctx_let(struct e2b *e, struct e2b_ctx *c)
{
	pthread_mutex_lock(&e->lock);
	c->busy = false;
	memcpy(c->said, c->kind, sizeof(c->said));
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&e->lock);
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

static struct e2b_ctx *ctx_new(struct e2b *e, struct e2b_sbx *x, const char *id, const char *lang, const char *cwd)
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
		snprintf(c->lang, sizeof(c->lang), "%s", lang);
		c->client = -1;
		pthread_cond_init(&c->idle, NULL);
		c->next = x->ctxs;
		x->ctxs = c;
	}
	pthread_mutex_unlock(&e->lock);
	return c;
}

/* A language's default context (E2B's server makes one per language). */
static struct e2b_ctx *ctx_default(struct e2b *e, struct e2b_sbx *x, const char *lang)
{
	char id[40];
	if (strcmp(lang, "python") == 0)
		snprintf(id, sizeof(id), "default");
	else
		snprintf(id, sizeof(id), "default-%s", lang);
	struct e2b_ctx *c = ctx_find(e, x, id);
	return c ? c : ctx_new(e, x, id, lang, E2B_HOME);
}

static json_t *ctx_json(const struct e2b_ctx *c)
{
	return json_pack("{s:s,s:s,s:s}", "id", c->id, "language", c->lang, "cwd", c->cwd);
}

/* ---- starting a kernel ---- */

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

enum { K_OK = 0, K_FAIL = -1, K_MISSING = -2 };

/* What a language's kernel needs of the template, for the 400. */
static const char *needs(const char *lang)
{
	if (strcmp(lang, "python") == 0)
		return "python3";
	if (strcmp(lang, "bash") == 0)
		return "bash";
	return "node (nodejs)";
}

/* c's kernel, started when it has none, and ready (held: ctx_hold): K_OK;
 * K_MISSING with what the template lacks in err; K_FAIL with why. */
static int kernel_ensure(struct ereq *q, struct e2b_ctx *c, char *err, size_t n)
{
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss) {
		snprintf(err, n, "the sandbox was killed or timed out");
		return K_FAIL;
	}
	bool alive = kernel_alive(ss->ws, c->pid);
	if (alive) {
		sess_unref(q->s, ss);
		return K_OK;
	}
	char *py[] = {"python3", "-u", "-c", (char *)ward_kernel_py, (char *)ward_charts_py, NULL};
	char *js[] = {"sh",
	              "-c",
	              "exec node -e \"$1\" \"$2\" 3>&1 1>&2",
	              "sh",
	              (char *)ward_kernel_js,
	              strcmp(c->lang, "typescript") == 0 ? "ts" : "js",
	              NULL};
	char *sh[] = {"bash", "--noprofile", "--norc", "-c", (char *)ward_kernel_sh, NULL};
	char pwd[300];
	snprintf(pwd, sizeof(pwd), "PWD=%s", c->cwd);
	char *env[] = {"MPLBACKEND=Agg", "PYTHONUNBUFFERED=1", pwd, NULL};
	struct ward_request r;
	ward_request_init(&r);
	r.argv = strcmp(c->lang, "python") == 0 ? py : is_bash(c) ? sh : js;
	r.env = env;
	r.isolation = WARD_ISO_SYSTEM;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = r.limits.cpu_s = 0; /* as long as the session */
	r.limits.output_limit = KERNEL_KEPT;
	r.output_waits_reader = true; /* its stream reads it at its ticks: a burst waits, never lost */
	int pid = 0;
	char cwd[300];
	snprintf(cwd, sizeof(cwd), "%s", c->cwd);
	int rc = ward_session_spawn(ss->ws, &r, cwd, true, &pid, err, n);
	sess_unref(q->s, ss);
	if (rc < 0)
		return K_FAIL;
	c->pid = pid;
	c->off[0] = c->off[1] = 0;
	c->kind[0] = 0;
	/* its first words: ready, or what it lacks, or its end */
	struct kread k = {.e = q->e, .x = q->x, .c = c};
	char *junk = NULL;
	size_t jl = 0;
	int code = -1;
	double until = now_mono() + READY_S;
	bool up = true;
	while (!k.ready && !k.missing[0] && (up = kernel_read(&k, 0.2, &junk, &jl, &code)) && now_mono() < until) {
		if (jl > 4096) { /* what it printed before its ready line: only the tail tells */
			memmove(junk, junk + jl - 2048, 2048);
			jl = 2048;
		}
	}
	free(k.pend);
	if (k.ready) {
		free(junk);
		return K_OK;
	}
	if (k.missing[0] || (!up && code == 127)) {
		snprintf(err, n, "%s", k.missing[0] ? k.missing : needs(c->lang));
		free(junk);
		rc = K_MISSING;
	} else {
		snprintf(err, n, "the %s kernel %s: %.300s", c->lang,
		         up ? "did not say it was ready within 30 s" : "ended as it started", junk ? junk : "");
		free(junk);
		rc = K_FAIL;
	}
	if (up) {
		ss = e2b_sess(q->e, q->x);
		if (ss) {
			ward_session_proc_signal(ss->ws, c->pid, SIGKILL, NULL, 0);
			sess_unref(q->s, ss);
		}
	}
	c->pid = 0;
	return rc;
}

/* The answer to a kernel that would not start. */
static enum MHD_Result kernel_refused(struct ereq *q, struct e2b_ctx *c, int rc, const char *err)
{
	if (rc == K_MISSING) {
		char msg[500];
		snprintf(msg, sizeof(msg), "language %s needs %s in the sandbox, and this template (%s) has none",
		         c->lang, err, q->x->tmpl);
		return ci_missing(q, c->lang, err, msg);
	}
	if (strstr(err, "killed or timed out"))
		return ci_error(q, 502, "%s", err);
	return ci_error(q, 500, "cannot start the %s kernel: %s", c->lang, err);
}

/* ---- POST /execute ---- */

struct exec_st {
	struct kread k;
	int fd; /* its connection */
	bool said, over;
	double last;
	double deadline; /* --max-timeout from its start */
};

/* Interrupt the running execution (once: a second SIGINT could land in
 * the first one's handling); seen_by, when its client left, for the log. */
static void interrupt(struct kread *k, const char *seen_by)
{
	if (__atomic_exchange_n(&k->c->intr, 1, __ATOMIC_SEQ_CST))
		return;
	struct sess *ss = e2b_sess(k->e, k->x);
	if (!ss)
		return;
	int pid = k->c->pid;
	if (pid > 0 && ward_session_proc_signal(ss->ws, pid, SIGINT, NULL, 0) == 0 && seen_by)
		log_event(k->e->s, "e2b-interrupt",
		          "sandbox %s context %s: its client left (seen %s); the execution is interrupted", k->x->id,
		          k->c->id, seen_by);
	sess_unref(k->e->s, ss);
}

/* One look at the kernel's output (never waiting: CX_WAIT when it has
 * nothing yet); a client that left interrupts the execution. */
static int exec_produce(void *p, char **buf, size_t *len)
{
	struct exec_st *st = p;
	if (st->over)
		return CX_END;
	if (!st->said && is_bash(st->k.c)) /* the Python and Node kernels count their own */
		kernel_add_line(buf, len,
		                json_pack("{s:s,s:I}", "type", "number_of_executions", "execution_count",
		                          (json_int_t)++st->k.c->execs));
	st->said = true;
	if (st->k.e->stopping) {
		st->over = true;
		return CX_END;
	}
	if (!st->k.finished && e2b_client_gone(st->fd))
		interrupt(&st->k, "by its stream");
	/* what it reads may say nothing (a line past the protocol's bound,
	 * dropped): read on at once while there is more, so that the kept
	 * window never overflows for want of a look; at most READS_AT_ONCE */
	bool alive = true;
	for (int i = 0; i < READS_AT_ONCE && alive && !*len && !st->k.finished; i++) {
		uint64_t was = st->k.c->off[0] + st->k.c->off[1];
		alive = kernel_read(&st->k, 0, buf, len, NULL);
		if (st->k.c->off[0] + st->k.c->off[1] == was)
			break;
	}
	if (!alive) {
		st->k.c->pid = 0;
		st->k.finished = true; /* nothing to interrupt */
		st->over = true;
		kernel_add_line(buf, len,
		                json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "KernelDied", "value",
		                          "the kernel ended (killed, out of memory, restarted, or the sandbox ended); "
		                          "the context starts a fresh one on its next call",
		                          "traceback", ""));
		return CX_END;
	}
	if (st->k.finished) {
		if (is_bash(st->k.c) && st->k.status != 0) {
			/* bash_kernel's error: no name, the exit status as its value */
			char v[16];
			snprintf(v, sizeof(v), "%d", st->k.status);
			kernel_add_line(buf, len,
			                json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "", "value", v,
			                          "traceback", ""));
		}
		st->over = true;
		return CX_END;
	}
	double t = now_mono();
	if (t >= st->deadline) { /* exec_free interrupts it */
		st->over = true;
		char msg[200];
		snprintf(msg, sizeof(msg), "the execution ran past the runner's --max-timeout (%g s): interrupted",
		         st->k.e->s->o.max.timeout_s);
		kernel_add_line(buf, len,
		                json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "TimeoutError", "value", msg,
		                          "traceback", ""));
		return CX_END;
	}
	if (!*len && t - st->last >= KEEPALIVE_S)
		kernel_add_line(buf, len, json_pack("{s:s}", "type", "keepalive"));
	if (!*len)
		return CX_WAIT;
	st->last = t;
	return CX_MORE;
}

/* An execution's end: a running one is interrupted (its kernel killed
 * when it does not end within INTERRUPT_S); the context is free. */
static void exec_finish(struct exec_st *st)
{
	struct kread *k = &st->k;
	if (!k->finished && k->c->pid > 0) {
		double until = now_mono() + INTERRUPT_S;
		while (!k->finished && now_mono() < until) {
			char *junk = NULL;
			size_t jl = 0;
			bool alive = kernel_read(k, 0.2, &junk, &jl, NULL);
			free(junk);
			if (!alive)
				break;
		}
		if (!k->finished) {
			struct sess *ss = e2b_sess(k->e, k->x);
			if (ss) {
				ward_session_proc_signal(ss->ws, k->c->pid, SIGKILL, NULL, 0);
				sess_unref(k->e->s, ss);
			}
			k->c->pid = 0;
		}
	}
	ctx_let(k->e, k->c);
	e2b_sbx_put(k->e, k->x);
	free(k->pend);
	free(st);
}

static void *exec_settle(void *p)
{
	struct exec_st *st = p;
	struct e2b *e = st->k.e;
	exec_finish(st);
	e2b_detached_done(e);
	return NULL;
}

bool e2b_detach(struct e2b *e, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&e->lock);
	e->settling++;
	pthread_mutex_unlock(&e->lock);
	int rc = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (rc != 0)
		e2b_detached_done(e);
	return rc == 0;
}

void e2b_detached_done(struct e2b *e)
{
	pthread_mutex_lock(&e->lock);
	e->settling--;
	pthread_cond_broadcast(&e->settled);
	pthread_mutex_unlock(&e->lock);
}

void ci_settle_all(struct e2b *e)
{
	pthread_mutex_lock(&e->lock);
	while (e->settling)
		pthread_cond_wait(&e->settled, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

/* The stream is over (done, or its client left), on an I/O thread, which
 * never waits: an execution still running is interrupted, and waited for
 * on a thread of its own (one per busy context at most). */
static void exec_free(void *p)
{
	struct exec_st *st = p;
	struct kread *k = &st->k;
	pthread_mutex_lock(&k->e->lock);
	k->c->client = -1;
	pthread_mutex_unlock(&k->e->lock);
	if (!k->finished && k->c->pid > 0) {
		interrupt(k, NULL);
		if (e2b_detach(k->e, exec_settle, st))
			return;
	}
	exec_finish(st); /* done, or no thread to spare: here */
}

/* 'V' in single quotes for a shell. */
static bool sh_quote(FILE *f, const char *v)
{
	fputc('\'', f);
	for (; *v; v++)
		if (*v == '\'')
			fputs("'\\''", f);
		else
			fputc(*v, f);
	return fputc('\'', f) != EOF;
}

static bool sh_name(const char *k)
{
	if (!*k || (*k >= '0' && *k <= '9'))
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

/* The request to a bash kernel: "TOKEN A B C\n" and the three parts. */
static char *bash_request(json_t *code, json_t *ev, const char *token, size_t *n, char *err, size_t en)
{
	char *pre = NULL, *post = NULL;
	size_t prel = 0, postl = 0;
	FILE *a = open_memstream(&pre, &prel), *b = open_memstream(&post, &postl);
	const char *k;
	json_t *v;
	bool ok = a && b;
	json_object_foreach(ev, k, v)
	{
		if (!ok)
			break;
		if (!sh_name(k) || !json_is_string(v)) {
			snprintf(err, en, "env_vars: '%.60s' is not a shell variable name with a string value", k);
			ok = false;
			break;
		}
		fprintf(a, "export %s=", k);
		sh_quote(a, json_string_value(v));
		fputc('\n', a);
		fprintf(b, "unset %s\n", k);
	}
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	char *out = NULL;
	size_t cl = json_string_length(code);
	const char *cs = json_string_value(code);
	if (ok && memchr(cs, 0, cl)) {
		snprintf(err, en, "code: bash cannot run a NUL byte");
		ok = false;
	}
	if (ok) {
		FILE *o = open_memstream(&out, n);
		if (o) {
			fprintf(o, "%s %zu %zu %zu\n", token, prel, cl, postl);
			fwrite(pre, 1, prel, o);
			fwrite(cs, 1, cl, o);
			fwrite(post, 1, postl, o);
			fclose(o);
		}
		if (!out)
			snprintf(err, en, "out of memory");
	}
	free(pre);
	free(post);
	return out;
}

/* The cell as the kernel reads it: bash's script with its end marker
 * (token, made here), else one JSON line; *n its length.  NULL with the
 * answer given in *answered. */
static char *cell_line(struct ereq *q, struct e2b_ctx *c, json_t *code, json_t *ev, char token[40], size_t *n,
                       enum MHD_Result *answered)
{
	char err[512] = "";
	char *line;
	if (is_bash(c)) {
		unsigned char b[16];
		if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
			*answered = ci_error(q, 500, "no random bytes for the cell's marker");
			return NULL;
		}
		for (size_t i = 0; i < sizeof(b); i++)
			sprintf(token + 2 * i, "%02x", b[i]);
		line = bash_request(code, ev, token, n, err, sizeof(err));
		if (!line)
			*answered = ci_error(q, 400, "%s", err);
		return line;
	}
	json_t *req = json_pack("{s:O,s:o}", "code", code, "env", json_is_object(ev) ? json_incref(ev) : json_object());
	line = req ? json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(req);
	if (!line) {
		*answered = MHD_NO;
		return NULL;
	}
	*n = strlen(line);
	line[(*n)++] = '\n'; /* over the NUL: the length says where it ends */
	return line;
}

/* c, held for this execution (ctx_hold): false when another holds it
 * past HOLD_S.  Busy: a timed-out runCode's stream whose client left is
 * interrupted now, not when its stream next looks. */
static bool take_context(struct ereq *q, struct e2b_ctx *c)
{
	if (!ctx_try(q->e, c)) {
		pthread_mutex_lock(&q->e->lock);
		int fd = c->client;
		pthread_mutex_unlock(&q->e->lock);
		if (e2b_client_gone(fd)) {
			struct kread k = {.e = q->e, .x = q->x, .c = c};
			interrupt(&k, "by the next call");
		}
		if (!ctx_hold(q->e, c))
			return false;
	}
	__atomic_store_n(&c->intr, 0, __ATOMIC_SEQ_CST);
	return true;
}

/* The execution's NDJSON stream, c held (exec_free lets it go). */
static enum MHD_Result exec_stream(struct ereq *q, struct e2b_ctx *c, const char *token)
{
	struct exec_st *st = calloc(1, sizeof(*st));
	if (!st) {
		ctx_let(q->e, c);
		return MHD_NO;
	}
	st->k.e = q->e;
	st->k.x = q->x;
	q->x = NULL;
	st->k.c = c;
	st->k.ready = true;
	st->last = now_mono();
	st->deadline = st->last + q->s->o.max.timeout_s;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(q->c, MHD_CONNECTION_INFO_CONNECTION_FD);
	st->fd = ci ? ci->connect_fd : -1;
	pthread_mutex_lock(&q->e->lock);
	c->client = st->fd;
	int kernel = c->pid; /* its output and end alone wake the stream (a kernel started again: the ticks) */
	pthread_mutex_unlock(&q->e->lock);
	snprintf(st->k.token, sizeof(st->k.token), "%s", token);
	return cx_stream_start(q, "application/x-ndjson", exec_produce, st, exec_free, st->k.x, kernel);
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
	json_t *ev = json_object_get(m, "env_vars");
	const char *lang = "python";
	enum MHD_Result answered = MHD_NO;
	if (!json_is_string(code)) {
		json_decref(m);
		return ci_error(q, 400, "code: give the code to run");
	}
	if (json_is_string(cid) && json_object_get(m, "language") && !json_is_null(json_object_get(m, "language"))) {
		json_decref(m);
		return ci_error(q, 400, "give context_id or language, not both");
	}
	if (lang_of(q, json_object_get(m, "language"), &lang, &answered) < 0) {
		json_decref(m);
		return answered;
	}
	struct e2b_ctx *c = NULL;
	if (json_is_string(cid)) {
		c = ctx_find(q->e, q->x, json_string_value(cid));
		if (!c) {
			char id[80]; /* the message's id, copied before the body it is in goes */
			snprintf(id, sizeof(id), "%.64s", json_string_value(cid));
			json_decref(m);
			return ci_error(q, 404, "Context %s not found", id);
		}
	} else if (!(c = ctx_default(q->e, q->x, lang))) {
		json_decref(m);
		return ci_error(q, 429, "too many code contexts in this sandbox: remove one");
	}
	char token[40] = "";
	size_t n = 0;
	char err[512] = "";
	char *line = cell_line(q, c, code, ev, token, &n, &answered);
	if (!line) {
		json_decref(m);
		return answered;
	}
	json_decref(m); /* an execution is a run of its owner's: admission counted it */
	if (!take_context(q, c)) {
		free(line);
		return ci_error(q, 429, "context %s runs another execution: retry when it ends", c->id);
	}
	int rc = kernel_ensure(q, c, err, sizeof(err));
	if (rc == K_OK) {
		struct sess *ss = e2b_sess(q->e, q->x);
		rc = ss ? ward_session_proc_stdin(ss->ws, c->pid, line, n, false, err, sizeof(err)) : -1;
		if (!ss)
			snprintf(err, sizeof(err), "the sandbox was killed or timed out");
		if (ss)
			sess_unref(q->s, ss);
	}
	free(line);
	if (rc != K_OK) {
		ctx_let(q->e, c);
		return kernel_refused(q, c, rc, err);
	}
	return exec_stream(q, c, token);
}

/* ---- contexts ---- */

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

enum MHD_Result ci_ctx_create(struct ereq *q)
{
	json_t *m = json_loadb(q->len ? q->body : "{}", q->len ? q->len : 2, 0, NULL);
	json_t *cwd = json_object_get(m, "cwd");
	const char *lang = "python";
	enum MHD_Result answered = MHD_NO;
	if (lang_of(q, json_object_get(m, "language"), &lang, &answered) < 0) {
		json_decref(m);
		return answered;
	}
	char w[256];
	snprintf(w, sizeof(w), "%s",
	         json_is_string(cwd) && json_string_value(cwd)[0] == '/' ? json_string_value(cwd) : E2B_HOME);
	json_decref(m);
	unsigned live = 0;
	pthread_mutex_lock(&q->e->lock);
	for (struct e2b_ctx *o = q->x->ctxs; o; o = o->next)
		live += o->id[0] != 0;
	pthread_mutex_unlock(&q->e->lock);
	if (live >= E2B_MAX_CONTEXTS)
		return ci_error(q, 429, "too many code contexts in this sandbox (%d at once): remove one",
		                E2B_MAX_CONTEXTS);
	/* its kernel first, on a record of its own: a language the template
	 * lacks is refused here and leaves no context behind */
	struct e2b_ctx k = {.client = -1};
	snprintf(k.lang, sizeof(k.lang), "%s", lang);
	snprintf(k.cwd, sizeof(k.cwd), "%s", w);
	char err[512] = "";
	int rc = kernel_ensure(q, &k, err, sizeof(err));
	if (rc != K_OK)
		return kernel_refused(q, &k, rc, err);
	struct e2b_ctx *c = ctx_new(q->e, q->x, NULL, lang, w);
	if (!c) {
		kernel_kill(q, &k);
		return ci_error(q, 429, "too many code contexts in this sandbox (%d at once): remove one",
		                E2B_MAX_CONTEXTS);
	}
	ctx_hold(q->e, c); /* new: nobody else has it */
	c->pid = k.pid;
	memcpy(c->off, k.off, sizeof(c->off));
	memcpy(c->kind, k.kind, sizeof(c->kind));
	ctx_let(q->e, c);
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

enum MHD_Result ci_ctx_delete(struct ereq *q)
{
	struct e2b_ctx *c = ctx_find(q->e, q->x, q->arg);
	if (!c)
		return ci_error(q, 404, "Context %s not found", q->arg);
	kernel_kill(q, c);
	if (!ctx_hold(q->e, c))
		return ci_error(q, 429, "context %s runs an execution: retry when it ends", c->id);
	pthread_mutex_lock(&q->e->lock);
	c->pid = 0;
	c->id[0] = 0;
	pthread_mutex_unlock(&q->e->lock);
	ctx_let(q->e, c);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

enum MHD_Result ci_ctx_restart(struct ereq *q)
{
	struct e2b_ctx *c = ctx_find(q->e, q->x, q->arg);
	if (!c)
		return ci_error(q, 404, "Context %s not found", q->arg);
	kernel_kill(q, c);
	if (!ctx_hold(q->e, c))
		return ci_error(q, 429, "context %s runs an execution: retry when it ends", c->id);
	c->pid = 0; /* the next execution starts a fresh kernel */
	ctx_let(q->e, c);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

/* GET /health (port 49999): {"status": "ok", "python": KIND}, KIND what
 * the default context's kernel says it is ("ipython 8.5.0", or "python"
 * for the plain kernel of a template without IPython).  Never waits for a
 * busy context (a worker held by a probe): its kernel runs, and said what
 * it is when it was last let go. */
enum MHD_Result ci_health(struct ereq *q)
{
	struct e2b_ctx *c = ctx_default(q->e, q->x, "python");
	if (!c)
		return ci_error(q, 429, "too many code contexts in this sandbox: remove one");
	char err[512] = "", kind[64];
	if (!ctx_try(q->e, c)) {
		pthread_mutex_lock(&q->e->lock);
		snprintf(kind, sizeof(kind), "%s", c->said[0] ? c->said : "python");
		pthread_mutex_unlock(&q->e->lock);
		return e2b_answer_json(q, 200, json_pack("{s:s,s:s}", "status", "ok", "python", kind));
	}
	int rc = kernel_ensure(q, c, err, sizeof(err));
	snprintf(kind, sizeof(kind), "%s", c->kind);
	ctx_let(q->e, c);
	if (rc != K_OK)
		return e2b_answer_json(q, 200, json_pack("{s:s,s:n,s:s}", "status", "ok", "python", "error", err));
	return e2b_answer_json(q, 200, json_pack("{s:s,s:s}", "status", "ok", "python", kind));
}
