/* egress_listener.c — the egress proxy's listening socket, received on the
 * supervisor's side: PID 1 makes it in the sandbox's network namespace
 * and sends it over the notify socket (SCM_RIGHTS, tagged 'P':
 * netinside.c), and egress.c's proxy accepts on it (egress.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "system/egress.h"

int egress_recv_listener(int sock, int timeout_ms)
{
	struct pollfd pf = {.fd = sock, .events = POLLIN};
	int r;
	do
		r = poll(&pf, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cb;
	memset(&cb, 0, sizeof(cb));
	char tag = 0;
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	int fd = -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (tag != 'P' || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	return fd;
}
