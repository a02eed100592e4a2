/* libFuzzer target for ward-unzip's writer (libexec/unzip.c), the parser of
 * Judge0's additional_files: `make fuzz` builds build/fuzz_unzip with
 * clang; run it with a corpus directory, e.g.
 *     build/fuzz_unzip -max_total_time=60 build/fuzz-zip-corpus
 * Each input is a zip unpacked beneath a fresh directory, capped at 1 MiB
 * and 200 entries; the process aborts when anything appears beside that
 * directory (a "../", an absolute name, a write through a symlink). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/store.h"
#include "unzip.h"

static int base = -1;
static char dir[] = "/tmp/ward-fuzz-zip.XXXXXX";

/* The directory goes when the run ends (libFuzzer exits through exit()). */
static void cleanup(void)
{
	store_rm_tree(AT_FDCWD, dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (base < 0) {
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
		base = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		mkdirat(base, "outside", 0755);
	}
	mkdirat(base, "work", 0755);
	int dfd = openat(base, "work", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct unzip_caps caps = {.max_bytes = 1 << 20, .max_files = 200, .quiet = true};
	char e[512];
	unzip_into(data, size, dfd, &caps, e, sizeof(e));
	close(dfd);
	int out = openat(base, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(out);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "work") &&
		    strcmp(de->d_name, "outside"))
			abort(); /* written beside the directory */
	if (d)
		closedir(d);
	out = openat(base, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fdopendir(out);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			abort(); /* written outside */
	if (d)
		closedir(d);
	store_rm_tree(base, "work");
	return 0;
}
