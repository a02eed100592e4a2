/* clone.c — PID 1's birth (clone.h): the facts prepared once per process,
 * the clone itself, and a spawner helper's clone of the plain shape.
 *
 * Runs in the supervisor (any of a server's threads) or in a spawner
 * helper, never inside a sandbox: the child of each clone leaves this file
 * at once for init_main (init.c).  Everything it hands the child is in
 * child.h's child_ctx, on the stack of the clone's caller, which the child
 * runs on a copy of.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/plan.h"
#include "core/supervise.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"
#include "system/child.h"
#include "system/clone.h"
#include "system/netns.h"

/* Prepared once per process (pthread_once) and read-only after: the same
 * filter and ABI serve every sandbox, so no run pays for them again. */
static struct sandbox_facts g_facts;
static pthread_once_t g_facts_once = PTHREAD_ONCE_INIT;

/* Where this process's command line lives (child.h: arg_start, arg_end). */
static void find_cmdline(struct sandbox_facts *f)
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
			f->arg_start = strtoul(tok, NULL, 10);
		else if (field == 49) {
			f->arg_end = strtoul(tok, NULL, 10);
			break;
		}
	}
	if (f->arg_end <= f->arg_start)
		f->arg_start = f->arg_end = 0;
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);
	return v && strcmp(v, "1") == 0;
}

static void prepare_facts(void)
{
	struct sandbox_facts *f = &g_facts;
	f->filter_ok = ward_seccomp_prepare(&f->filter, f->filter_err, sizeof(f->filter_err)) == 0;
	f->landlock_abi = ward_landlock_abi();
	/* Benchmark switches, to measure what each layer costs at start-up.
	 * The result says honestly that the layer was off. */
	f->no_seccomp = env_on("WARD_BENCH_NO_SECCOMP");
	f->no_landlock = env_on("WARD_BENCH_NO_LANDLOCK");
	if (f->no_landlock)
		f->landlock_abi = 0;
	find_cmdline(f);
}

const struct sandbox_facts *sandbox_facts(void)
{
	pthread_once(&g_facts_once, prepare_facts);
	return &g_facts;
}

/* A raw clone (no separate stack: the child runs on a copy of ours, like
 * fork).  On cgroup v2 (cgfd >= 0), PID 1 is born in its cgroup (clone3
 * CLONE_INTO_CGROUP, Linux 5.7): no attach afterwards, which is the
 * costliest cgroup write.  Elsewhere, or on a kernel without it, a plain
 * clone and an attach.  netfd >= 0: PID 1 is born in that network
 * namespace (netns.c), entered by this thread for the clone alone;
 * otherwise in a new one of its own. */
pid_t clone_pid1(struct child_ctx *c, int cgfd, int netfd, unsigned long extra, int *pidfd, bool *born_in_cg)
{
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
	                      CLONE_PIDFD | extra;
	bool entered = netfd >= 0 && netns_enter(netfd) == 0;
	if (entered)
		flags &= ~(unsigned long)CLONE_NEWNET;
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
		init_main(c);
	int saved = errno;
	if (entered)
		netns_leave();
	return pid < 0 ? -saved : pid;
}

size_t landlock_write_paths(const struct ward_request *shape, const char **out, size_t max)
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
 * as often as they matter.  A global: the helper's own (one thread, which
 * alone calls spawn_pid1). */
#define SPAWN_PLAN_TTL 1.0
static struct {
	bool ok;
	uint64_t tmp_size_mb, work_size_mb;
	double made;
	struct plan plan;
	int *trees;           /* all -1: the plain shape binds nothing held */
	const char *prepared; /* the plan's prepared root, or NULL */
} g_spawn_plan;

/* Where a helper keeps the prepared root of its plan, in its own mount
 * namespace (the host sees an empty directory). */
#define PREPARED_ROOT "/run/ward/root"
static bool g_own_mounts;

void spawn_own_mounts(void)
{
	/* Mounts made here stay here (and in the PID 1s cloned from here);
	 * the host's later mounts still reach us. */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return;
	if ((mkdir("/run/ward", 0700) < 0 && errno != EEXIST) || (mkdir(PREPARED_ROOT, 0700) < 0 && errno != EEXIST))
		return;
	g_own_mounts = true;
}

static const struct plan *spawn_plan(uint64_t tmp_size_mb, uint64_t work_size_mb)
{
	double now = monotonic_now();
	if (g_spawn_plan.ok && g_spawn_plan.tmp_size_mb == tmp_size_mb && g_spawn_plan.work_size_mb == work_size_mb &&
	    now - g_spawn_plan.made < SPAWN_PLAN_TTL)
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
	plan_size_work(&g_spawn_plan.plan, work_size_mb);
	size_t n = g_spawn_plan.plan.nops;
	g_spawn_plan.trees = malloc(sizeof(int) * (n ? n : 1));
	if (!g_spawn_plan.trees) {
		plan_free(&g_spawn_plan.plan);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		g_spawn_plan.trees[i] = -1;
	/* Its ops that are the same for every sandbox, applied once (a PID 1
	 * that cannot clone them applies them itself). */
	g_spawn_plan.prepared =
		g_own_mounts && mounts_prepare_root(g_spawn_plan.plan.ops, n, PREPARED_ROOT, err, sizeof(err)) == 0
			? PREPARED_ROOT
			: NULL;
	g_spawn_plan.tmp_size_mb = tmp_size_mb;
	g_spawn_plan.work_size_mb = work_size_mb;
	g_spawn_plan.made = now;
	g_spawn_plan.ok = true;
	return &g_spawn_plan.plan;
}

void spawn_plan_refresh(void)
{
	if (g_spawn_plan.ok)
		(void)spawn_plan(g_spawn_plan.tmp_size_mb, g_spawn_plan.work_size_mb);
}

pid_t spawn_pid1(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg)
{
	const struct sandbox_facts *facts = sandbox_facts();
	if (r->net != WARD_NET_NONE && r->net != WARD_NET_LOOPBACK && r->net != WARD_NET_ALLOW)
		return -EINVAL;
	if (fds[SP_SYNC] < 0 || fds[SP_CTL] < 0 || fds[SP_OUT] < 0 || fds[SP_ERR] < 0 || fds[SP_NOTIFY] < 0)
		return -EINVAL;
	const struct plan *plan = spawn_plan(r->tmp_size_mb, r->work_size_mb);
	if (!plan)
		return -ENOMEM;
	const struct ward_request plain = {0};
	const char *write_paths[3];
	size_t nwrite = landlock_write_paths(&plain, write_paths, 3);
	struct child_ctx c = {
		.facts = facts,
		.plan = plan,
		.trees = g_spawn_plan.trees,
		.prepared = g_spawn_plan.prepared,
		.net = (enum ward_net)r->net,
		.write_paths = write_paths,
		.nwrite = nwrite,
		.landlock_abi = facts->landlock_abi,
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
	int netfd = r->net == WARD_NET_NONE ? fds[SP_NETNS] : -1;
	return clone_pid1(&c, fds[SP_CGROUP], netfd, CLONE_PARENT, pidfd, born_in_cg);
}
