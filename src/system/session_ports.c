/* session_ports.c — a connection to a port inside a session's network
 * namespace (ward.h's ward_session_connect), for a front end that proxies
 * to a server the sandbox runs (E2B's ports, SPEC §18).  The socket is made
 * in the sandbox's namespace by a thread that enters it and ends, so no
 * thread of the caller's ever changes its namespace — a batch of them at a
 * time, the rest kept unconnected for the next calls (the thread and its
 * setns cost most of a connect); it reaches only what listens on the
 * sandbox's loopback.  And the bytes a front end relays through those
 * sockets, charged to the session (ward_session_charge_net): one atomic
 * counter within its cap, for the session's life. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/errf.h"
#include "core/egress.h"
#include "system/session.h"

struct netns_sock {
	int pidfd;
	int fd[SESSION_SPARE_SOCKS + 1]; /* the sockets made in the sandbox's network namespace */
	unsigned n;                      /* how many */
	int err;                         /* why none, as -errno */
};

/* A thread of its own enters the sandbox's network namespace, makes the
 * sockets there and ends: no thread of the caller's ever changes its
 * namespace. */
static void *netns_sock_main(void *arg)
{
	struct netns_sock *ns = arg;
	if (setns(ns->pidfd, CLONE_NEWNET) < 0) {
		ns->err = -errno;
		return NULL;
	}
	for (; ns->n < sizeof(ns->fd) / sizeof(ns->fd[0]); ns->n++) {
		ns->fd[ns->n] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (ns->fd[ns->n] < 0) {
			ns->err = -errno;
			break;
		}
	}
	return NULL;
}

/* An unconnected socket of s's network namespace: a spare one made
 * before, else one of a new batch (the rest kept as spares, closed with
 * the session), or -errno. */
static int netns_socket(struct ward_session *s)
{
	pthread_mutex_lock(&s->lock);
	int fd = s->nspare ? s->spare[--s->nspare] : -1;
	pthread_mutex_unlock(&s->lock);
	if (fd >= 0)
		return fd;
	struct netns_sock ns = {.pidfd = s->parts.pidfd, .err = -EIO};
	pthread_t t;
	int rc = pthread_create(&t, NULL, netns_sock_main, &ns);
	if (rc)
		return -rc;
	pthread_join(t, NULL);
	if (!ns.n)
		return ns.err;
	pthread_mutex_lock(&s->lock);
	while (ns.n > 1 && s->nspare < SESSION_SPARE_SOCKS)
		s->spare[s->nspare++] = ns.fd[--ns.n];
	pthread_mutex_unlock(&s->lock);
	while (ns.n > 1)
		close(ns.fd[--ns.n]);
	return ns.fd[0];
}

/* How fd's connect ended, waiting for it up to timeout_ms: 0, -errno, or
 * -EINPROGRESS (it still goes). */
static int connect_end(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	if (poll(&p, 1, timeout_ms) <= 0)
		return -EINPROGRESS;
	int r = 0;
	socklen_t len = sizeof(r);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &len) < 0)
		return -errno;
	return -r;
}

int ward_session_connect_start(struct ward_session *s, int port, bool *pending, char *err, size_t errlen)
{
	*pending = false;
	if (port < 1 || port > 65535) {
		base_errf(err, errlen, "port %d: give 1 to 65535", port);
		return -EINVAL;
	}
	if (s->egress && port == EGRESS_PROXY_PORT) {
		/* ward's egress proxy, not the sandbox's: relayed, it would give
		 * whoever reaches the port the sandbox's egress and its budget */
		base_errf(err, errlen, "port %d is ward's egress proxy for this sandbox, not one of its servers", port);
		return -EACCES;
	}
	if (!ward_session_alive(s)) {
		base_errf(err, errlen, "the session is gone");
		return -ESRCH;
	}
	int fd = netns_socket(s);
	if (fd < 0) {
		base_errf(err, errlen,
		          "cannot make a socket in the sandbox's network namespace (%s): ward serve must run as root",
		          strerror(-fd));
		return fd;
	}
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	/* on the loopback a connect's handshake is over by the time connect
	 * returns (a non-blocking one still says EINPROGRESS), unless the
	 * server's backlog is full (then it waits for a retry) */
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
	if (r == -EINPROGRESS)
		r = connect_end(fd, 0);
	*pending = r == -EINPROGRESS;
	if (r < 0 && !*pending) {
		base_errf(err, errlen, "nothing answers on port %d in the sandbox (%s)", port, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

int ward_session_connect(struct ward_session *s, int port, double timeout_s, char *err, size_t errlen)
{
	bool pending;
	int fd = ward_session_connect_start(s, port, &pending, err, errlen);
	if (fd < 0)
		return fd;
	int r = pending ? connect_end(fd, (int)(timeout_s * 1000)) : 0;
	if (r == -EINPROGRESS)
		r = -ETIMEDOUT;
	if (r < 0) {
		base_errf(err, errlen, "nothing answers on port %d in the sandbox (%s)", port, strerror(-r));
		close(fd);
		return r;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int ward_session_charge_net(struct ward_session *s, uint64_t bytes)
{
	uint64_t used = __atomic_load_n(&s->net_used, __ATOMIC_RELAXED);
	for (;;) { /* used <= net_cap always: a charge that does not fit spends what is left */
		bool fits = used < s->net_cap && bytes <= s->net_cap - used;
		uint64_t next = fits ? used + bytes : s->net_cap;
		if (__atomic_compare_exchange_n(&s->net_used, &used, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return fits ? 0 : -EDQUOT;
	}
}

void ward_session_net(struct ward_session *s, uint64_t *used, uint64_t *cap)
{
	*used = __atomic_load_n(&s->net_used, __ATOMIC_RELAXED);
	*cap = s->net_cap;
}
