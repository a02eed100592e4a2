/* collect_out.c — `ward run --collect` and `ward session exec --collect`:
 * the files a result brought back, written into --collect-dir on the host.
 * The paths come from the sandbox: each is checked by the path guard again
 * and written beneath the directory by pathguard_write (never through a
 * symlink, never over an existing file). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pathguard.h"
#include "front/cli_args.h"

/* The caller's umask, read without changing it (/proc/self/status's
 * "Umask:", Linux 4.7+); else set and restored at once (ward's front end
 * creates no file on another thread meanwhile). */
static mode_t caller_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned m = 0;
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Umask: %o", &m) == 1;
	if (f)
		fclose(f);
	if (found)
		return (mode_t)(m & 0777);
	mode_t old = umask(022);
	umask(old);
	return old & 0777;
}

/* --collect: the files into --collect-dir (created when missing), each
 * beneath it by the path guard (never through a symlink planted there,
 * never replacing a file: pathguard_write), its permission bits under the
 * caller's umask (a sandbox's 0777 is 0755 under umask 022: what the
 * sandbox asks for never widens what the caller's own files get), never
 * set-id or sticky, always readable and writable by its owner.  A file
 * that cannot be written is named on stderr; the rest still are. */
void cli_write_collected(const struct cli_run *c, const struct ward_result *res)
{
	if (!res->files || !c->collect_dir)
		return; /* no --collect: files a (hostile) runner sent anyway go nowhere */
	if (mkdir(c->collect_dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ward: --collect-dir '%s': %s; give a directory ward may create\n", c->collect_dir,
		        strerror(errno));
		return;
	}
	int dfd = open(c->collect_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "ward: --collect-dir '%s': %s; give a directory\n", c->collect_dir, strerror(errno));
		return;
	}
	/* a runner's list is held to the caller's caps again */
	mode_t mask = caller_umask();
	uint64_t bytes = 0, max_bytes = c->req.limits.collect_max_bytes;
	bool cut = false;
	for (size_t i = 0; i < res->nfiles; i++) {
		const struct ward_collected *f = &res->files[i];
		if (i >= c->req.limits.collect_max_files || f->size > max_bytes - bytes) {
			cut = true;
			continue;
		}
		bytes += f->size;
		int r = pathguard_check(f->path, strlen(f->path), NULL, 0) < 0
		                ? -EINVAL
		                : pathguard_write(dfd, f->path, f->data, f->size, (f->mode & 0777 & ~mask) | 0600);
		if (r < 0)
			fprintf(stderr, "ward: collected file '%s' not written into '%s': %s%s\n", f->path,
			        c->collect_dir, strerror(-r),
			        r == -EEXIST  ? " (ward never replaces a file: give an empty --collect-dir)"
			        : r == -ELOOP ? " (a symlink lies on its way, which ward never follows)"
			                      : "");
	}
	if (res->files_truncated || cut)
		fprintf(stderr,
		        "ward: --collect: not every file came back (a cap was reached: --collect-max-files %u, "
		        "--collect-max-bytes %llu)\n",
		        c->req.limits.collect_max_files, (unsigned long long)c->req.limits.collect_max_bytes);
	close(dfd);
}
