/* session_proto.h — what the supervisor (session.c) and a session's PID 1
 * (init_session.c) say to each other on the session's control socket (a
 * SOCK_SEQPACKET socketpair: one message is one request).  This file is the
 * only one that knows the layout.
 *
 * Each request is a struct session_msg, then a NUL-terminated string (a
 * file op's path relative to /work; empty for SM_EXEC), with fds by
 * SCM_RIGHTS:
 *   SM_EXEC: handover read end, control pipe write end, stdout and stderr
 *            write ends, stdin read end (optional).  PID 1 forks the
 *            exec's process, answers a struct session_reply with its pidfd
 *            (or r < 0 and no fd), and writes "X STATUS" on the control
 *            pipe when it has reaped it.  The process waits on the
 *            handover pipe for its cwd (a uint32_t length, then that many
 *            bytes, no NUL) and then the handover, and execs the command:
 *            the supervisor writes them after it has moved the process
 *            into the exec's cgroup, possibly long after (session.c arms
 *            the next exec ahead); end-of-file there: it exits.
 *   SM_WRITE, SM_READ, SM_LIST, SM_REMOVE, SM_COLLECT: one end of a
 *            SOCK_STREAM pair (SM_COLLECT: str is the globs, one a line;
 *            mode the most files, max the most bytes; its answer is
 *            collect_walk.h's frames after the file_head).
 *            No reply on the control socket: a worker PID 1 forks answers
 *            on the stream (struct file_head, then bytes or entries); PID 1
 *            writes the file_head itself when it cannot fork.
 */
#ifndef WARD_SESSION_PROTO_H
#define WARD_SESSION_PROTO_H

#include <stdint.h>

enum { SM_EXEC = 'x', SM_WRITE = 'w', SM_READ = 'r', SM_LIST = 'l', SM_REMOVE = 'd', SM_COLLECT = 'c' };

#define SM_MAX_STR 4096

struct session_msg {
	uint8_t op;
	uint8_t pad[3];
	uint32_t mode;        /* SM_WRITE: the file's mode */
	uint64_t max;         /* SM_READ: most bytes read */
	char str[SM_MAX_STR]; /* NUL-terminated (the message may end after the NUL) */
};

struct session_reply {
	int32_t r; /* 0, or -errno */
};

/* The first bytes on a file op's stream from the worker.  SM_WRITE: sent
 * after the supervisor has shut its side down (all bytes read).  SM_READ:
 * then len bytes.  SM_LIST: then entries (struct file_entry and the name),
 * until the stream ends. */
struct file_head {
	int32_t r;
	uint32_t pad;
	uint64_t len;
};

struct file_entry {
	uint8_t type; /* 'f', 'd', 'l', 'o' */
	uint8_t pad;
	uint16_t name_len;
	uint32_t mode;
	uint64_t size;
	int64_t mtime_ns;
};

#endif
