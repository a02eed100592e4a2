/* collect.c — files out, the host's side: the walker's frames (see
 * collect_walk.h) into a result's files.  Trusts nothing in the frames: a
 * path is taken only when the path guard accepts it, and the counts and
 * sizes are held to the request's caps again. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/pathguard.h"
#include "system/collect_walk.h"

uint64_t collect_stream_bound(uint32_t max_files, uint64_t max_bytes)
{
	return (uint64_t)max_files * (sizeof(struct collect_frame) + PATH_MAX) + max_bytes +
	       sizeof(struct collect_frame);
}

static int take_one(struct ward_result *res, const struct collect_frame *f, const char *p)
{
	struct ward_collected *c = &res->files[res->nfiles];
	c->path = malloc(f->path_len + 1);
	c->data = malloc(f->size ? f->size : 1);
	if (!c->path || !c->data) {
		free(c->path);
		free(c->data);
		c->path = NULL;
		c->data = NULL;
		return -ENOMEM;
	}
	memcpy(c->path, p, f->path_len);
	c->path[f->path_len] = 0;
	memcpy(c->data, p + f->path_len, f->size);
	c->size = f->size;
	c->mode = f->mode & 07777;
	res->nfiles++;
	return 0;
}

int collect_decode(const void *buf, size_t len, uint32_t max_files, uint64_t max_bytes, struct ward_result *res)
{
	const char *p = buf, *end = p + len;
	uint64_t bytes = 0;
	res->files_truncated = true; /* until the end frame says otherwise */
	res->files = calloc(max_files ? max_files : 1, sizeof(*res->files));
	if (!res->files)
		return -ENOMEM;
	while ((size_t)(end - p) >= sizeof(struct collect_frame)) {
		struct collect_frame f;
		memcpy(&f, p, sizeof(f));
		p += sizeof(f);
		if (f.kind == 'E') {
			res->files_truncated = (f.flags & COLLECT_TRUNCATED) != 0;
			break;
		}
		if (f.kind != 'F' || f.path_len == 0 || f.path_len >= PATH_MAX || (uint64_t)(end - p) < f.path_len ||
		    (uint64_t)(end - p) - f.path_len < f.size)
			break; /* malformed or cut short */
		if (res->nfiles >= max_files || f.size > max_bytes - bytes)
			break;
		if (pathguard_check(p, f.path_len, NULL, 0) == 0) {
			if (take_one(res, &f, p) < 0)
				return -ENOMEM; /* what was taken is ward_result_free's */
			bytes += f.size;
		}
		p += f.path_len + f.size;
	}
	return 0;
}
