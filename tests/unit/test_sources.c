/* test_sources.c — where a bind's source is looked for: a held descriptor
 * and what lies beneath it, a path pinned to an inode, a rootfs's entries
 * (never through a symlink), and the Landlock write paths (never a
 * symlink).  Called from tests/unit/main.c; prints PASS:/FAIL: lines. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pathguard.h"
#include "core/plan.h"
#include "core/request.h"
#include "sandbox/landlock.h"
#include "unit.h"

void test_sources(void);

static const struct mount_op *find_dst(const struct plan *p, const char *dst)
{
	for (size_t i = 0; i < p->nops; i++)
		if (strcmp(p->ops[i].dst, dst) == 0)
			return &p->ops[i];
	return NULL;
}

static bool same_inode(int fd, const char *path)
{
	struct stat a, b;
	return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* held paths: the descriptor, and what lies beneath it */
static void held(const char *dir, const char *out)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char src[600], path[700];
	const char *rest = NULL;
	snprintf(src, sizeof(src), WARD_HELD_PATH "%d/etc/ssl", fd);
	CHECK("sources: ward.h's held path is the one the mounts know", strcmp(WARD_HELD_PATH, MOUNTS_HELD_PATH) == 0);
	CHECK("sources: a held path names its descriptor", mounts_held_fd(src, &rest) == fd && strcmp(rest, "/etc/ssl") == 0);
	CHECK("sources: a plain path is not held", mounts_held_fd(dir, NULL) == -1);
	CHECK("sources: a malformed held path is refused", mounts_held_fd(WARD_HELD_PATH "3x", NULL) == -EINVAL &&
								   mounts_held_fd(WARD_HELD_PATH, NULL) == -EINVAL &&
								   mounts_held_fd(WARD_HELD_PATH "99999999999", NULL) == -EINVAL);
	struct mount_op op = {.kind = OP_BIND, .src = src};
	int s = mounts_open_source(&op);
	snprintf(path, sizeof(path), "%s/etc/ssl", dir);
	CHECK("sources: two components below a held descriptor (a rootfs's etc/ssl)", same_inode(s, path));
	if (s >= 0)
		close(s);
	/* etc swapped for a symlink to a directory outside */
	char etc[620], moved[620];
	snprintf(etc, sizeof(etc), "%s/etc", dir);
	snprintf(moved, sizeof(moved), "%s/etc.moved", dir);
	if (rename(etc, moved) == 0 && symlink(out, etc) == 0) {
		s = mounts_open_source(&op);
		CHECK("sources: a symlink on the way below a held descriptor is refused", s == -ELOOP);
		if (s >= 0)
			close(s);
		unlink(etc);
		rename(moved, etc);
	}
	close(fd);
}

/* pinned paths: opened without a symlink, and only while they are the inode */
static void pinned(const char *dir, const char *out)
{
	char a[600], b[600], link[600], src[700];
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	mkdir(a, 0755);
	mkdir(b, 0755);
	(void)!symlink(out, link);
	struct plan p;
	memset(&p, 0, sizeof(p));
	int fd = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(src, sizeof(src), WARD_HELD_PATH "%d", fd);
	struct mount_op op = {.kind = OP_BIND, .src = src};
	char err[256] = "";
	CHECK("sources: a held path pins to its descriptor's path and inode",
	      plan_pin_held(&p, &op, err, sizeof(err)) == 0 && strcmp(op.src, a) == 0 && op.below == strlen(a) &&
		      (op.flags & OPF_PINNED));
	int s = mounts_open_source(&op);
	CHECK("sources: the pinned path opens while it is that inode", same_inode(s, a));
	if (s >= 0)
		close(s);
	/* a renamed in its place: another directory, then a symlink */
	char a2[620];
	snprintf(a2, sizeof(a2), "%s/a.moved", dir);
	rename(a, a2);
	rename(b, a);
	s = mounts_open_source(&op);
	CHECK("sources: another directory in its place is refused (ESTALE)", s == -ESTALE);
	if (s >= 0)
		close(s);
	rename(a, b);
	rename(link, a);
	s = mounts_open_source(&op);
	CHECK("sources: a symlink in its place is refused", s < 0);
	if (s >= 0)
		close(s);
	unlink(a);
	rename(a2, a);
	/* the pinned path's own components are not followed either */
	struct mount_op viasym = op;
	char through[700];
	snprintf(through, sizeof(through), "%s/l2/a", dir);
	char l2[620];
	snprintf(l2, sizeof(l2), "%s/l2", dir);
	(void)!symlink(".", l2);
	viasym.src = through;
	viasym.below = strlen(through);
	s = mounts_open_source(&viasym);
	CHECK("sources: a pinned path through a symlink is refused, even to the same inode", s == -ELOOP);
	if (s >= 0)
		close(s);
	unlink(l2);
	close(fd);
	plan_free(&p);
}

/* a rootfs: its entries beneath it, a symlinked etc not followed */
static void rootfs_plan(const char *dir, const char *out)
{
	char r[600], p1[700], ssl[700];
	snprintf(r, sizeof(r), "%s/root", dir);
	snprintf(p1, sizeof(p1), "%s/usr", r);
	mkdir(r, 0755);
	mkdir(p1, 0755);
	snprintf(p1, sizeof(p1), "%s/etc", r);
	mkdir(p1, 0755);
	snprintf(ssl, sizeof(ssl), "%s/etc/ssl", r);
	mkdir(ssl, 0755);
	struct ward_request req;
	memset(&req, 0, sizeof(req));
	req.rootfs = r;
	req.stdin_fd = -1;
	req.limits.tmp_size_mb = 16;
	struct plan p;
	char err[256];
	const struct mount_op *op;
	if (plan_build(&p, &req, 1000, err, sizeof(err)) == 0) {
		op = find_dst(&p, "/etc/ssl");
		CHECK("sources: a rootfs's etc/ssl is found beneath it", op && op->kind == OP_BIND && op->below == strlen(r));
		op = find_dst(&p, "/usr");
		CHECK("sources: a rootfs's top-level entry too", op && op->kind == OP_BIND && op->below == strlen(r));
		plan_free(&p);
	} else
		CHECK("sources: plan with a rootfs", false);
	/* etc a symlink to a directory outside that has an ssl */
	char outssl[620];
	snprintf(outssl, sizeof(outssl), "%s/ssl", out);
	mkdir(outssl, 0755);
	rmdir(ssl);
	rmdir(p1);
	(void)!symlink(out, p1);
	if (plan_build(&p, &req, 1000, err, sizeof(err)) == 0) {
		CHECK("sources: a rootfs whose etc is a symlink gives no /etc/ssl", !find_dst(&p, "/etc/ssl"));
		plan_free(&p);
	} else
		CHECK("sources: plan with a rootfs whose etc is a symlink", false);
}

static void landlock_exact(const char *dir)
{
	int abi = ward_landlock_abi();
	if (abi < 1) {
		printf("PASS: sources: landlock: not on this kernel (skipped)\n");
		return;
	}
	char link[600];
	snprintf(link, sizeof(link), "%s/to-root", dir);
	(void)!symlink("/", link);
	const char *paths[] = {link};
	int rs = ward_landlock_ruleset(abi, paths, 1);
	CHECK("sources: a Landlock write path that is a symlink (to /) is refused", rs == -ELOOP);
	if (rs >= 0)
		close(rs);
	paths[0] = dir;
	rs = ward_landlock_ruleset(abi, paths, 1);
	CHECK("sources: ... a plain one is taken", rs >= 0);
	if (rs >= 0)
		close(rs);
}

void test_sources(void)
{
	char dir[] = "/tmp/ward-src.XXXXXX", out[] = "/tmp/ward-src-out.XXXXXX";
	if (!mkdtemp(dir) || !mkdtemp(out)) {
		CHECK("sources: mkdtemp", false);
		return;
	}
	char p[600];
	snprintf(p, sizeof(p), "%s/etc", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/ssl", dir);
	mkdir(p, 0755);
	put(out, "secret", "s\n");
	held(dir, out);
	pinned(dir, out);
	rootfs_plan(dir, out);
	landlock_exact(dir);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s' '%s'", dir, out);
	if (system(cmd) != 0)
		printf("INFO: sources: could not remove %s\n", dir);
}
