/* build_copy.c — COPY and ADD: files from CONTEXT (or from an earlier
 * stage's root, COPY --from) into a staging tree shaped like the image's
 * root.  The context is a tenant's directory: every source is resolved
 * beneath it with openat2(RESOLVE_IN_ROOT), so "..", absolute names and
 * symlinks (a source that is one, or any of its parents) stay inside it;
 * inside a copied directory a symlink is copied as a symlink, never
 * followed.  FIFOs, sockets and devices are skipped.  Bytes and entries
 * are capped, and everything copied is hashed for the step cache.
 * Docker's rules: a destination ending in '/' (or several sources) is a
 * directory; a directory source copies its contents; wildcards in a
 * source's last part; .dockerignore with '**' and '!' exceptions. */
#define _GNU_SOURCE
#include "image/build_copy.h"
#include "image/build_layer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/store.h"

/* ---- .dockerignore ---- */

/* "./a//b/" -> "a/b" in place. */
static void clean(char *p)
{
	char *w = p;
	for (char *r = p; *r;) {
		while (*r == '/')
			r++;
		if (r[0] == '.' && (r[1] == '/' || !r[1])) {
			r++;
			continue;
		}
		while (*r && *r != '/')
			*w++ = *r++;
		if (*r)
			*w++ = '/';
	}
	while (w > p && w[-1] == '/')
		w--;
	*w = 0;
}

int ignore_load(int context_fd, struct ignore *ig, char *err, size_t errlen)
{
	memset(ig, 0, sizeof(*ig));
	int fd = store_openat2_beneath(context_fd, ".dockerignore", O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : store_failerr(err, errlen, "CONTEXT/.dockerignore");
	char *buf;
	size_t len;
	int rc = store_read_all(fd, 1u << 20, &buf, &len);
	close(fd);
	if (rc < 0)
		return base_errf(err, errlen, "CONTEXT/.dockerignore is over 1 MiB or unreadable");
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		size_t n = strcspn(s, "\r");
		s[n] = 0;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			s[--n] = 0;
		if (!*s || *s == '#')
			continue;
		bool neg = *s == '!';
		char *p = strdup(s + neg);
		char **np = p ? realloc(ig->pat, (ig->n + 1) * sizeof(char *)) : NULL;
		bool *nn = np ? realloc(ig->neg, (ig->n + 1) * sizeof(bool)) : NULL;
		if (np)
			ig->pat = np;
		if (nn)
			ig->neg = nn;
		if (!p || !np || !nn) {
			free(p);
			free(buf);
			ignore_free(ig);
			return base_errf(err, errlen, "out of memory");
		}
		clean(p);
		ig->pat[ig->n] = p;
		ig->neg[ig->n++] = neg;
	}
	free(buf);
	return 0;
}

void ignore_free(struct ignore *ig)
{
	for (size_t i = 0; i < ig->n; i++)
		free(ig->pat[i]);
	free(ig->pat);
	free(ig->neg);
	memset(ig, 0, sizeof(*ig));
}

/* Segment by segment; "**" takes any number of them. */
static bool match_segs(const char *pat, const char *path, int depth)
{
	if (depth > 64)
		return false;
	if (!*pat)
		return !*path;
	const char *pe = strchrnul(pat, '/');
	size_t pl = (size_t)(pe - pat);
	if (pl == 2 && !strncmp(pat, "**", 2)) {
		const char *rest = *pe ? pe + 1 : pe;
		for (const char *p = path;; p = strchr(p, '/') + 1) {
			if (match_segs(rest, p, depth + 1))
				return true;
			if (!strchr(p, '/'))
				return !*rest;
		}
	}
	if (!*path)
		return false;
	const char *se = strchrnul(path, '/');
	char ps[4096], ss[4096];
	if (pl >= sizeof(ps) || (size_t)(se - path) >= sizeof(ss))
		return false;
	memcpy(ps, pat, pl);
	ps[pl] = 0;
	memcpy(ss, path, (size_t)(se - path));
	ss[se - path] = 0;
	if (fnmatch(ps, ss, 0) != 0)
		return false;
	return match_segs(*pe ? pe + 1 : pe, *se ? se + 1 : se, depth + 1);
}

bool ignore_match(const struct ignore *ig, const char *path)
{
	if (!ig || !ig->n)
		return false;
	bool out = false;
	for (size_t i = 0; i < ig->n; i++) {
		/* the path, or any directory above it */
		char buf[4096];
		snprintf(buf, sizeof(buf), "%s", path);
		bool hit = false;
		for (;;) {
			if (match_segs(ig->pat[i], buf, 0)) {
				hit = true;
				break;
			}
			char *slash = strrchr(buf, '/');
			if (!slash)
				break;
			*slash = 0;
		}
		if (hit)
			out = !ig->neg[i];
	}
	return out;
}

/* ---- copying ---- */

struct cp {
	const struct copy_job *j;
	uint64_t bytes, entries;
	char *err;
	size_t errlen;
};

static int open_in_root(int root, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
}

static int count(struct cp *c, const char *rel)
{
	if (++c->entries > c->j->max_entries)
		return base_errf(c->err, c->errlen, "COPY: more than %llu files (at '%.200s'): refused",
		                 (unsigned long long)c->j->max_entries, rel);
	return 0;
}

static void hash_str(struct cp *c, const char *s)
{
	sha256_update(c->j->hash, s, strlen(s) + 1);
}

/* ADD of a local archive would be extracted by Docker: ward refuses it
 * rather than copy it differently. */
static int archive_check(struct cp *c, int fd, const char *rel)
{
	unsigned char h[512];
	ssize_t n = pread(fd, h, sizeof(h), 0);
	bool arc = n >= 2 && ((h[0] == 0x1f && h[1] == 0x8b) || (n >= 3 && !memcmp(h, "BZh", 3)) ||
	                      (n >= 6 && !memcmp(h,
	                                         "\xfd"
	                                         "7zXZ",
	                                         6)) ||
	                      (n >= 262 && !memcmp(h + 257, "ustar", 5)));
	return arc ? base_errf(c->err, c->errlen,
	                       "ADD %s: a local archive, which Docker would extract and ward does not: "
	                       "COPY it and extract it with RUN tar",
	                       rel)
	           : 0;
}

static int copy_file(struct cp *c, int sfd, const struct stat *st, int ddir, const char *dname, const char *rel)
{
	if (c->j->add && archive_check(c, sfd, rel) < 0)
		return -1;
	if (c->bytes + (uint64_t)st->st_size > c->j->max_bytes)
		return base_errf(c->err, c->errlen, "COPY: the files are over %llu bytes (at '%.200s'): refused",
		                 (unsigned long long)c->j->max_bytes, rel);
	mode_t mode = c->j->chmod >= 0 ? (mode_t)c->j->chmod : st->st_mode & 07777;
	unlinkat(ddir, dname, 0);
	int out = openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return store_failerr(c->err, c->errlen, "COPY: create '%s'", dname);
	char buf[65536], m[32];
	snprintf(m, sizeof(m), "%o", mode);
	hash_str(c, rel);
	hash_str(c, m);
	ssize_t n;
	int rc = 0;
	while ((n = read(sfd, buf, sizeof(buf))) > 0) {
		c->bytes += (uint64_t)n;
		if (c->bytes > c->j->max_bytes) {
			rc = base_errf(c->err, c->errlen, "COPY: the files are over %llu bytes: refused",
			               (unsigned long long)c->j->max_bytes);
			break;
		}
		sha256_update(c->j->hash, buf, (size_t)n);
		if (write(out, buf, (size_t)n) != n) {
			rc = store_failerr(c->err, c->errlen, "COPY: write '%s'", dname);
			break;
		}
	}
	if (rc == 0 && n < 0)
		rc = store_failerr(c->err, c->errlen, "COPY: read '%s'", rel);
	if (rc == 0 && (fchown(out, c->j->uid, c->j->gid) < 0 || fchmod(out, mode) < 0))
		rc = store_failerr(c->err, c->errlen, "COPY: chmod '%s'", dname);
	close(out);
	return rc;
}

static int copy_tree(struct cp *c, int sdir, int ddir, const char *rel, int depth);

/* The entry name of directory sdir into ddir. */
static int copy_entry(struct cp *c, int sdir, const char *name, int ddir, const char *rel, int depth)
{
	if (c->j->ign && ignore_match(c->j->ign, rel))
		return 0;
	struct stat st;
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return store_failerr(c->err, c->errlen, "COPY: stat '%s'", rel);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return 0;
	if (count(c, rel) < 0)
		return -1;
	if (S_ISLNK(st.st_mode)) { /* copied as it is, never followed */
		char t[4096];
		ssize_t n = readlinkat(sdir, name, t, sizeof(t) - 1);
		if (n < 0)
			return store_failerr(c->err, c->errlen, "COPY: readlink '%s'", rel);
		t[n] = 0;
		hash_str(c, rel);
		hash_str(c, t);
		unlinkat(ddir, name, 0);
		if (symlinkat(t, ddir, name) < 0 || fchownat(ddir, name, c->j->uid, c->j->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return store_failerr(c->err, c->errlen, "COPY: symlink '%s'", rel);
		return 0;
	}
	int fd = openat(sdir, name, (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "COPY: open '%s'", rel);
	int rc;
	if (S_ISREG(st.st_mode))
		rc = copy_file(c, fd, &st, ddir, name, rel);
	else {
		mkdirat(ddir, name, 0755);
		int d = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		hash_str(c, rel);
		rc = d < 0 ? store_failerr(c->err, c->errlen, "COPY: mkdir '%s'", rel)
		           : copy_tree(c, fd, d, rel, depth + 1);
		if (rc == 0 && (fchown(d, c->j->uid, c->j->gid) < 0 ||
		                fchmod(d, c->j->chmod >= 0 ? (mode_t)c->j->chmod : st.st_mode & 07777) < 0))
			rc = store_failerr(c->err, c->errlen, "COPY: chmod '%s'", rel);
		if (d >= 0)
			close(d);
	}
	close(fd);
	return rc;
}

static int copy_tree(struct cp *c, int sdir, int ddir, const char *rel, int depth)
{
	if (depth > STORE_MAX_DEPTH)
		return base_errf(c->err, c->errlen, "COPY: '%.200s' is deeper than %d directories: refused", rel,
		                 STORE_MAX_DEPTH);
	size_t n;
	char **v = image_dir_names(sdir, &n);
	if (!v)
		return store_failerr(c->err, c->errlen, "COPY: list '%s'", rel[0] ? rel : ".");
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		char sub[4096];
		if (rc == 0 && snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", v[i]) >= (int)sizeof(sub))
			rc = base_errf(c->err, c->errlen, "COPY: a name over PATH_MAX: refused");
		if (rc == 0)
			rc = copy_entry(c, sdir, v[i], ddir, sub, depth);
		free(v[i]);
	}
	free(v);
	return rc;
}

/* The staging tree's directory at path (absolute in the image; "." and
 * ".." resolved as names, never above the root), made where missing. */
static int mkdirs(struct cp *c, const char *path, bool last_too)
{
	char p[4096], *parts[512];
	size_t n = 0;
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strtok(p, "/"); s; s = strtok(NULL, "/")) {
		if (!strcmp(s, "."))
			continue;
		if (!strcmp(s, "..")) {
			n -= n > 0;
			continue;
		}
		if (n == sizeof(parts) / sizeof(parts[0]))
			return base_errf(c->err, c->errlen, "COPY: the destination '%.100s' is too deep", path);
		parts[n++] = s;
	}
	if (!last_too)
		n -= n > 0;
	int fd = dup(c->j->stage_fd);
	char at[4096] = "";
	size_t al = 0;
	for (size_t i = 0; fd >= 0 && i < n; i++) {
		al += (size_t)snprintf(at + al, sizeof(at) - al, "/%s", parts[i]);
		bool made = mkdirat(fd, parts[i], 0755) == 0;
		int nfd = openat(fd, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
		/* The image's directory keeps its owner and mode; a new one is the copy's. */
		struct stat st;
		if (made && fd >= 0 && c->j->existing && c->j->existing(c->j->ctx, at, &st)) {
			if (fchown(fd, st.st_uid, st.st_gid) < 0 || fchmod(fd, st.st_mode & 07777) < 0)
				break;
		} else if (made && fd >= 0 && fchown(fd, c->j->uid, c->j->gid) < 0)
			break;
	}
	return fd < 0 ? store_failerr(c->err, c->errlen, "COPY: make the destination '%.200s'", path) : fd;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* One source (a path relative to the source root, already matched). */
static int copy_one(struct cp *c, const char *rel, bool dest_dir)
{
	if (c->j->ign && rel[0] && ignore_match(c->j->ign, rel))
		return base_errf(c->err, c->errlen, "COPY %s: not found (.dockerignore leaves it out)", rel);
	int fd = open_in_root(c->j->src_fd, rel, O_RDONLY);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "COPY %s: not found in the %s", rel[0] ? rel : ".",
		                     c->j->ign ? "build context" : "stage");
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? store_failerr(c->err, c->errlen, "COPY: stat %s", rel) : 0;
	if (rc == 0 && S_ISDIR(st.st_mode)) {
		int d = mkdirs(c, c->j->dest, true);
		rc = d < 0 ? -1 : copy_tree(c, fd, d, rel, 0);
		if (d >= 0)
			close(d);
	} else if (rc == 0 && S_ISREG(st.st_mode)) {
		int d = mkdirs(c, c->j->dest, dest_dir);
		const char *name = dest_dir ? base_name(rel) : base_name(c->j->dest);
		rc = d < 0 ? -1 : count(c, rel) < 0 ? -1 : copy_file(c, fd, &st, d, name, rel);
		if (d >= 0)
			close(d);
	} else if (rc == 0)
		rc = base_errf(c->err, c->errlen, "COPY %s: not a file or directory", rel);
	close(fd);
	return rc;
}

/* The sources a wildcard's last part matches, sorted. */
static int glob_one(struct cp *c, const char *rel, char ***out, size_t *n)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", rel);
	char *slash = strrchr(dir, '/');
	const char *pat = slash ? slash + 1 : dir;
	if (slash)
		*slash = 0;
	int fd = open_in_root(c->j->src_fd, slash ? dir : "", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return store_failerr(c->err, c->errlen, "COPY %s", rel);
	size_t k;
	char **v = image_dir_names(fd, &k);
	close(fd);
	if (!v)
		return store_failerr(c->err, c->errlen, "COPY %s", rel);
	for (size_t i = 0; i < k; i++) {
		char full[4200];
		snprintf(full, sizeof(full), "%s%s%s", slash ? dir : "", slash ? "/" : "", v[i]);
		char **nv = fnmatch(pat, v[i], FNM_PERIOD) == 0 ? realloc(*out, (*n + 1) * sizeof(char *)) : NULL;
		if (nv) {
			*out = nv;
			nv[(*n)++] = strdup(full);
		}
		free(v[i]);
	}
	free(v);
	return 0;
}

int copy_stage(const struct copy_job *j, char *err, size_t errlen)
{
	struct cp c = {.j = j, .err = err, .errlen = errlen};
	char **srcs = NULL;
	size_t n = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < j->nsrcs; i++) {
		char rel[4096];
		snprintf(rel, sizeof(rel), "%s", j->srcs[i]);
		clean(rel);
		if (strpbrk(base_name(rel), "*?[")) {
			size_t before = n;
			rc = glob_one(&c, rel, &srcs, &n);
			if (rc == 0 && n == before)
				rc = base_errf(err, errlen, "COPY %s: no file matches", j->srcs[i]);
		} else {
			char **nv = realloc(srcs, (n + 1) * sizeof(char *));
			if (!nv)
				rc = base_errf(err, errlen, "out of memory");
			else {
				srcs = nv;
				srcs[n++] = strdup(rel);
			}
		}
	}
	size_t dl = strlen(j->dest);
	bool dest_dir = n > 1 || (dl && j->dest[dl - 1] == '/');
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = srcs[i] ? copy_one(&c, srcs[i], dest_dir) : base_errf(err, errlen, "out of memory");
		free(srcs[i]);
	}
	free(srcs);
	return rc;
}
