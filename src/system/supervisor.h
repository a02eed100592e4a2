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
/* Can a sandbox built for a serve one for b? */
bool sandbox_same_shape(const struct ward_request *a, const struct ward_request *b);

#endif
