/* build_layer.c — a tree into one layer's tar, as `docker build` writes
 * them: names sorted (the same tree gives the same bytes), owners as the
 * layer's users, overlayfs's whiteouts (0:0 character devices) as .wh.NAME
 * and its opaque directories (trusted.overlay.opaque=y) as .wh..wh..opq.
 * The tree is the build's own (a RUN's writable layer, read after the step
 * ended, or a COPY's staging directory): it is walked beneath its fd without
 * following a symlink; FIFOs, sockets and devices other than whiteouts are
 * left out (the store would drop them).  Bytes and entries are capped. */
#define _GNU_SOURCE
#include "image/build_layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/store.h"

struct walk {
	struct archive *a;
	const struct layer_tar_opts *o;
	uint64_t bytes, entries;
	struct hardlink {
		dev_t dev;
		ino_t ino;
		char *path;
	} * links;
	size_t nlinks;
	char *err;
	size_t errlen;
};

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

char **image_dir_names(int fd, size_t *n)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return NULL;
	}
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(char *));
			if (!nv)
				break;
			v = nv;
		}
		if (!(v[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof(char *), cmp_names);
	return v ? v : calloc(1, sizeof(char *));
}

static void owner(struct walk *w, struct archive_entry *e, const struct stat *st)
{
	long u = w->o->force_uid, g = w->o->force_gid;
	if (u < 0)
		u = st->st_uid >= w->o->uid_base && st->st_uid - w->o->uid_base < 65536
		            ? (long)(st->st_uid - w->o->uid_base)
		            : 0;
	if (g < 0)
		g = st->st_gid >= w->o->uid_base && st->st_gid - w->o->uid_base < 65536
		            ? (long)(st->st_gid - w->o->uid_base)
		            : 0;
	archive_entry_set_uid(e, u);
	archive_entry_set_gid(e, g);
}

static int header(struct walk *w, const char *path, const struct stat *st, mode_t type, struct archive_entry **out)
{
	if (++w->entries > w->o->max_entries)
		return base_errf(w->err, w->errlen, "the layer holds more than %llu entries: refused",
		                 (unsigned long long)w->o->max_entries);
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return base_errf(w->err, w->errlen, "out of memory");
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, st ? st->st_mode & 07777 : 0644);
	if (st) {
		owner(w, e, st);
		archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	}
	*out = e;
	return 0;
}

static int put(struct walk *w, struct archive_entry *e)
{
	int r = archive_write_header(w->a, e);
	archive_entry_free(e);
	return r < ARCHIVE_WARN ? base_errf(w->err, w->errlen, "write the layer: %s", archive_error_string(w->a)) : 0;
}

/* An empty regular file: a whiteout's form in the tar. */
static int marker(struct walk *w, const char *path)
{
	struct archive_entry *e;
	if (header(w, path, NULL, AE_IFREG, &e) < 0)
		return -1;
	archive_entry_set_size(e, 0);
	return put(w, e);
}

static int file_data(struct walk *w, int dirfd, const char *name, const char *path, const struct stat *st)
{
	if (w->bytes + (uint64_t)st->st_size > w->o->max_bytes)
		return base_errf(w->err, w->errlen, "the layer is over %llu bytes (at '%s'): refused",
		                 (unsigned long long)w->o->max_bytes, path);
	w->bytes += (uint64_t)st->st_size;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return store_failerr(w->err, w->errlen, "read '%s'", path);
	char buf[65536];
	ssize_t n;
	off_t left = st->st_size;
	while (left > 0 && (n = read(fd, buf, sizeof(buf))) > 0) {
		if (n > left)
			n = (ssize_t)left;
		if (archive_write_data(w->a, buf, (size_t)n) != n) {
			close(fd);
			return base_errf(w->err, w->errlen, "write the layer: %s", archive_error_string(w->a));
		}
		left -= n;
	}
	close(fd);
	return left ? base_errf(w->err, w->errlen, "'%s' changed while it was read", path) : 0;
}

/* A regular file, or a hardlink to one already written. */
static int regular(struct walk *w, int dirfd, const char *name, const char *path, const struct stat *st)
{
	struct archive_entry *e;
	if (header(w, path, st, AE_IFREG, &e) < 0)
		return -1;
	if (st->st_nlink > 1) {
		for (size_t i = 0; i < w->nlinks; i++)
			if (w->links[i].dev == st->st_dev && w->links[i].ino == st->st_ino) {
				archive_entry_set_hardlink(e, w->links[i].path);
				archive_entry_set_size(e, 0);
				return put(w, e);
			}
		struct hardlink *l = realloc(w->links, (w->nlinks + 1) * sizeof(*l));
		if (l) {
			w->links = l;
			l[w->nlinks++] = (struct hardlink){st->st_dev, st->st_ino, strdup(path)};
		}
	}
	archive_entry_set_size(e, st->st_size);
	if (put(w, e) < 0)
		return -1;
	return file_data(w, dirfd, name, path, st);
}

static int walk_dir(struct walk *w, int fd, const char *prefix, int depth);

static int one(struct walk *w, int fd, const char *name, const char *prefix, int depth)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s%s", prefix, name) >= (int)sizeof(path))
		return base_errf(w->err, w->errlen, "a name in the layer is over PATH_MAX: refused");
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return store_failerr(w->err, w->errlen, "stat '%s'", path);
	struct archive_entry *e;
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		char wh[4200];
		snprintf(wh, sizeof(wh), "%s.wh.%s", prefix, name);
		return marker(w, wh);
	}
	if (S_ISREG(st.st_mode))
		return regular(w, fd, name, path, &st);
	if (S_ISLNK(st.st_mode)) {
		char t[4096];
		ssize_t n = readlinkat(fd, name, t, sizeof(t) - 1);
		if (n < 0)
			return store_failerr(w->err, w->errlen, "readlink '%s'", path);
		t[n] = 0;
		if (header(w, path, &st, AE_IFLNK, &e) < 0)
			return -1;
		archive_entry_set_symlink(e, t);
		return put(w, e);
	}
	if (!S_ISDIR(st.st_mode))
		return 0; /* a FIFO, socket or device: the store drops them */
	if (depth >= STORE_MAX_DEPTH)
		return base_errf(w->err, w->errlen, "'%s' is deeper than %d directories: refused", path,
		                 STORE_MAX_DEPTH);
	if (header(w, path, &st, AE_IFDIR, &e) < 0 || put(w, e) < 0)
		return -1;
	int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return store_failerr(w->err, w->errlen, "open '%s'", path);
	char v[4];
	ssize_t xn = fgetxattr(sub, "trusted.overlay.opaque", v, sizeof(v));
	char sp[4200];
	snprintf(sp, sizeof(sp), "%s/", path);
	int rc = 0;
	if (xn == 1 && v[0] == 'y') {
		char op[4300];
		snprintf(op, sizeof(op), "%s.wh..wh..opq", sp);
		rc = marker(w, op);
	}
	if (rc == 0)
		rc = walk_dir(w, sub, sp, depth + 1);
	close(sub);
	return rc;
}

static int walk_dir(struct walk *w, int fd, const char *prefix, int depth)
{
	size_t n = 0;
	char **v = image_dir_names(fd, &n);
	if (!v)
		return store_failerr(w->err, w->errlen, "list '%s'", prefix[0] ? prefix : "/");
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && v[i])
			rc = one(w, fd, v[i], prefix, depth);
		free(v[i]);
	}
	free(v);
	return rc;
}

int layer_tar(int dirfd, int out_fd, const struct layer_tar_opts *o, uint64_t *bytes, char *err, size_t errlen)
{
	struct walk w = {.a = archive_write_new(), .o = o, .err = err, .errlen = errlen};
	int rc = -1;
	if (!w.a || archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w.a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(w.a, out_fd) != ARCHIVE_OK)
		base_errf(err, errlen, "libarchive: %s", w.a ? archive_error_string(w.a) : "out of memory");
	else if (walk_dir(&w, dirfd, "", 0) == 0) {
		if (archive_write_close(w.a) != ARCHIVE_OK)
			base_errf(err, errlen, "write the layer: %s", archive_error_string(w.a));
		else
			rc = 0;
	}
	if (w.a)
		archive_write_free(w.a);
	for (size_t i = 0; i < w.nlinks; i++)
		free(w.links[i].path);
	free(w.links);
	if (bytes)
		*bytes = w.bytes;
	return rc;
}
