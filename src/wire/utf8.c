/* utf8.c — replace ill-formed UTF-8 with U+FFFD (Unicode §3.9, "maximal
 * subpart" policy: one replacement per ill-formed prefix).  Bytes in,
 * bytes out: never does I/O. */
#include "wire/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0; /* no overlongs */
		if (c == 0xED)
			hi = 0x9F; /* no surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F; /* nothing past U+10FFFF */
	} else
		return 0;
	if (n < need)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return need;
}

size_t utf8_partial_tail(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = s[n - k];
		if ((c & 0xC0) == 0x80)
			continue; /* a continuation: its lead is further back */
		size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
		if (need <= k)
			return 0; /* ASCII, an invalid byte, or a sequence complete (or ill-formed) here */
		if (k >= 2) {
			unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
			unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
			if (s[n - k + 1] < lo || s[n - k + 1] > hi)
				return 0;
		}
		return k;
	}
	return 0;
}

char *utf8_sanitize(const char *buf, size_t len, size_t *outlen)
{
	/* Worst case: every byte becomes 3 bytes. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	char *out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	const unsigned char *s = (const unsigned char *)buf;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t k = utf8_seq_len(s + i, len - i);
		if (k) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	out[o] = 0;
	if (outlen)
		*outlen = o;
	return out;
}
