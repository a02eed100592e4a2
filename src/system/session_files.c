/* session_files.c — a session's files API (ward_session_write, read, list,
 * remove) and the files out after an exec (SPEC §12), supervisor side: a
 * request with one end of a stream socket; a worker PID 1 forks does the
 * operation inside the sandbox, as its user, and answers on the stream.
 * Nothing here touches a path under /work on the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/errf.h"
#include "core/backend.h"
#include "core/egress.h"
#include "core/pathguard.h"
#include "core/supervise.h"
#include "image/root.h"
#include "sandbox/cgroup.h"
#include "sandbox/seccomp.h"
#include "system/collect_walk.h"
#include "system/egress.h"
#include "system/session.h"
#include "system/session_proto.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

/* One files call's stream to its worker, and the call's deadline: one for
 * the whole call, however many reads and writes it takes, so that a worker
 * the sandbox stops and continues, or one that trickles, cannot hold the
 * caller (a server's worker thread) past it. */
struct fcall {
	int fd;
	double until; /* monotonic */
};

/* ------------------------------------------------------------ files */

static bool path_ok(const char *path, bool empty_ok, char *err, size_t errlen)
{
	if (!path || (!path[0] && empty_ok))
		return path != NULL;
	if (strlen(path) >= SM_MAX_STR) {
		base_errf(err, errlen, "path too long (at most %d bytes)", SM_MAX_STR - 1);
		return false;
	}
	return pathguard_check_session(path, strlen(path), empty_ok, err, errlen) == 0;
}

/* Start a file op: c->fd is the supervisor's end of its stream, c->until
 * the call's deadline. */
static int file_op(struct ward_session *s, int op, const char *path, uint32_t mode, uint64_t max, struct fcall *c,
                   char *err, size_t errlen)
{
	c->fd = -1;
	c->until = monotonic_now() + s->call_s;
	if (session_refuse_frozen(s, err, errlen) < 0)
		return -EBUSY;
	if (op != SM_COLLECT && !path_ok(path, op == SM_LIST, err, errlen))
		return -EINVAL;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		base_errf(err, errlen, "cannot create a socket: %s", strerror(errno));
		return -errno;
	}
	struct session_msg m = {.op = (uint8_t)op, .mode = mode, .max = max};
	snprintf(m.str, sizeof(m.str), "%s", path);
	int r = session_send(s, &m, &sp[1], 1);
	close(sp[1]);
	if (r < 0) {
		close(sp[0]);
		base_errf(err, errlen, "the session is gone (%s): destroy it", strerror(-r));
		return r;
	}
	c->fd = sp[0];
	return 0;
}

/* Wait until c's stream is ready for ev: 0, -ETIMEDOUT at the call's
 * deadline, or -errno. */
static int fcall_wait(const struct fcall *c, short ev)
{
	for (;;) {
		double left = c->until - monotonic_now();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = c->fd, .events = ev};
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Up to n bytes: how many, 0 at the stream's end, or -errno (-ETIMEDOUT). */
static ssize_t fcall_read(const struct fcall *c, void *p, size_t n)
{
	for (;;) {
		int r = fcall_wait(c, POLLIN);
		if (r < 0)
			return r;
		ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
		if (k >= 0)
			return k;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

static int read_full(const struct fcall *c, void *p, size_t n)
{
	char *b = p;
	while (n) {
		ssize_t k = fcall_read(c, b, n);
		if (k <= 0)
			return k < 0 ? (int)k : -EPROTO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The worker's head: its r, with a message for the errnos a caller sees. */
static int file_head(struct ward_session *s, const struct fcall *c, struct file_head *h, const char *what,
                     const char *path, char *err, size_t errlen)
{
	int r = read_full(c, h, sizeof(*h));
	if (r == -ETIMEDOUT) {
		base_errf(err, errlen,
		          "the session's file worker did not answer within the call's deadline (%g s): the "
		          "sandbox may have stopped it",
		          s->call_s);
		return r;
	}
	if (r < 0 && !ward_session_alive(s)) {
		base_errf(err, errlen, "the session ended during the call");
		return -ESRCH;
	}
	if (r < 0) {
		base_errf(err, errlen, "the session's file worker did not answer (%s)", strerror(-r));
		return -EIO;
	}
	if (h->r < 0)
		base_errf(err, errlen, "cannot %s '%s' in the session: %s", what, path, strerror(-h->r));
	return h->r;
}

/* A write whose bytes come in pieces (ward.h). */
struct ward_session_upload {
	struct ward_session *s;
	struct fcall c;
	bool broken; /* the worker stopped reading, or a deadline passed: its head says why */
	char path[SM_MAX_STR];
};

int ward_session_write_begin(struct ward_session *s, const char *path, mode_t mode, struct ward_session_upload **out,
                             char *err, size_t errlen)
{
	*out = NULL;
	struct ward_session_upload *u = calloc(1, sizeof(*u));
	if (!u) {
		base_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = file_op(s, SM_WRITE, path, mode ? mode & 07777 : 0644, 0, &u->c, err, errlen);
	if (r < 0) {
		free(u);
		return r;
	}
	u->s = s;
	snprintf(u->path, sizeof(u->path), "%s", path);
	*out = u;
	return 0;
}

int ward_session_write_more(struct ward_session_upload *u, const void *data, size_t len)
{
	const char *b = data;
	u->c.until = monotonic_now() + u->s->call_s; /* each piece within the call's deadline */
	for (size_t off = 0; off < len && !u->broken;) {
		if (fcall_wait(&u->c, POLLOUT) < 0) {
			u->broken = true; /* the deadline */
			break;
		}
		ssize_t n = send(u->c.fd, b + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			u->broken = true; /* the worker stopped reading */
		else
			off += (size_t)n;
	}
	return u->broken ? -EIO : 0;
}

int ward_session_write_end(struct ward_session_upload *u, char *err, size_t errlen)
{
	if (!u)
		return 0;
	shutdown(u->c.fd, SHUT_WR); /* its head within the deadline of the last piece */
	struct file_head h;
	int r = file_head(u->s, &u->c, &h, "write", u->path, err, errlen);
	close(u->c.fd);
	free(u);
	return r;
}

int ward_session_write(struct ward_session *s, const char *path, const void *data, size_t len, mode_t mode, char *err,
                       size_t errlen)
{
	struct ward_session_upload *u;
	int r = ward_session_write_begin(s, path, mode, &u, err, errlen);
	if (r < 0)
		return r;
	ward_session_write_more(u, data, len); /* a failure: the head says why */
	return ward_session_write_end(u, err, errlen);
}

int ward_session_read(struct ward_session *s, const char *path, size_t max, unsigned char **data, size_t *len,
                      char *err, size_t errlen)
{
	struct fcall c;
	*data = NULL;
	*len = 0;
	int r = file_op(s, SM_READ, path, 0, max, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "read", path, err, errlen);
	if (r == 0 && h.len > max) {
		base_errf(err, errlen, "'%s' is larger than %zu bytes", path, max);
		r = -EFBIG;
	}
	/* its size when the worker opened it (never more than max): what a
	 * writer adds meanwhile is not read */
	unsigned char *buf = r < 0 ? NULL : malloc((size_t)h.len + 1);
	if (r == 0 && !buf)
		r = -ENOMEM;
	size_t got = 0;
	while (r == 0 && got < h.len) {
		ssize_t n = fcall_read(&c, buf + got, (size_t)h.len - got);
		if (n == -ETIMEDOUT) {
			base_errf(err, errlen, "'%s' did not arrive within the call's deadline (%g s)", path,
			          s->call_s);
			r = (int)n;
		}
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(c.fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[got] = 0;
	*data = buf;
	*len = got;
	return 0;
}

static int read_entry(const struct fcall *c, struct ward_dirent *d)
{
	struct file_entry e;
	ssize_t k = fcall_read(c, &e, 1);
	if (k == 0)
		return 1; /* the end */
	if (k < 0 || (k = read_full(c, (char *)&e + 1, sizeof(e) - 1)) < 0)
		return k == -ETIMEDOUT ? -ETIMEDOUT : -EPROTO;
	d->name = malloc((size_t)e.name_len + 1);
	if (!d->name || (k = read_full(c, d->name, e.name_len)) < 0) {
		free(d->name);
		return k == -ETIMEDOUT ? -ETIMEDOUT : -EPROTO;
	}
	d->name[e.name_len] = 0;
	d->type = (char)e.type;
	d->size = e.size;
	d->mode = e.mode;
	d->mtime = (double)e.mtime_ns / 1e9;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ward_dirent *)a)->name, ((const struct ward_dirent *)b)->name);
}

int ward_session_list(struct ward_session *s, const char *path, struct ward_dirent **out, size_t *n, char *err,
                      size_t errlen)
{
	return ward_session_list_max(s, path, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, out, n, NULL, err,
	                             errlen);
}

int ward_session_list_max(struct ward_session *s, const char *path, size_t max_entries, size_t max_bytes,
                          struct ward_dirent **out, size_t *n, bool *truncated, char *err, size_t errlen)
{
	struct fcall c;
	*out = NULL;
	*n = 0;
	if (truncated)
		*truncated = false;
	int r = file_op(s, SM_LIST, path, 0, 0, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "list", path, err, errlen);
	struct ward_dirent *v = NULL;
	size_t cnt = 0, cap = 0, bytes = 0;
	while (r == 0) {
		if (cnt >= max_entries || bytes >= max_bytes) {
			struct ward_dirent more;
			int e = read_entry(&c, &more); /* is there one more? */
			if (e == 0)
				free(more.name);
			if (truncated)
				*truncated = e == 0;
			break;
		}
		if (cnt == cap) {
			struct ward_dirent *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		int e = read_entry(&c, &v[cnt]);
		if (e == 1)
			break;
		if (e == -ETIMEDOUT)
			base_errf(err, errlen, "the listing of '%s' did not end within the call's deadline (%g s)",
			          path, s->call_s);
		if (e < 0)
			r = e;
		else
			bytes += strlen(v[cnt++].name) + sizeof(*v);
	}
	close(c.fd);
	if (r < 0) {
		ward_session_list_free(v, cnt);
		return r;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), by_name);
	*out = v;
	*n = cnt;
	return 0;
}

void ward_session_list_free(struct ward_dirent *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++)
		free(d[i].name);
	free(d);
}

int ward_session_remove(struct ward_session *s, const char *path, char *err, size_t errlen)
{
	struct fcall c;
	int r = file_op(s, SM_REMOVE, path, 0, 0, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "remove", path, err, errlen);
	close(c.fd);
	return r;
}

/* The globs, one a line, as a file op's string.  0, or -1: they do not
 * fit. */
int session_join_globs(char *const *globs, char *out, size_t n)
{
	size_t off = 0;
	for (char *const *g = globs; *g; g++) {
		size_t k = strlen(*g);
		if (off + k + 2 > n)
			return -1;
		memcpy(out + off, *g, k);
		off += k;
		out[off++] = g[1] ? '\n' : 0;
	}
	return 0;
}

/* Files out after an exec (SPEC §12): a file worker walks /work inside the
 * session (init_session.c's op_collect) and sends the frames, read here up
 * to what the caps allow.  0, or -1 with res->error set. */
int session_collect(struct ward_session *s, const struct ward_request *req, struct ward_result *res)
{
	struct session_msg *m = calloc(1, sizeof(*m));
	if (!m || session_join_globs(req->collect, m->str, sizeof(m->str)) < 0) {
		snprintf(res->error, sizeof(res->error),
		         m ? "collect: the globs take more than %d bytes in all: give "
		             "fewer or shorter ones"
		           : "out of memory",
		         SM_MAX_STR - 1);
		free(m);
		return -1;
	}
	const struct ward_limits *l = &req->limits;
	struct fcall c;
	int r = file_op(s, SM_COLLECT, m->str, l->collect_max_files, l->collect_max_bytes, &c, res->error,
	                sizeof(res->error));
	free(m);
	if (r < 0)
		return -1;
	struct file_head h;
	uint64_t bound = collect_stream_bound(l->collect_max_files, l->collect_max_bytes);
	char *buf = read_full(&c, &h, sizeof(h)) == 0 && h.r == 0 ? malloc((size_t)bound) : NULL;
	size_t got = 0;
	/* the worker is bounded (files, bytes, entries, steps), and the call's
	 * deadline bounds the wait for it (a cut-short stream counts as
	 * truncated) */
	while (buf && got < bound) {
		ssize_t n = fcall_read(&c, buf + got, (size_t)(bound - got));
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(c.fd);
	r = buf ? collect_decode(buf, got, l->collect_max_files, l->collect_max_bytes, res) : -EIO;
	free(buf);
	if (r < 0)
		snprintf(res->error, sizeof(res->error), "cannot collect the files from the session: %s", strerror(-r));
	return r < 0 ? -1 : 0;
}