/* session.c — the supervisor's side of sessions (SPEC §11): the public
 * ward_session_* calls.  STUBS for now (every call fails with -ENOSYS) so
 * front ends can build against the API while the mechanism lands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ward.h"

static int nosys(char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "sessions are not implemented in this build yet: update ward");
	return -ENOSYS;
}

struct ward_session *ward_session_new(const struct ward_session_opts *o, char *err, size_t errlen)
{
	nosys(err, errlen);
	return NULL;
}

void ward_session_destroy(struct ward_session *s) {}

bool ward_session_alive(struct ward_session *s) { return false; }

int ward_session_exec(struct ward_session *s, const struct ward_request *req, const char *cwd,
		      struct ward_result *result)
{
	*result = (struct ward_result){ .status = WARD_ST_ERROR, .exit_code = WARD_EXIT_FAILED };
	nosys(result->error, sizeof result->error);
	return -1;
}

int ward_session_spawn(struct ward_session *s, const struct ward_request *req, const char *cwd, bool stdin_pipe,
		       int *id, char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_procs(struct ward_session *s, struct ward_session_proc **out, size_t *n) { return -ENOSYS; }

void ward_session_procs_free(struct ward_session_proc *p, size_t n) { free(p); }

int ward_session_proc_output(struct ward_session *s, int id, uint64_t from_out, uint64_t from_err, double wait_s,
			     struct ward_stream *out, struct ward_stream *err, bool *exited, int *exit_code,
			     char *errbuf, size_t errlen)
{
	return nosys(errbuf, errlen);
}

int ward_session_proc_stdin(struct ward_session *s, int id, const void *data, size_t len, bool close_after,
			    char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_proc_signal(struct ward_session *s, int id, int sig, char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_write(struct ward_session *s, const char *path, const void *data, size_t len, mode_t mode,
		       char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_read(struct ward_session *s, const char *path, size_t max, unsigned char **data, size_t *len,
		      char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_list(struct ward_session *s, const char *path, struct ward_dirent **out, size_t *n, char *err,
		      size_t errlen)
{
	return nosys(err, errlen);
}

void ward_session_list_free(struct ward_dirent *d, size_t n) { free(d); }

int ward_session_remove(struct ward_session *s, const char *path, char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_usage(struct ward_session *s, struct ward_session_usage *u) { return -ENOSYS; }

void ward_session_enforced(struct ward_session *s, struct ward_enforced *e) {}
