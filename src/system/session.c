/* session.c — sessions (SPEC §11; ward.h's ward_session_*), from the
 * supervisor's side: one system-level sandbox (supervisor.c builds it) whose
 * PID 1 runs init_session.c's loop; this file owns its lifetime (new,
 * kill, destroy, usage), its control socket, its CPU budget and the kill of
 * an exec a fatal call was caught in.  The execs are session_exec.c's, the
 * files API session_files.c's, background processes session_bg.c's,
 * freezing and saving session_freeze.c's and session_save.c's.
 *
 * Runs on the host, in ward: it may allocate; it never touches a path under
 * /work itself (a symlink the sandbox planted would resolve on the host).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include "sandbox/freezer.h"
#include "sandbox/seccomp.h"
#include "system/collect_walk.h"
#include "system/egress.h"
#include "system/session.h"
#include "system/session_proto.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

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

int session_send(struct ward_session *s, const struct session_msg *m, const int *fds, int nfds)
{
	size_t len = offsetof(struct session_msg, str) + strlen(m->str) + 1;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = len};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = &iov,
	                    .msg_iovlen = 1,
	                    .msg_control = u.b,
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
int session_recv(struct ward_session *s, int *fd)
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
		session_close_fd(fd);
	return rep.r;
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
		base_errf(err, errlen,
		          "sessions need cgroups (each exec's tree is one): run ward as root or in a "
		          "delegated cgroup (see `ward doctor`)");
		return -1;
	}
	s->init_cg = cg_child_create(s->parts.cg, "i", err, errlen);
	if (!s->init_cg)
		return -1;
	int r = cg_attach(s->init_cg, s->parts.pid);
	/* (v1: into the freezer's too, right after: two moves in a row cost
	 * one grace period) */
	if (r == 0 && session_freezer_open(s, err, errlen) < 0)
		return -1;
	if (r == 0)
		r = cg_delegate(s->parts.cg);
	if (r < 0) {
		base_errf(err, errlen, "cannot give the session's execs cgroups of their own: %s", strerror(-r));
		return -1;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)s->parts.pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	/* without CAP_SYS_RESOURCE the write is refused: see unshield */
	s->pid1_shielded = fd >= 0 && write(fd, "-1000", 5) == 5;
	if (fd >= 0)
		close(fd);
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
		base_errf(err, errlen, "sessions are system-level sandboxes only: use isolation system");
		return NULL;
	}
	if (ward_request_validate(&shape, err, errlen) < 0)
		return NULL;
	struct ward_session *s = calloc(1, sizeof(*s));
	if (!s) {
		base_errf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->sock_lock, NULL);
	pthread_mutex_init(&s->freeze_lock, NULL);
	session_notify_init(s);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->arm_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->armed_cv, NULL);
	s->parts.pidfd = s->parts.sock = -1;
	s->limits = shape.limits;
	s->egress = shape.net == WARD_NET_ALLOW;
	s->cpu_budget_s = o->cpu_budget_s;
	s->net_cap = o->net_bytes ? o->net_bytes : WARD_SESSION_NET_BYTES;
	s->call_s = o->call_timeout_s > 0 ? o->call_timeout_s : WARD_SESSION_CALL_TIMEOUT;
	if (copy_env(s, shape.env, shape.net == WARD_NET_ALLOW) < 0) {
		base_errf(err, errlen, "out of memory");
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
		base_errf(err, errlen, "cannot start the session's seccomp listener thread: %s", strerror(errno));
		ward_session_destroy(s);
		return NULL;
	}
	if (!s->sb || (s->parts = sandbox_session_parts(s->sb), settle_pid1(s, err, errlen) < 0)) {
		ward_session_destroy(s);
		return NULL;
	}
	session_arm_first(s);
	if (session_bg_new(s, o->bg_output_bytes, o->bg_output_shared, &s->bg) < 0 ||
	    write_files(s, &shape, err, errlen) < 0) {
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
	if (s->freezer && ward_session_frozen(s)) /* v1: a frozen task dies once thawed */
		freezer_set(s->freezer, false, 0);
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
	if (s->freezer && (ward_session_frozen(s) || session_killed(s))) {
		/* killed, then thawed: a frozen task dies only thawed (v1); thawed
		 * here too when it was killed already (a kill in a freeze's window
		 * thawed nothing: PID 1 would never die, and this wait with it) */
		ward_session_kill(s);
		freezer_set(s->freezer, false, 0);
	}
	if (s->sb)
		sandbox_session_kill(s->sb); /* PID 1, and with it every process inside */
	session_armer_stop(s);
	session_watch_stop(s->watch);
	session_bg_free(s->bg);
	for (size_t i = 0; i < s->nlinger; i++)
		cg_destroy(s->linger[i]);
	free(s->linger);
	cg_destroy(s->init_cg);
	freezer_close(s->freezer);
	sandbox_destroy(s->sb); /* the session's cgroup, uid slot, mounts, plan */
	for (size_t i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s->env);
	for (unsigned i = 0; i < s->nspare; i++)
		close(s->spare[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->sock_lock);
	pthread_mutex_destroy(&s->freeze_lock);
	session_notify_free(s);
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
