/* supervise.h — the parent's side of a run: feed stdin, drain stdout,
 * stderr and the report channel with their caps, enforce the wall-clock and
 * tree-wide CPU limits, and notice when the run's top process exits.
 * Shared by the system and application backends.  It never blocks on
 * whoever reads ward's output or writes its input (struct nbfd), and never
 * starts or reaps a process. */
#ifndef WARD_SUPERVISE_H
#define WARD_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ward.h"

struct ward_cgroup;

/* One of the caller's fds (ward's stdout, stderr, stdin), used so that no
 * read or write waits on whoever holds its other end, without setting
 * O_NONBLOCK on the caller's file description (every process sharing the
 * terminal or pipe would see it): a pipe or terminal gets a private
 * O_NONBLOCK description of its own (reopened through /proc/self/fd), a
 * socket MSG_DONTWAIT, a regular file plain calls; where reopening fails,
 * each call is preceded by a poll and kept to PIPE_BUF bytes. */
struct nbfd {
	int fd;  /* what to poll and call: the private copy or the caller's fd */
	int own; /* the private description, or -1 */
	unsigned char kind;
};
struct nbfd nbfd_open(int fd, bool for_write);
void nbfd_close(struct nbfd *nb);
/* Bytes written, 0 when the other end takes nothing now, -1 when it has gone. */
ssize_t nbfd_write(const struct nbfd *nb, const void *p, size_t n);
/* Bytes read, 0 at end of file, -EAGAIN when nothing is there yet, or -errno. */
ssize_t nbfd_read(const struct nbfd *nb, void *p, size_t n);

/* Head-and-tail capture of one stream.  Bytes up to the head's size are
 * kept; after that a ring keeps the last tail bytes; the middle is counted
 * and dropped.  Memory is bounded by the limit whatever the child writes.
 * Streaming (live_fd >= 0), the head goes out as the reader takes it,
 * never waiting on the reader (capbuf_push); capbuf_finish offers the rest
 * and drops what a stalled reader does not take. */
struct capbuf {
	uint64_t limit;
	size_t head_cap, tail_cap;
	char *head;
	size_t head_len;
	char *tail;      /* ring of tail_cap bytes */
	size_t tail_pos; /* next write position */
	size_t tail_len;
	uint64_t total;
	int live_fd;                /* -1 = capture only */
	struct nbfd live;           /* how live_fd is written */
	size_t live_sent;           /* bytes of the head written to live_fd */
	bool live_broken;           /* writing to live_fd failed (its reader went away) */
	uint64_t live_dropped;      /* bytes a stalled reader never took */
	double live_until;          /* monotonic: capbuf_finish waits at least this long for
				      * a stalled reader (the run's deadline) */
	const volatile int *cancel; /* stops that wait */
	int obs_fd;                 /* -1, or where the head is observed (ward_request.observe_fd) */
	unsigned char obs_id;       /* WARD_OBSERVE_STDOUT or _STDERR */
	char *obs_buf;              /* the head's bytes not yet sent to it (OBS_PENDING at most) */
	size_t obs_len;
	double obs_since;     /* monotonic: when obs_buf's first byte came */
	uint64_t obs_dropped; /* observed bytes dropped, not yet announced */
	bool obs_blocked;     /* the observer took nothing the last time */
	bool obs_gone;        /* the observer closed its end */
};

/* How long report_to_eof reads on after the top process went. */
#define REPORT_DRAIN_S 5.0
/* Observing: what waits for the observer, and how long a piece waits for
 * more before it is sent. */
#define OBS_PENDING 65536
#define OBS_WINDOW_S 0.002

/* How long capbuf_finish waits for a reader that takes nothing, once the
 * run's deadline has passed. */
#define LIVE_STALL_S 1.0

void capbuf_init(struct capbuf *c, uint64_t limit, int live_fd);
/* Observing: send the head's bytes to fd as they are fed (see
 * ward_request.observe_fd), as stream id. */
void capbuf_observe(struct capbuf *c, int fd, unsigned char id);
/* Send what waits for the observer as far as it takes it now (force: the
 * window or not).  blocked: something waits for room there; due: when the
 * piece that waits for more is sent (0: none). */
void capbuf_observe_flush(struct capbuf *c, bool force);
bool capbuf_observe_blocked(const struct capbuf *c);
double capbuf_observe_due(const struct capbuf *c);
void capbuf_feed(struct capbuf *c, const char *data, size_t n);
/* Streaming: is part of the head still to be written? */
bool capbuf_pending(const struct capbuf *c);
/* Streaming: write what the reader takes now of the head, without waiting. */
void capbuf_push(struct capbuf *c);
/* Assemble head, a marker line when bytes were dropped, and tail into out.
 * Streaming, write what is left (the head's rest, the marker, the tail)
 * as the reader takes it; once the reader has taken nothing for
 * LIVE_STALL_S past live_until, drop the rest (counted in live_dropped and
 * out->truncated) behind a marker, when that still fits.  Frees buffers. */
int capbuf_finish(struct capbuf *c, struct ward_stream *out);
void capbuf_free(struct capbuf *c);

struct supervise {
	/* in */
	int pidfd;          /* the run's top process */
	int out_fd, err_fd; /* read ends, -1 if none */
	int report_fd;      /* read end, -1 if none */
	int ctl_fd;         /* read end of the backend's control pipe, -1 if none */
	int stdin_fd;       /* write end for stdin_data or stdin_src, -1 if none */
	int stdin_src;      /* the caller's fd whose bytes are relayed into stdin_fd
				    * (ward run --stdin): the command never holds it.  -1 if
				    * none; not closed */
	int notify_sock;    /* where the command sends its seccomp listener, -1 if none */
	int observe_fd;     /* ward_request.observe_fd, or -1 (0 counts as none too: an
				    * initializer that leaves it out); borrowed, not closed */
	const unsigned char *stdin_data;
	size_t stdin_len;
	double timeout_s, cpu_s;
	struct ward_cgroup *cg; /* for the tree-wide CPU limit, may be NULL */
	void (*kill_tree)(void *arg);
	void *kill_arg;
	uint64_t output_limit;
	bool output_kill; /* a stream past output_limit kills the tree (output_exceeded) */
	int live_fd[2];   /* -1 = capture */
	size_t report_limit;
	double start;               /* monotonic seconds, when the run began */
	const volatile int *cancel; /* see ward_request.cancel */
	bool report_to_eof;         /* the report channel is read to its end after the top
				    * process went (files out: nothing else holds it then),
				    * for up to REPORT_DRAIN_S, not only the grace period */
	bool end_at_report;         /* a line "X STATUS" on the control pipe counts as the
				    * top process's exit: stop there, without waiting for
				    * it to be gone (its teardown happens off the reply path) */

	/* out */
	struct capbuf out, err;
	char *report;
	size_t report_len;
	bool report_truncated;
	char ctl[1024]; /* what the control pipe said (NUL-terminated) */
	size_t ctl_len;
	bool timed_out;       /* wall clock */
	bool cpu_exceeded;    /* tree-wide CPU limit (cgroup accounting) */
	bool output_exceeded; /* output_kill: a stream passed output_limit, the tree was killed */
	bool cancelled;       /* *cancel became non-zero, or the observer went away */
	bool seccomp_killed;  /* a fatal syscall was caught through the listener */
	int seccomp_nr;
};

/* Run the loop until the top process has exited and its output is drained
 * (bounded: after it exits, output still open elsewhere is read for at most
 * a short grace period).  Closes every fd it was given but pidfd.
 * 0, or -errno on an internal failure. */
int supervise_run(struct supervise *s);

double monotonic_now(void);

/* ward-trace: WARD_TRACE=1 prints phase timestamps on stderr. */
void trace_phase(const char *phase, double start);

#endif
