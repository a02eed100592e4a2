/* conns.c — the server's record of each TCP connection: its deadline (the
 * main thread's sweep shuts a socket down past it: slowloris, trickled
 * bodies, clients that never read), whether it has proven itself, and the
 * pending connections of each address, oldest first, that are cut to make
 * room when an address holds more than --max-conns-per-addr of them or the
 * server --max-connections.
 *
 * Owns s->conns, s->peers and their counts under s->conn_lock.  Never
 * closes a socket (it shuts it down; MHD closes it), never cuts a trusted
 * connection for room, and never takes another lock while holding
 * conn_lock. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define CONN_GRACE 1.0 /* seconds a connection has to send its request before it may be cut for room */

/* A peer address (IPv4, or an IPv6 /64) that holds pending connections. */
struct peer {
	char addr[INET6_ADDRSTRLEN + 4];
	unsigned pending;
	struct conn_rec *oldest, *newest;
	struct peer *next;
};

/* One TCP connection, for the deadline sweep and the per-address limit.
 * Pending: it has not proven itself (see conn_trust), so it counts against
 * its address and may be cut for room; pr is then its address's record. */
struct conn_rec {
	int fd;
	struct sockaddr_storage peer;
	socklen_t peerlen;
	double deadline; /* 0: none (a run is in progress) */
	bool shut;
	bool trusted;
	const char *cut; /* why the server cut it, for the log */
	char addr[INET6_ADDRSTRLEN + 4];
	double since;                   /* pending since: accepted, or its last request ended */
	struct peer *pr;                /* while pending */
	struct conn_rec *prev, *next;   /* all connections */
	struct conn_rec *aprev, *anext; /* pending ones of its address, oldest first */
	struct conn_rec *gprev, *gnext; /* all pending ones, oldest first */
};

/* The address a peer is counted under: the IPv4 address (also when mapped
 * into IPv6), or the /64 of an IPv6 address, which one host or site can
 * fill with addresses of its own. */
void addr_key(const struct sockaddr *sa, char *buf, size_t n)
{
	snprintf(buf, n, "?");
	if (sa && sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)n);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			inet_ntop(AF_INET, &a->s6_addr[12], buf, (socklen_t)n);
			return;
		}
		struct in6_addr net = {0};
		memcpy(net.s6_addr, a->s6_addr, 8);
		char t[INET6_ADDRSTRLEN];
		if (inet_ntop(AF_INET6, &net, t, sizeof(t)))
			snprintf(buf, n, "%s/64", t);
	}
}

static struct peer **peer_slot(struct server *s, const char *addr)
{
	unsigned h = 5381;
	for (const char *p = addr; *p; p++)
		h = h * 33 + (unsigned char)*p;
	struct peer **pp = &s->peers[h % PEER_BUCKETS];
	while (*pp && strcmp((*pp)->addr, addr) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* cr joins the pending connections, as the newest of its address and of
 * all.  Without memory for its address's record it stays uncounted.
 * Called with conn_lock held, as are the functions below. */
static void pending_link(struct server *s, struct conn_rec *cr, double t)
{
	struct peer **pp = peer_slot(s, cr->addr);
	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return;
		snprintf((*pp)->addr, sizeof((*pp)->addr), "%s", cr->addr);
	}
	struct peer *p = *pp;
	cr->pr = p;
	cr->since = t;
	cr->anext = NULL;
	cr->aprev = p->newest;
	if (p->newest)
		p->newest->anext = cr;
	else
		p->oldest = cr;
	p->newest = cr;
	p->pending++;
	cr->gnext = NULL;
	cr->gprev = s->pend_newest;
	if (s->pend_newest)
		s->pend_newest->gnext = cr;
	else
		s->pend_oldest = cr;
	s->pend_newest = cr;
	s->npending++;
}

static void pending_unlink(struct server *s, struct conn_rec *cr)
{
	struct peer *p = cr->pr;
	if (!p)
		return;
	if (cr->aprev)
		cr->aprev->anext = cr->anext;
	else
		p->oldest = cr->anext;
	if (cr->anext)
		cr->anext->aprev = cr->aprev;
	else
		p->newest = cr->aprev;
	if (cr->gprev)
		cr->gprev->gnext = cr->gnext;
	else
		s->pend_oldest = cr->gnext;
	if (cr->gnext)
		cr->gnext->gprev = cr->gprev;
	else
		s->pend_newest = cr->gprev;
	s->npending--;
	cr->pr = NULL;
	if (--p->pending == 0) {
		struct peer **pp = peer_slot(s, p->addr);
		*pp = p->next;
		free(p);
	}
}

/* Shut cr's socket down (MHD then closes it normally).  The peer address
 * is compared first, so that a descriptor number already reused by a new
 * connection is left alone. */
static void conn_cut(struct server *s, struct conn_rec *cr, const char *why)
{
	if (cr->shut)
		return;
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	if (cr->fd >= 0 && getpeername(cr->fd, (struct sockaddr *)&peer, &len) == 0 && len == cr->peerlen &&
	    memcmp(&peer, &cr->peer, len) == 0)
		shutdown(cr->fd, SHUT_RDWR);
	cr->shut = true;
	cr->cut = why;
	s->nlive--;
	pending_unlink(s, cr);
}

/* Make room, oldest pending connection first, among those that have had
 * CONN_GRACE to send a request (a burst of quick clients is not cut while
 * the I/O threads catch up); a trusted connection is never cut for room.
 * First while p's address holds more than --max-conns-per-addr pending
 * connections (p stays: it keeps at least one)... */
static void peer_make_room(struct server *s, struct peer *p, double t)
{
	unsigned cap = s->o.max_conns_per_addr;
	while (p && cap && p->pending > cap && t - p->oldest->since >= CONN_GRACE) {
		s->cut_addr++;
		conn_cut(s, p->oldest, "its address held more than --max-conns-per-addr pending connections");
	}
}

/* ...then while the server holds --max-connections, so that the next
 * connection, from anyone, finds a place. */
static void server_make_room(struct server *s, double t)
{
	while (s->nlive >= s->o.max_connections && s->pend_oldest && t - s->pend_oldest->since >= CONN_GRACE) {
		s->cut_full++;
		conn_cut(s, s->pend_oldest, "the server held --max-connections");
	}
}

static struct conn_rec *conn_rec_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* c's request has proven it: it carries a valid token (c is trusted for
 * the rest of its life), or, without --token-file, it was admitted (until
 * it is over).  A trusted connection does not count against its address. */
void conn_trust(struct server *s, struct MHD_Connection *c)
{
	struct conn_rec *cr = conn_rec_of(c);
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	cr->trusted = true;
	pending_unlink(s, cr);
	pthread_mutex_unlock(&s->conn_lock);
}

/* c's request is over: it waits for the next one, pending (again) unless
 * a token made it trusted, and as the newest of its address. */
void conn_idle(struct server *s, struct MHD_Connection *c)
{
	struct conn_rec *cr = conn_rec_of(c);
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	if (!cr->shut && !(cr->trusted && s->ntokens)) {
		pending_unlink(s, cr);
		cr->trusted = false;
		pending_link(s, cr, now_mono());
	}
	pthread_mutex_unlock(&s->conn_lock);
}

void conn_set_deadline(struct server *s, struct MHD_Connection *c, double deadline)
{
	struct conn_rec *cr = conn_rec_of(c);
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	cr->deadline = deadline;
	pthread_mutex_unlock(&s->conn_lock);
}

/* Why the server cut c (for the log), or NULL. */
const char *conn_cut_reason(struct server *s, struct MHD_Connection *c)
{
	struct conn_rec *cr = conn_rec_of(c);
	pthread_mutex_lock(&s->conn_lock);
	const char *cut = cr ? cr->cut : NULL;
	pthread_mutex_unlock(&s->conn_lock);
	return cut;
}

/* A new connection: pending, with the header timeout as its deadline; it
 * may push its address's or the server's oldest pending ones out. */
static void conn_opened(struct server *s, struct MHD_Connection *c, void **socket_ctx)
{
	struct conn_rec *cr = calloc(1, sizeof(*cr));
	if (!cr)
		return;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	cr->fd = ci ? ci->connect_fd : -1;
	cr->peerlen = sizeof(cr->peer);
	if (cr->fd < 0 || getpeername(cr->fd, (struct sockaddr *)&cr->peer, &cr->peerlen) < 0)
		cr->peerlen = 0;
	addr_key(cr->peerlen ? (struct sockaddr *)&cr->peer : NULL, cr->addr, sizeof(cr->addr));
	double t = now_mono();
	cr->deadline = t + s->o.header_timeout;
	pthread_mutex_lock(&s->conn_lock);
	cr->next = s->conns;
	if (s->conns)
		s->conns->prev = cr;
	s->conns = cr;
	s->nlive++;
	pending_link(s, cr, t);
	peer_make_room(s, cr->pr, t);
	server_make_room(s, t);
	pthread_mutex_unlock(&s->conn_lock);
	*socket_ctx = cr;
}

static void conn_closed(struct server *s, void **socket_ctx)
{
	struct conn_rec *cr = *socket_ctx;
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	if (cr->prev)
		cr->prev->next = cr->next;
	else
		s->conns = cr->next;
	if (cr->next)
		cr->next->prev = cr->prev;
	if (!cr->shut)
		s->nlive--;
	pending_unlink(s, cr);
	pthread_mutex_unlock(&s->conn_lock);
	free(cr);
	*socket_ctx = NULL;
}

/* MHD's connection notification (an I/O thread). */
void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		conn_opened(s, c, socket_ctx);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		conn_closed(s, socket_ctx);
}

/* Shut down connections past their deadline (slowloris, trickled bodies,
 * clients that never read), then make room where the connections of an
 * address, or all, have grown past their limits while their newest had
 * their grace. */
void sweep(struct server *s)
{
	double t = now_mono();
	pthread_mutex_lock(&s->conn_lock);
	for (struct conn_rec *cr = s->conns; cr; cr = cr->next) {
		if (cr->shut || cr->deadline == 0 || t < cr->deadline || cr->fd < 0)
			continue;
		conn_cut(s, cr, "past its deadline");
	}
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		for (struct peer *p = s->peers[i]; p; p = p->next)
			peer_make_room(s, p, t);
	server_make_room(s, t);
	pthread_mutex_unlock(&s->conn_lock);
}

/* How many pending connections were cut for room since the last call: a
 * flood makes one line a second, not one a connection. */
void log_cuts(struct server *s, uint64_t logged[2])
{
	pthread_mutex_lock(&s->conn_lock);
	uint64_t a = s->cut_addr, f = s->cut_full;
	pthread_mutex_unlock(&s->conn_lock);
	if (a == logged[0] && f == logged[1])
		return;
	log_event(s, "connections-cut",
	          "%llu pending connections cut for room from addresses over --max-conns-per-addr %u, %llu because the "
	          "server held --max-connections %u",
	          (unsigned long long)(a - logged[0]), s->o.max_conns_per_addr, (unsigned long long)(f - logged[1]),
	          s->o.max_connections);
	logged[0] = a;
	logged[1] = f;
}

/* The peers' records, only left when MHD never stopped (it closes every
 * connection). */
void conns_free(struct server *s)
{
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		while (s->peers[i]) {
			struct peer *p = s->peers[i];
			s->peers[i] = p->next;
			free(p);
		}
}

bool conn_client_gone(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};
	return p.fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}
