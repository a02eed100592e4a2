/* mounts.c — the sandbox's filesystem, built from its mount ops (mounts.h).
 * mounts_build runs as PID 1, inside the new namespaces: syscalls, snprintf
 * and the stack, never an allocation; mounts_held_tree and
 * mounts_idmapped_tree run in the supervisor, on the host.  Knows nothing of
 * requests or plans: only the ops it is given. */
#define _GNU_SOURCE
#include "sandbox/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errf.h"
#include "sandbox/container.h"
#include "sandbox/userns.h" /* WARD_SANDBOX_UID */

/* Where the new root is assembled before pivot_root. */
#define STAGE "/tmp"

static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = flags & O_CREAT ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Where the ops are applied: the new root, and the directory the last
 * op's destination was in, kept open (most ops land in /etc or /dev, one
 * after another), so that each op does not walk to it again.  A mount on
 * that directory or above it hides what the kept descriptor names: the
 * op that makes one forgets it (beneath_mounted). */
struct beneath {
	int root;
	int dir; /* -1, or dirpath's descriptor */
	char dirpath[PATH_MAX];
	int mask_dir;      /* the first masked directory's empty tmpfs, or -1 */
	int scratch;       /* a bound root's scratch tmpfs (OPF_OVER), or -1 */
	unsigned nscratch; /* names made in it so far */
};

static void beneath_forget(struct beneath *b)
{
	if (b->dir >= 0)
		close(b->dir);
	b->dir = -1;
	b->dirpath[0] = 0;
}

static bool covers(const char *a, const char *b);

/* An op mounted something at dst. */
static void beneath_mounted(struct beneath *b, const char *dst)
{
	if (b->dir >= 0 && covers(dst, b->dirpath))
		beneath_forget(b);
}

/* The parent directory of dst (absolute, beneath root), creating missing
 * directories, never through a symlink.  *leaf points at the last
 * component in dst.  A descriptor b owns (the caller does not close it),
 * or -1. */
static int open_parent(struct beneath *b, const char *dst, const char **leaf)
{
	char buf[PATH_MAX];
	size_t n = strlen(dst);
	if (n >= sizeof(buf) || dst[0] != '/') {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, dst, n + 1);
	char *slash = strrchr(buf, '/');
	*leaf = dst + (slash - buf) + 1;
	*slash = 0;
	if (slash == buf)
		return b->root; /* the parent is the root itself */
	if (b->dir >= 0 && strcmp(b->dirpath, buf) == 0)
		return b->dir;
	beneath_forget(b);
	int fd = b->root;
	for (char *p = buf + 1, *q; *p; p = q) {
		q = strchr(p, '/');
		if (q)
			*q++ = 0;
		else
			q = p + strlen(p);
		if (!*p)
			continue;
		/* made first: on a fresh root, most are missing */
		if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
			if (fd != b->root)
				close(fd);
			return -1;
		}
		int nfd = openat2_beneath(fd, p, O_PATH | O_DIRECTORY, 0);
		if (fd != b->root)
			close(fd);
		if (nfd < 0)
			return -1;
		fd = nfd;
	}
	b->dir = fd;
	memcpy(b->dirpath, dst, (size_t)(slash - buf));
	b->dirpath[slash - buf] = 0;
	return fd;
}

/* Open (creating if needed) the mount point dst: a directory, or a file
 * when as_file.  An fd the caller closes, or -1. */
static int open_target(struct beneath *b, const char *dst, bool as_file)
{
	const char *leaf;
	if (strcmp(dst, "/") == 0)
		return fcntl(b->root, F_DUPFD_CLOEXEC, 3);
	int pfd = open_parent(b, dst, &leaf);
	if (pfd < 0)
		return -1;
	if (!as_file) {
		/* made first (a symlink there makes mkdirat fail with EEXIST,
		 * and the open below refuses it) */
		if (mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST)
			return -1;
		return openat2_beneath(pfd, leaf, O_PATH | O_DIRECTORY, 0);
	}
	int fd = openat2_beneath(pfd, leaf, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	fd = openat2_beneath(pfd, leaf, O_PATH, 0);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	return fd;
}

static void fdpath(char *buf, size_t n, int fd)
{
	snprintf(buf, n, "/proc/self/fd/%d", fd);
}

static int attach(int tree, struct beneath *b, const char *dst, bool as_file)
{
	int t = open_target(b, dst, as_file);
	if (t < 0)
		return -1;
	int r = move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	int e = errno;
	close(t);
	errno = e;
	return r;
}

static int set_attrs(int tree, unsigned long long set)
{
	struct mount_attr attr = {.attr_set = set};
	return mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr));
}

static int mount_fs_at(struct beneath *b, const char *dst, const char *type, unsigned long flags, const char *opts)
{
	int t = open_target(b, dst, false);
	if (t < 0)
		return -1;
	char p[64];
	fdpath(p, sizeof(p), t);
	int r = mount(type, p, type, flags, opts);
	int e = errno;
	close(t);
	errno = e;
	return r;
}

/* Writes data[0..len) to fd and closes it.  0, or -1 with errno set. */
static int write_close(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			errno = e;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return close(fd);
}

static int write_file_at(struct beneath *b, const char *dst, const char *data, size_t len, unsigned mode)
{
	const char *leaf;
	int pfd = open_parent(b, dst, &leaf);
	if (pfd < 0)
		return -1;
	int fd = openat2_beneath(pfd, leaf, O_CREAT | O_EXCL | O_WRONLY, mode);
	return fd < 0 ? -1 : write_close(fd, data, len);
}

/* A detached clone of dirfd/path with the op's attributes, on the whole
 * tree (AT_RECURSIVE: a mount below the source, such as a tmpfs mounted
 * inside a workdir, gets them too): nosuid, read-only unless RW, nodev
 * unless it lands under /dev.  fd or -errno. */
static int clone_source(const struct mount_op *op, int dirfd, const char *path, unsigned extra)
{
	int tree = open_tree(dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | extra);
	if (tree < 0)
		return -errno;
	unsigned long long a = MOUNT_ATTR_NOSUID;
	if (!(op->flags & OPF_RW))
		a |= MOUNT_ATTR_RDONLY;
	if (strncmp(op->dst, "/dev/", 5) != 0)
		a |= MOUNT_ATTR_NODEV;
	if (set_attrs(tree, a) < 0) {
		int e = errno;
		close(tree);
		return -e;
	}
	return tree;
}

/* A bind source must be a directory or a regular file: not a symlink (one
 * swapped in after the plan looked is not followed), nor a device.
 * 0 or -errno. */
static int source_type_ok(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) ? 0 : -ELOOP;
}

int mounts_held_fd(const char *src, const char **rest)
{
	size_t k = strlen(MOUNTS_HELD_PATH);
	if (strncmp(src, MOUNTS_HELD_PATH, k) != 0)
		return -1;
	const char *p = src + k, *end = p;
	long fd = 0;
	while (*end >= '0' && *end <= '9' && fd <= INT_MAX)
		fd = fd * 10 + (*end++ - '0');
	if (end == p || fd > INT_MAX || (*end && *end != '/'))
		return -EINVAL;
	if (rest)
		*rest = end;
	return (int)fd;
}

/* src[0..n) as a string, on the caller's stack.  0 or -ENAMETOOLONG. */
static int prefix(char *buf, size_t size, const char *src, size_t n)
{
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(buf, src, n);
	buf[n] = 0;
	return 0;
}

/* The anchor of a pinned op: its path, opened without following a symlink
 * (a final one included), and only if it is the pinned inode. */
static int open_pinned(const char *path, const struct mount_op *op)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != op->pin_dev || (uint64_t)st.st_ino != op->pin_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int mounts_open_source(const struct mount_op *op)
{
	const char *rest = NULL;
	int dir = mounts_held_fd(op->src, &rest);
	if (dir == -EINVAL)
		return -EINVAL;
	if (dir >= 0) {
		dir = fcntl(dir, F_DUPFD_CLOEXEC, 0);
		if (dir < 0)
			return -errno;
	} else if (op->below || (op->flags & OPF_PINNED)) {
		char anchor[PATH_MAX];
		size_t n = op->below ? op->below : strlen(op->src);
		int r = prefix(anchor, sizeof(anchor), op->src, n);
		if (r < 0)
			return r;
		rest = op->src + n;
		if (op->flags & OPF_PINNED)
			dir = open_pinned(anchor, op);
		else if ((dir = open(anchor, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			dir = -errno;
		if (dir < 0)
			return dir;
	} else {
		return -EINVAL;
	}
	while (*rest == '/')
		rest++;
	if (!*rest)
		return dir;
	int fd = openat2_beneath(dir, rest, O_PATH, 0);
	if (fd < 0)
		fd = -errno;
	close(dir);
	return fd;
}

/* The clone of what a held, pinned or rootfs-relative op names, found by
 * mounts_open_source: never a path resolved again through a symlink. */
static int clone_exact(const struct mount_op *op)
{
	int fd = mounts_open_source(op);
	if (fd < 0)
		return fd;
	int r = source_type_ok(fd);
	int tree = r < 0 ? r : clone_source(op, fd, "", AT_EMPTY_PATH);
	close(fd);
	return tree;
}

int mounts_held_tree(const struct mount_op *op)
{
	return mounts_held_fd(op->src, NULL) < 0 ? -EINVAL : clone_exact(op);
}

int mounts_idmapped_tree(int srcfd, int userns_fd)
{
	int r = source_type_ok(srcfd);
	if (r < 0)
		return r;
	int tree = open_tree(srcfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0)
		return -errno;
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
		.userns_fd = (unsigned long long)userns_fd,
	};
	/* The idmap applies to this mount only (not recursively): the kernel
	 * refuses to idmap a tree with submounts of other filesystems.  Those
	 * submounts (a tmpfs the host mounted inside a workdir) still get
	 * nosuid and nodev, in a second, recursive call; if it fails, so does
	 * the idmapped bind (the caller falls back to a plain one, which sets
	 * them recursively or fails). */
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0 ||
	    set_attrs(tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0) {
		int e = errno;
		close(tree);
		return -e;
	}
	return tree;
}

const char *mounts_op_name(enum op_kind k)
{
	switch (k) {
	case OP_TMPFS:
		return "tmpfs";
	case OP_BIND:
		return "bind";
	case OP_PROC:
		return "proc";
	case OP_DEVPTS:
		return "devpts";
	case OP_DIR:
		return "dir";
	case OP_SYMLINK:
		return "symlink";
	case OP_FILE:
		return "file";
	case OP_MASK:
		return "mask";
	case OP_READONLY:
		return "readonly";
	}
	return "?";
}

/* An op of the plan failed (errno set): err says which, and for a procfs
 * refused inside a container, the container's restriction and its fix. */
static int op_failed(const struct mount_op *op, char *err, size_t errlen)
{
	int e = errno;
	char hint[512];
	bool hinted = op->kind == OP_PROC && e == EPERM && container_proc_hint(hint, sizeof(hint));
	errno = e;
	if (hinted) {
		snprintf(err, errlen, "cannot set up proc %s: %s; %s", op->dst, strerror(e), hint);
		return -1;
	}
	return base_errf_errno(err, errlen, "cannot set up %s %s", mounts_op_name(op->kind), op->dst);
}

/* Why a bind source could not be cloned, for PID 1's message. */
static const char *clone_problem(int e)
{
	switch (e) {
	case ESTALE:
		return "it is no longer what was checked (renamed or replaced since): try again";
	case ELOOP:
		return "a symlink lies on the way inside it, which is refused";
	case EXDEV:
		return "it leads outside its root";
	default:
		return strerror(e);
	}
}

/* The plan binds a tree at "/": an image's root, the new root itself. */
static bool root_is_bound(const struct mounts_input *in)
{
	return in->nops > 0 && in->ops[0].kind == OP_BIND && strcmp(in->ops[0].dst, "/") == 0;
}

/* Step 1: clone every host source now, before the staging root hides any
 * of them.  Read-only binds are made read-only before they are attached:
 * there is no moment when they are writable inside. */
static int clone_sources(struct mounts_input *in, bool prepared, char *err, size_t errlen)
{
	for (size_t i = 0; i < in->nops; i++) {
		const struct mount_op *op = &in->ops[i];
		if (op->kind != OP_BIND || in->trees[i] >= 0 || (prepared && (op->flags & OPF_PREPARED)))
			continue;
		/* A held path is the supervisor's descriptor, not ours: it must
		 * have come cloned or pinned (plan_pin_held). */
		int held = mounts_held_fd(op->src, NULL);
		int tree = held != -1                              ? -EBADF
		           : op->below || (op->flags & OPF_PINNED) ? clone_exact(op)
		                                                   : clone_source(op, AT_FDCWD, op->src, 0);
		if (tree < 0) {
			if (op->flags & OPF_OPTIONAL)
				continue;
			snprintf(err, errlen, "cannot bind '%s': %s", op->src, clone_problem(-tree));
			return -1;
		}
		in->trees[i] = tree;
	}
	return 0;
}

/* Step 2: the new root, a small tmpfs (made read-only at the end), as an
 * O_PATH fd, or -1 with err set. */
static int stage_root(char *err, size_t errlen)
{
	/* Files ward creates from here on are owned by the sandbox user: the
	 * only uid this user namespace maps.  (Sources were cloned above with
	 * ward's own identity: a bind the operator asked for may lie below a
	 * directory the sandbox user could not enter.) */
	setfsuid(WARD_SANDBOX_UID);
	setfsgid(WARD_SANDBOX_GID);

	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0)
		return base_errf_errno(err, errlen, "cannot mount the sandbox root tmpfs");
	int rootfd = open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return base_errf_errno(err, errlen, "cannot open the sandbox root");
	return rootfd;
}

/* Step 2, with a prepared root: its clone (tree, consumed), moved where the
 * new root is assembled.  O_PATH fd, or -1 with err set. */
static int stage_prepared(int tree, char *err, size_t errlen)
{
	setfsuid(WARD_SANDBOX_UID);
	setfsgid(WARD_SANDBOX_GID);
	int r = move_mount(tree, "", AT_FDCWD, STAGE, MOVE_MOUNT_F_EMPTY_PATH);
	close(tree);
	if (r < 0)
		return base_errf_errno(err, errlen, "cannot attach the prepared sandbox root");
	int rootfd = open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return base_errf_errno(err, errlen, "cannot open the sandbox root");
	return rootfd;
}

/* Step 2, on a bound root (its tree, consumed): a scratch tmpfs where the
 * new root is assembled when an op is made over a mount point (*scratch:
 * its root, O_PATH; else -1), and the tree on top of it.  The new root's
 * O_PATH fd, or -1 with err set. */
static int stage_bound(const struct mounts_input *in, int tree, int *scratch, char *err, size_t errlen)
{
	*scratch = -1;
	setfsuid(WARD_SANDBOX_UID);
	setfsgid(WARD_SANDBOX_GID);
	bool over = false;
	for (size_t i = 0; i < in->nops; i++)
		over |= (in->ops[i].flags & OPF_OVER) != 0;
	if (over) {
		if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		          "size=64k,nr_inodes=64,mode=0755") < 0 ||
		    (*scratch = open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			close(tree);
			return base_errf_errno(err, errlen, "cannot make the sandbox's scratch tmpfs");
		}
	}
	int r = move_mount(tree, "", AT_FDCWD, STAGE, MOVE_MOUNT_F_EMPTY_PATH);
	close(tree);
	int rootfd = r < 0 ? -1 : open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		base_errf_errno(err, errlen, "cannot attach the image's root as the sandbox root");
		if (*scratch >= 0)
			close(*scratch);
		*scratch = -1;
		return -1;
	}
	return rootfd;
}

/* OP_BIND: attach the cloned tree (consumed), unless optional and missing. */
static int bind_at(struct beneath *b, const struct mount_op *op, int *tree)
{
	if (*tree < 0)
		return 0; /* optional and missing */
	struct stat st;
	bool as_file = fstat(*tree, &st) == 0 && !S_ISDIR(st.st_mode);
	int r = attach(*tree, b, op->dst, as_file);
	close(*tree);
	*tree = -1;
	return r;
}

static int tmpfs_at(struct beneath *b, const struct mount_op *op)
{
	char opts[128];
	unsigned long fl = MS_NOSUID | MS_NODEV;
	if (op->flags & OPF_OWNED)
		snprintf(opts, sizeof(opts), "size=%llum,mode=%04o,uid=%d,gid=%d", (unsigned long long)op->size_mb,
		         op->mode, WARD_SANDBOX_UID, WARD_SANDBOX_GID);
	else
		snprintf(opts, sizeof(opts), "size=%llum,mode=%04o", (unsigned long long)op->size_mb, op->mode);
	return mount_fs_at(b, op->dst, "tmpfs", fl, opts);
}

static int devpts_at(struct beneath *b, const struct mount_op *op)
{
	char opts[128];
	snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620,max=%d", WARD_PTY_MAX);
	return mount_fs_at(b, op->dst, "devpts", MS_NOSUID | MS_NOEXEC, opts);
}

/* OP_SYMLINK.  On a bound root the same symlink may be there already (its
 * mount points layer has /dev's): that one is the op done. */
static int symlink_at(struct beneath *b, const struct mount_op *op)
{
	const char *leaf;
	int pfd = open_parent(b, op->dst, &leaf);
	if (pfd < 0)
		return -1;
	if (symlinkat(op->src, pfd, leaf) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	char text[PATH_MAX];
	ssize_t n = readlinkat(pfd, leaf, text, sizeof(text) - 1);
	if (n < 0 || (size_t)n != strlen(op->src) || memcmp(text, op->src, (size_t)n) != 0) {
		errno = EEXIST;
		return -1;
	}
	return 0;
}

/* A clone of name in the scratch tmpfs, read-only, attached at dst (a file
 * when as_file). */
static int scratch_attach(struct beneath *b, const char *name, const char *dst, bool as_file)
{
	int tree = open_tree(b->scratch, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
	if (tree < 0)
		return -1;
	int r = set_attrs(tree, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (r == 0)
		r = attach(tree, b, dst, as_file);
	int e = errno;
	close(tree);
	errno = e;
	return r;
}

/* OP_FILE with OPF_OVER: written in the scratch tmpfs, bound over dst (a
 * file already in the root). */
static int file_over(struct beneath *b, const struct mount_op *op)
{
	if (b->scratch < 0) {
		errno = EINVAL;
		return -1;
	}
	char name[32];
	snprintf(name, sizeof(name), "f%u", b->nscratch++);
	int fd = openat(b->scratch, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, op->mode);
	if (fd < 0 || write_close(fd, op->data, op->data_len) < 0)
		return -1;
	return scratch_attach(b, name, op->dst, true);
}

/* OP_SYMLINK with OPF_OVER: a directory of the scratch tmpfs holding the
 * link alone, bound over the link's directory (already in the root). */
static int symlink_over(struct beneath *b, const struct mount_op *op)
{
	const char *slash = strrchr(op->dst, '/');
	char dir[PATH_MAX], name[32];
	if (b->scratch < 0 || slash == op->dst || (size_t)(slash - op->dst) >= sizeof(dir)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(dir, op->dst, (size_t)(slash - op->dst));
	dir[slash - op->dst] = 0;
	snprintf(name, sizeof(name), "d%u", b->nscratch++);
	if (mkdirat(b->scratch, name, 0755) < 0)
		return -1;
	int dfd = openat2_beneath(b->scratch, name, O_PATH | O_DIRECTORY, 0);
	if (dfd < 0)
		return -1;
	int r = symlinkat(op->src, dfd, slash + 1);
	int e = errno;
	close(dfd);
	errno = e;
	if (r < 0)
		return -1;
	r = scratch_attach(b, name, dir, false);
	e = errno;
	beneath_mounted(b, dir);
	errno = e;
	return r;
}

/* OP_MASK: /dev/null over a file, an empty read-only tmpfs over a
 * directory.  *mask_dir: the first masked directory's tmpfs, or -1. */
static int mask_at(struct beneath *b, const struct mount_op *op)
{
	int *mask_dir = &b->mask_dir;
	int t = openat2_beneath(b->root, op->dst + 1, O_PATH, 0);
	if (t < 0)
		return (op->flags & OPF_OPTIONAL && errno == ENOENT) ? 0 : -1;
	struct stat st;
	int r = fstat(t, &st);
	char tp[64];
	fdpath(tp, sizeof(tp), t);
	if (r == 0 && S_ISDIR(st.st_mode) && *mask_dir >= 0) {
		/* Every masked directory shows the same empty, read-only
		 * tmpfs: a bind of the first (its flags and read-only
		 * superblock come with it), one superblock to make and tear
		 * down, not one each. */
		char sp[64];
		fdpath(sp, sizeof(sp), *mask_dir);
		r = mount(sp, tp, NULL, MS_BIND, NULL);
	} else if (r == 0 && S_ISDIR(st.st_mode)) {
		r = mount("tmpfs", tp, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		          "size=4k,nr_inodes=1,mode=0555");
		if (r == 0) /* its root now (else the next mask makes its own) */
			*mask_dir = openat2_beneath(b->root, op->dst + 1, O_PATH | O_DIRECTORY, 0);
	} else if (r == 0)
		r = mount("/dev/null", tp, NULL, MS_BIND, NULL);
	close(t);
	return r;
}

/* OP_READONLY: bind the path onto itself, read-only, before anything
 * inside can run: /etc, /dev, /proc/sys. */
static int readonly_at(struct beneath *b, const struct mount_op *op)
{
	int t = openat2_beneath(b->root, op->dst + 1, O_PATH | O_DIRECTORY, 0);
	if (t < 0)
		return (op->flags & OPF_OPTIONAL && errno == ENOENT) ? 0 : -1;
	int tree = open_tree(t, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	int r = tree < 0 ? -1 : set_attrs(tree, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID);
	if (r == 0)
		r = move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	if (tree >= 0)
		close(tree);
	close(t);
	return r;
}

/* One op, beneath the new root.  0, or -1 with errno set. */
static int apply_op(struct beneath *b, const struct mount_op *op, int *tree)
{
	int r = 0;
	switch (op->kind) {
	case OP_BIND:
		r = bind_at(b, op, tree);
		break;
	case OP_TMPFS:
		r = tmpfs_at(b, op);
		break;
	case OP_PROC:
		r = mount_fs_at(b, op->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		break;
	case OP_DEVPTS:
		r = devpts_at(b, op);
		break;
	case OP_DIR: {
		int t = open_target(b, op->dst, false);
		return t < 0 ? -1 : close(t);
	}
	case OP_SYMLINK:
		return op->flags & OPF_OVER ? symlink_over(b, op) : symlink_at(b, op);
	case OP_FILE:
		return op->flags & OPF_OVER ? file_over(b, op)
		                            : write_file_at(b, op->dst, op->data, op->data_len, op->mode);
	case OP_MASK:
		r = mask_at(b, op);
		break;
	case OP_READONLY:
		r = readonly_at(b, op);
		break;
	}
	int e = errno;
	beneath_mounted(b, op->dst); /* (failed or not: forgetting is always safe) */
	errno = e;
	return r;
}

static void beneath_init(struct beneath *b, int rootfd)
{
	b->root = rootfd;
	b->dir = -1;
	b->dirpath[0] = 0;
	b->mask_dir = -1;
	b->scratch = -1;
	b->nscratch = 0;
}

static void beneath_end(struct beneath *b)
{
	beneath_forget(b);
	if (b->mask_dir >= 0)
		close(b->mask_dir);
	b->mask_dir = -1;
	if (b->scratch >= 0)
		close(b->scratch);
	b->scratch = -1;
}

/* Step 3: the plan, in order (a bound root's op 0 is the root: done).
 * scratch: a bound root's scratch tmpfs (consumed), or -1.  0, or -1 with
 * err set. */
static int apply_ops(struct mounts_input *in, int rootfd, bool prepared, int scratch, char *err, size_t errlen)
{
	struct beneath b;
	beneath_init(&b, rootfd);
	b.scratch = scratch;
	for (size_t i = root_is_bound(in) ? 1 : 0; i < in->nops; i++) {
		const struct mount_op *op = &in->ops[i];
		if (prepared && (op->flags & OPF_PREPARED))
			continue;
		if (apply_op(&b, op, &in->trees[i]) < 0) {
			op_failed(op, err, errlen);
			beneath_end(&b);
			return -1;
		}
	}
	/* The scratch tmpfs's files are bound read-only; its superblock is
	 * made so too, as the root tmpfs's is. */
	char sp[64];
	fdpath(sp, sizeof(sp), b.scratch);
	if (b.scratch >= 0 &&
	    mount(NULL, sp, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		base_errf_errno(err, errlen, "cannot make the sandbox's scratch tmpfs read-only");
		beneath_end(&b);
		return -1;
	}
	beneath_end(&b);
	return 0;
}

/* Step 4: into the new root (rootfd, consumed); the old one is detached
 * and gone. */
static int enter_root(int rootfd, bool prepared, bool bound, char *err, size_t errlen)
{
	if (fchdir(rootfd) < 0) {
		close(rootfd);
		return base_errf_errno(err, errlen, "cannot enter the sandbox root");
	}
	close(rootfd);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return base_errf_errno(err, errlen, "pivot_root into the sandbox root failed");
	if (umount2(".", MNT_DETACH) < 0)
		return base_errf_errno(err, errlen, "cannot detach the host's root");
	if (chdir("/") < 0)
		return base_errf_errno(err, errlen, "chdir /");
	/* (A prepared root came read-only, and locked so: its superblock is
	 * the host's, which this namespace could not remount anyway; a bound
	 * one was cloned read-only.) */
	if (!prepared && !bound && mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return base_errf_errno(err, errlen, "cannot make the sandbox root read-only");
	if (chdir("/work") < 0)
		return base_errf_errno(err, errlen, "chdir /work");
	return 0;
}

int mounts_build(struct mounts_input *in, char *err, size_t errlen)
{
	/* Nothing we do may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		int e = errno;
		char hint[320];
		bool hinted = container_mount_hint(e, hint, sizeof(hint));
		errno = e;
		if (!hinted)
			return base_errf_errno(err, errlen, "cannot make the mount namespace private");
		snprintf(err, errlen, "cannot make the mount namespace private: %s; %s", strerror(e), hint);
		return -1;
	}
	/* The prepared root, cloned whole (one call for its dozen mounts);
	 * where it cannot be, every op is applied here as without one. */
	bool bound = root_is_bound(in); /* (a bound root is never prepared) */
	int pre = in->prepared && !bound
	                  ? open_tree(AT_FDCWD, in->prepared, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
	                  : -1;
	bool prepared = pre >= 0;
	if (clone_sources(in, prepared, err, errlen) < 0) {
		if (pre >= 0)
			close(pre);
		return -1;
	}
	if (bound && in->trees[0] < 0) {
		snprintf(err, errlen, "cannot bind the image's root: it was not cloned");
		return -1;
	}
	int scratch = -1;
	int rootfd = bound      ? stage_bound(in, in->trees[0], &scratch, err, errlen)
	             : prepared ? stage_prepared(pre, err, errlen)
	                        : stage_root(err, errlen);
	if (bound)
		in->trees[0] = -1;
	if (rootfd < 0)
		return -1;
	if (apply_ops(in, rootfd, prepared, scratch, err, errlen) < 0) {
		close(rootfd);
		return -1;
	}
	return enter_root(rootfd, prepared, bound, err, errlen);
}

/* ---- the prepared root (a spawner helper's, on the host) ---------------- */

/* A mount made per sandbox: what it covers cannot be prepared. */
static bool per_sandbox(const struct mount_op *op)
{
	return op->kind == OP_PROC || op->kind == OP_DEVPTS || op->kind == OP_TMPFS || op->kind == OP_MASK ||
	       op->kind == OP_READONLY;
}

/* a is b or an ancestor of it */
static bool covers(const char *a, const char *b)
{
	size_t n = strlen(a);
	return strcmp(a, "/") == 0 || (strncmp(a, b, n) == 0 && (b[n] == '/' || b[n] == 0));
}

/* The same for every sandbox of the plan's shape, and nothing made per
 * sandbox above it. */
static bool preparable(const struct mount_op *ops, size_t nops, const struct mount_op *op)
{
	if (op->kind == OP_BIND &&
	    (op->below || (op->flags & (OPF_PINNED | OPF_IDMAP)) || mounts_held_fd(op->src, NULL) != -1))
		return false;
	if (op->kind != OP_BIND && op->kind != OP_SYMLINK && op->kind != OP_FILE && op->kind != OP_DIR)
		return false;
	for (size_t i = 0; i < nops; i++)
		if (per_sandbox(&ops[i]) && covers(ops[i].dst, op->dst))
			return false;
	return true;
}

/* Whether a per-sandbox op is the topmost one at its path (its mount point
 * is made in the prepared root; the others are inside it). */
static bool topmost(const struct mount_op *ops, size_t nops, const struct mount_op *op)
{
	for (size_t i = 0; i < nops; i++)
		if (&ops[i] != op && per_sandbox(&ops[i]) && covers(ops[i].dst, op->dst) &&
		    strcmp(ops[i].dst, op->dst) != 0)
			return false;
	return true;
}

/* The ops marked OPF_PREPARED, applied beneath rootfd; the mount points
 * of the others made. */
static int prepare_apply(struct mount_op *ops, size_t nops, int rootfd, int *trees, char *err, size_t errlen)
{
	struct beneath b;
	beneath_init(&b, rootfd);
	int r = 0;
	for (size_t i = 0; i < nops && r == 0; i++) {
		struct mount_op *op = &ops[i];
		if (!(op->flags & OPF_PREPARED)) {
			if (per_sandbox(op) && topmost(ops, nops, op) && op->kind != OP_MASK &&
			    op->kind != OP_READONLY) {
				int t = open_target(&b, op->dst, false);
				if (t < 0)
					r = base_errf_errno(err, errlen, "cannot make the mount point %s", op->dst);
				else
					close(t);
			}
			continue;
		}
		if (apply_op(&b, op, &trees[i]) < 0)
			r = op_failed(op, err, errlen);
	}
	beneath_end(&b);
	return r;
}

/* Which ops go into the prepared root: marked once, the mark cleared on
 * failure. */
static void mark_prepared(struct mount_op *ops, size_t nops, bool on)
{
	for (size_t i = 0; i < nops; i++)
		ops[i].flags &= ~(unsigned)OPF_PREPARED;
	for (size_t i = 0; on && i < nops; i++)
		if (preparable(ops, nops, &ops[i]))
			ops[i].flags |= OPF_PREPARED;
}

int mounts_prepare_root(struct mount_op *ops, size_t nops, const char *path, char *err, size_t errlen)
{
	mark_prepared(ops, nops, true);
	while (umount2(path, MNT_DETACH) == 0) /* the last one, and any below it */
		;
	int *trees = malloc(sizeof(int) * (nops ? nops : 1));
	if (!trees) {
		mark_prepared(ops, nops, false);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = -1, rootfd = -1;
	for (size_t i = 0; i < nops; i++) {
		trees[i] = -1;
		if (ops[i].kind == OP_BIND && (ops[i].flags & OPF_PREPARED)) {
			trees[i] = clone_source(&ops[i], AT_FDCWD, ops[i].src, 0);
			if (trees[i] < 0 && !(ops[i].flags & OPF_OPTIONAL)) {
				errno = -trees[i];
				base_errf_errno(err, errlen, "cannot bind '%s'", ops[i].src);
				goto out;
			}
		}
	}
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0) {
		base_errf_errno(err, errlen, "cannot mount the prepared root's tmpfs at %s", path);
		goto out;
	}
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0 || prepare_apply(ops, nops, rootfd, trees, err, errlen) < 0)
		goto out;
	/* read-only: the superblock, and the mount itself (what a copy of it
	 * in a sandbox's namespace is then locked to) */
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0 ||
	    mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
		base_errf_errno(err, errlen, "cannot make the prepared root read-only");
		goto out;
	}
	rc = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	for (size_t i = 0; i < nops; i++)
		if (trees[i] >= 0)
			close(trees[i]);
	free(trees);
	if (rc < 0) {
		mark_prepared(ops, nops, false);
		while (umount2(path, MNT_DETACH) == 0)
			;
	}
	return rc;
}
