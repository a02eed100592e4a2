/* e2b_connect.c — the Connect protocol as E2B's SDK speaks it (JSON
 * messages: unary as plain application/json, server streams as
 * application/connect+json envelopes ending with an end-stream envelope),
 * and envd's process.Process service on a session's background processes.
 *
 * Every command is a background process of the session (the SDK tells
 * foreground from background only on its side): it outlives its stream and
 * dies at its deadline (Connect-Timeout-Ms, which ward enforces as the
 * process's timeout: its whole tree; none, or one past --max-timeout, is
 * --max-timeout, and its CPU is --max-cpu's), or with the session.  A stream reads
 * its output by offsets (ward_session_proc_output), so Connect(pid)
 * re-attaches from the start of what is kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"
#include "wire/base64.h"

#define MAX_ARGS 4096
#define MAX_ENVS 1024

/* ---- framing ---- */

json_t *cx_unwrap(const char *body, size_t len, char *err, size_t errlen)
{
	if (len < 5) {
		snprintf(err, errlen,
		         "the body is not a Connect envelope (5 bytes of flags and length, then the message)");
		return NULL;
	}
	const unsigned char *b = (const unsigned char *)body;
	uint32_t n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if (b[0] != 0) {
		snprintf(err, errlen, "envelope flags 0x%02x: send one uncompressed message (flags 0)", b[0]);
		return NULL;
	}
	if ((size_t)n != len - 5) {
		snprintf(err, errlen, "the envelope says %u bytes but %zu follow: send exactly one message", n,
		         len - 5);
		return NULL;
	}
	json_error_t je;
	json_t *v = json_loadb(body + 5, n, 0, &je);
	if (!json_is_object(v)) {
		json_decref(v);
		snprintf(err, errlen, "the message is not a JSON object: %s", je.text);
		return NULL;
	}
	return v;
}

bool cx_frame(char **buf, size_t *len, unsigned flags, const char *json, size_t n)
{
	char *b = realloc(*buf, *len + 5 + n);
	if (!b)
		return false;
	unsigned char *h = (unsigned char *)b + *len;
	h[0] = (unsigned char)flags;
	h[1] = (unsigned char)(n >> 24);
	h[2] = (unsigned char)(n >> 16);
	h[3] = (unsigned char)(n >> 8);
	h[4] = (unsigned char)n;
	memcpy(b + *len + 5, json, n);
	*buf = b;
	*len += 5 + n;
	return true;
}

/* A message frame of v (taken). */
static bool frame_json(char **buf, size_t *len, unsigned flags, json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	if (!t)
		return false;
	bool ok = cx_frame(buf, len, flags, t, strlen(t));
	free(t);
	return ok;
}

/* The end-stream frame: {} or {"error": {"code", "message"}}. */
static bool frame_end(char **buf, size_t *len, const char *code, const char *msg)
{
	json_t *v = code ? json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg) : json_object();
	return frame_json(buf, len, 0x02, v);
}

static unsigned code_status(const char *code)
{
	static const struct {
		const char *c;
		unsigned st;
	} map[] = {{"canceled", 499},           {"invalid_argument", 400},    {"deadline_exceeded", 504},
	           {"not_found", 404},          {"already_exists", 409},      {"permission_denied", 403},
	           {"resource_exhausted", 429}, {"failed_precondition", 400}, {"unimplemented", 501},
	           {"unavailable", 503},        {"unauthenticated", 401}};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].c, code) == 0)
			return map[i].st;
	return 500;
}

enum MHD_Result cx_error(struct ereq *q, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->message, sizeof(q->message), fmt, ap);
	va_end(ap);
	return e2b_answer_json(q, code_status(code), json_pack("{s:s,s:s}", "code", code, "message", q->message));
}

const char *cx_code(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "not_found";
	case -EEXIST:
		return "already_exists";
	case -EACCES:
	case -EPERM:
	case -ELOOP:
	case -EXDEV:
		return "permission_denied";
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG:
	case -EAGAIN:
		return "resource_exhausted";
	case -EINVAL:
	case -EISDIR:
	case -ENOTDIR:
	case -ENOTEMPTY:
		return "invalid_argument";
	case -ETIMEDOUT:
		return "deadline_exceeded";
	case -ESRCH:
		return "unavailable";
	default:
		return "internal";
	}
}

json_t *cx_unary_in(struct ereq *q, enum MHD_Result *rc)
{
	json_error_t je;
	json_t *v = json_loadb(q->len ? q->body : "{}", q->len ? q->len : 2, 0, &je);
	if (!json_is_object(v)) {
		json_decref(v);
		*rc = cx_error(q, "invalid_argument", "the body is not a JSON object: %s", je.text);
		return NULL;
	}
	return v;
}

enum MHD_Result cx_unary_ok(struct ereq *q, json_t *v)
{
	return e2b_answer_json(q, 200, v ? v : json_object());
}

long long cx_timeout_ms(struct ereq *q)
{
	const char *t = e2b_header(q, "Connect-Timeout-Ms");
	if (!t)
		return 0;
	size_t n = strlen(t);
	if (n == 0 || n > 10 || strspn(t, "0123456789") != n)
		return -1;
	return atoll(t);
}

/* ---- streams ---- */

struct cx_stream {
	struct server *s;
	cx_produce produce;
	void *st;
	void (*st_free)(void *);
	char *buf;
	size_t len, pos;
	bool done;
	struct park park; /* its connection, parked while there is nothing to send */
	/* its sandbox's session wakes it (ward_session_notify) when a
	 * background process has something new: parked on wake, it answers at
	 * once, not at the ticker's next tick; -1: ticks only */
	int wake;
	struct e2b *e;
	struct e2b_sbx *watch; /* held by st, which is freed after it */
};

/* MHD's reader, on an I/O thread: it never waits; with nothing to send it
 * parks the connection (the ticker looks again when its session wakes it,
 * else every 0.1 s). */
static ssize_t stream_read(void *cls, uint64_t off, char *out, size_t max)
{
	struct cx_stream *c = cls;
	(void)off;
	while (c->pos == c->len) {
		free(c->buf);
		c->buf = NULL;
		c->len = c->pos = 0;
		if (c->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		uint64_t woken;
		if (c->wake >= 0 && read(c->wake, &woken, sizeof(woken)) < 0) {
			/* EAGAIN: not woken since it last looked (a tick) */
		}
		int k = c->produce(c->st, &c->buf, &c->len);
		if (k == CX_WAIT && !c->len)
			return conn_park(c->s, &c->park) ? 0 : MHD_CONTENT_READER_END_OF_STREAM;
		c->done = k == CX_END;
		if (c->done && !c->len)
			return MHD_CONTENT_READER_END_OF_STREAM;
	}
	size_t k = c->len - c->pos < max ? c->len - c->pos : max;
	memcpy(out, c->buf + c->pos, k);
	c->pos += k;
	return (ssize_t)k;
}

static void stream_free(void *cls)
{
	struct cx_stream *c = cls;
	if (c->wake >= 0) {
		struct sess *ss = e2b_sess(c->e, c->watch);
		if (ss) { /* else its session ended, and with it the duplicate */
			ward_session_unnotify(ss->ws, c);
			sess_unref(c->e->s, ss);
		}
		close(c->wake);
	}
	if (c->st_free)
		c->st_free(c->st);
	free(c->buf);
	free(c);
}

/* c woken by watch's session (c->wake), when it has one: by process pid's
 * output and end (0: any of its processes'). */
static void stream_watch(struct cx_stream *c, struct ereq *q, struct e2b_sbx *watch, int pid)
{
	c->wake = -1;
	struct sess *ss = watch ? e2b_sess(q->e, watch) : NULL;
	if (!ss)
		return;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd >= 0 && ward_session_notify(ss->ws, fd, c, pid) == 0) {
		c->wake = fd;
		c->e = q->e;
		c->watch = watch;
	} else if (fd >= 0)
		close(fd); /* the ticks alone */
	sess_unref(q->s, ss);
}

enum MHD_Result cx_stream_start(struct ereq *q, const char *ctype, cx_produce produce, void *st,
                                void (*st_free)(void *), struct e2b_sbx *watch, int pid)
{
	struct cx_stream *c = calloc(1, sizeof(*c));
	if (!c) {
		st_free(st);
		return MHD_NO;
	}
	c->s = q->s;
	c->produce = produce;
	c->st = st;
	c->st_free = st_free;
	c->park.conn = q->c;
	stream_watch(c, q, watch, pid);
	c->park.fd = c->wake; /* -1: looked at on the ticks */
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32768, stream_read, c, stream_free);
	if (!r) {
		stream_free(c);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	q->code = 200;
	q->r->code = 200;
	q->r->stream = r; /* sent by the I/O threads when the run is done */
	/* a stream lasts as long as what it follows (it ends itself: its
	 * deadline, its sandbox's end); a client that stops reading it is
	 * MHD's idle timeout's */
	conn_set_deadline(q->s, q->c, 0);
	return MHD_YES;
}

/* ---- process.Process ---- */

struct pstream {
	struct e2b *e;
	struct e2b_sbx *x; /* held */
	int pid;
	uint64_t off[2];
	int phase;                    /* 0: start to send, 1: output, 2: over */
	double last;                  /* when a frame last went out */
	char *early_code, *early_msg; /* an end-stream error instead of a start */
	int fd;                       /* its connection: did the client leave? */
};

static void pstream_free(void *p)
{
	struct pstream *ps = p;
	e2b_sbx_put(ps->e, ps->x);
	free(ps->early_code);
	free(ps->early_msg);
	free(ps);
}

/* The end event of a process that is over, envd's words. */
static json_t *end_event(struct ward_session *ws, int pid, int code)
{
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	enum ward_status st = WARD_ST_OK;
	if (ward_session_procs(ws, &p, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (p[i].id == pid && !p[i].running)
				st = p[i].status;
	ward_session_procs_free(p, n);
	char status[64];
	bool exited = st == WARD_ST_OK || st == WARD_ST_NONZERO;
	if (exited)
		snprintf(status, sizeof(status), "exit status %d", code);
	else {
		int sig = st == WARD_ST_SIGNAL && code > 128 ? code - 128 : SIGKILL;
		snprintf(status, sizeof(status), "signal: %s",
		         sig == SIGKILL   ? "killed"
		         : sig == SIGTERM ? "terminated"
		         : sig == SIGINT  ? "interrupt"
		                          : "other");
		code = -1;
	}
	json_t *end = json_pack("{s:i,s:b,s:s}", "exitCode", code, "exited", exited, "status", status);
	if (code != 0)
		json_object_set_new(end, "error", json_string(status));
	return json_pack("{s:{s:o}}", "event", "end", end);
}

static bool data_frame(char **buf, size_t *len, const char *which, const struct ward_stream *st)
{
	char *b = base64_encode((const unsigned char *)st->data, st->len);
	if (!b)
		return false;
	bool ok = frame_json(buf, len, 0, json_pack("{s:{s:{s:s}}}", "event", "data", which, b));
	free(b);
	return ok;
}

static int pstream_over(struct pstream *ps, char **buf, size_t *len, const char *code, const char *msg)
{
	ps->phase = 2;
	frame_end(buf, len, code, msg);
	return CX_END;
}

static int pstream_produce(void *p, char **buf, size_t *len)
{
	struct pstream *ps = p;
	if (ps->early_code)
		return pstream_over(ps, buf, len, ps->early_code, ps->early_msg);
	if (ps->phase == 0) {
		ps->phase = 1;
		ps->last = now_mono();
		frame_json(buf, len, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", ps->pid));
		return CX_MORE;
	}
	if (ps->phase == 2)
		return CX_END;
	if (ps->e->stopping)
		return pstream_over(ps, buf, len, "unavailable", "the server is stopping");
	struct sess *ss = e2b_sess(ps->e, ps->x);
	if (!ss)
		return pstream_over(ps, buf, len, "unavailable", "the sandbox was killed or timed out");
	struct ward_stream st[2];
	memset(st, 0, sizeof(st));
	bool exited = false;
	int code = 0;
	char err[256] = "";
	int rc = ward_session_proc_output(ss->ws, ps->pid, ps->off[0], ps->off[1], 0, &st[0], &st[1], &exited, &code,
	                                  err, sizeof(err));
	json_t *end = NULL;
	bool more = st[0].len == WARD_SESSION_OUTPUT_CHUNK || st[1].len == WARD_SESSION_OUTPUT_CHUNK;
	if (rc == 0 && exited && !more)
		end = end_event(ss->ws, ps->pid, code);
	sess_unref(ps->e->s, ss);
	if (rc < 0) {
		free(st[0].data);
		free(st[1].data);
		return pstream_over(ps, buf, len, rc == -ESRCH ? "unavailable" : "not_found",
		                    err[0] ? err : "no such process");
	}
	static const char *const names[2] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		if (st[i].len)
			data_frame(buf, len, names[i], &st[i]);
		if (st[i].bytes > ps->off[i])
			ps->off[i] = st[i].bytes;
		free(st[i].data);
	}
	if (end) {
		frame_json(buf, len, 0, end);
		return pstream_over(ps, buf, len, NULL, NULL);
	}
	double t = now_mono();
	if (!*len && e2b_client_gone(ps->fd))
		return pstream_over(ps, buf, len, "canceled", "the client left"); /* the command lives on */
	if (!*len && t - ps->last >= E2B_KEEPALIVE_S)
		frame_json(buf, len, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
	if (!*len)
		return CX_WAIT;
	ps->last = t;
	return CX_MORE;
}

static enum MHD_Result pstream_begin(struct ereq *q, int pid, const char *code, const char *msg)
{
	struct pstream *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return MHD_NO;
	ps->e = q->e;
	ps->x = q->x;
	q->x = NULL; /* the stream holds it now */
	ps->pid = pid;
	ps->fd = e2b_conn_fd(q);
	if (code) {
		ps->early_code = strdup(code);
		ps->early_msg = strdup(msg);
	}
	return cx_stream_start(q, "application/connect+json", pstream_produce, ps, pstream_free, ps->x, pid);
}

/* "Basic base64(user:)" names user or root (both run as the sandbox's one
 * user); another is refused. */
static bool user_ok(struct ereq *q, char *who, size_t n)
{
	const char *a = e2b_header(q, "Authorization");
	snprintf(who, n, "user");
	if (!a)
		return true;
	if (strncasecmp(a, "Basic ", 6) != 0)
		return false;
	size_t len = 0;
	unsigned char *d = base64_decode(a + 6, strlen(a + 6), &len);
	if (!d)
		return false;
	size_t k = 0;
	while (k < len && d[k] != ':')
		k++;
	snprintf(who, n, "%.*s", (int)(k < 32 ? k : 32), (const char *)d);
	free(d);
	return strcmp(who, "user") == 0 || strcmp(who, "root") == 0;
}

/* The request's process: argv, env, cwd from {"process": {...}}. */
struct pcfg {
	char *argv[MAX_ARGS + 1];
	char *env[MAX_ENVS + 1];
	size_t nargv, nenv;
	char cwd[4096];
};

static void pcfg_free(struct pcfg *c)
{
	for (size_t i = 0; i < c->nenv; i++)
		free(c->env[i]);
}

static bool pcfg_read(json_t *proc, struct pcfg *c, char *err, size_t n)
{
	json_t *cmd = json_object_get(proc, "cmd");
	if (!json_is_string(cmd) || !*json_string_value(cmd)) {
		snprintf(err, n, "process.cmd: give the program to run");
		return false;
	}
	c->argv[c->nargv++] = (char *)json_string_value(cmd);
	json_t *args = json_object_get(proc, "args"), *v;
	size_t i;
	json_array_foreach(args, i, v)
	{
		if (!json_is_string(v) || c->nargv == MAX_ARGS) {
			snprintf(err, n, "process.args: at most %d strings", MAX_ARGS);
			return false;
		}
		c->argv[c->nargv++] = (char *)json_string_value(v);
	}
	const char *k;
	json_t *envs = json_object_get(proc, "envs");
	json_object_foreach(envs, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '=') || c->nenv == MAX_ENVS ||
		    asprintf(&c->env[c->nenv], "%s=%s", k, json_string_value(v)) < 0) {
			snprintf(err, n, "process.envs: at most %d, each a name without '=' and a string", MAX_ENVS);
			return false;
		}
		c->nenv++;
	}
	json_t *cwd = json_object_get(proc, "cwd");
	const char *w = json_is_string(cwd) && *json_string_value(cwd) ? json_string_value(cwd) : E2B_HOME;
	if (w[0] == '/')
		snprintf(c->cwd, sizeof(c->cwd), "%s", w);
	else
		snprintf(c->cwd, sizeof(c->cwd), "%s/%s", E2B_HOME, w);
	/* the shell's pwd says the name asked for (/home/user), not /work */
	if (c->nenv < MAX_ENVS && asprintf(&c->env[c->nenv], "PWD=%s", c->cwd) >= 0)
		c->nenv++;
	return true;
}

/* Start it: its pid, or an error code and message. */
static int spawn(struct ereq *q, struct pcfg *c, bool stdin_pipe, double timeout_s, const char **code, char *err,
                 size_t n)
{
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss) {
		*code = "unavailable";
		snprintf(err, n, "the sandbox was killed or timed out");
		return -1;
	}
	struct ward_request r;
	ward_request_init(&r);
	r.argv = c->argv;
	r.env = c->env;
	r.isolation = WARD_ISO_SYSTEM;
	/* within the runner's maxima (SPEC §10), as every request's: no
	 * deadline, or one beyond --max-timeout, is --max-timeout; its CPU is
	 * --max-cpu's */
	const struct ward_limits *max = &q->s->o.max;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = timeout_s > 0 && timeout_s < max->timeout_s ? timeout_s : max->timeout_s;
	r.limits.cpu_s = max->cpu_s > 0 ? max->cpu_s : max->timeout_s;
	/* what is kept of each stream while its reader lags (the stream
	 * reads as it comes): each process reserves twice this of the
	 * session's --session-bg-output */
	r.limits.output_limit = E2B_OUTPUT_KEPT;
	int pid = 0;
	int rc = ward_session_spawn(ss->ws, &r, c->cwd, stdin_pipe, &pid, err, n);
	sess_count_exec(q->s, ss, rc < 0 ? WARD_ST_ERROR : WARD_ST_OK);
	sess_unref(q->s, ss);
	if (rc < 0) {
		*code = rc == -EAGAIN ? "resource_exhausted" : rc == -ESRCH ? "unavailable" : "invalid_argument";
		return -1;
	}
	return pid;
}

enum MHD_Result px_start(struct ereq *q)
{
	char err[600] = "";
	json_t *m = cx_unwrap(q->body ? q->body : "", q->len, err, sizeof(err));
	if (!m)
		return pstream_begin(q, 0, "invalid_argument", err);
	struct pcfg *c = calloc(1, sizeof(*c));
	char who[40];
	const char *code = NULL;
	long long ms = cx_timeout_ms(q);
	int pid = -1;
	if (!c) {
		json_decref(m);
		return MHD_NO;
	}
	if (!user_ok(q, who, sizeof(who))) {
		code = "unauthenticated";
		snprintf(err, sizeof(err),
		         "user '%s' does not exist in this sandbox: use user (or root, which runs as "
		         "that same user)",
		         who);
	} else if (ms < 0) {
		code = "invalid_argument";
		snprintf(err, sizeof(err), "Connect-Timeout-Ms: give at most 10 digits of milliseconds");
	} else if (ms == 0 && e2b_header(q, "Connect-Timeout-Ms")) {
		code = "deadline_exceeded";
		snprintf(err, sizeof(err), "Connect-Timeout-Ms 0: the deadline had passed before the command started");
	} else if (!pcfg_read(json_object_get(m, "process"), c, err, sizeof(err))) {
		code = "invalid_argument";
	} else {
		/* no deadline: --max-timeout (spawn) */
		double t = ms > 0 ? (double)ms / 1000.0 : 0;
		pid = spawn(q, c, json_is_true(json_object_get(m, "stdin")), t, &code, err, sizeof(err));
	}
	pcfg_free(c);
	free(c);
	json_decref(m);
	return pstream_begin(q, pid, pid > 0 ? NULL : code, err);
}

/* {"process": {"pid": N}} (or a tag: not kept here) */
static int pid_of(json_t *m)
{
	json_t *p = json_object_get(json_object_get(m, "process"), "pid");
	return json_is_integer(p) && json_integer_value(p) > 0 && json_integer_value(p) < INT32_MAX
	               ? (int)json_integer_value(p)
	               : -1;
}

enum MHD_Result px_connect(struct ereq *q)
{
	char err[600] = "";
	json_t *m = cx_unwrap(q->body ? q->body : "", q->len, err, sizeof(err));
	if (!m)
		return pstream_begin(q, 0, "invalid_argument", err);
	int pid = pid_of(m);
	json_decref(m);
	if (pid < 0)
		return pstream_begin(q, 0, "invalid_argument", "process.pid: give the pid of a process");
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss)
		return pstream_begin(q, 0, "unavailable", "the sandbox was killed or timed out");
	struct ward_stream o, e;
	memset(&o, 0, sizeof(o));
	memset(&e, 0, sizeof(e));
	int rc = ward_session_proc_output(ss->ws, pid, UINT64_MAX, UINT64_MAX, 0, &o, &e, NULL, NULL, err, sizeof(err));
	sess_unref(q->s, ss);
	free(o.data);
	free(e.data);
	if (rc < 0)
		return pstream_begin(q, 0, "not_found", "no such process: it never ran here, or was forgotten");
	return pstream_begin(q, pid, NULL, NULL);
}

enum MHD_Result px_list(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m = cx_unary_in(q, &rc);
	if (!m)
		return rc;
	json_decref(m);
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss)
		return cx_error(q, "unavailable", "the sandbox was killed or timed out");
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	int r = ward_session_procs(ss->ws, &p, &n);
	sess_unref(q->s, ss);
	if (r < 0)
		return cx_error(q, cx_code(r), "cannot list the processes");
	/* the code contexts' kernels are the interpreter's, not commands */
	int kernels[64];
	size_t nk = 0;
	pthread_mutex_lock(&q->e->lock);
	for (struct e2b_ctx *c = q->x->ctxs; c && nk < 64; c = c->next)
		if (c->pid > 0)
			kernels[nk++] = c->pid;
	pthread_mutex_unlock(&q->e->lock);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		bool kernel = false;
		for (size_t k = 0; k < nk; k++)
			kernel |= kernels[k] == p[i].id;
		if (!p[i].running || kernel)
			continue;
		json_t *args = json_array();
		const char *cmd = p[i].argv && p[i].argv[0] ? p[i].argv[0] : "";
		for (size_t k = 1; p[i].argv && p[i].argv[0] && p[i].argv[k]; k++)
			json_array_append_new(args, json_string(p[i].argv[k]));
		json_array_append_new(arr, json_pack("{s:i,s:{s:s,s:o,s:{},s:s}}", "pid", p[i].id, "config", "cmd", cmd,
		                                     "args", args, "envs", "cwd", E2B_HOME));
	}
	ward_session_procs_free(p, n);
	return cx_unary_ok(q, json_pack("{s:o}", "processes", arr));
}

static enum MHD_Result stdin_call(struct ereq *q, bool close_it)
{
	enum MHD_Result rc;
	json_t *m = cx_unary_in(q, &rc);
	if (!m)
		return rc;
	int pid = pid_of(m);
	unsigned char *data = NULL;
	size_t len = 0;
	if (!close_it) {
		json_t *in = json_object_get(json_object_get(m, "input"), "stdin");
		if (in && json_is_string(in)) {
			data = base64_decode(json_string_value(in), json_string_length(in), &len);
			if (!data) {
				json_decref(m);
				return cx_error(q, "invalid_argument", "input.stdin: give base64");
			}
		}
	}
	json_decref(m);
	if (pid < 0) {
		free(data);
		return cx_error(q, "invalid_argument", "process.pid: give the pid of a process");
	}
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss) {
		free(data);
		return cx_error(q, "unavailable", "the sandbox was killed or timed out");
	}
	char err[512] = "";
	int r = ward_session_proc_stdin(ss->ws, pid, data ? data : (unsigned char *)"", len, close_it, err,
	                                sizeof(err));
	sess_unref(q->s, ss);
	free(data);
	if (r < 0)
		return cx_error(q,
		                r == -EINVAL  ? "failed_precondition"
		                : r == -EPIPE ? "failed_precondition"
		                              : cx_code(r),
		                "%s", err[0] ? err : strerror(-r));
	return cx_unary_ok(q, NULL);
}

enum MHD_Result px_send_input(struct ereq *q)
{
	return stdin_call(q, false);
}

enum MHD_Result px_close_stdin(struct ereq *q)
{
	return stdin_call(q, true);
}

enum MHD_Result px_send_signal(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m = cx_unary_in(q, &rc);
	if (!m)
		return rc;
	int pid = pid_of(m);
	json_t *sg = json_object_get(m, "signal");
	int sig = SIGKILL;
	if (json_is_string(sg) && strcmp(json_string_value(sg), "SIGNAL_SIGTERM") == 0)
		sig = SIGTERM;
	else if (json_is_integer(sg) && json_integer_value(sg) == 15)
		sig = SIGTERM;
	json_decref(m);
	if (pid < 0)
		return cx_error(q, "invalid_argument", "process.pid: give the pid of a process");
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss)
		return cx_error(q, "unavailable", "the sandbox was killed or timed out");
	/* only a running one: the SDK's kill() of an ended process is false */
	struct ward_stream o, e;
	memset(&o, 0, sizeof(o));
	memset(&e, 0, sizeof(e));
	bool exited = true;
	char err[512] = "";
	int r = ward_session_proc_output(ss->ws, pid, UINT64_MAX, UINT64_MAX, 0, &o, &e, &exited, NULL, err,
	                                 sizeof(err));
	free(o.data);
	free(e.data);
	if (r == 0 && !exited)
		r = ward_session_proc_signal(ss->ws, pid, sig, err, sizeof(err));
	else if (r == 0)
		r = -ENOENT;
	sess_unref(q->s, ss);
	if (r < 0)
		return cx_error(q, r == -ENOENT ? "not_found" : cx_code(r), "process %d: %s", pid,
		                r == -ENOENT ? "no such running process" : err);
	return cx_unary_ok(q, NULL);
}
