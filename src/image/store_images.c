/* store_images.c — the C API over the store (include/ward_image.h): list,
 * usage, open (pinning the image and reading the config ward uses),
 * inspect and remove. */
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

static int info_cmp(const void *a, const void *b)
{
	const struct ward_image_info *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->tag, y->tag);
}

int ward_image_list(struct ward_image_store *s, struct ward_image_info **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	struct store_index ix;
	if (store_lock(s, LOCK_SH, err, errlen) < 0)
		return -1;
	int rc = store_index_load(s, &ix, err, errlen);
	store_unlock(s);
	if (rc < 0)
		return -1;
	struct ward_image_info *v = calloc(ix.n + 1, sizeof(*v));
	if (!v) {
		store_index_free(&ix);
		return base_errf(err, errlen, "out of memory");
	}
	for (size_t i = 0; i < ix.n; i++) {
		strcpy(v[i].name, ix.v[i].name);
		strcpy(v[i].tag, ix.v[i].tag);
		snprintf(v[i].digest, sizeof(v[i].digest), "sha256:%s", ix.v[i].digest);
		v[i].size = ix.v[i].size;
		v[i].layers = (unsigned)ix.v[i].nlayers;
		strcpy(v[i].created, ix.v[i].created);
	}
	*n = ix.n;
	store_index_free(&ix);
	qsort(v, *n, sizeof(*v), info_cmp);
	*out = v;
	return 0;
}

int ward_image_store_usage(const char *dir, uint64_t *images, uint64_t *bytes, char *err, size_t errlen)
{
	*images = *bytes = 0;
	struct ward_image_store *s;
	char path[4096];
	struct stat st;
	if (!ward_image_store_default(dir, path, sizeof(path)))
		return base_errf(err, errlen, "cannot tell where the image store is");
	if (stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	if (ward_image_store_open(dir, false, &s, err, errlen) < 0)
		return -1;
	int rc = -1;
	struct store_index ix;
	if (store_lock(s, LOCK_SH, err, errlen) == 0) {
		rc = store_index_load(s, &ix, err, errlen);
		store_unlock(s);
	}
	if (rc == 0) {
		struct hexset seen = {0};
		*images = ix.n;
		for (size_t i = 0; i < ix.n; i++)
			for (size_t j = 0; j < ix.v[i].nlayers; j++)
				if (!hexset_has(&seen, ix.v[i].layers[j].hex)) {
					*bytes += ix.v[i].layers[j].size;
					if (hexset_add(&seen, ix.v[i].layers[j].hex) < 0)
						rc = -1;
				}
		free(seen.v);
		store_index_free(&ix);
	}
	ward_image_store_close(s);
	return rc;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void ward_image_release(struct ward_image *img)
{
	if (!img)
		return;
	strv_free(img->env, img->nenv);
	strv_free(img->entrypoint, img->nentrypoint);
	strv_free(img->cmd, img->ncmd);
	strv_free(img->layers, img->nlayers);
	free(img->workdir);
	free(img->user);
	if (img->pin_fd >= 0)
		close(img->pin_fd); /* drops the shared flock */
	free(img);
}

/* A JSON array of strings (or null) -> a malloc'd vector; -1 on a wrong shape. */
static int strv_from(json_t *a, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 65536)
		return -1;
	char **v = calloc(json_array_size(a) + 1, sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *str = json_string_value(json_array_get(a, i));
		if (!str || !(v[i] = strdup(str))) {
			strv_free(v, i);
			return -1;
		}
	}
	*out = v;
	*n = json_array_size(a);
	return 0;
}

static int opt_str(json_t *o, const char *key, char **out)
{
	*out = NULL;
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v) || (json_is_string(v) && !json_string_length(v)))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = strdup(json_string_value(v));
	return *out ? 0 : -1;
}

/* Fills img's config fields from the config blob (its digest checked). */
static int load_config(struct ward_image_store *s, const char *hex, struct ward_image *img, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	if (store_blob_read(s, hex, STORE_JSON_MAX, &buf, &len, err, errlen) < 0)
		return -1;
	json_t *cfg = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *c = json_object_get(cfg, "config");
	if (!c)
		c = json_object_get(cfg, "container_config"); /* old docker configs */
	int rc = 0;
	if (!cfg || strv_from(json_object_get(c, "Env"), &img->env, &img->nenv) < 0 ||
	    strv_from(json_object_get(c, "Entrypoint"), &img->entrypoint, &img->nentrypoint) < 0 ||
	    strv_from(json_object_get(c, "Cmd"), &img->cmd, &img->ncmd) < 0 ||
	    opt_str(c, "WorkingDir", &img->workdir) < 0 || opt_str(c, "User", &img->user) < 0)
		rc = base_errf(err, errlen, "image %s:%s: its config (sha256:%s) has a field of the wrong type",
		               img->name, img->tag, hex);
	json_decref(cfg);
	return rc;
}

static int pin_open(struct ward_image_store *s, const char *hex, int op)
{
	char p[100];
	snprintf(p, sizeof(p), "pins/%s", hex);
	int fd = openat(s->dirfd, p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EACCES)
		fd = openat(s->dirfd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (flock(fd, op) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int ward_image_open(struct ward_image_store *s, const char *name, struct ward_image **out, char *err, size_t errlen)
{
	*out = NULL;
	struct ward_image *img = calloc(1, sizeof(*img));
	if (!img)
		return base_errf(err, errlen, "out of memory");
	img->pin_fd = -1;
	struct store_index ix = {0};
	if (store_ref_parse(name, img->name, img->tag, err, errlen) < 0 || store_lock(s, LOCK_SH, err, errlen) < 0) {
		free(img);
		return -1;
	}
	int rc = store_index_load(s, &ix, err, errlen);
	struct store_image *e = rc == 0 ? store_index_find(&ix, img->name, img->tag) : NULL;
	if (rc == 0 && !e)
		rc = base_errf(err, errlen,
		               "no image %s:%s in %s: import it first (ward image import %s:%s SOURCE), "
		               "or see ward image ls",
		               img->name, img->tag, s->dir, img->name, img->tag);
	if (rc == 0 && (img->pin_fd = pin_open(s, e->digest, LOCK_SH)) < 0)
		rc = store_failerr(err, errlen, "cannot pin image %s:%s in %s", img->name, img->tag, s->dir);
	store_unlock(s);
	if (rc == 0) {
		snprintf(img->digest, sizeof(img->digest), "sha256:%s", e->digest);
		snprintf(img->config_digest, sizeof(img->config_digest), "sha256:%s", e->config);
		img->size = e->size;
		rc = load_config(s, e->config, img, err, errlen);
	}
	if (rc == 0 && !(img->layers = calloc(e->nlayers + 1, sizeof(char *))))
		rc = base_errf(err, errlen, "out of memory");
	for (size_t i = 0; rc == 0 && i < e->nlayers; i++) {
		if (asprintf(&img->layers[i], "%s/layers/sha256/%s", s->dir, e->layers[i].hex) < 0) {
			img->layers[i] = NULL;
			rc = base_errf(err, errlen, "out of memory");
			break;
		}
		img->nlayers++;
		if (!store_layer_present(s, e->layers[i].hex))
			rc = base_errf(err, errlen,
			               "image %s:%s: layer sha256:%s is missing from %s: remove the image "
			               "and import it again",
			               img->name, img->tag, e->layers[i].hex, s->dir);
	}
	store_index_free(&ix);
	if (rc < 0) {
		ward_image_release(img);
		return -1;
	}
	*out = img;
	return 0;
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

char *ward_image_inspect_json(struct ward_image_store *s, const char *name, char *err, size_t errlen)
{
	struct ward_image *img;
	if (ward_image_open(s, name, &img, err, errlen) < 0)
		return NULL;
	struct store_index ix = {0};
	char *txt = NULL;
	if (store_lock(s, LOCK_SH, err, errlen) == 0) {
		int rc = store_index_load(s, &ix, err, errlen);
		store_unlock(s);
		struct store_image *e = rc == 0 ? store_index_find(&ix, img->name, img->tag) : NULL;
		if (rc == 0 && !e)
			base_errf(err, errlen, "image %s:%s was removed meanwhile", img->name, img->tag);
		if (e) {
			json_t *ls = json_array();
			for (size_t i = 0; i < e->nlayers && i < img->nlayers; i++) {
				char d[80];
				snprintf(d, sizeof(d), "sha256:%s", e->layers[i].hex);
				json_array_append_new(ls, json_pack("{s:s,s:I,s:I,s:s}", "diff_id", d, "size",
				                                    (json_int_t)e->layers[i].size, "inodes",
				                                    (json_int_t)e->layers[i].inodes, "path",
				                                    img->layers[i]));
			}
			json_t *cfg = json_pack("{s:o,s:o,s:o,s:s?,s:s?}", "Env", strv_json(img->env, img->nenv),
			                        "Entrypoint", strv_json(img->entrypoint, img->nentrypoint), "Cmd",
			                        strv_json(img->cmd, img->ncmd), "WorkingDir", img->workdir, "User",
			                        img->user);
			json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:o,s:o}", "name", img->name, "tag",
			                      img->tag, "digest", img->digest, "config_digest", img->config_digest,
			                      "size", (json_int_t)img->size, "created", e->created, "store", s->dir,
			                      "config", cfg, "layers", ls);
			txt = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
			json_decref(o);
			if (!txt)
				base_errf(err, errlen, "out of memory");
		}
		store_index_free(&ix);
	}
	ward_image_release(img);
	return txt;
}

int ward_image_remove(struct ward_image_store *s, const char *name, char *err, size_t errlen)
{
	char n[WARD_IMAGE_NAME_MAX + 1], t[WARD_IMAGE_TAG_MAX + 1];
	if (store_ref_parse(name, n, t, err, errlen) < 0 || store_lock(s, LOCK_EX, err, errlen) < 0)
		return -1;
	struct store_index ix;
	int rc = store_index_load(s, &ix, err, errlen);
	struct store_image *e = rc == 0 ? store_index_find(&ix, n, t) : NULL;
	int pin = -1;
	if (rc == 0 && !e)
		rc = base_errf(err, errlen, "no image %s:%s in %s (see ward image ls)", n, t, s->dir);
	if (rc == 0 && (pin = pin_open(s, e->digest, LOCK_EX | LOCK_NB)) < 0)
		rc = errno == EWOULDBLOCK ? base_errf(err, errlen,
		                                      "image %s:%s is in use by a running sandbox; retry "
		                                      "when it ends",
		                                      n, t)
		                          : store_failerr(err, errlen, "cannot lock image %s:%s", n, t);
	if (rc == 0) {
		store_index_del(&ix, e);
		rc = store_index_save(s, &ix, err, errlen);
	}
	if (pin >= 0)
		close(pin);
	if (rc == 0)
		rc = store_gc(s, &ix, err, errlen);
	store_index_free(&ix);
	store_unlock(s);
	return rc;
}
