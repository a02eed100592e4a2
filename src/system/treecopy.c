/* treecopy.c — copy a directory tree between two directory fds, for a
 * session's files saved, restored or forked (session_save.c, in a process
 * of its own: session_copy.c).
 *
 * The source may be a sandbox's (its /work, seen from the host through its
 * PID 1's root): hostile.  So every step is one name below an fd already
 * open (openat2 with RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS and
 * RESOLVE_NO_XDEV; fstatat with AT_SYMLINK_NOFOLLOW): a symlink is copied
 * as a link and never followed, no path is resolved on the host, and no
 * mount is crossed (a host directory mounted into /work, moved elsewhere
 * in it by the tenant, is skipped, not read); a file is checked to be a
 * regular file after it is opened (O_NONBLOCK: a FIFO swapped in meanwhile
 * is not waited on), at most its size when opened is copied, and the
 * whole copy is bounded in bytes of data, entries and depth.  The source
 * is read with lim->from's rights (a sandbox's user, no capability), the
 * destination written with lim->to's, switched per step.  Bytes go by
 * copy_file_range, else sendfile (between tmpfs mounts), data extents only
 * (SEEK_DATA/SEEK_HOLE: a sparse file stays sparse; a file whose blocks
 * cover its size has no hole and is one extent, not looked for, as a
 * tmpfs walks its pages to answer): never through ward's memory.  On a
 * destination that is no tmpfs (a save under a state directory on disk)
 * each extent's blocks are reserved before it is copied (fallocate): one
 * allocation rather than one a page (an E2B pause of 100 MB: 0.77x; a
 * tmpfs gains nothing from it; docs/benchmarks.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "system/treecopy.h"

#define TREECOPY_DEPTH 128

struct copy {
	const struct treecopy_limits *lim;
	struct treecopy_stats st;
	uid_t uid;
	gid_t gid;
	dev_t dev;     /* the source's filesystem: nothing on another is read */
	bool prealloc; /* the destination is no tmpfs: extents reserved ahead */
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct caps[2]; /* as called */
	bool caps_ok;
	char *err;
	size_t errlen;
};

static void set_effective(struct copy *c, bool on)
{
	struct __user_cap_data_struct d[2] = {c->caps[0], c->caps[1]};
	d[0].effective = on ? d[0].permitted : 0;
	d[1].effective = on ? d[1].permitted : 0;
	if (c->caps_ok)
		syscall(SYS_capset, &c->h, d);
}

/* The calling thread's rights on files become side's (see treecopy.h):
 * the capabilities raised to change fsuid and fsgid (from a side with
 * none), then as the side has them (a new fsuid drops some). */
static void as_side(struct copy *c, const struct treecopy_side *side)
{
	set_effective(c, true);
	setfsgid(side->gid);
	setfsuid(side->uid);
	set_effective(c, side->caps);
}
#define AS_FROM(c) as_side((c), &(c)->lim->from)
#define AS_TO(c) as_side((c), &(c)->lim->to)

/* name below dir, one step: no link, no mount crossed, nothing above. */
static int open_below(int dir, const char *name, int flags, mode_t mode)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	                       .mode = flags & O_CREAT ? mode : 0,
	                       .resolve =
	                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	return (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));
}

static int fail(struct copy *c, int r, const char *what, const char *name)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s '%s': %s", what, name, strerror(-r));
	return r;
}

static int over_bytes(struct copy *c, const char *name)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen,
		         "the files take more than %llu bytes (at '%s'): remove some, or ask for more",
		         (unsigned long long)c->lim->max_bytes, name);
	return -EFBIG;
}

/* len bytes from in at off to out at off: copy_file_range, else sendfile. */
static int copy_range(int in, int out, off_t off, uint64_t len)
{
	bool cfr = true;
	if (lseek(out, off, SEEK_SET) < 0)
		return -errno;
	for (uint64_t done = 0; done < len;) {
		size_t want = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		loff_t io = off + (off_t)done;
		ssize_t n = cfr ? copy_file_range(in, &io, out, NULL, want, 0) : sendfile(out, in, &io, want);
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

/* The data extents of in's first size bytes into out (holes stay holes),
 * each counted in the bound before it is copied; out is size long.  dense:
 * its blocks cover its size (no hole: one extent). */
static int copy_data(struct copy *c, int in, int out, off_t size, bool dense, const char *name)
{
	for (off_t at = 0; at < size;) {
		off_t data = dense ? 0 : lseek(in, at, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (data < 0)
			return -errno;
		if (data >= size)
			break;
		off_t hole = dense ? size : lseek(in, data, SEEK_HOLE);
		if (hole < 0 || hole > size)
			hole = size;
		uint64_t len = (uint64_t)(hole - data);
		if (len > c->lim->max_bytes - c->st.bytes)
			return over_bytes(c, name);
		c->st.bytes += len;
		if (c->prealloc) /* (a filesystem without it copies as before) */
			(void)fallocate(out, FALLOC_FL_KEEP_SIZE, data, (off_t)len);
		int r = copy_range(in, out, data, len);
		if (r < 0)
			return r;
		at = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
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
			snprintf(c->err, c->errlen,
			         "more than %llu files and directories: remove some, or ask for more",
			         (unsigned long long)c->lim->max_entries);
		return -EMLINK;
	}
	if (bytes > c->lim->max_bytes - c->st.bytes || c->st.bytes > c->lim->max_bytes)
		return over_bytes(c, name);
	c->st.bytes += bytes;
	return 0;
}

/* Opened from the source: on its filesystem?  (A mount's root that
 * RESOLVE_NO_XDEV let through cannot be: it checks every step.) */
static bool skip_other(struct copy *c, int fd, struct stat *sb)
{
	if (fstat(fd, sb) == 0 && sb->st_dev == c->dev)
		return false;
	c->st.skipped++;
	return true;
}

static int copy_file(struct copy *c, int from, int to, const char *name)
{
	AS_FROM(c);
	int in = open_below(from, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (in < 0 && (errno == ELOOP || errno == ENXIO || errno == EXDEV || errno == ENOENT))
		return errno == EXDEV ? (c->st.skipped++, 0) : 0; /* a mount; or swapped meanwhile */
	if (in < 0)
		return fail(c, -errno, "cannot open", name);
	struct stat sb;
	if (skip_other(c, in, &sb) || (!S_ISREG(sb.st_mode) && ++c->st.skipped)) {
		close(in);
		return 0;
	}
	int r = count(c, 0, name);
	AS_TO(c);
	int out = r < 0 ? -1 : open_below(to, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (r == 0 && out < 0)
		r = fail(c, -errno, "cannot create", name);
	bool dense = (uint64_t)sb.st_blocks * 512 >= (uint64_t)sb.st_size;
	if (r == 0 && (r = copy_data(c, in, out, sb.st_size, dense, name)) < 0 && r != -EFBIG)
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
	AS_FROM(c);
	ssize_t n = readlinkat(from, name, target, sizeof(target) - 1);
	if (n < 0)
		return fail(c, -errno, "cannot read the link", name);
	target[n] = 0;
	int r = count(c, (uint64_t)n, name);
	AS_TO(c);
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
			snprintf(c->err, c->errlen, "directories nested deeper than %d (at '%s')", TREECOPY_DEPTH,
			         name);
		return -EMLINK;
	}
	AS_FROM(c);
	int in = open_below(from, name, O_RDONLY | O_DIRECTORY, 0);
	if (in < 0 && (errno == ENOTDIR || errno == ELOOP || errno == EXDEV || errno == ENOENT))
		return errno == EXDEV ? (c->st.skipped++, 0) : 0; /* a mount point; or swapped meanwhile */
	if (in < 0)
		return fail(c, -errno, "cannot open", name);
	struct stat sb;
	if (skip_other(c, in, &sb)) {
		close(in);
		return 0;
	}
	int r = count(c, 0, name);
	AS_TO(c);
	int out = r < 0 ? -1 : mkdirat(to, name, 0700) < 0 ? -1 : open_below(to, name, O_RDONLY | O_DIRECTORY, 0);
	if (r == 0)
		r = out < 0 ? fail(c, -errno, "cannot make the directory", name) : copy_dir(c, in, out, depth + 1);
	if (r == 0) {
		AS_TO(c);
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
	AS_FROM(c);
	int dfd = open_below(from, ".", O_RDONLY | O_DIRECTORY, 0);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return fail(c, -errno, "cannot list", ".");
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (AS_FROM(c), errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat sb;
		if (fstatat(from, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (sb.st_dev != c->dev)
			c->st.skipped++; /* a mount point: another filesystem */
		else if (S_ISREG(sb.st_mode))
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
	c.h = (struct __user_cap_header_struct){.version = _LINUX_CAPABILITY_VERSION_3};
	c.caps_ok = syscall(SYS_capget, &c.h, c.caps) == 0;
	uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t fsgid = (gid_t)setfsgid((gid_t)-1);
	struct stat sb;
	int r = fstat(from, &sb) < 0 ? fail(&c, -errno, "cannot look at", ".") : 0;
	c.dev = sb.st_dev;
	struct statfs fs;
	c.prealloc = fstatfs(to, &fs) == 0 && fs.f_type != TMPFS_MAGIC;
	if (r == 0)
		r = copy_dir(&c, from, to, 0);
	setfsuid(fsuid);
	setfsgid(fsgid);
	if (c.caps_ok)
		syscall(SYS_capset, &c.h, c.caps);
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
		int sub = depth < TREECOPY_DEPTH + 1
		                  ? openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		                  : -1;
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
