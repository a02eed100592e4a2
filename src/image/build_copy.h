/* build_copy.h — COPY and ADD of `ward image build` (build_copy.c): files
 * from the build context (or an earlier stage's root) staged as a tree
 * that becomes the step's layer, and .dockerignore. */
#ifndef WARD_IMAGE_BUILD_COPY_H
#define WARD_IMAGE_BUILD_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "image/sha256.h"

/* .dockerignore's patterns, in order ("!" ones re-include). */
struct ignore {
	char **pat;
	bool *neg;
	size_t n;
};
/* Reads CONTEXT/.dockerignore (none: no patterns).  0, or -1 with err. */
int ignore_load(int context_fd, struct ignore *ig, char *err, size_t errlen);
void ignore_free(struct ignore *ig);
/* Is path (relative to the context, cleaned) left out? */
bool ignore_match(const struct ignore *ig, const char *path);

struct copy_job {
	int src_fd;               /* the context, or a stage's root (a directory fd) */
	const struct ignore *ign; /* NULL: nothing ignored (a stage) */
	char *const *srcs;        /* expanded sources */
	size_t nsrcs;
	const char *dest;  /* absolute, expanded (WORKDIR applied) */
	int stage_fd;      /* an empty directory: the image's root, for this layer */
	long chmod;        /* --chmod, or -1 */
	bool add;          /* ADD: a local archive is refused (ward does not extract it) */
	unsigned uid, gid; /* owner of what is copied and of directories made (--chown; 0) */
	/* A directory the image has at path (absolute): its owner and mode in
	 * *st, true; kept as it is when the destination passes through it. */
	bool (*existing)(void *ctx, const char *path, struct stat *st);
	void *ctx;
	uint64_t max_bytes, max_entries;
	struct sha256 *hash; /* what was copied (names, modes, bytes): the cache key's part */
};
int copy_stage(const struct copy_job *j, char *err, size_t errlen);

#endif
