/* session_json.c — the wire shapes of sessions (SPEC §11): the parts of a
 * POST /sessions and a session exec body that a request body does not
 * have (ttl_s, idle_s, limits.work_size_mb, cwd, background, "stdin":
 * "pipe"), a signal body, and the answers: a session, a directory listing,
 * the processes, an output event.
 *
 * Owns nothing.  Decoding checks types and shapes and names the field;
 * what values are allowed is sessions.c's to decide. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server.h"
#include "server/session_json.h"
#include "wire/jsonw.h"

static int bad(char *err, size_t n, const char *msg)
{
	snprintf(err, n, "%s", msg);
	return -1;
}

static json_t *parse(const char *body, size_t len, char *err, size_t n)
{
	json_error_t je;
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		snprintf(err, n, "the body must be a JSON object: %s", o ? "it is not one" : je.text);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A number field that may be absent or null; false with err on a wrong type. */
static bool get_num(json_t *o, const char *key, const char *name, double *v, bool *set, char *err, size_t n)
{
	json_t *x = o ? json_object_get(o, key) : NULL;
	if (!x || json_is_null(x))
		return true;
	if (!json_is_number(x) || !(json_number_value(x) >= 0) || !isfinite(json_number_value(x))) {
		snprintf(err, n, "%s: must be a non-negative number", name);
		return false;
	}
	*v = json_number_value(x);
	*set = true;
	return true;
}

int sj_session_extras(const char *body, size_t len, struct sj_session_extras *x, char *err, size_t n)
{
	memset(x, 0, sizeof(*x));
	if (len == 0)
		return 0;
	json_t *o = parse(body, len, err, n);
	if (!o)
		return -1;
	json_t *lim = json_object_get(o, "limits");
	bool ok = get_num(o, "ttl_s", "ttl_s", &x->ttl_s, &x->ttl_set, err, n) &&
	          get_num(o, "idle_s", "idle_s", &x->idle_s, &x->idle_set, err, n) &&
	          get_num(json_is_object(lim) ? lim : NULL, "work_size_mb", "limits.work_size_mb", &x->work_size_mb,
	                  &x->work_set, err, n) &&
	          get_num(json_is_object(lim) ? lim : NULL, "cpu_seconds", "limits.cpu_seconds", &x->cpu_s, &x->cpu_set,
	                  err, n);
	if (ok && x->work_set && x->work_size_mb != floor(x->work_size_mb))
		ok = bad(err, n, "limits.work_size_mb: must be a whole number of MB") == 0;
	json_decref(o);
	return ok ? 0 : -1;
}

int sj_pause(const char *body, size_t len, struct sj_pause *p, char *err, size_t n)
{
	memset(p, 0, sizeof(*p));
	if (len == 0)
		return 0;
	json_t *o = parse(body, len, err, n);
	bool ok = o && get_num(o, "timeout_s", "timeout_s", &p->timeout_s, &p->timeout_set, err, n);
	json_decref(o);
	return ok ? 0 : -1;
}

int sj_fork(const char *body, size_t len, unsigned max, unsigned *count, char *err, size_t n)
{
	*count = 1;
	if (len == 0)
		return 0;
	json_t *o = parse(body, len, err, n);
	double v = 1;
	bool set = false;
	bool ok = o && get_num(o, "count", "count", &v, &set, err, n);
	json_decref(o);
	if (ok && (v < 1 || v > max || v != (unsigned)v)) {
		snprintf(err, n, "count: a whole number from 1 to %u", max);
		ok = false;
	}
	*count = (unsigned)v;
	return ok ? 0 : -1;
}

void sj_recipe(const char *body, size_t len, char *out, size_t n)
{
	out[0] = 0;
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(o)) {
		json_object_del(o, "files");
		char *t = json_dumps(o, JSON_COMPACT);
		if (t && strlen(t) < n)
			memcpy(out, t, strlen(t) + 1);
		free(t);
	}
	json_decref(o);
}

int sj_exec_extras(const char *body, size_t len, struct sj_exec_extras *x, char *err, size_t n)
{
	memset(x, 0, sizeof(*x));
	json_t *o = parse(body, len, err, n);
	if (!o)
		return -1;
	int rc = 0;
	json_t *cwd = json_object_get(o, "cwd"), *bg = json_object_get(o, "background");
	json_t *in = json_object_get(o, "stdin");
	if (cwd && !json_is_null(cwd) && !(json_is_string(cwd) && json_string_length(cwd) < sizeof(x->cwd)))
		rc = bad(err, n, "cwd: must be a path inside the sandbox (a string, at most 4095 bytes)");
	else if (json_is_string(cwd))
		snprintf(x->cwd, sizeof(x->cwd), "%s", json_string_value(cwd));
	if (!rc && bg && !json_is_null(bg) && !json_is_boolean(bg))
		rc = bad(err, n, "background: must be true or false");
	x->background = json_is_true(bg);
	x->stdin_pipe = x->background && json_is_string(in) && strcmp(json_string_value(in), "pipe") == 0;
	json_decref(o);
	return rc;
}

int sj_signal(const char *body, size_t len, int *sig, char *err, size_t n)
{
	json_t *o = parse(body, len, err, n);
	if (!o)
		return -1;
	json_t *v = json_object_get(o, "signal");
	const char *name = json_is_string(v) ? json_string_value(v) : "";
	int rc = 0;
	if (strcmp(name, "INT") == 0 || strcmp(name, "SIGINT") == 0)
		*sig = SIGINT;
	else if (strcmp(name, "TERM") == 0 || strcmp(name, "SIGTERM") == 0)
		*sig = SIGTERM;
	else if (strcmp(name, "KILL") == 0 || strcmp(name, "SIGKILL") == 0)
		*sig = SIGKILL;
	else
		rc = bad(err, n, "signal: give \"INT\", \"TERM\" or \"KILL\"");
	json_decref(o);
	return rc;
}

/* RFC 3339 of a CLOCK_REALTIME time. */
static void member_time(struct jw *w, const char *key, double t)
{
	char buf[40];
	time_t sec = (time_t)t;
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t k = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, sizeof(buf) - k, ".%03dZ", (int)((t - floor(t)) * 1000) % 1000);
	jw_key(w, key);
	jw_cstring(w, buf);
}

static void emit_argv(struct jw *w, char **argv)
{
	jw_key(w, "argv");
	jw_array_begin(w);
	for (size_t i = 0; argv && argv[i]; i++) {
		jw_element(w);
		jw_cstring(w, argv[i]);
	}
	jw_array_end(w);
}

static void emit_procs_array(struct jw *w, const struct ward_session_proc *p, size_t n)
{
	jw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_element(w);
		jw_object_begin(w);
		jw_member_int(w, "pid", p[i].id);
		emit_argv(w, p[i].argv);
		jw_key(w, "state");
		jw_cstring(w, p[i].running ? "running" : "exited");
		jw_key(w, "exit_code");
		if (p[i].running)
			jw_null(w);
		else
			jw_int(w, p[i].exit_code);
		member_time(w, "started_at", p[i].started_at);
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void emit_session(struct jw *w, const void *arg)
{
	const struct sj_session *v = arg;
	jw_object_begin(w);
	jw_key(w, "id");
	jw_cstring(w, v->id);
	member_time(w, "created_at", v->created_at);
	member_time(w, "expires_at", v->expires_at);
	member_time(w, "idle_expires_at", v->idle_expires_at);
	jw_key(w, "isolation");
	jw_cstring(w, "system");
	if (v->enforced)
		jw_enforced(w, v->enforced);
	if (v->detail) {
		jw_key(w, "state");
		jw_cstring(w, v->paused ? "paused" : v->busy ? "busy" : "idle");
		jw_member_int(w, "execs", (int64_t)v->execs);
		jw_key(w, "usage");
		jw_object_begin(w);
		jw_member_int(w, "memory_bytes", (int64_t)v->usage.memory_bytes);
		jw_member_int(w, "memory_peak_bytes", (int64_t)v->usage.memory_peak_bytes);
		jw_member_int(w, "pids", (int64_t)v->usage.pids);
		jw_member_int(w, "cpu_ms", (int64_t)v->usage.cpu_ms);
		jw_object_end(w);
		jw_key(w, "cpu_budget_exceeded");
		jw_bool(w, v->cpu_spent);
		jw_key(w, "processes");
		emit_procs_array(w, v->procs, v->nprocs);
		if (v->egress) {
			jw_key(w, "egress");
			jw_object_begin(w);
			jw_member_int(w, "tried", (int64_t)v->egress_tried);
			jw_member_int(w, "allowed", (int64_t)v->egress_allowed);
			jw_member_int(w, "refused", (int64_t)(v->egress_tried - v->egress_allowed));
			jw_object_end(w);
		}
	}
	jw_object_end(w);
}

char *sj_session_json(const struct sj_session *v)
{
	return jw_build(emit_session, v, NULL);
}

struct sessions_arg {
	const struct sj_session *v;
	size_t n;
};

static void emit_sessions(struct jw *w, const void *arg)
{
	const struct sessions_arg *a = arg;
	jw_array_begin(w);
	for (size_t i = 0; i < a->n; i++) {
		jw_element(w);
		emit_session(w, &a->v[i]);
	}
	jw_array_end(w);
}

char *sj_sessions_json(const struct sj_session *v, size_t n)
{
	struct sessions_arg a = {v, n};
	return jw_build(emit_sessions, &a, NULL);
}

struct list_arg {
	const struct ward_dirent *d;
	size_t n, max;
	size_t *kept;
};

/* The most one entry's object takes: a name of 255 bytes, six each, and
 * the rest of its members. */
#define LIST_ENTRY_MAX (6 * 255 + 256)

static void emit_list(struct jw *w, const void *arg)
{
	const struct list_arg *a = arg;
	static const struct {
		char c;
		const char *name;
	} types[] = {{'f', "file"}, {'d', "directory"}, {'l', "symlink"}};
	jw_array_begin(w);
	*a->kept = a->n;
	for (size_t i = 0; i < a->n; i++) {
		const struct ward_dirent *d = &a->d[i];
		/* the same cut when counting and when writing: w->len is the same */
		if (a->max && w->len + LIST_ENTRY_MAX + 2 > a->max) {
			*a->kept = i;
			break;
		}
		const char *type = "other";
		for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
			if (types[k].c == d->type)
				type = types[k].name;
		jw_element(w);
		jw_object_begin(w);
		jw_key(w, "name");
		jw_cstring(w, d->name);
		jw_key(w, "type");
		jw_cstring(w, type);
		jw_member_int(w, "size", (int64_t)d->size);
		jw_member_int(w, "mode", (int64_t)(d->mode & 07777));
		member_time(w, "mtime", d->mtime);
		jw_object_end(w);
	}
	jw_array_end(w);
}

char *sj_list_json(const struct ward_dirent *d, size_t n, size_t max, size_t *kept)
{
	struct list_arg a = {d, n, max, kept};
	return jw_build(emit_list, &a, NULL);
}

struct procs_arg {
	const struct ward_session_proc *p;
	size_t n;
};

static void emit_procs(struct jw *w, const void *arg)
{
	const struct procs_arg *a = arg;
	emit_procs_array(w, a->p, a->n);
}

char *sj_procs_json(const struct ward_session_proc *p, size_t n)
{
	struct procs_arg a = {p, n};
	return jw_build(emit_procs, &a, NULL);
}

struct event_arg {
	const char *stream;
	const char *data;
	size_t len;
};

static void emit_event(struct jw *w, const void *arg)
{
	const struct event_arg *a = arg;
	jw_object_begin(w);
	jw_key(w, "stream");
	jw_cstring(w, a->stream);
	jw_member_string(w, "data", a->data, a->len);
	jw_object_end(w);
}

char *sj_event_json(const char *stream, const char *data, size_t len, size_t *outlen)
{
	struct event_arg a = {stream, data, len};
	return jw_build(emit_event, &a, outlen);
}

struct end_arg {
	int pid, exit_code;
	const char *status, *error;
};

static void emit_end(struct jw *w, const void *arg)
{
	const struct end_arg *a = arg;
	jw_object_begin(w);
	if (a->error) {
		jw_key(w, "error");
		jw_cstring(w, a->error);
	} else {
		jw_key(w, "result");
		jw_object_begin(w);
		jw_member_int(w, "pid", a->pid);
		jw_key(w, "state");
		jw_cstring(w, "exited");
		jw_key(w, "status");
		jw_cstring(w, a->status ? a->status : "ok");
		jw_member_int(w, "exit_code", a->exit_code);
		jw_member_bool(w, "timed_out", a->status && strcmp(a->status, "timeout") == 0);
		jw_member_string(w, "error", "", 0);
		jw_object_end(w);
	}
	jw_object_end(w);
}

char *sj_end_json(int pid, int exit_code, const char *status, const char *error, size_t *outlen)
{
	struct end_arg a = {pid, exit_code, status, error};
	return jw_build(emit_end, &a, outlen);
}

struct pid_arg {
	int pid;
};

static void emit_pid(struct jw *w, const void *arg)
{
	jw_object_begin(w);
	jw_member_int(w, "pid", ((const struct pid_arg *)arg)->pid);
	jw_object_end(w);
}

char *sj_pid_json(int pid)
{
	struct pid_arg a = {pid};
	return jw_build(emit_pid, &a, NULL);
}

char *sj_with_argv(const char *body, size_t len, size_t *outlen, char *err, size_t n)
{
	json_t *o = len ? parse(body, len, err, n) : json_object();
	if (!o)
		return NULL;
	json_object_del(o, "command");
	json_object_set_new(o, "argv", json_pack("[s]", "true"));
	char *out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!out)
		bad(err, n, "out of memory");
	*outlen = out ? strlen(out) : 0;
	return out;
}

void sj_health_sessions(json_t *health, const struct sj_session_limits *l)
{
	json_t *lim = json_object_get(health, "limits");
	json_t *d = json_object_get(lim, "defaults"), *m = json_object_get(lim, "maxima");
	if (!json_is_object(d) || !json_is_object(m))
		return;
	json_object_set_new(d, "ttl_s", json_real(3600));
	json_object_set_new(d, "idle_s", json_real(600));
	json_object_set_new(m, "sessions", json_integer(l->max_sessions));
	json_object_set_new(m, "client_sessions", json_integer(l->client_sessions));
	json_object_set_new(m, "ttl_s", json_real(l->max_ttl));
	json_object_set_new(m, "idle_s", json_real(l->max_idle));
	json_object_set_new(m, "work_size_mb", json_integer((json_int_t)l->max_work_size_mb));
	json_object_set_new(health, "node", json_string(l->node_id));
}
