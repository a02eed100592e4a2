/* bench/sessexec.c — an exec of `true` in a session through libward itself
 * (ward_session_exec: no HTTP, no client), beside bare fork+exec of `true`
 * (posix_spawn + waitpid), interleaved, GAP seconds before each call; what
 * bench/session.py's HTTP rows cost above the library.
 *
 *   sessexec N GAP    prints "session MEDIAN P99 bare MEDIAN P99" in ms
 *
 * WARD_BEFORE=PATH (a ward binary built before a change, e.g. from main):
 * the same exec through that build's libward too, interleaved with the
 * others (each call GAP seconds after the last), and a third pair on the
 * line, "before MEDIAN P99".  It runs DIR/bench/sessexec next to that
 * binary (built from this file against DIR/libward.a: bench/session.py and
 * bench/run build it) as "sessexec --serve": one session, one exec of
 * `true` per line read on stdin, its time in ms written back.
 *   sessexec --serve  the other side of WARD_BEFORE */
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

/* One exec of `true` in s: its time in ms, or -1. */
static double one_exec(struct ward_session *s)
{
	char *av[] = {"true", NULL};
	struct ward_request q;
	ward_request_init(&q);
	q.argv = av;
	q.capture = true;
	struct ward_result r;
	double t = now_ms();
	int rc = ward_session_exec(s, &q, NULL, &r);
	t = now_ms() - t;
	if (rc < 0 || r.status != WARD_ST_OK) {
		fprintf(stderr, "sessexec: the exec failed: %s\n", r.error);
		t = -1;
	}
	ward_result_free(&r);
	return t;
}

static struct ward_session *new_session(void)
{
	struct ward_session_opts o;
	memset(&o, 0, sizeof(o));
	ward_request_init(&o.shape);
	char err[512];
	struct ward_session *s = ward_session_new(&o, err, sizeof(err));
	if (!s)
		fprintf(stderr, "sessexec: %s\n", err);
	return s;
}

/* The other side of WARD_BEFORE: an exec per line in, its time out. */
static int serve(void)
{
	struct ward_session *s = new_session();
	if (!s)
		return 1;
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		double t = one_exec(s);
		printf("%.6f\n", t);
		if (t < 0)
			break;
	}
	ward_session_destroy(s);
	return 0;
}

/* Start the before build's sessexec --serve: its stdin (*to) and stdout
 * (*from), or -1. */
static pid_t start_before(const char *ward, FILE **to, FILE **from)
{
	char exe[4096];
	const char *slash = strrchr(ward, '/');
	int dl = slash ? (int)(slash - ward) : 1;
	snprintf(exe, sizeof(exe), "%.*s/bench/sessexec", dl, slash ? ward : ".");
	int in[2], out[2];
	if (pipe(in) < 0 || pipe(out) < 0)
		return -1;
	pid_t p = fork();
	if (p == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(exe, exe, "--serve", (char *)NULL);
		fprintf(stderr, "sessexec: cannot run %s (build it from bench/sessexec.c against the before build's "
				"libward.a): %m\n", exe);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to = fdopen(in[1], "w");
	*from = fdopen(out[0], "r");
	return p;
}

static double before_exec(FILE *to, FILE *from)
{
	char line[64];
	if (fputs("x\n", to) < 0 || fflush(to) != 0 || !fgets(line, sizeof(line), from))
		return -1;
	return atof(line);
}

static void report(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), by_value);
	int p99 = (n * 99) / 100 < n ? (n * 99) / 100 : n - 1;
	printf("%s%s %.3f %.3f", strcmp(name, "session") ? " " : "", name, v[n / 2], v[p99]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		return serve();
	int n = argc > 1 ? atoi(argv[1]) : 60;
	double gap = argc > 2 ? atof(argv[2]) : 0.03;
	if (n < 2 || n > 100000)
		n = 60;
	const char *before = getenv("WARD_BEFORE");
	FILE *to = NULL, *from = NULL;
	pid_t bp = before && *before ? start_before(before, &to, &from) : -1;
	if (before && *before && (bp < 0 || !to || !from))
		return 1;
	struct ward_session *s = new_session();
	if (!s)
		return 1;
	double *sess = calloc((size_t)n, sizeof(double)), *bare = calloc((size_t)n, sizeof(double));
	double *prev = calloc((size_t)n, sizeof(double));
	char *av[] = {"true", NULL};
	if (bp > 0 && before_exec(to, from) < 0) /* its warm-up: the session made, the armer started */
		return 1;
	if (one_exec(s) < 0)
		return 1;
	for (int i = 0; i < n && sess && bare && prev; i++) {
		nap(gap);
		if ((sess[i] = one_exec(s)) < 0)
			return 1;
		if (bp > 0) {
			nap(gap);
			if ((prev[i] = before_exec(to, from)) < 0) {
				fprintf(stderr, "sessexec: the before build's exec failed\n");
				return 1;
			}
		}
		nap(gap);
		pid_t p;
		double t = now_ms();
		if (posix_spawnp(&p, "true", NULL, NULL, av, environ) != 0)
			return 1;
		waitpid(p, NULL, 0);
		bare[i] = now_ms() - t;
	}
	ward_session_destroy(s);
	if (bp > 0) {
		fclose(to);
		fclose(from);
		waitpid(bp, NULL, 0);
	}
	if (!sess || !bare || !prev)
		return 1;
	report("session", sess, n);
	report("bare", bare, n);
	if (bp > 0)
		report("before", prev, n);
	printf("\n");
	free(sess);
	free(bare);
	free(prev);
	return 0;
}
