/* test_egress_relay.c — the proxy's relay (system/egress.c) once a
 * connection reaches its upstream: the bytes moved through pipes with
 * splice(2), their counts exact (per record, and at the egress_bytes cap
 * to the byte), a half-closed connection, a client that stops reading
 * (the proxy waits, it does not spin, and serves the others meanwhile),
 * and an upstream that sends TCP urgent data (where splice stops: the
 * proxy steps over it as a copy would, neither stalling nor spinning),
 * a client gone in the middle of a download, and a relay with no pipe
 * to be had (it copies, as exact).
 * Called from test_egress (tests/unit/test_egress.c); all on 127.0.0.1,
 * every wait bounded. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system/egress.h"
#include "unit.h"
#include "ward.h"

void test_egress_relay(void);

struct rig {
	struct egress_proxy *p;
	int up; /* the upstream's listener */
	unsigned up_port, px_port;
};

static int listen_on(unsigned *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 8) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return s;
}

/* A proxy on 127.0.0.1 allowing pypi.test (pinned to 127.0.0.1) at an
 * upstream listener of its own; cap: egress_bytes (0: the default). */
static bool rig_start(struct rig *r, uint64_t cap)
{
	memset(r, 0, sizeof(*r));
	int lfd = listen_on(&r->px_port);
	r->up = listen_on(&r->up_port);
	static char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", r->up_port);
	static const char *allows[1], *pins[1];
	allows[0] = allow;
	pins[0] = pin;
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	if (cap)
		shape.limits.egress_bytes = cap;
	char err[256] = "";
	r->p = lfd >= 0 && r->up >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	if (!r->p && lfd >= 0)
		close(lfd);
	return r->p != NULL;
}

static void rig_stop(struct rig *r)
{
	egress_stop(r->p);
	if (r->up >= 0)
		close(r->up);
}

static const char connect_fmt[] = "CONNECT pypi.test:%u HTTP/1.1\r\n\r\n";
static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/* A CONNECT tunnel through the rig: the client's end (non-blocking) into
 * *c, the upstream's accepted end (non-blocking) into *u, the proxy's 200
 * read off.  false (both closed) when any step fails in 5 s. */
static bool tunnel(struct rig *r, int *c, int *u)
{
	*c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	*u = -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->px_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char head[96], got[sizeof(established)] = "";
	snprintf(head, sizeof(head), connect_fmt, r->up_port);
	bool ok = *c >= 0 && connect(*c, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		  send(*c, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head);
	struct pollfd pf = {.fd = r->up, .events = POLLIN};
	ok = ok && poll(&pf, 1, 5000) == 1;
	*u = ok ? accept4(r->up, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK) : -1;
	size_t n = 0;
	while (*u >= 0 && n < sizeof(established) - 1) {
		pf = (struct pollfd){.fd = *c, .events = POLLIN};
		ssize_t k = poll(&pf, 1, 5000) == 1 ? recv(*c, got + n, sizeof(established) - 1 - n, 0) : -1;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	ok = *u >= 0 && n == sizeof(established) - 1 && memcmp(got, established, n) == 0;
	if (!ok) {
		if (*c >= 0)
			close(*c);
		if (*u >= 0)
			close(*u);
		*c = *u = -1;
		return false;
	}
	int fl = fcntl(*c, F_GETFL);
	return fl >= 0 && fcntl(*c, F_SETFL, fl | O_NONBLOCK) == 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A byte of a stream at offset i: a pattern that shows a lost, doubled or
 * reordered byte. */
static unsigned char pat(uint64_t i)
{
	return (unsigned char)(i * 7 + i / 4099);
}

/* Move a stream through the tunnel: the upstream (u) writes total bytes
 * of pat (then closes its sending side when shut), while the client (c)
 * reads all it gets, checking each byte, until EOF or limit_s.  What the
 * client got, or -1 on a wrong byte. */
static int64_t stream(int u, int c, uint64_t total, bool shut, double limit_s)
{
	static unsigned char wb[256 * 1024], rb[256 * 1024];
	uint64_t sent = 0, got = 0;
	bool shut_done = false;
	double t0 = now();
	while (now() - t0 < limit_s) {
		struct pollfd pf[2] = {{.fd = sent < total ? u : -1, .events = POLLOUT}, {.fd = c, .events = POLLIN}};
		if (poll(pf, 2, 200) < 0)
			break;
		if (sent < total && (pf[0].revents & POLLOUT)) {
			size_t k = total - sent < sizeof(wb) ? (size_t)(total - sent) : sizeof(wb);
			for (size_t i = 0; i < k; i++)
				wb[i] = pat(sent + i);
			ssize_t w = send(u, wb, k, MSG_NOSIGNAL);
			if (w > 0)
				sent += (uint64_t)w;
		}
		if (sent == total && shut && !shut_done) {
			shutdown(u, SHUT_WR);
			shut_done = true;
		}
		if (pf[1].revents) {
			ssize_t n = recv(c, rb, sizeof(rb), 0);
			if (n == 0)
				return (int64_t)got;
			if (n < 0 && errno != EAGAIN)
				return (int64_t)got;
			for (ssize_t i = 0; i < n; i++)
				if (rb[i] != pat(got + (uint64_t)i))
					return -1;
			if (n > 0)
				got += (uint64_t)n;
		}
	}
	return (int64_t)got;
}

static bool record(struct egress_proxy *p, size_t i, struct ward_egress *out)
{
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	egress_records(p, 0, &res);
	bool ok = res.negress > i;
	if (ok)
		*out = res.egress[i];
	free(res.egress);
	return ok;
}

/* Wait (5 s at most) until record i's bytes_in reaches want. */
static bool bytes_in_reach(struct egress_proxy *p, size_t i, uint64_t want, struct ward_egress *e)
{
	for (int k = 0; k < 500; k++) {
		if (record(p, i, e) && e->bytes_in >= want)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* 24 MiB down, whole and in order (through pipes that grow past the
 * first's 64 KiB), counted to the byte. */
static void relay_bulk(void)
{
	struct rig r;
	int c = -1, u = -1;
	bool up = rig_start(&r, 0) && tunnel(&r, &c, &u);
	CHECK("egress relay: a CONNECT tunnel through the proxy", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	const uint64_t total = 24u << 20;
	int64_t got = stream(u, c, total, true, 20);
	CHECK("egress relay: 24 MiB arrive whole and in order, then EOF", got == (int64_t)total);
	struct ward_egress e;
	char head[96];
	int hl = snprintf(head, sizeof(head), connect_fmt, r.up_port);
	CHECK("egress relay: ... its record counts them to the byte (bytes_in 24 MiB, bytes_out the head)",
	      bytes_in_reach(r.p, 0, total, &e) && e.bytes_in == total && e.bytes_out == (uint64_t)hl && e.allowed);
	close(c);
	close(u);
	rig_stop(&r);
}

/* egress_bytes: a download past it is cut at exactly the cap, whatever
 * the pipes' sizes (a cap that is no multiple of a page). */
static void relay_cap(void)
{
	struct rig r;
	int c = -1, u = -1;
	const uint64_t cap = (3u << 20) + 12345;
	bool up = rig_start(&r, cap) && tunnel(&r, &c, &u);
	CHECK("egress relay (cap): a tunnel under egress_bytes 3 MiB + 12345", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	char head[96];
	int hl = snprintf(head, sizeof(head), connect_fmt, r.up_port);
	int64_t got = stream(u, c, 8u << 20, false, 20);
	CHECK("egress relay (cap): the client gets the cap less the head, in order, then the cut",
	      got == (int64_t)(cap - (uint64_t)hl));
	struct ward_egress e;
	bool rec = record(r.p, 0, &e);
	CHECK("egress relay (cap): the record's bytes add up to the cap exactly, cut for it",
	      rec && e.bytes_in + e.bytes_out == cap && strcmp(e.reason, "egress_bytes limit reached") == 0);
	close(c);
	close(u);
	rig_stop(&r);
}

/* A client that sends its request and shuts its sending side: the
 * upstream sees the request, then EOF, and its answer still comes whole;
 * and the other way round. */
static void relay_half_close(void)
{
	struct rig r;
	int c = -1, u = -1;
	bool up = rig_start(&r, 0) && tunnel(&r, &c, &u);
	CHECK("egress relay (half-close): a tunnel", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	static const char req[] = "a request, then the client's EOF";
	bool sent = send(c, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1 &&
		    shutdown(c, SHUT_WR) == 0;
	char got[128];
	size_t n = 0;
	bool eof = false;
	for (double t0 = now(); sent && !eof && now() - t0 < 5;) {
		struct pollfd pf = {.fd = u, .events = POLLIN};
		if (poll(&pf, 1, 200) != 1)
			continue;
		ssize_t k = recv(u, got + n, sizeof(got) - 1 - n, 0);
		if (k == 0)
			eof = true;
		else if (k > 0)
			n += (size_t)k;
		else if (errno != EAGAIN)
			break;
	}
	CHECK("egress relay (half-close): the upstream gets the request, then EOF",
	      eof && n == sizeof(req) - 1 && memcmp(got, req, n) == 0);
	const uint64_t total = 3u << 20;
	int64_t back = stream(u, c, total, true, 20);
	CHECK("egress relay (half-close): ... and its 3 MiB answer comes whole to the half-closed client, then EOF",
	      back == (int64_t)total);
	struct ward_egress e;
	char head[96];
	int hl = snprintf(head, sizeof(head), connect_fmt, r.up_port);
	CHECK("egress relay (half-close): the record counts both ways to the byte",
	      bytes_in_reach(r.p, 0, total, &e) && e.bytes_in == total &&
		      e.bytes_out == (uint64_t)hl + sizeof(req) - 1);
	close(c);
	close(u);
	rig_stop(&r);
}

/* A client that stops reading while its upstream has more to send: the
 * proxy holds at most its pipe (and the sockets' buffers), waits without
 * spinning, serves another connection meanwhile, and the stalled one
 * completes whole once the client reads again. */
static void relay_stalled_client(void)
{
	struct rig r;
	int c = -1, u = -1;
	bool up = rig_start(&r, 0) && tunnel(&r, &c, &u);
	CHECK("egress relay (stalled client): a tunnel", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	/* the upstream writes until everything between it and the client is full */
	static unsigned char wb[64 * 1024];
	uint64_t sent = 0;
	for (double t0 = now(); now() - t0 < 2;) {
		for (size_t i = 0; i < sizeof(wb); i++)
			wb[i] = pat(sent + i);
		ssize_t w = send(u, wb, sizeof(wb), MSG_NOSIGNAL);
		if (w > 0) {
			sent += (uint64_t)w;
			continue;
		}
		struct pollfd pf = {.fd = u, .events = POLLOUT};
		if (poll(&pf, 1, 300) == 0)
			break; /* 300 ms without room: it is all full */
	}
	uint64_t cpu0 = egress_cpu_us(r.p);
	usleep(1000 * 1000);
	double cpu_ms = (double)(egress_cpu_us(r.p) - cpu0) / 1000;
	printf("# stalled client: %llu bytes in flight; the proxy's CPU over the next second %.1f ms\n",
	       (unsigned long long)sent, cpu_ms);
	CHECK("egress relay (stalled client): the proxy waits for it without spinning", sent > 0 && cpu_ms < 100);
	int c2 = -1, u2 = -1;
	bool other = tunnel(&r, &c2, &u2) && send(c2, "x", 1, MSG_NOSIGNAL) == 1;
	char x = 0;
	struct pollfd pf = {.fd = u2, .events = POLLIN};
	other = other && poll(&pf, 1, 5000) == 1 && recv(u2, &x, 1, 0) == 1 && x == 'x';
	CHECK("egress relay (stalled client): ... and serves another connection meanwhile", other);
	if (c2 >= 0)
		close(c2);
	if (u2 >= 0)
		close(u2);
	/* the client reads again: what was sent, and 1 MiB more, whole */
	static unsigned char rb[256 * 1024];
	uint64_t got = 0, total = sent + (1u << 20);
	bool ok = true;
	for (double t0 = now(); ok && got < total && now() - t0 < 20;) {
		struct pollfd q[2] = {{.fd = sent < total ? u : -1, .events = POLLOUT}, {.fd = c, .events = POLLIN}};
		if (poll(q, 2, 200) < 0)
			break;
		if (sent < total && (q[0].revents & POLLOUT)) {
			size_t k = total - sent < sizeof(wb) ? (size_t)(total - sent) : sizeof(wb);
			for (size_t i = 0; i < k; i++)
				wb[i] = pat(sent + i);
			ssize_t w = send(u, wb, k, MSG_NOSIGNAL);
			if (w > 0)
				sent += (uint64_t)w;
		}
		ssize_t n = q[1].revents ? recv(c, rb, sizeof(rb), 0) : 0;
		for (ssize_t i = 0; i < n; i++)
			ok = ok && rb[i] == pat(got + (uint64_t)i);
		if (n > 0)
			got += (uint64_t)n;
		else if (q[1].revents && n == 0)
			break;
	}
	CHECK("egress relay (stalled client): once it reads again, all of it comes, in order", ok && got == total);
	close(c);
	close(u);
	rig_stop(&r);
}

/* An upstream that sends TCP urgent data: splice stops at the urgent mark
 * (tcp_read_sock never steps over it), so the proxy reads past it as a
 * copy does (the urgent byte is not part of the stream), without stalling
 * the connection or spinning on a socket poll calls readable. */
static void relay_urgent(void)
{
	struct rig r;
	int c = -1, u = -1;
	bool up = rig_start(&r, 0) && tunnel(&r, &c, &u);
	CHECK("egress relay (urgent data): a tunnel", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	bool sent = send(u, "abc", 3, MSG_NOSIGNAL) == 3 && send(u, "!", 1, MSG_OOB | MSG_NOSIGNAL) == 1 &&
		    send(u, "def", 3, MSG_NOSIGNAL) == 3;
	char got[16] = "";
	size_t n = 0;
	for (double t0 = now(); sent && n < 6 && now() - t0 < 3;) {
		struct pollfd pf = {.fd = c, .events = POLLIN};
		if (poll(&pf, 1, 200) != 1)
			continue;
		ssize_t k = recv(c, got + n, sizeof(got) - 1 - n, 0);
		if (k > 0)
			n += (size_t)k;
		else if (k == 0 || errno != EAGAIN)
			break;
	}
	got[n] = 0;
	uint64_t cpu0 = egress_cpu_us(r.p);
	usleep(500 * 1000);
	double cpu_ms = (double)(egress_cpu_us(r.p) - cpu0) / 1000;
	printf("# urgent data: the client got \"%s\"; the proxy's CPU over the next 0.5 s %.1f ms\n", got, cpu_ms);
	CHECK("egress relay (urgent data): the stream goes on past the urgent byte", strcmp(got, "abcdef") == 0);
	CHECK("egress relay (urgent data): ... and the proxy does not spin", cpu_ms < 50);
	int64_t more = stream(u, c, 1u << 20, false, 10);
	CHECK("egress relay (urgent data): ... and later bytes still come whole", more == (int64_t)(1u << 20));
	/* and an urgent byte just before the upstream's EOF: what follows it
	 * comes, then the EOF */
	sent = send(u, "ghi", 3, MSG_NOSIGNAL) == 3 && send(u, "?", 1, MSG_OOB | MSG_NOSIGNAL) == 1 &&
	       send(u, "jkl", 3, MSG_NOSIGNAL) == 3 && shutdown(u, SHUT_WR) == 0;
	n = 0;
	bool eof = false;
	for (double t0 = now(); sent && !eof && now() - t0 < 3;) {
		struct pollfd pf = {.fd = c, .events = POLLIN};
		if (poll(&pf, 1, 200) != 1)
			continue;
		ssize_t k = recv(c, got + n, sizeof(got) - 1 - n, 0);
		if (k > 0)
			n += (size_t)k;
		else if (k == 0)
			eof = true;
		else if (errno != EAGAIN)
			break;
	}
	got[n] = 0;
	CHECK("egress relay (urgent data): an urgent byte just before EOF: the bytes after it, then EOF",
	      eof && strcmp(got, "ghijkl") == 0);
	close(c);
	close(u);
	rig_stop(&r);
}

/* A client that goes away in the middle of a download (a reset, with the
 * proxy still writing to it): the proxy ends the connection (the upstream
 * sees it end), stays up (a write to the gone peer raises no signal that
 * reaches the process) and serves the next one. */
static void relay_client_gone(void)
{
	struct rig r;
	int c = -1, u = -1;
	bool up = rig_start(&r, 0) && tunnel(&r, &c, &u);
	CHECK("egress relay (client gone): a tunnel", up);
	if (!up) {
		if (r.p)
			rig_stop(&r);
		return;
	}
	int64_t got = stream(u, c, 2u << 20, false, 10);
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c); /* a reset, while the upstream goes on sending */
	static unsigned char wb[64 * 1024];
	bool ended = false;
	for (double t0 = now(); !ended && now() - t0 < 5;) {
		struct pollfd pf = {.fd = u, .events = POLLOUT};
		if (poll(&pf, 1, 200) != 1)
			continue;
		ssize_t w = send(u, wb, sizeof(wb), MSG_NOSIGNAL);
		ended = w < 0 && errno != EAGAIN;
	}
	CHECK("egress relay (client gone): the upstream sees its connection end", got == (2 << 20) && ended);
	int c2 = -1, u2 = -1;
	bool next = tunnel(&r, &c2, &u2);
	int64_t got2 = next ? stream(u2, c2, 1u << 20, true, 10) : -2;
	CHECK("egress relay (client gone): ... and the proxy serves the next one", got2 == (1 << 20));
	if (c2 >= 0)
		close(c2);
	if (u2 >= 0)
		close(u2);
	close(u);
	rig_stop(&r);
}

/* No pipe to be had (the process out of fds: a runner with many
 * sandboxes): the relay copies through its buffers instead, as whole and
 * as exact.  The fd table is filled but for the four fds the tunnel
 * takes (the client's, the proxy's two, the upstream's accepted), so the
 * proxy's pipe2 fails with EMFILE. */
static void relay_no_pipes(void)
{
	struct rig r;
	int c = -1, u = -1;
	if (!rig_start(&r, 0)) {
		CHECK("egress relay (no pipes): the proxy starts", false);
		return;
	}
	struct rlimit old, lim;
	getrlimit(RLIMIT_NOFILE, &old);
	int top = dup(0), fill[256], nfill = 0;
	if (top >= 0)
		close(top);
	lim = old;
	/* (at least 2 + 2 * EGRESS_MAX_CONNS: poll refuses more fds than the limit) */
	lim.rlim_cur = (rlim_t)top + 200 < old.rlim_cur ? (rlim_t)top + 200 : old.rlim_cur;
	bool limited = top >= 0 && setrlimit(RLIMIT_NOFILE, &lim) == 0;
	while (limited && nfill < (int)(sizeof(fill) / sizeof(fill[0]))) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		fill[nfill++] = fd;
	}
	for (int k = 0; k < 4 && nfill > 0; k++)
		close(fill[--nfill]);
	bool up = limited && tunnel(&r, &c, &u);
	int probe = dup(0); /* the table is full: the proxy's pipes failed too */
	CHECK("egress relay (no pipes): a tunnel with the fd table full", up && probe < 0);
	if (probe >= 0)
		close(probe);
	const uint64_t total = 3u << 20;
	int64_t got = up ? stream(u, c, total, true, 20) : -2;
	CHECK("egress relay (no pipes): 3 MiB copied through the buffers, whole and in order", got == (int64_t)total);
	struct ward_egress e;
	CHECK("egress relay (no pipes): ... counted to the byte",
	      up && bytes_in_reach(r.p, 0, total, &e) && e.bytes_in == total);
	if (c >= 0)
		close(c);
	if (u >= 0)
		close(u);
	while (nfill > 0)
		close(fill[--nfill]);
	setrlimit(RLIMIT_NOFILE, &old);
	rig_stop(&r);
}

/* relay_no_pipes in a child of its own: a process of one thread, so that
 * no other thread of the test binary (a spawner's, a session's, one still
 * ending) takes one of the four fds it leaves free (ci13: the tunnel
 * failed there, in the whole binary's run, never alone). */
static void relay_no_pipes_alone(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		unit_failures = 0;
		relay_no_pipes();
		fflush(stdout);
		_exit(unit_failures > 100 ? 100 : unit_failures);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		CHECK("egress relay (no pipes): its child ran to its end", false);
		return;
	}
	unit_failures += WEXITSTATUS(st);
}

void test_egress_relay(void)
{
	relay_bulk();
	relay_cap();
	relay_half_close();
	relay_stalled_client();
	relay_urgent();
	relay_client_gone();
	relay_no_pipes_alone();
}
