/* outcome.c — what a level's outcome comes to in the result of SPEC §4
 * (result_from_outcome), for both levels (application.c, src/system/) and
 * the dispatcher above them (src/dispatch/run.c); the result's own
 * helpers.  Never formats a result for output (the front ends do). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/backend.h"
#include "ward.h"

void outcome_set_error(struct ward_result *res, const char *msg)
{
	res->status = WARD_ST_ERROR;
	res->exit_code = WARD_EXIT_FAILED;
	if (!res->error[0])
		snprintf(res->error, sizeof(res->error), "%s", msg);
}

int result_from_outcome(const struct backend_outcome *op, int r, struct ward_result *res, double start)
{
	struct backend_outcome o = *op;
	res->usage.wall_ms = (uint64_t)((monotonic_now() - start) * 1000);
	if (!res->out.data) {
		res->out.data = strdup("");
		res->err.data = strdup("");
	}
	if (o.cancelled) {
		res->error[0] = 0;
		outcome_set_error(
			res, "cancelled: ward was asked to stop (a signal, the server shutting down, or a streaming "
			     "client going away); the sandbox was killed");
		return -1;
	}
	if (r < 0 || !o.ran) {
		outcome_set_error(res, "the sandbox failed for an unknown reason");
		return -1;
	}

	int st = o.wait_status;
	if (o.seccomp_killed && !o.timed_out && !o.cpu_exceeded) {
		/* ward caught the call through the listener and killed the
		 * sandbox; report it as the kernel's kill would have been */
		res->status = WARD_ST_SIGNAL;
		res->signal = SIGSYS;
		res->exit_code = 128 + SIGSYS;
		return 0;
	}
	res->oom_killed = o.oom_killed;
	res->output_exceeded = o.output_exceeded;
	if (o.timed_out || o.cpu_exceeded || (WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU)) {
		res->status = WARD_ST_TIMEOUT;
		res->timed_out = true;
		res->exit_code = WARD_EXIT_TIMEOUT;
		res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
	} else if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		res->signal = sig;
		if (sig == SIGKILL && o.oom_killed) {
			res->status = WARD_ST_MEMORY;
			res->exit_code = WARD_EXIT_MEMORY;
		} else {
			res->status = WARD_ST_SIGNAL;
			res->exit_code = 128 + sig;
		}
	} else {
		int code = WEXITSTATUS(st);
		res->exit_code = code;
		if (code == WARD_EXIT_MEMORY && o.oom_killed) {
			/* a shell reporting that its child was OOM-killed */
			res->status = WARD_ST_MEMORY;
			res->signal = SIGKILL;
		} else
			res->status = code == 0 ? WARD_ST_OK : WARD_ST_NONZERO;
	}
	return 0;
}

void ward_result_free(struct ward_result *res)
{
	free(res->out.data);
	free(res->err.data);
	free(res->report);
	free(res->egress);
	res->out.data = res->err.data = res->report = NULL;
	for (size_t i = 0; i < res->nfiles; i++) {
		free(res->files[i].path);
		free(res->files[i].data);
	}
	free(res->files);
	res->files = NULL;
	res->nfiles = 0;
	res->egress = NULL;
	res->negress = 0;
}

int ward_result_exit_status(const struct ward_result *res)
{
	return res->status == WARD_ST_ERROR ? WARD_EXIT_FAILED : res->exit_code;
}
