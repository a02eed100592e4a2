/* serve.c — `ward serve`, the HTTP runner of SPEC §5, on libmicrohttpd:
 * ward_serve_main, the main thread from start-up to exit.
 *
 * The main thread parses options, starts everything, then waits for
 * signals (through a self-pipe, so no signal is blocked and nothing odd is
 * inherited by sandboxes), sweeps deadlines and re-probes the backend for
 * /health.  SIGTERM/SIGINT: stop accepting, let queued and running
 * requests finish (bounded by --drain-timeout), exit 0.  SIGHUP: reopen
 * --log.
 *
 * Owns the main thread, the start-up order, the signal self-pipe and the
 * server's teardown.  The only place that installs signal handlers or
 * exits; never serves a request itself (it probes, sweeps and drains). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "server/serve.h"
#include "server/server.h"

/* The signal handler's self-pipe: a global, because a handler gets no
 * context to find the server by. */
static int sigpipe_fds[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t w = write(sigpipe_fds[1], &b, 1);
	(void)w;
	errno = saved;
}

/* SIGTERM, SIGINT and SIGHUP go through the self-pipe, so that no signal is
 * blocked and nothing odd is inherited by sandboxes. */
static int signals_catch(void)
{
	if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "ward serve: pipe: %s\n", strerror(errno));
		return -1;
	}
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return 0;
}

static void signals_restore(void)
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	for (int i = 0; i < 2; i++)
		if (sigpipe_fds[i] >= 0) {
			close(sigpipe_fds[i]);
			sigpipe_fds[i] = -1;
		}
}

/* Up to a second for a signal: the one that came (SIGTERM or SIGINT wins
 * over SIGHUP), or 0. */
static int signal_wait(void)
{
	struct pollfd pfd = {.fd = sigpipe_fds[0], .events = POLLIN};
	poll(&pfd, 1, 1000);
	unsigned char sig = 0, b;
	while (read(sigpipe_fds[0], &b, 1) == 1)
		if (b != SIGHUP || !sig)
			sig = b;
	return sig;
}

static void server_init(struct server *s)
{
	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->log_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->conn_lock, NULL);
	pthread_mutex_init(&s->log_lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_mutex_init(&s->sess_lock, NULL);
	pthread_cond_init(&s->sess_cond, NULL);
	pthread_mutex_init(&s->park_lock, NULL);
}

static void server_free(struct server *s)
{
	images_close(s);
	listeners_free(s);
	languages_free(s);
	tokens_free(s);
	roots_free(s);
	clients_free(s);
	conns_free(s);
	free(s->workers);
	ward_pool_free(s->pool);
	if (s->log_fd >= 0)
		close(s->log_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_mutex_destroy(&s->log_lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->sess_lock);
	pthread_cond_destroy(&s->sess_cond);
	pthread_mutex_destroy(&s->park_lock);
}

/* The helpers that clone sandboxes are forked now, while the server is
 * one thread and small, and before it holds its tokens.  `ward` passes its
 * own (lean, static) binary for them to exec. */
static void start_spawners(const struct serve_opts *o)
{
	int exe_fd = -1;
	const char *exe = getenv(WARD_SPAWNER_EXE_ENV);
	if (exe) {
		char *end;
		long fd = strtol(exe, &end, 10);
		if (!*end && end != exe && fd > 2 && fd < 65536 && fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0)
			exe_fd = (int)fd;
		unsetenv(WARD_SPAWNER_EXE_ENV);
	}
	if (o->spawners != 0) {
		char serr[256];
		if (ward_spawner_start(o->spawners < 0 ? 0 : (unsigned)o->spawners, exe_fd, serr, sizeof(serr)) < 0)
			fprintf(stderr, "ward serve: %s; the server clones sandboxes itself\n", serr);
	}
	if (exe_fd >= 0)
		close(exe_fd);
}

/* What the options name: tokens, roots, the log, the listening socket;
 * then the signals.  -1 with a message. */
static int server_open(struct server *s, char *bound, size_t boundlen)
{
	if (s->o.token_file && load_tokens(s, s->o.token_file) < 0)
		return -1;
	if (open_roots(s) < 0)
		return -1;
	if (log_start(s) < 0)
		return -1;
	if (s->o.favor_dynmods) {
		char err[400];
		if (ward_cgroup_favor_dynmods(err, sizeof(err)) < 0) {
			fprintf(stderr, "ward serve: %s\n", err);
			return -1;
		}
		log_event(s, "favor-dynmods", "the kernel's favordynmods is on: cgroup migrations are cheap");
	}
	s->listen_fd = make_listener(s->o.listen, bound, boundlen);
	if (s->listen_fd < 0)
		return -1;
	return signals_catch();
}

/* A probe first, so that /health is right from the first request; then
 * the sandboxes built ahead: without them (the host cannot make them now)
 * each request builds its own and reports why when that fails.  Returns
 * when to probe next. */
static double start_backend(struct server *s)
{
	s->healthy = false;
	snprintf(s->health_reason, sizeof(s->health_reason), "not probed yet");
	/* Every sandbox holds pipes, every kept namespace and cgroup fds:
	 * the server may open what the hard limit allows (each command gets
	 * its own limit, limits.nofile). */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* A network namespace per concurrent run, per pooled sandbox and per
	 * sandbox waiting for its teardown may come back untouched and serve
	 * the next (system/netns.c); an idle one is ~160 KiB of the kernel's. */
	ward_netns_keep(s->o.max_concurrent + s->o.pool + 16);
	/* Their cgroups likewise, emptied and reset (sandbox/cgroup.c; at
	 * most a quarter of the open-files limit in the fds they hold). */
	ward_cgroup_keep(s->o.max_concurrent + s->o.pool + 4);
	/* Used sandboxes are torn down after their answers (system/reaper.c);
	 * where the thread cannot start, each request tears down its own. */
	if (ward_reaper_start() < 0)
		log_event(s, "reaper-unavailable", "cannot start the teardown thread: each run tears down its own");
	probe(s);
	double next_probe = probe_next(s);
	if (s->o.pool) {
		char perr[512];
		s->pool = ward_pool_new(s->o.pool, WARD_NET_NONE, perr, sizeof(perr));
		if (!s->pool)
			log_event(s, "pool-unavailable", "%s", perr);
		images_pools(s);
	}
	return next_probe;
}

/* Once a second: deadlines, cuts, dead spawner helpers, the probe. */
static void housekeeping(struct server *s, uint64_t cuts_logged[2], double *next_probe)
{
	sweep(s);
	sessions_sweep(s);
	listeners_tick(s);
	log_cuts(s, cuts_logged);
	unsigned healed = ward_spawner_heal();
	if (healed)
		log_event(s, "spawner-restarted", "%u helper%s found dead, replaced", healed, healed > 1 ? "s" : "");
	if (now_mono() >= *next_probe) {
		probe(s);
		*next_probe = probe_next(s);
	}
}

/* The main thread while the server serves: until SIGTERM or SIGINT. */
static void serve_loop(struct server *s, double next_probe)
{
	uint64_t cuts_logged[2] = {0, 0};
	for (;;) {
		int sig = signal_wait();
		if (sig == SIGHUP)
			log_reopen(s);
		else if (sig == SIGTERM || sig == SIGINT)
			break;
		housekeeping(s, cuts_logged, &next_probe);
	}
}

/* Wait until no request is queued, running or waiting to be sent, or until
 * the deadline.  true when everything finished. */
static bool drain(struct server *s, double deadline)
{
	bool done = false;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->queued == 0 && s->running == 0 && s->answering == 0) {
			done = true;
			break;
		}
		double left = deadline - now_mono();
		if (left <= 0)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double step = fmin(left, 0.2);
		ts.tv_sec += (time_t)step;
		ts.tv_nsec += (long)((step - floor(step)) * 1e9);
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->idle, &s->lock, &ts);
		/* the deadline sweep must go on meanwhile: a client that never
		 * reads its answer must not hold the drain to its end */
		pthread_mutex_unlock(&s->lock);
		sweep(s);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return done;
}

/* SIGTERM: no new connections; queued and running requests finish and
 * their answers go out, up to --drain-timeout, then those still running
 * are cancelled.  Returns when all is done; else the process exits here. */
static void drain_or_exit(struct server *s)
{
	pthread_mutex_lock(&s->lock);
	s->draining = true;
	unsigned busy = s->queued + s->running;
	pthread_mutex_unlock(&s->lock);
	log_event(s, "draining", "%u requests queued or running; waiting up to %g s", busy, s->o.drain_timeout);
	int lfd = MHD_quiesce_daemon(s->d);
	if (lfd >= 0)
		close(lfd);
	s->listen_fd = -1;
	listeners_quiesce(s);
	bool drained = drain(s, now_mono() + s->o.drain_timeout);
	if (!drained) {
		/* out of time: cancel what still runs (each sandbox is killed and
		 * cleaned up, its client gets a "cancelled" error) and give the
		 * answers a moment to go out */
		s->cancel = 1;
		sessions_cancel(s);
		log_event(s, "cancelling", "drain timed out: cancelling the runs still going");
		drained = drain(s, now_mono() + 5);
	}
	if (drained)
		return;
	/* runs are still going: leave without stopping MHD (it cannot stop
	 * with suspended connections); exiting ends every sandbox, whose
	 * PID 1 dies with its worker thread */
	pthread_mutex_lock(&s->lock);
	busy = s->queued + s->running;
	pthread_mutex_unlock(&s->lock);
	log_event(s, "stopped", "drain timed out with %u requests unfinished", busy);
	/* _exit: worker and MHD threads are still running, and exit()'s
	 * atexit handlers would run under them */
	_exit(0);
}

int server_headless_start(struct server *s, int argc, char **argv)
{
	server_init(s);
	int p = parse_opts(&s->o, argc, argv);
	if (p != 0)
		return p;
	s->bg_output.max = s->o.max_bg_output_total;
	if (open_roots(s) < 0 || log_start(s) < 0 || images_open(s) < 0 || languages_start(s) < 0)
		return -1;
	/* as start_backend: cgroups and network namespaces kept for the next run */
	ward_netns_keep(s->o.max_concurrent + 4);
	ward_cgroup_keep(s->o.max_concurrent + 4);
	s->healthy = true;
	return 0;
}

void server_headless_end(struct server *s)
{
	sessions_stop(s);
	server_free(s);
	ward_cgroup_keep(0);
}

int ward_serve_main(int argc, char **argv, const struct dialect *const *dialects)
{
	struct server srv, *s = &srv;
	server_init(s);
	s->dialects = dialects;
	int rc = WARD_EXIT_FAILED;
	char bound[160];

	int p = parse_opts(&s->o, argc, argv);
	if (p != 0) {
		rc = p > 0 ? 0 : WARD_EXIT_FAILED;
		goto out;
	}
	s->bg_output.max = s->o.max_bg_output_total;
	start_spawners(&s->o);
	if (server_open(s, bound, sizeof(bound)) < 0 || images_open(s) < 0)
		goto out;
	/* the language table's probes first: their sandboxes' network
	 * namespaces are not kept for reuse (start_backend turns that on) */
	if (languages_start(s) < 0)
		goto out;
	double next_probe = start_backend(s);
	if (dialects_add(s) < 0 || listeners_open(s) < 0)
		goto stop;
	if (workers_start(s) < 0 || ticker_start(s) < 0 || http_start(s, bound) < 0 || listeners_start(s) < 0)
		goto stop;
	log_event(s, "listening", "%s max_concurrent=%u queue=%u isolation=%s pool=%u healthy=%s", bound,
	          s->o.max_concurrent, s->o.queue, ward_isolation_name(s->o.isolation), s->pool ? s->o.pool : 0,
	          s->healthy ? "yes" : "no");
	serve_loop(s, next_probe);
	drain_or_exit(s);
	rc = 0;
stop:
	/* before the workers end: a session's PID 1 dies with the worker that
	 * made it, and destroying it first also removes what it holds */
	sessions_stop(s);
	workers_stop(s);
	ticker_stop(s); /* resumes every parked stream: MHD stops with none suspended */
	listeners_stop(s);
	if (s->d) {
		MHD_stop_daemon(s->d);
		s->listen_fd = -1; /* quiesced and closed above */
		log_event(s, "stopped", "drained");
	}
out:
	signals_restore();
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	ward_reaper_stop(); /* what waits for teardown, torn down */
	server_free(s);
	ward_cgroup_keep(0); /* the kept cgroups, removed */
	ward_spawner_stop();
	return rc;
}
