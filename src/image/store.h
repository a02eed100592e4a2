/* store.h — the image store's on-disk parts, shared by the reader
 * (store.c, store_index.c, store_gc.c, store_images.c; libc and jansson only,
 * so the lean `ward` links it) and the importer (import.c, unpack.c;
 * libarchive, ward-net only).  The layout is described in
 * include/ward_image.h. */
#ifndef WARD_IMAGE_STORE_H
#define WARD_IMAGE_STORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward_image.h"

struct ward_image_store {
	char *dir;  /* absolute */
	int dirfd;  /* O_PATH|O_DIRECTORY */
	int lockfd; /* DIR/lock */
};

struct store_layer {
	char hex[65]; /* diff_id */
	uint64_t size, inodes;
};

struct store_image {
	char name[WARD_IMAGE_NAME_MAX + 1];
	char tag[WARD_IMAGE_TAG_MAX + 1];
	char digest[65]; /* manifest, hex */
	char config[65]; /* config, hex */
	char created[40];
	uint64_t size;
	struct store_layer *layers;
	size_t nlayers;
};

struct store_index {
	struct store_image *v;
	size_t n;
};

/* The biggest manifest, config and index.json ward reads (a bound on
 * hostile JSON: containerd's CVE-2023-25153 was an unbounded one). */
#define STORE_JSON_MAX (4u << 20)
/* The deepest directory a layer may hold (removal recurses that deep). */
#define STORE_MAX_DEPTH 256

/* Like store_fail, with ": strerror(errno)" appended. */
int store_failerr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int store_lock(struct ward_image_store *s, int op, char *err, size_t errlen);
void store_unlock(struct ward_image_store *s);

int store_index_load(struct ward_image_store *s, struct store_index *ix, char *err, size_t errlen);
int store_index_save(struct ward_image_store *s, const struct store_index *ix, char *err, size_t errlen);
void store_index_free(struct store_index *ix);
struct store_image *store_index_find(const struct store_index *ix, const char *name, const char *tag);
/* Adds img (copied) or replaces the entry of the same name and tag.  0 or -1 (ENOMEM). */
int store_index_put(struct store_index *ix, const struct store_image *img);
void store_index_del(struct store_index *ix, struct store_image *img);
/* A layer's recorded size, from any image of ix that has it; false if none. */
bool store_index_layer(const struct store_index *ix, const char *hex, struct store_layer *out);

/* A set of hex digests (small: a linear search), for garbage collection
 * and the store's usage.  add: 0, or -1 (ENOMEM); free(h->v) when done. */
struct hexset {
	char (*v)[65];
	size_t n, cap;
};
int hexset_add(struct hexset *h, const char *hex);
bool hexset_has(const struct hexset *h, const char *hex);

/* Under the exclusive lock: removes the layers and blobs that neither an
 * image of ix nor a pinned image uses, and the pins of unused digests. */
int store_gc(struct ward_image_store *s, const struct store_index *ix, char *err, size_t errlen);

/* blobs/sha256/HEX: read (at most max bytes; its digest checked) or
 * written (temp, fsync, rename). */
int store_blob_read(struct ward_image_store *s, const char *hex, size_t max, char **buf, size_t *len, char *err,
                    size_t errlen);
int store_blob_write(struct ward_image_store *s, const char *hex, const void *buf, size_t len, char *err,
                     size_t errlen);
bool store_layer_present(struct ward_image_store *s, const char *hex);

/* A fresh tmp/RANDOM directory, flock'd: *fd (O_RDONLY|O_DIRECTORY, the
 * lock's holder) and its name.  Remove it with store_tmpdir_drop. */
int store_tmpdir(struct ward_image_store *s, int *fd, char name[32], char *err, size_t errlen);
void store_tmpdir_drop(struct ward_image_store *s, int fd, const char *name);

/* Removes name beneath dirfd, recursively, never following a symlink. */
int store_rm_tree(int dirfd, const char *name);

/* NAME[:TAG] -> name, tag ("latest" when left out).  0 or -1. */
int store_ref_parse(const char *in, char name[WARD_IMAGE_NAME_MAX + 1], char tag[WARD_IMAGE_TAG_MAX + 1], char *err,
                    size_t errlen);
/* "sha256:" and 64 lowercase hex digits -> hex.  false for anything else. */
bool store_digest_parse(const char *s, char hex[65]);
void store_now(char out[40]);
int store_openat2_beneath(int dirfd, const char *path, int flags, unsigned mode);
/* Reads all of fd, at most max bytes (more: -1, EFBIG); *buf NUL-ended, malloc'd. */
int store_read_all(int fd, size_t max, char **buf, size_t *len);
/* Writes dirfd/tmpname, then renames it over dirfd/name, durably. */
int store_replace_file(int dirfd, const char *tmpname, const char *name, const void *buf, size_t len);

/* The layer of mount points every image's root gets on top (points.c):
 * its name, and (store_points) the layer made when missing, under the
 * store's lock (shared or exclusive).  mountpoints/HEX/top, over
 * mountpoints/HEX/under; 0, or -1 with err. */
#define STORE_POINTS_TOP "top"
#define STORE_POINTS_UNDER "under"
void store_points_hex(char hex[65]);
/* Whether an image of these layers (bottom first) needs the layer under
 * the top one: some directory holding the top one's whiteouts is not a
 * directory of the image's (points.c's make_under says why). */
bool store_points_need_under(char *const *layers, size_t n);
int store_points(struct ward_image_store *s, char hex[65], char *err, size_t errlen);

/* A layer's owners' sidecar (unpack.c's list: "UID GID PATH\0" per entry
 * not 0:0): written beside WORK/lname as lname.owners (nothing when len
 * is 0), then moved with the layer to layers/sha256/HEX.owners (absent:
 * nothing).  The store's layers keep no owners; builds read these. */
int store_owners_put(int work_fd, const char *lname, const char *buf, size_t len);
void store_owners_move(int work_fd, const char *lname, struct ward_image_store *s, const char *hex);

#endif
