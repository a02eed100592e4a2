/* egress_head.h — the egress proxy's request head (egress_head.c): parsed
 * and rewritten as pure functions on a buffer, apart from the proxy's loop
 * (egress.c), so that they can be unit-tested and fuzzed alone. */
#ifndef WARD_SYSTEM_EGRESS_HEAD_H
#define WARD_SYSTEM_EGRESS_HEAD_H

#include <stdbool.h>
#include <stddef.h>

/* A request head, as parsed: CONNECT host:port, or a plain request whose
 * absolute http:// target became host, port and an origin-form path. */
struct head {
	char method[16], version[16];
	char host[256];
	unsigned port;
	bool connect;
	const char *path; /* origin form, into the head (plain requests) */
	size_t pathlen;
	const char *fields; /* after the request line */
	size_t head_len;    /* through the blank line */
};

/* host[:port] or [v6][:port] of an authority into host (no brackets) and
 * *port (dflt when absent).  false when malformed. */
bool egress_split_authority(const char *a, size_t n, unsigned dflt, char *host, size_t hostlen, unsigned *port);

/* The request line and fields of the head at b[0..len): 0 with the head
 * complete when h->head_len is set (else more bytes are needed), or an
 * HTTP status to answer (400, 405, 431, 505). */
int egress_parse_head(const char *b, size_t len, struct head *h);

/* A plain request's head in origin form, into out (EGRESS_BUF bytes): the
 * request line, the fields but the hop-by-hop and proxy ones, then Host
 * (authority) and Connection: close.  Its length, or 0 when it does not
 * fit. */
size_t egress_rewrite_head(const char *b, const struct head *h, const char *authority, char *out);

#endif
