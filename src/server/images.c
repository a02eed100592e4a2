/* images.c — the images a runner offers (SPEC §14: `ward serve --image
 * NAME`, repeatable): each opened at start-up (pinned in the store for the
 * server's life, its root prepared once: sandbox/overlay.c via
 * image/root.c), a request's "image" resolved to one of them, and /health's
 * list.  Owns s->images; read-only once the server serves. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "ward_image.h"

int images_open(struct server *s)
{
	for (size_t i = 0; i < s->o.nimages; i++) {
		char err[512];
		struct offered_image *im = &s->images[i];
		im->name = s->o.images[i];
		if (ward_image_root_open(s->o.image_store, im->name, &im->root, err, sizeof(err)) < 0) {
			fprintf(stderr, "ward serve: --image %s: %s\n", im->name, err);
			return -1;
		}
		s->nimages = i + 1;
		log_event(s, "image", "%s %s offered", im->name, ward_image_root_image(im->root)->digest);
	}
	return 0;
}

void images_pools(struct server *s)
{
	for (size_t i = 0; s->o.pool && i < s->nimages; i++) {
		char err[512];
		s->images[i].pool = ward_pool_new_on(s->o.pool, WARD_NET_NONE, s->images[i].root, err, sizeof(err));
		if (!s->images[i].pool)
			log_event(s, "pool-unavailable", "image %s: %s", s->images[i].name, err);
	}
}

struct ward_pool *image_pool(struct server *s, const struct ward_request *q)
{
	if (!q->image)
		return s->pool;
	for (size_t i = 0; i < s->nimages; i++)
		if (s->images[i].root == q->image)
			return s->images[i].pool;
	return NULL;
}

void images_close(struct server *s)
{
	for (size_t i = 0; i < s->nimages; i++) {
		ward_pool_free(s->images[i].pool); /* its sandboxes use the root: first */
		ward_image_root_close(s->images[i].root);
	}
	s->nimages = 0;
}

/* NAME and NAME:latest are the same image. */
static bool same_name(const char *offered, const char *asked)
{
	size_t a = strcspn(offered, ":"), b = strcspn(asked, ":");
	const char *ta = offered[a] ? offered + a + 1 : "latest", *tb = asked[b] ? asked + b + 1 : "latest";
	return a == b && strncmp(offered, asked, a) == 0 && strcmp(ta, tb) == 0;
}

const struct ward_image_root *image_find(struct server *s, const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->nimages; i++)
		if (same_name(s->images[i].name, name))
			return s->images[i].root;
	char list[1024] = "";
	size_t k = 0;
	for (size_t i = 0; i < s->nimages && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", s->images[i].name);
	if (s->nimages)
		snprintf(err, errlen, "image: '%.200s' is not offered by this runner; it offers: %s", name, list);
	else
		snprintf(err, errlen,
		         "image: '%.200s' is not offered by this runner: it offers no image (its operator "
		         "gives them with ward serve --image NAME)",
		         name);
	return NULL;
}

bool image_resolve(struct server *s, struct req *r, struct ward_request *q)
{
	if (!q->image_name)
		return true;
	char err[1400];
	q->image = image_find(s, q->image_name, err, sizeof(err));
	if (!q->image)
		set_error(r, 400, "%s", err);
	return q->image != NULL;
}

void images_health(struct server *s, json_t *health)
{
	json_t *a = json_array();
	if (!a)
		return;
	for (size_t i = 0; i < s->nimages; i++) {
		const struct ward_image *img = ward_image_root_image(s->images[i].root);
		json_array_append_new(a, json_pack("{s:s, s:s}", "name", s->images[i].name, "digest", img->digest));
	}
	json_object_set_new(health, "images", a);
}
