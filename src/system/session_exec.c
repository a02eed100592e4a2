/* session_exec.c — a session's execs, supervisor side, on the host.
 *
 * Each exec: its pipes and a cgroup of its own beneath the session's (v2:
 * PID 1 lives in a leaf of its own, since a cgroup that hands controllers to
 * children holds no process), an EXEC request on the control socket
 * (session_proto.h) that PID 1 answers with the command's pidfd; the command
 * is moved into the exec's cgroup, then gets its handover and execs, and
 * core/supervise.c supervises it exactly as a one-shot run, with the exec's
 * cgroup as "the tree" (its timeout and CPU limit kill that cgroup only).
 * The next exec's process is armed ahead by a thread of the session's (see
 * "armed execs" below).  Background processes (session_bg.c) start here
 * too (session_exec_start).
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

#include "base/errf.h"
#include "core/backend.h"
#include "core/egress.h"
#include "core/pathguard.h"
#include "core/supervise.h"
#include "image/root.h"
#include "sandbox/cgroup.h"
#include "sandbox/seccomp.h"
#include "system/collect_walk.h"
#include "system/egress.h"
#include "system/session.h"
#include "system/session_proto.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

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
		base_errf(err, errlen, "cannot create the exec's pipes: %s", strerror(errno));
		int *all[] = {&ho[0], &ho[1], &ctl[0], &ctl[1], &out[0], &out[1], &er[0], &er[1], &in[0], &in[1]};
		for (size_t i = 0; i < 10; i++)
			session_close_fd(all[i]);
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
		session_close_fd(fds[i]);
}

/* Ask PID 1 for the exec's process; it answers with its pidfd. */
static int request_command(struct ward_session *s, int remote[5], int *pidfd)
{
	struct session_msg m = {.op = SM_EXEC};
	pthread_mutex_lock(&s->sock_lock);
	int r = session_send(s, &m, remote, remote[4] >= 0 ? 5 : 4);
	if (r == 0)
		r = session_recv(s, pidfd);
	pthread_mutex_unlock(&s->sock_lock);
	for (int i = 0; i < 5; i++)
		session_close_fd(&remote[i]);
	return r;
}

/* PID 1 is shielded from the OOM killer (settle_pid1): the command, its
 * fork, is not.  Where PID 1 could not be shielded (no CAP_SYS_RESOURCE:
 * a container's bounding set), the command is made the killer's first
 * choice instead, by a whole memory limit: else a PID 1 whose pages
 * outweigh the hog's (a clone of a large process, copy-on-write) is the
 * one killed, and the session with it.  Raising the score needs no
 * right. */
static void unshield(pid_t hp, bool pid1_shielded)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)hp);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, pid1_shielded ? "0" : "1000", pid1_shielded ? 1 : 4);
		close(fd);
	}
}

/* ------------------------------------------------------------ armed execs
 *
 * Everything of an exec but its command can be made before the command is
 * known: its pipes, its cgroup, its process (PID 1's fork), moved into that
 * cgroup and waiting for its handover.  After each exec a thread of the
 * session's (the armer, started with the first exec) makes the next one's
 * that way while the session is idle, so that an exec's own path is only:
 * the handover, the command, its status and its cgroup's usage.  An exec
 * that finds none ready (the first, or one right behind another) makes its
 * own as before.  The armed process runs nothing of the user's: it waits
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
			session_close_fd(&remote[i]);
	else if (r < 0)
		base_errf(err, errlen, "the session cannot start the command: %s", strerror(-r));
	pid_t hp = r == 0 ? pidfd_pid(x->pidfd) : -1;
	if (r == 0 && (hp <= 0 || (r = cg_attach(x->cg, hp)) < 0)) {
		base_errf(err, errlen, "cannot move the exec into its cgroup: %s", strerror(r < 0 ? -r : ESRCH));
		r = r < 0 ? r : -ESRCH;
	}
	trace_phase("sx:attach", 0);
	if (r < 0) {
		exec_discard(x);
		return r;
	}
	unshield(hp, s->pid1_shielded);
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
	pthread_setname_np(pthread_self(), "ward-sess-arm");
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct timespec until = in_ms(ARM_KEEP_S * 1000L);
		bool idle = false;
		/* (frozen: nothing is armed, and the armed one is not idle; the
		 * freeze parks it: session_armer_park) */
		while (!s->arm_stop && !s->arm_parked && ((!s->arm_wanted && !s->warm_wanted) || s->frozen) && !idle) {
			if (!s->armed_ok || s->frozen)
				pthread_cond_wait(&s->arm_cv, &s->lock);
			else
				idle = pthread_cond_timedwait(&s->arm_cv, &s->lock, &until) == ETIMEDOUT;
		}
		if (s->arm_stop || s->arm_parked)
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
		while (!s->arm_stop && !s->arm_parked && pthread_cond_timedwait(&s->arm_cv, &s->lock, &until) == 0)
			;
		if (s->arm_stop || s->arm_parked) /* (arm_wanted stays: the thaw starts it again) */
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
	if (!s->armer_on && !s->armer_failed && !s->arm_stop && !s->arm_parked) {
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
void session_arm_first(struct ward_session *s)
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

void session_armer_park(struct ward_session *s, bool park)
{
	pthread_mutex_lock(&s->lock);
	s->arm_parked = park;
	bool on = s->armer_on;
	if (park)
		pthread_cond_broadcast(&s->arm_cv);
	else if (s->armed_ok || s->arm_wanted) /* one to discard when idle, or to make */
		armer_start(s);
	pthread_mutex_unlock(&s->lock);
	if (park && on) { /* (it arms nothing once parked, and PID 1 runs until it is gone) */
		pthread_join(s->armer, NULL);
		pthread_mutex_lock(&s->lock);
		s->armer_on = false;
		pthread_mutex_unlock(&s->lock);
	}
}

/* Stop the armer (after PID 1 is dead: nothing it waits on blocks then)
 * and discard what it armed. */
void session_armer_stop(struct ward_session *s)
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
		session_close_fd(&x->in_w); /* the command reads /dev/null (no HO_STDIN_PIPE) */
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
	session_close_fd(&x->ho_w);
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
			base_errf(err, errlen, "cannot hand the command to the session: %s", strerror(-r));
		exec_track(s, x, false);
		exec_discard(x);
		return r;
	}
	return 0;
}

int session_exec_pid(const struct session_exec *x)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", x->pidfd);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, "NSpid:"); /* its last field: the pid inside */
	char *nl = p ? strchr(p, '\n') : NULL;
	if (nl)
		*nl = 0;
	char *last = p ? strrchr(p, '\t') : NULL;
	return last ? atoi(last + 1) : -1;
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

int session_request(struct ward_session *s, const struct ward_request *req, struct ward_request *out, char ***env,
                    char *err, size_t errlen)
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
		base_errf(err, errlen, "out of memory");
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

/* A foreground exec begins (one of the session's exec slots, and the
 * session not frozen: a freeze waits for none) or ends. */
static int exec_enter(struct ward_session *s, char *err, size_t errlen)
{
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (s->frozen)
		r = -EBUSY;
	else if (s->running >= WARD_SESSION_MAX_EXECS)
		r = -EAGAIN;
	else {
		s->running++;
		s->foreground++;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == -EBUSY)
		return session_refuse_frozen(s, err, errlen);
	if (r < 0)
		base_errf(err, errlen, "the session runs %d execs already: wait for one to end",
		          WARD_SESSION_MAX_EXECS);
	return r;
}

static void exec_leave(struct ward_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->running--;
	s->foreground--;
	pthread_mutex_unlock(&s->lock);
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

int ward_session_exec(struct ward_session *s, const struct ward_request *req, const char *cwd, struct ward_result *res)
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
		snprintf(res->error, sizeof(res->error),
		         "cwd must be an absolute path inside the sandbox, of at most %d "
		         "bytes: '%.200s'",
		         SM_MAX_STR - 1, cwd);
		r = -EINVAL;
	}
	char globs_fit[SM_MAX_STR];
	if (r == 0 && req->collect && session_join_globs(req->collect, globs_fit, sizeof(globs_fit)) < 0) {
		snprintf(res->error, sizeof(res->error),
		         "collect: the globs take more than %d bytes in all: give "
		         "fewer or shorter ones",
		         SM_MAX_STR - 1);
		r = -EINVAL;
	}
	if (r == 0)
		r = exec_enter(s, res->error, sizeof(res->error));
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
	exec_leave(s);
	free(env);
	r = result_from_outcome(&o, r, res, start);
	trace_phase("sx:end", 0);
	return r;
}
