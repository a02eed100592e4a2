/* e2b_upload.c — envd's POST /files, streamed into the sandbox as it comes
 * (SPEC §18; paths as e2b_fs.c maps them).
 *
 * The body is never held whole, and no call into the sandbox's file worker
 * runs on an I/O thread (a sandbox can stop its own file worker, and each
 * call may wait --session-call-timeout): the body is pumped (e2b_pump.c),
 * and the pump parses the multipart parts (mp_stream) and writes each file
 * part through libward; a paused autoResume sandbox is woken by the pump.
 * So an upload is bounded by the sandbox's disk (507 when it fills), not by
 * --max-body; the request timeout still bounds its time.  The pump looks
 * whether its session was retired (killed, expired, the server stops) and
 * lets it go then. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_pump.h"

#define MAX_UPLOAD_PARTS 1000

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
	struct body_pump *pump; /* NULL: refused at its begin, the body dropped */
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

static void up_free(void *arg)
{
	struct upload *u = arg;
	mp_stream_free(u->mp);
	json_decref(u->arr);
	free(u->qpath);
	if (u->x)
		e2b_sbx_put(u->e, u->x);
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

/* The pump's start: the sandbox woken, its session held. */
static void up_start(void *arg)
{
	struct upload *u = arg;
	if (u->wake)
		up_wake(u);
	if (!u->code && !(u->ss = e2b_sess(u->e, u->x))) {
		u->code = 502;
		snprintf(u->err, sizeof(u->err), "the sandbox was killed or timed out");
	}
}

/* Its session retired: let go. */
static void up_look(void *arg)
{
	struct upload *u = arg;
	if (u->ss && sess_retired(u->s, u->ss)) {
		up_let_go(u);
		if (!u->code) {
			u->code = 502;
			snprintf(u->err, sizeof(u->err), "the sandbox was killed, timed out or the server stops");
		}
	}
}

/* A piece: parsed; an upload refused midway: the rest is read and dropped. */
static void up_take(void *arg, const char *p, size_t n)
{
	struct upload *u = arg;
	if (!u->code && mp_stream_feed(u->mp, p, n, u->err, sizeof(u->err)) < 0 && !u->code)
		u->code = 400;
}

static void up_finish(void *arg, bool gone)
{
	struct upload *u = arg;
	if (!gone && !u->code && mp_stream_finish(u->mp, u->err, sizeof(u->err)) < 0)
		u->code = 400;
	up_let_go(u);
}

/* The request is over (on its I/O thread, or the worker that answered):
 * a pump still going frees the upload itself. */
void files_upload_free(struct ereq *q)
{
	struct upload *u = q->up;
	if (!u)
		return;
	q->up = NULL;
	if (u->pump)
		pump_release(u->pump);
	else
		up_free(u);
}

/* The headers are in, the sandbox and its token checked (on the I/O
 * thread): the buffers and the pump, which wakes the sandbox if it is
 * paused.  An error is kept for the answer (after the body). */
void files_upload_begin(struct ereq *q)
{
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return;
	q->up = u;
	u->e = q->e;
	u->s = q->s;
	u->x = e2b_sbx_get(q->e, q->x->id);
	u->wake = q->wake;
	q->wake = false;
	const char *qpath = e2b_query(q, "path");
	u->qpath = qpath ? strdup(qpath) : NULL;
	u->arr = json_array();
	const struct mp_sink sink = {up_part, up_data, up_end, u};
	const struct pump_sink pump = {up_start, up_take, up_look, up_finish, up_free, u, "e2b-upload"};
	if (!u->x) {
		u->code = 502;
		snprintf(u->err, sizeof(u->err), "the sandbox was killed or timed out");
	} else if (!u->arr || (qpath && !u->qpath)) {
		u->code = 500;
		snprintf(u->err, sizeof(u->err), "out of memory for the upload");
	} else if (!(u->mp = mp_stream_new(e2b_header(q, MHD_HTTP_HEADER_CONTENT_TYPE), MAX_UPLOAD_PARTS, &sink, u->err,
	                                   sizeof(u->err))))
		u->code = 400;
	else
		u->pump = pump_begin(q, &pump, &u->code, u->err, sizeof(u->err));
}

/* A piece of the body (on the I/O thread): the pump's; false when the
 * server stops and it cannot wait. */
bool files_upload_feed(struct ereq *q, const char *p, size_t *n)
{
	struct upload *u = q->up;
	return !u || !u->pump || pump_feed(u->pump, q->s, p, n); /* refused at its begin: read, dropped */
}

/* The body is in (on a worker): the pump finishes, its answer. */
enum MHD_Result files_post(struct ereq *q)
{
	struct upload *u = q->up;
	if (!u)
		return e2b_api_error(q, 500, "out of memory for the upload");
	if (u->pump)
		pump_end(u->pump);
	if (u->code == 503)
		q->r->retry_after = 1;
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
