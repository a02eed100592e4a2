/* bench/sessexec.c — an exec of `true` in a session through libward itself
 * (ward_session_exec: no HTTP, no client), beside bare fork+exec of `true`
 * (posix_spawn + waitpid), interleaved, GAP seconds before each call; what
 * bench/session.py's HTTP rows cost above the library.
 *
 *   sessexec N GAP    prints "session MEDIAN P99 bare MEDIAN P99" in ms */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ward.h"

extern char **environ;

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void nap(double s)
{
	struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 60;
	double gap = argc > 2 ? atof(argv[2]) : 0.03;
	if (n < 2 || n > 100000)
		n = 60;
	struct ward_session_opts o;
	memset(&o, 0, sizeof(o));
	ward_request_init(&o.shape);
	char err[512];
	struct ward_session *s = ward_session_new(&o, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "sessexec: %s\n", err);
		return 1;
	}
	double *sess = calloc((size_t)n, sizeof(double)), *bare = calloc((size_t)n, sizeof(double));
	char *av[] = {"true", NULL};
	for (int i = 0; i < n && sess && bare; i++) {
		nap(gap);
		struct ward_request q;
		ward_request_init(&q);
		q.argv = av;
		q.capture = true;
		struct ward_result r;
		double t = now_ms();
		int rc = ward_session_exec(s, &q, NULL, &r);
		sess[i] = now_ms() - t;
		if (rc < 0 || r.status != WARD_ST_OK) {
			fprintf(stderr, "sessexec: the exec failed: %s\n", r.error);
			return 1;
		}
		ward_result_free(&r);
		nap(gap);
		pid_t p;
		t = now_ms();
		if (posix_spawnp(&p, "true", NULL, NULL, av, environ) != 0)
			return 1;
		waitpid(p, NULL, 0);
		bare[i] = now_ms() - t;
	}
	ward_session_destroy(s);
	if (!sess || !bare)
		return 1;
	qsort(sess, (size_t)n, sizeof(double), by_value);
	qsort(bare, (size_t)n, sizeof(double), by_value);
	int p99 = (n * 99) / 100 < n ? (n * 99) / 100 : n - 1;
	printf("session %.3f %.3f bare %.3f %.3f\n", sess[n / 2], sess[p99], bare[n / 2], bare[p99]);
	free(sess);
	free(bare);
	return 0;
}
