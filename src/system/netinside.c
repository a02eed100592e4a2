/* netinside.c — a sandbox's network namespace, from inside it: its
 * loopback brought up, and the egress proxy's listening socket made there
 * and handed out (SPEC §13).  Run by a sandbox's PID 1 (init.c) and by a
 * build step's (image/build_inside.c).  Syscalls only. */
#define _GNU_SOURCE
#include "system/netinside.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/egress.h"

int net_loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return r;
}

/* Egress (SPEC §13): the proxy's listening socket, made here so that it
 * lives in this network namespace (127.0.0.1:EGRESS_PROXY_PORT on our
 * loopback), and sent to the supervisor (SCM_RIGHTS, tagged 'P'), whose
 * proxy accepts on it from the host.  PID 1 keeps no copy.  Syscalls only.
 * 0, or -1 with errno set. */
int net_proxy_listener(int sock)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(EGRESS_PROXY_PORT), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cb;
	memset(&cb, 0, sizeof(cb));
	char tag = 'P';
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &s, sizeof(int));
	int r = bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 64) < 0 ? -1 : 0;
	if (r == 0) {
		ssize_t n;
		do
			n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		r = n == 1 ? 0 : -1;
	}
	int e = errno;
	close(s);
	errno = e;
	return r;
}
