/* import.c — images into the store (SPEC §14): OCI layouts and archives
 * read by ward itself, everything else through skopeo into an OCI layout
 * first.  Every blob's digest is checked before it is used (the manifest
 * against the index's descriptor, the config against the manifest's, each
 * layer's compressed bytes against the manifest and its uncompressed stream
 * against the config's diff_ids); layers are unpacked into a locked tmp/
 * directory of the store (unpack.c) and renamed into place, with the index,
 * under the store's exclusive lock.  A refused or failed import leaves only
 * its tmp/ directory, which it removes (or the next store open does).
 * ward-net only (libarchive). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errf.h"
#include "image/sha256.h"
#include "image/store.h"
#include "image/unpack.h"

extern char **environ;

void ward_image_import_opts_init(struct ward_image_import_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_bytes = WARD_IMAGE_MAX_BYTES;
	o->max_inodes = WARD_IMAGE_MAX_INODES;
	o->max_layers = WARD_IMAGE_MAX_LAYERS;
}

struct layer_src {
	char blob[65]; /* the manifest's digest of it ("" for rootfs:) */
	char diff[65]; /* the config's diff_id ("" for rootfs:) */
	bool fresh;    /* unpacked by this import into WORK/L<i> */
};

struct job {
	struct ward_image_store *s;
	const struct ward_image_import_opts *o;
	int work_fd;
	char work[32];
	int lfd;                /* the OCI layout read from, or -1 */
	const char *rootfs;     /* rootfs: FILE */
	struct store_image img; /* what goes into the index */
	struct layer_src *ls;
	char *manifest, *config;
	size_t mlen, clen;
	uint64_t bytes, inodes; /* totals so far */
	struct timespec t0;
	char *err;
	size_t errlen;
};

/* ---- progress (a terminal only) ---- */

struct progress {
	struct job *j;
	size_t i;
	uint64_t last;
};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void show(void *ctx, uint64_t in, uint64_t bytes)
{
	struct progress *p = ctx;
	if (bytes - p->last < (4u << 20) && bytes)
		return;
	p->last = bytes;
	double s = since(&p->j->t0);
	uint64_t total = p->j->bytes + bytes;
	fprintf(stderr, "\rward: layer %zu/%zu: %.1f MiB read, %.1f MiB unpacked, %.1f MiB/s   ", p->i + 1,
	        p->j->img.nlayers, (double)in / 1048576.0, (double)total / 1048576.0,
	        s > 0 ? (double)total / 1048576.0 / s : 0.0);
}

/* ---- layers ---- */

static int open_blob(struct job *j, size_t i)
{
	if (j->rootfs) {
		int fd = open(j->rootfs, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			store_failerr(j->err, j->errlen, "rootfs:%s", j->rootfs);
		return fd;
	}
	char p[100];
	snprintf(p, sizeof(p), "blobs/sha256/%s", j->ls[i].blob);
	int fd = store_openat2_beneath(j->lfd, p, O_RDONLY, 0);
	if (fd < 0)
		store_failerr(j->err, j->errlen, "the OCI layout's blob sha256:%s (layer %zu)", j->ls[i].blob, i + 1);
	return fd;
}

/* Layer i unpacked into WORK/L<i>, its digests checked. */
static int unpack_one(struct job *j, size_t i)
{
	char d[32];
	snprintf(d, sizeof(d), "L%zu", i);
	store_rm_tree(j->work_fd, d);
	int in = open_blob(j, i);
	if (in < 0)
		return -1;
	if (mkdirat(j->work_fd, d, 0755) < 0) {
		close(in);
		return store_failerr(j->err, j->errlen, "cannot create %s/%s/%s", j->s->dir, j->work, d);
	}
	int dfd = openat(j->work_fd, d, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t left = j->o->max_bytes > j->bytes ? j->o->max_bytes - j->bytes : 0;
	uint64_t ileft = j->o->max_inodes > j->inodes ? j->o->max_inodes - j->inodes : 0;
	struct progress p = {.j = j, .i = i};
	struct unpack_opts uo = {.max_bytes = left,
	                         .max_inodes = ileft,
	                         .max_stream = left + 2048 * ileft + (1u << 20),
	                         .quiet = j->o->quiet,
	                         .progress = j->o->progress ? show : NULL,
	                         .ctx = &p,
	                         .list_owners = true};
	struct unpack_stats st;
	char e[512];
	int rc = dfd < 0 ? store_failerr(e, sizeof(e), "open") : unpack_layer(in, dfd, &uo, &st, e, sizeof(e));
	close(in);
	if (dfd >= 0)
		close(dfd);
	if (rc == 0 && store_owners_put(j->work_fd, d, st.owners, st.owners_len) < 0)
		rc = store_failerr(e, sizeof(e), "write the layer's owners");
	if (rc == 0 || st.owners) {
		free(st.owners);
		st.owners = NULL;
	}
	if (rc < 0)
		return base_errf(j->err, j->errlen, "layer %zu of %zu: %s", i + 1, j->img.nlayers, e);
	if (j->o->progress)
		fprintf(stderr, "\n");
	if (j->ls[i].blob[0] && strcmp(st.blob_hex, j->ls[i].blob) != 0)
		return base_errf(j->err, j->errlen,
		                 "layer %zu: its bytes' digest is sha256:%s, but the manifest says "
		                 "sha256:%s: refused (a corrupt or tampered image)",
		                 i + 1, st.blob_hex, j->ls[i].blob);
	if (j->ls[i].diff[0] && strcmp(st.diff_hex, j->ls[i].diff) != 0)
		return base_errf(j->err, j->errlen,
		                 "layer %zu: its uncompressed digest is sha256:%s, but the config's "
		                 "diff_ids say sha256:%s: refused (a corrupt or tampered image)",
		                 i + 1, st.diff_hex, j->ls[i].diff);
	if (!j->ls[i].diff[0])
		memcpy(j->ls[i].diff, st.diff_hex, 65);
	if (!j->ls[i].blob[0])
		memcpy(j->ls[i].blob, st.blob_hex, 65);
	j->ls[i].fresh = true;
	memcpy(j->img.layers[i].hex, j->ls[i].diff, 65);
	j->img.layers[i].size = st.bytes;
	j->img.layers[i].inodes = st.inodes;
	j->bytes += st.bytes;
	j->inodes += st.inodes;
	return 0;
}

/* Every layer: found in the store (kept once) or unpacked now. */
static int layers(struct job *j, const struct store_index *ix)
{
	for (size_t i = 0; i < j->img.nlayers; i++) {
		struct store_layer have;
		bool dup = false;
		for (size_t k = 0; k < i && j->ls[i].diff[0]; k++)
			if (!strcmp(j->ls[k].diff, j->ls[i].diff)) {
				have = j->img.layers[k];
				dup = true;
			}
		if (dup || (j->ls[i].diff[0] && store_index_layer(ix, j->ls[i].diff, &have) &&
		            store_layer_present(j->s, j->ls[i].diff))) {
			j->img.layers[i] = have;
			j->bytes += have.size;
			j->inodes += have.inodes;
			if (j->bytes > j->o->max_bytes || j->inodes > j->o->max_inodes)
				return base_errf(j->err, j->errlen,
				                 "the image unpacks to more than %llu bytes or %llu "
				                 "entries (--max-image-bytes, the inode cap): refused",
				                 (unsigned long long)j->o->max_bytes,
				                 (unsigned long long)j->o->max_inodes);
			continue;
		}
		if (unpack_one(j, i) < 0)
			return -1;
	}
	return 0;
}

/* Under the exclusive lock: blobs, layers renamed into place, the index.
 * 1 when a layer this import found in the store has gone meanwhile. */
static int commit_locked(struct job *j, struct store_index *ix)
{
	for (size_t i = 0; i < j->img.nlayers; i++)
		if (!j->ls[i].fresh && !store_layer_present(j->s, j->ls[i].diff)) {
			bool later = false; /* a duplicate of a layer unpacked now */
			for (size_t k = 0; k < j->img.nlayers; k++)
				later |= j->ls[k].fresh && !strcmp(j->ls[k].diff, j->ls[i].diff);
			if (!later)
				return 1;
		}
	if (store_blob_write(j->s, j->img.digest, j->manifest, j->mlen, j->err, j->errlen) < 0 ||
	    store_blob_write(j->s, j->img.config, j->config, j->clen, j->err, j->errlen) < 0)
		return -1;
	for (size_t i = 0; i < j->img.nlayers; i++) {
		if (!j->ls[i].fresh)
			continue;
		char from[32], to[100];
		snprintf(from, sizeof(from), "L%zu", i);
		snprintf(to, sizeof(to), "layers/sha256/%s", j->ls[i].diff);
		/* Taken: an identical layer (same diff_id) another import placed. */
		if (renameat(j->work_fd, from, j->s->dirfd, to) < 0 && errno != EEXIST && errno != ENOTEMPTY)
			return store_failerr(j->err, j->errlen, "cannot move layer %zu into %s/%s", i + 1, j->s->dir,
			                     to);
		store_owners_move(j->work_fd, from, j->s, j->ls[i].diff);
	}
	char points[65]; /* what a sandbox on it needs on top of its layers */
	if (store_points(j->s, points, j->err, j->errlen) < 0)
		return -1;
	if (store_index_put(ix, &j->img) < 0)
		return base_errf(j->err, j->errlen, "out of memory");
	return store_index_save(j->s, ix, j->err, j->errlen);
}

static int commit(struct job *j)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		struct store_index ix;
		if (store_lock(j->s, LOCK_EX, j->err, j->errlen) < 0)
			return -1;
		int rc = store_index_load(j->s, &ix, j->err, j->errlen);
		if (rc == 0) {
			rc = commit_locked(j, &ix);
			/* Whatever happened: what the index does not use goes
			 * (a replaced image's layers, a failed commit's). */
			char e[256] = "";
			if (rc <= 0 && store_gc(j->s, &ix, e, sizeof(e)) < 0 && rc == 0)
				rc = base_errf(j->err, j->errlen, "%s", e);
		}
		store_index_free(&ix);
		store_unlock(j->s);
		if (rc <= 0)
			return rc;
		/* A layer found in the store was removed meanwhile: unpack it. */
		for (size_t i = 0; i < j->img.nlayers; i++)
			if (!j->ls[i].fresh && !store_layer_present(j->s, j->ls[i].diff)) {
				j->bytes -= j->img.layers[i].size;
				j->inodes -= j->img.layers[i].inodes;
				if (unpack_one(j, i) < 0)
					return -1;
			}
	}
	return base_errf(j->err, j->errlen, "the store kept changing under this import: retry");
}

/* ---- JSON from the layout ---- */

/* blobs/sha256/HEX of the layout, read (bounded) and its digest checked. */
static int read_blob(struct job *j, const char *hex, char **buf, size_t *len, const char *what)
{
	char p[100];
	snprintf(p, sizeof(p), "blobs/sha256/%s", hex);
	int fd = store_openat2_beneath(j->lfd, p, O_RDONLY, 0);
	if (fd < 0)
		return store_failerr(j->err, j->errlen, "the OCI layout's %s (sha256:%s)", what, hex);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STORE_JSON_MAX) {
		close(fd);
		return base_errf(j->err, j->errlen,
		                 "the OCI layout's %s (sha256:%s) is not a regular file of at most %u "
		                 "bytes: refused",
		                 what, hex, STORE_JSON_MAX);
	}
	*buf = malloc((size_t)st.st_size + 1);
	ssize_t r = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (r != st.st_size) {
		free(*buf);
		*buf = NULL;
		return store_failerr(j->err, j->errlen, "read the OCI layout's %s", what);
	}
	(*buf)[r] = 0;
	*len = (size_t)r;
	char got[65];
	sha256_buf_hex(*buf, *len, got);
	if (strcmp(got, hex) != 0) {
		free(*buf);
		*buf = NULL;
		return base_errf(j->err, j->errlen,
		                 "the OCI layout's %s has digest sha256:%s, not the sha256:%s it is "
		                 "named by: refused (a corrupt or tampered image)",
		                 what, got, hex);
	}
	return 0;
}

static const char *host_arch(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		return "amd64";
	if (!strcmp(u.machine, "x86_64"))
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	return "unknown";
}

static bool is_index(json_t *m)
{
	const char *mt = json_string_value(json_object_get(m, "mediaType"));
	return json_is_array(json_object_get(m, "manifests")) ||
	       (mt && (strstr(mt, "image.index") || strstr(mt, "manifest.list")));
}

/* From an index's manifests: the one named ref, the only one, or (an
 * image index) the one for this host's platform. */
static int pick(struct job *j, json_t *idx, const char *ref, char hex[65])
{
	json_t *ms = json_object_get(idx, "manifests"), *m, *hit = NULL;
	size_t i, n = 0;
	if (!json_is_array(ms) || !json_array_size(ms))
		return base_errf(j->err, j->errlen, "the OCI layout's index lists no manifest");
	json_array_foreach(ms, i, m)
	{
		const char *name = json_string_value(
			json_object_get(json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
		json_t *pf = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(pf, "os"));
		const char *arch = json_string_value(json_object_get(pf, "architecture"));
		bool match = ref ? name && !strcmp(name, ref)
		                 : !pf || ((!os || !strcmp(os, "linux")) && (!arch || !strcmp(arch, host_arch())));
		if (match) {
			n++;
			if (!hit)
				hit = m;
		}
	}
	if (!hit && ref)
		return base_errf(j->err, j->errlen,
		                 "the OCI layout has no manifest named '%s' "
		                 "(org.opencontainers.image.ref.name)",
		                 ref);
	if (!hit)
		return base_errf(j->err, j->errlen, "the OCI layout has no manifest for linux/%s", host_arch());
	if (n > 1 && !ref && json_array_size(ms) > 1 && !json_object_get(hit, "platform"))
		return base_errf(j->err, j->errlen, "the OCI layout holds %zu manifests: name one (oci:DIR:REF)",
		                 json_array_size(ms));
	if (!store_digest_parse(json_string_value(json_object_get(hit, "digest")), hex))
		return base_errf(j->err, j->errlen, "the OCI layout's manifest descriptor has no sha256 digest");
	return 0;
}

static bool layer_type_ok(const char *mt)
{
	static const char *const ok[] = {
		"application/vnd.oci.image.layer.v1.tar",       "application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.oci.image.layer.v1.tar+zstd",  "application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.diff.tar",
	};
	if (!mt)
		return true;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(mt, ok[i]))
			return true;
	return false;
}

static void set_created(struct job *j, json_t *cfg)
{
	const char *c = json_string_value(json_object_get(cfg, "created"));
	if (c && strlen(c) < sizeof(j->img.created) && strlen(c) >= 10)
		strcpy(j->img.created, c);
	else
		store_now(j->img.created);
}

/* The manifest (already read and checked) and its config: the layers. */
static int from_manifest(struct job *j, json_t *m)
{
	json_t *ls = json_object_get(m, "layers");
	if (!json_is_array(ls) ||
	    !store_digest_parse(json_string_value(json_object_get(json_object_get(m, "config"), "digest")),
	                        j->img.config))
		return base_errf(j->err, j->errlen,
		                 "the image's manifest has no config or layers (or not sha256 ones)");
	size_t n = json_array_size(ls);
	if (n == 0 || n > j->o->max_layers)
		return base_errf(j->err, j->errlen, "the image has %zu layers: ward takes 1 to %u", n,
		                 j->o->max_layers);
	if (read_blob(j, j->img.config, &j->config, &j->clen, "config") < 0)
		return -1;
	json_t *cfg = json_loadb(j->config, j->clen, 0, NULL);
	json_t *ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
	int rc = 0;
	if (!json_is_array(ids) || json_array_size(ids) != n)
		rc = base_errf(j->err, j->errlen, "the image's config lists %zu diff_ids for %zu layers: refused",
		               json_array_size(ids), n);
	j->img.nlayers = n;
	j->ls = rc ? NULL : calloc(n, sizeof(*j->ls));
	j->img.layers = rc ? NULL : calloc(n, sizeof(*j->img.layers));
	if (!rc && (!j->ls || !j->img.layers))
		rc = base_errf(j->err, j->errlen, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_t *l = json_array_get(ls, i);
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		if (!layer_type_ok(mt))
			rc = base_errf(j->err, j->errlen,
			               "layer %zu has media type '%s', which ward does not read (a tar, "
			               "gzip'd or zstd'd)",
			               i + 1, mt);
		else if (!store_digest_parse(json_string_value(json_object_get(l, "digest")), j->ls[i].blob) ||
		         !store_digest_parse(json_string_value(json_array_get(ids, i)), j->ls[i].diff))
			rc = base_errf(j->err, j->errlen, "layer %zu has no sha256 digest or diff_id", i + 1);
	}
	if (rc == 0)
		set_created(j, cfg);
	json_decref(cfg);
	return rc;
}

static int read_layout_file(struct job *j, const char *name, json_t **out)
{
	int fd = store_openat2_beneath(j->lfd, name, O_RDONLY, 0);
	if (fd < 0)
		return store_failerr(j->err, j->errlen, "not an OCI image layout: %s", name);
	char buf[65536];
	char *big = NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STORE_JSON_MAX) {
		close(fd);
		return base_errf(j->err, j->errlen, "the OCI layout's %s is not a file of at most %u bytes", name,
		                 STORE_JSON_MAX);
	}
	char *b = st.st_size < (off_t)sizeof(buf) ? buf : (big = malloc((size_t)st.st_size + 1));
	ssize_t r = b ? read(fd, b, (size_t)st.st_size) : -1;
	close(fd);
	json_error_t je;
	*out = r >= 0 ? json_loadb(b, (size_t)r, 0, &je) : NULL;
	free(big);
	if (!*out)
		return base_errf(j->err, j->errlen, "the OCI layout's %s is not JSON", name);
	return 0;
}

/* An OCI image layout at j->lfd: index.json -> manifest -> config, layers. */
static int from_layout(struct job *j, const char *ref)
{
	json_t *lay = NULL, *idx = NULL, *m = NULL;
	if (read_layout_file(j, "oci-layout", &lay) < 0)
		return -1;
	const char *v = json_string_value(json_object_get(lay, "imageLayoutVersion"));
	int rc = v && !strncmp(v, "1.", 2)
	                 ? 0
	                 : base_errf(j->err, j->errlen, "the OCI layout's version is '%s', not 1.x", v ? v : "(none)");
	json_decref(lay);
	if (rc == 0)
		rc = read_layout_file(j, "index.json", &idx);
	char hex[65];
	if (rc == 0)
		rc = pick(j, idx, ref, hex);
	/* An image index (several platforms) -> the manifest of this host's. */
	for (int depth = 0; rc == 0; depth++) {
		free(j->manifest);
		j->manifest = NULL;
		if ((rc = read_blob(j, hex, &j->manifest, &j->mlen, "manifest")) < 0)
			break;
		json_decref(m);
		m = json_loadb(j->manifest, j->mlen, 0, NULL);
		if (!m) {
			rc = base_errf(j->err, j->errlen, "the image's manifest sha256:%s is not JSON", hex);
			break;
		}
		if (!is_index(m))
			break;
		if (depth >= 2) {
			rc = base_errf(j->err, j->errlen, "the OCI layout's indexes nest too deep");
			break;
		}
		rc = pick(j, m, NULL, hex);
	}
	if (rc == 0) {
		memcpy(j->img.digest, hex, 65);
		rc = from_manifest(j, m);
	}
	json_decref(m);
	json_decref(idx);
	return rc;
}

/* rootfs:FILE: one layer, and a config and manifest made here. */
static int from_rootfs(struct job *j, const struct store_index *ix)
{
	j->img.nlayers = 1;
	j->ls = calloc(1, sizeof(*j->ls));
	j->img.layers = calloc(1, sizeof(*j->img.layers));
	if (!j->ls || !j->img.layers)
		return base_errf(j->err, j->errlen, "out of memory");
	(void)ix;
	if (unpack_one(j, 0) < 0)
		return -1;
	char d[80];
	snprintf(d, sizeof(d), "sha256:%s", j->ls[0].diff);
	store_now(j->img.created);
	json_t *cfg = json_pack("{s:s,s:s,s:s,s:{s:[s]},s:{s:s,s:[s]}}", "created", j->img.created, "architecture",
	                        host_arch(), "os", "linux", "config", "Env",
	                        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "rootfs", "type",
	                        "layers", "diff_ids", d);
	j->config = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(cfg);
	if (!j->config)
		return base_errf(j->err, j->errlen, "out of memory");
	j->clen = strlen(j->config);
	sha256_buf_hex(j->config, j->clen, j->img.config);
	char c[80], l[80];
	snprintf(c, sizeof(c), "sha256:%s", j->img.config);
	snprintf(l, sizeof(l), "sha256:%s", j->ls[0].blob);
	struct stat st;
	if (stat(j->rootfs, &st) < 0)
		return store_failerr(j->err, j->errlen, "rootfs:%s", j->rootfs);
	json_t *m = json_pack("{s:i,s:s,s:{s:s,s:s,s:I},s:[{s:s,s:s,s:I}]}", "schemaVersion", 2, "mediaType",
	                      "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
	                      "application/vnd.oci.image.config.v1+json", "digest", c, "size", (json_int_t)j->clen,
	                      "layers", "mediaType", "application/vnd.oci.image.layer.v1.tar", "digest", l, "size",
	                      (json_int_t)st.st_size);
	j->manifest = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(m);
	if (!j->manifest)
		return base_errf(j->err, j->errlen, "out of memory");
	j->mlen = strlen(j->manifest);
	sha256_buf_hex(j->manifest, j->mlen, j->img.digest);
	return 0;
}

/* ---- sources ---- */

/* "PATH[:REF]": REF when the text after the last ':' has no '/' and the
 * whole is not an existing path. */
static void split_ref(const char *in, char *path, size_t len, const char **ref)
{
	snprintf(path, len, "%s", in);
	*ref = NULL;
	char *c = strrchr(path, ':');
	struct stat st;
	if (c && !strchr(c, '/') && stat(path, &st) < 0) {
		*c = 0;
		*ref = in + (c - path) + 1;
	}
}

/* skopeo copy [ARGS] SOURCE oci:WORK/src:ward */
static int skopeo_copy(struct job *j, const char *source)
{
	char dest[4200];
	snprintf(dest, sizeof(dest), "oci:%s/%s/src:ward", j->s->dir, j->work);
	const char *bin = j->o->skopeo ? j->o->skopeo : "skopeo";
	size_t n = 0;
	char **argv = calloc(j->o->nskopeo_args + 8, sizeof(char *));
	if (!argv)
		return base_errf(j->err, j->errlen, "out of memory");
	argv[n++] = (char *)bin;
	argv[n++] = "copy";
	if (!j->o->progress)
		argv[n++] = "--quiet";
	for (size_t i = 0; i < j->o->nskopeo_args; i++)
		argv[n++] = j->o->skopeo_args[i];
	argv[n++] = (char *)source;
	argv[n++] = dest;
	argv[n] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1); /* ward's stdout stays its own */
	pid_t pid;
	int e = posix_spawnp(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	if (e == ENOENT)
		return base_errf(j->err, j->errlen,
		                 "%s is not installed: apt-get install skopeo (ward reads "
		                 "docker-archive:, containers-storage: and registries through it)",
		                 bin);
	if (e) {
		errno = e;
		return store_failerr(j->err, j->errlen, "cannot run %s", bin);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return store_failerr(j->err, j->errlen, "waitpid %s", bin);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return base_errf(j->err, j->errlen, "skopeo copy %s failed (%s %d): its message is above", source,
		                 WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}

static int open_src_dir(struct job *j)
{
	j->lfd = openat(j->work_fd, "src", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return j->lfd < 0 ? store_failerr(j->err, j->errlen, "open %s/%s/src", j->s->dir, j->work) : 0;
}

/* oci-archive:FILE: the layout's tar unpacked (as hostile as a layer) into WORK/src. */
static int from_oci_archive(struct job *j, const char *file)
{
	int in = open(file, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return store_failerr(j->err, j->errlen, "oci-archive:%s", file);
	int rc = mkdirat(j->work_fd, "src", 0700) < 0 ? store_failerr(j->err, j->errlen, "mkdir") : open_src_dir(j);
	if (rc == 0) {
		struct unpack_opts uo = {.max_bytes = j->o->max_bytes,
		                         .max_inodes = 100000,
		                         .max_stream = j->o->max_bytes + (64u << 20),
		                         .layout = true,
		                         .quiet = j->o->quiet};
		struct unpack_stats st;
		char e[512];
		int dfd = openat(j->lfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		rc = dfd < 0 ? -1 : unpack_layer(in, dfd, &uo, &st, e, sizeof(e));
		if (dfd >= 0)
			close(dfd);
		if (rc < 0)
			base_errf(j->err, j->errlen, "oci-archive:%s: %s", file, dfd < 0 ? "open" : e);
	}
	close(in);
	return rc;
}

static int run_source(struct job *j, const char *source, const struct store_index *ix)
{
	char path[4096];
	const char *ref;
	if (!strncmp(source, "oci:", 4)) {
		split_ref(source + 4, path, sizeof(path), &ref);
		j->lfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (j->lfd < 0)
			return store_failerr(j->err, j->errlen, "oci:%s (an OCI image layout directory)", path);
		return from_layout(j, ref);
	}
	if (!strncmp(source, "oci-archive:", 12)) {
		split_ref(source + 12, path, sizeof(path), &ref);
		if (from_oci_archive(j, path) < 0)
			return -1;
		return from_layout(j, ref);
	}
	if (!strncmp(source, "rootfs:", 7)) {
		j->rootfs = source + 7;
		return from_rootfs(j, ix);
	}
	if (!strncmp(source, "docker-archive:", 15) || !strncmp(source, "containers-storage:", 19) ||
	    !strncmp(source, "docker://", 9) || !strncmp(source, "docker-daemon:", 14) || !strncmp(source, "dir:", 4)) {
		if (skopeo_copy(j, source) < 0 || open_src_dir(j) < 0)
			return -1;
		return from_layout(j, "ward");
	}
	return base_errf(j->err, j->errlen,
	                 "source '%s': give oci:DIR[:REF], oci-archive:FILE, docker-archive:FILE, "
	                 "containers-storage:REF, docker://REF or rootfs:FILE.tar[.gz|.zst]",
	                 source);
}

int ward_image_import(struct ward_image_store *s, const char *name, const char *source,
                      const struct ward_image_import_opts *o, char digest[WARD_IMAGE_DIGEST_LEN], char *err,
                      size_t errlen)
{
	struct ward_image_import_opts def;
	if (!o) {
		ward_image_import_opts_init(&def);
		o = &def;
	}
	struct job j = {.s = s, .o = o, .work_fd = -1, .lfd = -1, .err = err, .errlen = errlen};
	clock_gettime(CLOCK_MONOTONIC, &j.t0);
	if (store_ref_parse(name, j.img.name, j.img.tag, err, errlen) < 0)
		return -1;
	if (store_tmpdir(s, &j.work_fd, j.work, err, errlen) < 0)
		return -1;
	/* What the store has already (layers kept once), read without the
	 * lock held through the unpacking; commit checks again. */
	struct store_index ix = {0};
	int rc = store_lock(s, LOCK_SH, err, errlen);
	if (rc == 0) {
		rc = store_index_load(s, &ix, err, errlen);
		store_unlock(s);
	}
	if (rc == 0)
		rc = run_source(&j, source, &ix);
	if (rc == 0 && !j.rootfs)
		rc = layers(&j, &ix);
	store_index_free(&ix);
	if (rc == 0) {
		j.img.size = j.bytes;
		rc = commit(&j);
	}
	if (rc == 0 && digest)
		snprintf(digest, WARD_IMAGE_DIGEST_LEN, "sha256:%s", j.img.digest);
	if (rc == 0 && o->progress)
		fprintf(stderr, "ward: %s:%s imported: %zu layers, %.1f MiB, %.1f s\n", j.img.name, j.img.tag,
		        j.img.nlayers, (double)j.bytes / 1048576.0, since(&j.t0));
	if (j.lfd >= 0)
		close(j.lfd);
	store_tmpdir_drop(s, j.work_fd, j.work);
	free(j.ls);
	free(j.img.layers);
	free(j.manifest);
	free(j.config);
	return rc;
}

static bool has_transport(const char *ref)
{
	static const char *const t[] = {"docker://", "docker-archive:", "oci:", "oci-archive:", "containers-storage:",
	                                "dir:",      "docker-daemon:"};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strncmp(ref, t[i], strlen(t[i])))
			return true;
	return false;
}

int ward_image_pull_name(const char *ref, char *out, size_t len, char *err, size_t errlen)
{
	const char *r = strstr(ref, "://");
	r = r ? r + 3 : ref;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", r);
	char *at = strchr(buf, '@'), tag[WARD_IMAGE_TAG_MAX + 1] = "latest";
	if (at) {
		char hex[65];
		if (store_digest_parse(at + 1, hex))
			snprintf(tag, sizeof(tag), "%.12s", hex);
		*at = 0;
	}
	char *last = strrchr(buf, '/');
	last = last ? last + 1 : buf;
	char *colon = strchr(last, ':');
	if (colon) {
		if (!at)
			snprintf(tag, sizeof(tag), "%s", colon + 1);
		*colon = 0;
	}
	for (char *p = last; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	int n = snprintf(out, len, "%s:%s", last, tag);
	char nm[WARD_IMAGE_NAME_MAX + 1], tg[WARD_IMAGE_TAG_MAX + 1];
	if (n < 0 || (size_t)n >= len || store_ref_parse(out, nm, tg, err, errlen) < 0)
		return base_errf(err, errlen, "cannot make an image name from '%s': give --name NAME[:TAG]", ref);
	return 0;
}

int ward_image_pull(struct ward_image_store *s, const char *ref, const char *name,
                    const struct ward_image_import_opts *o, char digest[WARD_IMAGE_DIGEST_LEN], char *err,
                    size_t errlen)
{
	char nm[300], src[2048];
	if (!name) {
		if (ward_image_pull_name(ref, nm, sizeof(nm), err, errlen) < 0)
			return -1;
		name = nm;
	}
	if (snprintf(src, sizeof(src), "%s%s", has_transport(ref) ? "" : "docker://", ref) >= (int)sizeof(src))
		return base_errf(err, errlen, "reference too long");
	return ward_image_import(s, name, src, o, digest, err, errlen);
}
