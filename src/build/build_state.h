/* build_state.h — the builder's state, shared by its files (build.c: the
 * stages and steps; build_files.c: COPY, ADD, WORKDIR; build_commit.c: the
 * image into the store).  Private to src/image/build*.c. */
#ifndef WARD_IMAGE_BUILD_STATE_H
#define WARD_IMAGE_BUILD_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "build/build.h"
#include "build/build_run.h"
#include "image/build_cache.h"
#include "image/build_copy.h"
#include "ward.h"

struct stage {
	char *name;
	struct cache_layer *l;
	size_t nl;
	char **base;        /* the base image's layer directories (the store's), bottom first */
	char **base_owners; /* each one's owners as a tree above it (cache_owner_tree), or NULL */
	size_t nbase;
	json_t *base_descs; /* the base manifest's layer descriptors */
	json_t *cfg;        /* the config's "config" object */
	bool cmd_inherited;
	char **args; /* declared ARGs, "K=V" */
	size_t nargs;
	char chain[65];
};

struct b {
	struct ward_image_store *s;
	const struct bfile *f;
	const struct ward_build_opts *o;
	struct ward_build_result *r;
	struct stage *st;
	size_t nst;
	char **gargs; /* ARGs before the first FROM: "K=V", or "K" without a value */
	size_t ngargs;
	struct ward_image **pins;
	size_t npins;
	int work_fd;
	char work[32];
	int ctx_fd;
	struct ignore ign;
	struct build_ids ids;
	struct ward_request egress; /* --net allow: the proxy's shape (ward_request_init'd) */
	unsigned k;                 /* layers made or found so far (L<k>) */
	struct timespec t0;
	char *err;
	size_t errlen;
};

/* A word of step s expanded with st's ARG and ENV (st NULL: the global ARGs). */
int build_word(struct b *b, struct stage *st, const struct bstep *s, const char *w, char **out);
/* The stage's lower layers, bottom first (the base's with their owners' trees, then its own). */
char **build_lowers(const struct stage *st, size_t *n);
/* key's layer found in the cache and added to st (not with --no-cache). */
bool build_cached(struct b *b, struct stage *st, const char *key);
/* The tree at dirfd as st's next layer under key (owners on disk minus base, or uid/gid when >= 0). */
int build_layer_tree(struct b *b, struct stage *st, const char *key, int dirfd, unsigned base, long uid, long gid);
void build_key(const struct stage *st, const char *what, const char *data, const char *more, char key[65]);
int build_from_image(struct b *b, struct stage *st, const char *ref, const struct bstep *s);
struct stage *build_find_stage(struct b *b, const char *name);
int build_step_config(struct b *b, struct stage *st, const struct bstep *s);

int build_step_copy(struct b *b, struct stage *st, const struct bstep *s);
int build_step_workdir(struct b *b, struct stage *st, const struct bstep *s);
int build_commit(struct b *b, const char *name, struct stage *st);

#endif
