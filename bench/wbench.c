/* wbench.c — start-up benchmark driver for `make bench` (bench/run).
 *
 * Timing is done here, in C, rather than in a shell loop: a shell adds its
 * own fork/exec to every sample, which is the very cost being measured.
 * Each sample is posix_spawnp() + wait4() of one command, timed with
 * CLOCK_MONOTONIC around both, child stdin/stdout/stderr on /dev/null; its
 * CPU is the whole tree's, the descendants it left behind included (the
 * latency phase runs as a child subreaper: see reap_orphans).
 *
 * Commands are given as NAME=CMDLINE; CMDLINE is split into words with
 * wordexp(3) (no command substitution) and may start with VAR=VALUE words,
 * which go into that command's environment only, as with env(1).  So the
 * command line printed in the report is exactly one a user can paste.
 *
 * Phases, all on the same machine in one run:
 *   probe       each command once; one that does not exit 0 is skipped, with
 *               the first line of its stderr as the reason (so a ward that
 *               does not work yet makes a row "skipped", not a failure);
 *   latency     PASSES passes of RUNS iterations; in each iteration every
 *               command runs once, in an order rotated by one per iteration,
 *               so drift and cache effects hit all commands alike; WARMUP
 *               iterations per pass are discarded;
 *   throughput  for each caller count, C threads spawn the command back to
 *               back for a fixed time; commands alternate in two rounds;
 *   trace       the --trace command K times with WARD_TRACE=1, stderr read
 *               for "ward-trace: PHASE MICROSECONDS" lines (median per phase).
 *
 * A benchmark reports; it never fails on a figure.  Exit status is non-zero
 * only when the driver itself could not run (bad options, no output file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "stats.h"

extern char **environ;

#define MAX_CALLERS 8       /* distinct caller counts in -j */
#define PROBE_TIMEOUT_MS 20000
#define CAPTURE_MAX 65536   /* bytes of stderr kept from a probe/trace run */
#define REF_BARE "bare"     /* rows the ratio columns divide by */
#define REF_BWRAP "bwrap"

struct tput {
	int callers;
	long runs;
	long failures;
	double secs;
};

struct cmd {
	char *name;
	char *line;        /* as given, for the report */
	wordexp_t we;
	char **argv;       /* points into we */
	char **assign;     /* leading VAR=VALUE words, NULL-terminated, into we */
	char **envp;       /* host environment (scrubbed) + assign */
	char **trace_envp; /* envp + WARD_TRACE=1 */
	bool throughput;   /* false: latency only (a variant of another row) */
	bool ok;           /* probe exited 0 */
	char *skip;        /* why not, when !ok */
	posix_spawn_file_actions_t fa_null;
	bool fa_ready;
	double *samples;   /* ms, all passes */
	double *cpu;       /* CPU ms of the whole tree, one per sample */
	double *cpu_own;   /* CPU ms that the command's own wait4 reported */
	size_t n, cap;
	size_t pass_start; /* first sample of the current pass */
	double *pass_median;
	long failures;
	struct tput tput[MAX_CALLERS];
	/* summary, filled by summarize() */
	double med, p99, p90, min, max, mean;
	double cpu_med;    /* median CPU ms per run */
	double cpu_own_med; /* the same, without the orphans it left */
};

struct phase {
	char *name;
	double *at, *delta; /* µs since start; µs since the previous phase */
	double *cpu;        /* µs of CPU its process used since its own previous phase (-1: not printed) */
	size_t n, cap;
	double med_at;
};

static int cmp_phase(const void *a, const void *b)
{
	double x = ((const struct phase *)a)->med_at, y = ((const struct phase *)b)->med_at;
	return (x > y) - (x < y);
}

struct opts {
	long runs, passes, warmup, trace_runs;
	double secs, budget;
	int callers[MAX_CALLERS];
	int ncallers;
	const char *trace_name;
	const char *json_path, *md_path, *dat_dir;
	char **meta;
	size_t nmeta;
};

static int devnull = -1;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "wbench: out of memory\n");
		exit(2);
	}
	return q;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d) {
		fprintf(stderr, "wbench: out of memory\n");
		exit(2);
	}
	return d;
}

static bool is_assignment(const char *w)
{
	const char *eq = strchr(w, '=');
	if (!eq || eq == w)
		return false;
	for (const char *p = w; p < eq; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (p > w && *p >= '0' && *p <= '9')))
			return false;
	return true;
}

/* Variables that switch ward's tracing or benchmark knobs never leak in from
 * the caller's environment: each command gets exactly what its line says. */
static bool scrubbed(const char *kv)
{
	return strncmp(kv, "WARD_TRACE=", 11) == 0 || strncmp(kv, "WARD_BENCH_", 11) == 0;
}

static bool same_key(const char *a, const char *b)
{
	size_t ka = strcspn(a, "="), kb = strcspn(b, "=");
	return ka == kb && strncmp(a, b, ka) == 0;
}

static char **build_env(char **assign, const char *extra)
{
	size_t n = 0, na = 0;
	while (environ[n])
		n++;
	while (assign[na])
		na++;
	char **e = xrealloc(NULL, (n + na + 2) * sizeof(*e));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool drop = scrubbed(environ[i]) || (extra && same_key(environ[i], extra));
		for (size_t j = 0; j < na && !drop; j++)
			drop = same_key(environ[i], assign[j]);
		if (!drop)
			e[k++] = environ[i];
	}
	for (size_t j = 0; j < na; j++)
		e[k++] = assign[j];
	if (extra)
		e[k++] = (char *)extra;
	e[k] = NULL;
	return e;
}

static int cmd_init(struct cmd *c, const char *spec, bool throughput)
{
	memset(c, 0, sizeof(*c));
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1]) {
		fprintf(stderr, "wbench: '%s': expected NAME=COMMAND LINE\n", spec);
		return -1;
	}
	c->name = strndup(spec, (size_t)(eq - spec));
	c->line = xstrdup(eq + 1);
	if (!c->name) {
		fprintf(stderr, "wbench: out of memory\n");
		exit(2);
	}
	int rc = wordexp(c->line, &c->we, WRDE_NOCMD);
	if (rc != 0) {
		fprintf(stderr, "wbench: %s: cannot split '%s' into words (wordexp error %d)\n",
			c->name, c->line, rc);
		free(c->name);
		free(c->line);
		return -1;
	}
	size_t i = 0;
	while (i < c->we.we_wordc && is_assignment(c->we.we_wordv[i]))
		i++;
	if (i == c->we.we_wordc) {
		fprintf(stderr, "wbench: %s: no program in '%s'\n", c->name, c->line);
		wordfree(&c->we);
		free(c->name);
		free(c->line);
		return -1;
	}
	c->argv = &c->we.we_wordv[i];
	c->assign = xrealloc(NULL, (i + 1) * sizeof(char *));
	for (size_t j = 0; j < i; j++)
		c->assign[j] = c->we.we_wordv[j];
	c->assign[i] = NULL;
	c->envp = build_env(c->assign, NULL);
	c->trace_envp = build_env(c->assign, "WARD_TRACE=1");
	c->throughput = throughput;
	/* One set of file actions for all timed runs, shared read-only by the
	 * throughput threads, so no sample pays for building it. */
	if (posix_spawn_file_actions_init(&c->fa_null) == 0) {
		c->fa_ready = true;
		for (int fd = 0; fd <= 2; fd++)
			posix_spawn_file_actions_adddup2(&c->fa_null, devnull, fd);
	}
	return 0;
}

static void cmd_free(struct cmd *c)
{
	if (c->fa_ready)
		posix_spawn_file_actions_destroy(&c->fa_null);
	wordfree(&c->we);
	free(c->assign);
	free(c->envp);
	free(c->trace_envp);
	free(c->samples);
	free(c->cpu);
	free(c->cpu_own);
	free(c->pass_median);
	free(c->skip);
	free(c->name);
	free(c->line);
}

/* waitpid, and (ru non-NULL) the CPU the child used, with the
 * descendants it reaped. */
static int wait_pid_ru(pid_t pid, int *status, struct rusage *ru)
{
	for (;;) {
		if (wait4(pid, status, 0, ru) == pid)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int wait_pid(pid_t pid, int *status)
{
	return wait_pid_ru(pid, status, NULL);
}

static double ru_cpu_ms(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* The latency phase runs as a child subreaper (one command at a time): a
 * command that exits before its descendants leaves them to us, not to the
 * host's init.  bwrap does: its monitor exits as soon as its PID 1 reports
 * the command's status on an eventfd, without reaping that PID 1, which
 * holds the command's CPU (it reaped the command) and still has to exit.
 * Reap them all (waiting up to 2 s for them to end); the CPU they used. */
static bool g_reaping; /* the latency phase's: one command at a time, as a subreaper */

static double reap_orphans(void)
{
	double cpu = 0, t0 = now_ms();
	if (!g_reaping)
		return 0; /* the throughput threads: a wait for any child would take another's */
	for (;;) {
		struct rusage ru;
		int st;
		pid_t p = wait4(-1, &st, WNOHANG, &ru);
		if (p > 0) {
			cpu += ru_cpu_ms(&ru);
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 || now_ms() - t0 > 2000)
			return cpu; /* ECHILD: none left */
		usleep(20);
	}
}

/* One timed run, all streams on /dev/null; *cpu_ms (when cpu_ms is not
 * NULL) the CPU of its whole tree, the orphans it left included, and
 * *own_ms what its own wait4 reported.  Returns -1 when it could not be
 * started at all. */
static int run_timed_cpu(const struct cmd *c, int *status, double *ms, double *cpu_ms, double *own_ms)
{
	pid_t pid;
	double t0 = now_ms();
	int rc = posix_spawnp(&pid, c->argv[0], &c->fa_null, NULL, c->argv, c->envp);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	struct rusage ru;
	if (wait_pid_ru(pid, status, &ru) < 0)
		return -1;
	*ms = now_ms() - t0;
	double orphans = reap_orphans();
	if (cpu_ms) {
		*own_ms = ru_cpu_ms(&ru);
		*cpu_ms = *own_ms + orphans;
	}
	return 0;
}

static int run_timed(const struct cmd *c, int *status, double *ms)
{
	return run_timed_cpu(c, status, ms, NULL, NULL);
}

/* One run with stderr captured (probe, trace).  Killed after timeout_ms, so
 * a hung command cannot hang the benchmark.  *out is NUL-terminated and
 * owned by the caller. */
static int run_capture(const struct cmd *c, char **envp, int timeout_ms, int *status,
		       double *ms, char **out)
{
	int p[2];
	*out = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	posix_spawn_file_actions_adddup2(&fa, devnull, 0);
	posix_spawn_file_actions_adddup2(&fa, devnull, 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	pid_t pid;
	double t0 = now_ms();
	int rc = posix_spawnp(&pid, c->argv[0], &fa, NULL, c->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		errno = rc;
		return -1;
	}
	char *buf = xrealloc(NULL, CAPTURE_MAX + 1);
	size_t len = 0;
	bool killed = false;
	for (;;) {
		int left = timeout_ms - (int)(now_ms() - t0);
		if (left <= 0) {
			/* Our own child, by pid: the only process we ever kill. */
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		int pr = poll(&pfd, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char tmp[4096];
		ssize_t r = read(p[0], tmp, sizeof(tmp));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* EOF: every writer of stderr is gone */
		size_t take = (size_t)r;
		if (take > CAPTURE_MAX - len)
			take = CAPTURE_MAX - len;
		memcpy(buf + len, tmp, take);
		len += take;
	}
	close(p[0]);
	buf[len] = '\0';
	*out = buf;
	if (wait_pid(pid, status) < 0)
		return -1;
	*ms = now_ms() - t0;
	if (killed)
		*status = -1;
	return 0;
}

static char *describe_failure(int status, const char *err)
{
	char why[256];
	if (status == -1)
		snprintf(why, sizeof(why), "did not finish within %d s", PROBE_TIMEOUT_MS / 1000);
	else if (WIFEXITED(status))
		snprintf(why, sizeof(why), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, sizeof(why), "status 0x%x", status);
	/* The first non-empty stderr line says why, usually. */
	const char *l = err ? err : "";
	while (*l == '\n')
		l++;
	size_t ll = strcspn(l, "\n");
	if (ll > 160)
		ll = 160;
	char *s = NULL;
	if (asprintf(&s, "%s%s%.*s", why, ll ? ": " : "", (int)ll, l) < 0) {
		fprintf(stderr, "wbench: out of memory\n");
		exit(2);
	}
	return s;
}

static void probe(struct cmd *c)
{
	int st;
	double ms;
	char *err = NULL;
	if (run_capture(c, c->envp, PROBE_TIMEOUT_MS, &st, &ms, &err) < 0) {
		char *s = NULL;
		if (asprintf(&s, "cannot start %s: %s", c->argv[0], strerror(errno)) < 0)
			exit(2);
		c->skip = s;
	} else if (st != 0) {
		c->skip = describe_failure(st, err);
	} else {
		c->ok = true;
	}
	free(err);
	printf("  probe %-16s %s%s\n", c->name, c->ok ? "ok" : "SKIPPED: ", c->ok ? "" : c->skip);
}

static void add_sample(struct cmd *c, double ms, double cpu_ms, double own_ms)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 512;
		c->samples = xrealloc(c->samples, c->cap * sizeof(double));
		c->cpu = xrealloc(c->cpu, c->cap * sizeof(double));
		c->cpu_own = xrealloc(c->cpu_own, c->cap * sizeof(double));
	}
	c->cpu[c->n] = cpu_ms;
	c->cpu_own[c->n] = own_ms;
	c->samples[c->n++] = ms;
}

static double median_sorted(const double *s, size_t n)
{
	if (!n)
		return NAN;
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double median_of(const double *v, size_t n)
{
	double *s = xrealloc(NULL, n * sizeof(double));
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	double m = median_sorted(s, n);
	free(s);
	return m;
}

static void summarize(struct cmd *c)
{
	size_t n = c->n;
	if (!n)
		return;
	double *s = xrealloc(NULL, n * sizeof(double));
	memcpy(s, c->samples, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	c->med = median_sorted(s, n);
	c->p90 = pct_sorted(s, n, 90);
	c->p99 = pct_sorted(s, n, 99);
	c->min = s[0];
	c->max = s[n - 1];
	c->mean = sum / (double)n;
	free(s);
	c->cpu_med = median_of(c->cpu, n);
	c->cpu_own_med = median_of(c->cpu_own, n);
}

static void latency(struct cmd **live, size_t nlive, struct opts *o)
{
	/* see reap_orphans; off again before the throughput threads run */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	g_reaping = true;
	if (!nlive)
		return;
	long runs = o->runs;
	for (size_t k = 0; k < nlive; k++)
		live[k]->pass_median = xrealloc(NULL, (size_t)o->passes * sizeof(double));
	for (long pass = 0; pass < o->passes; pass++) {
		double w0 = now_ms();
		for (long i = 0; i < o->warmup; i++)
			for (size_t k = 0; k < nlive; k++) {
				int st;
				double ms;
				run_timed(live[(k + (size_t)i) % nlive], &st, &ms);
			}
		/* Fit the time budget: estimate one iteration from the warm-up and
		 * cut the run count (never below 50) rather than run for minutes. */
		if (pass == 0 && o->warmup > 0 && o->budget > 0) {
			double per_iter = (now_ms() - w0) / (double)o->warmup;
			long fit = (long)(o->budget * 1000 / (per_iter * (double)o->passes));
			if (fit < runs) {
				runs = fit < 50 ? 50 : fit;
				printf("  %ld runs per pass instead of %ld, to stay within %.0f s\n",
				       runs, o->runs, o->budget);
			}
		}
		for (size_t k = 0; k < nlive; k++)
			live[k]->pass_start = live[k]->n;
		double t0 = now_ms();
		for (long i = 0; i < runs; i++)
			for (size_t k = 0; k < nlive; k++) {
				struct cmd *c = live[(k + (size_t)i) % nlive];
				int st;
				double ms, cpu, own;
				if (run_timed_cpu(c, &st, &ms, &cpu, &own) < 0) {
					c->failures++;
					continue;
				}
				/* A failed run did not do the work; it is counted, not timed. */
				if (st != 0)
					c->failures++;
				else
					add_sample(c, ms, cpu, own);
			}
		for (size_t k = 0; k < nlive; k++) {
			struct cmd *c = live[k];
			c->pass_median[pass] =
				median_of(c->samples + c->pass_start, c->n - c->pass_start);
		}
		printf("  latency pass %ld/%ld: %ld runs x %zu commands in %.1f s\n", pass + 1,
		       o->passes, runs, nlive, (now_ms() - t0) / 1000);
	}
	o->runs = runs;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	g_reaping = false;
}

struct worker {
	const struct cmd *c;
	double deadline;
	long runs, failures;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (now_ms() < w->deadline) {
		int st;
		double ms;
		if (run_timed(w->c, &st, &ms) < 0) {
			w->failures++;
			break;
		}
		/* Only runs that exited 0 count: a failing command is fast. */
		if (st == 0)
			w->runs++;
		else
			w->failures++;
	}
	return NULL;
}

/* C callers spawning back to back until the deadline; the time counted runs
 * until the last in-flight run has finished. */
static void parallel(struct cmd *c, int slot, double secs)
{
	int callers = c->tput[slot].callers;
	struct worker w[64];
	if (callers > 64)
		callers = 64;
	double t0 = now_ms();
	int started = 0;
	for (int i = 0; i < callers; i++) {
		w[i] = (struct worker){.c = c, .deadline = t0 + secs * 1000};
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0)
			break;
		started++;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(w[i].tid, NULL);
		c->tput[slot].runs += w[i].runs;
		c->tput[slot].failures += w[i].failures;
	}
	c->tput[slot].secs += (now_ms() - t0) / 1000;
}

static void throughput(struct cmd **live, size_t nlive, const struct opts *o)
{
	size_t nt = 0;
	struct cmd *t[64];
	for (size_t k = 0; k < nlive && nt < 64; k++)
		if (live[k]->throughput)
			t[nt++] = live[k];
	for (size_t k = 0; k < nt; k++)
		for (int j = 0; j < o->ncallers; j++)
			t[k]->tput[j].callers = o->callers[j];
	const int rounds = 2;
	for (int j = 0; j < o->ncallers; j++) {
		double t0 = now_ms();
		for (int r = 0; r < rounds; r++)
			for (size_t k = 0; k < nt; k++)
				parallel(t[(k + (size_t)r) % nt], j, o->secs / rounds);
		printf("  throughput, %d callers: %zu commands x %.1f s in %.1f s\n", o->callers[j],
		       nt, o->secs, (now_ms() - t0) / 1000);
	}
}

static struct phase *phase_get(struct phase **ph, size_t *nph, const char *name)
{
	for (size_t i = 0; i < *nph; i++)
		if (strcmp((*ph)[i].name, name) == 0)
			return &(*ph)[i];
	*ph = xrealloc(*ph, (*nph + 1) * sizeof(**ph));
	struct phase *p = &(*ph)[(*nph)++];
	memset(p, 0, sizeof(*p));
	p->name = xstrdup(name);
	return p;
}

static void phase_add(struct phase *p, double at, double delta, double cpu)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->at = xrealloc(p->at, p->cap * sizeof(double));
		p->delta = xrealloc(p->delta, p->cap * sizeof(double));
		p->cpu = xrealloc(p->cpu, p->cap * sizeof(double));
	}
	p->at[p->n] = at;
	p->delta[p->n] = delta;
	p->cpu[p->n] = cpu;
	p->n++;
}

/* The process a phase is printed by: the supervisor (ward), the sandbox's
 * init ("init:") or the command before its exec ("cmd:"). */
static int phase_proc(const char *name)
{
	return strncmp(name, "init:", 5) == 0 ? 1 : strncmp(name, "cmd:", 4) == 0 ? 2 : 0;
}

static const char *const proc_names[] = {"ward", "PID 1", "command"};

#define MAX_EVENTS 128 /* ward-trace lines kept from one run */

struct event {
	char name[64];
	double us;
	double cpu; /* "cpu=US": the CPU its process has used so far; -1: absent */
};

static int cmp_event(const void *a, const void *b)
{
	double x = ((const struct event *)a)->us, y = ((const struct event *)b)->us;
	return (x > y) - (x < y);
}

struct trace {
	struct phase *ph;
	size_t nph;
	long runs, failures;
	double wall_med;
	char *skip;
};

/* Lines "ward-trace: PHASE MICROSECONDS" (µs since ward started), in the
 * order ward prints them; anything else on stderr is ignored. */
static void trace(struct cmd *c, const struct opts *o, struct trace *tr)
{
	double *wall = xrealloc(NULL, (size_t)o->trace_runs * sizeof(double));
	size_t nwall = 0;
	for (long i = 0; i < o->trace_runs; i++) {
		int st;
		double ms;
		char *err = NULL;
		if (run_capture(c, c->trace_envp, PROBE_TIMEOUT_MS, &st, &ms, &err) < 0 || st != 0) {
			tr->failures++;
			free(err);
			continue;
		}
		tr->runs++;
		wall[nwall++] = ms;
		/* Several processes (ward, the sandbox's init, the command before
		 * exec) print to the same stderr, so lines may arrive out of order:
		 * sort one run's events by time before taking differences. */
		struct event ev[MAX_EVENTS];
		size_t nev = 0;
		for (char *line = err; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (nev < MAX_EVENTS &&
			    sscanf(line, "ward-trace: %63s %lf", ev[nev].name, &ev[nev].us) == 2) {
				const char *cp = strstr(line, " cpu=");
				ev[nev].cpu = cp ? atof(cp + 5) : -1;
				nev++;
			}
			line = nl ? nl + 1 : NULL;
		}
		qsort(ev, nev, sizeof(ev[0]), cmp_event);
		/* CPU: each process's clock, from its previous phase (or its start) */
		double last_cpu[3] = {0, 0, 0};
		for (size_t e = 0; e < nev; e++) {
			int pr = phase_proc(ev[e].name);
			double cpu = ev[e].cpu >= 0 ? ev[e].cpu - last_cpu[pr] : -1;
			if (ev[e].cpu >= 0)
				last_cpu[pr] = ev[e].cpu;
			phase_add(phase_get(&tr->ph, &tr->nph, ev[e].name), ev[e].us,
				  ev[e].us - (e ? ev[e - 1].us : 0), cpu);
		}
		free(err);
	}
	tr->wall_med = median_of(wall, nwall);
	free(wall);
	/* Report phases in the order they happen (median time), not the order
	 * they were first seen. */
	for (size_t i = 0; i < tr->nph; i++)
		tr->ph[i].med_at = median_of(tr->ph[i].at, tr->ph[i].n);
	qsort(tr->ph, tr->nph, sizeof(tr->ph[0]), cmp_phase);
	if (!tr->nph)
		tr->skip = xstrdup("ward printed no ward-trace: lines with WARD_TRACE=1");
	printf("  trace: %ld runs, %zu phases%s\n", tr->runs, tr->nph,
	       tr->nph ? "" : " (no ward-trace lines: table skipped)");
}

static struct cmd *find(struct cmd *cmds, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(cmds[i].name, name) == 0 && cmds[i].ok && cmds[i].n)
			return &cmds[i];
	return NULL;
}

static double rps(const struct tput *t)
{
	return t->secs > 0 ? (double)t->runs / t->secs : NAN;
}

/* ---- output ---- */

static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int write_json(const char *path, struct cmd *cmds, size_t n, const struct opts *o,
		      const struct trace *tr)
{
	json_t *root = json_object(), *meta = json_object(), *jc = json_array();
	for (size_t i = 0; i < o->nmeta; i++) {
		const char *eq = strchr(o->meta[i], '=');
		char *k = strndup(o->meta[i], eq ? (size_t)(eq - o->meta[i]) : strlen(o->meta[i]));
		if (k)
			json_object_set_new(meta, k, json_string(eq ? eq + 1 : ""));
		free(k);
	}
	json_object_set_new(root, "host", meta);
	json_object_set_new(root, "settings",
			    json_pack("{s:I,s:I,s:I,s:f,s:I}", "runs_per_pass", (json_int_t)o->runs,
				      "passes", (json_int_t)o->passes, "warmup",
				      (json_int_t)o->warmup, "throughput_secs", o->secs,
				      "trace_runs", (json_int_t)o->trace_runs));
	struct cmd *bare = find(cmds, n, REF_BARE), *bwrap = find(cmds, n, REF_BWRAP);
	for (size_t i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		json_t *o1 = json_object();
		json_object_set_new(o1, "name", json_string(c->name));
		json_object_set_new(o1, "command", json_string(c->line));
		json_object_set_new(o1, "ok", json_boolean(c->ok));
		if (!c->ok) {
			json_object_set_new(o1, "skipped", json_string(c->skip ? c->skip : ""));
			json_array_append_new(jc, o1);
			continue;
		}
		json_t *lat = json_object();
		json_object_set_new(lat, "n", json_integer((json_int_t)c->n));
		json_object_set_new(lat, "failures", json_integer(c->failures));
		json_object_set_new(lat, "cpu_median_ms", jnum(c->cpu_med));
		json_object_set_new(lat, "cpu_own_wait4_median_ms", jnum(c->cpu_own_med));
		json_object_set_new(lat, "median_ms", jnum(c->med));
		json_object_set_new(lat, "p90_ms", jnum(c->p90));
		json_object_set_new(lat, "p99_ms", jnum(c->p99));
		json_object_set_new(lat, "min_ms", jnum(c->min));
		json_object_set_new(lat, "max_ms", jnum(c->max));
		json_object_set_new(lat, "mean_ms", jnum(c->mean));
		json_t *pm = json_array(), *sm = json_array();
		for (long p = 0; c->pass_median && p < o->passes; p++)
			json_array_append_new(pm, jnum(c->pass_median[p]));
		for (size_t s = 0; s < c->n; s++)
			json_array_append_new(sm, json_real(round(c->samples[s] * 1e4) / 1e4));
		json_object_set_new(lat, "pass_median_ms", pm);
		if (bare)
			json_object_set_new(lat, "ratio_to_bare", jnum(c->med / bare->med));
		if (bwrap)
			json_object_set_new(lat, "ratio_to_bwrap", jnum(c->med / bwrap->med));
		json_object_set_new(lat, "samples_ms", sm);
		json_object_set_new(o1, "latency", lat);
		if (c->throughput) {
			json_t *ta = json_array();
			for (int j = 0; j < o->ncallers; j++) {
				const struct tput *t = &c->tput[j];
				json_t *tj = json_pack("{s:i,s:I,s:I,s:f}", "callers", t->callers, "runs",
						       (json_int_t)t->runs, "failures",
						       (json_int_t)t->failures, "secs", t->secs);
				json_object_set_new(tj, "runs_per_sec", jnum(rps(t)));
				if (bare)
					json_object_set_new(tj, "ratio_to_bare",
							    jnum(rps(t) / rps(&bare->tput[j])));
				if (bwrap)
					json_object_set_new(tj, "ratio_to_bwrap",
							    jnum(rps(t) / rps(&bwrap->tput[j])));
				json_array_append_new(ta, tj);
			}
			json_object_set_new(o1, "throughput", ta);
		}
		json_array_append_new(jc, o1);
	}
	json_object_set_new(root, "commands", jc);
	json_t *jt = json_object();
	if (tr->skip || !tr->nph) {
		json_object_set_new(jt, "skipped", json_string(tr->skip ? tr->skip : "not run"));
	} else {
		json_object_set_new(jt, "runs", json_integer(tr->runs));
		json_object_set_new(jt, "wall_median_ms", jnum(tr->wall_med));
		json_t *pa = json_array();
		for (size_t i = 0; i < tr->nph; i++)
			json_array_append_new(
				pa, json_pack("{s:s,s:o,s:o,s:o,s:I}", "phase", tr->ph[i].name,
					      "median_us", jnum(median_of(tr->ph[i].at, tr->ph[i].n)),
					      "median_delta_us",
					      jnum(median_of(tr->ph[i].delta, tr->ph[i].n)), "median_cpu_us",
					      jnum(median_of(tr->ph[i].cpu, tr->ph[i].n)), "n",
					      (json_int_t)tr->ph[i].n));
		json_object_set_new(jt, "phases", pa);
	}
	json_object_set_new(root, "trace", jt);
	int rc = json_dump_file(root, path, JSON_INDENT(1));
	json_decref(root);
	if (rc != 0)
		fprintf(stderr, "wbench: cannot write %s\n", path);
	return rc;
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	if (!f)
		fprintf(stderr, "wbench: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

/* Gnuplot input: one row per measured command, in the order given. */
static int write_dat(const char *dir, struct cmd *cmds, size_t n, const struct opts *o)
{
	FILE *l = open_out(dir, "latency.dat"), *t = open_out(dir, "throughput.dat");
	if (!l || !t) {
		if (l)
			fclose(l);
		if (t)
			fclose(t);
		return -1;
	}
	/* First lines are column heads (gnuplot's columnheader), not comments. */
	fprintf(l, "name median p99 min p90\n");
	fprintf(t, "name");
	for (int j = 0; j < o->ncallers; j++)
		fprintf(t, " \"%d callers\"", o->callers[j]);
	fprintf(t, "\n");
	for (size_t i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		if (!c->ok || !c->n)
			continue;
		fprintf(l, "\"%s\" %.4f %.4f %.4f %.4f\n", c->name, c->med, c->p99, c->min, c->p90);
		if (!c->throughput)
			continue;
		fprintf(t, "\"%s\"", c->name);
		for (int j = 0; j < o->ncallers; j++)
			fprintf(t, " %.1f", rps(&c->tput[j]));
		fprintf(t, "\n");
	}
	int rc = 0;
	if (fclose(l) != 0)
		rc = -1;
	if (fclose(t) != 0)
		rc = -1;
	return rc;
}

static void ratio_cell(FILE *f, double v, double ref)
{
	if (isfinite(v) && isfinite(ref) && ref > 0)
		fprintf(f, " %.2f× |", v / ref);
	else
		fprintf(f, " – |");
}

static void write_tables(FILE *f, struct cmd *cmds, size_t n, const struct opts *o,
			 const struct trace *tr, bool md)
{
	struct cmd *bare = find(cmds, n, REF_BARE), *bwrap = find(cmds, n, REF_BWRAP);
	struct cmd *ward = find(cmds, n, "ward");
	const char *h = md ? "## " : "== ";

	if (ward && (bare || bwrap)) {
		fprintf(f, "%sSummary\n\n", h);
		fprintf(f, "`ward run -- /bin/true` median %.2f ms", ward->med);
		if (bwrap)
			fprintf(f, " = %.2f× bwrap (%.2f ms)", ward->med / bwrap->med, bwrap->med);
		if (bare)
			fprintf(f, ", %.1f× bare fork+exec (%.2f ms)", ward->med / bare->med, bare->med);
		fprintf(f, "; CPU per run (the whole tree's, from wait4, orphans reaped as a subreaper) %.2f ms",
			ward->cpu_med);
		if (bwrap)
			fprintf(f, " = %.2f× bwrap's (%.2f ms; %.2f ms without the PID 1 bwrap leaves unreaped, "
				   "which holds the command's CPU)",
				ward->cpu_med / bwrap->cpu_med, bwrap->cpu_med, bwrap->cpu_own_med);
		fprintf(f, ".\n");
		for (int j = 0; j < o->ncallers && ward->throughput; j++) {
			fprintf(f, "%s%d callers: ward %.0f runs/s", md ? "\n" : "", o->callers[j],
				rps(&ward->tput[j]));
			if (bwrap && bwrap->throughput)
				fprintf(f, ", bwrap %.0f runs/s (ward/bwrap %.2f)",
					rps(&bwrap->tput[j]),
					rps(&ward->tput[j]) / rps(&bwrap->tput[j]));
			fprintf(f, ".\n");
		}
		fprintf(f, "\n");
	}

	fprintf(f, "%sCommands\n\n", h);
	if (md)
		fprintf(f, "| name | command line |\n| --- | --- |\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, md ? "| %s | `%s` |\n" : "  %-16s %s\n", cmds[i].name, cmds[i].line);
	fprintf(f, "\n");

	fprintf(f, "%sLatency: spawn to reap, ms (%ld runs x %ld passes, interleaved, %ld warm-up "
		   "iterations per pass discarded)\n\n",
		h, o->runs, o->passes, o->warmup);
	fprintf(f, "| command | median | p99 | p90 | min | mean | pass medians | ×bare | ×bwrap | "
		   "CPU ms (median) | CPU ×bwrap | CPU ms, own wait4 only | failed |\n");
	fprintf(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		if (!c->ok || !c->n)
			continue;
		fprintf(f, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | ", c->name, c->med, c->p99,
			c->p90, c->min, c->mean);
		for (long p = 0; p < o->passes; p++)
			fprintf(f, "%s%.3f", p ? " / " : "", c->pass_median[p]);
		fprintf(f, " |");
		ratio_cell(f, c->med, bare ? bare->med : NAN);
		ratio_cell(f, c->med, bwrap ? bwrap->med : NAN);
		fprintf(f, " %.3f |", c->cpu_med);
		ratio_cell(f, c->cpu_med, bwrap ? bwrap->cpu_med : NAN);
		fprintf(f, " %.3f | %ld |\n", c->cpu_own_med, c->failures);
	}
	fprintf(f, "\n");

	fprintf(f, "%sThroughput: runs/s, callers spawning back to back for %.1f s\n\n", h,
		o->secs);
	fprintf(f, "| command |");
	for (int j = 0; j < o->ncallers; j++)
		fprintf(f, " %d callers | ×bare | ×bwrap |", o->callers[j]);
	fprintf(f, " failed |\n| --- |");
	for (int j = 0; j < o->ncallers; j++)
		fprintf(f, " ---: | ---: | ---: |");
	fprintf(f, " ---: |\n");
	for (size_t i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		if (!c->ok || !c->n || !c->throughput)
			continue;
		long failed = 0;
		fprintf(f, "| %s |", c->name);
		for (int j = 0; j < o->ncallers; j++) {
			fprintf(f, " %.0f |", rps(&c->tput[j]));
			ratio_cell(f, rps(&c->tput[j]), bare ? rps(&bare->tput[j]) : NAN);
			ratio_cell(f, rps(&c->tput[j]), bwrap ? rps(&bwrap->tput[j]) : NAN);
			failed += c->tput[j].failures;
		}
		fprintf(f, " %ld |\n", failed);
	}
	fprintf(f, "\n");

	/* Variants (latency-only rows such as ward with seccomp off) against
	 * the full ward row: the difference is that mechanism's start-up cost. */
	bool any_variant = false;
	for (size_t i = 0; i < n; i++)
		any_variant |= !cmds[i].throughput && cmds[i].ok && cmds[i].n;
	if (ward && any_variant) {
		fprintf(f, "%sVariants of ward: what each part costs at start-up (median, same "
			   "interleaved run)\n\n",
			h);
		fprintf(f, "| variant | command line | median ms | ward − variant, ms | share of "
			   "ward |\n");
		fprintf(f, "| --- | --- | ---: | ---: | ---: |\n");
		for (size_t i = 0; i < n; i++) {
			struct cmd *c = &cmds[i];
			if (c->throughput || !c->ok || !c->n)
				continue;
			fprintf(f, "| %s | `%s` | %.3f | %.3f | %.1f%% |\n", c->name, c->line, c->med,
				ward->med - c->med, 100 * (ward->med - c->med) / ward->med);
		}
		fprintf(f, "\n");
	}

	if (tr->nph) {
		fprintf(f, "%sward start-up phases (WARD_TRACE=1, %ld runs; median wall %.3f ms)\n\n",
			h, tr->runs, tr->wall_med);
		fprintf(f, "| phase | at, µs since start (median) | since previous phase, µs "
			   "(median) | process | its CPU since its previous phase, µs (median) |\n"
			   "| --- | ---: | ---: | --- | ---: |\n");
		for (size_t i = 0; i < tr->nph; i++) {
			fprintf(f, "| %s | %.0f | %.0f | %s |", tr->ph[i].name,
				median_of(tr->ph[i].at, tr->ph[i].n),
				median_of(tr->ph[i].delta, tr->ph[i].n), proc_names[phase_proc(tr->ph[i].name)]);
			double cpu = median_of(tr->ph[i].cpu, tr->ph[i].n);
			if (cpu >= 0)
				fprintf(f, " %.0f |\n", cpu);
			else
				fprintf(f, " |\n");
		}
		fprintf(f, "\nCPU: the CPU clock of the process that printed the phase "
			   "(`cpu=` in WARD_TRACE's lines): ward's counts from its exec (the first row "
			   "holds ward's own start-up), PID 1's and the command's from their clones. "
			   "Wall and CPU differ where a process waits (another process, the kernel's "
			   "RCU grace periods) or where two run at once.\n");
		fprintf(f, "\n");
	}

	bool any_skip = tr->skip != NULL;
	for (size_t i = 0; i < n; i++)
		any_skip |= !cmds[i].ok;
	if (any_skip) {
		fprintf(f, "%sSkipped\n\n", h);
		for (size_t i = 0; i < n; i++)
			if (!cmds[i].ok)
				fprintf(f, "- %s: %s\n", cmds[i].name, cmds[i].skip);
		if (tr->skip)
			fprintf(f, "- phase breakdown: %s\n", tr->skip);
		fprintf(f, "\n");
	}
}

static int write_md(const char *path, struct cmd *cmds, size_t n, const struct opts *o,
		    const struct trace *tr)
{
	FILE *f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "wbench: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "# Start-up benchmarks\n\n");
	fprintf(f, "Generated by `make bench` (bench/run, driver bench/wbench.c); do not edit by "
		   "hand, rerun it.\n\n");
	for (size_t i = 0; i < o->nmeta; i++) {
		const char *eq = strchr(o->meta[i], '=');
		if (eq)
			fprintf(f, "- %.*s: %s\n", (int)(eq - o->meta[i]), o->meta[i], eq + 1);
	}
	fprintf(f, "\nEach sample is `posix_spawnp()` + `waitpid()` of the whole command line, "
		   "timed with CLOCK_MONOTONIC in the C driver (no shell in the loop); "
		   "stdin, stdout and stderr on /dev/null. Latency runs interleave the commands, "
		   "rotating their order each iteration, so drift hits all alike. Throughput: N "
		   "threads each spawning the command back to back, in two alternating rounds; "
		   "runs/s counts completed runs over the time until the last one was reaped. "
		   "CPU: the rusage of the command's wait4 plus that of every descendant it left "
		   "behind, which the driver reaps as a child subreaper (bwrap exits when its PID 1 "
		   "reports the command's status and leaves that PID 1, with the command's CPU in it, "
		   "unreaped; ward reaps its own); the column \"own wait4 only\" is the first part "
		   "alone. Ratios are against the `bare` and `bwrap` rows of the same run.\n\n");
	fprintf(f, "Reproduce: `make bench` (full run, rewrites this file and bench.png), or "
		   "`bench/run --quick` (smoke run into bench/out/ only); raw samples are in "
		   "bench/out/results.json. Knobs: `bench/run --help`.\n\n");
	fprintf(f, "![latency and throughput against bwrap and bare fork+exec](bench.png)\n\n");
	write_tables(f, cmds, n, o, tr, true);
	if (fclose(f) != 0) {
		fprintf(stderr, "wbench: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int parse_callers(const char *s, struct opts *o)
{
	o->ncallers = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 64 || o->ncallers == MAX_CALLERS)
			return -1;
		o->callers[o->ncallers++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return o->ncallers ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wbench [OPTIONS] NAME=CMDLINE...\n"
		"  NAME=CMDLINE     a command measured for latency and throughput; CMDLINE is\n"
		"                   split like a shell would (no $(...)), may start with VAR=VALUE\n"
		"  -L NAME=CMDLINE  a command measured for latency only (a variant)\n"
		"  -n RUNS          runs per pass (200)     -P PASSES  passes (2)\n"
		"  -w WARMUP        warm-up iterations per pass, discarded (10)\n"
		"  -b SECS          latency time budget; runs are cut to fit (90, 0 = none)\n"
		"  -s SECS          throughput time per command and caller count (2)\n"
		"  -j LIST          caller counts for throughput (2,8)\n"
		"  -T NAME          collect ward-trace phases from this command (WARD_TRACE=1)\n"
		"  -k RUNS          traced runs (50)\n"
		"  -o FILE  JSON results   -m FILE  markdown report   -d DIR  gnuplot data\n"
		"  -M KEY=VALUE     host facts for the report (repeatable)\n"
		"Ratios divide by the rows named '" REF_BARE "' and '" REF_BWRAP "'.\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.runs = 200, .passes = 2, .warmup = 10, .trace_runs = 50, .secs = 2,
			 .budget = 90, .callers = {2, 8}, .ncallers = 2};
	struct cmd *cmds = NULL;
	size_t ncmd = 0;
	int rc = 2;
	char **lat_only = NULL;
	size_t nlat_only = 0;
	struct trace tr = {0};
	struct cmd **live = NULL;

	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		perror("wbench: /dev/null");
		return 2;
	}
	int opt;
	while ((opt = getopt(argc, argv, "L:n:P:w:b:s:j:T:k:o:m:d:M:h")) != -1) {
		switch (opt) {
		case 'L':
			lat_only = xrealloc(lat_only, (nlat_only + 1) * sizeof(char *));
			lat_only[nlat_only++] = optarg;
			break;
		case 'n': o.runs = atol(optarg); break;
		case 'P': o.passes = atol(optarg); break;
		case 'w': o.warmup = atol(optarg); break;
		case 'b': o.budget = atof(optarg); break;
		case 's': o.secs = atof(optarg); break;
		case 'j':
			if (parse_callers(optarg, &o) < 0) {
				fprintf(stderr, "wbench: -j %s: expected a list like 2,8 (1..64)\n",
					optarg);
				goto out;
			}
			break;
		case 'T': o.trace_name = optarg; break;
		case 'k': o.trace_runs = atol(optarg); break;
		case 'o': o.json_path = optarg; break;
		case 'm': o.md_path = optarg; break;
		case 'd': o.dat_dir = optarg; break;
		case 'M':
			o.meta = xrealloc(o.meta, (o.nmeta + 1) * sizeof(char *));
			o.meta[o.nmeta++] = optarg;
			break;
		case 'h': usage(stdout); rc = 0; goto out;
		default: usage(stderr); goto out;
		}
	}
	if (o.runs < 1 || o.passes < 1 || o.passes > 16 || o.warmup < 0 || o.trace_runs < 0 ||
	    !(o.secs > 0)) {
		fprintf(stderr, "wbench: -n, -P (1..16), -s must be positive; -w, -k not negative\n");
		goto out;
	}
	size_t total = (size_t)(argc - optind) + nlat_only;
	if (!total) {
		usage(stderr);
		goto out;
	}
	cmds = xrealloc(NULL, total * sizeof(*cmds));
	for (int i = optind; i < argc; i++) {
		if (cmd_init(&cmds[ncmd], argv[i], true) < 0)
			goto out;
		ncmd++;
	}
	for (size_t i = 0; i < nlat_only; i++) {
		if (cmd_init(&cmds[ncmd], lat_only[i], false) < 0)
			goto out;
		ncmd++;
	}

	printf("== commands\n");
	for (size_t i = 0; i < ncmd; i++)
		printf("  %-16s %s\n", cmds[i].name, cmds[i].line);
	printf("== probe\n");
	live = xrealloc(NULL, ncmd * sizeof(*live));
	size_t nlive = 0;
	for (size_t i = 0; i < ncmd; i++) {
		probe(&cmds[i]);
		if (cmds[i].ok)
			live[nlive++] = &cmds[i];
	}
	printf("== latency\n");
	latency(live, nlive, &o);
	for (size_t k = 0; k < nlive; k++)
		summarize(live[k]);
	printf("== throughput\n");
	throughput(live, nlive, &o);
	if (o.trace_name) {
		struct cmd *t = NULL;
		for (size_t i = 0; i < ncmd; i++)
			if (strcmp(cmds[i].name, o.trace_name) == 0)
				t = &cmds[i];
		printf("== trace\n");
		if (!t)
			tr.skip = xstrdup("no command of that name");
		else if (!t->ok)
			tr.skip = xstrdup("the command itself was skipped");
		else if (o.trace_runs > 0)
			trace(t, &o, &tr);
		if (tr.skip && !tr.nph)
			printf("  skipped: %s\n", tr.skip);
	}
	printf("\n");
	write_tables(stdout, cmds, ncmd, &o, &tr, false);
	rc = 0;
	if (o.json_path && write_json(o.json_path, cmds, ncmd, &o, &tr) != 0)
		rc = 1;
	if (o.md_path && write_md(o.md_path, cmds, ncmd, &o, &tr) != 0)
		rc = 1;
	if (o.dat_dir && write_dat(o.dat_dir, cmds, ncmd, &o) != 0)
		rc = 1;
out:
	for (size_t i = 0; i < ncmd; i++)
		cmd_free(&cmds[i]);
	for (size_t i = 0; i < tr.nph; i++) {
		free(tr.ph[i].name);
		free(tr.ph[i].at);
		free(tr.ph[i].delta);
		free(tr.ph[i].cpu);
	}
	free(tr.ph);
	free(tr.skip);
	free(live);
	free(cmds);
	free(lat_only);
	free(o.meta);
	close(devnull);
	return rc;
}
