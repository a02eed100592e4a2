/* judge0.h — the Judge0 CE 1.13.1 dialect (SPEC §16): `ward serve --judge0
 * ADDR` speaks Judge0's API over the judge (SPEC §15).  front/dialects.c adds
 * judge0_api's listener; the unit tests use the pure helpers. */
#ifndef WARD_DIALECT_JUDGE0_H
#define WARD_DIALECT_JUDGE0_H

#include <stddef.h>

struct api;
extern const struct api judge0_api;

/* Ruby's Base64.decode64: characters outside the alphabet are skipped, a
 * short tail is dropped.  malloc'd (NUL-terminated), *n its length. */
unsigned char *judge0_b64_lenient(const char *in, size_t len, size_t *n);

#endif
