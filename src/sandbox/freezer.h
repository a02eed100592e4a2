/* freezer.h — stop a cgroup's whole tree where it is, and let it go on
 * (freezer.c: cgroup v2's cgroup.freeze, v1's freezer hierarchy). */
#ifndef WARD_FREEZER_H
#define WARD_FREEZER_H

#include <stdbool.h>
#include <sys/types.h>

struct ward_cgroup;
struct freezer;

/* A freezer for cg's tree.  v1: a freezer cgroup named as cg is made and
 * pid moved in; everything pid forks afterwards is in it (call it before
 * the tree has other processes).  0, or -errno with err set (-ENOTSUP: no
 * freezer here). */
int freezer_open(struct ward_cgroup *cg, pid_t pid, struct freezer **out, char *err, size_t errlen);
/* Freeze (true) or thaw, and wait until the whole tree is so, up to
 * timeout_s (-ETIMEDOUT; the request stays in force).  0 or -errno. */
int freezer_set(struct freezer *f, bool frozen, double timeout_s);
/* Thaw (v1) and forget; v1's cgroup is removed once empty.  NULL ok. */
void freezer_close(struct freezer *f);

#endif
