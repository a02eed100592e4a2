/* plan.c — request -> plan (the ordered mount operations that build the
 * sandbox's root).  Looks at the host (which system directories exist and
 * which are symlinks on a merged-/usr system) but changes nothing. */
#define _GNU_SOURCE /* O_PATH */
#include "core/plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/request.h"
#include "sandbox/userns.h" /* WARD_SANDBOX_UID */

static const char *keep(struct plan *p, char *s)
{
	if (!s) {
		p->oom = true;
		return "";
	}
	if (p->nstrings == p->capstrings) {
		size_t nc = p->capstrings ? p->capstrings * 2 : 32;
		char **ns = realloc(p->strings, nc * sizeof(*ns));
		if (!ns) {
			free(s);
			p->oom = true;
			return "";
		}
		p->strings = ns;
		p->capstrings = nc;
	}
	p->strings[p->nstrings++] = s;
	return s;
}

static const char *fmt(struct plan *p, const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s", a, b);
	return keep(p, s);
}

static struct mount_op *add(struct plan *p, enum op_kind k, const char *src, const char *dst)
{
	if (p->nops == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 64;
		struct mount_op *no = realloc(p->ops, nc * sizeof(*no));
		if (!no) {
			p->oom = true;
			return &p->oom_sink;
		}
		p->ops = no;
		p->cap = nc;
	}
	struct mount_op *op = &p->ops[p->nops++];
	memset(op, 0, sizeof(*op));
	op->kind = k;
	op->src = src;
	op->dst = dst;
	return op;
}

/* What ward makes at the top of a sandbox's root and in its /etc and /dev,
 * and what it hides there: one table each, read by the plan below and by
 * plan_image_points (the mount points an image's root is given). */
static const char *const top_made[] = {"proc", "dev", "tmp", "work", "etc"};
static const char *const top_hidden[] = {"sys", "run"};
static const char *const etc_made[] = {"passwd", "group", "hostname", "hosts", "nsswitch.conf"};
static const char *const etc_hidden[] = {"shadow", "gshadow", "resolv.conf", "mtab"};
static const char *const dev_nodes[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
static const char *const dev_links[][2] = {
	{"/dev/ptmx", "pts/ptmx"},          {"/dev/fd", "/proc/self/fd"},       {"/dev/stdin", "/proc/self/fd/0"},
	{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"},
};
static const char *const dev_dirs[] = {"/dev/pts", "/dev/shm"};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static bool listed(const char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

/* A host path as the sandbox should see it: a directory becomes a read-only
 * bind, a symlink (merged /usr: /bin -> usr/bin) the same symlink, a file a
 * read-only bind; absent paths are skipped.  With below > 0, host[0..below)
 * is a rootfs and the rest is looked at beneath it, never through a symlink
 * (one on the way counts as absent: it is the rootfs's, not the host's). */
static void mirror(struct plan *p, const char *host, size_t below, const char *dst, unsigned flags)
{
	struct stat st;
	char buf[PATH_MAX];
	ssize_t n = 0;
	if (below) {
		const struct mount_op probe = {.kind = OP_BIND, .src = host, .below = below};
		int fd = mounts_open_source(&probe);
		if (fd < 0)
			return;
		if (fstat(fd, &st) < 0)
			st.st_mode = 0;
		if (S_ISLNK(st.st_mode))
			n = readlinkat(fd, "", buf, sizeof(buf) - 1);
		close(fd);
	} else {
		if (lstat(host, &st) < 0)
			return;
		if (S_ISLNK(st.st_mode))
			n = readlink(host, buf, sizeof(buf) - 1);
	}
	if (S_ISLNK(st.st_mode)) {
		if (n <= 0)
			return;
		buf[n] = 0;
		add(p, OP_SYMLINK, keep(p, strdup(buf)), dst);
	} else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		struct mount_op *op = add(p, OP_BIND, host, dst);
		op->flags = flags;
		op->below = below;
	}
}

/* path (absolute) beneath the root rootfs, reached without a symlink, and
 * not one itself. */
static bool present_beneath(struct plan *p, const char *rootfs, const char *path, struct stat *st)
{
	const struct mount_op probe = {.kind = OP_BIND, .src = fmt(p, rootfs, path), .below = strlen(rootfs)};
	int fd = mounts_open_source(&probe);
	bool ok = fd >= 0 && fstat(fd, st) == 0 && !S_ISLNK(st->st_mode);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The directory path (absolute) beneath the root rootfs, reached without a
 * symlink, open for listing; NULL when it is not one. */
static DIR *opendir_beneath(struct plan *p, const char *rootfs, const char *path)
{
	const struct mount_op probe = {.kind = OP_BIND, .src = fmt(p, rootfs, path), .below = strlen(rootfs)};
	int fd = mounts_open_source(&probe);
	int dfd = fd >= 0 ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0)
		close(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d && dfd >= 0)
		close(dfd);
	return d;
}

/* Whether a caller's bind point is at dst or beneath it and the rootfs
 * lacks it (or has a symlink there): *strictly, beneath it. */
static bool missing_point(struct plan *p, const struct ward_request *req, const char *dst, bool *strictly)
{
	size_t k = strlen(dst);
	struct stat st;
	*strictly = false;
	bool any = false;
	for (size_t i = 0; req && i < req->nmounts; i++) {
		const char *m = req->mounts[i].sandbox_path ? req->mounts[i].sandbox_path : req->mounts[i].host_path;
		if (strncmp(m, dst, k) || (m[k] && m[k] != '/') || present_beneath(p, req->rootfs, m, &st))
			continue;
		any = true;
		*strictly |= m[k] == '/';
	}
	return any;
}

/* One entry dst of a read-only rootfs (req's: its binds looked at, else
 * NULL), mirrored.  A directory of the image holding a bind point the
 * image lacks ("/mnt" for "/mnt/data") cannot be bound whole: nothing can
 * be made in a read-only bind.  It is made by ward instead, its entries
 * mirrored one by one, so the point is made in it; an entry in the way
 * of a point (a file, a symlink) gives way to it.  Only a directory that
 * anyone may list and enter: ward's is 0755 and the sandbox user's, so a
 * 0700 one of root's (what the sandbox must not read) is bound whole, as
 * it was (the point then cannot be made: review3's plan_mode). */
static void mirror_entry(struct plan *p, const struct ward_request *req, const char *rootfs, const char *dst,
                         unsigned flags)
{
	bool strictly;
	if (!req || (flags & OPF_RW) || !missing_point(p, req, dst, &strictly)) {
		mirror(p, fmt(p, rootfs, dst), strlen(rootfs), dst, flags);
		return;
	}
	DIR *d = strictly ? opendir_beneath(p, rootfs, dst) : NULL;
	struct stat st;
	if (d && (fstat(dirfd(d), &st) < 0 || (st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))) {
		closedir(d);
		mirror(p, fmt(p, rootfs, dst), strlen(rootfs), dst, flags);
		return;
	}
	if (!d)
		return; /* made by the bind itself (mounts.c makes its point) */
	add(p, OP_DIR, NULL, dst)->mode = 0755;
	struct dirent *e;
	while (p->nops <= PLAN_MAX_OPS && (e = readdir(d))) /* (past it: refused by plan_build) */
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			mirror_entry(p, req, rootfs, fmt(p, fmt(p, dst, "/"), e->d_name), flags);
	closedir(d);
}

/* Everything at the top of a --rootfs but what ward builds itself (and
 * /home when a work_link goes there: the link is all of it). */
static int mirror_rootfs(struct plan *p, const struct ward_request *req, bool no_home, unsigned flags)
{
	DIR *d = opendir(req->rootfs);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		bool skip = listed(top_made, NELEM(top_made), e->d_name) ||
		            listed(top_hidden, NELEM(top_hidden), e->d_name);
		if (skip || (no_home && strcmp(e->d_name, "home") == 0))
			continue;
		mirror_entry(p, req, req->rootfs, fmt(p, "/", e->d_name), flags);
	}
	closedir(d);
	return 0;
}

/* An image's /etc, each entry but the files ward generates, found beneath
 * the root (its etc may be a symlink to anywhere: then it counts as absent). */
static void mirror_image_etc(struct plan *p, const char *root, unsigned flags)
{
	DIR *d = opendir_beneath(p, root, "/etc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (listed(etc_made, NELEM(etc_made), e->d_name) || listed(etc_hidden, NELEM(etc_hidden), e->d_name))
			continue;
		const char *dst = fmt(p, "/etc/", e->d_name);
		mirror(p, fmt(p, root, dst), strlen(root), dst, flags);
	}
	closedir(d);
}

/* The sandbox user's name and home: "sandbox" at /work, or, with a
 * work_link ("/home/NAME", E2B's "/home/user"), NAME at the link (req
 * NULL: a request without one). */
static void user_of(const struct ward_request *req, const char **name, const char **home)
{
	bool link = req && req->work_link;
	*name = link ? strrchr(req->work_link, '/') + 1 : "sandbox";
	*home = link ? req->work_link : "/work";
}

/* The text of the /etc file etc_made[i] for req (NULL: a request without a
 * work_link, the text the store's mount points layer holds), in buf. */
static const char *etc_text(const struct ward_request *req, size_t i, char *buf, size_t n)
{
	const char *name, *home;
	user_of(req, &name, &home);
	_Static_assert(NELEM(etc_made) == 5, "etc_text has a text for each of etc_made");
	switch (i) {
	case 0:
		snprintf(buf, n,
		         "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
		         "%s:x:%d:%d:ward sandbox:%s:/bin/sh\n"
		         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		         name, WARD_SANDBOX_UID, WARD_SANDBOX_GID, home);
		break;
	case 1:
		snprintf(buf, n, "root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", name, WARD_SANDBOX_GID);
		break;
	case 2:
		snprintf(buf, n, "ward\n");
		break;
	case 3:
		snprintf(buf, n, "127.0.0.1\tlocalhost ward\n::1\tlocalhost ip6-localhost ip6-loopback\n");
		break;
	default:
		snprintf(buf, n,
		         "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"
		         "networks: files\nprotocols: files\nservices: files\n");
	}
	return buf;
}

/* The longest text of etc_text. */
#define ETC_TEXT_MAX 512

static void add_file(struct plan *p, const char *dst, const char *text, unsigned flags)
{
	struct mount_op *op = add(p, OP_FILE, NULL, dst);
	op->data = text;
	op->data_len = strlen(text);
	op->mode = 0644;
	op->flags = flags;
}

void plan_image_points(plan_point_fn *fn, void *arg)
{
	char path[64];
	for (size_t i = 0; i < NELEM(top_made); i++) {
		snprintf(path, sizeof(path), "/%s", top_made[i]);
		/* /dev holds ward's entries alone, as on a root it builds */
		fn(arg, strcmp(top_made[i], "dev") == 0 ? PLAN_POINT_OPAQUE : PLAN_POINT_DIR, path, NULL);
	}
	for (size_t i = 0; i < NELEM(top_hidden); i++) {
		snprintf(path, sizeof(path), "/%s", top_hidden[i]);
		fn(arg, PLAN_POINT_HIDDEN, path, NULL);
	}
	for (size_t i = 0; i < NELEM(etc_made); i++) {
		char text[ETC_TEXT_MAX];
		snprintf(path, sizeof(path), "/etc/%s", etc_made[i]);
		fn(arg, PLAN_POINT_FILE, path, etc_text(NULL, i, text, sizeof(text)));
	}
	for (size_t i = 0; i < NELEM(etc_hidden); i++) {
		snprintf(path, sizeof(path), "/etc/%s", etc_hidden[i]);
		fn(arg, PLAN_POINT_HIDDEN, path, NULL);
	}
	for (size_t i = 0; i < NELEM(dev_dirs); i++)
		fn(arg, PLAN_POINT_DIR, dev_dirs[i], NULL);
	for (size_t i = 0; i < NELEM(dev_nodes); i++)
		fn(arg, PLAN_POINT_FILE, dev_nodes[i], NULL);
	for (size_t i = 0; i < NELEM(dev_links); i++)
		fn(arg, PLAN_POINT_SYMLINK, dev_links[i][0], dev_links[i][1]);
}

/* The /proc entries that leak the host or let the sandbox poke the kernel.
 * (Root-only 0400 files such as kpagecount, slabinfo or vmallocinfo are
 * left out: the sandbox's uid is never root on the host and has no
 * capabilities, so the kernel already refuses them; each mask is a mount on
 * every run's start-up path.) */
static const char *const proc_masked[] = {
	"/proc/kcore",         "/proc/keys",          "/proc/key-users", "/proc/timer_list", "/proc/sched_debug",
	"/proc/sysrq-trigger", "/proc/latency_stats", "/proc/kallsyms",  "/proc/kmsg",       "/proc/iomem",
	"/proc/ioports",       "/proc/config.gz",     "/proc/modules",   "/proc/acpi",       "/proc/scsi",
	"/proc/asound",        "/proc/firmware",      "/proc/driver",    "/proc/fs",         "/proc/irq",
	"/proc/bus",           "/proc/tty",           "/proc/pressure",
};
/* Kept visible but read-only. */
static const char *const proc_readonly[] = {"/proc/sys"};

/* A minimal /etc, generated; never the host's wholesale (an image's own
 * but what ward generates). */
static void plan_etc(struct plan *p, const struct ward_request *req, const char *base, bool bound)
{
	/* /etc and /dev are directories of the root tmpfs, which is made
	 * read-only at the end: a tmpfs of their own cost a superblock each,
	 * on every run.  On an image's root bound whole, the store's mount
	 * points layer holds them as a request without a work_link has them;
	 * the others are bound over those (OPF_OVER). */
	for (size_t i = 0; i < NELEM(etc_made); i++) {
		char t[ETC_TEXT_MAX], held[ETC_TEXT_MAX];
		etc_text(req, i, t, sizeof(t));
		if (bound && strcmp(t, etc_text(NULL, i, held, sizeof(held))) == 0)
			continue; /* the mount points layer holds this very text */
		add_file(p, fmt(p, "/etc/", etc_made[i]), keep(p, strdup(t)), bound ? OPF_OVER : 0);
	}
	/* ld.so reads only its cache (ld.so.conf is ldconfig's).  From a
	 * rootfs, found beneath it: its etc may be a symlink to anywhere. */
	/* /etc/java-17-openjdk: Debian's JDK keeps its conf/ there (the JVM
	 * will not start without its java.security); public configuration,
	 * no secret, absent on most hosts (then skipped). */
	static const char *const etc_from_host[] = {"/etc/ld.so.cache",  "/etc/localtime",      "/etc/ssl",
	                                            "/etc/alternatives", "/etc/mime.types",     "/etc/protocols",
	                                            "/etc/services",     "/etc/java-17-openjdk"};
	if (bound) /* the image's /etc is in its root already */
		return;
	if (req->image) /* an image's /etc is its own: all of it but what ward generates (SPEC §14) */
		mirror_image_etc(p, base, req->root_overlay ? OPF_RW : 0);
	else
		for (size_t i = 0; i < sizeof(etc_from_host) / sizeof(etc_from_host[0]); i++)
			mirror(p, fmt(p, base, etc_from_host[i]), strlen(base), etc_from_host[i], 0);
}

/* A fresh /proc with the host-leaking parts masked, and a minimal /dev. */
static void plan_proc_dev(struct plan *p, const struct ward_request *req)
{
	add(p, OP_PROC, NULL, "/proc");
	for (size_t i = 0; i < sizeof(proc_masked) / sizeof(proc_masked[0]); i++)
		add(p, OP_MASK, NULL, proc_masked[i])->flags = OPF_OPTIONAL;
	for (size_t i = 0; i < sizeof(proc_readonly) / sizeof(proc_readonly[0]); i++)
		add(p, OP_READONLY, NULL, proc_readonly[i])->flags = OPF_OPTIONAL;

	/* A minimal /dev. */
	for (size_t i = 0; i < NELEM(dev_nodes); i++)
		add(p, OP_BIND, dev_nodes[i], dev_nodes[i])->flags = OPF_RW;
	for (size_t i = 0; i < NELEM(dev_links); i++)
		add(p, OP_SYMLINK, dev_links[i][1], dev_links[i][0]);
	_Static_assert(NELEM(dev_dirs) == 2, "dev_dirs: /dev/pts, then /dev/shm");
	add(p, OP_DEVPTS, NULL, dev_dirs[0]);
	struct mount_op *op = add(p, OP_TMPFS, NULL, dev_dirs[1]);
	op->size_mb = req->limits.tmp_size_mb;
	op->mode = 01777;
}

/* /tmp and /work, then the caller's binds in order, after ward's own (so
 * they may nest in /work or /tmp). */
static void plan_work(struct plan *p, const struct ward_request *req, uid_t host_uid, bool bound)
{
	struct mount_op *op = add(p, OP_TMPFS, NULL, "/tmp");
	op->size_mb = req->limits.tmp_size_mb;
	op->mode = 01777;
	if (req->workdir) {
		add(p, OP_BIND, req->workdir, "/work")->flags = OPF_RW | (host_uid == 0 ? OPF_IDMAP : 0);
	} else {
		op = add(p, OP_TMPFS, NULL, "/work");
		op->size_mb = req->limits.tmp_size_mb;
		op->mode = 0755;
		op->flags = OPF_OWNED;
	}

	if (req->work_link) /* on a bound root, in a directory of its own over /home */
		add(p, OP_SYMLINK, "/work", req->work_link)->flags = bound ? OPF_OVER : 0;

	for (size_t i = 0; i < req->nmounts; i++) {
		const struct ward_mount *m = &req->mounts[i];
		unsigned fl = m->read_only ? 0 : OPF_RW | (host_uid == 0 ? OPF_IDMAP : 0);
		if (m->must_idmap)
			fl = OPF_RW | OPF_IDMAP | OPF_IDMAP_ONLY;
		add(p, OP_BIND, m->host_path, m->sandbox_path ? m->sandbox_path : m->host_path)->flags = fl;
	}
}

/* path (absolute) beneath the root rootfs, reached without a symlink: a
 * directory (want_dir) or anything else. */
static bool found_beneath(struct plan *p, const char *rootfs, const char *path, bool want_dir)
{
	struct stat st;
	return present_beneath(p, rootfs, path, &st) && S_ISDIR(st.st_mode) == want_dir;
}

/* Whether req's image root can be the sandbox's root itself, bound whole
 * (one mount, not one per entry of its top and its /etc): read-only, and
 * every mount point the request adds to ward's own (plan_image_points, in
 * the image's root since root.c opened it) already there: the caller's
 * binds (but those inside /tmp and /work, ward's tmpfs), and /home for a
 * work_link (the image's /home then gives way to a directory holding the
 * link alone, as on a root ward builds). */
static bool root_bound(struct plan *p, const struct ward_request *req)
{
	if (!req->image || req->root_overlay || !req->rootfs)
		return false;
	if (req->work_link && !found_beneath(p, req->rootfs, "/home", true))
		return false;
	for (size_t i = 0; i < req->nmounts; i++) {
		const struct ward_mount *m = &req->mounts[i];
		const char *dst = m->sandbox_path ? m->sandbox_path : m->host_path;
		if (!strncmp(dst, "/tmp/", 5) || !strncmp(dst, "/work/", 6))
			continue;
		struct stat st;
		if (stat(m->host_path, &st) < 0 || !found_beneath(p, req->rootfs, dst, S_ISDIR(st.st_mode)))
			return false;
	}
	return true;
}

int plan_build(struct plan *p, const struct ward_request *req, uid_t host_uid, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->hostname = "ward";
	const char *base = req->rootfs ? req->rootfs : "";
	bool bound = root_bound(p, req);

	/* System directories, read-only. */
	static const char *const sysdirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
	if (bound) {
		add(p, OP_BIND, req->rootfs, "/"); /* read-only, its mount points made (mounts.h) */
	} else if (!req->rootfs) {
		for (size_t i = 0; i < sizeof(sysdirs) / sizeof(sysdirs[0]); i++)
			mirror(p, sysdirs[i], 0, sysdirs[i], 0);
	} else {
		/* a writable root (an image's "root": "overlay"): its binds too */
		if (mirror_rootfs(p, req, req->work_link != NULL, req->root_overlay ? OPF_RW : 0) < 0) {
			snprintf(err, errlen, "--rootfs '%s' cannot be listed: %s", req->rootfs, strerror(errno));
			plan_free(p);
			return -1;
		}
	}

	plan_etc(p, req, base, bound);
	plan_proc_dev(p, req);
	plan_work(p, req, host_uid, bound);

	if (p->oom) {
		snprintf(err, errlen, "out of memory while building the sandbox plan");
		plan_free(p);
		return -1;
	}
	if (p->nops > PLAN_MAX_OPS) {
		snprintf(err, errlen,
		         "the sandbox would need %zu mounts, more than the %u ward allows%s: bind fewer paths%s",
		         p->nops, PLAN_MAX_OPS,
		         req->rootfs ? " (each top-level entry of a rootfs is one, and each entry of its directory a "
		                       "bind point is made in)"
		                     : "",
		         req->rootfs ? ", bind where the rootfs has the point or its directory fewer entries, or keep "
		                       "the rootfs's top level small"
		                     : "");
		plan_free(p);
		return -1;
	}
	return 0;
}

int plan_pin_held(struct plan *p, struct mount_op *op, char *err, size_t errlen)
{
	const char *rest;
	int fd = mounts_held_fd(op->src, &rest);
	if (fd < 0) {
		snprintf(err, errlen, "cannot bind '%s': not a held descriptor's path", op->src);
		return -1;
	}
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), WARD_HELD_PATH "%d", fd);
	struct stat st;
	ssize_t n = fstat(fd, &st) < 0 ? -1 : readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || (size_t)n >= sizeof(path) - 1 || path[0] != '/') {
		snprintf(err, errlen, "cannot bind '%s': %s", op->src,
		         n < 0 ? strerror(errno) : "its descriptor has no path in this mount namespace");
		return -1;
	}
	path[n] = 0;
	const char *src = fmt(p, path, rest);
	if (p->oom) {
		snprintf(err, errlen, "out of memory while building the sandbox plan");
		return -1;
	}
	op->src = src;
	op->below = (size_t)n;
	op->pin_dev = (uint64_t)st.st_dev;
	op->pin_ino = (uint64_t)st.st_ino;
	op->flags |= OPF_PINNED;
	return 0;
}

void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->ops);
	memset(p, 0, sizeof(*p));
}

void plan_print(const struct plan *p, FILE *f)
{
	for (size_t i = 0; i < p->nops; i++) {
		const struct mount_op *op = &p->ops[i];
		fprintf(f, "%-8s %s", mounts_op_name(op->kind), op->dst);
		switch (op->kind) {
		case OP_BIND:
			fprintf(f, " <- %s %s%s", op->src, op->flags & OPF_RW ? "rw" : "ro",
			        op->flags & OPF_IDMAP ? " idmap" : "");
			break;
		case OP_SYMLINK:
			fprintf(f, " -> %s", op->src);
			break;
		case OP_TMPFS:
			fprintf(f, " size=%lluM mode=%04o", (unsigned long long)op->size_mb, op->mode);
			break;
		case OP_FILE:
			fprintf(f, " (%zu bytes)", op->data_len);
			break;
		default:
			break;
		}
		fputc('\n', f);
	}
}

void plan_size_work(struct plan *p, uint64_t work_size_mb)
{
	for (size_t i = 0; work_size_mb && i < p->nops; i++)
		if (p->ops[i].kind == OP_TMPFS && strcmp(p->ops[i].dst, "/work") == 0)
			p->ops[i].size_mb = work_size_mb;
}
