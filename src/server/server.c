/* server.c — `ward serve`, the HTTP runner of SPEC §5, on libmicrohttpd.
 *
 * Process model.  MHD's I/O threads (a small pool, epoll) do nothing but
 * HTTP: read headers and the whole body, answer errors, and hand a complete,
 * decoded and validated request to a queue.  A fixed pool of worker threads
 * (--max-concurrent) takes requests from the queue and calls ward_run(); the
 * connection is suspended meanwhile and resumed with the answer, which the
 * I/O threads send.  So:
 *   - a sandbox's PID 1 dies with the thread that created it
 *     (PR_SET_PDEATHSIG): workers live as long as the server, never a
 *     per-connection thread that a disconnect could end;
 *   - a slow or stalled client never holds a worker or a slot: the body is
 *     read completely before admission, and the answer is sent by the I/O
 *     threads after the worker has moved on;
 *   - admission is one decision under one lock: slots + queue, then the
 *     client's quota; beyond that 429 with Retry-After.
 * Deadlines: MHD's idle timeout alone lets a client trickle one byte every
 * few seconds forever, so every connection also has an absolute deadline
 * (headers, body, sending the answer) that the main thread enforces once a
 * second by shutting the socket down; MHD then closes it normally.
 * Connections that have not proven themselves yet (conn_trust) are
 * "pending": at most --max-conns-per-addr per address, and when there are
 * more, or the server is full, the oldest pending ones are cut, so that one
 * address never holds every connection.
 *
 * The main thread parses options, starts everything, then waits for
 * signals (through a self-pipe, so no signal is blocked and nothing odd is
 * inherited by sandboxes), sweeps deadlines and re-probes the backend for
 * /health.  SIGTERM/SIGINT: stop accepting, let queued and running
 * requests finish (bounded by --drain-timeout), exit 0.  SIGHUP: reopen
 * --log.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/openat2.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "front/frontends.h"
#include "core/request.h"
#include "core/supervise.h"
#include "testjob/testjob.h"
#include "ward.h"
#include "wire/wire.h"

#define MAX_ROOTS 32
#define MAX_TOKENS 256
#define MAX_CLIENTS 4096 /* client records kept for quotas; idle ones are evicted */
#define CLIENT_BUCKETS 256
#define MAX_SUBCLIENTS 64 /* X-Ward-Client names kept per client for --subclient-* */
#define PEER_BUCKETS 1024
#define CONN_GRACE 1.0 /* seconds a connection has to send its request before it may be cut for room */
#define PROBE_OK_INTERVAL 30.0
#define PROBE_BAD_INTERVAL 5.0

static const double latency_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define NBUCKETS (sizeof(latency_buckets) / sizeof(latency_buckets[0]))

struct serve_opts {
	char listen[128];
	const char *token_file;
	unsigned max_concurrent;
	unsigned queue;
	const char *roots[MAX_ROOTS];
	size_t nroots;
	size_t max_body;
	size_t max_body_total;
	size_t max_answer_total;
	struct ward_limits max;      /* the most a request may ask for (SPEC §10) */
	const char *log_path;
	enum ward_isolation isolation;
	unsigned client_concurrency; /* 0 = unlimited */
	unsigned client_rate;        /* runs per minute, 0 = unlimited */
	unsigned subclient_concurrency, subclient_rate; /* the same per X-Ward-Client name within a client */
	unsigned max_connections;
	unsigned max_conns_per_addr; /* pending connections per address, 0 = unlimited */
	unsigned pool;               /* sandboxes built ahead, 0 = none */
	int spawners;                /* helper processes that clone sandboxes; -1 = auto, 0 = none */
	double header_timeout, request_timeout, drain_timeout;
};

struct token {
	char *name;
	char *secret;
	size_t len;
};

struct root {
	char *path; /* realpath of --allow-root */
	size_t len;
	int fd;     /* O_PATH, the anchor of RESOLVE_BENEATH */
};

/* A host path of a request, opened when it was checked against the
 * --allow-root: the run binds exactly that directory, whatever is renamed
 * or swapped for a symlink in between (see ward.h, "/proc/self/fd/N"). */
struct held {
	int fd;
	char path[40];
};

/* One client's quota state: a client (a token's name, or an address), or
 * a sub-client (an X-Ward-Client name within one, in its subs list). */
struct client {
	char key[160];
	unsigned active;   /* queued + running */
	double tokens;     /* token bucket for --client-rate (--subclient-rate) */
	double last;       /* when tokens was last refilled */
	struct client *next;   /* the hash chain, or the parent's subs list */
	struct client *subs;   /* its sub-clients (at most MAX_SUBCLIENTS) */
	unsigned nsubs;
};

/* A peer address (IPv4, or an IPv6 /64) that holds pending connections. */
struct peer {
	char addr[INET6_ADDRSTRLEN + 4];
	unsigned pending;
	struct conn_rec *oldest, *newest;
	struct peer *next;
};

/* One TCP connection, for the deadline sweep and the per-address limit.
 * Pending: it has not proven itself (see conn_trust), so it counts against
 * its address and may be cut for room; pr is then its address's record. */
struct conn_rec {
	int fd;
	struct sockaddr_storage peer;
	socklen_t peerlen;
	double deadline; /* 0: none (a run is in progress) */
	bool shut;
	bool trusted;
	const char *cut;   /* why the server cut it, for the log */
	char addr[INET6_ADDRSTRLEN + 4];
	double since;      /* pending since: accepted, or its last request ended */
	struct peer *pr;   /* while pending */
	struct conn_rec *prev, *next;   /* all connections */
	struct conn_rec *aprev, *anext; /* pending ones of its address, oldest first */
	struct conn_rec *gprev, *gnext; /* all pending ones, oldest first */
};

enum route { R_NONE, R_HEALTH, R_EXEC, R_TEST, R_METRICS };
enum rstate { S_NEW, S_BODY, S_WAIT, S_READY, S_ANSWERED };

/* One HTTP request. */
struct req {
	struct server *srv;
	struct MHD_Connection *conn;
	enum route route;
	enum rstate state;
	double t_start, t_admit;
	char client[176];           /* who, or who/sub: the log's name */
	char who[96];               /* the quota's client: token name or address */
	char sub[72];               /* X-Ward-Client, sanitized, or "" */
	char method[16];
	char path[128];
	char *body;
	size_t len, cap;
	struct client *cl, *subcl;  /* hold an active count while queued/running */
	struct ward_request_doc doc;
	bool have_doc;
	size_t doc_bytes;           /* what doc holds, counted in body_bytes */
	size_t answer_bytes;        /* resp, counted in answer_bytes until the request ends */
	struct held *held;       /* host paths checked against --allow-root, held open */
	size_t nheld;
	/* the answer, filled by the handler or a worker */
	unsigned code;
	char *resp;
	const char *ctype;
	unsigned retry_after;
	const char *sandbox_status;
	char message[600];          /* logged error detail */
	struct req *qnext;
};

struct metrics {
	uint64_t runs[WARD_ST_ERROR + 1][2]; /* [status][isolation] */
	uint64_t buckets[NBUCKETS + 1];
	double sum;
	uint64_t count;
	uint64_t rejected_busy, rejected_client_conc, rejected_client_rate, rejected_unhealthy;
	uint64_t http[600];
};

struct server {
	struct serve_opts o;
	struct token tokens[MAX_TOKENS];
	size_t ntokens;
	struct root roots[MAX_ROOTS];
	size_t nroots;
	struct MHD_Daemon *d;
	int listen_fd;

	pthread_mutex_t lock; /* queue, counts, clients, metrics, health */
	pthread_cond_t work, idle;
	struct req *qhead, *qtail;
	unsigned queued, running, answering; /* answering: admitted, answer not yet sent */
	bool stopping, draining;
	volatile int cancel; /* set when the drain times out: ward_run kills its sandbox */
	pthread_t *workers;
	unsigned nworkers;
	struct client *clients[CLIENT_BUCKETS];
	unsigned nclients;
	struct metrics m;
	bool healthy;
	struct ward_pool *pool;     /* --pool, or NULL */
	char health_reason[600];

	pthread_mutex_t conn_lock; /* the connection records, peers and their counts */
	struct conn_rec *conns;
	struct conn_rec *pend_oldest, *pend_newest;
	struct peer *peers[PEER_BUCKETS];
	unsigned nlive, npending;        /* connections not cut; pending ones among them */
	uint64_t cut_addr, cut_full;     /* pending connections cut for room */

	pthread_mutex_t log_lock;
	int log_fd;

	size_t body_bytes;   /* request bodies and decoded requests held now (atomic); --max-body-total */
	size_t answer_bytes; /* encoded answers held until sent (atomic); --max-answer-total */
};

static int sigpipe_fds[2] = {-1, -1};

/* ------------------------------------------------------------ utilities */

static double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rfc3339(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

static void log_write(struct server *s, const struct ward_log_entry *e)
{
	char *line = ward_log_to_json(e);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n'; /* replaces the NUL: write() takes the length */
	pthread_mutex_lock(&s->log_lock);
	/* one write per line, so that lines from several threads never mix */
	ssize_t w = write(s->log_fd, line, n + 1);
	(void)w;
	pthread_mutex_unlock(&s->log_lock);
	free(line);
}

static void log_event(struct server *s, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void log_event(struct server *s, const char *event, const char *fmt, ...)
{
	char t[40], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rfc3339(t, sizeof(t));
	struct ward_log_entry e = {.time = t, .event = event, .message = msg};
	log_write(s, &e);
}

/* MHD's own messages (a client closed mid-request, a socket error) go into
 * the log as events, so that the log stays one JSON object a line. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = 0;
	log_event(cls, "http", "%s", msg);
}

static int open_log(const char *path)
{
	if (!path)
		return fcntl(2, F_DUPFD_CLOEXEC, 3);
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

/* Constant-time comparison: the time depends only on the length of the
 * configured secret, never on how much of it the guess got right. */
static bool secret_equal(const char *guess, size_t glen, const struct token *t)
{
	unsigned char diff = (unsigned char)(glen != t->len);
	for (size_t i = 0; i < t->len; i++) {
		unsigned char g = i < glen ? (unsigned char)guess[i] : 0;
		diff |= g ^ (unsigned char)t->secret[i];
	}
	return diff == 0;
}

/* The token the request carries, or NULL. Checks every token, always. */
static const struct token *authorize(struct server *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	const char *g = h + 7;
	while (*g == ' ')
		g++;
	size_t glen = strlen(g);
	const struct token *found = NULL;
	for (size_t i = 0; i < s->ntokens; i++)
		if (secret_equal(g, glen, &s->tokens[i]))
			found = &s->tokens[i];
	return found;
}

/* A client name from a header: printable, short, no quoting troubles. */
static void sanitize(char *dst, size_t n, const char *src)
{
	size_t k = 0;
	for (; src && *src && k + 1 < n && k < 64; src++) {
		unsigned char ch = (unsigned char)*src;
		dst[k++] = (ch > 32 && ch < 127 && ch != '"' && ch != '\\') ? (char)ch : '_';
	}
	dst[k] = 0;
}

/* ------------------------------------------------------------ connections */

/* The address a peer is counted under: the IPv4 address (also when mapped
 * into IPv6), or the /64 of an IPv6 address, which one host or site can
 * fill with addresses of its own. */
static void addr_key(const struct sockaddr *sa, char *buf, size_t n)
{
	snprintf(buf, n, "?");
	if (sa && sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)n);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			inet_ntop(AF_INET, &a->s6_addr[12], buf, (socklen_t)n);
			return;
		}
		struct in6_addr net = {0};
		memcpy(net.s6_addr, a->s6_addr, 8);
		char t[INET6_ADDRSTRLEN];
		if (inet_ntop(AF_INET6, &net, t, sizeof(t)))
			snprintf(buf, n, "%s/64", t);
	}
}

static struct peer **peer_slot(struct server *s, const char *addr)
{
	unsigned h = 5381;
	for (const char *p = addr; *p; p++)
		h = h * 33 + (unsigned char)*p;
	struct peer **pp = &s->peers[h % PEER_BUCKETS];
	while (*pp && strcmp((*pp)->addr, addr) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* cr joins the pending connections, as the newest of its address and of
 * all.  Without memory for its address's record it stays uncounted.
 * Called with conn_lock held, as are the functions below. */
static void pending_link(struct server *s, struct conn_rec *cr, double t)
{
	struct peer **pp = peer_slot(s, cr->addr);
	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return;
		snprintf((*pp)->addr, sizeof((*pp)->addr), "%s", cr->addr);
	}
	struct peer *p = *pp;
	cr->pr = p;
	cr->since = t;
	cr->anext = NULL;
	cr->aprev = p->newest;
	if (p->newest)
		p->newest->anext = cr;
	else
		p->oldest = cr;
	p->newest = cr;
	p->pending++;
	cr->gnext = NULL;
	cr->gprev = s->pend_newest;
	if (s->pend_newest)
		s->pend_newest->gnext = cr;
	else
		s->pend_oldest = cr;
	s->pend_newest = cr;
	s->npending++;
}

static void pending_unlink(struct server *s, struct conn_rec *cr)
{
	struct peer *p = cr->pr;
	if (!p)
		return;
	if (cr->aprev)
		cr->aprev->anext = cr->anext;
	else
		p->oldest = cr->anext;
	if (cr->anext)
		cr->anext->aprev = cr->aprev;
	else
		p->newest = cr->aprev;
	if (cr->gprev)
		cr->gprev->gnext = cr->gnext;
	else
		s->pend_oldest = cr->gnext;
	if (cr->gnext)
		cr->gnext->gprev = cr->gprev;
	else
		s->pend_newest = cr->gprev;
	s->npending--;
	cr->pr = NULL;
	if (--p->pending == 0) {
		struct peer **pp = peer_slot(s, p->addr);
		*pp = p->next;
		free(p);
	}
}

/* Shut cr's socket down (MHD then closes it normally).  The peer address
 * is compared first, so that a descriptor number already reused by a new
 * connection is left alone. */
static void conn_cut(struct server *s, struct conn_rec *cr, const char *why)
{
	if (cr->shut)
		return;
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	if (cr->fd >= 0 && getpeername(cr->fd, (struct sockaddr *)&peer, &len) == 0 && len == cr->peerlen &&
	    memcmp(&peer, &cr->peer, len) == 0)
		shutdown(cr->fd, SHUT_RDWR);
	cr->shut = true;
	cr->cut = why;
	s->nlive--;
	pending_unlink(s, cr);
}

/* Make room, oldest pending connection first, among those that have had
 * CONN_GRACE to send a request (a burst of quick clients is not cut while
 * the I/O threads catch up); a trusted connection is never cut for room.
 * First while p's address holds more than --max-conns-per-addr pending
 * connections (p stays: it keeps at least one)... */
static void peer_make_room(struct server *s, struct peer *p, double t)
{
	unsigned cap = s->o.max_conns_per_addr;
	while (p && cap && p->pending > cap && t - p->oldest->since >= CONN_GRACE) {
		s->cut_addr++;
		conn_cut(s, p->oldest, "its address held more than --max-conns-per-addr pending connections");
	}
}

/* ...then while the server holds --max-connections, so that the next
 * connection, from anyone, finds a place. */
static void server_make_room(struct server *s, double t)
{
	while (s->nlive >= s->o.max_connections && s->pend_oldest && t - s->pend_oldest->since >= CONN_GRACE) {
		s->cut_full++;
		conn_cut(s, s->pend_oldest, "the server held --max-connections");
	}
}

static struct conn_rec *conn_rec_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* c's request has proven it: it carries a valid token (c is trusted for
 * the rest of its life), or, without --token-file, it was admitted (until
 * it is over).  A trusted connection does not count against its address. */
static void conn_trust(struct server *s, struct MHD_Connection *c)
{
	struct conn_rec *cr = conn_rec_of(c);
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	cr->trusted = true;
	pending_unlink(s, cr);
	pthread_mutex_unlock(&s->conn_lock);
}

/* c's request is over: it waits for the next one, pending (again) unless
 * a token made it trusted, and as the newest of its address. */
static void conn_idle(struct server *s, struct MHD_Connection *c)
{
	struct conn_rec *cr = conn_rec_of(c);
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	if (!cr->shut && !(cr->trusted && s->ntokens)) {
		pending_unlink(s, cr);
		cr->trusted = false;
		pending_link(s, cr, now_mono());
	}
	pthread_mutex_unlock(&s->conn_lock);
}

/* ------------------------------------------------------------ answers */

static void set_answer(struct req *r, unsigned code, char *body, const char *ctype)
{
	free(r->resp);
	r->code = code;
	r->resp = body;
	r->ctype = ctype;
}

static void set_error(struct req *r, unsigned code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_error(struct req *r, unsigned code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	set_answer(r, code, ward_error_to_json(r->message), "application/json");
}

/* Take more bytes of a budget (*held of at most max), atomically; false
 * when they do not fit. */
static bool budget_take(size_t *held, size_t max, size_t more)
{
	size_t cur = __atomic_load_n(held, __ATOMIC_RELAXED);
	do {
		if (more > max || cur > max - more)
			return false;
	} while (!__atomic_compare_exchange_n(held, &cur, cur + more, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

/* Request bodies are held from the first byte to decoding (or, for /test,
 * to the end of the run), and an /exec request's decoded form from then
 * to the end of its run: their sum is capped, so that neither many
 * connections each sending a large body slowly nor a queue full of large
 * requests can hold the server's memory. */
static bool body_reserve(struct server *s, size_t more)
{
	return budget_take(&s->body_bytes, s->o.max_body_total, more);
}

static void body_release(struct server *s, struct req *r)
{
	if (r->cap)
		__atomic_sub_fetch(&s->body_bytes, r->cap, __ATOMIC_RELAXED);
	free(r->body);
	r->body = NULL;
	r->len = r->cap = 0;
}

static void conn_set_deadline(struct server *s, struct MHD_Connection *c, double deadline)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_rec *cr = ci ? ci->socket_context : NULL;
	if (!cr)
		return;
	pthread_mutex_lock(&s->conn_lock);
	cr->deadline = deadline;
	pthread_mutex_unlock(&s->conn_lock);
}

/* Queue r's answer on its connection (from an I/O thread). */
static enum MHD_Result send_answer(struct req *r)
{
	struct server *s = r->srv;
	if (!r->resp) {
		/* only allocation failures get here: close rather than lie */
		r->code = 0;
		return MHD_NO;
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(r->resp), r->resp, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->resp = NULL; /* the response owns it now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype ? r->ctype : "application/json");
	if (r->code == 429 || r->code == 503) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%u", r->retry_after ? r->retry_after : 1);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (r->code == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ward\"");
	if (r->code == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					r->route == R_HEALTH || r->route == R_METRICS ? "GET, HEAD" : "POST");
	enum MHD_Result rc = MHD_queue_response(r->conn, r->code, resp);
	MHD_destroy_response(resp);
	r->state = S_ANSWERED;
	/* the whole answer must be taken within the request timeout */
	conn_set_deadline(s, r->conn, now_mono() + s->o.request_timeout);
	return rc;
}

/* ------------------------------------------------------------ paths */

/* workdir, mounts and rootfs name host paths: each must lie under an
 * --allow-root, reached from the root's fd without following any symlink
 * and without leaving it (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so
 * neither "..", nor a symlink planted inside the root, leads outside. */
static int check_allowed(struct server *s, const char *path, const char *field, int *held, char *err, size_t errlen)
{
	if (s->nroots == 0) {
		snprintf(err, errlen, "%s: this runner allows no host paths (start it with --allow-root DIR)", field);
		return -1;
	}
	if (path[0] != '/') {
		snprintf(err, errlen, "%s: '%s' must be an absolute host path", field, path);
		return -1;
	}
	for (size_t i = 0; i < s->nroots; i++) {
		const struct root *rt = &s->roots[i];
		const char *rel;
		if (strcmp(rt->path, "/") == 0)
			rel = path + 1;
		else if (strncmp(path, rt->path, rt->len) == 0 && (path[rt->len] == '/' || path[rt->len] == 0))
			rel = path + rt->len + (path[rt->len] == '/');
		else
			continue;
		while (*rel == '/')
			rel++;
		struct open_how how = {
			.flags = O_PATH | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, rt->fd, *rel ? rel : ".", &how, sizeof(how));
		if (fd >= 0) {
			*held = fd;
			return 0;
		}
		const char *why = errno == ENOENT    ? "does not exist"
				  : errno == ELOOP   ? "passes through a symlink, which is refused"
				  : errno == EXDEV   ? "leads outside its --allow-root"
				  : errno == ENOTDIR ? "has a component that is not a directory"
						     : strerror(errno);
		snprintf(err, errlen, "%s: '%s' %s", field, path, why);
		return -1;
	}
	snprintf(err, errlen, "%s: '%s' is not under any --allow-root of this runner", field, path);
	return -1;
}

/* Check *path against the --allow-roots and keep the directory it names
 * open; the run then binds that descriptor ("/proc/self/fd/N"): as root the
 * supervisor clones it, else the sandbox's PID 1 binds its path only while
 * it is still that inode (plan_pin_held), and what a rootfs holds is found
 * beneath it without a symlink.  A rename or a symlink swapped in after the
 * check changes nothing.  (The application level, which binds nothing and
 * gives no isolation, keeps the path: its command could read anything the
 * service can anyway.) */
static int hold_path(struct server *s, struct req *r, const char **path, const char *field, char *err, size_t errlen)
{
	int fd = -1;
	if (check_allowed(s, *path, field, &fd, err, errlen) < 0)
		return -1;
	struct held *h = &r->held[r->nheld++];
	h->fd = fd;
	if (geteuid() == 0 || r->doc.req.isolation == WARD_ISO_SYSTEM) {
		snprintf(h->path, sizeof(h->path), WARD_HELD_PATH "%d", fd);
		*path = h->path;
	}
	return 0;
}

/* The decoded request and the paths it holds. */
static void doc_release(struct req *r)
{
	if (r->have_doc)
		ward_request_doc_free(&r->doc);
	r->have_doc = false;
	if (r->doc_bytes)
		__atomic_sub_fetch(&r->srv->body_bytes, r->doc_bytes, __ATOMIC_RELAXED);
	r->doc_bytes = 0;
	for (size_t i = 0; i < r->nheld; i++)
		close(r->held[i].fd);
	free(r->held);
	r->held = NULL;
	r->nheld = 0;
}

/* ward_request_validate() speaks in ward run's option names; say the
 * field of the body instead, so that the 400 names what to fix.  keep: the
 * message goes on whole after the field (it does not start with an
 * option's name). */
static void option_to_field(const char *msg, char *out, size_t n)
{
	static const struct {
		const char *prefix, *field;
		bool keep;
	} map[] = {
		{"--timeout", "limits.timeout_s", false},
		{"--cpu", "limits.cpu_seconds", false},
		{"--memory", "limits.memory_mb", false},
		{"--pids", "limits.pids", false},
		{"--output-limit", "limits.max_output_chars", false},
		{"--fsize", "limits.fsize_mb", false},
		{"--tmp-size", "limits.tmp_size_mb", false},
		{"--nofile", "limits.nofile", false},
		{"--workdir", "workdir", false},
		{"--rootfs", "rootfs", false},
		{"bind source", "mounts[].host_path", false},
		{"sandbox path", "mounts[].sandbox_path", true},
		{"too many mounts", "mounts", true},
		{"environment", "env", true},
		{"file", "files", true},
		{"too many files", "files", true},
		{"stdin", "stdin", true},
		{"the program name", "argv[0]", true},
		{"no command", "command", true},
		{"unknown isolation", "isolation", true},
		{"unknown network", "network", true},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t k = strlen(map[i].prefix);
		if (strncmp(msg, map[i].prefix, k) == 0) {
			const char *rest = map[i].keep ? msg : msg + k + (msg[k] == ' ');
			snprintf(out, n, "%s: %s", map[i].field, rest);
			return;
		}
	}
	snprintf(out, n, "%s", msg);
}

/* ------------------------------------------------------------ admission */

/* A record with no run and a full bucket holds nothing worth keeping. */
static bool client_idle(const struct client *c, unsigned rate, double t)
{
	return c->active == 0 && c->nsubs == 0 && (!rate || c->tokens + (t - c->last) * rate / 60.0 >= rate);
}

/* Drop c's idle sub-clients. */
static void subs_evict(struct server *s, struct client *c, double t)
{
	for (struct client **pp = &c->subs; *pp;) {
		struct client *u = *pp;
		if (client_idle(u, s->o.subclient_rate, t)) {
			*pp = u->next;
			free(u);
			c->nsubs--;
			s->nclients--;
		} else
			pp = &u->next;
	}
}

/* Drop every idle record but keep (whose sub-client is being made): called
 * when the table is full. */
static void clients_evict(struct server *s, const struct client *keep)
{
	double t = now_mono();
	for (unsigned i = 0; i < CLIENT_BUCKETS; i++)
		for (struct client **pp = &s->clients[i]; *pp;) {
			struct client *c = *pp;
			subs_evict(s, c, t);
			if (c != keep && client_idle(c, s->o.client_rate, t)) {
				*pp = c->next;
				free(c);
				s->nclients--;
			} else
				pp = &c->next;
		}
}

static struct client *client_new(struct server *s, const char *key, unsigned rate, const struct client *keep)
{
	if (s->nclients >= MAX_CLIENTS)
		clients_evict(s, keep);
	if (s->nclients >= MAX_CLIENTS)
		return NULL;
	struct client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->key, sizeof(c->key), "%s", key);
	c->tokens = rate;
	c->last = now_mono();
	s->nclients++;
	return c;
}

static struct client *client_get(struct server *s, const char *key)
{
	unsigned h = 5381;
	for (const char *p = key; *p; p++)
		h = h * 33 + (unsigned char)*p;
	struct client **b = &s->clients[h % CLIENT_BUCKETS];
	for (struct client *c = *b; c; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	struct client *c = client_new(s, key, s->o.client_rate, NULL);
	if (c) {
		c->next = *b;
		*b = c;
	}
	return c;
}

/* The sub-client NAME of c; a client keeps at most MAX_SUBCLIENTS, so
 * that many distinct X-Ward-Client values cannot fill the table. */
static struct client *sub_get(struct server *s, struct client *c, const char *name)
{
	for (struct client *u = c->subs; u; u = u->next)
		if (strcmp(u->key, name) == 0)
			return u;
	if (c->nsubs >= MAX_SUBCLIENTS)
		subs_evict(s, c, now_mono());
	if (c->nsubs >= MAX_SUBCLIENTS)
		return NULL;
	struct client *u = client_new(s, name, s->o.subclient_rate, c);
	if (u) {
		u->next = c->subs;
		c->subs = u;
		c->nsubs++;
	}
	return u;
}

/* Whether c (named name) may start one more run under its limits; sets
 * the 429 when not.  Refills c's bucket, takes nothing. */
static bool quota_allows(struct server *s, struct req *r, struct client *c, const char *name, unsigned conc,
			 unsigned rate)
{
	if (conc && c->active >= conc) {
		s->m.rejected_client_conc++;
		r->retry_after = 1;
		set_error(r, 429, "client '%s' already has %u runs in progress (limit %u); retry later", name, c->active,
			  conc);
		return false;
	}
	if (rate) {
		double t = now_mono(), per_s = rate / 60.0;
		c->tokens = fmin(rate, c->tokens + (t - c->last) * per_s);
		c->last = t;
		if (c->tokens < 1) {
			s->m.rejected_client_rate++;
			r->retry_after = (unsigned)ceil((1 - c->tokens) / per_s);
			set_error(r, 429, "client '%s' is over its %u runs per minute; retry in %u s", name, rate,
				  r->retry_after);
			return false;
		}
	}
	return true;
}

/* The client's quota (its token's name, or its address), then, when the
 * request names one and --subclient-* are set, its sub-client's: the
 * header can split a client's quota, never add to it.  On success both
 * hold the run (r->cl, r->subcl). */
static bool admit_quotas(struct server *s, struct req *r)
{
	struct client *c = client_get(s, r->who);
	if (!c) {
		s->m.rejected_busy++;
		r->retry_after = 1;
		set_error(r, 429, "too many distinct clients at once; retry later");
		return false;
	}
	if (!quota_allows(s, r, c, r->who, s->o.client_concurrency, s->o.client_rate))
		return false;
	struct client *u = NULL;
	if (r->sub[0] && (s->o.subclient_concurrency || s->o.subclient_rate)) {
		u = sub_get(s, c, r->sub);
		if (!u) {
			s->m.rejected_busy++;
			r->retry_after = 1;
			set_error(r, 429, "client '%s' has %d X-Ward-Client names with runs or rate state already; retry later",
				  r->who, MAX_SUBCLIENTS);
			return false;
		}
		if (!quota_allows(s, r, u, r->client, s->o.subclient_concurrency, s->o.subclient_rate))
			return false;
	}
	if (s->o.client_rate)
		c->tokens -= 1;
	c->active++;
	r->cl = c;
	if (u) {
		if (s->o.subclient_rate)
			u->tokens -= 1;
		u->active++;
		r->subcl = u;
	}
	return true;
}

/* Take a place for r (queue + slot, then the client's quota), or set a 429
 * / 503.  Called with s->lock held. */
static bool admit(struct server *s, struct req *r)
{
	if (s->draining) {
		r->retry_after = 5;
		set_error(r, 503, "the runner is shutting down: retry on another runner");
		return false;
	}
	if (!s->healthy) {
		s->m.rejected_unhealthy++;
		r->retry_after = (unsigned)PROBE_BAD_INTERVAL;
		set_error(r, 503, "no healthy backend: %s", s->health_reason);
		return false;
	}
	if (s->queued + s->running >= s->o.max_concurrent + s->o.queue) {
		s->m.rejected_busy++;
		r->retry_after = 1;
		set_error(r, 429, "the runner is busy: %u running and %u queued (--max-concurrent %u, --queue %u); retry later",
			  s->running, s->queued, s->o.max_concurrent, s->o.queue);
		return false;
	}
	if (s->o.client_concurrency || s->o.client_rate || s->o.subclient_concurrency || s->o.subclient_rate)
		return admit_quotas(s, r);
	return true;
}

/* Decode, check and queue a POST; answers the errors itself.  Returns true
 * when r was queued (and its connection suspended). */
static bool dispatch(struct server *s, struct req *r)
{
	char err[512];
	/* unhealthy first: a load balancer should move on, whatever the body */
	pthread_mutex_lock(&s->lock);
	bool healthy = s->healthy;
	if (!healthy) {
		s->m.rejected_unhealthy++;
		r->retry_after = (unsigned)PROBE_BAD_INTERVAL;
		set_error(r, 503, "no healthy backend: %s", s->health_reason);
	}
	pthread_mutex_unlock(&s->lock);
	if (!healthy)
		return false;
	/* before any parsing, on /test too: see WARD_JSON_MAX_VALUES */
	if (ward_json_check_values(r->body ? r->body : "", r->len, WARD_JSON_MAX_VALUES, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (r->route == R_EXEC) {
		if (ward_request_from_json(r->body ? r->body : "", r->len, &r->doc, err, sizeof(err)) < 0) {
			set_error(r, 400, "%s", err);
			return false;
		}
		r->have_doc = true;
		/* the decoded request owns copies of everything: drop the raw body
		 * now rather than hold both while the request waits in the queue,
		 * and count the decoded request in its place */
		body_release(s, r);
		size_t held = ward_request_doc_bytes(&r->doc);
		if (!body_reserve(s, held)) {
			r->retry_after = 1;
			set_error(r, 503, "the runner holds --max-body-total (%zu bytes) of requests already; retry later",
				  s->o.max_body_total);
			return false;
		}
		r->doc_bytes = held;
		struct ward_request *q = &r->doc.req;
		if (!r->doc.isolation_set)
			q->isolation = s->o.isolation;
		int bad = 0;
		if (q->workdir || q->rootfs || q->nmounts) {
			r->held = calloc(2 + q->nmounts, sizeof(*r->held));
			if (!r->held) {
				set_error(r, 503, "out of memory");
				return false;
			}
		}
		if (q->workdir)
			bad = hold_path(s, r, &q->workdir, "workdir", err, sizeof(err));
		if (!bad && q->rootfs)
			bad = hold_path(s, r, &q->rootfs, "rootfs", err, sizeof(err));
		for (size_t i = 0; !bad && i < q->nmounts; i++) {
			char field[48];
			snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
			struct ward_mount *m = &r->doc.mounts[i];
			if (!m->sandbox_path)
				m->sandbox_path = m->host_path; /* before host_path becomes a descriptor's */
			bad = hold_path(s, r, &m->host_path, field, err, sizeof(err));
		}
		if (bad) {
			set_error(r, 400, "%s", err);
			return false;
		}
		/* the operator's opt-in, as ward_run() checks it: refused here
		 * as a 400 before a slot is taken */
		const char *allow = getenv("WARD_ALLOW_APPLICATION");
		if (q->isolation == WARD_ISO_APPLICATION && (!allow || strcmp(allow, "1") != 0)) {
			set_error(r, 400, "isolation: 'application' is not allowed on this runner (its operator has "
					  "not set WARD_ALLOW_APPLICATION=1); use \"system\"");
			return false;
		}
		/* a drain that runs out of time cancels the runs still going */
		q->cancel = &s->cancel;
		if (ward_limits_within(&q->limits, &s->o.max, err, sizeof(err)) < 0) {
			set_error(r, 400, "%s", err);
			return false;
		}
		char verr[400]; /* room for the field name in err */
		if (ward_request_validate(q, verr, sizeof(verr)) < 0) {
			option_to_field(verr, err, sizeof(err));
			set_error(r, 400, "%s", err);
			return false;
		}
	}
	pthread_mutex_lock(&s->lock);
	bool ok = admit(s, r);
	if (ok) {
		/* suspend before a worker can resume: the order MHD needs */
		MHD_suspend_connection(r->conn);
		conn_set_deadline(s, r->conn, 0);
		if (!s->ntokens)
			conn_trust(s, r->conn); /* until the request is over: see conn_idle */
		r->state = S_WAIT;
		r->t_admit = now_mono();
		trace_phase("http:admitted", r->t_start);
		r->qnext = NULL;
		if (s->qtail)
			s->qtail->qnext = r;
		else
			s->qhead = r;
		s->qtail = r;
		s->queued++;
		s->answering++;
		pthread_cond_signal(&s->work);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* ------------------------------------------------------------ workers */

static void run_exec(struct req *r)
{
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	ward_run_pooled(r->srv->pool, &r->doc.req, &res);
	/* 200 also when the sandbox failed: the result says so in "error" */
	set_answer(r, 200, ward_result_to_json(&res), "application/json");
	r->sandbox_status = ward_status_name(res.status);
	if (res.error[0])
		snprintf(r->message, sizeof(r->message), "%s", res.error);

	struct server *s = r->srv;
	double secs = now_mono() - r->t_admit;
	pthread_mutex_lock(&s->lock);
	int st = res.status <= WARD_ST_ERROR ? (int)res.status : WARD_ST_ERROR;
	s->m.runs[st][res.isolation == WARD_ISO_APPLICATION]++;
	size_t b = 0;
	while (b < NBUCKETS && secs > latency_buckets[b])
		b++;
	s->m.buckets[b]++;
	s->m.sum += secs;
	s->m.count++;
	pthread_mutex_unlock(&s->lock);
	ward_result_free(&res);
	doc_release(r);
}

static void run_test(struct req *r)
{
	char *out = NULL;
	int code = ward_testjob_http(r->srv->pool, &r->srv->o.max, r->body ? r->body : "", r->len, &out);
	if (!out) {
		set_error(r, 500, "the test job produced no answer");
		return;
	}
	set_answer(r, code >= 200 && code < 600 ? (unsigned)code : 500, out, "application/json");
	r->sandbox_status = code == 200 ? "ok" : "error";
}

/* An answer is held from its encoding until its client has taken it or
 * the connection ends, and a client that does not read keeps it that long:
 * so answers have a budget of their own.  One that does not fit now is
 * dropped for a 503 (the run has happened; the server's memory stays
 * bounded). */
static void hold_answer(struct server *s, struct req *r)
{
	if (!r->resp)
		return;
	size_t n = strlen(r->resp) + 1;
	if (budget_take(&s->answer_bytes, s->o.max_answer_total, n)) {
		r->answer_bytes = n;
		return;
	}
	r->retry_after = 1;
	set_error(r, 503,
		  "the answer (%zu bytes) does not fit in --max-answer-total (%zu bytes) now: answers not yet taken "
		  "by their clients hold it; retry later",
		  n, s->o.max_answer_total);
}

static void *worker_main(void *arg)
{
	struct server *s = arg;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->qhead && !s->stopping)
			pthread_cond_wait(&s->work, &s->lock);
		if (!s->qhead)
			break;
		struct req *r = s->qhead;
		s->qhead = r->qnext;
		if (!s->qhead)
			s->qtail = NULL;
		s->queued--;
		s->running++;
		pthread_mutex_unlock(&s->lock);

		trace_phase("http:picked", r->t_start);
		if (r->route == R_EXEC)
			run_exec(r);
		else
			run_test(r);
		trace_phase("http:ran", r->t_start);
		body_release(s, r); /* not needed any more: release it before the answer is sent */
		hold_answer(s, r);

		pthread_mutex_lock(&s->lock);
		s->running--;
		if (r->cl) {
			r->cl->active--;
			r->cl = NULL;
		}
		if (r->subcl) {
			r->subcl->active--;
			r->subcl = NULL;
		}
		r->state = S_READY;
		pthread_cond_broadcast(&s->idle);
		pthread_mutex_unlock(&s->lock);
		/* r belongs to the I/O thread from here on */
		MHD_resume_connection(r->conn);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ------------------------------------------------------------ GET pages */

static void answer_health(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	bool ok = s->healthy && !s->draining;
	char reason[600];
	snprintf(reason, sizeof(reason), "%s", s->draining ? "shutting down" : s->health_reason);
	pthread_mutex_unlock(&s->lock);
	struct ward_request dflt;
	ward_request_init(&dflt);
	set_answer(r, ok ? 200 : 503,
		   ward_health_to_json(ok, ward_isolation_name(s->o.isolation), reason, &dflt.limits, &s->o.max),
		   "application/json");
	if (!ok)
		r->retry_after = (unsigned)PROBE_BAD_INTERVAL;
}

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = b->oom ? 0 : vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (b->oom || n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static void answer_metrics(struct server *s, struct req *r)
{
	struct metrics m;
	unsigned running, queued, answering;
	pthread_mutex_lock(&s->lock);
	m = s->m;
	running = s->running;
	queued = s->queued;
	answering = s->answering;
	bool healthy = s->healthy;
	pthread_mutex_unlock(&s->lock);

	struct buf b = {0};
	bprintf(&b, "# HELP ward_runs_total Sandbox runs finished, by result status and isolation level.\n"
		    "# TYPE ward_runs_total counter\n");
	for (int st = WARD_ST_OK; st <= WARD_ST_ERROR; st++)
		for (int iso = 0; iso < 2; iso++)
			bprintf(&b, "ward_runs_total{status=\"%s\",isolation=\"%s\"} %llu\n",
				ward_status_name((enum ward_status)st), ward_isolation_name((enum ward_isolation)iso),
				(unsigned long long)m.runs[st][iso]);
	bprintf(&b, "# HELP ward_run_duration_seconds Time from admission to result (queue wait included).\n"
		    "# TYPE ward_run_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += m.buckets[i];
		bprintf(&b, "ward_run_duration_seconds_bucket{le=\"%g\"} %llu\n", latency_buckets[i], (unsigned long long)cum);
	}
	cum += m.buckets[NBUCKETS];
	bprintf(&b, "ward_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	bprintf(&b, "ward_run_duration_seconds_sum %.6f\nward_run_duration_seconds_count %llu\n", m.sum,
		(unsigned long long)m.count);
	bprintf(&b, "# HELP ward_in_flight Sandboxes running now.\n# TYPE ward_in_flight gauge\nward_in_flight %u\n",
		running);
	bprintf(&b, "# HELP ward_queued Requests waiting for a slot.\n# TYPE ward_queued gauge\nward_queued %u\n", queued);
	bprintf(&b, "# HELP ward_answering Requests admitted whose answer is not yet sent.\n"
		    "# TYPE ward_answering gauge\nward_answering %u\n",
		answering);
	bprintf(&b, "# HELP ward_rejected_total Requests refused for capacity or quota.\n"
		    "# TYPE ward_rejected_total counter\n"
		    "ward_rejected_total{reason=\"busy\"} %llu\n"
		    "ward_rejected_total{reason=\"client_concurrency\"} %llu\n"
		    "ward_rejected_total{reason=\"client_rate\"} %llu\n"
		    "ward_rejected_total{reason=\"unhealthy\"} %llu\n",
		(unsigned long long)m.rejected_busy, (unsigned long long)m.rejected_client_conc,
		(unsigned long long)m.rejected_client_rate, (unsigned long long)m.rejected_unhealthy);
	bprintf(&b, "# HELP ward_http_requests_total HTTP answers by status code.\n"
		    "# TYPE ward_http_requests_total counter\n");
	for (int c = 100; c < 600; c++)
		if (m.http[c])
			bprintf(&b, "ward_http_requests_total{code=\"%d\"} %llu\n", c, (unsigned long long)m.http[c]);
	pthread_mutex_lock(&s->conn_lock);
	unsigned live = s->nlive, pending = s->npending;
	uint64_t cut_addr = s->cut_addr, cut_full = s->cut_full;
	pthread_mutex_unlock(&s->conn_lock);
	bprintf(&b, "# HELP ward_connections Open connections: pending (no request with a valid token yet; without "
		    "--token-file, no run admitted now) and trusted.\n# TYPE ward_connections gauge\n"
		    "ward_connections{state=\"pending\"} %u\nward_connections{state=\"trusted\"} %u\n",
		pending, live - pending);
	bprintf(&b, "# HELP ward_connections_cut_total Pending connections cut to make room: their address held more "
		    "than --max-conns-per-addr, or the server --max-connections.\n"
		    "# TYPE ward_connections_cut_total counter\n"
		    "ward_connections_cut_total{reason=\"address\"} %llu\nward_connections_cut_total{reason=\"full\"} %llu\n",
		(unsigned long long)cut_addr, (unsigned long long)cut_full);
		bprintf(&b, "# HELP ward_body_bytes Request bodies and decoded requests held now (--max-body-total caps it).\n"
		    "# TYPE ward_body_bytes gauge\nward_body_bytes %zu\n",
		__atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED));
	bprintf(&b, "# HELP ward_answer_bytes Encoded answers held until their clients take them "
		    "(--max-answer-total caps it).\n# TYPE ward_answer_bytes gauge\nward_answer_bytes %zu\n",
		__atomic_load_n(&s->answer_bytes, __ATOMIC_RELAXED));
	bprintf(&b, "# HELP ward_max_concurrent Sandbox slots.\n# TYPE ward_max_concurrent gauge\n"
		    "ward_max_concurrent %u\n"
		    "# HELP ward_queue_capacity Queue places.\n# TYPE ward_queue_capacity gauge\nward_queue_capacity %u\n"
		    "# HELP ward_healthy 1 when the last backend probe succeeded.\n# TYPE ward_healthy gauge\n"
		    "ward_healthy{isolation=\"%s\"} %d\n",
		s->o.max_concurrent, s->o.queue, ward_isolation_name(s->o.isolation), healthy ? 1 : 0);
	bprintf(&b,
		"# HELP ward_spawner_helpers Spawner helpers alive (--spawners); when one dies the server clones "
		"sandboxes itself, which costs more CPU.\n# TYPE ward_spawner_helpers gauge\nward_spawner_helpers %u\n",
		ward_spawner_helpers());
	if (s->pool) {
		struct ward_pool_stats ps;
		ward_pool_stats(s->pool, &ps);
		bprintf(&b,
			"# HELP ward_pool_ready Sandboxes built ahead and waiting (--pool).\n# TYPE ward_pool_ready gauge\n"
			"ward_pool_ready %u\n"
			"# HELP ward_pool_size Sandboxes the pool keeps ready.\n# TYPE ward_pool_size gauge\n"
			"ward_pool_size %u\n"
			"# HELP ward_pool_takes_total Requests of the pool's shape, by whether a sandbox was ready.\n"
			"# TYPE ward_pool_takes_total counter\n"
			"ward_pool_takes_total{result=\"hit\"} %llu\nward_pool_takes_total{result=\"miss\"} %llu\n"
			"# HELP ward_pool_build_failures_total Sandboxes the pool could not build.\n"
			"# TYPE ward_pool_build_failures_total counter\nward_pool_build_failures_total %llu\n",
			ps.ready, ps.size, (unsigned long long)ps.hits, (unsigned long long)ps.misses,
			(unsigned long long)ps.failures);
	}
	if (b.oom) {
		free(b.p);
		b.p = NULL;
	}
	set_answer(r, 200, b.p, "text/plain; version=0.0.4");
}

/* ------------------------------------------------------------ MHD callbacks */

static enum route route_of(const char *url)
{
	if (strcmp(url, "/health") == 0)
		return R_HEALTH;
	if (strcmp(url, "/exec") == 0)
		return R_EXEC;
	if (strcmp(url, "/test") == 0)
		return R_TEST;
	if (strcmp(url, "/metrics") == 0)
		return R_METRICS;
	return R_NONE;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	struct server *s = cls;
	struct req *r = *ctx;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*ctx = r;
		r->srv = s;
		r->conn = c;
		r->t_start = now_mono();
		sanitize(r->method, sizeof(r->method), method);
		sanitize(r->path, sizeof(r->path), url);
		r->route = route_of(url);
		conn_set_deadline(s, c, r->t_start + s->o.request_timeout);

		/* who is asking: the token's name, else the peer's address; the
		 * quotas count there.  X-Ward-Client (the application holding the
		 * token names its own users) only names a sub-client within it. */
		const struct token *tok = s->ntokens ? authorize(s, c) : NULL;
		if (tok) {
			snprintf(r->who, sizeof(r->who), "%s", tok->name);
			conn_trust(s, c);
		} else {
			const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
			addr_key(ci ? ci->client_addr : NULL, r->who, sizeof(r->who));
		}
		sanitize(r->sub, sizeof(r->sub), MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Ward-Client"));
		snprintf(r->client, sizeof(r->client), "%s%s%s", r->who, r->sub[0] ? "/" : "", r->sub);

		bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
		bool is_post = strcmp(method, "POST") == 0;
		if (r->route == R_NONE)
			set_error(r, 404, "no such endpoint: %s (use /exec, /test, /health or /metrics)", r->path);
		else if ((r->route == R_HEALTH || r->route == R_METRICS) ? !is_get : !is_post)
			set_error(r, 405, "%s %s is not allowed: use %s", r->method, r->path,
				  (r->route == R_HEALTH || r->route == R_METRICS) ? "GET" : "POST");
		else if (r->route != R_HEALTH && s->ntokens && !tok)
			set_error(r, 401, "missing or wrong token: send Authorization: Bearer <token>");
		else if (r->route == R_HEALTH)
			answer_health(s, r);
		else if (r->route == R_METRICS)
			answer_metrics(s, r);
		else {
			const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
			unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
			if (want > s->o.max_body) {
				set_error(r, 413, "the body is larger than --max-body (%zu bytes)", s->o.max_body);
			} else if (want + __atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED) > s->o.max_body_total) {
				r->retry_after = 1;
				set_error(r, 503, "the runner holds --max-body-total (%zu bytes) of request bodies already; "
						  "retry later", s->o.max_body_total);
			} else {
				r->state = S_BODY;
				return MHD_YES; /* read the body */
			}
		}
		return send_answer(r);
	}

	if (r->state == S_BODY && *upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->len + n > s->o.max_body) {
			/* a chunked body with no Content-Length grew too large: try a
			 * 413 at once; libmicrohttpd 0.9.75 refuses an answer before
			 * the body is complete and closes the connection instead, which
			 * still stops the upload (the log keeps the reason) */
			body_release(s, r);
			set_error(r, 413, "the body is larger than --max-body (%zu bytes)", s->o.max_body);
			return send_answer(r);
		}
		if (r->len + n + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			while (cap < r->len + n + 1)
				cap *= 2;
			if (cap > s->o.max_body + 1)
				cap = s->o.max_body + 1;
			if (!body_reserve(s, cap - r->cap)) {
				body_release(s, r);
				r->retry_after = 1;
				set_error(r, 503, "the runner holds --max-body-total (%zu bytes) of request bodies already; "
						  "retry later", s->o.max_body_total);
				return send_answer(r); /* as above: MHD 0.9.75 closes instead */
			}
			char *p = realloc(r->body, cap);
			if (!p) {
				__atomic_sub_fetch(&s->body_bytes, cap - r->cap, __ATOMIC_RELAXED);
				return MHD_NO;
			}
			r->body = p;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload, n);
		r->len += n;
		r->body[r->len] = 0;
		return MHD_YES;
	}
	if (r->state == S_BODY) {
		if (dispatch(s, r))
			return MHD_YES;
		body_release(s, r);
		doc_release(r);
		return send_answer(r);
	}
	if (r->state == S_READY) {
		trace_phase("http:answering", r->t_start);
		return send_answer(r);
	}
	return MHD_YES;
}

/* The request is over (answered, or the connection died): log it and free. */
static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct req *r = *ctx;
	if (!r)
		return;
	*ctx = NULL;
	char t[40];
	rfc3339(t, sizeof(t));
	int code = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? (int)r->code : 0;
	struct conn_rec *cr = conn_rec_of(c);
	pthread_mutex_lock(&s->conn_lock);
	const char *cut = cr ? cr->cut : NULL;
	pthread_mutex_unlock(&s->conn_lock);
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !r->message[0]) {
		const char *why = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout"
				  : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT  ? "client closed"
				  : toe == MHD_REQUEST_TERMINATED_READ_ERROR    ? "read error"
										: "aborted";
		snprintf(r->message, sizeof(r->message), "connection ended before the answer was sent (%s%s)",
			 cut ? "cut by the server: " : "", cut ? cut : why);
	}
	struct ward_log_entry e = {
		.time = t,
		.client = r->client,
		.method = r->method,
		.path = r->path,
		.http_status = code,
		.wall_ms = (uint64_t)((now_mono() - r->t_start) * 1000),
		.sandbox_status = r->sandbox_status,
		.message = r->message[0] ? r->message : NULL,
	};
	log_write(s, &e);
	if (r->t_admit > 0)
		trace_phase("http:completed", r->t_start);
	pthread_mutex_lock(&s->lock);
	if (code > 0 && code < 600)
		s->m.http[code]++;
	if (r->t_admit > 0) /* admitted; the worker is done with it (MHD does not end suspended requests) */
		s->answering--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	/* the next request on a kept-alive connection gets its own header time */
	conn_set_deadline(s, c, now_mono() + s->o.header_timeout);
	conn_idle(s, c);
	body_release(s, r);
	free(r->resp);
	if (r->answer_bytes) /* MHD frees the answer it sent now */
		__atomic_sub_fetch(&s->answer_bytes, r->answer_bytes, __ATOMIC_RELAXED);
	doc_release(r);
	free(r);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn_rec *cr = calloc(1, sizeof(*cr));
		if (!cr)
			return;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		cr->fd = ci ? ci->connect_fd : -1;
		cr->peerlen = sizeof(cr->peer);
		if (cr->fd < 0 || getpeername(cr->fd, (struct sockaddr *)&cr->peer, &cr->peerlen) < 0)
			cr->peerlen = 0;
		addr_key(cr->peerlen ? (struct sockaddr *)&cr->peer : NULL, cr->addr, sizeof(cr->addr));
		double t = now_mono();
		cr->deadline = t + s->o.header_timeout;
		pthread_mutex_lock(&s->conn_lock);
		cr->next = s->conns;
		if (s->conns)
			s->conns->prev = cr;
		s->conns = cr;
		s->nlive++;
		pending_link(s, cr, t);
		peer_make_room(s, cr->pr, t);
		server_make_room(s, t);
		pthread_mutex_unlock(&s->conn_lock);
		*socket_ctx = cr;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		struct conn_rec *cr = *socket_ctx;
		if (!cr)
			return;
		pthread_mutex_lock(&s->conn_lock);
		if (cr->prev)
			cr->prev->next = cr->next;
		else
			s->conns = cr->next;
		if (cr->next)
			cr->next->prev = cr->prev;
		if (!cr->shut)
			s->nlive--;
		pending_unlink(s, cr);
		pthread_mutex_unlock(&s->conn_lock);
		free(cr);
		*socket_ctx = NULL;
	}
}

/* Shut down connections past their deadline (slowloris, trickled bodies,
 * clients that never read), then make room where the connections of an
 * address, or all, have grown past their limits while their newest had
 * their grace. */
static void sweep(struct server *s)
{
	double t = now_mono();
	pthread_mutex_lock(&s->conn_lock);
	for (struct conn_rec *cr = s->conns; cr; cr = cr->next) {
		if (cr->shut || cr->deadline == 0 || t < cr->deadline || cr->fd < 0)
			continue;
		conn_cut(s, cr, "past its deadline");
	}
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		for (struct peer *p = s->peers[i]; p; p = p->next)
			peer_make_room(s, p, t);
	server_make_room(s, t);
	pthread_mutex_unlock(&s->conn_lock);
}

/* How many pending connections were cut for room since the last call: a
 * flood makes one line a second, not one a connection. */
static void log_cuts(struct server *s, uint64_t logged[2])
{
	pthread_mutex_lock(&s->conn_lock);
	uint64_t a = s->cut_addr, f = s->cut_full;
	pthread_mutex_unlock(&s->conn_lock);
	if (a == logged[0] && f == logged[1])
		return;
	log_event(s, "connections-cut",
		  "%llu pending connections cut for room from addresses over --max-conns-per-addr %u, %llu because the "
		  "server held --max-connections %u",
		  (unsigned long long)(a - logged[0]), s->o.max_conns_per_addr, (unsigned long long)(f - logged[1]),
		  s->o.max_connections);
	logged[0] = a;
	logged[1] = f;
}

/* ------------------------------------------------------------ health probe */

/* Run `true` at the server's isolation level: the backend is healthy when
 * a sandbox can be made.  Runs on the main thread, which outlives it. */
static void probe(struct server *s)
{
	static char *const argv[] = {"true", NULL};
	struct ward_request q;
	struct ward_result res;
	ward_request_init(&q);
	q.argv = argv;
	q.capture = true;
	q.isolation = s->o.isolation;
	q.limits.timeout_s = 10;
	memset(&res, 0, sizeof(res));
	int rc = ward_run(&q, &res);
	bool ok = rc == 0 && res.status == WARD_ST_OK;
	pthread_mutex_lock(&s->lock);
	bool was = s->healthy;
	s->healthy = ok;
	if (!ok)
		snprintf(s->health_reason, sizeof(s->health_reason), "%s",
			 res.error[0] ? res.error : "a probe run of `true` did not exit 0");
	else
		s->health_reason[0] = 0;
	pthread_mutex_unlock(&s->lock);
	if (ok != was)
		log_event(s, ok ? "healthy" : "unhealthy", "%s", ok ? "probe run succeeded" : s->health_reason);
	ward_result_free(&res);
}

/* ------------------------------------------------------------ setup */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward serve [OPTIONS]\n"
		"  --listen ADDR:PORT        address to listen on (default 127.0.0.1:8900; port 0 picks one)\n"
		"  --token-file FILE         require Authorization: Bearer on all but /health; one token a\n"
		"                            line, \"TOKEN\" or \"NAME TOKEN\"; # starts a comment\n"
		"  --max-concurrent N        sandboxes at once (default: number of cores)\n"
		"  --queue N                 requests waiting for a slot before 429 (default 64)\n"
		"  --allow-root DIR          workdir, mounts and rootfs must lie under DIR (repeatable)\n"
		"  --max-body BYTES          largest request body (default 8388608)\n"
		"  --max-body-total BYTES    request bodies and decoded requests held at once, all connections\n"
		"                            (default 268435456)\n"
		"  --max-answer-total BYTES  encoded answers held at once until their clients take them\n"
		"                            (default 1073741824)\n"
		"  --isolation LEVEL         default isolation of requests: system|application\n"
		"  --client-concurrency N    runs in progress per client (0 = no limit, default)\n"
		"  --client-rate N           runs per minute per client (0 = no limit, default)\n"
		"  --subclient-concurrency N runs in progress per X-Ward-Client name within its client\n"
		"                            (0 = only the client's limit, default)\n"
		"  --subclient-rate N        runs per minute per X-Ward-Client name within its client (0 =\n"
		"                            only the client's limit, default)\n"
		"  --max-connections N       open connections at once (default 256)\n"
		"  --max-conns-per-addr N    pending connections per address (an IPv6 /64), default 32, 0 =\n"
		"                            no limit; beyond, its oldest are cut. A connection is pending\n"
		"                            until its request carries a valid token (without --token-file:\n"
		"                            while it has no run admitted); a full server cuts the oldest\n"
		"                            pending connection of any address to take a new one\n"
		"  --pool N                  keep N sandboxes built ahead of requests (default 0): a request\n"
		"                            without workdir, mounts or rootfs takes one, and it is destroyed\n"
		"                            after that run, never reused\n"
		"  --spawners N              helper processes that clone sandboxes, 0 to 4 (default: one per\n"
		"                            core, at most 4); 0: the server clones them itself, which costs\n"
		"                            a copy of its memory and TLB shoot-downs on every run\n"
		"  --header-timeout S        time to send the request headers (default 10)\n"
		"  --request-timeout S       time to send the body, and to take the answer (default 60)\n"
		"  --drain-timeout S         on SIGTERM, how long runs may take to finish (default 60)\n"
		"  --log FILE                request log, one JSON line each (default stderr); SIGHUP reopens\n"
		"The most a request (/exec, /test) may ask for; above it: 400 naming the field, never clamped:\n");
	for (int i = 0; i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		char opt[40], dflt[40];
		const char *metavar = i == LIM_TIMEOUT || i == LIM_CPU ? "S"
				      : strcmp(d->unit, "bytes") == 0 ? "BYTES"
				      : d->unit[0]			? d->unit
									: "N";
		snprintf(opt, sizeof(opt), "%s %s", d->max_option, metavar);
		if (i == LIM_CPU)
			snprintf(dflt, sizeof(dflt), "= --max-timeout");
		else
			snprintf(dflt, sizeof(dflt), "%.15g", d->max_dflt);
		fprintf(f, "  %-25s limits.%s (default %s)\n", opt, d->field, dflt);
	}
	fprintf(f, "A client is its token's name, else its address (an IPv6 /64); quotas count per client.\n"
		   "X-Ward-Client names a sub-client within it (logged as CLIENT/NAME), which --subclient-*\n"
		   "limit further: the header splits a client's quota, never adds to it.\n");
}

static int parse_uint(const char *opt, const char *v, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n > max) {
		fprintf(stderr, "ward serve: %s '%s': give a whole number from 0 to %llu\n", opt, v, max);
		return -1;
	}
	*out = n;
	return 0;
}

static int parse_secs(const char *opt, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d > 0 && d <= 86400)) {
		fprintf(stderr, "ward serve: %s '%s': give seconds, more than 0 and at most 86400\n", opt, v);
		return -1;
	}
	*out = d;
	return 0;
}

/* --max-timeout and the like: within the table's bounds, whole numbers
 * but for seconds. */
static int parse_max(int which, const char *v, struct ward_limits *max)
{
	const struct limit_desc *d = &ward_limit_table[which];
	bool secs = which == LIM_TIMEOUT || which == LIM_CPU;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= d->min && x <= d->max) || (!secs && x != floor(x))) {
		fprintf(stderr, "ward serve: %s '%s': give %s from %.15g to %.15g%s%s\n", d->max_option, v,
			secs ? "seconds" : "a whole number", d->min, d->max, d->unit[0] ? " " : "", d->unit);
		return -1;
	}
	ward_limit_set(max, which, x);
	return 0;
}

/* The largest answer a request within the maxima can have: each kept byte
 * of both streams may take six on the wire (\u0001), the drop marker
 * included; a test report's details take a few times its report's bytes. */
static uint64_t answer_bound(const struct ward_limits *max)
{
	return 12 * (max->output_limit + 64) + 8ull * TJ_REPORT_LIMIT + (64u << 10);
}

/* The maxima leave room for a request that names no limits, and the
 * answer budget for the largest answer. */
static int check_budgets(const struct serve_opts *o)
{
	char err[400];
	if (ward_maxima_check(&o->max, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward serve: %s\n", err);
		return -1;
	}
	uint64_t need = answer_bound(&o->max);
	if (o->max_answer_total < need) {
		fprintf(stderr, "ward serve: --max-answer-total %zu cannot hold the largest answer a request may have "
				"with --max-output %llu (%llu bytes: each kept byte of both streams may take six on "
				"the wire); give at least %llu, or a smaller --max-output\n",
			o->max_answer_total, (unsigned long long)o->max.output_limit, (unsigned long long)need,
			(unsigned long long)need);
		return -1;
	}
	if (o->max_body_total < o->max_body) {
		fprintf(stderr, "ward serve: --max-body-total (%zu) must be at least --max-body (%zu)\n", o->max_body_total,
			o->max_body);
		return -1;
	}
	return 0;
}

static int parse_opts(struct serve_opts *o, int argc, char **argv)
{
	enum { O_LISTEN = 256, O_TOKEN, O_MAXC, O_QUEUE, O_ROOT, O_BODY, O_ISO, O_CCONC, O_CRATE, O_MAXCONN,
	       O_HDR, O_REQ, O_DRAIN, O_LOG, O_BODYTOTAL, O_POOL, O_SPAWNERS, O_SCONC, O_SRATE, O_PERADDR, O_HELP,
	       O_ANSWERTOTAL, O_MAX0 /* O_MAX0 + LIM_x: the maximum of limit x; last */ };
	static const struct option fixed[] = {
		{"listen", required_argument, NULL, O_LISTEN},
		{"token-file", required_argument, NULL, O_TOKEN},
		{"max-concurrent", required_argument, NULL, O_MAXC},
		{"queue", required_argument, NULL, O_QUEUE},
		{"allow-root", required_argument, NULL, O_ROOT},
		{"max-body", required_argument, NULL, O_BODY},
		{"max-body-total", required_argument, NULL, O_BODYTOTAL},
		{"max-answer-total", required_argument, NULL, O_ANSWERTOTAL},
		{"isolation", required_argument, NULL, O_ISO},
		{"client-concurrency", required_argument, NULL, O_CCONC},
		{"client-rate", required_argument, NULL, O_CRATE},
		{"subclient-concurrency", required_argument, NULL, O_SCONC},
		{"subclient-rate", required_argument, NULL, O_SRATE},
		{"max-connections", required_argument, NULL, O_MAXCONN},
		{"max-conns-per-addr", required_argument, NULL, O_PERADDR},
		{"pool", required_argument, NULL, O_POOL},
		{"spawners", required_argument, NULL, O_SPAWNERS},
		{"header-timeout", required_argument, NULL, O_HDR},
		{"request-timeout", required_argument, NULL, O_REQ},
		{"drain-timeout", required_argument, NULL, O_DRAIN},
		{"log", required_argument, NULL, O_LOG},
		{"help", no_argument, NULL, O_HELP},
	};
	/* the maxima's options come from the table of limits */
	struct option longopts[sizeof(fixed) / sizeof(fixed[0]) + LIM__COUNT + 1];
	size_t nopt = 0;
	for (; nopt < sizeof(fixed) / sizeof(fixed[0]); nopt++)
		longopts[nopt] = fixed[nopt];
	for (int i = 0; i < LIM__COUNT; i++)
		longopts[nopt++] = (struct option){ward_limit_table[i].max_option + 2, required_argument, NULL, O_MAX0 + i};
	longopts[nopt] = (struct option){NULL, 0, NULL, 0};
	bool max_cpu_given = false;
	ward_maxima_init(&o->max);
	o->max_answer_total = 1ull << 30;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(o->listen, sizeof(o->listen), "127.0.0.1:8900");
	o->max_concurrent = ncpu > 0 ? (unsigned)ncpu : 1;
	o->queue = 64;
	o->max_body = 8u << 20;
	o->max_body_total = 256u << 20;
	o->isolation = WARD_ISO_SYSTEM;
	o->max_connections = 256;
	o->max_conns_per_addr = 32;
	o->header_timeout = 10;
	o->request_timeout = 60;
	o->drain_timeout = 60;
	o->spawners = -1;
	optind = 1;
	opterr = 0;
	int ch;
	unsigned long long n;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case O_LISTEN:
			if (strlen(optarg) >= sizeof(o->listen)) {
				fprintf(stderr, "ward serve: --listen '%s' is too long\n", optarg);
				return -1;
			}
			snprintf(o->listen, sizeof(o->listen), "%s", optarg);
			break;
		case O_TOKEN: o->token_file = optarg; break;
		case O_MAXC:
			if (parse_uint("--max-concurrent", optarg, 4096, &n) < 0 || n == 0) {
				if (n == 0)
					fprintf(stderr, "ward serve: --max-concurrent must be at least 1\n");
				return -1;
			}
			o->max_concurrent = (unsigned)n;
			break;
		case O_QUEUE:
			if (parse_uint("--queue", optarg, 1u << 20, &n) < 0)
				return -1;
			o->queue = (unsigned)n;
			break;
		case O_ROOT:
			if (o->nroots == MAX_ROOTS) {
				fprintf(stderr, "ward serve: at most %d --allow-root\n", MAX_ROOTS);
				return -1;
			}
			o->roots[o->nroots++] = optarg;
			break;
		case O_BODY:
			if (parse_uint("--max-body", optarg, 1ull << 30, &n) < 0)
				return -1;
			o->max_body = (size_t)n;
			break;
		case O_BODYTOTAL:
			if (parse_uint("--max-body-total", optarg, 1ull << 40, &n) < 0)
				return -1;
			o->max_body_total = (size_t)n;
			break;
		case O_ANSWERTOTAL:
			if (parse_uint("--max-answer-total", optarg, 1ull << 40, &n) < 0)
				return -1;
			o->max_answer_total = (size_t)n;
			break;
		case O_ISO:
			if (ward_isolation_parse(optarg, &o->isolation) < 0) {
				fprintf(stderr, "ward serve: --isolation '%s': use system or application\n", optarg);
				return -1;
			}
			break;
		case O_CCONC:
			if (parse_uint("--client-concurrency", optarg, 1u << 20, &n) < 0)
				return -1;
			o->client_concurrency = (unsigned)n;
			break;
		case O_CRATE:
			if (parse_uint("--client-rate", optarg, 1u << 24, &n) < 0)
				return -1;
			o->client_rate = (unsigned)n;
			break;
		case O_SCONC:
			if (parse_uint("--subclient-concurrency", optarg, 1u << 20, &n) < 0)
				return -1;
			o->subclient_concurrency = (unsigned)n;
			break;
		case O_SRATE:
			if (parse_uint("--subclient-rate", optarg, 1u << 24, &n) < 0)
				return -1;
			o->subclient_rate = (unsigned)n;
			break;
		case O_MAXCONN:
			if (parse_uint("--max-connections", optarg, 65536, &n) < 0 || n == 0)
				return -1;
			o->max_connections = (unsigned)n;
			break;
		case O_PERADDR:
			if (parse_uint("--max-conns-per-addr", optarg, 65536, &n) < 0)
				return -1;
			o->max_conns_per_addr = (unsigned)n;
			break;
		case O_POOL:
			if (parse_uint("--pool", optarg, 4096, &n) < 0)
				return -1;
			o->pool = (unsigned)n;
			break;
		case O_SPAWNERS:
			if (parse_uint("--spawners", optarg, 4, &n) < 0)
				return -1;
			o->spawners = (int)n;
			break;
		case O_HDR:
			if (parse_secs("--header-timeout", optarg, &o->header_timeout) < 0)
				return -1;
			break;
		case O_REQ:
			if (parse_secs("--request-timeout", optarg, &o->request_timeout) < 0)
				return -1;
			break;
		case O_DRAIN:
			if (parse_secs("--drain-timeout", optarg, &o->drain_timeout) < 0)
				return -1;
			break;
		case O_LOG: o->log_path = optarg; break;
		case O_HELP:
		case 'h': usage(stdout); return 1;
		default:
			if (ch >= O_MAX0 && ch < O_MAX0 + LIM__COUNT) {
				if (parse_max(ch - O_MAX0, optarg, &o->max) < 0)
					return -1;
				max_cpu_given |= ch - O_MAX0 == LIM_CPU;
				break;
			}
			fprintf(stderr, "ward serve: unknown or incomplete option '%s' (see ward serve --help)\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (!max_cpu_given)
		o->max.cpu_s = o->max.timeout_s;
	if (check_budgets(o) < 0)
		return -1;
	if (o->pool && o->isolation != WARD_ISO_SYSTEM) {
		fprintf(stderr, "ward serve: --pool builds system-level sandboxes; it needs --isolation system\n");
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "ward serve: unexpected argument '%s' (see ward serve --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}

static int load_tokens(struct server *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		fprintf(stderr, "ward serve: --token-file %s: %s\n", path, strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *p = line, *fields[3];
		int nf = 0;
		char *save = NULL;
		for (char *w = strtok_r(p, " \t\r\n", &save); w && nf < 3; w = strtok_r(NULL, " \t\r\n", &save))
			fields[nf++] = w;
		if (nf == 0 || fields[0][0] == '#')
			continue;
		if (nf == 3 || s->ntokens == MAX_TOKENS) {
			fprintf(stderr, "ward serve: --token-file %s: each line is TOKEN or NAME TOKEN, at most %d lines\n",
				path, MAX_TOKENS);
			rc = -1;
			break;
		}
		if (nf == 2 && strlen(fields[0]) > 64) {
			fprintf(stderr, "ward serve: --token-file %s: the name '%.20s...' is longer than 64 characters; "
					"shorten it (quotas and the log go by it)\n", path, fields[0]);
			rc = -1;
			break;
		}
		struct token *t = &s->tokens[s->ntokens];
		char dflt[32];
		snprintf(dflt, sizeof(dflt), "token-%zu", s->ntokens + 1);
		t->name = strdup(nf == 2 ? fields[0] : dflt);
		t->secret = strdup(fields[nf - 1]);
		if (!t->name || !t->secret) {
			free(t->name);
			free(t->secret);
			rc = -1;
			break;
		}
		t->len = strlen(t->secret);
		s->ntokens++;
	}
	free(line);
	fclose(f);
	if (rc == 0 && s->ntokens == 0) {
		fprintf(stderr, "ward serve: --token-file %s holds no token\n", path);
		rc = -1;
	}
	return rc;
}

static int open_roots(struct server *s)
{
	for (size_t i = 0; i < s->o.nroots; i++) {
		char *real = realpath(s->o.roots[i], NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "ward serve: --allow-root %s: %s\n", s->o.roots[i],
				real ? "not a directory" : strerror(errno));
			free(real);
			return -1;
		}
		int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "ward serve: --allow-root %s: %s\n", real, strerror(errno));
			free(real);
			return -1;
		}
		s->roots[s->nroots++] = (struct root){.path = real, .len = strlen(real), .fd = fd};
	}
	return 0;
}

/* The listening socket, made here (CLOEXEC, our choice of address family)
 * and handed to MHD. */
static int make_listener(const char *spec, char *bound, size_t boundlen)
{
	char host[128];
	const char *port;
	if (spec[0] == '[') {
		const char *close_br = strchr(spec, ']');
		if (!close_br || close_br[1] != ':')
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(close_br - spec - 1), spec + 1);
		port = close_br + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon)
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int e = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (e) {
		fprintf(stderr, "ward serve: --listen %s: %s\n", spec, gai_strerror(e));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 511) < 0) {
		fprintf(stderr, "ward serve: cannot listen on %s: %s\n", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[64] = "?", p[16] = "?";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(bound, boundlen, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, p);
	return fd;
bad:
	fprintf(stderr, "ward serve: --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:8900 or [::1]:8900\n", spec);
	return -1;
}

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t w = write(sigpipe_fds[1], &b, 1);
	(void)w;
	errno = saved;
}

static void server_free(struct server *s)
{
	for (size_t i = 0; i < s->ntokens; i++) {
		/* the secret should not linger in freed memory */
		explicit_bzero(s->tokens[i].secret, s->tokens[i].len);
		free(s->tokens[i].secret);
		free(s->tokens[i].name);
	}
	for (size_t i = 0; i < s->nroots; i++) {
		free(s->roots[i].path);
		close(s->roots[i].fd);
	}
	for (unsigned i = 0; i < CLIENT_BUCKETS; i++)
		while (s->clients[i]) {
			struct client *c = s->clients[i];
			s->clients[i] = c->next;
			while (c->subs) {
				struct client *u = c->subs;
				c->subs = u->next;
				free(u);
			}
			free(c);
		}
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		while (s->peers[i]) { /* only if MHD never stopped: it closes every connection */
			struct peer *p = s->peers[i];
			s->peers[i] = p->next;
			free(p);
		}
	free(s->workers);
	ward_pool_free(s->pool);
	if (s->log_fd >= 0)
		close(s->log_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_mutex_destroy(&s->log_lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
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

int ward_serve_main(int argc, char **argv)
{
	struct server srv, *s = &srv;
	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->log_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->conn_lock, NULL);
	pthread_mutex_init(&s->log_lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->idle, NULL);
	int rc = WARD_EXIT_FAILED;

	int p = parse_opts(&s->o, argc, argv);
	if (p != 0) {
		rc = p > 0 ? 0 : WARD_EXIT_FAILED;
		goto out;
	}
	/* The helpers that clone sandboxes are forked now, while the server is
	 * one thread and small, and before it holds its tokens. */
	/* `ward` passes its own (lean, static) binary for them to exec. */
	int exe_fd = -1;
	const char *exe = getenv(WARD_SPAWNER_EXE_ENV);
	if (exe) {
		char *end;
		long fd = strtol(exe, &end, 10);
		if (!*end && end != exe && fd > 2 && fd < 65536 && fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0)
			exe_fd = (int)fd;
		unsetenv(WARD_SPAWNER_EXE_ENV);
	}
	if (s->o.spawners != 0) {
		char serr[256];
		if (ward_spawner_start(s->o.spawners < 0 ? 0 : (unsigned)s->o.spawners, exe_fd, serr, sizeof(serr)) < 0)
			fprintf(stderr, "ward serve: %s; the server clones sandboxes itself\n", serr);
	}
	if (exe_fd >= 0)
		close(exe_fd);
	if (s->o.token_file && load_tokens(s, s->o.token_file) < 0)
		goto out;
	if (open_roots(s) < 0)
		goto out;
	s->log_fd = open_log(s->o.log_path);
	if (s->log_fd < 0) {
		fprintf(stderr, "ward serve: --log %s: %s\n", s->o.log_path ? s->o.log_path : "(stderr)", strerror(errno));
		goto out;
	}
	char bound[160];
	s->listen_fd = make_listener(s->o.listen, bound, sizeof(bound));
	if (s->listen_fd < 0)
		goto out;

	if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "ward serve: pipe: %s\n", strerror(errno));
		goto out;
	}
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	/* a probe first, so that /health is right from the first request */
	s->healthy = false;
	snprintf(s->health_reason, sizeof(s->health_reason), "not probed yet");
	probe(s);
	double next_probe = now_mono() + (s->healthy ? PROBE_OK_INTERVAL : PROBE_BAD_INTERVAL);

	/* Sandboxes built ahead: without them (the host cannot make them now)
	 * each request builds its own and reports why when that fails. */
	if (s->o.pool) {
		char perr[512];
		s->pool = ward_pool_new(s->o.pool, WARD_NET_NONE, perr, sizeof(perr));
		if (!s->pool)
			log_event(s, "pool-unavailable", "%s", perr);
	}

	s->workers = calloc(s->o.max_concurrent, sizeof(pthread_t));
	if (!s->workers)
		goto out;
	for (; s->nworkers < s->o.max_concurrent; s->nworkers++) {
		int e = pthread_create(&s->workers[s->nworkers], NULL, worker_main, s);
		if (e) {
			fprintf(stderr, "ward serve: cannot start worker threads: %s\n", strerror(e));
			goto stop_workers;
		}
	}

	unsigned timeout = (unsigned)ceil(fmax(s->o.header_timeout, s->o.request_timeout)) + 5;
	s->d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL,
				NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
				MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections,
				MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, MHD_OPTION_END);
	if (!s->d) {
		fprintf(stderr, "ward serve: cannot start the HTTP server on %s\n", bound);
		goto stop_workers;
	}
	log_event(s, "listening", "%s max_concurrent=%u queue=%u isolation=%s pool=%u healthy=%s", bound,
		  s->o.max_concurrent, s->o.queue, ward_isolation_name(s->o.isolation), s->pool ? s->o.pool : 0,
		  s->healthy ? "yes" : "no");

	uint64_t cuts_logged[2] = {0, 0};
	for (;;) {
		struct pollfd pfd = {.fd = sigpipe_fds[0], .events = POLLIN};
		poll(&pfd, 1, 1000);
		unsigned char sig = 0, b;
		while (read(sigpipe_fds[0], &b, 1) == 1)
			if (b != SIGHUP || !sig)
				sig = b;
		if (sig == SIGHUP) {
			int fd = open_log(s->o.log_path);
			if (fd >= 0) {
				pthread_mutex_lock(&s->log_lock);
				close(s->log_fd);
				s->log_fd = fd;
				pthread_mutex_unlock(&s->log_lock);
				log_event(s, "log-reopened", "%s", s->o.log_path ? s->o.log_path : "stderr");
			} else
				log_event(s, "log-reopen-failed", "%s: %s", s->o.log_path, strerror(errno));
		} else if (sig == SIGTERM || sig == SIGINT)
			break;
		sweep(s);
		log_cuts(s, cuts_logged);
		unsigned healed = ward_spawner_heal();
		if (healed)
			log_event(s, "spawner-restarted", "%u helper%s found dead, replaced", healed, healed > 1 ? "s" : "");
		if (now_mono() >= next_probe) {
			probe(s);
			next_probe = now_mono() + (s->healthy ? PROBE_OK_INTERVAL : PROBE_BAD_INTERVAL);
		}
	}

	/* SIGTERM: no new connections; queued and running requests finish and
	 * their answers go out, up to --drain-timeout. */
	pthread_mutex_lock(&s->lock);
	s->draining = true;
	unsigned busy = s->queued + s->running;
	pthread_mutex_unlock(&s->lock);
	log_event(s, "draining", "%u requests queued or running; waiting up to %g s", busy, s->o.drain_timeout);
	int lfd = MHD_quiesce_daemon(s->d);
	if (lfd >= 0)
		close(lfd);
	s->listen_fd = -1;
	bool drained = drain(s, now_mono() + s->o.drain_timeout);
	if (!drained) {
		/* out of time: cancel what still runs (each sandbox is killed and
		 * cleaned up, its client gets a "cancelled" error) and give the
		 * answers a moment to go out */
		s->cancel = 1;
		log_event(s, "cancelling", "drain timed out: cancelling the runs still going");
		drained = drain(s, now_mono() + 5);
	}
	if (!drained) {
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
	rc = 0;
stop_workers:
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	if (s->d) {
		MHD_stop_daemon(s->d);
		s->listen_fd = -1; /* quiesced and closed above */
		log_event(s, "stopped", "drained");
	}
out:
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	for (int i = 0; i < 2; i++)
		if (sigpipe_fds[i] >= 0) {
			close(sigpipe_fds[i]);
			sigpipe_fds[i] = -1;
		}
	server_free(s);
	ward_spawner_stop();
	return rc;
}
