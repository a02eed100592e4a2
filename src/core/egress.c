/* egress.c — the egress policy (egress.h, SPEC §13): patterns, the
 * operator's ceiling, pins and the address classifier.  Pure: no I/O, no
 * allocation; every string it takes is hostile and bounded here. */
#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress.h"
#include "ward.h"

const char *const egress_proxy_env[] = {"HTTP_PROXY=" EGRESS_PROXY_URL,
                                        "HTTPS_PROXY=" EGRESS_PROXY_URL,
                                        "http_proxy=" EGRESS_PROXY_URL,
                                        "https_proxy=" EGRESS_PROXY_URL,
                                        "NO_PROXY=localhost,127.0.0.1",
                                        "no_proxy=localhost,127.0.0.1",
                                        NULL};

static int bad(char *err, size_t errlen, const char *what, const char *s, const char *why)
{
	snprintf(err, errlen, "%s '%.300s': %s", what, s, why);
	return -1;
}

/* A port of 1 to 65535 in decimal; 0 when s is not one. */
static unsigned parse_port(const char *s)
{
	if (!*s || strlen(s) > 5)
		return 0;
	unsigned v = 0;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return 0;
		v = v * 10 + (unsigned)(*c - '0');
	}
	return v <= 65535 ? v : 0;
}

/* A host name: dot-separated labels of letters, digits, '-' and '_', each
 * 1 to 63 long, at most 253 in all. */
static bool valid_name(const char *s)
{
	size_t n = strlen(s), label = 0;
	if (n == 0 || n > EGRESS_NAME_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];
		if (c == '.' || c == 0) {
			if (label == 0 || label > 63)
				return false;
			label = 0;
		} else if (isalnum((unsigned char)c) || c == '-' || c == '_')
			label++;
		else
			return false;
	}
	return true;
}

/* s as an IPv4 or IPv6 address, written back in canonical form into out
 * (inet_ntop).  false when it is not one. */
static bool canonical_literal(const char *s, char *out, size_t outlen)
{
	unsigned char a[16];
	if (inet_pton(AF_INET, s, a) == 1)
		return inet_ntop(AF_INET, a, out, (socklen_t)outlen) != NULL;
	if (inet_pton(AF_INET6, s, a) == 1)
		return inet_ntop(AF_INET6, a, out, (socklen_t)outlen) != NULL;
	return false;
}

int egress_pattern_parse(const char *s, struct egress_pattern *p, char *err, size_t errlen)
{
	const char *what = "egress pattern";
	memset(p, 0, sizeof(*p));
	char buf[EGRESS_NAME_MAX + 16];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return bad(err, errlen, what, s,
		           "give a host name (pypi.org), a '*.' suffix (*.example.org), "
		           "either with an optional :PORT, or an address with its port");
	for (size_t i = 0; i <= n; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	char *host = buf, *port = NULL;
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		if (!close || (close[1] && close[1] != ':'))
			return bad(err, errlen, what, s, "an IPv6 address is written [ADDR] or [ADDR]:PORT");
		*close = 0;
		host = buf + 1;
		port = close[1] ? close + 2 : NULL;
	} else {
		char *colon = strchr(buf, ':');
		if (colon && !strchr(colon + 1, ':')) {
			*colon = 0;
			port = colon + 1;
		}
	}
	if (port && !(p->port = parse_port(port)))
		return bad(err, errlen, what, s, "the port must be a number from 1 to 65535");
	if (canonical_literal(host, p->name, sizeof(p->name))) {
		p->literal = true;
		return 0;
	}
	if (strchr(host, ':') || buf[0] == '[')
		return bad(err, errlen, what, s, "not an IPv6 address: write it [ADDR]:PORT");
	if (host[0] == '*') {
		if (host[1] != '.')
			return bad(err, errlen, what, s, "a wildcard is only a leading '*.' (*.example.org)");
		p->wildcard = true;
		host += 2;
	}
	size_t hl = strlen(host);
	if (hl && host[hl - 1] == '.')
		host[--hl] = 0; /* the root's dot */
	if (!valid_name(host) || strchr(host, '*'))
		return bad(err, errlen, what, s,
		           "not a host name: use letters, digits, '-' and '.' (pypi.org, "
		           "*.pythonhosted.org, files.example:8443)");
	memcpy(p->name, host, hl + 1);
	return 0;
}

static bool port_ok(unsigned want, unsigned port)
{
	return want ? port == want : port == 80 || port == 443;
}

/* name lies strictly below suffix (a.b.x below x; x itself does not). */
static bool below(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);
	return n > k + 1 && name[n - k - 1] == '.' && strcmp(name + n - k, suffix) == 0;
}

bool egress_pattern_matches(const struct egress_pattern *p, const char *host, unsigned port)
{
	if (!port_ok(p->port, port))
		return false;
	char h[EGRESS_NAME_MAX + 2];
	size_t n = strlen(host);
	if (n == 0 || n > EGRESS_NAME_MAX)
		return false;
	for (size_t i = 0; i <= n; i++)
		h[i] = (char)tolower((unsigned char)host[i]);
	if (h[n - 1] == '.')
		h[n - 1] = 0;
	char lit[INET6_ADDRSTRLEN];
	bool is_lit = canonical_literal(h, lit, sizeof(lit));
	if (p->literal || is_lit)
		return p->literal && is_lit && strcmp(p->name, lit) == 0;
	if (!valid_name(h))
		return false; /* what a '*.' suffix lets through is a host name too */
	return p->wildcard ? below(h, p->name) : strcmp(h, p->name) == 0;
}

bool egress_covered(const struct egress_pattern *req, const struct egress_pattern *ceil)
{
	if (ceil->port ? req->port != ceil->port : !(req->port == 0 || req->port == 80 || req->port == 443))
		return false;
	if (req->literal || ceil->literal)
		return req->literal && ceil->literal && strcmp(req->name, ceil->name) == 0;
	if (!ceil->wildcard)
		return !req->wildcard && strcmp(req->name, ceil->name) == 0;
	/* "*.x" covers any name below x, and "*.y" for y equal to or below x */
	return req->wildcard ? strcmp(req->name, ceil->name) == 0 || below(req->name, ceil->name)
	                     : below(req->name, ceil->name);
}

int egress_within_ceiling(const struct egress_pattern *req, size_t nreq, const struct egress_pattern *ceil,
                          size_t nceil, char *err, size_t errlen)
{
	for (size_t i = 0; i < nreq; i++) {
		bool ok = false;
		for (size_t j = 0; j < nceil && !ok; j++)
			ok = egress_covered(&req[i], &ceil[j]);
		if (ok)
			continue;
		char shown[EGRESS_NAME_MAX + 16];
		snprintf(shown, sizeof(shown), "%s%s%s%s", req[i].wildcard ? "*." : "", req[i].name,
		         req[i].port ? ":" : "", "");
		if (req[i].port)
			snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%u", req[i].port);
		if (nceil == 0)
			snprintf(err, errlen,
			         "network.allow: '%s' asks for egress, which this runner does not offer: its "
			         "operator allows it with ward serve --egress-allow PATTERN",
			         shown);
		else
			snprintf(err, errlen,
			         "network.allow: '%s' is outside this runner's egress ceiling "
			         "(--egress-allow): ask only for names it allows (see GET /health), or "
			         "ask its operator to add it",
			         shown);
		return -1;
	}
	return 0;
}

int egress_pin_parse(const char *s, struct egress_pin *pin, char *err, size_t errlen)
{
	memset(pin, 0, sizeof(*pin));
	const char *colon = strchr(s, ':');
	size_t nl = colon ? (size_t)(colon - s) : 0;
	if (!colon || nl == 0 || nl > EGRESS_NAME_MAX)
		return bad(err, errlen, "--egress-resolve", s, "give NAME:ADDR (pypi.test:127.0.0.1)");
	for (size_t i = 0; i < nl; i++)
		pin->name[i] = (char)tolower((unsigned char)s[i]);
	if (!valid_name(pin->name))
		return bad(err, errlen, "--egress-resolve", s, "NAME is not a host name");
	char a[INET6_ADDRSTRLEN + 2];
	const char *addr = colon + 1;
	size_t al = strlen(addr);
	if (al >= sizeof(a))
		return bad(err, errlen, "--egress-resolve", s, "ADDR is not an IPv4 or IPv6 address");
	if (addr[0] == '[' && al > 2 && addr[al - 1] == ']') {
		memcpy(a, addr + 1, al - 2);
		a[al - 2] = 0;
	} else
		memcpy(a, addr, al + 1);
	struct sockaddr_in *v4 = (struct sockaddr_in *)&pin->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&pin->addr;
	if (inet_pton(AF_INET, a, &v4->sin_addr) == 1)
		v4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &v6->sin6_addr) == 1)
		v6->sin6_family = AF_INET6;
	else
		return bad(err, errlen, "--egress-resolve", s, "ADDR is not an IPv4 or IPv6 address");
	return 0;
}

/* The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, translated
 * ::ffff:0:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d and the
 * local-use 64:ff9b:1::/48 (RFC 6052's /48 layout), 6to4
 * 2002:AABB:CCDD::), host order; false when it carries none. */
static bool embedded_v4(const unsigned char *b, uint32_t *v4)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char translated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
	static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
	static const unsigned char nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 0x01};
	static const unsigned char zero[12] = {0};
	const unsigned char *q = NULL;
	if (memcmp(b, nat64_local, 6) == 0) {
		*v4 = (uint32_t)b[6] << 24 | (uint32_t)b[7] << 16 | (uint32_t)b[9] << 8 | b[10];
		return true;
	}
	if (memcmp(b, mapped, 12) == 0 || memcmp(b, translated, 12) == 0 || memcmp(b, nat64, 12) == 0)
		q = b + 12;
	else if (memcmp(b, zero, 12) == 0 && (b[12] | b[13] | b[14] | (b[15] & 0xfe)) != 0)
		q = b + 12; /* ::a.b.c.d, but not :: or ::1 */
	else if (b[0] == 0x20 && b[1] == 0x02)
		q = b + 2;
	if (!q)
		return false;
	*v4 = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
	return true;
}

static bool in4(uint32_t a, uint32_t net, int bits)
{
	uint32_t mask = bits ? ~0u << (32 - bits) : 0;
	return (a & mask) == (net & mask);
}

static const char *v4_refused(uint32_t a)
{
	static const struct {
		uint32_t net;
		int bits;
		const char *why;
	} t[] = {
		{0x00000000, 8, "unspecified"}, {0x7f000000, 8, "loopback"},
		{0x0a000000, 8, "private"},     {0xac100000, 12, "private"},
		{0xc0a80000, 16, "private"},    {0x64400000, 10, "shared address space (CGNAT)"},
		{0xa9fe0000, 16, "link-local"}, {0xffffffff, 32, "broadcast"},
		{0xe0000000, 4, "multicast"},   {0xf0000000, 4, "reserved"},
		{0xc0000000, 24, "reserved"},   {0xc0000200, 24, "reserved"},
		{0xc6120000, 15, "reserved"},   {0xc6336400, 24, "reserved"},
		{0xcb007100, 24, "reserved"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (in4(a, t[i].net, t[i].bits))
			return t[i].why;
	return NULL;
}

static const char *v6_refused(const unsigned char *b)
{
	static const unsigned char zero[16] = {0};
	uint32_t v4;
	if (memcmp(b, zero, 16) == 0)
		return "unspecified";
	if (memcmp(b, zero, 15) == 0 && b[15] == 1)
		return "loopback";
	if (embedded_v4(b, &v4))
		return v4_refused(v4);
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "private"; /* site-local, deprecated */
	if ((b[0] & 0xfe) == 0xfc)
		return "private";
	if (b[0] == 0xff)
		return "multicast";
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return "reserved";
	if (b[0] == 0x01 && memcmp(b + 1, zero, 7) == 0)
		return "reserved"; /* 100::/64, discard */
	return NULL;
}

/* An address as 16 bytes of IPv6 (IPv4 as ::ffff:a.b.c.d); false for
 * another family. */
static bool as_v6(const struct sockaddr *sa, unsigned char out[16])
{
	if (sa->sa_family == AF_INET) {
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		memcpy(out, mapped, 12);
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

bool egress_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	unsigned char x[16], y[16];
	return as_v6(a, x) && as_v6(b, y) && memcmp(x, y, 16) == 0;
}

const char *egress_addr_refused(const struct sockaddr *sa, const struct sockaddr_storage *own, size_t nown)
{
	unsigned char b[16];
	if (!as_v6(sa, b))
		return "not an internet address";
	const char *why = v6_refused(b);
	if (why)
		return why;
	for (size_t i = 0; i < nown; i++)
		if (egress_addr_equal(sa, (const struct sockaddr *)&own[i]))
			return "the runner's own address";
	return NULL;
}

size_t egress_own_addresses(struct sockaddr_storage *own, size_t max)
{
	struct ifaddrs *ifa = NULL;
	size_t n = 0;
	if (getifaddrs(&ifa) < 0)
		return 0;
	for (struct ifaddrs *i = ifa; i && n < max; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		size_t l = i->ifa_addr->sa_family == AF_INET    ? sizeof(struct sockaddr_in)
		           : i->ifa_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                                : 0;
		if (l)
			memcpy(&own[n++], i->ifa_addr, l);
	}
	freeifaddrs(ifa);
	return n;
}

int egress_policy_init(struct egress_policy *pol, char *err, size_t errlen)
{
	if (pol->nallow > EGRESS_MAX_PATTERNS || pol->nresolve > EGRESS_MAX_PATTERNS) {
		snprintf(err, errlen, "at most %d --egress-allow and %d --egress-resolve", EGRESS_MAX_PATTERNS,
		         EGRESS_MAX_PATTERNS);
		return -1;
	}
	for (size_t i = 0; i < pol->nallow; i++)
		if (egress_pattern_parse(pol->allow[i], &pol->ceil[i], err, errlen) < 0)
			return -1;
	struct egress_pin pin;
	for (size_t i = 0; i < pol->nresolve; i++)
		if (egress_pin_parse(pol->resolve[i], &pin, err, errlen) < 0)
			return -1;
	return 0;
}

int egress_policy_apply(const struct egress_policy *pol, struct ward_request *req, char *err, size_t errlen)
{
	if (req->net != WARD_NET_ALLOW)
		return 0;
	if (req->negress_allow > EGRESS_MAX_PATTERNS) {
		snprintf(err, errlen, "network.allow: at most %d patterns", EGRESS_MAX_PATTERNS);
		return -1;
	}
	struct egress_pattern want[EGRESS_MAX_PATTERNS];
	char perr[400];
	for (size_t i = 0; i < req->negress_allow; i++)
		if (egress_pattern_parse(req->egress_allow[i], &want[i], perr, sizeof(perr)) < 0) {
			snprintf(err, errlen, "network.allow: %s", perr);
			return -1;
		}
	if (egress_within_ceiling(want, req->negress_allow, pol->ceil, pol->nallow, err, errlen) < 0)
		return -1;
	req->egress_resolve = pol->resolve;
	req->negress_resolve = pol->nresolve;
	return 0;
}
