/* backend_system.c — the `system` level: a run in its own user, mount, PID,
 * IPC, UTS, cgroup and network namespaces.
 *
 * Process model (as isolate's keeper/proxy/inside):
 *   supervisor  (ward, on the host): makes the plan, the cgroup, the pipes;
 *               clones PID 1, writes its uid/gid maps, attaches its cgroup,
 *               then supervises (output, timeout, CPU) and reaps it.
 *   PID 1       (ward's init, inside): builds the root (mounts.c), forks the
 *               command, reaps every orphan, and when the command ends
 *               reports its status and exits — the kernel then kills every
 *               process left in the PID namespace.  Non-dumpable, holds no
 *               host fd, dies with the supervisor's thread (PDEATHSIG).
 *   command     (inside): setsid, fds 0-2 (and 3 = report channel), rlimits,
 *               drops to uid 1000 with no capabilities, no_new_privs,
 *               Landlock, seccomp last, execve.
 * After the clone nothing allocates: the server calls this from many
 * threads, and a fork of a multi-threaded process may find malloc's locks
 * held by a thread that does not exist in the child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "plan.h"
#include "request.h"
#include "sandbox/caps.h"
#include "sandbox/cgroup.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/seccomp.h"
#include "sandbox/userns.h"

/* The seccomp filter and Landlock ABI are the same for every run: made once. */
static struct ward_seccomp g_filter;
static int g_filter_ok;
static char g_filter_err[256];
static int g_landlock_abi;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool g_no_seccomp, g_no_landlock;

/* Where this process's command line lives (/proc/self/stat arg_start and
 * arg_end): PID 1, a copy of ward, overwrites it, so that the sandbox's
 * /proc/1/cmdline says "ward-init" instead of how ward was started (a
 * server's options, paths on the host). */
static unsigned long g_arg_start, g_arg_end;

static void find_cmdline(void)
{
	char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the comm field may hold spaces */
	if (!p)
		return;
	/* after ')' come fields 3.. ; arg_start and arg_end are 48 and 49 */
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		field++;
		if (field == 48)
			g_arg_start = strtoul(tok, NULL, 10);
		else if (field == 49) {
			g_arg_end = strtoul(tok, NULL, 10);
			break;
		}
	}
	if (g_arg_end <= g_arg_start + 10)
		g_arg_start = g_arg_end = 0;
}

static void hide_cmdline(void)
{
	if (!g_arg_start)
		return;
	char *a = (char *)g_arg_start;
	memset(a, 0, g_arg_end - g_arg_start);
	memcpy(a, "ward-init", 10);
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);
	return v && strcmp(v, "1") == 0;
}

static void prepare_once(void)
{
	g_filter_ok = ward_seccomp_prepare(&g_filter, g_filter_err, sizeof(g_filter_err)) == 0;
	g_landlock_abi = ward_landlock_abi();
	/* Benchmark switches, to measure what each layer costs at start-up.
	 * The result says honestly that the layer was off. */
	g_no_seccomp = env_on("WARD_BENCH_NO_SECCOMP");
	g_no_landlock = env_on("WARD_BENCH_NO_LANDLOCK");
	if (g_no_landlock)
		g_landlock_abi = 0;
	find_cmdline();
}

static const char *landlock_name(int abi)
{
	static const char *const names[] = {"none", "landlock-abi-1", "landlock-abi-2", "landlock-abi-3",
					    "landlock-abi-4", "landlock-abi-5", "landlock-abi-6", "landlock-abi-7",
					    "landlock-abi-8", "landlock-abi-9"};
	if (abi < 0)
		abi = 0;
	return abi < 10 ? names[abi] : "landlock";
}

/* Everything PID 1 and the command need, made before the clone. */
struct child_ctx {
	const struct ward_request *req;
	const struct plan *plan;
	int *trees;
	char **argv;
	char **envp;
	const char *const *write_paths;
	size_t nwrite;
	int landlock_abi;
	bool use_as;           /* no memory cgroup: RLIMIT_AS stands in */
	int sync_r, ctl_w;     /* sync: supervisor -> PID 1; ctl: PID 1 -> supervisor */
	int notify_w;          /* the command sends its seccomp listener here */
	int out_w, err_w, in_r, rep_w;
	double start;          /* for WARD_TRACE */
};

static void ctl_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctl_say(int fd, const char *fmt, ...)
{
	char buf[600];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static int loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return r;
}

/* The command, in PID 1's child.  Never returns. */
static void command_main(struct child_ctx *c)
{
	const struct ward_request *req = c->req;
	if (setsid() < 0)
		exec_fail_exit(c->argv[0], errno);
	/* fds: 0 stdin, 1 stdout, 2 stderr, 3 report channel; nothing else. */
	int in = c->in_r;
	if (in < 0 && req->stdin_fd >= 0 && !req->stdin_set)
		in = req->stdin_fd;
	if (in < 0)
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0 || dup2(c->out_w, 1) < 0 || dup2(c->err_w, 2) < 0)
		_exit(WARD_EXIT_FAILED);
	int first_closed = 3;
	if (c->rep_w >= 0) {
		if (dup2(c->rep_w, 3) < 0)
			_exit(WARD_EXIT_FAILED);
		first_closed = 4;
	}
	/* The seccomp hand-over socket survives until just before execve, as
	 * the next fd, close-on-exec. */
	int notify = first_closed;
	if (dup2(c->notify_w, notify) < 0 || fcntl(notify, F_SETFD, FD_CLOEXEC) < 0)
		_exit(WARD_EXIT_FAILED);
	syscall(SYS_close_range, notify + 1, ~0u, 0);
	for (int fd = 0; fd < first_closed; fd++)
		fcntl(fd, F_SETFD, 0);

	reset_signals();
	trace_phase("cmd:fds", c->start);
	int r = apply_rlimits(&req->limits, c->use_as);
	if (r == 0)
		r = caps_drop_to(WARD_SANDBOX_UID, WARD_SANDBOX_GID);
	trace_phase("cmd:caps", c->start);
	if (r == 0 && c->landlock_abi > 0)
		r = ward_landlock_apply(c->landlock_abi, c->write_paths, c->nwrite);
	trace_phase("cmd:landlock", c->start);
	if (r < 0) {
		char msg[256];
		int n = snprintf(msg, sizeof(msg), "ward: sandbox setup failed: %s\n", strerror(-r));
		(void)!write(2, msg, (size_t)n);
		_exit(WARD_EXIT_FAILED);
	}
	/* seccomp last: after it, only what the program itself does.  The
	 * fatal rules go to a listener that the supervisor holds, so that it
	 * can name the call before it kills the sandbox. */
	if (!g_no_seccomp) {
		int lis = ward_seccomp_apply_listener(&g_filter);
		r = lis < 0 ? lis : ward_seccomp_send_listener(notify, lis);
		if (lis >= 0)
			close(lis);
		if (r < 0) {
			char msg[256];
			int n = snprintf(msg, sizeof(msg), "ward: cannot load the seccomp filter: %s\n", strerror(-r));
			(void)!write(2, msg, (size_t)n);
			_exit(WARD_EXIT_FAILED);
		}
	}
	close(notify);
	trace_phase("cmd:seccomp", c->start);
	exec_search(c->argv, c->envp);
	exec_fail_exit(c->argv[0], errno);
}

/* The command's stack while it shares PID 1's memory (PID 1 has its own
 * copy of this array: it is a clone of the supervisor, not a thread). */
static char g_cmd_stack[256 * 1024] __attribute__((aligned(16)));

static int command_entry(void *arg)
{
	struct child_ctx *c = arg;
	close(c->ctl_w);
	command_main(c);
	return 127;
}

/* PID 1.  Never returns. */
/* Close every fd but those in keep[0..n) (n small; keep is sorted here). */
static void close_all_but(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned lo = 0;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0u, 0);
}

static int init_main(struct child_ctx *c)
{
	/* If the supervisor's thread dies, so do we (and with us, the whole
	 * PID namespace). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* PID 1 is a copy of ward: of a server, with its listening socket,
	 * its clients' connections and its log.  Keep only what the run
	 * needs, so that no host fd lives inside and no connection of the
	 * server's is held open by a sandbox. */
	int keep[160];
	size_t nkeep = 0;
	int mine[] = {0, 1, 2, c->sync_r, c->ctl_w, c->notify_w, c->out_w, c->err_w, c->in_r, c->rep_w,
		      c->req->stdin_fd};
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (mine[i] >= 0)
			keep[nkeep++] = mine[i];
	for (size_t i = 0; i < c->plan->nops && nkeep < sizeof(keep) / sizeof(keep[0]); i++)
		if (c->trees[i] >= 0)
			keep[nkeep++] = c->trees[i];
	close_all_but(keep, nkeep);
	/* Handlers ward installed (a server's SIGTERM, the CLI's SIGINT) would
	 * let processes inside signal their init; with every disposition
	 * default, the kernel drops such signals. */
	reset_signals();
	char go;
	if (read(c->sync_r, &go, 1) != 1)
		_exit(1); /* the supervisor is gone, or said no */

	char err[512] = "";
	if (unshare(CLONE_NEWCGROUP) < 0) {
		ctl_say(c->ctl_w, "E cannot create the cgroup namespace: %s\n", strerror(errno));
		_exit(1);
	}
	if (sethostname(c->plan->hostname, strlen(c->plan->hostname)) < 0 || setdomainname("ward", 4) < 0) {
		ctl_say(c->ctl_w, "E cannot set the hostname: %s\n", strerror(errno));
		_exit(1);
	}
	if (c->req->net == WARD_NET_LOOPBACK && loopback_up() < 0) {
		ctl_say(c->ctl_w, "E cannot bring up the loopback interface: %s\n", strerror(errno));
		_exit(1);
	}
	trace_phase("init:ns", c->start);
	struct mounts_input mi = {
		.plan = c->plan, .trees = c->trees, .files = c->req->files, .nfiles = c->req->nfiles};
	if (mounts_build(&mi, err, sizeof(err)) < 0) {
		ctl_say(c->ctl_w, "E %s\n", err);
		_exit(1);
	}
	trace_phase("init:mounts", c->start);
	/* setfsuid() in the mount setup cleared the parent-death signal (any
	 * change of credentials does): set it again, then make sure the
	 * supervisor did not die in between — it holds the sync pipe's write
	 * end until the run is over, so a hang-up means it is gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct pollfd alive = {.fd = c->sync_r, .events = POLLIN};
	if (poll(&alive, 1, 0) != 0)
		_exit(1);
	close(c->sync_r);
	/* Nobody inside may ptrace or read PID 1's memory (runc
	 * CVE-2019-5736: overwriting the runtime through /proc/1/exe). */
	prctl(PR_SET_DUMPABLE, 0);

	/* The command shares PID 1's memory until it execs (vfork
	 * semantics): no page tables to copy, and PID 1 waits meanwhile. */
	pid_t cmd = clone(command_entry, g_cmd_stack + sizeof(g_cmd_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (cmd < 0) {
		ctl_say(c->ctl_w, "E cannot start the command: %s\n", strerror(errno));
		_exit(1);
	}
	/* The command has exec'd (vfork semantics) and no longer reads the
	 * argv strings that may live in ward's command line. */
	hide_cmdline();
	/* PID 1 keeps only the control pipe: not even ward's own stdio (the
	 * caller's terminal, a server's log), unless it traces. */
	if (!getenv("WARD_TRACE")) {
		int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 1);
			dup2(dn, 2);
			close(dn);
		}
	}
	close(c->notify_w);
	close(c->out_w);
	close(c->err_w);
	if (c->in_r >= 0)
		close(c->in_r);
	if (c->rep_w >= 0)
		close(c->rep_w);
	if (c->req->stdin_fd > 2)
		close(c->req->stdin_fd);
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, 0);
		if (p == cmd) {
			trace_phase("init:cmd-exited", c->start);
			ctl_say(c->ctl_w, "X %d\n", st);
			_exit(0);
		}
		if (p < 0 && errno != EINTR)
			_exit(1);
	}
}

static void kill_tree(void *arg)
{
	/* PID 1's death takes the whole PID namespace with it */
	syscall(SYS_pidfd_send_signal, *(int *)arg, SIGKILL, NULL, 0);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

int backend_system_run(const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
		       double start)
{
	pthread_once(&g_once, prepare_once);
	trace_phase("prepare", start);
	int ret = -1;
	struct ward_identity id = {.lock_fd = -1, .slot = -1};
	struct plan plan = {0};
	struct ward_cgroup *cg = NULL;
	char **envp = NULL, **argv = NULL;
	int *trees = NULL;
	int sync_p[2] = {-1, -1}, ctl_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
	int in_p[2] = {-1, -1}, rep_p[2] = {-1, -1}, nsock[2] = {-1, -1};
	int pidfd = -1;
	pid_t pid = -1;
	char err[512];
	const char *write_paths[80];
	size_t nwrite = 0;

	if (!g_filter_ok) {
		snprintf(res->error, sizeof(res->error), "seccomp is not available: %s", g_filter_err);
		return -1;
	}
	if (userns_acquire(&id, err, sizeof(err)) < 0) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		return -1;
	}
	trace_phase("identity", start);
	if (plan_build(&plan, req, geteuid(), err, sizeof(err)) < 0) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		goto out;
	}
	trace_phase("plan", start);

	/* Landlock: writes stay allowed only where the sandbox has writable
	 * mounts. */
	write_paths[nwrite++] = "/tmp";
	write_paths[nwrite++] = "/work";
	write_paths[nwrite++] = "/dev/shm";
	for (size_t i = 0; i < req->nmounts && nwrite < 80; i++)
		if (!req->mounts[i].read_only)
			write_paths[nwrite++] =
				req->mounts[i].sandbox_path ? req->mounts[i].sandbox_path : req->mounts[i].host_path;

	trees = malloc(sizeof(int) * (plan.nops ? plan.nops : 1));
	if (!trees) {
		snprintf(res->error, sizeof(res->error), "out of memory");
		goto out;
	}
	for (size_t i = 0; i < plan.nops; i++) {
		trees[i] = -1;
		const struct mount_op *op = &plan.ops[i];
		if (op->kind != OP_BIND || !(op->flags & OPF_IDMAP))
			continue;
		/* Running as root, the sandbox's host uid owns nothing: map the
		 * directory's owner to it, so that writes come back owned by
		 * that owner.  Filesystems without idmapped mounts get a plain
		 * bind (the sandbox then writes only where its uid may). */
		struct stat st;
		if (stat(op->src, &st) < 0)
			continue;
		int ns = userns_idmap_fd(&id, st.st_uid, st.st_gid);
		if (ns >= 0) {
			int t = mounts_idmapped_tree(op->src, ns);
			close(ns);
			if (t >= 0)
				trees[i] = t;
		}
	}
	trace_phase("idmap", start);

	struct cg_limits lim = {.memory_bytes = req->limits.memory_mb << 20, .pids = req->limits.pids};
	char cgerr[256] = "";
	cg = cg_create(&lim, cgerr, sizeof(cgerr));
	trace_phase("cgroup", start);
	res->enforced.memory = cg && cg_limits_memory(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.pids = cg && cg_limits_pids(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.cpu = cg && cg_accounts_cpu(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.fsize = "rlimit";
	res->enforced.seccomp = g_no_seccomp ? "none" : "seccomp";
	res->enforced.landlock = landlock_name(g_landlock_abi);
	snprintf(res->enforced.user, sizeof(res->enforced.user), "userns-uid-%u", (unsigned)id.host_uid);

	argv = argv_build(req);
	envp = env_build(req, NULL);
	if (!argv || !envp) {
		snprintf(res->error, sizeof(res->error), "out of memory");
		goto out;
	}

	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(ctl_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
	    pipe2(err_p, O_CLOEXEC) < 0 || (req->stdin_set && pipe2(in_p, O_CLOEXEC) < 0) ||
	    (req->report_channel && pipe2(rep_p, O_CLOEXEC) < 0) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, nsock) < 0) {
		snprintf(res->error, sizeof(res->error), "cannot create pipes: %s", strerror(errno));
		goto out;
	}

	/* The command must be able to reopen its pipes (/dev/stdout,
	 * /proc/self/fd/N) like any program, but as root ward created them
	 * owned by a uid the sandbox does not map.  Anonymous pipes are
	 * reachable only through /proc/PID/fd, which needs ptrace access to a
	 * holder, so opening their mode up exposes them to nobody else. */
	int ends[] = {out_p[1], err_p[1], in_p[0], rep_p[1]};
	for (size_t i = 0; i < 4; i++)
		if (ends[i] >= 0 && fchmod(ends[i], 0666) < 0) {
			snprintf(res->error, sizeof(res->error), "cannot hand the pipes to the sandbox: %s",
				 strerror(errno));
			goto out;
		}

	struct child_ctx c = {
		.req = req,
		.plan = &plan,
		.trees = trees,
		.argv = argv,
		.envp = envp,
		.write_paths = write_paths,
		.nwrite = nwrite,
		.landlock_abi = g_landlock_abi,
		.use_as = !(cg && cg_limits_memory(cg)),
		.sync_r = sync_p[0],
		.ctl_w = ctl_p[1],
		.out_w = out_p[1],
		.err_w = err_p[1],
		.in_r = in_p[0],
		.rep_w = rep_p[1],
		.notify_w = nsock[1],
		.start = start,
	};

	/* A raw clone (no separate stack: the child runs on a copy of ours,
	 * like fork) into every namespace but the cgroup one, which PID 1
	 * enters after the supervisor has moved it into its cgroup. */
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			      CLONE_NEWNET | CLONE_PIDFD;
	/* On cgroup v2, PID 1 is born in its cgroup (clone3 CLONE_INTO_CGROUP,
	 * Linux 5.7): no attach afterwards, which is the costliest cgroup
	 * write.  Elsewhere, or on a kernel without it, a plain clone and an
	 * attach. */
	bool born_in_cg = false;
	pid = -1;
	if (cg_dirfd(cg) >= 0) {
		struct clone_args ca = {
			.flags = flags | CLONE_INTO_CGROUP,
			.pidfd = (uint64_t)(uintptr_t)&pidfd,
			.exit_signal = SIGCHLD,
			.cgroup = (uint64_t)cg_dirfd(cg),
		};
		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
		born_in_cg = pid >= 0;
		if (pid < 0 && errno != ENOSYS && errno != E2BIG && errno != EINVAL)
			born_in_cg = false; /* fall through to the plain clone, which reports */
	}
	if (pid < 0)
		pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, &pidfd, 0, 0);
	if (pid < 0) {
		int e = errno;
		if (e == EPERM || e == ENOSPC || e == EINVAL)
			snprintf(res->error, sizeof(res->error),
				 "cannot create the sandbox's namespaces: %s; user namespaces may be disabled on this "
				 "host: set kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or "
				 "run as root (see `ward doctor`)",
				 strerror(e));
		else
			snprintf(res->error, sizeof(res->error), "cannot create the sandbox: clone: %s", strerror(e));
		goto out;
	}
	if (pid == 0)
		_exit(init_main(&c));
	trace_phase("clone", start);

	close(sync_p[0]);
	sync_p[0] = -1;
	close(ctl_p[1]);
	ctl_p[1] = -1;
	close(out_p[1]);
	out_p[1] = -1;
	close(err_p[1]);
	err_p[1] = -1;
	if (in_p[0] >= 0) {
		close(in_p[0]);
		in_p[0] = -1;
	}
	if (rep_p[1] >= 0) {
		close(rep_p[1]);
		rep_p[1] = -1;
	}
	close(nsock[1]);
	nsock[1] = -1;
	for (size_t i = 0; i < plan.nops; i++)
		if (trees[i] >= 0) {
			close(trees[i]);
			trees[i] = -1;
		}

	if (userns_write_maps(pid, &id, err, sizeof(err)) < 0) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		goto kill;
	}
	trace_phase("uidmap", start);
	if (cg && !born_in_cg) {
		int r = cg_attach(cg, pid);
		if (r < 0) {
			snprintf(res->error, sizeof(res->error), "cannot move the sandbox into its cgroup: %s",
				 strerror(-r));
			goto kill;
		}
	}
	trace_phase("attach", start);
	if (write(sync_p[1], "g", 1) != 1) {
		snprintf(res->error, sizeof(res->error), "cannot start the sandbox: %s", strerror(errno));
		goto kill;
	}
	/* sync_p[1] stays open until the end: PID 1 checks it to know that we
	 * are alive (see init_main). */

	struct supervise s = {
		.pidfd = pidfd,
		.out_fd = out_p[0],
		.err_fd = err_p[0],
		.report_fd = rep_p[0],
		.ctl_fd = ctl_p[0],
		.stdin_fd = in_p[1],
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.timeout_s = req->limits.timeout_s,
		.cpu_s = req->limits.cpu_s > 0 ? req->limits.cpu_s : req->limits.timeout_s,
		.cg = cg,
		.kill_tree = kill_tree,
		.kill_arg = &pidfd,
		.output_limit = req->limits.output_limit,
		.live_fd = {req->capture ? -1 : req->stream_fd[0], req->capture ? -1 : req->stream_fd[1]},
		.report_limit = req->report_limit,
		.start = start,
		.cancel = req->cancel,
		.notify_sock = nsock[0],
	};
	out_p[0] = err_p[0] = rep_p[0] = ctl_p[0] = in_p[1] = nsock[0] = -1; /* supervise owns them now */
	supervise_run(&s);
	trace_phase("supervised", start);

	/* Reap PID 1 (its exit took every process of the sandbox with it). */
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	pid = -1;
	trace_phase("reaped", start);
	outcome_collect(&s, res);

	usage_from_rusage(&ru, &res->usage);
	if (cg) {
		struct cg_stats cs;
		if (cg_stats(cg, &cs) == 0) {
			o->oom_killed = cs.oom_killed;
			if (cs.cpu_usage_us) {
				res->usage.cpu_user_ms = cs.cpu_user_us / 1000;
				res->usage.cpu_sys_ms = cs.cpu_sys_us / 1000;
			}
			if (cs.memory_peak / 1024 > res->usage.max_rss_kb)
				res->usage.max_rss_kb = cs.memory_peak / 1024;
		}
	}
	o->timed_out = s.timed_out;
	o->cancelled = s.cancelled;
	o->seccomp_killed = s.seccomp_killed;
	o->cpu_exceeded = s.cpu_exceeded;

	int wst;
	if (sscanf(s.ctl, "X %d", &wst) == 1) {
		o->ran = true;
		o->wait_status = wst;
		ret = 0;
	} else if (s.timed_out || s.cpu_exceeded || s.seccomp_killed) {
		/* killed before PID 1 could report: still a timeout */
		o->ran = true;
		o->wait_status = SIGKILL;
		ret = 0;
	} else if (s.ctl[0] == 'E') {
		size_t n = strcspn(s.ctl + 2, "\n");
		snprintf(res->error, sizeof(res->error), "sandbox setup failed: %.*s", (int)n, s.ctl + 2);
	} else if (WIFSIGNALED(st) && o->oom_killed) {
		/* PID 1 itself was OOM-killed with the command */
		o->ran = true;
		o->wait_status = SIGKILL;
		ret = 0;
	} else {
		snprintf(res->error, sizeof(res->error), "the sandbox's init ended without a report (wait status %d)",
			 st);
	}
	goto out;

kill:
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	pid = -1;
out:
	if (pidfd >= 0)
		close(pidfd);
	close_pair(sync_p);
	close_pair(ctl_p);
	close_pair(out_p);
	close_pair(err_p);
	close_pair(in_p);
	close_pair(rep_p);
	close_pair(nsock);
	if (trees) {
		for (size_t i = 0; i < plan.nops; i++)
			if (trees[i] >= 0)
				close(trees[i]);
		free(trees);
	}
	cg_destroy(cg);
	trace_phase("teardown", start);
	userns_release(&id);
	plan_free(&plan);
	env_free(envp);
	free(argv);
	return ret;
}
