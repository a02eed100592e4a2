/* session.c — sessions (SPEC §11; ward.h's ward_session_*), from the
 * supervisor's side: one system-level sandbox (supervisor.c builds it) whose
 * PID 1 runs init_session.c's loop, many execs in it, files under /work.
 *
 * Each exec: its pipes and a cgroup of its own beneath the session's (v2:
 * PID 1 lives in a leaf of its own, since a cgroup that hands controllers to
 * children holds no process), an EXEC request on the control socket
 * (session_proto.h) that PID 1 answers with the command's pidfd; the command
 * is moved into the exec's cgroup, then gets its handover and execs, and
 * core/supervise.c supervises it exactly as a one-shot run, with the exec's
 * cgroup as "the tree" (its timeout and CPU limit kill that cgroup only).
 * Files: a request with one end of a stream socket; a worker PID 1 forks
 * does the operation inside the sandbox and answers on the stream.
 *
 * Runs on the host, in ward: it may allocate; it never touches a path under
 * /work itself (a symlink the sandbox planted would resolve on the host).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/egress.h"
#include "core/pathguard.h"
#include "core/supervise.h"
#include "image/root.h"
#include "sandbox/cgroup.h"
#include "sandbox/seccomp.h"
#include "system/egress.h"
#include "system/session.h"
#include "system/collect_walk.h"
#include "system/session_proto.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

struct ward_session {
	pthread_mutex_t lock;      /* everything below but sock's exchanges */
	pthread_mutex_t sock_lock; /* one request and its reply at a time */
	struct sandbox *sb;
	struct sandbox_session parts;
	struct ward_cgroup *init_cg;  /* PID 1's leaf */
	struct ward_cgroup **linger;  /* exec cgroups something still runs in */
	size_t nlinger;
	unsigned running;             /* execs in progress */
	struct ward_limits limits;    /* the session's */
	char **env;                   /* the default environment ("K=V", copied) */
	size_t nenv;
	double cpu_budget_s;
	struct ward_enforced enforced;
	struct session_bg *bg;        /* background processes (session_bg.c) */
	struct session_exec *active[WARD_SESSION_MAX_EXECS * 2]; /* execs started and not done */
	struct session_watch *watch;  /* the seccomp listener's thread */
	struct session_exec armed;    /* the next exec's, made ahead (armed_ok) */
	bool armed_ok;
	pthread_cond_t arm_cv;        /* the armer waits on it */
	pthread_cond_t armed_cv;      /* an exec waits on it for what is arming */
	pthread_t armer;
	bool armer_on, armer_failed, arm_wanted, arm_stop, arming;
	bool warm_wanted;             /* an exec took the armed one: warm the lock (armer_main) */
	double call_s;                /* the deadline of one files or stdin call, in all */
	volatile int killed;          /* ward_session_kill has ended it */
	volatile int cpu_spent;       /* its CPU budget has run out */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

struct session_bg *session_bg_of(struct ward_session *s)
{
	return s->bg;
}

bool ward_session_alive(struct ward_session *s)
{
	if (!s || s->parts.pidfd < 0 || __atomic_load_n(&s->killed, __ATOMIC_RELAXED))
		return false;
	struct pollfd p = {.fd = s->parts.pidfd, .events = POLLIN};
	return poll(&p, 1, 0) == 0;
}

/* ------------------------------------------------------------ exec cgroups */

/* Exec cgroups nothing runs in any more go; the others wait.  The empty
 * ones are taken out under the lock and removed after it (an rmdir is
 * slow: the lock stays free for the execs meanwhile). */
static void sweep_linger(struct ward_session *s)
{
	struct ward_cgroup *gone[16];
	size_t ngone;
	do {
		ngone = 0;
		pthread_mutex_lock(&s->lock);
		size_t k = 0;
		for (size_t i = 0; i < s->nlinger; i++) {
			if (ngone < sizeof(gone) / sizeof(gone[0]) && cg_empty(s->linger[i]))
				gone[ngone++] = s->linger[i];
			else
				s->linger[k++] = s->linger[i];
		}
		s->nlinger = k;
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < ngone; i++)
			cg_destroy(gone[i]);
	} while (ngone == sizeof(gone) / sizeof(gone[0]));
}

/* An exec's cgroup after its main process: kept while something it left
 * runs there (that lives on, within the session's limits), removed once
 * empty: by the armer after it has armed the next exec, so that the rmdir
 * is not on the exec's path, else here. */
static void retire_exec_cg(struct ward_session *s, struct ward_cgroup *cg)
{
	pthread_mutex_lock(&s->lock);
	struct ward_cgroup **n = realloc(s->linger, (s->nlinger + 1) * sizeof(*n));
	if (n) {
		s->linger = n;
		s->linger[s->nlinger++] = cg;
		cg = NULL;
	}
	bool later = s->armer_on;
	pthread_mutex_unlock(&s->lock);
	cg_destroy(cg); /* out of memory: killed rather than leaked */
	if (!later)
		sweep_linger(s);
}

/* x's tree is one of the session's execs from its cgroup's creation to its
 * end (session_seccomp_kill looks for a caller among them). */
static void exec_track(struct ward_session *s, struct session_exec *x, bool on)
{
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < sizeof(s->active) / sizeof(s->active[0]); i++)
		if (on ? !s->active[i] : s->active[i] == x) {
			s->active[i] = on ? x : NULL;
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

/* Is pid in cgroup cg?  Its /proc/PID/cgroup names cg's directory as a
 * whole path component (the names are unique on the host). */
static bool in_cgroup(const char *procs_cg, const struct ward_cgroup *cg)
{
	const char *name = cg_name(cg);
	size_t k = strlen(name);
	for (const char *p = procs_cg; k && (p = strstr(p, name)); p += k)
		if (p > procs_cg && p[-1] == '/' && (p[k] == '\n' || p[k] == '/' || p[k] == 0))
			return true;
	return false;
}

void session_seccomp_kill(struct ward_session *s, int listener, uint64_t id, pid_t pid, const char *text)
{
	char path[64], buf[4096] = "";
	/* The pid's process and its cgroup, then the check that the caller
	 * was alive all along: a caller gone meanwhile (killed with its exec,
	 * or by a timeout) may have left its pid to any host process. */
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	if (!ward_seccomp_notify_pending(listener, id)) {
		if (pfd >= 0)
			close(pfd);
		return;
	}
	bool found = false;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; !found && i < sizeof(s->active) / sizeof(s->active[0]); i++) {
		struct session_exec *x = s->active[i];
		if (x && x->cg && in_cgroup(buf, x->cg)) {
			snprintf(x->seccomp_text, sizeof(x->seccomp_text), "%s", text);
			__atomic_store_n(&x->seccomp_killed, true, __ATOMIC_RELEASE);
			cg_kill(x->cg);
			found = true;
		}
	}
	for (size_t i = 0; !found && i < s->nlinger; i++)
		if (in_cgroup(buf, s->linger[i])) { /* what an ended exec left running */
			cg_kill(s->linger[i]);
			found = true;
		}
	pthread_mutex_unlock(&s->lock);
	if (!found && pfd >= 0) /* in no exec (or already moved on): the caller alone, never left blocked */
		syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	if (pfd >= 0)
		close(pfd);
}

/* How often the watch thread compares the session's CPU with its budget. */
#define BUDGET_CHECK_S 0.1

double session_budget_interval(const struct ward_session *s)
{
	return s->cpu_budget_s > 0 ? BUDGET_CHECK_S : 0;
}

bool session_budget_spent(const struct ward_session *s)
{
	return __atomic_load_n(&s->cpu_spent, __ATOMIC_RELAXED);
}

bool ward_session_cpu_spent(struct ward_session *s)
{
	return session_budget_spent(s);
}

void session_budget_check(struct ward_session *s)
{
	uint64_t used;
	if (s->cpu_budget_s <= 0 || !s->parts.cg || cg_cpu_usage(s->parts.cg, &used) < 0 ||
	    (double)used / 1e6 < s->cpu_budget_s)
		return;
	__atomic_store_n(&s->cpu_spent, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < sizeof(s->active) / sizeof(s->active[0]); i++) {
		struct session_exec *x = s->active[i];
		if (x && x->cg) {
			__atomic_store_n(&x->budget_killed, true, __ATOMIC_RELEASE);
			cg_kill(x->cg);
		}
	}
	for (size_t i = 0; i < s->nlinger; i++) /* what ended execs left running */
		cg_kill(s->linger[i]);
	pthread_mutex_unlock(&s->lock);
}

bool session_exec_budget(const struct session_exec *x)
{
	return __atomic_load_n(&x->budget_killed, __ATOMIC_ACQUIRE);
}

bool session_exec_seccomp(const struct session_exec *x)
{
	return __atomic_load_n(&x->seccomp_killed, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------ the socket */

static int send_request(struct ward_session *s, const struct session_msg *m, const int *fds, int nfds)
{
	size_t len = offsetof(struct session_msg, str) + strlen(m->str) + 1;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = len};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	ssize_t n;
	while ((n = sendmsg(s->parts.sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n < 0 ? (errno == EPIPE || errno == ECONNRESET ? -ESRCH : -errno) : 0;
}

/* PID 1's reply to an exec: 0 with *fd (the command's pidfd), or -errno. */
static int recv_reply(struct ward_session *s, int *fd)
{
	struct session_reply rep = {.r = -EPROTO};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n;
	while ((n = recvmsg(s->parts.sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	*fd = -1;
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n <= 0)
		return -ESRCH;
	if (rep.r == 0 && *fd < 0)
		return -EPROTO;
	if (rep.r < 0)
		close_fd(fd);
	return rep.r;
}

/* The host pid behind a pidfd (its fdinfo's "Pid:"), or -1. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, "\nPid:");
	return p ? (pid_t)strtol(p + 5, NULL, 10) : -1;
}

/* ------------------------------------------------------------ exec */

static int make_exec_pipes(struct session_exec *x, int remote[5], bool want_in, char *err, size_t errlen)
{
	int ho[2] = {-1, -1}, ctl[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, in[2] = {-1, -1};
	if (pipe2(ho, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(er, O_CLOEXEC) < 0 || (want_in && pipe2(in, O_CLOEXEC) < 0)) {
		set_err(err, errlen, "cannot create the exec's pipes: %s", strerror(errno));
		int *all[] = {&ho[0], &ho[1], &ctl[0], &ctl[1], &out[0], &out[1], &er[0], &er[1], &in[0], &in[1]};
		for (size_t i = 0; i < 10; i++)
			close_fd(all[i]);
		return -1;
	}
	/* As supervisor.c's make_pipes: the command may reopen its pipes. */
	fchmod(out[1], 0666);
	fchmod(er[1], 0666);
	if (in[0] >= 0)
		fchmod(in[0], 0666);
	x->ho_w = ho[1];
	x->ctl_r = ctl[0];
	x->out_r = out[0];
	x->err_r = er[0];
	x->in_w = in[1];
	int r[5] = {ho[0], ctl[1], out[1], er[1], in[0]};
	memcpy(remote, r, sizeof(r));
	return 0;
}

void session_exec_close(struct session_exec *x)
{
	int *fds[] = {&x->ho_w, &x->ctl_r, &x->out_r, &x->err_r, &x->in_w, &x->pidfd};
	for (size_t i = 0; i < 6; i++)
		close_fd(fds[i]);
}

/* Ask PID 1 for the exec's process; it answers with its pidfd. */
static int request_command(struct ward_session *s, int remote[5], int *pidfd)
{
	struct session_msg m = {.op = SM_EXEC};
	pthread_mutex_lock(&s->sock_lock);
	int r = send_request(s, &m, remote, remote[4] >= 0 ? 5 : 4);
	if (r == 0)
		r = recv_reply(s, pidfd);
	pthread_mutex_unlock(&s->sock_lock);
	for (int i = 0; i < 5; i++)
		close_fd(&remote[i]);
	return r;
}

/* PID 1 is shielded from the OOM killer (settle_pid1): the command, its
 * fork, is not.  Raising the score needs no right. */
static void unshield(pid_t hp)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)hp);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "0", 1);
		close(fd);
	}
}

/* ------------------------------------------------------------ armed execs
 *
 * Everything of an exec but its command can be made before the command is
 * known: its pipes, its cgroup, its process (PID 1's fork), moved into that
 * cgroup and waiting for its handover.  The first exec's is made as the
 * session starts (arm_first); after each exec a thread of the session's
 * (the armer, started with the first armed exec) makes the next one's that
 * way while the session is idle, so that an exec's own path is only: the
 * handover, the command, its status and its cgroup's usage.  An exec that
 * finds none ready (one right behind another) makes its own as before; one
 * that takes the armed one has the armer warm the kernel's lock for it
 * (armer_main).  The armed process runs nothing of the user's: it waits
 * in PID 1's credentials (root in the sandbox's user namespace, not
 * dumpable), which the sandbox user can neither signal nor trace; it is one
 * process of the session's pids while it waits. */

/* x's tree is gone, or about to: kill it, close its ends, remove its
 * cgroup. */
static void exec_discard(struct session_exec *x)
{
	if (x->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, x->pidfd, SIGKILL, NULL, 0);
	session_exec_close(x);
	cg_destroy(x->cg);
	x->cg = NULL;
}

/* An exec's process, waiting for its handover (see above).  0, or -errno
 * with err set and nothing left. */
static int exec_arm(struct ward_session *s, struct session_exec *x, char *err, size_t errlen)
{
	*x = (struct session_exec){.ho_w = -1, .ctl_r = -1, .out_r = -1, .err_r = -1, .in_w = -1, .pidfd = -1};
	int remote[5];
	trace_phase("sx:arm", 0);
	if (make_exec_pipes(x, remote, true, err, errlen) < 0)
		return -EMFILE;
	trace_phase("sx:pipes", 0);
	x->cg = cg_child_create(s->parts.cg, "x", err, errlen);
	trace_phase("sx:cgroup", 0);
	int r = x->cg ? request_command(s, remote, &x->pidfd) : -EIO;
	trace_phase("sx:reply", 0);
	if (!x->cg)
		for (int i = 0; i < 5; i++)
			close_fd(&remote[i]);
	else if (r < 0)
		set_err(err, errlen, "the session cannot start the command: %s", strerror(-r));
	pid_t hp = r == 0 ? pidfd_pid(x->pidfd) : -1;
	if (r == 0 && (hp <= 0 || (r = cg_attach(x->cg, hp)) < 0)) {
		set_err(err, errlen, "cannot move the exec into its cgroup: %s", strerror(r < 0 ? -r : ESRCH));
		r = r < 0 ? r : -ESRCH;
	}
	trace_phase("sx:attach", 0);
	if (r < 0) {
		exec_discard(x);
		return r;
	}
	unshield(hp);
	return 0;
}

/* Take the armed exec, if one is ready. */
static bool take_armed(struct ward_session *s, struct session_exec *x)
{
	pthread_mutex_lock(&s->lock);
	/* one the armer is making now: wait for it, rather than make another
	 * at the same price (a cgroup migration may take an RCU grace period) */
	while (s->arming && !s->armed_ok)
		pthread_cond_wait(&s->armed_cv, &s->lock);
	bool ok = s->armed_ok;
	if (ok) {
		*x = s->armed;
		s->warm_wanted = true;
		pthread_cond_signal(&s->arm_cv);
	} else
		s->arm_wanted = false; /* this exec makes its own (and asks again at its end): the
					  armer, in its delay still, makes none beside it */
	s->armed_ok = false;
	pthread_mutex_unlock(&s->lock);
	if (ok)
		trace_phase("sx:armed", 0);
	return ok;
}

/* How long after an exec the armer starts: the exec's caller (a server's
 * worker answering, its client reading) has the CPU first (woken at once,
 * the armer would take it: wakeup preemption).  Not a lower priority
 * instead: an exec may wait for the armer, which a loaded host would then
 * starve. */
#define ARM_DELAY_MS 2

/* How long an armed exec waits for its command: after that the session is
 * idle, and its process and cgroup go (the next exec makes its own, and the
 * armer arms again after it). */
#define ARM_KEEP_S 60

/* CLOCK_MONOTONIC's now, plus ms. */
static struct timespec in_ms(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void *armer_main(void *arg)
{
	struct ward_session *s = arg;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct timespec until = in_ms(ARM_KEEP_S * 1000L);
		bool idle = false;
		while (!s->arm_stop && !s->arm_wanted && !s->warm_wanted && !idle) {
			if (!s->armed_ok)
				pthread_cond_wait(&s->arm_cv, &s->lock);
			else
				idle = pthread_cond_timedwait(&s->arm_cv, &s->lock, &until) == ETIMEDOUT;
		}
		if (s->arm_stop)
			break;
		if (s->warm_wanted) {
			/* An exec took the armed process, after an idle moment most
			 * likely: one right behind it will make its own and move it,
			 * which then waits for an RCU grace period (cgroup_dynmods.c).
			 * Moving PID 1 into the cgroup it is in changes nothing but
			 * takes the kernel's lock for writing: the grace period starts
			 * now, here, while the exec runs, and the move behind it waits
			 * only for what is left of it (or nothing, within one after). */
			s->warm_wanted = false;
			pthread_mutex_unlock(&s->lock);
			if (!session_killed(s))
				(void)cg_attach(s->init_cg, s->parts.pid);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (!s->arm_wanted) { /* no exec for ARM_KEEP_S: the armed process goes */
			struct session_exec a = s->armed;
			bool had = s->armed_ok;
			s->armed_ok = false;
			pthread_mutex_unlock(&s->lock);
			if (had)
				exec_discard(&a);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		/* after the exec's caller has had the CPU for its answer */
		until = in_ms(ARM_DELAY_MS);
		while (!s->arm_stop && pthread_cond_timedwait(&s->arm_cv, &s->lock, &until) == 0)
			;
		if (s->arm_stop)
			break;
		bool need = s->arm_wanted && !s->armed_ok; /* (an exec may have withdrawn it) */
		s->arm_wanted = false;
		s->arming = need;
		pthread_mutex_unlock(&s->lock);
		struct session_exec a;
		int r = !need || session_killed(s) || session_budget_spent(s) ? -ESRCH : exec_arm(s, &a, NULL, 0);
		pthread_mutex_lock(&s->lock);
		bool keep = r == 0 && !s->armed_ok && !s->arm_stop;
		if (keep) {
			s->armed = a;
			s->armed_ok = true;
		}
		s->arming = false;
		pthread_cond_broadcast(&s->armed_cv);
		pthread_mutex_unlock(&s->lock);
		if (r == 0 && !keep)
			exec_discard(&a);
		sweep_linger(s); /* the ended execs' cgroups */
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The armer's stack: it makes a cgroup and asks PID 1, nothing deeper. */
#define ARMER_STACK (256 * 1024)

/* Start the armer, unless it runs (or cannot); s->lock held. */
static void armer_start(struct ward_session *s)
{
	if (!s->armer_on && !s->armer_failed && !s->arm_stop) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, ARMER_STACK);
		/* its signals blocked as the caller's are (a server's worker's) */
		s->armer_on = pthread_create(&s->armer, &at, armer_main, s) == 0;
		s->armer_failed = !s->armer_on; /* then every exec makes its own */
		pthread_attr_destroy(&at);
	}
}

/* Have the next exec armed (the armer starts with the first call). */
static void arm_next(struct ward_session *s)
{
	pthread_mutex_lock(&s->lock);
	armer_start(s);
	s->arm_wanted = true;
	pthread_cond_signal(&s->arm_cv);
	pthread_mutex_unlock(&s->lock);
}

/* The first exec's, armed as the session starts: right behind
 * settle_pid1's migration the kernel's threadgroup lock is still in its
 * writer mode, so this one pays no RCU grace period (cgroup_dynmods.c),
 * where the first exec making its own would.  The armer starts with it
 * (it discards it after ARM_KEEP_S without an exec); a failure leaves the
 * first exec to make its own, as before. */
static void arm_first(struct ward_session *s)
{
	struct session_exec a;
	if (exec_arm(s, &a, NULL, 0) < 0)
		return;
	pthread_mutex_lock(&s->lock);
	s->armed = a;
	s->armed_ok = true;
	armer_start(s);
	pthread_mutex_unlock(&s->lock);
}

/* Stop the armer (after PID 1 is dead: nothing it waits on blocks then)
 * and discard what it armed. */
static void armer_stop(struct ward_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->arm_stop = true;
	pthread_cond_broadcast(&s->arm_cv);
	bool on = s->armer_on;
	pthread_mutex_unlock(&s->lock);
	if (on)
		pthread_join(s->armer, NULL);
	if (s->armed_ok)
		exec_discard(&s->armed);
	s->armed_ok = false;
}

/* The exec's cwd on its handover pipe, before the handover: a length,
 * then the bytes (init_session.c's exec_child reads them).  0 or -errno. */
static int send_cwd(int fd, const char *cwd)
{
	char buf[sizeof(uint32_t) + SM_MAX_STR];
	const char *c = cwd ? cwd : "";
	size_t k = strlen(c);
	if (k >= SM_MAX_STR)
		return -ENAMETOOLONG;
	uint32_t n = (uint32_t)k;
	memcpy(buf, &n, sizeof(n));
	memcpy(buf + sizeof(n), c, n);
	size_t len = sizeof(n) + n, off = 0;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? (errno == EPIPE ? -ESRCH : -errno) : -EIO;
		off += (size_t)w;
	}
	return 0;
}

/* Give x its command: its cwd, then the handover.  0 or -errno. */
static int exec_give(struct ward_session *s, const struct ward_request *req, const char *cwd, bool want_in,
		     struct session_exec *x)
{
	if (!want_in)
		close_fd(&x->in_w); /* the command reads /dev/null (no HO_STDIN_PIPE) */
	/* SIGPIPE: sandbox_write_handover blocks it for this thread */
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int r = send_cwd(x->ho_w, cwd);
	if (r == -ESRCH || r == -EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero); /* the one our write raised */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		r = sandbox_write_handover(x->ho_w, req, !cg_limits_memory(s->parts.cg));
	close_fd(&x->ho_w);
	trace_phase("sx:handover", 0);
	return r;
}

int session_exec_start(struct ward_session *s, const struct ward_request *req, const char *cwd, bool want_in,
		       struct session_exec *x, char *err, size_t errlen)
{
	trace_phase("sx:begin", 0);
	int r = -1;
	if (take_armed(s, x)) {
		exec_track(s, x, true);
		r = exec_give(s, req, cwd, want_in, x);
		if (r < 0) { /* it died waiting (a memory kill may pick it): make another */
			exec_track(s, x, false);
			exec_discard(x);
		}
	}
	if (r < 0) {
		r = exec_arm(s, x, err, errlen);
		if (r < 0)
			return r;
		exec_track(s, x, true);
		r = exec_give(s, req, cwd, want_in, x);
	}
	if (r < 0) {
		if (!err || !err[0])
			set_err(err, errlen, "cannot hand the command to the session: %s", strerror(-r));
		exec_track(s, x, false);
		exec_discard(x);
		return r;
	}
	return 0;
}

void session_exec_done(struct ward_session *s, struct session_exec *x)
{
	session_exec_close(x);
	exec_track(s, x, false);
	if (x->cg)
		retire_exec_cg(s, x->cg);
	x->cg = NULL;
	arm_next(s);
}

static void kill_exec(void *arg)
{
	cg_kill(arg);
}

/* The session's CPU left for an exec: its own limit, or less. */
static double exec_cpu(struct ward_session *s, const struct ward_request *req)
{
	double cpu = req->limits.cpu_s > 0 ? req->limits.cpu_s : req->limits.timeout_s;
	uint64_t used;
	if (s->cpu_budget_s > 0 && cg_cpu_usage(s->parts.cg, &used) == 0) {
		double left = s->cpu_budget_s - (double)used / 1e6;
		if (left < cpu)
			cpu = left > 0.001 ? left : 0.001;
	}
	return cpu;
}

int session_request(struct ward_session *s, const struct ward_request *req, struct ward_request *out,
		    char ***env, char *err, size_t errlen)
{
	*out = *req;
	out->isolation = WARD_ISO_SYSTEM;
	out->limits.memory_mb = s->limits.memory_mb;
	out->limits.pids = s->limits.pids;
	out->limits.tmp_size_mb = s->limits.tmp_size_mb;
	out->limits.fsize_mb = s->limits.fsize_mb;
	out->limits.nofile = s->limits.nofile;
	out->workdir = out->rootfs = NULL;
	out->mounts = NULL;
	out->nmounts = 0;
	out->files = NULL;
	out->nfiles = 0;
	out->report_channel = false;
	size_t n = 0;
	while (req->env && req->env[n])
		n++;
	*env = calloc(s->nenv + n + 1, sizeof(char *));
	if (!*env) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(*env, s->env, s->nenv * sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*env)[s->nenv + i] = req->env[i];
	out->env = *env;
	return ward_request_validate(out, err, errlen) < 0 ? -EINVAL : 0;
}

/* Take (true) or give back (false) one of the session's exec slots. */
bool session_slot(struct ward_session *s, bool take)
{
	bool ok = true;
	pthread_mutex_lock(&s->lock);
	if (!take)
		s->running--;
	else if (s->running >= WARD_SESSION_MAX_EXECS)
		ok = false;
	else
		s->running++;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

static void exec_usage(struct session_exec *x, struct ward_result *res, struct backend_outcome *o)
{
	struct cg_stats cs;
	if (cg_stats(x->cg, &cs) == 0) {
		o->oom_killed = cs.oom_killed;
		res->usage.cpu_user_ms = cs.cpu_user_us / 1000;
		res->usage.cpu_sys_ms = cs.cpu_sys_us / 1000;
		res->usage.max_rss_kb = cs.memory_peak / 1024;
	}
}

/* supervise's account of the exec as a backend outcome (supervisor.c's
 * run_outcome, for a command PID 1 reaps). */
static int exec_outcome(struct supervise *sv, struct ward_result *res, struct backend_outcome *o)
{
	o->timed_out = sv->timed_out;
	o->cancelled = sv->cancelled;
	o->cpu_exceeded = sv->cpu_exceeded;
	int wst;
	const char *x = sv->ctl[0] == 'X' ? sv->ctl : strstr(sv->ctl, "\nX ");
	if (sv->ctl[0] == 'E') {
		size_t n = strcspn(sv->ctl + 2, "\n");
		snprintf(res->error, sizeof(res->error), "sandbox setup failed: %.*s", (int)n, sv->ctl + 2);
		return -1;
	}
	if (x && sscanf(x[0] == '\n' ? x + 1 : x, "X %d", &wst) == 1) {
		o->ran = true;
		o->wait_status = wst;
		return 0;
	}
	if (sv->timed_out || sv->cpu_exceeded) {
		o->ran = true;
		o->wait_status = SIGKILL;
		return 0;
	}
	snprintf(res->error, sizeof(res->error), "the session's init reported nothing for the exec (it died?)");
	return -1;
}

static void supervise_exec(struct ward_session *s, const struct ward_request *req, struct session_exec *x,
			   struct supervise *sv, double start)
{
	*sv = (struct supervise){
		.pidfd = x->pidfd,
		.out_fd = x->out_r,
		.err_fd = x->err_r,
		.report_fd = -1,
		.ctl_fd = x->ctl_r,
		.stdin_fd = x->in_w,
		.stdin_src = req->stdin_set ? -1 : req->stdin_fd,
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.timeout_s = req->limits.timeout_s,
		.cpu_s = exec_cpu(s, req),
		.cg = x->cg,
		.kill_tree = kill_exec,
		.kill_arg = x->cg,
		.output_limit = req->limits.output_limit,
		.live_fd = {req->capture ? -1 : req->stream_fd[0], req->capture ? -1 : req->stream_fd[1]},
		.start = start,
		.cancel = req->cancel,
		.observe_fd = req->observe ? req->observe_fd : -1,
		.notify_sock = -1,
		.end_at_report = true,
	};
	x->out_r = x->err_r = x->ctl_r = x->in_w = -1; /* supervise owns them now */
	supervise_run(sv);
}

/* A fatal call ended the exec: reported as a one-shot run's (signal 31),
 * the call named at the end of its stderr. */
static void seccomp_outcome(const struct session_exec *x, struct ward_result *res, struct backend_outcome *o)
{
	o->seccomp_killed = true;
	size_t k = strlen(x->seccomp_text);
	char *d = realloc(res->err.data, res->err.len + k + 2);
	if (!d)
		return;
	memcpy(d + res->err.len, x->seccomp_text, k);
	d[res->err.len + k] = '\n';
	d[res->err.len + k + 1] = 0;
	res->err.data = d;
	res->err.len += k + 1;
}

/* One files call's stream to its worker, and the call's deadline: one for
 * the whole call, however many reads and writes it takes, so that a worker
 * the sandbox stops and continues, or one that trickles, cannot hold the
 * caller (a server's worker thread) past it. */
struct fcall {
	int fd;
	double until; /* monotonic */
};
static int file_op(struct ward_session *s, int op, const char *path, uint32_t mode, uint64_t max,
		   struct fcall *c, char *err, size_t errlen);
static ssize_t fcall_read(const struct fcall *c, void *p, size_t n);
static int read_full(const struct fcall *c, void *p, size_t n);

/* The globs, one a line, as a file op's string.  0, or -1: they do not
 * fit. */
static int join_globs(char *const *globs, char *out, size_t n)
{
	size_t off = 0;
	for (char *const *g = globs; *g; g++) {
		size_t k = strlen(*g);
		if (off + k + 2 > n)
			return -1;
		memcpy(out + off, *g, k);
		off += k;
		out[off++] = g[1] ? '\n' : 0;
	}
	return 0;
}

/* Files out after an exec (SPEC §12): a file worker walks /work inside the
 * session (init_session.c's op_collect) and sends the frames, read here up
 * to what the caps allow.  0, or -1 with res->error set. */
static int session_collect(struct ward_session *s, const struct ward_request *req, struct ward_result *res)
{
	struct session_msg *m = calloc(1, sizeof(*m));
	if (!m || join_globs(req->collect, m->str, sizeof(m->str)) < 0) {
		snprintf(res->error, sizeof(res->error), m ? "collect: the globs take more than %d bytes in all: give "
							     "fewer or shorter ones" : "out of memory", SM_MAX_STR - 1);
		free(m);
		return -1;
	}
	const struct ward_limits *l = &req->limits;
	struct fcall c;
	int r = file_op(s, SM_COLLECT, m->str, l->collect_max_files, l->collect_max_bytes, &c, res->error,
			sizeof(res->error));
	free(m);
	if (r < 0)
		return -1;
	struct file_head h;
	uint64_t bound = collect_stream_bound(l->collect_max_files, l->collect_max_bytes);
	char *buf = read_full(&c, &h, sizeof(h)) == 0 && h.r == 0 ? malloc((size_t)bound) : NULL;
	size_t got = 0;
	/* the worker is bounded (files, bytes, entries, steps), and the call's
	 * deadline bounds the wait for it (a cut-short stream counts as
	 * truncated) */
	while (buf && got < bound) {
		ssize_t n = fcall_read(&c, buf + got, (size_t)(bound - got));
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(c.fd);
	r = buf ? collect_decode(buf, got, l->collect_max_files, l->collect_max_bytes, res) : -EIO;
	free(buf);
	if (r < 0)
		snprintf(res->error, sizeof(res->error), "cannot collect the files from the session: %s", strerror(-r));
	return r < 0 ? -1 : 0;
}

int ward_session_exec(struct ward_session *s, const struct ward_request *req, const char *cwd,
		      struct ward_result *res)
{
	double start = monotonic_now();
	trace_phase("sx:call", 0);
	memset(res, 0, sizeof(*res));
	res->isolation = WARD_ISO_SYSTEM;
	*res = (struct ward_result){.isolation = WARD_ISO_SYSTEM, .enforced = s->enforced};
	res->enforced.time = "ward";
	struct ward_request r2;
	char **env = NULL;
	struct backend_outcome o = {0};
	int r = session_request(s, req, &r2, &env, res->error, sizeof(res->error));
	if (r == 0 && cwd && (cwd[0] != '/' || strlen(cwd) >= SM_MAX_STR)) {
		snprintf(res->error, sizeof(res->error), "cwd must be an absolute path inside the sandbox, of at most %d "
							 "bytes: '%.200s'", SM_MAX_STR - 1, cwd);
		r = -EINVAL;
	}
	char globs_fit[SM_MAX_STR];
	if (r == 0 && req->collect && join_globs(req->collect, globs_fit, sizeof(globs_fit)) < 0) {
		snprintf(res->error, sizeof(res->error), "collect: the globs take more than %d bytes in all: give "
							 "fewer or shorter ones", SM_MAX_STR - 1);
		r = -EINVAL;
	}
	if (r == 0 && !session_slot(s, true)) {
		snprintf(res->error, sizeof(res->error),
			 "the session runs %d execs already: wait for one to end", WARD_SESSION_MAX_EXECS);
		r = -EAGAIN;
	}
	if (r < 0) {
		free(env);
		return result_from_outcome(&o, -1, res, start);
	}
	struct session_exec x;
	uint64_t tried0 = 0, allowed0, cpu0 = 0;
	if (s->parts.egress) {
		egress_counts(s->parts.egress, &tried0, &allowed0);
		cpu0 = egress_cpu_us(s->parts.egress);
	}
	r = session_exec_start(s, &r2, cwd, r2.stdin_set || r2.stdin_fd >= 0, &x, res->error, sizeof(res->error));
	if (r == 0) {
		struct supervise sv;
		supervise_exec(s, &r2, &x, &sv, start);
		trace_phase("sx:supervised", 0);
		outcome_collect(&sv, res);
		exec_usage(&x, res, &o);
		trace_phase("sx:usage", 0);
		r = exec_outcome(&sv, res, &o);
		if (r == 0 && session_exec_budget(&x)) { /* the session's CPU budget: a CPU limit */
			o.cpu_exceeded = o.timed_out = true;
		}
		if (session_exec_seccomp(&x))
			seccomp_outcome(&x, res, &o);
		session_exec_done(s, &x);
		trace_phase("sx:retired", 0);
		if (r == 0 && req->collect && req->collect[0] && session_collect(s, req, res) < 0)
			r = -1;
		/* the connections tried while it ran (of the session's first 64;
		 * a background process's count here too) */
		if (s->parts.egress && egress_records(s->parts.egress, (size_t)tried0, res) < 0)
			snprintf(res->error, sizeof(res->error), "out of memory for the egress records");
		uint64_t cpu1 = s->parts.egress ? egress_cpu_us(s->parts.egress) : 0;
		res->usage.proxy_cpu_ms = cpu1 > cpu0 ? (cpu1 - cpu0) / 1000 : 0;
	}
	session_slot(s, false);
	free(env);
	r = result_from_outcome(&o, r, res, start);
	trace_phase("sx:end", 0);
	return r;
}

/* ------------------------------------------------------------ files */

static bool path_ok(const char *path, bool empty_ok, char *err, size_t errlen)
{
	if (!path || (!path[0] && empty_ok))
		return path != NULL;
	if (strlen(path) >= SM_MAX_STR) {
		set_err(err, errlen, "path too long (at most %d bytes)", SM_MAX_STR - 1);
		return false;
	}
	return pathguard_check(path, strlen(path), err, errlen) == 0;
}

/* Start a file op: c->fd is the supervisor's end of its stream, c->until
 * the call's deadline. */
static int file_op(struct ward_session *s, int op, const char *path, uint32_t mode, uint64_t max,
		   struct fcall *c, char *err, size_t errlen)
{
	c->fd = -1;
	c->until = monotonic_now() + s->call_s;
	if (op != SM_COLLECT && !path_ok(path, op == SM_LIST, err, errlen))
		return -EINVAL;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		set_err(err, errlen, "cannot create a socket: %s", strerror(errno));
		return -errno;
	}
	struct session_msg m = {.op = (uint8_t)op, .mode = mode, .max = max};
	snprintf(m.str, sizeof(m.str), "%s", path);
	int r = send_request(s, &m, &sp[1], 1);
	close(sp[1]);
	if (r < 0) {
		close(sp[0]);
		set_err(err, errlen, "the session is gone (%s): destroy it", strerror(-r));
		return r;
	}
	c->fd = sp[0];
	return 0;
}

/* Wait until c's stream is ready for ev: 0, -ETIMEDOUT at the call's
 * deadline, or -errno. */
static int fcall_wait(const struct fcall *c, short ev)
{
	for (;;) {
		double left = c->until - monotonic_now();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = c->fd, .events = ev};
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Up to n bytes: how many, 0 at the stream's end, or -errno (-ETIMEDOUT). */
static ssize_t fcall_read(const struct fcall *c, void *p, size_t n)
{
	for (;;) {
		int r = fcall_wait(c, POLLIN);
		if (r < 0)
			return r;
		ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
		if (k >= 0)
			return k;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

static int read_full(const struct fcall *c, void *p, size_t n)
{
	char *b = p;
	while (n) {
		ssize_t k = fcall_read(c, b, n);
		if (k <= 0)
			return k < 0 ? (int)k : -EPROTO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The worker's head: its r, with a message for the errnos a caller sees. */
static int file_head(struct ward_session *s, const struct fcall *c, struct file_head *h, const char *what,
		     const char *path, char *err, size_t errlen)
{
	int r = read_full(c, h, sizeof(*h));
	if (r == -ETIMEDOUT) {
		set_err(err, errlen, "the session's file worker did not answer within the call's deadline (%g s): the "
				     "sandbox may have stopped it",
			s->call_s);
		return r;
	}
	if (r < 0 && !ward_session_alive(s)) {
		set_err(err, errlen, "the session ended during the call");
		return -ESRCH;
	}
	if (r < 0) {
		set_err(err, errlen, "the session's file worker did not answer (%s)", strerror(-r));
		return -EIO;
	}
	if (h->r < 0)
		set_err(err, errlen, "cannot %s '%s' in the session: %s", what, path, strerror(-h->r));
	return h->r;
}


int ward_session_write(struct ward_session *s, const char *path, const void *data, size_t len, mode_t mode,
		       char *err, size_t errlen)
{
	struct fcall c;
	int r = file_op(s, SM_WRITE, path, mode ? mode & 07777 : 0644, 0, &c, err, errlen);
	if (r < 0)
		return r;
	const char *b = data;
	for (size_t off = 0; off < len;) {
		if (fcall_wait(&c, POLLOUT) < 0)
			break; /* the deadline: the head's read says so */
		ssize_t n = send(c.fd, b + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* the worker stopped reading: its head says why */
		off += (size_t)n;
	}
	shutdown(c.fd, SHUT_WR);
	struct file_head h;
	r = file_head(s, &c, &h, "write", path, err, errlen);
	close(c.fd);
	return r;
}

int ward_session_read(struct ward_session *s, const char *path, size_t max, unsigned char **data, size_t *len,
		      char *err, size_t errlen)
{
	struct fcall c;
	*data = NULL;
	*len = 0;
	int r = file_op(s, SM_READ, path, 0, max, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "read", path, err, errlen);
	if (r == 0 && h.len > max) {
		set_err(err, errlen, "'%s' is larger than %zu bytes", path, max);
		r = -EFBIG;
	}
	/* its size when the worker opened it (never more than max): what a
	 * writer adds meanwhile is not read */
	unsigned char *buf = r < 0 ? NULL : malloc((size_t)h.len + 1);
	if (r == 0 && !buf)
		r = -ENOMEM;
	size_t got = 0;
	while (r == 0 && got < h.len) {
		ssize_t n = fcall_read(&c, buf + got, (size_t)h.len - got);
		if (n == -ETIMEDOUT) {
			set_err(err, errlen, "'%s' did not arrive within the call's deadline (%g s)", path, s->call_s);
			r = (int)n;
		}
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(c.fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[got] = 0;
	*data = buf;
	*len = got;
	return 0;
}

static int read_entry(const struct fcall *c, struct ward_dirent *d)
{
	struct file_entry e;
	ssize_t k = fcall_read(c, &e, 1);
	if (k == 0)
		return 1; /* the end */
	if (k < 0 || (k = read_full(c, (char *)&e + 1, sizeof(e) - 1)) < 0)
		return k == -ETIMEDOUT ? -ETIMEDOUT : -EPROTO;
	d->name = malloc((size_t)e.name_len + 1);
	if (!d->name || (k = read_full(c, d->name, e.name_len)) < 0) {
		free(d->name);
		return k == -ETIMEDOUT ? -ETIMEDOUT : -EPROTO;
	}
	d->name[e.name_len] = 0;
	d->type = (char)e.type;
	d->size = e.size;
	d->mode = e.mode;
	d->mtime = (double)e.mtime_ns / 1e9;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ward_dirent *)a)->name, ((const struct ward_dirent *)b)->name);
}

int ward_session_list(struct ward_session *s, const char *path, struct ward_dirent **out, size_t *n, char *err,
		      size_t errlen)
{
	return ward_session_list_max(s, path, WARD_SESSION_LIST_MAX, WARD_SESSION_LIST_MAX_BYTES, out, n, NULL, err,
				     errlen);
}

int ward_session_list_max(struct ward_session *s, const char *path, size_t max_entries, size_t max_bytes,
			  struct ward_dirent **out, size_t *n, bool *truncated, char *err, size_t errlen)
{
	struct fcall c;
	*out = NULL;
	*n = 0;
	if (truncated)
		*truncated = false;
	int r = file_op(s, SM_LIST, path, 0, 0, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "list", path, err, errlen);
	struct ward_dirent *v = NULL;
	size_t cnt = 0, cap = 0, bytes = 0;
	while (r == 0) {
		if (cnt >= max_entries || bytes >= max_bytes) {
			struct ward_dirent more;
			int e = read_entry(&c, &more); /* is there one more? */
			if (e == 0)
				free(more.name);
			if (truncated)
				*truncated = e == 0;
			break;
		}
		if (cnt == cap) {
			struct ward_dirent *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		int e = read_entry(&c, &v[cnt]);
		if (e == 1)
			break;
		if (e == -ETIMEDOUT)
			set_err(err, errlen, "the listing of '%s' did not end within the call's deadline (%g s)", path,
				s->call_s);
		if (e < 0)
			r = e;
		else
			bytes += strlen(v[cnt++].name) + sizeof(*v);
	}
	close(c.fd);
	if (r < 0) {
		ward_session_list_free(v, cnt);
		return r;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), by_name);
	*out = v;
	*n = cnt;
	return 0;
}

void ward_session_list_free(struct ward_dirent *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++)
		free(d[i].name);
	free(d);
}

int ward_session_remove(struct ward_session *s, const char *path, char *err, size_t errlen)
{
	struct fcall c;
	int r = file_op(s, SM_REMOVE, path, 0, 0, &c, err, errlen);
	if (r < 0)
		return r;
	struct file_head h;
	r = file_head(s, &c, &h, "remove", path, err, errlen);
	close(c.fd);
	return r;
}

/* ------------------------------------------------------------ lifetime */

/* The session's default environment: with network allow the proxy's
 * variables (SPEC §13) first, then the caller's (a later entry wins). */
static int copy_env(struct ward_session *s, char *const *env, bool proxy)
{
	size_t n = 0, np = 0;
	while (env && env[n])
		n++;
	while (proxy && egress_proxy_env[np])
		np++;
	s->env = calloc(np + n + 1, sizeof(char *));
	if (!s->env)
		return -1;
	for (size_t i = 0; i < np; i++)
		if (!(s->env[s->nenv++] = strdup(egress_proxy_env[i])))
			return -1;
	for (size_t i = 0; i < n; i++)
		if (!(s->env[s->nenv++] = strdup(env[i])))
			return -1;
	return 0;
}

/* PID 1 into a leaf of its own (v2: the session's cgroup then hands its
 * controllers to the execs' cgroups), and out of the OOM killer's choice:
 * a memory kill ends what runs in the session, never the session. */
static int settle_pid1(struct ward_session *s, char *err, size_t errlen)
{
	if (!s->parts.cg) {
		set_err(err, errlen, "sessions need cgroups (each exec's tree is one): run ward as root or in a "
				     "delegated cgroup (see `ward doctor`)");
		return -1;
	}
	s->init_cg = cg_child_create(s->parts.cg, "i", err, errlen);
	if (!s->init_cg)
		return -1;
	int r = cg_attach(s->init_cg, s->parts.pid);
	if (r == 0)
		r = cg_delegate(s->parts.cg);
	if (r < 0) {
		set_err(err, errlen, "cannot give the session's execs cgroups of their own: %s", strerror(-r));
		return -1;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)s->parts.pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "-1000", 5); /* not root: the session may die of a memory kill */
		close(fd);
	}
	return 0;
}

static int write_files(struct ward_session *s, const struct ward_request *shape, char *err, size_t errlen)
{
	for (size_t i = 0; i < shape->nfiles; i++) {
		const struct ward_file *f = &shape->files[i];
		if (ward_session_write(s, f->path, f->data, f->len, f->mode, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static struct ward_session *session_new_shaped(const struct ward_session_opts *o, const struct ward_request *on,
					       char *err, size_t errlen);

struct ward_session *ward_session_new(const struct ward_session_opts *o, char *err, size_t errlen)
{
	struct ward_request shape;
	char **img_env = NULL; /* an image's Env under the shape's: copied by copy_env */
	if (image_root_apply(&o->shape, &shape, &img_env, err, errlen) < 0)
		return NULL;
	struct ward_session *s = session_new_shaped(o, &shape, err, errlen);
	free(img_env);
	return s;
}

static struct ward_session *session_new_shaped(const struct ward_session_opts *o, const struct ward_request *on,
					       char *err, size_t errlen)
{
	struct ward_request shape = *on;
	char *const true_argv[] = {"true", NULL};
	shape.argv = true_argv;
	shape.shell = NULL;
	shape.stdin_set = false;
	shape.stdin_fd = -1;
	shape.report_channel = false;
	if (shape.isolation != WARD_ISO_SYSTEM) {
		set_err(err, errlen, "sessions are system-level sandboxes only: use isolation system");
		return NULL;
	}
	if (ward_request_validate(&shape, err, errlen) < 0)
		return NULL;
	struct ward_session *s = calloc(1, sizeof(*s));
	if (!s) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->sock_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->arm_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->armed_cv, NULL);
	s->parts.pidfd = s->parts.sock = -1;
	s->limits = shape.limits;
	s->cpu_budget_s = o->cpu_budget_s;
	s->call_s = o->call_timeout_s > 0 ? o->call_timeout_s : WARD_SESSION_CALL_TIMEOUT;
	if (copy_env(s, shape.env, shape.net == WARD_NET_ALLOW) < 0) {
		set_err(err, errlen, "out of memory");
		ward_session_destroy(s);
		return NULL;
	}
	int lis = -1;
	s->sb = sandbox_build_session(&shape, o->work_size_mb, spawner_cloner(), &lis, err, errlen);
	if (s->sb)
		s->parts = sandbox_session_parts(s->sb);
	if (s->sb && (lis >= 0 || s->cpu_budget_s > 0) && session_watch_start(s, lis, &s->watch) < 0) {
		if (lis >= 0)
			close(lis);
		set_err(err, errlen, "cannot start the session's seccomp listener thread: %s", strerror(errno));
		ward_session_destroy(s);
		return NULL;
	}
	if (!s->sb || (s->parts = sandbox_session_parts(s->sb), settle_pid1(s, err, errlen) < 0)) {
		ward_session_destroy(s);
		return NULL;
	}
	arm_first(s);
	if (session_bg_new(s, o->bg_output_bytes, o->bg_output_shared, &s->bg) < 0 || write_files(s, &shape, err, errlen) < 0) {
		ward_session_destroy(s);
		return NULL;
	}
	struct ward_result tmp = {0};
	sandbox_enforced(s->sb, &tmp);
	s->enforced = tmp.enforced;
	return s;
}

void ward_session_kill(struct ward_session *s)
{
	if (!s || __atomic_exchange_n(&s->killed, 1, __ATOMIC_RELAXED))
		return;
	/* PID 1's death takes the PID namespace, and with it every process,
	 * file worker and stdin reader of the session: the calls waiting on
	 * them see their ends close.  pidfd and cgroup stay open until
	 * ward_session_destroy. */
	if (s->parts.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, s->parts.pidfd, SIGKILL, NULL, 0);
	if (s->parts.cg)
		cg_kill(s->parts.cg);
}

double session_call_timeout(const struct ward_session *s)
{
	return s->call_s;
}

bool session_killed(const struct ward_session *s)
{
	return __atomic_load_n(&s->killed, __ATOMIC_RELAXED);
}

void ward_session_destroy(struct ward_session *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->arm_stop = true; /* no more arming */
	pthread_mutex_unlock(&s->lock);
	if (s->sb)
		sandbox_session_kill(s->sb); /* PID 1, and with it every process inside */
	armer_stop(s);
	session_watch_stop(s->watch);
	session_bg_free(s->bg);
	for (size_t i = 0; i < s->nlinger; i++)
		cg_destroy(s->linger[i]);
	free(s->linger);
	cg_destroy(s->init_cg);
	sandbox_destroy(s->sb); /* the session's cgroup, uid slot, mounts, plan */
	for (size_t i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s->env);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->sock_lock);
	pthread_cond_destroy(&s->arm_cv);
	pthread_cond_destroy(&s->armed_cv);
	free(s);
}

int ward_session_usage(struct ward_session *s, struct ward_session_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!ward_session_alive(s))
		return -ESRCH;
	struct cg_stats cs;
	cg_now(s->parts.cg, &u->memory_bytes, &u->pids);
	if (cg_stats(s->parts.cg, &cs) == 0) {
		u->memory_peak_bytes = cs.memory_peak;
		u->cpu_ms = cs.cpu_usage_us / 1000;
	}
	return 0;
}

int ward_session_egress(struct ward_session *s, uint64_t *tried, uint64_t *allowed)
{
	*tried = *allowed = 0;
	if (!s->parts.egress)
		return -ENOENT;
	egress_counts(s->parts.egress, tried, allowed);
	return 0;
}

void ward_session_enforced(struct ward_session *s, struct ward_enforced *e)
{
	*e = s->enforced;
	e->time = "ward";
}
