/* command.c — the command's last steps before execve, inside the sandbox.
 *
 * Runs in the command's clone (CLONE_VM | CLONE_VFORK: PID 1 waits), sharing
 * PID 1's memory until execve, on a stack of its own and already under PID
 * 1's seccomp filter.  So it allocates nothing and writes nothing of that
 * memory but child_ctx.setup_err (WARD_TRACE's lines aside): syscalls, and
 * snprintf for its messages.  All it reads is child.h's: the fds, PID 1's
 * Landlock ruleset and the handover.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/supervise.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/userns.h"
#include "system/child.h"

/* The command could not be set up: say why to PID 1 (its memory is ours
 * until execve), which reports it as ward's failure, not the program's. */
static void command_fail(struct child_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void command_fail(struct child_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(c->setup_err, sizeof(c->setup_err), fmt, ap);
	va_end(ap);
	if (n <= 0)
		snprintf(c->setup_err, sizeof(c->setup_err), "the command's setup failed");
	if (c->session) {
		char line[sizeof(c->setup_err) + 4];
		int k = snprintf(line, sizeof(line), "E %s\n", c->setup_err);
		(void)!write(c->fail_fd, line, (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1);
	}
	_exit(WARD_EXIT_FAILED);
}

/* The command, in PID 1's child.  Never returns. */
static void command_main(struct child_ctx *c)
{
	const struct handover *ho = &c->ho;
	if (setsid() < 0)
		command_fail(c, "cannot give the command its own session: %s", strerror(errno));
	/* fds: 0 stdin, 1 stdout, 2 stderr, 3 report channel; nothing else. */
	int in = -1;
	if (ho->flags & HO_STDIN_PIPE)
		in = c->in_r;
	if (in < 0)
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0 || dup2(c->out_w, 1) < 0 || dup2(c->err_w, 2) < 0)
		command_fail(c, "cannot give the command its stdin, stdout and stderr: %s", strerror(errno));
	int first_closed = 3;
	if ((ho->flags & HO_REPORT) && c->rep_w >= 0) {
		if (dup2(c->rep_w, 3) < 0)
			command_fail(c, "cannot give the command its report channel: %s", strerror(errno));
		first_closed = 4;
	}
	/* PID 1's Landlock ruleset survives until execve, as the next fd,
	 * close-on-exec. */
	int ruleset = -1;
	if (c->landlock_fd >= 0) {
		ruleset = first_closed;
		if (dup3(c->landlock_fd, ruleset, O_CLOEXEC) < 0)
			command_fail(c, "cannot pass the Landlock ruleset to the command: %s", strerror(errno));
	}
	unsigned from = (unsigned)(ruleset >= 0 ? ruleset + 1 : first_closed);
	if (c->session && c->fail_fd > (int)from) {
		/* a session's exec keeps its control pipe (close-on-exec) to
		 * say why a last step failed */
		syscall(SYS_close_range, from, (unsigned)c->fail_fd - 1, 0);
		syscall(SYS_close_range, (unsigned)c->fail_fd + 1, ~0u, 0);
	} else
		syscall(SYS_close_range, from, ~0u, 0);
	for (int fd = 0; fd < first_closed; fd++)
		fcntl(fd, F_SETFD, 0);

	/* Signals: PID 1 gave each its default disposition, unblocked them and
	 * set umask 022 (reset_signals), and the command is its clone. */
	trace_phase("cmd:fds", c->start);
	char why[300];
	if (apply_rlimits(&ho->limits, ho->flags & HO_WITH_AS, why, sizeof(why)) < 0)
		command_fail(c, "%s", why);
	int r = caps_drop_to(WARD_SANDBOX_UID, WARD_SANDBOX_GID);
	if (r < 0)
		command_fail(c, "cannot drop to the sandbox user %d with no capabilities: %s; see `ward doctor`",
		             WARD_SANDBOX_UID, strerror(-r));
	trace_phase("cmd:caps", c->start);
	if (c->cwd && chdir(c->cwd) < 0)
		command_fail(c, "cannot enter the working directory '%s': %s", c->cwd, strerror(errno));
	if (ruleset >= 0 && (r = ward_landlock_restrict(ruleset)) < 0)
		command_fail(c, "cannot restrict the command with Landlock: %s; see `ward doctor`", strerror(-r));
	trace_phase("cmd:landlock", c->start);
	/* The seccomp filter is PID 1's, inherited (init_main).  An execve
	 * that fails is the program's failure (127, 126), as in a shell. */
	exec_search(ho->argv, ho->envp);
	exec_fail_exit(ho->argv[0], errno);
}

void command_session_main(struct child_ctx *c)
{
	command_main(c);
	_exit(127);
}

int command_entry(void *arg)
{
	struct child_ctx *c = arg;
	close(c->ctl_w);
	command_main(c);
	return 127;
}
