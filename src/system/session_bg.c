/* session_bg.c — a session's background processes (ward_session_spawn and
 * the calls on what it started), supervisor side.  NOT DONE YET: every call
 * answers -ENOSYS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "system/session.h"
#include "ward.h"

struct session_bg {
	int unused;
};

static int nosys(char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "background processes in sessions are not implemented yet: run the command "
				      "with `&` inside an exec instead");
	return -ENOSYS;
}

int session_bg_new(struct ward_session *s, struct session_bg **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void session_bg_free(struct session_bg *bg) { free(bg); }

int ward_session_spawn(struct ward_session *s, const struct ward_request *req, const char *cwd, bool stdin_pipe,
		       int *id, char *err, size_t errlen)
{
	return nosys(err, errlen);
}

int ward_session_procs(struct ward_session *s, struct ward_session_proc **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	return 0;
}

void ward_session_procs_free(struct ward_session_proc *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		for (char **a = p[i].argv; a && *a; a++)
			free(*a);
		free(p[i].argv);
	}
	free(p);
}

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
