/* test_collect.c — files out (src/system/collect_walk.c, collect.c): the
 * glob matcher, the walk of a real directory (symlinks, a FIFO, the caps)
 * through a pipe, the decoder against hostile frames, and the globs' trip
 * through the handover. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/request.h"
#include "system/collect_walk.h"
#include "system/handover.h"
#include "unit.h"

void test_collect(void);

static bool gm(const char *g, const char *p)
{
	return collect_glob_match(g, strlen(g), p, strlen(p));
}

static void test_glob(void)
{
	CHECK("glob: a literal name", gm("a.txt", "a.txt") && !gm("a.txt", "b.txt"));
	CHECK("glob: * within a name", gm("*.png", "plot.png") && gm("*.png", ".png") && !gm("*.png", "plot.pngx"));
	CHECK("glob: * never crosses a /", !gm("*.png", "out/plot.png") && !gm("out*", "out/x"));
	CHECK("glob: ? is one character", gm("f?.txt", "f1.txt") && !gm("f?.txt", "f12.txt") && !gm("a?b", "a/b"));
	CHECK("glob: [abc], [a-z], [!x]", gm("[abc]1", "b1") && !gm("[abc]1", "d1") && gm("[a-c]x", "cx") &&
						 gm("[!x]y", "ay") && !gm("[!x]y", "xy"));
	CHECK("glob: an unclosed [ is literal", gm("a[b", "a[b") && !gm("a[b", "ab"));
	CHECK("glob: \\ quotes", gm("a\\*", "a*") && !gm("a\\*", "ab"));
	CHECK("glob: ** alone is every path", gm("**", "a") && gm("**", "a/b/c"));
	CHECK("glob: **/* at any depth", gm("**/*", "a") && gm("**/*", "a/b/c.txt"));
	CHECK("glob: **/x.txt: zero or more directories", gm("**/x.txt", "x.txt") && gm("**/x.txt", "a/b/x.txt") &&
							     !gm("**/x.txt", "a/b/y.txt"));
	CHECK("glob: a/**/b in the middle", gm("a/**/b", "a/b") && gm("a/**/b", "a/x/y/b") && !gm("a/**/b", "c/x/b"));
	CHECK("glob: a/** below a", gm("a/**", "a/x") && !gm("a/**", "b/x"));
	CHECK("glob: components count", gm("out/*.png", "out/p.png") && !gm("out/*.png", "out/sub/p.png") &&
						!gm("out/*.png", "out"));
	CHECK("glob: ** not a whole component is *", gm("a**b", "axxb") && !gm("a**b", "ax/xb"));
	/* a hostile glob backtracks within a bounded budget */
	char g[1100], p[4000];
	strcpy(g, "");
	for (int i = 0; i < 100; i++)
		strcat(g, "**/");
	strcat(g, "z");
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 1000; i++)
		strcat(p, "a/");
	strcat(p, "b");
	CHECK("glob: many ** against a deep path ends (bounded) without a match", !gm(g, p));
	char star[200] = "";
	for (int i = 0; i < 60; i++)
		strcat(star, "*a");
	strcat(star, "b");
	char as[300];
	memset(as, 'a', 250);
	as[250] = 0;
	CHECK("glob: *a*a*a...b against aaaa... ends without a match", !gm(star, as));
	CHECK("glob: may descend into a dir a glob goes below",
	      collect_glob_may_descend("out/*.png", 9, "out", 3) && !collect_glob_may_descend("out/*.png", 9, "src", 3) &&
		      !collect_glob_may_descend("*.png", 5, "out", 3) && collect_glob_may_descend("**/x", 4, "a/b", 3));
}

/* Walk dir for globs into a pipe (a child writes), decode into res. */
static int walk_decode(const char *dir, const char *const *globs, uint32_t files, uint64_t bytes,
		       struct ward_result *res)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int d = open(dir, O_RDONLY | O_DIRECTORY);
		alarm(20);
		_exit(collect_walk(d, globs, files, bytes, p[1]) == 0 ? 0 : 1);
	}
	close(p[1]);
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	ssize_t n;
	while ((n = read(p[0], buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	memset(res, 0, sizeof(*res));
	int r = collect_decode(buf, len, files, bytes, res);
	free(buf);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? r : -1;
}

static bool has(const struct ward_result *r, const char *path, const char *content)
{
	for (size_t i = 0; i < r->nfiles; i++)
		if (!strcmp(r->files[i].path, path))
			return !content ||
			       (r->files[i].size == strlen(content) && !memcmp(r->files[i].data, content, r->files[i].size));
	return false;
}

static void put(const char *dir, const char *rel, const char *content)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(content, f);
		fclose(f);
	}
}

static void test_walk(void)
{
	char dir[] = "/tmp/ward-unit-collect.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK("walk: temp dir", 0);
		return;
	}
	char p[512];
	snprintf(p, sizeof(p), "%s/out", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/out/sub", dir);
	mkdir(p, 0755);
	put(dir, "out/a.png", "AAA");
	put(dir, "out/sub/b.txt", "BB");
	put(dir, "top.png", "T");
	snprintf(p, sizeof(p), "%s/out/link", dir);
	(void)!symlink("/etc/passwd", p);
	snprintf(p, sizeof(p), "%s/out/dirlink", dir);
	(void)!symlink("/etc", p);
	snprintf(p, sizeof(p), "%s/out/fifo", dir);
	mkfifo(p, 0644);
	struct ward_result r;
	const char *all[] = {"out/", NULL};
	CHECK("walk: out/ walks (a FIFO in it does not block)", walk_decode(dir, all, 64, 1 << 20, &r) == 0);
	CHECK("walk: out/ takes the files below it, byte for byte",
	      r.nfiles == 2 && has(&r, "out/a.png", "AAA") && has(&r, "out/sub/b.txt", "BB"));
	CHECK("walk: symlinks and the FIFO skipped", !has(&r, "out/link", NULL) && !has(&r, "out/fifo", NULL) &&
							      !has(&r, "out/dirlink/passwd", NULL));
	CHECK("walk: not truncated", !r.files_truncated);
	ward_result_free(&r);
	const char *png[] = {"**/*.png", NULL};
	walk_decode(dir, png, 64, 1 << 20, &r);
	CHECK("walk: **/*.png", r.nfiles == 2 && has(&r, "top.png", "T") && has(&r, "out/a.png", "AAA"));
	ward_result_free(&r);
	const char *every[] = {"**", NULL};
	walk_decode(dir, every, 1, 1 << 20, &r);
	CHECK("walk: max_files 1: one file, truncated", r.nfiles == 1 && r.files_truncated);
	ward_result_free(&r);
	walk_decode(dir, every, 64, 3, &r);
	CHECK("walk: max_bytes 3: at most 3 bytes, truncated", r.files_truncated && r.nfiles >= 1 &&
								       r.files[0].size + (r.nfiles > 1 ? r.files[1].size : 0) <= 3);
	ward_result_free(&r);
	const char *lnk[] = {"out/dirlink/", "out/dirlink/passwd", NULL};
	walk_decode(dir, lnk, 64, 1 << 20, &r);
	CHECK("walk: a glob through a symlinked directory takes nothing", r.nfiles == 0 && !r.files_truncated);
	ward_result_free(&r);
	/* a hostile glob (twelve "**" components) against many deep paths, which
	 * make it backtrack: the walk's step budget stops it (truncated)
	 * instead of letting it run on */
	char deep[400];
	snprintf(deep, sizeof(deep), "%s/deep", dir);
	mkdir(deep, 0755);
	for (int i = 0; i < 20; i++) {
		strcat(deep, "/d");
		mkdir(deep, 0755);
	}
	for (int i = 0; i < 3000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		put(deep, name, "");
	}
	static char hostile[200];
	hostile[0] = 0;
	for (int i = 0; i < 12; i++)
		strcat(hostile, "**/");
	strcat(hostile, "z");
	const char *hg[] = {hostile, NULL};
	CHECK("walk: a hostile glob over 3000 deep paths ends", walk_decode(dir, hg, 64, 1 << 20, &r) == 0);
	CHECK("walk: ... stopped by its step budget: nothing, truncated", r.nfiles == 0 && r.files_truncated);
	ward_result_free(&r);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK("walk: cleanup", system(cmd) == 0);
}

static void test_decode_hostile(void)
{
	struct ward_result r;
	struct {
		struct collect_frame f;
		char path[8];
	} bad = {{.kind = 'F', .path_len = 5, .mode = 0644, .size = 0}, "../ab"};
	memset(&r, 0, sizeof(r));
	collect_decode(&bad, sizeof(bad.f) + 5, 64, 100, &r);
	CHECK("decode: a path with .. is dropped", r.nfiles == 0 && r.files_truncated);
	ward_result_free(&r);
	struct collect_frame huge = {.kind = 'F', .path_len = 1, .size = 1ull << 40};
	memset(&r, 0, sizeof(r));
	collect_decode(&huge, sizeof(huge), 64, 100, &r);
	CHECK("decode: a size beyond the stream is refused", r.nfiles == 0 && r.files_truncated);
	ward_result_free(&r);
	memset(&r, 0, sizeof(r));
	collect_decode("", 0, 64, 100, &r);
	CHECK("decode: no end frame: an empty list, truncated", r.files && r.nfiles == 0 && r.files_truncated);
	ward_result_free(&r);
}

static void test_handover_globs(void)
{
	char *argv[] = {"true", NULL};
	char *envp[] = {NULL};
	char *globs[] = {"*.png", "out/", NULL};
	struct handover h = {.argv = argv, .envp = envp, .collect = globs};
	size_t len;
	char *buf = handover_encode(&h, &len);
	int p[2];
	struct handover got;
	memset(&got, 0, sizeof(got));
	int r = -1;
	if (buf && pipe(p) == 0 && len < 65536) {
		(void)!write(p[1], buf, len);
		close(p[1]);
		r = handover_read(p[0], &got);
		close(p[0]);
	}
	free(buf);
	CHECK("handover: the collect globs arrive", r == 0 && got.collect && !strcmp(got.collect[0], "*.png") &&
							    !strcmp(got.collect[1], "out/") && !got.collect[2]);
}

void test_collect(void)
{
	test_glob();
	test_walk();
	test_decode_hostile();
	test_handover_globs();
}
