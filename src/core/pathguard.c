/* pathguard.c — caller-supplied relative paths, checked and written beneath
 * one directory without ever leaving it.
 *
 * pathguard_write runs in the sandbox's PID 1, a child forked from a process
 * that may have other threads: it must not take locks another thread could
 * hold.  So it uses only syscalls and the stack — no malloc, no stdio, no
 * errno-setting libc helper that might allocate.
 *
 * The walk goes one component at a time: mkdirat, then open the component as
 * a directory with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) — on a
 * kernel without openat2 (< 5.6) with openat(O_NOFOLLOW | O_DIRECTORY), which
 * is as safe here because each step opens a single name relative to a
 * directory fd we already hold.  The file itself is created with
 * O_CREAT | O_EXCL, which never follows a symlink and never truncates an
 * existing file.
 *
 * Owns the rules for a caller's relative path and the one way such a file
 * is written; never decides which files a request may bring (request.c,
 * testjob_json.c) and never reads a wire format.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH */
#endif
#include "core/pathguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* The check itself, without any formatting: NULL when the path is fine,
 * else why not.  pathguard_write calls it too, in PID 1, so it must not
 * touch stdio. */
static const char *path_problem(const char *path, size_t len)
{
	if (!path || len == 0)
		return "is empty";
	if (memchr(path, '\0', len))
		return "contains a NUL byte";
	if (len >= PATH_MAX)
		return "is longer than PATH_MAX (4095 bytes)";
	if (path[0] == '/')
		return "is absolute";
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		size_t clen = i - start;
		const char *c = path + start;
		if (clen == 0)
			return "has an empty component (\"//\" or a trailing \"/\")";
		if (clen == 1 && c[0] == '.')
			return "has a \".\" component";
		if (clen == 2 && c[0] == '.' && c[1] == '.')
			return "has a \"..\" component";
		if (clen > NAME_MAX)
			return "has a component longer than 255 bytes";
		start = i + 1;
	}
	return NULL;
}

int pathguard_check(const char *path, size_t len, char *err, size_t errlen)
{
	const char *why = path_problem(path, len);
	if (!why)
		return 0;
	if (err && errlen) {
		/* Show the path only when it is printable as a C string. */
		if (len == 0 || !path || memchr(path, '\0', len))
			snprintf(err, errlen, "file path %s: give a plain relative path such as \"src/main.py\"", why);
		else
			snprintf(err, errlen,
			         "file path \"%.*s%s\" %s: give a plain relative path such as \"src/main.py\"",
			         (int)(len > 120 ? 120 : len), path, len > 120 ? "..." : "", why);
	}
	return -1;
}

int pathguard_check_session(const char *path, size_t len, bool root_ok, char *err, size_t errlen)
{
	if (len == 1 && path[0] == '/' && !root_ok) {
		if (err && errlen)
			snprintf(err, errlen, "file path \"/\": the root itself can only be listed");
		return -1;
	}
	if (len == 1 && path[0] == '/')
		return 0;
	if (len && path[0] == '/')
		return pathguard_check(path + 1, len - 1, err, errlen);
	return pathguard_check(path, len, err, errlen);
}

/* Open name (one component) beneath dirfd as a directory, never through a
 * symlink.  Returns an fd or -errno. */
static int open_dir_beneath(int dirfd, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) /* EPERM: an old seccomp policy */
		fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return (int)fd;
	int e = errno;
	if (e == ENOTDIR) {
		/* O_NOFOLLOW | O_DIRECTORY on a symlink says ENOTDIR (openat) or
		 * ELOOP (openat2); report symlinks as ELOOP either way. */
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP;
		return -EEXIST; /* a non-directory is in the way */
	}
	return -e;
}

static int create_beneath(int dirfd, const char *name, mode_t mode)
{
	struct open_how how = {
		.flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		.mode = mode,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd >= 0)
		return (int)fd;
	int e = errno;
	if (e == EEXIST) {
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP;
	}
	return -e;
}

int pathguard_write(int dirfd, const char *path, const void *data, size_t len, mode_t mode)
{
	size_t plen = path ? strnlen(path, PATH_MAX) : 0;
	char comp[NAME_MAX + 1];
	int cur = -1, rc = 0;

	/* Re-check: this function is the last line of defence. */
	if (plen == 0 || plen >= PATH_MAX || path_problem(path, plen))
		return -EINVAL;
	if (mode == 0)
		mode = 0644;
	mode &= 0777; /* never set-id or sticky bits from a caller */

	cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return -errno;

	const char *p = path;
	for (;;) {
		const char *slash = memchr(p, '/', (size_t)(path + plen - p));
		size_t clen = slash ? (size_t)(slash - p) : (size_t)(path + plen - p);
		memcpy(comp, p, clen);
		comp[clen] = '\0';
		if (!slash)
			break;
		/* A parent directory: make it unless it exists, then step in.
		 * An existing symlink or file makes mkdirat fail with EEXIST;
		 * the open below tells which. */
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		int next = open_dir_beneath(cur, comp);
		if (next < 0) {
			rc = next;
			goto out;
		}
		close(cur);
		cur = next;
		p = slash + 1;
	}

	int fd = create_beneath(cur, comp, mode);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	/* The umask of PID 1 must not decide the mode the caller asked for. */
	if (fchmod(fd, mode) < 0) {
		rc = -errno;
		close(fd);
		goto out;
	}
	const unsigned char *d = data;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, d, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		d += w;
		left -= (size_t)w;
	}
	if (close(fd) < 0 && rc == 0 && errno != EINTR)
		rc = -errno;
out:
	close(cur);
	return rc;
}
