/* store.c — the image store's reading half: where it is, its lock, the
 * index, blobs, pins, garbage collection, and the C API that lists, opens,
 * inspects and removes images (include/ward_image.h).  Uses libc and jansson
 * only, so the lean static `ward` can read a store (`ward run --image`,
 * `ward doctor`); what needs libarchive is in import.c and unpack.c.
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

#include "image/sha256.h"

int store_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

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
		return store_fail(err, errlen, "cannot tell where the image store is: give --image-store DIR");
	struct stat st;
	if (!create && stat(path, &st) < 0)
		return store_failerr(err, errlen, "image store %s", path);
	if (create && mkdir_p(path, 0700) < 0)
		return store_failerr(err, errlen, "cannot create the image store %s", path);
	struct ward_image_store *s = calloc(1, sizeof(*s));
	if (!s)
		return store_fail(err, errlen, "out of memory");
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

int store_ref_parse(const char *in, char name[WARD_IMAGE_NAME_MAX + 1], char tag[WARD_IMAGE_TAG_MAX + 1],
		    char *err, size_t errlen)
{
	const char *slash = strrchr(in, '/');
	const char *colon = strrchr(slash ? slash : in, ':');
	size_t nlen = colon ? (size_t)(colon - in) : strlen(in);
	const char *t = colon ? colon + 1 : "latest";
	if (nlen == 0 || nlen > WARD_IMAGE_NAME_MAX)
		return store_fail(err, errlen, "image name '%s': give NAME[:TAG], NAME of 1 to %d characters", in,
				  WARD_IMAGE_NAME_MAX);
	for (size_t i = 0; i < nlen; i++)
		if (!name_char(in[i]))
			return store_fail(err, errlen, "image name '%s': a name holds only a-z, 0-9, '.', '_', '-' and '/'",
					  in);
	if (!((in[0] >= 'a' && in[0] <= 'z') || (in[0] >= '0' && in[0] <= '9')) || in[nlen - 1] == '/' ||
	    memmem(in, nlen, "//", 2) || memmem(in, nlen, "..", 2) || memmem(in, nlen, "/.", 2))
		return store_fail(err, errlen, "image name '%s': a name starts with a letter or digit, and its parts "
					       "are not empty nor start with '.'", in);
	size_t tlen = strlen(t);
	if (tlen == 0 || tlen > WARD_IMAGE_TAG_MAX || t[0] == '.' || t[0] == '-')
		return store_fail(err, errlen, "image tag in '%s': give 1 to %d of A-Z, a-z, 0-9, '_', '.', '-' (not first: '.', '-')",
				  in, WARD_IMAGE_TAG_MAX);
	for (size_t i = 0; i < tlen; i++) {
		char c = t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return store_fail(err, errlen, "image tag in '%s': give A-Z, a-z, 0-9, '_', '.', '-'", in);
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
static int read_all(int fd, size_t max, char **buf, size_t *len)
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
static int replace_file(int dirfd, const char *tmpname, const char *name, const void *buf, size_t len)
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
	int rc = read_all(fd, max, buf, len);
	close(fd);
	if (rc < 0)
		return store_failerr(err, errlen, "image store %s: blob sha256:%s", s->dir, hex);
	char got[65];
	sha256_buf_hex(*buf, *len, got);
	if (strcmp(got, hex) != 0) {
		free(*buf);
		*buf = NULL;
		return store_fail(err, errlen, "image store %s: blob sha256:%s is corrupt (its content's digest is "
					       "sha256:%s): remove the image and import it again", s->dir, hex, got);
	}
	return 0;
}

int store_blob_write(struct ward_image_store *s, const char *hex, const void *buf, size_t len, char *err,
		     size_t errlen)
{
	char p[100], t[100];
	snprintf(p, sizeof(p), "blobs/sha256/%s", hex);
	snprintf(t, sizeof(t), "blobs/sha256/.tmp-%s", hex);
	if (replace_file(s->dirfd, t, p, buf, len) < 0)
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
	return store_fail(err, errlen, "cannot make a temporary directory in %s/tmp", s->dir);
}

void store_tmpdir_drop(struct ward_image_store *s, int fd, const char *name)
{
	if (fd < 0)
		return;
	store_rm_tree(s->dirfd, name);
	close(fd);
}

/* ---- the index ---- */

void store_index_free(struct store_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->v[i].layers);
	free(ix->v);
	ix->v = NULL;
	ix->n = 0;
}

struct store_image *store_index_find(const struct store_index *ix, const char *name, const char *tag)
{
	for (size_t i = 0; i < ix->n; i++)
		if (!strcmp(ix->v[i].name, name) && !strcmp(ix->v[i].tag, tag))
			return &ix->v[i];
	return NULL;
}

int store_index_put(struct store_index *ix, const struct store_image *img)
{
	struct store_layer *l = malloc((img->nlayers ? img->nlayers : 1) * sizeof(*l));
	if (!l)
		return -1;
	memcpy(l, img->layers, img->nlayers * sizeof(*l));
	struct store_image *old = store_index_find(ix, img->name, img->tag);
	if (!old) {
		struct store_image *v = realloc(ix->v, (ix->n + 1) * sizeof(*v));
		if (!v) {
			free(l);
			return -1;
		}
		ix->v = v;
		old = &ix->v[ix->n++];
	} else
		free(old->layers);
	*old = *img;
	old->layers = l;
	return 0;
}

void store_index_del(struct store_index *ix, struct store_image *img)
{
	free(img->layers);
	size_t i = (size_t)(img - ix->v);
	memmove(&ix->v[i], &ix->v[i + 1], (ix->n - i - 1) * sizeof(*img));
	ix->n--;
}

bool store_index_layer(const struct store_index *ix, const char *hex, struct store_layer *out)
{
	for (size_t i = 0; i < ix->n; i++)
		for (size_t j = 0; j < ix->v[i].nlayers; j++)
			if (!strcmp(ix->v[i].layers[j].hex, hex)) {
				*out = ix->v[i].layers[j];
				return true;
			}
	return false;
}

static bool copy_str(json_t *o, const char *key, char *out, size_t len)
{
	const char *v = json_string_value(json_object_get(o, key));
	if (!v || strlen(v) >= len)
		return false;
	strcpy(out, v);
	return true;
}

static bool get_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static int image_from_json(json_t *o, struct store_image *img)
{
	memset(img, 0, sizeof(*img));
	char d[80], c[80];
	json_t *ls = json_object_get(o, "layers");
	if (!copy_str(o, "name", img->name, sizeof(img->name)) || !copy_str(o, "tag", img->tag, sizeof(img->tag)) ||
	    !copy_str(o, "digest", d, sizeof(d)) || !store_digest_parse(d, img->digest) ||
	    !copy_str(o, "config", c, sizeof(c)) || !store_digest_parse(c, img->config) ||
	    !copy_str(o, "created", img->created, sizeof(img->created)) || !get_u64(o, "size", &img->size) ||
	    !json_is_array(ls) || json_array_size(ls) > 4096)
		return -1;
	img->nlayers = json_array_size(ls);
	img->layers = calloc(img->nlayers ? img->nlayers : 1, sizeof(*img->layers));
	if (!img->layers)
		return -1;
	for (size_t i = 0; i < img->nlayers; i++) {
		json_t *l = json_array_get(ls, i);
		if (!copy_str(l, "digest", d, sizeof(d)) || !store_digest_parse(d, img->layers[i].hex) ||
		    !get_u64(l, "size", &img->layers[i].size) || !get_u64(l, "inodes", &img->layers[i].inodes)) {
			free(img->layers);
			img->layers = NULL;
			return -1;
		}
	}
	return 0;
}

int store_index_load(struct ward_image_store *s, struct store_index *ix, char *err, size_t errlen)
{
	ix->v = NULL;
	ix->n = 0;
	int fd = openat(s->dirfd, "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	char *buf;
	size_t len;
	if (fd < 0 || read_all(fd, 64u << 20, &buf, &len) < 0) {
		store_failerr(err, errlen, "cannot read %s/index.json", s->dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	json_t *imgs = json_object_get(root, "images");
	if (!json_is_array(imgs)) {
		json_decref(root);
		return store_fail(err, errlen, "%s/index.json is damaged (%s): move the store aside and import again",
				  s->dir, root ? "no \"images\" array" : je.text);
	}
	ix->v = calloc(json_array_size(imgs) + 1, sizeof(*ix->v));
	if (!ix->v) {
		json_decref(root);
		return store_fail(err, errlen, "out of memory");
	}
	for (size_t i = 0; i < json_array_size(imgs); i++) {
		if (image_from_json(json_array_get(imgs, i), &ix->v[ix->n]) < 0) {
			json_decref(root);
			store_index_free(ix);
			return store_fail(err, errlen, "%s/index.json: image %zu is damaged: move the store aside and "
						       "import again", s->dir, i);
		}
		ix->n++;
	}
	json_decref(root);
	return 0;
}

static json_t *image_to_json(const struct store_image *img)
{
	char d[80], c[80];
	snprintf(d, sizeof(d), "sha256:%s", img->digest);
	snprintf(c, sizeof(c), "sha256:%s", img->config);
	json_t *ls = json_array();
	for (size_t i = 0; i < img->nlayers; i++) {
		char l[80];
		snprintf(l, sizeof(l), "sha256:%s", img->layers[i].hex);
		json_array_append_new(ls, json_pack("{s:s,s:I,s:I}", "digest", l, "size", (json_int_t)img->layers[i].size,
						    "inodes", (json_int_t)img->layers[i].inodes));
	}
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:o}", "name", img->name, "tag", img->tag, "digest", d, "config",
			 c, "created", img->created, "size", (json_int_t)img->size, "layers", ls);
}

int store_index_save(struct ward_image_store *s, const struct store_index *ix, char *err, size_t errlen)
{
	json_t *imgs = json_array();
	for (size_t i = 0; i < ix->n; i++)
		json_array_append_new(imgs, image_to_json(&ix->v[i]));
	json_t *root = json_pack("{s:i,s:o}", "version", 1, "images", imgs);
	char *txt = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	if (!txt)
		return store_fail(err, errlen, "out of memory");
	int rc = replace_file(s->dirfd, "index.json.tmp", "index.json", txt, strlen(txt));
	free(txt);
	if (rc < 0)
		return store_failerr(err, errlen, "cannot write %s/index.json", s->dir);
	return 0;
}

/* ---- garbage collection ---- */

struct hexset {
	char (*v)[65];
	size_t n, cap;
};

static int hexset_add(struct hexset *h, const char *hex)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->v[i], hex))
			return 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		char(*v)[65] = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	memcpy(h->v[h->n++], hex, 65);
	return 0;
}

static bool hexset_has(const struct hexset *h, const char *hex)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->v[i], hex))
			return true;
	return false;
}

/* The config and diff_ids of the manifest blob hex (a pinned image that
 * is no longer listed), added to the sets. */
static int keep_manifest(struct ward_image_store *s, const char *hex, struct hexset *layers, struct hexset *blobs)
{
	char *buf = NULL, e[256];
	size_t len;
	if (hexset_add(blobs, hex) < 0 || store_blob_read(s, hex, STORE_JSON_MAX, &buf, &len, e, sizeof(e)) < 0)
		return -1;
	json_t *m = json_loadb(buf, len, 0, NULL);
	free(buf);
	char c[65];
	int rc = -1;
	if (store_digest_parse(json_string_value(json_object_get(json_object_get(m, "config"), "digest")), c) &&
	    hexset_add(blobs, c) == 0 && store_blob_read(s, c, STORE_JSON_MAX, &buf, &len, e, sizeof(e)) == 0) {
		json_t *cfg = json_loadb(buf, len, 0, NULL);
		free(buf);
		json_t *ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
		rc = 0;
		for (size_t i = 0; i < json_array_size(ids); i++) {
			char l[65];
			if (store_digest_parse(json_string_value(json_array_get(ids, i)), l) && hexset_add(layers, l) < 0)
				rc = -1;
		}
		json_decref(cfg);
	}
	json_decref(m);
	return rc;
}

/* Removes the entries of dir (beneath the store) whose names are not in
 * keep; layers are first renamed into a locked tmp/ directory. */
static void sweep(struct ward_image_store *s, const char *dir, const struct hexset *keep, bool tree)
{
	int fd = openat(s->dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
			continue;
		if (strlen(e->d_name) == 64 && hexset_has(keep, e->d_name))
			continue;
		if (!tree) {
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		int tfd;
		char tname[32], err[256];
		if (store_tmpdir(s, &tfd, tname, err, sizeof(err)) < 0)
			continue;
		char to[64];
		snprintf(to, sizeof(to), "%s/x", tname);
		if (renameat(dirfd(d), e->d_name, s->dirfd, to) < 0)
			store_rm_tree(dirfd(d), e->d_name);
		store_tmpdir_drop(s, tfd, tname);
	}
	closedir(d);
}

int store_gc(struct ward_image_store *s, const struct store_index *ix, char *err, size_t errlen)
{
	struct hexset layers = {0}, blobs = {0}, pins = {0};
	int rc = -1;
	for (size_t i = 0; i < ix->n; i++) {
		if (hexset_add(&blobs, ix->v[i].digest) < 0 || hexset_add(&blobs, ix->v[i].config) < 0 ||
		    hexset_add(&pins, ix->v[i].digest) < 0)
			goto out;
		for (size_t j = 0; j < ix->v[i].nlayers; j++)
			if (hexset_add(&layers, ix->v[i].layers[j].hex) < 0)
				goto out;
	}
	/* Pinned images keep their layers even when no longer listed. */
	int pfd = openat(s->dirfd, "pins", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = pfd >= 0 ? fdopendir(pfd) : NULL;
	if (pfd >= 0 && !d)
		close(pfd);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strlen(e->d_name) != 64 || hexset_has(&pins, e->d_name))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), e->d_name, 0); /* nobody uses it: no callers can come (we hold the store) */
		else if (hexset_add(&pins, e->d_name) < 0 || keep_manifest(s, e->d_name, &layers, &blobs) < 0) {
			close(fd);
			closedir(d);
			store_fail(err, errlen, "image store %s: cannot read pinned image sha256:%s", s->dir, e->d_name);
			rc = -2;
			goto out;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	sweep(s, "layers/sha256", &layers, true);
	sweep(s, "blobs/sha256", &blobs, false);
	rc = 0;
out:
	/* The caller's err is written, never read: it may hold anything. */
	if (rc == -1)
		store_fail(err, errlen, "image store %s: out of memory while collecting garbage", s->dir);
	free(layers.v);
	free(blobs.v);
	free(pins.v);
	return rc < 0 ? -1 : 0;
}

/* ---- the API ---- */

static int info_cmp(const void *a, const void *b)
{
	const struct ward_image_info *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->tag, y->tag);
}

int ward_image_list(struct ward_image_store *s, struct ward_image_info **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	struct store_index ix;
	if (store_lock(s, LOCK_SH, err, errlen) < 0)
		return -1;
	int rc = store_index_load(s, &ix, err, errlen);
	store_unlock(s);
	if (rc < 0)
		return -1;
	struct ward_image_info *v = calloc(ix.n + 1, sizeof(*v));
	if (!v) {
		store_index_free(&ix);
		return store_fail(err, errlen, "out of memory");
	}
	for (size_t i = 0; i < ix.n; i++) {
		strcpy(v[i].name, ix.v[i].name);
		strcpy(v[i].tag, ix.v[i].tag);
		snprintf(v[i].digest, sizeof(v[i].digest), "sha256:%s", ix.v[i].digest);
		v[i].size = ix.v[i].size;
		v[i].layers = (unsigned)ix.v[i].nlayers;
		strcpy(v[i].created, ix.v[i].created);
	}
	*n = ix.n;
	store_index_free(&ix);
	qsort(v, *n, sizeof(*v), info_cmp);
	*out = v;
	return 0;
}

int ward_image_store_usage(const char *dir, uint64_t *images, uint64_t *bytes, char *err, size_t errlen)
{
	*images = *bytes = 0;
	struct ward_image_store *s;
	char path[4096];
	struct stat st;
	if (!ward_image_store_default(dir, path, sizeof(path)))
		return store_fail(err, errlen, "cannot tell where the image store is");
	if (stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	if (ward_image_store_open(dir, false, &s, err, errlen) < 0)
		return -1;
	int rc = -1;
	struct store_index ix;
	if (store_lock(s, LOCK_SH, err, errlen) == 0) {
		rc = store_index_load(s, &ix, err, errlen);
		store_unlock(s);
	}
	if (rc == 0) {
		struct hexset seen = {0};
		*images = ix.n;
		for (size_t i = 0; i < ix.n; i++)
			for (size_t j = 0; j < ix.v[i].nlayers; j++)
				if (!hexset_has(&seen, ix.v[i].layers[j].hex)) {
					*bytes += ix.v[i].layers[j].size;
					if (hexset_add(&seen, ix.v[i].layers[j].hex) < 0)
						rc = -1;
				}
		free(seen.v);
		store_index_free(&ix);
	}
	ward_image_store_close(s);
	return rc;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void ward_image_release(struct ward_image *img)
{
	if (!img)
		return;
	strv_free(img->env, img->nenv);
	strv_free(img->entrypoint, img->nentrypoint);
	strv_free(img->cmd, img->ncmd);
	strv_free(img->layers, img->nlayers);
	free(img->workdir);
	free(img->user);
	if (img->pin_fd >= 0)
		close(img->pin_fd); /* drops the shared flock */
	free(img);
}

/* A JSON array of strings (or null) -> a malloc'd vector; -1 on a wrong shape. */
static int strv_from(json_t *a, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 65536)
		return -1;
	char **v = calloc(json_array_size(a) + 1, sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *str = json_string_value(json_array_get(a, i));
		if (!str || !(v[i] = strdup(str))) {
			strv_free(v, i);
			return -1;
		}
	}
	*out = v;
	*n = json_array_size(a);
	return 0;
}

static int opt_str(json_t *o, const char *key, char **out)
{
	*out = NULL;
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v) || (json_is_string(v) && !json_string_length(v)))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = strdup(json_string_value(v));
	return *out ? 0 : -1;
}

/* Fills img's config fields from the config blob (its digest checked). */
static int load_config(struct ward_image_store *s, const char *hex, struct ward_image *img, char *err,
		       size_t errlen)
{
	char *buf;
	size_t len;
	if (store_blob_read(s, hex, STORE_JSON_MAX, &buf, &len, err, errlen) < 0)
		return -1;
	json_t *cfg = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *c = json_object_get(cfg, "config");
	if (!c)
		c = json_object_get(cfg, "container_config"); /* old docker configs */
	int rc = 0;
	if (!cfg || strv_from(json_object_get(c, "Env"), &img->env, &img->nenv) < 0 ||
	    strv_from(json_object_get(c, "Entrypoint"), &img->entrypoint, &img->nentrypoint) < 0 ||
	    strv_from(json_object_get(c, "Cmd"), &img->cmd, &img->ncmd) < 0 ||
	    opt_str(c, "WorkingDir", &img->workdir) < 0 || opt_str(c, "User", &img->user) < 0)
		rc = store_fail(err, errlen, "image %s:%s: its config (sha256:%s) has a field of the wrong type", img->name,
				img->tag, hex);
	json_decref(cfg);
	return rc;
}

static int pin_open(struct ward_image_store *s, const char *hex, int op)
{
	char p[100];
	snprintf(p, sizeof(p), "pins/%s", hex);
	int fd = openat(s->dirfd, p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EACCES)
		fd = openat(s->dirfd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (flock(fd, op) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int ward_image_open(struct ward_image_store *s, const char *name, struct ward_image **out, char *err,
		    size_t errlen)
{
	*out = NULL;
	struct ward_image *img = calloc(1, sizeof(*img));
	if (!img)
		return store_fail(err, errlen, "out of memory");
	img->pin_fd = -1;
	struct store_index ix = {0};
	if (store_ref_parse(name, img->name, img->tag, err, errlen) < 0 || store_lock(s, LOCK_SH, err, errlen) < 0) {
		free(img);
		return -1;
	}
	int rc = store_index_load(s, &ix, err, errlen);
	struct store_image *e = rc == 0 ? store_index_find(&ix, img->name, img->tag) : NULL;
	if (rc == 0 && !e)
		rc = store_fail(err, errlen, "no image %s:%s in %s: import it first (ward image import %s:%s SOURCE), "
					     "or see ward image ls", img->name, img->tag, s->dir, img->name, img->tag);
	if (rc == 0 && (img->pin_fd = pin_open(s, e->digest, LOCK_SH)) < 0)
		rc = store_failerr(err, errlen, "cannot pin image %s:%s in %s", img->name, img->tag, s->dir);
	store_unlock(s);
	if (rc == 0) {
		snprintf(img->digest, sizeof(img->digest), "sha256:%s", e->digest);
		snprintf(img->config_digest, sizeof(img->config_digest), "sha256:%s", e->config);
		img->size = e->size;
		rc = load_config(s, e->config, img, err, errlen);
	}
	if (rc == 0 && !(img->layers = calloc(e->nlayers + 1, sizeof(char *))))
		rc = store_fail(err, errlen, "out of memory");
	for (size_t i = 0; rc == 0 && i < e->nlayers; i++) {
		if (asprintf(&img->layers[i], "%s/layers/sha256/%s", s->dir, e->layers[i].hex) < 0) {
			img->layers[i] = NULL;
			rc = store_fail(err, errlen, "out of memory");
			break;
		}
		img->nlayers++;
		if (!store_layer_present(s, e->layers[i].hex))
			rc = store_fail(err, errlen, "image %s:%s: layer sha256:%s is missing from %s: remove the image "
						     "and import it again", img->name, img->tag, e->layers[i].hex, s->dir);
	}
	store_index_free(&ix);
	if (rc < 0) {
		ward_image_release(img);
		return -1;
	}
	*out = img;
	return 0;
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

char *ward_image_inspect_json(struct ward_image_store *s, const char *name, char *err, size_t errlen)
{
	struct ward_image *img;
	if (ward_image_open(s, name, &img, err, errlen) < 0)
		return NULL;
	struct store_index ix = {0};
	char *txt = NULL;
	if (store_lock(s, LOCK_SH, err, errlen) == 0) {
		int rc = store_index_load(s, &ix, err, errlen);
		store_unlock(s);
		struct store_image *e = rc == 0 ? store_index_find(&ix, img->name, img->tag) : NULL;
		if (rc == 0 && !e)
			store_fail(err, errlen, "image %s:%s was removed meanwhile", img->name, img->tag);
		if (e) {
			json_t *ls = json_array();
			for (size_t i = 0; i < e->nlayers && i < img->nlayers; i++) {
				char d[80];
				snprintf(d, sizeof(d), "sha256:%s", e->layers[i].hex);
				json_array_append_new(ls, json_pack("{s:s,s:I,s:I,s:s}", "diff_id", d, "size",
								    (json_int_t)e->layers[i].size, "inodes",
								    (json_int_t)e->layers[i].inodes, "path", img->layers[i]));
			}
			json_t *cfg = json_pack("{s:o,s:o,s:o,s:s?,s:s?}", "Env", strv_json(img->env, img->nenv),
						"Entrypoint", strv_json(img->entrypoint, img->nentrypoint), "Cmd",
						strv_json(img->cmd, img->ncmd), "WorkingDir", img->workdir, "User", img->user);
			json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:o,s:o}", "name", img->name, "tag", img->tag,
					      "digest", img->digest, "config_digest", img->config_digest, "size",
					      (json_int_t)img->size, "created", e->created, "store", s->dir, "config", cfg,
					      "layers", ls);
			txt = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
			json_decref(o);
			if (!txt)
				store_fail(err, errlen, "out of memory");
		}
		store_index_free(&ix);
	}
	ward_image_release(img);
	return txt;
}

int ward_image_remove(struct ward_image_store *s, const char *name, char *err, size_t errlen)
{
	char n[WARD_IMAGE_NAME_MAX + 1], t[WARD_IMAGE_TAG_MAX + 1];
	if (store_ref_parse(name, n, t, err, errlen) < 0 || store_lock(s, LOCK_EX, err, errlen) < 0)
		return -1;
	struct store_index ix;
	int rc = store_index_load(s, &ix, err, errlen);
	struct store_image *e = rc == 0 ? store_index_find(&ix, n, t) : NULL;
	int pin = -1;
	if (rc == 0 && !e)
		rc = store_fail(err, errlen, "no image %s:%s in %s (see ward image ls)", n, t, s->dir);
	if (rc == 0 && (pin = pin_open(s, e->digest, LOCK_EX | LOCK_NB)) < 0)
		rc = errno == EWOULDBLOCK ? store_fail(err, errlen, "image %s:%s is in use by a running sandbox; retry "
								    "when it ends", n, t)
					  : store_failerr(err, errlen, "cannot lock image %s:%s", n, t);
	if (rc == 0) {
		store_index_del(&ix, e);
		rc = store_index_save(s, &ix, err, errlen);
	}
	if (pin >= 0)
		close(pin);
	if (rc == 0)
		rc = store_gc(s, &ix, err, errlen);
	store_index_free(&ix);
	store_unlock(s);
	return rc;
}
