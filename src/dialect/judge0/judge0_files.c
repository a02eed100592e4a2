/* judge0_files.c — Judge0's additional_files and language 89 (research
 * judge.md §3.3, §3.5, §8.5): a base64 zip unpacked into the program's
 * working directory before its compile and run.
 *
 * Judge0 runs `unzip -n -qq` inside its isolate box.  ward does the same
 * with a program of its own: ward-unzip (libexec/) and the zip are written
 * into a fresh sandbox's /work and it unpacks there, as the sandbox's user,
 * under the sandbox's limits (Judge0's: 2 s CPU + 1 extra, 4 s wall; a
 * file and all of them at most max_extract_size; a /work tmpfs just large
 * enough; a few processes), so that a hostile zip (a bomb, "../", absolute
 * names, symlinks) meets the sandbox, never the host.  Its files come back
 * through files out (SPEC §12: read inside the sandbox, regular files
 * only, no symlink followed, capped) and go into the job as its extra
 * files (ward_judge_job.extra): in /work for the compile and every test,
 * never compiled as sources, the submission's own source winning a clash
 * (unzip -n).  The zip itself never touches the host's disk.
 *
 * Language 89 ("Multi-file program") is the table's bash entry running the
 * zip's `run` script, after its `compile` script when it has one (or
 * run.sh and compile.sh, Judge0 master's names). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dialect/judge0/judge0_int.h"

#define UNZIP_NAME "ward-unzip"
#define UNZIP_MAX_PROG (32u << 20)

static char *const multi_run[] = {"/bin/bash", "run", NULL};

/* The whole of a regular file at path, at most UNZIP_MAX_PROG bytes. */
static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *p = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size <= UNZIP_MAX_PROG &&
	    (p = malloc((size_t)st.st_size))) {
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got != (size_t)st.st_size) {
			free(p);
			p = NULL;
		}
		*len = got;
	}
	close(fd);
	return p;
}

void j0_files_start(struct server *s, struct j0_files *f)
{
	memset(f, 0, sizeof(*f));
	if (!s->o.judge0_additional_files)
		return;
	char self[PATH_MAX], path[PATH_MAX + 16] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%s/" UNZIP_NAME, self);
			f->prog = slurp(path, &f->len);
		}
	}
	if (!f->prog) {
		snprintf(path, sizeof(path), "%s", WARD_LIBEXECDIR "/" UNZIP_NAME);
		f->prog = slurp(path, &f->len);
	}
	if (!f->prog) {
		log_event(s, "judge0-additional-files",
		          "off: " UNZIP_NAME " was found neither beside ward-net nor in " WARD_LIBEXECDIR
		          " (make install puts it there); additional_files are refused");
		return;
	}
	log_event(s, "judge0-additional-files", "on: zips are unpacked inside sandboxes by %s", path);
	const struct ward_language *bash = dialect_lang(s, "bash");
	if (!bash)
		return;
	f->multi = *bash;
	f->multi.id = "multi-file";
	f->multi.display = "Multi-file program";
	f->multi.source_file = "run";
	f->multi.compile = NULL;
	f->multi.run = (char **)multi_run;
	f->multi.artifacts = NULL;
	f->multi_on = true;
}

static const char *has(const struct ward_file *files, size_t n, const char *a, const char *b)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(files[i].path, a))
			return a;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(files[i].path, b))
			return b;
	return NULL;
}

void j0_multi_lang(const struct j0_files *f, const struct ward_file *files, size_t n, struct j0_multi *m)
{
	const char *run = has(files, n, "run.sh", "run"), *compile = has(files, n, "compile.sh", "compile");
	m->lang = f->multi;
	m->run[0] = m->compile[0] = "/bin/bash";
	m->run[1] = (char *)(run ? run : "run"); /* none: bash says so, exit 127, as Judge0's */
	m->compile[1] = (char *)compile;
	m->run[2] = m->compile[2] = NULL;
	m->lang.run = m->run;
	m->lang.compile = compile ? m->compile : NULL;
}

void j0_files_stop(struct j0_files *f)
{
	free(f->prog);
	memset(f, 0, sizeof(*f));
}

/* The first line of a stream, for a message. */
static void first_line(const struct ward_stream *st, char *out, size_t n)
{
	size_t k = st->data ? strcspn(st->data, "\n") : 0;
	snprintf(out, n, "%.*s", (int)(k < 400 ? k : 400), st->data ? st->data : "");
}

int j0_unzip(struct server *s, const struct j0_files *f, const unsigned char *zip, size_t len, struct ward_result *res,
             char *why, size_t n)
{
	char kb[24], files[24];
	snprintf(kb, sizeof(kb), "%u", J0_MAX_EXTRACT_KB);
	snprintf(files, sizeof(files), "%u", J0_MAX_EXTRACT_FILES);
	char *argv[] = {"./.ward-unzip", ".ward-files.zip", kb, files, NULL};
	static char *const all[] = {"**", NULL};
	struct ward_file in[] = {
		{.path = ".ward-unzip", .data = f->prog, .len = f->len, .mode = 0755},
		{.path = ".ward-files.zip", .data = zip, .len = len, .mode = 0644},
	};
	struct ward_request q;
	ward_request_init(&q);
	q.argv = argv;
	q.files = in;
	q.nfiles = 2;
	q.capture = true;
	q.cancel = &s->cancel;
	q.collect = all;
	q.limits = s->o.defaults;
	q.limits.timeout_s = 4;
	q.limits.cpu_s = 3;
	q.limits.memory_mb = 256 < s->o.max.memory_mb ? 256 : s->o.max.memory_mb;
	q.limits.pids = 4 < s->o.max.pids ? 4 : s->o.max.pids;
	q.limits.output_limit = 4096;
	/* a file, and /work (the program, the zip and what it unpacks to, then
	 * a little room): a bomb ends on these even if ward-unzip did not
	 * count */
	q.limits.fsize_mb = J0_MAX_EXTRACT_KB / 1024 + 1;
	uint64_t work_mb = (f->len + len) / (1u << 20) + J0_MAX_EXTRACT_KB / 1024 + 4;
	q.limits.tmp_size_mb = work_mb < s->o.max.tmp_size_mb ? work_mb : s->o.max.tmp_size_mb;
	q.limits.collect_max_files = J0_MAX_EXTRACT_FILES;
	q.limits.collect_max_bytes = (uint64_t)J0_MAX_EXTRACT_KB << 10;
	if (ward_run_pooled(s->pool, &q, res) < 0 || res->status == WARD_ST_ERROR) {
		snprintf(why, n, "additional_files: the sandbox to unpack it in failed: %.300s", res->error);
		return -1;
	}
	char line[420];
	first_line(&res->err, line, sizeof(line));
	if (res->timed_out)
		snprintf(why, n, "additional_files: unpacking took longer than %g s: stopped", q.limits.timeout_s);
	else if (res->oom_killed)
		snprintf(why, n, "additional_files: unpacking passed %llu MB of memory: stopped",
		         (unsigned long long)q.limits.memory_mb);
	else if (res->status != WARD_ST_OK)
		snprintf(why, n, "additional_files: %s",
		         line[0] ? line : "unpacking failed (a file too large, or /work full)");
	else if (res->files_truncated)
		snprintf(why, n, "additional_files: more than %u files or %u KB: stopped", J0_MAX_EXTRACT_FILES,
		         J0_MAX_EXTRACT_KB);
	else
		return 0;
	return -1;
}
