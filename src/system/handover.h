/* handover.h — what a sandbox learns only when its request comes: the
 * command's argv and environment, its rlimits, the files to write into
 * /work, the globs of the files to collect from it afterwards and how its
 * stdio is wired.
 *
 * Every system-level run hands these over the same way: the supervisor
 * encodes them and writes them into a pipe that the sandbox's PID 1 reads
 * once its root is built.  That is what lets `ward serve --pool` build
 * sandboxes before any request exists; a run without a pool sends the same
 * bytes right after the clone.
 *
 * The supervisor side may allocate; the PID 1 side (handover_read) uses
 * only syscalls and decodes into one anonymous mapping, because PID 1 is a
 * clone of a multi-threaded process.  This file is the only one that knows
 * the layout.
 */
#ifndef WARD_HANDOVER_H
#define WARD_HANDOVER_H

#include <stddef.h>

#include "ward.h"

enum {
	HO_STDIN_PIPE = 1, /* fd 0 is the stdin pipe (else /dev/null) */
	HO_REPORT = 4,     /* fd 3 is the report channel */
	HO_WITH_AS = 8,    /* no memory cgroup: RLIMIT_AS stands in */
};

/* Bounds a decoder enforces whatever the encoder says. */
#define HO_MAX_BODY (64u << 20)
#define HO_MAX_STRINGS 65536u

struct handover {
	unsigned flags;
	struct ward_limits limits;
	char **argv; /* NULL-terminated, at least one entry */
	char **envp; /* NULL-terminated */
	struct ward_file *files;
	size_t nfiles;
	char **collect; /* files out's globs, NULL-terminated; NULL = none */
};

/* Encode h into a malloc'd buffer; its length in *len.  NULL when out of
 * memory or when it would exceed the bounds above. */
void *handover_encode(const struct handover *h, size_t *len);

/* Read one handover from fd (blocking) into a fresh private mapping that
 * h's pointers point into; the mapping lives as long as the process.
 * 0 on success; 1 when fd reached end-of-file before the first byte (the
 * supervisor discarded this sandbox); -EPROTO for anything malformed or
 * truncated; other -errno for a failed read or mmap.  Only syscalls. */
int handover_read(int fd, struct handover *h);

#endif
