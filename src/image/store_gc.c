/* store_gc.c — the store's garbage collection: under the exclusive lock,
 * the layers and blobs that no listed image and no pinned one uses are
 * removed (layers renamed into a locked tmp/ directory first, so a crash
 * never leaves half a layer where a layer belongs), and the pins nobody
 * holds; the mount points layer (points.c) goes with the last image. */
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

int hexset_add(struct hexset *h, const char *hex)
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

bool hexset_has(const struct hexset *h, const char *hex)
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
			if (store_digest_parse(json_string_value(json_array_get(ids, i)), l) &&
			    hexset_add(layers, l) < 0)
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
		if (tree && strlen(e->d_name) == 71 && !strcmp(e->d_name + 64, ".owners")) { /* a layer's sidecar */
			char hex[65];
			memcpy(hex, e->d_name, 64);
			hex[64] = 0;
			if (!hexset_has(keep, hex))
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
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
	struct hexset layers = {0}, blobs = {0}, pins = {0}, points = {0};
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
			base_errf(err, errlen, "image store %s: cannot read pinned image sha256:%s", s->dir, e->d_name);
			rc = -2;
			goto out;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	/* The mount points layer while an image is left (an older one: never) */
	char ph[65];
	store_points_hex(ph);
	if ((ix->n || pins.n) && hexset_add(&points, ph) < 0)
		goto out;
	sweep(s, "layers/sha256", &layers, true);
	sweep(s, "blobs/sha256", &blobs, false);
	sweep(s, "mountpoints", &points, true);
	rc = 0;
out:
	/* The caller's err is written, never read: it may hold anything. */
	if (rc == -1)
		base_errf(err, errlen, "image store %s: out of memory while collecting garbage", s->dir);
	free(layers.v);
	free(blobs.v);
	free(pins.v);
	free(points.v);
	return rc < 0 ? -1 : 0;
}
