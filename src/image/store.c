/* store.c — the image store's ground: where it is, opening it, its lock,
 * tmp/ directories, names, and blobs.  The index is store_index.c, garbage
 * collection store_gc.c, the C API that lists, opens, inspects and removes
 * images store_images.c (include/ward_image.h).  All four use libc and
 * jansson only, so the lean static `ward` can read a store (`ward run
 * --image`, `ward doctor`); what needs libarchive is in import.c and
 * unpack.c.
 *
 * Concurrency: the index changes only under the exclusive flock of
 * DIR/lock and is replaced by rename, so a reader sees the old or the new
 * whole.  Layers are renamed into layers/sha256/ complete, and renamed out
 * into a locked tmp/ directory before they are deleted, so a crash leaves a
 * whole layer or tmp/ garbage, never half a layer where a layer belongs. */
#define _GNU_SOURCE
#include "image/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/sha256.h"

int store_failerr(char *err, size_t errlen, const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = err && errlen ? vsnprintf(err, errlen, fmt, ap) : -1;
	va_end(ap);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ": %s%s", strerror(e),
		         e == ENOSPC ? " (the image store's filesystem is full: free space, or give --image-store "
		                       "on a bigger one)"
		         : e == EACCES || e == EPERM ? " (the image store is root's: run as root, or give "
		                                       "--image-store DIR of your own)"
		                                     : "");
	errno = e;
	return -1;
}

int store_openat2_beneath(int dirfd, const char *path, int flags, unsigned mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = flags & O_CREAT ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

const char *ward_image_store_default(const char *dir, char *buf, size_t len)
{
	int n;
	const char *env = getenv("WARD_IMAGE_STORE");
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	if (dir && *dir)
		n = snprintf(buf, len, "%s", dir);
	else if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/lib/ward/images");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/ward/images", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.local/share/ward/images", home);
	else
		return NULL;
	if (n < 0 || (size_t)n >= len)
		return NULL;
	/* Relative to the caller's cwd: made absolute (layer paths are handed
	 * to a runtime that may not share it). */
	if (buf[0] != '/') {
		char cwd[4096];
		if (!getcwd(cwd, sizeof(cwd)))
			return NULL;
		char *rel = strdup(buf);
		if (!rel)
			return NULL;
		n = snprintf(buf, len, "%s/%s", cwd, rel);
		free(rel);
		if (n < 0 || (size_t)n >= len)
			return NULL;
	}
	return buf;
}

/* mkdir -p: parents 0755, the last mode. */
static int mkdir_p(const char *path, mode_t mode)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -1;
			*s = '/';
		}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static const char *const store_dirs[] = {"blobs", "blobs/sha256", "layers", "layers/sha256", "pins", "tmp"};

static int rm_tree_at(int at, const char *name, int depth)
{
	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > STORE_MAX_DEPTH + 8) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (rm_tree_at(dirfd(d), e->d_name, depth + 1) < 0)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

int store_rm_tree(int at, const char *name)
{
	return rm_tree_at(at, name, 0);
}

/* Removes what crashed imports left in tmp/: every entry nobody holds a
 * lock on (an import in progress holds its directory's flock). */
static void clean_tmp(struct ward_image_store *s)
{
	int fd = openat(s->dirfd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int efd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (efd < 0)
			continue;
		if (flock(efd, LOCK_EX | LOCK_NB) == 0)
			store_rm_tree(dirfd(d), e->d_name);
		close(efd);
	}
	closedir(d);
}

int ward_image_store_open(const char *dir, bool create, struct ward_image_store **out, char *err, size_t errlen)
{
	*out = NULL;
	char path[4096];
	if (!ward_image_store_default(dir, path, sizeof(path)))
		return base_errf(err, errlen, "cannot tell where the image store is: give --image-store DIR");
	struct stat st;
	if (!create && stat(path, &st) < 0 && errno == ENOENT)
		return base_errf(err, errlen,
		                 "there is no image store at %s yet: import an image first, e.g. `mmdebstrap "
		                 "--variant=minbase bookworm root.tar && ward image import NAME rootfs:root.tar` "
		                 "(or oci-archive:FILE, docker-archive:FILE, `ward image pull REF`)",
		                 path);
	if (!create && stat(path, &st) < 0)
		return store_failerr(err, errlen, "image store %s", path);
	if (create && mkdir_p(path, 0700) < 0)
		return store_failerr(err, errlen, "cannot create the image store %s", path);
	struct ward_image_store *s = calloc(1, sizeof(*s));
	if (!s)
		return base_errf(err, errlen, "out of memory");
	s->lockfd = -1;
	s->dir = strdup(path);
	s->dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!s->dir || s->dirfd < 0) {
		store_failerr(err, errlen, "cannot open the image store %s", path);
		ward_image_store_close(s);
		return -1;
	}
	if (create)
		for (size_t i = 0; i < sizeof(store_dirs) / sizeof(store_dirs[0]); i++)
			if (mkdirat(s->dirfd, store_dirs[i], 0700) < 0 && errno != EEXIST) {
				store_failerr(err, errlen, "cannot create %s/%s", path, store_dirs[i]);
				ward_image_store_close(s);
				return -1;
			}
	s->lockfd = openat(s->dirfd, "lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
	if (s->lockfd < 0 && !create && errno == EACCES)
		s->lockfd = openat(s->dirfd, "lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->lockfd < 0) {
		store_failerr(err, errlen, "%s is not an image store (its lock file)%s", path,
		              create ? "" : "; import an image first: ward image import NAME SOURCE");
		ward_image_store_close(s);
		return -1;
	}
	clean_tmp(s); /* only what nobody holds: harmless without write access */
	*out = s;
	return 0;
}

void ward_image_store_close(struct ward_image_store *s)
{
	if (!s)
		return;
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->dir);
	free(s);
}

const char *ward_image_store_path(const struct ward_image_store *s)
{
	return s->dir;
}

int store_lock(struct ward_image_store *s, int op, char *err, size_t errlen)
{
	while (flock(s->lockfd, op) < 0)
		if (errno != EINTR)
			return store_failerr(err, errlen, "cannot lock the image store %s", s->dir);
	return 0;
}

void store_unlock(struct ward_image_store *s)
{
	flock(s->lockfd, LOCK_UN);
}

/* ---- names and digests ---- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/';
}

int store_ref_parse(const char *in, char name[WARD_IMAGE_NAME_MAX + 1], char tag[WARD_IMAGE_TAG_MAX + 1], char *err,
                    size_t errlen)
{
	const char *slash = strrchr(in, '/');
	const char *colon = strrchr(slash ? slash : in, ':');
	size_t nlen = colon ? (size_t)(colon - in) : strlen(in);
	const char *t = colon ? colon + 1 : "latest";
	if (nlen == 0 || nlen > WARD_IMAGE_NAME_MAX)
		return base_errf(err, errlen, "image name '%s': give NAME[:TAG], NAME of 1 to %d characters", in,
		                 WARD_IMAGE_NAME_MAX);
	for (size_t i = 0; i < nlen; i++)
		if (!name_char(in[i]))
			return base_errf(err, errlen,
			                 "image name '%s': a name holds only a-z, 0-9, '.', '_', '-' and '/'", in);
	if (!((in[0] >= 'a' && in[0] <= 'z') || (in[0] >= '0' && in[0] <= '9')) || in[nlen - 1] == '/' ||
	    memmem(in, nlen, "//", 2) || memmem(in, nlen, "..", 2) || memmem(in, nlen, "/.", 2))
		return base_errf(err, errlen,
		                 "image name '%s': a name starts with a letter or digit, and its parts "
		                 "are not empty nor start with '.'",
		                 in);
	size_t tlen = strlen(t);
	if (tlen == 0 || tlen > WARD_IMAGE_TAG_MAX || t[0] == '.' || t[0] == '-')
		return base_errf(
			err, errlen,
			"image tag in '%s': give 1 to %d of A-Z, a-z, 0-9, '_', '.', '-' (not first: '.', '-')", in,
			WARD_IMAGE_TAG_MAX);
	for (size_t i = 0; i < tlen; i++) {
		char c = t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return base_errf(err, errlen, "image tag in '%s': give A-Z, a-z, 0-9, '_', '.', '-'", in);
	}
	memcpy(name, in, nlen);
	name[nlen] = 0;
	memcpy(tag, t, tlen + 1);
	return 0;
}

bool store_digest_parse(const char *s, char hex[65])
{
	if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 71)
		return false;
	for (int i = 0; i < 64; i++) {
		char c = s[7 + i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	memcpy(hex, s + 7, 65);
	return true;
}

void store_now(char out[40])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- files ---- */

/* Reads all of fd, at most max bytes (more: -1, EFBIG).  *buf NUL-ended. */
int store_read_all(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	if (!b)
		return -1;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				errno = EFBIG;
				return -1;
			}
			cap = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -1;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(b);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Writes dirfd/tmpname then renames it over dirfd/name, durably. */
int store_replace_file(int dirfd, const char *tmpname, const char *name, const void *buf, size_t len)
{
	int fd = openat(dirfd, tmpname, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write_all(fd, buf, len) < 0 || fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlinkat(dirfd, tmpname, 0);
		errno = e;
		return -1;
	}
	close(fd);
	if (renameat(dirfd, tmpname, dirfd, name) < 0) {
		int e = errno;
		unlinkat(dirfd, tmpname, 0);
		errno = e;
		return -1;
	}
	return 0;
}

int store_blob_read(struct ward_image_store *s, const char *hex, size_t max, char **buf, size_t *len, char *err,
                    size_t errlen)
{
	char p[100];
	snprintf(p, sizeof(p), "blobs/sha256/%s", hex);
	int fd = openat(s->dirfd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return store_failerr(err, errlen, "image store %s: blob sha256:%s", s->dir, hex);
	int rc = store_read_all(fd, max, buf, len);
	close(fd);
	if (rc < 0)
		return store_failerr(err, errlen, "image store %s: blob sha256:%s", s->dir, hex);
	char got[65];
	sha256_buf_hex(*buf, *len, got);
	if (strcmp(got, hex) != 0) {
		free(*buf);
		*buf = NULL;
		return base_errf(err, errlen,
		                 "image store %s: blob sha256:%s is corrupt (its content's digest is "
		                 "sha256:%s): remove the image and import it again",
		                 s->dir, hex, got);
	}
	return 0;
}

int store_blob_write(struct ward_image_store *s, const char *hex, const void *buf, size_t len, char *err, size_t errlen)
{
	char p[100], t[100];
	snprintf(p, sizeof(p), "blobs/sha256/%s", hex);
	snprintf(t, sizeof(t), "blobs/sha256/.tmp-%s", hex);
	if (store_replace_file(s->dirfd, t, p, buf, len) < 0)
		return store_failerr(err, errlen, "cannot write %s/%s", s->dir, p);
	return 0;
}

bool store_layer_present(struct ward_image_store *s, const char *hex)
{
	char p[100];
	snprintf(p, sizeof(p), "layers/sha256/%s", hex);
	struct stat st;
	return fstatat(s->dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int store_tmpdir(struct ward_image_store *s, int *fd, char name[32], char *err, size_t errlen)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned char r[8];
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return store_failerr(err, errlen, "getrandom");
		snprintf(name, 32, "tmp/%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
		         r[7]);
		if (mkdirat(s->dirfd, name, 0700) < 0) {
			if (errno == EEXIST)
				continue;
			return store_failerr(err, errlen, "cannot create %s/%s", s->dir, name);
		}
		/* Between mkdir and flock another process's clean_tmp may take
		 * it for a crashed import's and remove it: then try another. */
		*fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (*fd >= 0 && flock(*fd, LOCK_EX | LOCK_NB) == 0 && fstat(*fd, &st) == 0 && st.st_nlink > 0)
			return 0;
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	return base_errf(err, errlen, "cannot make a temporary directory in %s/tmp", s->dir);
}

void store_tmpdir_drop(struct ward_image_store *s, int fd, const char *name)
{
	if (fd < 0)
		return;
	store_rm_tree(s->dirfd, name);
	close(fd);
}

/* ---- owners' sidecars ---- */

int store_owners_put(int work_fd, const char *lname, const char *buf, size_t len)
{
	if (!len)
		return 0;
	char name[64], tmp[72];
	snprintf(name, sizeof(name), "%s.owners", lname);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	return store_replace_file(work_fd, tmp, name, buf, len);
}

void store_owners_move(int work_fd, const char *lname, struct ward_image_store *s, const char *hex)
{
	char from[64], to[100];
	snprintf(from, sizeof(from), "%s.owners", lname);
	snprintf(to, sizeof(to), "layers/sha256/%s.owners", hex);
	renameat(work_fd, from, s->dirfd, to);
}
