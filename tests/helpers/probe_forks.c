/* probe_forks N [HOLD] — fork up to N children (capped at 200) that each
 * wait for the parent, report how many forks succeeded and why the first one
 * failed, keep them HOLD seconds (capped at 10), then let them go.  Used against --pids: bounded even when no limit is enforced.
 * Prints "forks=K errno=NAME".
 *
 * probe_forks -n L N — L forkers (2 to 8, separate subtrees) each do the
 * above at the same time, and every child is held until all L forkers have
 * finished forking: the counts are of children alive at once, however the
 * forkers are scheduled.  Prints one "forks=K errno=NAME" line per forker. */
#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Wait for EOF on fd. */
static void await_eof(int fd)
{
	char c;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

/* Fork up to n children that wait for EOF on hold (the top's write end);
 * each closes other (-1: none) first.  The count, the first error in *err. */
static int fork_held(int n, int hold, int other, int *err)
{
	int k = 0;
	*err = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			*err = errno;
			break;
		}
		if (pid == 0) {
			if (other >= 0)
				close(other);
			alarm(30);
			await_eof(hold);
			_exit(0);
		}
		k++;
	}
	return k;
}

static int forkers(int l, int n)
{
	int start[2], hold[2], report[2];
	if (pipe(start) < 0 || pipe(hold) < 0 || pipe(report) < 0)
		return perror("pipe"), 2;
	for (int j = 0; j < l; j++) {
		pid_t pid = fork();
		if (pid < 0)
			return perror("fork"), 2;
		if (pid == 0) {
			close(start[1]);
			close(hold[1]);
			close(report[0]);
			await_eof(start[0]); /* all forkers exist before any forks */
			close(start[0]);
			int err, k = fork_held(n, hold[0], report[1], &err);
			char line[64];
			int len = snprintf(line, sizeof(line), "forks=%d errno=%s\n", k,
					   err ? strerrorname_np(err) : "none");
			(void)!write(report[1], line, (size_t)len); /* one write: whole */
			close(report[1]);
			await_eof(hold[0]);
			while (wait(NULL) > 0 || errno == EINTR)
				;
			_exit(0);
		}
	}
	close(start[0]);
	close(start[1]); /* go */
	close(hold[0]);
	close(report[1]);
	/* every forker's line (or its death): EOF once all have reported */
	char buf[64 * 8 + 1];
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(buf) - 1 && ((r = read(report[0], buf + got, sizeof(buf) - 1 - got)) > 0 ||
					 (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	fwrite(buf, 1, got, stdout);
	fflush(stdout);
	close(hold[1]); /* now every child may go */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 3 && strcmp(argv[1], "-n") == 0) {
		int l = atoi(argv[2]), n = atoi(argv[3]);
		if (l < 2 || l > 8 || n < 1 || n > 200)
			return 2;
		alarm(30);
		return forkers(l, n);
	}
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int hold = argc > 2 ? atoi(argv[2]) : 0;
	int p[2], k = 0, err = 0;

	if (n < 1 || n > 200) /* the cap: never a real fork bomb */
		n = 200;
	alarm(30);
	if (pipe(p) < 0)
		return perror("pipe"), 2;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			char c;
			close(p[1]);
			alarm(30);
			/* EOF when the parent closes its end or dies. */
			while (read(p[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		k++;
	}
	printf("forks=%d errno=%s\n", k, err ? strerrorname_np(err) : "none");
	fflush(stdout);
	if (hold > 0)
		sleep(hold > 10 ? 10 : hold);
	close(p[1]);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}
