/* e2b_volfiles.c — E2B's volume content API (SPEC §18, research note
 * e2b-round2 §3.2) on the E2B listener (E2B_VOLUME_API_URL):
 *
 *   PUT  /volumecontent/ID/file?path=P&mode=M   the body, streamed  → 201 VolumeEntryStat
 *   GET  /volumecontent/ID/file?path=P                              → 200 the bytes
 *   GET  /volumecontent/ID/dir?path=P&depth=D                       → 200 [VolumeEntryStat]
 *   POST /volumecontent/ID/dir?path=P&force=true                    → 201 VolumeEntryStat
 *   GET|PATCH|DELETE /volumecontent/ID/path?path=P                  → 200 / 200 / 204
 *
 * Credentials: Authorization: Bearer TOKEN, the volume's own (401 else,
 * whether the id is unknown or the token wrong).  A path is the volume's
 * (absolute or not, ".." refused); every step is resolved from the
 * volume's root with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV): a tenant's symlink to /etc/shadow is the volume's
 * /etc/shadow, never the host's, and a link is only ever a link inside
 * the volume's own file system (a hard link cannot leave it).  Each call's
 * file system work runs with the thread's fsuid and fsgid the volume's
 * owner (E2B_VOLUME_UID), which drops the thread's file capabilities
 * until it is set back: what the tenant made unreadable stays so.  An
 * upload is pumped (e2b_pump.c: no file system work on an I/O thread, a
 * slow or frozen disk stalls only its own request) into an unnamed file
 * (O_TMPFILE) in its directory, named only when whole: past the volume's
 * size the write fails with ENOSPC and the answer is 507, and the old file
 * stays. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errf.h"
#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_pump.h"
#include "dialect/e2b/e2b_vol.h"
#include "system/treecopy.h"

#define VC_PREFIX "/volumecontent/"
#define VC_MAX_DEPTH 32
#define VC_MAX_ENTRIES 10000
#define VC_SANDBOX_ID 1000 /* the owner as a sandbox sees it (WARD_SANDBOX_UID) */

enum vc_kind { VC_FILE, VC_DIR, VC_PATH };

struct volreq {
	enum vc_kind kind;
	int root;  /* the volume's root (O_PATH), -1 */
	uid_t uid; /* its owner on disk */
	gid_t gid;
	unsigned code; /* refused before the body's end: the status, why in msg */
	char msg[400];
	char rel[4096];   /* the path below the root, "" for the root */
	char shown[4100]; /* "/" rel */
	int dir, tmp;     /* PUT: the parent (O_PATH), the file as it is written */
	char leaf[256];
	unsigned mode;
	char body[1024]; /* PATCH's JSON */
	size_t blen;
	bool big;
	struct body_pump *pump; /* PUT's body (its file opened and written by the pump) */
};

struct fsid {
	uid_t uid;
	gid_t gid;
};

/* The calling thread's file rights become the volume owner's (its file
 * capabilities drop with a nonzero fsuid), until as_runner. */
static struct fsid as_owner(const struct volreq *v)
{
	struct fsid was = {.gid = (gid_t)setfsgid(v->gid)};
	was.uid = (uid_t)setfsuid(v->uid);
	return was;
}

static void as_runner(struct fsid was)
{
	setfsuid(was.uid);
	setfsgid(was.gid);
}

/* rel below root, every step inside it; the last followed unless O_NOFOLLOW. */
static int at(int root, const char *rel, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, root, rel[0] ? rel : ".", &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static int fail(struct volreq *v, unsigned code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct volreq *v, unsigned code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	v->code = code;
	base_verrf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* errno of a step on path as a status and message. */
static int fail_errno(struct volreq *v, int e, const char *path)
{
	if (e == ENOENT || e == ENOTDIR)
		return fail(v, 404, "path %s not found in the volume", path);
	if (e == ENOSPC || e == EDQUOT || e == EFBIG)
		return fail(v, 507,
		            "the volume is full at %s (%s): remove files, or ask the operator for a larger "
		            "--e2b-volume-max-bytes",
		            path, strerror(e));
	if (e == EACCES || e == EPERM)
		return fail(v, 403, "%s: %s (as the volume's files' owner)", path, strerror(e));
	if (e == EEXIST || e == ENOTEMPTY || e == EISDIR)
		return fail(v, 409, "%s: %s", path, strerror(e));
	return fail(v, 400, "%s: %s", path, strerror(e));
}

/* The path query, the volume's: v->rel and v->shown, or 400. */
static int path_parse(struct volreq *v, const char *p)
{
	if (!p || !*p)
		return fail(v, 400, "give the path (?path=/a.txt)");
	size_t k = 0;
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (!n)
			break;
		if (n == 2 && !strncmp(s, "..", 2))
			return fail(v, 400, "path %.200s: '..' is refused: name paths inside the volume", p);
		if (!(n == 1 && s[0] == '.')) {
			if (n > 255 || k + n + 2 >= sizeof(v->rel))
				return fail(v, 400, "path %.200s is too long", p);
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
					return fail(v, 400, "path %.200s holds a control byte", p);
			if (k)
				v->rel[k++] = '/';
			memcpy(v->rel + k, s, n);
			k += n;
		}
		s += n;
	}
	v->rel[k] = 0;
	snprintf(v->shown, sizeof(v->shown), "/%s", v->rel);
	return 0;
}

/* The parent of v->rel (made, parents too, when make), O_PATH, and the
 * leaf in v->leaf: fd, or -1 with the status set. */
static int parent(struct volreq *v, bool make)
{
	if (!v->rel[0])
		return fail(v, 400, "path %s is the volume's root", v->shown);
	char *slash = strrchr(v->rel, '/');
	base_errf(v->leaf, sizeof(v->leaf), "%s", slash ? slash + 1 : v->rel); /* (a name is at most 255) */
	char dir[4096] = "";
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - v->rel), v->rel);
	int fd = at(v->root, dir, O_PATH | O_DIRECTORY);
	if (fd >= 0 || fd != -ENOENT || !make)
		return fd >= 0 ? fd : fail_errno(v, -fd, v->shown);
	/* each step from the root: opened, else made in the one before */
	int prev = at(v->root, "", O_PATH | O_DIRECTORY);
	for (char *p = dir; prev >= 0;) {
		char *end = strchr(p, '/');
		char saved = end ? *end : 0;
		if (end)
			*end = 0;
		int next = at(v->root, dir, O_PATH | O_DIRECTORY);
		if (next == -ENOENT && (mkdirat(prev, p, 0755) == 0 || errno == EEXIST))
			next = at(v->root, dir, O_PATH | O_DIRECTORY);
		close(prev);
		prev = next;
		if (!end)
			break;
		*end = saved;
		p = end + 1;
	}
	return prev >= 0 ? prev : fail_errno(v, -prev, v->shown);
}

/* ---- answers ---- */

static json_t *entry_json(const char *name, const char *path, int dir, const char *leaf)
{
	struct stat st;
	if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
		return NULL;
	const char *type = S_ISREG(st.st_mode)   ? "file"
	                   : S_ISDIR(st.st_mode) ? "directory"
	                   : S_ISLNK(st.st_mode) ? "symlink"
	                                         : "unknown";
	char at_s[40], mt[40], ct[40];
	e2b_iso_time(at_s, sizeof(at_s), (double)st.st_atim.tv_sec + st.st_atim.tv_nsec / 1e9);
	e2b_iso_time(mt, sizeof(mt), (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9);
	e2b_iso_time(ct, sizeof(ct), (double)st.st_ctim.tv_sec + st.st_ctim.tv_nsec / 1e9);
	json_t *j =
		json_pack("{s:s,s:s,s:s,s:I,s:i,s:i,s:i,s:s,s:s,s:s}", "name", name, "path", path, "type", type, "size",
	                  (json_int_t)st.st_size, "mode", (int)(st.st_mode & 07777), "uid",
	                  st.st_uid == E2B_VOLUME_UID ? VC_SANDBOX_ID : 65534, "gid",
	                  st.st_gid == E2B_VOLUME_UID ? VC_SANDBOX_ID : 65534, "atime", at_s, "mtime", mt, "ctime", ct);
	if (j && S_ISLNK(st.st_mode)) {
		char t[4096];
		ssize_t n = readlinkat(dir, leaf, t, sizeof(t) - 1);
		t[n > 0 ? n : 0] = 0;
		json_object_set_new(j, "target", json_string(t));
	}
	return j;
}

/* v->rel's entry (not followed), or the error answered. */
static enum MHD_Result stat_answer(struct ereq *q, struct volreq *v, unsigned code)
{
	struct fsid was = as_owner(v);
	int fd = at(v->root, v->rel, O_PATH | O_NOFOLLOW);
	const char *name = strrchr(v->shown, '/') + 1;
	json_t *j = fd >= 0 ? entry_json(name, v->shown, fd, "") : NULL;
	if (fd >= 0)
		close(fd);
	as_runner(was);
	if (!j)
		return fd < 0 ? (fail_errno(v, -fd, v->shown), e2b_api_error(q, v->code, "%s", v->msg))
		              : e2b_api_error(q, 500, "cannot stat %s", v->shown);
	return e2b_answer_json(q, code, j);
}

static enum MHD_Result file_get(struct ereq *q, struct volreq *v)
{
	struct fsid was = as_owner(v);
	int fd = at(v->root, v->rel, O_RDONLY | O_NONBLOCK);
	as_runner(was);
	struct stat st;
	if (fd < 0)
		fail_errno(v, -fd, v->shown);
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		fail(v, 400, "path %s is not a file", v->shown);
	if (v->code) {
		if (fd >= 0)
			close(fd);
		return e2b_api_error(q, v->code, "%s", v->msg);
	}
	struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* it closes fd */
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	q->code = 200;
	q->r->code = 200;
	q->r->stream = r; /* read from fd as it is sent, by the I/O threads, within the request timeout */
	return MHD_YES;
}

/* PUT's file, whole: named at its path (over an older file), 201. */
static enum MHD_Result file_put(struct ereq *q, struct volreq *v)
{
	struct fsid was = as_owner(v);
	char tmp[64], proc[64], rnd[17];
	e2b_hex_random(rnd, 8);
	snprintf(tmp, sizeof(tmp), ".ward-upload-%s", rnd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", v->tmp);
	int r = fchmod(v->tmp, v->mode);
	if (r == 0)
		r = linkat(AT_FDCWD, proc, v->dir, tmp, AT_SYMLINK_FOLLOW);
	if (r == 0 && renameat(v->dir, tmp, v->dir, v->leaf) < 0) {
		int e = errno;
		unlinkat(v->dir, tmp, 0);
		errno = e;
		r = -1;
	}
	if (r < 0)
		fail_errno(v, errno, v->shown);
	as_runner(was);
	if (v->code)
		return e2b_api_error(q, v->code, "%s", v->msg);
	return stat_answer(q, v, 201);
}

/* dir's entries into a, depth levels down; false past VC_MAX_ENTRIES. */
static bool list_in(int dir, const char *shown, unsigned depth, json_t *a)
{
	int d = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *ds = d >= 0 ? fdopendir(d) : NULL;
	if (!ds) {
		if (d >= 0)
			close(d);
		return true;
	}
	bool ok = true;
	for (struct dirent *de; ok && (de = readdir(ds));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (json_array_size(a) >= VC_MAX_ENTRIES) {
			ok = false;
			break;
		}
		char path[4400];
		snprintf(path, sizeof(path), "%s%s%s", shown, strcmp(shown, "/") ? "/" : "", de->d_name);
		json_t *j = entry_json(de->d_name, path, d, de->d_name);
		if (!j)
			continue;
		bool sub = !strcmp(json_string_value(json_object_get(j, "type")), "directory");
		json_array_append_new(a, j);
		if (!sub || depth <= 1)
			continue;
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		                       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV};
		int s = (int)syscall(SYS_openat2, d, de->d_name, &how, sizeof(how));
		if (s >= 0) {
			ok = list_in(s, path, depth - 1, a);
			close(s);
		}
	}
	closedir(ds);
	return ok;
}

static enum MHD_Result dir_get(struct ereq *q, struct volreq *v)
{
	const char *ds = e2b_query(q, "depth");
	char *end = NULL;
	long depth = ds && *ds ? strtol(ds, &end, 10) : 1;
	if ((end && *end) || depth < 1 || depth > VC_MAX_DEPTH)
		return e2b_api_error(q, 400, "depth: give 1 to %d", VC_MAX_DEPTH);
	struct fsid was = as_owner(v);
	int fd = at(v->root, v->rel, O_RDONLY | O_DIRECTORY);
	json_t *a = json_array();
	bool ok = fd >= 0 && list_in(fd, v->shown, (unsigned)depth, a);
	if (fd >= 0)
		close(fd);
	as_runner(was);
	if (fd < 0) {
		json_decref(a);
		fail_errno(v, -fd, v->shown);
		return e2b_api_error(q, v->code, "%s", v->msg);
	}
	if (!ok) {
		json_decref(a);
		return e2b_api_error(q, 400, "%s holds more than %d entries at depth %ld: list less deep", v->shown,
		                     VC_MAX_ENTRIES, depth);
	}
	return e2b_answer_json(q, 200, a);
}

static bool is_true(const char *s)
{
	return s && (!strcmp(s, "true") || !strcmp(s, "1"));
}

static enum MHD_Result dir_post(struct ereq *q, struct volreq *v)
{
	bool force = is_true(e2b_query(q, "force"));
	struct fsid was = as_owner(v);
	int dir = parent(v, force);
	if (dir >= 0) {
		/* the leaf looked at inside the volume and changed through the
		 * directory just made: a link the tenant put there (to
		 * /proc/self/fd/N, another volume's root) is never followed on
		 * the host, neither before the mkdirat nor swapped in after it */
		int there = force ? at(v->root, v->rel, O_PATH | O_DIRECTORY) : -1;
		int made = -1;
		if (there >= 0)
			close(there);
		else if (mkdirat(dir, v->leaf, 0700) < 0)
			fail_errno(v, errno, v->shown);
		else if ((made = openat(dir, v->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		         fchmod(made, v->mode) < 0)
			fail_errno(v, errno, v->shown);
		if (made >= 0)
			close(made);
		close(dir);
	}
	as_runner(was);
	if (v->code)
		return e2b_api_error(q, v->code, "%s", v->msg);
	return stat_answer(q, v, 201);
}

/* PATCH {uid, gid, mode}: the mode; uid and gid can only be the sandbox's
 * user's, which every file of a volume is. */
static enum MHD_Result path_patch(struct ereq *q, struct volreq *v)
{
	json_t *b = v->big ? NULL : json_loadb(v->body, v->blen, 0, NULL);
	json_t *uid = json_object_get(b, "uid"), *gid = json_object_get(b, "gid"), *mode = json_object_get(b, "mode");
	bool bad = !json_is_object(b) || (uid && !json_is_null(uid) && json_integer_value(uid) != VC_SANDBOX_ID) ||
	           (gid && !json_is_null(gid) && json_integer_value(gid) != VC_SANDBOX_ID) ||
	           (mode && !json_is_null(mode) &&
	            (!json_is_integer(mode) || json_integer_value(mode) < 0 || json_integer_value(mode) > 07777));
	long m = json_is_integer(mode) ? (long)json_integer_value(mode) : -1;
	json_decref(b);
	if (bad)
		return e2b_api_error(q, 400,
		                     "give {\"mode\": M} (0 to 4095); uid and gid can only be %d, the sandbox's user, "
		                     "who owns every file of a volume",
		                     VC_SANDBOX_ID);
	if (m >= 0) {
		struct fsid was = as_owner(v);
		int fd = at(v->root, v->rel, O_PATH | O_NOFOLLOW);
		struct stat st;
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (fd < 0)
			fail_errno(v, -fd, v->shown);
		else if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))
			fail(v, 400, "path %s is a symlink: its mode is not its own", v->shown);
		else if (fchmodat(AT_FDCWD, proc, (mode_t)m & 01777, 0) < 0)
			fail_errno(v, errno, v->shown);
		if (fd >= 0)
			close(fd);
		as_runner(was);
		if (v->code)
			return e2b_api_error(q, v->code, "%s", v->msg);
	}
	return stat_answer(q, v, 200);
}

static enum MHD_Result path_delete(struct ereq *q, struct volreq *v)
{
	struct fsid was = as_owner(v);
	int dir = parent(v, false);
	struct stat st;
	if (dir >= 0 && fstatat(dir, v->leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		fail_errno(v, errno, v->shown);
	else if (dir >= 0) {
		int r = treecopy_remove(dir, v->leaf);
		if (r < 0)
			fail_errno(v, -r, v->shown);
	}
	if (dir >= 0)
		close(dir);
	as_runner(was);
	if (v->code)
		return e2b_api_error(q, v->code, "%s", v->msg);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

/* ---- the request's life ---- */

/* The route: kind and method, or the status. */
static void route(struct ereq *q, struct volreq *v, char *id, size_t n)
{
	const char *p = q->path + strlen(VC_PREFIX);
	size_t k = strcspn(p, "/");
	const char *kind = p + k + (p[k] == '/');
	if (!k || k >= n || p[k] != '/') {
		fail(v, 404, "no such endpoint on the E2B listener: %.200s", q->path);
		return;
	}
	snprintf(id, n, "%.*s", (int)k, p);
	const char *m = q->method;
	bool get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
	if (!strcmp(kind, "file"))
		v->kind = VC_FILE, v->code = get || !strcmp(m, "PUT") ? 0 : 405;
	else if (!strcmp(kind, "dir"))
		v->kind = VC_DIR, v->code = get || !strcmp(m, "POST") ? 0 : 405;
	else if (!strcmp(kind, "path"))
		v->kind = VC_PATH, v->code = get || !strcmp(m, "PATCH") || !strcmp(m, "DELETE") ? 0 : 405;
	else
		fail(v, 404, "no such endpoint on the E2B listener: %.200s", q->path);
	if (v->code == 405)
		fail(v, 405, "%s is not allowed on %.200s", m, q->path);
}

/* The volume's token opens it: its root held, its owner the client. */
static void auth(struct ereq *q, struct volreq *v, const char *id)
{
	const char *h = e2b_header(q, "Authorization");
	const char *tok = h && !strncasecmp(h, "Bearer ", 7) ? h + 7 : NULL;
	char owner[96];
	v->root = vol_open(q->e, id, tok, owner, sizeof(owner));
	struct stat st;
	if (v->root < 0 || fstat(v->root, &st) < 0) {
		fail(v, 401,
		     "missing or wrong volume token for volume %.80s: send the token Volume.create or "
		     "Volume.getInfo gave as Authorization: Bearer TOKEN (the SDK does; set "
		     "E2B_VOLUME_API_URL to this listener)%s",
		     id, "");
		return;
	}
	v->uid = st.st_uid;
	v->gid = st.st_gid;
	snprintf(q->who, sizeof(q->who), "%s", owner); /* its answers count in its owner's share */
	conn_trust(q->s, q->c);
}

/* PUT, the pump's start: the unnamed file its body goes into. */
static void put_begin(void *arg)
{
	struct volreq *v = arg;
	struct fsid was = as_owner(v);
	v->dir = parent(v, true);
	if (v->dir >= 0) {
		v->tmp = openat(v->dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (v->tmp < 0)
			fail_errno(v, errno, v->shown);
	}
	as_runner(was);
}

/* PUT, on the pump: a piece written (after a failure, dropped). */
static void put_take(void *arg, const char *p, size_t n)
{
	struct volreq *v = arg;
	while (n && !v->code) {
		ssize_t w = write(v->tmp, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fail_errno(v, w < 0 ? errno : ENOSPC, v->shown);
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void put_finish(void *arg, bool gone)
{
	(void)arg;
	(void)gone;
}

static void volreq_free(void *arg)
{
	struct volreq *v = arg;
	if (v->tmp >= 0)
		close(v->tmp); /* never named: gone with it */
	if (v->dir >= 0)
		close(v->dir);
	if (v->root >= 0)
		close(v->root);
	free(v);
}

bool vc_begin(struct ereq *q)
{
	if (strncmp(q->path, VC_PREFIX, strlen(VC_PREFIX)) != 0)
		return false;
	struct volreq *v = calloc(1, sizeof(*v));
	if (!v)
		return false;
	q->vol = v;
	v->root = v->dir = v->tmp = -1;
	char id[100];
	route(q, v, id, sizeof(id));
	if (!v->code)
		auth(q, v, id);
	if (!v->code)
		path_parse(v, e2b_query(q, "path"));
	const char *ms = e2b_query(q, "mode");
	char *end = NULL;
	unsigned long mode = ms && *ms ? strtoul(ms, &end, 10) : v->kind == VC_DIR ? 0755 : 0644;
	if (!v->code && ((end && *end) || mode > 07777))
		fail(v, 400, "mode: give the permission bits in decimal (0o644 is 420)");
	v->mode = (unsigned)mode & 01777; /* never set-uid or set-gid */
	const char *uid = e2b_query(q, "uid"), *gid = e2b_query(q, "gid");
	if (!v->code && ((uid && *uid && strcmp(uid, "1000")) || (gid && *gid && strcmp(gid, "1000"))))
		fail(v, 400, "uid and gid can only be %d, the sandbox's user, who owns every file of a volume",
		     VC_SANDBOX_ID);
	const struct pump_sink put = {put_begin, put_take, NULL, put_finish, volreq_free, v, "e2b-vol-upload"};
	if (!v->code && v->kind == VC_FILE && !strcmp(q->method, "PUT"))
		v->pump = pump_begin(q, &put, &v->code, v->msg, sizeof(v->msg));
	return true;
}

bool vc_feed(struct ereq *q, const char *p, size_t *n)
{
	struct volreq *v = q->vol;
	if (v->pump)
		return pump_feed(v->pump, q->s, p, n);
	if (v->code)
		return true; /* refused: read, dropped */
	if (v->blen + *n > sizeof(v->body))
		v->big = true;
	else {
		memcpy(v->body + v->blen, p, *n);
		v->blen += *n;
	}
	return true;
}

enum MHD_Result vc_answer(struct ereq *q)
{
	struct volreq *v = q->vol;
	if (v->pump)
		pump_end(v->pump);
	if (v->code == 503)
		q->r->retry_after = 1;
	if (v->code)
		return e2b_api_error(q, v->code, "%s", v->msg);
	bool get = !strcmp(q->method, "GET") || !strcmp(q->method, "HEAD");
	switch (v->kind) {
	case VC_FILE:
		return get ? file_get(q, v) : file_put(q, v);
	case VC_DIR:
		return get ? dir_get(q, v) : dir_post(q, v);
	case VC_PATH:
		return get                           ? stat_answer(q, v, 200)
		       : !strcmp(q->method, "PATCH") ? path_patch(q, v)
		                                     : path_delete(q, v);
	}
	return MHD_NO;
}

void vc_free(struct ereq *q)
{
	struct volreq *v = q->vol;
	if (!v)
		return;
	q->vol = NULL;
	if (v->pump)
		pump_release(v->pump);
	else
		volreq_free(v);
}
