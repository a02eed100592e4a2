/* init.c — the sandbox's PID 1 (ward's init), from its clone to its exit.
 *
 * Runs inside the sandbox's new namespaces as a clone of the supervisor's
 * process, which may be a server with many threads: so it allocates nothing
 * (the handover is read into an mmap), keeps no fd of the host's but the
 * run's own, and once its seccomp filter is loaded makes only the calls that
 * filter allows.  It never returns to ward's code: it exits when the command
 * ends or at its first failure.  What it says goes up the control pipe, one
 * line each: "R" (ready: a sandbox built ahead), "X STATUS" (the command
 * ended, a wait status), "E WHY" (its setup failed: ward's error, not the
 * program's).  The steps are child.h's process model; what it gets from the
 * supervisor is child.h's child_ctx.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/egress.h"
#include "core/pathguard.h"
#include "core/supervise.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/seccomp.h"
#include "system/child.h"
#include "system/collect_walk.h"
#include "system/netinside.h"

/* The command's stack while it shares PID 1's memory: static, because PID 1
 * allocates nothing; each PID 1 has its own copy (a clone of the supervisor,
 * not a thread), and one command at a time runs on it. */
static char g_cmd_stack[256 * 1024] __attribute__((aligned(16)));

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

/* PID 1 is a copy of ward: of a server, with its listening socket, its
 * clients' connections and its log.  Keep only what the run needs, so that
 * no host fd lives inside and no connection of the server's is held open by
 * a sandbox.  Not even ward's own stdio (the caller's terminal, a server's
 * log, which a sandbox built ahead would hold for as long as it waits): 0-2
 * become /dev/null, unless WARD_TRACE wants stderr.  The run's own fds move
 * above 2 first (a caller started with 0-2 closed gets pipes there). */
static void keep_only_run_fds(struct child_ctx *c)
{
	int *mine[] = {&c->sync_r, &c->ctl_w, &c->notify_w, &c->out_w, &c->err_w, &c->in_r, &c->rep_w};
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (*mine[i] >= 0 && *mine[i] <= 2)
			*mine[i] = fcntl(*mine[i], F_DUPFD_CLOEXEC, 3);
	for (size_t i = 0; i < c->plan->nops; i++)
		if (c->trees[i] >= 0 && c->trees[i] <= 2)
			c->trees[i] = fcntl(c->trees[i], F_DUPFD_CLOEXEC, 3);
	/* every tree fits (PLAN_MAX_OPS); one that did not would be closed
	 * while c->trees still named its number: refuse instead */
	int keep[PLAN_MAX_OPS + 16];
	size_t nkeep = 0;
	bool trace = getenv("WARD_TRACE") != NULL;
	if (trace)
		keep[nkeep++] = 2;
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (*mine[i] >= 0)
			keep[nkeep++] = *mine[i];
	for (size_t i = 0; i < c->plan->nops; i++)
		if (c->trees[i] >= 0) {
			if (nkeep == sizeof(keep) / sizeof(keep[0]))
				_exit(1); /* the supervisor reports PID 1's death as a setup failure */
			keep[nkeep++] = c->trees[i];
		}
	close_all_but(keep, nkeep);
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; dn >= 0 && fd <= 2; fd++)
		if (fd != 2 || !trace)
			dup2(dn, fd);
	if (dn > 2)
		close(dn);
}

/* The cgroup namespace (entered now that the supervisor has moved us into
 * our cgroup), the hostname, the loopback.  0, or -1 with the message sent. */
static int enter_namespaces(struct child_ctx *c)
{
	if (unshare(CLONE_NEWCGROUP) < 0) {
		ctl_say(c->ctl_w, "E cannot create the cgroup namespace: %s\n", strerror(errno));
		return -1;
	}
	if (sethostname(c->plan->hostname, strlen(c->plan->hostname)) < 0 || setdomainname("ward", 4) < 0) {
		ctl_say(c->ctl_w, "E cannot set the hostname: %s\n", strerror(errno));
		return -1;
	}
	if (c->net != WARD_NET_NONE && net_loopback_up() < 0) {
		ctl_say(c->ctl_w, "E cannot bring up the loopback interface: %s\n", strerror(errno));
		return -1;
	}
	if (c->net == WARD_NET_ALLOW && net_proxy_listener(c->notify_w) < 0) {
		ctl_say(c->ctl_w, "E cannot make the egress proxy's socket: %s\n", strerror(errno));
		return -1;
	}
	trace_phase("init:ns", c->start);
	return 0;
}

/* The root (the plan's mounts), then an empty capability bounding set.
 * 0, or -1 with the message sent. */
static int build_root(struct child_ctx *c)
{
	char err[512] = "";
	struct mounts_input mi = {
		.ops = c->plan->ops, .nops = c->plan->nops, .trees = c->trees, .prepared = c->prepared};
	if (mounts_build(&mi, err, sizeof(err)) < 0) {
		ctl_say(c->ctl_w, "E %s\n", err);
		return -1;
	}
	trace_phase("init:mounts", c->start);
	int br = caps_drop_bounding();
	if (br < 0) {
		ctl_say(c->ctl_w, "E cannot empty the capability bounding set: %s\n", strerror(-br));
		return -1;
	}
	return 0;
}

/* The command's Landlock ruleset, ready before it is asked for: the command
 * only restricts itself with it.  Kept above the fds the command arranges
 * (0-5).  0, or -1 with the message sent. */
static int build_ruleset(struct child_ctx *c)
{
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
			return -1;
		}
	}
	trace_phase("init:landlock", c->start);
	return 0;
}

/* The command's seccomp filter, on PID 1 itself, so that the command
 * inherits it instead of loading it on a request's path.  From here PID 1
 * makes only calls the filter allows (the files for /work go through
 * pathguard's openat fallback, openat2 being ENOSYS), and its fatal rules
 * notify a listener that goes to the supervisor now; the supervisor takes it
 * from the socket when it supervises the run, and names a blocked call
 * before it kills the sandbox.  0, or -1 with the message sent. */
static int load_filter(struct child_ctx *c)
{
	if (!c->facts->no_seccomp) {
		int lis = ward_seccomp_apply_listener(&c->facts->filter);
		int sr = lis < 0 ? lis : ward_seccomp_send_listener(c->notify_w, lis);
		if (lis >= 0)
			close(lis);
		if (sr < 0) {
			ctl_say(c->ctl_w, "E cannot load the seccomp filter: %s\n", strerror(-sr));
			return -1;
		}
	}
	if (!c->session) { /* a session's control socket from now on */
		close(c->notify_w);
		c->notify_w = -1;
	}
	trace_phase("init:seccomp", c->start);
	return 0;
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

/* Wait for the command (the handover), then write its files.  0; 1 at
 * end-of-file (the sandbox was discarded); -1 with the message sent. */
static int receive_command(struct child_ctx *c)
{
	int r = handover_read(c->sync_r, &c->ho);
	if (r == 1)
		return 1;
	if (r < 0) {
		ctl_say(c->ctl_w, "E cannot receive the command: %s\n", strerror(-r));
		return -1;
	}
	trace_phase("init:handover", c->start);
	return write_files(c);
}

/* setfsuid() in the mount setup cleared the parent-death signal (any change
 * of credentials does): set it again, then make sure the supervisor did not
 * die in between — it holds the sync pipe's write end until the run is over
 * and sends nothing more, so anything readable there (a hang-up) means it is
 * gone.  True while it lives. */
static bool supervisor_alive(struct child_ctx *c)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct pollfd alive = {.fd = c->sync_r, .events = POLLIN};
	if (poll(&alive, 1, 0) != 0)
		return false;
	close(c->sync_r);
	/* A credential change (setfsuid in the mounts) sets dumpability to
	 * fs.suid_dumpable, which a host may have raised: clear it again. */
	prctl(PR_SET_DUMPABLE, 0);
	return true;
}

/* Overwrite ward's command line (which a server's options fill) before the
 * sandbox's first process exists: /proc/1/cmdline is world-readable.  Not
 * earlier: the plan and the Landlock paths may point into it. */
static void hide_cmdline(const struct sandbox_facts *f)
{
	if (!f->arg_start)
		return;
	char *a = (char *)f->arg_start;
	size_t n = f->arg_end - f->arg_start;
	memset(a, 0, n);
	memcpy(a, "ward-init", n > 10 ? 9 : n - 1); /* NUL-terminated, in the area */
	/* With a last byte that is not NUL the kernel reads the area only up
	 * to its first NUL (as for setproctitle), so that the zeros after
	 * "ward-init" do not tell how long ward's command line was. */
	if (n > 10)
		a[n - 1] = ' ';
}

/* Clone the command (command.c) and wait until it has exec'd, or has
 * exited saying why its setup failed; then PID 1 keeps only the control
 * pipe.  The command's pid, or -1 with the message sent. */
static pid_t start_command(struct child_ctx *c)
{
	/* The command shares PID 1's memory until it execs (vfork
	 * semantics): no page tables to copy, and PID 1 waits meanwhile. */
	c->setup_err[0] = 0;
	pid_t cmd = clone(command_entry, g_cmd_stack + sizeof(g_cmd_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (cmd < 0) {
		ctl_say(c->ctl_w, "E cannot start the command: %s\n", strerror(errno));
		return -1;
	}
	if (c->setup_err[0]) {
		ctl_say(c->ctl_w, "E %s\n", c->setup_err);
		return -1;
	}
	close(c->out_w);
	close(c->err_w);
	if (c->in_r >= 0)
		close(c->in_r);
	/* Files out: the report pipe, which the command has not (no report
	 * channel then: ward_request_validate), carries them afterwards. */
	if (c->rep_w >= 0 && !c->ho.collect)
		close(c->rep_w);
	if (c->landlock_fd >= 0)
		close(c->landlock_fd);
	return cmd;
}

/* Files out (SPEC §12), once the command has ended and every other process
 * of the sandbox is killed and reaped (reap_until_command_ends), so that
 * nothing changes /work while it is read; then the walk (collect_walk.c)
 * sends the files down the report pipe and closes it, before "X" says the
 * run is over.  PID 1 reads
 * as the sandbox user (the fsuid mounts_build left), in the sandbox's mount
 * namespace, from its /work (PID 1's cwd). */
static void collect_files(struct child_ctx *c)
{
	if (!c->ho.collect || c->rep_w < 0)
		return;
	int wfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd >= 0) {
		collect_walk(wfd, (const char *const *)c->ho.collect, c->ho.limits.collect_max_files,
		             c->ho.limits.collect_max_bytes, c->rep_w);
		close(wfd);
	}
	close(c->rep_w);
	c->rep_w = -1;
	trace_phase("init:collected", c->start);
}

/* Reap every orphan until the command ends; report its status and exit. */
static __attribute__((noreturn)) void reap_until_command_ends(struct child_ctx *c, pid_t cmd)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, 0);
		if (p == cmd) {
			trace_phase("init:cmd-exited", c->start);
			/* Every other process of the sandbox, killed and reaped
			 * before "X": once the supervisor has it, nothing of the
			 * run is left but PID 1, and the answer may go out while
			 * PID 1's exit tears the namespaces down (reaper.c). */
			kill(-1, SIGKILL);
			while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
				;
			collect_files(c);
			ctl_say(c->ctl_w, "X %d\n", st);
			_exit(0);
		}
		if (p < 0 && errno != EINTR)
			_exit(1);
	}
}

void init_main(struct child_ctx *c)
{
	/* If the supervisor's thread dies, so do we (and with us, the whole
	 * PID namespace). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Its name in ps, on the host and inside, as its command line (see
	 * hide_cmdline). */
	prctl(PR_SET_NAME, "ward-init");
	keep_only_run_fds(c);
	/* Handlers ward installed (a server's SIGTERM, the CLI's SIGINT) would
	 * let processes inside signal their init; with every disposition
	 * default, the kernel drops such signals. */
	reset_signals();
	/* 'g': go; 'p': go, and say "R" when ready (a sandbox built ahead);
	 * 's': the same, then run a session (init_session.c). */
	char go;
	if (read(c->sync_r, &go, 1) != 1)
		_exit(1); /* the supervisor is gone, or said no */
	/* Nobody may ptrace or read PID 1's memory (runc CVE-2019-5736:
	 * overwriting the runtime through /proc/1/exe), nor the copy of the
	 * server it is (tokens, other requests' bodies) while it waits in a
	 * pool.  Only now: an unprivileged supervisor writes the uid map
	 * through /proc/PID, which a non-dumpable process would deny it. */
	prctl(PR_SET_DUMPABLE, 0);
	c->session = go == 's';
	if (enter_namespaces(c) < 0 || build_root(c) < 0 || build_ruleset(c) < 0 || load_filter(c) < 0)
		_exit(1);
	if (go == 'p')
		ctl_say(c->ctl_w, "R\n");
	if (c->session) {                         /* says "R" itself */
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* see supervisor_alive */
		prctl(PR_SET_DUMPABLE, 0);
		hide_cmdline(c->facts);
		session_main(c);
	}
	int r = receive_command(c);
	if (r == 1)
		_exit(0);
	if (r < 0 || !supervisor_alive(c))
		_exit(1);
	hide_cmdline(c->facts);
	pid_t cmd = start_command(c);
	if (cmd < 0)
		_exit(1);
	reap_until_command_ends(c, cmd);
}
