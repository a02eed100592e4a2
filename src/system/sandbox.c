/* system/sandbox.c — the `system` level: a run in its own user, mount, PID,
 * IPC, UTS, cgroup and network namespaces.
 *
 * Process model (as isolate's keeper/proxy/inside):
 *   supervisor  (ward, on the host): makes the plan, the cgroup, the pipes;
 *               clones PID 1, writes its uid/gid maps, attaches its cgroup,
 *               hands over the command (handover.c) — at once, or when a
 *               request comes for a sandbox built ahead (pool.c) — then
 *               supervises (output, timeout, CPU) and reaps it.
 *   PID 1       (ward's init, inside): builds the root (mounts.c), empties
 *               the bounding set, builds the command's Landlock ruleset and
 *               loads its seccomp filter (handing the listener out), reads the
 *               command, writes the caller's files into /work, forks the
 *               command, reaps every orphan, and when the command ends
 *               reports its status and exits — the kernel then kills every
 *               process left in the PID namespace.  Non-dumpable, holds no
 *               host fd, dies with the supervisor's thread (PDEATHSIG).
 *   command     (inside): setsid, fds 0-2 (and 3 = report channel), rlimits,
 *               drops to uid 1000 with no capabilities, no_new_privs,
 *               Landlock (PID 1's ruleset), execve — under PID 1's filter.
 * After the clone nothing allocates (the handover is read into an mmap): the
 * server calls this from many threads, and a fork of a multi-threaded
 * process may find malloc's locks held by a thread that does not exist in
 * the child.
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

#include "core/backend.h"
#include "system/handover.h"
#include "core/pathguard.h"
#include "core/plan.h"
#include "core/request.h"
#include "sandbox/caps.h"
#include "sandbox/cgroup.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/seccomp.h"
#include "sandbox/userns.h"
#include "system/spawner.h"

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
	if (g_arg_end <= g_arg_start)
		g_arg_start = g_arg_end = 0;
}

static void hide_cmdline(void)
{
	if (!g_arg_start)
		return;
	char *a = (char *)g_arg_start;
	size_t n = g_arg_end - g_arg_start;
	memset(a, 0, n);
	memcpy(a, "ward-init", n > 10 ? 9 : n - 1); /* NUL-terminated, in the area */
	/* With a last byte that is not NUL the kernel reads the area only up
	 * to its first NUL (as for setproctitle), so that the zeros after
	 * "ward-init" do not tell how long ward's command line was. */
	if (n > 10)
		a[n - 1] = ' ';
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

/* Everything PID 1 and the command need.  The shape (plan, fds, Landlock
 * paths) is fixed before the clone; the command itself (argv, environment,
 * rlimits, files) arrives later, over the sync pipe (handover.h). */
struct child_ctx {
	const struct plan *plan;
	int *trees;
	enum ward_net net;
	const char *const *write_paths;
	size_t nwrite;
	int landlock_abi;
	int landlock_fd;       /* the ruleset PID 1 built for the command, or -1 */
	int sync_r, ctl_w;     /* sync: supervisor -> PID 1; ctl: PID 1 -> supervisor */
	int notify_w;          /* PID 1 sends the seccomp listener here */
	int out_w, err_w, in_r, rep_w;
	double start;          /* for WARD_TRACE */
	char setup_err[400];   /* the command's last steps failed, and why (it shares PID 1's
				* memory until execve: PID 1 reads this when the clone returns) */
	struct handover ho;    /* filled by PID 1 from the sync pipe */
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
	syscall(SYS_close_range, ruleset >= 0 ? ruleset + 1 : first_closed, ~0u, 0);
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
	if (ruleset >= 0 && (r = ward_landlock_restrict(ruleset)) < 0)
		command_fail(c, "cannot restrict the command with Landlock: %s; see `ward doctor`", strerror(-r));
	trace_phase("cmd:landlock", c->start);
	/* The seccomp filter is PID 1's, inherited (init_main).  An execve
	 * that fails is the program's failure (127, 126), as in a shell. */
	exec_search(ho->argv, ho->envp);
	exec_fail_exit(ho->argv[0], errno);
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

/* The caller's files, into /work (PID 1's cwd), as the sandbox user (the
 * fsuid mounts_build left).  0, or -1 with the message sent. */
static int write_files(struct child_ctx *c)
{
	if (!c->ho.nfiles)
		return 0;
	int wfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0) {
		ctl_say(c->ctl_w, "E cannot open /work to write files: %s\n", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < c->ho.nfiles; i++) {
		const struct ward_file *f = &c->ho.files[i];
		int r = pathguard_write(wfd, f->path, f->data, f->len, f->mode ? f->mode : 0644);
		if (r < 0) {
			ctl_say(c->ctl_w, "E cannot write file '%s' into /work: %s\n", f->path, strerror(-r));
			close(wfd);
			return -1;
		}
	}
	close(wfd);
	return 0;
}

/* PID 1.  Never returns. */
static int init_main(struct child_ctx *c)
{
	/* If the supervisor's thread dies, so do we (and with us, the whole
	 * PID namespace). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Its name in ps, on the host and inside, as its command line (see
	 * hide_cmdline). */
	prctl(PR_SET_NAME, "ward-init");
	/* PID 1 is a copy of ward: of a server, with its listening socket,
	 * its clients' connections and its log.  Keep only what the run
	 * needs, so that no host fd lives inside and no connection of the
	 * server's is held open by a sandbox. */
	/* Not even ward's own stdio (the caller's terminal, a server's log,
	 * which a sandbox built ahead would hold for as long as it waits):
	 * 0-2 become /dev/null, unless WARD_TRACE wants stderr.  The run's
	 * own fds move above 2 first (a caller started with 0-2 closed gets
	 * pipes there). */
	int *mine[] = {&c->sync_r, &c->ctl_w, &c->notify_w, &c->out_w, &c->err_w, &c->in_r, &c->rep_w};
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (*mine[i] >= 0 && *mine[i] <= 2)
			*mine[i] = fcntl(*mine[i], F_DUPFD_CLOEXEC, 3);
	for (size_t i = 0; i < c->plan->nops; i++)
		if (c->trees[i] >= 0 && c->trees[i] <= 2)
			c->trees[i] = fcntl(c->trees[i], F_DUPFD_CLOEXEC, 3);
	int keep[160];
	size_t nkeep = 0;
	bool trace = getenv("WARD_TRACE") != NULL;
	if (trace)
		keep[nkeep++] = 2;
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (*mine[i] >= 0)
			keep[nkeep++] = *mine[i];
	for (size_t i = 0; i < c->plan->nops && nkeep < sizeof(keep) / sizeof(keep[0]); i++)
		if (c->trees[i] >= 0)
			keep[nkeep++] = c->trees[i];
	close_all_but(keep, nkeep);
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; dn >= 0 && fd <= 2; fd++)
		if (fd != 2 || !trace)
			dup2(dn, fd);
	if (dn > 2)
		close(dn);
	/* Handlers ward installed (a server's SIGTERM, the CLI's SIGINT) would
	 * let processes inside signal their init; with every disposition
	 * default, the kernel drops such signals. */
	reset_signals();
	/* 'g': go; 'p': go, and say "R" when ready (a sandbox built ahead). */
	char go;
	if (read(c->sync_r, &go, 1) != 1)
		_exit(1); /* the supervisor is gone, or said no */
	/* Nobody may ptrace or read PID 1's memory (runc CVE-2019-5736:
	 * overwriting the runtime through /proc/1/exe), nor the copy of the
	 * server it is (tokens, other requests' bodies) while it waits in a
	 * pool.  Only now: an unprivileged supervisor writes the uid map
	 * through /proc/PID, which a non-dumpable process would deny it. */
	prctl(PR_SET_DUMPABLE, 0);

	char err[512] = "";
	if (unshare(CLONE_NEWCGROUP) < 0) {
		ctl_say(c->ctl_w, "E cannot create the cgroup namespace: %s\n", strerror(errno));
		_exit(1);
	}
	if (sethostname(c->plan->hostname, strlen(c->plan->hostname)) < 0 || setdomainname("ward", 4) < 0) {
		ctl_say(c->ctl_w, "E cannot set the hostname: %s\n", strerror(errno));
		_exit(1);
	}
	if (c->net == WARD_NET_LOOPBACK && loopback_up() < 0) {
		ctl_say(c->ctl_w, "E cannot bring up the loopback interface: %s\n", strerror(errno));
		_exit(1);
	}
	trace_phase("init:ns", c->start);
	struct mounts_input mi = {.ops = c->plan->ops, .nops = c->plan->nops, .trees = c->trees};
	if (mounts_build(&mi, err, sizeof(err)) < 0) {
		ctl_say(c->ctl_w, "E %s\n", err);
		_exit(1);
	}
	trace_phase("init:mounts", c->start);
	int br = caps_drop_bounding();
	if (br < 0) {
		ctl_say(c->ctl_w, "E cannot empty the capability bounding set: %s\n", strerror(-br));
		_exit(1);
	}
	/* The command's Landlock ruleset, ready before it is asked for: the
	 * command only restricts itself with it.  Kept above the fds the
	 * command arranges (0-5). */
	c->landlock_fd = -1;
	if (c->landlock_abi > 0) {
		int rs = ward_landlock_ruleset(c->landlock_abi, c->write_paths, c->nwrite);
		int e = rs < 0 ? -rs : 0;
		if (rs >= 0) {
			c->landlock_fd = fcntl(rs, F_DUPFD_CLOEXEC, 16);
			if (c->landlock_fd < 0)
				e = errno;
			close(rs);
		}
		if (c->landlock_fd < 0) {
			ctl_say(c->ctl_w, "E cannot build the Landlock ruleset: %s\n", strerror(e));
			_exit(1);
		}
	}
	trace_phase("init:landlock", c->start);
	/* The command's seccomp filter, on PID 1 itself, so that the command
	 * inherits it instead of loading it on a request's path.  From here
	 * PID 1 makes only calls the filter allows (the files for /work go
	 * through pathguard's openat fallback, openat2 being ENOSYS), and its
	 * fatal rules notify a listener that goes to the supervisor now; the
	 * supervisor takes it from the socket when it supervises the run, and
	 * names a blocked call before it kills the sandbox. */
	if (!g_no_seccomp) {
		int lis = ward_seccomp_apply_listener(&g_filter);
		int sr = lis < 0 ? lis : ward_seccomp_send_listener(c->notify_w, lis);
		if (lis >= 0)
			close(lis);
		if (sr < 0) {
			ctl_say(c->ctl_w, "E cannot load the seccomp filter: %s\n", strerror(-sr));
			_exit(1);
		}
	}
	close(c->notify_w);
	c->notify_w = -1;
	trace_phase("init:seccomp", c->start);
	if (go == 'p')
		ctl_say(c->ctl_w, "R\n");
	/* Wait for the command.  End-of-file: the sandbox was discarded. */
	int r = handover_read(c->sync_r, &c->ho);
	if (r == 1)
		_exit(0);
	if (r < 0) {
		ctl_say(c->ctl_w, "E cannot receive the command: %s\n", strerror(-r));
		_exit(1);
	}
	trace_phase("init:handover", c->start);
	if (write_files(c) < 0)
		_exit(1);
	/* setfsuid() in the mount setup cleared the parent-death signal (any
	 * change of credentials does): set it again, then make sure the
	 * supervisor did not die in between — it holds the sync pipe's write
	 * end until the run is over and sends nothing more, so anything
	 * readable there (a hang-up) means it is gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct pollfd alive = {.fd = c->sync_r, .events = POLLIN};
	if (poll(&alive, 1, 0) != 0)
		_exit(1);
	close(c->sync_r);
	/* A credential change (setfsuid in the mounts) sets dumpability to
	 * fs.suid_dumpable, which a host may have raised: clear it again. */
	prctl(PR_SET_DUMPABLE, 0);

	/* ward's command line (which a server's options fill) goes before the
	 * sandbox's first process exists: /proc/1/cmdline is world-readable.
	 * Not earlier: the plan and the Landlock paths may point into it. */
	hide_cmdline();
	/* The command shares PID 1's memory until it execs (vfork
	 * semantics): no page tables to copy, and PID 1 waits meanwhile. */
	c->setup_err[0] = 0;
	pid_t cmd = clone(command_entry, g_cmd_stack + sizeof(g_cmd_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (cmd < 0) {
		ctl_say(c->ctl_w, "E cannot start the command: %s\n", strerror(errno));
		_exit(1);
	}
	/* It has exec'd, or it has exited saying why its setup failed. */
	if (c->setup_err[0]) {
		ctl_say(c->ctl_w, "E %s\n", c->setup_err);
		_exit(1);
	}
	/* PID 1 keeps only the control pipe. */
	close(c->out_w);
	close(c->err_w);
	if (c->in_r >= 0)
		close(c->in_r);
	if (c->rep_w >= 0)
		close(c->rep_w);
	if (c->landlock_fd >= 0)
		close(c->landlock_fd);
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

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* One sandbox, supervisor side. */
struct sandbox {
	struct ward_identity id;
	struct plan plan;
	struct ward_cgroup *cg;
	pid_t pid;
	int pidfd;
	bool ahead;            /* built before its request (a pool's) */
	struct cg_limits lim;  /* the cgroup's limits now */
	int sync_w;            /* "g"/"p", then the handover; held open until the end */
	int ctl_r, out_r, err_r, in_w, rep_r, nsock;
};

/* Binds nothing of the host's but the system directories every sandbox
 * has (no workdir, mounts or rootfs): the shape a pool or a spawner helper
 * builds without the caller's paths. */
static bool binds_nothing(const struct ward_request *r)
{
	return !r->workdir && !r->rootfs && r->nmounts == 0;
}

bool sandbox_same_shape(const struct ward_request *a, const struct ward_request *b)
{
	return a->isolation == WARD_ISO_SYSTEM && b->isolation == WARD_ISO_SYSTEM && binds_nothing(a) &&
	       binds_nothing(b) && a->net == b->net &&
	       a->limits.tmp_size_mb == b->limits.tmp_size_mb;
}

void sandbox_destroy(struct sandbox *sb)
{
	if (!sb)
		return;
	if (sb->pid > 0) {
		if (sb->pidfd >= 0)
			kill_tree(&sb->pidfd);
		while (waitpid(sb->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&sb->pidfd);
	int *fds[] = {&sb->sync_w, &sb->ctl_r, &sb->out_r, &sb->err_r, &sb->in_w, &sb->rep_r, &sb->nsock};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close_fd(fds[i]);
	cg_destroy(sb->cg);
	userns_release(&sb->id);
	plan_free(&sb->plan);
	free(sb);
}

/* The pipes of a build, both ends, until the supervisor's ends move into
 * the sandbox. */
struct build_fds {
	int sync[2], ctl[2], out[2], err[2], in[2], rep[2], nsock[2];
};

static void build_fds_close(struct build_fds *f, int *trees, size_t ntrees)
{
	int *all = &f->sync[0];
	for (size_t i = 0; i < sizeof(*f) / sizeof(int); i++)
		close_fd(&all[i]);
	if (trees)
		for (size_t i = 0; i < ntrees; i++)
			close_fd(&trees[i]);
	free(trees);
}

/* What PID 1 said on the control pipe when its setup failed ("E why"),
 * as an error message; false when it said something else. */
static bool setup_error(const char *ctl, char *err, size_t errlen)
{
	if (ctl[0] != 'E')
		return false;
	size_t n = strcspn(ctl + 2, "\n");
	snprintf(err, errlen, "sandbox setup failed: %.*s", (int)n, ctl + 2);
	return true;
}

/* Wait (bounded) for a sandbox built ahead to say "R"; 0 or -1 (err set). */
static int wait_ready(struct sandbox *sb, char *err, size_t errlen)
{
	char buf[600];
	size_t got = 0;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = {.fd = sb->ctl_r, .events = POLLIN};
		int n = poll(&p, 1, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t k = read(sb->ctl_r, buf + got, sizeof(buf) - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		buf[got] = 0;
		if (strchr(buf, '\n'))
			break;
	}
	buf[got] = 0;
	if (strcmp(buf, "R\n") == 0)
		return 0;
	if (!setup_error(buf, err, errlen))
		snprintf(err, errlen, "the sandbox's init did not get ready");
	return -1;
}

/* Clone PID 1 for c: a raw clone (no separate stack: the child runs on a
 * copy of ours, like fork) into every namespace but the cgroup one, which
 * PID 1 enters after the supervisor has moved it into its cgroup.  On
 * cgroup v2 (cgfd >= 0), PID 1 is born in its cgroup (clone3
 * CLONE_INTO_CGROUP, Linux 5.7): no attach afterwards, which is the
 * costliest cgroup write.  Elsewhere, or on a kernel without it, a plain
 * clone and an attach.  The pid, or -errno. */
static pid_t clone_pid1(struct child_ctx *c, int cgfd, unsigned long extra, int *pidfd, bool *born_in_cg)
{
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			      CLONE_NEWNET | CLONE_PIDFD | extra;
	*born_in_cg = false;
	pid_t pid = -1;
	if (cgfd >= 0) {
		struct clone_args ca = {
			.flags = flags | CLONE_INTO_CGROUP,
			.pidfd = (uint64_t)(uintptr_t)pidfd,
			.exit_signal = SIGCHLD,
			.cgroup = (uint64_t)cgfd,
		};
		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
		*born_in_cg = pid >= 0;
	}
	if (pid < 0)
		pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, pidfd, 0, 0);
	if (pid == 0)
		_exit(init_main(c));
	return pid < 0 ? -errno : pid;
}

/* A loopback's TCP buffers are kernel memory that only a memory cgroup
 * charges (no rlimit bounds them): without one, a sandbox could fill the
 * host's TCP memory (and push every socket on it into memory pressure). */
static void loopback_refused(const struct ward_cgroup *cg, const char *cgerr, char *err, size_t errlen)
{
	if (!cg)
		snprintf(err, errlen,
			 "--net loopback needs a memory cgroup to charge the sandbox's socket buffers to: use --net "
			 "none, or run ward as root or in a delegated cgroup (here ward has none: %.200s)",
			 cgerr[0] ? cgerr : "no usable cgroups");
	else
		snprintf(err, errlen,
			 "--net loopback needs the sandbox's socket buffers charged to its memory cgroup, which this "
			 "kernel does not do (cgroup v1 without memory.kmem.tcp.limit_in_bytes, or v2 booted with "
			 "cgroup.memory=nosocket; see `ward doctor`); use --net none");
}

static void clone_error(int e, char *err, size_t errlen)
{
	if (e == EPERM || e == ENOSPC || e == EINVAL)
		snprintf(err, errlen,
			 "cannot create the sandbox's namespaces: %s; user namespaces may be disabled on this "
			 "host: set kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or "
			 "run as root (see `ward doctor`)",
			 strerror(e));
	else
		snprintf(err, errlen, "cannot create the sandbox: clone: %s", strerror(e));
}

/* The Landlock write paths of a sandbox: its writable mounts.  Returns how
 * many (at most max). */
static size_t landlock_write_paths(const struct ward_request *shape, const char **out, size_t max)
{
	size_t n = 0;
	out[n++] = "/tmp";
	out[n++] = "/work";
	out[n++] = "/dev/shm";
	for (size_t i = 0; i < shape->nmounts && n < max; i++)
		if (!shape->mounts[i].read_only)
			out[n++] = shape->mounts[i].sandbox_path ? shape->mounts[i].sandbox_path
								 : shape->mounts[i].host_path;
	return n;
}

/* In a spawner helper, the plain shape's plan for the last /tmp size asked,
 * kept: a helper writes as little memory as it can between clones, since
 * each page it writes after one is first copied (copy-on-write).  Made
 * again after a second, so that the host's directories are looked at about
 * as often as they matter. */
#define SPAWN_PLAN_TTL 1.0
static struct {
	bool ok;
	uint64_t tmp_size_mb;
	double made;
	struct plan plan;
	int *trees;        /* all -1: the plain shape binds nothing held */
} g_spawn_plan;

static const struct plan *spawn_plan(uint64_t tmp_size_mb)
{
	double now = monotonic_now();
	if (g_spawn_plan.ok && g_spawn_plan.tmp_size_mb == tmp_size_mb && now - g_spawn_plan.made < SPAWN_PLAN_TTL)
		return &g_spawn_plan.plan;
	if (g_spawn_plan.ok) {
		plan_free(&g_spawn_plan.plan);
		free(g_spawn_plan.trees);
		g_spawn_plan.ok = false;
	}
	struct ward_request shape;
	memset(&shape, 0, sizeof(shape));
	shape.limits.tmp_size_mb = tmp_size_mb;
	shape.stdin_fd = -1;
	char err[256];
	if (plan_build(&g_spawn_plan.plan, &shape, geteuid(), err, sizeof(err)) < 0)
		return NULL;
	size_t n = g_spawn_plan.plan.nops;
	g_spawn_plan.trees = malloc(sizeof(int) * (n ? n : 1));
	if (!g_spawn_plan.trees) {
		plan_free(&g_spawn_plan.plan);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		g_spawn_plan.trees[i] = -1;
	g_spawn_plan.tmp_size_mb = tmp_size_mb;
	g_spawn_plan.made = now;
	g_spawn_plan.ok = true;
	return &g_spawn_plan.plan;
}

/* In a spawner helper (spawner.h): PID 1 of the plain shape, as the
 * caller's child. */
pid_t spawn_pid1(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg)
{
	pthread_once(&g_once, prepare_once);
	if (r->net != WARD_NET_NONE && r->net != WARD_NET_LOOPBACK)
		return -EINVAL;
	if (fds[SP_SYNC] < 0 || fds[SP_CTL] < 0 || fds[SP_OUT] < 0 || fds[SP_ERR] < 0 || fds[SP_NOTIFY] < 0)
		return -EINVAL;
	const struct plan *plan = spawn_plan(r->tmp_size_mb);
	if (!plan)
		return -ENOMEM;
	const struct ward_request plain = {0};
	const char *write_paths[3];
	size_t nwrite = landlock_write_paths(&plain, write_paths, 3);
	struct child_ctx c = {
		.plan = plan,
		.trees = g_spawn_plan.trees,
		.net = (enum ward_net)r->net,
		.write_paths = write_paths,
		.nwrite = nwrite,
		.landlock_abi = g_landlock_abi,
		.sync_r = fds[SP_SYNC],
		.ctl_w = fds[SP_CTL],
		.out_w = fds[SP_OUT],
		.err_w = fds[SP_ERR],
		.in_r = fds[SP_IN],
		.rep_w = fds[SP_REP],
		.notify_w = fds[SP_NOTIFY],
		.start = r->start,
	};
	/* CLONE_PARENT: PID 1 is the caller's child, not ours. */
	return clone_pid1(&c, fds[SP_CGROUP], CLONE_PARENT, pidfd, born_in_cg);
}

static struct sandbox *build(const struct ward_request *shape, bool ahead, double start, bool via_spawner,
			     bool *no_helper, char *err, size_t errlen);

/* Running as root, the sandbox's host uid owns nothing: a writable bind
 * maps the directory's owner to it, so that writes come back owned by that
 * owner.  The tree, or -1: a filesystem without idmapped mounts gets a
 * plain bind (the sandbox then writes only where its uid may). */
static int idmapped_tree(const struct ward_identity *id, const struct mount_op *op)
{
	int src = mounts_held_fd(op->src, NULL) != -1 ? mounts_open_source(op) : open(op->src, O_PATH | O_CLOEXEC);
	if (src < 0)
		return -1;
	int t = -1;
	struct stat st;
	if (fstat(src, &st) == 0) {
		int ns = userns_idmap_fd(id, st.st_uid, st.st_gid);
		if (ns >= 0) {
			t = mounts_idmapped_tree(src, ns);
			close(ns);
		}
	}
	close(src);
	return t < 0 ? -1 : t;
}

struct sandbox *sandbox_build(const struct ward_request *shape, bool ahead, double start, char *err, size_t errlen)
{
	bool no_helper = false;
	struct sandbox *sb = build(shape, ahead, start, true, &no_helper, err, errlen);
	if (!sb && no_helper)
		sb = build(shape, ahead, start, false, &no_helper, err, errlen);
	return sb;
}

static struct sandbox *build(const struct ward_request *shape, bool ahead, double start, bool via_spawner,
			     bool *no_helper, char *err, size_t errlen)
{
	pthread_once(&g_once, prepare_once);
	trace_phase("prepare", start);
	if (!g_filter_ok) {
		snprintf(err, errlen, "seccomp is not available: %s", g_filter_err);
		return NULL;
	}
	struct sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sb->id = (struct ward_identity){.lock_fd = -1, .slot = -1};
	sb->pid = -1;
	sb->pidfd = sb->sync_w = sb->ctl_r = sb->out_r = sb->err_r = sb->in_w = sb->rep_r = sb->nsock = -1;
	sb->ahead = ahead;
	/* Through a helper (spawner.h) when the caller started them and the
	 * shape is plain: the helper makes the plan itself (and binds nothing
	 * held), so none is made here.  Else, or when no helper takes it (the
	 * build starts over: sandbox_build), a clone of our own. */
	bool spawn = via_spawner && binds_nothing(shape) && spawner_alive();

	int *trees = NULL;
	struct build_fds f;
	memset(&f, -1, sizeof(f));
	int *sync_p = f.sync, *ctl_p = f.ctl, *out_p = f.out, *err_p = f.err, *in_p = f.in, *rep_p = f.rep,
	    *nsock = f.nsock;
	const char *write_paths[80];
	size_t nwrite = 0;

	if (userns_acquire(&sb->id, err, errlen) < 0)
		goto fail;
	trace_phase("identity", start);
	if (!spawn && plan_build(&sb->plan, shape, geteuid(), err, errlen) < 0)
		goto fail;
	trace_phase("plan", start);

	/* Landlock: writes stay allowed only where the sandbox has writable
	 * mounts. */
	nwrite = landlock_write_paths(shape, write_paths, 80);

	const struct plan *plan = &sb->plan;
	trees = malloc(sizeof(int) * (plan->nops ? plan->nops : 1));
	if (!trees) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < plan->nops; i++)
		trees[i] = -1;
	for (size_t i = 0; i < plan->nops; i++) {
		struct mount_op *op = &sb->plan.ops[i];
		if (op->kind != OP_BIND)
			continue;
		if (op->flags & OPF_IDMAP)
			trees[i] = idmapped_tree(&sb->id, op);
		/* A source the caller holds open (ward serve's --allow-root
		 * checks) is cloned here, where that fd lives: PID 1 keeps none
		 * of the caller's fds, and lives in a mount namespace where
		 * they cannot be cloned.  Without the right to clone mounts
		 * here (not root), PID 1 binds its path instead, pinned to the
		 * descriptor's inode: never a symlink swapped in. */
		if (trees[i] < 0 && mounts_held_fd(op->src, NULL) != -1) {
			trees[i] = geteuid() == 0 ? mounts_held_tree(op) : -EPERM;
			if (trees[i] == -EPERM) {
				trees[i] = -1;
				if (plan_pin_held(&sb->plan, op, err, errlen) < 0)
					goto fail;
			} else if (trees[i] < 0) {
				snprintf(err, errlen, "cannot bind '%s': %s", op->src,
					 trees[i] == -ELOOP ? "a symlink lies on the way inside it, which is refused"
							    : strerror(-trees[i]));
				goto fail;
			}
		}
	}
	trace_phase("idmap", start);

	/* Built ahead, the cgroup has the shape's (default) limits; a request
	 * that asks for others gets them when it takes the sandbox. */
	sb->lim = (struct cg_limits){.memory_bytes = shape->limits.memory_mb << 20, .pids = shape->limits.pids};
	char cgerr[256] = "";
	sb->cg = cg_create(&sb->lim, cgerr, sizeof(cgerr));
	trace_phase("cgroup", start);
	if (shape->net == WARD_NET_LOOPBACK && !cg_charges_sockets(sb->cg)) {
		loopback_refused(sb->cg, cgerr, err, errlen);
		goto fail;
	}

	/* stdin: a pipe that the supervisor feeds (the request's bytes, or
	 * what it relays from the caller's fd), never the caller's fd itself
	 * (a terminal inside could be reconfigured, or written past the
	 * output caps). */
	bool want_in = ahead || shape->stdin_set || shape->stdin_fd >= 0, want_rep = ahead || shape->report_channel;
	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(ctl_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
	    pipe2(err_p, O_CLOEXEC) < 0 || (want_in && pipe2(in_p, O_CLOEXEC) < 0) ||
	    (want_rep && pipe2(rep_p, O_CLOEXEC) < 0) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, nsock) < 0) {
		snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
		goto fail;
	}

	/* The command must be able to reopen its pipes (/dev/stdout,
	 * /proc/self/fd/N) like any program, but as root ward created them
	 * owned by a uid the sandbox does not map.  Anonymous pipes are
	 * reachable only through /proc/PID/fd, which needs ptrace access to a
	 * holder, so opening their mode up exposes them to nobody else. */
	int ends[] = {out_p[1], err_p[1], in_p[0], rep_p[1]};
	for (size_t i = 0; i < 4; i++)
		if (ends[i] >= 0 && fchmod(ends[i], 0666) < 0) {
			snprintf(err, errlen, "cannot hand the pipes to the sandbox: %s",
				 strerror(errno));
			goto fail;
		}

	struct child_ctx c = {
		.plan = plan,
		.trees = trees,
		.net = shape->net,
		.write_paths = write_paths,
		.nwrite = nwrite,
		.landlock_abi = g_landlock_abi,
		.sync_r = sync_p[0],
		.ctl_w = ctl_p[1],
		.out_w = out_p[1],
		.err_w = err_p[1],
		.in_r = in_p[0],
		.rep_w = rep_p[1],
		.notify_w = nsock[1],
		.start = start,
	};

	bool born_in_cg = false;
	pid_t pid;
	if (spawn) {
		struct spawn_req sr = {.net = shape->net, .tmp_size_mb = shape->limits.tmp_size_mb, .start = start};
		int sfds[SP_NFDS] = {sync_p[0], ctl_p[1], out_p[1], err_p[1], in_p[0], rep_p[1], nsock[1], cg_dirfd(sb->cg)};
		pid = spawner_clone(&sr, sfds, &sb->pidfd, &born_in_cg);
		if (pid == -EPIPE || pid == -ENOSYS) {
			*no_helper = true;
			snprintf(err, errlen, "no sandbox spawner helper is alive");
			goto fail;
		}
	} else {
		pid = clone_pid1(&c, cg_dirfd(sb->cg), 0, &sb->pidfd, &born_in_cg);
	}
	if (pid < 0) {
		clone_error(-pid, err, errlen);
		goto fail;
	}
	sb->pid = pid;
	trace_phase(spawn ? "spawn" : "clone", start);

	sb->sync_w = sync_p[1];
	sb->ctl_r = ctl_p[0];
	sb->out_r = out_p[0];
	sb->err_r = err_p[0];
	sb->in_w = in_p[1];
	sb->rep_r = rep_p[0];
	sb->nsock = nsock[0];
	sync_p[1] = ctl_p[0] = out_p[0] = err_p[0] = in_p[1] = rep_p[0] = nsock[0] = -1;
	build_fds_close(&f, trees, plan->nops);
	trees = NULL;

	if (userns_write_maps(pid, &sb->id, err, errlen) < 0)
		goto fail;
	trace_phase("uidmap", start);
	if (sb->cg && !born_in_cg) {
		int r = cg_attach(sb->cg, pid);
		if (r < 0) {
			snprintf(err, errlen, "cannot move the sandbox into its cgroup: %s",
				 strerror(-r));
			goto fail;
		}
	}
	trace_phase("attach", start);
	if (write(sb->sync_w, ahead ? "p" : "g", 1) != 1) {
		snprintf(err, errlen, "cannot start the sandbox: %s", strerror(errno));
		goto fail;
	}
	if (ahead && wait_ready(sb, err, errlen) < 0)
		goto fail;
	return sb;

fail:
	build_fds_close(&f, trees, sb->plan.nops);
	sandbox_destroy(sb);
	return NULL;
}

/* Encode req's command and write it to PID 1.  0, or -errno (-EPIPE: PID 1
 * is gone). */
static int send_handover(struct sandbox *sb, const struct ward_request *req, bool with_as)
{
	char **argv = argv_build(req);
	char **envp = env_build(req, NULL);
	int r = -ENOMEM;
	if (argv && envp) {
		struct handover ho = {
			.flags = (req->stdin_set || req->stdin_fd >= 0 ? HO_STDIN_PIPE : 0) |
				 (req->report_channel ? HO_REPORT : 0) | (with_as ? HO_WITH_AS : 0),
			.limits = req->limits,
			.argv = argv,
			.envp = envp,
			.files = (struct ward_file *)req->files,
			.nfiles = req->nfiles,
		};
		size_t len = 0;
		char *buf = handover_encode(&ho, &len);
		if (!buf)
			r = -E2BIG;
		else {
			/* PID 1 reads as we write: a large body (files) does not
			 * need to fit in the pipe. */
			/* A library must not die of SIGPIPE when PID 1 is gone:
			 * block it for this thread and take back the one the
			 * write raised. */
			sigset_t pipe_set, old;
			sigemptyset(&pipe_set);
			sigaddset(&pipe_set, SIGPIPE);
			pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
			r = 0;
			for (size_t off = 0; off < len;) {
				ssize_t n = write(sb->sync_w, buf + off, len - off);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					r = -errno;
					break;
				}
				off += (size_t)n;
			}
			if (r == -EPIPE && !sigismember(&old, SIGPIPE)) {
				struct timespec zero = {0, 0};
				sigtimedwait(&pipe_set, NULL, &zero);
			}
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			free(buf);
		}
	}
	env_free(envp);
	free(argv);
	return r;
}

int sandbox_run(struct sandbox *sb, const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
		bool defer, double start)
{
	struct ward_cgroup *cg = sb->cg;
	struct cg_limits lim = {.memory_bytes = req->limits.memory_mb << 20, .pids = req->limits.pids};
	if (cg && (lim.memory_bytes != sb->lim.memory_bytes || lim.pids != sb->lim.pids)) {
		char cgerr[256];
		if (cg_set_limits(cg, &lim, cgerr, sizeof(cgerr)) < 0)
			return SANDBOX_STALE; /* a fresh sandbox reports what happens */
		sb->lim = lim;
	}
	res->enforced.memory = cg && cg_limits_memory(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.pids = cg && cg_limits_pids(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.cpu = cg && cg_accounts_cpu(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.fsize = "rlimit";
	res->enforced.seccomp = g_no_seccomp ? "none" : "seccomp";
	res->enforced.landlock = landlock_name(g_landlock_abi);
	res->enforced.tcp_memory = cg_sockets_mechanism(cg);
	snprintf(res->enforced.user, sizeof(res->enforced.user), "userns-uid-%u", (unsigned)sb->id.host_uid);

	int r = send_handover(sb, req, !(cg && cg_limits_memory(cg)));
	trace_phase("handover", start);
	if (r == -EPIPE && sb->ahead)
		return SANDBOX_STALE; /* died while it waited: the caller builds another */
	if (r < 0 && r != -EPIPE) {
		/* -EPIPE on a fresh sandbox: PID 1 failed its setup and said
		 * why on the control pipe, which supervise reads. */
		snprintf(res->error, sizeof(res->error), "cannot hand the command to the sandbox: %s", strerror(-r));
		return -1;
	}
	/* sync_w stays open until the end: PID 1 checks it to know that we
	 * are alive (see init_main). */
	if (!req->stdin_set && req->stdin_fd < 0)
		close_fd(&sb->in_w);
	if (!req->report_channel)
		close_fd(&sb->rep_r);

	struct supervise s = {
		.pidfd = sb->pidfd,
		.out_fd = sb->out_r,
		.err_fd = sb->err_r,
		.report_fd = sb->rep_r,
		.ctl_fd = sb->ctl_r,
		.stdin_fd = sb->in_w,
		.stdin_src = req->stdin_set ? -1 : req->stdin_fd,
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.timeout_s = req->limits.timeout_s,
		.cpu_s = req->limits.cpu_s > 0 ? req->limits.cpu_s : req->limits.timeout_s,
		.cg = cg,
		.kill_tree = kill_tree,
		.kill_arg = &sb->pidfd,
		.output_limit = req->limits.output_limit,
		.live_fd = {req->capture ? -1 : req->stream_fd[0], req->capture ? -1 : req->stream_fd[1]},
		.report_limit = req->report_limit,
		.start = start,
		.cancel = req->cancel,
		.notify_sock = sb->nsock,
	};
	/* Deferred: once PID 1 reports the command's status, the result is
	 * complete (usage comes from the cgroup); PID 1's exit, the
	 * namespaces' teardown and the reaping happen after the caller has
	 * its answer (sandbox_destroy, from the pool's thread). */
	s.end_at_report = defer && cg && cg_accounts_cpu(cg);
	sb->out_r = sb->err_r = sb->rep_r = sb->ctl_r = sb->in_w = sb->nsock = -1; /* supervise owns them now */
	supervise_run(&s);
	trace_phase("supervised", start);

	/* Reap PID 1 (its exit took every process of the sandbox with it). */
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	if (!(s.end_at_report && s.ctl[0] == 'X')) {
		while (wait4(sb->pid, &st, 0, &ru) < 0 && errno == EINTR)
			;
		sb->pid = -1;
		trace_phase("reaped", start);
	}
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
		return 0;
	}
	if (s.timed_out || s.cpu_exceeded || s.seccomp_killed || (WIFSIGNALED(st) && o->oom_killed)) {
		/* killed before PID 1 could report: still a timeout (or PID 1
		 * itself was OOM-killed with the command) */
		o->ran = true;
		o->wait_status = SIGKILL;
		return 0;
	}
	if (!setup_error(s.ctl, res->error, sizeof(res->error)))
		snprintf(res->error, sizeof(res->error), "the sandbox's init ended without a report (wait status %d)",
			 st);
	return -1;
}

int backend_system_run(struct ward_pool *pool, const struct ward_request *req, struct ward_result *res,
		       struct backend_outcome *o, double start)
{
	if (pool)
		pool_busy(pool, +1);
	/* With a pool, its thread tears sandboxes down after the answer. */
	bool defer = pool != NULL;
	int r = SANDBOX_STALE;
	struct sandbox *sb = pool ? pool_take(pool, req) : NULL;
	if (sb) {
		r = sandbox_run(sb, req, res, o, defer, start);
		if (!pool_retire(pool, sb))
			sandbox_destroy(sb);
	}
	if (r == SANDBOX_STALE) {
		sb = sandbox_build(req, false, start, res->error, sizeof(res->error));
		r = -1;
		if (sb) {
			r = sandbox_run(sb, req, res, o, defer, start);
			if (!defer || !pool_retire(pool, sb))
				sandbox_destroy(sb);
		}
	}
	trace_phase("teardown", start);
	if (pool)
		pool_busy(pool, -1);
	return r == SANDBOX_STALE ? -1 : r;
}
