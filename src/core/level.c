/* level.c — what every isolation level shares (declared in backend.h):
 * the command's environment and argv, its last steps in the child (a
 * fresh signal state, rlimits, the PATH search and execve), and, in the
 * parent, the usage and streams of a finished run.  Below the dispatcher
 * (src/dispatch/run.c) and the levels (application.c, src/system/): it
 * calls none of them, and the
 * child's parts use only syscalls and snprintf. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/egress.h"
#include "core/request.h"
#include "ward.h"

char **env_build(const struct ward_request *req, const char *const *extra)
{
	static const char *const fixed[] = {"PATH=" WARD_PATH, "LANG=C.UTF-8", "HOME=/work", "TMPDIR=/tmp"};
	size_t n = sizeof(fixed) / sizeof(fixed[0]);
	size_t ne = 0, nx = 0;
	if (req->env)
		while (req->env[ne])
			ne++;
	if (extra)
		while (extra[nx])
			nx++;
	/* network allow: the proxy (SPEC §13), before what the caller sets */
	const char *const *proxy = req->net == WARD_NET_ALLOW ? egress_proxy_env : NULL;
	size_t np = 0;
	while (proxy && proxy[np])
		np++;
	char **env = calloc(n + np + nx + ne + 1, sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	/* Later entries replace earlier ones with the same name. */
	const char *const *lists[4] = {fixed, proxy, extra, (const char *const *)req->env};
	size_t lens[4] = {n, np, nx, ne};
	for (int l = 0; l < 4; l++) {
		for (size_t i = 0; i < lens[l]; i++) {
			const char *e = lists[l][i];
			size_t nl = strcspn(e, "=");
			size_t j;
			for (j = 0; j < k; j++)
				if (strncmp(env[j], e, nl + 1) == 0)
					break;
			char *dup = strdup(e);
			if (!dup) {
				env_free(env);
				return NULL;
			}
			if (j < k) {
				free(env[j]);
				env[j] = dup;
			} else
				env[k++] = dup;
		}
	}
	env[k] = NULL;
	return env;
}

void env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

char **argv_build(const struct ward_request *req)
{
	const char *sh_argv[] = {"/bin/sh", "-c", req->shell, NULL};
	char *const *src = req->argv && req->argv[0] ? req->argv : (char *const *)sh_argv;
	size_t argc = 0;
	while (src[argc])
		argc++;
	char **argv = calloc(argc + 1, sizeof(char *));
	if (argv)
		memcpy(argv, src, argc * sizeof(char *));
	return argv;
}

void exec_search(char *const argv[], char *const envp[])
{
	const char *prog = argv[0];
	if (strchr(prog, '/')) {
		execve(prog, argv, envp);
		return;
	}
	const char *path = WARD_PATH;
	for (char *const *e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	int saved = ENOENT;
	char buf[4096];
	size_t plen = strlen(prog);
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);
		if (dl + plen + 2 <= sizeof(buf)) {
			if (dl == 0) {
				memcpy(buf, prog, plen + 1);
			} else {
				memcpy(buf, p, dl);
				buf[dl] = '/';
				memcpy(buf + dl + 1, prog, plen + 1);
			}
			execve(buf, argv, envp);
			if (errno == EACCES || errno == ENOEXEC || errno == ETXTBSY)
				saved = errno;
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
		if (!*end)
			break;
		p = end;
	}
	errno = saved;
}

void exec_fail_exit(const char *prog, int err)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "ward: cannot run '%s': %s%s\n", prog, strerror(err),
	                 err == ENOENT ? " (not found inside the sandbox)" : "");
	if (n > 0)
		(void)!write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(err == ENOENT ? WARD_EXIT_NOTFOUND : 126);
}

void reset_signals(void)
{
	/* The raw syscall: glibc's sigaction() refuses its own internal
	 * signals (32, 33), which a parent may have left ignored. */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} ksa = {SIG_DFL, 0, NULL, 0};
	for (int sig = 1; sig <= 64; sig++)
		syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask)); /* EINVAL for KILL, STOP */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* and the same file mode mask wherever ward was started from */
	umask(022);
}

/* What each rlimit is asked for as, and how a shell shows its hard limit. */
static const struct {
	int res;
	const char *what, *ulimit;
	unsigned shift; /* the limit's unit: bytes >> shift */
	const char *unit;
} g_rlimit_names[] = {
	{RLIMIT_CORE, "the core-file limit", "ulimit -Hc", 0, ""},
	{RLIMIT_FSIZE, "the file-size limit (--fsize, limits.fsize_mb)", "ulimit -Hf", 20, " MB"},
	{RLIMIT_NOFILE, "the open-files limit (--nofile, limits.nofile)", "ulimit -Hn", 0, ""},
	{RLIMIT_CPU, "the CPU-time limit (--cpu, else --timeout)", "ulimit -Ht", 0, " s"},
	{RLIMIT_NPROC, "the process limit (--pids, limits.pids)", "ulimit -Hu", 0, ""},
	{RLIMIT_AS, "the address-space limit that stands in for --memory (no memory cgroup here)", "ulimit -Hv", 20,
         " MB"},
};

/* Why setting limit i to *w failed, with the fix.  Only syscalls and
 * snprintf: it runs in the command, which may share PID 1's memory. */
static void rlimit_error(size_t i, const struct rlimit *w, int e, char *err, size_t errlen)
{
	struct rlimit have;
	unsigned sh = g_rlimit_names[i].shift;
	if (getrlimit(g_rlimit_names[i].res, &have) == 0 && have.rlim_max != RLIM_INFINITY &&
	    w->rlim_max > have.rlim_max)
		snprintf(err, errlen,
		         "%s of %llu%s is above the hard limit of %llu%s that ward was started with (%s): ask for "
		         "less, or raise that hard limit",
		         g_rlimit_names[i].what, (unsigned long long)(w->rlim_cur >> sh), g_rlimit_names[i].unit,
		         (unsigned long long)(have.rlim_max >> sh), g_rlimit_names[i].unit, g_rlimit_names[i].ulimit);
	else
		snprintf(err, errlen, "cannot set %s to %llu%s: %s", g_rlimit_names[i].what,
		         (unsigned long long)(w->rlim_cur >> sh), g_rlimit_names[i].unit, strerror(e));
}

int apply_rlimits(const struct ward_limits *l, bool with_as, char *err, size_t errlen)
{
	double cpu = l->cpu_s > 0 ? l->cpu_s : l->timeout_s;
	rlim_t cpu_soft = (rlim_t)ceil(cpu);
	/* Address space is a poor stand-in for RAM (runtimes reserve far
	 * more than they touch): give generous room, say so in enforced. */
	rlim_t as = ((rlim_t)l->memory_mb << 20) * 2 + (256u << 20);
	/* in g_rlimit_names' order; RLIMIT_AS last */
	const struct rlimit want[] = {
		{0, 0},
		{(rlim_t)l->fsize_mb << 20, (rlim_t)l->fsize_mb << 20},
		{l->nofile, l->nofile},
		{cpu_soft, cpu_soft + 1},
		{l->pids, l->pids},
		{as, as},
	};
	size_t n = sizeof(want) / sizeof(want[0]) - (with_as ? 0 : 1);
	for (size_t i = 0; i < n; i++)
		if (setrlimit(g_rlimit_names[i].res, &want[i]) < 0) {
			int e = errno;
			rlimit_error(i, &want[i], e, err, errlen);
			return -e;
		}
	return 0;
}

void usage_from_rusage(const struct rusage *ru, struct ward_usage *u)
{
	u->cpu_user_ms = (uint64_t)ru->ru_utime.tv_sec * 1000 + (uint64_t)ru->ru_utime.tv_usec / 1000;
	u->cpu_sys_ms = (uint64_t)ru->ru_stime.tv_sec * 1000 + (uint64_t)ru->ru_stime.tv_usec / 1000;
	u->max_rss_kb = (uint64_t)ru->ru_maxrss;
}

int outcome_collect(struct supervise *s, struct ward_result *res)
{
	int r = capbuf_finish(&s->out, &res->out);
	if (s->out.live_dropped) {
		/* where the reader of stderr (a terminal, say) may see it */
		char note[160];
		int n = snprintf(note, sizeof(note),
		                 "ward: %llu bytes of stdout dropped: the reader of ward's output did not keep up\n",
		                 (unsigned long long)s->out.live_dropped);
		capbuf_feed(&s->err, note, (size_t)n);
	}
	if (r == 0)
		r = capbuf_finish(&s->err, &res->err);
	res->report = s->report;
	res->report_len = s->report_len;
	res->report_truncated = s->report_truncated;
	s->report = NULL;
	return r;
}
