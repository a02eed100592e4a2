/* supervise.c — the parent's loop (see supervise.h): stdin in, stdout,
 * stderr and the report channel out with their caps, the wall-clock and
 * tree-wide CPU limits, seccomp's fatal calls.  Owns every fd of a run
 * while it runs.  Never blocks on a reader or a writer (every fd is
 * non-blocking, a caller's is polled or reopened first: struct nbfd), and
 * never forks, execs or reaps: the level that started the run does. */
#define _GNU_SOURCE
#include "core/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/seccomp.h"

double monotonic_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void trace_phase(const char *phase, double start)
{
	/* $WARD_TRACE, read once: the same for every thread and for the
	 * sandbox's processes, which may share this memory (no lock there). */
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("WARD_TRACE");
		on = v && *v && strcmp(v, "0") != 0;
	}
	if (!on)
		return;
	/* and the CPU this process has used (PID 1 and the command count from
	 * their clones) */
	struct timespec cpu;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) < 0)
		cpu.tv_sec = cpu.tv_nsec = 0;
	fprintf(stderr, "ward-trace: %s %.0f cpu=%.0f\n", phase, (monotonic_now() - start) * 1e6,
	        (double)cpu.tv_sec * 1e6 + (double)cpu.tv_nsec / 1e3);
}

enum { NB_PLAIN, NB_OWN, NB_SOCK, NB_GUARDED };

struct nbfd nbfd_open(int fd, bool for_write)
{
	struct nbfd nb = {.fd = fd, .own = -1, .kind = NB_PLAIN};
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return nb; /* a file never waits on a reader */
	if (S_ISSOCK(st.st_mode)) {
		nb.kind = NB_SOCK;
		return nb;
	}
	nb.kind = NB_GUARDED;
	/* A pty's master would reopen as a new pty (/dev/ptmx): not that. */
	int ptn;
	bool reopen = S_ISFIFO(st.st_mode) || (S_ISCHR(st.st_mode) && isatty(fd) && ioctl(fd, TIOCGPTN, &ptn) < 0);
	if (!reopen)
		return nb;
	char path[40];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int own = open(path, (for_write ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (own >= 0)
		nb = (struct nbfd){.fd = own, .own = own, .kind = NB_OWN};
	return nb;
}

void nbfd_close(struct nbfd *nb)
{
	if (nb->own >= 0)
		close(nb->own);
	nb->own = -1;
	nb->fd = -1;
}

/* NB_GUARDED: is the fd ready for events now?  -1 when it has failed. */
static int ready_now(int fd, short events)
{
	struct pollfd pf = {.fd = fd, .events = events};
	if (poll(&pf, 1, 0) <= 0)
		return 0;
	if (pf.revents & events)
		return 1;
	return pf.revents & (POLLERR | POLLHUP | POLLNVAL) ? -1 : 0;
}

ssize_t nbfd_write(const struct nbfd *nb, const void *p, size_t n)
{
	ssize_t w;
	if (nb->kind == NB_SOCK) {
		w = send(nb->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	} else {
		if (nb->kind == NB_GUARDED) {
			int r = ready_now(nb->fd, POLLOUT);
			if (r <= 0)
				return r;
			if (n > PIPE_BUF)
				n = PIPE_BUF; /* what a pipe that polls writable takes at once */
		}
		w = write(nb->fd, p, n);
	}
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	return w < 0 ? -1 : w;
}

ssize_t nbfd_read(const struct nbfd *nb, void *p, size_t n)
{
	ssize_t r;
	if (nb->kind == NB_SOCK) {
		r = recv(nb->fd, p, n, MSG_DONTWAIT);
	} else {
		if (nb->kind == NB_GUARDED && ready_now(nb->fd, POLLIN | POLLHUP) == 0)
			return -EAGAIN;
		r = read(nb->fd, p, n);
	}
	if (r < 0)
		return errno == EINTR || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return r;
}

void capbuf_init(struct capbuf *c, uint64_t limit, int live_fd)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
	c->tail_cap = (size_t)(limit / 2);
	c->head_cap = (size_t)(limit - c->tail_cap);
	c->live_fd = live_fd;
	c->live = nbfd_open(live_fd, true);
	c->obs_fd = -1;
}

void capbuf_observe(struct capbuf *c, int fd, unsigned char id)
{
	c->obs_fd = fd;
	c->obs_id = id;
}

/* One message to the observer, if it takes it now. */
static bool obs_send(struct capbuf *c, unsigned char id, const void *p, size_t n)
{
	unsigned char msg[1 + WARD_OBSERVE_MAX];
	msg[0] = id;
	memcpy(msg + 1, p, n);
	ssize_t w = send(c->obs_fd, msg, n + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS)
		c->obs_gone = true;
	c->obs_blocked = w != (ssize_t)(n + 1);
	return !c->obs_blocked;
}

/* Send what is pending, in messages, as far as the observer takes them;
 * then announce what was dropped.  Unless force, a piece waits up to
 * OBS_WINDOW_S for more (many small writes become one message). */
void capbuf_observe_flush(struct capbuf *c, bool force)
{
	if (c->obs_fd < 0 || c->obs_gone)
		return;
	if (!force && c->obs_len < WARD_OBSERVE_MAX && monotonic_now() - c->obs_since < OBS_WINDOW_S)
		return;
	size_t off = 0;
	while (off < c->obs_len) {
		size_t k = c->obs_len - off < WARD_OBSERVE_MAX ? c->obs_len - off : WARD_OBSERVE_MAX;
		if (!obs_send(c, c->obs_id, c->obs_buf + off, k))
			break;
		off += k;
	}
	if (off) {
		memmove(c->obs_buf, c->obs_buf + off, c->obs_len - off);
		c->obs_len -= off;
	}
	if (c->obs_len || !c->obs_dropped)
		return;
	unsigned char cnt[8];
	for (int i = 0; i < 8; i++)
		cnt[i] = (unsigned char)(c->obs_dropped >> (8 * i));
	if (obs_send(c, WARD_OBSERVE_DROPPED | c->obs_id, cnt, sizeof(cnt)))
		c->obs_dropped = 0;
}

bool capbuf_observe_blocked(const struct capbuf *c)
{
	return c->obs_fd >= 0 && !c->obs_gone && c->obs_blocked && (c->obs_len || c->obs_dropped);
}

double capbuf_observe_due(const struct capbuf *c)
{
	return c->obs_fd >= 0 && !c->obs_gone && !c->obs_blocked && c->obs_len ? c->obs_since + OBS_WINDOW_S : 0;
}

/* The head's new bytes for the observer: pending (at most OBS_PENDING
 * bytes), then sent; what does not fit is dropped and counted, and so is
 * everything after it until the drop is announced. */
static void obs_feed(struct capbuf *c, const char *data, size_t n)
{
	if (c->obs_fd < 0 || c->obs_gone || !n)
		return;
	if (!c->obs_buf && !(c->obs_buf = malloc(OBS_PENDING))) {
		c->obs_dropped += n;
		return;
	}
	size_t k = c->obs_dropped ? 0 : OBS_PENDING - c->obs_len < n ? OBS_PENDING - c->obs_len : n;
	if (!c->obs_len)
		c->obs_since = monotonic_now();
	memcpy(c->obs_buf + c->obs_len, data, k);
	c->obs_len += k;
	c->obs_dropped += n - k;
	capbuf_observe_flush(c, false);
}

void capbuf_feed(struct capbuf *c, const char *data, size_t n)
{
	c->total += n;
	if (c->head_len < c->head_cap) {
		size_t k = c->head_cap - c->head_len;
		if (k > n)
			k = n;
		if (!c->head) {
			c->head = malloc(c->head_cap);
			if (!c->head)
				return;
		}
		memcpy(c->head + c->head_len, data, k);
		c->head_len += k;
		obs_feed(c, data, k);
		data += k;
		n -= k;
	}
	if (!n || !c->tail_cap)
		return;
	if (!c->tail) {
		c->tail = malloc(c->tail_cap);
		if (!c->tail)
			return;
	}
	if (n >= c->tail_cap) {
		memcpy(c->tail, data + n - c->tail_cap, c->tail_cap);
		c->tail_pos = 0;
		c->tail_len = c->tail_cap;
		return;
	}
	size_t first = c->tail_cap - c->tail_pos;
	if (first > n)
		first = n;
	memcpy(c->tail + c->tail_pos, data, first);
	memcpy(c->tail, data + first, n - first);
	c->tail_pos = (c->tail_pos + n) % c->tail_cap;
	c->tail_len = c->tail_len + n > c->tail_cap ? c->tail_cap : c->tail_len + n;
}

bool capbuf_pending(const struct capbuf *c)
{
	return c->live_fd >= 0 && !c->live_broken && c->live_sent < c->head_len;
}

/* Write what the reader takes now of [*off, n); false when it has gone. */
static bool live_offer(struct capbuf *c, const char *p, size_t n, size_t *off)
{
	while (*off < n) {
		ssize_t w = nbfd_write(&c->live, p + *off, n - *off);
		if (w < 0) {
			c->live_broken = true;
			return false;
		}
		if (w == 0)
			break;
		*off += (size_t)w;
	}
	return true;
}

void capbuf_push(struct capbuf *c)
{
	if (capbuf_pending(c))
		live_offer(c, c->head, c->head_len, &c->live_sent);
}

/* Write all of p as the reader takes it, waiting for it until live_until
 * and then for as long as it keeps taking something every LIVE_STALL_S.
 * How much went out. */
static size_t live_deliver(struct capbuf *c, const char *p, size_t n)
{
	size_t off = 0;
	double last = monotonic_now();
	while (off < n) {
		size_t before = off;
		if (!live_offer(c, p, n, &off))
			break;
		double now = monotonic_now();
		if (off > before)
			last = now;
		if (off == n || (c->cancel && *c->cancel))
			break;
		double until = last + LIVE_STALL_S > c->live_until ? last + LIVE_STALL_S : c->live_until;
		if (now >= until)
			break;
		/* in short steps, so that a cancel is seen */
		double wait = until - now < 0.05 ? until - now : 0.05;
		struct pollfd pf = {.fd = c->live.fd, .events = POLLOUT};
		poll(&pf, 1, (int)(wait * 1000) + 1);
	}
	return off;
}

/* Streaming: the rest of the head, then out (marker and tail). */
static void live_finish(struct capbuf *c, const char *out, size_t n)
{
	size_t head_rest = c->live_sent < c->head_len ? c->head_len - c->live_sent : 0;
	size_t sent = head_rest ? live_deliver(c, c->head + c->live_sent, head_rest) : 0;
	if (sent == head_rest && !c->live_broken)
		sent += live_deliver(c, out, n);
	if (c->live_broken || sent == head_rest + n)
		return;
	c->live_dropped = head_rest + n - sent;
	char marker[128];
	int m = snprintf(marker, sizeof(marker),
	                 "\n[ward: %llu bytes dropped: the reader of ward's output did not keep up]\n",
	                 (unsigned long long)c->live_dropped);
	size_t off = 0;
	live_offer(c, marker, (size_t)m, &off); /* when it still fits */
}

int capbuf_finish(struct capbuf *c, struct ward_stream *out)
{
	capbuf_observe_flush(c, true); /* what the observer does not take now is its loss */
	uint64_t kept = (uint64_t)c->head_len + c->tail_len;
	uint64_t dropped = c->total - kept;
	char marker[96] = "";
	if (dropped)
		snprintf(marker, sizeof(marker), "\n[ward: %llu bytes dropped]\n", (unsigned long long)dropped);
	size_t mlen = strlen(marker);
	size_t hl = c->live_fd >= 0 ? 0 : c->head_len;
	size_t n = hl + mlen + c->tail_len;
	char *buf = malloc(n + 1);
	if (!buf) {
		capbuf_free(c);
		return -ENOMEM;
	}
	if (hl)
		memcpy(buf, c->head, hl);
	memcpy(buf + hl, marker, mlen);
	/* The ring from its oldest byte. */
	size_t start = c->tail_len < c->tail_cap ? 0 : c->tail_pos;
	for (size_t i = 0; i < c->tail_len; i++)
		buf[hl + mlen + i] = c->tail[(start + i) % c->tail_cap];
	buf[n] = 0;
	if (c->live_fd >= 0 && !c->live_broken)
		live_finish(c, buf, n);
	out->data = buf;
	out->len = n;
	out->truncated = dropped != 0 || c->live_dropped != 0;
	out->bytes = c->total;
	capbuf_free(c);
	return 0;
}

void capbuf_free(struct capbuf *c)
{
	free(c->head);
	free(c->tail);
	free(c->obs_buf);
	c->head = c->tail = c->obs_buf = NULL;
	nbfd_close(&c->live);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Read what is there; false at EOF or error. */
static bool drain(int fd, struct capbuf *c, char *buf, size_t bufsz)
{
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);
		if (n > 0) {
			capbuf_feed(c, buf, (size_t)n);
			if ((size_t)n < bufsz)
				return true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		return false;
	}
}

/* A fatal call whose caller a signal took out of it before we could read
 * which call it was. */
static void seccomp_withdrawn(struct ward_seccomp_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->nr = -1;
	snprintf(ev->text, sizeof(ev->text),
	         "ward: seccomp: blocked a system call (interrupted before ward read which); sandbox killed (SIGSYS)");
}

/* The command's stdin: the request's bytes, or what is relayed from the
 * caller's fd (src) through buf, one read at a time. */
struct feed {
	const unsigned char *data;
	size_t len, off;
	struct nbfd src; /* fd -1: nothing (more) to relay */
	unsigned char *buf;
};

/* Relay: read the next bytes from src; false at its end (or failure). */
static bool feed_refill(struct feed *f)
{
	ssize_t r = nbfd_read(&f->src, f->buf, 65536);
	if (r == -EAGAIN)
		return true;
	if (r <= 0) {
		nbfd_close(&f->src);
		return false;
	}
	f->data = f->buf;
	f->len = (size_t)r;
	f->off = 0;
	return true;
}

/* Write what the pipe takes; false when the stdin pipe is done with (all
 * written and nothing more to relay, or the command closed its end). */
static bool feed_write(struct feed *f, int fd, short revents)
{
	if (revents & (POLLERR | POLLHUP)) {
		nbfd_close(&f->src);
		return false;
	}
	ssize_t w = write(fd, f->data + f->off, f->len - f->off);
	if (w > 0)
		f->off += (size_t)w;
	if (w < 0 && errno != EAGAIN && errno != EINTR) {
		nbfd_close(&f->src);
		return false;
	}
	return f->off < f->len || f->src.fd >= 0;
}

/* The fds the loop polls: its own (it closes them all when it ends, but
 * the pidfd), then the caller's, which it only borrows. */
enum { P_OUT, P_ERR, P_REP, P_CTL, P_IN, P_PID, P_NSOCK, P_LIS, P_N, P_LOUT = P_N, P_LERR, P_SRC, P_OBS, P_ALL };

/* One run of the loop: what it polls and what it has seen so far. */
struct loop {
	int fds[P_N]; /* -1: closed, or not given */
	struct pollfd pfd[P_ALL];
	char *buf;        /* 64 KiB, for every read */
	struct feed in;   /* the command's stdin */
	size_t rep_cap;   /* what s->report has room for */
	double deadline;  /* monotonic: the wall-clock limit */
	double exited_at; /* when the top process went; 0: not yet */
	double next_cpu_check;
	bool killed;    /* the tree has been killed (once is enough) */
	bool cpu_watch; /* the tree-wide CPU limit is read from the cgroup */
};

/* Take the run's fds (non-blocking from now on) and start the captures.
 * 0, or -ENOMEM with nothing taken. */
static int loop_begin(struct supervise *s, struct loop *l)
{
	l->buf = malloc(65536);
	l->in = (struct feed){.data = s->stdin_data, .len = s->stdin_len, .src = nbfd_open(-1, false)};
	if (s->stdin_src >= 0 && s->stdin_fd >= 0) {
		l->in.buf = malloc(65536);
		l->in.src = nbfd_open(l->in.buf ? s->stdin_src : -1, false);
	}
	if (!l->buf || (s->stdin_src >= 0 && !l->in.buf)) {
		free(l->buf);
		free(l->in.buf);
		return -ENOMEM;
	}
	capbuf_init(&s->out, s->output_limit, s->live_fd[0]);
	capbuf_init(&s->err, s->output_limit, s->live_fd[1]);
	if (s->observe_fd > 0) {
		capbuf_observe(&s->out, s->observe_fd, WARD_OBSERVE_STDOUT);
		capbuf_observe(&s->err, s->observe_fd, WARD_OBSERVE_STDERR);
	}
	const int given[P_N] = {s->out_fd,   s->err_fd, s->report_fd,   s->ctl_fd,
	                        s->stdin_fd, s->pidfd,  s->notify_sock, -1};
	memcpy(l->fds, given, sizeof(given));
	for (int i = 0; i < P_N; i++)
		if (l->fds[i] >= 0 && i != P_PID)
			fcntl(l->fds[i], F_SETFL, fcntl(l->fds[i], F_GETFL) | O_NONBLOCK);
	if (l->fds[P_IN] >= 0 && l->in.len == 0 && l->in.src.fd < 0)
		close_fd(&l->fds[P_IN]);
	l->deadline = s->start + s->timeout_s;
	s->out.live_until = s->err.live_until = l->deadline;
	s->out.cancel = s->err.cancel = s->cancel;
	l->next_cpu_check = s->start + 0.05;
	l->cpu_watch = s->cg && cg_accounts_cpu(s->cg) && s->cpu_s > 0;
	return 0;
}

/* Done when the top process has gone and the streams are closed, or a
 * grace period after it went (a daemon outside the sandbox's reach in
 * application mode could hold them forever). */
static bool loop_finished(const struct supervise *s, struct loop *l, double now)
{
	if (l->fds[P_PID] < 0 && l->exited_at == 0)
		l->exited_at = now;
	bool streams_open = l->fds[P_OUT] >= 0 || l->fds[P_ERR] >= 0 || l->fds[P_REP] >= 0 || l->fds[P_CTL] >= 0;
	if (l->exited_at && s->report_to_eof && l->fds[P_REP] >= 0 && now - l->exited_at < REPORT_DRAIN_S)
		return false;
	return l->exited_at && (!streams_open || now - l->exited_at > 0.25);
}

static void loop_kill(struct supervise *s, struct loop *l)
{
	s->kill_tree(s->kill_arg);
	l->killed = true;
}

/* A cancel, the wall-clock deadline, the tree's CPU time: the first that
 * comes kills the tree. */
static void loop_enforce_limits(struct supervise *s, struct loop *l, double now)
{
	bool obs_gone = s->out.obs_gone || s->err.obs_gone || (l->pfd[P_OBS].revents & (POLLHUP | POLLERR));
	if (!l->killed && ((s->cancel && *s->cancel) || obs_gone)) {
		s->cancelled = true;
		loop_kill(s, l);
	}
	if (!l->killed && s->output_kill && (s->out.total > s->output_limit || s->err.total > s->output_limit)) {
		s->output_exceeded = true;
		loop_kill(s, l);
	}
	if (!l->killed && now >= l->deadline) {
		s->timed_out = true;
		loop_kill(s, l);
	}
	if (!l->killed && l->cpu_watch && now >= l->next_cpu_check) {
		uint64_t used;
		if (cg_cpu_usage(s->cg, &used) == 0 && used >= (uint64_t)(s->cpu_s * 1e6)) {
			s->cpu_exceeded = true;
			loop_kill(s, l);
		}
		/* Check more often as the end of the budget approaches. */
		l->next_cpu_check = now + 0.05;
	}
}

/* How long poll may wait, in seconds: up to the deadline or the next CPU
 * check, in short steps once killed, while a cancel may come, or after the
 * top process went. */
static double loop_wait(const struct supervise *s, const struct loop *l, double now)
{
	double wait = l->killed ? 0.05 : l->deadline - now;
	if (s->cancel && wait > 0.05)
		wait = 0.05;
	if (l->cpu_watch && !l->killed && l->next_cpu_check - now < wait)
		wait = l->next_cpu_check - now;
	if (l->exited_at && wait > 0.05)
		wait = 0.05;
	/* a piece for the observer waits for more at most OBS_WINDOW_S */
	for (int i = 0; i < 2; i++) {
		double due = capbuf_observe_due(i ? &s->err : &s->out);
		if (due && due - now < wait)
			wait = due - now;
	}
	if (wait < 0)
		wait = 0;
	return wait;
}

/* What to poll this time round. */
static void loop_arm(struct supervise *s, struct loop *l)
{
	struct pollfd *pfd = l->pfd;
	for (int i = 0; i < P_N; i++) {
		pfd[i].fd = l->fds[i];
		pfd[i].events = i == P_IN ? POLLOUT : POLLIN;
		pfd[i].revents = 0;
	}
	/* stdin: write while there is something to write, else read more */
	bool in_empty = l->in.off == l->in.len;
	if (in_empty)
		pfd[P_IN].fd = -1;
	pfd[P_SRC] = (struct pollfd){.fd = in_empty && l->fds[P_IN] >= 0 ? l->in.src.fd : -1, .events = POLLIN};
	/* the live streams, while the reader has something to take */
	pfd[P_LOUT] = (struct pollfd){.fd = capbuf_pending(&s->out) ? s->out.live.fd : -1, .events = POLLOUT};
	pfd[P_LERR] = (struct pollfd){.fd = capbuf_pending(&s->err) ? s->err.live.fd : -1, .events = POLLOUT};
	/* the observer: its going away (POLLHUP), and room for what it did not take */
	bool obs_wait = capbuf_observe_blocked(&s->out) || capbuf_observe_blocked(&s->err);
	pfd[P_OBS] = (struct pollfd){.fd = s->observe_fd > 0 && !l->killed ? s->observe_fd : -1,
	                             .events = obs_wait ? POLLOUT : 0};
}

/* stdout and stderr: capture what is there, and offer the live reader
 * what it takes. */
static void loop_output(struct supervise *s, struct loop *l)
{
	/* A stream whose live reader went away is closed on our side too, so
	 * that the child gets SIGPIPE as it would in a shell pipeline (`ward
	 * run -- yes | head` ends) instead of running on to its timeout. */
	if (l->pfd[P_OUT].revents && !drain(l->fds[P_OUT], &s->out, l->buf, 65536))
		close_fd(&l->fds[P_OUT]);
	if (l->pfd[P_ERR].revents && !drain(l->fds[P_ERR], &s->err, l->buf, 65536))
		close_fd(&l->fds[P_ERR]);
	/* Never waiting on the reader: what it does not take yet waits in the
	 * head (bounded by the output limit). */
	capbuf_push(&s->out);
	capbuf_push(&s->err);
	capbuf_observe_flush(&s->out, false);
	capbuf_observe_flush(&s->err, false);
	if (s->out.live_broken)
		close_fd(&l->fds[P_OUT]);
	if (s->err.live_broken)
		close_fd(&l->fds[P_ERR]);
}

/* Keep n more bytes of the report channel (in l->buf), up to
 * report_limit; what is beyond it marks the report truncated. */
static void report_append(struct supervise *s, struct loop *l, size_t n)
{
	size_t room = s->report_limit - s->report_len;
	size_t k = n < room ? n : room;
	if (k && s->report_len + k + 1 > l->rep_cap) {
		size_t nc = l->rep_cap ? l->rep_cap * 2 : 65536;
		while (nc < s->report_len + k + 1)
			nc *= 2;
		char *nr = realloc(s->report, nc);
		if (nr) {
			s->report = nr;
			l->rep_cap = nc;
		} else
			k = 0;
	}
	if (k) {
		memcpy(s->report + s->report_len, l->buf, k);
		s->report_len += k;
		s->report[s->report_len] = 0;
	}
	if (k < n)
		s->report_truncated = true;
}

static void loop_report(struct supervise *s, struct loop *l)
{
	if (!l->pfd[P_REP].revents)
		return;
	ssize_t r = read(l->fds[P_REP], l->buf, 65536);
	if (r > 0)
		report_append(s, l, (size_t)r);
	else if (r == 0 || (errno != EINTR && errno != EAGAIN))
		close_fd(&l->fds[P_REP]);
}

/* The backend's control pipe: what it says is kept in s->ctl. */
static void loop_control(struct supervise *s, struct loop *l)
{
	if (!l->pfd[P_CTL].revents)
		return;
	ssize_t r = read(l->fds[P_CTL], s->ctl + s->ctl_len, sizeof(s->ctl) - 1 - s->ctl_len);
	if (r > 0) {
		s->ctl_len += (size_t)r;
		s->ctl[s->ctl_len] = 0;
		if (s->end_at_report && s->ctl[0] == 'X' && strchr(s->ctl, '\n')) {
			/* the command has ended and PID 1 is on its way out */
			close_fd(&l->fds[P_CTL]);
			l->fds[P_PID] = -1;
		}
	} else if (r == 0 || (errno != EINTR && errno != EAGAIN))
		close_fd(&l->fds[P_CTL]);
}

/* The command's stdin: relay more from the caller's fd, write what the
 * pipe takes.  End of the relayed input is end of the command's stdin. */
static void loop_stdin(struct loop *l)
{
	if (l->pfd[P_SRC].revents && !feed_refill(&l->in))
		close_fd(&l->fds[P_IN]);
	if (l->pfd[P_IN].revents && !feed_write(&l->in, l->fds[P_IN], l->pfd[P_IN].revents))
		close_fd(&l->fds[P_IN]);
}

/* The seccomp listener: its arrival from the command, then a fatal call
 * caught through it, which kills the tree. */
static void loop_seccomp(struct supervise *s, struct loop *l)
{
	if (l->pfd[P_NSOCK].revents) {
		/* The command hands over its seccomp listener just before execve
		 * (or the socket closes if it never got there). */
		int lis = ward_seccomp_recv_listener(l->fds[P_NSOCK]);
		close_fd(&l->fds[P_NSOCK]);
		if (lis >= 0)
			l->fds[P_LIS] = lis;
	}
	if (l->pfd[P_LIS].revents & POLLIN) {
		struct ward_seccomp_event ev;
		/* Read without answering: the caller stays blocked in the call,
		 * which never runs, until the kill lands.  ENOENT: a call was
		 * made and withdrawn before we read it (a signal interrupted the
		 * caller): fatal all the same. */
		int nr = ward_seccomp_notify_read(l->fds[P_LIS], &ev);
		if (nr == -ENOENT && !l->killed) {
			seccomp_withdrawn(&ev);
			nr = 0;
		}
		if (nr == 0 && !s->seccomp_killed) {
			s->seccomp_killed = true;
			s->seccomp_nr = ev.nr;
			capbuf_feed(&s->err, ev.text, strlen(ev.text));
			capbuf_feed(&s->err, "\n", 1);
			if (!l->killed)
				loop_kill(s, l);
		}
	} else if (l->pfd[P_LIS].revents & (POLLHUP | POLLERR)) {
		close_fd(&l->fds[P_LIS]);
	}
}

/* What poll found, in this order. */
static void loop_events(struct supervise *s, struct loop *l)
{
	loop_output(s, l);
	loop_report(s, l);
	loop_control(s, l);
	loop_stdin(l);
	if (l->pfd[P_PID].revents)
		l->fds[P_PID] = -1; /* the caller owns and reaps it */
	loop_seccomp(s, l);
}

/* The loop owns every fd it was given but the pidfd. */
static void loop_end(struct supervise *s, struct loop *l)
{
	for (int i = 0; i < P_N; i++)
		if (i != P_PID)
			close_fd(&l->fds[i]);
	s->out_fd = s->err_fd = s->report_fd = s->ctl_fd = s->stdin_fd = s->notify_sock = -1;
	nbfd_close(&l->in.src);
	free(l->in.buf);
	free(l->buf);
}

/* One poll a round, never blocking on anything else: every fd is
 * non-blocking, and the live reader is written only what it takes. */
static int supervise_loop(struct supervise *s)
{
	struct loop l = {0};
	if (loop_begin(s, &l) < 0)
		return -ENOMEM;
	for (;;) {
		double now = monotonic_now();
		if (loop_finished(s, &l, now))
			break;
		loop_enforce_limits(s, &l, now);
		double wait = loop_wait(s, &l, now);
		loop_arm(s, &l);
		if (poll(l.pfd, P_ALL, (int)(wait * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		loop_events(s, &l);
	}
	loop_end(s, &l);
	return 0;
}

int supervise_run(struct supervise *s)
{
	/* Job control must not stop the supervisor mid-run (the timeout would
	 * wait for a `fg`): in the background of ward's terminal, reading it
	 * gives end of input (EIO) and writing to it goes on, where SIGTTIN
	 * or SIGTTOU would stop ward. */
	sigset_t job, old;
	sigemptyset(&job);
	sigaddset(&job, SIGTTIN);
	sigaddset(&job, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &job, &old);
	int r = supervise_loop(s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}
