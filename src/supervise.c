/* supervise.c — pipes, output caps, timeouts.  See supervise.h. */
#define _GNU_SOURCE
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("WARD_TRACE");
		on = v && *v && strcmp(v, "0") != 0;
	}
	if (on)
		fprintf(stderr, "ward-trace: %s %.0f\n", phase, (monotonic_now() - start) * 1e6);
}

void capbuf_init(struct capbuf *c, uint64_t limit, int live_fd)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
	c->tail_cap = (size_t)(limit / 2);
	c->head_cap = (size_t)(limit - c->tail_cap);
	c->live_fd = live_fd;
}

/* false when the reader has gone (EPIPE and the like). */
static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

void capbuf_feed(struct capbuf *c, const char *data, size_t n)
{
	c->total += n;
	if (c->head_len < c->head_cap) {
		size_t k = c->head_cap - c->head_len;
		if (k > n)
			k = n;
		if (c->live_fd >= 0) {
			if (!c->live_broken && !write_all(c->live_fd, data, k))
				c->live_broken = true;
		} else {
			if (!c->head) {
				c->head = malloc(c->head_cap);
				if (!c->head)
					return;
			}
			memcpy(c->head + c->head_len, data, k);
		}
		c->head_len += k;
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

int capbuf_finish(struct capbuf *c, struct ward_stream *out)
{
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
		(void)write_all(c->live_fd, buf, n);
	out->data = buf;
	out->len = n;
	out->truncated = dropped != 0;
	out->bytes = c->total;
	capbuf_free(c);
	return 0;
}

void capbuf_free(struct capbuf *c)
{
	free(c->head);
	free(c->tail);
	c->head = c->tail = NULL;
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

int supervise_run(struct supervise *s)
{
	enum { P_OUT, P_ERR, P_REP, P_CTL, P_IN, P_PID, P_NSOCK, P_LIS, P_N };
	char *buf = malloc(65536);
	if (!buf)
		return -ENOMEM;
	capbuf_init(&s->out, s->output_limit, s->live_fd[0]);
	capbuf_init(&s->err, s->output_limit, s->live_fd[1]);
	int fds[P_N] = {s->out_fd, s->err_fd, s->report_fd, s->ctl_fd, s->stdin_fd, s->pidfd, s->notify_sock, -1};
	for (int i = 0; i < P_N; i++)
		if (fds[i] >= 0 && i != P_PID)
			fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
	size_t in_off = 0;
	if (fds[P_IN] >= 0 && s->stdin_len == 0)
		close_fd(&fds[P_IN]);
	size_t rep_cap = 0;
	double deadline = s->start + s->timeout_s;
	double exited_at = 0, next_cpu_check = s->start + 0.05;
	bool killed = false;
	bool cpu_watch = s->cg && cg_accounts_cpu(s->cg) && s->cpu_s > 0;

	for (;;) {
		double now = monotonic_now();
		if (fds[P_PID] < 0 && exited_at == 0)
			exited_at = now;
		/* Done when the top process has gone and the streams are closed,
		 * or a grace period after it went (a daemon outside the sandbox's
		 * reach in application mode could hold them forever). */
		bool streams_open = fds[P_OUT] >= 0 || fds[P_ERR] >= 0 || fds[P_REP] >= 0 || fds[P_CTL] >= 0;
		if (exited_at && (!streams_open || now - exited_at > 0.25))
			break;
		if (!killed && s->cancel && *s->cancel) {
			s->cancelled = true;
			s->kill_tree(s->kill_arg);
			killed = true;
		}
		if (!killed && now >= deadline) {
			s->timed_out = true;
			s->kill_tree(s->kill_arg);
			killed = true;
		}
		if (!killed && cpu_watch && now >= next_cpu_check) {
			uint64_t used;
			if (cg_cpu_usage(s->cg, &used) == 0 && used >= (uint64_t)(s->cpu_s * 1e6)) {
				s->cpu_exceeded = true;
				s->kill_tree(s->kill_arg);
				killed = true;
			}
			/* Check more often as the end of the budget approaches. */
			next_cpu_check = now + 0.05;
		}
		double wait = killed ? 0.05 : deadline - now;
		if (s->cancel && wait > 0.05)
			wait = 0.05;
		if (cpu_watch && !killed && next_cpu_check - now < wait)
			wait = next_cpu_check - now;
		if (exited_at && wait > 0.05)
			wait = 0.05;
		if (wait < 0)
			wait = 0;
		struct pollfd pfd[P_N];
		for (int i = 0; i < P_N; i++) {
			pfd[i].fd = fds[i];
			pfd[i].events = i == P_IN ? POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		int n = poll(pfd, P_N, (int)(wait * 1000) + 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* A stream whose live reader went away is closed on our side
		 * too, so that the child gets SIGPIPE as it would in a shell
		 * pipeline (`ward run -- yes | head` ends) instead of running on
		 * to its timeout. */
		if (pfd[P_OUT].revents && (!drain(fds[P_OUT], &s->out, buf, 65536) || s->out.live_broken))
			close_fd(&fds[P_OUT]);
		if (pfd[P_ERR].revents && (!drain(fds[P_ERR], &s->err, buf, 65536) || s->err.live_broken))
			close_fd(&fds[P_ERR]);
		if (pfd[P_REP].revents) {
			ssize_t r = read(fds[P_REP], buf, 65536);
			if (r > 0) {
				size_t room = s->report_limit - s->report_len;
				size_t k = (size_t)r < room ? (size_t)r : room;
				if (k && s->report_len + k + 1 > rep_cap) {
					size_t nc = rep_cap ? rep_cap * 2 : 65536;
					while (nc < s->report_len + k + 1)
						nc *= 2;
					char *nr = realloc(s->report, nc);
					if (nr) {
						s->report = nr;
						rep_cap = nc;
					} else
						k = 0;
				}
				if (k) {
					memcpy(s->report + s->report_len, buf, k);
					s->report_len += k;
					s->report[s->report_len] = 0;
				}
				if (k < (size_t)r)
					s->report_truncated = true;
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN))
				close_fd(&fds[P_REP]);
		}
		if (pfd[P_CTL].revents) {
			ssize_t r = read(fds[P_CTL], s->ctl + s->ctl_len, sizeof(s->ctl) - 1 - s->ctl_len);
			if (r > 0) {
				s->ctl_len += (size_t)r;
				s->ctl[s->ctl_len] = 0;
				if (s->end_at_report && s->ctl[0] == 'X' && strchr(s->ctl, '\n')) {
					/* the command has ended and PID 1 is on its way out */
					close_fd(&fds[P_CTL]);
					fds[P_PID] = -1;
				}
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN))
				close_fd(&fds[P_CTL]);
		}
		if (pfd[P_IN].revents) {
			if (pfd[P_IN].revents & (POLLERR | POLLHUP)) {
				close_fd(&fds[P_IN]);
			} else {
				ssize_t w = write(fds[P_IN], s->stdin_data + in_off, s->stdin_len - in_off);
				if (w > 0)
					in_off += (size_t)w;
				if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == s->stdin_len)
					close_fd(&fds[P_IN]);
			}
		}
		if (pfd[P_PID].revents)
			fds[P_PID] = -1; /* the caller owns and reaps it */
		if (pfd[P_NSOCK].revents) {
			/* The command hands over its seccomp listener just before
			 * execve (or the socket closes if it never got there). */
			int lis = ward_seccomp_recv_listener(fds[P_NSOCK]);
			close_fd(&fds[P_NSOCK]);
			if (lis >= 0)
				fds[P_LIS] = lis;
		}
		if (pfd[P_LIS].revents & POLLIN) {
			struct ward_seccomp_event ev;
			/* Read without answering: the caller stays blocked in the
			 * call, which never runs, until the kill lands.  ENOENT: a
			 * call was made and withdrawn before we read it (a signal
			 * interrupted the caller): fatal all the same. */
			int nr = ward_seccomp_notify_read(fds[P_LIS], &ev);
			if (nr == -ENOENT && !killed) {
				seccomp_withdrawn(&ev);
				nr = 0;
			}
			if (nr == 0 && !s->seccomp_killed) {
				s->seccomp_killed = true;
				s->seccomp_nr = ev.nr;
				capbuf_feed(&s->err, ev.text, strlen(ev.text));
				capbuf_feed(&s->err, "\n", 1);
				if (!killed) {
					s->kill_tree(s->kill_arg);
					killed = true;
				}
			}
		} else if (pfd[P_LIS].revents & (POLLHUP | POLLERR)) {
			close_fd(&fds[P_LIS]);
		}
	}
	/* The loop owns every fd it was given but the pidfd. */
	for (int i = 0; i < P_N; i++)
		if (i != P_PID)
			close_fd(&fds[i]);
	s->out_fd = s->err_fd = s->report_fd = s->ctl_fd = s->stdin_fd = s->notify_sock = -1;
	free(buf);
	return 0;
}
