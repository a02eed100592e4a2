/* probe_spin S — burn CPU for at most S seconds of wall-clock time (capped at
 * 30), then print "spun" and exit 0.  Used against --cpu: bounded even when
 * no limit is enforced. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 10, t0 = now();
	volatile unsigned long x = 0;

	if (s <= 0 || s > 30)
		s = 30;
	while (now() - t0 < s)
		for (int i = 0; i < 100000; i++)
			x++;
	printf("spun\n");
	return 0;
}
