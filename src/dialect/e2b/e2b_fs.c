/* e2b_fs.c — envd's filesystem.Filesystem service and its GET /files
 * (POST: e2b_upload.c) on a session's files API (SPEC §11, §18 "Paths, user, sizes"):
 * a path is absolute or relative to /home/user, "." and ".." resolved
 * lexically (above / is /), /home/user named as what it links to (the
 * session's /work), and then resolved inside the sandbox by libward, as
 * its user, from its own root (a symlink the sandbox planted, or
 * /proc/self/root, reads what the sandbox sees there, never a host file):
 * every path the sandbox's user may reach, and no other.  MakeDir and Move
 * have no libward call: they run mkdir and mv inside the session, as its
 * user. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/workq.h"
#include "dialect/e2b/e2b_int.h"

#define LIST_MAX 10000 /* entries of one ListDir, all depths */
#define READ_MAX_DFLT (64u << 20)
#define WATCH_POLL_S 0.2
#define WATCH_MAX_ENTRIES 10000 /* entries one watched directory may hold */
#define WATCH_PER_SBX 8
#define WATCH_PER_CLIENT 32
#define WATCH_LISTERS 2 /* threads that list for every watch */

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
	/* the home is a link to /work: named so, a Stat of it is a directory */
	size_t skip = np >= 2 && strcmp(parts[0], "home") == 0 && strcmp(parts[1], "user") == 0 ? 2 : 0;
	int k = snprintf(out, n, "%s", skip ? "/work" : "");
	for (size_t i = skip; i < np && k >= 0 && (size_t)k < n; i++)
		k += snprintf(out + k, n - (size_t)k, "/%s", parts[i]);
	if (k < 0 || (size_t)k >= n) {
		snprintf(err, errlen, "path: too long");
		return false;
	}
	if (!k)
		snprintf(out, n, "/");
	return true;
}

/* The E2B name of a sandbox path: /work as /home/user. */
void e2b_full_path(const char *path, char *out, size_t n)
{
	if (strncmp(path, "/work", 5) == 0 && (path[5] == 0 || path[5] == '/'))
		snprintf(out, n, "%s%s", E2B_HOME, path + 5);
	else
		snprintf(out, n, "%s", path);
}

/* The home itself, or the root: never removed, moved or written over. */
bool e2b_is_home_or_root(const char *path)
{
	return strcmp(path, "/") == 0 || strcmp(path, "/work") == 0;
}

static const char *entry_type(char t)
{
	return t == 'd'   ? "FILE_TYPE_DIRECTORY"
	       : t == 'l' ? "FILE_TYPE_SYMLINK"
	       : t == 'f' ? "FILE_TYPE_FILE"
	                  : "FILE_TYPE_UNSPECIFIED";
}

static json_t *entry_json(const char *rel, const struct ward_dirent *d)
{
	char path[4200], mt[40], sz[24], perm[11];
	e2b_full_path(rel, path, sizeof(path));
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
	return json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:s}", "name", slash && slash[1] ? slash + 1 : path, "type",
	                 entry_type(d->type), "path", path, "size", sz, "mode", (int)(d->mode & 07777), "permissions",
	                 perm, "owner", "user", "group", "user", "modifiedTime", mt);
}

/* path's entry, by listing its parent.  0, or a negative errno. */
static int stat_rel(struct ward_session *ws, const char *path, json_t **out)
{
	if (strcmp(path, "/") == 0) {
		struct ward_dirent d = {.name = "/", .type = 'd', .mode = 0755, .mtime = (double)time(NULL)};
		*out = entry_json("/", &d);
		return 0;
	}
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	const char *name = path + (slash - parent) + 1;
	slash[slash == parent] = 0; /* "/x": the parent is "/" */
	struct ward_dirent *d = NULL;
	size_t n = 0;
	char err[256];
	int rc = ward_session_list_max(ws, parent, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, &d, &n, NULL,
	                               err, sizeof(err));
	if (rc == -ENOTDIR)
		rc = -ENOENT;
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0) {
			*out = entry_json(path, &d[i]);
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
	e2b_full_path(rel, path, sizeof(path));
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
		snprintf(sub, sizeof(sub), "%s/%s", strcmp(rel, "/") ? rel : "", d[i].name);
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
		char shown[4200];
		e2b_full_path(rel, shown, sizeof(shown));
		if (r == -ENOTDIR)
			return cx_error(q, "invalid_argument", "path '%s' is not a directory", shown);
		return lib_error(q, r, rel);
	}
	return cx_unary_ok(q, json_pack("{s:o}", "entries", arr));
}

int e2b_run(struct ereq *q, struct ward_session *ws, char *const *argv, char *out, size_t outn, char *err, size_t n)
{
	struct ward_request r;
	ward_request_init(&r);
	r.argv = argv;
	r.isolation = WARD_ISO_SYSTEM;
	r.limits = q->s->o.defaults;
	r.limits.timeout_s = q->s->o.max.timeout_s < 30 ? q->s->o.max.timeout_s : 30;
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
		if (out)
			snprintf(out, outn, "%.*s", (int)res.out.len, res.out.data ? res.out.data : "");
	}
	ward_result_free(&res);
	return code;
}

enum MHD_Result fs_mkdir(struct ereq *q)
{
	enum MHD_Result rc;
	json_t *m;
	char rel[4096], shown[4200];
	struct sess *ss = fs_begin(q, &m, "path", rel, sizeof(rel), &rc);
	if (!ss)
		return rc;
	json_decref(m);
	json_t *e = NULL;
	if (stat_rel(ss->ws, rel, &e) == 0) {
		json_decref(e);
		sess_unref(q->s, ss);
		e2b_full_path(rel, shown, sizeof(shown));
		return cx_error(q, "already_exists", "path '%s' already exists", shown);
	}
	char err[512];
	char *argv[] = {"/bin/mkdir", "-p", "--", rel, NULL};
	int code = e2b_run(q, ss->ws, argv, NULL, 0, err, sizeof(err));
	int r = code == 0 ? stat_rel(ss->ws, rel, &e) : -1;
	sess_unref(q->s, ss);
	e2b_full_path(rel, shown, sizeof(shown));
	if (code != 0 || r < 0)
		return cx_error(q, "invalid_argument", "cannot make directory '%s': %s", shown, err);
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
	bool ok =
		e2b_map_path(json_string_value(json_object_get(m, "destination")), dst, sizeof(dst), err, sizeof(err));
	json_decref(m);
	if (!ok || e2b_is_home_or_root(src) || e2b_is_home_or_root(dst)) {
		sess_unref(q->s, ss);
		return cx_error(q, "invalid_argument", "%s", ok ? "the home and the root cannot be moved" : err);
	}
	json_t *e = NULL;
	int r = stat_rel(ss->ws, src, &e);
	json_decref(e);
	e = NULL;
	if (r < 0) {
		sess_unref(q->s, ss);
		return lib_error(q, r, src);
	}
	char *argv[] = {"/bin/mv", "-T", "--", src, dst, NULL};
	int code = e2b_run(q, ss->ws, argv, NULL, 0, err, sizeof(err));
	r = code == 0 ? stat_rel(ss->ws, dst, &e) : -1;
	sess_unref(q->s, ss);
	char a[4200], b[4200];
	e2b_full_path(src, a, sizeof(a));
	e2b_full_path(dst, b, sizeof(b));
	if (code != 0 || r < 0)
		return cx_error(q, "invalid_argument", "cannot move '%s' to '%s': %s", a, b, err);
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
	if (e2b_is_home_or_root(rel)) {
		sess_unref(q->s, ss);
		return cx_error(q, "invalid_argument", "the home and the root cannot be removed");
	}
	int r = ward_session_remove(ss->ws, rel, err, sizeof(err));
	sess_unref(q->s, ss);
	if (r < 0)
		return lib_error(q, r, rel);
	return cx_unary_ok(q, NULL);
}

/* ---- WatchDir: the directory listed every WATCH_POLL_S, compared ----
 *
 * Both listings are sorted by name (ward_session_list): one merge pass
 * finds what was made, changed and removed.  A watch covers at most
 * WATCH_MAX_ENTRIES entries (more: resource_exhausted), and a sandbox and
 * a client hold at most WATCH_PER_SBX / WATCH_PER_CLIENT watches at once;
 * after each poll the connection is looked at, so that a client that left
 * ends its watch within a poll, not at the next event it would be sent.
 * The listing is a call into the sandbox's file worker, which the sandbox
 * can stop: the stream, on the I/O thread, only asks for it and takes it
 * when it is done; the dialect's listers (WATCH_LISTERS threads) list,
 * one listing of an API key's at a time: a key whose sandboxes stall
 * their file workers, or that watches many directories, holds one lister
 * at most, never the others' turn. */

struct watch {
	struct e2b *e;
	struct e2b_sbx *x;
	char rel[4096];
	bool started, counted;
	int fd;                /* the connection's socket: is the client still there? */
	struct ward_dirent *d; /* the last listing */
	size_t n;
	double deadline, last;
	double asked; /* when it last asked for a listing */
	/* with the listers, under their lock */
	struct watch *qnext;    /* in their queue */
	bool pending;           /* a listing asked for, not yet done: the listers hold it */
	bool gone;              /* the stream is over: whoever holds it last frees it */
	bool fresh;             /* a listing the stream has not taken */
	int nrc;                /* ... its result: 0, -E2BIG, -ESRCH (no session) or a negative errno */
	struct ward_dirent *nd; /* ... and its entries */
	size_t nn;
};

/* The listers: WATCH_LISTERS threads of the dialect's that list what the
 * watches' streams ask for, oldest first of the keys without a listing in
 * flight (a listing is a call into the sandbox's file worker: never an I/O
 * thread's). */
struct e2b_listers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct watch *head, *tail;
	const char *busy[WATCH_LISTERS]; /* the owner each lister lists for, or NULL */
	struct workq q;
};

static void watch_release(struct watch *w)
{
	if (w->counted) {
		pthread_mutex_lock(&w->e->lock);
		w->x->nwatch--;
		pthread_mutex_unlock(&w->e->lock);
	}
	ward_session_list_free(w->d, w->n);
	ward_session_list_free(w->nd, w->nn);
	e2b_sbx_put(w->e, w->x);
	free(w);
}

/* The stream is over (on its I/O thread): a listing still pending is the
 * listers' to free. */
static void watch_free(void *p)
{
	struct watch *w = p;
	struct e2b_listers *L = w->e->listers;
	pthread_mutex_lock(&L->lock);
	w->gone = true;
	bool mine = !w->pending;
	pthread_mutex_unlock(&L->lock);
	if (mine)
		watch_release(w);
}

/* One more watch of w's sandbox, within its cap and its owner's; false
 * with why not in err. */
static bool watch_count(struct watch *w, char *err, size_t n)
{
	struct e2b *e = w->e;
	pthread_mutex_lock(&e->lock);
	unsigned mine = 0;
	for (struct e2b_sbx *x = e->sbxs; x; x = x->next)
		if (strcmp(x->owner, w->x->owner) == 0)
			mine += x->nwatch;
	bool ok = w->x->nwatch < WATCH_PER_SBX && mine < WATCH_PER_CLIENT;
	if (ok) {
		w->x->nwatch++;
		w->counted = true;
	}
	pthread_mutex_unlock(&e->lock);
	if (!ok && mine >= WATCH_PER_CLIENT)
		snprintf(err, n, "this API key's sandboxes hold %d watches already: stop one", WATCH_PER_CLIENT);
	else if (!ok)
		snprintf(err, n, "this sandbox holds %d watches already: stop one", WATCH_PER_SBX);
	return ok;
}

/* The listing of w's directory: 0, -E2BIG past WATCH_MAX_ENTRIES, or a
 * negative errno. */
static int watch_list(struct watch *w, struct ward_session *ws, struct ward_dirent **d, size_t *n, char *err,
                      size_t errlen)
{
	bool cut = false;
	int rc = ward_session_list_max(ws, w->rel, WATCH_MAX_ENTRIES, WARD_SESSION_LIST_MAX_BYTES, d, n, &cut, err,
	                               errlen);
	if (rc == 0 && cut) {
		ward_session_list_free(*d, *n);
		*d = NULL;
		*n = 0;
		return -E2BIG;
	}
	return rc;
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

static int watch_end(char **buf, size_t *len, const char *code, const char *msg)
{
	json_t *v = code ? json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg) : json_object();
	char *t = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (t)
		cx_frame(buf, len, 0x02, t, strlen(t));
	free(t);
	return CX_END;
}

/* The oldest watch in the queue whose owner has no listing in flight,
 * taken out of it for lister me; NULL when there is none. */
static void *watch_next(void *ctx, int me)
{
	struct e2b_listers *L = ctx;
	for (struct watch **pw = &L->head, *prev = NULL; *pw; prev = *pw, pw = &(*pw)->qnext) {
		struct watch *w = *pw;
		bool busy = false;
		for (int i = 0; i < WATCH_LISTERS && !busy; i++)
			busy = L->busy[i] && strcmp(L->busy[i], w->x->owner) == 0;
		if (busy)
			continue;
		*pw = w->qnext;
		if (L->tail == w)
			L->tail = prev;
		L->busy[me] = w->x->owner; /* (the watch holds its sandbox, so the string) */
		return w;
	}
	return NULL;
}

/* One listing, by lister me (its lock released). */
static void watch_lister(void *ctx, void *job, int me)
{
	struct e2b_listers *L = ctx;
	struct watch *w = job;
	pthread_mutex_lock(&L->lock);
	bool gone = w->gone;
	pthread_mutex_unlock(&L->lock);
	struct ward_dirent *d = NULL;
	size_t n = 0;
	int rc = -ESRCH;
	char err[256];
	struct sess *ss = gone ? NULL : e2b_sess(w->e, w->x);
	if (ss) {
		rc = watch_list(w, ss->ws, &d, &n, err, sizeof(err));
		sess_unref(w->e->s, ss);
	}
	pthread_mutex_lock(&L->lock);
	L->busy[me] = NULL;
	pthread_cond_broadcast(&L->cond); /* that owner's next may be another lister's now */
	w->pending = false;
	if (w->gone) {
		pthread_mutex_unlock(&L->lock);
		ward_session_list_free(d, n);
		watch_release(w);
		return;
	}
	ward_session_list_free(w->nd, w->nn);
	w->nd = d;
	w->nn = n;
	w->nrc = rc;
	w->fresh = true;
	pthread_mutex_unlock(&L->lock);
}

int watch_start(struct e2b *e)
{
	struct e2b_listers *L = calloc(1, sizeof(*L));
	if (!L)
		return -1;
	pthread_mutex_init(&L->lock, NULL);
	pthread_cond_init(&L->cond, NULL);
	e->listers = L;
	L->q = (struct workq){.lock = &L->lock,
	                      .cond = &L->cond,
	                      .take = watch_next,
	                      .run = watch_lister,
	                      .ctx = L,
	                      .name = "e2b-lister"};
	return workq_start(&L->q, WATCH_LISTERS) ? -1 : 0;
}

/* After the listener stopped (every stream over): the listers end, and
 * what they still held is freed. */
void watch_stop(struct e2b *e)
{
	struct e2b_listers *L = e->listers;
	if (!L)
		return;
	workq_stop(&L->q);
	for (struct watch *w = L->head, *nx; w; w = nx) {
		nx = w->qnext;
		watch_release(w); /* gone: its stream ended with the listener */
	}
	pthread_cond_destroy(&L->cond);
	pthread_mutex_destroy(&L->lock);
	free(L);
	e->listers = NULL;
}

/* One look (on the I/O thread, which never lists): the client, the
 * deadline, and the lister's newest listing merged with the last one;
 * CX_WAIT in between. */
static int watch_produce(void *p, char **buf, size_t *len)
{
	struct watch *w = p;
	if (!w->started) {
		w->started = true;
		w->last = w->asked = now_mono();
		return cx_frame(buf, len, 0, "{\"start\":{}}", 12) ? CX_MORE : CX_END;
	}
	if (w->e->stopping)
		return watch_end(buf, len, "unavailable", "the server is stopping");
	double t = now_mono();
	if (w->deadline > 0 && t >= w->deadline)
		return watch_end(buf, len, "deadline_exceeded", "the watch's deadline (Connect-Timeout-Ms) passed");
	if (e2b_client_gone(w->fd))
		return watch_end(buf, len, "canceled", "the client left");
	struct e2b_listers *L = w->e->listers;
	pthread_mutex_lock(&L->lock);
	bool fresh = w->fresh;
	int rc = w->nrc;
	struct ward_dirent *d = w->nd;
	size_t n = w->nn;
	w->fresh = false;
	w->nd = NULL;
	w->nn = 0;
	if (!w->pending && t - w->asked >= WATCH_POLL_S) {
		w->asked = t;
		w->pending = true;
		w->qnext = NULL;
		if (L->tail)
			L->tail->qnext = w;
		else
			L->head = w;
		L->tail = w;
		pthread_cond_signal(&L->cond);
	}
	pthread_mutex_unlock(&L->lock);
	if (fresh) {
		if (rc == -ESRCH)
			return watch_end(buf, len, "unavailable", "the sandbox was killed or timed out");
		if (rc == -E2BIG) {
			char err[256];
			snprintf(err, sizeof(err), "the watched directory grew past %d entries: watch a smaller one",
			         WATCH_MAX_ENTRIES);
			return watch_end(buf, len, "resource_exhausted", err);
		}
		if (rc < 0)
			return watch_end(buf, len, "not_found", "the watched directory is gone");
		/* one merge pass over the two sorted listings */
		size_t i = 0, j = 0;
		while (i < n || j < w->n) {
			int c = i == n ? 1 : j == w->n ? -1 : strcmp(d[i].name, w->d[j].name);
			if (c < 0)
				watch_event(buf, len, d[i++].name, "EVENT_TYPE_CREATE");
			else if (c > 0)
				watch_event(buf, len, w->d[j++].name, "EVENT_TYPE_REMOVE");
			else {
				const struct ward_dirent *o = &w->d[j++], *nw = &d[i++];
				if (o->size != nw->size || o->mtime != nw->mtime)
					watch_event(buf, len, nw->name, "EVENT_TYPE_WRITE");
				else if (o->mode != nw->mode)
					watch_event(buf, len, nw->name, "EVENT_TYPE_CHMOD");
			}
		}
		ward_session_list_free(w->d, w->n);
		w->d = d;
		w->n = n;
	}
	if (!*len && t - w->last >= E2B_KEEPALIVE_S)
		cx_frame(buf, len, 0, "{\"keepalive\":{}}", 16);
	if (!*len)
		return CX_WAIT;
	w->last = t;
	return CX_MORE;
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
	w->fd = e2b_conn_fd(q);
	long long ms = cx_timeout_ms(q);
	const char *code = NULL;
	if (!m)
		code = "invalid_argument";
	else if (json_is_true(json_object_get(m, "recursive")))
		code = "unimplemented",
		snprintf(err, sizeof(err), "recursive watches are not offered: watch each directory");
	else if (ms < 0)
		code = "invalid_argument", snprintf(err, sizeof(err), "Connect-Timeout-Ms: give at most 10 digits");
	else if (!e2b_map_path(json_string_value(json_object_get(m, "path")), w->rel, sizeof(w->rel), err, sizeof(err)))
		code = "invalid_argument";
	json_decref(m);
	if (!code) {
		struct sess *ss = e2b_sess(w->e, w->x);
		int rc = ss ? watch_list(w, ss->ws, &w->d, &w->n, err, sizeof(err)) : -ESRCH;
		if (ss)
			sess_unref(q->s, ss);
		if (rc == -E2BIG) {
			code = "resource_exhausted";
			snprintf(err, sizeof(err),
			         "cannot watch %.300s: it holds more than %d entries; watch a smaller "
			         "directory",
			         w->rel, WATCH_MAX_ENTRIES);
		} else if (rc < 0) {
			code = rc == -ESRCH ? "unavailable" : rc == -ENOTDIR ? "invalid_argument" : "not_found";
			snprintf(err, sizeof(err), "cannot watch %.300s: %s", w->rel, strerror(-rc));
		} else if (!watch_count(w, err, sizeof(err)))
			code = "resource_exhausted";
	}
	w->deadline = ms > 0 ? now_mono() + (double)ms / 1000.0 : 0;
	if (code) {
		/* the stream still answers 200: Connect says errors in its end */
		char *buf = NULL;
		size_t len = 0;
		watch_end(&buf, &len, code, err);
		watch_free(w);
		return e2b_answer(q, 200, "application/connect+json", buf, len);
	}
	return cx_stream_start(q, "application/connect+json", watch_produce, w, watch_free, NULL, 0);
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
	if (max >= q->s->o.max_answer_client)
		max = q->s->o.max_answer_client - 1;
	/* what the read may bring is held in the answer budget before it is
	 * read (the worker keeps what it brought): unread answers never hold
	 * the server's memory beyond --max-answer-total, nor one client's
	 * beyond --max-answer-client */
	int why = answer_hold(q->s, q->r->who, max + 1, &q->r->answer);
	if (why < 0) {
		sess_unref(q->s, ss);
		char msg[400];
		answer_hold_error(q->s, why, max + 1, msg, sizeof(msg));
		return e2b_api_error(q, 503, "a read of up to %zu bytes: %s", max, msg);
	}
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = ward_session_read(ss->ws, rel, max, &data, &len, err, sizeof(err));
	sess_unref(q->s, ss);
	char shown[4200];
	e2b_full_path(rel, shown, sizeof(shown));
	if (rc == -ENOENT)
		return e2b_api_error(q, 404, "path '%s' does not exist", shown);
	if (rc == -EISDIR)
		return e2b_api_error(q, 400, "path '%s' is a directory: list it instead", shown);
	if (rc == -EFBIG)
		return e2b_api_error(q, 400, "the file is larger than %zu bytes, the most one read returns here", max);
	if (rc < 0)
		return e2b_api_error(q, rc == -EACCES || rc == -EPERM || rc == -ELOOP ? 403 : 500,
		                     "cannot read '%s': %s", shown, err[0] ? err : strerror(-rc));
	return e2b_answer(q, 200, "application/octet-stream", (char *)data, len);
}
