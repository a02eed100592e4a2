/* e2b_snapshot.c — snapshots (SPEC §18, issue 32.4): a sandbox's files as
 * an image in the runner's image store (--image-store), usable as a
 * templateID.
 *
 * POST /sandboxes/{id}/snapshots {"name"}: the home saved
 * (ward_session_save, the sandbox frozen for the copy), made one layer
 * (build_layer.c's layer_tar: names sorted, owners 0, so the same files
 * give the same layer) over its template's layers when the template is an
 * image of the store; a layer already in the store is not written again
 * (an unchanged snapshot costs no layer bytes).  The image's config labels
 * it ward.e2b.snapshot with its template, sandbox and API key.  Answer 201
 * {snapshotID, names}: the name the caller gave.
 * GET /snapshots?sandboxID&name lists them; DELETE /templates/{id}
 * removes one (and its layers no image uses).  A sandbox made from one
 * has its template's shape and root, and the snapshot's home restored
 * before it is committed (e2b_snapshot_base).
 *
 * Names are each API key's own: NAME of key K is the store's
 * "e2b-snap/H/NAME:default", H the first 16 hex digits of sha256(K), so
 * another key's NAME is neither taken nor told.  A template's image is
 * "e2b-ALIAS:TAG" (e2b_templates.c), an alias never holds a '/' and a
 * snapshot name neither: the two never name the same image.  Caps a key:
 * --e2b-max-snapshots N (429) and --e2b-snapshot-bytes B of their homes'
 * files (507), checked under the store's lock before the layer goes in. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errf.h"
#include "dialect/e2b/e2b_int.h"
#include "image/build_layer.h"
#include "image/sha256.h"
#include "image/store.h"

#define SNAP_TAG "default"
#define LABEL "ward.e2b.snapshot"
#define SNAP_PREFIX "e2b-snap/" /* + 16 hex digits of the key + '/' + NAME: 126 bytes at most */
#define SNAP_MAX_DEFAULT 10
#define SNAP_BYTES_DEFAULT (4ULL << 30)

/* The store's name of owner's snapshot name (out: WARD_IMAGE_NAME_MAX + 1),
 * or of the folder of owner's snapshots when name is "". */
static void store_name(const char *owner, const char *name, char *out, size_t n)
{
	char h[65];
	sha256_buf_hex(owner, strlen(owner), h);
	snprintf(out, n, SNAP_PREFIX "%.16s/%.100s", h, name); /* name_ok: 100 at most */
}

static int open_store(struct server *s, bool create, struct ward_image_store **st, char *err, size_t n)
{
	return ward_image_store_open(s->o.image_store, create, st, err, n);
}

/* The snapshot's labels from its config: template (into tmpl) and sandbox;
 * false when img is not a snapshot. */
static bool snap_labels(struct ward_image_store *st, const struct store_image *img, char *tmpl, size_t tn, char *sbx,
                        size_t sn, char *owner, size_t on)
{
	char *buf = NULL, err[200];
	size_t len;
	if (store_blob_read(st, img->config, STORE_JSON_MAX, &buf, &len, err, sizeof(err)) < 0)
		return false;
	json_t *c = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *l = json_object_get(json_object_get(json_object_get(c, "config"), "Labels"), LABEL);
	json_t *t = json_object_get(json_object_get(json_object_get(c, "config"), "Labels"), LABEL ".template");
	json_t *x = json_object_get(json_object_get(json_object_get(c, "config"), "Labels"), LABEL ".sandbox");
	json_t *o = json_object_get(json_object_get(json_object_get(c, "config"), "Labels"), LABEL ".owner");
	bool ok = json_is_string(l) && json_is_string(t) && json_is_string(x) && json_is_string(o);
	if (ok) {
		snprintf(owner, on, "%s", json_string_value(o));
		snprintf(tmpl, tn, "%s", json_string_value(t));
		snprintf(sbx, sn, "%s", json_string_value(x));
	}
	json_decref(c);
	return ok;
}

/* sha256 of fd's bytes from its start: hex; its size. */
static int hash_fd(int fd, char hex[65], uint64_t *size)
{
	struct sha256 h;
	sha256_init(&h);
	*size = 0;
	char buf[1 << 16];
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		sha256_update(&h, buf, (size_t)k);
		*size += (uint64_t)k;
	}
	sha256_hex(&h, hex);
	return 0;
}

/* The snapshot's config (its layers' diff ids, its labels) and manifest
 * (its layers' descriptors) written as blobs; their digests in img. */
static int write_docs(struct ward_image_store *st, struct store_image *img, json_t *ids, json_t *descs,
                      const char *tmpl, const char *sbx, const char *owner, char *err, size_t n)
{
	json_t *c =
		json_pack("{s:s,s:s,s:s,s:{s:{s:s,s:s,s:s,s:s}},s:{s:s,s:O}}", "created", img->created, "architecture",
	                  "amd64", "os", "linux", "config", "Labels", LABEL, "1", LABEL ".template", tmpl,
	                  LABEL ".sandbox", sbx, LABEL ".owner", owner, "rootfs", "type", "layers", "diff_ids", ids);
	char *cfg = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(c);
	char *man = NULL;
	if (cfg) {
		sha256_buf_hex(cfg, strlen(cfg), img->config);
		char d[80];
		snprintf(d, sizeof(d), "sha256:%s", img->config);
		json_t *m = json_pack("{s:i,s:s,s:{s:s,s:s,s:I},s:O}", "schemaVersion", 2, "mediaType",
		                      "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
		                      "application/vnd.oci.image.config.v1+json", "digest", d, "size",
		                      (json_int_t)strlen(cfg), "layers", descs);
		man = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(m);
		if (man)
			sha256_buf_hex(man, strlen(man), img->digest);
	}
	int rc = 0;
	if (!cfg || !man)
		rc = base_errf(err, n, "out of memory");
	if (rc == 0 && (store_blob_write(st, img->digest, man, strlen(man), err, n) < 0 ||
	                store_blob_write(st, img->config, cfg, strlen(cfg), err, n) < 0))
		rc = -1;
	free(cfg);
	free(man);
	return rc;
}

/* owner's snapshots in ix (their store names under folder): how many, and
 * the bytes of their homes' files (each its own, a shared layer counted
 * for each), skip (the one a new snapshot replaces) left out. */
static void key_usage(const struct store_index *ix, const char *folder, const struct store_image *skip, unsigned *count,
                      uint64_t *bytes)
{
	size_t k = strlen(folder);
	*count = 0;
	*bytes = 0;
	for (size_t i = 0; i < ix->n; i++) {
		const struct store_image *im = &ix->v[i];
		if (im == skip || strncmp(im->name, folder, k) != 0 || strcmp(im->tag, SNAP_TAG) != 0)
			continue;
		(*count)++;
		*bytes += im->nlayers ? im->layers[im->nlayers - 1].size : 0;
	}
}

/* Whether owner has room for one more snapshot (its store name sname; one
 * it replaces is no more): 0, or the status with why in err. */
static unsigned room(struct server *s, struct ward_image_store *st, const struct store_index *ix, const char *owner,
                     const char *sname, uint64_t adding, char *err, size_t n)
{
	char folder[WARD_IMAGE_NAME_MAX + 1];
	store_name(owner, "", folder, sizeof(folder));
	struct store_image *old = store_index_find(ix, sname, SNAP_TAG);
	char ot[200], os_[100], oo[96];
	if (old &&
	    (!snap_labels(st, old, ot, sizeof(ot), os_, sizeof(os_), oo, sizeof(oo)) || strcmp(oo, owner) != 0)) {
		base_errf(err, n, "the store's image %s is not a snapshot of yours: give another name", sname);
		return 409; /* only a store the operator wrote into, or sha256 prefixes of two keys alike */
	}
	unsigned count, max = s->o.e2b_max_snapshots ? s->o.e2b_max_snapshots : SNAP_MAX_DEFAULT;
	uint64_t bytes, cap = s->o.e2b_snapshot_bytes ? s->o.e2b_snapshot_bytes : SNAP_BYTES_DEFAULT;
	key_usage(ix, folder, old, &count, &bytes);
	if (count >= max) {
		base_errf(err, n,
		          "this API key has %u snapshots, the most this runner keeps a key (--e2b-max-snapshots %u): "
		          "delete one (Sandbox.deleteSnapshot) or give the name of one of yours to replace it",
		          count, max);
		return 429;
	}
	if (bytes + adding > cap) {
		base_errf(err, n,
		          "this API key's snapshots hold %llu bytes of files and this one %llu, past the %llu this "
		          "runner keeps a key (--e2b-snapshot-bytes): delete one (Sandbox.deleteSnapshot)",
		          (unsigned long long)bytes, (unsigned long long)adding, (unsigned long long)cap);
		return 507;
	}
	return 0;
}

/* Commit: the layer (tmp L, unless present) and the image sname:default
 * over base (the template's image, or none), under the store's lock, when
 * owner has room for it: 0, or the status with why in err (nothing of it
 * left in the store). */
static unsigned commit(struct server *s, struct ward_image_store *st, int tfd, const char *sname, const char *hex,
                       uint64_t tar_size, const struct ward_session_saved *info, const char *tmpl, const char *sbx,
                       const char *owner, bool *fresh, char *err, size_t n)
{
	struct store_index ix = {0};
	*fresh = false;
	if (store_lock(st, LOCK_EX, err, n) < 0)
		return 500;
	unsigned code = store_index_load(st, &ix, err, n) < 0 ? 500 : 0;
	if (!code)
		code = room(s, st, &ix, owner, sname, info->bytes, err, n);
	int rc = code ? -1 : 0;
	struct store_image img = {0}, *base = NULL;
	char bname[WARD_IMAGE_NAME_MAX + 1], btag[WARD_IMAGE_TAG_MAX + 1], e2[200];
	if (rc == 0 && store_ref_parse(tmpl, bname, btag, e2, sizeof(e2)) == 0)
		base = store_index_find(&ix, bname, btag);
	size_t nb = base ? base->nlayers : 0;
	img.layers = rc == 0 ? calloc(nb + 1, sizeof(*img.layers)) : NULL;
	if (rc == 0 && !img.layers)
		rc = base_errf(err, n, "out of memory");
	json_t *ids = json_array(), *descs = json_array();
	for (size_t i = 0; rc == 0 && i < nb; i++) {
		img.layers[img.nlayers++] = base->layers[i];
		json_array_append_new(ids, json_sprintf("sha256:%s", base->layers[i].hex));
		json_array_append_new(descs,
		                      json_pack("{s:s,s:s,s:I}", "mediaType", "application/vnd.oci.image.layer.v1.tar",
		                                "digest", json_string_value(json_array_get(ids, i)), "size",
		                                (json_int_t)base->layers[i].size));
	}
	if (rc == 0) {
		struct store_layer *l = &img.layers[img.nlayers++];
		snprintf(l->hex, sizeof(l->hex), "%s", hex);
		l->size = info->bytes;
		l->inodes = info->files + info->dirs + info->links + 2;
		json_array_append_new(ids, json_sprintf("sha256:%s", hex));
		json_array_append_new(descs,
		                      json_pack("{s:s,s:s,s:I}", "mediaType", "application/vnd.oci.image.layer.v1.tar",
		                                "digest", json_string_value(json_array_get(ids, nb)), "size",
		                                (json_int_t)tar_size));
		for (size_t i = 0; i < img.nlayers; i++)
			img.size += img.layers[i].size;
		snprintf(img.name, sizeof(img.name), "%s", sname);
		snprintf(img.tag, sizeof(img.tag), "%s", SNAP_TAG);
		store_now(img.created);
	}
	if (rc == 0)
		rc = write_docs(st, &img, ids, descs, tmpl, sbx, owner, err, n);
	json_decref(ids);
	json_decref(descs);
	if (rc == 0 && !store_layer_present(st, hex)) {
		char to[100];
		snprintf(to, sizeof(to), "layers/sha256/%s", hex);
		if (renameat(tfd, "L", st->dirfd, to) < 0 && errno != EEXIST && errno != ENOTEMPTY)
			rc = store_failerr(err, n, "move the snapshot's layer into %s/%s", st->dir, to);
		else
			*fresh = true;
	}
	struct store_image *old = rc == 0 ? store_index_find(&ix, img.name, img.tag) : NULL;
	if (old)
		store_index_del(&ix, old); /* a name taken again: the new snapshot, as E2B's new build */
	if (rc == 0 && store_index_put(&ix, &img) < 0)
		rc = base_errf(err, n, "out of memory");
	if (rc == 0)
		rc = store_index_save(st, &ix, err, n);
	if (old || (rc < 0 && !code)) { /* what no image uses: the old one's, or this one's when it failed */
		char e[200];
		struct store_index now = {0};
		if (rc == 0 || store_index_load(st, &now, e, sizeof(e)) == 0)
			store_gc(st, rc == 0 ? &ix : &now, e, sizeof(e));
		store_index_free(&now);
	}
	free(img.layers);
	store_index_free(&ix);
	store_unlock(st);
	return code ? code : rc < 0 ? 500 : 0;
}

/* A snapshot's name, as the SDK gives it (its store name is the key's:
 * SNAP_PREFIX). */
static bool name_ok(const char *s)
{
	size_t k = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");
	return k > 0 && k <= 100 && !s[k] && s[0] != '-' && s[0] != '_';
}

/* The body's name (false: none given, name untouched); *bad when it is not
 * one. */
static bool body_name(const struct ereq *q, char *name, size_t n, bool *bad)
{
	json_t *b = q->len ? json_loadb(q->body, q->len, 0, NULL) : json_object();
	json_t *jn = json_object_get(b, "name");
	*bad = !json_is_object(b) || (jn && !json_is_string(jn)) || (jn && !name_ok(json_string_value(jn)));
	if (!*bad && jn)
		snprintf(name, n, "%s", json_string_value(jn));
	json_decref(b);
	return jn != NULL;
}

/* The saved home (tfd's L/home/user) as a layer's tar, tfd's layer.tar
 * (*tar, open): its sha256 (hex) and size.  0, or -1 with err. */
static int layer_write(struct server *s, int tfd, int *tar, char hex[65], uint64_t *tar_size, char *err, size_t n)
{
	/* the home and the directories above it get a fixed time: the same files, the same layer */
	const struct timespec epoch[2] = {{0, 0}, {0, 0}};
	utimensat(tfd, "L/home/user", epoch, AT_SYMLINK_NOFOLLOW); /* its time moves with any call in the sandbox */
	utimensat(tfd, "L/home", epoch, AT_SYMLINK_NOFOLLOW);
	utimensat(tfd, "L", epoch, AT_SYMLINK_NOFOLLOW);
	int lfd = openat(tfd, "L", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*tar = openat(tfd, "layer.tar", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	struct layer_tar_opts lo = {.uid_base = 0,
	                            .force_uid = 0,
	                            .force_gid = 0,
	                            .max_bytes = ((uint64_t)s->o.e2b_disk_mb << 20) + (64u << 20),
	                            .max_entries = WARD_SESSION_SAVE_MAX_ENTRIES + 8};
	int r = lfd >= 0 && *tar >= 0 ? layer_tar(lfd, *tar, &lo, NULL, err, n) : -1;
	if (lfd >= 0)
		close(lfd);
	if (r < 0 || hash_fd(*tar, hex, tar_size) < 0) {
		if (!err[0])
			snprintf(err, n, "cannot write the snapshot's layer: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The template x runs on (its shape and root): its create body's, where a
 * sandbox made from a snapshot has that snapshot's template (e2b_create),
 * not x->tmpl, the snapshot's name, which is no template of the store. */
static void run_template(const struct e2b_sbx *x, char *out, size_t n)
{
	json_t *r = x->recipe ? json_loads(x->recipe, 0, NULL) : NULL;
	const char *t = json_string_value(json_object_get(r, "templateID"));
	snprintf(out, n, "%s", t ? t : x->tmpl);
	json_decref(r);
}

/* room() under the shared lock, before the home is copied (commit asks
 * again under the exclusive one, with the snapshot's bytes). */
static unsigned room_now(struct server *s, struct ward_image_store *st, const char *owner, const char *sname, char *err,
                         size_t n)
{
	struct store_index ix = {0};
	if (store_lock(st, LOCK_SH, err, n) < 0)
		return 500;
	unsigned code = store_index_load(st, &ix, err, n) < 0 ? 500 : room(s, st, &ix, owner, sname, 0, err, n);
	store_index_free(&ix);
	store_unlock(st);
	return code;
}

enum MHD_Result e2b_snapshot(struct ereq *q)
{
	struct server *s = q->s;
	char name[120];
	bool bad, given = body_name(q, name, sizeof(name), &bad);
	if (bad)
		return e2b_api_error(q, 400, "give {} or {\"name\": 1 to 100 of a-z, 0-9, '_', '-'}");
	struct e2b_sbx *x;
	struct sess *ss = e2b_running(q, &x);
	if (!ss)
		return e2b_not_found(q, q->arg);
	if (!given)
		snprintf(name, sizeof(name), "%s-%lld", x->id, (long long)time(NULL));
	char sname[WARD_IMAGE_NAME_MAX + 1];
	store_name(x->owner, name, sname, sizeof(sname));
	char err[600] = "";
	unsigned code = 0;
	struct ward_image_store *st = NULL;
	int tfd = -1, tar = -1;
	char tname[32];
	struct ward_session_saved info = {0};
	char hex[65];
	uint64_t tar_size = 0;
	bool fresh = false;
	if (open_store(s, true, &st, err, sizeof(err)) < 0) {
		code = 500;
		goto out;
	}
	/* before the copy: a key past its count copies nothing */
	code = room_now(s, st, x->owner, sname, err, sizeof(err));
	if (code)
		goto out;
	if (store_tmpdir(st, &tfd, tname, err, sizeof(err)) < 0) {
		code = 500;
		goto out;
	}
	char home[700];
	snprintf(home, sizeof(home), "%s/%s/L/home/user", st->dir, tname);
	if (mkdirat(tfd, "L", 0755) < 0 || mkdirat(tfd, "L/home", 0755) < 0) {
		code = 500;
		snprintf(err, sizeof(err), "cannot make %.400s: %s", home, strerror(errno));
		goto out;
	}
	int r = ward_session_save(ss->ws, home, (uint64_t)s->o.e2b_disk_mb << 20, &info, err, sizeof(err));
	if (r < 0) {
		code = r == -EFBIG || r == -EMLINK ? 507 : 500;
		goto out;
	}
	if (layer_write(s, tfd, &tar, hex, &tar_size, err, sizeof(err)) < 0) {
		code = 500;
		goto out;
	}
	char tmpl[200];
	run_template(x, tmpl, sizeof(tmpl));
	code = commit(s, st, tfd, sname, hex, tar_size, &info, tmpl, x->id, x->owner, &fresh, err, sizeof(err));
out:
	sess_unref(s, ss);
	if (tar >= 0)
		close(tar);
	if (tfd >= 0)
		store_tmpdir_drop(st, tfd, tname);
	ward_image_store_close(st);
	if (!code)
		log_event(s, "e2b-snapshot", "%s of %s: layer sha256:%s (%s, %llu bytes of files)", name, x->id, hex,
		          fresh ? "new" : "already in the store", (unsigned long long)info.bytes);
	e2b_sbx_put(q->e, x);
	if (code)
		return e2b_api_error(q, code, "cannot snapshot: %s", err);
	return e2b_answer_json(q, 201, json_pack("{s:s,s:[s]}", "snapshotID", name, "names", name));
}

/* GET /snapshots?sandboxID=&name= */
enum MHD_Result e2b_snapshots(struct ereq *q)
{
	const char *want_sbx = e2b_query(q, "sandboxID"), *want_name = e2b_query(q, "name");
	json_t *arr = json_array();
	struct ward_image_store *st = NULL;
	struct store_index ix = {0};
	char err[400];
	if (open_store(q->s, false, &st, err, sizeof(err)) < 0)
		return e2b_answer_json(q, 200, arr); /* no store: none */
	char folder[WARD_IMAGE_NAME_MAX + 1];
	store_name(q->who, "", folder, sizeof(folder));
	size_t k = strlen(folder);
	if (store_lock(st, LOCK_SH, err, sizeof(err)) == 0) {
		if (store_index_load(st, &ix, err, sizeof(err)) == 0)
			for (size_t i = 0; i < ix.n; i++) {
				char tmpl[200], sbx[100], owner[96];
				const char *name = ix.v[i].name + k; /* the caller's name of it */
				if (strncmp(ix.v[i].name, folder, k) != 0 || strcmp(ix.v[i].tag, SNAP_TAG) != 0 ||
				    !snap_labels(st, &ix.v[i], tmpl, sizeof(tmpl), sbx, sizeof(sbx), owner,
				                 sizeof(owner)) ||
				    strcmp(owner, q->who) != 0) /* its API key's alone */
					continue;
				if ((want_sbx && strcmp(want_sbx, sbx) != 0) || (want_name && strcmp(want_name, name)))
					continue;
				json_array_append_new(arr, json_pack("{s:s,s:[s]}", "snapshotID", name, "names", name));
			}
		store_index_free(&ix);
		store_unlock(st);
	}
	ward_image_store_close(st);
	return e2b_answer_json(q, 200, arr);
}

/* DELETE /templates/{id}: a snapshot removed (204), or 404. */
enum MHD_Result e2b_snapshot_delete(struct ereq *q)
{
	struct ward_image_store *st = NULL;
	struct store_index ix = {0};
	char err[400];
	bool done = false;
	char sname[WARD_IMAGE_NAME_MAX + 1];
	store_name(q->who, q->arg, sname, sizeof(sname));
	if (!name_ok(q->arg) || open_store(q->s, false, &st, err, sizeof(err)) < 0)
		return e2b_api_error(q, 404, "template or snapshot '%s' not found", q->arg);
	if (store_lock(st, LOCK_EX, err, sizeof(err)) == 0) {
		struct store_image *img = store_index_load(st, &ix, err, sizeof(err)) == 0
		                                  ? store_index_find(&ix, sname, SNAP_TAG)
		                                  : NULL;
		char tmpl[200], sbx[100], owner[96];
		if (img && snap_labels(st, img, tmpl, sizeof(tmpl), sbx, sizeof(sbx), owner, sizeof(owner)) &&
		    strcmp(owner, q->who) == 0) {
			store_index_del(&ix, img);
			done = store_index_save(st, &ix, err, sizeof(err)) == 0;
			if (done)
				store_gc(st, &ix, err, sizeof(err));
		}
		store_index_free(&ix);
		store_unlock(st);
	}
	ward_image_store_close(st);
	if (!done)
		return e2b_api_error(q, 404, "template or snapshot '%s' not found", q->arg);
	log_event(q->s, "e2b-snapshot-delete", "%s by %s", q->arg, q->who);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

int e2b_snapshot_base(struct server *s, const char *owner, const char *name, char *tmpl, size_t tn, char *home,
                      size_t hn)
{
	struct ward_image_store *st = NULL;
	struct store_index ix = {0};
	char err[400], sbx[100], own[96], sname[WARD_IMAGE_NAME_MAX + 1];
	int rc = -1;
	if (!name_ok(name) || open_store(s, false, &st, err, sizeof(err)) < 0)
		return -1;
	store_name(owner, name, sname, sizeof(sname));
	if (store_lock(st, LOCK_SH, err, sizeof(err)) == 0) {
		struct store_image *img = store_index_load(st, &ix, err, sizeof(err)) == 0
		                                  ? store_index_find(&ix, sname, SNAP_TAG)
		                                  : NULL;
		char base[200];
		if (img && img->nlayers &&
		    snap_labels(st, img, base, sizeof(base), sbx, sizeof(sbx), own, sizeof(own)) &&
		    strcmp(own, owner) == 0) { /* only now: another key's snapshot sets nothing */
			snprintf(tmpl, tn, "%s", base);
			snprintf(home, hn, "%s/layers/sha256/%s/home/user", st->dir, img->layers[img->nlayers - 1].hex);
			rc = 0;
		}
		store_index_free(&ix);
		store_unlock(st);
	}
	ward_image_store_close(st);
	return rc;
}

bool e2b_snapshot_image(struct ward_image_store *st, const struct ward_image *img)
{
	char *buf = NULL, err[200];
	size_t len;
	if (store_blob_read(st, img->config_digest + 7, STORE_JSON_MAX, &buf, &len, err, sizeof(err)) < 0)
		return true; /* unreadable: not offered as anyone's base */
	json_t *c = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *l = json_object_get(json_object_get(c, "config"), "Labels");
	bool snap = !json_is_object(json_object_get(c, "config")) || json_object_get(l, LABEL) ||
	            json_object_get(l, LABEL ".owner");
	json_decref(c);
	return snap;
}
