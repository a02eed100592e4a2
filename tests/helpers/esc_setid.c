/* esc_setid.c — plant set-id files in a host directory (a --workdir or a
 * writable bind), by every call that sets a mode:
 *   esc_setid DIR
 * chmod, fchmod, fchmodat, fchmodat2, open/openat/creat with a set-id mode,
 * mknod of a regular file, mkdir with S_ISGID, openat2 with a set-id mode.
 * Each attempt is BLOCKED when the call failed or the bits did not stick
 * (esc_common.h); the test then looks at the files from the host. */
#include "esc_common.h"

#include <fcntl.h>
#include <sys/syscall.h>

#define SETID (S_ISUID | S_ISGID)

static const char *dir;

static char *path(const char *name)
{
	static char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Escaped when the file exists with a set-id bit. */
static void verdict(const char *what, const char *name, long rc, int err)
{
	struct stat st;
	int planted = stat(path(name), &st) == 0 && (st.st_mode & SETID);
	esc_result(what, !planted, rc < 0 ? err : 0);
}

static void plain(const char *name)
{
	int fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: esc_setid DIR\n");
		return 2;
	}
	esc_guard();
	dir = argv[1];
	long r;

	plain("chmod");
	r = chmod(path("chmod"), 06755);
	verdict("chmod(06755)", "chmod", r, errno);

	plain("fchmod");
	int fd = open(path("fchmod"), O_RDONLY | O_CLOEXEC);
	r = fchmod(fd, 04755);
	verdict("fchmod(04755)", "fchmod", r, errno);
	if (fd >= 0)
		close(fd);

	plain("fchmodat");
	r = fchmodat(AT_FDCWD, path("fchmodat"), 02755, 0);
	verdict("fchmodat(02755)", "fchmodat", r, errno);

	plain("fchmodat2");
	r = syscall(452, AT_FDCWD, path("fchmodat2"), 04755, 0);
	verdict("fchmodat2(04755)", "fchmodat2", r, errno);

	fd = open(path("open"), O_WRONLY | O_CREAT | O_CLOEXEC, 04755);
	verdict("open(O_CREAT, 04755)", "open", fd, errno);
	if (fd >= 0)
		close(fd);

	fd = openat(AT_FDCWD, path("openat"), O_WRONLY | O_CREAT | O_CLOEXEC, 02755);
	verdict("openat(O_CREAT, 02755)", "openat", fd, errno);
	if (fd >= 0)
		close(fd);

	r = syscall(SYS_creat, path("creat"), 04755);
	verdict("creat(04755)", "creat", r, errno);
	if (r >= 0)
		close((int)r);

	r = syscall(SYS_mknod, path("mknod"), S_IFREG | 04755, 0);
	verdict("mknod(S_IFREG|04755)", "mknod", r, errno);

	r = syscall(SYS_mknodat, AT_FDCWD, path("mknodat"), S_IFREG | 02755, 0);
	verdict("mknodat(S_IFREG|02755)", "mknodat", r, errno);

	r = mkdir(path("mkdir"), 02777);
	verdict("mkdir(02777)", "mkdir", r, errno);

	struct {
		unsigned long long flags, mode, resolve;
	} how = {O_WRONLY | O_CREAT | O_CLOEXEC, 04755, 0};
	r = syscall(437, AT_FDCWD, path("openat2"), &how, sizeof(how));
	verdict("openat2(O_CREAT, 04755)", "openat2", r, errno);
	if (r >= 0)
		close((int)r);
	return esc_done();
}
