/* spawner.h — sandboxes cloned by small helper processes, for a caller with
 * many threads (ward serve; ward.h: ward_spawner_start).
 *
 * Cloning a sandbox's PID 1 straight from a server copies the server's
 * address space, and afterwards every page the server's threads write is
 * first copied back (copy-on-write), each copy a TLB shoot-down across the
 * CPUs those threads run on.  Measured on 2 cores under load, that was a
 * quarter of all the CPU time a request cost.  A helper forked before the
 * server has threads, and exec'd into the lean static `ward` where it can
 * be, is one small single-threaded process: it clones PID 1
 * with CLONE_PARENT, so PID 1 is still the caller's child (waitpid, rusage,
 * PDEATHSIG work as before) but a copy of the helper's memory, not the
 * server's.
 *
 * The helper only clones.  The caller makes the pipes, the cgroup and the
 * uid map; the helper receives the child's ends of the pipes (SCM_RIGHTS)
 * and the shape, builds the plan (plan.c) and clones (clone.c: spawn_pid1);
 * it sends back the pid and a pidfd.  Only the plain shape goes this way
 * (no workdir, mounts or rootfs, no stdin fd of the caller's): its plan
 * needs nothing from the caller but the network mode and the /tmp size.
 */
#ifndef WARD_SPAWNER_H
#define WARD_SPAWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "system/clone.h" /* spawn_req, SP_*, sandbox_cloner */

/* Start `n` helpers (n = 0: one per CPU, at most 4).  Call from the main
 * thread before any other thread exists.  exe_fd: -1, or an fd of the lean
 * `ward` binary, which the helpers exec with WARD_SPAWNER_ARG (and the
 * socket on fd 3).  0, or -1 with err set. */
int spawner_start(unsigned n, int exe_fd, char *err, size_t errlen);
void spawner_stop(void);
/* Is any helper alive (as far as anyone has noticed)?  Lock-free, for a
 * caller to decide before it prepares a clone of its own. */
bool spawner_alive(void);
/* Replace the helpers found dead, when they exec the lean ward (a fork of
 * a threaded caller may do nothing else).  Call from the thread that
 * started them.  How many were started. */
unsigned spawner_heal(void);

/* Clone PID 1 through a helper.  The pid (with *pidfd and *born_in_cg
 * set), or -errno: -ENOSYS when no helper runs (the caller clones itself),
 * -EPIPE when the helper died on the way (the caller starts over), else the
 * clone's own error. */
pid_t spawner_clone(const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg);

/* Clone PID 1 through the process parked in its cgroup v1 (sock:
 * cg_parked_sock; sandbox/cgroup_park.c), which the helpers put there.  As
 * spawner_clone, -EPIPE when it is gone. */
pid_t spawner_clone_parked(int sock, const struct spawn_req *r, const int fds[SP_NFDS], int *pidfd, bool *born_in_cg);

/* The helpers' clone for sandbox_build (supervisor.h) while any helper is
 * alive (spawner_alive), else NULL: the caller clones for itself, and makes
 * the plan a helper would have made. */
sandbox_cloner *spawner_cloner(void);

/* `ward --spawner-helper` (the lean binary, exec'd by a helper): serve
 * the socket on fd 3.  Returns only when fd 3 is no such socket. */
#define WARD_SPAWNER_ARG "--spawner-helper"
int spawner_helper_main(void);

#endif
