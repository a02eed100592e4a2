/* unzip.c — a zip's entries written beneath a directory (unzip.h).
 *
 * The bytes are hostile, and this runs inside the sandbox that will hold
 * the files (ward-unzip.c), under its limits: its memory, CPU, wall clock,
 * file size and a /work tmpfs of a fixed size.  What is done here is
 * defence beneath those, the way src/image/unpack.c does it on the host:
 * libarchive only reads the zip; every write is ours, relative to dirfd:
 * - a name is split into its parts; an absolute name, a ".." part, a part
 *   over NAME_MAX or more than UNZIP_MAX_DEPTH parts refuse the archive;
 * - each parent is opened one part at a time with O_NOFOLLOW|O_DIRECTORY
 *   (made 0755 when missing), so nothing is ever written through a
 *   symlink, whoever made it;
 * - a file is made with O_CREAT|O_EXCL|O_NOFOLLOW: a name already there is
 *   kept (unzip -n, as Judge0 runs it: the submission's own source wins);
 * - only files and directories are made: a symlink, a hardlink, a device
 *   or a FIFO entry is skipped (named on stderr);
 * - modes keep the owner's read and write and at most rwxr-xr-x; owners,
 *   times, ACLs and xattrs of the zip are never restored;
 * - file bytes are counted as they are written, entries as they are made:
 *   a compression bomb stops at max_bytes. */
#define _GNU_SOURCE
#include "unzip.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNZIP_MAX_DEPTH 64

struct ctx {
	const struct unzip_caps *caps;
	uint64_t bytes;
	unsigned made;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* in made relative and plain into out ("a/./b//c" -> "a/b/c"): 0, 1 when
 * nothing is left ("./"), -1 refused. */
static int clean_name(struct ctx *c, const char *in, char *out, size_t outlen)
{
	if (in[0] == '/')
		return fail(c, "entry '%.200s' has an absolute name: refused", in);
	size_t n = 0;
	int depth = 0;
	for (const char *p = in; *p;) {
		const char *end = strchrnul(p, '/');
		size_t l = (size_t)(end - p);
		if (l == 2 && p[0] == '.' && p[1] == '.')
			return fail(c, "entry '%.200s' has a '..' part (it would climb out of /work): refused", in);
		if (l > NAME_MAX)
			return fail(c, "entry '%.80s...' has a part over NAME_MAX: refused", in);
		if (l && !(l == 1 && p[0] == '.')) {
			if (++depth > UNZIP_MAX_DEPTH)
				return fail(c, "entry '%.80s...' is deeper than %d directories: refused", in,
				            UNZIP_MAX_DEPTH);
			if (n + l + 2 > outlen)
				return fail(c, "entry '%.80s...' has a name over PATH_MAX: refused", in);
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, l);
			n += l;
		}
		p = *end ? end + 1 : end;
	}
	out[n] = 0;
	return n ? 0 : 1;
}

static int count(struct ctx *c)
{
	if (++c->made > c->caps->max_files)
		return fail(c, "the archive has more than %u files and directories: stopped", c->caps->max_files);
	return 0;
}

/* The directory holding path's last part, made as needed and never
 * reached through a symlink; *base is that last part.  An fd, or -1. */
static int open_parent(struct ctx *c, int dirfd, char *path, const char **base)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	char *p = path, *slash;
	while (fd >= 0 && (slash = strchr(p, '/'))) {
		*slash = 0;
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (count(c) < 0 || (mkdirat(fd, p, 0755) < 0 && errno != EEXIST)) {
				if (!c->err[0])
					fail(c, "cannot make directory '%.200s': %s", path, strerror(errno));
				close(fd);
				*slash = '/';
				return -1;
			}
			next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0)
			fail(c, "'%.200s' is not a directory (%s): an entry beneath it is refused", path,
			     errno == ELOOP ? "a symbolic link" : strerror(errno));
		*slash = '/';
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int make_file(struct ctx *c, struct archive *a, int pfd, const char *base, const char *name, mode_t perm)
{
	int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (perm & 0755) | 0600);
	if (fd < 0 && errno == EEXIST)
		return 0; /* kept: unzip -n */
	if (fd < 0)
		return fail(c, "cannot make '%.200s': %s", name, strerror(errno));
	char buf[65536];
	int rc = 0;
	for (;;) {
		la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			rc = fail(c, "'%.200s': %s", name, archive_error_string(a));
			break;
		}
		c->bytes += (uint64_t)n;
		if (c->bytes > c->caps->max_bytes) {
			rc = fail(c, "the archive unpacks to more than %llu KB (max_extract_size): stopped",
			          (unsigned long long)(c->caps->max_bytes >> 10));
			break;
		}
		if (write_all(fd, buf, (size_t)n) < 0) {
			rc = fail(c, "cannot write '%.200s': %s", name, strerror(errno));
			break;
		}
	}
	close(fd);
	return rc;
}

static int do_entry(struct ctx *c, struct archive *a, struct archive_entry *e, int dirfd)
{
	const char *raw = archive_entry_pathname(e);
	char name[PATH_MAX];
	if (!raw)
		return fail(c, "an entry has no name that can be read: refused");
	int k = clean_name(c, raw, name, sizeof(name));
	if (k)
		return k < 0 ? -1 : 0;
	mode_t type = archive_entry_filetype(e);
	if (archive_entry_hardlink(e) || (type != AE_IFREG && type != AE_IFDIR)) {
		if (!c->caps->quiet)
			fprintf(stderr, "ward-unzip: skipped: %.200s (%s: only files and directories are made)\n", name,
			        type == AE_IFLNK ? "a symbolic link" : "not a plain file");
		return 0;
	}
	const char *base;
	int pfd = open_parent(c, dirfd, name, &base);
	if (pfd < 0)
		return -1;
	int rc = count(c);
	if (rc == 0 && type == AE_IFDIR) {
		if (mkdirat(pfd, base, 0755) < 0 && errno != EEXIST)
			rc = fail(c, "cannot make directory '%.200s': %s", name, strerror(errno));
	} else if (rc == 0) {
		rc = make_file(c, a, pfd, base, name, archive_entry_perm(e));
	}
	close(pfd);
	return rc;
}

int unzip_into(const void *zip, size_t len, int dirfd, const struct unzip_caps *caps, char *err, size_t errlen)
{
	struct ctx c = {.caps = caps, .err = err, .errlen = errlen};
	err[0] = 0;
	struct archive *a = archive_read_new();
	if (!a)
		return fail(&c, "out of memory");
	archive_read_support_format_zip(a);
	int rc = 0;
	if (archive_read_open_memory(a, zip, len) != ARCHIVE_OK) {
		rc = fail(&c, "not a zip archive: %s", archive_error_string(a));
		goto out;
	}
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = fail(&c, "not a zip archive, or a damaged one: %s", archive_error_string(a));
			break;
		}
		if ((rc = do_entry(&c, a, e, dirfd)) < 0)
			break;
	}
out:
	archive_read_free(a);
	return rc;
}
