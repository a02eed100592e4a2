/* session_json.h — the wire shapes of sessions (session_json.c). */
#ifndef WARD_SESSION_JSON_H
#define WARD_SESSION_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"

/* The most of a session's creating body (without its files) kept to fork
 * it again. */
#define SJ_RECIPE_MAX 16384
struct sj_session_extras {
	double ttl_s, idle_s, work_size_mb, cpu_s;
	bool ttl_set, idle_set, work_set, cpu_set;
	char recipe[SJ_RECIPE_MAX]; /* the body without "files" ("": too long to keep) */
	unsigned fork_n;            /* POST .../fork: how many */
};
/* POST .../pause: {"timeout_s": S} (optional): killed if still paused then. */
struct sj_pause {
	double timeout_s;
	bool timeout_set;
};
int sj_pause(const char *body, size_t len, struct sj_pause *p, char *err, size_t n);
/* POST .../fork: {"count": N}, 1 <= N <= max (absent: 1). */
int sj_fork(const char *body, size_t len, unsigned max, unsigned *count, char *err, size_t n);
/* The body of POST /sessions without its "files", into out (n bytes):
 * "" when it does not fit. */
void sj_recipe(const char *body, size_t len, char *out, size_t n);
struct sj_exec_extras {
	char cwd[4096]; /* "" = /work */
	bool background, stdin_pipe;
};
/* 0, or -1 with err naming the field. */
int sj_session_extras(const char *body, size_t len, struct sj_session_extras *x, char *err, size_t n);
int sj_exec_extras(const char *body, size_t len, struct sj_exec_extras *x, char *err, size_t n);
int sj_signal(const char *body, size_t len, int *sig, char *err, size_t n);

/* A session as GET /sessions lists it, or (detail) as GET /sessions/{id}. */
struct sj_session {
	const char *id;
	double created_at, expires_at, idle_expires_at; /* CLOCK_REALTIME */
	const struct ward_enforced *enforced;           /* or NULL */
	bool detail, busy, paused;
	uint64_t execs;
	struct ward_session_usage usage;
	bool cpu_spent; /* its cpu_seconds budget ran out */
	const struct ward_session_proc *procs;
	size_t nprocs;
	bool egress; /* network allow: the proxy's counts */
	uint64_t egress_tried, egress_allowed;
};
/* malloc'd JSON, or NULL when out of memory. */
char *sj_session_json(const struct sj_session *v);
char *sj_sessions_json(const struct sj_session *v, size_t n);
/* A directory's listing, its entries while the text stays within max
 * bytes (0: all); *kept: how many are in it. */
char *sj_list_json(const struct ward_dirent *d, size_t n, size_t max, size_t *kept);
char *sj_procs_json(const struct ward_session_proc *p, size_t n);
char *sj_event_json(const char *stream, const char *data, size_t len, size_t *outlen);
/* The last line of an output stream: {"result": {"pid", "state", "status",
 * "exit_code", "timed_out", "error"}} once it exited, or {"error"}. */
char *sj_end_json(int pid, int exit_code, const char *status, const char *error, size_t *outlen);
char *sj_pid_json(int pid);

/* The body with "argv": ["true"] in place of any command, for the request
 * decoder (a session's body has no command): malloc'd (free()), or NULL
 * with err. */
char *sj_with_argv(const char *body, size_t len, size_t *outlen, char *err, size_t n);
/* GET /health's answer (parsed) with the session limits added to
 * "limits" (SPEC §10) and the node id. */
struct sj_session_limits {
	unsigned max_sessions, client_sessions;
	double max_ttl, max_idle;
	uint64_t max_work_size_mb;
	const char *node_id;
};
struct json_t;
void sj_health_sessions(struct json_t *health, const struct sj_session_limits *l);
#endif
