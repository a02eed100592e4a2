/* base64.h — RFC 4648 base64 for the wire ("files"/"stdin" with
 * "encoding": "base64"); jansson has none and the format is small enough
 * that a dependency would cost more than it saves. */
#ifndef WARD_BASE64_H
#define WARD_BASE64_H

#include <stddef.h>

/* Decode len characters of standard base64 (padding optional, ASCII
 * whitespace ignored, anything else refused).  Returns a malloc'd buffer
 * (NUL-terminated for convenience, *outlen excludes it), or NULL when the
 * input is not base64 (errno EINVAL) or on allocation failure (ENOMEM). */
unsigned char *base64_decode(const char *in, size_t len, size_t *outlen);

/* Encode len bytes; a malloc'd NUL-terminated string, or NULL (ENOMEM). */
char *base64_encode(const unsigned char *in, size_t len);

#endif
