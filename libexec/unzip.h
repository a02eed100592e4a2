/* unzip.h — a zip's entries written beneath a directory (libexec/unzip.c).
 * Run inside a sandbox by ward-unzip (Judge0's additional_files, SPEC §16);
 * the fuzz target (tests/fuzz/fuzz_unzip.c) runs it on the host. */
#ifndef WARD_LIBEXEC_UNZIP_H
#define WARD_LIBEXEC_UNZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct unzip_caps {
	uint64_t max_bytes; /* file bytes written in all */
	unsigned max_files; /* files and directories made */
	bool quiet;         /* no "skipped: ..." lines on stderr */
};

/* Unpack the zip of len bytes at zip beneath the directory dirfd.  0, or
 * -1 with why in err (not a zip, an entry refused, a cap passed); what was
 * written before the failure stays. */
int unzip_into(const void *zip, size_t len, int dirfd, const struct unzip_caps *caps, char *err, size_t errlen);

#endif
