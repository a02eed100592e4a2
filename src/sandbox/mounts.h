/* mounts.h — build the sandbox's root from a list of mount operations (a
 * plan: src/core/plan.h makes one from a request) in a fresh tmpfs and
 * pivot_root into it.  Runs inside the new user and mount namespaces (the
 * sandbox's PID 1), with nothing but syscalls; it knows nothing of requests.
 *
 * Bind sources are cloned with open_tree() before anything is mounted, so
 * that the new root (mounted over /tmp while it is built) never hides one.
 * A source that is a descriptor the caller holds comes cloned by the
 * supervisor, or pinned to its inode (plan_pin_held); one below a rootfs is
 * found beneath it without a symlink (mounts_open_source).  Every mount of a
 * cloned tree is nosuid and nodev (but under /dev), read-only unless bound
 * writable.
 * Every target is reached from the new root by a walk that refuses symlinks
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so a symlink planted in a
 * --workdir cannot steer a mount outside the sandbox.  Mounts are attached
 * with move_mount() onto those fds, already read-only where they must be.
 *
 * The new root is a small tmpfs, unless the first op binds a tree at "/"
 * (an image's root, read-only): then that tree is the new root, and every
 * mount point must be in it already (a directory or file made where none
 * is fails: it is read-only); a symlink op is then satisfied by the same
 * symlink already there, and OPF_OVER files and symlinks come from a
 * scratch tmpfs under it.
 */
#ifndef WARD_MOUNTS_H
#define WARD_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum op_kind {
	OP_TMPFS,    /* tmpfs at dst: size_mb, mode, owned by the sandbox user when flag OWNED */
	OP_BIND,     /* bind host src at dst; read-only unless flag RW; src may be a file */
	OP_PROC,     /* fresh proc at dst */
	OP_DEVPTS,   /* new devpts instance at dst */
	OP_DIR,      /* mkdir dst (mode) */
	OP_SYMLINK,  /* symlink dst -> src (src is the link's text) */
	OP_FILE,     /* write data to dst (mode) */
	OP_MASK,     /* hide dst: /dev/null over a file, an empty read-only tmpfs over a directory */
	OP_READONLY, /* remount dst (already a mount) read-only */
};

enum {
	OPF_RW = 1,       /* bind read-write */
	OPF_OWNED = 2,    /* tmpfs root owned by the sandbox user */
	OPF_OPTIONAL = 4, /* skip silently when the source is missing */
	OPF_NOEXEC = 8,
	OPF_IDMAP = 16,       /* rw bind whose on-disk owner maps to the sandbox user */
	OPF_PINNED = 32,      /* src[0..below) must be the inode pin_dev/pin_ino: see plan_pin_held */
	OPF_PREPARED = 64,    /* applied already in the prepared root (mounts_prepare_root) */
	OPF_IDMAP_ONLY = 128, /* OPF_IDMAP or nothing: no plain bind when the kernel cannot */
	OPF_OVER = 256,       /* OP_FILE, OP_SYMLINK on a bound root: made in a scratch tmpfs and
	                 * bound over dst (a file) or over dst's directory (a symlink) */
};

struct mount_op {
	enum op_kind kind;
	const char *src;           /* host path (OP_BIND), link text (OP_SYMLINK) */
	const char *dst;           /* absolute path inside the sandbox */
	size_t below;              /* OP_BIND: when > 0, src[0..below) is a directory (a
			    * rootfs) and the rest of src ("/etc/ssl") a path
			    * found beneath it, never through a symlink */
	uint64_t pin_dev, pin_ino; /* OPF_PINNED */
	const char *data;          /* OP_FILE contents */
	size_t data_len;
	uint64_t size_mb; /* OP_TMPFS */
	unsigned mode;
	unsigned flags;
};

/* A bind source that names a descriptor of this process: the kernel's
 * "/proc/self/fd/N", followed by "/REST" or nothing (ward.h spells it
 * WARD_HELD_PATH for its callers). */
#define MOUNTS_HELD_PATH "/proc/self/fd/"

/* The most pseudo-terminals one sandbox may hold at once (its devpts
 * instance's max=): the host's pool (kernel.pty.max, less pty.reserve) is
 * shared by every devpts instance, so without a cap one sandbox could take
 * them all.  One more open of /dev/ptmx fails with ENOSPC. */
#define WARD_PTY_MAX 16

/* The ops, in order, and per op a detached mount tree prepared by the
 * supervisor (idmapped binds, held sources), or -1: nops entries each. */
struct mounts_input {
	const struct mount_op *ops;
	size_t nops;
	int *trees;           /* in/out: fds are consumed (closed) */
	const char *prepared; /* the prepared root's path in this mount namespace
			       * (the ops marked OPF_PREPARED are in it), or NULL */
};

/* Build the root and pivot into it; the cwd is /work afterwards, and
 * files are created as the sandbox user (fsuid) from then on.
 * 0, or -1 with a message in err. */
int mounts_build(struct mounts_input *in, char *err, size_t errlen);

/* A spawner helper's side, as root in a mount namespace of its own (its
 * PID 1s are born with a copy of it): the ops that are the same for every
 * sandbox of their shape (binds of host paths, symlinks, generated files;
 * nothing under a mount made per sandbox: /proc, /tmp, /work, /dev/pts,
 * /dev/shm), applied once at path on a tmpfs owned by root, with the mount
 * points of the others made, then read-only.  A PID 1 clones that tree
 * instead of building those ops again (mounts_input.prepared); in its copy
 * of the namespace the tree is locked read-only (it came from a more
 * privileged one), so nothing inside can remount it writable.  Marks each
 * op it applied OPF_PREPARED.  0, or -1 with err set (path then holds no
 * tree and no op is marked). */
int mounts_prepare_root(struct mount_op *ops, size_t nops, const char *path, char *err, size_t errlen);

/* Supervisor side (host mount namespace, as root): clone the directory or
 * file srcfd as a detached tree idmapped through userns_fd, nosuid+nodev on
 * every mount of the tree.  fd, or -errno. */
int mounts_idmapped_tree(int srcfd, int userns_fd);

/* Supervisor side, as root: clone a bind op's source whose path is a
 * descriptor the caller holds (MOUNTS_HELD_PATH "N[/REST]"), with
 * the op's attributes; REST is found beneath N, never through a symlink (a
 * final one included: mounts_open_source).  fd, or -errno (-EPERM: this
 * process may not clone mounts; pin the op for PID 1 instead). */
int mounts_held_tree(const struct mount_op *op);

/* The descriptor a held host path (MOUNTS_HELD_PATH "N[/REST]") names, and
 * in *rest what follows it ("" or "/REST"); -1 when src is not one, -EINVAL
 * when it is malformed. */
int mounts_held_fd(const char *src, const char **rest);

/* Exactly what a bind op's src names, as an O_PATH descriptor, when it is
 * not a plain path (held, below > 0 or OPF_PINNED):
 *   held ("/proc/self/fd/N[/REST]"): N itself, no path resolved;
 *   OPF_PINNED: src[0..below) opened without following any symlink, and
 *     refused (-ESTALE) unless it is the inode pin_dev/pin_ino;
 *   below > 0: src[0..below) as its path says (the caller's own path);
 * and then the rest of src beneath it, never leaving it and never through a
 * symlink (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a final symlink
 * is opened itself, not followed.  Only syscalls: the sandbox's PID 1 calls
 * it.  fd, or -errno (-EINVAL for a plain path). */
int mounts_open_source(const struct mount_op *op);

/* An op kind's name ("bind", "tmpfs"...), for messages and --print-plan. */
const char *mounts_op_name(enum op_kind k);

#endif
