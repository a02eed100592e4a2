/* session_copy.h — a tree copy run by a short-lived child process, in a
 * session's cgroup, with a deadline (session_copy.c). */
#ifndef WARD_SESSION_COPY_H
#define WARD_SESSION_COPY_H

#include "system/treecopy.h"

struct ward_cgroup;

/* treecopy(from, to, -1, -1, lim, st, ...) in a child process moved into
 * cg first (NULL: the caller's cgroup), killed past deadline_s seconds.
 * 0, or -errno with err set: the copy's own (-EFBIG, -EMLINK, -EACCES
 * ...), -ETIMEDOUT past the deadline, -ENOMEM when the child was killed
 * (out of cg's memory).  What was copied so far stays. */
int session_copy(int from, int to, struct ward_cgroup *cg, double deadline_s, const struct treecopy_limits *lim,
                 struct treecopy_stats *st, char *err, size_t errlen);

#endif
