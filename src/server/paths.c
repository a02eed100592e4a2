/* paths.c — --allow-root and the host paths a request names (workdir,
 * mounts, rootfs), held open from the check to the end of the run.
 *
 * Owns s->roots and a request's held descriptors (r->held): the only place
 * that opens a request's host path.  Never follows a symlink, never leaves
 * an --allow-root, and never hands the run a path to look up again where a
 * descriptor can be bound instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/server.h"

/* workdir, mounts and rootfs name host paths: each must lie under an
 * --allow-root, reached from the root's fd without following any symlink
 * and without leaving it (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so
 * neither "..", nor a symlink planted inside the root, leads outside. */
static int check_allowed(struct server *s, const char *path, const char *field, int *held, char *err, size_t errlen)
{
	if (s->nroots == 0) {
		snprintf(err, errlen, "%s: this runner allows no host paths (start it with --allow-root DIR)", field);
		return -1;
	}
	if (path[0] != '/') {
		snprintf(err, errlen, "%s: '%s' must be an absolute host path", field, path);
		return -1;
	}
	for (size_t i = 0; i < s->nroots; i++) {
		const struct root *rt = &s->roots[i];
		const char *rel;
		if (strcmp(rt->path, "/") == 0)
			rel = path + 1;
		else if (strncmp(path, rt->path, rt->len) == 0 && (path[rt->len] == '/' || path[rt->len] == 0))
			rel = path + rt->len + (path[rt->len] == '/');
		else
			continue;
		while (*rel == '/')
			rel++;
		struct open_how how = {
			.flags = O_PATH | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, rt->fd, *rel ? rel : ".", &how, sizeof(how));
		if (fd >= 0) {
			*held = fd;
			return 0;
		}
		const char *why = errno == ENOENT    ? "does not exist"
		                  : errno == ELOOP   ? "passes through a symlink, which is refused"
		                  : errno == EXDEV   ? "leads outside its --allow-root"
		                  : errno == ENOTDIR ? "has a component that is not a directory"
		                                     : strerror(errno);
		snprintf(err, errlen, "%s: '%s' %s", field, path, why);
		return -1;
	}
	snprintf(err, errlen, "%s: '%s' is not under any --allow-root of this runner", field, path);
	return -1;
}

/* Check *path against the --allow-roots and keep the directory it names
 * open; the run then binds that descriptor ("/proc/self/fd/N"): as root the
 * supervisor clones it, else the sandbox's PID 1 binds its path only while
 * it is still that inode (plan_pin_held), and what a rootfs holds is found
 * beneath it without a symlink.  A rename or a symlink swapped in after the
 * check changes nothing.  (The application level, which binds nothing and
 * gives no isolation, keeps the path: its command could read anything the
 * service can anyway.) */
static int hold_path(struct server *s, struct req *r, const char **path, const char *field, char *err, size_t errlen)
{
	int fd = -1;
	if (check_allowed(s, *path, field, &fd, err, errlen) < 0)
		return -1;
	struct held *h = &r->held[r->nheld++];
	h->fd = fd;
	if (r->doc.req.isolation == WARD_ISO_SYSTEM) {
		snprintf(h->path, sizeof(h->path), WARD_HELD_PATH "%d", fd);
		*path = h->path;
	}
	return 0;
}

/* Hold every host path of r's request: workdir, rootfs and each mount's
 * host_path (a mount without a sandbox_path gets the host path's name
 * first).  False with the 400 (or the 503) set when one is refused. */
bool hold_paths(struct server *s, struct req *r)
{
	char err[512];
	struct ward_request *q = &r->doc.req;
	int bad = 0;
	if (q->workdir || q->rootfs || q->nmounts) {
		r->held = calloc(2 + q->nmounts, sizeof(*r->held));
		if (!r->held) {
			set_error(r, 503, "out of memory");
			return false;
		}
	}
	if (q->workdir)
		bad = hold_path(s, r, &q->workdir, "workdir", err, sizeof(err));
	if (!bad && q->rootfs)
		bad = hold_path(s, r, &q->rootfs, "rootfs", err, sizeof(err));
	for (size_t i = 0; !bad && i < q->nmounts; i++) {
		char field[48];
		snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
		struct ward_mount *m = &r->doc.mounts[i];
		if (!m->sandbox_path)
			m->sandbox_path = m->host_path; /* before host_path becomes a descriptor's */
		bad = hold_path(s, r, &m->host_path, field, err, sizeof(err));
	}
	if (bad) {
		set_error(r, 400, "%s", err);
		return false;
	}
	return true;
}

/* Close what hold_paths opened. */
void held_release(struct req *r)
{
	for (size_t i = 0; i < r->nheld; i++)
		close(r->held[i].fd);
	free(r->held);
	r->held = NULL;
	r->nheld = 0;
}

int open_roots(struct server *s)
{
	for (size_t i = 0; i < s->o.nroots; i++) {
		char *real = realpath(s->o.roots[i], NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "ward serve: --allow-root %s: %s\n", s->o.roots[i],
			        real ? "not a directory" : strerror(errno));
			free(real);
			return -1;
		}
		int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "ward serve: --allow-root %s: %s\n", real, strerror(errno));
			free(real);
			return -1;
		}
		s->roots[s->nroots++] = (struct root){.path = real, .len = strlen(real), .fd = fd};
	}
	return 0;
}

void roots_free(struct server *s)
{
	for (size_t i = 0; i < s->nroots; i++) {
		free(s->roots[i].path);
		close(s->roots[i].fd);
	}
}
