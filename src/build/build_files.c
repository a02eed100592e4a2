/* build_files.c — the steps of `ward image build` that put files in a
 * layer (SPEC §19): COPY and ADD (the context, an earlier stage or an
 * image, staged by build_copy.c: its owners from --chown, the image's own
 * directories kept as they are), and WORKDIR when the image lacks its
 * directory. */
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

/* ---- COPY, ADD ---- */

/* A name of the image so far, in the top layer that has file. */
static bool image_db(const struct stage *st, const char *file, const char *name, long *id)
{
	size_t n;
	char **low = build_lowers(st, &n);
	bool found = false;
	for (size_t i = n; low && !found && i-- > 0;) {
		int d = open(low[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		int fd = d < 0 ? -1 : store_openat2_beneath(d, file, O_RDONLY, 0);
		if (d >= 0)
			close(d);
		if (fd < 0)
			continue;
		char *buf;
		size_t len;
		if (store_read_all(fd, 4u << 20, &buf, &len) == 0) {
			size_t l = strlen(name);
			for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
				if (!strncmp(line, name, l) && line[l] == ':') {
					const char *f = strchr(line + l + 1, ':');
					*id = f ? strtol(f + 1, NULL, 10) : -1;
					found = f != NULL;
					break;
				}
			free(buf);
			i = 0; /* the top one decides */
		}
		close(fd);
	}
	free(low);
	return found;
}

static int owner_part(const struct stage *st, const char *s, const char *file, long *id)
{
	char *end;
	*id = strtol(s, &end, 10);
	if (*s && !*end && *id >= 0 && *id < 65536)
		return 0;
	return image_db(st, file, s, id) && *id >= 0 && *id < 65536 ? 0 : -1;
}

static int parse_chown(struct b *b, struct stage *st, const struct bstep *s, long *uid, long *gid)
{
	*uid = *gid = 0;
	if (!s->chown)
		return 0;
	char *v;
	if (build_word(b, st, s, s->chown, &v) < 0)
		return -1;
	char *g = strchr(v, ':');
	if (g)
		*g++ = 0;
	int rc = owner_part(st, v, "etc/passwd", uid);
	*gid = *uid;
	if (rc == 0 && g)
		rc = owner_part(st, g, "etc/group", gid);
	if (rc < 0)
		base_errf(b->err, b->errlen, "line %u: --chown=%s: no such user or group in the image (or over 65535)",
		          s->line, s->chown);
	free(v);
	return rc;
}

/* Where COPY reads: the context, an earlier stage's root, or an image's. */
static int copy_source(struct b *b, const struct bstep *s, int *fd)
{
	*fd = -1;
	if (!s->from) {
		if (b->ctx_fd < 0)
			return base_errf(b->err, b->errlen, "line %u: %s needs a build context", s->line,
			                 build_op_name(s->op));
		*fd = dup(b->ctx_fd);
		return 0;
	}
	struct stage *from = build_find_stage(b, s->from), tmp = {0};
	if (!from) {
		if (build_from_image(b, &tmp, s->from, s) < 0)
			return -1;
		from = &tmp;
	}
	size_t n;
	char **low = build_lowers(from, &n);
	char e[512];
	int rc = 0;
	if (!n) {
		int w = openat(b->work_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		mkdirat(w, "empty", 0755);
		*fd = openat(w, "empty", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(w);
	} else if (overlay_open_ro(low, n, fd, e, sizeof(e)) < 0)
		rc = base_errf(b->err, b->errlen, "line %u: COPY --from=%s: %s", s->line, s->from, e);
	free(low);
	for (size_t i = 0; i < tmp.nbase; i++) {
		free(tmp.base[i]);
		free(tmp.base_owners ? tmp.base_owners[i] : NULL);
	}
	free(tmp.base);
	free(tmp.base_owners);
	json_decref(tmp.cfg);
	json_decref(tmp.base_descs);
	return rc;
}

static int copy_dest(struct b *b, struct stage *st, const struct bstep *s, char **dest)
{
	char *d;
	if (build_word(b, st, s, s->args[s->nargs - 1], &d) < 0)
		return -1;
	if (d[0] == '/') {
		*dest = d;
		return 0;
	}
	const char *wd = json_string_value(json_object_get(st->cfg, "WorkingDir"));
	int r = asprintf(dest, "%s/%s", wd && *wd ? wd : "", d);
	free(d);
	return r < 0 ? base_errf(b->err, b->errlen, "out of memory") : 0;
}

/* The image so far has a directory at path: top layer first; a whiteout
 * or anything else there hides what is below.  Never through a symlink. */
static bool existing_dir(void *ctx, const char *path, struct stat *out)
{
	const struct stage *st = ctx;
	size_t n;
	char **low = build_lowers(st, &n);
	bool found = false;
	for (size_t i = n; low && i-- > 0;) {
		int d = open(low[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		int fd = d < 0 ? -1 : store_openat2_beneath(d, path + 1, O_PATH, 0);
		if (d >= 0)
			close(d);
		if (fd < 0)
			continue;
		found = fstat(fd, out) == 0 && S_ISDIR(out->st_mode);
		close(fd);
		break;
	}
	free(low);
	return found;
}

static int stage_files(struct b *b, struct stage *st, const struct bstep *s, int stage_fd, long uid, long gid,
                       char hash[65])
{
	char **srcs = calloc(s->nargs, sizeof(char *)), *dest = NULL;
	int src_fd = -1, rc = srcs ? 0 : base_errf(b->err, b->errlen, "out of memory");
	for (size_t i = 0; rc == 0 && i + 1 < s->nargs; i++)
		rc = build_word(b, st, s, s->args[i], &srcs[i]);
	long mode = -1;
	if (rc == 0 && s->chmod) {
		char *end;
		mode = strtol(s->chmod, &end, 8);
		if (*end || mode < 0 || mode > 07777)
			rc = base_errf(b->err, b->errlen, "line %u: --chmod=%s: give an octal mode", s->line, s->chmod);
	}
	if (rc == 0)
		rc = copy_dest(b, st, s, &dest);
	if (rc == 0)
		rc = copy_source(b, s, &src_fd);
	struct sha256 h;
	sha256_init(&h);
	if (rc == 0) {
		struct copy_job j = {.src_fd = src_fd,
		                     .ign = s->from ? NULL : &b->ign,
		                     .srcs = srcs,
		                     .nsrcs = s->nargs - 1,
		                     .dest = dest,
		                     .stage_fd = stage_fd,
		                     .chmod = mode,
		                     .add = s->op == BS_ADD,
		                     .max_bytes = b->o->max_layer_bytes,
		                     .max_entries = b->o->max_entries,
		                     .hash = &h,
		                     .uid = (unsigned)uid,
		                     .gid = (unsigned)gid,
		                     .existing = existing_dir,
		                     .ctx = st};
		char e[600];
		if (copy_stage(&j, e, sizeof(e)) < 0)
			rc = base_errf(b->err, b->errlen, "line %u: %s", s->line, e);
	}
	sha256_hex(&h, hash);
	if (src_fd >= 0)
		close(src_fd);
	for (size_t i = 0; srcs && i + 1 < s->nargs; i++)
		free(srcs[i]);
	free(srcs);
	free(dest);
	return rc;
}

int build_step_copy(struct b *b, struct stage *st, const struct bstep *s)
{
	long uid, gid;
	if (parse_chown(b, st, s, &uid, &gid) < 0)
		return -1;
	char name[32];
	snprintf(name, sizeof(name), "S%u", b->k);
	store_rm_tree(b->work_fd, name);
	int sfd =
		mkdirat(b->work_fd, name, 0755) < 0 ? -1 : openat(b->work_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return store_failerr(b->err, b->errlen, "make the COPY's staging directory");
	char hash[65], key[65], owner[64];
	int rc = stage_files(b, st, s, sfd, uid, gid, hash);
	snprintf(owner, sizeof(owner), "%ld:%ld %s", uid, gid, s->chmod ? s->chmod : "");
	if (rc == 0) {
		build_key(st, s->text, hash, owner, key);
		if (build_cached(b, st, key))
			rc = 1;
		else
			rc = build_layer_tree(b, st, key, sfd, 0, -1, -1);
	}
	close(sfd);
	store_rm_tree(b->work_fd, name);
	return rc;
}

/* WORKDIR makes its directory when the image lacks it (a layer of that
 * directory alone, root's, 0755), as Docker does. */
int build_step_workdir(struct b *b, struct stage *st, const struct bstep *s)
{
	if (build_step_config(b, st, s) < 0)
		return -1;
	const char *wd = json_string_value(json_object_get(st->cfg, "WorkingDir"));
	struct stat dummy;
	if (!wd || !strcmp(wd, "/") || existing_dir(st, wd, &dummy))
		return 0;
	char name[32], key[65];
	snprintf(name, sizeof(name), "S%u", b->k);
	store_rm_tree(b->work_fd, name);
	int sfd =
		mkdirat(b->work_fd, name, 0755) < 0 ? -1 : openat(b->work_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return store_failerr(b->err, b->errlen, "make the WORKDIR's staging directory");
	int d = sfd, rc = 0;
	char p[4096];
	snprintf(p, sizeof(p), "%s", wd);
	for (char *c = strtok(p, "/"); c && d >= 0; c = strtok(NULL, "/")) {
		mkdirat(d, c, 0755);
		int nd = openat(d, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d != sfd)
			close(d);
		d = nd;
	}
	if (d < 0)
		rc = store_failerr(b->err, b->errlen, "line %u: WORKDIR %s", s->line, wd);
	else if (d != sfd)
		close(d);
	build_key(st, "WORKDIR", wd, NULL, key);
	if (rc == 0 && !build_cached(b, st, key))
		rc = build_layer_tree(b, st, key, sfd, 0, -1, -1);
	close(sfd);
	store_rm_tree(b->work_fd, name);
	return rc;
}
