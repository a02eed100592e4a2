/* base64.c — RFC 4648 base64 (see base64.h): bytes in, bytes out.  Knows
 * no JSON and no ward type; never does I/O. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "wire/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

unsigned char *base64_decode(const char *in, size_t len, size_t *outlen)
{
	unsigned char *out = malloc(len / 4 * 3 + 4);
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	uint32_t acc = 0;
	size_t n = 0, pad = 0, q = 0; /* q: sextets in acc */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = value(c);
		if (v < 0 || pad) /* a data character after padding is malformed */
			goto bad;
		acc = acc << 6 | (uint32_t)v;
		if (++q == 4) {
			out[n++] = (unsigned char)(acc >> 16);
			out[n++] = (unsigned char)(acc >> 8);
			out[n++] = (unsigned char)acc;
			acc = 0;
			q = 0;
		}
	}
	/* q == 1 cannot encode a byte; padding, when given, must complete the quantum */
	if (q == 1 || pad > 2 || (pad && q + pad != 4))
		goto bad;
	if (q == 2) {
		out[n++] = (unsigned char)(acc >> 4);
	} else if (q == 3) {
		out[n++] = (unsigned char)(acc >> 10);
		out[n++] = (unsigned char)(acc >> 2);
	}
	out[n] = 0;
	*outlen = n;
	return out;
bad:
	free(out);
	errno = EINVAL;
	return NULL;
}

char *base64_encode(const unsigned char *in, size_t len)
{
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3) {
		errno = ENOMEM;
		return NULL;
	}
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	size_t n = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[n++] = alphabet[v >> 18 & 63];
		out[n++] = alphabet[v >> 12 & 63];
		out[n++] = alphabet[v >> 6 & 63];
		out[n++] = alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[n++] = alphabet[v >> 18 & 63];
		out[n++] = alphabet[v >> 12 & 63];
		out[n++] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
		out[n++] = '=';
	}
	out[n] = 0;
	return out;
}
