/* probe_mem MB [HOLD] — allocate and touch MB mebibytes (capped at 1024) in
 * 4 MiB steps, hold them HOLD seconds (capped at 10), then exit 0.  Used against --memory: bounded even when no limit is
 * enforced.  Prints "allocated=MB" at the end, or "malloc-failed-at=MB"
 * (exit 2) when an allocation fails (an rlimit, not the OOM killer).
 *
 * probe_mem -n N MB — N children (2 to 8) each allocate and touch MB and
 * hold it.  Once every child has either said it holds its MB or died, the
 * parent asks those that said so to answer; each reads its memory through
 * and answers.  One the OOM killer took can no longer answer, so the count
 * is of children that held their MB at the same moment.  Prints
 * "held_at_once=K of N" (or "stuck" when a child neither finished nor died
 * within 30 s).  Which child the kernel kills does not change K: under a
 * whole-tree limit below N*MB it is less than N whatever the victim; with
 * no such limit it is N. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CHILDREN 8

static char *allocate(long mb, long *done)
{
	char *all = NULL;
	*done = 0;
	while (*done < mb) {
		char *c = malloc(4 << 20);
		if (!c)
			return NULL;
		memset(c, 0x5a, 4 << 20); /* touch every page: RSS, not just VM */
		*(char **)c = all;          /* keep a chain, to read it all again */
		all = c;
		*done += 4;
	}
	return all;
}

/* Every byte of the chain, read again: only a live process does this. */
static int still_held(char *all)
{
	long sum = 0;
	for (char *c = all; c; c = *(char **)c)
		for (size_t i = sizeof(char *); i < (4u << 20); i += 4096)
			sum += c[i];
	return sum != 0;
}

/* A child: allocate, say so on ready, wait for go to close, answer. */
static void holder(long mb, int ready, int go, int answer)
{
	alarm(60); /* (not inherited) bounded if the parent hangs */
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) { /* be the OOM killer's choice before the parent */
		(void)!write(fd, "1000", 4);
		close(fd);
	}
	long done;
	char *all = allocate(mb, &done);
	if (!all)
		_exit(2);
	(void)!write(ready, "r", 1);
	char b;
	(void)!read(go, &b, 1); /* EOF: the parent asks */
	if (still_held(all))
		(void)!write(answer, "a", 1);
	_exit(0);
}

/* Wait until every child has written on its ready pipe or died (its end
 * hung up with nothing in it); 0, or -1 after 30 s. */
static int wait_all_settled(int n, const int *ready)
{
	int settled[MAX_CHILDREN] = {0}, left = n;
	for (int waited = 0; left > 0 && waited < 300; waited++) {
		struct pollfd p[MAX_CHILDREN];
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){.fd = settled[i] ? -1 : ready[i], .events = POLLIN};
		if (poll(p, (nfds_t)n, 100) < 0)
			return -1;
		for (int i = 0; i < n; i++)
			if (!settled[i] && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				settled[i] = 1;
				left--;
			}
	}
	return left ? -1 : 0;
}

static int holders(int n, long mb)
{
	int ready[MAX_CHILDREN], go[2], answer[2];
	pid_t pid[MAX_CHILDREN];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(answer, O_CLOEXEC) < 0)
		return 3;
	for (int i = 0; i < n; i++) {
		int r[2];
		if (pipe2(r, O_CLOEXEC) < 0)
			return 3;
		pid[i] = fork();
		if (pid[i] < 0)
			return 3;
		if (pid[i] == 0) {
			close(r[0]);
			close(go[1]);
			close(answer[0]);
			holder(mb, r[1], go[0], answer[1]);
		}
		close(r[1]);
		ready[i] = r[0];
	}
	close(go[0]);
	close(answer[1]);
	if (wait_all_settled(n, ready) < 0) {
		printf("stuck\n");
		fflush(stdout);
		for (int i = 0; i < n; i++)
			kill(pid[i], SIGKILL);
		return 1;
	}
	close(go[1]); /* every child still alive reads EOF and answers */
	int k = 0;
	char b;
	while (read(answer[0], &b, 1) == 1) /* to EOF: every child is gone */
		k++;
	for (int i = 0; i < n; i++)
		waitpid(pid[i], NULL, 0);
	printf("held_at_once=%d of %d\n", k, n);
	return 0;
}

int main(int argc, char **argv)
{
	alarm(60);
	if (argc > 3 && strcmp(argv[1], "-n") == 0) {
		int n = atoi(argv[2]);
		long mb = atol(argv[3]);
		if (n < 2 || n > MAX_CHILDREN || mb < 4 || mb > 1024)
			return 3;
		return holders(n, mb);
	}
	long mb = argc > 1 ? atol(argv[1]) : 1024;
	long done = 0;
	int hold = argc > 2 ? atoi(argv[2]) : 0;

	if (mb < 1 || mb > 1024)
		mb = 1024;
	if (!allocate(mb, &done)) {
		printf("malloc-failed-at=%ld\n", done);
		return 2;
	}
	printf("allocated=%ld\n", done);
	fflush(stdout);
	if (hold > 0)
		sleep(hold > 10 ? 10 : hold);
	return 0;
}
