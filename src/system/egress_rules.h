/* egress_rules.h — whom one sandbox's egress proxy may reach
 * (egress_rules.c), as data: its allow-list, its pinned names and the
 * runner's own addresses (never reached). */
#ifndef WARD_SYSTEM_EGRESS_RULES_H
#define WARD_SYSTEM_EGRESS_RULES_H

#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>

#include "core/egress.h"

struct egress_rules {
	pthread_mutex_t mu; /* allow and nallow: replaced live (egress_rules_set_allow) */
	struct egress_pattern allow[EGRESS_MAX_PATTERNS];
	size_t nallow;
	struct egress_pin pins[EGRESS_MAX_PATTERNS];
	size_t npins;
	struct sockaddr_storage own[64];
	size_t nown;
};

/* The address to connect to for host:port into sa and salen, or a reason
 * not to (a static string, or msg).  A listed literal is reached as it is,
 * a pinned name at its pin, any other name at its first public address.
 * May block in getaddrinfo (the proxy's own thread). */
const char *egress_decide(const struct egress_rules *p, const char *host, unsigned port, struct sockaddr_storage *sa,
                          socklen_t *salen, char *msg, size_t msglen);
/* Replace the allow-list (at most EGRESS_MAX_PATTERNS) while the proxy
 * runs: a connection decided after it sees the new list, one relaying
 * goes on. */
void egress_rules_set_allow(struct egress_rules *p, const struct egress_pattern *allow, size_t n);

#endif
