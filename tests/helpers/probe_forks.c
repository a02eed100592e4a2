/* probe_forks N [HOLD] — fork up to N children (capped at 200) that each
 * wait for the parent, report how many forks succeeded and why the first one
 * failed, keep them HOLD seconds (capped at 10), then let them go.  Used against --pids: bounded even when no limit is enforced.
 * Prints "forks=K errno=NAME". */
#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
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
