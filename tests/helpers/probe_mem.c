/* probe_mem MB [HOLD] — allocate and touch MB mebibytes (capped at 1024) in
 * 4 MiB steps, hold them HOLD seconds (capped at 10), then exit 0.  Used against --memory: bounded even when no limit is
 * enforced.  Prints "allocated=MB" at the end, or "malloc-failed-at=MB"
 * (exit 2) when an allocation fails (an rlimit, not the OOM killer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 1024;
	long done = 0;
	int hold = argc > 2 ? atoi(argv[2]) : 0;

	if (mb < 1 || mb > 1024)
		mb = 1024;
	alarm(60);
	while (done < mb) {
		char *c = malloc(4 << 20);
		if (!c) {
			printf("malloc-failed-at=%ld\n", done);
			return 2;
		}
		memset(c, 0x5a, 4 << 20); /* touch every page: RSS, not just VM */
		done += 4;
	}
	printf("allocated=%ld\n", done);
	fflush(stdout);
	if (hold > 0)
		sleep(hold > 10 ? 10 : hold);
	return 0;
}
