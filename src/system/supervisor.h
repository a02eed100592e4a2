/* supervisor.h — one system-level sandbox, from the supervisor's side
 * (supervisor.c): PID 1 has made the namespaces, the root and the cgroup and
 * waits for its command, which sandbox_run hands over (handover.h).  Used for
 * one request, then destroyed: never reused.  Knows nothing of pools or of
 * spawner helpers: a caller that has a helper passes its clone in.
 *
 * sandbox_build: a sandbox shaped like `shape` (mounts, workdir, rootfs,
 * network, /tmp size, where stdin comes from).  ahead: built before its
 * request (a pool's): the cgroup gets its limits at sandbox_run, stdin and
 * report pipes exist whatever the request, and the call returns only once
 * PID 1 is ready.  helper: NULL (we clone PID 1 ourselves), or a clone that
 * a spawner helper makes for us (spawner_cloner), used for the plain shape;
 * when no helper takes it, the build starts over with a clone of our own.
 * NULL with err set on failure.
 * sandbox_run: 0 when the command ran, -1 with res->error set, or
 * SANDBOX_STALE when a sandbox built ahead had died before the request
 * (nothing ran: the caller builds another).  defer: return as soon as
 * PID 1 has reported the command's status (usage from the cgroup), leaving
 * PID 1's exit and reaping to sandbox_destroy.
 * sandbox_destroy: kill whatever is left, reap, remove the cgroup.
 */
#ifndef WARD_SUPERVISOR_H
#define WARD_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/backend.h"
#include "system/clone.h"
#include "ward.h"

struct sandbox;
#define SANDBOX_STALE (-2)
struct sandbox *sandbox_build(const struct ward_request *shape, bool ahead, double start, sandbox_cloner *helper,
                              char *err, size_t errlen);
int sandbox_run(struct sandbox *sb, const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
                bool defer, double start);
void sandbox_destroy(struct sandbox *sb);
/* Sessions (session.c): a sandbox whose PID 1 runs init_session.c's loop
 * instead of waiting for one handover; ephemeral /work of work_size_mb (0:
 * the shape's /tmp size).  Cloned through helper where one is alive and
 * the shape is plain (as sandbox_build), else by the calling thread (PID 1
 * dies with the thread that cloned it); returns once PID 1 is ready.  Its parts, for session.c: the session
 * cgroup, PID 1 and the control socket (a SOCK_SEQPACKET socket, see
 * init_session.c).  sandbox_session_kill kills and reaps PID 1 (the whole
 * sandbox with it), before session.c removes its exec cgroups and then
 * sandbox_destroy the rest.  *listener: the seccomp filter's listener (the
 * caller's to close), or -1 when the sandbox runs without seccomp. */
struct sandbox_session {
	struct ward_cgroup *cg;
	pid_t pid;
	int pidfd, sock;
	unsigned host_uid, host_gid; /* the sandbox user's on the host */
	struct egress_proxy *egress; /* the session's proxy (network allow), or NULL */
};
struct sandbox *sandbox_build_session(const struct ward_request *shape, uint64_t work_size_mb, sandbox_cloner *helper,
                                      int *listener, char *err, size_t errlen);
struct sandbox_session sandbox_session_parts(struct sandbox *sb);
void sandbox_session_kill(struct sandbox *sb);
/* Its egress proxy's allow-list replaced (egress_set_allow); -ENOTSUP when
 * it has no proxy (made without network allow). */
int sandbox_set_egress(struct sandbox *sb, const char *const *allow, size_t n, char *err, size_t errlen);
/* Encode req's command as a handover and write it all to fd (blocking).
 * 0, or -errno (-EPIPE: the reader is gone). */
int sandbox_write_handover(int fd, const struct ward_request *req, bool with_as);
/* A result's "enforced" for this sandbox. */
void sandbox_enforced(const struct sandbox *sb, struct ward_result *res);
/* Can a sandbox built for a serve one for b? */
bool sandbox_same_shape(const struct ward_request *a, const struct ward_request *b);

#endif
