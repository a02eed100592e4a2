/* child.h — what the processes inside a sandbox get from the supervisor:
 * PID 1 (init.c) and the command's clone (command.c).  Everything here is
 * fixed before PID 1 is cloned (clone.c, supervisor.c) and read by them from
 * their copy of the supervisor's memory; the command itself (argv,
 * environment, rlimits, files) arrives later, over the sync pipe, into
 * child_ctx.ho (handover.h).
 *
 * Process model (as isolate's keeper/proxy/inside):
 *   supervisor  (ward, on the host; supervisor.c, clone.c): makes the plan,
 *               the cgroup, the pipes; clones PID 1 (itself, or through a
 *               spawner helper: spawner.h), writes its uid/gid maps, attaches
 *               its cgroup, hands over the command (handover.c) — at once, or
 *               when a request comes for a sandbox built ahead (pool.c) —
 *               then supervises (output, timeout, CPU) and reaps it.
 *   PID 1       (ward's init, inside; init.c): builds the root (mounts.c),
 *               empties the bounding set, builds the command's Landlock
 *               ruleset and loads its seccomp filter (handing the listener
 *               out), reads the command, writes the caller's files into
 *               /work, clones the command, reaps every orphan, and when the
 *               command ends reports its status and exits — the kernel then
 *               kills every process left in the PID namespace.  Non-dumpable,
 *               holds no host fd, dies with the supervisor's thread
 *               (PDEATHSIG).
 *   command     (inside; command.c): setsid, fds 0-2 (and 3 = report
 *               channel), rlimits, drops to uid 1000 with no capabilities,
 *               no_new_privs, Landlock (PID 1's ruleset), execve — under PID
 *               1's filter.
 * After the clone nothing allocates (the handover is read into an mmap): the
 * server clones from many threads, and a fork of a multi-threaded process
 * may find malloc's locks held by a thread that does not exist in the child.
 */
#ifndef WARD_CHILD_H
#define WARD_CHILD_H

#include <stdbool.h>
#include <stddef.h>

#include "core/plan.h"
#include "sandbox/seccomp.h"
#include "system/handover.h"
#include "ward.h"

/* What is the same for every sandbox a process clones, prepared once
 * (sandbox_facts, clone.h) and read-only after. */
struct sandbox_facts {
	struct ward_seccomp filter; /* the command's, loaded on PID 1 */
	bool filter_ok;
	char filter_err[256];         /* why not, when !filter_ok */
	int landlock_abi;             /* 0: none, or switched off */
	bool no_seccomp, no_landlock; /* benchmark switches (WARD_BENCH_NO_*) */
	/* Where this process's command line lives (/proc/self/stat arg_start
	 * and arg_end; 0 when unknown): PID 1, a copy of ward, overwrites it,
	 * so that the sandbox's /proc/1/cmdline says "ward-init" instead of
	 * how ward was started (a server's options, paths on the host). */
	unsigned long arg_start, arg_end;
};

/* Everything PID 1 and the command need.  The shape (plan, fds, Landlock
 * paths) is fixed before the clone; the command itself arrives later. */
struct child_ctx {
	const struct sandbox_facts *facts;
	const struct plan *plan;
	int *trees;           /* per plan op: a detached tree to mount, or -1 */
	const char *prepared; /* the plan's prepared root (mounts_prepare_root), or NULL */
	enum ward_net net;
	const char *const *write_paths;
	size_t nwrite;
	int landlock_abi;
	int landlock_fd;   /* the ruleset PID 1 built for the command, or -1 */
	int sync_r, ctl_w; /* sync: supervisor -> PID 1; ctl: PID 1 -> supervisor */
	int notify_w;      /* PID 1 sends the seccomp listener here */
	int out_w, err_w, in_r, rep_w;
	double start;        /* for WARD_TRACE */
	char setup_err[400]; /* the command's last steps failed, and why (it shares PID 1's
				* memory until execve: PID 1 reads this when the clone returns) */
	struct handover ho;  /* filled by PID 1 from the sync pipe */
	/* Sessions (init_session.c): PID 1 keeps notify_w as the control
	 * socket; an exec's command gets its cwd and says why its setup
	 * failed on fail_fd ("E WHY", its exec's control pipe), not in
	 * setup_err (it is a fork: PID 1 would not see that). */
	bool session;
	const char *cwd;
	int fail_fd;
};

/* PID 1, in the child of the clone (init.c). */
__attribute__((noreturn)) void init_main(struct child_ctx *c);

/* PID 1 of a session, once its sandbox is ready (init_session.c). */
__attribute__((noreturn)) void session_main(struct child_ctx *c);

/* An exec's command in a session, in PID 1's fork (init_session.c): c is
 * its own copy, with its fds, cwd, fail_fd and handover in place
 * (command.c).  Never returns. */
__attribute__((noreturn)) void command_session_main(struct child_ctx *c);

/* The command, cloned by PID 1 with CLONE_VM | CLONE_VFORK (command.c):
 * arg is PID 1's child_ctx.  Never returns. */
int command_entry(void *arg);

#endif
