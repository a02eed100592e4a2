/* judge0_int.h — what the parts of the Judge0 dialect share: judge0.c (the
 * API and the submissions), judge0_files.c (additional_files and the
 * multi-file language) and judge0_callback.c (callback_url). */
#ifndef WARD_DIALECT_JUDGE0_INT_H
#define WARD_DIALECT_JUDGE0_INT_H

#include "dialect/dialect.h"

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
int j0_unzip(struct server *s, const struct j0_files *f, const unsigned char *zip, size_t len,
	     struct ward_result *res, char *why, size_t n);

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

#endif
