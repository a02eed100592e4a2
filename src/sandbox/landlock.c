/* landlock.c — writes only beneath the sandbox's writable paths, and (from
 * ABI 6) abstract UNIX sockets and signals scoped to the sandbox.
 *
 * The mount layout already makes everything but /tmp, /work, /dev/shm and
 * writable binds read-only; Landlock is the second lock on the same door, so
 * that a mistake in the mount code, a bind of a writable host directory under
 * a read-only one, or a kernel bug in one mechanism does not open it.
 * Reading and executing are left to the mount layout (not handled here).
 *
 * Runs inside: PID 1 builds the ruleset, the command's clone restricts
 * itself with it; only syscalls and the stack (ward_landlock_abi, the
 * probe, runs once in the supervisor).
 */
#define _GNU_SOURCE
#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Newer constants than this system's kernel headers may have. */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1) /* ABI 6 */
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes a prefix of it
 * (its size says which fields we mean), so it works on older kernels too. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4; left 0: the network namespace decides */
	uint64_t scoped;             /* ABI 6 */
};

/* Rights that apply to a file (as opposed to a directory). */
#define FILE_RIGHTS (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Every write-type right the kernel's ABI knows. */
static uint64_t write_rights(int abi)
{
	uint64_t r = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
	             LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
	             LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	             LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER; /* rename/link across directories */
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV; /* ioctl on device files */
	return r;
}

/* Device files every program may write to (and, for terminals, ioctl);
 * missing ones are skipped.  /dev/pts is a directory: the sandbox's own
 * devpts instance, so its terminals are the sandbox's own. */
static const char *const dev_paths[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts",
};

int ward_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? 0 : (int)v;
}

/* path as an O_PATH fd; with exact, never through a symlink (openat2
 * RESOLVE_NO_SYMLINKS; plain open() on a kernel without openat2). */
static int open_rule_path(const char *path, bool exact)
{
	if (exact) {
		struct open_how how = {
			.flags = O_PATH | O_CLOEXEC, /* a final symlink: ELOOP */
			.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
	}
	return open(path, O_PATH | O_CLOEXEC);
}

/* Allow rights (narrowed to what the file type takes) beneath path; with
 * exact, path must not pass through a symlink (a write path is a mount
 * point ward made without one: a symlink there now was swapped in, by a
 * sandbox sharing the directory, and could point at "/").  0, -ENOENT when
 * path does not exist, or -errno (-ELOOP: a symlink). */
static int allow_path(int ruleset, const char *path, uint64_t rights, bool exact)
{
	int fd = open_rule_path(path, exact);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISDIR(st.st_mode))
		rights &= FILE_RIGHTS;
	struct landlock_path_beneath_attr pb = {
		.allowed_access = rights,
		.parent_fd = fd,
	};
	long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int e = rc < 0 ? -errno : 0;
	close(fd);
	return e;
}

int ward_landlock_ruleset(int abi, const char *const *write_paths, size_t n)
{
	if (abi < 1)
		return -EOPNOTSUPP;
	uint64_t handled = write_rights(abi);
	struct ll_ruleset_attr attr = {.handled_access_fs = handled};
	size_t attr_size = sizeof(attr.handled_access_fs);
	if (abi >= 6) {
		/* Abstract sockets and signals reach only this domain and the
		 * ones nested in it: nothing the sandbox did not start. */
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return -errno;

	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = allow_path(ruleset, write_paths[i], handled, true);
	/* A terminal must be writable and take ioctls (tcsetattr, TIOCGWINSZ);
	 * the null-type devices just writable.  TRUNCATE too: shells open
	 * "> /dev/null" with O_TRUNC. */
	uint64_t dev = handled & FILE_RIGHTS;
	for (size_t i = 0; i < sizeof(dev_paths) / sizeof(dev_paths[0]) && rc == 0; i++) {
		rc = allow_path(ruleset, dev_paths[i], dev, false); /* /dev/ptmx is a symlink */
		if (rc == -ENOENT || rc == -EACCES)
			rc = 0; /* not in this sandbox's /dev */
	}
	if (rc < 0) {
		close(ruleset);
		return rc;
	}
	return ruleset;
}

int ward_landlock_restrict(int ruleset)
{
	int rc = syscall(SYS_landlock_restrict_self, ruleset, 0) < 0 ? -errno : 0;
	close(ruleset);
	return rc;
}
