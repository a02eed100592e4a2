/* server.h — what the parts of `ward serve` share: the server's context
 * (struct server), one HTTP request (struct req), an endpoint of the
 * routing table (struct route), and each part's functions.  The one header
 * of src/server/; nothing outside src/server/ includes it (the rest of ward
 * sees ward_serve_main in server/serve.h) but the dialects above it
 * (src/dialect/, registered through struct dialect), which make and use its sessions.
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
 * The parts, each a file; each calls only those below it (the workers
 * reach a route's run through the routing table):
 *   serve.c      ward_serve_main: start-up, the main thread's loop, signals, drain
 *   http.c       libmicrohttpd: the listening socket, a request's life, sending answers
 *   routes.c     the routing table: path pattern + method -> handler
 *   listeners.c  more listeners beside --listen, each speaking another API
 *                (a dialect: src/dialect/) with its own route table, on the
 *                same engine, tokens, admission, quotas and maxima
 *   session_api.c the session endpoints (SPEC §11): a libward call each, on a
 *                worker; output follow streams sent by the I/O threads
 *   session_json.c their wire shapes
 *   sessions.c   the sessions held: table, owners, counts, refs, expiry, stop
 *   exec.c       POST /exec and POST /test: decode and check, run on a worker
 *   stream.c     a run's answer streamed as it runs (SPEC §12): its output
 *                watched through a socket pair, sent by the I/O threads
 *   health.c     the backend probe and GET /health
 *   metrics.c    GET /metrics and the counters it shows
 *   workers.c    the worker threads that run admitted requests
 *   admission.c  admission, the queue, client quotas, the memory budgets
 *   conns.c      connection records: deadlines, per-address limits, cuts
 *   auth.c       tokens: the token file and the Authorization header
 *   paths.c      --allow-root and the host paths a request names
 *   answer.c     a request's answer (code, body, error message)
 *   config.c     options, defaults, --help
 *   log.c        the log and the clock
 *
 * Locks: s->lock (queue, counts, clients, metrics, health), s->conn_lock
 * (connection records), s->log_lock (the log's fd), s->sess_lock (the
 * sessions), s->park_lock (parked streams, park_wake), each struct live's lock.  conn_lock may be taken
 * inside lock (admission trusts a connection), never the other way;
 * sess_lock and park_lock are taken alone, and no libward call but
 * ward_session_alive runs under sess_lock. */
#ifndef WARD_SERVER_H
#define WARD_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/egress.h"
#include "ward.h"
#include "ward_judge.h"
#include "wire/wire.h"

#define MAX_ROOTS 32
#define MAX_TOKENS 256
#define MAX_IMAGES 32
#define CLIENT_BUCKETS 256
#define PEER_BUCKETS 1024
#define PROBE_OK_INTERVAL 30.0
#define PROBE_BAD_INTERVAL 5.0
#define NBUCKETS 14 /* the run duration histogram's buckets (metrics.c), +Inf apart */

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
	struct ward_limits defaults; /* what a request that names no limit gets: SPEC §2's, under max */
	const char *log_path;
	enum ward_isolation isolation;
	unsigned client_concurrency;                    /* 0 = unlimited */
	unsigned client_rate;                           /* runs per minute, 0 = unlimited */
	unsigned subclient_concurrency, subclient_rate; /* the same per X-Ward-Client name within a client */
	unsigned max_connections;
	unsigned max_conns_per_addr; /* pending connections per address, 0 = unlimited */
	unsigned pool;               /* sandboxes built ahead, 0 = none */
	int spawners;                /* helper processes that clone sandboxes; -1 = auto, 0 = none */
	double header_timeout, request_timeout, drain_timeout;
	/* sessions (SPEC §11, §10) */
	unsigned max_sessions, client_sessions;
	double session_max_ttl, session_max_idle;
	size_t max_work_size;        /* MB */
	double session_call_timeout; /* one files or stdin call's deadline, in all */
	size_t max_answer_client;    /* answers one client holds unread at once (0: a quarter of the total) */
	size_t session_bg_output;    /* what one session's background records may hold */
	size_t max_bg_output_total;  /* ... every session's together */
	char node_id[64];            /* [A-Za-z0-9_-]{1,63}: the prefix of session ids */
	bool favor_dynmods;          /* --favor-dynmods */
	/* egress (SPEC §13): --egress-allow, the ceiling (none: no egress),
	 * and --egress-resolve pins; egress.allow / resolve point here */
	const char *egress_allow[EGRESS_MAX_PATTERNS], *egress_resolve[EGRESS_MAX_PATTERNS];
	struct egress_policy egress;
	/* images (SPEC §14): --image NAME (repeatable), --image-store DIR */
	const char *images[MAX_IMAGES];
	size_t nimages;
	const char *image_store;
	/* languages and judging (SPEC §15) */
	const char *languages_file; /* --languages FILE, or NULL: the installed table */
	unsigned max_tests, max_parallel;
	size_t max_test_bytes;
	char e2b_listen[128];   /* --e2b ADDR:PORT, or "" (SPEC §17) */
	double e2b_cpu_s;       /* --e2b-cpu S: a sandbox's CPU budget (0: its timeout) */
	const char *e2b_domain; /* --e2b-domain D, or NULL: localhost:<port> */
	/* E2B templates (SPEC §19): --e2b-base NAME=IMAGE (repeatable), the
	 * builds' egress (--e2b-build-egress HOSTS, comma-separated; NULL: none) */
	const char *e2b_bases[MAX_IMAGES];
	size_t ne2b_bases;
	const char *e2b_build_egress;
	unsigned e2b_memory_mb, e2b_pids, e2b_disk_mb; /* an E2B sandbox's sizes (SPEC §18), within the maxima */
	const char *e2b_state;       /* --e2b-state DIR: paused sandboxes' files (NULL: /var/lib/ward/e2b) */
	unsigned e2b_max_paused;     /* --e2b-max-paused N (0: 64) */
	unsigned e2b_max_sockets;    /* --e2b-max-sockets N: connections to a sandbox's ports (0: 32) */
	unsigned e2b_key_sockets;    /* --e2b-key-sockets N: ... to one key's sandboxes' (0: half the cap in all) */
	size_t e2b_paused_bytes;     /* --e2b-paused-bytes B: their files in all (0: 4 GiB) */
	unsigned e2b_max_snapshots;  /* --e2b-max-snapshots N per API key (0: 10) */
	size_t e2b_snapshot_bytes;   /* --e2b-snapshot-bytes B: their homes' files per API key (0: 4 GiB) */
	size_t e2b_port_bytes;       /* --e2b-port-bytes B: a sandbox's relayed bytes (0: WARD_SESSION_NET_BYTES) */
	const char *e2b_volumes;     /* --e2b-volumes DIR: E2B volumes (NULL: none) */
	size_t e2b_volume_max_bytes; /* --e2b-volume-max-bytes B: each one's size (0: 1 GiB) */
	unsigned e2b_max_volumes;    /* --e2b-max-volumes N per API key (0: 16) */
	/* dialects (SPEC §16): --piston ADDR, --judge0 ADDR ("" none), and theirs */
	char piston_listen[128], judge0_listen[128];
	int piston_version_fallback;  /* 0 none, 1 major, 2 any */
	double judge0_keep;           /* --judge0-keep S */
	unsigned judge0_max_queue;    /* --judge0-max-queue N: submissions waiting (queued or running) */
	unsigned judge0_client_queue; /* --judge0-client-queue N: ... of one client */
	unsigned judge0_max_kept;     /* --judge0-max-kept N: finished submissions kept */
	char piston_client[64];       /* --piston-client NAME: who a request on --piston with no token is, or "" */
	const char *judge0_callback_allow[EGRESS_MAX_PATTERNS]; /* --judge0-callback-allow HOST */
	size_t njudge0_callback_allow;
	bool judge0_additional_files; /* --judge0-additional-files on|off (default on) */
	unsigned judge0_max_runs;     /* --judge0-max-runs N: number_of_runs at most (20) */
	char mcp_listen[128];         /* --mcp ADDR: MCP's streamable HTTP (SPEC §21), or "" */
};

/* An image the runner offers: its root prepared once (images.c). */
struct offered_image {
	const char *name;
	struct ward_image_root *root;
	struct ward_pool *pool; /* --pool: sandboxes on it built ahead, or NULL */
};

struct token {
	char *name;
	char *secret;
	size_t len;
};

struct root {
	char *path; /* realpath of --allow-root */
	size_t len;
	int fd; /* O_PATH, the anchor of RESOLVE_BENEATH */
};

/* A host path of a request, opened when it was checked against the
 * --allow-root: the run binds exactly that directory, whatever is renamed
 * or swapped for a symlink in between (see ward.h, "/proc/self/fd/N"). */
struct held {
	int fd;
	char path[40];
};

struct client;   /* a client's quota state (admission.c) */
struct follow;   /* a follow stream (session_api.c) */
struct live;     /* a run's streamed answer (stream.c) */
struct conn_rec; /* one TCP connection (conns.c) */
struct peer;     /* an address that holds pending connections (conns.c) */
struct req;
struct server;

/* Bytes of answers held until their client takes them: in the answer
 * budget (--max-answer-total) and the client's share of it
 * (--max-answer-client) (admission.c). */
struct answer_hold {
	struct client *cl; /* NULL: the total alone */
	size_t bytes;
};

/* One endpoint.  A GET endpoint answers at once on the I/O thread; a POST
 * endpoint has its whole body read, then prepare (when set) decodes and
 * checks it, admission queues it, and run makes its answer on a worker. */
struct route {
	const char *path;   /* matched whole; "{id}" a session id, "{pid}" a
			     * number, "{path}" the rest (after a '/', or none) */
	const char *method; /* "GET" (HEAD too), "POST", "PUT" or "DELETE" */
	const char *allow;  /* the Allow header of a 405 */
	bool open;          /* answered without a token */
	bool raw;           /* the body is bytes, not JSON */
	bool streams;       /* answers as a stream when the client asks (SPEC §12, stream.c) */
	bool light;         /* its run makes no sandbox: a free worker takes it even when every slot is used */
	bool unmetered;     /* not a run of its client's: --client-rate does not count it (--client-concurrency
			     * does: it holds a worker while it runs) */
	void (*answer)(struct server *s, struct req *r);  /* at once, on the I/O thread */
	bool (*prepare)(struct server *s, struct req *r); /* with the body: false when it set the answer (an error,
							    * or all of a call that never waits) */
	void (*run)(struct req *r);                       /* on a worker thread */
	/* A body streamed, never held (an upload into a sandbox, a relay):
	 * each piece as it comes (on the I/O thread, after prepare_feed, the
	 * route's token and the API's choice are checked), bounded by where it
	 * goes rather than by --max-body; false stops reading (the answer
	 * set).  *n in: the piece's length; out: what it took (less: it
	 * suspended the connection, the rest comes again when it is resumed).
	 * The body's end goes on as any body's: prepare, admission, run. */
	bool (*feed)(struct req *r, const char *p, size_t *n);
	/* An open route's credentials checked when the headers are in, before
	 * any body is read or held: false when it set the answer (a 401). */
	bool (*check)(struct server *s, struct req *r);
};

/* An API a listener speaks: the native one (routes.c) or a dialect's
 * (src/dialect/NAME/, above the server: it uses this header, nothing
 * below includes it).  Its routes go through the same request life as the
 * native ones (http.c): token, body within --max-body(-total), admission,
 * a worker.  Only the shapes differ, through these hooks. */
struct api {
	const char *name; /* "piston": its option is --NAME ADDR, its log lines say so */
	const struct route *routes;
	size_t nroutes;
	char *(*error_json)(const char *msg); /* the API's error body (malloc'd); NULL: ward's {"error": msg} */
	/* Its errors' answers, made from r->message (E2B's: the status in the
	 * body; a Connect stream's in an end-stream frame); NULL: error_json's. */
	void (*error)(struct req *r, unsigned code);
	/* The token a request carries in this API's way (a pointer into the
	 * connection's values), or NULL; NULL hook: Authorization: Bearer. */
	const char *(*token)(struct MHD_Connection *c);
	const char *token_hint; /* how its clients send a token, for the 401; NULL: Authorization: Bearer */
	void (*not_found)(struct server *s, struct req *r); /* its 404; NULL: ward's */
	/* Headers of its own on an answer (MCP's Mcp-Session-Id); NULL: none. */
	void (*headers)(struct req *r, struct MHD_Response *resp);
	/* Its own route choice, when the path alone does not tell (E2B: a
	 * header or the Host names a sandbox's port); NULL: the table's.
	 * Sets r->allow for a 405 as route_find_in does. */
	const struct route *(*choose)(struct req *r, const char *url, const char *method);
	/* Its part of a request, freed with it (r->ext's own references); NULL: free(r->ext). */
	void (*release)(struct req *r);
	bool uri;           /* r->uri: the request line's URI as sent, its query too */
	double keepalive_s; /* its streams say something at least this often (MHD's idle timeout) */
	/* a body over --max-body is read to its end (dropped, within the
	 * request timeout) before the 413: clients that cannot read an answer
	 * while they send (fetch) see the 413, not a reset */
	bool drain_refused;
	/* its answers may switch protocols (a 101 made with
	 * MHD_create_response_for_upgrade: E2B's WebSockets to a sandbox's
	 * port): the daemon allows upgrades, and closing (if not NULL) closes
	 * every upgraded connection when the server drains (their requests
	 * would hold the drain) and again before the listener stops */
	bool upgrade;
	void (*closing)(struct server *s, void *state);
	/* State of its own: start before the listener opens (-1: a message
	 * on stderr), tick once a second on the main thread, stop after the
	 * listener and the workers have stopped.  Any may be NULL. */
	int (*start)(struct server *s, void **state);
	void (*tick)(struct server *s, void *state);
	void (*stop)(struct server *s, void *state);
	/* Its lines of GET /metrics (Prometheus text, malloc'd; NULL: none),
	 * from any thread while it runs. */
	char *(*metrics)(struct server *s, void *state);
};

/* A dialect the server can speak (src/dialect/NAME/, SPEC §16, §17, §21):
 * registered, not included.  The front end that starts the server hands
 * ward_serve_main their table (src/front/dialects.c); the server calls
 * only these hooks, so nothing in src/server/ names a dialect.  Any hook
 * may be NULL. */
struct dialect {
	const char *name;
	/* Its listeners (listener_add) when its options name an address;
	 * before listeners_open.  -1 with a message on stderr. */
	int (*add)(struct server *s);
};

/* A listener beside --listen (listeners.c). */
#define MAX_LISTENERS 8
struct listener {
	const struct api *api;
	struct server *s;
	char addr[128];  /* the option's ADDR:PORT */
	char bound[160]; /* what it listens on */
	int fd;
	struct MHD_Daemon *d;
	void *state;        /* the api's (start/stop) */
	const char *client; /* a request with no token is this client (--piston-client), or NULL */
	bool started;
};

/* What a path pattern's parts matched (route_find). */
struct route_args {
	char sid[100];    /* {id}: at most 99 bytes, else no match */
	int pid;          /* {pid} */
	char fpath[4096]; /* {path}, as decoded, or "" */
	int sig;          /* a signal body's signal (session_api.c) */
};

/* A session (sessions.c).  Fields but refs, execs, idle_end and the links
 * are set once, before it enters the table. */
struct sess {
	char id[100];   /* NODEID "." 32 hex */
	char owner[96]; /* the client that made it (req.who) */
	struct ward_session *ws;
	double created_rt; /* CLOCK_REALTIME */
	double ttl_s, idle_s;
	double end, idle_end; /* now_mono() deadlines */
	unsigned refs;        /* calls holding it */
	uint64_t execs;
	bool retired;                /* out of the table: deleted, expired or the server stops */
	bool paused;                 /* frozen by POST .../pause: its ttl and idle clocks stop */
	double paused_at, pause_end; /* now_mono(): since when, and killed then if still paused */
	double hard_end;             /* now_mono(): its end however it is paused and resumed: made +
			    * --session-max-ttl (only sess_set_end, E2B's setTimeout, moves it) */
	char *recipe;                /* its creating body without files (to fork it), or NULL */
	volatile int cancel;         /* its execs' cancel: set when it ends */
	struct sess *next;
};

struct sess_metrics {
	uint64_t created, expired, deleted;
	uint64_t execs[WARD_ST_ERROR + 1];
};

enum rstate { S_NEW, S_BODY, S_WAIT, S_STREAM, S_READY, S_ANSWERED };

/* A connection parked (suspended) by its answer's callback, which had
 * nothing to send: the ticker resumes it (session_api.c) at its next tick,
 * or as soon as fd (when >= 0) has something to read. */
struct park {
	struct MHD_Connection *conn;
	int fd;
	bool ready; /* fd had something: resume it now */
	struct park *next;
};

/* One HTTP request. */
struct req {
	struct server *srv;
	struct listener *ln; /* the listener it came on, NULL: --listen (the native API) */
	struct MHD_Connection *conn;
	const struct route *route; /* NULL: no such endpoint */
	const char *allow;         /* no route: the methods its path takes (a 405), or NULL (a 404) */
	bool truncated;            /* the answer is a listing cut short: X-Ward-Truncated: 1 */
	bool close;                /* its answer ends the connection: Connection: close (http.c's framing) */
	enum rstate state;
	double t_start, t_admit;
	char client[176]; /* who, or who/sub: the log's name */
	char who[96];     /* the quota's client: token name or address */
	char sub[72];     /* X-Ward-Client, sanitized, or "" */
	char method[16];
	char path[128];
	char *body;
	size_t len, cap;
	struct client *cl, *subcl; /* hold an active count while queued/running */
	struct answer_hold
		answer; /* resp, counted in the answer budget and its client's share until the request ends */
	struct ward_request_doc doc;
	bool have_doc;
	size_t doc_bytes;            /* what doc holds, counted in body_bytes */
	struct route_args args;      /* the route's {id}, {pid}, {path} */
	struct sess *sess;           /* the session it names, held (sessions.c), or NULL */
	struct MHD_Response *stream; /* an answer made as it is sent (a follow, a run's stream), or NULL */
	struct live *live;           /* the run's output is streamed (stream.c), or NULL */
	struct held *held;           /* host paths checked against --allow-root, held open */
	size_t nheld;
	/* the answer, filled by the handler or a worker */
	unsigned code;
	char *resp;
	size_t resp_len; /* resp's length when it is bytes (0: strlen) */
	const char *ctype;
	void *ext;                  /* a route's decoded extras (free(), or the api's release) */
	char *uri;                  /* the request line's URI (its api's uri), or NULL */
	const volatile int *cancel; /* its run's cancel when not the server's (an MCP call's), or NULL */
	/* set by a run whose answer another thread makes (a relay's, when its
	 * upstream answers): the worker lets go of r (its slot and quotas),
	 * then calls it, its last touch of r; that thread then req_answer()s */
	void (*handoff)(struct req *r);
	unsigned retry_after;
	const char *sandbox_status;
	char message[600]; /* logged error detail */
	struct req *qnext;
};

struct metrics {
	uint64_t runs[WARD_ST_ERROR + 1][2]; /* [status][isolation] */
	uint64_t buckets[NBUCKETS + 1];
	double sum;
	uint64_t count;
	uint64_t rejected_busy, rejected_client_conc, rejected_client_rate, rejected_unhealthy;
	uint64_t http[600];
	uint64_t egress_allowed, egress_refused; /* connections through the egress proxies */
	uint64_t streamed;                       /* runs answered as a stream */
	uint64_t judge_compiles;                 /* compile steps of judge jobs (POST /judge, the dialects) */
	uint64_t judge_tests;                    /* tests of judge jobs that ran (not skipped) */
};

/* The server's context: the only mutable state of `ward serve` (but the
 * signal self-pipe, serve.c). */
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
	struct ward_pool *pool; /* --pool, or NULL */
	char health_reason[600];

	pthread_mutex_t conn_lock; /* the connection records, peers and their counts */
	struct conn_rec *conns;
	struct conn_rec *pend_oldest, *pend_newest;
	struct peer *peers[PEER_BUCKETS];
	unsigned nlive, npending;    /* connections not cut; pending ones among them */
	uint64_t cut_addr, cut_full; /* pending connections cut for room */

	pthread_mutex_t log_lock;
	int log_fd;

	pthread_mutex_t
		sess_lock;        /* sessions, making, dying, nsessions, nmaking, sm, each sess's refs/execs/idle_end */
	pthread_cond_t sess_cond; /* a session's refs dropped */
	struct sess *sessions, *making, *dying;
	unsigned nsessions, nmaking;
	struct sess_metrics sm;
	pthread_mutex_t park_lock; /* parked, ticker_stop */
	struct park *parked;       /* streams with nothing to send, suspended */
	int park_wake;             /* eventfd: a stream was parked (the ticker watches its fd) */
	double tick_s;             /* how often every parked stream looks again (session_api.c) */
	bool ticker_stop, ticker_started;
	pthread_t ticker;

	size_t body_bytes;            /* request bodies and decoded requests held now (atomic); --max-body-total */
	size_t answer_bytes;          /* encoded answers held until sent (atomic); --max-answer-total */
	struct ward_budget bg_output; /* sessions' background records (libward's, atomic); --max-bg-output-total */
	struct offered_image images[MAX_IMAGES]; /* opened at start, read-only after */
	size_t nimages;
	struct ward_languages langs;              /* loaded and probed at start, read-only after */
	unsigned borrowed;                        /* slots a judge's parallel tests hold beside their own (s->lock) */
	const struct dialect *const *dialects;    /* NULL-terminated: those ward_serve_main was given */
	struct listener listeners[MAX_LISTENERS]; /* beside --listen (listeners.c) */
	size_t nlisteners;
};

/* config.c */
int parse_opts(struct serve_opts *o, int argc, char **argv);

/* log.c */
double now_mono(void);
void rfc3339(char *buf, size_t n);
int log_start(struct server *s);
void log_reopen(struct server *s);
void log_write(struct server *s, const struct ward_log_entry *e);
void log_event(struct server *s, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void log_mhd(void *cls, const char *fmt, va_list ap);

/* answer.c */
void set_answer(struct req *r, unsigned code, char *body, const char *ctype);
void set_answer_bytes(struct req *r, unsigned code, char *body, size_t len, const char *ctype);
void set_error(struct req *r, unsigned code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* auth.c */
int load_tokens(struct server *s, const char *path);
const struct token *authorize(struct server *s, struct MHD_Connection *c);
const struct token *token_find(struct server *s, const char *secret);
void tokens_free(struct server *s);

/* paths.c */
int open_roots(struct server *s);
bool hold_paths(struct server *s, struct req *r);
void held_release(struct req *r);
void roots_free(struct server *s);

/* conns.c */
void addr_key(const struct sockaddr *sa, char *buf, size_t n);
void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode code);
void conn_set_deadline(struct server *s, struct MHD_Connection *c, double deadline);
void conn_trust(struct server *s, struct MHD_Connection *c);
void conn_idle(struct server *s, struct MHD_Connection *c);
/* Whether the client closed (or reset) c: for a stream parked on a silent
 * source, which reads and writes nothing that would tell. */
bool conn_client_gone(struct MHD_Connection *c);
const char *conn_cut_reason(struct server *s, struct MHD_Connection *c);
void sweep(struct server *s);
void log_cuts(struct server *s, uint64_t logged[2]);
void conns_free(struct server *s);

/* admission.c */
bool body_reserve(struct server *s, size_t more);
void body_release(struct server *s, struct req *r);
void hold_answer(struct server *s, struct req *r);
/* The answer was sent (or its connection ended): its bytes leave the budget and its client's share. */
void answer_done(struct server *s, struct req *r);
/* n more bytes held for client who into h: 0, or -1 (the total is full) /
 * -2 (its share is): answer_hold_error says which, as a 503's message. */
int answer_hold(struct server *s, const char *who, size_t n, struct answer_hold *h);
void answer_unhold(struct server *s, struct answer_hold *h, size_t n);
void answer_hold_error(struct server *s, int why, size_t n, char *msg, size_t len);
bool answer_reserve(struct server *s, size_t n);
void answer_release(struct server *s, size_t n);
bool admit_healthy(struct server *s, struct req *r);
bool admit_and_queue(struct server *s, struct req *r);
struct req *queue_take(struct server *s);
void queue_release(struct server *s, struct req *r);
void queue_done(struct server *s, struct req *r);
/* r's answer made by a thread of its route's own rather than a worker (a
 * relay waiting for its upstream, E2B's ports): from the I/O thread, in
 * its prepare (which then returns false), its connection suspended and
 * counted as answering (the drain waits for it) with no deadline (that
 * thread keeps its own); a worker's run hands r on with r->handoff.
 * req_answer, from that thread, sends the answer set in r (resp, or
 * stream): r is the I/O thread's from then on. */
void req_defer(struct server *s, struct req *r);
void req_answer(struct server *s, struct req *r);
/* A judge's tests beside its own slot: up to want more of --max-concurrent
 * that neither a run nor a queued request needs now (never waiting); and
 * back. */
unsigned slots_borrow(struct server *s, unsigned want);
void slots_return(struct server *s, unsigned n);
void clients_free(struct server *s);

/* routes.c */
const struct route *route_find_in(const struct route *table, size_t n, const char *path, const char *method,
                                  struct route_args *a, const char **allow);

/* http.c */
/* MHD on an open listening socket for l (NULL: the native --listen, s->d). */
struct MHD_Daemon *http_daemon(struct server *s, struct listener *l, int fd, unsigned pool_threads);

/* listeners.c */
/* Add a listener of api on addr (nothing when addr is ""). */
int listener_add(struct server *s, const struct api *api, const char *addr);
int listeners_open(struct server *s);     /* their sockets and states: before the workers */
int listeners_start(struct server *s);    /* their MHD daemons: after http_start */
void listeners_quiesce(struct server *s); /* the drain: no new connections */
void listeners_tick(struct server *s);
void listeners_stop(struct server *s); /* after the workers */
void listeners_free(struct server *s); /* states and sockets, at the end */
int dialects_add(struct server *s);    /* each dialect's add: before listeners_open */

/* health.c */
void probe(struct server *s);
double probe_next(const struct server *s);
void answer_health(struct server *s, struct req *r);

/* judge_api.c */
int languages_start(struct server *s);
void languages_free(struct server *s);
void answer_languages(struct server *s, struct req *r);
void run_judge(struct req *r);
/* Run job on this thread (a worker's, or a dialect's runner holding a
 * slot) with the server's pool and cancel flag, its tests beside it on
 * slots borrowed from admission; counted in /metrics. */
void serve_judge(struct server *s, struct ward_judge_job *job, struct ward_judge_result *res);

/* metrics.c */
void metrics_count_run(struct server *s, enum ward_status status, enum ward_isolation iso, double secs);
/* A result's egress connections (SPEC §13): counted, and one log line
 * each (client, host, port, allowed or why not, bytes each way). */
void metrics_count_judge(struct server *s, const struct ward_judge_result *res);
void metrics_count_egress(struct server *s, const struct req *r, const struct ward_result *res);
void answer_metrics(struct server *s, struct req *r);
/* An answer sent with this status (0: none): ward_http_requests_total. */
void metrics_count_http(struct server *s, int code);

/* exec.c */
bool prepare_exec(struct server *s, struct req *r);
void run_exec(struct req *r);
void run_test(struct req *r);
void doc_release(struct req *r);

/* sessions.c */
/* The 404 of every session endpoint: the same for an unknown id, another
 * client's session, an expired or a deleted one. */
#define SESS_404 "no such session: it does not exist, has expired or was deleted (create one with POST /sessions)"
double now_real(void);
/* A place for a new session of owner within --max-sessions and
 * --client-sessions (sess_commit then makes it or gives it up); NULL with
 * code (429, 500) and msg.  sess_reserve: the same for r, its error set. */
struct sess *sess_place(struct server *s, const char *owner, unsigned *code, char *msg, size_t n);
struct sess *sess_reserve(struct server *s, struct req *r);
void sess_commit(struct server *s, struct sess *x, struct ward_session *ws, double ttl_s, double idle_s);
void sess_times(const struct sess *x, double *expires, double *idle_expires);
/* owner's session id, held (sess_unref after), or NULL: an unknown id,
 * another owner's, an expired one.  sess_find: r's, r->sess, else its 404. */
struct sess *sess_get(struct server *s, const char *owner, const char *id);
bool sess_find(struct server *s, struct req *r);
void sess_unref(struct server *s, struct sess *x);
void sess_release(struct req *r);
void sess_delete(struct server *s, struct req *r);
/* Delete x, held (the reference is dropped): now, or when its last call ends. */
void sess_drop(struct server *s, struct sess *x);
bool sess_retired(struct server *s, struct sess *x);
bool sess_busy(struct server *s, struct sess *x);
void sess_count_exec(struct server *s, struct sess *x, enum ward_status st);
/* x now ends ttl_s from now (and never idles out before): E2B's setTimeout. */
void sess_set_end(struct server *s, struct sess *x, double ttl_s);
void sessions_sweep(struct server *s);
void sessions_stop(struct server *s);
void sessions_cancel(struct server *s);
void answer_session_list(struct server *s, struct req *r);

/* session_api.c */
bool prepare_session_new(struct server *s, struct req *r);
void run_session_new(struct req *r);
bool prepare_session(struct server *s, struct req *r);
void run_session_info(struct req *r);
void run_session_delete(struct req *r);
bool prepare_session_exec(struct server *s, struct req *r);
void run_session_exec(struct req *r);
bool prepare_session_file(struct server *s, struct req *r);
void run_session_get_file(struct req *r);
void run_session_put_file(struct req *r);
void run_session_rm_file(struct req *r);
void run_session_procs(struct req *r);
bool prepare_proc_stdin(struct server *s, struct req *r);
bool prepare_proc_signal(struct server *s, struct req *r);
bool prepare_session_pause(struct server *s, struct req *r);
void run_session_pause(struct req *r);
void run_session_resume(struct req *r);
bool prepare_session_fork(struct server *s, struct req *r);
void run_session_fork(struct req *r);
/* Pause (freeze; its ttl and idle clocks stop; it ends timeout_s from now
 * if still paused; a paused one stays as it is) or resume session x; never
 * past x->hard_end. */
void sess_pause(struct server *s, struct sess *x, bool on, double timeout_s);
/* The session id of client owner, if alive: held (sess_unref drops it),
 * the call counted as activity; NULL else.  For a dialect that has no
 * struct req of ward's shape (E2B). */
struct sess *sess_get(struct server *s, const char *owner, const char *id);
/* Pause or resume the session id of client owner, as POST .../pause and
 * .../resume do: 0, or -errno with err set (-ENOENT: no such session of
 * that client; -EBUSY: an exec runs; -ENOTSUP: no freezer here). */
int sess_pause_by_id(struct server *s, const char *id, const char *owner, bool pause, double timeout_s, char *err,
                     size_t errlen);
void run_proc_signal(struct req *r);
void answer_proc_output(struct server *s, struct req *r);
bool conn_park(struct server *s, struct park *p);
int ticker_start(struct server *s);
void ticker_stop(struct server *s);

/* stream.c */
bool stream_want(struct server *s, struct req *r);
void stream_start(struct req *r, struct ward_request *q);
/* A stream of whole events (a judge's tests, SPEC §15): answered now;
 * stream_event adds one, from any thread (taking json). */
bool stream_start_events(struct req *r, double run_s);
/* The same, for a protocol whose answer is itself the last event (MCP's
 * JSON-RPC response, as "event: message"), sent as it is. */
bool stream_start_messages(struct req *r, double run_s);
void stream_event(struct req *r, const char *name, char *json, size_t len);
bool stream_started(const struct req *r);
/* Its connection ended while the run goes on (a run that does not watch
 * its output, such as a judge's or an MCP call's, is cancelled by its caller). */
bool stream_gone(struct req *r);
void stream_totals(struct req *r, const struct ward_stream *out, const struct ward_stream *err);
void stream_finish(struct server *s, struct req *r);
bool stream_orphan(struct req *r, enum MHD_RequestTerminationCode toe, const char *cut);
void stream_release(struct req *r);

/* routes.c */
const struct route *route_find(const char *path, const char *method, struct route_args *a, const char **allow);

/* images.c */
int images_open(struct server *s);
void images_close(struct server *s);
/* The offered image NAME (or NAME:latest) names, or NULL with err saying
 * which are offered. */
const struct ward_image_root *image_find(struct server *s, const char *name, char *err, size_t errlen);
/* q's "image" as one of the offered roots (q->image), or false with the 400 set. */
bool image_resolve(struct server *s, struct req *r, struct ward_request *q);
/* --pool: a pool of sandboxes per offered image (after the host's). */
void images_pools(struct server *s);
/* The pool for q: its image's, or the host's (either may be NULL). */
struct ward_pool *image_pool(struct server *s, const struct ward_request *q);
/* GET /health's answer (parsed) with "images": [{"name", "digest"}] added. */
struct json_t;
void images_health(struct server *s, struct json_t *health);

/* serve.c */
/* A server without HTTP (`ward mcp` over stdio, src/dialect/mcp/): the
 * options (argv[0] names the command), the log, roots, images and the
 * language table, as ward serve starts them; 1 after --help, -1 with a
 * message.  server_headless_end stops its sessions and frees it. */
int server_headless_start(struct server *s, int argc, char **argv);
void server_headless_end(struct server *s);

/* workers.c */
int workers_start(struct server *s);
void workers_stop(struct server *s);

/* http.c */
int make_listener(const char *spec, char *bound, size_t boundlen);
int http_start(struct server *s, const char *bound);
void req_finish(struct server *s, struct req *r, enum MHD_RequestTerminationCode toe, const char *cut, int code);
/* A request's log line (any listener's: E2B's too). */
struct log_req {
	const char *client, *method, *path;
	const char *cut; /* why the server cut its connection, or NULL */
	enum MHD_RequestTerminationCode toe;
	int code; /* 0: no answer was sent */
	double t_start;
	const char *sandbox_status;
};
void log_request(struct server *s, const struct log_req *l, char *message, size_t n);

#endif
