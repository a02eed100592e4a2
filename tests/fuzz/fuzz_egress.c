/* libFuzzer target for the egress proxy's request head (src/system/egress_head.c,
 * SPEC §13): the bytes a sandbox sends to 127.0.0.1:3128.  Each input is
 * what the proxy has read of a connection (at most EGRESS_HEAD_MAX, in a
 * buffer of EGRESS_BUF, as read_head holds it): parse_head, then for a
 * plain request the origin-form head it would send upstream (rewrite_head,
 * with the authority start_upstream makes).  The rewritten head is checked:
 * one request line, the one Host ward set, no field the proxy drops.
 * the parser is system/egress_head.c. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "system/egress.h"
#include "system/egress_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *buf, *out;
	if (!buf && (!(buf = malloc(EGRESS_BUF)) || !(out = malloc(EGRESS_BUF))))
		abort();
	if (size > EGRESS_HEAD_MAX)
		size = EGRESS_HEAD_MAX;
	memcpy(buf, data, size);
	struct head h;
	memset(&h, 0, sizeof(h));
	int code = egress_parse_head(buf, size, &h);
	if (code != 0 && code != 400 && code != 431)
		abort();
	if (code || !h.head_len)
		return 0;
	if (h.head_len > size || !h.host[0] || (h.port == 0 && h.connect) || h.port > 65535)
		abort();
	if (h.connect)
		return 0;
	char authority[300];
	bool v6 = strchr(h.host, ':') != NULL;
	snprintf(authority, sizeof(authority), h.port == 80 ? "%s%s%s" : "%s%s%s:%u", v6 ? "[" : "", h.host,
		 v6 ? "]" : "", h.port);
	size_t n = egress_rewrite_head(buf, &h, authority, out);
	if (!n)
		return 0;
	/* one head, ending where it says; one Host, ward's */
	const char *end = memmem(out, n, "\r\n\r\n", 4);
	if (!end || (size_t)(end - out) + 4 != n)
		abort();
	size_t hosts = 0;
	for (const char *l = out; l < end;) {
		const char *e = memmem(l, (size_t)(end + 2 - l), "\r\n", 2);
		if (!e || memchr(l, '\n', (size_t)(e - l)) || memchr(l, '\r', (size_t)(e - l)))
			abort(); /* a bare CR or LF inside a line */
		if ((size_t)(e - l) >= 5 && strncasecmp(l, "host:", 5) == 0)
			hosts++;
		l = e + 2;
	}
	if (hosts != 1)
		abort();
	return 0;
}
