/* mounts.h — apply a plan (src/core/plan.h): build the sandbox's root in a fresh
 * tmpfs and pivot_root into it.  Runs inside the new user and mount
 * namespaces (the sandbox's PID 1), with nothing but syscalls.
 *
 * Bind sources are cloned with open_tree() before anything is mounted, so
 * that the new root (mounted over /tmp while it is built) never hides one.
 * A source that is a descriptor the caller holds comes cloned by the
 * supervisor, or pinned to its inode (plan_pin_held); one below a rootfs is
 * found beneath it without a symlink (plan_open_source).  Every mount of a
 * cloned tree is nosuid and nodev (but under /dev), read-only unless bound
 * writable.
 * Every target is reached from the new root by a walk that refuses symlinks
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so a symlink planted in a
 * --workdir cannot steer a mount outside the sandbox.  Mounts are attached
 * with move_mount() onto those fds, already read-only where they must be.
 */
#ifndef WARD_MOUNTS_H
#define WARD_MOUNTS_H

#include <stddef.h>

#include "core/plan.h"

/* The most pseudo-terminals one sandbox may hold at once (its devpts
 * instance's max=): the host's pool (kernel.pty.max, less pty.reserve) is
 * shared by every devpts instance, so without a cap one sandbox could take
 * them all.  One more open of /dev/ptmx fails with ENOSPC. */
#define WARD_PTY_MAX 16

/* Per op: a detached mount tree prepared by the supervisor (idmapped binds),
 * or -1.  The array has plan->nops entries, or is NULL. */
struct mounts_input {
	const struct plan *plan;
	int *trees;          /* in/out: fds are consumed (closed) */
};

/* Build the root and pivot into it; the cwd is /work afterwards, and
 * files are created as the sandbox user (fsuid) from then on.
 * 0, or -1 with a message in err. */
int mounts_build(struct mounts_input *in, char *err, size_t errlen);

/* Supervisor side (host mount namespace, as root): clone the directory or
 * file srcfd as a detached tree idmapped through userns_fd, nosuid+nodev on
 * every mount of the tree.  fd, or -errno. */
int mounts_idmapped_tree(int srcfd, int userns_fd);

/* Supervisor side, as root: clone a bind op's source whose path is a
 * descriptor the caller holds (WARD_HELD_PATH "N[/REST]", see ward.h), with
 * the op's attributes; REST is found beneath N, never through a symlink (a
 * final one included: plan_open_source).  fd, or -errno (-EPERM: this
 * process may not clone mounts; pin the op for PID 1 instead). */
int mounts_held_tree(const struct mount_op *op);

#endif
