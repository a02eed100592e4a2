/* egress.h — the egress policy of SPEC §13, as pure functions: allow-list
 * patterns (parse, match, the operator's ceiling), "--egress-resolve"
 * pins, and the address classifier that refuses what is not public.  No
 * I/O but what the caller hands in: the proxy (src/system/egress.c) and
 * the request's validation use it, and tests/unit tests it. */
#ifndef WARD_CORE_EGRESS_H
#define WARD_CORE_EGRESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* The port inside every sandbox's own network namespace where the proxy
 * listens (each namespace has its own: no two sandboxes can collide). */
#define EGRESS_PROXY_PORT 3128
#define EGRESS_PROXY_URL "http://127.0.0.1:3128"

/* What a command's environment gets with network allow (NULL-ended). */
extern const char *const egress_proxy_env[];

/* Patterns a request or an operator may list, and pins. */
#define EGRESS_MAX_PATTERNS 64
#define EGRESS_NAME_MAX 253

struct egress_pattern {
	char name[EGRESS_NAME_MAX + 1]; /* lower case; for "*.x" the suffix "x"; an IPv6 literal without [] */
	bool wildcard;                  /* "*.x": any name below x, not x itself */
	bool literal;                   /* an IP address (v4 or v6) */
	unsigned port;                  /* 0: 80 and 443 */
};

/* "pypi.org", "*.pythonhosted.org", "files.example:8443", "10.0.0.5:8080",
 * "[2001:db8::1]:443".  0, or -1 with a message naming the pattern and the
 * fix. */
int egress_pattern_parse(const char *s, struct egress_pattern *p, char *err, size_t errlen);

/* host: a lower-cased name or an address literal as the proxy received it
 * (brackets removed). */
bool egress_pattern_matches(const struct egress_pattern *p, const char *host, unsigned port);

/* Is the request's pattern inside the ceiling's?  An exact name: by an
 * equal name or a matching "*." entry; "*.x": only by "*.x" or a broader
 * "*." suffix; an address: only by the same address.  Ports: a ceiling
 * entry without one covers 80, 443 and none; with one, only that port. */
bool egress_covered(const struct egress_pattern *req, const struct egress_pattern *ceiling);

/* Every pattern of a request against an operator's ceiling (both already
 * parsed).  0, or -1 with a message naming the first pattern outside it
 * and the fix. */
int egress_within_ceiling(const struct egress_pattern *req, size_t nreq, const struct egress_pattern *ceil,
                          size_t nceil, char *err, size_t errlen);

/* "NAME:ADDR" (ADDR v4, or v6 with or without []) into name and an address
 * (port 0).  0, or -1 with a message. */
struct egress_pin {
	char name[EGRESS_NAME_MAX + 1];
	struct sockaddr_storage addr;
};
int egress_pin_parse(const char *s, struct egress_pin *pin, char *err, size_t errlen);

/* An operator's egress policy (ward serve --egress-allow, --egress-resolve):
 * the ceiling every request's allow-list must lie within, and the pins
 * every run gets.  Strings are borrowed (the server's argv). */
struct egress_policy {
	const char *const *allow;
	size_t nallow;
	const char *const *resolve;
	size_t nresolve;
	struct egress_pattern ceil[EGRESS_MAX_PATTERNS];
};
/* Parse and check the operator's options.  0, or -1 with a message. */
int egress_policy_init(struct egress_policy *pol, char *err, size_t errlen);
/* A request under the policy: with network allow, every pattern
 * well-formed and within the ceiling (else -1 and a message for a 400),
 * and the operator's pins set on it.  Other requests: 0, untouched. */
struct ward_request;
int egress_policy_apply(const struct egress_policy *pol, struct ward_request *req, char *err, size_t errlen);

/* Why an address may not be reached unpinned ("loopback", "link-local",
 * "private", "shared address space (CGNAT)", "multicast", "unspecified",
 * "broadcast", "reserved"), or NULL when it is public.  IPv4-mapped and
 * IPv4-compatible IPv6 addresses are judged as their IPv4 address.  own:
 * the runner's own addresses (getifaddrs), nown of them: one of those is
 * "the runner's own address". */
const char *egress_addr_refused(const struct sockaddr *sa, const struct sockaddr_storage *own, size_t nown);

/* The runner's own addresses (getifaddrs: every interface's), at most max
 * of them; how many. */
size_t egress_own_addresses(struct sockaddr_storage *own, size_t max);

/* Two addresses equal, ports ignored (an IPv4-mapped one equals its IPv4). */
bool egress_addr_equal(const struct sockaddr *a, const struct sockaddr *b);

#endif
