/* lockfile.c — the files under /run/ward whose bytes are slots, each held
 * by an OFD lock while in use: the sandbox uids (userns.c) and the run
 * cgroups kept across processes (cgroup_keep.c).  Host side only. */
#define _GNU_SOURCE
#include "sandbox/lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* /run/ward/name, opened for this caller alone (an OFD lock belongs to its
 * open file description: two opens conflict even in one process).
 * Directory and file root-owned and closed to others (a reader could take
 * read locks that block ours), never through a symlink.  fd or -1 (errno). */
int lockfile_open(const char *name)
{
	int dfd = open("/run", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (mkdirat(dfd, "ward", 0700) < 0 && errno != EEXIST) {
		close(dfd);
		return -1;
	}
	int wfd = openat(dfd, "ward", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (wfd < 0)
		return -1;
	struct stat st;
	if (fstat(wfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		close(wfd);
		errno = EPERM;
		return -1;
	}
	int fd = openat(wfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(wfd);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}
