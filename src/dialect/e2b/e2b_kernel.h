/* e2b_kernel.h — a code context's kernel output read into the events
 * /execute streams (e2b_kernel_out.c): every byte of it comes from inside
 * the sandbox, so all of it is hostile, and every bound is here. */
#ifndef WARD_DIALECT_E2B_KERNEL_H
#define WARD_DIALECT_E2B_KERNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"

#define PROTO_LINE_MAX (8u << 20) /* one line of a kernel's protocol (the rest dropped and said) */
#define EVENT_MAX (64u << 10)     /* one stdout/stderr event's text */
#define MARK_MAX 64               /* "\036" TOKEN " " STATUS "\n", and the ready line's head */

/* Reading one kernel: its protocol's partial line (Python, Node) or the
 * raw streams' held-back tails (bash; stderr of all). */
struct kread {
	struct e2b *e;
	struct e2b_sbx *x; /* held */
	struct e2b_ctx *c; /* its run lock held */
	char *pend;        /* the protocol's output not yet a whole line */
	size_t plen;
	uint64_t skipped;          /* bytes of a protocol line past PROTO_LINE_MAX */
	char raw[2][MARK_MAX + 8]; /* a raw stream's tail that may be a marker's or a character's start */
	size_t rlen[2];
	char token[40]; /* bash: this request's marker */
	bool marked[2]; /* bash: each stream's marker seen */
	int status;     /* bash: the cell's exit status */
	bool ready, finished;
	char missing[200]; /* the kernel's __unavailable__ */
};

static inline bool is_bash(const struct e2b_ctx *c)
{
	return strcmp(c->lang, "bash") == 0;
}

/* v as one NDJSON line appended to buf (taken: freed here). */
void kernel_add_line(char **buf, size_t *len, json_t *v);

/* One read of the kernel's output (waiting up to wait_s), its events
 * appended to buf; false when the kernel is gone (died, killed, the sandbox
 * ended), with its exit code in *code when it exited. */
bool kernel_read(struct kread *k, double wait_s, char **buf, size_t *len, int *code);

#endif
