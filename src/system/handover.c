/* handover.c — encode and decode a sandbox's command.  See handover.h.
 *
 * Layout: a fixed header, then the body:
 *   argv strings, each NUL-terminated (argc of them)
 *   environment strings, each NUL-terminated (envc of them)
 *   collect globs, each NUL-terminated (ncollect of them)
 *   per file: u32 path length, u32 mode, u64 data length, the path and a
 *   NUL, the data.
 * Integers are in the host's byte order: both ends are the same binary.
 * handover_encode runs in the supervisor (it allocates); handover_read runs
 * in PID 1 and must stay syscalls only, into its one mapping.
 */
#define _GNU_SOURCE
#include "system/handover.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/request.h"

#define HO_MAGIC 0x43505357u /* "WSPC" */

struct ho_header {
	uint32_t magic;
	uint32_t flags;
	uint32_t argc, envc;
	uint32_t nfiles, ncollect;
	uint64_t body_len;
	struct ward_limits limits;
};

struct ho_file {
	uint32_t path_len;
	uint32_t mode;
	uint64_t data_len;
};

static size_t count(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

void *handover_encode(const struct handover *h, size_t *len)
{
	size_t argc = count(h->argv), envc = count(h->envp), ncol = count(h->collect);
	if (argc == 0 || argc > HO_MAX_STRINGS || envc > HO_MAX_STRINGS || h->nfiles > WARD_MAX_FILES ||
	    ncol > WARD_MAX_COLLECT_GLOBS)
		return NULL;
	uint64_t body = 0;
	for (size_t i = 0; i < argc; i++)
		body += strlen(h->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		body += strlen(h->envp[i]) + 1;
	for (size_t i = 0; i < ncol; i++)
		body += strlen(h->collect[i]) + 1;
	for (size_t i = 0; i < h->nfiles; i++)
		body += sizeof(struct ho_file) + strlen(h->files[i].path) + 1 + h->files[i].len;
	if (body > HO_MAX_BODY)
		return NULL;

	struct ho_header hdr = {
		.magic = HO_MAGIC,
		.flags = h->flags,
		.argc = (uint32_t)argc,
		.envc = (uint32_t)envc,
		.nfiles = (uint32_t)h->nfiles,
		.ncollect = (uint32_t)ncol,
		.body_len = body,
		.limits = h->limits,
	};
	char *buf = malloc(sizeof(hdr) + body);
	if (!buf)
		return NULL;
	char *p = buf;
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	char *const *lists[3] = {h->argv, h->envp, h->collect};
	size_t ns[3] = {argc, envc, ncol};
	for (int l = 0; l < 3; l++)
		for (size_t i = 0; i < ns[l]; i++) {
			size_t n = strlen(lists[l][i]) + 1;
			memcpy(p, lists[l][i], n);
			p += n;
		}
	for (size_t i = 0; i < h->nfiles; i++) {
		const struct ward_file *f = &h->files[i];
		size_t pl = strlen(f->path);
		struct ho_file fh = {.path_len = (uint32_t)pl, .mode = (uint32_t)f->mode, .data_len = f->len};
		memcpy(p, &fh, sizeof(fh));
		p += sizeof(fh);
		memcpy(p, f->path, pl + 1);
		p += pl + 1;
		if (f->len)
			memcpy(p, f->data, f->len);
		p += f->len;
	}
	*len = sizeof(hdr) + body;
	return buf;
}

/* 0, 1 at end-of-file before any byte, -EPROTO when cut short, -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return got == 0 ? 1 : -EPROTO;
		got += (size_t)n;
	}
	return 0;
}

/* Split count NUL-terminated strings off [*p, end) into v (NULL-terminated). */
static int take_strings(char **v, uint32_t count, char **p, char *end)
{
	for (uint32_t i = 0; i < count; i++) {
		if (*p >= end)
			return -EPROTO;
		size_t n = strnlen(*p, (size_t)(end - *p));
		if (n == (size_t)(end - *p))
			return -EPROTO; /* no NUL before the end */
		v[i] = *p;
		*p += n + 1;
	}
	v[count] = NULL;
	return 0;
}

int handover_read(int fd, struct handover *h)
{
	struct ho_header hdr;
	int r = read_full(fd, &hdr, sizeof(hdr));
	if (r != 0)
		return r;
	if (hdr.magic != HO_MAGIC || hdr.argc == 0 || hdr.argc > HO_MAX_STRINGS || hdr.envc > HO_MAX_STRINGS ||
	    hdr.nfiles > WARD_MAX_FILES || hdr.ncollect > WARD_MAX_COLLECT_GLOBS || hdr.body_len > HO_MAX_BODY)
		return -EPROTO;

	/* One mapping: the pointer arrays, then the body (and a NUL after it,
	 * so that no string can run off the end). */
	size_t ptrs = ((size_t)hdr.argc + 1 + hdr.envc + 1 + hdr.ncollect + 1) * sizeof(char *);
	size_t fls = (size_t)hdr.nfiles * sizeof(struct ward_file);
	size_t total = ptrs + fls + (size_t)hdr.body_len + 1;
	void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	char **argv = mem;
	char **envp = argv + hdr.argc + 1;
	char **collect = envp + hdr.envc + 1;
	struct ward_file *files = (struct ward_file *)((char *)mem + ptrs);
	char *body = (char *)mem + ptrs + fls;
	r = read_full(fd, body, (size_t)hdr.body_len);
	if (r != 0)
		goto bad;
	char *p = body, *end = body + hdr.body_len;
	r = take_strings(argv, hdr.argc, &p, end);
	if (r == 0)
		r = take_strings(envp, hdr.envc, &p, end);
	if (r == 0)
		r = take_strings(collect, hdr.ncollect, &p, end);
	for (uint32_t i = 0; r == 0 && i < hdr.nfiles; i++) {
		struct ho_file fh;
		if ((size_t)(end - p) < sizeof(fh)) {
			r = -EPROTO;
			break;
		}
		memcpy(&fh, p, sizeof(fh));
		p += sizeof(fh);
		if ((uint64_t)(end - p) < (uint64_t)fh.path_len + 1 ||
		    (uint64_t)(end - p) - fh.path_len - 1 < fh.data_len || p[fh.path_len] != 0 ||
		    strnlen(p, fh.path_len) != fh.path_len) {
			r = -EPROTO;
			break;
		}
		files[i].path = p;
		p += fh.path_len + 1;
		files[i].data = (const unsigned char *)p;
		files[i].len = (size_t)fh.data_len;
		files[i].mode = (mode_t)fh.mode;
		p += fh.data_len;
	}
	if (r == 0 && p != end)
		r = -EPROTO; /* trailing bytes: the header lied */
	if (r != 0)
		goto bad;
	h->flags = hdr.flags;
	h->limits = hdr.limits;
	h->argv = argv;
	h->envp = envp;
	h->files = files;
	h->nfiles = hdr.nfiles;
	h->collect = hdr.ncollect ? collect : NULL;
	return 0;
bad:
	munmap(mem, total);
	return r == 1 ? -EPROTO : r;
}
