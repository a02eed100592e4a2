/* build_layer.h — a directory tree as one OCI layer's tar (build_layer.c):
 * a RUN's writable layer (overlayfs's format: whiteouts, opaque
 * directories) or a COPY's staged files. */
#ifndef WARD_IMAGE_BUILD_LAYER_H
#define WARD_IMAGE_BUILD_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct layer_tar_opts {
	unsigned uid_base; /* owners on disk minus this are the layer's (a RUN: the build's host base) */
	long force_uid;    /* >= 0: every entry's owner (COPY --chown) */
	long force_gid;
	uint64_t max_bytes; /* the layer's byte cap */
	uint64_t max_entries;
};

/* Writes the tree beneath dirfd as a tar (PAX, names sorted) to out_fd.
 * 0, or -1 with err (a cap, an I/O error). */
int layer_tar(int dirfd, int out_fd, const struct layer_tar_opts *o, uint64_t *bytes, char *err, size_t errlen);

/* The names in directory fd, sorted (a malloc'd array of malloc'd names,
 * *n of them; NULL when it cannot be read): one order whatever readdir's,
 * for a layer's tar and a COPY's hash. */
char **image_dir_names(int fd, size_t *n);

#endif
