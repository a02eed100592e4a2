/* json.c — ward's results to and from JSON (SPEC §4), with jansson: a
 * result object and its files, egress and enforcement; a remote runner's
 * result read back; /health, the server's log lines, the {"error": "..."}
 * envelope and the doctor's report.  /exec requests are request_json.c's;
 * the checks every decoder shares are decode.c's (wire/decode.h).
 *
 * Never runs anything and never calls up into a front end, the server or
 * the test jobs: it reads and writes the structs they hand it. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errf.h"
#include "core/egress.h"
#include "core/request.h"
#include "ward.h"
#include "wire/base64.h"
#include "wire/decode.h"
#include "wire/jsonw.h"
#include "wire/utf8.h"
#include "wire/wire.h"

/* ---------------------------------------------------------------- result */

/* "enforced": which mechanism held each limit (SPEC §4), "none" where none. */
void jw_enforced(struct jw *w, const struct ward_enforced *e)
{
	const struct {
		const char *key, *v;
	} en[] = {{"memory", e->memory},
	          {"pids", e->pids},
	          {"cpu", e->cpu},
	          {"time", e->time},
	          {"fsize", e->fsize},
	          {"seccomp", e->seccomp},
	          {"landlock", e->landlock},
	          {"tcp_memory", e->tcp_memory},
	          {"user", e->user[0] ? e->user : NULL}};
	jw_key(w, "enforced");
	jw_object_begin(w);
	for (size_t i = 0; i < sizeof(en) / sizeof(en[0]); i++) {
		jw_key(w, en[i].key);
		jw_cstring(w, en[i].v ? en[i].v : "none");
	}
	jw_object_end(w);
}

/* "egress": the connections a run's proxy was asked for (SPEC §13), and
 * "egress_truncated". */
void jw_egress(struct jw *w, const struct ward_result *r)
{
	jw_key(w, "egress");
	jw_array_begin(w);
	for (size_t i = 0; i < r->negress; i++) {
		const struct ward_egress *e = &r->egress[i];
		jw_element(w);
		jw_object_begin(w);
		jw_member_string(w, "host", e->host, strnlen(e->host, sizeof(e->host)));
		jw_member_int(w, "port", e->port);
		jw_key(w, "allowed");
		jw_bool(w, e->allowed);
		if (e->reason[0])
			jw_member_string(w, "reason", e->reason, strnlen(e->reason, sizeof(e->reason)));
		jw_member_int(w, "bytes_out", (int64_t)e->bytes_out);
		jw_member_int(w, "bytes_in", (int64_t)e->bytes_in);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_key(w, "egress_truncated");
	jw_bool(w, r->egress_truncated);
}

/* A JSON string from raw bytes, ill-formed UTF-8 replaced by U+FFFD. */
static json_t *json_bytes(const char *data, size_t len)
{
	size_t n;
	char *clean = utf8_sanitize(data ? data : "", data ? len : 0, &n);
	if (!clean)
		return NULL;
	json_t *s = json_stringn_nocheck(clean, n);
	free(clean);
	return s;
}

/* Files out (SPEC §12): "files" and "files_truncated", only when the
 * request collected (res->files set). */
static void emit_files(struct jw *w, const struct ward_result *r, bool contents)
{
	if (!r->files)
		return;
	jw_key(w, "files");
	jw_array_begin(w);
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct ward_collected *f = &r->files[i];
		jw_element(w);
		jw_object_begin(w);
		jw_member_string(w, "path", f->path, strlen(f->path));
		jw_member_int(w, "size", (int64_t)f->size);
		jw_member_int(w, "mode", (int64_t)f->mode);
		if (contents) {
			jw_key(w, "encoding");
			jw_cstring(w, "base64");
			jw_key(w, "content");
			jw_base64(w, f->data, f->size);
		}
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_member_bool(w, "files_truncated", r->files_truncated);
}

struct result_view {
	const struct ward_result *r;
	bool contents;
};

/* The result object, written by jsonw (its streams are the program's
 * output: see jsonw.h for why not jansson). */
static void emit_result_members(struct jw *w, const struct result_view *v)
{
	const struct ward_result *r = v->r;
	jw_key(w, "status");
	jw_cstring(w, ward_status_name(r->status));
	jw_key(w, "exit_code");
	jw_int(w, r->exit_code);
	jw_key(w, "signal");
	if (r->signal)
		jw_int(w, r->signal);
	else
		jw_null(w);
	jw_key(w, "timed_out");
	jw_bool(w, r->timed_out);
	jw_key(w, "oom_killed");
	jw_bool(w, r->oom_killed);
	jw_member_string(w, "stdout", r->out.data, r->out.len);
	jw_member_string(w, "stderr", r->err.data, r->err.len);
	jw_key(w, "stdout_truncated");
	jw_bool(w, r->out.truncated);
	jw_key(w, "stderr_truncated");
	jw_bool(w, r->err.truncated);
	jw_key(w, "stdout_bytes");
	jw_int(w, (int64_t)r->out.bytes);
	jw_key(w, "stderr_bytes");
	jw_int(w, (int64_t)r->err.bytes);
	jw_member_string(w, "error", r->error, strnlen(r->error, sizeof(r->error)));
	jw_key(w, "isolation");
	jw_cstring(w, ward_isolation_name(r->isolation));

	jw_enforced(w, &r->enforced);

	jw_key(w, "usage");
	jw_object_begin(w);
	jw_key(w, "wall_ms");
	jw_int(w, (int64_t)r->usage.wall_ms);
	jw_key(w, "cpu_user_ms");
	jw_int(w, (int64_t)r->usage.cpu_user_ms);
	jw_key(w, "cpu_sys_ms");
	jw_int(w, (int64_t)r->usage.cpu_sys_ms);
	jw_key(w, "max_rss_kb");
	jw_int(w, (int64_t)r->usage.max_rss_kb);
	if (r->egress_on) {
		jw_key(w, "proxy_cpu_ms");
		jw_int(w, (int64_t)r->usage.proxy_cpu_ms);
	}
	jw_object_end(w);
	emit_files(w, r, v->contents);
	if (r->egress_on)
		jw_egress(w, r);
}

static void emit_result(struct jw *w, const void *arg)
{
	jw_object_begin(w);
	emit_result_members(w, arg);
	jw_object_end(w);
}

void jw_result_members(struct jw *w, const struct ward_result *r)
{
	struct result_view v = {r, true};
	emit_result_members(w, &v);
}

char *ward_result_to_json(const struct ward_result *r)
{
	struct result_view v = {r, true};
	return jw_build(emit_result, &v, NULL);
}

int ward_result_to_json_fd(const struct ward_result *r, int fd)
{
	return ward_result_to_json_fd_files(r, true, fd);
}

int ward_result_to_json_fd_files(const struct ward_result *r, bool contents, int fd)
{
	struct result_view v = {r, contents};
	return jw_write_fd(emit_result, &v, fd);
}

/* ---------------------------------------------------------------- doctor */

char *doctor_to_json(const struct doctor_report *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "system", json_boolean(r->system_ok));
	json_object_set_new(o, "application_allowed", json_boolean(r->application_allowed));
	json_object_set_new(o, "root", json_boolean(r->root));
	json_object_set_new(o, "landlock_abi", json_integer(r->landlock_abi));
	json_object_set_new(o, "cgroup_version", json_integer(r->cgroup_version));
	json_object_set_new(o, "version", json_string(WARD_VERSION));
	json_t *checks = json_object();
	for (int i = 0; i < r->n; i++) {
		json_t *c = json_object();
		json_object_set_new(c, "ok", json_boolean(r->items[i].ok));
		json_object_set_new(c, "detail", json_bytes(r->items[i].detail, strlen(r->items[i].detail)));
		json_object_set_new(checks, r->items[i].name, c);
	}
	json_object_set_new(o, "checks", checks);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* The enforcement names a result carries are static strings in the C API.
 * Those that come back from a remote runner are interned here: a fixed,
 * bounded table (the set of names is small), never freed. */
static const char *intern_name(const char *s)
{
	static const char *const known[] = {"cgroup-v2", "cgroup-v1", "cgroup-v1-kmem", "rlimit",
	                                    "ward",      "landlock",  "seccomp",        "none"};
	/* process-wide: an interned name must outlive every result */
	static char *pool[64];
	static size_t npool;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	if (!s)
		return "none";
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(s, known[i]) == 0)
			return known[i];
	const char *found = "remote";
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < npool; i++)
		if (strcmp(pool[i], s) == 0) {
			found = pool[i];
			goto out;
		}
	if (npool < sizeof(pool) / sizeof(pool[0]) && strlen(s) < 64) {
		char *d = strdup(s);
		if (d)
			found = pool[npool++] = d;
	}
out:
	pthread_mutex_unlock(&lock);
	return found;
}

static bool get_bool(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

static uint64_t get_u64(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
	return i > 0 ? (uint64_t)i : 0;
}

static int get_stream(const json_t *o, const char *name, struct ward_stream *st)
{
	char key[32];
	json_t *v = json_object_get(o, name);
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = json_is_string(v) ? json_string_length(v) : 0;
	st->data = malloc(n + 1);
	if (!st->data)
		return -1;
	memcpy(st->data, s, n);
	st->data[n] = 0;
	st->len = n;
	snprintf(key, sizeof(key), "%s_truncated", name);
	st->truncated = get_bool(o, key);
	snprintf(key, sizeof(key), "%s_bytes", name);
	st->bytes = get_u64(o, key);
	return 0;
}

/* "files" of a result (a remote runner's collect) into r->files: each
 * content base64.  The paths are the runner's (and the sandbox's) word:
 * whoever writes them on the host checks them (front/collect_out.c runs
 * the path guard on each).  0, or -1. */
static int get_files(const json_t *o, struct ward_result *r)
{
	json_t *a = json_object_get(o, "files");
	if (!json_is_array(a))
		return 0;
	size_t n = json_array_size(a);
	r->files = calloc(n ? n : 1, sizeof(*r->files));
	if (!r->files)
		return -1;
	r->files_truncated = get_bool(o, "files_truncated");
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(a, i), *p = json_object_get(f, "path"), *c = json_object_get(f, "content");
		if (!json_is_string(p) || !json_is_string(c) || memchr(json_string_value(p), 0, json_string_length(p)))
			return -1;
		struct ward_collected *wc = &r->files[r->nfiles];
		size_t dl = 0;
		wc->data = base64_decode(json_string_value(c), json_string_length(c), &dl);
		wc->path = strdup(json_string_value(p));
		r->nfiles++;
		if (!wc->data || !wc->path)
			return -1;
		wc->size = dl;
		wc->mode = (mode_t)(get_u64(f, "mode") & 07777);
	}
	return 0;
}

/* A remote result's "egress" back into the C struct (at most
 * WARD_EGRESS_MAX_RECORDS).  0, or -1 out of memory. */
static int get_egress(const json_t *o, struct ward_result *r)
{
	json_t *a = json_object_get(o, "egress");
	if (!json_is_array(a))
		return 0;
	r->egress_on = true;
	r->egress_truncated = get_bool(o, "egress_truncated");
	size_t n = json_array_size(a);
	if (n > WARD_EGRESS_MAX_RECORDS) {
		n = WARD_EGRESS_MAX_RECORDS;
		r->egress_truncated = true;
	}
	if (!n)
		return 0;
	r->egress = calloc(n, sizeof(*r->egress));
	if (!r->egress)
		return -1;
	r->negress = n;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(a, i), *h = json_object_get(e, "host"), *why = json_object_get(e, "reason");
		struct ward_egress *x = &r->egress[i];
		snprintf(x->host, sizeof(x->host), "%s", json_is_string(h) ? json_string_value(h) : "");
		snprintf(x->reason, sizeof(x->reason), "%s", json_is_string(why) ? json_string_value(why) : "");
		x->port = (unsigned)get_u64(e, "port");
		x->allowed = get_bool(e, "allowed");
		x->bytes_out = get_u64(e, "bytes_out");
		x->bytes_in = get_u64(e, "bytes_in");
	}
	return 0;
}

int ward_result_from_json(const char *body, size_t len, struct ward_result *r, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = json_loadb(body, len, JSON_ALLOW_NUL, &je);
	if (!o)
		return base_errf(err, errlen, "the runner's answer is not JSON: %s", je.text);
	int rc = -1;
	json_t *st = json_object_get(o, "status");
	if (!json_is_object(o) || !json_is_string(st)) {
		base_errf(err, errlen, "the runner's answer is not a result object (no \"status\")");
		goto out;
	}
	r->status = WARD_ST_ERROR;
	for (int s = WARD_ST_OK; s <= WARD_ST_ERROR; s++)
		if (strcmp(json_string_value(st), ward_status_name((enum ward_status)s)) == 0)
			r->status = (enum ward_status)s;
	json_t *v = json_object_get(o, "exit_code");
	r->exit_code = json_is_integer(v) ? (int)json_integer_value(v) : WARD_EXIT_FAILED;
	v = json_object_get(o, "signal");
	r->signal = json_is_integer(v) ? (int)json_integer_value(v) : 0;
	r->timed_out = get_bool(o, "timed_out");
	r->oom_killed = get_bool(o, "oom_killed");
	if (get_stream(o, "stdout", &r->out) < 0 || get_stream(o, "stderr", &r->err) < 0) {
		base_errf(err, errlen, "out of memory");
		goto out;
	}
	v = json_object_get(o, "error");
	snprintf(r->error, sizeof(r->error), "%s", json_is_string(v) ? json_string_value(v) : "");
	v = json_object_get(o, "isolation");
	if (!json_is_string(v) || ward_isolation_parse(json_string_value(v), &r->isolation) < 0)
		r->isolation = WARD_ISO_SYSTEM;
	json_t *en = json_object_get(o, "enforced");
	struct ward_enforced *e = &r->enforced;
#define EN(f) e->f = intern_name(json_string_value(json_object_get(en, #f)))
	EN(memory);
	EN(pids);
	EN(cpu);
	EN(time);
	EN(fsize);
	EN(seccomp);
	EN(landlock);
	EN(tcp_memory);
#undef EN
	v = json_object_get(en, "user");
	snprintf(e->user, sizeof(e->user), "%s", json_is_string(v) ? json_string_value(v) : "none");
	json_t *u = json_object_get(o, "usage");
	r->usage.wall_ms = get_u64(u, "wall_ms");
	r->usage.cpu_user_ms = get_u64(u, "cpu_user_ms");
	r->usage.cpu_sys_ms = get_u64(u, "cpu_sys_ms");
	r->usage.max_rss_kb = get_u64(u, "max_rss_kb");
	r->usage.proxy_cpu_ms = get_u64(u, "proxy_cpu_ms");
	if (get_files(o, r) < 0) {
		base_errf(err, errlen,
		          "the runner's answer has a collected file without a path or base64 content, or "
		          "ward is out of memory");
		goto out;
	}
	if (get_egress(o, r) < 0) {
		base_errf(err, errlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

char *ward_error_to_json(const char *msg)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "error", json_bytes(msg, strlen(msg)));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

void ward_error_from_json(const char *body, size_t len, char *buf, size_t buflen)
{
	json_t *o = json_loadb(body, len, 0, NULL);
	json_t *v = json_object_get(o, "error");
	snprintf(buf, buflen, "%s", json_is_string(v) ? json_string_value(v) : "");
	json_decref(o);
}

/* {"timeout_s": 30.0, "cpu_seconds": ..., "memory_mb": 512, ...}: the
 * seconds as reals, the rest as integers, named as in a request. */
static json_t *limits_json(const struct ward_limits *l)
{
	json_t *o = json_object();
	for (int i = 0; o && i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		/* a request's CPU limit is its timeout unless it names one */
		double v = ward_limit_get(l, i == LIM_CPU && l->cpu_s == 0 ? LIM_TIMEOUT : i);
		bool secs = i == LIM_TIMEOUT || i == LIM_CPU;
		json_object_set_new(o, d->field, secs ? json_real(v) : json_integer((json_int_t)v));
	}
	return o;
}

/* GET /health's answer. */
char *ward_health_to_json(bool ok, const char *isolation, const char *reason, const struct ward_limits *defaults,
                          const struct ward_limits *maxima)
{
	return ward_health_egress_to_json(ok, isolation, reason, defaults, maxima, NULL, 0);
}

char *ward_health_egress_to_json(bool ok, const char *isolation, const char *reason, const struct ward_limits *defaults,
                                 const struct ward_limits *maxima, const char *const *egress_allow, size_t negress)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "status", json_string(ok ? "ok" : "unavailable"));
	json_object_set_new(o, "isolation", json_string(isolation));
	json_object_set_new(o, "version", json_string(WARD_VERSION));
	if (!ok)
		json_object_set_new(o, "error", json_bytes(reason, strlen(reason)));
	json_t *lim = json_object();
	json_object_set_new(lim, "defaults", limits_json(defaults));
	json_object_set_new(lim, "maxima", limits_json(maxima));
	json_object_set_new(o, "limits", lim);
	if (egress_allow) {
		json_t *eg = json_object(), *a = json_array();
		for (size_t i = 0; i < negress; i++)
			json_array_append_new(a, json_string(egress_allow[i]));
		json_object_set_new(eg, "allow", a);
		json_object_set_new(o, "egress", eg);
	}
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* One line of the server's request log (no newline). */
char *ward_log_to_json(const struct ward_log_entry *e)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "time", json_string(e->time));
	if (e->event) {
		json_object_set_new(o, "event", json_string(e->event));
		if (e->message)
			json_object_set_new(o, "message", json_bytes(e->message, strlen(e->message)));
	} else {
		json_object_set_new(o, "client", json_bytes(e->client, strlen(e->client)));
		json_object_set_new(o, "method", json_bytes(e->method, strlen(e->method)));
		json_object_set_new(o, "path", json_bytes(e->path, strlen(e->path)));
		json_object_set_new(o, "http_status", json_integer(e->http_status));
		json_object_set_new(o, "wall_ms", json_integer((json_int_t)e->wall_ms));
		json_object_set_new(o, "sandbox_status",
		                    e->sandbox_status ? json_string(e->sandbox_status) : json_null());
		if (e->message)
			json_object_set_new(o, "error", json_bytes(e->message, strlen(e->message)));
	}
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
