/* sha256.h — SHA-256 (FIPS 180-4), for the image store's digests.  Its own
 * few lines rather than a crypto library's: the lean static `ward` reads the
 * store too, and links only libc, libseccomp and jansson. */
#ifndef WARD_IMAGE_SHA256_H
#define WARD_IMAGE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t n);
/* Finishes c and writes the digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(struct sha256 *c, char out[65]);
/* The digest of one buffer, as hex. */
void sha256_buf_hex(const void *data, size_t n, char out[65]);

#endif
