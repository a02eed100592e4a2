/* store_index.c — the store's index.json: NAME:TAG -> manifest, config,
 * layers (diff_ids and sizes), size, created.  Loaded bounded under the
 * shared lock, changed in memory, saved by write-temp-then-rename under the
 * exclusive one, so a reader sees the old index or the new one whole. */
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

void store_index_free(struct store_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->v[i].layers);
	free(ix->v);
	ix->v = NULL;
	ix->n = 0;
}

struct store_image *store_index_find(const struct store_index *ix, const char *name, const char *tag)
{
	for (size_t i = 0; i < ix->n; i++)
		if (!strcmp(ix->v[i].name, name) && !strcmp(ix->v[i].tag, tag))
			return &ix->v[i];
	return NULL;
}

int store_index_put(struct store_index *ix, const struct store_image *img)
{
	struct store_layer *l = malloc((img->nlayers ? img->nlayers : 1) * sizeof(*l));
	if (!l)
		return -1;
	memcpy(l, img->layers, img->nlayers * sizeof(*l));
	struct store_image *old = store_index_find(ix, img->name, img->tag);
	if (!old) {
		struct store_image *v = realloc(ix->v, (ix->n + 1) * sizeof(*v));
		if (!v) {
			free(l);
			return -1;
		}
		ix->v = v;
		old = &ix->v[ix->n++];
	} else
		free(old->layers);
	*old = *img;
	old->layers = l;
	return 0;
}

void store_index_del(struct store_index *ix, struct store_image *img)
{
	free(img->layers);
	size_t i = (size_t)(img - ix->v);
	memmove(&ix->v[i], &ix->v[i + 1], (ix->n - i - 1) * sizeof(*img));
	ix->n--;
}

bool store_index_layer(const struct store_index *ix, const char *hex, struct store_layer *out)
{
	for (size_t i = 0; i < ix->n; i++)
		for (size_t j = 0; j < ix->v[i].nlayers; j++)
			if (!strcmp(ix->v[i].layers[j].hex, hex)) {
				*out = ix->v[i].layers[j];
				return true;
			}
	return false;
}

static bool copy_str(json_t *o, const char *key, char *out, size_t len)
{
	const char *v = json_string_value(json_object_get(o, key));
	if (!v || strlen(v) >= len)
		return false;
	strcpy(out, v);
	return true;
}

static bool get_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static int image_from_json(json_t *o, struct store_image *img)
{
	memset(img, 0, sizeof(*img));
	char d[80], c[80];
	json_t *ls = json_object_get(o, "layers");
	if (!copy_str(o, "name", img->name, sizeof(img->name)) || !copy_str(o, "tag", img->tag, sizeof(img->tag)) ||
	    !copy_str(o, "digest", d, sizeof(d)) || !store_digest_parse(d, img->digest) ||
	    !copy_str(o, "config", c, sizeof(c)) || !store_digest_parse(c, img->config) ||
	    !copy_str(o, "created", img->created, sizeof(img->created)) || !get_u64(o, "size", &img->size) ||
	    !json_is_array(ls) || json_array_size(ls) > 4096)
		return -1;
	img->nlayers = json_array_size(ls);
	img->layers = calloc(img->nlayers ? img->nlayers : 1, sizeof(*img->layers));
	if (!img->layers)
		return -1;
	for (size_t i = 0; i < img->nlayers; i++) {
		json_t *l = json_array_get(ls, i);
		if (!copy_str(l, "digest", d, sizeof(d)) || !store_digest_parse(d, img->layers[i].hex) ||
		    !get_u64(l, "size", &img->layers[i].size) || !get_u64(l, "inodes", &img->layers[i].inodes)) {
			free(img->layers);
			img->layers = NULL;
			return -1;
		}
	}
	return 0;
}

int store_index_load(struct ward_image_store *s, struct store_index *ix, char *err, size_t errlen)
{
	ix->v = NULL;
	ix->n = 0;
	int fd = openat(s->dirfd, "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	char *buf;
	size_t len;
	if (fd < 0 || store_read_all(fd, 64u << 20, &buf, &len) < 0) {
		store_failerr(err, errlen, "cannot read %s/index.json", s->dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	json_t *imgs = json_object_get(root, "images");
	if (!json_is_array(imgs)) {
		json_decref(root);
		return base_errf(err, errlen, "%s/index.json is damaged (%s): move the store aside and import again",
		                 s->dir, root ? "no \"images\" array" : je.text);
	}
	ix->v = calloc(json_array_size(imgs) + 1, sizeof(*ix->v));
	if (!ix->v) {
		json_decref(root);
		return base_errf(err, errlen, "out of memory");
	}
	for (size_t i = 0; i < json_array_size(imgs); i++) {
		if (image_from_json(json_array_get(imgs, i), &ix->v[ix->n]) < 0) {
			json_decref(root);
			store_index_free(ix);
			return base_errf(err, errlen,
			                 "%s/index.json: image %zu is damaged: move the store aside and "
			                 "import again",
			                 s->dir, i);
		}
		ix->n++;
	}
	json_decref(root);
	return 0;
}

static json_t *image_to_json(const struct store_image *img)
{
	char d[80], c[80];
	snprintf(d, sizeof(d), "sha256:%s", img->digest);
	snprintf(c, sizeof(c), "sha256:%s", img->config);
	json_t *ls = json_array();
	for (size_t i = 0; i < img->nlayers; i++) {
		char l[80];
		snprintf(l, sizeof(l), "sha256:%s", img->layers[i].hex);
		json_array_append_new(ls,
		                      json_pack("{s:s,s:I,s:I}", "digest", l, "size", (json_int_t)img->layers[i].size,
		                                "inodes", (json_int_t)img->layers[i].inodes));
	}
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:o}", "name", img->name, "tag", img->tag, "digest", d, "config", c,
	                 "created", img->created, "size", (json_int_t)img->size, "layers", ls);
}

int store_index_save(struct ward_image_store *s, const struct store_index *ix, char *err, size_t errlen)
{
	json_t *imgs = json_array();
	for (size_t i = 0; i < ix->n; i++)
		json_array_append_new(imgs, image_to_json(&ix->v[i]));
	json_t *root = json_pack("{s:i,s:o}", "version", 1, "images", imgs);
	char *txt = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	if (!txt)
		return base_errf(err, errlen, "out of memory");
	int rc = store_replace_file(s->dirfd, "index.json.tmp", "index.json", txt, strlen(txt));
	free(txt);
	if (rc < 0)
		return store_failerr(err, errlen, "cannot write %s/index.json", s->dir);
	return 0;
}
