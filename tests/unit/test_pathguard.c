/* test_pathguard.c — the path guard: every refused path form, and writes
 * that must never leave the directory, follow a symlink or replace a file.
 * Called from tests/unit/main.c; prints PASS:/FAIL: lines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pathguard.h"
#include "unit.h"

void test_pathguard(void);

/* Like unit.h's CHECK, with a group prefix. */
#define T(name, cond)                                                                   \
	do {                                                                            \
		if (cond)                                                               \
			printf("PASS: pathguard: %s\n", name);                               \
		else {                                                                  \
			printf("FAIL: pathguard: %s: %s is false\n", name, #cond);            \
			unit_failures++;                                                \
		}                                                                       \
	} while (0)

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int refused(const char *p, size_t len)
{
	char err[256] = "";
	return pathguard_check(p, len, err, sizeof(err)) == -1 && err[0] != '\0';
}

static int accepted(const char *p)
{
	char err[256] = "";
	return pathguard_check(p, strlen(p), err, sizeof(err)) == 0 && err[0] == '\0';
}

static char *read_file(int dirfd, const char *p, size_t *len)
{
	static char buf[65536];
	int fd = openat(dirfd, p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static void check_paths(void)
{
	T("empty refused", refused("", 0));
	T("NULL refused", refused(NULL, 0));
	T("absolute refused", refused("/etc/passwd", 11));
	T("dotdot refused", refused("..", 2));
	T("dotdot prefix refused", refused("../x", 4));
	T("dotdot middle refused", refused("a/../../x", 9));
	T("dotdot last refused", refused("a/..", 4));
	T("dot refused", refused("./a", 3));
	T("double slash refused", refused("a//b", 4));
	T("trailing slash refused", refused("a/", 2));
	T("NUL refused", refused("a\0/etc", 6));
	T("NUL at end refused", refused("ab\0", 3));
	static char longp[PATH_MAX + 8];
	for (size_t i = 0; i < sizeof(longp) - 1; i++)
		longp[i] = (i % 100 == 99) ? '/' : 'a';
	longp[sizeof(longp) - 1] = '\0';
	T("PATH_MAX refused", refused(longp, PATH_MAX));
	T("just under PATH_MAX accepted", pathguard_check(longp, PATH_MAX - 2, NULL, 0) == 0);
	char longc[300];
	memset(longc, 'b', sizeof(longc));
	T("long component refused", refused(longc, 256));
	T("255-byte component accepted", pathguard_check(longc, 255, NULL, 0) == 0);
	T("plain accepted", accepted("main.py"));
	T("nested accepted", accepted("src/pkg/mod.py"));
	T("dotfile accepted", accepted(".hidden"));
	T("triple dot accepted", accepted("..."));
	T("dotdot inside a name accepted", accepted("a..b/c.."));
	T("err NULL ok", pathguard_check("/x", 2, NULL, 0) == -1);
}

/* A session's files calls (ward.h): relative as above, or "/" and such a
 * path, "/" itself for a listing only. */
static void check_session_paths(void)
{
	char err[256];
#define S(p, root) pathguard_check_session(p, strlen(p), root, err, sizeof(err))
	T("session: relative accepted", S("a/b", false) == 0);
	T("session: absolute accepted", S("/etc/hostname", false) == 0);
	T("session: / listed", S("/", true) == 0);
	T("session: / refused but to list", S("/", false) == -1);
	T("session: /.. refused", S("/..", true) == -1);
	T("session: /a/../b refused", S("/a/../b", true) == -1);
	T("session: // refused", S("//etc", true) == -1);
	T("session: /a/ refused", S("/a/", true) == -1);
	T("session: relative .. refused", S("../a", true) == -1);
	T("session: NUL refused", pathguard_check_session("/a\0b", 4, true, err, sizeof(err)) == -1);
#undef S
}

static void check_writes(void)
{
	char tmpl[] = "/tmp/ward-pg.XXXXXX";
	char outside[] = "/tmp/ward-pg-out.XXXXXX";
	if (!mkdtemp(tmpl) || !mkdtemp(outside)) {
		printf("FAIL: pathguard: mkdtemp: %s\n", strerror(errno));
		return;
	}
	int fds_before = count_fds();
	int dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len = 0;
	char *got;

	T("write plain", pathguard_write(dfd, "a.txt", "hello", 5, 0) == 0);
	got = read_file(dfd, "a.txt", &len);
	T("write plain content", got && len == 5 && memcmp(got, "hello", 5) == 0);
	struct stat st;
	T("default mode 0644", fstatat(dfd, "a.txt", &st, 0) == 0 && (st.st_mode & 07777) == 0644);

	T("write nested", pathguard_write(dfd, "d1/d2/b.py", "x", 1, 0755) == 0);
	T("nested mode 0755 despite umask",
	  fstatat(dfd, "d1/d2/b.py", &st, 0) == 0 && (st.st_mode & 07777) == 0755);
	T("parent made 0755", fstatat(dfd, "d1/d2", &st, 0) == 0 && S_ISDIR(st.st_mode));
	T("second file in existing dir", pathguard_write(dfd, "d1/d2/c.py", "", 0, 0) == 0);
	T("setuid stripped", pathguard_write(dfd, "suid", "", 0, 04755) == 0 &&
				     fstatat(dfd, "suid", &st, 0) == 0 && (st.st_mode & 07777) == 0755);

	T("existing file not replaced", pathguard_write(dfd, "a.txt", "evil", 4, 0) == -EEXIST);
	got = read_file(dfd, "a.txt", &len);
	T("existing file unchanged", got && len == 5 && memcmp(got, "hello", 5) == 0);
	T("file as directory refused", pathguard_write(dfd, "a.txt/x", "y", 1, 0) == -EEXIST);
	T("directory as file refused", pathguard_write(dfd, "d1", "y", 1, 0) == -EEXIST);

	/* Symlinks planted beforehand (as code run earlier in the same /work
	 * could): a parent symlink to outside, a final symlink, a dangling
	 * one.  None may be followed. */
	char target[PATH_MAX];
	snprintf(target, sizeof(target), "%s/victim", outside);
	int vfd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (vfd >= 0)
		close(vfd);
	int sl = symlinkat(outside, dfd, "lnkdir");
	sl |= symlinkat(target, dfd, "lnkfile");
	char dangling[PATH_MAX];
	snprintf(dangling, sizeof(dangling), "%s/new", outside);
	sl |= symlinkat(dangling, dfd, "dangling");
	sl |= symlinkat("/", dfd, "root");
	T("symlinks planted", sl == 0);
	T("symlink parent refused", pathguard_write(dfd, "lnkdir/f", "x", 1, 0) == -ELOOP);
	T("symlink root parent refused", pathguard_write(dfd, "root/tmp/ward-pg-evil", "x", 1, 0) == -ELOOP);
	T("symlink file refused", pathguard_write(dfd, "lnkfile", "x", 1, 0) == -ELOOP);
	T("dangling symlink refused", pathguard_write(dfd, "dangling", "x", 1, 0) == -ELOOP);
	T("nothing created outside", faccessat(AT_FDCWD, dangling, F_OK, 0) != 0 &&
					     stat(target, &st) == 0 && st.st_size == 0 &&
					     faccessat(AT_FDCWD, "/tmp/ward-pg-evil", F_OK, 0) != 0);
	char nested_link[PATH_MAX];
	snprintf(nested_link, sizeof(nested_link), "%s/d1/l", tmpl);
	if (symlink("..", nested_link) == 0)
		T("symlink .. in a subdir refused", pathguard_write(dfd, "d1/l/escape", "x", 1, 0) == -ELOOP);

	T("bad path refused by write", pathguard_write(dfd, "../escape", "x", 1, 0) == -EINVAL);
	T("absolute refused by write", pathguard_write(dfd, "/tmp/ward-pg-abs", "x", 1, 0) == -EINVAL);
	T("empty refused by write", pathguard_write(dfd, "", "x", 1, 0) == -EINVAL);
	T("NULL refused by write", pathguard_write(dfd, NULL, "x", 1, 0) == -EINVAL);

	/* A bigger file goes through the write loop. */
	static unsigned char big[1 << 20];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	T("1 MiB write", pathguard_write(dfd, "big.bin", big, sizeof(big), 0) == 0 &&
				 fstatat(dfd, "big.bin", &st, 0) == 0 && st.st_size == (off_t)sizeof(big));

	close(dfd);
	T("no fd leaked", count_fds() == fds_before);

	char cmd[2 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", tmpl, outside);
	if (system(cmd) != 0)
		printf("FAIL: pathguard: cleanup of %s\n", tmpl);
}

void test_pathguard(void)
{
	check_paths();
	check_session_paths();
	check_writes();
}
