/* build.c — `ward image build` (SPEC §19): a Dockerfile's steps, stage by
 * stage, into an image of the store.
 *
 * Each stage starts FROM an image of the store (pinned while the build
 * runs), an earlier stage, or scratch.  ARG, ENV, WORKDIR, USER, CMD,
 * ENTRYPOINT, LABEL, EXPOSE, SHELL and STOPSIGNAL change the stage's
 * config; RUN runs in a sandbox of its own (build_run.c) and COPY/ADD stage
 * files (build_copy.c); what either changed becomes a layer (build_layer.c,
 * build_cache.c).  Each stage carries a chain hash of everything that made
 * it (its base's digest, each step with its values expanded), and a step's
 * cache key is that chain with the step (and for COPY the files' bytes).
 * The image is committed only when every step succeeded: blobs, layers
 * renamed into layers/, the index, under the store's exclusive lock; a
 * failed build leaves only cache entries of the steps that succeeded. */
#define _GNU_SOURCE
#include "build/build.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "build/build_run.h"
#include "core/egress.h"
#include "image/build_cache.h"
#include "image/build_copy.h"
#include "image/build_layer.h"
#include "image/sha256.h"
#include "image/store.h"
#include "sandbox/overlay.h"
#include "ward.h"

void ward_build_opts_init(struct ward_build_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_layer_bytes = WARD_BUILD_MAX_LAYER_BYTES;
	o->max_image_bytes = WARD_IMAGE_MAX_BYTES;
	o->max_entries = WARD_IMAGE_MAX_INODES;
	o->memory_bytes = WARD_BUILD_MEMORY_BYTES;
	o->timeout_s = WARD_BUILD_TIMEOUT_S;
	o->progress_fd = -1;
	o->output_fd = -1;
}

#include "base/errf.h"
#include "build/build_state.h"

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void chain(struct stage *st, const char *what, const char *data)
{
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, st->chain, 64);
	sha256_update(&h, what, strlen(what) + 1);
	sha256_update(&h, data, strlen(data) + 1);
	sha256_hex(&h, st->chain);
}

/* ---- variables ---- */

static const char *kv_get(char **v, size_t n, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = n; i-- > 0;)
		if (!strncmp(v[i], name, l) && v[i][l] == '=')
			return v[i] + l + 1;
	return NULL;
}

static const char *env_get(json_t *cfg, const char *name)
{
	json_t *env = json_object_get(cfg, "Env");
	size_t l = strlen(name);
	for (size_t i = json_array_size(env); i-- > 0;) {
		const char *e = json_string_value(json_array_get(env, i));
		if (e && !strncmp(e, name, l) && e[l] == '=')
			return e + l + 1;
	}
	return NULL;
}

static void env_set(json_t *cfg, const char *name, const char *value)
{
	json_t *env = json_object_get(cfg, "Env");
	if (!json_is_array(env)) {
		env = json_array();
		json_object_set_new(cfg, "Env", env);
	}
	size_t l = strlen(name);
	char *kv;
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return;
	for (size_t i = 0; i < json_array_size(env); i++) {
		const char *e = json_string_value(json_array_get(env, i));
		if (e && !strncmp(e, name, l) && e[l] == '=') {
			json_array_set_new(env, i, json_string(kv));
			free(kv);
			return;
		}
	}
	json_array_append_new(env, json_string(kv));
	free(kv);
}

/* ENV over ARG, as Docker resolves $NAME in an instruction. */
static const char *stage_var(void *ctx, const char *name)
{
	struct stage *st = ctx;
	const char *v = env_get(st->cfg, name);
	return v ? v : kv_get(st->args, st->nargs, name);
}

static const char *global_var(void *ctx, const char *name)
{
	struct b *b = ctx;
	return kv_get(b->gargs, b->ngargs, name);
}

int build_word(struct b *b, struct stage *st, const struct bstep *s, const char *w, char **out)
{
	char e[300];
	if (build_expand(w, b->f->escape, st ? stage_var : global_var, st ? (void *)st : (void *)b, out, e, sizeof(e)) <
	    0)
		return base_errf(b->err, b->errlen, "line %u: %s: %s", s->line, build_op_name(s->op), e);
	return 0;
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));
	if (!nv)
		return -1;
	*v = nv;
	return (nv[(*n)++] = strdup(s)) ? 0 : -1;
}

static const char *build_arg(struct b *b, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < b->o->nbuild_args; i++)
		if (!strncmp(b->o->build_args[i], name, l) && b->o->build_args[i][l] == '=')
			return b->o->build_args[i] + l + 1;
	return NULL;
}

/* ARG NAME[=DEFAULT]...: a --build-arg's value, else the default, else
 * (in a stage) the global ARG's; declared without any, it stays unset. */
static int step_arg(struct b *b, struct stage *st, const struct bstep *s)
{
	for (size_t i = 0; i + 1 < s->nargs; i += 2) {
		const char *name = s->args[i], *given = build_arg(b, name), *dflt = s->args[i + 1];
		char *v = NULL;
		if (given)
			v = strdup(given);
		else if (dflt && build_word(b, st, s, dflt, &v) < 0)
			return -1;
		else if (!dflt && st && kv_get(b->gargs, b->ngargs, name))
			v = strdup(kv_get(b->gargs, b->ngargs, name));
		char *kv = NULL;
		int rc = v ? asprintf(&kv, "%s=%s", name, v) : 0;
		free(v);
		if (rc >= 0 && kv && st) {
			rc = strv_add(&st->args, &st->nargs, kv);
			chain(st, "ARG", kv);
		} else if (rc >= 0 && !st)
			rc = strv_add(&b->gargs, &b->ngargs, kv ? kv : name);
		free(kv);
		if (rc < 0)
			return base_errf(b->err, b->errlen, "out of memory");
	}
	return 0;
}

/* ---- config steps ---- */

static json_t *strv_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* CMD, ENTRYPOINT, RUN: the exec form as it is, the shell form through SHELL. */
static json_t *command_json(struct stage *st, const struct bstep *s)
{
	if (s->exec)
		return strv_json(s->args, s->nargs);
	json_t *sh = json_object_get(st->cfg, "Shell");
	json_t *a = json_is_array(sh) ? json_deep_copy(sh) : json_pack("[s,s]", "/bin/sh", "-c");
	json_array_append_new(a, json_string(s->args[0]));
	return a;
}

int build_step_config(struct b *b, struct stage *st, const struct bstep *s)
{
	char *v = NULL;
	if (s->op == BS_CMD || s->op == BS_ENTRYPOINT || s->op == BS_SHELL) {
		const char *key = s->op == BS_CMD ? "Cmd" : s->op == BS_SHELL ? "Shell" : "Entrypoint";
		json_object_set_new(st->cfg, key, command_json(st, s));
		if (s->op == BS_ENTRYPOINT && st->cmd_inherited)
			json_object_del(st->cfg, "Cmd"); /* Docker: a new ENTRYPOINT drops the base's CMD */
		if (s->op == BS_CMD)
			st->cmd_inherited = false;
	} else if (s->op == BS_ENV || s->op == BS_LABEL) {
		for (size_t i = 0; i + 1 < s->nargs; i += 2) {
			char *k = NULL;
			if (build_word(b, st, s, s->args[i], &k) < 0 || build_word(b, st, s, s->args[i + 1], &v) < 0) {
				free(k);
				return -1;
			}
			if (s->op == BS_ENV)
				env_set(st->cfg, k, v);
			else {
				json_t *l = json_object_get(st->cfg, "Labels");
				if (!json_is_object(l))
					json_object_set_new(st->cfg, "Labels", l = json_object());
				json_object_set_new(l, k, json_string(v));
			}
			free(k);
			free(v);
			v = NULL;
		}
	} else if (s->op == BS_EXPOSE) {
		json_t *p = json_object_get(st->cfg, "ExposedPorts");
		if (!json_is_object(p))
			json_object_set_new(st->cfg, "ExposedPorts", p = json_object());
		for (size_t i = 0; i < s->nargs; i++) {
			if (build_word(b, st, s, s->args[i], &v) < 0)
				return -1;
			char port[300];
			snprintf(port, sizeof(port), "%s%s", v, strchr(v, '/') ? "" : "/tcp");
			json_object_set_new(p, port, json_object());
			free(v);
			v = NULL;
		}
	} else {
		if (build_word(b, st, s, s->args[0], &v) < 0)
			return -1;
		const char *key = s->op == BS_USER ? "User" : s->op == BS_STOPSIGNAL ? "StopSignal" : "WorkingDir";
		if (s->op == BS_WORKDIR && v[0] != '/') {
			const char *cur = json_string_value(json_object_get(st->cfg, "WorkingDir"));
			char *abs;
			if (asprintf(&abs, "%s/%s", cur && *cur ? (strcmp(cur, "/") ? cur : "") : "", v) < 0)
				abs = NULL;
			free(v);
			v = abs;
			if (!v)
				return base_errf(b->err, b->errlen, "out of memory");
		}
		json_object_set_new(st->cfg, key, json_string(v));
		free(v);
	}
	char *t = json_dumps(st->cfg, JSON_COMPACT | JSON_SORT_KEYS);
	chain(st, build_op_name(s->op), t ? t : "");
	free(t);
	return 0;
}

/* ---- stages ---- */

struct stage *build_find_stage(struct b *b, const char *name)
{
	for (size_t i = 0; i < b->nst; i++)
		if (b->st[i].name && !strcasecmp(b->st[i].name, name))
			return &b->st[i];
	char *end;
	unsigned long n = strtoul(name, &end, 10);
	return *name && !*end && n < b->nst ? &b->st[n] : NULL;
}

/* ward.* labels say who made an image and for whom (an E2B snapshot's
 * owner, SPEC §18): ward sets them on what it makes; an image built FROM
 * one never inherits them. */
static void drop_ward_labels(json_t *cfg)
{
	json_t *l = json_object_get(cfg, "Labels");
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(l, tmp, k, v)
	{
		if (!strncmp(k, "ward.", 5))
			json_object_del(l, k);
	}
}

static int copy_layers(struct stage *to, const struct stage *from)
{
	to->l = calloc(from->nl + 1, sizeof(*to->l));
	to->base = calloc(from->nbase + 1, sizeof(char *));
	to->base_owners = calloc(from->nbase + 1, sizeof(char *));
	if (!to->l || !to->base || !to->base_owners)
		return -1;
	for (size_t i = 0; i < from->nl; i++) {
		to->l[i] = from->l[i];
		memcpy(to->l[i].fresh, from->l[i].fresh, sizeof(to->l[i].fresh));
		to->l[i].tree = from->l[i].tree ? strdup(from->l[i].tree) : NULL;
	}
	to->nl = from->nl;
	for (size_t i = 0; i < from->nbase; i++) {
		to->base[i] = strdup(from->base[i]);
		to->base_owners[i] = from->base_owners[i] ? strdup(from->base_owners[i]) : NULL;
	}
	to->nbase = from->nbase;
	to->base_descs = json_incref(from->base_descs);
	return 0;
}

/* The store's image: its layers (from the index, with their sizes) and
 * its config, pinned until the build ends. */
int build_from_image(struct b *b, struct stage *st, const char *ref, const struct bstep *s)
{
	struct ward_image *img;
	char e[512];
	if (ward_image_open(b->s, ref, &img, e, sizeof(e)) < 0)
		return base_errf(b->err, b->errlen, "line %u: FROM %s: %s (import or pull it first, or build it)",
		                 s->line, ref, e);
	struct ward_image **np = realloc(b->pins, (b->npins + 1) * sizeof(*np));
	if (!np) {
		ward_image_release(img);
		return base_errf(b->err, b->errlen, "out of memory");
	}
	b->pins = np;
	np[b->npins++] = img;
	char *buf = NULL;
	size_t len;
	if (store_blob_read(b->s, img->config_digest + 7, STORE_JSON_MAX, &buf, &len, e, sizeof(e)) < 0)
		return base_errf(b->err, b->errlen, "line %u: FROM %s: %s", s->line, ref, e);
	json_t *c = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *cfg = json_object_get(c, "config");
	st->cfg = json_is_object(cfg) ? json_deep_copy(cfg) : json_object();
	json_decref(c);
	drop_ward_labels(st->cfg);
	if (store_blob_read(b->s, img->digest + 7, STORE_JSON_MAX, &buf, &len, e, sizeof(e)) < 0)
		return base_errf(b->err, b->errlen, "line %u: FROM %s: %s", s->line, ref, e);
	json_t *m = json_loadb(buf, len, 0, NULL);
	free(buf);
	st->base_descs = json_incref(json_object_get(m, "layers"));
	json_decref(m);
	if (json_array_size(st->base_descs) != img->nlayers)
		return base_errf(b->err, b->errlen, "line %u: FROM %s: its manifest does not list its layers", s->line,
		                 ref);
	st->cmd_inherited = json_object_get(st->cfg, "Cmd") != NULL;
	st->base = calloc(img->nlayers + 1, sizeof(char *));
	st->base_owners = calloc(img->nlayers + 1, sizeof(char *));
	if (!st->base || !st->base_owners)
		return base_errf(b->err, b->errlen, "out of memory");
	for (size_t i = 0; i < img->nlayers; i++) {
		st->base[i] = strdup(img->layers[i]);
		st->nbase = i + 1;
		if (cache_owner_tree(b->s, b->work_fd, img->layers[i], &st->base_owners[i], b->err, b->errlen) < 0)
			return -1;
	}
	st->nbase = img->nlayers;
	chain(st, "FROM", img->digest);
	return 0;
}

static int step_from(struct b *b, const struct bstep *s)
{
	struct stage *v = realloc(b->st, (b->nst + 1) * sizeof(*v));
	if (!v)
		return base_errf(b->err, b->errlen, "out of memory");
	b->st = v;
	struct stage *st = &v[b->nst++];
	memset(st, 0, sizeof(*st));
	st->name = s->from ? strdup(s->from) : NULL;
	char *ref = NULL;
	if (build_word(b, NULL, s, s->args[0], &ref) < 0)
		return -1;
	struct stage *prev = build_find_stage(b, ref);
	int rc = 0;
	if (prev && prev != st) {
		rc = copy_layers(st, prev);
		st->cfg = json_deep_copy(prev->cfg);
		memcpy(st->chain, prev->chain, 65);
		if (rc < 0)
			rc = base_errf(b->err, b->errlen, "out of memory");
	} else if (!strcmp(ref, "scratch")) {
		st->cfg = json_object();
		chain(st, "FROM", "scratch");
	} else
		rc = build_from_image(b, st, ref, s);
	free(ref);
	return rc;
}

/* The stage's lower layers, bottom first (the base's, then its own). */
char **build_lowers(const struct stage *st, size_t *n)
{
	char **v = calloc(2 * st->nbase + st->nl + 1, sizeof(char *));
	*n = 0;
	for (size_t i = 0; v && i < st->nbase; i++) {
		v[(*n)++] = st->base[i];
		if (st->base_owners && st->base_owners[i])
			v[(*n)++] = st->base_owners[i];
	}
	for (size_t i = 0; v && i < st->nl; i++)
		if (!st->l[i].empty)
			v[(*n)++] = st->l[i].tree;
	return v;
}

static uint64_t stage_bytes(const struct b *b, const struct stage *st)
{
	uint64_t t = 0;
	for (size_t i = 0; i < st->nl; i++)
		t += st->l[i].size;
	for (size_t i = 0; i < b->npins; i++)
		if (st->nbase && b->pins[i]->nlayers == st->nbase && !strcmp(b->pins[i]->layers[0], st->base[0]))
			return t + b->pins[i]->size;
	return t;
}

/* key's layer: from the cache, or made by make (a RUN or a COPY) and cached. */
static int add_layer(struct b *b, struct stage *st, const char *key, int tar_fd)
{
	struct cache_layer *l = realloc(st->l, (st->nl + 1) * sizeof(*l));
	if (!l)
		return base_errf(b->err, b->errlen, "out of memory");
	st->l = l;
	uint64_t used = stage_bytes(b, st);
	uint64_t left = b->o->max_image_bytes > used ? b->o->max_image_bytes - used : 0;
	uint64_t cap = left < b->o->max_layer_bytes ? left : b->o->max_layer_bytes;
	if (cache_make(b->s, b->work_fd, b->k++, tar_fd, key, cap, b->o->max_entries, &l[st->nl], b->err, b->errlen) <
	    0)
		return -1;
	st->nl++;
	chain(st, "LAYER", key);
	return 0;
}

bool build_cached(struct b *b, struct stage *st, const char *key)
{
	if (b->o->no_cache)
		return false;
	struct cache_layer *l = realloc(st->l, (st->nl + 1) * sizeof(*l));
	if (!l)
		return false;
	st->l = l;
	char e[256];
	if (cache_find(b->s, b->work_fd, b->k, key, true, &l[st->nl], e, sizeof(e)) != 1)
		return false;
	b->k++;
	st->nl++;
	chain(st, "LAYER", key);
	b->r->cached++;
	return true;
}

/* A fresh tar file in the build's directory, for a step's layer. */
static int tar_file(struct b *b)
{
	char name[32];
	snprintf(name, sizeof(name), "T%u.tar", b->k);
	unlinkat(b->work_fd, name, 0);
	int fd = openat(b->work_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	return fd < 0 ? store_failerr(b->err, b->errlen, "make the step's tar") : fd;
}

static void drop_tar(struct b *b, int fd, unsigned k)
{
	char name[32];
	snprintf(name, sizeof(name), "T%u.tar", k);
	unlinkat(b->work_fd, name, 0);
	close(fd);
}

int build_layer_tree(struct b *b, struct stage *st, const char *key, int dirfd, unsigned base, long uid, long gid)
{
	int t = tar_file(b);
	if (t < 0)
		return -1;
	unsigned k = b->k;
	struct layer_tar_opts lo = {.uid_base = base,
	                            .force_uid = uid,
	                            .force_gid = gid,
	                            .max_bytes = b->o->max_layer_bytes,
	                            .max_entries = b->o->max_entries};
	int rc = layer_tar(dirfd, t, &lo, NULL, b->err, b->errlen);
	if (rc == 0)
		rc = add_layer(b, st, key, t);
	drop_tar(b, t, k);
	return rc;
}

void build_key(const struct stage *st, const char *what, const char *data, const char *more, char key[65])
{
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, st->chain, 64);
	sha256_update(&h, what, strlen(what) + 1);
	sha256_update(&h, data, strlen(data) + 1);
	if (more)
		sha256_update(&h, more, strlen(more) + 1);
	sha256_hex(&h, key);
}

/* ---- RUN ---- */

/* The environment of a RUN: the config's Env, and the stage's ARGs that
 * no ENV overrides (Docker gives RUN both). */
static char **run_env(struct stage *st, bool net)
{
	json_t *env = json_object_get(st->cfg, "Env");
	size_t n = json_array_size(env);
	char **v = calloc(n + st->nargs + 10, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; v && i < n; i++)
		if (json_string_value(json_array_get(env, i)))
			v[k++] = (char *)json_string_value(json_array_get(env, i));
	for (size_t i = 0; v && i < st->nargs; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(st->args[i], "="), st->args[i]);
		if (!env_get(st->cfg, name))
			v[k++] = st->args[i];
	}
	if (v && !env_get(st->cfg, "PATH"))
		v[k++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (size_t i = 0; v && net && egress_proxy_env[i]; i++)
		v[k++] = (char *)egress_proxy_env[i];
	return v;
}

static void step_failed(struct b *b, const struct bstep *s, const struct build_run_result *res)
{
	b->r->failed_line = s->line;
	b->r->status = res->status;
	b->r->timed_out = res->timed_out;
	b->r->oom = res->oom;
	memcpy(b->r->output, res->tail, res->ntail);
	b->r->output[res->ntail < sizeof(b->r->output) ? res->ntail : sizeof(b->r->output) - 1] = 0;
	base_errf(b->err, b->errlen, "line %u: %s failed: %s", s->line, s->text,
	          res->timed_out ? "it ran past --timeout"
	          : res->oom     ? "it ran out of --memory"
	                         : "its exit status is above");
	if (res->status && !res->timed_out && !res->oom)
		snprintf(b->err, b->errlen, "line %u: RUN exited with status %d: %.300s", s->line, res->status,
		         s->text);
}

/* What a RUN could reach, part of its cache key: a layer built with one
 * allow-list or pin is never served to a build with another, or with no
 * network (whose RUN would see another environment). */
static char *run_net_key(const struct ward_build_opts *o)
{
	json_t *k = json_array();
	json_array_append_new(k, json_string(o->net_allow ? "allow" : "none"));
	for (size_t i = 0; o->net_allow && i < o->negress_allow; i++)
		json_array_append_new(k, json_string(o->egress_allow[i]));
	json_array_append_new(k, json_string("resolve"));
	for (size_t i = 0; o->net_allow && i < o->negress_resolve; i++)
		json_array_append_new(k, json_string(o->egress_resolve[i]));
	char *t = json_dumps(k, JSON_COMPACT);
	json_decref(k);
	return t;
}

static int step_run(struct b *b, struct stage *st, const struct bstep *s)
{
	json_t *cmd = command_json(st, s);
	char *argv_json = json_dumps(cmd, JSON_COMPACT);
	char *net = run_net_key(b->o);
	char key[65];
	build_key(st, "RUN", argv_json ? argv_json : "", net ? net : "?", key);
	free(net);
	free(argv_json);
	if (build_cached(b, st, key)) {
		json_decref(cmd);
		return 1;
	}
	size_t n = json_array_size(cmd), nl;
	char **argv = calloc(n + 1, sizeof(char *)), **env = run_env(st, b->o->net_allow),
	     **low = build_lowers(st, &nl);
	for (size_t i = 0; argv && i < n; i++)
		argv[i] = (char *)json_string_value(json_array_get(cmd, i));
	int rc = 0;
	if (!argv || !env || !low)
		rc = base_errf(b->err, b->errlen, "out of memory");
	else if (!nl)
		rc = base_errf(b->err, b->errlen,
		               "line %u: RUN on an empty image (FROM scratch): there is nothing to run "
		               "it with; COPY a program in first",
		               s->line);
	else if (b->ids.lock_fd < 0)
		rc = build_ids_acquire(&b->ids, b->err, b->errlen);
	struct build_run_result res = {.tmpfs_fd = -1};
	if (rc == 0) {
		struct build_run r = {.layers = low,
		                      .nlayers = nl,
		                      .argv = argv,
		                      .env = env,
		                      .workdir = json_string_value(json_object_get(st->cfg, "WorkingDir")),
		                      .user = json_string_value(json_object_get(st->cfg, "User")),
		                      .memory_bytes = b->o->memory_bytes + b->o->max_layer_bytes,
		                      .layer_bytes = b->o->max_layer_bytes,
		                      .timeout_s = b->o->timeout_s,
		                      .pids = 4096,
		                      .out_fd = b->o->output_fd,
		                      .ids = &b->ids,
		                      .egress = b->o->net_allow ? &b->egress : NULL};
		rc = build_run_step(&r, &res, b->err, b->errlen);
	}
	if (rc == 0 && (res.status || res.timed_out)) {
		step_failed(b, s, &res);
		rc = -1;
	}
	if (rc == 0) {
		int up = openat(res.tmpfs_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = up < 0 ? store_failerr(b->err, b->errlen, "open the step's writable layer")
		            : build_layer_tree(b, st, key, up, b->ids.base, -1, -1);
		if (up >= 0)
			close(up);
	}
	if (res.tmpfs_fd >= 0)
		close(res.tmpfs_fd);
	free(argv);
	free(env);
	free(low);
	json_decref(cmd);
	return rc;
}

/* ---- the steps ---- */

static void progress(struct b *b, size_t i, const struct bstep *s, double t, int how)
{
	if (b->o->progress_fd < 0)
		return;
	char text[90];
	snprintf(text, sizeof(text), "%s", s->text);
	for (char *c = text; *c; c++)
		if (*c == '\n' || *c == '\r' || (unsigned char)*c < 0x20)
			*c = ' ';
	dprintf(b->o->progress_fd, "[%zu/%zu] %-72s %s%.3fs\n", i + 1, b->f->n, text, how == 1 ? "cached " : "", t);
}

static int step(struct b *b, const struct bstep *s)
{
	struct stage *st = b->nst ? &b->st[b->nst - 1] : NULL;
	switch (s->op) {
	case BS_FROM:
		return step_from(b, s);
	case BS_ARG:
		return step_arg(b, st, s);
	case BS_RUN:
		return step_run(b, st, s);
	case BS_COPY:
	case BS_ADD:
		return build_step_copy(b, st, s);
	case BS_WORKDIR:
		return build_step_workdir(b, st, s);
	default:
		return build_step_config(b, st, s);
	}
}

static void stage_free(struct stage *st)
{
	for (size_t i = 0; i < st->nl; i++)
		cache_layer_free(&st->l[i]);
	free(st->l);
	for (size_t i = 0; i < st->nbase; i++) {
		free(st->base[i]);
		free(st->base_owners ? st->base_owners[i] : NULL);
	}
	free(st->base);
	free(st->base_owners);
	for (size_t i = 0; i < st->nargs; i++)
		free(st->args[i]);
	free(st->args);
	json_decref(st->cfg);
	json_decref(st->base_descs);
	free(st->name);
}

static void b_free(struct b *b)
{
	for (size_t i = 0; i < b->nst; i++)
		stage_free(&b->st[i]);
	free(b->st);
	for (size_t i = 0; i < b->ngargs; i++)
		free(b->gargs[i]);
	free(b->gargs);
	for (size_t i = 0; i < b->npins; i++)
		ward_image_release(b->pins[i]);
	free(b->pins);
	ignore_free(&b->ign);
	if (b->ctx_fd >= 0)
		close(b->ctx_fd);
	build_ids_release(&b->ids);
	if (b->work_fd >= 0)
		store_tmpdir_drop(b->s, b->work_fd, b->work);
}

/* --net allow: the allow-list and pins checked now, as `ward run` checks
 * them, and the proxy's shape made once for every RUN. */
static int egress_shape(struct b *b)
{
	const struct ward_build_opts *o = b->o;
	if (!o->negress_allow)
		return base_errf(b->err, b->errlen,
		                 "--net allow needs --egress-allow HOST (repeatable): the names RUN may "
		                 "reach through ward's proxy");
	for (size_t i = 0; i < o->negress_allow; i++) {
		struct egress_pattern p;
		if (egress_pattern_parse(o->egress_allow[i], &p, b->err, b->errlen) < 0)
			return -1;
	}
	for (size_t i = 0; i < o->negress_resolve; i++) {
		struct egress_pin p;
		if (egress_pin_parse(o->egress_resolve[i], &p, b->err, b->errlen) < 0)
			return -1;
	}
	ward_request_init(&b->egress);
	b->egress.net = WARD_NET_ALLOW;
	b->egress.egress_allow = o->egress_allow;
	b->egress.negress_allow = o->negress_allow;
	b->egress.egress_resolve = o->egress_resolve;
	b->egress.negress_resolve = o->negress_resolve;
	return 0;
}

int build_steps(struct ward_image_store *s, const char *name, const struct bfile *f, const struct ward_build_opts *o,
                struct ward_build_result *r, char *err, size_t errlen)
{
	struct ward_build_opts def;
	if (!o) {
		ward_build_opts_init(&def);
		o = &def;
	}
	memset(r, 0, sizeof(*r));
	struct b b = {.s = s,
	              .f = f,
	              .o = o,
	              .r = r,
	              .work_fd = -1,
	              .ctx_fd = -1,
	              .ids = {.lock_fd = -1},
	              .err = err,
	              .errlen = errlen};
	clock_gettime(CLOCK_MONOTONIC, &b.t0);
	char nm[WARD_IMAGE_NAME_MAX + 1], tg[WARD_IMAGE_TAG_MAX + 1];
	int rc = store_ref_parse(name, nm, tg, err, errlen);
	if (rc == 0 && o->context) {
		b.ctx_fd = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = b.ctx_fd < 0 ? store_failerr(err, errlen, "the build context %s", o->context)
		                  : ignore_load(b.ctx_fd, &b.ign, err, errlen);
	}
	if (rc == 0 && o->net_allow)
		rc = egress_shape(&b);
	if (rc == 0)
		rc = store_tmpdir(s, &b.work_fd, b.work, err, errlen);
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		int how = step(&b, &f->v[i]);
		if (how < 0) {
			rc = -1;
			if (!r->failed_line)
				r->failed_line = f->v[i].line;
			break;
		}
		r->steps++;
		progress(&b, i, &f->v[i], since(&t), how);
	}
	if (rc == 0)
		rc = build_commit(&b, name, &b.st[b.nst - 1]);
	r->seconds = since(&b.t0);
	b_free(&b);
	return rc;
}

int ward_image_build(struct ward_image_store *s, const char *name, const char *dockerfile, size_t len,
                     const struct ward_build_opts *o, struct ward_build_result *r, char *err, size_t errlen)
{
	struct bfile f;
	memset(r, 0, sizeof(*r));
	if (build_parse(dockerfile, len, &f, err, errlen) < 0)
		return -1;
	int rc = build_steps(s, name, &f, o, r, err, errlen);
	build_file_free(&f);
	return rc;
}
