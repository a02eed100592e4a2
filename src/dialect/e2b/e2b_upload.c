/* e2b_upload.c — envd's POST /files, streamed into the sandbox as it comes
 * (SPEC §18; paths as e2b_fs.c maps them).
 *
 * The body is never held whole, and no call into the sandbox's file worker
 * runs on an I/O thread (a sandbox can stop its own file worker, and each
 * call may wait --session-call-timeout): the I/O thread only copies each
 * piece into the upload's bounded buffer (UP_BUF); a thread of the
 * upload's own, its pump, takes it from there, parses the multipart parts
 * (mp_stream) and writes each file part through libward.  A full buffer
 * parks the connection (conn_park) until the pump took it; a paused
 * autoResume sandbox is woken by the pump.  So an upload is bounded by the
 * sandbox's disk (507 when it fills), not by --max-body, and holds at most
 * 2 x UP_BUF (counted in --max-body-total); the request timeout still
 * bounds its time.  The pump looks every UP_LOOK_S whether its session
 * was retired (killed, expired, the server stops) and lets it go then. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"

#define MAX_UPLOAD_PARTS 1000

#define UP_BUF (128 * 1024)
#define UP_LOOK_S 0.2

struct upload {
	struct e2b *e;
	struct server *s;
	struct e2b_sbx *x; /* held */
	bool wake;         /* paused: the pump wakes it (autoResume) */
	struct sess *ss;   /* the pump's, while its session is not retired */
	struct mp_stream *mp;
	struct ward_session_upload *w; /* the file part being written */
	bool skip;                     /* a part not named "file": read, dropped */
	char *qpath;                   /* ?path=, or NULL */
	char rel[4096];                /* its path */
	json_t *arr;                   /* the files written */
	unsigned code;                 /* 0, or the error answer's status */
	char err[600];
	char *spare; /* the pump's half of the two buffers */
	int ev;      /* eventfd: the pump took a piece (the parked connection's fd) */
	struct park park;
	/* between the I/O thread, the pump and the worker that answers, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *buf; /* what the I/O thread put, not yet taken */
	size_t len;
	bool pumping; /* the pump was started */
	bool eof;     /* the body ended: the pump finishes */
	bool gone;    /* the request is over: the pump frees the upload */
	bool done;    /* the pump is over */
};

static unsigned write_status(int rc)
{
	return rc == -ENOSPC || rc == -EDQUOT                     ? 507
	       : rc == -EACCES || rc == -EPERM || rc == -ELOOP    ? 403
	       : rc == -EISDIR || rc == -ENOTDIR || rc == -EINVAL ? 400
	                                                          : 500;
}

static int up_part(void *arg, const char *name, const char *filename)
{
	struct upload *u = arg;
	u->skip = strcmp(name, "file") != 0;
	if (u->skip)
		return 0;
	const char *path = u->qpath ? u->qpath : filename;
	if (!path || !e2b_map_path(path, u->rel, sizeof(u->rel), u->err, sizeof(u->err)) ||
	    e2b_is_home_or_root(u->rel)) {
		if (!path || !u->err[0])
			snprintf(u->err, sizeof(u->err), "a file part names no path: give ?path= or a filename");
		u->code = 400;
		return -1;
	}
	int rc = ward_session_write_begin(u->ss->ws, u->rel, 0, &u->w, u->err, sizeof(u->err));
	if (rc < 0) {
		u->code = write_status(rc);
		return -1;
	}
	return 0;
}

static int up_data(void *arg, const char *p, size_t n)
{
	struct upload *u = arg;
	if (u->w)
		ward_session_write_more(u->w, p, n); /* a failure: its end says why */
	return 0;
}

static int up_end(void *arg)
{
	struct upload *u = arg;
	if (!u->w)
		return 0;
	int rc = ward_session_write_end(u->w, u->err, sizeof(u->err));
	u->w = NULL;
	if (rc < 0) {
		u->code = write_status(rc);
		return -1;
	}
	char full[4200];
	e2b_full_path(u->rel, full, sizeof(full));
	const char *slash = strrchr(full, '/');
	json_array_append_new(u->arr, json_pack("{s:s,s:s,s:s}", "name", slash + 1, "type", "file", "path", full));
	return 0;
}

/* The pump lets its file part and its session go (on the pump). */
static void up_let_go(struct upload *u)
{
	if (u->w)
		ward_session_write_end(u->w, NULL, 0);
	u->w = NULL;
	if (u->ss)
		sess_unref(u->s, u->ss);
	u->ss = NULL;
}

static void up_free(struct upload *u)
{
	if (u->ev >= 0)
		close(u->ev);
	mp_stream_free(u->mp);
	json_decref(u->arr);
	free(u->qpath);
	free(u->buf);
	free(u->spare);
	if (u->x)
		e2b_sbx_put(u->e, u->x);
	__atomic_sub_fetch(&u->s->body_bytes, 2 * UP_BUF, __ATOMIC_RELAXED);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* The paused sandbox woken (autoResume), on the pump: 0 or the 502. */
static void up_wake(struct upload *u)
{
	struct ereq *t = calloc(1, sizeof(*t));
	if (!t) {
		u->code = 500;
		snprintf(u->err, sizeof(u->err), "out of memory to resume the sandbox");
		return;
	}
	t->e = u->e;
	t->s = u->s;
	u->code = e2b_wake(t, u->x);
	snprintf(u->err, sizeof(u->err), "%s", t->message);
	free(t);
}

/* One look: the next piece (swapped into *mine, its length), whether the
 * body is over (or its request), whether the session was retired. */
static size_t up_take(struct upload *u, char **mine, bool *over)
{
	pthread_mutex_lock(&u->lock);
	if (!u->len && !u->eof && !u->gone) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(UP_LOOK_S * 1e9);
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&u->cond, &u->lock, &ts);
	}
	size_t n = u->gone ? 0 : u->len;
	*over = u->gone || (u->eof && !u->len);
	char *t = u->buf;
	u->buf = *mine;
	*mine = t;
	u->len = 0;
	pthread_mutex_unlock(&u->lock);
	uint64_t one = 1;
	if (n && write(u->ev, &one, sizeof(one)) < 0) {
		/* the counter is full: the connection is woken anyway */
	}
	return n;
}

static void *up_pump(void *arg)
{
	struct upload *u = arg;
	struct e2b *e = u->e;
	if (u->wake)
		up_wake(u);
	if (!u->code && !(u->ss = e2b_sess(u->e, u->x))) {
		u->code = 502;
		snprintf(u->err, sizeof(u->err), "the sandbox was killed or timed out");
	}
	for (bool over = false; !over;) {
		size_t n = up_take(u, &u->spare, &over);
		if (u->ss && sess_retired(u->s, u->ss)) {
			up_let_go(u);
			if (!u->code) {
				u->code = 502;
				snprintf(u->err, sizeof(u->err),
				         "the sandbox was killed, timed out or the server stops");
			}
		}
		/* an upload refused midway: the rest is read and dropped */
		if (n && !u->code && mp_stream_feed(u->mp, u->spare, n, u->err, sizeof(u->err)) < 0 && !u->code)
			u->code = 400;
	}
	if (!u->gone && !u->code && mp_stream_finish(u->mp, u->err, sizeof(u->err)) < 0)
		u->code = 400;
	up_let_go(u);
	pthread_mutex_lock(&u->lock);
	u->done = true;
	bool gone = u->gone;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (gone)
		up_free(u);
	e2b_detached_done(e);
	return NULL;
}

/* The request is over (on its I/O thread, or the worker that answered):
 * a pump still going frees the upload itself. */
void files_upload_free(struct ereq *q)
{
	struct upload *u = q->up;
	if (!u)
		return;
	q->up = NULL;
	pthread_mutex_lock(&u->lock);
	bool pump = u->pumping && !u->done;
	u->gone = true;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (!pump)
		up_free(u);
}

/* The headers are in, the sandbox and its token checked (on the I/O
 * thread): the buffers and the pump, which wakes the sandbox if it is
 * paused.  An error is kept for the answer (after the body). */
void files_upload_begin(struct ereq *q)
{
	if (!body_reserve(q->s, 2 * UP_BUF))
		return; /* no upload: answered 503 */
	struct upload *u = calloc(1, sizeof(*u));
	if (!u) {
		__atomic_sub_fetch(&q->s->body_bytes, 2 * UP_BUF, __ATOMIC_RELAXED);
		return;
	}
	q->up = u;
	u->e = q->e;
	u->s = q->s;
	u->x = e2b_sbx_get(q->e, q->x->id);
	u->wake = q->wake;
	q->wake = false;
	u->ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u->park = (struct park){.conn = q->c, .fd = u->ev};
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	const char *qpath = e2b_query(q, "path");
	u->qpath = qpath ? strdup(qpath) : NULL;
	u->arr = json_array();
	u->buf = malloc(UP_BUF);
	u->spare = malloc(UP_BUF);
	const struct mp_sink sink = {up_part, up_data, up_end, u};
	if (!u->x) {
		u->code = 502;
		snprintf(u->err, sizeof(u->err), "the sandbox was killed or timed out");
	} else if (u->ev < 0 || !u->arr || !u->buf || !u->spare || (qpath && !u->qpath)) {
		u->code = 500;
		snprintf(u->err, sizeof(u->err), "out of memory or descriptors for the upload");
	} else if (!(u->mp = mp_stream_new(e2b_header(q, MHD_HTTP_HEADER_CONTENT_TYPE), MAX_UPLOAD_PARTS, &sink, u->err,
	                                   sizeof(u->err))))
		u->code = 400;
	else if (!(u->pumping = e2b_detach(u->e, up_pump, u))) {
		u->code = 503;
		snprintf(u->err, sizeof(u->err), "no thread to spare for the upload: retry later");
	}
}

/* A piece of the body (on the I/O thread): what the buffer takes of it
 * (*n), the connection parked when it took less; false when the server
 * stops and it cannot wait. */
bool files_upload_feed(struct ereq *q, const char *p, size_t *n)
{
	struct upload *u = q->up;
	if (!u || !u->pumping)
		return true; /* refused at its begin: read, dropped */
	uint64_t c;
	if (read(u->ev, &c, sizeof(c)) < 0) {
		/* nothing taken since the last look */
	}
	pthread_mutex_lock(&u->lock);
	size_t k = u->done ? *n : *n < UP_BUF - u->len ? *n : UP_BUF - u->len;
	if (!u->done && k) {
		memcpy(u->buf + u->len, p, k);
		u->len += k;
		pthread_cond_broadcast(&u->cond);
	}
	pthread_mutex_unlock(&u->lock);
	bool parked = k == *n || conn_park(q->s, &u->park);
	*n = k;
	return parked;
}

/* The body is in (on a worker): the pump finishes, its answer. */
enum MHD_Result files_post(struct ereq *q)
{
	struct upload *u = q->up;
	if (!u) {
		q->r->retry_after = 1;
		return e2b_api_error(q, 503,
		                     "the runner holds --max-body-total (%zu bytes) of request bodies already; "
		                     "retry later",
		                     q->s->o.max_body_total);
	}
	pthread_mutex_lock(&u->lock);
	u->eof = true;
	pthread_cond_broadcast(&u->cond);
	while (u->pumping && !u->done)
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
	if (u->code == 400 && !json_array_size(u->arr) && strstr(u->err, "multipart"))
		return e2b_api_error(q, 400, "%s (send the files as multipart/form-data, one part each)", u->err);
	if (u->code == 502 || u->code == 503)
		return e2b_api_error(q, u->code, "%s", u->err);
	if (u->code)
		return e2b_api_error(q, u->code, "cannot write the file: %s", u->err);
	if (!json_array_size(u->arr))
		return e2b_api_error(q, 400, "no part named \"file\": send each file as a part named file");
	json_t *arr = json_incref(u->arr);
	files_upload_free(q);
	return e2b_answer_json(q, 200, arr);
}
