/* httpload.c — a small, bounded HTTP/1.1 load generator for bench/scale.sh.
 *
 * wrk is not everywhere the benchmark runs (a bare VM with no package
 * installs), so this is the part of it that the benchmark needs: C threads,
 * each with one keep-alive connection, sending the same request back to back
 * for a fixed time, and a per-request latency (send to last byte of the
 * answer) from which p50/p90/p99 are taken.
 *
 *   httpload [-c CONNS] [-d SECS] [-w SECS] [-t SECS] [-i MS] [-n N] [-b BODY]
 *            [-H 'K: V']... [-e STRING] URL
 *
 * URL is http://HOST:PORT/PATH.  With -b the request is a POST of BODY
 * (Content-Type: application/json), else a GET.  -w runs that long first
 * without counting (a warm-up); -t bounds every request, connect included:
 * a request that takes longer is an error and its connection is dropped.
 * -e STRING: an answer whose body lacks STRING is counted "bad" (POST /exec
 * answers 200 also when the command failed; '"status":"ok"' tells them apart).
 * -i MS: each connection pauses MS milliseconds after each answer (or error)
 * before it sends the next request: a client with occasional requests rather
 * than one sending back to back.  The pause is in no latency sample (a
 * request's clock starts when it is sent), and no pause runs past the end.
 * -n N: each connection stops after N counted requests (answers of any status
 * and errors, started after the warm-up), so that a paced run has a known
 * length; -d still bounds it.
 *
 * Prints one line on stdout:
 *   HTTPLOAD conns=C secs=S requests=N rps=R p50_ms=.. p90_ms=.. p99_ms=..
 *            max_ms=.. non200=X bad=Y errors=E
 * where requests counts complete answers of any status, started after the
 * warm-up; rps divides them by the time from the end of the warm-up until the
 * last of them was answered.  Every wait is bounded, so the whole run ends by
 * warm-up + SECS + the request timeout.  Exit status 0 unless the options are
 * bad or the address cannot be resolved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"

#define MAX_CONNS 256
#define MAX_HEADERS 16
#define MAX_ANSWER (16 << 20) /* bytes of one answer before it is an error */
#define MAX_GAP_MS 60000      /* -i */

struct target {
	struct addrinfo *ai;
	char *req; /* the whole request, sent as is every time */
	size_t req_len;
	const char *expect;
	double warm_end, end; /* ms, CLOCK_MONOTONIC */
	int timeout_ms;
	double gap_ms; /* -i: pause after each answer */
	long max_counted; /* -n: counted requests per connection, 0 = no limit */
};

struct conn_stats {
	const struct target *t;
	pthread_t tid;
	double *lat; /* ms, requests started after the warm-up */
	size_t n, cap;
	long non200, bad, errors;
	double last_done; /* ms: when the last counted answer arrived */
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die_oom(void)
{
	fprintf(stderr, "httpload: out of memory\n");
	exit(2);
}

/* Wait for fd to be ready for ev until the absolute deadline (ms).
 * Returns 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short ev, double deadline)
{
	for (;;) {
		double left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = ev};
		int r = poll(&p, 1, (int)ceil(left));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue; /* re-check the deadline */
		if (p.revents & (POLLERR | POLLNVAL))
			return -1;
		return 1;
	}
}

/* Sleep ms milliseconds, but not past the absolute time until (ms). */
static void pause_until(double ms, double until)
{
	double stop = now_ms() + ms;
	if (stop > until)
		stop = until;
	for (;;) {
		double left = stop - now_ms();
		if (left <= 0)
			return;
		struct timespec ts = {.tv_sec = (time_t)(left / 1e3),
				      .tv_nsec = (long)(fmod(left, 1e3) * 1e6)};
		nanosleep(&ts, NULL); /* EINTR: the loop re-checks */
	}
}

static int connect_to(const struct target *t, double deadline)
{
	for (const struct addrinfo *a = t->ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			return fd;
		if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 1) {
			int err = 0;
			socklen_t len = sizeof(err);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
				return fd;
		}
		close(fd);
	}
	return -1;
}

static int send_all(int fd, const char *p, size_t n, double deadline)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    wait_fd(fd, POLLOUT, deadline) == 1)
			continue;
		return -1;
	}
	return 0;
}

/* A growable receive buffer; bytes [off, len) are not consumed yet. */
struct rbuf {
	char *b;
	size_t len, cap, off;
};

/* Read more into rb.  Returns >0 bytes read, 0 EOF, -1 error or timeout. */
static ssize_t fill(int fd, struct rbuf *rb, double deadline)
{
	if (rb->cap - rb->len < 4096) {
		if (rb->cap >= MAX_ANSWER)
			return -1;
		size_t nc = rb->cap ? rb->cap * 2 : 16384;
		char *nb = realloc(rb->b, nc);
		if (!nb)
			die_oom();
		rb->b = nb;
		rb->cap = nc;
	}
	for (;;) {
		/* one byte kept for a NUL, so the parsers never run off the end */
		ssize_t r = recv(fd, rb->b + rb->len, rb->cap - rb->len - 1, 0);
		if (r >= 0) {
			rb->len += (size_t)r;
			rb->b[rb->len] = 0;
			return r;
		}
		if (errno == EINTR)
			continue;
		if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(fd, POLLIN, deadline) == 1)
			continue;
		return -1;
	}
}

/* Ensure at least n unconsumed bytes; -1 when the connection ends first. */
static int need(int fd, struct rbuf *rb, size_t n, double deadline)
{
	while (rb->len - rb->off < n)
		if (fill(fd, rb, deadline) <= 0)
			return -1;
	return 0;
}

/* Offset just past the next CRLF at or after rb->off, reading as needed. */
static long line_end(int fd, struct rbuf *rb, double deadline)
{
	size_t scanned = rb->off;
	for (;;) {
		char *p = memmem(rb->b + scanned, rb->len - scanned, "\r\n", 2);
		if (p)
			return (long)(p - rb->b) + 2;
		if (rb->len > scanned + 1)
			scanned = rb->len - 1;
		if (fill(fd, rb, deadline) <= 0)
			return -1;
	}
}

/* The answer's body, de-chunked, NUL-terminated for the -e search. */
struct body {
	char *b;
	size_t len, cap;
};

static void body_add(struct body *bd, const char *p, size_t n)
{
	if (bd->len + n + 1 > bd->cap) {
		size_t nc = bd->cap ? bd->cap : 4096;
		while (nc < bd->len + n + 1)
			nc *= 2;
		char *nb = realloc(bd->b, nc);
		if (!nb)
			die_oom();
		bd->b = nb;
		bd->cap = nc;
	}
	memcpy(bd->b + bd->len, p, n);
	bd->len += n;
	bd->b[bd->len] = 0;
}

/* Read one answer.  Returns the status code, or -1 on error/timeout; sets
 * *close_after when the server said it closes the connection. */
static int read_answer(int fd, struct rbuf *rb, struct body *bd, double deadline,
		       bool *close_after)
{
	bd->len = 0;
	if (bd->b)
		bd->b[0] = 0;
	long e = line_end(fd, rb, deadline);
	if (e < 0)
		return -1;
	int minor = -1, status = -1;
	if (sscanf(rb->b + rb->off, "HTTP/1.%d %d", &minor, &status) != 2)
		return -1;
	rb->off = (size_t)e;
	*close_after = minor == 0; /* HTTP/1.0 closes unless it says keep-alive */
	long clen = -1;
	bool chunked = false;
	for (;;) {
		e = line_end(fd, rb, deadline);
		if (e < 0)
			return -1;
		char *h = rb->b + rb->off;
		size_t hl = (size_t)e - rb->off - 2;
		rb->off = (size_t)e;
		if (hl == 0)
			break;
		if (hl > 15 && strncasecmp(h, "content-length:", 15) == 0)
			clen = strtol(h + 15, NULL, 10);
		else if (hl > 18 && strncasecmp(h, "transfer-encoding:", 18) == 0 &&
			 memmem(h, hl, "chunked", 7))
			chunked = true;
		else if (hl > 11 && strncasecmp(h, "connection:", 11) == 0)
			*close_after = memmem(h, hl, "close", 5) ||
				       (*close_after && !memmem(h, hl, "eep-alive", 9));
	}
	if (chunked) {
		for (;;) {
			e = line_end(fd, rb, deadline);
			if (e < 0)
				return -1;
			long sz = strtol(rb->b + rb->off, NULL, 16);
			rb->off = (size_t)e;
			if (sz < 0 || sz > MAX_ANSWER)
				return -1;
			if (sz == 0) {
				/* trailers, up to the empty line */
				for (;;) {
					e = line_end(fd, rb, deadline);
					if (e < 0)
						return -1;
					bool empty = (size_t)e - rb->off == 2;
					rb->off = (size_t)e;
					if (empty)
						break;
				}
				break;
			}
			if (need(fd, rb, (size_t)sz + 2, deadline) < 0)
				return -1;
			body_add(bd, rb->b + rb->off, (size_t)sz);
			rb->off += (size_t)sz + 2;
		}
	} else if (clen >= 0) {
		if (clen > MAX_ANSWER || need(fd, rb, (size_t)clen, deadline) < 0)
			return -1;
		body_add(bd, rb->b + rb->off, (size_t)clen);
		rb->off += (size_t)clen;
	} else {
		/* No length: the body runs to the end of the connection. */
		ssize_t r;
		while ((r = fill(fd, rb, deadline)) > 0)
			;
		if (r < 0)
			return -1;
		body_add(bd, rb->b + rb->off, rb->len - rb->off);
		rb->off = rb->len;
		*close_after = true;
	}
	/* Keep what is left (nothing, without pipelining) at the front. */
	memmove(rb->b, rb->b + rb->off, rb->len - rb->off);
	rb->len -= rb->off;
	rb->off = 0;
	rb->b[rb->len] = 0;
	return status;
}

static void add_lat(struct conn_stats *s, double ms)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		double *nl = realloc(s->lat, s->cap * sizeof(double));
		if (!nl)
			die_oom();
		s->lat = nl;
	}
	s->lat[s->n++] = ms;
}

static void *conn_main(void *arg)
{
	struct conn_stats *s = arg;
	const struct target *t = s->t;
	struct rbuf rb = {0};
	struct body bd = {0};
	int fd = -1;
	long counted_n = 0; /* counted requests, answered or not (-n) */
	bool paced = false; /* pause before this request (-i) */
	while (now_ms() < t->end) {
		if (t->max_counted && counted_n >= t->max_counted)
			break;
		if (paced) {
			pause_until(t->gap_ms, t->end);
			paced = false;
			if (now_ms() >= t->end)
				break;
		}
		double t0 = now_ms();
		double deadline = t0 + t->timeout_ms;
		bool counted = t0 >= t->warm_end;
		if (fd < 0) {
			rb.len = rb.off = 0;
			fd = connect_to(t, deadline);
			if (fd < 0) {
				if (counted) {
					s->errors++;
					counted_n++;
				}
				usleep(10000); /* refused: do not spin */
				paced = t->gap_ms > 0;
				continue;
			}
		}
		bool close_after = false;
		int status = -1;
		if (send_all(fd, t->req, t->req_len, deadline) == 0)
			status = read_answer(fd, &rb, &bd, deadline, &close_after);
		double t1 = now_ms();
		paced = t->gap_ms > 0;
		if (counted)
			counted_n++;
		if (status < 0) {
			if (counted)
				s->errors++;
			close(fd);
			fd = -1;
			continue;
		}
		if (counted) {
			add_lat(s, t1 - t0);
			s->last_done = t1;
			if (status != 200)
				s->non200++;
			else if (t->expect && !(bd.b && strstr(bd.b, t->expect)))
				s->bad++;
		}
		if (close_after) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	free(rb.b);
	free(bd.b);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: httpload [-c CONNS] [-d SECS] [-w SECS] [-t SECS] [-i MS] [-n N] [-b BODY]\n"
		   "                [-H 'K: V']... [-e STRING] http://HOST:PORT/PATH\n"
		   "  -c CONNS   keep-alive connections, one thread each (1..%d, default 1)\n"
		   "  -d SECS    measured time (default 5)    -w SECS  warm-up, not counted (0)\n"
		   "  -t SECS    bound on each request, connect included (default 10)\n"
		   "  -i MS      pause after each answer, per connection, not timed (0..%d, default 0)\n"
		   "  -n N       stop each connection after N counted requests (default: -d only)\n"
		   "  -b BODY    POST this body (application/json); without it, GET\n"
		   "  -H HEADER  extra request header (repeatable)\n"
		   "  -e STRING  count a 200 answer whose body lacks STRING as bad\n",
		MAX_CONNS, MAX_GAP_MS);
}

int main(int argc, char **argv)
{
	int conns = 1;
	double secs = 5, warm = 0, tmo = 10, gap = 0;
	long maxn = 0;
	const char *body = NULL, *expect = NULL;
	const char *hdr[MAX_HEADERS];
	int nhdr = 0, opt;
	while ((opt = getopt(argc, argv, "c:d:w:t:i:n:b:H:e:h")) != -1) {
		switch (opt) {
		case 'c': conns = atoi(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'w': warm = atof(optarg); break;
		case 't': tmo = atof(optarg); break;
		case 'i': gap = atof(optarg); break;
		case 'n': maxn = atol(optarg); break;
		case 'b': body = optarg; break;
		case 'e': expect = optarg; break;
		case 'H':
			if (nhdr == MAX_HEADERS) {
				fprintf(stderr, "httpload: at most %d -H\n", MAX_HEADERS);
				return 2;
			}
			hdr[nhdr++] = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || conns < 1 || conns > MAX_CONNS || !(secs > 0) || warm < 0 ||
	    !(tmo > 0) || secs > 3600 || warm > 3600 || tmo > 3600 || !(gap >= 0) ||
	    gap > MAX_GAP_MS || maxn < 0) {
		usage(stderr);
		return 2;
	}
	const char *url = argv[optind];
	if (strncmp(url, "http://", 7) != 0) {
		fprintf(stderr, "httpload: '%s': only http://HOST:PORT/PATH\n", url);
		return 2;
	}
	const char *hp = url + 7, *slash = strchr(hp, '/');
	const char *path = slash ? slash : "/";
	size_t hpl = slash ? (size_t)(slash - hp) : strlen(hp);
	char hostport[256], host[256];
	if (hpl == 0 || hpl >= sizeof(hostport)) {
		fprintf(stderr, "httpload: '%s': bad host\n", url);
		return 2;
	}
	memcpy(hostport, hp, hpl);
	hostport[hpl] = 0;
	const char *port = "80";
	strcpy(host, hostport);
	char *colon = strrchr(host, ':');
	if (colon && !strchr(host, ']')) {
		*colon = 0;
		port = colon + 1;
	}

	struct target t = {.expect = expect, .timeout_ms = (int)(tmo * 1000), .gap_ms = gap,
			   .max_counted = maxn};
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	int gr = getaddrinfo(host, port, &hints, &t.ai);
	if (gr != 0) {
		fprintf(stderr, "httpload: %s: %s\n", hostport, gai_strerror(gr));
		return 2;
	}
	char extra[4096] = "";
	size_t el = 0;
	for (int i = 0; i < nhdr; i++) {
		int w = snprintf(extra + el, sizeof(extra) - el, "%s\r\n", hdr[i]);
		if (w < 0 || (size_t)w >= sizeof(extra) - el) {
			fprintf(stderr, "httpload: headers too long\n");
			return 2;
		}
		el += (size_t)w;
	}
	int rl;
	if (body)
		rl = asprintf(&t.req,
			      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
			      "Content-Length: %zu\r\n%s\r\n%s",
			      path, hostport, strlen(body), extra, body);
	else
		rl = asprintf(&t.req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, hostport, extra);
	if (rl < 0)
		die_oom();
	t.req_len = (size_t)rl;
	signal(SIGPIPE, SIG_IGN);

	struct conn_stats *s = calloc((size_t)conns, sizeof(*s));
	if (!s)
		die_oom();
	double start = now_ms();
	t.warm_end = start + warm * 1000;
	t.end = t.warm_end + secs * 1000;
	int started = 0;
	for (int i = 0; i < conns; i++) {
		s[i].t = &t;
		if (pthread_create(&s[i].tid, NULL, conn_main, &s[i]) != 0) {
			fprintf(stderr, "httpload: cannot start thread %d\n", i);
			break;
		}
		started++;
	}
	size_t total = 0;
	long non200 = 0, bad = 0, errors = 0;
	double last = t.warm_end;
	for (int i = 0; i < started; i++) {
		pthread_join(s[i].tid, NULL);
		total += s[i].n;
		non200 += s[i].non200;
		bad += s[i].bad;
		errors += s[i].errors;
		if (s[i].last_done > last)
			last = s[i].last_done;
	}
	double *all = malloc((total ? total : 1) * sizeof(double));
	if (!all)
		die_oom();
	size_t k = 0;
	for (int i = 0; i < started; i++) {
		memcpy(all + k, s[i].lat, s[i].n * sizeof(double));
		k += s[i].n;
		free(s[i].lat);
	}
	qsort(all, total, sizeof(double), cmp_double);
	double window = (last - t.warm_end) / 1000;
	printf("HTTPLOAD conns=%d secs=%.3f requests=%zu rps=%.1f p50_ms=%.3f p90_ms=%.3f "
	       "p99_ms=%.3f max_ms=%.3f non200=%ld bad=%ld errors=%ld\n",
	       started, window, total, window > 0 ? (double)total / window : 0.0,
	       pct_sorted(all, total, 50), pct_sorted(all, total, 90), pct_sorted(all, total, 99),
	       total ? all[total - 1] : NAN, non200, bad, errors);
	free(all);
	free(s);
	free(t.req);
	freeaddrinfo(t.ai);
	return 0;
}
