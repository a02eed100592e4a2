/* cli_args.h — `ward run` options -> struct ward_request.  Pure: no file is
 * opened and nothing runs, so every option is unit-tested. */
#ifndef WARD_CLI_ARGS_H
#define WARD_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "ward.h"

#define CLI_MAX_LIST 64

struct cli_run {
	struct ward_request req;
	bool json;
	bool print_plan;
	const char *stdin_path; /* NULL = /dev/null, "-" = ward's own */
	const char *remote;     /* --remote or $WARD_RUNNER_URL */
	const char *token_file; /* --token-file, for --remote */
	struct ward_mount mounts[CLI_MAX_LIST];
	char *mount_store[CLI_MAX_LIST]; /* split HOST:PATH copies */
	char *env[CLI_MAX_LIST + 1];
	size_t nenv;
	char *collect[CLI_MAX_LIST + 1]; /* --collect GLOB, NULL-terminated */
	size_t ncollect;
	const char *collect_dir;         /* --collect-dir, default CLI_COLLECT_DIR */
	const char *allow[CLI_MAX_LIST]; /* --allow-host (SPEC §13) */
	size_t nallow;
	const char *resolve[CLI_MAX_LIST]; /* --egress-resolve NAME:ADDR */
	size_t nresolve;
	const char *image;       /* --image NAME[:TAG] (SPEC §14) */
	const char *image_store; /* --image-store DIR (NULL: the default) */
	unsigned limits_given;   /* 1 << LIM_x for each limit option given: a request to a
				    * runner carries only these (the others are the runner's
				    * defaults, within its maxima) */
};

/* Where --collect's files go without --collect-dir: a directory of their
 * own under the current one, never the current directory itself (a file
 * of the sandbox's would land among the caller's). */
#define CLI_COLLECT_DIR "ward-collect"

/* Parse `ward run` arguments (argv[0] = "run").  0, or -1 with a one-line
 * message in err (the caller exits 125, nothing run). */
int cli_parse_run(int argc, char **argv, struct cli_run *out, char *err, size_t errlen);
void cli_run_free(struct cli_run *c);

/* Strict number parsing: the whole string, finite, not negative. */
int parse_seconds(const char *s, double *out);
int parse_u64(const char *s, uint64_t *out);

void cli_print_run_help(FILE *f);

/* --collect: res's files into c->collect_dir (collect_out.c); problems are
 * named on stderr, the exit status stays the program's. */
void cli_write_collected(const struct cli_run *c, const struct ward_result *res);

#endif
