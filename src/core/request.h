/* request.h — the table of defaults, limits' bounds and a runner's maxima
 * (one place for each fact: --help, /health, the docs and validation all
 * read it). */
#ifndef WARD_REQUEST_H
#define WARD_REQUEST_H

#include <stddef.h>

#include "ward.h"

struct limit_desc {
	const char *option; /* CLI option, e.g. "--timeout" */
	const char *unit;
	double dflt;
	double min, max; /* inclusive bounds */
	const char *help;
	const char *field; /* its member of a request's "limits" (SPEC §5) */
	/* ward serve's maximum for it (SPEC §10): the option and its default
	 * (0 for --max-cpu: the maximum timeout) */
	const char *max_option;
	double max_dflt;
};

enum {
	LIM_TIMEOUT,
	LIM_CPU,
	LIM_MEMORY,
	LIM_PIDS,
	LIM_OUTPUT,
	LIM_FSIZE,
	LIM_TMP,
	LIM_NOFILE,
	LIM_COLLECT_FILES,
	LIM_COLLECT_BYTES,
	LIM_EGRESS,
	LIM__COUNT
};

extern const struct limit_desc ward_limit_table[LIM__COUNT];

/* One limit of l by its LIM_ index, as a double (exact for every value
 * the table allows), and back. */
double ward_limit_get(const struct ward_limits *l, int which);
void ward_limit_set(struct ward_limits *l, int which, double v);

/* A runner's maxima are a struct ward_limits too.  ward_maxima_init fills
 * the table's max_dflt (cpu_s = timeout_s: call it again after changing
 * timeout_s, or set cpu_s yourself). */
void ward_maxima_init(struct ward_limits *max);
/* The limits a request that names none gets from a runner with these
 * maxima: SPEC §2's defaults, each lowered to its maximum where the
 * operator set a maximum below it (a runner with --max-timeout 10 runs
 * such a request for 10 s; a request that asks for more is still refused:
 * nothing a client names is clamped). */
void ward_defaults_under(const struct ward_limits *max, struct ward_limits *out);
/* A request's limits against a runner's maxima: 0, or -1 with a message
 * that names the field and the maximum, e.g. "limits.memory_mb: 1048576
 * is above this runner's maximum 4096 MB (--max-memory)".  A cpu_s of 0
 * is the timeout, and is checked as that.  Nothing is clamped. */
int ward_limits_within(const struct ward_limits *l, const struct ward_limits *max, char *err, size_t errlen);

/* Limits on caller-supplied files (server requests, test jobs). */
#define WARD_MAX_FILES 1000
#define WARD_MAX_FILES_BYTES (16u << 20)
#define WARD_MAX_STDIN_BYTES (16u << 20)

/* Files out (SPEC §12): globs a request may give, and each one's length. */
#define WARD_MAX_COLLECT_GLOBS 64
#define WARD_MAX_COLLECT_GLOB_LEN 1024

/* The fixed environment of SPEC §2 (the sandbox user's uid and gid:
 * WARD_SANDBOX_UID in src/sandbox/userns.h). */
#define WARD_PATH "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

#endif
