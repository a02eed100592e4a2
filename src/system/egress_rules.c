/* egress_rules.c — whom the egress proxy may reach (egress_rules.h): a
 * name or literal matched against the allow-list (core/egress.c's
 * patterns), a pinned name sent to its pin, any other name resolved here
 * once and reached at its first public address (so a rebinding answer
 * cannot swap it). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "system/egress_rules.h"

/* host as an address literal into sa (port 0); false when it is not one. */
static bool literal_addr(const char *host, struct sockaddr_storage *sa)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1)
		v4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1)
		v6->sin6_family = AF_INET6;
	else
		return false;
	return true;
}

/* A name resolved here, once: its first public address into sa, or why
 * none is (a static string, or msg). */
static const char *resolve_public(const struct egress_rules *p, const char *host, struct sockaddr_storage *sa,
                                  char *msg, size_t msglen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return "the name does not resolve";
	const char *why = "no address";
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(*sa))
			continue;
		const char *w = egress_addr_refused(ai->ai_addr, p->own, p->nown);
		if (!w) {
			memcpy(sa, ai->ai_addr, ai->ai_addrlen);
			break;
		}
		if (ai == res)
			why = w;
	}
	freeaddrinfo(res);
	if (sa->ss_family)
		return NULL;
	if (strcmp(why, "the runner's own address") == 0)
		snprintf(msg, msglen, "resolves to %s", why);
	else
		snprintf(msg, msglen, "resolves to a %s address", why);
	return msg;
}

/* The address to connect to for host:port, or a reason not to (a static
 * string, or msg).  A listed literal is reached as it is, a pinned name at
 * its pin, any other name at its first public address. */
const char *egress_decide(const struct egress_rules *p, const char *asked, unsigned port, struct sockaddr_storage *sa,
                          socklen_t *salen, char *msg, size_t msglen)
{
	/* the name as matched: lower case, without the root's dot (so that
	 * "pypi.test." finds pypi.test's pin, as it matched its pattern) */
	char host[256];
	size_t hl = strlen(asked);
	if (hl >= sizeof(host))
		return "not in the allow-list";
	for (size_t i = 0; i <= hl; i++)
		host[i] = (char)tolower((unsigned char)asked[i]);
	if (hl > 1 && host[hl - 1] == '.')
		host[--hl] = 0;
	if (hl && host[hl - 1] == '.')
		return "not in the allow-list"; /* "a..": no host name (the matcher would take it as "a.") */
	bool listed = false;
	pthread_mutex_lock((pthread_mutex_t *)&p->mu); /* a live replacement's lock */
	for (size_t i = 0; i < p->nallow && !listed; i++)
		listed = egress_pattern_matches(&p->allow[i], host, port);
	pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
	if (!listed)
		return "not in the allow-list";
	memset(sa, 0, sizeof(*sa));
	if (!literal_addr(host, sa)) {
		for (size_t i = 0; i < p->npins && !sa->ss_family; i++)
			if (strcmp(p->pins[i].name, host) == 0)
				*sa = p->pins[i].addr;
		const char *why = sa->ss_family ? NULL : resolve_public(p, host, sa, msg, msglen);
		if (why)
			return why;
	}
	if (sa->ss_family == AF_INET) {
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
		*salen = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
		*salen = sizeof(struct sockaddr_in6);
	}
	return NULL;
}

void egress_rules_set_allow(struct egress_rules *p, const struct egress_pattern *allow, size_t n)
{
	if (n > EGRESS_MAX_PATTERNS)
		n = EGRESS_MAX_PATTERNS;
	pthread_mutex_lock(&p->mu);
	memcpy(p->allow, allow, n * sizeof(*allow));
	p->nallow = n;
	pthread_mutex_unlock(&p->mu);
}
