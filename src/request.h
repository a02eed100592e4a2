/* request.h — the table of defaults and limits' bounds (one place for each
 * fact: --help, the docs and validation all read it). */
#ifndef WARD_REQUEST_H
#define WARD_REQUEST_H

#include <stddef.h>

struct limit_desc {
	const char *option;  /* CLI option, e.g. "--timeout" */
	const char *unit;
	double dflt;
	double min, max;     /* inclusive bounds */
	const char *help;
};

enum {
	LIM_TIMEOUT, LIM_CPU, LIM_MEMORY, LIM_PIDS, LIM_OUTPUT, LIM_FSIZE, LIM_TMP, LIM_NOFILE,
	LIM__COUNT
};

extern const struct limit_desc ward_limit_table[LIM__COUNT];

/* Limits on caller-supplied files (server requests, test jobs). */
#define WARD_MAX_FILES 1000
#define WARD_MAX_FILES_BYTES (16u << 20)
#define WARD_MAX_STDIN_BYTES (16u << 20)

/* The sandbox user inside, and the fixed environment of SPEC §2. */
#define WARD_SANDBOX_UID 1000
#define WARD_SANDBOX_GID 1000
#define WARD_PATH "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

#endif
