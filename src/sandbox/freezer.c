/* freezer.c — stopping every process of a cgroup's tree where it is, and
 * letting it go on: the kernel's cgroup freezer, v1 and v2 alike.
 *
 * v2: the tree's own cgroup.freeze (the whole subtree stops: a session's
 * PID 1 leaf and every exec's cgroup); frozen once cgroup.events says
 * "frozen 1".  v1: the freezer is a hierarchy of its own, which ward's
 * other cgroups do not use, so a freezer cgroup is made there for the tree
 * (<freezer>/ward/<name>) and its first process attached: everything it
 * forks afterwards is born in it (a session's PID 1 forks every exec);
 * frozen once freezer.state reads FROZEN.
 *
 * A frozen process keeps its memory and holds no CPU; SIGKILL still ends
 * it (v2 at once; v1 once thawed, which freezer_close does).  Nothing here
 * knows what a session is. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/freezer.h"

struct freezer {
	int dir;       /* the cgroup directory whose file freezes (v2: the tree's own) */
	bool v1;       /* a freezer cgroup of ward's own, removed by freezer_close */
	int parent;    /* v1: <freezer>/ward, for the rmdir */
	char name[64]; /* v1: its directory name */
};

static int write_file(int dir, const char *file, const char *text)
{
	int fd = openat(dir, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : n < 0 ? -e : -EIO;
}

static ssize_t read_file(int dir, const char *file, char *buf, size_t len)
{
	int fd = openat(dir, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return n;
}

/* v1: <freezer mount>/ward/<name>, pid moved in. */
static int open_v1(struct freezer *f, const char *name, pid_t pid, char *err, size_t errlen)
{
	char point[PATH_MAX], so[512], path[PATH_MAX + 16];
	if (!cg_find_mount("cgroup", "freezer", point, sizeof(point), so, sizeof(so))) {
		snprintf(err, errlen,
		         "this host mounts no cgroup v1 freezer hierarchy: mount one at "
		         "/sys/fs/cgroup/freezer (mount -t cgroup -o freezer freezer /sys/fs/cgroup/freezer)");
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "%s/ward", point);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		goto fail;
	f->parent = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->parent < 0)
		goto fail;
	snprintf(f->name, sizeof(f->name), "%s", name);
	if (mkdirat(f->parent, f->name, 0755) < 0 && errno != EEXIST)
		goto fail;
	f->dir = openat(f->parent, f->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dir < 0)
		goto fail;
	f->v1 = true;
	flock(f->dir, LOCK_SH); /* ours while it lives (cgroup.c's sweep of a dead ward's leaves it) */
	char num[32];
	snprintf(num, sizeof(num), "%d", (int)pid);
	int r = write_file(f->dir, "cgroup.procs", num);
	if (r < 0) {
		snprintf(err, errlen, "cannot move the sandbox into its freezer cgroup: %s", strerror(-r));
		return r;
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot make a freezer cgroup under %s: %s", point, strerror(errno));
	return -errno;
}

int freezer_open(struct ward_cgroup *cg, pid_t pid, struct freezer **out, char *err, size_t errlen)
{
	*out = NULL;
	struct freezer *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->dir = f->parent = -1;
	int r = 0;
	if (cg_dirfd(cg) >= 0) {
		f->dir = fcntl(cg_dirfd(cg), F_DUPFD_CLOEXEC, 3);
		if (f->dir < 0 || faccessat(f->dir, "cgroup.freeze", W_OK, 0) < 0) {
			snprintf(err, errlen, "this kernel's cgroup v2 has no cgroup.freeze (Linux 5.2+ needed)");
			r = -ENOTSUP;
		}
	} else {
		r = open_v1(f, cg_name(cg), pid, err, errlen);
	}
	if (r < 0) {
		freezer_close(f);
		return r;
	}
	*out = f;
	return 0;
}

/* Has the tree reached the state asked for? */
static bool reached(const struct freezer *f, bool frozen)
{
	char buf[512];
	if (f->v1) {
		if (read_file(f->dir, "freezer.state", buf, sizeof(buf)) < 0)
			return false;
		return strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
	}
	if (read_file(f->dir, "cgroup.events", buf, sizeof(buf)) < 0)
		return false;
	const char *p = strstr(buf, "frozen ");
	return p && p[7] == (frozen ? '1' : '0');
}

int freezer_set(struct freezer *f, bool frozen, double timeout_s)
{
	int r = f->v1 ? write_file(f->dir, "freezer.state", frozen ? "FROZEN" : "THAWED")
	              : write_file(f->dir, "cgroup.freeze", frozen ? "1" : "0");
	if (r < 0)
		return r;
	/* the kernel stops each task as it next leaves the kernel: a short
	 * wait, a task in an uninterruptible sleep the longest */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned us = 50;; us = us < 5000 ? us * 2 : us) {
		if (reached(f, frozen))
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 > timeout_s)
			return -ETIMEDOUT;
		usleep(us);
	}
}

void freezer_close(struct freezer *f)
{
	if (!f)
		return;
	if (f->dir >= 0) {
		if (f->v1) /* thawed, so that what was killed meanwhile can die */
			write_file(f->dir, "freezer.state", "THAWED");
		close(f->dir);
	}
	if (f->parent >= 0) {
		unlinkat(f->parent, f->name, AT_REMOVEDIR); /* empty once the tree is gone */
		close(f->parent);
	}
	free(f);
}
