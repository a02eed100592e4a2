/* e2b_fs.c — envd's filesystem.Filesystem service and its /files
 * endpoint on a session's files API (SPEC §11): every path is mapped into
 * /home/user (the session's /work; ".." resolved lexically first, so
 * "/home/user/../../etc/passwd" is /etc/passwd and refused), then resolved
 * inside the sandbox by libward (a symlink the sandbox planted reads what
 * the sandbox sees there, never a host file).  MakeDir and Move have no
 * libward call: they run mkdir and mv inside the session, as its user. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dialect/e2b/e2b_int.h"

#define LIST_MAX 10000      /* entries of one ListDir, all depths */
#define MAX_UPLOAD_PARTS 1000
#define READ_MAX_DFLT (64u << 20)
#define WATCH_POLL_S 0.2

bool e2b_map_path(const char *in, char *out, size_t n, char *err, size_t errlen)
{
	char buf[4096];
	if (!in || strlen(in) >= sizeof(buf) - sizeof(E2B_HOME) - 1) {
		snprintf(err, errlen, "path: give one, shorter than 4000 bytes");
		return false;
	}
	for (const char *c = in; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			snprintf(err, errlen, "path: has a control byte; such names are refused");
			return false;
		}
	if (in[0] == '/')
		snprintf(buf, sizeof(buf), "%s", in);
	else
		snprintf(buf, sizeof(buf), "%s/%s", E2B_HOME, in);
	/* the components, "." and ".." resolved */
	char *parts[1024];
	size_t np = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (strcmp(t, ".") == 0)
			continue;
		if (strcmp(t, "..") == 0) {
			if (np)
				np--;
			continue;
		}
		if (np == sizeof(parts) / sizeof(parts[0])) {
			snprintf(err, errlen, "path: too deep");
			return false;
		}
		parts[np++] = t;
	}
	size_t skip;
	if (np >= 2 && strcmp(parts[0], "home") == 0 && strcmp(parts[1], "user") == 0)
		skip = 2;
	else if (np >= 1 && strcmp(parts[0], "work") == 0)
		skip = 1;
	else {
		snprintf(err, errlen, "path '%.200s' is outside %s: this sandbox's files API reaches %s (and /work, "
				      "the same directory) only",
			 in, E2B_HOME, E2B_HOME);
		return false;
	}
	size_t k = 0;
	out[0] = 0;
	for (size_t i = skip; i < np; i++) {
		int w = snprintf(out + k, n - k, "%s%s", k ? "/" : "", parts[i]);
		if (w < 0 || (size_t)w >= n - k) {
			snprintf(err, errlen, "path: too long");
			return false;
		}
		k += (size_t)w;
	}
	return true;
}

/* The E2B path of rel ("" is the home). */
static void full_path(const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", E2B_HOME, *rel ? "/" : "", rel);
}

static const char *entry_type(char t)
{
	return t == 'd' ? "FILE_TYPE_DIRECTORY" : t == 'l' ? "FILE_TYPE_SYMLINK" : t == 'f' ? "FILE_TYPE_FILE"
											 : "FILE_TYPE_UNSPECIFIED";
}

static json_t *entry_json(const char *rel, const struct ward_dirent *d)
{
	char path[4200], mt[40], sz[24], perm[11];
	full_path(rel, path, sizeof(path));
	time_t sec = (time_t)d->mtime;
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(mt, sizeof(mt), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)d->size);
	static const char rwx[] = "rwxrwxrwx";
	perm[0] = d->type == 'd' ? 'd' : d->type == 'l' ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		perm[i + 1] = (d->mode & (0400 >> i)) ? rwx[i] : '-';
	perm[10] = 0;
	const char *slash = strrchr(path, '/');
	return json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:s}", "name", slash ? slash + 1 : path, "type",
			 entry_type(d->type), "path", path, "size", sz, "mode", (int)(d->mode & 07777), "permissions",
			 perm, "owner", "user", "group", "user", "modifiedTime", mt);
}

/* rel's entry, by listing its parent.  0, or a negative errno. */
static int stat_rel(struct ward_session *ws, const char *rel, json_t **out)
{
	if (!*rel) {
		struct ward_dirent d = {.name = "user", .type = 'd', .mode = 0755, .mtime = (double)time(NULL)};
		*out = entry_json("", &d);
		return 0;
	}
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", rel);
	char *slash = strrchr(parent, '/');
	const char *name = slash ? rel + (slash - parent) + 1 : rel;
	if (slash)
		*slash = 0;
	else
		parent[0] = 0;
	struct ward_dirent *d = NULL;
	size_t n = 0;
	char err[256];
	int rc = ward_session_list_max(ws, slash ? parent : "", WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, &d,
				       &n, NULL, err, sizeof(err));
	if (rc == -ENOTDIR)
		rc = -ENOENT;
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0) {
			*out = entry_json(rel, &d[i]);
			rc = 0;
		}
	ward_session_list_free(d, n);
	return rc;
}

/* The request's {"path"} mapped, and the session held; NULL after
 * answering. */
static struct sess *fs_begin(struct ereq *q, json_t **m, const char *field, char *rel, size_t n, enum MHD_Result *rc)
{
	*m = cx_unary_in(q, rc);
	if (!*m)
		return NULL;
	char err[512];
	json_t *p = json_object_get(*m, field);
	if (!e2b_map_path(json_string_value(p), rel, n, err, sizeof(err))) {
		*rc = cx_error(q, "invalid_argument", "%s", err);
		json_decref(*m);
		return NULL;
	}
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss) {
		*rc = cx_error(q, "unavailable", "the sandbox was killed or timed out");
		json_decref(*m);
	}
	return ss;
}

static enum MHD_Result lib_error(struct ereq *q, int rc, const char *rel)
{
	char path[4200];
	full_path(rel, path, sizeof(path));
	if (rc == -ENOENT)
		return cx_error(q, "not_found", "path '%s' does not exist", path);
	return cx_error(q, cx_code(rc), "path '%s': %s", path, strerror(-rc));
}

enum MHD_Result fs_stat(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char rel[4096];
	struct sess *ss = fs_begin(q, &m, "path", rel, sizeof(rel), &rc);
	if (!ss)
		return rc;
	json_decref(m);
	json_t *e = NULL;
	int r = stat_rel(ss->ws, rel, &e);
	sess_unref(q->s, ss);
	if (r < 0)
		return lib_error(q, r, rel);
	return cx_unary_ok(q, json_pack("{s:o}", "entry", e));
}

/* Entries of rel into arr, depth levels down; false when the list is full. */
static int list_into(struct ward_session *ws, const char *rel, int depth, json_t *arr)
{
	struct ward_dirent *d = NULL;
	size_t n = 0;
	char err[256];
	int rc = ward_session_list_max(ws, rel, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, &d, &n, NULL, err,
				       sizeof(err));
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n && json_array_size(arr) < LIST_MAX; i++) {
		char sub[4200];
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", d[i].name);
		json_array_append_new(arr, entry_json(sub, &d[i]));
		if (d[i].type == 'd' && depth > 1)
			list_into(ws, sub, depth - 1, arr);
	}
	ward_session_list_free(d, n);
	return 0;
}

enum MHD_Result fs_list(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char rel[4096];
	struct sess *ss = fs_begin(q, &m, "path", rel, sizeof(rel), &rc);
	if (!ss)
		return rc;
	json_t *dv = json_object_get(m, "depth");
	int depth = json_is_integer(dv) ? (int)json_integer_value(dv) : 1;
	json_decref(m);
	if (depth < 1)
		depth = 1;
	if (depth > 32)
		depth = 32;
	json_t *arr = json_array();
	int r = list_into(ss->ws, rel, depth, arr);
	sess_unref(q->s, ss);
	if (r < 0) {
		json_decref(arr);
		if (r == -ENOTDIR)
			return cx_error(q, "invalid_argument", "path '%s/%s' is not a directory", E2B_HOME, rel);
		return lib_error(q, r, rel);
	}
	return cx_unary_ok(q, json_pack("{s:o}", "entries", arr));
}

/* argv run inside the session (as its user, in its view): its exit code,
 * or -1 with err set. */
static int run_in(struct ereq *q, struct ward_session *ws, char *const *argv, char *err, size_t n)
{
	struct ward_request r;
	ward_request_init(&r);
	r.argv = argv;
	r.isolation = WARD_ISO_SYSTEM;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = 30;
	r.capture = true;
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	int rc = ward_session_exec(ws, &r, "/work", &res);
	int code = -1;
	if (rc < 0 || res.status == WARD_ST_ERROR)
		snprintf(err, n, "%s", res.error[0] ? res.error : "the sandbox is gone");
	else {
		code = res.exit_code;
		snprintf(err, n, "%.300s", res.err.data ? res.err.data : "");
		size_t k = strlen(err);
		while (k && (err[k - 1] == '\n' || err[k - 1] == '\r'))
			err[--k] = 0;
	}
	ward_result_free(&res);
	return code;
}

enum MHD_Result fs_mkdir(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char rel[4096];
	struct sess *ss = fs_begin(q, &m, "path", rel, sizeof(rel), &rc);
	if (!ss)
		return rc;
	json_decref(m);
	json_t *e = NULL;
	if (stat_rel(ss->ws, rel, &e) == 0) {
		json_decref(e);
		sess_unref(q->s, ss);
		return cx_error(q, "already_exists", "path '%s/%s' already exists", E2B_HOME, rel);
	}
	char target[4200], err[512];
	snprintf(target, sizeof(target), "/work/%s", rel);
	char *argv[] = {"/bin/mkdir", "-p", "--", target, NULL};
	int code = run_in(q, ss->ws, argv, err, sizeof(err));
	int r = code == 0 ? stat_rel(ss->ws, rel, &e) : -1;
	sess_unref(q->s, ss);
	if (code != 0 || r < 0)
		return cx_error(q, "invalid_argument", "cannot make directory '%s/%s': %s", E2B_HOME, rel, err);
	return cx_unary_ok(q, json_pack("{s:o}", "entry", e));
}

enum MHD_Result fs_move(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char src[4096], dst[4096], err[512];
	struct sess *ss = fs_begin(q, &m, "source", src, sizeof(src), &rc);
	if (!ss)
		return rc;
	bool ok = e2b_map_path(json_string_value(json_object_get(m, "destination")), dst, sizeof(dst), err, sizeof(err));
	json_decref(m);
	if (!ok || !*src || !*dst) {
		sess_unref(q->s, ss);
		return cx_error(q, "invalid_argument", "%s", ok ? "the home itself cannot be moved" : err);
	}
	json_t *e = NULL;
	int r = stat_rel(ss->ws, src, &e);
	json_decref(e);
	e = NULL;
	if (r < 0) {
		sess_unref(q->s, ss);
		return lib_error(q, r, src);
	}
	char a[4200], b[4200];
	snprintf(a, sizeof(a), "/work/%s", src);
	snprintf(b, sizeof(b), "/work/%s", dst);
	char *argv[] = {"/bin/mv", "-T", "--", a, b, NULL};
	int code = run_in(q, ss->ws, argv, err, sizeof(err));
	r = code == 0 ? stat_rel(ss->ws, dst, &e) : -1;
	sess_unref(q->s, ss);
	if (code != 0 || r < 0)
		return cx_error(q, "invalid_argument", "cannot move '%s/%s' to '%s/%s': %s", E2B_HOME, src, E2B_HOME, dst,
				err);
	return cx_unary_ok(q, json_pack("{s:o}", "entry", e));
}

enum MHD_Result fs_remove(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char rel[4096], err[512] = "";
	struct sess *ss = fs_begin(q, &m, "path", rel, sizeof(rel), &rc);
	if (!ss)
		return rc;
	json_decref(m);
	if (!*rel) {
		sess_unref(q->s, ss);
		return cx_error(q, "invalid_argument", "the home itself cannot be removed");
	}
	int r = ward_session_remove(ss->ws, rel, err, sizeof(err));
	sess_unref(q->s, ss);
	if (r < 0)
		return lib_error(q, r, rel);
	return cx_unary_ok(q, NULL);
}

/* ---- WatchDir: the directory listed every WATCH_POLL_S, compared ---- */


struct watch {
	struct e2b *e;
	struct e2b_sbx *x;
	char rel[4096];
	bool started;
	struct ward_dirent *d; /* the last listing */
	size_t n;
	double deadline, last;
};

static void watch_free(void *p)
{
	struct watch *w = p;
	ward_session_list_free(w->d, w->n);
	e2b_sbx_put(w->e, w->x);
	free(w);
}

static const struct ward_dirent *find_ent(const struct ward_dirent *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return &d[i];
	return NULL;
}

static bool watch_event(char **buf, size_t *len, const char *name, const char *type)
{
	json_t *v = json_pack("{s:{s:s,s:s}}", "filesystem", "name", name, "type", type);
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	bool ok = t && cx_frame(buf, len, 0, t, strlen(t));
	free(t);
	return ok;
}

static bool watch_end(char **buf, size_t *len, const char *code, const char *msg)
{
	json_t *v = code ? json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg) : json_object();
	char *t = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (t)
		cx_frame(buf, len, 0x02, t, strlen(t));
	free(t);
	return false;
}

static bool watch_produce(void *p, char **buf, size_t *len)
{
	struct watch *w = p;
	if (!w->started) {
		w->started = true;
		w->last = now_mono();
		return cx_frame(buf, len, 0, "{\"start\":{}}", 12);
	}
	for (;;) {
		if (w->e->stopping)
			return watch_end(buf, len, "unavailable", "the server is stopping");
		if (w->deadline > 0 && now_mono() >= w->deadline)
			return watch_end(buf, len, "deadline_exceeded", "the watch's deadline (Connect-Timeout-Ms) passed");
		struct timespec ts = {0, (long)(WATCH_POLL_S * 1e9)};
		nanosleep(&ts, NULL);
		struct sess *ss = e2b_sess(w->e, w->x);
		if (!ss)
			return watch_end(buf, len, "unavailable", "the sandbox was killed or timed out");
		struct ward_dirent *d = NULL;
		size_t n = 0;
		char err[256];
		int rc = ward_session_list_max(ss->ws, w->rel, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, &d, &n,
					       NULL, err, sizeof(err));
		sess_unref(w->e->s, ss);
		if (rc < 0)
			return watch_end(buf, len, "not_found", "the watched directory is gone");
		for (size_t i = 0; i < n; i++) {
			const struct ward_dirent *o = find_ent(w->d, w->n, d[i].name);
			if (!o)
				watch_event(buf, len, d[i].name, "EVENT_TYPE_CREATE");
			else if (o->size != d[i].size || o->mtime != d[i].mtime)
				watch_event(buf, len, d[i].name, "EVENT_TYPE_WRITE");
			else if (o->mode != d[i].mode)
				watch_event(buf, len, d[i].name, "EVENT_TYPE_CHMOD");
		}
		for (size_t i = 0; i < w->n; i++)
			if (!find_ent(d, n, w->d[i].name))
				watch_event(buf, len, w->d[i].name, "EVENT_TYPE_REMOVE");
		ward_session_list_free(w->d, w->n);
		w->d = d;
		w->n = n;
		double t = now_mono();
		if (!*len && t - w->last >= E2B_KEEPALIVE_S)
			cx_frame(buf, len, 0, "{\"keepalive\":{}}", 16);
		if (*len) {
			w->last = t;
			return true;
		}
	}
}

enum MHD_Result fs_watch(struct ereq *q)
{
	char err[512] = "";
	json_t *m = cx_unwrap(q->body ? q->body : "", q->len, err, sizeof(err));
	struct watch *w = calloc(1, sizeof(*w));
	if (!w) {
		json_decref(m);
		return MHD_NO;
	}
	w->e = q->e;
	w->x = q->x;
	q->x = NULL;
	long long ms = cx_timeout_ms(q);
	const char *code = NULL;
	if (!m)
		code = "invalid_argument";
	else if (json_is_true(json_object_get(m, "recursive")))
		code = "unimplemented", snprintf(err, sizeof(err), "recursive watches are not offered: watch each directory");
	else if (ms < 0)
		code = "invalid_argument", snprintf(err, sizeof(err), "Connect-Timeout-Ms: give at most 10 digits");
	else if (!e2b_map_path(json_string_value(json_object_get(m, "path")), w->rel, sizeof(w->rel), err, sizeof(err)))
		code = "invalid_argument";
	json_decref(m);
	if (!code) {
		struct sess *ss = e2b_sess(w->e, w->x);
		int rc = ss ? ward_session_list_max(ss->ws, w->rel, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES,
						    &w->d, &w->n, NULL, err, sizeof(err))
			    : -ESRCH;
		if (ss)
			sess_unref(q->s, ss);
		if (rc < 0) {
			code = rc == -ESRCH ? "unavailable" : rc == -ENOTDIR ? "invalid_argument" : "not_found";
			snprintf(err, sizeof(err), "cannot watch %s/%.300s: %s", E2B_HOME, w->rel, strerror(-rc));
		}
	}
	w->deadline = ms > 0 ? now_mono() + (double)ms / 1000.0 : 0;
	if (code) {
		/* the stream still answers 200: Connect says errors in its end */
		char *buf = NULL;
		size_t len = 0;
		watch_end(&buf, &len, code, err);
		watch_free(w);
		q->code = 200;
		struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(buf);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
		enum MHD_Result rc = MHD_queue_response(q->c, 200, r);
		MHD_destroy_response(r);
		return rc;
	}
	return cx_stream_start(q, "application/connect+json", watch_produce, w, watch_free);
}

/* ---- /files ---- */

enum MHD_Result files_get(struct ereq *q)
{
	char rel[4096], err[512] = "";
	if (!e2b_map_path(e2b_query(q, "path"), rel, sizeof(rel), err, sizeof(err)))
		return e2b_api_error(q, 400, "%s", err);
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss)
		return e2b_api_error(q, 502, "the sandbox was killed or timed out");
	size_t max = q->s->o.max.output_limit ? q->s->o.max.output_limit : READ_MAX_DFLT;
	if (max < READ_MAX_DFLT)
		max = READ_MAX_DFLT;
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = ward_session_read(ss->ws, rel, max, &data, &len, err, sizeof(err));
	sess_unref(q->s, ss);
	if (rc == -ENOENT)
		return e2b_api_error(q, 404, "path '%s/%s' does not exist", E2B_HOME, rel);
	if (rc == -EISDIR)
		return e2b_api_error(q, 400, "path '%s/%s' is a directory: list it instead", E2B_HOME, rel);
	if (rc == -EFBIG)
		return e2b_api_error(q, 400, "the file is larger than %zu bytes, the most one read returns here", max);
	if (rc < 0)
		return e2b_api_error(q, rc == -EACCES || rc == -EPERM || rc == -ELOOP ? 403 : 500, "cannot read '%s/%s': %s",
				     E2B_HOME, rel, err[0] ? err : strerror(-rc));
	return e2b_answer(q, 200, "application/octet-stream", (char *)data, len);
}

enum MHD_Result files_post(struct ereq *q)
{
	char err[600] = "";
	struct mp_part *parts = NULL;
	size_t n = 0;
	if (mp_parse(e2b_header(q, MHD_HTTP_HEADER_CONTENT_TYPE), q->body ? q->body : "", q->len, MAX_UPLOAD_PARTS,
		     &parts, &n, err, sizeof(err)) < 0)
		return e2b_api_error(q, 400, "%s (send the files as multipart/form-data, one part each)", err);
	const char *qpath = e2b_query(q, "path");
	struct sess *ss = e2b_sess(q->e, q->x);
	if (!ss) {
		mp_free(parts, n);
		return e2b_api_error(q, 502, "the sandbox was killed or timed out");
	}
	json_t *arr = json_array();
	unsigned code = 200;
	for (size_t i = 0; i < n && code == 200; i++) {
		if (strcmp(parts[i].name, "file") != 0)
			continue;
		char rel[4096];
		const char *path = qpath ? qpath : parts[i].filename;
		if (!path || !e2b_map_path(path, rel, sizeof(rel), err, sizeof(err)) || !*rel) {
			if (!path || !err[0])
				snprintf(err, sizeof(err), "a file part names no path: give ?path= or a filename");
			code = 400;
			break;
		}
		int rc = ward_session_write(ss->ws, rel, parts[i].data, parts[i].len, 0, err, sizeof(err));
		if (rc < 0) {
			code = rc == -ENOSPC || rc == -EDQUOT ? 507 : rc == -EACCES || rc == -EPERM || rc == -ELOOP ? 403
				 : rc == -EISDIR || rc == -ENOTDIR || rc == -EINVAL			    ? 400
													    : 500;
			break;
		}
		char full[4200];
		full_path(rel, full, sizeof(full));
		const char *slash = strrchr(full, '/');
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", slash + 1, "type", "file", "path", full));
	}
	sess_unref(q->s, ss);
	mp_free(parts, n);
	if (code != 200) {
		json_decref(arr);
		return e2b_api_error(q, code, "cannot write the file: %s", err);
	}
	if (!json_array_size(arr)) {
		json_decref(arr);
		return e2b_api_error(q, 400, "no part named \"file\": send each file as a part named file");
	}
	return e2b_answer_json(q, 200, arr);
}
