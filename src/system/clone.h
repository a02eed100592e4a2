/* clone.h — where a sandbox's PID 1 is born: cloned by the supervisor
 * itself (clone_pid1, supervisor.c) or, for the plain shape, by a spawner
 * helper on its behalf (spawn_pid1; spawner.h says why), from the facts
 * every clone of a process shares (prepared once: sandbox_facts).
 * Supervisor (or helper) side: it may allocate before the clone, and the
 * child it makes goes straight to init_main (child.h).
 */
#ifndef WARD_CLONE_H
#define WARD_CLONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct child_ctx;     /* child.h */
struct sandbox_facts; /* child.h */
struct ward_request;  /* ward.h */

/* The facts every sandbox of this process shares (the seccomp filter, the
 * Landlock ABI, the benchmark switches, where the command line lives),
 * prepared on the first call (thread-safe) and read-only after. */
const struct sandbox_facts *sandbox_facts(void);

/* Clone PID 1 for c into every namespace but the cgroup one (PID 1 enters
 * it after the supervisor has moved it into its cgroup).  cgfd >= 0 (cgroup
 * v2): born in that cgroup where the kernel can (*born_in_cg).  netfd >= 0:
 * into that network namespace (netns.h), not a new one.  extra: more clone
 * flags (CLONE_PARENT in a helper).  The pid (*pidfd set), or -errno. */
pid_t clone_pid1(struct child_ctx *c, int cgfd, int netfd, unsigned long extra, int *pidfd, bool *born_in_cg);

/* The Landlock write paths of a sandbox: its writable mounts.  Returns how
 * many (at most max). */
size_t landlock_write_paths(const struct ward_request *shape, const char **out, size_t max);

/* The plain shape's PID 1, cloned elsewhere: the fds it takes, in this
 * order (-1 where there is none), and the shape. */
enum { SP_SYNC, SP_CTL, SP_OUT, SP_ERR, SP_IN, SP_REP, SP_NOTIFY, SP_CGROUP, SP_NETNS, SP_NFDS };

struct spawn_req {
	int32_t net; /* enum ward_net */
	uint32_t pad;
	uint64_t tmp_size_mb;
	uint64_t work_size_mb; /* a session's /work (0: a run's, as planned) */
	double start;          /* for WARD_TRACE */
};

/* A way to have the plain shape's PID 1 cloned for the caller, as its child
 * (a spawner helper's: spawner_cloner, spawner.h).  The pid (with *pidfd
 * and *born_in_cg set), or -errno: -ENOSYS when no helper runs, -EPIPE when
 * the helper died on the way (the caller clones for itself), else the
 * clone's own error. */
typedef pid_t sandbox_cloner(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg);

/* In a spawner helper, once at its start: a mount namespace of its own
 * (a slave of the host's), where the plain shape's prepared root is kept
 * (mounts_prepare_root) for the PID 1s it clones.  Without it (unshare
 * refused), each PID 1 builds its whole root. */
void spawn_own_mounts(void);

/* In a spawner helper: clone PID 1 of the plain shape for r, as the
 * caller's child (CLONE_PARENT).  Same return as a sandbox_cloner. */
pid_t spawn_pid1(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg);
/* The kept plan made again when it is older than its second, for the sizes
 * last asked (a helper, before it forks a parked process that inherits it). */
void spawn_plan_refresh(void);

#endif
