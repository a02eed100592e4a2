/* backend.h — what the levels share (core/level.c, core/outcome.c) and the
 * application level's entry (core/application.c).  The dispatcher above
 * the levels (src/dispatch/run.c) validates, picks the level by isolation
 * and maps the outcome to a result the same way for all of them; the system
 * level's entry is src/system/backend.h. */
#ifndef WARD_BACKEND_H
#define WARD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "core/supervise.h"
#include "ward.h"

/* What a level hands back to the dispatcher (result_from_outcome). */
struct backend_outcome {
	bool ran;        /* the command started (false: setup failed, error set) */
	int wait_status; /* of the command, as from waitpid */
	bool timed_out;
	bool cpu_exceeded;
	bool output_exceeded; /* request.output_limit_kills: a stream passed output_limit */
	bool oom_killed;
	bool exec_failed;
	bool cancelled;
	bool seccomp_killed; /* a fatal syscall: reported as SIGSYS */
};

/* The child's environment: SPEC §2's fixed variables, then the request's.
 * NULL-terminated, malloc'd (free with env_free). */
char **env_build(const struct ward_request *req, const char *const *extra);
void env_free(char **env);

/* The command's argv: req->argv, or /bin/sh -c SHELL.  A malloc'd array of
 * borrowed strings (free only the array), NULL on allocation failure. */
char **argv_build(const struct ward_request *req);

/* execve argv[0] searching PATH from envp (never ward's own environment).
 * Returns only on failure, with errno set.  Only syscalls. */
void exec_search(char *const argv[], char *const envp[]);

/* Write "ward: cannot run 'PROG': REASON" to fd 2 and _exit(127/126). */
void exec_fail_exit(const char *prog, int err);

/* Give the command the signal state of a fresh process: every disposition
 * default (ward ignores SIGPIPE, and ignored signals survive execve) and
 * nothing blocked (a server's threads block signals); umask 022 whatever
 * the caller's.  Only syscalls. */
void reset_signals(void);

/* Apply the rlimits of a request in the calling process.  with_as: also
 * RLIMIT_AS from the memory limit (when no cgroup limits memory).
 * 0, or -errno with err saying which limit and the fix (one above the hard
 * limit ward inherited, say).  Only syscalls and snprintf. */
int apply_rlimits(const struct ward_limits *l, bool with_as, char *err, size_t errlen);

int backend_application_run(const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
                            double start);

/* CPU and peak RSS of a reaped process tree. */
struct rusage;
void usage_from_rusage(const struct rusage *ru, struct ward_usage *u);

/* What a backend's outcome (and return r) come to in res (SPEC §2's
 * statuses); ward_run's return.  start: monotonic, for usage.wall_ms. */
int result_from_outcome(const struct backend_outcome *o, int r, struct ward_result *res, double start);
/* A setup error in res (status error, exit 125), unless one is there. */
void outcome_set_error(struct ward_result *res, const char *msg);
/* Fill res->out/err/report from a finished supervise. */
int outcome_collect(struct supervise *s, struct ward_result *res);

#endif
