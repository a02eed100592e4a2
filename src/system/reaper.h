/* reaper.h — sandboxes whose run is over, torn down by a thread of ward's
 * after the caller has its answer (reaper.c; ward.h: ward_reaper_start).
 * backend.c hands them over; supervisor.c does the teardown. */
#ifndef WARD_REAPER_H
#define WARD_REAPER_H

#include <stdbool.h>

struct sandbox;

/* Is the thread running (a run may then end at PID 1's report)? */
bool reaper_running(void);
/* Hand a used sandbox over; false when the thread is not running or too
 * many wait already (the caller destroys it itself). */
bool reaper_retire(struct sandbox *sb);

#endif
