/* cgroup_io.c — reading and writing cgroup files by directory fd (every
 * path resolved once, below a directory checked to be a cgroup
 * filesystem), the numbers in them, and the probe's notes (cg_why). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"

long long cg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void cg_nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Write s to dirfd/file in one write(2), as cgroup files want.  0 or -errno. */
int cg_write_at(int dirfd, const char *file, const char *s)
{
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t w = write(fd, s, len);
	int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
	close(fd);
	return -e;
}

int cg_write_u64_at(int dirfd, const char *file, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return cg_write_at(dirfd, file, buf);
}

/* Read up to len-1 bytes of dirfd/file, NUL-terminated.  Bytes or -errno. */
ssize_t cg_read_at(int dirfd, const char *file, char *buf, size_t len)
{
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t r = read(fd, buf + got, len - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	close(fd);
	return (ssize_t)got;
}

/* The number after "key " at the start of a line of a flat-keyed file
 * (cpu.stat, memory.events, memory.oom_control).  false when absent. */
bool cg_kv_get(const char *buf, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			*v = strtoull(p + kl + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

/* The number a single-value cgroup file starts with. */
bool cg_parse_u64(const char *buf, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno == 0 && end != buf;
}

bool cg_read_u64_at(int dirfd, const char *file, uint64_t *v)
{
	char buf[64];
	return cg_read_at(dirfd, file, buf, sizeof buf) > 0 && cg_parse_u64(buf, v);
}

/* Up to len-1 bytes of an fd kept open, from its start (a read from
 * offset 0 makes a cgroup file anew), NUL-terminated.  Bytes or -errno. */
ssize_t cg_pread_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len - 1) {
		ssize_t r = pread(fd, buf + got, len - 1 - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	return (ssize_t)got;
}

bool cg_pread_u64(int fd, uint64_t *v)
{
	char buf[64];
	return cg_pread_all(fd, buf, sizeof buf) > 0 && cg_parse_u64(buf, v);
}

/* A counter's growth since base (never below 0). */
uint64_t cg_since(uint64_t now, uint64_t base)
{
	return now > base ? now - base : 0;
}

/* Open a directory that must be on a cgroup filesystem.  flags: O_PATH or
 * O_RDONLY.  fd or -errno (-ENOTDIR when it is not a cgroup). */
int cg_open_dir(int at, const char *path, int flags)
{
	int fd = openat(at, path, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		return -ENOTDIR;
	}
	return fd;
}

/* Copy src into dst[n], cut when too long (always NUL-terminated). */
void cg_scopy(char *dst, size_t n, const char *src)
{
	size_t l = strnlen(src, n - 1);
	memcpy(dst, src, l);
	dst[l] = 0;
}

void cg_why(const char *fmt, ...)
{
	size_t used = strlen(cg_host.pub.why);
	if (used + 3 >= sizeof cg_host.pub.why)
		return;
	if (used)
		used += (size_t)snprintf(cg_host.pub.why + used, sizeof cg_host.pub.why - used, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cg_host.pub.why + used, sizeof cg_host.pub.why - used, fmt, ap);
	va_end(ap);
}
