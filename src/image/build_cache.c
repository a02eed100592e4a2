/* build_cache.c — the layers `ward image build` makes, and its step cache.
 *
 * A step's layer starts as a tar (build_layer.c) in the build's tmp/
 * directory of the store.  From it come two trees: the store's form
 * (unpack.c, as an import would: owners root, setuid stripped), renamed
 * into layers/ when the image is committed; and the build's own copy with
 * the tar's owners kept, which later steps of this and later builds mount
 * as a lower layer (so a chown of one step is seen by the next).  The cache
 * entry, build-cache/KEY/ of the store, holds that copy (tree/), the tar
 * (layer.tar: the store's form again, should the layer have been removed
 * from layers/ since) and meta.json (diff_id, sizes).  KEY hashes the parent
 * state (base image, every step before), the instruction, and for COPY the
 * files' names, modes and bytes.  Entries are made complete in tmp/ and
 * renamed into place, so a crash leaves none half-made. */
#define _GNU_SOURCE
#include "image/build_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/store.h"
#include "image/unpack.h"

static int unpack_to(int tar_fd, int at, const char *dir, bool keep, uint64_t max_bytes, uint64_t max_entries,
                     struct unpack_stats *st, char *err, size_t errlen)
{
	if (lseek(tar_fd, 0, SEEK_SET) < 0 || mkdirat(at, dir, 0755) < 0)
		return store_failerr(err, errlen, "make the layer's directory %s", dir);
	int d = openat(at, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return store_failerr(err, errlen, "open %s", dir);
	struct unpack_opts uo = {.max_bytes = max_bytes,
	                         .max_inodes = max_entries,
	                         .max_stream = max_bytes + 2048 * max_entries + (1u << 20),
	                         .quiet = true,
	                         .keep_owners = keep,
	                         .list_owners = !keep};
	char e[512];
	int rc = unpack_layer(tar_fd, d, &uo, st, e, sizeof(e));
	close(d);
	/* the store's form: its owners' sidecar beside it, moved with it */
	if (rc == 0 && !keep && store_owners_put(at, dir, st->owners, st->owners_len) < 0)
		rc = store_failerr(e, sizeof(e), "write the layer's owners");
	free(st->owners);
	st->owners = NULL;
	return rc < 0 ? base_errf(err, errlen, "the step's layer: %s", e) : 0;
}

static int write_meta(int at, const char *name, const struct cache_layer *l, char *err, size_t errlen)
{
	json_t *m = json_pack("{s:s,s:I,s:I,s:I,s:b}", "diff_id", l->hex, "size", (json_int_t)l->size, "inodes",
	                      (json_int_t)l->inodes, "tar_size", (json_int_t)l->tar_size, "empty", l->empty);
	char *t = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	/* Not fsync'd: the entry is renamed into place whole, and a cache
	 * that lost an entry to a power cut only misses. */
	int fd = t ? openat(at, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
	int rc = fd >= 0 && write(fd, t, strlen(t)) == (ssize_t)strlen(t) ? 0 : -1;
	if (fd >= 0)
		close(fd);
	free(t);
	return rc < 0 ? store_failerr(err, errlen, "write the cache entry") : 0;
}

static void set_tree(struct ward_image_store *s, const char *key, struct cache_layer *l)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/build-cache/%s/tree", ward_image_store_path(s), key);
	free(l->tree);
	l->tree = strdup(p);
}

int cache_make(struct ward_image_store *s, int work_fd, unsigned k, int tar_fd, const char *key, uint64_t max_bytes,
               uint64_t max_entries, struct cache_layer *l, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	struct stat st;
	if (fstat(tar_fd, &st) < 0)
		return store_failerr(err, errlen, "stat the step's layer");
	l->tar_size = (uint64_t)st.st_size;
	char fresh[32], entry[32];
	snprintf(fresh, sizeof(fresh), "L%u", k);
	snprintf(entry, sizeof(entry), "C%u", k);
	struct unpack_stats us;
	if (unpack_to(tar_fd, work_fd, fresh, false, max_bytes, max_entries, &us, err, errlen) < 0)
		return -1;
	memcpy(l->hex, us.diff_hex, 65);
	l->size = us.bytes;
	l->inodes = us.inodes;
	l->empty = us.inodes == 0;
	snprintf(l->fresh, sizeof(l->fresh), "%s", fresh);
	char tree[64], tar[64];
	snprintf(tree, sizeof(tree), "%s/tree", entry);
	snprintf(tar, sizeof(tar), "%s/layer.tar", entry);
	if (mkdirat(work_fd, entry, 0700) < 0)
		return store_failerr(err, errlen, "make the cache entry");
	if (unpack_to(tar_fd, work_fd, tree, true, max_bytes, max_entries, &us, err, errlen) < 0)
		return -1;
	int out = openat(work_fd, tar, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0 || lseek(tar_fd, 0, SEEK_SET) < 0)
		return store_failerr(err, errlen, "keep the step's tar");
	char buf[65536];
	ssize_t n;
	while ((n = read(tar_fd, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			close(out);
			return store_failerr(err, errlen, "keep the step's tar");
		}
	close(out);
	int efd = openat(work_fd, entry, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = efd < 0 ? store_failerr(err, errlen, "open the cache entry")
	                 : write_meta(efd, "meta.json", l, err, errlen);
	if (efd >= 0)
		close(efd);
	if (rc < 0)
		return -1;
	int sfd = openat(AT_FDCWD, ward_image_store_path(s), O_PATH | O_DIRECTORY | O_CLOEXEC);
	mkdirat(sfd, "build-cache", 0700);
	char to[100];
	snprintf(to, sizeof(to), "build-cache/%s", key);
	/* Taken: the same step, cached meanwhile by another build (or before
	 * a --no-cache one): that entry is as good; drop it and take ours. */
	if (renameat(work_fd, entry, sfd, to) < 0) {
		store_rm_tree(sfd, to);
		if (renameat(work_fd, entry, sfd, to) < 0)
			rc = store_failerr(err, errlen, "put the cache entry in place");
	}
	close(sfd);
	if (rc == 0)
		set_tree(s, key, l);
	return rc;
}

int cache_find(struct ward_image_store *s, int work_fd, unsigned k, const char *key, bool need_fresh,
               struct cache_layer *l, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	char p[200];
	snprintf(p, sizeof(p), "build-cache/%s/meta.json", key);
	int sfd = openat(AT_FDCWD, ward_image_store_path(s), O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = sfd < 0 ? -1 : store_openat2_beneath(sfd, p, O_RDONLY, 0);
	char *buf = NULL;
	size_t len;
	json_t *m = NULL;
	if (fd >= 0 && store_read_all(fd, 65536, &buf, &len) == 0)
		m = json_loadb(buf, len, 0, NULL);
	if (fd >= 0)
		close(fd);
	free(buf);
	const char *hex = json_string_value(json_object_get(m, "diff_id"));
	bool ok = hex && strlen(hex) == 64;
	if (ok) {
		memcpy(l->hex, hex, 65);
		l->size = (uint64_t)json_integer_value(json_object_get(m, "size"));
		l->inodes = (uint64_t)json_integer_value(json_object_get(m, "inodes"));
		l->tar_size = (uint64_t)json_integer_value(json_object_get(m, "tar_size"));
		l->empty = json_is_true(json_object_get(m, "empty"));
	}
	json_decref(m);
	int rc = ok ? 1 : 0;
	/* The store's form, when layers/ lost it: again from the tar. */
	if (ok && !l->empty && need_fresh && !store_layer_present(s, l->hex)) {
		snprintf(p, sizeof(p), "build-cache/%s/layer.tar", key);
		int t = store_openat2_beneath(sfd, p, O_RDONLY, 0);
		struct unpack_stats us;
		snprintf(l->fresh, sizeof(l->fresh), "L%u", k);
		if (t < 0 || unpack_to(t, work_fd, l->fresh, false, ~0ULL >> 2, ~0ULL >> 2, &us, err, errlen) < 0)
			rc = 0; /* a broken entry: a miss */
		if (t >= 0)
			close(t);
	}
	if (sfd >= 0)
		close(sfd);
	if (rc == 1)
		set_tree(s, key, l);
	return rc;
}

void cache_layer_free(struct cache_layer *l)
{
	free(l->tree);
	l->tree = NULL;
}

/* ---- a base layer's owners ---- */

/* The directory of dest at path's parent, made where missing with the
 * layer's modes (owners root: the sidecar lists the others, parents
 * first). */
static int owner_parents(int dest, int layer, const char *path, const char **last)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", path);
	int fd = dup(dest);
	char *s = p;
	for (char *slash; fd >= 0 && (slash = strchr(s, '/'));) {
		*slash = 0;
		if (mkdirat(fd, s, 0755) == 0) {
			int l = store_openat2_beneath(layer, p, O_PATH, 0);
			struct stat st;
			if (l >= 0 && fstat(l, &st) == 0 && fchmodat(fd, s, st.st_mode & 07777, 0) < 0)
				st.st_mode = 0; /* best effort: the mode is the layer's own below */
			if (l >= 0)
				close(l);
		}
		int n = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = n;
		*slash = '/';
		s = slash + 1;
	}
	*last = path + (s - p);
	return fd;
}

/* One entry of the sidecar: the layer's entry at path, copied into dest
 * with its owner (a file's bytes count against *budget). */
static void owner_entry(int dest, int layer, unsigned uid, unsigned gid, const char *path, uint64_t *budget)
{
	int src = store_openat2_beneath(layer, path, O_PATH, 0);
	struct stat st;
	if (src < 0 || fstat(src, &st) < 0) {
		if (src >= 0)
			close(src);
		return;
	}
	const char *name;
	int d = owner_parents(dest, layer, path, &name);
	if (d >= 0 && S_ISDIR(st.st_mode)) {
		mkdirat(d, name, 0755);
		if (fchownat(d, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fchmodat(d, name, st.st_mode & 07777, 0) < 0)
			st.st_mode = 0; /* best effort: an owner not given is root's, as without the sidecar */
	} else if (d >= 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= *budget) {
		*budget -= (uint64_t)st.st_size;
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
		int in = open(proc, O_RDONLY | O_CLOEXEC);
		int out = openat(d, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		char buf[65536];
		ssize_t n;
		while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				break;
		if (out >= 0 && (fchown(out, uid, gid) < 0 || fchmod(out, st.st_mode & 07777) < 0))
			unlinkat(d, name, 0); /* a copy without its owner would hide the layer's own */
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	} else if (d >= 0 && S_ISLNK(st.st_mode)) {
		char t[4096];
		ssize_t n = readlinkat(src, "", t, sizeof(t) - 1);
		if (n >= 0) {
			t[n] = 0;
			if (symlinkat(t, d, name) < 0 || fchownat(d, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
				n = -1; /* best effort, as above */
		}
	}
	if (d >= 0)
		close(d);
	close(src);
}

int cache_owner_tree(struct ward_image_store *s, int work_fd, const char *layer_dir, char **tree, char *err,
                     size_t errlen)
{
	*tree = NULL;
	const char *slash = strrchr(layer_dir, '/');
	const char *hex = slash ? slash + 1 : layer_dir;
	char side[4200], to[100], p[4300];
	snprintf(side, sizeof(side), "%s.owners", layer_dir);
	snprintf(to, sizeof(to), "build-cache/owners-%.64s", hex);
	snprintf(p, sizeof(p), "%s/%s/tree", ward_image_store_path(s), to);
	struct stat st;
	if (stat(p, &st) == 0)
		return (*tree = strdup(p)) ? 0 : base_errf(err, errlen, "out of memory");
	int fd = open(side, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* none: every file of the layer is root's */
	char *buf = NULL;
	size_t len = 0;
	int rc = store_read_all(fd, 64u << 20, &buf, &len);
	close(fd);
	int layer = open(layer_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "O%.12s", hex);
	store_rm_tree(work_fd, tmp);
	if (rc < 0 || layer < 0 || mkdirat(work_fd, tmp, 0700) < 0) {
		free(buf);
		if (layer >= 0)
			close(layer);
		return store_failerr(err, errlen, "the owners of layer %.12s", hex);
	}
	char sub[64];
	snprintf(sub, sizeof(sub), "%s/tree", tmp);
	mkdirat(work_fd, sub, 0755);
	int dest = openat(work_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t budget = 64u << 20;
	for (size_t off = 0; dest >= 0 && off < len;) {
		const char *rec = buf + off;
		off += strlen(rec) + 1;
		unsigned u, g;
		int at = 0;
		if (sscanf(rec, "%u %u %n", &u, &g, &at) == 2 && at > 0 && u < 65536 && g < 65536)
			owner_entry(dest, layer, u, g, rec + at, &budget);
	}
	if (dest >= 0)
		close(dest);
	close(layer);
	free(buf);
	int sfd = open(ward_image_store_path(s), O_PATH | O_DIRECTORY | O_CLOEXEC);
	mkdirat(sfd, "build-cache", 0700);
	if (renameat(work_fd, tmp, sfd, to) < 0)
		store_rm_tree(work_fd, tmp); /* made meanwhile by another build */
	close(sfd);
	return (*tree = strdup(p)) ? 0 : base_errf(err, errlen, "out of memory");
}
