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

#include "ward.h"

enum op_kind {
	OP_TMPFS,     /* tmpfs at dst: size_mb, mode, owned by the sandbox user when flag OWNED */
	OP_BIND,      /* bind host src at dst; read-only unless flag RW; src may be a file */
	OP_PROC,      /* fresh proc at dst */
	OP_DEVPTS,    /* new devpts instance at dst */
	OP_DIR,       /* mkdir dst (mode) */
	OP_SYMLINK,   /* symlink dst -> src (src is the link's text) */
	OP_FILE,      /* write data to dst (mode) */
	OP_MASK,      /* hide dst: /dev/null over a file, an empty read-only tmpfs over a directory */
	OP_READONLY,  /* remount dst (already a mount) read-only */
};

enum {
	OPF_RW = 1,        /* bind read-write */
	OPF_OWNED = 2,     /* tmpfs root owned by the sandbox user */
	OPF_OPTIONAL = 4,  /* skip silently when the source is missing */
	OPF_NOEXEC = 8,
	OPF_IDMAP = 16,    /* rw bind whose on-disk owner maps to the sandbox user */
	OPF_PINNED = 32,   /* src[0..below) must be the inode pin_dev/pin_ino: see plan_pin_held */
};

struct mount_op {
	enum op_kind kind;
	const char *src;   /* host path (OP_BIND), link text (OP_SYMLINK) */
	const char *dst;   /* absolute path inside the sandbox */
	size_t below;      /* OP_BIND: when > 0, src[0..below) is a directory (a
			    * rootfs) and the rest of src ("/etc/ssl") a path
			    * found beneath it, never through a symlink */
	uint64_t pin_dev, pin_ino; /* OPF_PINNED */
	const char *data;  /* OP_FILE contents */
	size_t data_len;
	uint64_t size_mb;  /* OP_TMPFS */
	unsigned mode;
	unsigned flags;
};

struct plan {
	struct mount_op *ops;
	size_t nops, cap;
	char **strings;    /* owned strings the ops point into */
	size_t nstrings, capstrings;
	bool oom;          /* an allocation failed while building */
	const char *hostname;
};

/* Build the plan for a request (system level).  0, or -1 with err set. */
int plan_build(struct plan *p, const struct ward_request *req, uid_t host_uid, char *err, size_t errlen);
void plan_free(struct plan *p);
/* The descriptor a held host path ("/proc/self/fd/N[/REST]", see ward.h)
 * names, and in *rest what follows it ("" or "/REST"); -1 when src is not
 * one, -EINVAL when it is malformed. */
int plan_held_fd(const char *src, const char **rest);

/* Exactly what a bind op's src names, as an O_PATH descriptor, when it is
 * not a plain path (held, below > 0 or OPF_PINNED):
 *   held ("/proc/self/fd/N[/REST]"): N itself, no path resolved;
 *   OPF_PINNED: src[0..below) opened without following any symlink, and
 *     refused (-ESTALE) unless it is the inode pin_dev/pin_ino;
 *   below > 0: src[0..below) as its path says (the caller's own path);
 * and then the rest of src beneath it, never leaving it and never through a
 * symlink (pathguard_open_below): a final symlink is opened itself, not
 * followed.  Only syscalls: the sandbox's PID 1 calls it.  fd, or -errno
 * (-EINVAL for a plain path). */
int plan_open_source(const struct mount_op *op);

/* Supervisor side, for a PID 1 that cannot use the caller's descriptors
 * (it lives in another mount namespace, where a mount cannot be cloned from
 * them): a held op's src becomes the path of its descriptor now
 * (/proc/self/fd/N's link) followed by its REST, below that path's length,
 * pinned (OPF_PINNED) to the descriptor's inode.  PID 1 then opens that path
 * without following any symlink and binds it only if it is still that
 * inode, which cannot be reused while the caller holds N.  0, or -1 with
 * err set. */
int plan_pin_held(struct plan *p, struct mount_op *op, char *err, size_t errlen);

/* One line per op, for --print-plan and the tests. */
void plan_print(const struct plan *p, FILE *f);
const char *plan_op_name(enum op_kind k);

#endif
