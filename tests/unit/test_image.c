/* The image store (src/image/): SHA-256 against FIPS 180-4's vectors, the
 * name rules, the store's C API end to end (import, open pins, rm refuses
 * while pinned), and a deterministic mutation fuzzer of the layer unpacker:
 * whatever the bytes, nothing is written outside the layer, no device but a
 * whiteout and no setuid bit is made (the ASan build runs it too;
 * `make fuzz` builds a libFuzzer target of the same unpacker). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/sha256.h"
#include "image/store.h"
#include "image/unpack.h"
#include "unit.h"
#include "ward_image.h"

static void check_sha256(void)
{
	char h[65];
	sha256_buf_hex("", 0, h);
	CHECK("sha256: empty", !strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	sha256_buf_hex("abc", 3, h);
	CHECK("sha256: abc", !strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_buf_hex(two, strlen(two), h);
	CHECK("sha256: two blocks", !strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
	struct sha256 c;
	sha256_init(&c);
	char a[997];
	memset(a, 'a', sizeof(a));
	size_t left = 1000000;
	for (size_t k = 1; left; k = k % 990 + 7) {
		size_t n = k < left ? k : left;
		sha256_update(&c, a, n);
		left -= n;
	}
	sha256_hex(&c, h);
	CHECK("sha256: a million a's in odd pieces",
	      !strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

static void check_names(void)
{
	char out[4096], e[256], n[WARD_IMAGE_NAME_MAX + 1], t[WARD_IMAGE_TAG_MAX + 1];
	CHECK("clean: absolute made relative", unpack_clean_path("/etc//passwd", out, sizeof(out), e, sizeof(e)) == 0 &&
						       !strcmp(out, "etc/passwd"));
	CHECK("clean: ./ parts dropped", unpack_clean_path("./a/./b/", out, sizeof(out), e, sizeof(e)) == 0 &&
						 !strcmp(out, "a/b"));
	CHECK("clean: root", unpack_clean_path("./", out, sizeof(out), e, sizeof(e)) == 0 && !out[0]);
	CHECK("clean: .. refused", unpack_clean_path("a/../../b", out, sizeof(out), e, sizeof(e)) < 0);
	CHECK("clean: trailing .. refused", unpack_clean_path("a/..", out, sizeof(out), e, sizeof(e)) < 0);
	CHECK("clean: ..name is a name", unpack_clean_path("..a/b..", out, sizeof(out), e, sizeof(e)) == 0);
	char longp[300];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	CHECK("clean: part over NAME_MAX refused", unpack_clean_path(longp, out, sizeof(out), e, sizeof(e)) < 0);
	char deep[1200] = "";
	for (int i = 0; i < 300; i++)
		strcat(deep, "d/");
	CHECK("clean: too deep refused", unpack_clean_path(deep, out, sizeof(out), e, sizeof(e)) < 0);

	CHECK("ref: name only", store_ref_parse("py", n, t, e, sizeof(e)) == 0 && !strcmp(t, "latest"));
	CHECK("ref: name and tag", store_ref_parse("org/py:3.12-slim", n, t, e, sizeof(e)) == 0 &&
					   !strcmp(n, "org/py") && !strcmp(t, "3.12-slim"));
	CHECK("ref: upper case refused", store_ref_parse("Py", n, t, e, sizeof(e)) < 0);
	CHECK("ref: .. refused", store_ref_parse("a/../b", n, t, e, sizeof(e)) < 0);
	CHECK("ref: empty tag refused", store_ref_parse("a:", n, t, e, sizeof(e)) < 0);
	CHECK("ref: absolute refused", store_ref_parse("/a", n, t, e, sizeof(e)) < 0);
	char hex[65];
	CHECK("digest: sha256 only", !store_digest_parse("sha512:00", hex) &&
					     !store_digest_parse("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", hex) &&
					     store_digest_parse("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex));
	char pn[300];
	CHECK("pull name: registry, port, tag", ward_image_pull_name("127.0.0.1:5000/ward/py:3", pn, sizeof(pn), e, sizeof(e)) == 0 &&
							 !strcmp(pn, "py:3"));
	CHECK("pull name: docker://, no tag", ward_image_pull_name("docker://docker.io/library/debian", pn, sizeof(pn), e, sizeof(e)) == 0 &&
						      !strcmp(pn, "debian:latest"));
	CHECK("pull name: digest",
	      ward_image_pull_name("reg/x@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", pn,
				   sizeof(pn), e, sizeof(e)) == 0 &&
		      !strcmp(pn, "x:e3b0c44298fc"));
}

/* ---- a small tar writer, for seeds and the API test ---- */

static size_t tar_entry(uint8_t *buf, const char *name, char type, unsigned mode, const char *link, const char *data,
			size_t len)
{
	uint8_t *h = buf;
	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", mode);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)len);
	snprintf((char *)h + 136, 12, "%011o", 1700000000u);
	h[156] = (uint8_t)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	size_t n = 512;
	if (len) {
		memcpy(buf + n, data, len);
		n += (len + 511) / 512 * 512;
		memset(buf + 512 + len, 0, n - 512 - len);
	}
	return n;
}

static size_t seed_tar(uint8_t *buf)
{
	size_t n = 0;
	n += tar_entry(buf + n, "bin/", '5', 0755, NULL, NULL, 0);
	n += tar_entry(buf + n, "bin/sh", '0', 04755, NULL, "#!x\n", 4);
	n += tar_entry(buf + n, "bin/ln", '1', 0644, "bin/sh", NULL, 0);
	n += tar_entry(buf + n, "bin/s", '2', 0777, "/etc", NULL, 0);
	n += tar_entry(buf + n, "etc/.wh.gone", '0', 0644, NULL, NULL, 0);
	n += tar_entry(buf + n, "opq/.wh..wh..opq", '0', 0644, NULL, NULL, 0);
	n += tar_entry(buf + n, "dev/null", '3', 0666, NULL, NULL, 0);
	n += tar_entry(buf + n, "fifo", '6', 0644, NULL, NULL, 0);
	memset(buf + n, 0, 1024);
	return n + 1024;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int rc = write(fd, buf, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return rc;
}

static void check_api(void)
{
	char dir[] = "/tmp/ward-unit-image.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK("api: mkdtemp", 0);
		return;
	}
	static uint8_t buf[16384];
	size_t n = 0;
	n += tar_entry(buf + n, "hello", '0', 0755, NULL, "hi\n", 3);
	memset(buf + n, 0, 1024);
	n += 1024;
	char tar[256], src[300], store[256], e[512], digest[WARD_IMAGE_DIGEST_LEN];
	snprintf(tar, sizeof(tar), "%s/r.tar", dir);
	snprintf(src, sizeof(src), "rootfs:%s", tar);
	snprintf(store, sizeof(store), "%s/store", dir);
	write_file(tar, buf, n);
	struct ward_image_store *s;
	CHECK("api: store open", ward_image_store_open(store, true, &s, e, sizeof(e)) == 0);
	if (!s)
		return;
	struct ward_image_import_opts o;
	ward_image_import_opts_init(&o);
	o.quiet = true;
	CHECK("api: import rootfs", ward_image_import(s, "r:1", src, &o, digest, e, sizeof(e)) == 0);
	struct ward_image *img = NULL;
	CHECK("api: open", ward_image_open(s, "r:1", &img, e, sizeof(e)) == 0 && img);
	if (img) {
		char p[600];
		snprintf(p, sizeof(p), "%s/hello", img->nlayers ? img->layers[0] : "");
		struct stat st;
		CHECK("api: one layer, absolute, unpacked", img->nlayers == 1 && img->layers[0][0] == '/' &&
								    stat(p, &st) == 0 && st.st_size == 3);
		CHECK("api: digest and PATH", !strcmp(img->digest, digest) && img->nenv == 1 &&
						      !strncmp(img->env[0], "PATH=", 5) && img->size == 3);
		CHECK("api: rm refused while open", ward_image_remove(s, "r:1", e, sizeof(e)) < 0 &&
							    strstr(e, "in use by a running sandbox"));
		ward_image_release(img);
	}
	CHECK("api: rm once released", ward_image_remove(s, "r:1", e, sizeof(e)) == 0);
	struct ward_image_info *v = NULL;
	size_t count = 1;
	CHECK("api: nothing listed", ward_image_list(s, &v, &count, e, sizeof(e)) == 0 && count == 0);
	free(v);
	CHECK("api: open of a missing image says how", ward_image_open(s, "r:1", &img, e, sizeof(e)) < 0 &&
							      strstr(e, "ward image import"));
	ward_image_store_close(s);
	int fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	store_rm_tree(fd, dir + 5);
	close(fd);
}

/* store_gc out of memory: its message is written whatever the caller's
 * buffer held (import.c handed it an uninitialised one, and store_gc said
 * "out of memory" only when that buffer happened to start with a NUL).  In
 * a child, realloc (this program's own, over libc's) fails on demand.
 * Skipped under ASan, whose realloc this one would replace. */
#ifndef __SANITIZE_ADDRESS__
extern void *__libc_realloc(void *p, size_t n);
static volatile int realloc_fails;
void *realloc(void *p, size_t n)
{
	return realloc_fails ? NULL : __libc_realloc(p, n);
}
#endif

static void check_gc_err(void)
{
#ifdef __SANITIZE_ADDRESS__
	printf("PASS: gc: out of memory names itself (skipped under ASan)\n");
#else
	char dir[] = "/tmp/ward-unit-gc.XXXXXX", e[512];
	struct ward_image_store *s = NULL;
	if (!mkdtemp(dir) || ward_image_store_open(dir, true, &s, e, sizeof(e)) < 0) {
		CHECK("gc: store", 0);
		return;
	}
	struct store_layer layer = {.hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
	struct store_image img = {.nlayers = 1, .layers = &layer};
	struct store_index ix = {.v = &img, .n = 1};
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		CHECK("gc: setup", 0);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char msg[256];
		memset(msg, '#', sizeof(msg) - 1); /* (mkdtemp's names may hold an X) */
		msg[sizeof(msg) - 1] = 0;
		realloc_fails = 1;
		int rc = store_gc(s, &ix, msg, sizeof(msg));
		realloc_fails = 0;
		dprintf(p[1], "%d %s", rc, msg);
		_exit(0);
	}
	close(p[1]);
	char out[300] = "";
	ssize_t r = pid > 0 ? read(p[0], out, sizeof(out) - 1) : -1;
	out[r > 0 ? r : 0] = 0;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	CHECK("gc: out of memory fails and names itself, whatever err held",
	      !strncmp(out, "-1 ", 3) && strstr(out, "out of memory") && !strchr(out, '#'));
	ward_image_store_close(s);
	int fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	store_rm_tree(fd, dir + 5);
	close(fd);
#endif
}

/* ---- the fuzzer ---- */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t mutate(uint8_t *b, size_t len, size_t cap)
{
	static const char *const names[] = {"../x", "/etc/passwd", "a/../../b", ".wh.bin", "bin/s/x", ".", "..", "bin/s"};
	int k = 1 + (int)(next_rand() % 4);
	for (int i = 0; i < k; i++) {
		size_t at = len ? next_rand() % len : 0;
		switch (next_rand() % 6) {
		case 0: b[at] = (uint8_t)next_rand(); break;
		case 1: b[at] = "0123456712LKxg5"[next_rand() % 15]; break;
		case 2: { /* a hostile name into a header's name or link field */
			size_t hdr = at / 512 * 512, off = next_rand() % 2 ? 0 : 157;
			const char *nm = names[next_rand() % 8];
			if (hdr + off + strlen(nm) + 1 < len)
				memcpy(b + hdr + off, nm, strlen(nm) + 1);
			break;
		}
		case 3: len = at; break;
		case 4: if (len + 512 < cap) { memmove(b + at + 512, b + at, len - at); len += 512; } break;
		case 5: b[at / 512 * 512 + 156] = "0123567"[next_rand() % 7]; break;
		}
	}
	return len;
}

struct walk {
	int bad;
};

static void walk(int fd, struct walk *w, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (st.st_mode & (S_ISUID | S_ISGID))
			w->bad++;
		if ((S_ISCHR(st.st_mode) && st.st_rdev != makedev(0, 0)) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
			w->bad++;
		if (S_ISDIR(st.st_mode) && depth < 300) {
			int c = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c >= 0)
				walk(c, w, depth + 1);
		}
	}
	closedir(d);
}

static void check_fuzz(void)
{
	char dir[] = "/tmp/ward-unit-fuzz.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK("fuzz: mkdtemp", 0);
		return;
	}
	int base = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	mkdirat(base, "outside", 0755);
	static uint8_t seed[8192], buf[65536];
	size_t seedlen = seed_tar(seed);
	bool root = geteuid() == 0;
	int ok = 0, refused = 0, bad = 0, iters = 1500;
	for (int i = 0; i < iters; i++) {
		memcpy(buf, seed, seedlen);
		size_t n = i == 0 ? seedlen : mutate(buf, seedlen, sizeof(buf));
		int mfd = memfd_create("layer", MFD_CLOEXEC);
		if (mfd < 0 || write(mfd, buf, n) != (ssize_t)n || lseek(mfd, 0, SEEK_SET) != 0) {
			bad++;
			if (mfd >= 0)
				close(mfd);
			continue;
		}
		mkdirat(base, "layer", 0755);
		int dfd = openat(base, "layer", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct unpack_opts o = {.max_bytes = 1 << 20, .max_inodes = 200, .max_stream = 4 << 20, .quiet = true};
		struct unpack_stats st;
		char e[512];
		int rc = unpack_layer(mfd, dfd, &o, &st, e, sizeof(e));
		close(mfd);
		if (rc == 0)
			ok++;
		else
			refused++;
		struct walk w = {0};
		walk(openat(base, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &w, 0);
		int out = openat(base, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *od = out >= 0 ? fdopendir(out) : NULL;
		int entries = 0;
		struct dirent *de;
		while (od && (de = readdir(od)))
			entries += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
		if (od)
			closedir(od);
		/* Without root, whiteouts (mknod) refuse; the walk holds still. */
		bad += w.bad + entries + (i == 0 && rc != 0 && root);
		close(dfd);
		store_rm_tree(base, "layer");
	}
	CHECK("fuzz: unpacker invariants (nothing outside, no device, no setuid)", bad == 0);
	CHECK("fuzz: some mutants unpack", !root || ok > 0);
	CHECK("fuzz: some mutants are refused", refused > 0);
	close(base);
	int fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	store_rm_tree(fd, dir + 5);
	close(fd);
}

void test_image(void)
{
	check_sha256();
	check_names();
	check_api();
	check_gc_err();
	check_fuzz();
}
