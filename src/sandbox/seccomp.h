/* seccomp.h — the syscall filter of SPEC §3 (docs/security.md has the table).
 *
 * The filter is compiled once in the supervisor (libseccomp, may allocate)
 * and loaded in the sandboxed child just before execve with nothing but
 * syscalls, so that it is safe after fork in a multi-threaded server.
 */
#ifndef WARD_SECCOMP_H
#define WARD_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ward_seccomp {
	struct sock_fprog prog;        /* fatal rules kill (SIGSYS); filter owned */
	struct sock_fprog notify_prog; /* same rules, fatal ones go to a listener */
};

/* The filter (both variants): the programs compiled at build time when the
 * build made them, else ward_seccomp_compile().  0, or -1 with err set. */
int ward_seccomp_prepare(struct ward_seccomp *f, char *err, size_t errlen);

/* Compile the table with libseccomp now.  0, or -1 with err set. */
int ward_seccomp_compile(struct ward_seccomp *f, char *err, size_t errlen);

/* Load it into the calling process (needs no_new_privs set).  Only
 * syscalls: async-signal-safe.  0 or -errno. */
int ward_seccomp_apply(const struct ward_seccomp *f);

/* Load the notify variant instead and return its listener fd (O_CLOEXEC),
 * or -errno.  The child hands the fd to the supervisor (SCM_RIGHTS), closes
 * it and execs; the supervisor polls it and calls ward_seccomp_notify_handle
 * on POLLIN.  A fatal call blocks until then and never runs; if the listener
 * is closed the kernel fails it with ENOSYS.  Only syscalls. */
int ward_seccomp_apply_listener(const struct ward_seccomp *f);

/* Hand the listener to the supervisor over a UNIX socket (SCM_RIGHTS) /
 * take it on the other side.  Send: only syscalls (the child); 0 or -errno.
 * Receive: the fd (O_CLOEXEC) or -errno. */
int ward_seccomp_send_listener(int sock, int listener);
int ward_seccomp_recv_listener(int sock);

/* One blocked call read from a listener. */
struct ward_seccomp_event {
	pid_t pid;      /* caller, in the pid namespace of the reader */
	int nr;         /* syscall number */
	uint32_t arch;  /* AUDIT_ARCH_* */
	char text[128]; /* "ward: seccomp: blocked mount(2); sandbox killed (SIGSYS)" */
	uint64_t id;    /* the notification's cookie */
};

/* Receive one notification and describe it in ev, without answering it:
 * the caller stays blocked in the call, which never runs, until the
 * supervisor kills the sandbox (it must: closing the listener instead
 * would let the call fail with ENOSYS and the program go on).
 * 0 or -errno (-ENOENT: the caller died meanwhile). */
int ward_seccomp_notify_read(int listener, struct ward_seccomp_event *ev);

/* Receive one notification, fail the call with EPERM and describe it in ev.
 * The caller then writes ev->text to the result's stderr, kills the whole
 * sandbox and reports signal 31 (SIGSYS), as the kill variant would.
 * 0 or -errno (-ENOENT: the caller died meanwhile). */
int ward_seccomp_notify_handle(int listener, struct ward_seccomp_event *ev);

/* Is notification id still pending on listener (its caller alive, blocked
 * in the call)?  What was read about the caller by pid before this said
 * true was about that very process: its pid cannot have been reused. */
bool ward_seccomp_notify_pending(int listener, uint64_t id);

/* The name of a syscall the filter denies ("mount"), or NULL.  Static. */
const char *ward_seccomp_syscall_name(int nr);

void ward_seccomp_free(struct ward_seccomp *f);

#endif
