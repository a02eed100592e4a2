/* backend.c — the system level's entry (system/backend.h: backend_system_run):
 * where a run's sandbox comes from.  A request of the pool's shape takes one
 * built ahead (pool.c); any other request, or an empty pool, builds one now
 * (supervisor.c), cloned by a spawner helper while one is alive
 * (spawner.c), else by ward itself; a used one is torn down after the answer
 * by the pool's thread or the reaper's (reaper.c) where one runs.  The one
 * file that knows them all: supervisor.c knows neither the pool nor the
 * helpers.
 */
#include <stdbool.h>

#include "core/backend.h"
#include "core/supervise.h"
#include "system/backend.h"
#include "system/pool.h"
#include "system/reaper.h"
#include "system/spawner.h"
#include "system/supervisor.h"
#include "ward.h"

int backend_system_run(struct ward_pool *pool, const struct ward_request *req, struct ward_result *res,
                       struct backend_outcome *o, double start)
{
	if (pool)
		pool_busy(pool, +1);
	/* With a pool, its thread tears sandboxes down after the answer; else
	 * the reaper's, where one runs (a server's). */
	bool defer = pool != NULL || reaper_running();
	int r = SANDBOX_STALE;
	struct sandbox *sb = pool ? pool_take(pool, req) : NULL;
	if (sb) {
		r = sandbox_run(sb, req, res, o, defer, start);
		if (!pool_retire(pool, sb))
			sandbox_destroy(sb);
	}
	if (r == SANDBOX_STALE) {
		sb = sandbox_build(req, false, start, spawner_cloner(), res->error, sizeof(res->error));
		r = -1;
		if (sb) {
			r = sandbox_run(sb, req, res, o, defer, start);
			if (!defer || !(pool ? pool_retire(pool, sb) : reaper_retire(sb)))
				sandbox_destroy(sb);
		}
	}
	trace_phase("teardown", start);
	if (pool)
		pool_busy(pool, -1);
	return r == SANDBOX_STALE ? -1 : r;
}
