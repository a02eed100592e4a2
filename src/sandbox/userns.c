/* userns.c — host identities for sandboxes and their user namespace maps.
 * Supervisor side only, on the host (it opens /run/ward and writes
 * /proc/PID/uid_map): never called inside a sandbox. */
#define _GNU_SOURCE
#include "sandbox/userns.h"
#include "sandbox/lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One file, one byte per slot: the byte is locked (an OFD lock) while its
 * slot's uid is in use.  Older wards kept a file per slot in /run/ward/uids;
 * that directory is no longer used. */
#define LOCK_DIR "/run/ward"
#define LOCK_FILE "uid-slots"

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return dflt;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	return (errno || *end) ? dflt : v;
}

/* Lock byte `uid` of fd — the uid itself, not its index in this ward's
 * range, so that wards started with different WARD_UID_BASE ranges still
 * exclude each other wherever their ranges overlap; true when it was free. */
static bool lock_uid(int fd, unsigned long uid, int *err)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)uid, .l_len = 1};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return true;
	*err = errno == EAGAIN || errno == EACCES ? 0 : errno;
	return false;
}

int userns_acquire(struct ward_identity *id, char *err, size_t errlen)
{
	id->lock_fd = -1;
	id->slot = -1;
	if (geteuid() != 0) {
		id->host_uid = geteuid();
		id->host_gid = getegid();
		return 0;
	}
	unsigned long base = env_ulong("WARD_UID_BASE", 3000000);
	unsigned long count = env_ulong("WARD_UID_COUNT", 65536);
	if (base == 0 || count == 0 || base + count > 0xfffffffeul) {
		snprintf(err, errlen,
		         "WARD_UID_BASE/WARD_UID_COUNT give an unusable uid range: use a base above 0 "
		         "and a range below 4294967294");
		return -1;
	}
	int fd = lockfile_open(LOCK_FILE);
	if (fd < 0) {
		snprintf(err, errlen,
		         "cannot use %s/%s for sandbox uid locks: %s; make %s a root-owned directory "
		         "and the file root's, mode 0600",
		         LOCK_DIR, LOCK_FILE, strerror(errno), LOCK_DIR);
		return -1;
	}
	/* Start at a spread-out slot so concurrent callers rarely collide. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long start = ((unsigned long)getpid() * 2654435761u + (unsigned long)ts.tv_nsec) % count;
	for (unsigned long i = 0; i < count; i++) {
		unsigned long slot = (start + i) % count;
		int e = 0;
		if (lock_uid(fd, base + slot, &e)) {
			id->lock_fd = fd;
			id->slot = (int)slot;
			id->host_uid = (uid_t)(base + slot);
			id->host_gid = (gid_t)(base + slot);
			return 0;
		}
		if (e) {
			close(fd);
			snprintf(err, errlen,
			         "cannot lock a sandbox uid slot in %s/%s: %s (ward needs OFD locks, "
			         "Linux 3.15, on a local filesystem)",
			         LOCK_DIR, LOCK_FILE, strerror(e));
			return -1;
		}
	}
	close(fd);
	snprintf(err, errlen, "all %lu sandbox uids are in use: raise WARD_UID_COUNT or run fewer at once", count);
	return -1;
}

void userns_release(struct ward_identity *id)
{
	if (id->lock_fd >= 0)
		close(id->lock_fd); /* the slot's lock goes with its open file description */
	id->lock_fd = -1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int e = errno;
	close(fd);
	if (w != (ssize_t)n) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

static int write_maps(pid_t pid, unsigned inside_uid, unsigned outside_uid, unsigned inside_gid, unsigned outside_gid,
                      bool deny_setgroups)
{
	char path[64], map[64];
	if (deny_setgroups) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", pid);
		if (write_file(path, "deny") < 0 && errno != ENOENT)
			return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", inside_uid, outside_uid);
	if (write_file(path, map) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", inside_gid, outside_gid);
	return write_file(path, map);
}

int userns_write_maps(pid_t pid, const struct ward_identity *id, char *err, size_t errlen)
{
	/* As root, setgroups stays allowed so that the sandbox can drop the
	 * supplementary groups it inherited (root's); unprivileged, the kernel
	 * requires "deny" before a gid_map may be written. */
	if (write_maps(pid, WARD_SANDBOX_UID, id->host_uid, WARD_SANDBOX_GID, id->host_gid, geteuid() != 0) < 0) {
		snprintf(err, errlen, "cannot write the user namespace maps of the sandbox: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int userns_idmap_fd(const struct ward_identity *id, uid_t owner_uid, gid_t owner_gid)
{
	/* A throwaway process in a new user namespace; we keep only its ns fd. */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		char c;
		close(pfd[1]);
		(void)!read(pfd[0], &c, 1); /* until the parent is done with us */
		_exit(0);
	}
	close(pfd[0]);
	int ret;
	char path[64];
	if (write_maps(pid, owner_uid, id->host_uid, owner_gid, id->host_gid, false) < 0) {
		ret = -errno;
	} else {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		ret = open(path, O_RDONLY | O_CLOEXEC);
		if (ret < 0)
			ret = -errno;
	}
	close(pfd[1]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return ret;
}
