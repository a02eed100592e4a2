/* json.c — the one place that knows ward's wire format (SPEC §4, §5, §7):
 * results, /exec requests, /health, the server's log lines and the doctor's
 * report to and from JSON, with jansson; and the checks every decoder of
 * ward's shares (wire/decode.h: members, typed values, contents, limits),
 * which the test jobs' format (src/testjob/testjob_json.c) builds on.
 *
 * Never runs anything and never calls up into a front end, the server or
 * the test jobs: it reads and writes the structs they hand it.  Which
 * values are allowed is ward_request_validate()'s (src/core/request.c). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	} en[] = {{"memory", e->memory},   {"pids", e->pids},       {"cpu", e->cpu},
		  {"time", e->time},       {"fsize", e->fsize},     {"seccomp", e->seccomp},
		  {"landlock", e->landlock}, {"tcp_memory", e->tcp_memory},
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

/* ---------------------------------------------- decoding: what every format shares */

int wire_bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void wire_request_doc_init(struct ward_request_doc *doc)
{
	memset(doc, 0, sizeof(*doc));
	ward_request_init(&doc->req);
	doc->req.capture = true;
	doc->req.stdin_fd = -1;
}

json_t *wire_load(const char *body, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	/* Duplicate keys are refused: two "argv" members would leave which one
	 * ran up to the parser.  Depth is bounded by jansson itself
	 * (JSON_PARSER_MAX_DEPTH), so deep nesting is an error, not a crash. */
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!root)
		wire_bad(err, errlen, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
	return root;
}

/* A member that is absent or null counts as not given: clients written in
 * Python send None for "use the default". */
json_t *wire_member(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

/* A string member that is absent, null or "" counts as not given: existing
 * clients send "" for "not set" (DeepTutor's "workdir": "").  Only for
 * members where the empty string cannot mean anything else (SPEC §5:
 * workdir and command). */
json_t *wire_member_nonempty(const json_t *o, const char *key)
{
	json_t *v = wire_member(o, key);
	return json_is_string(v) && json_string_length(v) == 0 ? NULL : v;
}

/* A C string from a JSON string: refused when it holds a NUL (we parse with
 * JSON_ALLOW_NUL so that file contents may, but a path or an argument with
 * a NUL would be cut short silently). */
int wire_cstr(const json_t *v, const char *field, const char **out, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return wire_bad(err, errlen, "%s: must be a string", field);
	const char *s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return wire_bad(err, errlen, "%s: contains a NUL character", field);
	*out = s;
	return 0;
}

/* A non-negative whole number no larger than max; a real such as 512.0 is
 * accepted when it is integral (json.dumps of a float). */
int wire_uint(const json_t *v, const char *field, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || (uint64_t)i > max)
			return wire_bad(err, errlen, "%s: must be an integer from 0 to %llu", field,
					(unsigned long long)max);
		*out = (uint64_t)i;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d >= 0 && d <= (double)max && floor(d) == d) {
			*out = (uint64_t)d;
			return 0;
		}
	}
	return wire_bad(err, errlen, "%s: must be an integer from 0 to %llu", field, (unsigned long long)max);
}

static int wire_number(const json_t *v, const char *field, double *out, char *err, size_t errlen)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return wire_bad(err, errlen, "%s: must be a number", field);
	*out = json_number_value(v);
	return 0;
}

/* Content with an "encoding": utf-8 (the string's bytes) or base64.  *owned
 * gets the decoded buffer when one was made. */
int wire_content(const json_t *v, const char *encoding, const char *field, const unsigned char **data,
			size_t *len, unsigned char **owned, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return wire_bad(err, errlen, "%s: must be a string", field);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (!encoding || strcmp(encoding, "utf-8") == 0 || strcmp(encoding, "utf8") == 0) {
		*data = (const unsigned char *)s;
		*len = n;
		return 0;
	}
	if (strcmp(encoding, "base64") != 0)
		return wire_bad(err, errlen, "%s: encoding must be \"utf-8\" or \"base64\"", field);
	unsigned char *buf = base64_decode(s, n, len);
	if (!buf)
		return wire_bad(err, errlen, "%s: %s", field,
				errno == ENOMEM ? "out of memory" : "is not valid base64");
	*owned = buf;
	*data = buf;
	return 0;
}

int wire_string_array(const json_t *a, const char *name, char ***out, char *err, size_t errlen)
{
	size_t n = json_array_size(a);
	*out = calloc(n + 1, sizeof(char *));
	if (!*out)
		return wire_bad(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char field[48];
		snprintf(field, sizeof(field), "%s[%zu]", name, i);
		const char *s;
		if (wire_cstr(json_array_get(a, i), field, &s, err, errlen) < 0)
			return -1;
		(*out)[i] = (char *)s; /* borrowed from the document */
	}
	return 0;
}

int wire_decode_env(struct ward_request_doc *doc, const json_t *o, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return wire_bad(err, errlen, "env: must be an object of strings");
	size_t n = json_object_size(o), i = 0;
	doc->env = calloc(n + 1, sizeof(char *));
	if (!doc->env)
		return wire_bad(err, errlen, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		char field[80];
		if (json_is_null(v)) /* a variable that is null is not set */
			continue;
		snprintf(field, sizeof(field), "env.%.60s", k);
		const char *s;
		if (wire_cstr(v, field, &s, err, errlen) < 0)
			return -1;
		if (!*k || strchr(k, '='))
			return wire_bad(err, errlen, "%s: a variable name must be non-empty and have no '='", field);
		size_t kl = strlen(k), sl = strlen(s);
		char *e = malloc(kl + sl + 2);
		if (!e)
			return wire_bad(err, errlen, "out of memory");
		memcpy(e, k, kl);
		e[kl] = '=';
		memcpy(e + kl + 1, s, sl + 1);
		doc->env[i++] = e;
	}
	doc->req.env = doc->env;
	return 0;
}

int wire_decode_file_body(const json_t *f, const char *at, uint64_t max_mode, struct ward_file *wf,
			  unsigned char **owned, char *err, size_t errlen)
{
	json_t *v;
	char field[80];
	const char *enc = NULL;
	snprintf(field, sizeof(field), "%s.encoding", at);
	if ((v = wire_member(f, "encoding")) && wire_cstr(v, field, &enc, err, errlen) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.content", at);
	if (!(v = wire_member(f, "content"))) {
		wf->data = (const unsigned char *)"";
		wf->len = 0;
	} else if (wire_content(v, enc, field, &wf->data, &wf->len, owned, err, errlen) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.mode", at);
	uint64_t mode = 0;
	if ((v = wire_member(f, "mode")) && wire_uint(v, field, max_mode, &mode, err, errlen) < 0)
		return -1;
	wf->mode = (mode_t)mode;
	return 0;
}

int wire_decode_limits(struct ward_request *req, const json_t *o, char *err, size_t errlen)
{
	struct ward_limits *l = &req->limits;
	json_t *v;
	uint64_t u;
	if (!json_is_object(o))
		return wire_bad(err, errlen, "limits: must be an object");
	if ((v = wire_member(o, "timeout_s")) && wire_number(v, "limits.timeout_s", &l->timeout_s, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "cpu_seconds")) && wire_number(v, "limits.cpu_seconds", &l->cpu_s, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "memory_mb")) && wire_uint(v, "limits.memory_mb", UINT64_MAX >> 20, &l->memory_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "pids"))) {
		if (wire_uint(v, "limits.pids", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->pids = (uint32_t)u;
	}
	/* DeepTutor's name; ward counts bytes per stream */
	if ((v = wire_member(o, "max_output_chars")) &&
	    wire_uint(v, "limits.max_output_chars", UINT64_MAX, &l->output_limit, err, errlen) < 0)
		return -1;
	/* ward's own limits beyond DeepTutor's set, named as ward run's options */
	if ((v = wire_member(o, "output_limit")) &&
	    wire_uint(v, "limits.output_limit", UINT64_MAX, &l->output_limit, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "fsize_mb")) && wire_uint(v, "limits.fsize_mb", UINT64_MAX >> 20, &l->fsize_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "tmp_size_mb")) &&
	    wire_uint(v, "limits.tmp_size_mb", UINT64_MAX >> 20, &l->tmp_size_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "nofile"))) {
		if (wire_uint(v, "limits.nofile", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->nofile = (uint32_t)u;
	}
	if ((v = wire_member(o, "collect_max_files"))) {
		if (wire_uint(v, "limits.collect_max_files", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->collect_max_files = (uint32_t)u;
	}
	if ((v = wire_member(o, "collect_max_bytes")) &&
	    wire_uint(v, "limits.collect_max_bytes", UINT64_MAX >> 1, &l->collect_max_bytes, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "egress_bytes")) &&
	    wire_uint(v, "limits.egress_bytes", UINT64_MAX, &l->egress_bytes, err, errlen) < 0)
		return -1;
	return 0;
}

/* "network": {"allow": ["pypi.org", "*.pythonhosted.org", ...]} (SPEC §13);
 * the patterns themselves are checked by ward_request_validate. */
static int decode_allow(struct ward_request_doc *doc, const json_t *o, char *err, size_t errlen)
{
	json_t *a = json_object_get(o, "allow");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return wire_bad(err, errlen, "network: an object must have \"allow\": a non-empty array of host "
					     "patterns (\"pypi.org\", \"*.pythonhosted.org\", \"files.example:8443\")");
	size_t n = json_array_size(a);
	if (n > EGRESS_MAX_PATTERNS)
		return wire_bad(err, errlen, "network.allow: %zu patterns, at most %d", n, EGRESS_MAX_PATTERNS);
	doc->allow = calloc(n, sizeof(*doc->allow));
	if (!doc->allow)
		return wire_bad(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (wire_cstr(json_array_get(a, i), "network.allow[]", &doc->allow[i], err, errlen) < 0)
			return -1;
	doc->req.net = WARD_NET_ALLOW;
	doc->req.egress_allow = doc->allow;
	doc->req.negress_allow = n;
	return 0;
}

int wire_decode_network_isolation(struct ward_request_doc *doc, const json_t *root, char *err, size_t errlen)
{
	json_t *v;
	if ((v = wire_member(root, "network"))) {
		const char *s;
		/* false is what a client means by "no network" */
		if (json_is_false(v))
			doc->req.net = WARD_NET_NONE;
		else if (json_is_object(v)) {
			if (decode_allow(doc, v, err, errlen) < 0)
				return -1;
		} else if (wire_cstr(v, "network", &s, err, errlen) < 0 || ward_net_parse(s, &doc->req.net) < 0 ||
			   doc->req.net == WARD_NET_ALLOW)
			return wire_bad(err, errlen, "network: must be \"none\", \"loopback\" or {\"allow\": [\"HOST\", ...]}");
	}
	if ((v = wire_member(root, "isolation"))) {
		const char *s;
		if (wire_cstr(v, "isolation", &s, err, errlen) < 0 || ward_isolation_parse(s, &doc->req.isolation) < 0)
			return wire_bad(err, errlen, "isolation: must be \"system\" or \"application\"");
		doc->isolation_set = true;
	}
	return 0;
}

/* ----------------------------------------------- /exec requests (SPEC §5)
 * POST /exec bodies to struct ward_request and back (for `ward run
 * --remote`), result objects back to struct ward_result, and the
 * {"error": "..."} envelope. */

static int decode_argv(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return wire_bad(err, errlen, "argv: must be an array of strings");
	if (json_array_size(a) == 0)
		return wire_bad(err, errlen, "argv: must not be empty");
	if (wire_string_array(a, "argv", &doc->argv, err, errlen) < 0)
		return -1;
	doc->req.argv = doc->argv;
	return 0;
}

static int decode_mounts(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return wire_bad(err, errlen, "mounts: must be an array of objects");
	size_t n = json_array_size(a);
	doc->mounts = calloc(n ? n : 1, sizeof(*doc->mounts));
	if (!doc->mounts)
		return wire_bad(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_array_get(a, i), *v;
		struct ward_mount *wm = &doc->mounts[i];
		char field[64];
		if (!json_is_object(m))
			return wire_bad(err, errlen, "mounts[%zu]: must be an object", i);
		snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
		if (!(v = wire_member(m, "host_path")))
			return wire_bad(err, errlen, "%s: is required", field);
		if (wire_cstr(v, field, &wm->host_path, err, errlen) < 0)
			return -1;
		snprintf(field, sizeof(field), "mounts[%zu].sandbox_path", i);
		if ((v = wire_member(m, "sandbox_path")) && wire_cstr(v, field, &wm->sandbox_path, err, errlen) < 0)
			return -1;
		/* read-only unless the caller asks otherwise: the safe default */
		wm->read_only = true;
		if ((v = wire_member(m, "read_only"))) {
			if (!json_is_boolean(v))
				return wire_bad(err, errlen, "mounts[%zu].read_only: must be true or false", i);
			wm->read_only = json_is_true(v);
		}
	}
	doc->req.mounts = doc->mounts;
	doc->req.nmounts = n;
	return 0;
}

static int decode_files(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return wire_bad(err, errlen, "files: must be an array of objects");
	size_t n = json_array_size(a);
	doc->files = calloc(n ? n : 1, sizeof(*doc->files));
	doc->file_data = calloc(n ? n : 1, sizeof(*doc->file_data));
	if (!doc->files || !doc->file_data)
		return wire_bad(err, errlen, "out of memory");
	doc->req.files = doc->files;
	doc->req.nfiles = n; /* set now so that doc_free releases what was decoded */
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(a, i), *v;
		struct ward_file *wf = &doc->files[i];
		char at[48], field[64];
		if (!json_is_object(f))
			return wire_bad(err, errlen, "files[%zu]: must be an object", i);
		snprintf(field, sizeof(field), "files[%zu].path", i);
		if (!(v = wire_member(f, "path")))
			return wire_bad(err, errlen, "%s: is required", field);
		if (wire_cstr(v, field, &wf->path, err, errlen) < 0)
			return -1;
		snprintf(at, sizeof(at), "files[%zu]", i);
		if (wire_decode_file_body(f, at, 07777, wf, &doc->file_data[i], err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* "collect": ["*.png", "out/"] (SPEC §12); [] is none.  Which globs are
 * allowed is ward_request_validate()'s. */
static int decode_collect(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return wire_bad(err, errlen, "collect: must be an array of globs such as [\"*.png\", \"out/\"]");
	if (json_array_size(a) > WARD_MAX_COLLECT_GLOBS)
		return wire_bad(err, errlen, "collect: %zu globs, at most %d", json_array_size(a), WARD_MAX_COLLECT_GLOBS);
	if (json_array_size(a) == 0)
		return 0;
	if (wire_string_array(a, "collect", &doc->collect, err, errlen) < 0)
		return -1;
	doc->req.collect = doc->collect;
	return 0;
}

static int decode_request(struct ward_request_doc *doc, const json_t *root, char *err, size_t errlen)
{
	struct ward_request *req = &doc->req;
	json_t *v;
	if (!json_is_object(root))
		return wire_bad(err, errlen, "the body must be a JSON object");

	/* DeepTutor's client sends "argv": [] next to "command" when it has no
	 * argv, and "command": "" means no command (SPEC §5): both absent */
	json_t *a = wire_member(root, "argv"), *cmd = wire_member_nonempty(root, "command");
	if (json_is_array(a) && json_array_size(a) == 0) {
		if (!cmd)
			return wire_bad(err, errlen, "argv: is empty and there is no command: send the program and its "
						     "arguments in argv, or a shell string in command");
		a = NULL;
	}
	if (a) {
		if (decode_argv(doc, a, err, errlen) < 0)
			return -1;
	} else if (cmd) {
		if (wire_cstr(cmd, "command", &req->shell, err, errlen) < 0)
			return -1;
	} else
		return wire_bad(err, errlen, "command: one of \"command\" (a non-empty shell string) and \"argv\" "
					     "is required");
	/* argv is authoritative: a "command" next to it is not even checked */

	/* "workdir": "" is DeepTutor's "none": an ephemeral /work */
	if ((v = wire_member_nonempty(root, "workdir")) && wire_cstr(v, "workdir", &req->workdir, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "rootfs")) && wire_cstr(v, "rootfs", &req->rootfs, err, errlen) < 0)
		return -1;
	if ((v = wire_member_nonempty(root, "image")) && wire_cstr(v, "image", &req->image_name, err, errlen) < 0)
		return -1;
	const char *rootk = NULL;
	if ((v = wire_member_nonempty(root, "root")) && wire_cstr(v, "root", &rootk, err, errlen) < 0)
		return -1;
	if (rootk && strcmp(rootk, "overlay") != 0)
		return wire_bad(err, errlen, "root: give \"overlay\" (a writable layer over the image) or leave it out");
	if (rootk && !req->image_name)
		return wire_bad(err, errlen, "root: \"overlay\" is a writable layer over an image: give \"image\" too");
	req->root_overlay = rootk != NULL;
	if ((v = wire_member(root, "env")) && wire_decode_env(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "mounts")) && decode_mounts(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "limits")) && wire_decode_limits(req, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "files")) && decode_files(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "collect")) && decode_collect(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "stdin"))) {
		const char *enc = NULL;
		json_t *e = wire_member(root, "stdin_encoding");
		if (e && wire_cstr(e, "stdin_encoding", &enc, err, errlen) < 0)
			return -1;
		if (wire_content(v, enc, "stdin", &req->stdin_data, &req->stdin_len, &doc->stdin_data, err, errlen) < 0)
			return -1;
		req->stdin_set = true;
	}
	return wire_decode_network_isolation(doc, root, err, errlen);
}

int ward_json_check_values(const char *body, size_t len, size_t max, char *err, size_t errlen)
{
	size_t count = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = body[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"')
			in_str = true;
		else if ((c == ',' || c == '[' || c == '{') && ++count > max)
			return wire_bad(err, errlen, "the document has more than %zu JSON values: send fewer, larger ones", max);
	}
	return 0;
}

int ward_request_from_json(const char *body, size_t len, struct ward_request_doc *doc, char *err, size_t errlen)
{
	return ward_request_from_json_under(body, len, NULL, doc, err, errlen);
}

int ward_request_from_json_under(const char *body, size_t len, const struct ward_limits *defaults,
				 struct ward_request_doc *doc, char *err, size_t errlen)
{
	wire_request_doc_init(doc);
	if (defaults)
		doc->req.limits = *defaults;
	if (ward_json_check_values(body, len, WARD_JSON_MAX_VALUES, err, errlen) < 0)
		return -1;
	json_t *root = wire_load(body, len, err, errlen);
	if (!root)
		return -1;
	doc->json = root;
	if (decode_request(doc, root, err, errlen) < 0) {
		ward_request_doc_free(doc);
		return -1;
	}
	return 0;
}

void ward_request_doc_free(struct ward_request_doc *doc)
{
	if (doc->env)
		for (char **e = doc->env; *e; e++)
			free(*e);
	free(doc->env);
	if (doc->file_data)
		for (size_t i = 0; i < doc->req.nfiles; i++)
			free(doc->file_data[i]);
	free(doc->file_data);
	free(doc->files);
	free(doc->mounts);
	free(doc->argv);
	free(doc->collect);
	free(doc->stdin_data);
	free(doc->allow);
	json_decref(doc->json);
	memset(doc, 0, sizeof(*doc));
}

/* What jansson holds for a value, malloc's own overhead included: measured
 * on jansson 2.14 (an empty object ~220 bytes, an empty array ~140, a
 * member ~100 beyond its key and value, a string ~80 beyond its text, a
 * number ~45), rounded up; tests/unit checks that these bound what jansson
 * really allocates. */
#define DOC_OBJECT_COST 256
#define DOC_MEMBER_COST 128
#define DOC_ARRAY_COST 160
#define DOC_ELEMENT_COST 16
#define DOC_SCALAR_COST 96

static size_t json_value_bytes(const json_t *v)
{
	size_t n = 0;
	const char *k;
	json_t *m;
	size_t i;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = DOC_OBJECT_COST;
		json_object_foreach((json_t *)v, k, m)
			n += DOC_MEMBER_COST + strlen(k) + json_value_bytes(m);
		return n;
	case JSON_ARRAY:
		n = DOC_ARRAY_COST;
		json_array_foreach(v, i, m)
			n += DOC_ELEMENT_COST + json_value_bytes(m);
		return n;
	case JSON_STRING: return DOC_SCALAR_COST + json_string_length(v);
	case JSON_INTEGER:
	case JSON_REAL: return DOC_SCALAR_COST;
	default: return 0; /* true, false, null: jansson's singletons */
	}
}

size_t ward_request_doc_bytes(const struct ward_request_doc *doc)
{
	const struct ward_request *q = &doc->req;
	size_t n = sizeof(*doc) + (doc->json ? json_value_bytes(doc->json) : 0);
	for (char **a = doc->argv; a && *a; a++)
		n += sizeof(char *);
	for (char **e = doc->env; e && *e; e++)
		n += sizeof(char *) + strlen(*e) + 1 + 16;
	n += q->nmounts * sizeof(struct ward_mount) + q->nfiles * (sizeof(struct ward_file) + sizeof(char *));
	for (size_t i = 0; doc->file_data && i < q->nfiles; i++)
		if (doc->file_data[i])
			n += q->files[i].len + 16;
	if (doc->stdin_data)
		n += q->stdin_len + 16;
	return n;
}

/* Bytes as a string member, or as base64 with enc_key set to "base64" when
 * they are not valid UTF-8 (or hold a NUL, which we keep exact). */
static int put_content(json_t *o, const char *key, const char *enc_key, const unsigned char *data, size_t len)
{
	if (!data)
		data = (const unsigned char *)"";
	if (memchr(data, 0, len) == NULL) {
		json_t *s = json_stringn((const char *)data, len); /* NULL when not UTF-8 */
		if (s)
			return json_object_set_new(o, key, s);
	}
	char *b = base64_encode(data, len);
	if (!b)
		return -1;
	int rc = json_object_set_new(o, key, json_string(b));
	free(b);
	return rc < 0 ? -1 : json_object_set_new(o, enc_key, json_string("base64"));
}

/* A string member; refused (-1) when it is not UTF-8, which the wire
 * cannot carry for a path or an argument. */
static int put_str(json_t *o, const char *key, const char *s)
{
	json_t *v = json_string(s);
	return v ? json_object_set_new(o, key, v) : -1;
}

/* Every failure to allocate while encoding a request says this. */
#define ENCODE_OOM "out of memory encoding the request"

/* "argv", or "command" for a shell string.  0, or -1 with err set. */
static int put_command(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	if (req->argv && req->argv[0]) {
		json_t *a = json_array();
		json_object_set_new(o, "argv", a);
		for (char *const *p = req->argv; *p; p++) {
			json_t *s = json_string(*p);
			if (!s)
				return wire_bad(err, errlen,
						"argument '%s' is not UTF-8: the runner's wire format cannot carry it", *p);
			json_array_append_new(a, s);
		}
	} else if (req->shell && !req->shell[0]) {
		/* "command": "" reads as no command (SPEC §5): send what runs here */
		json_t *a = json_pack("[sss]", "/bin/sh", "-c", "");
		if (!a || json_object_set_new(o, "argv", a) < 0)
			return wire_bad(err, errlen, ENCODE_OOM);
	} else if (req->shell) {
		if (put_str(o, "command", req->shell) < 0)
			return wire_bad(err, errlen, "the shell command is not UTF-8: the runner's wire format cannot carry it");
	}
	return 0;
}

/* "env": {NAME: value}.  0, or -1 with err set. */
static int put_env(json_t *o, char *const *env, char *err, size_t errlen)
{
	json_t *e = json_object();
	json_object_set_new(o, "env", e);
	for (char *const *p = env; *p; p++) {
		const char *eq = strchr(*p, '=');
		if (!eq)
			continue;
		char *k = strndup(*p, (size_t)(eq - *p));
		if (!k)
			return wire_bad(err, errlen, ENCODE_OOM);
		json_t *v = json_string(eq + 1);
		int rc = v ? json_object_set_new(e, k, v) : -1;
		free(k);
		if (rc < 0)
			return wire_bad(err, errlen, "environment entry '%s' is not UTF-8", *p);
	}
	return 0;
}

/* A new object at the end of array a. */
static json_t *append_object(json_t *a)
{
	json_t *e = json_object();
	json_array_append_new(a, e);
	return e;
}

static int put_mounts(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "mounts", a);
	for (size_t i = 0; i < req->nmounts; i++) {
		const struct ward_mount *m = &req->mounts[i];
		json_t *mo = append_object(a);
		if (put_str(mo, "host_path", m->host_path ? m->host_path : "") < 0 ||
		    (m->sandbox_path && put_str(mo, "sandbox_path", m->sandbox_path) < 0))
			return wire_bad(err, errlen, "a mount path is not UTF-8: the runner's wire format cannot carry it");
		json_object_set_new(mo, "read_only", json_boolean(m->read_only));
	}
	return 0;
}

/* "limits", those in mask (1 << LIM_x), named as in a request. */
static void put_limits(json_t *o, const struct ward_limits *l, unsigned mask)
{
	json_t *lo = json_object();
	json_object_set_new(o, "limits", lo);
	for (int k = 0; k < LIM__COUNT; k++) {
		if (!(mask & (1u << k)) || k == LIM_EGRESS) /* egress_bytes: with network allow */
			continue;
		double v = ward_limit_get(l, k);
		json_object_set_new(lo, ward_limit_table[k].field,
				    k == LIM_TIMEOUT || k == LIM_CPU ? json_real(v) : json_integer((json_int_t)v));
	}
}

static int put_collect(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "collect", a);
	for (char *const *g = req->collect; *g; g++) {
		json_t *s = json_string(*g);
		if (!s)
			return wire_bad(err, errlen, "collect glob '%s' is not UTF-8: the runner's wire format cannot carry it", *g);
		json_array_append_new(a, s);
	}
	return 0;
}

static int put_files(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "files", a);
	for (const struct ward_file *f = req->files; f < req->files + req->nfiles; f++) {
		json_t *fo = append_object(a);
		if (put_str(fo, "path", f->path ? f->path : "") < 0)
			return wire_bad(err, errlen, "a file path is not UTF-8: the runner's wire format cannot carry it");
		if (put_content(fo, "content", "encoding", f->data, f->len) < 0)
			return wire_bad(err, errlen, ENCODE_OOM);
		if (f->mode)
			json_object_set_new(fo, "mode", json_integer(f->mode));
	}
	return 0;
}

char *ward_request_to_json(const struct ward_request *req, char *err, size_t errlen)
{
	return ward_request_to_json_given(req, ~0u, err, errlen);
}

char *ward_request_to_json_given(const struct ward_request *req, unsigned limits, char *err, size_t errlen)
{
	json_t *o = json_object();
	char *out = NULL;
	if (!o) {
		wire_bad(err, errlen, ENCODE_OOM);
		return NULL;
	}
	if (put_command(o, req, err, errlen) < 0 || (req->env && put_env(o, req->env, err, errlen) < 0))
		goto done;
	if ((req->workdir && put_str(o, "workdir", req->workdir) < 0) ||
	    (req->rootfs && put_str(o, "rootfs", req->rootfs) < 0) ||
	    (req->image_name && put_str(o, "image", req->image_name) < 0)) {
		wire_bad(err, errlen, "a host path is not UTF-8: the runner's wire format cannot carry it");
		goto done;
	}
	if (req->nmounts && put_mounts(o, req, err, errlen) < 0)
		goto done;
	put_limits(o, &req->limits, limits);
	if (req->nfiles && put_files(o, req, err, errlen) < 0)
		goto done;
	if (req->collect && req->collect[0] && put_collect(o, req, err, errlen) < 0)
		goto done;
	if (req->stdin_set && put_content(o, "stdin", "stdin_encoding", req->stdin_data, req->stdin_len) < 0) {
		wire_bad(err, errlen, ENCODE_OOM);
		goto done;
	}
	if (req->net == WARD_NET_ALLOW) {
		json_t *no = json_object(), *a = json_array();
		json_object_set_new(no, "allow", a);
		for (size_t i = 0; i < req->negress_allow; i++)
			json_array_append_new(a, json_string(req->egress_allow[i]));
		json_object_set_new(o, "network", no);
		if (limits & (1u << LIM_EGRESS))
			json_object_set_new(json_object_get(o, "limits"), "egress_bytes",
					    json_integer((json_int_t)req->limits.egress_bytes));
	} else
		json_object_set_new(o, "network", json_string(req->net == WARD_NET_LOOPBACK ? "loopback" : "none"));
	json_object_set_new(o, "isolation", json_string(ward_isolation_name(req->isolation)));
	out = json_dumps(o, JSON_COMPACT);
	if (!out)
		wire_bad(err, errlen, ENCODE_OOM);
done:
	json_decref(o);
	return out;
}

/* The enforcement names a result carries are static strings in the C API.
 * Those that come back from a remote runner are interned here: a fixed,
 * bounded table (the set of names is small), never freed. */
static const char *intern_name(const char *s)
{
	static const char *const known[] = {"cgroup-v2", "cgroup-v1", "cgroup-v1-kmem", "rlimit", "ward", "landlock", "seccomp", "none"};
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
		return wire_bad(err, errlen, "the runner's answer is not JSON: %s", je.text);
	int rc = -1;
	json_t *st = json_object_get(o, "status");
	if (!json_is_object(o) || !json_is_string(st)) {
		wire_bad(err, errlen, "the runner's answer is not a result object (no \"status\")");
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
		wire_bad(err, errlen, "out of memory");
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
		wire_bad(err, errlen, "the runner's answer has a collected file without a path or base64 content, or "
				      "ward is out of memory");
		goto out;
	}
	if (get_egress(o, r) < 0) {
		wire_bad(err, errlen, "out of memory");
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
		json_object_set_new(o, "sandbox_status", e->sandbox_status ? json_string(e->sandbox_status) : json_null());
		if (e->message)
			json_object_set_new(o, "error", json_bytes(e->message, strlen(e->message)));
	}
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
