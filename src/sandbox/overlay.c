/* overlay.c — a read-only overlayfs of directories, as a detached mount.
 *
 * Linux 6.8 and later take the lower directories one at a time
 * (fsconfig "lowerdir+", each path up to 256 bytes): fsopen, fsconfig,
 * fsmount, and the mount is an fd, attached nowhere.  Older kernels take
 * them only as one "lowerdir=a:b:c" string, which fsconfig caps at 256
 * bytes: there each layer is opened and named by its fd ("/dev/fd/N",
 * which the kernel resolves in this process as it makes the overlay), so
 * that up to 20 layers fit.  (A detached overlay cannot be a lower layer of
 * another on those kernels, and a mount made in another process's
 * namespace cannot be bound from, so there is no stacking around that
 * cap.)  Either way nothing is mounted in the host's namespace.
 *
 * Host side only; needs CAP_SYS_ADMIN.  Nothing of it runs in a sandbox.
 */
#define _GNU_SOURCE
#include "sandbox/overlay.h"
#include "base/errf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The read-only, nosuid, nodev flags on a detached mount. */
static int seal(int fd)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	return mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a));
}

/* Linux 6.8+: "lowerdir+" one directory at a time, top first.  The fd, -1
 * with errno EINVAL when the kernel does not know "lowerdir+", or -1. */
static int by_fsconfig(char *const *dirs, size_t n)
{
	int fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	int r = 0;
	for (size_t i = n; r == 0 && i-- > 0;)
		r = fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", dirs[i], 0);
	if (r == 0)
		r = fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0);
	if (r == 0)
		r = fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	int m = r == 0 ? fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) : -1;
	int e = errno;
	close(fs);
	errno = e;
	return m;
}

/* The most layers one "lowerdir=" string of fsconfig (256 bytes) holds as
 * "/dev/fd/N" names, N below 1000: "/dev/fd/NNN:" is 12 bytes. */
#define LEGACY_MAX_LAYERS 20

/* Older kernels: one "lowerdir=" string, each layer named by an fd of ours
 * ("/dev/fd/N", resolved in this process when the overlay is made).  The
 * fd, or -1 with err set. */
static int by_fd_names(char *const *dirs, size_t n, char *err, size_t errlen)
{
	if (n > LEGACY_MAX_LAYERS)
		return base_errf(err, errlen,
		                 "an image of %zu layers needs Linux 6.8 or later here (before it, at most %d "
		                 "layers fit in one overlayfs mount): squash it into fewer layers",
		                 n, LEGACY_MAX_LAYERS);
	int fds[LEGACY_MAX_LAYERS];
	size_t k = 0;
	char opts[256] = "";
	size_t len = 0;
	int m = -1, e = 0;
	for (; k < n; k++) {
		fds[k] = open(dirs[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fds[k] < 0) {
			e = errno;
			break;
		}
	}
	for (size_t i = n; !e && i-- > 0;) {
		int w = snprintf(opts + len, sizeof(opts) - len, "%s/dev/fd/%d", i + 1 < n ? ":" : "", fds[i]);
		if (w < 0 || (size_t)w >= sizeof(opts) - len)
			e = E2BIG;
		else
			len += (size_t)w;
	}
	int fs = e ? -1 : fsopen("overlay", FSOPEN_CLOEXEC);
	if (!e && fs < 0)
		e = errno;
	if (!e && (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", opts, 0) < 0 ||
	           fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0 ||
	           fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	           (m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0))
		e = errno;
	if (fs >= 0)
		close(fs);
	for (size_t i = 0; i < k; i++)
		close(fds[i]);
	if (m < 0)
		return base_errf(err, errlen,
		                 "cannot mount the image's layers with overlayfs: %s (ward needs root and a "
		                 "kernel with overlayfs)",
		                 strerror(e));
	return m;
}

int overlay_open_rw(char *const *dirs, size_t n, int idmap_ns, uint64_t size_mb, unsigned uid, unsigned gid, int *fd,
                    char *err, size_t errlen)
{
	return overlay_open_rw_kept(dirs, n, idmap_ns, size_mb, uid, gid, fd, NULL, err, errlen);
}

int overlay_open_rw_kept(char *const *dirs, size_t n, int idmap_ns, uint64_t size_mb, unsigned uid, unsigned gid,
                         int *fd, int *tmpfs_fd, char *err, size_t errlen)
{
	*fd = -1;
	if (tmpfs_fd)
		*tmpfs_fd = -1;
	if (n == 0 || n > 500)
		return base_errf(err, errlen, "overlay: %zu layers: give 1 to 500", n);
	int *low = calloc(n, sizeof(int));
	if (!low)
		return base_errf(err, errlen, "out of memory");
	size_t k = 0;
	int tm = -1, fs = -1, m = -1, e = 0;
	const char *step = "";
	for (; k < n; k++) { /* each layer, idmapped: its root-owned files become the sandbox user's */
		low[k] = (int)syscall(SYS_open_tree, AT_FDCWD, dirs[k], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY,
		                       .userns_fd = (uint64_t)idmap_ns};
		if (low[k] < 0 || (idmap_ns >= 0 && mount_setattr(low[k], "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)) {
			e = errno;
			step = "an idmapped layer";
			if (low[k] >= 0)
				close(low[k]);
			break;
		}
	}
	char size[32];
	snprintf(size, sizeof(size), "%llum", (unsigned long long)(size_mb ? size_mb : 1));
	if (!e) {
		step = "the writable layer's tmpfs";
		int t = fsopen("tmpfs", FSOPEN_CLOEXEC);
		if (t < 0 || fsconfig(t, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
		    fsconfig(t, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
		    fsconfig(t, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
		    (tm = fsmount(t, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0 ||
		    mkdirat(tm, "upper", 0755) < 0 || mkdirat(tm, "work", 0700) < 0 ||
		    fchownat(tm, "upper", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			e = errno;
		if (t >= 0)
			close(t);
	}
	if (!e) {
		step = "the overlay";
		fs = fsopen("overlay", FSOPEN_CLOEXEC);
		if (fs < 0)
			e = errno;
		char path[64];
		for (size_t i = n; !e && i-- > 0;) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", low[i]);
			if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", path, 0) < 0)
				e = errno;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d/upper", tm);
		if (!e && fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", path, 0) < 0)
			e = errno;
		snprintf(path, sizeof(path), "/proc/self/fd/%d/work", tm);
		if (!e && (fsconfig(fs, FSCONFIG_SET_STRING, "workdir", path, 0) < 0 ||
		           fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
		           (m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0))
			e = errno;
	}
	for (size_t i = 0; i < k; i++)
		close(low[i]);
	free(low);
	if (tm >= 0 && (m < 0 || !tmpfs_fd))
		close(tm);
	else if (tm >= 0)
		*tmpfs_fd = tm;
	if (fs >= 0)
		close(fs);
	if (m < 0)
		return base_errf(err, errlen,
		                 "a writable root (\"root\": \"overlay\") cannot be made here: %s: %s (it needs "
		                 "root and a kernel whose overlayfs takes detached, idmapped layers: Linux 6.15 or "
		                 "later; use the image read-only, or write under /work and /tmp)",
		                 step, strerror(e ? e : EIO));
	*fd = m;
	return 0;
}

int overlay_open_ro(char *const *dirs, size_t n, int *fd, char *err, size_t errlen)
{
	*fd = -1;
	if (n == 0)
		return base_errf(err, errlen, "overlay: no directory to mount");
	int m;
	if (n == 1) {
		m = (int)syscall(SYS_open_tree, AT_FDCWD, dirs[0], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (m < 0)
			return base_errf(err, errlen, "cannot clone '%s': %s", dirs[0], strerror(errno));
	} else {
		/* WARD_OVERLAY_LEGACY=1: the older kernels' way here too (tests) */
		const char *legacy = getenv("WARD_OVERLAY_LEGACY");
		m = legacy && legacy[0] == '1' ? (errno = EINVAL, -1) : by_fsconfig(dirs, n);
		if (m < 0 && errno != EINVAL)
			return base_errf(err, errlen,
			                 "cannot mount the image's layers with overlayfs: %s (ward needs root and "
			                 "a kernel with overlayfs)",
			                 strerror(errno));
		if (m < 0 && (m = by_fd_names(dirs, n, err, errlen)) < 0)
			return -1;
	}
	if (seal(m) < 0) {
		int e = errno;
		close(m);
		return base_errf(err, errlen, "cannot make the image's root read-only: %s", strerror(e));
	}
	*fd = m;
	return 0;
}
