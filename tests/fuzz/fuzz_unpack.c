/* libFuzzer target for the layer unpacker (src/image/unpack.c): `make fuzz`
 * builds build/fuzz_unpack with clang; run it as root (whiteouts are device
 * nodes) with a corpus directory, e.g.
 *     build/fuzz_unpack -max_total_time=60 build/fuzz-corpus
 * Each input is a layer (tar, gzip'd or zstd'd) unpacked beneath a fresh
 * directory; the process aborts when anything appears outside it.  The
 * unit tests run a deterministic mutation fuzzer of the same code
 * (tests/unit/test_image.c) on every `make check`. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/store.h"
#include "image/unpack.h"

static int base = -1;
static char dir[] = "/tmp/ward-fuzz.XXXXXX";

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
	int mfd = memfd_create("layer", MFD_CLOEXEC);
	if (mfd < 0 || write(mfd, data, size) != (ssize_t)size || lseek(mfd, 0, SEEK_SET) != 0)
		abort();
	mkdirat(base, "layer", 0755);
	int dfd = openat(base, "layer", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct unpack_opts o = {.max_bytes = 1 << 20, .max_inodes = 500, .max_stream = 8 << 20, .quiet = true};
	struct unpack_stats st;
	char e[512];
	unpack_layer(mfd, dfd, &o, &st, e, sizeof(e));
	close(mfd);
	close(dfd);
	int out = openat(base, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(out);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			abort(); /* written outside the layer */
	if (d)
		closedir(d);
	store_rm_tree(base, "layer");
	return 0;
}
