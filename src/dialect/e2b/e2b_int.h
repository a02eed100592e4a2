/* e2b_int.h — what the files of the E2B dialect share (SPEC §17).
 *
 * Process model.  The listener is one of the server's (struct api,
 * src/server/listeners.c, e2b_http.c): a request lives the native ones'
 * life (src/server/http.c): admission, deadlines, per-address and
 * per-client caps, the answer budget, the log; its handler runs on a
 * worker (but a relay to a sandbox's port, which waits on the dialect's
 * pump thread: e2b_ports.c, e2b_ws.c).  E2B's SDK holds one connection per open stream (a command's
 * output, a watch, a runCode): a stream's frames are made as they are sent
 * by the server's I/O threads, which never wait (cx_produce: with nothing
 * to say the connection is parked, and looked at again at the ticker's
 * next wake, 0.1 s).  Sessions themselves are the server's (sessions.c): made by
 * the dialect's maker threads (a session's PID 1 dies with the thread that
 * made it; these live as long as the server), counted against
 * --max-sessions / --client-sessions, looked up and held for each call,
 * expired by the server's sweep.
 *
 *   e2b_http.c     the API: its routes, route choice, tokens, error shape
 *   e2b_sandbox.c  the control plane and the sandbox records
 *   e2b_connect.c  Connect's JSON framing; process.Process
 *   e2b_fs.c       filesystem.Filesystem, GET /files, the path map
 *   e2b_upload.c   POST /files, streamed into the sandbox by a pump of its own
 *   e2b_interp.c   the code interpreter: contexts, a kernel each, /execute
 *   e2b_multipart.c a multipart/form-data body, parsed (bounded, fuzzed)
 *   e2b_life.c     pause, resume (connect, autoResume), autoPause, the state directory
 *   e2b_fork.c     fork: new sandboxes from a sandbox's files
 *   e2b_snapshot.c snapshots: a sandbox's files as an image of the store
 *   e2b_network.c  updateNetwork: its egress allow-list replaced live
 *   e2b_metrics.c  getMetrics: a sample of the sandbox's cgroup and disk
 *   e2b_templates.c the template build API, on `ward image build`
 *   e2b_volumes.c  volumes: the store, /volumes, volumeMounts (e2b_vol.h)
 *   e2b_volfiles.c the volume content API (/volumecontent/)
 *
 * Locks: e->lock (the records, each record's refs and contexts list),
 * each context's run lock (one execution at a time), e->mk_lock (the
 * maker's jobs).  No libward call runs under e->lock. */
#ifndef WARD_DIALECT_E2B_INT_H
#define WARD_DIALECT_E2B_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/workq.h"
#include "server/server.h"

#define E2B_ENVD_VERSION "0.5.6" /* multipart uploads only (research notes §4.5) */
#define E2B_HOME "/home/user"
#define E2B_MAKERS 2
#define E2B_METADATA_MAX 65536 /* a sandbox's metadata, as compact JSON: every list answer carries it */
#define E2B_MAX_CONTEXTS 8     /* code contexts (kernels) per sandbox */
#define E2B_KEEPALIVE_S 15.0
#define E2B_OUTPUT_KEPT \
	(1u             \
	 << 20) /* a process's output kept per stream while its stream lags */ /* a stream with nothing to say says keepalive this often */

/* A code context: one kernel process in the session (e2b_interp.c). */
struct e2b_ctx {
	char id[40];
	char cwd[256];
	char lang[12];   /* python, javascript, typescript, bash */
	char kind[64];   /* what its kernel said it is ("ipython 8.5.0", "python", "node v18.19.0", ...) */
	char said[64];   /* kind as of its last release (under e->lock): what /health reads while it is busy */
	int pid;         /* the kernel's process id, 0: none (started on first use) */
	uint64_t off[2]; /* what of its stdout / stderr was read */
	unsigned execs;
	int client;          /* the running execution's connection (fd), -1: none; under e2b.lock */
	int intr;            /* the running execution was interrupted (atomic) */
	bool busy;           /* one execution at a time: held (under e2b.lock) until its stream ends */
	pthread_cond_t idle; /* busy went false */
	struct e2b_ctx *next;
};

/* A sandbox: a session of the server and what E2B says about it. */
struct e2b_sbx {
	char id[80];                  /* [a-z0-9]: the node id reduced, then the session's 32 hex */
	char sid[100];                /* the session's id (sessions.c) */
	char owner[96];               /* the session's owner: the API key's token name */
	char access[48], traffic[48]; /* its tokens, 128 random bits each in hex */
	char tmpl[64];
	unsigned cpu, memory_mb; /* its size: 1 core and --e2b-memory, or its template's build's */
	json_t *meta;            /* its metadata: a JSON object, parsed once (at most E2B_METADATA_MAX as text); never
				  * changed, shared by reference (jansson's counts are atomic) */
	double started_rt, end_rt;
	unsigned refs;
	bool gone; /* out of the list: freed at refs 0 */
	struct e2b_ctx *ctxs;
	unsigned nctx;
	unsigned nwatch;      /* WatchDir streams open on it (e2b_fs.c) */
	bool private_traffic; /* network.allowPublicTraffic false: its ports want its traffic token */
	double m_time;        /* its last metrics sample (CLOCK_REALTIME), 0: none */
	uint64_t m_cpu_ms;    /* its CPU then */
	/* its life (e2b_life.c): set under e->lock, changed under e->life_lock */
	char *recipe;          /* its create body (JSON text): a session like it, made again on resume */
	double timeout_s;      /* its create timeout */
	bool auto_pause;       /* autoPause (lifecycle.onTimeout "pause"): paused at its timeout */
	bool auto_pause_files; /* autoPauseMemory false: that pause keeps files only */
	bool auto_resume;      /* autoResume.enabled: resumed by its next data-plane request */
	bool paused;           /* its files are under the state directory */
	bool paused_mem;       /* and its session is frozen (else: none, resumed from its files) */
	double paused_rt;      /* when it was paused */
	bool ap_queued;        /* its autoPause waits for the pauser thread, or failed (e2b_life.c); e->lock */
	struct e2b_sbx *ap_next;
	uint64_t saved_bytes; /* its files saved */
	uint64_t port_used;   /* its ports' bytes when its session went (a pause): charged to the one a resume makes */
	struct e2b_sbx *next;
};

struct make_job;
struct upload;
struct e2b_listers;
struct relay;
struct ws_hub;

struct e2b {
	struct server *s;
	struct MHD_Daemon *d;
	int listen_fd;
	pthread_mutex_t lock;
	struct e2b_sbx *sbxs;
	pthread_mutex_t mk_lock;
	pthread_cond_t mk_cond;
	struct make_job *jobs;
	struct workq makers; /* E2B_MAKERS threads (e2b_sandbox.c) */
	volatile int stopping;
	unsigned settling;         /* threads of their own that outlive their request: interrupted executions
	                            * settling (e2b_interp.c), uploads' pumps (e2b_upload.c); e->lock */
	pthread_cond_t settled;    /* settling went down */
	char domain[200];          /* what create and connect answer: --e2b-domain, or localhost:<port> */
	pthread_mutex_t life_lock; /* one pause, resume or kill at a time (e2b_life.c) */
	char state[512];           /* --e2b-state: paused sandboxes' files, ID/{record.json,files/} */
	struct e2b_tm *tm;         /* templates and their builds (e2b_templates.c) */
	struct ws_hub *ws;         /* upgraded connections to sandboxes' ports (e2b_ws.c) */
	/* autoPause's thread and its queue (e2b_life.c), under lock */
	struct workq pauser; /* one thread */
	pthread_cond_t ap_cond;
	struct e2b_sbx *ap_queue;
	struct e2b_vols *vols;       /* --e2b-volumes (e2b_volumes.c), or NULL */
	struct e2b_listers *listers; /* WatchDir's listings (e2b_fs.c) */
	/* sandboxes' ports (atomic): bytes relayed, requests refused and
	 * relays cut past a sandbox's --e2b-port-bytes (e2b_ports.c) */
	uint64_t port_bytes, port_refused, port_cut;
};

/* A request's part of the dialect (r->ext, made by the API's route
 * choice, freed with r): what its handlers read. */
struct ereq {
	struct req *r;
	struct e2b *e;
	struct server *s;
	struct MHD_Connection *c;
	char method[16];
	char path[256];
	char arg[100];    /* a path's {id} */
	char who[96];     /* the API key's token name (or the peer); data plane: the sandbox's owner */
	const char *body; /* r's, during its run */
	size_t len;
	struct e2b_sbx *x;   /* data plane: the sandbox named, held */
	bool wake;           /* ... which is paused: woken by the call's worker (e2b_http.c) */
	struct upload *up;   /* POST /files: the upload as it comes (e2b_upload.c) */
	struct relay *relay; /* a request to a sandbox's own port (e2b_ports.c) */
	struct volreq *vol;  /* a volume content request (e2b_volfiles.c) */
	int port;            /* ... its port and sandbox */
	char port_id[100];
	uint64_t relay_body; /* ... its body's room in its owner's share (relay_body_take, q->who's) */

	const char *uri;   /* the request line's URI, its query too (r's) */
	unsigned code;     /* for the log */
	char message[600]; /* an error's, for the log */
};

/* e2b_http.c */
struct ereq *e2b_q(struct req *r);
enum MHD_Result e2b_answer(struct ereq *q, unsigned code, const char *ctype, char *body, size_t len);
enum MHD_Result e2b_answer_json(struct ereq *q, unsigned code, json_t *v);
/* {"code": N, "message": ...}: the control plane's and /files' errors */
enum MHD_Result e2b_api_error(struct ereq *q, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *e2b_header(struct ereq *q, const char *name);
const char *e2b_query(struct ereq *q, const char *name);
/* q's socket, and whether its client has closed or reset it: a stream
 * that waits for what it follows looks after each wait, so that a client
 * that left ends it within a wait, not at its next write. */
int e2b_conn_fd(struct ereq *q);
bool e2b_client_gone(int fd);

/* e2b_sandbox.c */
int e2b_makers_start(struct e2b *e);
void e2b_makers_stop(struct e2b *e);
struct e2b_sbx *e2b_sbx_get(struct e2b *e, const char *id);
void e2b_sbx_put(struct e2b *e, struct e2b_sbx *x);
bool e2b_access_ok(const struct e2b_sbx *x, const char *tok); /* the envd token only */
bool e2b_token_ok(const struct e2b_sbx *x, const char *tok);
/* The session of x, held (sess_unref(s, it) after); NULL when it ended. */
struct sess *e2b_sess(struct e2b *e, struct e2b_sbx *x);
void e2b_records_free(struct e2b *e);
void e2b_prune(struct e2b *e);
enum MHD_Result e2b_create(struct ereq *q);
/* out: 2*bytes lowercase hex digits of randomness, and a NUL */
void e2b_hex_random(char *out, size_t bytes);
/* t (CLOCK_REALTIME seconds) as ISO 8601 UTC with milliseconds */
void e2b_iso_time(char *buf, size_t n, double t);
enum MHD_Result e2b_list(struct ereq *q);
enum MHD_Result e2b_info(struct ereq *q);
enum MHD_Result e2b_metrics(struct ereq *q);
/* The dialect's part of ward serve's /metrics (malloc'd text, or NULL). */
char *e2b_prometheus(struct server *s, void *state);
enum MHD_Result e2b_kill(struct ereq *q);
enum MHD_Result e2b_timeout(struct ereq *q);
enum MHD_Result e2b_connect_sbx(struct ereq *q);
enum MHD_Result e2b_health(struct ereq *q);
/* The session of q's sandbox ({id}) if it is q's caller's and running (not
 * paused), held, and its record in *xp, held; NULL (nothing held) else. */
struct sess *e2b_running(struct ereq *q, struct e2b_sbx **xp);
/* The record id names, held, if it is q's caller's; NULL else. */
struct e2b_sbx *e2b_own(struct ereq *q, const char *id);
enum MHD_Result e2b_not_found(struct ereq *q, const char *id);
json_t *e2b_sandbox_json(struct e2b *e, const struct e2b_sbx *x);
/* Off the list (its data-plane calls now get 502); freed with its last reference. */
void e2b_unlist(struct e2b *e, struct e2b_sbx *x);
/* A record made from saved fields, listed (e2b_life.c's load). */
void e2b_list_add(struct e2b *e, struct e2b_sbx *x);
/* A new session for owner like the create body recipe (JSON text), its
 * timeout ttl_s (0: the body's), with a copy of src's files (a fork), or
 * the files saved in the directory files (a resume: exactly those, not
 * its snapshot template's home first; 507 when they cannot all be
 * restored), or else its template's: placed, made by a maker thread, not yet
 * committed (sess_commit(s, *slot, *ws, ...) or sess_commit(s, *slot,
 * NULL, 0, 0) and ward_session_destroy).  0, or the HTTP status with why
 * in err. */
unsigned e2b_make(struct e2b *e, const char *owner, const char *recipe, double ttl_s, struct ward_session *src,
                  const char *files, struct sess **slot, struct ward_session **ws, double *ttl, char *err, size_t n);
/* A record for slot's new sandbox like like's (its owner, template,
 * metadata, create body, lifecycle), with tokens of its own; NULL when out
 * of memory.  e2b_record_drop frees one never listed. */
struct e2b_sbx *e2b_record_like(struct e2b *e, const struct e2b_sbx *like, struct sess *slot, double ttl);
void e2b_record_drop(struct e2b_sbx *x);

/* e2b_network.c */
enum MHD_Result e2b_network(struct ereq *q);

/* e2b_snapshot.c */
enum MHD_Result e2b_snapshot(struct ereq *q);
enum MHD_Result e2b_snapshots(struct ereq *q);
enum MHD_Result e2b_snapshot_delete(struct ereq *q);
/* Snapshot name of owner's: its template (tmpl) and the directory of its
 * home's files (home).  0, or -1 when name is no snapshot of owner's. */
int e2b_snapshot_base(struct server *s, const char *owner, const char *name, char *tmpl, size_t tn, char *home,
                      size_t hn);
/* Is img (of the store st) a snapshot, anyone's (its config labels it so)?
 * A template build never starts from one (e2b_template_steps.c). */
struct ward_image;
struct ward_image_store;
bool e2b_snapshot_image(struct ward_image_store *st, const struct ward_image *img);

/* e2b_fork.c */
enum MHD_Result e2b_fork(struct ereq *q);

/* e2b_life.c */
int e2b_life_start(struct e2b *e); /* the state directory's paused sandboxes, listed; the pauser started */
void e2b_life_stop(struct e2b *e); /* the pauser stopped, its queue dropped */
/* x (its session ss) to be paused at its timeout by the pauser thread, not
 * the caller's (the sweep's): queued once, its end pushed back for it. */
void e2b_autopause(struct e2b *e, struct e2b_sbx *x, struct sess *ss);
enum MHD_Result e2b_pause(struct ereq *q);
/* Pause x (memory: freeze it too).  0, or the status with why in err. */
unsigned e2b_pause_sbx(struct e2b *e, struct e2b_sbx *x, bool memory, char *err, size_t n);
/* Resume a paused x with a timeout of ttl_s (cold: from its files, its
 * frozen processes ended, as connect's {"memory": false}): 0, or the
 * status with why in err. */
unsigned e2b_resume_sbx(struct e2b *e, struct e2b_sbx *x, double ttl_s, bool cold, char *err, size_t n);
/* The data plane's sandbox x: resumed when paused and autoResume; 0, or
 * 502 (paused) with why in q->message. */
unsigned e2b_wake(struct ereq *q, struct e2b_sbx *x);
/* Kill x: its session, what it saved, its record.  */
void e2b_end(struct e2b *e, struct e2b_sbx *x);
bool e2b_is_paused(struct e2b *e, struct e2b_sbx *x);

/* e2b_templates.c: E2B's template build API (SPEC §19) */
struct ward_image_root;
int tm_start(struct e2b *e);
void tm_stop(struct e2b *e); /* after the listener and the sandboxes */
enum MHD_Result tm_create(struct ereq *q);
enum MHD_Result tm_get(struct ereq *q);
enum MHD_Result tm_post_v2(struct ereq *q);
enum MHD_Result tm_upload(struct ereq *q);
/* A template built here by name ("ALIAS", "ALIAS:TAG" or its id) for
 * caller who: its root (kept until tm_stop), cpuCount, memoryMB and start
 * command ("" when none). */
struct tm_pick {
	const struct ward_image_root *root;
	unsigned cpu, mem;
	char start[2048];
};
bool tm_find(struct e2b *e, const char *name, const char *who, struct tm_pick *out);

/* e2b_connect.c: Connect framing */
/* The one message of a streaming request's body (a 5-byte envelope, flag
 * 0): its JSON, parsed; NULL with why in err. */
json_t *cx_unwrap(const char *body, size_t len, char *err, size_t errlen);
/* One envelope (flags, then the length big-endian, then json's text)
 * appended to *buf; false when out of memory. */
bool cx_frame(char **buf, size_t *len, unsigned flags, const char *json, size_t n);
enum MHD_Result cx_error(struct ereq *q, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A unary request's JSON; NULL when the error was answered. */
json_t *cx_unary_in(struct ereq *q, enum MHD_Result *rc);
enum MHD_Result cx_unary_ok(struct ereq *q, json_t *v);
/* Connect-Timeout-Ms: 0 when absent, -1 when malformed (more than 10
 * digits, or not digits: Connect's own rule), else milliseconds. */
long long cx_timeout_ms(struct ereq *q);
/* A libward errno as a Connect code. */
const char *cx_code(int rc);
/* A stream whose frames a producer makes as they are sent (e2b_connect.c,
 * e2b_fs.c's watch, e2b_interp.c's execution), on an I/O thread: it never
 * waits.  produce appends frames to *buf and says CX_MORE, CX_END (after
 * the end-stream frame), or CX_WAIT (nothing yet: the connection parks
 * and it is asked again when watch's session says its background process
 * pid (0: any of them) has something new (ward_session_notify), or at the
 * ticker's next tick, 0.1 s).  watch (or NULL) is held by st until st_free. */
enum { CX_END = 0, CX_MORE = 1, CX_WAIT = -1 };
struct cx_stream;
typedef int (*cx_produce)(void *st, char **buf, size_t *len);
enum MHD_Result cx_stream_start(struct ereq *q, const char *ctype, cx_produce produce, void *st,
                                void (*st_free)(void *), struct e2b_sbx *watch, int pid);
enum MHD_Result px_start(struct ereq *q);
enum MHD_Result px_connect(struct ereq *q);
enum MHD_Result px_list(struct ereq *q);
enum MHD_Result px_send_input(struct ereq *q);
enum MHD_Result px_close_stdin(struct ereq *q);
enum MHD_Result px_send_signal(struct ereq *q);

/* e2b_fs.c */
/* A path of E2B's (absolute, or relative to /home/user) as the sandbox
 * path its files calls name: "." and ".." resolved lexically (above / is
 * /), /home/user (a link to the session's /work) as /work; any path of the
 * sandbox (libward resolves it inside, as the sandbox's user).  false
 * with why in err (a control byte, too long). */
bool e2b_map_path(const char *in, char *out, size_t n, char *err, size_t errlen);
/* argv run inside the session (as its user, in its view, within
 * --max-timeout and 30 s): its exit code, its stdout in out (when given),
 * its stderr in err; or -1 with err set. */
int e2b_run(struct ereq *q, struct ward_session *ws, char *const *argv, char *out, size_t outn, char *err, size_t n);
enum MHD_Result fs_stat(struct ereq *q);
enum MHD_Result fs_list(struct ereq *q);
enum MHD_Result fs_mkdir(struct ereq *q);
enum MHD_Result fs_move(struct ereq *q);
enum MHD_Result fs_remove(struct ereq *q);
enum MHD_Result fs_watch(struct ereq *q);
/* A mapped path as the sandbox shows it; whether it is the home or the root */
void e2b_full_path(const char *path, char *out, size_t n);
bool e2b_is_home_or_root(const char *path);
int watch_start(struct e2b *e);
void watch_stop(struct e2b *e);
enum MHD_Result files_get(struct ereq *q);
/* POST /files, streamed: begin when the headers are in (and the sandbox's
 * token checked), feed each piece of the body, files_post at its end;
 * free on every path (on_completed). */
void files_upload_begin(struct ereq *q);
bool files_upload_feed(struct ereq *q, const char *p, size_t *n);
void files_upload_free(struct ereq *q);
enum MHD_Result files_post(struct ereq *q);

/* e2b_multipart.c */
struct mp_part {
	char *name, *filename; /* filename may be NULL */
	const char *data;      /* into the body */
	size_t len;
};
/* Parse a whole multipart/form-data body whose Content-Type is ctype: at
 * most max_parts parts (*parts malloc'd, free with free()).  0, or -1 with
 * why in err. */
int mp_parse(const char *ctype, const char *body, size_t len, size_t max_parts, struct mp_part **parts, size_t *n,
             char *err, size_t errlen);
void mp_free(struct mp_part *p, size_t n);
/* The same body as it comes (an upload streamed into the sandbox, never
 * held whole), by the same rules but one: a body with no final "--" is cut
 * short.  The sink's calls say a part's start (its name and filename, the
 * latter may be NULL), its data in pieces, its end; one returning -1
 * stops the parse (mp_stream_feed answers -1, its reason the sink's). */
struct mp_sink {
	int (*part)(void *arg, const char *name, const char *filename);
	int (*data)(void *arg, const char *p, size_t n);
	int (*end)(void *arg);
	void *arg;
};
struct mp_stream;
struct mp_stream *mp_stream_new(const char *ctype, size_t max_parts, const struct mp_sink *sink, char *err,
                                size_t errlen);
/* -1 with why in err (or the sink's stop) */
int mp_stream_feed(struct mp_stream *m, const char *p, size_t n, char *err, size_t errlen);
/* The body is over: 0 when it ended with its last boundary. */
int mp_stream_finish(struct mp_stream *m, char *err, size_t errlen);
void mp_stream_free(struct mp_stream *m);

/* e2b_ports.c: a sandbox's own ports, relayed */
/* Is q for a sandbox's port (E2b-Sandbox-Port, or Host PORT-ID.DOMAIN),
 * neither envd's nor the interpreter's?  Its port and sandbox id. */
bool ports_target(struct ereq *q, int *port, char *id, size_t n);
/* With its body, on the I/O thread: relayed (the connection suspended until
 * the pump has the answer's head), or answered; true: to a worker
 * (ports_relay: its sandbox is paused, made with autoResume). */
bool ports_prepare(struct ereq *q);
enum MHD_Result ports_relay(struct ereq *q);
/* When the headers are in: an unknown sandbox, or a private one without its
 * traffic token, answered at once (its body never held); true: go on. */
bool ports_check(struct ereq *q);
void ports_free(struct ereq *q);
/* n bytes relayed to or from sandbox id's ports, charged to it (its
 * session's ward_session_charge_net): 0; -EDQUOT when its
 * --e2b-port-bytes are spent (the bytes are dropped, the relay cut; what
 * cut it says so in the log: ports_cut); -ESRCH when it has no session. */
int ports_charge(struct e2b *e, const char *id, uint64_t n);
void ports_cut(struct e2b *e, const char *id, const char *what);

/* e2b_ws.c: upgraded connections (WebSockets) to a sandbox's port, pumped
 * by one thread for all */
int ws_start(struct e2b *e);
/* Every upgraded connection closed, the pump stopped (before the listener
 * stops: MHD must not hold them); ws_free then frees what is left. */
void ws_close_all(struct e2b *e);
void ws_free(struct e2b *e);
/* A wait of another file's that the pump thread watches (e2b_ports.c: a
 * relay until its upstream's answer head is in): fd[i] (-1: none) for
 * events[i] (EPOLLIN, EPOLLOUT, EPOLLRDHUP: level-triggered), until
 * deadline (now_mono(), 0: none).  ready(w, i, ev) on the pump thread,
 * under its lock: fd[i] has ev, or (i -1) the deadline passed (ev 0) or
 * the pump stops (ev PUMP_STOP) or cannot watch fd (ev EPOLLERR); it may
 * change events and deadline; true: it is done.
 * A done watch leaves the pump after the round (its descriptors out of
 * the epoll set), then finish(w) runs, outside the pump's lock: w is its
 * own from then on. */
#define PUMP_STOP 0x80000000u
struct tunnel;
struct pump_watch;
struct tun_end { /* an epoll entry's: a tunnel's side, or a watch's descriptor */
	struct tunnel *t;
	struct pump_watch *w;
	int side;
};
struct pump_watch {
	int fd[2];
	unsigned events[2];
	double deadline;
	bool (*ready)(struct pump_watch *w, int i, unsigned ev);
	void (*finish)(struct pump_watch *w);
	void *arg; /* its owner's */
	/* the pump's */
	unsigned in[2];
	bool done;
	struct tun_end end[2];
	struct pump_watch *next;
};
/* w watched (false: the pump stops, or did not start: w untouched, its
 * caller's; it may be finished before this returns). */
bool pump_watch(struct e2b *e, struct pump_watch *w);
/* Room for one more connection to sandbox id's ports (a relay, or an
 * upgrade), owner's: 0, or 429 (its cap) / 503 (its owner's, the cap in
 * all) with why in msg.  ws_adopt takes an upgrade's room over; else
 * ws_unreserve gives it back (a relay's when its answer ends). */
unsigned ws_reserve(struct e2b *e, const char *id, const char *owner, char *msg, size_t n);
void ws_unreserve(struct e2b *e, const char *id);
/* want bytes of a relay's request body in the relays' share of
 * --max-body-total (owner's, and all of them): 0, or 503 with why in msg;
 * relay_body_give gives them back when the request ends. */
unsigned relay_body_take(struct e2b *e, const char *owner, uint64_t want, char *msg, size_t n);
void relay_body_give(struct e2b *e, const char *owner, uint64_t n);
/* From the upgrade handler: client (MHD's upgraded socket, urh) and up
 * pumped both ways, to_client and to_up sent first; false (both closed, the
 * room given back) when it cannot be. */
bool ws_adopt(struct e2b *e, const char *id, int client, struct MHD_UpgradeResponseHandle *urh, int up,
              const char *to_client, size_t nc, const char *to_up, size_t nu);

/* e2b_interp.c */
enum MHD_Result ci_execute(struct ereq *q);
enum MHD_Result ci_ctx_create(struct ereq *q);
enum MHD_Result ci_ctx_list(struct ereq *q);
enum MHD_Result ci_ctx_delete(struct ereq *q);
enum MHD_Result ci_ctx_restart(struct ereq *q);
void ci_free_all(struct e2b_sbx *x);
/* Wait for the threads still settling (at stop): e2b_detach's. */
void ci_settle_all(struct e2b *e);
/* fn(arg) on a detached thread counted in e->settling (the dialect's stop
 * waits for it: it calls e2b_detached_done last); false when none started. */
bool e2b_detach(struct e2b *e, void *(*fn)(void *), void *arg);
void e2b_detached_done(struct e2b *e);
/* GET /health on the interpreter's port: which Python kernel the template gives */
enum MHD_Result ci_health(struct ereq *q);

#endif
