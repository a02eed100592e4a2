/* relayfloor.c — the floor under any port proxy, for bench/e2b_ports.sh:
 * the least a relay of bytes can do, with no HTTP at all.  One thread, one
 * epoll set: it listens on the host's 127.0.0.1 (an ephemeral port, printed
 * on stdout as "PORT\n"), then enters the network namespace of PID for
 * good, so that each client it accepts is joined to a new connection to
 * 127.0.0.1:UPORT there; bytes are copied both ways (read, write, a 256 KiB
 * buffer each way) until either side closes, then both are closed.  With
 * "splice", the bytes go through a pipe each way instead (splice(2): the
 * kernel moves them, no copy through the relay's memory) — what a relay
 * that held both sockets could do.
 *
 * Usage: relayfloor PID UPORT [splice]  (runs until killed; root, for setns) */
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
	int pipe[2]; /* splice: read from fd into pipe[1], pending bytes in it to the peer */
	size_t pending;
};

static int ep;
static bool use_splice;

static void drop(struct side *s)
{
	struct side *p = s->peer;
	close(s->fd);
	close(p->fd);
	free(s->buf);
	free(p->buf);
	for (int i = 0; i < 2; i++) {
		if (s->pipe[i] >= 0)
			close(s->pipe[i]);
		if (p->pipe[i] >= 0)
			close(p->pipe[i]);
	}
	free(s < p ? s : p); /* allocated as a pair */
}

static bool wait_out(struct side *s)
{
	struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = s->peer};
	epoll_ctl(ep, EPOLL_CTL_MOD, s->peer->fd, &ev); /* (the peer's reads wait meanwhile) */
	return true;
}

/* The same through s's pipe. */
static bool pump_splice(struct side *s)
{
	for (;;) {
		while (s->pending) {
			ssize_t k = splice(s->pipe[0], NULL, s->peer->fd, NULL, s->pending,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (k < 0 && errno == EAGAIN)
				return wait_out(s);
			if (k <= 0)
				return false;
			s->pending -= (size_t)k;
		}
		ssize_t k = splice(s->fd, NULL, s->pipe[1], NULL, BUF, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (k < 0 && errno == EAGAIN)
			return true;
		if (k <= 0)
			return false;
		s->pending = (size_t)k;
	}
}

/* s's buffer to its peer, then more from s; false when the pair is done. */
static bool pump(struct side *s)
{
	if (use_splice)
		return pump_splice(s);
	for (;;) {
		while (s->off < s->len) {
			ssize_t k = write(s->peer->fd, s->buf + s->off, s->len - s->off);
			if (k < 0 && errno == EAGAIN)
				return wait_out(s);
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
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: relayfloor PID UPORT [splice]\n");
		return 2;
	}
	use_splice = argc == 4 && strcmp(argv[3], "splice") == 0;
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
	struct sockaddr_in up = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)atoi(argv[2])),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
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
				p[0] = (struct side){.fd = c, .peer = &p[1], .buf = malloc(BUF), .pipe = {-1, -1}};
				p[1] = (struct side){.fd = u, .peer = &p[0], .buf = malloc(BUF), .pipe = {-1, -1}};
				for (int j = 0; use_splice && j < 2; j++)
					if (pipe2(p[j].pipe, O_CLOEXEC | O_NONBLOCK) == 0)
						fcntl(p[j].pipe[1], F_SETPIPE_SZ, BUF);
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
