/* core/application.c — the `application` level, opt-in only
 * (WARD_ALLOW_APPLICATION=1): no kernel isolation, only a scrubbed
 * environment, rlimits, its own session and process group, and a confined
 * cwd (an ephemeral directory, removed afterwards, unless --workdir).  The
 * timeout kills the whole process group; a daemon that leaves the group
 * escapes, which is why this level is never chosen silently
 * (ward_request_validate refuses it without WARD_ALLOW_APPLICATION=1).
 * Owns this level's run from its cwd to its reap; supervise.c watches it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/pathguard.h"

/* Remove everything beneath dirfd, never following a symlink; directories
 * the code made non-writable are made writable first. */
static void remove_beneath(int dirfd, int depth)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd, e->d_name, 0) == 0)
			continue;
		if (depth > 256)
			continue;
		int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		fchmod(sub, 0700);
		remove_beneath(sub, depth + 1);
		unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		fchmod(fd, 0700);
		remove_beneath(fd, 0);
	}
	rmdir(path);
}

struct app_kill {
	pid_t pgid;
};

/* In the child: its setup failed.  Say why on the control pipe (ctl, a
 * close-on-exec fd, so an execve closes it unsaid), as ward's failure. */
static void child_fail(int ctl, const char *what, const char *why)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "E %s%s%s\n", what, why[0] ? ": " : "", why);
	if (n > 0)
		(void)!write(ctl, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(WARD_EXIT_FAILED);
}

static void kill_group(void *arg)
{
	struct app_kill *k = arg;
	kill(-k->pgid, SIGKILL);
}

/* The pipes between ward and the command: {read end, write end} each, -1
 * when closed or not made. */
struct app_pipes {
	int out[2], err[2], in[2], rep[2], ctl[2];
};

/* What this level enforces, and with what. */
static void app_enforced(struct ward_result *res)
{
	res->enforced.memory = "rlimit";
	res->enforced.pids = "rlimit";
	res->enforced.cpu = "rlimit";
	res->enforced.fsize = "rlimit";
	res->enforced.seccomp = "none";
	res->enforced.landlock = "none";
	res->enforced.tcp_memory = "none";
	snprintf(res->enforced.user, sizeof(res->enforced.user), "none");
}

/* The command's cwd, *cwd: the request's workdir, or a fresh directory
 * made from tmpl; the request's files written beneath it.  0, or -1 with
 * res->error set (*cwd is NULL when no directory was made). */
static int app_workdir(const struct ward_request *req, char *tmpl, char **cwd, struct ward_result *res)
{
	if (req->workdir) {
		*cwd = (char *)req->workdir;
	} else {
		*cwd = mkdtemp(tmpl);
		if (!*cwd) {
			snprintf(res->error, sizeof(res->error), "cannot create a working directory: %s",
			         strerror(errno));
			return -1;
		}
	}
	int cwdfd = open(*cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwdfd < 0) {
		snprintf(res->error, sizeof(res->error), "cannot open the working directory: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < req->nfiles; i++) {
		const struct ward_file *f = &req->files[i];
		int r = pathguard_write(cwdfd, f->path, f->data, f->len, f->mode ? f->mode : 0644);
		if (r < 0) {
			snprintf(res->error, sizeof(res->error), "cannot write file '%s': %s", f->path, strerror(-r));
			close(cwdfd);
			return -1;
		}
	}
	close(cwdfd);
	return 0;
}

/* The command's environment (HOME and TMPDIR are its cwd) and argv.  0, or
 * -1 with res->error set. */
static int app_command(const struct ward_request *req, const char *cwd, char ***envp, char ***argv,
                       struct ward_result *res)
{
	const char *home = req->workdir ? req->workdir : cwd;
	char homebuf[4200], tmpbuf[4200];
	snprintf(homebuf, sizeof(homebuf), "HOME=%s", home);
	snprintf(tmpbuf, sizeof(tmpbuf), "TMPDIR=%s", home);
	const char *extra[] = {homebuf, tmpbuf, NULL};
	*envp = env_build(req, extra);
	*argv = argv_build(req);
	if (!*envp || !*argv) {
		snprintf(res->error, sizeof(res->error), "out of memory");
		return -1;
	}
	return 0;
}

/* stdout, stderr and the control pipe always; stdin and the report channel
 * when the request has them.  0, or -1 with res->error set. */
static int app_pipes_open(const struct ward_request *req, struct app_pipes *p, struct ward_result *res)
{
	if (pipe2(p->out, O_CLOEXEC) < 0 || pipe2(p->err, O_CLOEXEC) < 0 || pipe2(p->ctl, O_CLOEXEC) < 0 ||
	    ((req->stdin_set || req->stdin_fd >= 0) && pipe2(p->in, O_CLOEXEC) < 0) ||
	    (req->report_channel && pipe2(p->rep, O_CLOEXEC) < 0)) {
		snprintf(res->error, sizeof(res->error), "cannot create pipes: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* In the child, after the clone: its own session; the pipes as fds 0-2
 * (and 3), nothing else open but the control pipe, which execve closes; a
 * fresh process's signal state; the cwd and the rlimits; then the command.
 * Never returns. */
static void app_child(const struct ward_request *req, const struct app_pipes *p, const char *cwd, char **argv,
                      char **envp)
{
	setsid();
	/* the control pipe, above the fds arranged here, until execve */
	int ctl = fcntl(p->ctl[1], F_DUPFD_CLOEXEC, 16);
	if (ctl < 0)
		_exit(WARD_EXIT_FAILED);
	/* stdin: a pipe the supervisor feeds, never the caller's fd */
	int in = p->in[0];
	if (in < 0)
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0 || dup2(p->out[1], 1) < 0 || dup2(p->err[1], 2) < 0)
		child_fail(ctl, "cannot give the command its stdin, stdout and stderr", strerror(errno));
	int first = 3;
	if (p->rep[1] >= 0) {
		if (dup2(p->rep[1], 3) < 0)
			child_fail(ctl, "cannot give the command its report channel", strerror(errno));
		first = 4;
	}
	if (ctl > first)
		syscall(SYS_close_range, first, ctl - 1, 0);
	syscall(SYS_close_range, ctl + 1, ~0u, 0);
	for (int fd = 0; fd < first; fd++)
		fcntl(fd, F_SETFD, 0);
	reset_signals();
	char why[300];
	if (chdir(cwd) < 0)
		child_fail(ctl, "cannot enter the working directory", strerror(errno));
	if (apply_rlimits(&req->limits, true, why, sizeof(why)) < 0)
		child_fail(ctl, why, "");
	exec_search(argv, envp);
	exec_fail_exit(argv[0], errno);
}

/* ward's side after the clone: the child's ends are the child's. */
static void app_close_child_ends(struct app_pipes *p)
{
	close(p->out[1]);
	close(p->err[1]);
	close(p->ctl[1]);
	p->out[1] = p->err[1] = p->ctl[1] = -1;
	if (p->in[0] >= 0)
		close(p->in[0]);
	if (p->rep[1] >= 0)
		close(p->rep[1]);
	p->in[0] = p->rep[1] = -1;
}

/* Supervise the command (the loop takes ward's ends of the pipes), reap
 * it, kill what it left in its process group, and fill res and o.  0, or
 * -1 with res->error set when its setup failed before execve. */
static int app_supervise(const struct ward_request *req, pid_t pid, int pidfd, struct app_pipes *p,
                         struct ward_result *res, struct backend_outcome *o, double start)
{
	struct app_kill k = {.pgid = pid};
	struct supervise s = {
		.pidfd = pidfd,
		.out_fd = p->out[0],
		.err_fd = p->err[0],
		.report_fd = p->rep[0],
		.ctl_fd = p->ctl[0],
		.notify_sock = -1,
		.stdin_fd = p->in[1],
		.stdin_src = req->stdin_set ? -1 : req->stdin_fd,
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.timeout_s = req->limits.timeout_s,
		.cpu_s = 0,
		.kill_tree = kill_group,
		.kill_arg = &k,
		.output_limit = req->limits.output_limit,
		.output_kill = req->output_limit_kills,
		.live_fd = {req->capture ? -1 : req->stream_fd[0], req->capture ? -1 : req->stream_fd[1]},
		.report_limit = req->report_limit,
		.start = start,
		.cancel = req->cancel,
		.observe_fd = req->observe ? req->observe_fd : -1,
	};
	p->out[0] = p->err[0] = p->rep[0] = p->in[1] = p->ctl[0] = -1;
	supervise_run(&s);
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	/* The command is gone; whatever it left in its process group goes too. */
	kill(-pid, SIGKILL);
	outcome_collect(&s, res);
	usage_from_rusage(&ru, &res->usage);
	if (s.ctl[0] == 'E' && !s.timed_out && !s.cancelled) {
		/* its setup failed before execve: ward's failure, not the program's */
		snprintf(res->error, sizeof(res->error), "sandbox setup failed: %.*s", (int)strcspn(s.ctl + 2, "\n"),
		         s.ctl + 2);
		return -1;
	}
	o->ran = true;
	o->wait_status = st;
	o->timed_out = s.timed_out;
	o->cancelled = s.cancelled;
	o->output_exceeded = s.output_exceeded;
	return 0;
}

int backend_application_run(const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
                            double start)
{
	int ret = -1;
	char tmpl[] = "/tmp/ward-app.XXXXXX";
	char *cwd = NULL;
	char **envp = NULL, **argv = NULL;
	struct app_pipes p = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	int pidfd = -1;

	app_enforced(res);
	if (app_workdir(req, tmpl, &cwd, res) < 0 || app_command(req, cwd, &envp, &argv, res) < 0 ||
	    app_pipes_open(req, &p, res) < 0)
		goto out;
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
	if (pid < 0) {
		snprintf(res->error, sizeof(res->error), "cannot start the command: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		app_child(req, &p, cwd, argv, envp); /* never returns */
	app_close_child_ends(&p);
	ret = app_supervise(req, pid, pidfd, &p, res, o, start);
out:
	if (pidfd >= 0)
		close(pidfd);
	int *fds[] = {p.out, p.err, p.in, p.rep, p.ctl};
	for (size_t i = 0; i < 5; i++)
		for (int j = 0; j < 2; j++)
			if (fds[i][j] >= 0)
				close(fds[i][j]);
	if (!req->workdir && cwd)
		remove_tree(cwd);
	env_free(envp);
	free(argv);
	return ret;
}
