/* utf8.h — make arbitrary bytes valid UTF-8 for the wire (pure: no I/O). */
#ifndef WARD_UTF8_H
#define WARD_UTF8_H
#include <stddef.h>

/* A malloc'd, NUL-terminated copy of buf[0..len) in which every byte that
 * is not part of a well-formed UTF-8 sequence (overlongs, surrogates and
 * code points past U+10FFFF included) is replaced by U+FFFD.  NUL bytes are
 * kept.  *outlen gets the length.  NULL on allocation failure. */
char *utf8_sanitize(const char *buf, size_t len, size_t *outlen);

/* Length of the well-formed sequence at s[0..n) (1 to 4), or 0 when it is
 * ill-formed (n >= 1). */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* How many bytes at the end of s[0..n) (0 to 3) begin a well-formed
 * sequence that the next bytes could complete: what a stream cut into
 * chunks carries over to the next one rather than replace. */
size_t utf8_partial_tail(const unsigned char *s, size_t n);

#endif
