/* root.c — an image as a sandbox's root (SPEC §14): its layers merged
 * read-only (sandbox/overlay.c) once, kept as a detached mount that every
 * sandbox on the image binds from ("/proc/self/fd/N": the plan binds it
 * whole as the sandbox's root, or treats it as a --rootfs), with the store's
 * layer of mount points on top (image/points.c), its config's Env under each
 * request's, and the image pinned
 * in the store while the root is open (`ward image rm` refuses meanwhile).
 *
 * Host side only; libc and the store's reader (no libarchive), so the lean
 * `ward` has it.  A root is opened by a front end (ward run --image, ward
 * serve --image for each offered image) and handed to libward in
 * ward_request.image; image_root_apply turns such a request into the one
 * the levels run. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/root.h"
#include "image/store.h"
#include "sandbox/overlay.h"
#include "ward.h"
#include "ward_image.h"

struct ward_image_root {
	struct ward_image_store *store;
	struct ward_image *img;
	int fd;        /* the merged layers, a detached read-only mount */
	char path[40]; /* "/proc/self/fd/N" */
};

/* DIR/mountpoints/HEX/NAME, malloc'd, or NULL. */
static char *points_dir(const char *dir, const char *hex, const char *name)
{
	size_t n = strlen(dir) + strlen(hex) + strlen(name) + sizeof("/mountpoints//");
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/mountpoints/%s/%s", dir, hex, name);
	return p;
}

/* r's layers merged, the store's mount points layer (image/points.c) on
 * top: what the plan binds whole as a sandbox's root (core/plan.c). */
static int merge(struct ward_image_root *r, char *err, size_t errlen)
{
	char hex[65];
	if (store_lock(r->store, LOCK_SH, err, errlen) < 0)
		return -1;
	int rc = store_points(r->store, hex, err, errlen);
	store_unlock(r->store);
	char *top = NULL, *under = NULL;
	char **dirs = rc < 0 ? NULL : calloc(r->img->nlayers + 3, sizeof(char *));
	if (rc == 0) {
		top = points_dir(r->store->dir, hex, STORE_POINTS_TOP);
		under = points_dir(r->store->dir, hex, STORE_POINTS_UNDER);
		if (!dirs || !top || !under)
			rc = base_errf(err, errlen, "out of memory");
	}
	if (rc == 0) {
		size_t n = r->img->nlayers;
		memcpy(dirs, r->img->layers, n * sizeof(char *));
		/* (each layer costs the overlay's making and its teardown) */
		if (store_points_need_under(r->img->layers, n))
			dirs[n++] = under;
		dirs[n++] = top;
		rc = overlay_open_ro(dirs, n, &r->fd, err, errlen);
	}
	free(under);
	free(top);
	free(dirs);
	return rc;
}

int ward_image_root_open(const char *store_dir, const char *name, struct ward_image_root **out, char *err,
                         size_t errlen)
{
	*out = NULL;
	struct ward_image_root *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->fd = -1;
	if (ward_image_store_open(store_dir, false, &r->store, err, errlen) < 0 ||
	    ward_image_open(r->store, name, &r->img, err, errlen) < 0 || merge(r, err, errlen) < 0) {
		ward_image_root_close(r);
		return -1;
	}
	snprintf(r->path, sizeof(r->path), "/proc/self/fd/%d", r->fd);
	*out = r;
	return 0;
}

void ward_image_root_close(struct ward_image_root *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	ward_image_release(r->img);
	ward_image_store_close(r->store);
	free(r);
}

void image_root_layers(const struct ward_image_root *r, char *const **dirs, size_t *n)
{
	*dirs = r->img->layers;
	*n = r->img->nlayers;
}

const struct ward_image *ward_image_root_image(const struct ward_image_root *r)
{
	return r->img;
}

int image_root_apply(const struct ward_request *req, struct ward_request *out, char ***env, char *err, size_t errlen)
{
	*out = *req;
	*env = NULL;
	const struct ward_image_root *r = req->image;
	if (!r)
		return 0;
	if (req->rootfs) {
		snprintf(err, errlen, "give an image or a rootfs, not both");
		return -1;
	}
	if (req->root_overlay && geteuid() != 0) {
		snprintf(err, errlen,
		         "root: overlay needs ward to run as root (its writable layer is an idmapped "
		         "overlayfs mount)");
		return -1;
	}
	/* the image's Env first, the request's after it (a later entry wins;
	 * env_build puts ward's fixed ones before both, so the image's PATH
	 * replaces ward's) */
	size_t ne = 0;
	while (req->env && req->env[ne])
		ne++;
	char **v = calloc(r->img->nenv + ne + 1, sizeof(char *));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t k = 0;
	for (size_t i = 0; i < r->img->nenv; i++)
		if (strchr(r->img->env[i], '=') && r->img->env[i][0] != '=')
			v[k++] = r->img->env[i];
	for (size_t i = 0; i < ne; i++)
		v[k++] = req->env[i];
	out->env = v;
	out->rootfs = r->path;
	*env = v;
	return 0;
}
