/* session_ports.c — a connection to a port inside a session's network
 * namespace (ward.h's ward_session_connect), for a front end that proxies
 * to a server the sandbox runs (E2B's ports, SPEC §18).  The socket is made
 * in the sandbox's namespace by a thread that enters it and ends, so no
 * thread of the caller's ever changes its namespace; it reaches only what
 * listens on the sandbox's loopback. */
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
	int fd; /* the socket made in the sandbox's network namespace, or -errno */
};

/* A thread of its own enters the sandbox's network namespace, makes the
 * socket there and ends: no thread of the caller's ever changes its
 * namespace. */
static void *netns_sock_main(void *arg)
{
	struct netns_sock *n = arg;
	if (setns(n->pidfd, CLONE_NEWNET) < 0)
		n->fd = -errno;
	else {
		n->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (n->fd < 0)
			n->fd = -errno;
	}
	return NULL;
}

int ward_session_connect(struct ward_session *s, int port, double timeout_s, char *err, size_t errlen)
{
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
	struct netns_sock n = {.pidfd = s->parts.pidfd, .fd = -EIO};
	pthread_t t;
	int rc = pthread_create(&t, NULL, netns_sock_main, &n);
	if (rc) {
		base_errf(err, errlen, "cannot start a thread: %s", strerror(rc));
		return -rc;
	}
	pthread_join(t, NULL);
	if (n.fd < 0) {
		base_errf(err, errlen, "cannot enter the sandbox's network namespace (%s): ward serve must run as root",
		          strerror(-n.fd));
		return n.fd;
	}
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int r = connect(n.fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
	if (r == -EINPROGRESS) {
		struct pollfd p = {.fd = n.fd, .events = POLLOUT};
		int k = poll(&p, 1, (int)(timeout_s * 1000));
		socklen_t len = sizeof(r);
		if (k <= 0)
			r = -ETIMEDOUT;
		else if (getsockopt(n.fd, SOL_SOCKET, SO_ERROR, &r, &len) < 0 || r)
			r = -(r ? r : errno);
	}
	if (r < 0) {
		base_errf(err, errlen, "nothing answers on port %d in the sandbox (%s)", port, strerror(-r));
		close(n.fd);
		return r;
	}
	fcntl(n.fd, F_SETFL, fcntl(n.fd, F_GETFL) & ~O_NONBLOCK);
	return n.fd;
}
