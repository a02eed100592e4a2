/* stats.h — the order statistics both benchmark drivers report
 * (bench/wbench.c, bench/httpload.c): one definition of a percentile. */
#ifndef WARD_BENCH_STATS_H
#define WARD_BENCH_STATS_H

#include <math.h>
#include <stddef.h>

/* qsort comparator for doubles, ascending. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array; NAN when empty. */
static inline double pct_sorted(const double *s, size_t n, double p)
{
	if (!n)
		return NAN;
	size_t r = (size_t)ceil(p / 100.0 * (double)n);
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return s[r - 1];
}

#endif
