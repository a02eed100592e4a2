/* e2b_volumes.c — the volume store and E2B's management API (SPEC §18,
 * research note e2b-round2 §3): POST/GET /volumes, GET/DELETE
 * /volumes/{id}, and create's volumeMounts.
 *
 * A volume is --e2b-volumes DIR/ID/: image (an ext4 file system of
 * --e2b-volume-max-bytes, sparse, on a loop device: src/sandbox/loopfs.c),
 * root/ (where it is mounted while the runner runs) and volume.json (its
 * name, owner = the API key's token name, token; written last, by rename:
 * a directory without one is a create cut short, removed at start).  The
 * image is the cap: a write past it fails with ENOSPC, inside a sandbox and
 * through the content API alike, and it survives restarts; the host's file
 * system here (ext4 without prjquota) offers no project quota, and a tmpfs
 * would not survive.  Its root's owner on disk is E2B_VOLUME_UID.
 *
 * Tenants see only their own volumes (another key's id answers 404, its
 * name is unknown to volumeMounts); --e2b-max-volumes per key.  Delete is
 * E2B's: the volume goes at once (its name is free, its token opens
 * nothing) and its data is wiped; a running sandbox that mounts it keeps
 * it, empty and writable, until the sandbox ends.  Until then it still
 * counts against its key's --e2b-max-volumes (vs->gone: while the kernel
 * keeps its image on a loop device), so a key never holds more than N
 * images of --e2b-volume-max-bytes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/errf.h"
#include "dialect/e2b/e2b_int.h"
#include "dialect/e2b/e2b_vol.h"
#include "sandbox/loopfs.h"
#include "system/treecopy.h"

#define VOL_NAME_MAX 63

struct vol {
	char id[33], name[VOL_NAME_MAX + 1], owner[96], token[33];
	int root;  /* O_PATH of its mounted root; -1 while it is being made */
	dev_t dev; /* deleted: its file system's device (a loop device) */
	struct vol *next;
};

struct e2b_vols {
	pthread_mutex_t lock;
	char dir[512];
	struct vol *list;
	struct vol *gone; /* deleted, still mounted by sandboxes: counted against their keys */
};

static void vol_free(struct vol *v)
{
	if (v->root >= 0)
		close(v->root);
	explicit_bzero(v->token, sizeof(v->token));
	free(v);
}

/* DIR/ID/what */
static void vpath(const struct e2b_vols *vs, const char *id, const char *what, char *out, size_t n)
{
	snprintf(out, n, "%s/%s%s%s", vs->dir, id, what[0] ? "/" : "", what);
}

static bool is_id(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* DIR/ID and everything in it gone (its root unmounted first: detached,
 * so that sandboxes that bound it keep theirs). */
static void vol_remove_dir(struct e2b_vols *vs, const char *id)
{
	char root[700];
	vpath(vs, id, "root", root, sizeof(root));
	loopfs_umount(root, 1);
	int d = open(vs->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d >= 0) {
		treecopy_remove(d, id);
		close(d);
	}
}

/* The image mounted at root/, its root held (O_PATH): fd, or -1 with err. */
static int vol_mount(struct e2b_vols *vs, const char *id, char *err, size_t n)
{
	char img[700], root[700];
	vpath(vs, id, "image", img, sizeof(img));
	vpath(vs, id, "root", root, sizeof(root));
	if (mkdir(root, 0700) < 0 && errno != EEXIST) {
		base_errf(err, n, "cannot make %s: %s", root, strerror(errno));
		return -1;
	}
	if (loopfs_mount(img, root, err, n) < 0)
		return -1;
	int fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		base_errf(err, n, "cannot open %s: %s", root, strerror(errno));
	return fd;
}

/* volume.json (0600: its token), written whole then renamed over. */
static int vol_save(struct e2b_vols *vs, const struct vol *v, char *err, size_t n)
{
	char tmp[700], path[700];
	vpath(vs, v->id, "volume.json.tmp", tmp, sizeof(tmp));
	vpath(vs, v->id, "volume.json", path, sizeof(path));
	json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "id", v->id, "name", v->name, "owner", v->owner, "token", v->token);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = j && fd >= 0 ? json_dumpfd(j, fd, JSON_COMPACT) : -1;
	if (fd >= 0 && fsync(fd) < 0)
		rc = -1;
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	json_decref(j);
	if (rc < 0 || rename(tmp, path) < 0) {
		base_errf(err, n, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* One DIR/ID at start: listed and mounted, or removed when cut short. */
static void vol_load(struct e2b *e, const char *id)
{
	struct e2b_vols *vs = e->vols;
	char path[700], err[600];
	vpath(vs, id, "volume.json", path, sizeof(path));
	json_t *j = json_load_file(path, 0, NULL);
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *owner = json_string_value(json_object_get(j, "owner"));
	const char *token = json_string_value(json_object_get(j, "token"));
	if (!name || !owner || !token || strlen(name) > VOL_NAME_MAX || strlen(owner) >= 96 || strlen(token) != 32) {
		log_event(e->s, "e2b-volume-dropped", "%s: no whole volume.json (a create cut short): removed", id);
		vol_remove_dir(vs, id);
		json_decref(j);
		return;
	}
	struct vol *v = calloc(1, sizeof(*v));
	if (v) {
		snprintf(v->id, sizeof(v->id), "%s", id);
		snprintf(v->name, sizeof(v->name), "%s", name);
		snprintf(v->owner, sizeof(v->owner), "%s", owner);
		snprintf(v->token, sizeof(v->token), "%s", token);
		v->root = vol_mount(vs, id, err, sizeof(err));
		if (v->root < 0) {
			log_event(e->s, "e2b-volume-unmounted", "%s (%s): %s", id, name, err);
			free(v);
			v = NULL;
		}
	}
	json_decref(j);
	if (v) {
		v->next = vs->list;
		vs->list = v;
	}
}

int vol_start(struct e2b *e)
{
	struct server *s = e->s;
	if (!s->o.e2b_volumes)
		return 0;
	if (s->o.e2b_volume_max_bytes && s->o.e2b_volume_max_bytes < (16u << 20)) {
		fprintf(stderr, "ward serve: --e2b-volume-max-bytes must be at least 16777216 (an ext4 file system's "
		                "own metadata takes some MB)\n");
		return -1;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
		        "ward serve: --e2b-volumes needs ward to run as root (loop devices, idmapped mounts)\n");
		return -1;
	}
	struct e2b_vols *vs = calloc(1, sizeof(*vs));
	if (!vs)
		return -1;
	pthread_mutex_init(&vs->lock, NULL);
	snprintf(vs->dir, sizeof(vs->dir), "%s", s->o.e2b_volumes);
	e->vols = vs;
	if ((mkdir(vs->dir, 0700) < 0 && errno != EEXIST) || chmod(vs->dir, 0700) < 0) {
		fprintf(stderr, "ward serve: cannot make --e2b-volumes %s: %s (its parent must exist)\n", vs->dir,
		        strerror(errno));
		return -1;
	}
	DIR *d = opendir(vs->dir);
	if (!d) {
		fprintf(stderr, "ward serve: cannot list --e2b-volumes %s: %s\n", vs->dir, strerror(errno));
		return -1;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (is_id(de->d_name))
			vol_load(e, de->d_name);
	closedir(d);
	return 0;
}

void vol_stop(struct e2b *e)
{
	struct e2b_vols *vs = e->vols;
	if (!vs)
		return;
	while (vs->list) {
		struct vol *v = vs->list;
		vs->list = v->next;
		char root[700];
		vpath(vs, v->id, "root", root, sizeof(root));
		if (v->root >= 0) {
			close(v->root);
			v->root = -1;
			/* never detached: a busy one stays mounted, and the next start keeps it */
			int r = loopfs_umount(root, 0);
			if (r < 0)
				log_event(e->s, "e2b-volume-busy", "%s stays mounted: %s", root, strerror(-r));
		}
		vol_free(v);
	}
	while (vs->gone) {
		struct vol *v = vs->gone;
		vs->gone = v->next;
		vol_free(v);
	}
	pthread_mutex_destroy(&vs->lock);
	free(vs);
	e->vols = NULL;
}

static enum MHD_Result not_enabled(struct ereq *q)
{
	return e2b_api_error(q, 403, "use of volumes is not enabled: start ward serve with --e2b-volumes DIR");
}

static bool name_ok(const char *n)
{
	size_t k = strlen(n);
	return k && k <= VOL_NAME_MAX &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == k;
}

/* owner's volume by id (by_name 0) or name (1), ready (mounted); under the lock. */
static struct vol *find(struct e2b_vols *vs, const char *owner, const char *key, int by_name)
{
	for (struct vol *v = vs->list; v; v = v->next)
		if (v->root >= 0 && !strcmp(v->owner, owner) && !strcmp(by_name ? v->name : v->id, key))
			return v;
	return NULL;
}

/* Does the kernel still hold v's image (deleted: unlinked, its file system
 * mounted in some sandbox) on the loop device v->dev? */
static bool still_held(const struct vol *v)
{
	char p[96], buf[1024], want[48];
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/loop/backing_file", major(v->dev), minor(v->dev));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false; /* the loop device is free: its last mount went */
	ssize_t k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[k > 0 ? k : 0] = 0;
	snprintf(want, sizeof(want), "/%s/image", v->id); /* a device used again is another's file */
	return strstr(buf, want) != NULL;
}

/* owner's deleted volumes that sandboxes still mount; those none mounts
 * any more forgotten (under the lock). */
static unsigned gone_count(struct e2b_vols *vs, const char *owner)
{
	unsigned k = 0;
	for (struct vol **pp = &vs->gone; *pp;) {
		struct vol *v = *pp;
		if (still_held(v)) {
			k += !strcmp(v->owner, owner);
			pp = &v->next;
			continue;
		}
		*pp = v->next;
		vol_free(v);
	}
	return k;
}

/* A placeholder for owner's new volume name, listed (root -1): NULL with
 * the status in *code and why in err. */
static struct vol *reserve(struct e2b *e, const char *owner, const char *name, unsigned *code, char *err, size_t n)
{
	struct e2b_vols *vs = e->vols;
	unsigned max = e->s->o.e2b_max_volumes ? e->s->o.e2b_max_volumes : 16;
	struct vol *v = calloc(1, sizeof(*v));
	if (!v) {
		*code = 500;
		base_errf(err, n, "out of memory");
		return NULL;
	}
	v->root = -1;
	e2b_hex_random(v->id, 16);
	e2b_hex_random(v->token, 16);
	snprintf(v->name, sizeof(v->name), "%s", name);
	snprintf(v->owner, sizeof(v->owner), "%s", owner);
	unsigned have = 0;
	bool dup = false;
	pthread_mutex_lock(&vs->lock);
	have = gone_count(vs, owner);
	for (struct vol *o = vs->list; o; o = o->next)
		if (!strcmp(o->owner, owner)) {
			have++;
			dup = dup || !strcmp(o->name, name);
		}
	if (!dup && have < max) {
		v->next = vs->list;
		vs->list = v;
	}
	pthread_mutex_unlock(&vs->lock);
	if (dup || have >= max) {
		*code = dup ? 400 : 429;
		if (dup)
			base_errf(err, n, "Volume with name '%s' already exists", name);
		else
			base_errf(
				err, n,
				"this API key has %u volumes, the most --e2b-max-volumes allows (a deleted one counts "
				"until the last sandbox that mounts it ends): delete one, or end its sandboxes",
				have);
		vol_free(v);
		return NULL;
	}
	return v;
}

static void unlist(struct e2b_vols *vs, struct vol *v)
{
	pthread_mutex_lock(&vs->lock);
	for (struct vol **pp = &vs->list; *pp; pp = &(*pp)->next)
		if (*pp == v) {
			*pp = v->next;
			break;
		}
	pthread_mutex_unlock(&vs->lock);
}

/* v's directory, file system and record: 0, or -1 with err. */
static int make(struct e2b *e, struct vol *v, char *err, size_t n)
{
	struct e2b_vols *vs = e->vols;
	char dir[700], img[700];
	vpath(vs, v->id, "", dir, sizeof(dir));
	vpath(vs, v->id, "image", img, sizeof(img));
	if (mkdir(dir, 0700) < 0) {
		base_errf(err, n, "cannot make %s: %s (is --e2b-volumes writable?)", dir, strerror(errno));
		return -1;
	}
	uint64_t bytes = e->s->o.e2b_volume_max_bytes ? e->s->o.e2b_volume_max_bytes : 1ull << 30;
	if (loopfs_make(img, bytes, E2B_VOLUME_UID, E2B_VOLUME_UID, err, n) < 0)
		return -1;
	int root = vol_mount(vs, v->id, err, n);
	if (root < 0)
		return -1;
	unlinkat(root, "lost+found", AT_REMOVEDIR); /* mke2fs's, root's: not the tenant's */
	if (vol_save(vs, v, err, n) < 0) {
		close(root);
		return -1;
	}
	pthread_mutex_lock(&vs->lock);
	v->root = root;
	pthread_mutex_unlock(&vs->lock);
	return 0;
}

enum MHD_Result vol_create(struct ereq *q)
{
	struct e2b *e = q->e;
	if (!e->vols)
		return not_enabled(q);
	json_t *b = q->len ? json_loadb(q->body, q->len, 0, NULL) : NULL;
	const char *name = json_string_value(json_object_get(b, "name"));
	if (!name || !name_ok(name)) {
		json_decref(b);
		return e2b_api_error(q, 400, "give {\"name\": NAME}, NAME of 1 to %d of [a-zA-Z0-9_-]", VOL_NAME_MAX);
	}
	char err[600];
	unsigned code;
	struct vol *v = reserve(e, q->who, name, &code, err, sizeof(err));
	json_decref(b);
	if (!v)
		return e2b_api_error(q, code, "%s", err);
	if (make(e, v, err, sizeof(err)) < 0) {
		unlist(e->vols, v);
		vol_remove_dir(e->vols, v->id);
		vol_free(v);
		return e2b_api_error(q, 500, "cannot make the volume: %s", err);
	}
	log_event(q->s, "e2b-volume-new", "%s (%s) for %s", v->id, v->name, q->who);
	return e2b_answer_json(q, 201,
	                       json_pack("{s:s,s:s,s:s}", "volumeID", v->id, "name", v->name, "token", v->token));
}

enum MHD_Result vol_list(struct ereq *q)
{
	struct e2b_vols *vs = q->e->vols;
	if (!vs)
		return not_enabled(q);
	json_t *a = json_array();
	pthread_mutex_lock(&vs->lock);
	for (struct vol *v = vs->list; v; v = v->next)
		if (v->root >= 0 && !strcmp(v->owner, q->who))
			json_array_append_new(a, json_pack("{s:s,s:s}", "volumeID", v->id, "name", v->name));
	pthread_mutex_unlock(&vs->lock);
	return e2b_answer_json(q, 200, a);
}

static enum MHD_Result vol_not_found(struct ereq *q)
{
	return e2b_api_error(q, 404, "volume \"%.80s\" not found (deleted, another API key's, or never made)", q->arg);
}

enum MHD_Result vol_info(struct ereq *q)
{
	struct e2b_vols *vs = q->e->vols;
	if (!vs)
		return not_enabled(q);
	json_t *j = NULL;
	pthread_mutex_lock(&vs->lock);
	struct vol *v = find(vs, q->who, q->arg, 0);
	if (v)
		j = json_pack("{s:s,s:s,s:s}", "volumeID", v->id, "name", v->name, "token", v->token);
	pthread_mutex_unlock(&vs->lock);
	return v ? e2b_answer_json(q, 200, j) : vol_not_found(q);
}

/* Everything in the volume removed (the running sandboxes that mount it
 * see it empty): what E2B does to a deleted volume's data. */
static void wipe(int root)
{
	int d = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	if (!dir) {
		if (d >= 0)
			close(d);
		return;
	}
	for (struct dirent *de; (de = readdir(dir));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			treecopy_remove(d, de->d_name);
	closedir(dir);
}

enum MHD_Result vol_delete(struct ereq *q)
{
	struct e2b_vols *vs = q->e->vols;
	if (!vs)
		return not_enabled(q);
	pthread_mutex_lock(&vs->lock);
	struct vol *v = find(vs, q->who, q->arg, 0);
	for (struct vol **pp = &vs->list; v && *pp; pp = &(*pp)->next)
		if (*pp == v) {
			*pp = v->next;
			break;
		}
	pthread_mutex_unlock(&vs->lock);
	if (!v)
		return vol_not_found(q);
	char rec[700];
	vpath(vs, v->id, "volume.json", rec, sizeof(rec));
	unlink(rec); /* first: a crash from here on leaves a directory removed at start */
	wipe(v->root);
	struct stat sb;
	v->dev = fstat(v->root, &sb) == 0 ? sb.st_dev : 0;
	close(v->root); /* before its unmount: nothing of ward's holds it */
	v->root = -1;
	vol_remove_dir(vs, v->id);
	bool held = v->dev && still_held(v);
	log_event(q->s, "e2b-volume-delete", "%s (%s) by %s%s", v->id, v->name, q->who,
	          held ? ": still mounted by a sandbox, counted until it ends" : "");
	pthread_mutex_lock(&vs->lock);
	if (held) {
		v->next = vs->gone;
		vs->gone = v;
	} else
		vol_free(v);
	pthread_mutex_unlock(&vs->lock);
	return e2b_answer(q, 204, NULL, NULL, 0);
}

int vol_open(struct e2b *e, const char *id, const char *token, char *owner, size_t on)
{
	struct e2b_vols *vs = e->vols;
	if (!vs || !id || !token)
		return -1;
	int fd = -1;
	pthread_mutex_lock(&vs->lock);
	for (struct vol *v = vs->list; v; v = v->next) {
		if (v->root < 0 || strcmp(v->id, id) != 0)
			continue;
		size_t g = strlen(token);
		unsigned char d = (unsigned char)(g != 32);
		for (size_t i = 0; i < 32; i++)
			d |= (unsigned char)((i < g ? (unsigned char)token[i] : 0) ^ (unsigned char)v->token[i]);
		if (d == 0) {
			fd = fcntl(v->root, F_DUPFD_CLOEXEC, 0);
			snprintf(owner, on, "%s", v->owner);
		}
		break;
	}
	pthread_mutex_unlock(&vs->lock);
	return fd;
}

/* ---- create's volumeMounts ---- */

/* Is path (absolute) p, or below it? */
static bool under(const char *path, const char *p)
{
	size_t k = strlen(p);
	return !strncmp(path, p, k) && (path[k] == 0 || path[k] == '/');
}

/* Why path may not be a mount point (NULL: it may): absolute, clean,
 * none of ward's own places. */
static const char *path_refused(const char *path)
{
	size_t n = strlen(path);
	if (path[0] != '/')
		return "it must be absolute";
	if (n < 2 || n >= 200)
		return n < 2 ? "it may not be /" : "it is longer than 199 bytes";
	if (path[n - 1] == '/' || strstr(path, "//") || strstr(path, "/./") || strstr(path, "/../") ||
	    !strcmp(path + n - 2, "/.") || !strcmp(path + n - 3, "/.."))
		return "it is not clean (no '.', '..', '//' or trailing '/')";
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "it holds a control byte";
	static const char *const below[] = {"/proc", "/sys", "/dev",   "/etc",   "/usr",    "/bin",
	                                    "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/run/ward"};
	for (size_t i = 0; i < sizeof(below) / sizeof(below[0]); i++)
		if (under(path, below[i]))
			return "it lies in a directory ward builds or mounts read-only (/proc, /sys, /dev, /etc, /usr, "
			       "/bin, /sbin, /lib*)";
	static const char *const own[] = {"/tmp", "/work", "/home", "/home/user"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(path, own[i]))
			return "it is one of ward's own mounts (/tmp, /home/user): mount below it";
	return NULL;
}

/* The mount point inside of path: the home is /work, which it links to. */
static void inside(const char *path, char *out, size_t n)
{
	bool home = under(path, "/home/user");
	snprintf(out, n, "%s%s", home ? "/work" : "", path + (home ? 10 : 0));
}

/* One mount {name, path}: into vm, or a reason appended to err at *k. */
static void take_one(struct e2b_vols *vs, const char *owner, size_t i, json_t *m, struct vol_mounts *vm, char *err,
                     size_t n, size_t *k)
{
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *path = json_string_value(json_object_get(m, "path"));
	const char *why = !name || !path ? "give {\"name\": VOLUME, \"path\": DIR}" : path_refused(path);
	char dst[256] = "";
	if (!why)
		inside(path, dst, sizeof(dst));
	for (size_t j = 0; !why && j < vm->n; j++)
		if (!strcmp(vm->dst[j], dst))
			why = "another mount has the same path";
		else if (under(dst, vm->dst[j]) || under(vm->dst[j], dst))
			why = "it lies inside another mount's path, or holds one";
	int fd = -1;
	if (!why) {
		pthread_mutex_lock(&vs->lock);
		struct vol *v = find(vs, owner, name, 1);
		fd = v ? fcntl(v->root, F_DUPFD_CLOEXEC, 0) : -1;
		pthread_mutex_unlock(&vs->lock);
		if (fd < 0)
			why = "no volume of that name (Volume.create it first)";
	}
	if (why) {
		int w = snprintf(err + *k, n - *k, "%s[%zu] %.64s at %.200s: %s", *k ? "; " : "volumeMounts: ", i,
		                 name ? name : "?", path ? path : "?", why);
		*k = w > 0 && *k + (size_t)w < n ? *k + (size_t)w : n - 1;
		return;
	}
	size_t x = vm->n++;
	vm->fd[x] = fd;
	snprintf(vm->src[x], sizeof(vm->src[x]), "%s%d", WARD_HELD_PATH, fd);
	snprintf(vm->dst[x], sizeof(vm->dst[x]), "%s", dst);
	vm->m[x] = (struct ward_mount){.host_path = vm->src[x], .sandbox_path = vm->dst[x], .must_idmap = true};
}

unsigned vol_mounts_take(struct e2b *e, const char *owner, json_t *spec, struct vol_mounts *vm, char *err, size_t n)
{
	memset(vm, 0, sizeof(*vm));
	if (!spec || json_is_null(spec) || (json_is_array(spec) && !json_array_size(spec)))
		return 0;
	if (!e->vols) {
		base_errf(err, n, "use of volumes is not enabled: start ward serve with --e2b-volumes DIR");
		return 403;
	}
	if (!json_is_array(spec) || json_array_size(spec) > E2B_VOLUME_MOUNTS) {
		base_errf(err, n, "volumeMounts: give at most %d of {\"name\": VOLUME, \"path\": DIR}",
		          E2B_VOLUME_MOUNTS);
		return 400;
	}
	size_t k = 0, i;
	json_t *m;
	err[0] = 0;
	json_array_foreach(spec, i, m) take_one(e->vols, owner, i, m, vm, err, n, &k);
	if (k) {
		vol_mounts_free(vm);
		return 400;
	}
	return 0;
}

void vol_mounts_free(struct vol_mounts *vm)
{
	for (size_t i = 0; i < vm->n; i++)
		close(vm->fd[i]);
	vm->n = 0;
}
