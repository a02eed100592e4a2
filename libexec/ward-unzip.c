/* ward-unzip — unpacks a zip into the current directory, inside a sandbox.
 *
 *     ward-unzip ZIP MAX_KB MAX_FILES
 *
 * Judge0's additional_files (SPEC §16): ward serve writes this program and
 * the zip into a fresh sandbox's /work and runs it there, under that
 * sandbox's limits, so that a hostile zip meets the sandbox and never the
 * host; the files it leaves come back through files out (SPEC §12).  It
 * removes itself and the zip first, so that only the zip's files are left.
 * Exit 0, or 1 with one line on stderr saying why (unzip.c). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unzip.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: ward-unzip ZIP MAX_KB MAX_FILES\n");
		return 2;
	}
	struct unzip_caps caps = {.max_bytes = strtoull(argv[2], NULL, 10) << 10,
	                          .max_files = (unsigned)strtoul(argv[3], NULL, 10)};
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "ward-unzip: cannot open %s: %m\n", argv[1]);
		return 1;
	}
	void *zip = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : (void *)"";
	if (zip == MAP_FAILED) {
		fprintf(stderr, "ward-unzip: cannot map %s: %m\n", argv[1]);
		return 1;
	}
	close(fd);
	/* the mapping and the running image hold the bytes: the names can go */
	unlink(argv[1]);
	if (strchr(argv[0], '/'))
		unlink(argv[0]);
	int dir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char err[512];
	if (dir < 0 || unzip_into(zip, (size_t)st.st_size, dir, &caps, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", dir < 0 ? "ward-unzip: cannot open the current directory" : err);
		return 1;
	}
	return 0;
}
