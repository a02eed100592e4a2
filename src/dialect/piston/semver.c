/* semver.c — node-semver ranges, the subset Piston's runtime selection
 * needs (semver.satisfies): comparators with partial versions (x, X, *),
 * ^ and ~, <, <=, >, >=, =, sets joined by spaces (and) and "||" (or),
 * "A - B" hyphen ranges; a leading "v" and "+build" are ignored; a
 * prerelease matches none of our runtimes (which have none).  Pure and
 * bounded: hostile ranges are refused, never looped over. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/piston/piston.h"

#define MAX_RANGE 256
#define MAX_COMPARATORS 16

struct ver {
	long v[3];
	int parts; /* how many were numbers (0..3): the rest are x */
	bool pre;
};

/* A partial version at *pp: [v=]N[.N[.N]] with x/X/ * for a part. */
static bool parse_ver(const char **pp, struct ver *o)
{
	const char *p = *pp;
	memset(o, 0, sizeof(*o));
	while (*p == '=' || *p == 'v' || *p == 'V')
		p++;
	bool any = false;
	for (int i = 0; i < 3; i++) {
		if (*p == 'x' || *p == 'X' || *p == '*') {
			p++;
			any = true;
			o->parts = o->parts < i ? o->parts : i;
			for (int j = i; j < 3; j++)
				o->v[j] = 0;
			if (*p == '.' && i < 2) {
				p++;
				continue;
			}
			break;
		}
		if (!isdigit((unsigned char)*p))
			return false;
		char *end;
		long n = strtol(p, &end, 10);
		if (end - p > 9)
			return false;
		if (!any) {
			o->v[i] = n;
			o->parts = i + 1;
		}
		p = end;
		if (*p != '.' || i == 2)
			break;
		p++;
	}
	if (*p == '-') {
		o->pre = true;
		while (*p && !isspace((unsigned char)*p) && *p != '+')
			p++;
	}
	if (*p == '+')
		while (*p && !isspace((unsigned char)*p))
			p++;
	if (*p && !isspace((unsigned char)*p) && *p != '|')
		return false;
	*pp = p;
	return true;
}

static int cmp(const long a[3], const long b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* [lo, hi): lo inclusive unless lo_x; hi exclusive unless hi_in; absent when unset. */
struct span {
	long lo[3], hi[3];
	bool has_lo, has_hi, lo_x, hi_in;
};

/* The next version up from a partial: 3 -> 4.0.0, 3.10 -> 3.11.0. */
static void bump(const struct ver *v, int at, long out[3])
{
	out[0] = v->v[0], out[1] = v->v[1], out[2] = v->v[2];
	out[at]++;
	for (int i = at + 1; i < 3; i++)
		out[i] = 0;
}

static bool within(const long x[3], const struct span *s)
{
	if (s->has_lo && (s->lo_x ? cmp(x, s->lo) <= 0 : cmp(x, s->lo) < 0))
		return false;
	if (s->has_hi && (s->hi_in ? cmp(x, s->hi) > 0 : cmp(x, s->hi) >= 0))
		return false;
	return true;
}

/* One comparator at *pp applied to x. */
static bool comparator(const char **pp, const long x[3], bool *ok)
{
	const char *p = *pp;
	char op[3] = "";
	if (*p == '^' || *p == '~')
		op[0] = *p++;
	else if (*p == '<' || *p == '>') {
		op[0] = *p++;
		if (*p == '=')
			op[1] = *p++;
	}
	if (op[0] == '~' && *p == '>')
		p++;
	while (*p == ' ')
		p++;
	struct ver v;
	if (!parse_ver(&p, &v)) {
		*ok = false;
		return false;
	}
	*pp = p;
	if (v.pre)
		return false; /* our runtimes have no prerelease */
	struct span s = {0};
	long hi[3];
	if (v.parts == 0)
		return op[0] != '<' && op[0] != '>' ? true : op[0] == '>' ? op[1] == '=' : op[1] == '=';
	if (!op[0] || op[0] == '=') {
		if (v.parts == 3)
			return cmp(x, v.v) == 0;
		s.has_lo = s.has_hi = true;
		memcpy(s.lo, v.v, sizeof(s.lo));
		bump(&v, v.parts - 1, s.hi);
	} else if (op[0] == '^') {
		int at = v.v[0] ? 0 : v.parts >= 2 && v.v[1] ? 1 : v.parts == 3 ? 2 : v.parts - 1;
		s.has_lo = s.has_hi = true;
		memcpy(s.lo, v.v, sizeof(s.lo));
		bump(&v, at, s.hi);
	} else if (op[0] == '~') {
		s.has_lo = s.has_hi = true;
		memcpy(s.lo, v.v, sizeof(s.lo));
		bump(&v, v.parts >= 2 ? 1 : 0, s.hi);
	} else if (op[0] == '>') {
		s.has_lo = true;
		if (op[1] == '=')
			memcpy(s.lo, v.v, sizeof(s.lo));
		else if (v.parts == 3)
			memcpy(s.lo, v.v, sizeof(s.lo)), s.lo_x = true;
		else
			bump(&v, v.parts - 1, s.lo);
	} else {
		s.has_hi = true;
		if (op[1] == '=' && v.parts == 3)
			memcpy(s.hi, v.v, sizeof(s.hi)), s.hi_in = true;
		else if (op[1] == '=')
			bump(&v, v.parts - 1, hi), memcpy(s.hi, hi, sizeof(hi));
		else
			memcpy(s.hi, v.v, sizeof(s.hi));
	}
	return within(x, &s);
}

/* One set of comparators (space-separated, all must hold), to "||" or the end. */
static bool set_holds(const char **pp, const long x[3], bool *ok, int *count)
{
	const char *p = *pp;
	bool all = true;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '|')
			break;
		if (++*count > MAX_COMPARATORS) {
			*ok = false;
			return false;
		}
		/* "A - B" */
		const char *q = p;
		struct ver a, b;
		if (isdigit((unsigned char)*q) && parse_ver(&q, &a) && !strncmp(q, " - ", 3)) {
			q += 3;
			if (!parse_ver(&q, &b)) {
				*ok = false;
				return false;
			}
			long hi[3];
			struct span s = {.has_lo = true, .has_hi = true};
			memcpy(s.lo, a.v, sizeof(s.lo));
			if (b.parts == 3)
				memcpy(s.hi, b.v, sizeof(s.hi)), s.hi_in = true;
			else if (b.parts == 0)
				s.has_hi = false;
			else
				bump(&b, b.parts - 1, hi), memcpy(s.hi, hi, sizeof(hi));
			all = all && !a.pre && !b.pre && within(x, &s);
			p = q;
			continue;
		}
		bool h = comparator(&p, x, ok);
		if (!*ok)
			return false;
		all = all && h;
	}
	*pp = p;
	return all;
}

bool piston_semver_satisfies(const char *version, const char *range, bool *bad)
{
	*bad = false;
	struct ver v;
	const char *vp = version;
	if (!parse_ver(&vp, &v) || v.parts == 0 || strnlen(range, MAX_RANGE + 1) > MAX_RANGE) {
		*bad = true;
		return false;
	}
	const char *p = range;
	bool any = false, ok = true;
	int count = 0;
	for (;;) {
		if (set_holds(&p, v.v, &ok, &count))
			any = true;
		if (!ok) {
			*bad = true;
			return false;
		}
		if (p[0] == '|' && p[1] == '|')
			p += 2;
		else if (*p) {
			*bad = true;
			return false;
		} else
			break;
	}
	return any;
}
