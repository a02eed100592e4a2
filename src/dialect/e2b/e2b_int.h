/* e2b_int.h — what the files of the E2B dialect share (SPEC §17).
 *
 * Process model.  The listener is a second libmicrohttpd daemon, one
 * thread per connection (bounded by --max-connections; not per address:
 * one SDK client opens up to 200 connections from one address).  E2B's SDK holds one connection per open stream
 * (a command's output, a watch, a runCode), and a stream here is a
 * blocking loop on libward's session calls, which is simplest in a thread
 * of its own.  Sessions themselves are the server's (sessions.c): made by
 * the dialect's maker threads (a session's PID 1 dies with the thread that
 * made it; these live as long as the server), counted against
 * --max-sessions / --client-sessions, looked up and held for each call,
 * expired by the server's sweep.
 *
 *   e2b_http.c     the daemon, a request's body, routing, tokens, answers
 *   e2b_sandbox.c  the control plane and the sandbox records
 *   e2b_connect.c  Connect's JSON framing; process.Process
 *   e2b_fs.c       filesystem.Filesystem, /files, the path map
 *   e2b_interp.c   the code interpreter: contexts, a kernel each, /execute
 *   e2b_multipart.c a multipart/form-data body, parsed (bounded, fuzzed)
 *
 * Locks: e->lock (the records, each record's refs and contexts list),
 * each context's run lock (one execution at a time), e->mk_lock (the
 * maker's jobs).  No libward call runs under e->lock. */
#ifndef WARD_DIALECT_E2B_INT_H
#define WARD_DIALECT_E2B_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

#define E2B_ENVD_VERSION "0.5.6"  /* multipart uploads only (research notes §4.5) */
#define E2B_DOMAIN "ward.invalid" /* never E2B's: a misconfigured client fails at DNS */
#define E2B_HOME "/home/user"
#define E2B_MAKERS 2
#define E2B_MAX_CONTEXTS 8        /* code contexts (kernels) per sandbox */
#define E2B_KEEPALIVE_S 15.0
#define E2B_OUTPUT_KEPT (1u << 20) /* a process's output kept per stream while its stream lags */      /* a stream with nothing to say says keepalive this often */

/* A code context: one kernel process in the session (e2b_interp.c). */
struct e2b_ctx {
	char id[40];
	char cwd[256];
	char lang[12];        /* python, javascript, typescript, bash */
	char kind[64];        /* what its kernel said it is ("ipython 8.5.0", "python", "node v18.19.0", ...) */
	int pid;              /* the kernel's process id, 0: none (started on first use) */
	uint64_t off[2];      /* what of its stdout / stderr was read */
	unsigned execs;
	int client;           /* the running execution's connection (fd), -1: none; under e2b.lock */
	int intr;             /* the running execution was interrupted (atomic) */
	pthread_mutex_t run;  /* one execution at a time */
	struct e2b_ctx *next;
};

/* A sandbox: a session of the server and what E2B says about it. */
struct e2b_sbx {
	char id[80];          /* [a-z0-9]: the node id reduced, then the session's 32 hex */
	char sid[100];        /* the session's id (sessions.c) */
	char owner[96];       /* the session's owner: the API key's token name */
	char access[48], traffic[48]; /* its tokens, 128 random bits each in hex */
	char tmpl[64];
	char *metadata;       /* JSON object text */
	double started_rt, end_rt;
	unsigned refs;
	bool gone;            /* out of the list: freed at refs 0 */
	struct e2b_ctx *ctxs;
	unsigned nctx;
	struct e2b_sbx *next;
};

struct make_job;

struct e2b {
	struct server *s;
	struct MHD_Daemon *d;
	int listen_fd;
	pthread_mutex_t lock;
	struct e2b_sbx *sbxs;
	pthread_mutex_t mk_lock;
	pthread_cond_t mk_cond;
	struct make_job *jobs;
	bool mk_stop;
	pthread_t makers[E2B_MAKERS];
	int nmakers;
	volatile int stopping;
};

/* One request on the E2B listener. */
struct ereq {
	struct e2b *e;
	struct server *s;
	struct MHD_Connection *c;
	const struct eroute *rt;
	char method[8];
	char path[256];
	char arg[100];        /* a path's {id} */
	char who[96];         /* control plane: the API key's token name (or the peer) */
	char *body;
	size_t len, cap;
	bool too_big, late, busy; /* over --max-body; past --request-timeout; over --max-body-total */
	double t0;
	struct e2b_sbx *x;    /* data plane: the sandbox named, held */
	unsigned code;        /* for the log */
};

struct eroute {
	const char *method;
	const char *path;     /* exact, or ending in "{id}" / "{id}/..." */
	bool data;            /* data plane: E2b-Sandbox-Id and one of its tokens */
	enum MHD_Result (*fn)(struct ereq *q);
};

/* e2b_http.c */
enum MHD_Result e2b_answer(struct ereq *q, unsigned code, const char *ctype, char *body, size_t len);
enum MHD_Result e2b_answer_json(struct ereq *q, unsigned code, json_t *v);
/* {"code": N, "message": ...}: the control plane's and /files' errors */
enum MHD_Result e2b_api_error(struct ereq *q, unsigned code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *e2b_header(struct ereq *q, const char *name);
const char *e2b_query(struct ereq *q, const char *name);

/* e2b_sandbox.c */
int e2b_makers_start(struct e2b *e);
void e2b_makers_stop(struct e2b *e);
struct e2b_sbx *e2b_sbx_get(struct e2b *e, const char *id);
void e2b_sbx_put(struct e2b *e, struct e2b_sbx *x);
bool e2b_token_ok(const struct e2b_sbx *x, const char *tok);
/* The session of x, held (sess_unref(s, it) after); NULL when it ended. */
struct sess *e2b_sess(struct e2b *e, struct e2b_sbx *x);
void e2b_records_free(struct e2b *e);
void e2b_prune(struct e2b *e);
enum MHD_Result e2b_create(struct ereq *q);
enum MHD_Result e2b_list(struct ereq *q);
enum MHD_Result e2b_info(struct ereq *q);
enum MHD_Result e2b_kill(struct ereq *q);
enum MHD_Result e2b_timeout(struct ereq *q);
enum MHD_Result e2b_connect_sbx(struct ereq *q);
enum MHD_Result e2b_health(struct ereq *q);

/* e2b_connect.c: Connect framing */
/* The one message of a streaming request's body (a 5-byte envelope, flag
 * 0): its JSON, parsed; NULL with why in err. */
json_t *cx_unwrap(const char *body, size_t len, char *err, size_t errlen);
/* One envelope (flags, then the length big-endian, then json's text)
 * appended to *buf; false when out of memory. */
bool cx_frame(char **buf, size_t *len, unsigned flags, const char *json, size_t n);
enum MHD_Result cx_error(struct ereq *q, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A unary request's JSON; NULL when the error was answered. */
json_t *cx_unary_in(struct ereq *q, enum MHD_Result *rc);
enum MHD_Result cx_unary_ok(struct ereq *q, json_t *v);
/* Connect-Timeout-Ms: 0 when absent, -1 when malformed (more than 10
 * digits, or not digits: Connect's own rule), else milliseconds. */
long long cx_timeout_ms(struct ereq *q);
/* A libward errno as a Connect code. */
const char *cx_code(int rc);
/* A stream whose frames a producer makes as they are sent (e2b_connect.c
 * and e2b_fs.c's watch): produce appends frames to *buf and returns
 * false at the end (after the end-stream frame). */
struct cx_stream;
typedef bool (*cx_produce)(void *st, char **buf, size_t *len);
enum MHD_Result cx_stream_start(struct ereq *q, const char *ctype, cx_produce produce, void *st, void (*st_free)(void *));
enum MHD_Result px_start(struct ereq *q);
enum MHD_Result px_connect(struct ereq *q);
enum MHD_Result px_list(struct ereq *q);
enum MHD_Result px_send_input(struct ereq *q);
enum MHD_Result px_close_stdin(struct ereq *q);
enum MHD_Result px_send_signal(struct ereq *q);

/* e2b_fs.c */
/* A path of E2B's (absolute, or relative to /home/user) as a path relative
 * to /work ("" for /home/user itself): "." and ".." resolved lexically,
 * then it must lie in /home/user (or /work).  false with why in err. */
bool e2b_map_path(const char *in, char *out, size_t n, char *err, size_t errlen);
enum MHD_Result fs_stat(struct ereq *q);
enum MHD_Result fs_list(struct ereq *q);
enum MHD_Result fs_mkdir(struct ereq *q);
enum MHD_Result fs_move(struct ereq *q);
enum MHD_Result fs_remove(struct ereq *q);
enum MHD_Result fs_watch(struct ereq *q);
enum MHD_Result files_get(struct ereq *q);
enum MHD_Result files_post(struct ereq *q);

/* e2b_multipart.c */
struct mp_part {
	char *name, *filename; /* filename may be NULL */
	const char *data;      /* into the body */
	size_t len;
};
/* Parse a whole multipart/form-data body whose Content-Type is ctype: at
 * most max_parts parts (*parts malloc'd, free with free()).  0, or -1 with
 * why in err. */
int mp_parse(const char *ctype, const char *body, size_t len, size_t max_parts, struct mp_part **parts, size_t *n,
	     char *err, size_t errlen);
void mp_free(struct mp_part *p, size_t n);

/* e2b_interp.c */
enum MHD_Result ci_execute(struct ereq *q);
enum MHD_Result ci_ctx_create(struct ereq *q);
enum MHD_Result ci_ctx_list(struct ereq *q);
enum MHD_Result ci_ctx_delete(struct ereq *q);
enum MHD_Result ci_ctx_restart(struct ereq *q);
void ci_free_all(struct e2b_sbx *x);
/* GET /health on the interpreter's port: which Python kernel the template gives */
enum MHD_Result ci_health(struct ereq *q);

#endif
