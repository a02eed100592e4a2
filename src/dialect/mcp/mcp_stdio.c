/* mcp_stdio.c — `ward mcp`: MCP over stdio (SPEC §21), for a desktop
 * assistant's or an IDE's config.  One JSON-RPC message a line on stdin,
 * one a line on stdout (nothing else is ever written there: the log goes
 * to stderr); the connection is the process, its session ends with it.
 *
 * A headless server (server_headless_start: ward serve's options, so the
 * same defaults, maxima, language table and --allow-root) with worker
 * threads of its own, --max-concurrent of them, which outlive every
 * sandbox they make (a sandbox's PID 1 dies with its thread).  The main
 * thread reads, answers what needs no sandbox, queues tools/call (at most
 * --queue waiting: more is a JSON-RPC error), cancels, sends progress
 * once a second, and sweeps the session's expiry.  At EOF the calls
 * already sent are finished and answered (a script may pipe its requests
 * in and read the answers), then the session ends and ward mcp exits 0.
 * SIGTERM or SIGINT, or a stdout nobody reads any more, cancel every call
 * instead (their trees are killed) before the same end.
 *
 * Owns stdin, stdout and its workers.  A line longer than --max-body is
 * dropped whole, answered with an error: no message makes it hold more. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dialect/mcp/mcp.h"
#include "dialect/mcp/mcp_main.h"

/* SIGTERM or SIGINT came: a global, because a handler gets no context. */
static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
	g_signal = sig;
}

struct job {
	struct mcp_call *call;
	struct job *next;
};

struct stdio_mcp {
	struct server *s;
	struct mcp_conn conn;
	pthread_mutex_t out_lock; /* one message at a time on stdout */
	pthread_mutex_t lock;     /* the queue */
	pthread_cond_t work;
	struct job *head, *tail;
	unsigned queued;
	bool stop;
	unsigned alive;    /* workers not ended yet */
	volatile int gone; /* stdout failed: nobody reads the answers */
	pthread_t *workers;
	unsigned nworkers;
};

/* One message, one line on stdout (taking json). */
static void send_line(struct stdio_mcp *m, char *json)
{
	if (!json)
		return;
	pthread_mutex_lock(&m->out_lock);
	size_t n = strlen(json);
	json[n] = '\n'; /* json_dumps left room: its NUL */
	for (size_t off = 0; off < n + 1;) {
		ssize_t w = write(STDOUT_FILENO, json + off, n + 1 - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			m->gone = 1; /* the client is gone: its calls are cancelled */
			break;
		}
		off += (size_t)w;
	}
	pthread_mutex_unlock(&m->out_lock);
	free(json);
}

static void emit(struct mcp_call *call, char *json, void *arg)
{
	(void)call;
	send_line(arg, json);
}

static void *worker_main(void *arg)
{
	struct stdio_mcp *m = arg;
	for (;;) {
		pthread_mutex_lock(&m->lock);
		while (!m->head && !m->stop)
			pthread_cond_wait(&m->work, &m->lock);
		struct job *j = m->head;
		if (j) {
			m->head = j->next;
			if (!m->head)
				m->tail = NULL;
			m->queued--;
		}
		if (!j) {
			m->alive--;
			pthread_mutex_unlock(&m->lock);
			return NULL;
		}
		pthread_mutex_unlock(&m->lock);
		mcp_call_begin(&m->conn, j->call, m, emit, m);
		char *resp = mcp_call_run(&m->conn, j->call);
		mcp_call_done(&m->conn, j->call);
		send_line(m, resp);
		free(j);
	}
}

/* A call to the queue; false when --queue calls wait already. */
static bool enqueue(struct stdio_mcp *m, struct mcp_call *call)
{
	struct job *j = calloc(1, sizeof(*j));
	pthread_mutex_lock(&m->lock);
	bool ok = j && m->queued < m->s->o.queue + m->nworkers;
	if (ok) {
		j->call = call;
		if (m->tail)
			m->tail->next = j;
		else
			m->head = j;
		m->tail = j;
		m->queued++;
		pthread_cond_signal(&m->work);
	}
	pthread_mutex_unlock(&m->lock);
	if (!ok)
		free(j);
	return ok;
}

/* One line: a message, answered or queued. */
static void on_line(struct stdio_mcp *m, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (!len)
		return;
	json_t *msg;
	char *reply;
	enum mcp_kind k = mcp_read(line, len, WARD_JSON_MAX_VALUES, &msg, &reply);
	if (k == MCP_BAD) {
		send_line(m, reply);
		return;
	}
	if (k == MCP_RESPONSE) { /* ward sends no requests: nothing waits for it */
		json_decref(msg);
		return;
	}
	struct mcp_call *call = NULL;
	char *resp = mcp_answer(&m->conn, msg, &call);
	if (call && !enqueue(m, call)) {
		resp = mcp_error(
			call->id, MCP_INTERNAL_ERROR,
			"the runner is busy: --max-concurrent (%u) calls run and --queue (%u) wait; retry later",
			m->s->o.max_concurrent, m->s->o.queue);
		mcp_call_done(&m->conn, call);
	}
	json_decref(msg);
	send_line(m, resp);
}

static int workers_begin(struct stdio_mcp *m)
{
	unsigned n = m->s->o.max_concurrent ? m->s->o.max_concurrent : 1;
	m->workers = calloc(n, sizeof(pthread_t));
	if (!m->workers)
		return -1;
	for (; m->nworkers < n; m->nworkers++) {
		pthread_mutex_lock(&m->lock);
		m->alive++;
		pthread_mutex_unlock(&m->lock);
		if (pthread_create(&m->workers[m->nworkers], NULL, worker_main, m)) {
			pthread_mutex_lock(&m->lock);
			m->alive--;
			pthread_mutex_unlock(&m->lock);
			fprintf(stderr, "ward mcp: cannot start worker threads\n");
			return -1;
		}
	}
	return 0;
}

/* Every call cancelled: the queued ones never run, the running ones are
 * killed and answer nothing. */
static void cancel_all(struct stdio_mcp *m)
{
	pthread_mutex_lock(&m->lock);
	while (m->head) {
		struct job *j = m->head;
		m->head = j->next;
		m->queued--;
		mcp_call_done(&m->conn, j->call);
		free(j);
	}
	m->tail = NULL;
	pthread_mutex_unlock(&m->lock);
	mcp_conn_end(&m->conn);
}

/* The calls already sent are finished (cancelled instead after a signal,
 * or when stdout is gone), the workers joined; progress goes on meanwhile. */
static void workers_end(struct stdio_mcp *m)
{
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_broadcast(&m->work);
	pthread_mutex_unlock(&m->lock);
	bool cancelled = false;
	for (;;) {
		pthread_mutex_lock(&m->lock);
		bool done = m->alive == 0;
		pthread_mutex_unlock(&m->lock);
		if (done)
			break;
		if (!cancelled && (g_signal || m->gone)) {
			cancel_all(m);
			cancelled = true;
		}
		mcp_progress(&m->conn, emit, m);
		poll(NULL, 0, 100);
	}
	for (unsigned i = 0; i < m->nworkers; i++)
		pthread_join(m->workers[i], NULL);
	free(m->workers);
	mcp_conn_end(&m->conn);
}

/* Read stdin until EOF: lines within --max-body, a longer one dropped. */
static void read_loop(struct stdio_mcp *m)
{
	size_t max = m->s->o.max_body, cap = 65536, len = 0;
	char *buf = malloc(cap);
	bool skipping = false;
	double next_tick = now_mono() + 1;
	while (buf && !g_signal && !m->gone) {
		int wait = (int)((next_tick - now_mono()) * 1000);
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int pr = poll(&p, 1, wait < 0 ? 0 : wait);
		if (now_mono() >= next_tick) {
			mcp_progress(&m->conn, emit, m);
			sessions_sweep(m->s);
			next_tick = now_mono() + 1;
		}
		if (pr <= 0)
			continue;
		if (len == cap) {
			size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = nc > cap ? realloc(buf, nc) : NULL;
			if (!nb) { /* over --max-body: the rest of this line is dropped */
				skipping = true;
				len = 0;
			} else {
				buf = nb;
				cap = nc;
			}
		}
		ssize_t r = read(STDIN_FILENO, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t start = 0, end = len + (size_t)r;
		for (size_t i = len; i < end; i++) {
			if (buf[i] != '\n')
				continue;
			if (skipping)
				send_line(m,
				          mcp_error(NULL, MCP_INVALID_REQUEST,
				                    "the message is over --max-body (%zu bytes): it was dropped", max));
			else
				on_line(m, buf + start, i - start);
			skipping = false;
			start = i + 1;
		}
		memmove(buf, buf + start, end - start);
		len = end - start;
	}
	free(buf);
}

int ward_mcp_main(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			printf("usage: ward mcp [OPTIONS]   an MCP server on stdin/stdout (SPEC §21), for an "
			       "assistant's "
			       "config:\n  {\"mcpServers\": {\"ward\": {\"command\": \"ward\", \"args\": [\"mcp\"]}}}\n"
			       "Its options are ward serve's (limits, maxima, --languages, --max-concurrent, --queue, "
			       "--max-body; the listeners' do nothing here):\n\n");
	struct server srv, *s = &srv;
	int p = server_headless_start(s, argc, argv);
	if (p != 0) {
		if (p < 0)
			server_headless_end(s);
		return p > 0 ? 0 : WARD_EXIT_FAILED;
	}
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: poll returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	struct stdio_mcp m;
	memset(&m, 0, sizeof(m));
	m.s = s;
	mcp_conn_init(&m.conn, s, "stdio");
	pthread_mutex_init(&m.out_lock, NULL);
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.work, NULL);
	int rc = 0;
	if (workers_begin(&m) < 0)
		rc = WARD_EXIT_FAILED;
	else
		read_loop(&m);
	workers_end(&m);
	/* the session's PID 1 lives on a worker's thread, now gone: it is
	 * killed already; this removes what it held */
	server_headless_end(s);
	pthread_mutex_destroy(&m.out_lock);
	pthread_mutex_destroy(&m.lock);
	pthread_cond_destroy(&m.work);
	return rc;
}
