/* spawner.c — the helper processes that clone sandboxes for a
 * multi-threaded caller (spawner.h says why).  This file is the helpers'
 * lifetime and the socket between them and the caller; what a clone is
 * lives in clone.c (spawn_pid1), which knows nothing of helpers.
 *
 * Each helper has one SOCK_SEQPACKET socket to the caller, used by one
 * caller thread at a time (a mutex per helper): a request is one message
 * (struct wire_req, the fds as SCM_RIGHTS), the answer one message (struct
 * wire_rep, the pidfd as SCM_RIGHTS).  A helper exits when its socket
 * closes or its parent dies; it ignores the signals a terminal or a service
 * manager sends to a whole group, so that a server draining after SIGTERM
 * still has it.  A helper that died is noticed on its socket (or by
 * spawner_heal, which the caller's main thread runs about once a second),
 * reaped and, where the lean ward can be exec'd, replaced; meanwhile its
 * callers clone for themselves.
 *
 * Runs in the caller (on the host) and in the helpers, never inside a
 * sandbox; it knows no sandbox but the plain shape's spawn_req.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "system/clone.h"
#include "system/netns.h"
#include "system/spawner.h"
#include "ward.h"

#define MAX_HELPERS 4
#define WIRE_MAGIC 0x77617264u /* "ward" */

extern char **environ;

/* What a request asks: clone PID 1 (the fds in SP_ order), or park a
 * process in a kept cgroup v1 (the fds: its cgroup.procs, one per
 * hierarchy; sandbox/cgroup_park.c). */
enum { WIRE_CLONE, WIRE_PARK };

struct wire_req {
	uint32_t magic;
	uint32_t kind;
	uint32_t present; /* bit i: fds[i] travels (in SP_ order) */
	struct spawn_req r;
};

struct wire_rep {
	int32_t pid; /* > 0, or -errno */
	uint32_t born_in_cg;
};

struct helper {
	pthread_mutex_t lock;
	int fd; /* -1: none, or dead */
	pid_t pid;
};

/* The process's helpers: globals, because there is one set per process
 * (ward_spawner_start takes no handle, and helpers are forked before the
 * caller has threads); each helper's own lock guards its entry. */
static struct helper g_helpers[MAX_HELPERS] = {
	[0 ... MAX_HELPERS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .pid = 0},
};
static unsigned g_nhelpers; /* set by the thread that starts and stops them */
static atomic_uint g_alive; /* helpers with fd >= 0, read without their locks */
static int g_exe_fd = -1;   /* the lean ward, for respawns; -1: none */
static atomic_uint g_next;  /* where helper_take looks first: round robin */

/* sendmsg of one buffer and up to SP_NFDS fds, retried on EINTR. */
static ssize_t send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SP_NFDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n;
}

/* recvmsg of one message into buf, its fds into fds (at most max; *nfds
 * says how many came).  The message's length, 0 at end of file, or -1 (a
 * message longer than len is an error).  When not all the fds could be
 * received (more than max, or the receiver at its fd limit), none is:
 * *nfds is 0 and the message is still returned. */
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SP_NFDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	*nfds = 0;
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			if (*nfds < max)
				fds[(*nfds)++] = in[i];
			else
				close(in[i]);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		for (size_t i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
	}
	if (mh.msg_flags & MSG_TRUNC) {
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

/* A request off sock (its fds in SP_ order into fds, -1 where none came),
 * checked: its length, or 0 at end of file, or -errno. */
static ssize_t recv_req(int sock, struct wire_req *q, int fds[SP_NFDS])
{
	int got[SP_NFDS];
	size_t ngot = 0, k = 0;
	ssize_t n = recv_fds(sock, q, sizeof(*q), got, SP_NFDS, &ngot);
	for (int i = 0; i < SP_NFDS; i++)
		fds[i] = (n > 0 && (q->present & (1u << i)) && k < ngot) ? got[k++] : -1;
	for (size_t i = k; i < ngot; i++)
		close(got[i]);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	if ((size_t)n != sizeof(*q) || q->magic != WIRE_MAGIC || k != ngot ||
	    __builtin_popcount(q->present) != (int)ngot) {
		for (int i = 0; i < SP_NFDS; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return -EINVAL;
	}
	return n;
}

static pid_t park(int helper_sock, int procs[SP_NFDS], int *sock);

/* A helper's loop (may_park), or a parked process's (in_cg: it is in the
 * cgroup of each PID 1 it clones): a request on sock, its answer, until
 * sock closes. */
static __attribute__((noreturn)) void serve(int sock, bool in_cg, bool may_park)
{
	for (;;) {
		struct wire_req q;
		int fds[SP_NFDS], pidfd = -1;
		ssize_t n = recv_req(sock, &q, fds);
		if (n == 0)
			_exit(0); /* the caller closed: it is stopping, or removes the cgroup */
		struct wire_rep a = {.pid = n < 0 ? (int32_t)n : -EINVAL};
		if (n > 0 && q.kind == WIRE_CLONE) {
			bool born = false;
			a.pid = spawn_pid1(&q.r, fds, &pidfd, &born);
			a.born_in_cg = in_cg || born;
		} else if (n > 0 && q.kind == WIRE_PARK && may_park)
			a.pid = park(sock, fds, &pidfd); /* pidfd: the parked one's socket */
		for (int i = 0; n > 0 && i < SP_NFDS; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		ssize_t w = send_fds(sock, &a, sizeof(a), &pidfd, a.pid > 0 ? 1 : 0);
		if (pidfd >= 0)
			close(pidfd);
		if (w < 0)
			_exit(0);
	}
}

/* Write a stack's worth of pages now, before the move: each page a fork
 * shares with its parent is copied at its first write (copy-on-write), and
 * a copy made after the move would be charged to the sandbox's cgroup. */
static __attribute__((noinline)) void touch_stack(void)
{
	volatile char pages[64 << 10];
	for (size_t i = 0; i < sizeof(pages); i += 4096)
		pages[i] = 0;
}

/* The parked process (sandbox/cgroup_park.c): in a mount namespace of its
 * own (the helper's prepared root may be made again under it meanwhile),
 * it moves itself into the cgroup (the wait for a grace period is paid
 * here, before any request), then clones each
 * PID 1 asked on sock until it closes.  Its parent is the caller's (it was
 * cloned with CLONE_PARENT) and it dies with it. */
static __attribute__((noreturn)) void parked_main(int sock, int procs[SP_NFDS], pid_t caller)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != caller)
		_exit(0);
	prctl(PR_SET_NAME, "ward-parked");
	spawn_own_mounts();
	touch_stack();
	bool in = true;
	for (int i = 0; i < SP_NFDS; i++)
		if (procs[i] >= 0) {
			in = in && write(procs[i], "0", 1) == 1;
			close(procs[i]);
		}
	serve(sock, in, false); /* until its cgroup is removed */
}

/* In the helper: a parked process for the cgroup.procs fds of q (its pid,
 * *sock the caller's end of its socket), or -errno. */
static pid_t park(int helper_sock, int procs[SP_NFDS], int *sock)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	spawn_plan_refresh(); /* what it inherits: a plan it will not make again first */
	pid_t caller = getppid();
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
	if (pid == 0) {
		close(sv[0]);
		close(helper_sock); /* the caller must see the helper's death */
		parked_main(sv[1], procs, caller);
	}
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -e;
	}
	*sock = sv[0];
	return pid;
}

static __attribute__((noreturn)) void helper_main(int sock)
{
	netns_init(); /* the host's network namespace, held from the start */
	spawn_own_mounts();
	serve(sock, false, true);
}

/* The new helper: nothing of the caller's but the socket, on fd 3.  With
 * exe_fd, it becomes that binary (the lean, static `ward`, --spawner-helper):
 * a process with a dozen mappings instead of a hundred libraries' is cheaper
 * to clone, and each PID 1 it clones is cheaper to fault in and to tear
 * down.  Should that exec fail, it goes on as the copy it is. */
static __attribute__((noreturn)) void helper_start(int sock, pid_t parent, int exe_fd, bool may_stay)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* kept across the exec */
	if (getppid() != parent)
		_exit(0);
	if (exe_fd >= 0 && exe_fd <= 3)
		exe_fd = fcntl(exe_fd, F_DUPFD_CLOEXEC, 4);
	if (sock != 3 && dup2(sock, 3) < 0)
		_exit(1);
	fcntl(3, F_SETFD, 0);
	close_range(4, ~0U, CLOSE_RANGE_CLOEXEC);
	/* Not the server's stdio or log either (2 stays for WARD_TRACE). */
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; dn >= 0 && fd <= 2; fd++)
		if (fd != 2 || !getenv("WARD_TRACE"))
			dup2(dn, fd);
	int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (exe_fd >= 0) {
		/* (a long enough argv: PID 1 overwrites it with "ward-init") */
		char *const argv[] = {"ward-spawner", WARD_SPAWNER_ARG, NULL};
		syscall(SYS_execveat, exe_fd, "", argv, environ, AT_EMPTY_PATH);
	}
	if (!may_stay)
		_exit(127);
	close_range(4, ~0U, 0);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	prctl(PR_SET_NAME, "ward-spawner");
	helper_main(3);
}

int spawner_helper_main(void)
{
	int type = 0;
	socklen_t len = sizeof(type);
	if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
		fprintf(stderr, "ward: %s is internal to ward serve\n", WARD_SPAWNER_ARG);
		return 125;
	}
	prctl(PR_SET_NAME, "ward-spawner");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	helper_main(3);
}

static int spawner_park(const int *procs, int n, pid_t *pid);

/* Fork helper h (its fd and pid set on success).  0 or -errno.  From a
 * process with threads (a respawn), only a helper that execs may be made:
 * the fork's copy of a threaded process must not go on running ward's
 * code. */
static int helper_fork(struct helper *h, int exe_fd, bool may_stay)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_start(sv[1], self, exe_fd, may_stay);
	}
	close(sv[1]);
	h->fd = sv[0];
	h->pid = pid;
	atomic_fetch_add(&g_alive, 1);
	return 0;
}

int spawner_start(unsigned n, int exe_fd, char *err, size_t errlen)
{
	if (g_nhelpers)
		return 0;
	if (n == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (unsigned)cpus : 1;
	}
	if (n > MAX_HELPERS)
		n = MAX_HELPERS;
	/* The cgroup layout first: in a delegated cgroup, or at the top of a
	 * container's, ward moves itself into a leaf (ward-supervisor) so that
	 * its cgroup may enable controllers, and it may only while it is alone
	 * there.  Helpers forked first would be "internal processes", and runs
	 * would fall back to rlimits.  Forked after, they live in the leaf. */
	(void)cg_probe();
	/* Kept to replace a helper that dies (spawner_heal). */
	g_exe_fd = exe_fd >= 0 ? fcntl(exe_fd, F_DUPFD_CLOEXEC, 3) : -1;
	for (unsigned i = 0; i < n; i++) {
		int r = helper_fork(&g_helpers[i], exe_fd, true);
		if (r < 0) {
			snprintf(err, errlen, "cannot start the spawner: %s", strerror(-r));
			spawner_stop();
			return -1;
		}
		g_nhelpers = i + 1;
	}
	cg_set_parker(spawner_park);
	return 0;
}

/* With h locked: it is gone (or broken); never use it again.  Unless
 * already reaped, it is killed (it may only be broken) and reaped. */
static void helper_lost(struct helper *h, bool reaped)
{
	close(h->fd);
	h->fd = -1;
	atomic_fetch_sub(&g_alive, 1);
	if (h->pid > 0 && !reaped) {
		kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	h->pid = 0;
}

bool spawner_alive(void)
{
	return atomic_load(&g_alive) > 0;
}

sandbox_cloner *spawner_cloner(void)
{
	return spawner_alive() ? spawner_clone : NULL;
}

unsigned spawner_heal(void)
{
	unsigned made = 0;
	for (unsigned i = 0; i < g_nhelpers; i++) {
		struct helper *h = &g_helpers[i];
		if (pthread_mutex_trylock(&h->lock) != 0)
			continue; /* in use: alive */
		/* dead before any run noticed it? */
		if (h->fd >= 0 && h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) == h->pid)
			helper_lost(h, true);
		if (h->fd < 0 && g_exe_fd >= 0 && helper_fork(h, g_exe_fd, false) == 0)
			made++;
		pthread_mutex_unlock(&h->lock);
	}
	return made;
}

void spawner_stop(void)
{
	cg_set_parker(NULL);
	for (unsigned i = 0; i < g_nhelpers; i++) {
		struct helper *h = &g_helpers[i];
		pthread_mutex_lock(&h->lock);
		if (h->fd >= 0) {
			close(h->fd);
			h->fd = -1;
			while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
				;
			h->pid = 0;
		}
		pthread_mutex_unlock(&h->lock);
	}
	g_nhelpers = 0;
	atomic_store(&g_alive, 0);
	if (g_exe_fd >= 0) {
		close(g_exe_fd);
		g_exe_fd = -1;
	}
}

/* A live helper, locked: a free one if any, else wait for one.  NULL when
 * none is alive. */
static struct helper *helper_take(void)
{
	unsigned n = g_nhelpers;
	if (!n)
		return NULL;
	unsigned first = atomic_fetch_add(&g_next, 1) % n;
	for (unsigned k = 0; k < n; k++) {
		struct helper *h = &g_helpers[(first + k) % n];
		if (pthread_mutex_trylock(&h->lock) == 0) {
			if (h->fd >= 0)
				return h;
			pthread_mutex_unlock(&h->lock);
		}
	}
	for (unsigned k = 0; k < n; k++) {
		struct helper *h = &g_helpers[(first + k) % n];
		pthread_mutex_lock(&h->lock);
		if (h->fd >= 0)
			return h;
		pthread_mutex_unlock(&h->lock);
	}
	return NULL;
}

/* One request on fd and its answer: the pid (> 0, with *got the fd that
 * came with it and *born set), or -errno; -EPIPE when the other end is
 * gone or broken. */
static pid_t ask(int fd, struct wire_req *q, const int *fds, size_t nfds, int *got, bool *born)
{
	int send[SP_NFDS];
	size_t nsend = 0;
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0) {
			q->present |= 1u << i;
			send[nsend++] = fds[i];
		}
	struct wire_rep a;
	int in[1];
	size_t nin = 0;
	if (send_fds(fd, q, sizeof(*q), send, nsend) != (ssize_t)sizeof(*q) ||
	    recv_fds(fd, &a, sizeof(a), in, 1, &nin) != (ssize_t)sizeof(a)) {
		for (size_t i = 0; i < nin; i++)
			close(in[i]);
		return -EPIPE;
	}
	if (a.pid > 0 && nin == 1) {
		*got = in[0];
		*born = a.born_in_cg != 0;
		return a.pid;
	}
	if (a.pid > 0) {
		/* It exists (our child) but its fd did not come through: we
		 * are at our fd limit.  Undo it. */
		kill(a.pid, SIGKILL);
		while (waitpid(a.pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -EMFILE;
	}
	for (size_t i = 0; i < nin; i++)
		close(in[i]);
	return a.pid < 0 ? a.pid : -EPROTO;
}

pid_t spawner_clone(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg)
{
	struct helper *h = helper_take();
	if (!h)
		return -ENOSYS;
	struct wire_req q = {.magic = WIRE_MAGIC, .kind = WIRE_CLONE, .r = *r};
	pid_t ret = ask(h->fd, &q, fds, SP_NFDS, pidfd, born_in_cg);
	if (ret == -EPIPE)
		helper_lost(h, false);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

pid_t spawner_clone_parked(int sock, const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg)
{
	struct wire_req q = {.magic = WIRE_MAGIC, .kind = WIRE_CLONE, .r = *r};
	return ask(sock, &q, fds, SP_NFDS, pidfd, born_in_cg);
}

/* The parker of sandbox/cgroup_park.c: a helper parks the process. */
static int spawner_park(const int *procs, int n, pid_t *pid)
{
	struct helper *h = helper_take();
	if (!h)
		return -ENOSYS;
	struct wire_req q = {.magic = WIRE_MAGIC, .kind = WIRE_PARK};
	int sock = -1;
	bool unused;
	pid_t ret = ask(h->fd, &q, procs, (size_t)n, &sock, &unused);
	if (ret == -EPIPE)
		helper_lost(h, false);
	pthread_mutex_unlock(&h->lock);
	if (ret < 0)
		return ret;
	/* never the OOM killer's pick in the sandbox's cgroup (the helper may
	 * not lower it; where we may not either, it is the kernel's choice) */
	char path[40];
	snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)ret);
	int adj = open(path, O_WRONLY | O_CLOEXEC);
	if (adj >= 0) {
		(void)!write(adj, "-1000", 5);
		close(adj);
	}
	*pid = ret;
	return sock;
}

int ward_spawner_start(unsigned helpers, int exe_fd, char *err, size_t errlen)
{
	return spawner_start(helpers, exe_fd, err, errlen);
}

void ward_spawner_stop(void)
{
	spawner_stop();
}

unsigned ward_spawner_heal(void)
{
	return spawner_heal();
}

unsigned ward_spawner_helpers(void)
{
	return atomic_load(&g_alive);
}
