/* backend.h — the system level's entry (src/system/backend.c), called by
 * the dispatcher above the levels (src/dispatch/run.c). */
#ifndef WARD_SYSTEM_BACKEND_H
#define WARD_SYSTEM_BACKEND_H

#include "core/backend.h"
#include "ward.h"

/* With a pool, a request of the pool's shape takes a sandbox built ahead;
 * any other request (or an empty pool) builds one. */
int backend_system_run(struct ward_pool *pool, const struct ward_request *req, struct ward_result *res,
                       struct backend_outcome *o, double start);

#endif
