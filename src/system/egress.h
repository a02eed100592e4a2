/* egress.h — ward's egress proxy for one sandbox (SPEC §13), on the host
 * side: it accepts on a listening socket that the sandbox's PID 1 made in
 * the sandbox's own network namespace (127.0.0.1:EGRESS_PROXY_PORT there)
 * and connects out from ward's namespace to what the request's allow-list
 * lets through.  One thread per proxy; nothing of it runs inside the
 * sandbox. */
#ifndef WARD_SYSTEM_EGRESS_H
#define WARD_SYSTEM_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "ward.h"

/* Connections at once per proxy (more are accepted and closed at once),
 * the largest request head (431 beyond), and the timeouts. */
#define EGRESS_MAX_CONNS 64
#define EGRESS_HEAD_MAX (16 * 1024)
#define EGRESS_BUF (64 * 1024)
/* A relaying connection moves each direction's bytes through a pipe
 * (splice(2)): made at the kernel's default size (64 KiB), grown up to
 * EGRESS_PIPE_MAX once a read fills it, while the proxy's pipes hold at most
 * EGRESS_PIPE_TOTAL together: what a proxy holds in flight. */
#define EGRESS_PIPE_MAX (1024 * 1024)
#define EGRESS_PIPE_TOTAL (8 * 1024 * 1024)
#define EGRESS_HEAD_TIMEOUT_S 10
#define EGRESS_CONNECT_TIMEOUT_S 10
#define EGRESS_IDLE_TIMEOUT_S 60
#define EGRESS_TOTAL_TIMEOUT_S 3600

/* What a connection that reaches no upstream costs is the proxy's thread's
 * CPU: ward's, outside the sandbox's cgroup.  So each accepted connection
 * takes a token, and gives it back once it is relaying to its upstream; a
 * refused, malformed or empty one keeps it.  The bucket holds
 * EGRESS_REFUSE_BURST and refills EGRESS_REFUSE_RATE a second; empty, the
 * proxy accepts nothing until it holds EGRESS_REFUSE_RESUME again (the
 * sandbox's connects wait in its own kernel's accept queue; taking them a
 * few at a wake keeps the wakes, not just the refusals, few).  A head that arrives in pieces is read
 * at most once per EGRESS_HEAD_DEFER_MS (a client dribbling bytes costs
 * one wake per batch, not per byte). */
#define EGRESS_REFUSE_BURST 128
#define EGRESS_REFUSE_RATE 50
#define EGRESS_REFUSE_RESUME 8
#define EGRESS_HEAD_DEFER_MS 20

struct egress_proxy;

/* Start a proxy on listen_fd (taken: closed by egress_stop, or here on
 * failure) for shape's egress_allow, egress_resolve and
 * limits.egress_bytes.  NULL with err set on failure. */
struct egress_proxy *egress_start(int listen_fd, const struct ward_request *shape, char *err, size_t errlen);

/* The records so far (malloc'd copies into res: egress_on, egress,
 * negress, egress_truncated), from record `from` on (a session's exec
 * takes what came after its start).  0, or -ENOMEM. */
int egress_records(struct egress_proxy *p, size_t from, struct ward_result *res);
/* How many connections were tried so far, and how many of them allowed. */
void egress_counts(struct egress_proxy *p, uint64_t *tried, uint64_t *allowed);
/* The CPU time the proxy's thread has used so far, in microseconds (it runs
 * in ward's process: no cgroup of the sandbox's can be charged for it). */
uint64_t egress_cpu_us(struct egress_proxy *p);
/* How many times the proxy stopped accepting for want of a token. */
uint64_t egress_throttled(struct egress_proxy *p);

/* Stop the thread and close every connection and the listening socket.
 * NULL is a no-op. */
void egress_stop(struct egress_proxy *p);
/* A frozen session's proxy holds no thread (session_freeze.c): park
 * (true) ends its thread, keeping its listener, its connections (what
 * their peers send waits in the kernel's buffers), its bucket and its
 * records; false starts one again.  A name being resolved holds the
 * thread: after 2 s the park gives up, -ETIMEDOUT, and the thread runs on
 * as before.  0, or -errno (unpark: no thread started, still parked).
 * NULL ok. */
int egress_park(struct egress_proxy *p, bool park);
/* Replace its allow-list live (patterns as shape's egress_allow; the
 * caller has checked them against the operator's ceiling): new
 * connections are decided by it, relaying ones go on.  0, or -errno with
 * err set (nothing changed). */
int egress_set_allow(struct egress_proxy *p, const char *const *allow, size_t n, char *err, size_t errlen);

/* The listening socket PID 1 sent over a sandbox's notify socket
 * (SCM_RIGHTS, tagged 'P': init.c's proxy_listener), within timeout_ms:
 * the fd (CLOEXEC), or -errno (-EPIPE when PID 1 closed it first,
 * -ETIMEDOUT, -EPROTO for another message). */
int egress_recv_listener(int sock, int timeout_ms);

#endif
