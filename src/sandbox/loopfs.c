/* loopfs.c — a directory of a fixed size: an ext4 image on a loop device
 * (loopfs.h).  Why this and not a quota: the host's file system may have
 * no project quotas (ext4 without prjquota, as here), and a tmpfs does not
 * outlive a restart; an image file is a cap the kernel enforces on any
 * file system, persistent, and a boundary (no hard link out of it). */
#define _GNU_SOURCE
#include "sandbox/loopfs.h"
#include "base/errf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* mke2fs on the image: its exit status, or -1 with err set. */
static int run_mke2fs(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char ext[96];
	snprintf(ext, sizeof(ext), "root_owner=%u:%u,nodiscard", (unsigned)uid, (unsigned)gid);
	char *argv[] = {"mke2fs", "-t", "ext4", "-q", "-F", "-m", "0", "-E", ext, (char *)path, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int e = posix_spawnp(&pid, "mke2fs", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e) {
		base_errf(err, errlen, "cannot run mke2fs: %s (install e2fsprogs)", strerror(e));
		return -1;
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			base_errf(err, errlen, "mke2fs: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		base_errf(err, errlen, "mke2fs failed on %s (status %d): see its messages on ward's stderr", path,
		          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
		return -1;
	}
	return 0;
}

int loopfs_make(const char *path, uint64_t bytes, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		base_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	int r = ftruncate(fd, (off_t)bytes);
	int e = errno;
	close(fd);
	if (r < 0) {
		base_errf(err, errlen, "cannot size %s to %llu bytes: %s", path, (unsigned long long)bytes,
		          strerror(e));
		unlink(path);
		return -1;
	}
	if (run_mke2fs(path, uid, gid, err, errlen) < 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

static int is_mount(const char *dir)
{
	struct statx sx;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
		return -errno;
	return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* A free loop device bound to img (cleared at its last unmount): its fd,
 * and its path in dev; -errno. */
static int loop_attach(int img, char *dev, size_t n)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	int r = -EBUSY;
	for (int tries = 0; tries < 32 && r == -EBUSY; tries++) {
		int k = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (k < 0) {
			r = -errno;
			break;
		}
		snprintf(dev, n, "/dev/loop%d", k);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			break;
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
			r = fd;
		else {
			r = errno == EBUSY ? -EBUSY : -errno; /* taken meanwhile by another: the next */
			close(fd);
		}
	}
	close(ctl);
	return r;
}

/* A loop device already bound to img (left by an earlier run whose file
 * system may still be alive: its sandboxes' clones of the mount not yet
 * torn down), opened (so that it stays bound): fd and path in dev, or -1.
 * Mounting that device again gives the same file system; attaching a
 * second device would make a second one over the same blocks. */
static int loop_find(int img, char *dev, size_t n)
{
	struct stat st;
	DIR *d = fstat(img, &st) == 0 ? opendir("/sys/block") : NULL;
	if (!d)
		return -1;
	int found = -1;
	for (struct dirent *de; found < 0 && (de = readdir(d));) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		if (strlen(de->d_name) > 32)
			continue;
		base_errf(dev, n, "/dev/%s", de->d_name);
		int fd = open(dev, O_RDONLY | O_CLOEXEC);
		struct loop_info64 li;
		if (fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &li) == 0 && li.lo_inode == st.st_ino &&
		    li.lo_device == st.st_dev)
			found = fd;
		else if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return found;
}

int loopfs_mount(const char *path, const char *dir, char *err, size_t errlen)
{
	int m = is_mount(dir);
	if (m < 0) {
		base_errf(err, errlen, "cannot use %s: %s", dir, strerror(-m));
		return -1;
	}
	if (m)
		return 0;
	int img = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (img < 0) {
		base_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	char dev[64];
	bool fresh = false;
	int lo = loop_find(img, dev, sizeof(dev));
	if (lo < 0) {
		lo = loop_attach(img, dev, sizeof(dev));
		fresh = true;
	}
	close(img);
	if (lo < 0) {
		base_errf(err, errlen,
		          "cannot attach %s to a loop device: %s (volumes need root and /dev/loop-control; in a "
		          "container, give it the loop devices)",
		          path, strerror(-lo));
		return -1;
	}
	/* discard: what is deleted inside is given back to the host (holes punched in the image) */
	int r = mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV, "errors=remount-ro,discard");
	int e = errno;
	if (r < 0 && fresh)
		ioctl(lo, LOOP_CLR_FD, 0);
	close(lo); /* mounted: the device stays until its last unmount (autoclear) */
	if (r < 0) {
		base_errf(err, errlen, "cannot mount %s (%s) at %s: %s", path, dev, dir, strerror(e));
		return -1;
	}
	return 0;
}

int loopfs_umount(const char *dir, int detach)
{
	if (!detach) { /* what online discard missed (a sandbox's writes, seen here) goes back too */
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct fstrim_range r = {.len = UINT64_MAX};
		if (fd >= 0) {
			ioctl(fd, FITRIM, &r);
			close(fd);
		}
	}
	return umount2(dir, UMOUNT_NOFOLLOW | (detach ? MNT_DETACH : 0)) < 0 ? -errno : 0;
}
