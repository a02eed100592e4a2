/* build_commit.c — a built image into the store (SPEC §19): its config
 * and manifest blobs, the layers this build made renamed into layers/ (with
 * their owners' sidecars), the index, under the store's exclusive lock; and
 * what nothing uses collected. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/errf.h"
#include "build/build_state.h"
#include "image/build_cache.h"
#include "image/build_copy.h"
#include "image/sha256.h"
#include "image/store.h"
#include "sandbox/overlay.h"
#include <sys/file.h>

/* ---- the image ---- */

static const char *arch(void)
{
	struct utsname u;
	return uname(&u) == 0 && !strcmp(u.machine, "aarch64") ? "arm64" : "amd64";
}

/* The config and manifest blobs, and the index's record of them. */
static int describe(struct b *b, struct stage *st, struct store_image *img, const struct store_index *ix,
                    char **cfg_txt, char **man_txt)
{
	json_t *ids = json_array(), *descs = json_array();
	img->layers = calloc(st->nbase + st->nl + 1, sizeof(*img->layers));
	if (!img->layers)
		return base_errf(b->err, b->errlen, "out of memory");
	for (size_t i = 0; i < st->nbase; i++) {
		struct store_layer *l = &img->layers[img->nlayers++];
		const char *slash = strrchr(st->base[i], '/');
		snprintf(l->hex, sizeof(l->hex), "%s", slash ? slash + 1 : "");
		store_index_layer(ix, l->hex, l);
		json_array_append_new(ids, json_sprintf("sha256:%s", l->hex));
		json_array_append(descs, json_array_get(st->base_descs, i));
	}
	for (size_t i = 0; i < st->nl; i++) {
		if (st->l[i].empty)
			continue;
		struct store_layer *l = &img->layers[img->nlayers++];
		memcpy(l->hex, st->l[i].hex, 65);
		l->size = st->l[i].size;
		l->inodes = st->l[i].inodes;
		json_array_append_new(ids, json_sprintf("sha256:%s", l->hex));
		json_array_append_new(descs,
		                      json_pack("{s:s,s:s,s:I}", "mediaType", "application/vnd.oci.image.layer.v1.tar",
		                                "digest", json_string_value(json_array_get(ids, img->nlayers - 1)),
		                                "size", (json_int_t)st->l[i].tar_size));
	}
	for (size_t i = 0; i < img->nlayers; i++)
		img->size += img->layers[i].size;
	store_now(img->created);
	json_t *c = json_pack("{s:s,s:s,s:s,s:O,s:{s:s,s:o}}", "created", img->created, "architecture", arch(), "os",
	                      "linux", "config", st->cfg, "rootfs", "type", "layers", "diff_ids", ids);
	*cfg_txt = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(c);
	if (!*cfg_txt) {
		json_decref(descs);
		return base_errf(b->err, b->errlen, "out of memory");
	}
	sha256_buf_hex(*cfg_txt, strlen(*cfg_txt), img->config);
	char d[80];
	snprintf(d, sizeof(d), "sha256:%s", img->config);
	json_t *m = json_pack("{s:i,s:s,s:{s:s,s:s,s:I},s:o}", "schemaVersion", 2, "mediaType",
	                      "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
	                      "application/vnd.oci.image.config.v1+json", "digest", d, "size",
	                      (json_int_t)strlen(*cfg_txt), "layers", descs);
	*man_txt = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(m);
	if (!*man_txt)
		return base_errf(b->err, b->errlen, "out of memory");
	sha256_buf_hex(*man_txt, strlen(*man_txt), img->digest);
	return 0;
}

static int commit_locked(struct b *b, struct stage *st, struct store_image *img, struct store_index *ix)
{
	char *cfg = NULL, *man = NULL;
	int rc = describe(b, st, img, ix, &cfg, &man);
	if (rc == 0 && img->size > b->o->max_image_bytes)
		rc = base_errf(b->err, b->errlen, "the image is %llu bytes, over --max-image-bytes %llu: refused",
		               (unsigned long long)img->size, (unsigned long long)b->o->max_image_bytes);
	if (rc == 0 && (store_blob_write(b->s, img->digest, man, strlen(man), b->err, b->errlen) < 0 ||
	                store_blob_write(b->s, img->config, cfg, strlen(cfg), b->err, b->errlen) < 0))
		rc = -1;
	int sfd = openat(AT_FDCWD, ward_image_store_path(b->s), O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; rc == 0 && i < st->nl; i++) {
		if (st->l[i].empty || store_layer_present(b->s, st->l[i].hex))
			continue;
		if (!st->l[i].fresh[0]) { /* found in layers/ by the cache, removed since (ward image rm) */
			rc = base_errf(b->err, b->errlen,
			               "a cached layer (sha256:%s) was removed from the store while the "
			               "build ran: build again",
			               st->l[i].hex);
			break;
		}
		char to[100];
		snprintf(to, sizeof(to), "layers/sha256/%s", st->l[i].hex);
		if (renameat(b->work_fd, st->l[i].fresh, sfd, to) < 0 && errno != EEXIST && errno != ENOTEMPTY)
			rc = store_failerr(b->err, b->errlen, "move a layer into %s/%s", ward_image_store_path(b->s),
			                   to);
		else
			store_owners_move(b->work_fd, st->l[i].fresh, b->s, st->l[i].hex);
	}
	if (sfd >= 0)
		close(sfd);
	if (rc == 0 && store_index_put(ix, img) < 0)
		rc = base_errf(b->err, b->errlen, "out of memory");
	if (rc == 0)
		rc = store_index_save(b->s, ix, b->err, b->errlen);
	char e[256] = "";
	store_gc(b->s, ix, e, sizeof(e));
	free(cfg);
	free(man);
	return rc;
}

int build_commit(struct b *b, const char *name, struct stage *st)
{
	struct store_image img = {0};
	if (store_ref_parse(name, img.name, img.tag, b->err, b->errlen) < 0)
		return -1;
	struct store_index ix = {0};
	if (store_lock(b->s, LOCK_EX, b->err, b->errlen) < 0)
		return -1;
	int rc = store_index_load(b->s, &ix, b->err, b->errlen);
	if (rc == 0)
		rc = commit_locked(b, st, &img, &ix);
	store_index_free(&ix);
	store_unlock(b->s);
	if (rc == 0) {
		snprintf(b->r->digest, sizeof(b->r->digest), "sha256:%s", img.digest);
		b->r->layers = (unsigned)img.nlayers;
		b->r->size = img.size;
	}
	free(img.layers);
	return rc;
}
