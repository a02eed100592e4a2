/* libFuzzer target for the session handover protocol's reading side
 * (src/system/handover.c): what a sandbox's PID 1 decodes from the pipe.
 * The supervisor writes it, but PID 1 trusts only what decodes within its
 * bounds.  The input is the pipe's bytes (through a memfd); a decoded
 * handover is checked to lie inside its mapping (every string ends, every
 * file's bytes are in it), encoded again and decoded to the same thing.
 * handover.c is included for its header's layout (to unmap what
 * handover_read mapped; PID 1 never unmaps it) and its count(). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "system/handover.c"

static size_t mapping_len(const struct ho_header *hdr)
{
	return ((size_t)hdr->argc + 1 + hdr->envc + 1 + hdr->ncollect + 1) * sizeof(char *) +
	       (size_t)hdr->nfiles * sizeof(struct ward_file) + (size_t)hdr->body_len + 1;
}

static int decode(const void *buf, size_t len, struct handover *h)
{
	int fd = memfd_create("handover", MFD_CLOEXEC);
	if (fd < 0 || (len && write(fd, buf, len) != (ssize_t)len) || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	int rc = handover_read(fd, h);
	close(fd);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct handover h;
	memset(&h, 0, sizeof(h));
	if (decode(data, size, &h) != 0)
		return 0;
	struct ho_header hdr;
	memcpy(&hdr, data, sizeof(hdr));
	const char *lo = (const char *)h.argv, *hi = lo + mapping_len(&hdr);
	size_t sum = 0;
	char **lists[] = {h.argv, h.envp, h.collect};
	for (size_t l = 0; l < 3; l++)
		for (size_t i = 0; lists[l] && lists[l][i]; i++) {
			const char *s = lists[l][i];
			if (s < lo || s >= hi || s + strlen(s) >= hi)
				abort();
			sum += strlen(s);
		}
	for (size_t i = 0; i < h.nfiles; i++) {
		const char *p = h.files[i].path, *d = (const char *)h.files[i].data;
		if (p < lo || p + strlen(p) >= hi || (h.files[i].len && (d < lo || d + h.files[i].len > hi)))
			abort();
	}
	size_t elen;
	void *again = handover_encode(&h, &elen);
	if (again) {
		struct handover h2;
		memset(&h2, 0, sizeof(h2));
		if (decode(again, elen, &h2) != 0 || count(h2.argv) != count(h.argv) ||
		    count(h2.envp) != count(h.envp) || count(h2.collect) != count(h.collect) ||
		    h2.nfiles != h.nfiles || h2.flags != h.flags)
			abort(); /* what ward writes, ward reads back */
		struct ho_header hdr2;
		memcpy(&hdr2, again, sizeof(hdr2));
		munmap(h2.argv, mapping_len(&hdr2));
		free(again);
	}
	(void)sum;
	munmap(h.argv, mapping_len(&hdr));
	return 0;
}
