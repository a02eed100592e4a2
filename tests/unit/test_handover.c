/* test_handover.c — the command a sandbox's PID 1 receives (src/system/handover.c):
 * a round trip through a real pipe, and hostile or broken bytes that must
 * be refused (PID 1 trusts only what decodes within its bounds). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "system/handover.h"
#include "unit.h"

void test_handover(void);

/* Feed len bytes of buf through a pipe (in a child when large) and decode. */
static int through_pipe(const void *buf, size_t len, struct handover *h)
{
	int p[2];
	if (pipe(p) < 0)
		return -999;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		size_t off = 0;
		while (off < len) {
			ssize_t n = write(p[1], (const char *)buf + off, len - off);
			if (n <= 0)
				_exit(1);
			off += (size_t)n;
		}
		_exit(0);
	}
	close(p[1]);
	int r = handover_read(p[0], h);
	close(p[0]);
	waitpid(pid, NULL, 0);
	return r;
}

/* The header's first fields, as handover.c lays them out (the limits follow). */
struct raw_header {
	uint32_t magic, flags, argc, envc, nfiles, reserved;
	uint64_t body_len;
};

static void test_round_trip(void)
{
	char *argv[] = {"python3", "-c", "print('a b')", "", NULL};
	char *envp[] = {"PATH=/usr/bin", "EMPTY=", "X=multi\nline", NULL};
	unsigned char bin[300];
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)i; /* NULs included */
	struct ward_file files[] = {
		{.path = "main.py", .data = (const unsigned char *)"print(1)\n", .len = 9, .mode = 0644},
		{.path = "dir/data.bin", .data = bin, .len = sizeof(bin), .mode = 0600},
		{.path = "empty", .data = NULL, .len = 0, .mode = 0},
	};
	struct ward_request q;
	ward_request_init(&q);
	q.limits.memory_mb = 123;
	struct handover in = {.flags = HO_STDIN_PIPE | HO_REPORT,
			      .limits = q.limits,
			      .argv = argv,
			      .envp = envp,
			      .files = files,
			      .nfiles = 3};
	size_t len = 0;
	char *buf = handover_encode(&in, &len);
	CHECK("handover: encodes", buf && len > 0);
	if (!buf)
		return;
	struct handover out;
	memset(&out, 0, sizeof(out));
	int r = through_pipe(buf, len, &out);
	CHECK("handover: decodes what it encoded", r == 0);
	if (r == 0) {
		CHECK("handover: flags", out.flags == (HO_STDIN_PIPE | HO_REPORT));
		CHECK("handover: limits", out.limits.memory_mb == 123 && out.limits.timeout_s == q.limits.timeout_s);
		int ok = 1;
		for (int i = 0; i < 4; i++)
			ok &= out.argv[i] && strcmp(out.argv[i], argv[i]) == 0;
		CHECK("handover: argv, an empty argument included", ok && out.argv[4] == NULL);
		ok = 1;
		for (int i = 0; i < 3; i++)
			ok &= out.envp[i] && strcmp(out.envp[i], envp[i]) == 0;
		CHECK("handover: environment", ok && out.envp[3] == NULL);
		CHECK("handover: three files", out.nfiles == 3);
		CHECK("handover: text file", out.nfiles == 3 && strcmp(out.files[0].path, "main.py") == 0 &&
						     out.files[0].len == 9 &&
						     memcmp(out.files[0].data, "print(1)\n", 9) == 0);
		CHECK("handover: binary file with NULs, and its mode",
		      out.nfiles == 3 && out.files[1].len == sizeof(bin) &&
			      memcmp(out.files[1].data, bin, sizeof(bin)) == 0 && out.files[1].mode == 0600);
		CHECK("handover: empty file", out.nfiles == 3 && out.files[2].len == 0 &&
						      strcmp(out.files[2].path, "empty") == 0);
	}

	/* A large body (files bigger than a pipe's buffer) streams through. */
	size_t big = 3u << 20;
	unsigned char *data = malloc(big);
	if (data) {
		for (size_t i = 0; i < big; i++)
			data[i] = (unsigned char)(i * 7);
		struct ward_file f = {.path = "big", .data = data, .len = big};
		struct handover hb = {.argv = argv, .envp = envp, .files = &f, .nfiles = 1};
		size_t blen;
		char *bb = handover_encode(&hb, &blen);
		memset(&out, 0, sizeof(out));
		r = bb ? through_pipe(bb, blen, &out) : -1;
		CHECK("handover: a 3 MiB file arrives whole", r == 0 && out.nfiles == 1 && out.files[0].len == big &&
								 memcmp(out.files[0].data, data, big) == 0);
		free(bb);
		free(data);
	}

	/* Every truncation of a valid handover is refused, never accepted. */
	int all_refused = 1;
	for (size_t cut = 1; cut < len; cut += (cut < 64 ? 1 : 37)) {
		memset(&out, 0, sizeof(out));
		if (through_pipe(buf, cut, &out) != -EPROTO)
			all_refused = 0;
	}
	CHECK("handover: every truncation is refused (-EPROTO)", all_refused);

	/* Trailing bytes after the body: the header lied about the length. */
	char *longer = malloc(len + 5);
	if (longer) {
		memcpy(longer, buf, len);
		memcpy(longer + len, "junk", 5);
		struct raw_header h;
		memcpy(&h, longer, sizeof(h));
		h.body_len += 5;
		memcpy(longer, &h, sizeof(h));
		memset(&out, 0, sizeof(out));
		CHECK("handover: refuses bytes beyond the last field", through_pipe(longer, len + 5, &out) == -EPROTO);
		free(longer);
	}
	free(buf);
}

static void hostile_header(const char *name, void (*edit)(struct raw_header *), int want)
{
	char *argv[] = {"true", NULL};
	char *envp[] = {NULL};
	struct handover in = {.argv = argv, .envp = envp};
	size_t len;
	char *buf = handover_encode(&in, &len);
	if (!buf) {
		CHECK(name, 0);
		return;
	}
	struct raw_header h;
	memcpy(&h, buf, sizeof(h));
	edit(&h);
	memcpy(buf, &h, sizeof(h));
	struct handover out;
	memset(&out, 0, sizeof(out));
	int r = through_pipe(buf, len, &out);
	char label[160];
	snprintf(label, sizeof(label), "handover: refuses %s", name);
	CHECK(label, r == want);
	free(buf);
}

static void bad_magic(struct raw_header *h) { h->magic ^= 1; }
static void no_argv(struct raw_header *h) { h->argc = 0; }
static void huge_argc(struct raw_header *h) { h->argc = 0xffffffffu; }
static void huge_envc(struct raw_header *h) { h->envc = HO_MAX_STRINGS + 1; }
static void huge_files(struct raw_header *h) { h->nfiles = 1u << 30; }
static void huge_body(struct raw_header *h) { h->body_len = (uint64_t)1 << 62; }
static void more_argv(struct raw_header *h) { h->argc = 2; } /* strings run out */
static void phantom_file(struct raw_header *h) { h->nfiles = 1; }

static void test_hostile(void)
{
	hostile_header("a wrong magic number", bad_magic, -EPROTO);
	hostile_header("an empty argv", no_argv, -EPROTO);
	hostile_header("argc of 2^32-1", huge_argc, -EPROTO);
	hostile_header("too many environment strings", huge_envc, -EPROTO);
	hostile_header("2^30 files", huge_files, -EPROTO);
	hostile_header("a body of 2^62 bytes", huge_body, -EPROTO);
	hostile_header("more strings than the body holds", more_argv, -EPROTO);
	hostile_header("a file the body does not hold", phantom_file, -EPROTO);

	struct handover out;
	memset(&out, 0, sizeof(out));
	CHECK("handover: end-of-file before any byte means 'discarded' (1)", through_pipe("", 0, &out) == 1);

	/* A file record whose lengths overflow when added. */
	char *argv[] = {"true", NULL};
	char *envp[] = {NULL};
	struct ward_file f = {.path = "a", .data = (const unsigned char *)"xy", .len = 2};
	struct handover in = {.argv = argv, .envp = envp, .files = &f, .nfiles = 1};
	size_t len;
	char *buf = handover_encode(&in, &len);
	if (buf) {
		/* the record sits after the header and "true\0" */
		size_t rec = sizeof(struct raw_header) + sizeof(struct ward_limits) + 5;
		uint64_t evil = UINT64_MAX - 1;
		memcpy(buf + rec + 8, &evil, sizeof(evil));
		memset(&out, 0, sizeof(out));
		CHECK("handover: refuses a file length that wraps around", through_pipe(buf, len, &out) == -EPROTO);
		uint32_t pl = 0xfffffff0u;
		memcpy(buf + rec + 8, &(uint64_t){2}, sizeof(uint64_t));
		memcpy(buf + rec, &pl, sizeof(pl));
		memset(&out, 0, sizeof(out));
		CHECK("handover: refuses a path longer than the body", through_pipe(buf, len, &out) == -EPROTO);
		pl = 0; /* path "" but the byte after is 'a', not NUL */
		memcpy(buf + rec, &pl, sizeof(pl));
		memset(&out, 0, sizeof(out));
		CHECK("handover: refuses a path without its NUL", through_pipe(buf, len, &out) == -EPROTO);
		free(buf);
	}

	char *no_args[] = {NULL};
	CHECK("handover: will not encode an empty argv", !handover_encode(&(struct handover){.argv = no_args,
											 .envp = no_args},
									 &len));
}

void test_handover(void)
{
	test_round_trip();
	test_hostile();
}
