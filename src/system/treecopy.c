/* treecopy.c — copy a directory tree between two directory fds, for a
 * session's files saved, restored or forked (session_save.c).
 *
 * The source may be a sandbox's (its /work, seen from the host through its
 * PID 1's root): hostile.  So every step is one name below an fd already
 * open (openat with O_NOFOLLOW, fstatat with AT_SYMLINK_NOFOLLOW: a
 * symlink is copied as a link and never followed, and no path is resolved
 * on the host), a file is checked to be a regular file after it is opened
 * (O_NONBLOCK: a FIFO swapped in meanwhile is not waited on), at most its
 * size when opened is copied, and the whole copy is bounded in bytes,
 * entries and depth.  Bytes go by copy_file_range (a reflink where the
 * filesystem shares extents), else sendfile (between tmpfs mounts): never
 * through ward's memory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system/treecopy.h"

#define TREECOPY_DEPTH 128

struct copy {
	const struct treecopy_limits *lim;
	struct treecopy_stats st;
	uid_t uid;
	gid_t gid;
	char *err;
	size_t errlen;
};

static int fail(struct copy *c, int r, const char *what, const char *name)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s '%s': %s", what, name, strerror(-r));
	return r;
}

/* len bytes from in to out: copy_file_range, else sendfile. */
static int copy_bytes(int in, int out, uint64_t len)
{
	bool cfr = true;
	for (uint64_t done = 0; done < len;) {
		size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		ssize_t n = cfr ? copy_file_range(in, NULL, out, NULL, want, 0) : sendfile(out, in, NULL, want);
		if (n < 0 && cfr && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			cfr = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* it shrank meanwhile: what there was */
		done += (size_t)n;
	}
	return 0;
}

static void set_owner_times(struct copy *c, int fd, const struct stat *sb)
{
	if (c->uid != (uid_t)-1)
		(void)!fchown(fd, c->uid, c->gid);
	struct timespec ts[2] = {sb->st_atim, sb->st_mtim};
	futimens(fd, ts);
}

static int count(struct copy *c, uint64_t bytes, const char *name)
{
	uint64_t n = c->st.files + c->st.dirs + c->st.links + 1;
	if (n > c->lim->max_entries) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen, "more than %llu files and directories: remove some, or ask for more",
				 (unsigned long long)c->lim->max_entries);
		return -EMLINK;
	}
	if (bytes > c->lim->max_bytes - c->st.bytes || c->st.bytes > c->lim->max_bytes) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen, "the files take more than %llu bytes (at '%s'): remove some, or ask "
				 "for more", (unsigned long long)c->lim->max_bytes, name);
		return -EFBIG;
	}
	c->st.bytes += bytes;
	return 0;
}

static int copy_file(struct copy *c, int from, int to, const char *name)
{
	int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return errno == ELOOP || errno == ENXIO ? 0 : fail(c, -errno, "cannot open", name); /* swapped meanwhile */
	struct stat sb;
	int r = fstat(in, &sb) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(sb.st_mode)) {
		close(in);
		c->st.skipped++;
		return 0;
	}
	if (r == 0)
		r = count(c, (uint64_t)sb.st_size, name);
	int out = r < 0 ? -1 : openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r == 0 && out < 0)
		r = fail(c, -errno, "cannot create", name);
	if (r == 0 && (r = copy_bytes(in, out, (uint64_t)sb.st_size)) < 0)
		fail(c, r, "cannot copy", name);
	if (r == 0) {
		fchmod(out, sb.st_mode & 01777);
		set_owner_times(c, out, &sb);
		c->st.files++;
	}
	if (out >= 0)
		close(out);
	close(in);
	return r;
}

static int copy_link(struct copy *c, int from, int to, const char *name, const struct stat *sb)
{
	char target[4096];
	ssize_t n = readlinkat(from, name, target, sizeof(target) - 1);
	if (n < 0)
		return fail(c, -errno, "cannot read the link", name);
	target[n] = 0;
	int r = count(c, (uint64_t)n, name);
	if (r == 0 && symlinkat(target, to, name) < 0)
		r = fail(c, -errno, "cannot make the link", name);
	if (r == 0) {
		if (c->uid != (uid_t)-1)
			(void)!fchownat(to, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW);
		struct timespec ts[2] = {sb->st_atim, sb->st_mtim};
		utimensat(to, name, ts, AT_SYMLINK_NOFOLLOW);
		c->st.links++;
	}
	return r;
}

static int copy_dir(struct copy *c, int from, int to, unsigned depth);

static int copy_subdir(struct copy *c, int from, int to, const char *name, unsigned depth)
{
	if (depth >= TREECOPY_DEPTH) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen, "directories nested deeper than %d (at '%s')", TREECOPY_DEPTH, name);
		return -EMLINK;
	}
	int r = count(c, 0, name);
	if (r < 0)
		return r;
	int in = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return errno == ENOTDIR || errno == ELOOP ? 0 : fail(c, -errno, "cannot open", name);
	int out = mkdirat(to, name, 0700) < 0 ? -1 : openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = out < 0 ? fail(c, -errno, "cannot make the directory", name) : copy_dir(c, in, out, depth + 1);
	struct stat sb;
	if (r == 0 && fstat(in, &sb) == 0) {
		fchmod(out, sb.st_mode & 01777);
		set_owner_times(c, out, &sb);
	}
	c->st.dirs += r == 0;
	if (out >= 0)
		close(out);
	close(in);
	return r;
}

static int copy_dir(struct copy *c, int from, int to, unsigned depth)
{
	int dfd = fcntl(from, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return fail(c, -errno, "cannot list", ".");
	}
	rewinddir(d); /* (the dup shares from's offset: a second copy of it reads from the start) */
	int r = 0;
	struct dirent *e;
	while (r == 0 && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat sb;
		if (fstatat(from, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISREG(sb.st_mode))
			r = copy_file(c, from, to, e->d_name);
		else if (S_ISDIR(sb.st_mode))
			r = copy_subdir(c, from, to, e->d_name, depth);
		else if (S_ISLNK(sb.st_mode))
			r = copy_link(c, from, to, e->d_name, &sb);
		else
			c->st.skipped++;
	}
	closedir(d);
	return r;
}

int treecopy(int from, int to, uid_t uid, gid_t gid, const struct treecopy_limits *lim, struct treecopy_stats *st,
	     char *err, size_t errlen)
{
	struct copy c = {.lim = lim, .uid = uid, .gid = gid, .err = err, .errlen = errlen};
	int r = copy_dir(&c, from, to, 0);
	if (st)
		*st = c.st;
	return r;
}

static int remove_in(int dir, unsigned depth)
{
	int dfd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dir, e->d_name, 0) == 0 || errno != EISDIR)
			continue;
		int sub = depth < TREECOPY_DEPTH + 1 ? openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		if (sub >= 0) {
			remove_in(sub, depth + 1);
			close(sub);
		}
		if (unlinkat(dir, e->d_name, AT_REMOVEDIR) < 0 && r == 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

int treecopy_remove(int dir, const char *name)
{
	if (unlinkat(dir, name, 0) == 0)
		return 0;
	if (errno != EISDIR)
		return errno == ENOENT ? 0 : -errno;
	int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub >= 0) {
		remove_in(sub, 0);
		close(sub);
	}
	return unlinkat(dir, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}
