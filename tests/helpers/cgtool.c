/* cgtool — drives the cgroup mechanism (src/sandbox/cgroup*.c) on its own, the way the supervisor
 * does, so that the cgroup tests need no working `ward run`.  Built like
 * every helper (one static file), hence the #include of the source.
 *
 *   cgtool probe                      what cg_probe() found, key=value lines
 *   cgtool run [-m MB] [-p N] [-c CPU_S] [-t WALL_S] -- CMD [ARG...]
 *       create a cgroup, run CMD in it, enforce the CPU limit by polling,
 *       then print "cgtool: name=... oom=... cpu_us=..." and destroy it.
 *       Exit: 137 on OOM, 124 when a CPU/wall limit killed it, 128+N for a
 *       signal, else CMD's status; 125 when cgtool itself failed.
 *   cgtool bench N [-m MB] [-p N]     N x create/attach/destroy, prints
 *                                     microseconds per step
 *   cgtool threads T N                T threads x N create/attach/destroy
 *   cgtool list                       run cgroups (ward-*) present now
 * CGTOOL_NO_CGKILL=1 in the environment: ignore cgroup.kill (as before 5.14).
 */
#include "../../src/base/errf.c"
#include "../../src/sandbox/cgroup.c"
#include "../../src/sandbox/cgroup_io.c"
#include "../../src/sandbox/cgroup_keep.c"
#include "../../src/sandbox/cgroup_park.c"
#include "../../src/sandbox/cgroup_probe.c"
#include "../../src/sandbox/cgroup_v1.c"
#include "../../src/sandbox/cgroup_v2.c"
#include "../../src/sandbox/lockfile.c"

#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>

static void usage(void)
{
	fprintf(stderr, "usage: cgtool probe|list|run [-m MB] [-p N] [-c S] [-t S] -- CMD...|bench N|threads T N\n");
	exit(125);
}

static double secs(void) { return (double)cg_now_ns() / 1e9; }

/* Fork a child that waits until it is in the cgroup, then runs argv (or
 * just exits when argv is NULL).  Returns its pid and the pipe's write end
 * in *go: let_go() lets the child go.  A byte, not EOF: with threads, other
 * children inherit copies of the write end until they exit. */
static pid_t spawn_waiting(char **argv, int *go)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		if (!argv)
			_exit(0);
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void let_go(int go)
{
	while (write(go, "g", 1) < 0 && errno == EINTR)
		;
	close(go);
}

static int cmd_probe(void)
{
	const struct cg_probe *p = cg_probe();
	printf("version=%d\nmemory=%d\npids=%d\ncpu=%d\nwhere=%s\nwhy=%s\n", (int)p->version, p->memory, p->pids,
	       p->cpu, p->where, p->why);
	/* Where this process ended up (v2 delegation moves it). */
	char own[PATH_MAX];
	if (cg_own_cgroup("", own, sizeof own))
		printf("self=%s\n", own);
	return 0;
}

static int cmd_list(void)
{
	cg_probe();
	for (int i = 0; i < cg_host.nh; i++) {
		DIR *d = opendir(cg_host.h[i].path);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d)))
			if (strncmp(e->d_name, "ward-", 5) == 0 && strcmp(e->d_name, "ward-supervisor") != 0)
				printf("%s/%s\n", cg_host.h[i].path, e->d_name);
		closedir(d);
	}
	return 0;
}

static void parse_limits(int *argc, char ***argv, struct cg_limits *lim, double *cpu, double *wall)
{
	int c;
	optind = 1;
	while ((c = getopt(*argc, *argv, "+m:p:c:t:")) != -1) {
		switch (c) {
		case 'm': lim->memory_bytes = strtoull(optarg, NULL, 10) << 20; break;
		case 'p': lim->pids = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'c': if (cpu) *cpu = atof(optarg); break;
		case 't': if (wall) *wall = atof(optarg); break;
		default: usage();
		}
	}
	*argc -= optind;
	*argv += optind;
}

static int cmd_run(int argc, char **argv)
{
	struct cg_limits lim = {0};
	double cpu = 0, wall = 30;
	parse_limits(&argc, &argv, &lim, &cpu, &wall);
	if (argc < 1)
		usage();
	char err[512];
	struct ward_cgroup *cg = cg_create(&lim, err, sizeof err);
	if (!cg) {
		fprintf(stderr, "cgtool: %s\n", err);
		return 125;
	}
	int go;
	pid_t pid = spawn_waiting(argv, &go);
	if (pid < 0 || cg_attach(cg, pid) < 0) {
		fprintf(stderr, "cgtool: spawn/attach failed: %s\n", strerror(errno));
		if (pid > 0) {
			kill(pid, SIGKILL);
			close(go);
			waitpid(pid, NULL, 0);
		}
		cg_destroy(cg);
		return 125;
	}
	let_go(go);
	double t0 = secs();
	const char *killed = "none";
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		uint64_t us;
		if (cpu > 0 && cg_cpu_usage(cg, &us) == 0 && us >= cpu * 1e6 && strcmp(killed, "none") == 0) {
			killed = "cpu";
			cg_kill(cg);
		} else if (secs() - t0 > wall && strcmp(killed, "none") == 0) {
			killed = "timeout";
			cg_kill(cg);
		}
		cg_nap_us(10000);
	}
	struct cg_stats st;
	cg_stats(cg, &st);
	printf("cgtool: name=%s mechanism=%s oom=%d cpu_us=%llu user_us=%llu sys_us=%llu peak=%llu killed=%s wall_ms=%d\n",
	       cg_name(cg), cg_mechanism(cg), st.oom_killed, (unsigned long long)st.cpu_usage_us,
	       (unsigned long long)st.cpu_user_us, (unsigned long long)st.cpu_sys_us,
	       (unsigned long long)st.memory_peak, killed, (int)((secs() - t0) * 1000));
	fflush(stdout);
	cg_destroy(cg);
	if (st.oom_killed)
		return 137;
	if (strcmp(killed, "none") != 0)
		return 124;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* One create/attach/destroy cycle; adds each step's nanoseconds to t[3]. */
static int cycle(const struct cg_limits *lim, long long t[3])
{
	char err[512];
	long long a = cg_now_ns();
	struct ward_cgroup *cg = cg_create(lim, err, sizeof err);
	long long b = cg_now_ns();
	if (!cg) {
		fprintf(stderr, "cgtool: %s\n", err);
		return -1;
	}
	int go, status;
	pid_t pid = spawn_waiting(NULL, &go);
	if (pid < 0) {
		cg_destroy(cg);
		return -1;
	}
	long long c = cg_now_ns();
	int r = cg_attach(cg, pid);
	long long d = cg_now_ns();
	let_go(go);
	waitpid(pid, &status, 0);
	long long e = cg_now_ns();
	cg_destroy(cg);
	long long f = cg_now_ns();
	t[0] += b - a;
	t[1] += d - c;
	t[2] += f - e;
	if (r < 0)
		fprintf(stderr, "cgtool: attach: %s\n", strerror(-r));
	return r;
}

static int cmd_bench(int argc, char **argv)
{
	if (argc < 2)
		usage();
	int n = atoi(argv[1]);
	struct cg_limits lim = {.memory_bytes = 256ULL << 20, .pids = 64};
	argc--, argv++;
	parse_limits(&argc, &argv, &lim, NULL, NULL);
	long long t[3] = {0};
	cg_probe();
	long long t0 = cg_now_ns();
	for (int i = 0; i < n; i++)
		if (cycle(&lim, t) < 0)
			return 1;
	double per = (double)(cg_now_ns() - t0) / n / 1000;
	printf("cgtool: bench n=%d create_us=%.1f attach_us=%.1f destroy_us=%.1f total_us=%.1f (with fork+wait %.1f)\n",
	       n, (double)t[0] / n / 1000, (double)t[1] / n / 1000, (double)t[2] / n / 1000,
	       (double)(t[0] + t[1] + t[2]) / n / 1000, per);
	return 0;
}

struct thr {
	int n, failed;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	struct cg_limits lim = {.memory_bytes = 64ULL << 20, .pids = 16};
	long long tm[3] = {0};
	for (int i = 0; i < t->n; i++)
		if (cycle(&lim, tm) < 0)
			t->failed++;
	return NULL;
}

static int cmd_threads(int argc, char **argv)
{
	if (argc < 3)
		usage();
	int nt = atoi(argv[1]), n = atoi(argv[2]);
	if (nt < 1 || nt > 64)
		usage();
	pthread_t th[64];
	struct thr t[64];
	for (int i = 0; i < nt; i++) {
		t[i] = (struct thr){n, 0};
		if (pthread_create(&th[i], NULL, thread_main, &t[i]) != 0)
			return 125;
	}
	int failed = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		failed += t[i].failed;
	}
	printf("cgtool: threads=%d cycles=%d failed=%d\n", nt, nt * n, failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	/* CGTOOL_NO_CGKILL=1: act as on a kernel before 5.14 (no cgroup.kill),
	 * so that the kill loop is tested on v2 too. */
	cg_probe();
	if (getenv("CGTOOL_NO_CGKILL"))
		cg_host.cg_kill = false;
	const char *c = argv[1];
	if (strcmp(c, "probe") == 0)
		return cmd_probe();
	if (strcmp(c, "list") == 0)
		return cmd_list();
	if (strcmp(c, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(c, "bench") == 0)
		return cmd_bench(argc - 1, argv + 1);
	if (strcmp(c, "threads") == 0)
		return cmd_threads(argc - 1, argv + 1);
	usage();
}
