/* session_copy.c — a copy of files out of or into a session
 * (session_save.c: save, restore, fork) run by a short-lived child
 * process, not by a thread of ward's:
 *
 *  - placed in the destination session's cgroup before it writes, so that
 *    what it writes into that session's tmpfs /work is charged to that
 *    session's memory (memory_mb holds: past it the copy fails, and the
 *    caller says so), never to ward's own cgroup;
 *  - with a deadline: past it the child is killed and the copy fails;
 *  - its fsuid and capability changes (treecopy.c reads the source as the
 *    sandbox's user with no capability) stay out of ward's threads.
 *
 * The child is a fork of the caller: it uses only the fds it is given,
 * answers on a pipe, and dies with the thread that made it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errf.h"
#include "sandbox/cgroup.h"
#include "system/session_copy.h"

struct copy_answer {
	int r;
	struct treecopy_stats st;
	char err[512];
};

static void child(int answer, int from, int to, struct ward_cgroup *cg, const struct treecopy_limits *lim)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct copy_answer a = {0};
	a.r = cg ? cg_attach(cg, getpid()) : 0;
	if (a.r < 0)
		snprintf(a.err, sizeof(a.err), "cannot move the copy into the session's cgroup: %s", strerror(-a.r));
	if (a.r == 0) {
		/* past the session's memory, the copy is what the kernel kills */
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, "1000", 4);
			close(fd);
		}
		a.r = treecopy(from, to, (uid_t)-1, (gid_t)-1, lim, &a.st, a.err, sizeof(a.err));
	}
	(void)!write(answer, &a, sizeof(a));
	_exit(0);
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child's answer within deadline_s: 1 when it came whole, 0 when the
 * time ran out, -1 when the child died without one. */
static int await(int fd, double deadline_s, struct copy_answer *a)
{
	double until = mono() + deadline_s;
	for (;;) {
		double left = until - mono();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			continue; /* (the loop's head says whether the time is up) */
		ssize_t k;
		while ((k = read(fd, a, sizeof(*a))) < 0 && errno == EINTR)
			;
		return k == (ssize_t)sizeof(*a) ? 1 : -1;
	}
}

int session_copy(int from, int to, struct ward_cgroup *cg, double deadline_s, const struct treecopy_limits *lim,
                 struct treecopy_stats *st, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		int e = errno;
		base_errf(err, errlen, "cannot copy the files: no pipe: %s", strerror(e));
		return -e;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1], from, to, cg, lim);
	}
	int e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		base_errf(err, errlen, "cannot copy the files: cannot fork: %s", strerror(e));
		return -e;
	}
	struct copy_answer a = {.r = -EIO};
	int got = await(p[0], deadline_s, &a);
	close(p[0]);
	if (got <= 0)
		kill(pid, SIGKILL); /* (not reaped yet: pid is still the child's) */
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (st)
		*st = got > 0 ? a.st : (struct treecopy_stats){0};
	if (got > 0 && a.r < 0)
		base_errf(err, errlen, "%s", a.err);
	if (got > 0)
		return a.r;
	if (got == 0) {
		base_errf(err, errlen,
		          "the copy of the files took longer than %g s (the session's call deadline): "
		          "remove some files, or ask for a longer --session-call-timeout",
		          deadline_s);
		return -ETIMEDOUT;
	}
	base_errf(err, errlen,
	          "the copy of the files was killed (%s): the files do not fit in the session's memory "
	          "(memory_mb): ask for more, or remove some files",
	          WIFSIGNALED(ws) ? strsignal(WTERMSIG(ws)) : "it died");
	return -ENOMEM;
}
