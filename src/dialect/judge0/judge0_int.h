/* judge0_int.h — what the parts of the Judge0 dialect share, a file a
 * mechanism: judge0.c (the API: routes, requests, start and stop),
 * judge0_info.c (what it says of itself: languages, statuses, config),
 * judge0_sub.c (a submission decoded), judge0_attrs.c (a submission's
 * attributes as Judge0 answers them), judge0_store.c (the submissions
 * held: caps, shares, expiry), judge0_run.c (the runner threads and a
 * group's run), judge0_files.c (additional_files and the multi-file
 * language) and judge0_callback.c (callback_url). */
#ifndef WARD_DIALECT_JUDGE0_INT_H
#define WARD_DIALECT_JUDGE0_INT_H

#include <jansson.h>
#include <pthread.h>

#include "base/workq.h"
#include "dialect/dialect.h"

/* Judge0's max_submission_batch_size, and the runner threads at most. */
#define J0_MAX_BATCH 20
#define J0_RUNNERS_MAX 64
/* Judge0 1.13.1's own defaults and maxima (its config); the runner's
 * maxima (SPEC §10) lower them (j0_limits). */
#define J0_CPU_DEFAULT 5.0
#define J0_CPU_MAX 15.0
#define J0_EXTRA_DEFAULT 1.0
#define J0_EXTRA_MAX 5.0
#define J0_WALL_DEFAULT 10.0
#define J0_WALL_MAX 20.0
#define J0_MEMORY_DEFAULT 128000
#define J0_MEMORY_MAX 512000

/* Judge0's max_extract_size (KB): what a zip may unpack to, and the most a
 * zip itself may be.  And the most files it may hold. */
#define J0_MAX_EXTRACT_KB 10240
#define J0_MAX_EXTRACT_FILES 1000
/* Judge0's language 89: a zip with a `run` script and maybe `compile`. */
#define J0_MULTI_FILE_ID 89

/* ---- judge0_files.c ---- */

struct j0_files {
	unsigned char *prog; /* ward-unzip's bytes, read at start; NULL: additional_files are refused */
	size_t len;
	struct ward_language multi; /* language 89, on the table's bash entry */
	bool multi_on;
};

/* Language 89 for one zip's files: bash runs its run script (run.sh, else
 * run: Judge0 master's name, else 1.13.1's) after its compile script
 * (compile.sh, else compile) when it has one. */
struct j0_multi {
	struct ward_language lang;
	char *run[3], *compile[3];
};
void j0_multi_lang(const struct j0_files *f, const struct ward_file *files, size_t n, struct j0_multi *m);

/* Find ward-unzip (beside this binary, else in LIBEXECDIR) and read it;
 * set up language 89 from the table's bash.  When --judge0-additional-files
 * is off, or the program is missing (logged), additional_files are refused. */
void j0_files_start(struct server *s, struct j0_files *f);
void j0_files_stop(struct j0_files *f);

/* Unpack a zip inside a fresh sandbox (ward-unzip under its limits); the
 * files come back in res->files.  0, or -1 with why (for compile_output);
 * res must be released with ward_result_free either way. */
int j0_unzip(struct server *s, const struct j0_files *f, const unsigned char *zip, size_t len, struct ward_result *res,
             char *why, size_t n);

/* ---- judge0_callback.c ---- */

/* Callbacks waiting to be sent, at most; more are dropped (and logged). */
#define J0_CALLBACKS_PENDING 256

struct j0_callbacks;
/* The sender threads and its queue (at most cap pending). NULL: none could
 * start (callbacks are then refused). */
struct j0_callbacks *j0_callbacks_start(struct server *s, unsigned cap);
void j0_callbacks_stop(struct j0_callbacks *cb);
/* Queue body (taken: freed here whatever happens) for a PUT to url; false
 * when the queue is full (the callback is dropped and logged). */
bool j0_callback_queue(struct j0_callbacks *cb, const char *url, char *body);
/* callback_url's checks: http(s), a host the operator lists, and every
 * address it resolves to public (never loopback, link-local, private or
 * the runner's own).  NULL when it may be called, else why (static). */
const char *j0_callback_refused(struct server *s, const char *url, char *why, size_t n);

/* ---- the submissions ---- */

struct j0_buf {
	unsigned char *p;
	size_t n;
	bool set;
};

struct j0_owner;

/* One submission.  What its request gave (source, stdin, expected, zip,
 * options, args, callback, limits, token, owner) is set before it is held
 * and never changes; its outcome (status to compile_output) changes only
 * under the lock, and never again once status > 2. */
struct j0_sub {
	char token[37];
	int language_id;
	const struct ward_language *lang;
	struct j0_buf source, stdin_, expected, stdout_, stderr_, compile_output;
	struct j0_buf zip; /* additional_files, decoded */
	char *compiler_options, *args;
	char *callback_url; /* PUT when it ends, or NULL */
	double cpu_time_limit, cpu_extra_time, wall_time_limit;
	long memory_limit;
	unsigned runs; /* number_of_runs */
	int status;    /* 1..14 */
	char message[200];
	double time, wall_time;     /* -1: null */
	long memory;                /* -1: null */
	int exit_code, exit_signal; /* -1: null */
	double created, finished;   /* CLOCK_REALTIME; finished 0: null */
	double expires;             /* now_mono() */
	size_t held;                /* bytes counted in body_bytes */
	unsigned group;             /* a batch's compile group (0: alone) */
	unsigned refs;              /* answers being made of it outside the lock: not freed meanwhile */
	struct j0_owner *owner;     /* the client that sent it (its shares) */
	struct j0_sub *next;        /* the table, newest first */
	struct j0_sub *qnext;       /* the run queue */
};

/* The effective limits of this runner: Judge0's under the runner's maxima. */
struct j0_limits {
	double cpu, cpu_max, extra, extra_max, wall, wall_max;
	double cpu_total; /* the runner's --max-cpu: the CPU time and its extra together */
	long memory, memory_max;
};

#define J0_OWNER_BUCKETS 64

struct j0 {
	struct server *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct j0_sub *subs;                       /* all held, newest first */
	unsigned nsubs;                            /* held */
	unsigned waiting;                          /* queued or running: what --judge0-max-queue counts */
	unsigned kept;                             /* finished, kept for --judge0-keep */
	struct j0_owner *owners[J0_OWNER_BUCKETS]; /* the clients that hold some */
	struct j0_sub *qhead, *qtail;              /* waiting to run */
	unsigned queued, running;
	struct workq runners; /* its stop: the server stops */
	unsigned next_group;
	struct j0_limits lim;
	struct j0_files files;   /* additional_files, language 89 */
	struct j0_callbacks *cb; /* callback_url's senders, or NULL: refused */
};

/* ---- judge0_info.c ---- */

/* The enabled language of Judge0's id (language 89 when it is on), or NULL. */
const struct ward_language *j0_lang(struct j0 *j, int id);
extern const char *const j0_status_desc[15];
void j0_languages(struct server *s, struct req *r);
void j0_language(struct server *s, struct req *r);
void j0_statuses(struct server *s, struct req *r);
void j0_about(struct server *s, struct req *r);
void j0_config(struct server *s, struct req *r);
void j0_workers(struct server *s, struct req *r);
void j0_limits_init(struct j0 *j);

/* ---- judge0_sub.c ---- */

bool j0_buf_set(struct j0_buf *b, const void *p, size_t n);
void j0_sub_free(struct j0_sub *x);
/* {"attr": ["message"]}: Judge0's 422. */
void j0_unprocessable(struct req *r, const char *attr, const char *msg);
/* One submission object into a new record; NULL with the 422 set. */
struct j0_sub *j0_decode_sub(struct req *r, struct j0 *j, json_t *o, bool b64);

/* ---- judge0_attrs.c ---- */

char *j0_error_json(const char *msg);
/* ?fields: NULL the default ones, "*" all; false with the 400 set. */
bool j0_fields_ok(struct req *r, const char *fields);
/* Whether x's attributes can be answered: with base64, always; raw, when
 * every text asked for is UTF-8 (else Judge0's conversion error).  The
 * three below read x's outcome: the lock held, or a snapshot (j0_snap). */
bool j0_sub_answerable(const struct j0_sub *x, const char *fields, bool b64);
/* x's attributes, one JSON object, written with src/wire/jsonw.h: counted
 * exactly first, then written into a buffer of that size. */
struct jw;
void j0_sub_emit(struct jw *w, const struct j0_sub *x, const char *fields, bool b64);
/* ... as a malloc'd document (*len its length); NULL when out of memory. */
char *j0_sub_text(const struct j0_sub *x, const char *fields, bool b64, size_t *len);

/* ---- judge0_store.c ---- */

/* Hold n new submissions of client who (all or none): the waiting caps,
 * the client's share, room made among the finished; false with the 503
 * set.  queue: to the runners; else the caller runs them (status 2) and
 * holds a reference to each, let go with j0_unref. */
bool j0_hold(struct req *r, struct j0 *j, struct j0_sub **v, size_t n, bool queue);
void j0_unref(struct j0 *j, struct j0_sub *x);
/* Before a submission's body is decoded (on the I/O thread): whether its
 * client may have one more waiting now; false with the 503 set, so that a
 * full client is refused at once, without a worker. */
bool j0_room(struct req *r, struct j0 *j);
/* A copy of the submission of token (its outcome as it is now) to answer
 * from without the lock; false when there is none.  j0_unsnap after. */
bool j0_snap(struct j0 *j, const char *token, struct j0_sub *copy);
void j0_unsnap(struct j0 *j, struct j0_sub *copy);
/* x is finished (status > 2 now): counted as kept (the lock held). */
void j0_finished(struct j0 *j, struct j0_sub *x);
void j0_sweep(struct server *s, void *state);
void j0_store_free(struct j0 *j);

/* ---- judge0_run.c ---- */

/* Run n submissions that share a compile as one job; the lock not held. */
void j0_run_group(struct server *s, struct j0 *j, struct j0_sub **v, size_t n);
/* The runners' queue (base/workq.h): a runner takes the head and its
 * batch group once it has a slot of --max-concurrent. */
void *j0_runner_take(void *ctx, int thread);
void j0_runner_run(void *ctx, void *job, int thread);

#endif
