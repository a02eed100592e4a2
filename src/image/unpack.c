/* unpack.c — one layer's tar, unpacked beneath a directory of ward's.
 *
 * The bytes are hostile.  libarchive only reads them (two readers: the
 * outer one undoes gzip or zstd and hands the plain stream, hashed and
 * counted, to the inner one, which reads tar); every write is ward's own,
 * relative to the layer directory's fd:
 * - names are made relative and plain (unpack_clean_path); ".." refuses;
 * - each parent is reached one component at a time with openat2
 *   (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS): a
 *   symlink or file the layer planted where a parent should be refuses the
 *   import, as does a name past PATH_MAX or deeper than STORE_MAX_DEPTH;
 * - the last component is made with O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat,
 *   symlinkat, mkfifoat (whatever was there is unlinked first, never
 *   followed); a symlink's target is stored, never resolved;
 * - a hardlink's target must be a regular file already unpacked in this
 *   layer, resolved beneath it without a symlink, and is linked by fd;
 * - device nodes, sockets and FIFOs are dropped (named on stderr): a FIFO
 *   in a layer would be one inode shared by every sandbox on the image, a
 *   channel between tenants that only Landlock closes;
 * - modes keep rwx and the sticky bit of directories; setuid and setgid are
 *   dropped, no xattr from the tar is restored (file capabilities, SELinux
 *   labels, trusted.overlay.* redirects), owners are the store's (root);
 * - OCI whiteouts become overlayfs's: .wh.NAME a 0:0 character device NAME,
 *   .wh..wh..opq trusted.overlay.opaque=y (and user.overlay.opaque=y) on the
 *   directory;
 * - file bytes are counted as written (a sparse file's holes stay holes,
 *   and cost nothing), every entry read counts against the entry cap (a
 *   directory restated a million times makes one inode but a million
 *   entries' work), and the plain stream as read: a compression bomb stops
 *   at the cap. */
#define _GNU_SOURCE
#include "image/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/sha256.h"
#include "image/store.h"

int unpack_clean_path(const char *in, char *out, size_t outlen, char *err, size_t errlen)
{
	size_t inlen = strlen(in), n = 0;
	int depth = 0;
	if (inlen >= PATH_MAX)
		return base_errf(err, errlen, "an entry's name is %zu bytes long (over PATH_MAX): refused", inlen);
	const char *p = in;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t l = (size_t)(end - p);
		if (l == 0 || (l == 1 && p[0] == '.')) {
			p = end;
			continue;
		}
		if (l == 2 && p[0] == '.' && p[1] == '.')
			return base_errf(err, errlen,
			                 "entry '%.200s' has a '..' part (it would climb out of the layer): "
			                 "refused",
			                 in);
		if (l > NAME_MAX)
			return base_errf(err, errlen, "entry '%.80s...' has a part over NAME_MAX: refused", in);
		if (++depth > STORE_MAX_DEPTH)
			return base_errf(err, errlen, "entry '%.80s...' is deeper than %d directories: refused", in,
			                 STORE_MAX_DEPTH);
		if (n + l + 2 > outlen)
			return base_errf(err, errlen, "an entry's name is too long: refused");
		if (n)
			out[n++] = '/';
		memcpy(out + n, p, l);
		n += l;
		p = end;
	}
	out[n] = 0;
	return 0;
}

struct src {
	int fd;
	struct sha256 h;
	uint64_t n;
	char buf[65536];
};

struct mid {
	struct archive *outer;
	struct sha256 h;
	uint64_t n, max;
	bool over;
	char buf[65536];
};

struct ctx {
	int root;
	const struct unpack_opts *o;
	struct unpack_stats *st;
	struct src *src;
	size_t owners_cap;
	char *err;
	size_t errlen;
};

static la_ssize_t outer_read(struct archive *a, void *ud, const void **buf)
{
	struct src *s = ud;
	ssize_t r;
	do
		r = read(s->fd, s->buf, sizeof(s->buf));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		archive_set_error(a, errno, "read: %s", strerror(errno));
		return -1;
	}
	sha256_update(&s->h, s->buf, (size_t)r);
	s->n += (uint64_t)r;
	*buf = s->buf;
	return r;
}

static la_ssize_t inner_read(struct archive *a, void *ud, const void **buf)
{
	struct mid *m = ud;
	la_ssize_t r = archive_read_data(m->outer, m->buf, sizeof(m->buf));
	if (r < 0) {
		archive_set_error(a, EIO, "%s", archive_error_string(m->outer));
		return -1;
	}
	m->n += (uint64_t)r;
	if (m->n > m->max) {
		m->over = true;
		archive_set_error(a, EFBIG, "the uncompressed stream is over its cap");
		return -1;
	}
	sha256_update(&m->h, m->buf, (size_t)r);
	*buf = m->buf;
	return r;
}

/* A name from the archive, printable, for messages. */
static const char *printable(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = 0;
	return buf;
}

static void dropped(struct ctx *c, const char *path, const char *why)
{
	c->st->dropped++;
	if (!c->o->quiet) {
		char b[256];
		fprintf(stderr, "ward: image layer: dropped '%s' (%s)\n", printable(path, b, sizeof(b)), why);
	}
}

static int count_inode(struct ctx *c)
{
	if (++c->st->inodes > c->o->max_inodes)
		return base_errf(c->err, c->errlen,
		                 "the image holds more than %llu entries (the inode cap): raise it, "
		                 "or this is not an image to run",
		                 (unsigned long long)c->o->max_inodes);
	return 0;
}

/* The directory that holds path's last component, made where missing, never
 * through a symlink.  An fd (O_PATH), or -1 with err. */
static int open_parent(struct ctx *c, char *path, const char **base)
{
	int fd = dup(c->root);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "dup");
	char *p = path;
	for (;;) {
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = 0;
		int nfd = store_openat2_beneath(fd, p, O_PATH | O_DIRECTORY, 0);
		if (nfd < 0 && errno == ENOENT) {
			if (count_inode(c) < 0) {
				*slash = '/';
				close(fd);
				return -1;
			}
			if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
				*slash = '/';
				store_failerr(c->err, c->errlen, "cannot make directory '%s'", path);
				close(fd);
				return -1;
			}
			nfd = store_openat2_beneath(fd, p, O_PATH | O_DIRECTORY, 0);
		}
		*slash = '/';
		if (nfd < 0) {
			int e = errno;
			char b[256];
			close(fd);
			if (e == ELOOP || e == ENOTDIR || e == EXDEV)
				return base_errf(c->err, c->errlen,
				                 "entry '%s' lies under a symlink or file that the layer "
				                 "planted as its parent: refused",
				                 printable(path, b, sizeof(b)));
			errno = e;
			return store_failerr(c->err, c->errlen, "cannot open the parent of '%s'",
			                     printable(path, b, sizeof(b)));
		}
		close(fd);
		fd = nfd;
		p = slash + 1;
	}
	*base = p;
	return fd;
}

/* Clears the way for a new entry at pfd/base: a non-directory there is
 * unlinked (never followed).  1 when a directory is there and a directory
 * is wanted (keep it), 0 when the name is free, -1 refused. */
static int make_room(struct ctx *c, int pfd, const char *base, bool want_dir, const char *path)
{
	struct stat st;
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : store_failerr(c->err, c->errlen, "stat '%s'", path);
	if (S_ISDIR(st.st_mode)) {
		if (want_dir)
			return 1;
		char b[256];
		return base_errf(c->err, c->errlen, "entry '%s' would replace a directory of the same layer: refused",
		                 printable(path, b, sizeof(b)));
	}
	if (unlinkat(pfd, base, 0) < 0)
		return store_failerr(c->err, c->errlen, "cannot replace '%s'", path);
	return 0;
}

static void set_times(int pfd, const char *base, int fd, struct archive_entry *e)
{
	if (!archive_entry_mtime_is_set(e))
		return;
	struct timespec ts[2] = {{.tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e)},
	                         {.tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e)}};
	if (fd >= 0)
		futimens(fd, ts);
	else
		utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW);
}

static int too_big(struct ctx *c)
{
	return base_errf(c->err, c->errlen,
	                 "the image unpacks to more than %llu bytes (--max-image-bytes): refused; "
	                 "raise --max-image-bytes if it is an image you trust",
	                 (unsigned long long)c->o->max_bytes);
}

static int pwrite_all(int fd, const char *p, size_t n, off_t at)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

/* The entry's data blocks at their offsets: a sparse file's holes are
 * never written (they read as zeros), so only real bytes count against
 * the cap; its size (holes included) is at most the cap too. */
static int write_data(struct ctx *c, struct archive *in, int fd, struct archive_entry *e, const char *path)
{
	uint64_t size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
	if (size > c->o->max_bytes)
		return too_big(c);
	for (;;) {
		const void *buf;
		size_t n;
		la_int64_t off;
		int r = archive_read_data_block(in, &buf, &n, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return -2; /* the archive's error */
		if (off < 0 || (uint64_t)off + n > c->o->max_bytes || c->st->bytes + n > c->o->max_bytes)
			return too_big(c);
		c->st->bytes += n;
		if (pwrite_all(fd, buf, n, (off_t)off) < 0)
			return store_failerr(c->err, c->errlen, "cannot write '%s'", path);
		if (c->o->progress)
			c->o->progress(c->o->ctx, c->src->n, c->st->bytes);
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size) < 0)
		return store_failerr(c->err, c->errlen, "cannot size '%s'", path);
	return 0;
}

static int write_file(struct ctx *c, struct archive *in, int pfd, const char *base, struct archive_entry *e,
                      const char *path)
{
	int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "cannot create '%s'", path);
	int rc = write_data(c, in, fd, e, path);
	/* rwx only: no setuid, setgid or sticky bit on a file. */
	if (rc == 0 && fchmod(fd, archive_entry_perm(e) & 0777) < 0)
		rc = store_failerr(c->err, c->errlen, "chmod '%s'", path);
	if (rc == 0)
		set_times(pfd, base, fd, e);
	close(fd);
	return rc;
}

static int make_dir(struct ctx *c, int pfd, const char *base, struct archive_entry *e, const char *path)
{
	int r = make_room(c, pfd, base, true, path);
	if (r < 0)
		return -1;
	if (r == 0) {
		if (mkdirat(pfd, base, 0700) < 0)
			return store_failerr(c->err, c->errlen, "cannot make directory '%s'", path);
	}
	int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "cannot open directory '%s'", path);
	/* rwx and the sticky bit (/tmp); never setgid. */
	int rc = fchmod(fd, archive_entry_perm(e) & 01777) < 0 ? store_failerr(c->err, c->errlen, "chmod '%s'", path)
	                                                       : 0;
	close(fd);
	return rc;
}

static int make_hardlink(struct ctx *c, int pfd, const char *base, const char *target, const char *path)
{
	char t[PATH_MAX], b[256];
	if (unpack_clean_path(target, t, sizeof(t), c->err, c->errlen) < 0)
		return -1;
	if (!t[0] || !strcmp(t, path))
		return base_errf(c->err, c->errlen, "hardlink '%s' points at itself or the layer's root: refused",
		                 printable(path, b, sizeof(b)));
	/* Resolved beneath the layer, without a symlink anywhere: a target
	 * outside, or reached through a link the layer planted, is not found. */
	int tfd = store_openat2_beneath(c->root, t, O_PATH, 0);
	if (tfd < 0)
		return base_errf(c->err, c->errlen,
		                 "hardlink '%s' points at '%s', which is not a file unpacked earlier in "
		                 "this layer (%s): refused",
		                 printable(path, b, sizeof(b)), t, strerror(errno));
	struct stat st;
	if (fstat(tfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(tfd);
		return base_errf(c->err, c->errlen,
		                 "hardlink '%s' points at '%s', which is not a regular file: refused",
		                 printable(path, b, sizeof(b)), t);
	}
	int rc = make_room(c, pfd, base, false, path);
	if (rc == 0 && linkat(tfd, "", pfd, base, AT_EMPTY_PATH) < 0) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
		if (linkat(AT_FDCWD, proc, pfd, base, AT_SYMLINK_FOLLOW) < 0)
			rc = store_failerr(c->err, c->errlen, "cannot link '%s'", path);
	}
	close(tfd);
	return rc;
}

/* .wh.NAME and .wh..wh..opq, as overlayfs writes them. */
static int whiteout(struct ctx *c, int pfd, const char *base, const char *path)
{
	if (!strcmp(base, ".wh..wh..opq")) {
		int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return store_failerr(c->err, c->errlen, "cannot open the directory of '%s'", path);
		int rc = 0;
		if (fsetxattr(fd, "trusted.overlay.opaque", "y", 1, 0) < 0)
			rc = store_failerr(c->err, c->errlen,
			                   "cannot mark '%s''s directory opaque (trusted.overlay.opaque: "
			                   "needs root and a filesystem with trusted xattrs for the store)",
			                   path);
		/* For an overlay mounted with userxattr (in a user namespace);
		 * where user xattrs are not taken, only trusted mounts see it. */
		if (rc == 0)
			fsetxattr(fd, "user.overlay.opaque", "y", 1, 0);
		close(fd);
		return rc;
	}
	if (!strncmp(base, ".wh..wh.", 8)) {
		dropped(c, path, "an aufs metadata entry");
		return 0;
	}
	const char *name = base + 4;
	char b[256];
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
		return base_errf(c->err, c->errlen, "whiteout '%s' names nothing: refused",
		                 printable(path, b, sizeof(b)));
	struct stat st;
	/* Files of this same layer win over its whiteouts (OCI image spec). */
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) < 0)
		return store_failerr(c->err, c->errlen,
		                     "cannot make the whiteout of '%s' (a 0:0 character device: needs "
		                     "root)",
		                     path);
	return 0;
}

/* A build's own copy of a layer keeps the tar's owners (below 65536: a
 * build's user namespace maps no more), so that a later step sees what an
 * earlier one chowned. */
static int keep_owner(struct ctx *c, int pfd, const char *base, struct archive_entry *e, const char *path)
{
	la_int64_t u = archive_entry_uid(e), g = archive_entry_gid(e);
	uid_t uid = u >= 0 && u < 65536 ? (uid_t)u : 65534;
	gid_t gid = g >= 0 && g < 65536 ? (gid_t)g : 65534;
	if (fchownat(pfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return store_failerr(c->err, c->errlen, "cannot give '%s' its owner", path);
	return 0;
}

/* The store keeps no owners in its layers (files are root's); a build
 * needs them for the steps it runs on a base, so the others are listed
 * (layers/sha256/HEX.owners beside the layer). */
static int list_owner(struct ctx *c, struct archive_entry *e, const char *path)
{
	la_int64_t u = archive_entry_uid(e), g = archive_entry_gid(e);
	if ((u == 0 && g == 0) || u < 0 || g < 0 || u >= 65536 || g >= 65536)
		return 0;
	char head[32];
	int hn = snprintf(head, sizeof(head), "%lld %lld ", (long long)u, (long long)g);
	size_t need = c->st->owners_len + (size_t)hn + strlen(path) + 1;
	if (need > c->owners_cap) {
		size_t cap = c->owners_cap ? c->owners_cap * 2 : 4096;
		while (cap < need)
			cap *= 2;
		char *n = realloc(c->st->owners, cap);
		if (!n)
			return base_errf(c->err, c->errlen, "out of memory");
		c->st->owners = n;
		c->owners_cap = cap;
	}
	memcpy(c->st->owners + c->st->owners_len, head, (size_t)hn);
	memcpy(c->st->owners + c->st->owners_len + hn, path, strlen(path) + 1);
	c->st->owners_len = need;
	return 0;
}

static const char *entry_path(struct archive_entry *e)
{
	const char *p = archive_entry_pathname(e);
	return p ? p : archive_entry_pathname_utf8(e);
}

static int do_entry(struct ctx *c, struct archive *in, struct archive_entry *e)
{
	const char *raw = entry_path(e);
	char path[PATH_MAX], b[256];
	if (!raw)
		return base_errf(c->err, c->errlen, "an entry's name cannot be read: refused");
	if (unpack_clean_path(raw, path, sizeof(path), c->err, c->errlen) < 0)
		return -1;
	/* Every entry counts, whether it makes an inode or restates one. */
	if (count_inode(c) < 0)
		return -1;
	if (!path[0])
		return 0; /* the layer's root: ward's, 0755 */
	const char *base = path;
	int pfd = open_parent(c, path, &base);
	if (pfd < 0)
		return -1;
	int rc = 0;
	const char *hl = archive_entry_hardlink(e);
	if (!hl)
		hl = archive_entry_hardlink_utf8(e);
	mode_t type = archive_entry_filetype(e);
	if (!c->o->layout && !strncmp(base, ".wh.", 4))
		rc = whiteout(c, pfd, base, path);
	else if (hl)
		rc = make_hardlink(c, pfd, base, hl, path);
	else if (type == AE_IFDIR)
		rc = make_dir(c, pfd, base, e, path);
	else if (type == AE_IFREG) {
		if ((rc = make_room(c, pfd, base, false, path)) == 0)
			rc = write_file(c, in, pfd, base, e, path);
	} else if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(e);
		if (!t)
			t = archive_entry_symlink_utf8(e);
		if (!t || !t[0] || strlen(t) >= PATH_MAX)
			rc = base_errf(c->err, c->errlen, "symlink '%s' has no target or one past PATH_MAX: refused",
			               printable(path, b, sizeof(b)));
		else if ((rc = make_room(c, pfd, base, false, path)) == 0) {
			if (symlinkat(t, pfd, base) < 0)
				rc = store_failerr(c->err, c->errlen, "cannot make symlink '%s'", path);
			else
				set_times(pfd, base, -1, e);
		}
	} else if (c->o->layout)
		rc = base_errf(c->err, c->errlen,
		               "entry '%s' of an OCI layout's archive is not a file, directory or "
		               "link: refused",
		               printable(path, b, sizeof(b)));
	else
		dropped(c, path,
		        type == AE_IFCHR || type == AE_IFBLK ? "a device node"
		        : type == AE_IFSOCK                  ? "a socket"
		        : type == AE_IFIFO ? "a FIFO: one inode every sandbox on the image would share"
		                           : "not a file, directory or link");
	bool owned = !hl && strncmp(base, ".wh.", 4) && (type == AE_IFDIR || type == AE_IFREG || type == AE_IFLNK);
	if (rc == 0 && c->o->keep_owners && owned)
		rc = keep_owner(c, pfd, base, e, path);
	if (rc == 0 && c->o->list_owners && owned)
		rc = list_owner(c, e, path);
	close(pfd);
	return rc;
}

/* Reads what is left of the plain stream and of the input, into their
 * digests (a diff_id covers the tar's padding after its end). */
static int drain(struct ctx *c, struct archive *outer, struct mid *m)
{
	for (;;) {
		la_ssize_t r = archive_read_data(outer, m->buf, sizeof(m->buf));
		if (r < 0)
			return base_errf(c->err, c->errlen, "the layer's compressed stream is damaged: %s",
			                 archive_error_string(outer));
		if (r == 0)
			break;
		m->n += (uint64_t)r;
		if (m->n > m->max)
			return base_errf(c->err, c->errlen,
			                 "the layer's uncompressed stream is over %llu bytes: refused",
			                 (unsigned long long)m->max);
		sha256_update(&m->h, m->buf, (size_t)r);
	}
	const void *buf;
	for (;;) {
		la_ssize_t r = outer_read(outer, c->src, &buf);
		if (r < 0)
			return store_failerr(c->err, c->errlen, "read the layer");
		if (r == 0)
			return 0;
	}
}

/* The tar reader stopped: over the stream's cap, or what libarchive says. */
static void stream_fail(const struct mid *m, struct archive *inner, const char *what, char *err, size_t errlen)
{
	if (m->over)
		base_errf(err, errlen,
		          "the layer's uncompressed stream is over %llu bytes (the cap: --max-image-bytes and "
		          "the inode cap): refused",
		          (unsigned long long)m->max);
	else
		base_errf(err, errlen, "%s: %s", what, archive_error_string(inner));
}

int unpack_layer(int in_fd, int dest_fd, const struct unpack_opts *o, struct unpack_stats *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	struct src *src = malloc(sizeof(*src));
	struct mid *m = malloc(sizeof(*m));
	struct ctx *c = malloc(sizeof(*c));
	struct archive *outer = archive_read_new(), *inner = archive_read_new();
	int rc = -1;
	if (!src || !m || !c || !outer || !inner) {
		base_errf(err, errlen, "out of memory");
		goto out;
	}
	src->fd = in_fd;
	src->n = 0;
	sha256_init(&src->h);
	m->outer = outer;
	m->n = 0;
	m->max = o->max_stream;
	m->over = false;
	sha256_init(&m->h);
	*c = (struct ctx){.root = dest_fd, .o = o, .st = st, .src = src, .err = err, .errlen = errlen};
	/* Outer: gzip, zstd or nothing, undone into one raw stream.  Inner: tar
	 * only, no filter (a layer is compressed once). */
	if (archive_read_support_filter_gzip(outer) < ARCHIVE_WARN ||
	    archive_read_support_filter_zstd(outer) < ARCHIVE_WARN ||
	    archive_read_support_format_raw(outer) != ARCHIVE_OK ||
	    archive_read_support_format_tar(inner) != ARCHIVE_OK) {
		base_errf(err, errlen, "libarchive lacks gzip, zstd or tar: %s", archive_error_string(outer));
		goto out;
	}
	struct archive_entry *e;
	if (archive_read_open(outer, src, NULL, outer_read, NULL) != ARCHIVE_OK ||
	    archive_read_next_header(outer, &e) != ARCHIVE_OK) {
		base_errf(err, errlen, "the layer is empty or not gzip, zstd or tar: %s", archive_error_string(outer));
		goto out;
	}
	if (archive_read_open(inner, m, NULL, inner_read, NULL) != ARCHIVE_OK) {
		base_errf(err, errlen, "the layer is not a tar archive: %s",
		          m->over ? "its uncompressed stream is over its cap" : archive_error_string(inner));
		goto out;
	}
	for (;;) {
		int r = archive_read_next_header(inner, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN || m->over) {
			stream_fail(m, inner, "the layer is not a valid tar archive", err, errlen);
			goto out;
		}
		int er = do_entry(c, inner, e);
		if (er == -2 || (er < 0 && m->over)) {
			stream_fail(m, inner, "the layer's data is damaged", err, errlen);
			goto out;
		}
		if (er < 0)
			goto out;
	}
	if (drain(c, outer, m) < 0)
		goto out;
	st->in = src->n;
	st->stream = m->n;
	sha256_hex(&src->h, st->blob_hex);
	sha256_hex(&m->h, st->diff_hex);
	rc = 0;
out:
	if (rc < 0) {
		free(st->owners);
		st->owners = NULL;
		st->owners_len = 0;
	}
	if (inner)
		archive_read_free(inner);
	if (outer)
		archive_read_free(outer);
	free(src);
	free(m);
	free(c);
	return rc;
}
