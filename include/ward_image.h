/* ward_image.h — libward's image store (SPEC §14): OCI images imported
 * into a content-addressed store on the host, for a sandbox's root.
 *
 * A store is a directory (ward_image_store_default: --image-store DIR,
 * $WARD_IMAGE_STORE, /var/lib/ward/images as root,
 * $XDG_DATA_HOME/ward/images otherwise) holding:
 *
 *     lock                     flock: shared to read the index, exclusive to change it
 *     index.json               NAME:TAG -> manifest digest, config digest, layers (diff_ids,
 *                              sizes), size, created; replaced by write-temp-then-rename
 *     blobs/sha256/HEX         manifests and configs, as imported (digests checked)
 *     layers/sha256/HEX        a layer unpacked (HEX: its diff_id, the sha256 of the
 *                              uncompressed tar), in overlayfs's on-disk format; kept once
 *                              however many images use it
 *     layers/sha256/HEX.owners the layer's entries not owned by 0:0 ("UID GID PATH\0" each),
 *                              which the layer itself does not keep; read by builds
 *     mountpoints/HEX          the layer of mount points ward stacks on top of every image's
 *                              for a sandbox (image/points.c; HEX: the sha256 of what it
 *                              holds), made at import or on first use, gone with the last image
 *     build-cache/KEY/         `ward image build`'s step cache (image/build_cache.c)
 *     pins/HEX                 one lock file per image in use (HEX: its manifest digest)
 *     tmp/RANDOM               an import in progress (flock'd by it); anything unlocked here
 *                              is a crashed import's and is removed when the store is opened
 *
 * The store's directories are root's, 0700.  Unpacked files are owned by the
 * store's owner (root:root when ward runs as root) with their modes kept but
 * setuid, setgid and file capabilities stripped: the sandbox's user reads
 * them through their "other" bits.  Whiteouts are 0:0 character devices and
 * opaque directories carry trusted.overlay.opaque=y (and user.overlay.opaque=y
 * where the filesystem takes user xattrs, for an overlay mounted with
 * userxattr in a user namespace): a runtime mounts overlayfs with the layers
 * as lowerdirs, top first.
 *
 * The import half (ward_image_import, ward_image_pull) reads archives with
 * libarchive and is linked only into ward-net; the rest reads the store with
 * libc and jansson only, so the lean static `ward` can use it.
 *
 * Errors: functions return 0, or -1 with err (errlen bytes) saying what
 * failed and the fix.
 */
#ifndef WARD_IMAGE_H
#define WARD_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API is what libward exports: every other symbol of the library is
 * hidden (built with -fvisibility=hidden, localized in the installed
 * archive; tests/house/symbols.sh checks the set). */
#pragma GCC visibility push(default)

#define WARD_IMAGE_NAME_MAX 128
#define WARD_IMAGE_TAG_MAX 128
#define WARD_IMAGE_DIGEST_LEN 72 /* "sha256:" + 64 hex + NUL, rounded */

/* The default caps of an import (SPEC §14). */
#define WARD_IMAGE_MAX_BYTES (8ULL << 30)
#define WARD_IMAGE_MAX_INODES 1000000ULL
#define WARD_IMAGE_MAX_LAYERS 128U

struct ward_image_store; /* opaque */

/* The store directory this process uses when given none (dir NULL or ""):
 * $WARD_IMAGE_STORE, else /var/lib/ward/images as root, else
 * $XDG_DATA_HOME/ward/images ($HOME/.local/share/ward/images).  Writes it to
 * buf; returns buf, or NULL when it does not fit or no home is known. */
const char *ward_image_store_default(const char *dir, char *buf, size_t len);

/* Opens the store at dir (NULL: the default).  create: make it (0700) when
 * it is missing; otherwise a missing store is an error that names `ward
 * image import`.  Opening removes what crashed imports left in tmp/. */
int ward_image_store_open(const char *dir, bool create, struct ward_image_store **out, char *err, size_t errlen);
void ward_image_store_close(struct ward_image_store *s);
const char *ward_image_store_path(const struct ward_image_store *s);

/* One image as listed (`ward image ls`). */
struct ward_image_info {
	char name[WARD_IMAGE_NAME_MAX + 1];
	char tag[WARD_IMAGE_TAG_MAX + 1];
	char digest[WARD_IMAGE_DIGEST_LEN]; /* the manifest's, "sha256:..." */
	uint64_t size;                      /* bytes unpacked, all layers */
	unsigned layers;
	char created[40]; /* the config's "created", else when it was imported (RFC 3339) */
};

/* Every image, sorted by name and tag; *out is malloc'd (free() it). */
int ward_image_list(struct ward_image_store *s, struct ward_image_info **out, size_t *n, char *err, size_t errlen);

/* The store's totals (`ward doctor`): images, and bytes of the layers on
 * disk (each counted once).  Reads only; a missing store is 0 and 0. */
int ward_image_store_usage(const char *dir, uint64_t *images, uint64_t *bytes, char *err, size_t errlen);

/* An image opened for use.  Opening pins it: `ward image rm` of a pinned
 * image refuses, and its layers stay while it is pinned, even if the name
 * is imported again over it.  Release it when the sandbox using it ends. */
struct ward_image {
	char name[WARD_IMAGE_NAME_MAX + 1];
	char tag[WARD_IMAGE_TAG_MAX + 1];
	char digest[WARD_IMAGE_DIGEST_LEN];
	char config_digest[WARD_IMAGE_DIGEST_LEN];
	char **env; /* the config's Env, "K=V" each; may be empty */
	size_t nenv;
	char **entrypoint;
	size_t nentrypoint;
	char **cmd;
	size_t ncmd;
	char *workdir; /* NULL when the config names none */
	char *user;    /* likewise */
	char **layers; /* absolute paths of the layer directories, bottom first */
	size_t nlayers;
	uint64_t size;
	int pin_fd; /* private: the shared flock on pins/DIGEST */
};

/* Opens NAME[:TAG] (tag "latest" when left out); checks the config's digest
 * and that every layer directory is there.  *out: release with
 * ward_image_release (which drops the pin). */
int ward_image_open(struct ward_image_store *s, const char *name, struct ward_image **out, char *err, size_t errlen);
void ward_image_release(struct ward_image *img);

/* `ward image inspect`: the image as JSON (malloc'd; free() it): name,
 * tag, digest, config digest, size, created, the config ward uses (Env,
 * Entrypoint, Cmd, WorkingDir, User) and the layers (diff_id, size, path). */
char *ward_image_inspect_json(struct ward_image_store *s, const char *name, char *err, size_t errlen);

/* Removes NAME[:TAG], and the layers and blobs no other image (and no pinned
 * image) uses.  Refuses while a sandbox holds the image open: "image NAME is
 * in use by a running sandbox; retry when it ends". */
int ward_image_remove(struct ward_image_store *s, const char *name, char *err, size_t errlen);

/* ---- an image as a sandbox's root ----
 *
 * Its layers merged read-only (overlayfs; one layer: that directory),
 * prepared once and kept as a detached mount, nothing mounted on the host;
 * the image stays pinned while the root is open.  Give it to any number of
 * requests (ward_request.image), from any thread; close it after the last
 * of them has ended.  Needs root (CAP_SYS_ADMIN) for the mount. */
struct ward_image_root;
int ward_image_root_open(const char *store_dir, const char *name, struct ward_image_root **out, char *err,
                         size_t errlen);
void ward_image_root_close(struct ward_image_root *r);
/* The image a root is of: its config (Env, Entrypoint, Cmd), digest, name. */
const struct ward_image *ward_image_root_image(const struct ward_image_root *r);

/* ---- import: linked only where libarchive is (ward-net, libward.a) ---- */

struct ward_image_import_opts {
	uint64_t max_bytes;       /* unpacked bytes, all layers: WARD_IMAGE_MAX_BYTES */
	uint64_t max_inodes;      /* entries, all layers: WARD_IMAGE_MAX_INODES */
	unsigned max_layers;      /* WARD_IMAGE_MAX_LAYERS */
	bool progress;            /* layers, bytes and rate on stderr (the CLI: when it is a terminal) */
	bool quiet;               /* do not name dropped entries on stderr */
	char *const *skopeo_args; /* extra options for skopeo copy (pull; docker-archive:) */
	size_t nskopeo_args;
	const char *skopeo; /* the skopeo binary: NULL for "skopeo" in PATH */
};
void ward_image_import_opts_init(struct ward_image_import_opts *o);

/* Imports SOURCE as NAME[:TAG]: oci:DIR[:REF], oci-archive:FILE,
 * docker-archive:FILE, containers-storage:REF, docker://REF,
 * rootfs:FILE.tar[.gz|.zst].  digest (may be NULL) gets the manifest's
 * digest.  A refused or failed import leaves nothing in the store. */
int ward_image_import(struct ward_image_store *s, const char *name, const char *source,
                      const struct ward_image_import_opts *o, char digest[WARD_IMAGE_DIGEST_LEN], char *err,
                      size_t errlen);

/* `ward image pull REF [--name NAME]`: a skopeo reference (docker:// when it
 * names no transport) through skopeo into an OCI layout, then imported.
 * name NULL: the reference's last path part and its tag (or "latest"; a
 * digest reference: the digest's first 12 hex digits). */
int ward_image_pull(struct ward_image_store *s, const char *ref, const char *name,
                    const struct ward_image_import_opts *o, char digest[WARD_IMAGE_DIGEST_LEN], char *err,
                    size_t errlen);

/* The default name `pull` gives ref, in out (NAME:TAG).  0 or -1. */
int ward_image_pull_name(const char *ref, char *out, size_t len, char *err, size_t errlen);

/* ---- build (SPEC §19): linked only where libarchive is ---- */

/* The default caps of a build. */
#define WARD_BUILD_MAX_LAYER_BYTES (1ULL << 30) /* a step's layer (a RUN's writable layer is a tmpfs this big) */
#define WARD_BUILD_MEMORY_BYTES (2ULL << 30)    /* a RUN's memory, its writes included */
#define WARD_BUILD_TIMEOUT_S 600.0              /* a RUN's wall clock */

struct ward_build_opts {
	const char *context;     /* CONTEXT: COPY and ADD read only beneath it (NULL: no context) */
	char *const *build_args; /* "K=V" (--build-arg) */
	size_t nbuild_args;
	bool no_cache;            /* run every step (the cache is still written) */
	uint64_t max_layer_bytes; /* WARD_BUILD_MAX_LAYER_BYTES */
	uint64_t max_image_bytes; /* WARD_IMAGE_MAX_BYTES */
	uint64_t max_entries;     /* WARD_IMAGE_MAX_INODES: files in one layer, and copied by one COPY */
	uint64_t memory_bytes;    /* WARD_BUILD_MEMORY_BYTES */
	double timeout_s;         /* WARD_BUILD_TIMEOUT_S */
	int progress_fd;          /* one line per step, with its time (-1: none) */
	int output_fd;            /* RUN's output as it comes (-1: kept, and shown when a step fails) */
	/* --net allow (SPEC §13): RUN reaches these names ("pypi.org",
	 * "*.debian.org", "host:port") through ward's egress proxy, and only
	 * them; pins are "NAME:ADDR" (--egress-resolve).  false: no network. */
	bool net_allow;
	const char *const *egress_allow;
	size_t negress_allow;
	const char *const *egress_resolve;
	size_t negress_resolve;
};
void ward_build_opts_init(struct ward_build_opts *o);

struct ward_build_result {
	char digest[WARD_IMAGE_DIGEST_LEN]; /* the image's manifest digest ("" when the build failed) */
	unsigned steps, cached;             /* steps run or taken from the cache; of them cached */
	unsigned layers;
	uint64_t size;
	double seconds;
	unsigned failed_line; /* the Dockerfile line of the step that failed (0: none) */
	int status;           /* its exit status (a RUN) */
	bool timed_out, oom;
	char output[4096]; /* the end of its output */
};

/* `ward image build`: the Dockerfile text (len bytes) built into NAME[:TAG]
 * of store s.  0 and r filled; -1 with err (a refusal, a failed step: r
 * says which and its output).  A failed build lists nothing. */
int ward_image_build(struct ward_image_store *s, const char *name, const char *dockerfile, size_t len,
                     const struct ward_build_opts *o, struct ward_build_result *r, char *err, size_t errlen);
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
