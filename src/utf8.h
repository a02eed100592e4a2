/* utf8.h — make arbitrary bytes valid UTF-8 for the wire. */
#ifndef WARD_UTF8_H
#define WARD_UTF8_H
#include <stddef.h>

/* A malloc'd, NUL-terminated copy of buf[0..len) in which every byte that
 * is not part of a well-formed UTF-8 sequence (overlongs, surrogates and
 * code points past U+10FFFF included) is replaced by U+FFFD.  NUL bytes are
 * kept.  *outlen gets the length.  NULL on allocation failure. */
char *utf8_sanitize(const char *buf, size_t len, size_t *outlen);

#endif
