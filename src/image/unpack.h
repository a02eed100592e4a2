/* unpack.h — a layer (or an OCI layout's archive) unpacked from hostile
 * bytes into a directory of ward's, never writing outside it.  libarchive
 * reads; ward writes every entry itself beneath the directory's fd
 * (docs/security.md, "Images: the unpack threat model").  ward-net only. */
#ifndef WARD_IMAGE_UNPACK_H
#define WARD_IMAGE_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct unpack_opts {
	uint64_t max_bytes;  /* regular files' bytes this unpack may write; also a file's largest size */
	uint64_t max_inodes; /* entries it may read (each one, restated or not) */
	uint64_t max_stream; /* uncompressed bytes it may read (headers, padding, data) */
	bool layout;         /* an OCI layout's tar (oci-archive:): no whiteouts, nothing dropped silently */
	bool quiet;          /* do not name dropped entries on stderr */
	bool keep_owners;    /* the tar's owners (< 65536) kept: a build's private copy, never the store's */
	bool list_owners;    /* the entries not owned by 0:0 listed in unpack_stats.owners (the store's sidecar) */
	void (*progress)(void *ctx, uint64_t in, uint64_t bytes);
	void *ctx;
};

struct unpack_stats {
	uint64_t in;       /* compressed bytes read */
	uint64_t stream;   /* uncompressed bytes read */
	uint64_t bytes;    /* regular files' bytes written (a sparse file's holes are not) */
	uint64_t inodes;   /* entries read, and directories made for them */
	unsigned dropped;  /* entries dropped (devices, sockets, FIFOs) */
	char blob_hex[65]; /* sha256 of all of the input */
	char diff_hex[65]; /* sha256 of the uncompressed stream (an OCI diff_id) */
	char *owners;      /* list_owners: "UID GID PATH\0" per entry of another owner, in the tar's order (malloc'd) */
	size_t owners_len;
};

/* Reads in_fd (a tar, gzip'd or zstd'd) to its end and unpacks it beneath
 * dest_fd (an empty directory).  0, or -1 with err: what was refused and
 * why.  On -1 dest holds a partial tree the caller removes. */
int unpack_layer(int in_fd, int dest_fd, const struct unpack_opts *o, struct unpack_stats *st, char *err,
                 size_t errlen);

/* An entry's name made relative and plain: leading '/' and "./" parts
 * dropped, '.' parts dropped, ".." refused, at most PATH_MAX bytes and
 * STORE_MAX_DEPTH parts, each at most NAME_MAX.  "" is the layer's root.
 * 0 or -1 with err. */
int unpack_clean_path(const char *in, char *out, size_t outlen, char *err, size_t errlen);

#endif
