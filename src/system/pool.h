/* pool.h — sandboxes built ahead of demand (pool.c; ward.h: ward_pool_new),
 * as backend.c takes and returns them. */
#ifndef WARD_POOL_H
#define WARD_POOL_H

#include <stdbool.h>

#include "ward.h"

struct sandbox;

/* A sandbox from the pool for req, or NULL. */
struct sandbox *pool_take(struct ward_pool *pool, const struct ward_request *req);
/* Hand a used sandbox to the pool's thread to destroy; false when too many
 * wait already (the caller destroys it). */
bool pool_retire(struct ward_pool *pool, struct sandbox *sb);
/* A run begins (+1) or ends (-1): the pool's thread works while none does,
 * or when the pool runs dry. */
void pool_busy(struct ward_pool *pool, int delta);

#endif
