/* e2b_tm.h — what the files of E2B's template build API share
 * (e2b_templates.c: the records, the routes, the worker; e2b_template_steps.c:
 * the SDK's steps translated into a Dockerfile, and an upload unpacked). */
#ifndef WARD_DIALECT_E2B_TM_H
#define WARD_DIALECT_E2B_TM_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dialect/e2b/e2b_int.h"
#include "ward_image.h"

#define TM_MAX 64
#define TM_PER_OWNER 16
#define TM_FILES_TOTAL (1ULL << 30) /* uploads kept, all templates */
#define TM_BUILDS_MAX 128
#define TM_QUEUE_MAX 16
#define TM_LOG_MAX 2000
#define TM_LINE_MAX 2000
#define TM_FILES_MAX 64
#define TM_UNPACK_MAX (1ULL << 30)
#define TM_UNPACK_ENTRIES 100000
#define TM_STEPS_MAX 512
#define TM_DOCKERFILE_MAX (1u << 20)

enum tm_state { TB_WAITING, TB_QUEUED, TB_BUILDING, TB_READY, TB_ERROR };

struct tm_build {
	char id[40], tid[40];
	char alias[64], tag[64];
	char owner[96];
	enum tm_state state;
	unsigned cpu, mem;
	json_t *start; /* the trigger's body */
	json_t *log;   /* [{timestamp, level, message}], at most TM_LOG_MAX */
	char reason[1300];
	char step[24];                /* reason.step: "base", "finalize" or the step's index */
	struct ward_image_root *root; /* ready: kept until the server stops */
	double done_rt;
	struct tm_build *next, *qnext;
};

struct tm_tmpl {
	char tid[40], alias[64], owner[96];
	char ukey[40]; /* its upload links' token (128 random bits in hex) */
	unsigned nfiles;
	struct tm_build *ready; /* the last ready build, per tag is the latest of all */
};

struct e2b_tm {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct workq worker; /* one thread: the builds, one at a time */
	pid_t child;         /* the build running (ward image build), 0: none */
	char dir[256];       /* uploads and build contexts: removed at stop */
	struct tm_tmpl t[TM_MAX];
	size_t nt;
	struct tm_build *builds; /* newest first */
	size_t nbuilds;
	struct tm_build *qhead, *qtail;
	size_t nq;
	uint64_t file_bytes; /* uploads kept, in all */
};

/* The steps as a Dockerfile, as it is written. */
struct df {
	char *p;
	size_t len, cap;
	bool bad;
	unsigned lines;                     /* lines written */
	int step;                           /* the SDK's step being written (-1: ward's own lines) */
	int of_line[4 * TM_STEPS_MAX + 16]; /* a line's step (line 1 at [1]) */
};

/* One translation: its build, its context directory, and why it failed. */
struct xlate {
	struct e2b *e;
	struct tm_build *b;
	const char *ctx;
	char why[1200];
	char step[24];
};

void tm_df_put(struct df *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The trigger's body (start) as a Dockerfile in d, its COPY sources
 * unpacked beneath x->ctx; false with x->why (and x->step) set. */
bool tm_translate(struct xlate *x, json_t *start, struct ward_image_store *st, struct df *d);
/* An upload (a gzip'd tar, the SDK's) unpacked beneath dest; 0, or -1
 * with why. */
int tm_unpack(const char *tgz, const char *dest, char *why, size_t n);
/* Where template tid's upload of files hash is kept. */
void tm_files_path(struct e2b_tm *m, const char *tid, const char *hash, char *out, size_t n);
bool tm_hex64(const char *s);
/* Is NAME[:TAG] a template of owner's (its alias)? */
bool tm_owns(struct e2b_tm *m, const char *owner, const char *name);

#endif
