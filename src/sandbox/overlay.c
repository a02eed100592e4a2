/* overlay.c — a read-only overlayfs of directories, as a detached mount.
 *
 * Linux 6.8 and later take the lower directories one at a time
 * (fsconfig "lowerdir+", each path up to 256 bytes), in the calling process:
 * fsopen, fsconfig, fsmount, and the mount is an fd, attached nowhere.
 * Older kernels take them only as one "lowerdir=a:b:c" string, which
 * fsconfig caps at 256 bytes and mount(2) at a page: there a child process
 * (raw fork: the caller may have threads) makes a mount namespace of its
 * own, changes into the directories' common parent so that each is named
 * by its last component, mounts the overlay over that parent (in its own
 * namespace only), clones it with open_tree and sends the clone back.
 * Either way nothing is mounted in the host's namespace.
 *
 * Host side only; needs CAP_SYS_ADMIN.  Nothing of it runs in a sandbox.
 */
#define _GNU_SOURCE
#include "sandbox/overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

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

/* The child's half of the older kernels' way: everything is prepared
 * before the fork; only syscalls here. */
static void child(int sock, const char *parent, const char *opts)
{
	int fd = -1;
	if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 && chdir(parent) == 0 &&
	    mount("overlay", parent, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) == 0)
		fd = (int)syscall(SYS_open_tree, AT_FDCWD, parent, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	int e = fd < 0 ? errno : 0;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &e, .iov_len = sizeof(e)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	(void)!sendmsg(sock, &mh, MSG_NOSIGNAL);
	_exit(0);
}

/* Older kernels: "lowerdir=" names relative to the common parent, in a
 * child's own mount namespace.  The fd, or -1 with err set. */
static int by_child(char *const *dirs, size_t n, char *err, size_t errlen)
{
	const char *slash = strrchr(dirs[0], '/');
	size_t plen = slash ? (size_t)(slash - dirs[0]) : 0;
	char parent[PATH_MAX];
	if (!slash || plen == 0 || plen >= sizeof(parent))
		return fail(err, errlen, "overlay: '%s' is not an absolute path below a directory", dirs[0]);
	memcpy(parent, dirs[0], plen);
	parent[plen] = 0;
	size_t cap = 16, len = 0;
	for (size_t i = 0; i < n; i++)
		cap += strlen(dirs[i]) + 1;
	char *opts = malloc(cap);
	if (!opts)
		return fail(err, errlen, "out of memory");
	len = (size_t)snprintf(opts, cap, "lowerdir=");
	for (size_t i = n; i-- > 0;) {
		if (strncmp(dirs[i], parent, plen) != 0 || dirs[i][plen] != '/' || strchr(dirs[i] + plen + 1, '/') ||
		    strpbrk(dirs[i] + plen + 1, ":,\\")) {
			free(opts);
			return fail(err, errlen, "overlay: the layers are not all directories of '%s' with plain names", parent);
		}
		len += (size_t)snprintf(opts + len, cap - len, "%s%s", dirs[i] + plen + 1, i ? ":" : "");
	}
	if (len >= 4096) {
		free(opts);
		return fail(err, errlen, "overlay: %zu layers do not fit in one mount on this kernel (before Linux 6.8: "
					 "a page of names): squash the image into fewer layers",
			    n);
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(opts);
		return fail(err, errlen, "overlay: socketpair: %s", strerror(errno));
	}
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL); /* not glibc's fork: no atfork, no locks */
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], parent, opts);
	}
	free(opts);
	close(sv[1]);
	int e = EIO, fd = -1;
	if (pid > 0) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} u;
		struct iovec iov = {.iov_base = &e, .iov_len = sizeof(e)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
		ssize_t k;
		while ((k = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
			;
		struct cmsghdr *cm = k > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
		if (cm && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	} else
		e = errno;
	close(sv[0]);
	if (fd < 0)
		return fail(err, errlen, "cannot mount the image's layers with overlayfs: %s (ward needs root and a "
					 "kernel with overlayfs)",
			    strerror(e));
	return fd;
}

int overlay_open_ro(char *const *dirs, size_t n, int *fd, char *err, size_t errlen)
{
	*fd = -1;
	if (n == 0)
		return fail(err, errlen, "overlay: no directory to mount");
	int m;
	if (n == 1) {
		m = (int)syscall(SYS_open_tree, AT_FDCWD, dirs[0], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (m < 0)
			return fail(err, errlen, "cannot clone '%s': %s", dirs[0], strerror(errno));
	} else {
		m = by_fsconfig(dirs, n);
		if (m < 0 && errno != EINVAL)
			return fail(err, errlen, "cannot mount the image's layers with overlayfs: %s (ward needs root and "
						 "a kernel with overlayfs)",
				    strerror(errno));
		if (m < 0 && (m = by_child(dirs, n, err, errlen)) < 0)
			return -1;
	}
	if (seal(m) < 0) {
		int e = errno;
		close(m);
		return fail(err, errlen, "cannot make the image's root read-only: %s", strerror(e));
	}
	*fd = m;
	return 0;
}
