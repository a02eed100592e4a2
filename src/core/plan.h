/* plan.h — the sandbox as data.  A request becomes a plan: the list of
 * mount operations that build the sandbox's root, in order.  The plan is
 * made in the supervisor (it may allocate and look at the host), printed by
 * `ward run --print-plan`, unit-tested without running anything, and applied
 * in one place (src/sandbox/mounts.c) inside the new namespaces, where no
 * allocation happens.
 */
#ifndef WARD_PLAN_H
#define WARD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sandbox/mounts.h" /* the mount ops a plan is made of */
#include "ward.h"

/* The most mount operations one sandbox's plan may hold: ward's own (~60)
 * and the request's 64 mounts leave room for a rootfs's top level; beyond
 * it the plan is refused (each op may be a descriptor PID 1 holds). */
#define PLAN_MAX_OPS 512u

struct plan {
	struct mount_op *ops;
	size_t nops, cap;
	char **strings; /* owned strings the ops point into */
	size_t nstrings, capstrings;
	bool oom;                 /* an allocation failed while building */
	struct mount_op oom_sink; /* what add() hands out once oom is set (never applied) */
	const char *hostname;
};

/* Build the plan for a request (system level).  0, or -1 with err set. */
int plan_build(struct plan *p, const struct ward_request *req, uid_t host_uid, char *err, size_t errlen);
void plan_free(struct plan *p);

/* Supervisor side, for a PID 1 that cannot use the caller's descriptors
 * (it lives in another mount namespace, where a mount cannot be cloned from
 * them): a held op's src becomes the path of its descriptor now
 * (/proc/self/fd/N's link) followed by its REST, below that path's length,
 * pinned (OPF_PINNED) to the descriptor's inode.  PID 1 then opens that path
 * without following any symlink and binds it only if it is still that
 * inode, which cannot be reused while the caller holds N.  0, or -1 with
 * err set. */
int plan_pin_held(struct plan *p, struct mount_op *op, char *err, size_t errlen);

/* A session's ephemeral /work gets a size of its own (0: as planned). */
void plan_size_work(struct plan *p, uint64_t work_size_mb);

/* The mount points a sandbox on an image needs in the image's root, for the
 * plan that binds that root whole (read-only: nothing can be made in it
 * then): what ward makes at its top, in /etc and in /dev, and what ward
 * hides there.  The image store makes them a layer of their own, on top of
 * every image's (image/points.c).  fn is called once per point, parents
 * first; target is a symlink's text, a file's, or NULL: an empty file
 * (one bound over), a directory. */
enum plan_point {
	PLAN_POINT_DIR,
	PLAN_POINT_OPAQUE, /* a directory hiding what the image has there */
	PLAN_POINT_FILE,   /* a file (target: its text), or a file bound over it */
	PLAN_POINT_SYMLINK,
	PLAN_POINT_HIDDEN, /* the image's entry, if any, is not seen */
};
typedef void plan_point_fn(void *arg, enum plan_point kind, const char *path, const char *target);
void plan_image_points(plan_point_fn *fn, void *arg);

/* One line per op, for --print-plan and the tests. */
void plan_print(const struct plan *p, FILE *f);

#endif
