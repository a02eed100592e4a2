/* points.c — the store's layer of mount points (SPEC §14): what a sandbox
 * on an image needs in the image's read-only root for the plan that binds
 * that root whole (core/plan.c's plan_image_points: ward's directories,
 * the files bound over, /dev's symlinks, whiteouts over what ward hides),
 * made once in the store as an ordinary layer in overlayfs's format (with
 * one under it: make_under) and stacked on top of every image's layers by
 * image/root.c.
 *
 * One layer serves every image: its name is the sha256 of what it holds
 * (a change of the plan's points is a new layer; the old one goes at the
 * next garbage collection).  It is made by import, and on first use for a
 * store imported before it existed, under the store's lock (shared: gc,
 * which removes it once no image is left, takes it exclusive); made in a
 * locked tmp/ directory and renamed into place, so a concurrent maker's
 * copy or a crash never leaves half of it.  Made by ward in a directory of
 * its own: nothing of an image is looked at, so a symlink in an image's
 * layer cannot steer it; in the merged root, its directories and files
 * win over whatever an image has at their paths. */
#define _GNU_SOURCE
#include "image/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/errf.h"
#include "core/plan.h"
#include "image/sha256.h"

/* Bumped when the layer's format changes other than by its points. */
#define POINTS_VERSION "ward mount points 2\n"

static void hash_point(void *arg, enum plan_point kind, const char *path, const char *target)
{
	char head[16];
	int n = snprintf(head, sizeof(head), "%d ", (int)kind);
	sha256_update(arg, head, (size_t)n);
	sha256_update(arg, path, strlen(path) + 1); /* each with its NUL: no two points hash alike */
	if (target)
		sha256_update(arg, target, strlen(target) + 1);
	sha256_update(arg, "\n", 1);
}

void store_points_hex(char hex[65])
{
	struct sha256 c;
	sha256_init(&c);
	sha256_update(&c, POINTS_VERSION, strlen(POINTS_VERSION));
	plan_image_points(hash_point, &c);
	sha256_hex(&c, hex);
}

struct maker {
	int dirfd; /* the top layer's root */
	int under; /* the layer under it */
	int rc;    /* 0, or the first failure's errno */
	char what[256];
};

/* A whiteout's directory, empty, in the layer under the top one: so that
 * directory is always a merged one, whose listing overlayfs filters of
 * whiteouts, even where the image has none there or something else (a
 * directory of a single layer is listed as it is on disk, its whiteouts
 * included, as names that cannot be opened).  Stacked only for an image
 * that needs it (store_points_need_under). */
static int make_under(struct maker *m, const char *rel)
{
	char dir[256];
	const char *slash = strrchr(rel, '/');
	if (!slash)
		return 0; /* the root: every layer has one */
	if ((size_t)(slash - rel) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = 0;
	for (char *p = dir;; p++) /* each component, made in turn */
		if (*p == '/' || !*p) {
			char c = *p;
			*p = 0;
			if (mkdirat(m->under, dir, 0755) < 0 && errno != EEXIST)
				return -1;
			if (!c)
				return 0;
			*p = c;
		}
}

static void make_point(void *arg, enum plan_point kind, const char *path, const char *target)
{
	struct maker *m = arg;
	if (m->rc)
		return;
	const char *rel = path + 1; /* parents come first: each is made already */
	int r = 0;
	switch (kind) {
	case PLAN_POINT_DIR:
	case PLAN_POINT_OPAQUE:
		r = mkdirat(m->dirfd, rel, 0755);
		if (r == 0 && kind == PLAN_POINT_OPAQUE) {
			int fd = store_openat2_beneath(m->dirfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
			r = fd < 0 ? -1 : fsetxattr(fd, "trusted.overlay.opaque", "y", 1, 0);
			if (r == 0) /* as unpack.c marks one (for an overlay with userxattr) */
				fsetxattr(fd, "user.overlay.opaque", "y", 1, 0);
			if (fd >= 0)
				close(fd);
		}
		break;
	case PLAN_POINT_FILE: {
		int fd = store_openat2_beneath(m->dirfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
		size_t len = target ? strlen(target) : 0;
		r = fd < 0 ? -1 : 0;
		ssize_t w = r == 0 && len ? write(fd, target, len) : (ssize_t)len;
		if (w != (ssize_t)len) {
			if (w >= 0)
				errno = EIO; /* (a fresh file of a few hundred bytes) */
			r = -1;
		}
		if (fd >= 0 && close(fd) < 0)
			r = -1;
		break;
	}
	case PLAN_POINT_SYMLINK:
		r = symlinkat(target, m->dirfd, rel);
		break;
	case PLAN_POINT_HIDDEN: /* overlayfs's whiteout */
		r = mknodat(m->dirfd, rel, S_IFCHR | 0, makedev(0, 0));
		if (r == 0)
			r = make_under(m, rel);
		break;
	}
	if (r < 0) {
		m->rc = errno ? errno : EIO;
		snprintf(m->what, sizeof(m->what), "%s", path);
	}
}

struct dirs_check {
	char *const *layers;
	size_t n;
	bool merged; /* so far, every whiteout's directory is one of the image's */
};

/* Whether the image's layers have dir (relative) as a directory: the
 * topmost layer with an entry of that name decides (a whiteout or anything
 * else there: no); a layer whose root is opaque hides those under it. */
static bool image_has_dir(char *const *layers, size_t n, const char *dir)
{
	char path[4096];
	for (size_t i = n; i-- > 0;) {
		struct stat st;
		if (snprintf(path, sizeof(path), "%s/%s", layers[i], dir) >= (int)sizeof(path))
			return false;
		if (lstat(path, &st) == 0)
			return S_ISDIR(st.st_mode);
		char v;
		if (errno != ENOENT || getxattr(layers[i], "trusted.overlay.opaque", &v, 1) == 1)
			return false;
	}
	return false;
}

static void check_point(void *arg, enum plan_point kind, const char *path, const char *target)
{
	struct dirs_check *c = arg;
	const char *slash = strrchr(path, '/');
	if (kind != PLAN_POINT_HIDDEN || !c->merged || slash == path)
		return;
	char dir[256];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path - 1), path + 1);
	c->merged = image_has_dir(c->layers, c->n, dir);
}

bool store_points_need_under(char *const *layers, size_t n)
{
	struct dirs_check c = {.layers = layers, .n = n, .merged = true};
	plan_image_points(check_point, &c);
	return !c.merged;
}

int store_points(struct ward_image_store *s, char hex[65], char *err, size_t errlen)
{
	store_points_hex(hex);
	char to[100];
	snprintf(to, sizeof(to), "mountpoints/%s", hex);
	struct stat st;
	if (fstatat(s->dirfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (mkdirat(s->dirfd, "mountpoints", 0700) < 0 && errno != EEXIST)
		return store_failerr(err, errlen, "cannot create %s/mountpoints", s->dir);
	int tfd;
	char tname[32];
	if (store_tmpdir(s, &tfd, tname, err, errlen) < 0)
		return -1;
	struct maker m = {.dirfd = -1, .under = -1};
	if (mkdirat(tfd, "x", 0700) < 0 || mkdirat(tfd, "x/" STORE_POINTS_TOP, 0755) < 0 ||
	    mkdirat(tfd, "x/" STORE_POINTS_UNDER, 0755) < 0 ||
	    (m.dirfd = store_openat2_beneath(tfd, "x/" STORE_POINTS_TOP, O_RDONLY | O_DIRECTORY, 0)) < 0 ||
	    (m.under = store_openat2_beneath(tfd, "x/" STORE_POINTS_UNDER, O_RDONLY | O_DIRECTORY, 0)) < 0) {
		if (m.dirfd >= 0)
			close(m.dirfd);
		store_tmpdir_drop(s, tfd, tname);
		return store_failerr(err, errlen, "cannot make the mount points layer in %s/%s", s->dir, tname);
	}
	plan_image_points(make_point, &m);
	close(m.dirfd);
	close(m.under);
	if (m.rc) {
		store_tmpdir_drop(s, tfd, tname);
		errno = m.rc;
		return store_failerr(err, errlen,
		                     "cannot make %s in the image store's mount points layer (whiteouts are "
		                     "0:0 character devices and /dev is marked opaque with a trusted xattr: "
		                     "ward must run as root on a filesystem with trusted xattrs)",
		                     m.what);
	}
	char from[64];
	snprintf(from, sizeof(from), "%s/x", tname);
	/* Taken: another maker placed the same layer meanwhile. */
	int r = renameat(s->dirfd, from, s->dirfd, to);
	int e = errno;
	store_tmpdir_drop(s, tfd, tname);
	if (r < 0 && e != EEXIST && e != ENOTEMPTY) {
		errno = e;
		return store_failerr(err, errlen, "cannot move the mount points layer into %s/%s", s->dir, to);
	}
	return 0;
}
