/* build_cache.h — a build step's layer, made or found in the step cache
 * (build_cache.c). */
#ifndef WARD_IMAGE_BUILD_CACHE_H
#define WARD_IMAGE_BUILD_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "ward_image.h"

struct cache_layer {
	char hex[65]; /* diff_id */
	uint64_t size, inodes, tar_size;
	bool empty;     /* the step changed nothing: no layer in the image */
	char fresh[32]; /* "L<k>" in the build's tmp/ directory: the store's form, to commit ("" when in layers/) */
	char *tree;     /* the build's own copy (owners kept), a lower layer for later steps */
};

/* The step's tar (tar_fd) into its layer and a cache entry under key.  0, or -1 with err. */
int cache_make(struct ward_image_store *s, int work_fd, unsigned k, int tar_fd, const char *key, uint64_t max_bytes,
               uint64_t max_entries, struct cache_layer *l, char *err, size_t errlen);
/* 1 and l filled when key is cached (the store's form made again in
 * L<k> when need_fresh and layers/ lacks it); 0 when not. */
int cache_find(struct ward_image_store *s, int work_fd, unsigned k, const char *key, bool need_fresh,
               struct cache_layer *l, char *err, size_t errlen);
void cache_layer_free(struct cache_layer *l);

/* The owners a store layer lost (its layers/sha256/HEX.owners sidecar) as a
 * tree of those entries alone, owned as in the image, for a build to mount
 * right above the layer: build-cache/owners-HEX/tree, made once.  *tree
 * NULL when the layer has no sidecar.  0, or -1 with err. */
int cache_owner_tree(struct ward_image_store *s, int work_fd, const char *layer_dir, char **tree, char *err,
                     size_t errlen);

#endif
