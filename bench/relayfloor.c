/* relayfloor.c — the floor under any port proxy, for bench/e2b_ports.sh:
 * the least a relay of bytes can do, with no HTTP at all.  One thread, one
 * epoll set: it listens on the host's 127.0.0.1 (an ephemeral port, printed
 * on stdout as "PORT\n"), then enters the network namespace of PID for
 * good, so that each client it accepts is joined to a new connection to
 * 127.0.0.1:UPORT there; bytes are copied both ways (read, write, a 256 KiB
 * buffer each way) until either side closes, then both are closed.
 *
 * Usage: relayfloor PID UPORT  (runs until killed; root, for setns) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF (256 * 1024)

struct side {
	int fd;
	struct side *peer;
	char *buf; /* read from fd, to be written to peer */
	size_t len, off;
};

static int ep;

static void drop(struct side *s)
{
	struct side *p = s->peer;
	close(s->fd);
	close(p->fd);
	free(s->buf);
	free(p->buf);
	free(s < p ? s : p); /* allocated as a pair */
}

/* s's buffer to its peer, then more from s; false when the pair is done. */
static bool pump(struct side *s)
{
	for (;;) {
		while (s->off < s->len) {
			ssize_t k = write(s->peer->fd, s->buf + s->off, s->len - s->off);
			if (k < 0 && errno == EAGAIN) {
				struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = s->peer};
				epoll_ctl(ep, EPOLL_CTL_MOD, s->peer->fd, &ev); /* (the peer's reads wait meanwhile) */
				return true;
			}
			if (k <= 0)
				return false;
			s->off += (size_t)k;
		}
		ssize_t k = read(s->fd, s->buf, BUF);
		if (k < 0 && errno == EAGAIN)
			return true;
		if (k <= 0)
			return false;
		s->len = (size_t)k;
		s->off = 0;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: relayfloor PID UPORT\n");
		return 2;
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 128) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0) {
		perror("relayfloor: listen");
		return 1;
	}
	char ns[64];
	snprintf(ns, sizeof(ns), "/proc/%s/ns/net", argv[1]);
	int nfd = open(ns, O_RDONLY | O_CLOEXEC);
	if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0) {
		perror("relayfloor: setns");
		return 1;
	}
	printf("%d\n", ntohs(a.sin_port));
	fflush(stdout);
	struct sockaddr_in up = {
		.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &lev);
	struct epoll_event evs[64];
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			struct side *s = evs[i].data.ptr;
			if (!evs[i].events) /* its pair was dropped earlier in this batch */
				continue;
			if (!s) {
				int c = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				int u = c < 0 ? -1 : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
				if (u < 0 || connect(u, (struct sockaddr *)&up, sizeof(up)) < 0) {
					if (c >= 0)
						close(c);
					if (u >= 0)
						close(u);
					continue;
				}
				fcntl(u, F_SETFL, O_NONBLOCK);
				struct side *p = calloc(2, sizeof(*p));
				p[0] = (struct side){.fd = c, .peer = &p[1], .buf = malloc(BUF)};
				p[1] = (struct side){.fd = u, .peer = &p[0], .buf = malloc(BUF)};
				for (int j = 0; j < 2; j++) {
					struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p[j]};
					epoll_ctl(ep, EPOLL_CTL_ADD, p[j].fd, &ev);
				}
				continue;
			}
			if (evs[i].events & EPOLLOUT) { /* s's peer had more than s took: on with it */
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
				epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
				s = s->peer;
			}
			if (!pump(s)) {
				/* one pair may have two events in this batch: the rest of it skipped */
				struct side *p = s->peer;
				for (int j = i + 1; j < n; j++)
					if (evs[j].data.ptr == s || evs[j].data.ptr == p)
						evs[j].data.ptr = NULL, evs[j].events = 0;
				drop(s);
			}
		}
	}
}
