/* nsfloor.c — the kernel's floor under any sandbox's start-up, for `make
 * bench` (bench/run).
 *
 * C threads of one process each start PROGRAM back to back for SECS seconds,
 * the cheapest way a threaded runner can: clone(CLONE_VM|CLONE_VFORK) and
 * execve, no page tables copied.  Once into no new namespace ("bare"), once
 * into fresh user, mount, PID, IPC, UTS, network and cgroup namespaces
 * ("ns"), which is what every fresh sandbox costs before any mount, cgroup,
 * filter or HTTP work.  (`unshare -Urmpfin PROGRAM` measures an extra exec
 * of unshare itself, which on a small machine halves the rate.)
 *
 * Prints one line per mode: "NSFLOOR MODE CALLERS RUNS_PER_S FAILED".
 * Usage: nsfloor SECS CALLERS[,CALLERS...] PROGRAM [ARG...]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK (64 * 1024)

static char **g_argv;
static int g_flags, g_devnull;
static atomic_int g_stop;
static atomic_long g_runs, g_failed;

static int child(void *arg)
{
	(void)arg;
	dup2(g_devnull, 0);
	dup2(g_devnull, 1);
	dup2(g_devnull, 2);
	execv(g_argv[0], g_argv);
	_exit(127);
}

static void *caller(void *arg)
{
	(void)arg;
	char *stack = malloc(STACK);
	if (!stack)
		return NULL;
	while (!atomic_load(&g_stop)) {
		pid_t p = clone(child, stack + STACK, g_flags | CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		int st = 0;
		if (p < 0 || waitpid(p, &st, 0) < 0 || st != 0)
			atomic_fetch_add(&g_failed, 1);
		else
			atomic_fetch_add(&g_runs, 1);
	}
	free(stack);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void measure(const char *mode, int flags, int callers, double secs)
{
	pthread_t th[256];
	g_flags = flags;
	atomic_store(&g_stop, 0);
	atomic_store(&g_runs, 0);
	atomic_store(&g_failed, 0);
	double t0 = now();
	int n = 0;
	for (; n < callers && n < 256; n++)
		if (pthread_create(&th[n], NULL, caller, NULL) != 0)
			break;
	struct timespec d = {.tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&d, NULL);
	atomic_store(&g_stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	double el = now() - t0;
	printf("NSFLOOR %s %d %.0f %ld\n", mode, callers, (double)atomic_load(&g_runs) / el, atomic_load(&g_failed));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: nsfloor SECS CALLERS[,CALLERS...] PROGRAM [ARG...]\n");
		return 2;
	}
	double secs = atof(argv[1]);
	g_argv = argv + 3;
	g_devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (g_devnull < 0 || secs <= 0)
		return 2;
	const int ns = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
		       CLONE_NEWCGROUP;
	char *list = strdup(argv[2]);
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		int c = atoi(tok);
		if (c < 1)
			continue;
		measure("bare", 0, c, secs);
		measure("ns", ns, c, secs);
	}
	free(list);
	return 0;
}
