/* test_e2b.c — the E2B dialect's parsers of hostile bytes: the multipart
 * body (with a mutation fuzzer: every result bounded, no crash, ASan
 * clean), the path map into /home/user, and Connect's envelope. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"
#include "unit.h"

static const char CT[] = "multipart/form-data; boundary=----formdata-undici-049766883022";
static const char BODY[] = "------formdata-undici-049766883022\r\n"
			   "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a/b.txt\"\r\n"
			   "Content-Type: application/octet-stream\r\n\r\nhello\n\r\n"
			   "------formdata-undici-049766883022\r\n"
			   "Content-Disposition: form-data; name=\"file\"; filename=\"m/%22q%22.txt\"\r\n"
			   "Content-Type: application/octet-stream\r\n\r\n\r\n"
			   "------formdata-undici-049766883022--\r\n";

static void test_multipart(void)
{
	struct mp_part *p = NULL;
	size_t n = 0;
	char err[256];
	int rc = mp_parse(CT, BODY, sizeof(BODY) - 1, 16, &p, &n, err, sizeof(err));
	CHECK("e2b multipart: two parts", rc == 0 && n == 2);
	CHECK("e2b multipart: filename with its directories", rc == 0 && strcmp(p[0].filename, "/home/user/a/b.txt") == 0);
	CHECK("e2b multipart: data", rc == 0 && p[0].len == 6 && memcmp(p[0].data, "hello\n", 6) == 0);
	CHECK("e2b multipart: an empty part is a part", rc == 0 && p[1].len == 0 && strcmp(p[1].name, "file") == 0);
	CHECK("e2b multipart: FormData's %22 undone", rc == 0 && strcmp(p[1].filename, "m/\"q\".txt") == 0);
	mp_free(p, n);
	rc = mp_parse(CT, BODY, sizeof(BODY) - 1, 1, &p, &n, err, sizeof(err));
	CHECK("e2b multipart: more parts than allowed refused", rc < 0 && strstr(err, "more than 1 parts"));
	rc = mp_parse("application/json", BODY, sizeof(BODY) - 1, 16, &p, &n, err, sizeof(err));
	CHECK("e2b multipart: not multipart refused", rc < 0 && strstr(err, "Content-Type"));
	rc = mp_parse(CT, BODY, sizeof(BODY) - 40, 16, &p, &n, err, sizeof(err));
	CHECK("e2b multipart: cut short refused", rc < 0 && strstr(err, "cut short"));
	static const char qb[] = "--q b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n--q b--";
	rc = mp_parse("multipart/form-data; boundary=\"q b\"", qb, sizeof(qb) - 1, 4, &p, &n, err, sizeof(err));
	CHECK("e2b multipart: a quoted boundary, an unquoted name", rc == 0 && n == 1 && strcmp(p[0].name, "x") == 0 &&
									p[0].len == 1);
	if (rc == 0)
		mp_free(p, n);
}

/* BODY in b (room for 64 bytes more) with 1 to 6 mutations: flips,
 * cuts, insertions of the delimiter's bytes.  Its length. */
static size_t mutate(char *b, unsigned *seed)
{
	size_t len = sizeof(BODY) - 1;
	memcpy(b, BODY, len);
	size_t l = len;
	int muts = 1 + (int)(rand_r(seed) % 6);
	for (int m = 0; m < muts; m++) {
		size_t at = rand_r(seed) % l;
		switch (rand_r(seed) % 5) {
		case 0: b[at] = (char)rand_r(seed); break;
		case 1: l = at; break;
		case 2: b[at] = "\r\n-\"=;%"[rand_r(seed) % 7]; break;
		case 3:
			if (l + 2 <= len + 64) {
				memmove(b + at + 2, b + at, l - at);
				memcpy(b + at, "--", 2);
				l += 2;
			}
			break;
		case 4: memset(b + at, '-', (l - at) < 4 ? l - at : 4); break;
		}
		if (!l)
			l = 1;
	}
	return l;
}

/* Mutated bodies: every parse ends, and a part's data lies within the body. */
static void test_multipart_fuzz(void)
{
	char *b = malloc(sizeof(BODY) + 64);
	unsigned seed = 12345, bad = 0, ok = 0;
	for (int i = 0; i < 20000; i++) {
		size_t l = mutate(b, &seed);
		struct mp_part *p = NULL;
		size_t n = 0;
		char err[256];
		if (mp_parse(CT, b, l, 8, &p, &n, err, sizeof(err)) == 0) {
			ok++;
			for (size_t k = 0; k < n; k++)
				if (p[k].data < b || p[k].data + p[k].len > b + l || !p[k].name)
					bad++;
			mp_free(p, n);
		}
	}
	free(b);
	CHECK("e2b multipart fuzz: 20000 mutations parsed or refused, parts within the body", bad == 0 && ok > 0);
}

/* What the stream parser hands on, in order: "P name\n" at a part's
 * start, its data, "E\n" at its end. */
struct seen {
	char buf[4096];
	size_t len;
	bool over;
};

static void seen_add(struct seen *z, const char *p, size_t n)
{
	if (z->len + n > sizeof(z->buf)) {
		z->over = true;
		return;
	}
	memcpy(z->buf + z->len, p, n);
	z->len += n;
}

static int sn_part(void *arg, const char *name, const char *filename)
{
	(void)filename;
	seen_add(arg, "P ", 2);
	seen_add(arg, name, strlen(name));
	seen_add(arg, "\n", 1);
	return 0;
}

static int sn_data(void *arg, const char *p, size_t n)
{
	seen_add(arg, p, n);
	return 0;
}

static int sn_end(void *arg)
{
	seen_add(arg, "E\n", 2);
	return 0;
}

/* The valid body and mutations of it, fed whole (mp_parse) and in random
 * pieces of 1 to 40 bytes (mp_stream): the same verdict, the same parts
 * and bytes, wherever a piece cuts the delimiter. */
static void test_multipart_pieces(void)
{
	char *b = malloc(sizeof(BODY) + 64);
	unsigned seed = 777, differ = 0, ok = 0;
	for (int i = 0; i < 20000; i++) {
		size_t l = i % 4 ? mutate(b, &seed) : sizeof(BODY) - 1; /* a quarter whole, for their parts */
		if (i % 4 == 0)
			memcpy(b, BODY, l);
		struct mp_part *p = NULL;
		size_t n = 0;
		char err[256], err2[256] = "";
		int whole = mp_parse(CT, b, l, 8, &p, &n, err, sizeof(err));
		struct seen want = {0}, got = {0};
		for (size_t k = 0; whole == 0 && k < n; k++) {
			sn_part(&want, p[k].name, NULL);
			seen_add(&want, p[k].data, p[k].len);
			sn_end(&want);
		}
		if (whole == 0)
			mp_free(p, n);
		const struct mp_sink sink = {sn_part, sn_data, sn_end, &got};
		struct mp_stream *ms = mp_stream_new(CT, 8, &sink, err2, sizeof(err2));
		int rc = ms ? 0 : -1;
		for (size_t off = 0; rc == 0 && off < l;) {
			size_t k = 1 + rand_r(&seed) % 40;
			if (k > l - off)
				k = l - off;
			rc = mp_stream_feed(ms, b + off, k, err2, sizeof(err2));
			off += k;
		}
		if (rc == 0)
			rc = mp_stream_finish(ms, err2, sizeof(err2));
		mp_stream_free(ms);
		ok += whole == 0;
		/* a refused body may have handed on parts before its fault */
		if ((whole == 0) != (rc == 0) || (whole == 0 && (got.len != want.len || memcmp(got.buf, want.buf, got.len))))
			differ++;
	}
	free(b);
	CHECK("e2b multipart pieces: 20000 bodies in random pieces parse as they do whole", differ == 0 && ok > 0);
}

/* Every path of the sandbox (SPEC §18): "." and ".." resolved lexically
 * (above / is /), the home named as /work, which it links to. */
static void test_paths(void)
{
	static const struct {
		const char *in, *out;
	} good[] = {{"/home/user/a/b", "/work/a/b"}, {"a/b", "/work/a/b"}, {"/home/user", "/work"}, {"/home/user/", "/work"},
		    {".", "/work"}, {"/home/user/a/../b", "/work/b"}, {"/work/x", "/work/x"}, {"./a//b/./c", "/work/a/b/c"},
		    {"a/..", "/work"}, {"/etc/passwd", "/etc/passwd"}, {"/home/user/../../etc/passwd", "/etc/passwd"},
		    {"../x", "/home/x"}, {"/", "/"}, {"/../../..", "/"}, {"/home/userx/a", "/home/userx/a"},
		    {"/proc/self/root", "/proc/self/root"}, {"/home/user/../user2/x", "/home/user2/x"}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char out[256], err[256];
		bool ok = e2b_map_path(good[i].in, out, sizeof(out), err, sizeof(err));
		CHECK("e2b path: resolved lexically, the home as /work", ok && strcmp(out, good[i].out) == 0);
	}
	static const char *const bad[] = {"a/\x01b", "\x7f", NULL};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char out[256], err[256] = "";
		bool ok = e2b_map_path(bad[i], out, sizeof(out), err, sizeof(err));
		CHECK("e2b path: a control byte or none refused, the reason named", !ok && err[0]);
	}
	char small[8], err[256] = "";
	CHECK("e2b path: too long for the buffer refused", !e2b_map_path("/etc/passwd", small, sizeof(small), err,
									 sizeof(err)) && err[0]);
}

static void test_envelope(void)
{
	char err[256];
	json_t *v = cx_unwrap("\0\0\0\0\x0c{\"path\":\"x\"}", 17, err, sizeof(err));
	CHECK("e2b connect: an envelope unwrapped", v && json_is_string(json_object_get(v, "path")));
	json_decref(v);
	CHECK("e2b connect: a compressed flag refused", !cx_unwrap("\x01\0\0\0\x02{}", 7, err, sizeof(err)));
	CHECK("e2b connect: a length beyond the body refused", !cx_unwrap("\0\xff\xff\xff\xff{}", 7, err, sizeof(err)));
	CHECK("e2b connect: a short body refused", !cx_unwrap("\0\0", 2, err, sizeof(err)));
	CHECK("e2b connect: two messages refused", !cx_unwrap("\0\0\0\0\x02{}\0\0\0\0\x02{}", 14, err, sizeof(err)));
	char *buf = NULL;
	size_t len = 0;
	CHECK("e2b connect: a frame written", cx_frame(&buf, &len, 2, "{}", 2) && len == 7 && buf[0] == 2 && buf[4] == 2);
	free(buf);
	unsigned seed = 7;
	for (int i = 0; i < 5000; i++) {
		char b[32];
		size_t n = rand_r(&seed) % sizeof(b);
		for (size_t k = 0; k < n; k++)
			b[k] = (char)rand_r(&seed);
		if (n > 5 && i % 2)
			b[0] = 0, b[1] = b[2] = b[3] = 0, b[4] = (char)(n - 5);
		json_decref(cx_unwrap(b, n, err, sizeof(err)));
	}
	CHECK("e2b connect: 5000 random envelopes parsed or refused", 1);
}

void test_e2b(void)
{
	test_multipart();
	test_multipart_pieces();
	test_multipart_fuzz();
	test_paths();
	test_envelope();
}
