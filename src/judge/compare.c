/* compare.c — a test's output against its expected output (SPEC §15):
 * exact (byte for byte), lines (Judge0's rule: trailing whitespace of each
 * line and trailing empty lines ignored), tokens (whitespace-separated) and
 * float (tokens; numbers equal within eps, absolute or relative).  Pure:
 * no allocation, linear in the two outputs. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ward_judge.h"

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The next line of s (from *pos): its start and its length without the
 * trailing whitespace; false at the end. */
static bool next_line(const unsigned char *s, size_t n, size_t *pos, const unsigned char **line, size_t *len)
{
	if (*pos >= n)
		return false;
	const unsigned char *nl = memchr(s + *pos, '\n', n - *pos);
	size_t end = nl ? (size_t)(nl - s) : n;
	*line = s + *pos;
	size_t k = end - *pos;
	while (k && is_space((*line)[k - 1]))
		k--;
	*len = k;
	*pos = end + 1;
	return true;
}

/* Where s ends once trailing whitespace-only lines are dropped. */
static size_t trimmed_end(const unsigned char *s, size_t n)
{
	while (n && is_space(s[n - 1]))
		n--;
	return n;
}

static bool compare_lines(const unsigned char *a, size_t an, const unsigned char *b, size_t bn)
{
	an = trimmed_end(a, an);
	bn = trimmed_end(b, bn);
	size_t pa = 0, pb = 0;
	for (;;) {
		const unsigned char *la, *lb;
		size_t na, nb;
		bool ha = next_line(a, an, &pa, &la, &na), hb = next_line(b, bn, &pb, &lb, &nb);
		if (!ha || !hb)
			return ha == hb;
		if (na != nb || memcmp(la, lb, na) != 0)
			return false;
	}
}

static bool next_token(const unsigned char *s, size_t n, size_t *pos, const unsigned char **tok, size_t *len)
{
	size_t i = *pos;
	while (i < n && is_space(s[i]))
		i++;
	if (i >= n)
		return false;
	size_t j = i;
	while (j < n && !is_space(s[j]))
		j++;
	*tok = s + i;
	*len = j - i;
	*pos = j;
	return true;
}

/* A token as a finite number (the whole token), into *v. */
static bool token_number(const unsigned char *t, size_t n, double *v)
{
	char buf[128];
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, t, n);
	buf[n] = 0;
	/* no hex, inf or nan: a judge's numbers are decimal */
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", buf[i]))
			return false;
	char *end;
	*v = strtod(buf, &end);
	return *end == 0 && isfinite(*v);
}

static bool tokens_equal(const unsigned char *ta, size_t na, const unsigned char *tb, size_t nb, bool floats,
                         double eps)
{
	if (na == nb && memcmp(ta, tb, na) == 0)
		return true;
	double x, y;
	if (!floats || !token_number(ta, na, &x) || !token_number(tb, nb, &y))
		return false;
	double d = fabs(x - y);
	return d <= eps || d <= eps * fmax(fabs(x), fabs(y));
}

static bool compare_tokens(const unsigned char *a, size_t an, const unsigned char *b, size_t bn, bool floats,
                           double eps)
{
	size_t pa = 0, pb = 0;
	for (;;) {
		const unsigned char *ta, *tb;
		size_t na, nb;
		bool ha = next_token(a, an, &pa, &ta, &na), hb = next_token(b, bn, &pb, &tb, &nb);
		if (!ha || !hb)
			return ha == hb;
		if (!tokens_equal(ta, na, tb, nb, floats, eps))
			return false;
	}
}

bool ward_judge_compare(enum ward_compare mode, double eps, const unsigned char *got, size_t got_len,
                        const unsigned char *want, size_t want_len)
{
	if (!got)
		got = (const unsigned char *)"", got_len = 0;
	if (!want)
		want = (const unsigned char *)"", want_len = 0;
	switch (mode) {
	case WARD_CMP_EXACT:
		return got_len == want_len && memcmp(got, want, got_len) == 0;
	case WARD_CMP_LINES:
		return compare_lines(got, got_len, want, want_len);
	case WARD_CMP_TOKENS:
		return compare_tokens(got, got_len, want, want_len, false, 0);
	case WARD_CMP_FLOAT:
		return compare_tokens(got, got_len, want, want_len, true, eps);
	}
	return false;
}
