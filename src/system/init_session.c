/* init_session.c — a session's PID 1 (SPEC §11), once its sandbox is ready:
 * the loop that starts each exec's command and each file operation's worker
 * and reaps every process of the sandbox.
 *
 * Runs inside the sandbox as PID 1 (init.c's process, after its setup: its
 * root, its Landlock ruleset and its seccomp filter are in place), so, as
 * init.c: it allocates nothing (a clone of a multi-threaded process; its
 * children are made with the raw clone syscall, never glibc's fork, which
 * takes malloc's locks), holds no host fd but the session's, and makes only
 * calls its filter allows.  It never runs the user's code itself, and never
 * touches a path a request names: a worker it forks does, as the sandbox
 * user under the command's Landlock ruleset.  The protocol is
 * session_proto.h's.  It exits when the supervisor goes (its control socket
 * or sync pipe closes): the kernel then kills every process of the sandbox.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/pathguard.h"
#include "core/request.h"
#include "core/supervise.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/userns.h"
#include "system/child.h"
#include "system/collect_walk.h"
#include "system/session_proto.h"

/* Commands PID 1 reports the end of (execs, background ones included).  The
 * supervisor admits at most WARD_SESSION_MAX_EXECS at once; more is refused
 * here too. */
#define MAX_TRACKED (WARD_SESSION_MAX_EXECS * 2)

struct tracked {
	pid_t pid; /* 0: free */
	int ctl_w; /* where "X STATUS" goes */
};

struct session_state {
	struct child_ctx *c;
	int sock, sigfd;
	struct tracked t[MAX_TRACKED];
};

/* A plain fork by the raw syscall (see the header); with pidfd, CLONE_PIDFD. */
static pid_t raw_fork(int *pidfd)
{
	unsigned long flags = SIGCHLD | (pidfd ? CLONE_PIDFD : 0);
	return (pid_t)syscall(SYS_clone, flags, 0, pidfd, NULL, 0);
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

static void send_head(int fd, int r, uint64_t len)
{
	struct file_head h = {.r = r, .len = len};
	write_all(fd, &h, sizeof(h));
}

/* ------------------------------------------------------------ file worker */

/* Make the parents of path (checked; relative to /work, or absolute),
 * 0755.  0 or -errno. */
static int make_parents(const char *path)
{
	char buf[SM_MAX_STR];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *s = buf + (buf[0] == '/'); (s = strchr(s, '/')); s++) {
		*s = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* Open a regular file without blocking on what the sandbox may have put
 * there (a FIFO, a device): anything but a regular file is refused, and so
 * is a file of /proc: the worker is a fork of PID 1, not a process of the
 * sandbox's own, and its /proc/self (its environment, its memory) is none
 * of the sandbox's business. */
static int open_regular(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		return -e;
	}
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC) {
		close(fd);
		return -EACCES;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static void op_write(const struct session_msg *m, int s)
{
	char buf[16384];
	int r = make_parents(m->str);
	int fd = r < 0 ? r : open_regular(m->str, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && fchmod(fd, m->mode & 07777) < 0)
		r = -errno;
	for (;;) {
		ssize_t n = read(s, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t off = 0; fd >= 0 && r == 0 && off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				r = -errno;
			else
				off += w;
		}
	}
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	send_head(s, fd < 0 ? fd : r, 0);
}

static void op_read(const struct session_msg *m, int s)
{
	int fd = open_regular(m->str, O_RDONLY, 0);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0)
		st.st_size = 0;
	if (fd >= 0 && (uint64_t)st.st_size > m->max) {
		close(fd);
		fd = -EFBIG;
	}
	if (fd < 0) {
		send_head(s, fd, 0);
		return;
	}
	send_head(s, 0, (uint64_t)st.st_size);
	char buf[16384];
	uint64_t left = (uint64_t)st.st_size; /* its size at open: what is added meanwhile is not sent */
	while (left) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		write_all(s, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	close(fd);
}

static char entry_type(mode_t m)
{
	return S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'o';
}

static void op_list(const struct session_msg *m, int s)
{
	int dfd = open(m->str[0] ? m->str : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		send_head(s, -errno, 0);
		return;
	}
	send_head(s, 0, 0);
	char buf[8192];
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			struct stat st;
			if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			size_t len = strlen(d->d_name);
			struct file_entry e = {.type = (uint8_t)entry_type(st.st_mode),
			                       .name_len = (uint16_t)len,
			                       .mode = st.st_mode & 07777,
			                       .size = (uint64_t)st.st_size,
			                       .mtime_ns =
			                               (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
			write_all(s, &e, sizeof(e));
			write_all(s, d->d_name, len);
		}
	}
	close(dfd);
}

/* Remove everything in directory dfd (depth bounded), then nothing else.
 * 0 or -errno. */
static int empty_dir(int dfd, int depth)
{
	if (depth > 64)
		return -ELOOP;
	char buf[2048];
	int r = 0;
	for (bool removed = true; removed;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		removed = false;
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			if (unlinkat(dfd, d->d_name, 0) == 0) {
				removed = true;
				continue;
			}
			if (errno != EISDIR && errno != EPERM) {
				r = -errno;
				continue;
			}
			int sub = openat(dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int e = sub < 0 ? -errno : empty_dir(sub, depth + 1);
			if (sub >= 0)
				close(sub);
			if (e == 0 && unlinkat(dfd, d->d_name, AT_REMOVEDIR) < 0)
				e = -errno;
			if (e < 0)
				r = e;
			else
				removed = true;
		}
		lseek(dfd, 0, SEEK_SET); /* entries removed: read the rest afresh */
		if (r < 0)
			break;
	}
	return r;
}

static void op_remove(const struct session_msg *m, int s)
{
	int r = 0;
	if (unlink(m->str) < 0) {
		r = -errno;
		if (errno == EISDIR || errno == EPERM) {
			int dfd = open(m->str, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = dfd < 0 ? -errno : empty_dir(dfd, 0);
			if (dfd >= 0)
				close(dfd);
			if (r == 0 && rmdir(m->str) < 0)
				r = -errno;
		}
	}
	send_head(s, r, 0);
}

/* Files out after an exec (SPEC §12): the globs, one a line, walked from
 * /work (the worker's cwd) by collect_walk.c, the frames on the stream. */
static void op_collect(const struct session_msg *m, int s)
{
	char globs[SM_MAX_STR]; /* the worker's own copy, split in place */
	const char *list[WARD_MAX_COLLECT_GLOBS + 1];
	size_t n = 0;
	memcpy(globs, m->str, sizeof(globs));
	globs[sizeof(globs) - 1] = 0;
	for (char *g = globs; *g && n < WARD_MAX_COLLECT_GLOBS;) {
		list[n++] = g;
		char *nl = strchr(g, '\n');
		if (!nl)
			break;
		*nl = 0;
		g = nl + 1;
	}
	list[n] = NULL;
	send_head(s, 0, 0);
	int wfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return; /* no 'E' frame: the host counts the list as cut short */
	collect_walk(wfd, list, m->mode, m->max, s);
	close(wfd);
}

/* The worker: the sandbox user, the command's Landlock ruleset, PID 1's
 * filter and mount namespace, /work as its cwd; then the op. */
static __attribute__((noreturn)) void file_worker(struct session_state *st, const struct session_msg *m, int s)
{
	struct child_ctx *c = st->c;
	char err[256];
	int r = m->op != SM_COLLECT &&
	                        pathguard_check_session(m->str, strlen(m->str), m->op == SM_LIST, err, sizeof(err)) <
	                                0 &&
	                        !(m->op == SM_LIST && !m->str[0])
	                ? -EINVAL
	                : 0;
	/* Nothing of PID 1's but the stream: the worker becomes the sandbox
	 * user, whom the sandbox's processes could otherwise reach. */
	if (s != 3 && dup3(s, 3, O_CLOEXEC) < 0)
		_exit(1);
	s = 3;
	syscall(SYS_close_range, 4, ~0u, 0);
	if (r == 0)
		r = caps_drop_to(WARD_SANDBOX_UID, WARD_SANDBOX_GID);
	prctl(PR_SET_DUMPABLE, 0);
	(void)c; /* Landlock: PID 1's domain, inherited */
	if (r < 0) {
		send_head(s, r, 0);
		_exit(1);
	}
	umask(0);
	if (m->op == SM_WRITE)
		op_write(m, s);
	else if (m->op == SM_READ)
		op_read(m, s);
	else if (m->op == SM_LIST)
		op_list(m, s);
	else if (m->op == SM_COLLECT)
		op_collect(m, s);
	else
		op_remove(m, s);
	_exit(0);
}

/* ------------------------------------------------------------------ execs */

/* All n bytes from fd: 0, 1 at its end (the supervisor discarded the
 * exec), or -errno. */
static int read_all(int fd, void *p, size_t n)
{
	char *b = p;
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : 1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* In the exec's fork: its own copy of the context, then, once the
 * supervisor has moved it into its cgroup (which may be long before the
 * exec: session.c arms the next exec ahead), its cwd and its handover on
 * the handover pipe, then the command's steps (command.c). */
static __attribute__((noreturn)) void exec_child(struct session_state *st, const int *fds, int nfds)
{
	struct child_ctx cc = *st->c;
	/* It may wait long for its command (armed ahead): meanwhile it keeps
	 * none of PID 1's ends (its control socket, its signalfd, the other
	 * execs' control pipes), only its own. */
	close(st->sock);
	close(st->sigfd);
	for (int i = 0; i < MAX_TRACKED; i++)
		if (st->t[i].pid)
			close(st->t[i].ctl_w);
	/* PID 1 reset every disposition and the umask before its session
	 * (init.c); all that differs here is the SIGCHLD it blocks for its
	 * signalfd: unblock, rather than reset 64 dispositions again. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	cc.out_w = fds[2];
	cc.err_w = fds[3];
	cc.in_r = nfds > 4 ? fds[4] : -1;
	cc.rep_w = -1;
	cc.fail_fd = fcntl(fds[1], F_DUPFD_CLOEXEC, 64); /* above what command.c arranges */
	cc.start = 0; /* WARD_TRACE: the cmd: lines in monotonic time, as the supervisor's sx: */
	char cwd[SM_MAX_STR];
	uint32_t len = 0;
	int r = read_all(fds[0], &len, sizeof(len));
	trace_phase("si:handover", 0);
	if (r == 0 && len >= sizeof(cwd))
		r = -EPROTO;
	if (r == 0)
		r = read_all(fds[0], cwd, len);
	if (r == 0) {
		cwd[len] = 0;
		cc.cwd = cwd[0] ? cwd : NULL;
		r = handover_read(fds[0], &cc.ho);
	}
	if (r != 0) {
		if (r < 0) {
			char line[200];
			int k = snprintf(line, sizeof(line), "E cannot receive the command: %s\n", strerror(-r));
			(void)!write(cc.fail_fd, line, (size_t)k);
		}
		_exit(WARD_EXIT_FAILED);
	}
	close(fds[0]);
	trace_phase("si:handover-read", 0);
	command_session_main(&cc);
}

static struct tracked *free_slot(struct session_state *st)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (!st->t[i].pid)
			return &st->t[i];
	return NULL;
}

static void reply(struct session_state *st, int r, int fd)
{
	struct session_reply rep = {.r = r};
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	while (sendmsg(st->sock, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static void start_exec(struct session_state *st, const int *fds, int nfds)
{
	struct tracked *t = free_slot(st);
	int pidfd = -1;
	pid_t pid = nfds >= 4 && t ? raw_fork(&pidfd) : -1;
	if (pid == 0)
		exec_child(st, fds, nfds);
	int e = nfds < 4 ? EPROTO : !t ? EAGAIN : errno;
	for (int i = 0; i < nfds; i++)
		if (i != 1 || pid < 0)
			close(fds[i]);
	if (pid < 0) {
		reply(st, -e, -1);
		return;
	}
	t->pid = pid;
	t->ctl_w = fds[1];
	reply(st, 0, pidfd);
	close(pidfd);
}

static void start_file_op(struct session_state *st, const struct session_msg *m, const int *fds, int nfds)
{
	if (nfds != 1) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	pid_t pid = raw_fork(NULL);
	if (pid == 0) {
		close(st->sock);
		file_worker(st, m, fds[0]);
	}
	if (pid < 0)
		send_head(fds[0], -errno, 0);
	close(fds[0]);
}

/* ------------------------------------------------------------------ loop */

/* One request from the supervisor; false when it has gone. */
static bool handle_request(struct session_state *st)
{
	static struct session_msg m; /* PID 1's own copy; one request at a time */
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	memset(&m, 0, sizeof(m));
	ssize_t n = recvmsg(st->sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	int fds[8], nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k && nfds < 8; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		}
	m.str[SM_MAX_STR - 1] = 0;
	if (m.op == SM_EXEC) {
		trace_phase("si:request", 0);
		start_exec(st, fds, nfds);
		trace_phase("si:replied", 0);
	} else if (m.op == SM_WRITE || m.op == SM_READ || m.op == SM_LIST || m.op == SM_REMOVE || m.op == SM_COLLECT)
		start_file_op(st, &m, fds, nfds);
	else
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	return true;
}

/* Reap every process that has ended; report the execs'. */
static void reap(struct session_state *st)
{
	struct signalfd_siginfo si;
	while (read(st->sigfd, &si, sizeof(si)) == sizeof(si))
		;
	for (;;) {
		int wst;
		pid_t p = waitpid(-1, &wst, WNOHANG);
		if (p <= 0)
			return;
		for (int i = 0; i < MAX_TRACKED; i++)
			if (st->t[i].pid == p) {
				trace_phase("si:reaped", 0);
				char line[32];
				int k = snprintf(line, sizeof(line), "X %d\n", wst);
				(void)!write(st->t[i].ctl_w, line, (size_t)k);
				close(st->t[i].ctl_w);
				st->t[i].pid = 0;
			}
	}
}

void session_main(struct child_ctx *c)
{
	struct session_state st = {.c = c, .sock = c->notify_w};
	/* The build's own stdio pipes are no exec's. */
	int *unused[] = {&c->out_w, &c->err_w, &c->in_r, &c->rep_w};
	for (size_t i = 0; i < 4; i++)
		if (*unused[i] >= 0) {
			close(*unused[i]);
			*unused[i] = -1;
		}
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	st.sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	/* One Landlock domain for the whole session, PID 1's: the command's
	 * ruleset applied once here rather than by each exec, so that a
	 * later exec may signal what an earlier one left running (Landlock
	 * scopes signals to a domain), and the execs and file workers inherit
	 * it. */
	int e = st.sigfd < 0 ? errno : 0;
	int lr = e || c->landlock_fd < 0 ? 0 : ward_landlock_restrict(c->landlock_fd);
	c->landlock_fd = -1;
	if (e || lr < 0) {
		char line[160];
		int k = snprintf(line, sizeof(line), "E cannot %s: %s\n",
		                 e ? "watch the session's processes" : "restrict the session with Landlock",
		                 strerror(e ? e : -lr));
		(void)!write(c->ctl_w, line, (size_t)k);
		_exit(1);
	}
	(void)!write(c->ctl_w, "R\n", 2);
	for (;;) {
		struct pollfd p[3] = {{.fd = st.sock, .events = POLLIN},
		                      {.fd = st.sigfd, .events = POLLIN},
		                      {.fd = c->sync_r, .events = POLLIN}};
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			_exit(1);
		if (p[2].revents)
			_exit(0); /* the supervisor is gone: the sandbox goes with us */
		if (p[1].revents)
			reap(&st);
		if ((p[0].revents & POLLIN) && !handle_request(&st))
			_exit(0);
		if (p[0].revents & (POLLHUP | POLLERR) && !(p[0].revents & POLLIN))
			_exit(0);
	}
}
