/* libFuzzer target for E2B's multipart uploads
 * (src/dialect/e2b/e2b_multipart.c, POST /files): the input is the
 * request's Content-Type, a NUL, then its body (no NUL: a fixed boundary's
 * type and the whole input as the body).  Every part found lies inside the
 * body, and has a name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1); /* a copy the parser cannot read beyond unseen */
	if (!in)
		abort();
	memcpy(in, data, size);
	in[size] = 0;
	const char *ctype = "multipart/form-data; boundary=b", *body = in;
	size_t len = size;
	char *nul = memchr(in, 0, size);
	if (nul) {
		ctype = in;
		body = nul + 1;
		len = size - (size_t)(body - in);
	}
	char *copy = malloc(len ? len : 1); /* the body alone, bounded exactly */
	if (!copy)
		abort();
	memcpy(copy, body, len);
	struct mp_part *p = NULL;
	size_t n = 0;
	char err[512];
	if (mp_parse(ctype, copy, len, 16, &p, &n, err, sizeof(err)) == 0) {
		if (n > 16)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!p[i].name || p[i].data < copy || p[i].data + p[i].len > copy + len)
				abort();
		mp_free(p, n);
	}
	free(copy);
	free(in);
	return 0;
}
