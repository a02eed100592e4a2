/* session_bg.c — a session's background processes (ward_session_spawn and
 * the calls on what it started), supervisor side, on the host.
 *
 * A background process is an exec (session.c's session_exec_start: its own
 * cgroup, its pipes) that nobody waits for: a thread of its own drains its
 * stdout and stderr into head-and-tail buffers (core/supervise.h's capbuf)
 * under the session's background lock, enforces its timeout, and records
 * its end from PID 1's "X STATUS".  Readers take what is new from an offset
 * and may wait for more.  Nothing here runs inside the sandbox.
 *
 * What the records hold is ward's memory, not the sandbox's, so it is
 * bounded: each record's capture is reserved (both streams' capacity) from
 * the session's budget and the runner's shared one before the process
 * starts; an exited record's buffers go when it is forgotten or when a new
 * process needs the room (the oldest exited first), never because it was
 * read (clients read a process's output again: a follow to its end, then
 * a plain GET); its argv is kept up to WARD_SESSION_ARGV_KEPT bytes.
 * A record's id is its pid inside the sandbox, and a pid names the newest
 * record: a process that gets the pid of an exited one replaces that
 * record, so a stale record never shadows a running process.
 *
 * A frozen session holds none of these threads (session_bg_park): once
 * its processes are stopped, each thread drains what its pipes hold (its
 * reader's output is there to read while frozen; the pipes of a reader
 * that is behind wait as ever), writes what queued stdin the pipe takes,
 * and ends, its state (fds, control line, clock, limits hit) kept in the
 * record; the thaw starts a thread again for each process still running.
 * While parked, stdin is queued (or written, as far as the pipe takes it)
 * and output read as ever; a timeout's clock does not run (it never runs
 * while frozen).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/supervise.h"
#include "sandbox/cgroup.h"
#include "system/session.h"
#include "ward.h"

/* What ward_session_proc_stdin took for a process and the pipe had no room
 * for: its thread writes it as the process reads (a caller never waits on
 * a reader).  Its bytes are held from the same budgets as the records'
 * capture. */
struct stdin_queue {
	char *buf;
	size_t off, len;  /* the bytes not yet written: buf[off..len) */
	bool close_after; /* close the pipe once they are written */
	bool open;        /* the thread writes it (until the main process ends) */
	int wake;         /* eventfd: new bytes for the thread to write, or a thaw */
};

struct bg_proc {
	int id;      /* pid inside the sandbox */
	char **argv; /* owned copies */
	bool running, joined;
	enum ward_status status;
	int exit_code;
	double started_at, ended_at;
	double timeout_s, cpu_s;
	struct capbuf out, err;
	bool waits_reader; /* request.output_waits_reader */
	uint64_t taken[2]; /* ... the offsets of stdout and stderr its reader took up to */
	size_t reserved;   /* bytes of the budgets its capture holds (0: freed) */
	int in_w;          /* stdin pipe (stdin_pipe), -1 */
	bool stdin_pipe;
	struct stdin_queue in; /* stdin bytes taken, not yet in the pipe */
	struct session_exec x;
	pthread_t thread;
	bool thread_on; /* thread is to be joined (not parked); under lock */
	/* its thread's state, kept while it is parked */
	char ctl[256]; /* PID 1's line on its end ("X STATUS") */
	size_t ctl_len;
	bool killed, timed, cpu; /* its limits killed it: timeout_s, cpu_s */
	double t0;               /* its clock's start: monotonic, less the time frozen before */
	struct session_bg *bg;
};

struct session_bg {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* output, or an end */
	struct ward_session *s;
	struct bg_proc *p[WARD_SESSION_MAX_PROCS];
	size_t n;
	size_t held, max;           /* the session's capture budget */
	struct ward_budget *shared; /* the runner's, or NULL */
	bool parked;                /* frozen: the threads are parked (read atomically) */
	/* one park or thaw at a time, and no record forgotten (its thread
	 * joined) while one joins or starts threads; never taken by them */
	pthread_mutex_t park_lock;
};

/* Take n bytes of b, atomically; false when they do not fit. */
static bool budget_take(struct ward_budget *b, size_t n)
{
	if (!b)
		return true;
	size_t cur = __atomic_load_n(&b->held, __ATOMIC_RELAXED);
	do {
		if (n > b->max || cur > b->max - n)
			return false;
	} while (!__atomic_compare_exchange_n(&b->held, &cur, cur + n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

static void budget_give(struct ward_budget *b, size_t n)
{
	if (b && n)
		__atomic_sub_fetch(&b->held, n, __ATOMIC_RELAXED);
}

static int set_err(char *err, size_t errlen, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int set_err(char *err, size_t errlen, int r, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* Write what a non-blocking pipe takes now: the bytes written, or -1
 * (errno EPIPE: its reader is gone; a SIGPIPE this raised is taken back).
 * Never waits. */
static ssize_t write_now(int fd, const void *data, size_t len)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	size_t off = 0;
	ssize_t r = 0;
	while (off < len && ((r = write(fd, (const char *)data + off, len - off)) > 0 || errno == EINTR))
		off += r > 0 ? (size_t)r : 0;
	int e = errno;
	if (r < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0 && e == EPIPE && off == 0)
		return -1;
	errno = e;
	return (ssize_t)off;
}

int session_bg_new(struct ward_session *s, size_t max_bytes, struct ward_budget *shared, struct session_bg **out)
{
	struct session_bg *bg = calloc(1, sizeof(*bg));
	if (!bg)
		return -ENOMEM;
	pthread_mutex_init(&bg->lock, NULL);
	pthread_mutex_init(&bg->park_lock, NULL);
	pthread_cond_init(&bg->changed, NULL);
	bg->s = s;
	bg->max = max_bytes ? max_bytes : WARD_SESSION_BG_OUTPUT;
	bg->shared = shared;
	*out = bg;
	return 0;
}

/* n bytes (kept output, or queued stdin) back to the session's budget and
 * the runner's: reserve_output took them.  Under lock. */
static void budget_release(struct session_bg *bg, size_t n)
{
	bg->held -= n;
	budget_give(bg->shared, n);
}

/* Its capture's buffers go, and what they held of the budgets.  Under
 * lock, or with the record not yet shared. */
static void proc_drop_output(struct session_bg *bg, struct bg_proc *p)
{
	struct capbuf *cb[2] = {&p->out, &p->err};
	for (int i = 0; i < 2; i++) { /* empty, its total kept: a later read gets nothing, truncated */
		capbuf_free(cb[i]);
		cb[i]->head_cap = cb[i]->tail_cap = cb[i]->head_len = cb[i]->tail_len = cb[i]->tail_pos = 0;
	}
	budget_release(bg, p->reserved);
	p->reserved = 0;
}

/* The queued bytes go (written, or nobody will read them).  Under lock. */
static void stdin_drop(struct session_bg *bg, struct bg_proc *p)
{
	budget_release(bg, p->in.len - p->in.off);
	free(p->in.buf);
	p->in.buf = NULL;
	p->in.off = p->in.len = 0;
}

static void proc_free(struct session_bg *bg, struct bg_proc *p)
{
	for (char **a = p->argv; a && *a; a++)
		free(*a);
	free(p->argv);
	proc_drop_output(bg, p);
	stdin_drop(bg, p);
	if (p->in_w >= 0)
		close(p->in_w);
	if (p->in.wake >= 0)
		close(p->in.wake);
	free(p);
}

static bool bg_loop(struct bg_proc *p);
static void bg_end(struct bg_proc *p);

/* After the session's PID 1 is gone (ward_session_destroy kills it first):
 * every thread sees its process's end and returns; a parked one's loop
 * (the session was destroyed frozen) runs here to its end instead. */
void session_bg_free(struct session_bg *bg)
{
	if (!bg)
		return;
	__atomic_store_n(&bg->parked, false, __ATOMIC_RELEASE);
	for (size_t i = 0; i < bg->n; i++) {
		struct bg_proc *p = bg->p[i];
		if (p->thread_on)
			pthread_join(p->thread, NULL);
		else if (p->running && bg_loop(p))
			bg_end(p);
		proc_free(bg, p);
	}
	pthread_cond_destroy(&bg->changed);
	pthread_mutex_destroy(&bg->park_lock);
	pthread_mutex_destroy(&bg->lock);
	free(bg);
}

/* ------------------------------------------------------------ the thread */

/* The status and exit code of SPEC §2 for a wait status (ward_run's mapping). */
static void record_end(struct bg_proc *p, const char *ctl, bool timed_out, bool cpu)
{
	struct backend_outcome o = {.timed_out = timed_out, .cpu_exceeded = cpu};
	int wst;
	const char *x = ctl[0] == 'X' ? ctl : strstr(ctl, "\nX ");
	o.ran = true;
	o.wait_status = x && sscanf(x[0] == '\n' ? x + 1 : x, "X %d", &wst) == 1 ? wst : SIGKILL;
	struct cg_stats cs;
	if (cg_stats(p->x.cg, &cs) == 0)
		o.oom_killed = cs.oom_killed;
	if (session_exec_seccomp(&p->x)) { /* as an exec's (session.c) */
		o.seccomp_killed = true;
		capbuf_feed(&p->err, p->x.seccomp_text, strlen(p->x.seccomp_text));
		capbuf_feed(&p->err, "\n", 1);
	}
	if (session_exec_budget(&p->x)) /* the session's CPU budget: a CPU limit */
		o.cpu_exceeded = o.timed_out = true;
	struct ward_result res = {0};
	if (ctl[0] == 'E') {
		res.status = WARD_ST_ERROR;
		res.exit_code = WARD_EXIT_FAILED;
	} else
		result_from_outcome(&o, 0, &res, 0);
	p->status = res.status;
	p->exit_code = res.exit_code;
	free(res.out.data);
	free(res.err.data);
}

/* Drain fd (of process pid) into cb; false at its end. */
static bool drain(struct session_bg *bg, int pid, int fd, struct capbuf *cb, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	pthread_mutex_lock(&bg->lock);
	capbuf_feed(cb, buf, (size_t)n);
	pthread_cond_broadcast(&bg->changed);
	session_notify_all(bg->s, pid);
	pthread_mutex_unlock(&bg->lock);
	return true;
}

static bool over_limits(struct bg_proc *p, double now, bool *cpu)
{
	uint64_t used;
	if (p->timeout_s > 0 && now - p->started_at > p->timeout_s)
		return true;
	if (p->cpu_s > 0 && cg_cpu_usage(p->x.cg, &used) == 0 && used >= (uint64_t)(p->cpu_s * 1e6))
		return *cpu = true;
	return false;
}

/* Write what the stdin queue holds as far as the pipe takes it; the pipe
 * closes when asked and the queue is empty, or when its reader is gone
 * (nobody reads the rest).  SIGPIPE is blocked in the thread. */
static void stdin_flush(struct session_bg *bg, struct bg_proc *p)
{
	pthread_mutex_lock(&bg->lock);
	size_t was = p->in.len - p->in.off;
	ssize_t n = was && p->in_w >= 0 ? write_now(p->in_w, p->in.buf + p->in.off, was) : 0;
	if (n >= 0) {
		p->in.off += (size_t)n;
		budget_release(bg, (size_t)n);
	}
	if (n < 0 || p->in.off == p->in.len)
		stdin_drop(bg, p);
	if (p->in_w >= 0 && (n < 0 || (p->in.close_after && !p->in.len))) {
		close(p->in_w);
		p->in_w = -1;
	}
	pthread_mutex_unlock(&bg->lock);
}

/* Is there stdin to write?  Then the pipe to wait on. */
static int stdin_pending(struct session_bg *bg, struct bg_proc *p)
{
	pthread_mutex_lock(&bg->lock);
	int fd = p->in.len > p->in.off ? p->in_w : -1;
	pthread_mutex_unlock(&bg->lock);
	return fd;
}

/* The main process has ended: the thread writes no more stdin (what a
 * daemon it left reads is written by the callers at once, or refused). */
static void stdin_end(struct session_bg *bg, struct bg_proc *p)
{
	pthread_mutex_lock(&bg->lock);
	p->in.open = false;
	stdin_drop(bg, p);
	if (p->in.close_after && p->in_w >= 0) {
		close(p->in_w);
		p->in_w = -1;
	}
	pthread_mutex_unlock(&bg->lock);
}

/* Whether a read of n more bytes of stream i would overwrite what its
 * reader has not taken (output_waits_reader): then its pipe waits. */
static bool reader_behind(struct session_bg *bg, struct bg_proc *p, int i, size_t n)
{
	if (!p->waits_reader)
		return false;
	pthread_mutex_lock(&bg->lock);
	const struct capbuf *cb = i ? &p->err : &p->out;
	bool behind = cb->total + n > cb->head_cap && cb->total + n - p->taken[i] > cb->tail_cap;
	pthread_mutex_unlock(&bg->lock);
	return behind;
}

/* Its loop: its pipes drained, its stdin written, its limits watched,
 * until its main process ends (true) or, with the threads parked, until
 * its pipes hold nothing more to read now (false: its state is in p). */
static bool bg_loop(struct bg_proc *p)
{
	struct session_bg *bg = p->bg;
	char buf[16384];
	int *fds[3] = {&p->x.out_r, &p->x.err_r, &p->x.ctl_r};
	unsigned passes = 0;
	while (*fds[0] >= 0 || *fds[1] >= 0 || *fds[2] >= 0) {
		/* parked: the session is frozen, nothing more comes (a pass reads
		 * what is there, the next finds nothing); the bound is a guard */
		bool park = __atomic_load_n(&bg->parked, __ATOMIC_ACQUIRE);
		struct pollfd pf[5];
		for (int i = 0; i < 3; i++)
			pf[i] = (struct pollfd){.fd = *fds[i], .events = POLLIN};
		for (int i = 0; i < 2; i++) /* its reader's next read wakes it (in.wake) */
			if (*fds[i] >= 0 && reader_behind(bg, p, i, sizeof buf))
				pf[i].fd = -1;
		pf[3] = (struct pollfd){.fd = stdin_pending(bg, p), .events = POLLOUT};
		pf[4] = (struct pollfd){.fd = p->in.wake, .events = POLLIN};
		/* frozen: nothing to drain and no clock to watch (a thaw wakes it) */
		int n = poll(pf, 5, park ? 0 : ward_session_frozen(bg->s) ? -1 : 100);
		if (park && (n <= 0 || ++passes > 4096))
			return false;
		uint64_t ev;
		if (pf[4].revents && read(p->in.wake, &ev, sizeof(ev)) < 0 && errno != EAGAIN)
			pf[4].fd = -1;
		if (pf[3].revents)
			stdin_flush(bg, p);
		for (int i = 0; i < 2; i++)
			if (pf[i].revents && !drain(bg, p->id, *fds[i], i ? &p->err : &p->out, buf, sizeof buf)) {
				close(*fds[i]);
				*fds[i] = -1;
			}
		if (pf[2].revents) {
			ssize_t k = read(*fds[2], p->ctl + p->ctl_len, sizeof(p->ctl) - 1 - p->ctl_len);
			if (k > 0)
				p->ctl[p->ctl_len += (size_t)k] = 0;
			if (k <= 0 || strchr(p->ctl, '\n')) { /* its main process has ended */
				close(*fds[2]);
				*fds[2] = -1;
			}
		}
		double ran = monotonic_now() - ward_session_frozen_seconds(bg->s) - p->t0;
		if (!p->killed && over_limits(p, p->started_at + ran, &p->cpu)) {
			p->timed = p->killed = true;
			cg_kill(p->x.cg);
		}
		if (*fds[2] < 0 && (p->killed || p->ctl[0])) /* ended: what it left may hold the pipes */
			break;
	}
	return true;
}

/* Its main process has ended: the rest of its output, its record's end. */
static void bg_end(struct bg_proc *p)
{
	struct session_bg *bg = p->bg;
	char buf[16384];
	int *fds[2] = {&p->x.out_r, &p->x.err_r};
	for (int i = 0; i < 2; i++) /* what it wrote before it ended */
		if (*fds[i] >= 0 && fcntl(*fds[i], F_SETFL, O_NONBLOCK) == 0)
			for (int k = 0; k < 64 && drain(bg, p->id, *fds[i], i ? &p->err : &p->out, buf, sizeof buf);
			     k++)
				;
	session_close_fd(&p->x.ctl_r);
	stdin_end(bg, p);
	pthread_mutex_lock(&bg->lock);
	record_end(p, p->ctl, p->timed && !p->cpu, p->cpu);
	p->running = false;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	p->ended_at = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	pthread_cond_broadcast(&bg->changed);
	session_notify_all(bg->s, p->id);
	pthread_mutex_unlock(&bg->lock);
	session_exec_done(bg->s, &p->x);
	session_slot(bg->s, false);
}

static void *bg_main(void *arg)
{
	pthread_setname_np(pthread_self(), "ward-sess-bg");
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL); /* a stdin reader gone: EPIPE */
	/* (parked, it returns false: its state stays in the record) */
	if (bg_loop(arg))
		bg_end(arg);
	return NULL;
}

/* Its thread (started parked: none, the thaw starts it).  Under lock;
 * 0 or an errno. */
static int bg_thread(struct session_bg *bg, struct bg_proc *p)
{
	if (__atomic_load_n(&bg->parked, __ATOMIC_ACQUIRE))
		return 0;
	int e = pthread_create(&p->thread, NULL, bg_main, p);
	p->thread_on = e == 0;
	return e;
}

/* Park every thread, or start one for each running process (0, or the
 * errno of one that could not start).  Under park_lock. */
static int park_all(struct session_bg *bg, bool park)
{
	pthread_mutex_lock(&bg->lock);
	__atomic_store_n(&bg->parked, park, __ATOMIC_RELEASE);
	int e = 0;
	uint64_t one = 1;
	for (size_t i = 0; i < bg->n && !e; i++) {
		struct bg_proc *p = bg->p[i];
		if (park && p->thread_on)
			(void)!write(p->in.wake, &one, sizeof(one)); /* it looks at parked again */
		else if (!park && !p->thread_on && p->running)
			e = bg_thread(bg, p);
	}
	pthread_mutex_unlock(&bg->lock);
	/* joined outside the lock (a last pass drains under it); no record
	 * is forgotten meanwhile (make_room's caller holds park_lock) */
	for (size_t i = 0; park && i < bg->n; i++) {
		struct bg_proc *p = bg->p[i];
		if (p->thread_on) {
			pthread_join(p->thread, NULL);
			pthread_mutex_lock(&bg->lock);
			p->thread_on = false;
			pthread_mutex_unlock(&bg->lock);
		}
	}
	return e;
}

int session_bg_park(struct session_bg *bg, bool park)
{
	if (!bg)
		return 0;
	pthread_mutex_lock(&bg->park_lock);
	int e = park_all(bg, park);
	if (e) /* those started are parked again: the session stays frozen */
		park_all(bg, true);
	pthread_mutex_unlock(&bg->park_lock);
	return -e;
}

/* ------------------------------------------------------------ spawn */

/* The argv a record keeps: its words up to WARD_SESSION_ARGV_KEPT bytes in
 * all, the last one kept cut short and ended with "..." when more was
 * given (a listing repeats it; the process got all of it). */
static char **copy_argv(const struct ward_request *req)
{
	char **a = argv_build(req);
	size_t n = 0;
	while (a && a[n])
		n++;
	char **c = a ? calloc(n + 1, sizeof(char *)) : NULL;
	size_t left = WARD_SESSION_ARGV_KEPT;
	for (size_t i = 0; c && i < n && left; i++) {
		size_t k = strlen(a[i]);
		bool cut = k + 1 > left || (i + 1 < n && k + 1 == left);
		if (cut)
			k = left > 4 ? left - 4 : 0;
		c[i] = malloc(k + (cut ? 4 : 1));
		if (!c[i]) {
			for (size_t j = 0; j < i; j++)
				free(c[j]);
			free(c);
			c = NULL;
			break;
		}
		memcpy(c[i], a[i], k);
		memcpy(c[i] + k, cut ? "..." : "", cut ? 4 : 1);
		left = cut ? 0 : left - (k + 1);
	}
	free(a);
	return c;
}

static void forget(struct session_bg *bg, size_t i)
{
	struct bg_proc *old = bg->p[i];
	memmove(&bg->p[i], &bg->p[i + 1], (bg->n - i - 1) * sizeof(bg->p[0]));
	bg->n--;
	if (old->thread_on) /* (a parked one's thread was joined) */
		pthread_join(old->thread, NULL);
	proc_free(bg, old);
}

/* Room for one more record: a record that pid id names already is
 * forgotten (its process has ended: the pid is the new one's now), else,
 * when the session remembers WARD_SESSION_MAX_PROCS, the oldest that has
 * ended.  Under lock. */
static bool make_room(struct session_bg *bg, int id)
{
	for (size_t i = bg->n; i-- > 0;)
		if (bg->p[i]->id == id)
			forget(bg, i);
	if (bg->n < WARD_SESSION_MAX_PROCS)
		return true;
	for (size_t i = 0; i < bg->n; i++)
		if (!bg->p[i]->running) {
			forget(bg, i);
			return true;
		}
	return false;
}

/* Reserve n bytes of capture for a new record: the session's budget and
 * the runner's; exited records' buffers go for it, the oldest first, when
 * it does not fit.  Under lock.  false: even that is not enough. */
static bool reserve_output(struct session_bg *bg, size_t n)
{
	for (size_t i = 0;; i++) {
		if (n <= bg->max && bg->held <= bg->max - n && budget_take(bg->shared, n)) {
			bg->held += n;
			return true;
		}
		while (i < bg->n && (bg->p[i]->running || !bg->p[i]->reserved))
			i++;
		if (i >= bg->n)
			return false;
		proc_drop_output(bg, bg->p[i]);
	}
}

static struct bg_proc *proc_new(struct session_bg *bg, const struct ward_request *req, bool stdin_pipe, char *err,
                                size_t errlen)
{
	size_t need = 2 * (size_t)req->limits.output_limit;
	pthread_mutex_lock(&bg->lock);
	bool room = reserve_output(bg, need);
	size_t held = bg->held;
	pthread_mutex_unlock(&bg->lock);
	if (!room) {
		set_err(err, errlen, -EAGAIN,
		        "no room to keep this process's output (%zu bytes for its two streams at max_output_chars "
		        "%llu): the session's background processes hold %zu bytes of its budget of %zu (a runner's "
		        "--session-bg-output)%s; let running ones end or give a smaller max_output_chars",
		        need, (unsigned long long)req->limits.output_limit, held, bg->max,
		        bg->shared ? ", or the runner's budget for every session's (--max-bg-output-total) is spent"
		                   : "");
		return NULL;
	}
	struct bg_proc *p = calloc(1, sizeof(*p));
	if (!p) {
		pthread_mutex_lock(&bg->lock);
		budget_release(bg, need);
		pthread_mutex_unlock(&bg->lock);
		set_err(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	p->reserved = need;
	p->bg = bg;
	p->in_w = -1;
	p->in.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->in.open = stdin_pipe;
	p->stdin_pipe = stdin_pipe;
	p->running = true;
	p->timeout_s = req->limits.timeout_s;
	p->cpu_s = req->limits.cpu_s;
	p->waits_reader = req->output_waits_reader;
	p->t0 = monotonic_now() - ward_session_frozen_seconds(bg->s);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	p->started_at = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	capbuf_init(&p->out, req->limits.output_limit, -1);
	capbuf_init(&p->err, req->limits.output_limit, -1);
	p->argv = copy_argv(req);
	if (!p->argv || p->in.wake < 0) {
		pthread_mutex_lock(&bg->lock);
		proc_free(bg, p);
		pthread_mutex_unlock(&bg->lock);
		set_err(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	return p;
}

/* Its stdin: a pipe kept for ward_session_proc_stdin, the request's bytes
 * (at most what a pipe holds: written at once, never waiting), or none. */
static int give_stdin(struct bg_proc *p, const struct ward_request *req, char *err, size_t errlen)
{
	if (p->stdin_pipe) {
		p->in_w = p->x.in_w;
		p->x.in_w = -1;
		/* written by ward_session_proc_stdin, which never blocks in write */
		if (fcntl(p->in_w, F_SETFL, O_NONBLOCK) < 0)
			return set_err(err, errlen, -errno, "cannot make the stdin pipe non-blocking: %s",
			               strerror(errno));
		return 0;
	}
	if (p->x.in_w < 0)
		return 0;
	ssize_t w = write(p->x.in_w, req->stdin_data, req->stdin_len);
	close(p->x.in_w);
	p->x.in_w = -1;
	return w == (ssize_t)req->stdin_len ? 0 : set_err(err, errlen, -EIO, "cannot write the process's stdin");
}

static int bg_check(const struct ward_request *req, char *err, size_t errlen)
{
	if (req->stdin_fd >= 0)
		return set_err(err, errlen, -EINVAL, "a background process takes stdin data or a pipe, not an fd");
	if (req->stdin_set && req->stdin_len > 65536)
		return set_err(err, errlen, -EINVAL,
		               "a background process's stdin data is at most 64 KiB: use a stdin pipe for more");
	return 0;
}

static int spawn_started(struct session_bg *bg, struct bg_proc *p, int *id, char *err, size_t errlen)
{
	pthread_mutex_lock(&bg->park_lock); /* (a park joins threads without bg->lock) */
	pthread_mutex_lock(&bg->lock);
	bool room = make_room(bg, p->id);
	int e = room ? bg_thread(bg, p) : EAGAIN;
	if (!e)
		bg->p[bg->n++] = p;
	pthread_mutex_unlock(&bg->lock);
	pthread_mutex_unlock(&bg->park_lock);
	if (e) {
		cg_kill(p->x.cg);
		session_exec_done(bg->s, &p->x);
		pthread_mutex_lock(&bg->lock);
		proc_free(bg, p);
		pthread_mutex_unlock(&bg->lock);
		return set_err(err, errlen, -EAGAIN, "the session remembers %d background processes, all running",
		               WARD_SESSION_MAX_PROCS);
	}
	*id = p->id;
	return 0;
}

/* A thaw: every thread looks at the session's state again. */
void session_bg_wake(struct session_bg *bg)
{
	if (!bg)
		return;
	uint64_t one = 1;
	pthread_mutex_lock(&bg->lock);
	for (size_t i = 0; i < bg->n; i++)
		(void)!write(bg->p[i]->in.wake, &one, sizeof(one));
	pthread_mutex_unlock(&bg->lock);
}

int ward_session_spawn(struct ward_session *s, const struct ward_request *req, const char *cwd, bool stdin_pipe,
                       int *id, char *err, size_t errlen)
{
	struct session_bg *bg = session_bg_of(s);
	struct ward_request r2;
	char **env = NULL;
	struct ward_request q = *req;
	if (q.limits.timeout_s <= 0)
		q.limits.timeout_s = 1; /* for validation: 0 is "none" here */
	int r = bg_check(req, err, errlen);
	if (r == 0)
		r = session_refuse_frozen(s, err, errlen);
	if (r == 0)
		r = session_request(s, &q, &r2, &env, err, errlen);
	if (r == 0 && cwd && cwd[0] != '/')
		r = set_err(err, errlen, -EINVAL, "cwd must be an absolute path inside the sandbox");
	if (r == 0 && !session_slot(s, true))
		r = set_err(err, errlen, -EAGAIN, "the session runs %d execs already", WARD_SESSION_MAX_EXECS);
	if (r < 0) {
		free(env);
		return r;
	}
	r2.limits.timeout_s = req->limits.timeout_s;
	if (stdin_pipe) { /* the handover says: fd 0 is the pipe */
		r2.stdin_set = true;
		r2.stdin_len = 0;
	}
	struct bg_proc *p = proc_new(bg, &r2, stdin_pipe, err, errlen);
	if (r2.limits.cpu_s <= 0 && r2.limits.timeout_s <= 0)
		r2.limits.cpu_s = 1e9; /* its RLIMIT_CPU: none to speak of */
	r = p ? session_exec_start(s, &r2, cwd, stdin_pipe || r2.stdin_set, &p->x, err, errlen) : -EAGAIN;
	free(env);
	if (r == 0 && (p->id = session_exec_pid(&p->x)) <= 0)
		r = set_err(err, errlen, -ESRCH, "the process ended before it could be named");
	if (r == 0 && (r = give_stdin(p, &r2, err, errlen)) < 0)
		cg_kill(p->x.cg);
	if (r < 0) {
		if (p && p->x.cg)
			session_exec_done(s, &p->x);
		if (p) {
			pthread_mutex_lock(&bg->lock);
			proc_free(bg, p);
			pthread_mutex_unlock(&bg->lock);
		}
		session_slot(s, false);
		return r;
	}
	return spawn_started(bg, p, id, err, errlen);
}

/* ------------------------------------------------------------ queries */

/* The record pid id names: the newest with it (make_room leaves one). */
static struct bg_proc *find(struct session_bg *bg, int id)
{
	for (size_t i = bg->n; i-- > 0;)
		if (bg->p[i]->id == id)
			return bg->p[i];
	return NULL;
}

int ward_session_procs(struct ward_session *s, struct ward_session_proc **out, size_t *n)
{
	struct session_bg *bg = session_bg_of(s);
	pthread_mutex_lock(&bg->lock);
	struct ward_session_proc *v = calloc(bg->n ? bg->n : 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; v && i < bg->n; i++, k++) {
		struct bg_proc *p = bg->p[i];
		v[k] = (struct ward_session_proc){.id = p->id,
		                                  .running = p->running,
		                                  .status = p->status,
		                                  .exit_code = p->exit_code,
		                                  .started_at = p->started_at,
		                                  .ended_at = p->ended_at};
		size_t na = 0;
		while (p->argv[na])
			na++;
		v[k].argv = calloc(na + 1, sizeof(char *));
		for (size_t j = 0; v[k].argv && j < na; j++)
			v[k].argv[j] = strdup(p->argv[j]);
	}
	pthread_mutex_unlock(&bg->lock);
	*out = v;
	*n = k;
	return v ? 0 : -ENOMEM;
}

void ward_session_procs_free(struct ward_session_proc *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		for (char **a = p[i].argv; a && *a; a++)
			free(*a);
		free(p[i].argv);
	}
	free(p);
}

/* The bytes of cb from stream offset `from` on (head, then the tail's
 * window), at most WARD_SESSION_OUTPUT_CHUNK, into out; out->bytes is the
 * offset after them.  Under lock. */
static int take(const struct capbuf *cb, uint64_t from, struct ward_stream *out)
{
	uint64_t tail_start = cb->total - cb->tail_len;
	size_t from_head = from < cb->head_len ? cb->head_len - (size_t)from : 0;
	size_t n = 0, cap = from_head + cb->tail_len;
	if (cap > WARD_SESSION_OUTPUT_CHUNK)
		cap = WARD_SESSION_OUTPUT_CHUNK;
	out->data = malloc(cap + 1);
	if (!out->data)
		return -ENOMEM;
	uint64_t next = from;
	if (from_head) {
		n = from_head < cap ? from_head : cap;
		memcpy(out->data, cb->head + from, n);
		next = from + n;
	}
	if (n < cap || !from_head) {
		uint64_t start = next > tail_start ? next : tail_start;
		out->truncated = start > next && start > cb->head_len;
		for (next = start; next < cb->total && n < cap && cb->tail_cap; next++) {
			size_t idx = (cb->tail_pos + cb->tail_cap - (size_t)(cb->total - next)) % cb->tail_cap;
			out->data[n++] = cb->tail[idx];
		}
		if (next > cb->total) /* asked from beyond the end */
			next = cb->total;
	}
	out->data[n] = 0;
	out->len = n;
	out->bytes = next;
	return 0;
}

static void wait_for_more(struct session_bg *bg, struct bg_proc *p, uint64_t fo, uint64_t fe, double wait_s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long ns = ts.tv_nsec + (long long)(wait_s * 1e9);
	ts.tv_sec += (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	while (p->running && p->out.total <= fo && p->err.total <= fe)
		if (pthread_cond_timedwait(&bg->changed, &bg->lock, &ts) == ETIMEDOUT)
			break;
}

int ward_session_proc_output(struct ward_session *s, int id, uint64_t from_out, uint64_t from_err, double wait_s,
                             struct ward_stream *out, struct ward_stream *err, bool *exited, int *exit_code,
                             char *errbuf, size_t errlen)
{
	struct session_bg *bg = session_bg_of(s);
	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	pthread_mutex_lock(&bg->lock);
	struct bg_proc *p = find(bg, id);
	int r = p ? 0 : set_err(errbuf, errlen, -ENOENT, "no background process %d in this session", id);
	if (p && wait_s > 0)
		wait_for_more(bg, p, from_out, from_err, wait_s);
	if (p && (take(&p->out, from_out, out) < 0 || take(&p->err, from_err, err) < 0))
		r = set_err(errbuf, errlen, -ENOMEM, "out of memory");
	if (p && r == 0 && p->waits_reader && (out->bytes > p->taken[0] || err->bytes > p->taken[1])) {
		/* its reader went on: a pipe that waited for it is read again */
		p->taken[0] = out->bytes > p->taken[0] ? out->bytes : p->taken[0];
		p->taken[1] = err->bytes > p->taken[1] ? err->bytes : p->taken[1];
		uint64_t one = 1;
		(void)!write(p->in.wake, &one, sizeof(one));
	}
	/* (a read never frees the buffers, not even one to the end: the next
	 * reader, from offset 0 or a later GET, gets the same bytes) */
	if (p && exited)
		*exited = !p->running;
	if (p && exit_code)
		*exit_code = p->running ? 0 : p->exit_code;
	pthread_mutex_unlock(&bg->lock);
	if (r < 0) {
		free(out->data);
		free(err->data);
		out->data = err->data = NULL;
	}
	return r;
}

/* Queue data (the pipe had no room for it) for the thread to write.
 * Under lock; its budget is taken. */
static int stdin_queue(struct bg_proc *p, const char *data, size_t len)
{
	size_t left = p->in.len - p->in.off;
	char *b = malloc(left + len);
	if (!b)
		return -ENOMEM;
	if (left)
		memcpy(b, p->in.buf + p->in.off, left);
	memcpy(b + left, data, len);
	free(p->in.buf);
	p->in.buf = b;
	p->in.off = 0;
	p->in.len = left + len;
	uint64_t one = 1;
	(void)!write(p->in.wake, &one, sizeof(one));
	return 0;
}

/* Take data for a running process's stdin: all of it or nothing.  What
 * the pipe takes now is written, the rest queued for its thread (behind
 * what is queued already); the queue holds WARD_SESSION_STDIN_QUEUE at
 * most, from the records' budgets.  Under lock. */
static int stdin_take(struct session_bg *bg, struct bg_proc *p, const char *data, size_t len, char *err, size_t errlen)
{
	size_t queued = p->in.len - p->in.off;
	if (len > WARD_SESSION_STDIN_QUEUE)
		return set_err(err, errlen, -EMSGSIZE, "a stdin write is at most %u bytes: send it in parts",
		               WARD_SESSION_STDIN_QUEUE);
	if (queued + len > WARD_SESSION_STDIN_QUEUE)
		return set_err(err, errlen, -EAGAIN,
		               "process %d has not read the %zu bytes of its stdin written before (at most %u bytes "
		               "wait): retry once it reads, or send less at a time",
		               p->id, queued, WARD_SESSION_STDIN_QUEUE);
	/* (exited records' output goes for it, the oldest first, as for a
	 * new process: a read to its end never frees it, 30.10) */
	if (!reserve_output(bg, len))
		return set_err(
			err, errlen, -EAGAIN,
			"no room to keep process %d's stdin until it reads: the session's budget for kept output "
			"and stdin (--session-bg-output%s) is spent; retry later",
			p->id, bg->shared ? ", or the runner's --max-bg-output-total" : "");
	ssize_t n = queued ? 0 : write_now(p->in_w, data, len);
	if (n < 0) {
		budget_release(bg, len);
		return set_err(err, errlen, -EPIPE, "process %d's stdin is closed (nothing reads it)", p->id);
	}
	budget_release(bg, (size_t)n);
	if ((size_t)n < len && stdin_queue(p, data + n, len - (size_t)n) < 0) {
		budget_release(bg, len - (size_t)n);
		return set_err(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

/* After the main process ended (a daemon may read its stdin): written at
 * once, as far as the pipe takes it, never queued. */
static int stdin_direct(struct bg_proc *p, const char *data, size_t len, char *err, size_t errlen)
{
	ssize_t n = write_now(p->in_w, data, len);
	if (n < 0)
		return set_err(err, errlen, -EPIPE, "process %d's stdin is closed (nothing reads it)", p->id);
	if ((size_t)n < len)
		return set_err(err, errlen, -EAGAIN,
		               "process %d has ended and what reads its stdin now does not read: %zd of %zu bytes "
		               "written",
		               p->id, n, len);
	return 0;
}

int ward_session_proc_stdin(struct ward_session *s, int id, const void *data, size_t len, bool close_after, char *err,
                            size_t errlen)
{
	struct session_bg *bg = session_bg_of(s);
	pthread_mutex_lock(&bg->lock);
	struct bg_proc *p = find(bg, id);
	int r = 0;
	if (!p)
		r = set_err(err, errlen, -ENOENT, "no background process %d in this session", id);
	else if (!p->stdin_pipe)
		r = set_err(err, errlen, -EINVAL, "process %d was not started with a stdin pipe", id);
	else if (p->in_w < 0 || (p->in.close_after && p->in.len))
		r = len ? set_err(err, errlen, -EPIPE, "process %d's stdin is closed", id) : 0;
	else if (len)
		r = p->in.open ? stdin_take(bg, p, data, len, err, errlen) : stdin_direct(p, data, len, err, errlen);
	if (r == 0 && p && close_after && p->in_w >= 0) {
		p->in.close_after = true; /* after what is queued */
		if (!p->in.len) {
			close(p->in_w);
			p->in_w = -1;
		}
	}
	pthread_mutex_unlock(&bg->lock);
	return r;
}

int ward_session_proc_signal(struct ward_session *s, int id, int sig, char *err, size_t errlen)
{
	if (sig != SIGINT && sig != SIGTERM && sig != SIGKILL)
		return set_err(err, errlen, -EINVAL, "signal %d: only INT, TERM or KILL", sig);
	struct session_bg *bg = session_bg_of(s);
	pthread_mutex_lock(&bg->lock);
	struct bg_proc *p = find(bg, id);
	int r = !p ? -ENOENT : !p->running ? -ESRCH : cg_signal(p->x.cg, sig);
	pthread_mutex_unlock(&bg->lock);
	if (r == -ENOENT)
		return set_err(err, errlen, r, "no background process %d in this session", id);
	if (r < 0)
		return set_err(err, errlen, r, "cannot signal process %d: %s", id, strerror(-r));
	return 0;
}
