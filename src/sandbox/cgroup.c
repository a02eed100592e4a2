/* cgroup.c — resource limits for one run's process tree: cgroup v1 or v2
 * behind the interface of cgroup.h.
 *
 * Layout.  v1 (separately mounted controllers): one directory per
 * hierarchy ward uses (memory, pids, cpuacct), each under
 * <mount>/ward/.  v2: one directory under a parent chosen once per process:
 *   - in the root cgroup: /sys/fs/cgroup/ward (controllers enabled on the way);
 *   - in a cgroup of our own (systemd Delegate=yes, a subtree chowned to us):
 *     ward moves itself into <own>/ward-supervisor once ("no internal
 *     processes") and creates run cgroups as its siblings under <own>;
 *   - root anywhere else (a login session): /sys/fs/cgroup/ward.
 * Run cgroups are named ward-<pid>-<counter>-<random>, so concurrent runs,
 * in one process or many, never meet.
 *
 * Every directory is opened O_DIRECTORY|O_NOFOLLOW and checked to be a
 * cgroup filesystem; everything below it goes through *at() calls, so no
 * path is resolved twice.
 *
 * Threads: the probe is computed once under pthread_once and never changes;
 * the only other shared state is the atomic name counter.  A struct
 * ward_cgroup belongs to one caller.
 */
#define _GNU_SOURCE
#include "sandbox/cgroup.h"
#include "ward.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The controllers ward uses, as bits.  On v1 "cpu" means cpuacct. */
enum { C_MEM = 1, C_PIDS = 2, C_CPU = 4 };
#define NHIER 3 /* at most one v1 hierarchy per controller */
#define CF_MAX 8 /* files kept open per hierarchy of a recycled cgroup */

/* How long cg_destroy waits for a cgroup to empty before giving up: long
 * enough for a killed tree to exit, short enough never to hang a run. */
#define DESTROY_WAIT_NS (5LL * 1000000000)
/* How old an empty run cgroup of a dead ward must be before we remove it. */
#define ORPHAN_AGE_S 30

struct hier {
	char path[PATH_MAX]; /* parent directory of run cgroups */
	unsigned mask;       /* controllers of this hierarchy ward uses */
};

/* Everything the probe learns: the host's cgroup layout, the same for every
 * run, so learnt once (pthread_once) and read-only after. */
static struct {
	struct cg_probe pub;
	struct hier h[NHIER];
	int nh;
	bool memsw;        /* v1: memory.memsw.limit_in_bytes exists */
	bool swap_max;     /* v2: memory.swap.max exists in run cgroups */
	bool swap_is_zero; /* v2: the parent already has memory.swap.max 0 */
	bool cg_kill;      /* v2: cgroup.kill exists (5.14+) */
	bool kmem_tcp;     /* v1: memory.kmem.tcp.limit_in_bytes exists */
	bool nosocket;     /* v2: booted with cgroup.memory=nosocket */
	bool peak_reset;   /* v2: memory.peak can be reset (6.12+) */
} P;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static atomic_uint name_counter; /* makes run cgroups' names unique in this process */

struct ward_cgroup {
	enum cg_version version;
	unsigned mask; /* controllers this run's cgroup has */
	int n;
	struct {
		int parent; /* O_PATH fd of the parent, for unlinkat */
		int dir;    /* O_RDONLY fd of the run cgroup */
		unsigned mask;
		bool removed;
	} d[NHIER];
	bool tcp;      /* socket buffers are charged to a limit (see cg_charges_sockets) */
	char name[64];
	/* Recycling (ward_cgroup_keep): */
	bool recyclable;       /* made by cg_create while cgroups are kept */
	bool parent;           /* cg_child_create made one beneath it: never kept */
	struct cg_limits lim;  /* as last written */
	int procs[NHIER];      /* cgroup.procs, kept open: -1 until first used */
	int peak_fd;           /* v2: memory.peak, reset through this fd; -1 */
	struct {
		const char *file;
		bool w;
		int fd;
	} cf[NHIER][CF_MAX];   /* files of a recycled cgroup, kept open */
	uint64_t base_cpu_us, base_user_us, base_sys_us; /* v2: cpu.stat when this run began */
	uint64_t base_oom;     /* OOM kills counted when this run began */
};

/* ------------------------------------------------------------ small I/O */

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Write s to dirfd/file in one write(2), as cgroup files want.  0 or -errno. */
static int write_at(int dirfd, const char *file, const char *s)
{
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t w = write(fd, s, len);
	int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
	close(fd);
	return -e;
}

static int write_u64_at(int dirfd, const char *file, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return write_at(dirfd, file, buf);
}

/* Read up to len-1 bytes of dirfd/file, NUL-terminated.  Bytes or -errno. */
static ssize_t read_at(int dirfd, const char *file, char *buf, size_t len)
{
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t r = read(fd, buf + got, len - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	close(fd);
	return (ssize_t)got;
}

/* The number after "key " at the start of a line of a flat-keyed file
 * (cpu.stat, memory.events, memory.oom_control).  false when absent. */
static bool kv_get(const char *buf, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			*v = strtoull(p + kl + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

/* The number a single-value cgroup file starts with. */
static bool parse_u64(const char *buf, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno == 0 && end != buf;
}

static bool read_u64_at(int dirfd, const char *file, uint64_t *v)
{
	char buf[64];
	return read_at(dirfd, file, buf, sizeof buf) > 0 && parse_u64(buf, v);
}

/* Up to len-1 bytes of an fd kept open, from its start (a read from
 * offset 0 makes a cgroup file anew), NUL-terminated.  Bytes or -errno. */
static ssize_t pread_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len - 1) {
		ssize_t r = pread(fd, buf + got, len - 1 - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	return (ssize_t)got;
}

static bool pread_u64(int fd, uint64_t *v)
{
	char buf[64];
	return pread_all(fd, buf, sizeof buf) > 0 && parse_u64(buf, v);
}

/* A counter's growth since base (never below 0). */
static uint64_t since(uint64_t now, uint64_t base)
{
	return now > base ? now - base : 0;
}

/* Open a directory that must be on a cgroup filesystem.  flags: O_PATH or
 * O_RDONLY.  fd or -errno (-ENOTDIR when it is not a cgroup). */
static int open_cgdir(int at, const char *path, int flags)
{
	int fd = openat(at, path, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		return -ENOTDIR;
	}
	return fd;
}

/* Copy src into dst[n], cut when too long (always NUL-terminated). */
static void scopy(char *dst, size_t n, const char *src)
{
	size_t l = strnlen(src, n - 1);
	memcpy(dst, src, l);
	dst[l] = 0;
}

static void why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void why(const char *fmt, ...)
{
	size_t used = strlen(P.pub.why);
	if (used + 3 >= sizeof P.pub.why)
		return;
	if (used)
		used += (size_t)snprintf(P.pub.why + used, sizeof P.pub.why - used, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(P.pub.why + used, sizeof P.pub.why - used, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ the probe */

struct mnt {
	char point[PATH_MAX];
	char root[PATH_MAX];
	bool found;
};

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; p; p = strchr(p, ','), p = p ? p + 1 : p)
		if (strncmp(p, word, wl) == 0 && (p[wl] == ',' || p[wl] == 0 || p[wl] == '\n'))
			return true;
	return false;
}

/* One mountinfo line: "id parent maj:min root point opts [tags...] -
 * fstype source superopts", root and point unescaped.  false when it is
 * not one. */
static bool mount_line(const char *line, char root[PATH_MAX], char point[PATH_MAX], char fstype[32],
		       char superopts[512])
{
	const char *sep = strstr(line, " - ");
	if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
	    sscanf(sep + 3, "%31s %*s %511s", fstype, superopts) != 2)
		return false;
	unescape(root);
	unescape(point);
	return true;
}

bool cg_find_mount(const char *fstype, const char *opt, char *point, size_t pn, char *superopts, size_t sn)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char *line = NULL, root[PATH_MAX], mp[PATH_MAX], fs[32], so[512];
	size_t cap = 0;
	bool found = false;
	while (!found && getline(&line, &cap, f) > 0)
		if (mount_line(line, root, mp, fs, so) && strcmp(fs, fstype) == 0 && (!opt || has_word(so, opt))) {
			snprintf(point, pn, "%s", mp);
			snprintf(superopts, sn, "%s", so);
			found = true;
		}
	free(line);
	fclose(f);
	return found;
}

/* The first cgroup2 mount and the first v1 mount of each controller. */
static void scan_mounts(struct mnt *v2, struct mnt v1[3])
{
	static const char *const names[3] = {"memory", "pids", "cpuacct"};
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		char root[PATH_MAX], point[PATH_MAX], fstype[32], superopts[512];
		if (!mount_line(line, root, point, fstype, superopts))
			continue;
		struct mnt *m = NULL;
		if (strcmp(fstype, "cgroup2") == 0) {
			m = v2;
		} else if (strcmp(fstype, "cgroup") == 0) {
			for (int i = 0; i < 3; i++)
				if (has_word(superopts, names[i]) && !v1[i].found)
					m = &v1[i];
		}
		if (m && !m->found) {
			snprintf(m->point, sizeof m->point, "%s", point);
			snprintf(m->root, sizeof m->root, "%s", root);
			m->found = true;
		}
	}
	free(line);
	fclose(f);
}

/* Our cgroup path in the hierarchy with this controller ("" = the v2
 * line), from /proc/self/cgroup.  false when not listed. */
static bool own_cgroup(const char *ctrl, char *out, size_t outlen)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	bool ok = false;
	while (!ok && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		bool match = *ctrl ? has_word(c1 + 1, ctrl) : (c1[1] == 0 && strncmp(line, "0:", 2) == 0);
		if (!match)
			continue;
		char *path = c2 + 1;
		path[strcspn(path, "\n")] = 0;
		snprintf(out, outlen, "%s", path);
		ok = true;
	}
	free(line);
	fclose(f);
	return ok;
}

/* The directory of cgroup path `cg` under mount m (strip the mount's root).
 * A path too long for out comes back empty, which no open accepts. */
static void cg_dir_of(const struct mnt *m, const char *cg, char *out, size_t outlen)
{
	size_t rl = strlen(m->root);
	if (strcmp(m->root, "/") != 0 && strncmp(cg, m->root, rl) == 0 && (cg[rl] == '/' || cg[rl] == 0))
		cg += rl;
	else if (strcmp(m->root, "/") != 0)
		cg = "/"; /* our cgroup lies outside this mount (a namespace): use its top */
	int n = snprintf(out, outlen, "%s%s", m->point, strcmp(cg, "/") == 0 ? "" : cg);
	if (n < 0 || (size_t)n >= outlen)
		out[0] = 0;
}

/* Make path/ward (or find it) and return its path in out.  0 or -errno. */
static int make_ward_dir(const char *parent, char *out, size_t outlen)
{
	int pfd = open_cgdir(AT_FDCWD, parent, O_PATH);
	if (pfd < 0)
		return pfd;
	int r = 0;
	if (mkdirat(pfd, "ward", 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0) {
		int fd = open_cgdir(pfd, "ward", O_PATH);
		if (fd < 0)
			r = fd;
		else
			close(fd);
	}
	/* It may exist already, made by root: then it is no use to others. */
	if (r == 0 && faccessat(pfd, "ward", W_OK | X_OK, AT_EACCESS) < 0)
		r = -errno;
	close(pfd);
	if (r == 0 && (size_t)snprintf(out, outlen, "%s/ward", parent) >= outlen)
		r = -ENAMETOOLONG;
	return r;
}

static void probe_v1(const struct mnt v1[3])
{
	static const char *const names[3] = {"memory", "pids", "cpuacct"};
	static const unsigned bits[3] = {C_MEM, C_PIDS, C_CPU};
	P.pub.version = CG_V1;
	size_t wl = 0;
	for (int i = 0; i < 3; i++) {
		if (!v1[i].found) {
			why("cgroup v1: no %s hierarchy is mounted", names[i]);
			continue;
		}
		/* Controllers mounted together share one directory. */
		int j;
		for (j = 0; j < P.nh; j++)
			if (strncmp(P.h[j].path, v1[i].point, strlen(v1[i].point)) == 0 &&
			    strcmp(P.h[j].path + strlen(v1[i].point), "/ward") == 0)
				break;
		if (j < P.nh) {
			P.h[j].mask |= bits[i];
			continue;
		}
		/* The top of the mount, not our own cgroup: on v1 there is no
		 * rule against it, and a cgroup of a login session or a
		 * per-command cgroup may vanish under us. */
		char base[PATH_MAX];
		cg_dir_of(&v1[i], "/", base, sizeof base);
		int r = make_ward_dir(base, P.h[P.nh].path, sizeof P.h[P.nh].path);
		if (r < 0) {
			why("cgroup v1: cannot create %s/ward: %s (run ward as root, or create it and chown it to uid %u)",
			    base, strerror(-r), (unsigned)geteuid());
			continue;
		}
		P.h[P.nh].mask = bits[i];
		wl += (size_t)snprintf(P.pub.where + wl, wl < sizeof P.pub.where ? sizeof P.pub.where - wl : 0,
				       "%s%s", wl ? " " : "", P.h[P.nh].path);
		if (wl >= sizeof P.pub.where)
			wl = sizeof P.pub.where;
		P.nh++;
	}
	for (int j = 0; j < P.nh; j++) {
		if (!(P.h[j].mask & C_MEM))
			continue;
		int fd = open_cgdir(AT_FDCWD, P.h[j].path, O_PATH);
		if (fd < 0)
			continue;
		P.memsw = faccessat(fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
		/* v1 charges socket buffers only to a cgroup given a TCP
		 * limit (a counter of their own), and only sockets made after. */
		P.kmem_tcp = faccessat(fd, "memory.kmem.tcp.limit_in_bytes", F_OK, 0) == 0;
		if (!P.kmem_tcp)
			why("cgroup v1: no memory.kmem.tcp.limit_in_bytes: socket buffers cannot be charged, so --net loopback is refused");
		/* Without swap accounting, at least make reclaim never swap:
		 * children copy swappiness from this parent when created. */
		if (!P.memsw) {
			char cur[16];
			if (read_at(fd, "memory.swappiness", cur, sizeof cur) > 0 && atoi(cur) != 0)
				write_at(fd, "memory.swappiness", "0");
			why("cgroup v1: no swap accounting (memory.memsw.*): swap is held off with swappiness 0 only; boot with swapaccount=1");
		}
		close(fd);
	}
	for (int j = 0; j < P.nh; j++) {
		P.pub.memory |= (P.h[j].mask & C_MEM) != 0;
		P.pub.pids |= (P.h[j].mask & C_PIDS) != 0;
		P.pub.cpu |= (P.h[j].mask & C_CPU) != 0;
	}
}

/* Enable the controllers of `want` that dir offers its children.  Returns
 * the bits enabled afterwards; *offered (may be NULL) gets those dir has. */
static unsigned v2_enable(int dirfd, unsigned want, unsigned *offered)
{
	static const char *const names[3] = {"memory", "pids", "cpu"};
	static const unsigned bits[3] = {C_MEM, C_PIDS, C_CPU};
	char avail[512], on[512];
	if (read_at(dirfd, "cgroup.controllers", avail, sizeof avail) < 0)
		return 0;
	if (read_at(dirfd, "cgroup.subtree_control", on, sizeof on) < 0)
		return 0;
	unsigned got = 0;
	for (int i = 0; i < 3; i++) {
		char word[16];
		snprintf(word, sizeof word, "+%s", names[i]);
		bool avail_i = false, on_i = false;
		/* space-separated lists */
		for (char *s = avail; (s = strstr(s, names[i])); s++)
			if ((s == avail || s[-1] == ' ') && (s[strlen(names[i])] == ' ' || s[strlen(names[i])] == '\n' || !s[strlen(names[i])]))
				avail_i = true;
		for (char *s = on; (s = strstr(s, names[i])); s++)
			if ((s == on || s[-1] == ' ') && (s[strlen(names[i])] == ' ' || s[strlen(names[i])] == '\n' || !s[strlen(names[i])]))
				on_i = true;
		/* One write per controller: one the kernel refuses (cpu with
		 * realtime tasks around) must not cost us the others. */
		if (!on_i && avail_i && (want & bits[i]) && write_at(dirfd, "cgroup.subtree_control", word) == 0)
			on_i = true;
		if (on_i)
			got |= bits[i];
		if (avail_i && offered)
			*offered |= bits[i];
	}
	return got;
}

/* Is our process the only one in dir? */
static bool alone_in(int dirfd)
{
	char buf[64];
	ssize_t r = read_at(dirfd, "cgroup.procs", buf, sizeof buf);
	if (r <= 0)
		return false;
	char *end;
	long pid = strtol(buf, &end, 10);
	return pid == getpid() && (*end == 0 || (end[0] == '\n' && end[1] == 0));
}

/* "No internal processes": move our process into dir/ward-supervisor, so
 * that dir may enable controllers for its children.  0 or -errno. */
static int move_to_leaf(int dirfd)
{
	if (mkdirat(dirfd, "ward-supervisor", 0755) < 0 && errno != EEXIST)
		return -errno;
	int lfd = open_cgdir(dirfd, "ward-supervisor", O_PATH);
	if (lfd < 0)
		return lfd;
	char pid[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	int r = write_at(lfd, "cgroup.procs", pid);
	close(lfd);
	return r;
}

/* Did systemd delegate this cgroup (Delegate=yes sets the xattr since
 * v251)?  Root may write anywhere, so for root this is the only sign that
 * a cgroup of its own is meant to be subdivided. */
static bool systemd_delegated(const char *dir)
{
	return lgetxattr(dir, "trusted.delegate", NULL, 0) >= 0 || lgetxattr(dir, "user.delegate", NULL, 0) >= 0;
}

/* Root-cgroup layout: /sys/fs/cgroup/ward.  0 or -errno. */
static int v2_use_top(const struct mnt *m, char *wherebuf, size_t len)
{
	char top[PATH_MAX];
	cg_dir_of(m, "/", top, sizeof top);
	int tfd = open_cgdir(AT_FDCWD, top, O_PATH);
	if (tfd < 0)
		return tfd;
	/* The top of a cgroup namespace (a container) is no real root: it
	 * cannot enable memory while it holds processes.  When the only one
	 * is us, step aside into a leaf first.  Memory alone, and first: the
	 * threaded controllers (pids, cpu) would be accepted and make the top
	 * a "thread root", whose children can then take no process at all. */
	unsigned offered = 0;
	unsigned got = v2_enable(tfd, C_MEM, &offered);
	if ((offered & C_MEM) && !(got & C_MEM) && alone_in(tfd))
		move_to_leaf(tfd);
	v2_enable(tfd, C_MEM | C_PIDS | C_CPU, NULL);
	close(tfd);
	return make_ward_dir(top, wherebuf, len);
}

static void probe_v2(const struct mnt *m)
{
	P.pub.version = CG_V2;
	char own[PATH_MAX], owndir[PATH_MAX], parent[PATH_MAX] = "";
	if (!own_cgroup("", own, sizeof own)) {
		why("cgroup v2: no 0:: line in /proc/self/cgroup");
		return;
	}
	const char *leaf = "/ward-supervisor";
	size_t ol = strlen(own), ll = strlen(leaf);
	int r;
	if (ol > ll && strcmp(own + ol - ll, leaf) == 0) {
		/* Another ward in this process tree already moved into the
		 * leaf: its parent is the place. */
		own[ol - ll] = 0;
		cg_dir_of(m, own, parent, sizeof parent);
	} else if (strcmp(own, "/") == 0 || strcmp(own, leaf) == 0) {
		r = v2_use_top(m, parent, sizeof parent);
		if (r < 0) {
			why("cgroup v2: cannot create %s/ward: %s (run ward as root, or in a cgroup delegated to uid %u)",
			    m->point, strerror(-r), (unsigned)geteuid());
			parent[0] = 0;
		}
	} else {
		cg_dir_of(m, own, owndir, sizeof owndir);
		int ofd = open_cgdir(AT_FDCWD, owndir, O_PATH);
		bool delegated = ofd >= 0 && faccessat(ofd, "cgroup.procs", W_OK, AT_EACCESS) == 0 &&
				 faccessat(ofd, "cgroup.subtree_control", W_OK, AT_EACCESS) == 0 &&
				 faccessat(ofd, ".", W_OK, AT_EACCESS) == 0;
		if (delegated && geteuid() == 0)
			delegated = systemd_delegated(owndir);
		bool alone = ofd >= 0 && alone_in(ofd);
		bool moved = false;
		if (delegated && alone) {
			r = move_to_leaf(ofd);
			if (r == 0) {
				moved = true;
				scopy(parent, sizeof parent, owndir);
			} else {
				why("cgroup v2: cannot move into %s%s: %s", owndir, leaf, strerror(-r));
			}
		}
		if (ofd >= 0)
			close(ofd);
		if (!moved && geteuid() == 0) {
			/* root in somebody else's cgroup (a login session):
			 * the top of the hierarchy is ours to use. */
			P.pub.why[0] = 0;
			r = v2_use_top(m, parent, sizeof parent);
			if (r < 0) {
				why("cgroup v2: cannot create %s/ward: %s", m->point, strerror(-r));
				parent[0] = 0;
			}
		} else if (!moved) {
			if (!delegated)
				why("cgroup v2: %s is not delegated to uid %u; run ward as root, under systemd with Delegate=yes, or in a cgroup chowned to this user",
				    owndir, (unsigned)geteuid());
			else if (!alone)
				why("cgroup v2: %s holds other processes besides ward; start ward in a cgroup of its own (e.g. systemd-run --user --scope -p Delegate=yes)",
				    owndir);
		}
	}
	if (!parent[0])
		return;
	int pfd = open_cgdir(AT_FDCWD, parent, O_PATH);
	if (pfd < 0) {
		why("cgroup v2: cannot open %s: %s", parent, strerror(-pfd));
		return;
	}
	unsigned got = v2_enable(pfd, C_MEM | C_PIDS | C_CPU, NULL);
	/* Every cgroup has cpu.stat usage_usec, with or without the cpu
	 * controller: accounting needs no controller. */
	got |= C_CPU;
	if (!(got & C_MEM))
		why("cgroup v2: the memory controller is not available in %s (enable it in the parent's cgroup.subtree_control)", parent);
	if (!(got & C_PIDS))
		why("cgroup v2: the pids controller is not available in %s (enable it in the parent's cgroup.subtree_control)", parent);
	char buf[64];
	if (got & C_MEM) {
		/* A swap limit of 0 on the parent covers every run below it. */
		if (read_at(pfd, "memory.swap.max", buf, sizeof buf) > 0 && strcmp(buf, "0\n") == 0)
			P.swap_is_zero = true;
		else if (write_at(pfd, "memory.swap.max", "0") == 0)
			P.swap_is_zero = true;
	}
	close(pfd);
	snprintf(P.h[0].path, sizeof P.h[0].path, "%s", parent);
	P.h[0].mask = got;
	P.nh = 1;
	scopy(P.pub.where, sizeof P.pub.where, parent);
	P.pub.memory = got & C_MEM;
	P.pub.pids = got & C_PIDS;
	P.pub.cpu = true;
}

/* Does the kernel command line have cgroup.memory=...nosocket...? */
static bool booted_nosocket(void)
{
	char buf[4096];
	if (read_at(AT_FDCWD, "/proc/cmdline", buf, sizeof buf) <= 0)
		return false;
	for (char *p = buf; (p = strstr(p, "cgroup.memory=")); p++) {
		if (p != buf && p[-1] != ' ')
			continue;
		char *v = p + strlen("cgroup.memory=");
		size_t n = strcspn(v, " \n");
		char save = v[n];
		v[n] = 0;
		bool hit = has_word(v, "nosocket");
		v[n] = save;
		if (hit)
			return true;
	}
	return false;
}

/* Which optional files run cgroups will have, read off the parent (a
 * non-root cgroup has the same ones): cgroup.kill appeared in 5.14,
 * memory.swap.max needs swap accounting. */
static void probe_v2_files(void)
{
	int pfd = open_cgdir(AT_FDCWD, P.h[0].path, O_PATH);
	if (pfd < 0)
		return;
	P.cg_kill = faccessat(pfd, "cgroup.kill", F_OK, 0) == 0;
	P.swap_max = faccessat(pfd, "memory.swap.max", F_OK, 0) == 0;
	/* memory.peak is writable (a per-fd reset) since Linux 6.12: without
	 * it, no cgroup can be kept for another run (see recycling) */
	struct stat st;
	P.peak_reset = fstatat(pfd, "memory.peak", &st, 0) == 0 && (st.st_mode & S_IWUSR);
	close(pfd);
	if (P.pub.memory && !P.swap_max)
		why("cgroup v2: no memory.swap.max (kernel without swap accounting): swap is not limited");
	/* v2 charges socket buffers to memory.max, unless the kernel was
	 * booted with cgroup.memory=nosocket. */
	P.nosocket = booted_nosocket();
	if (P.pub.memory && P.nosocket)
		why("cgroup v2: the kernel was booted with cgroup.memory=nosocket: socket buffers are not charged, so --net loopback is refused");
}

/* Remove the empty run cgroups of ward processes that are gone (a ward
 * SIGKILLed before its cg_destroy).  Only empty ones: rmdir refuses the
 * rest.  The age check keeps us off a run whose pid we cannot see (another
 * PID namespace sharing this parent) in the moment between its mkdir and
 * its attach. */
/* A session's cgroup holds the cgroups of its PID 1 and its execs, named
 * PREFIX<n>-<its name> (cg_child_create): rmdir those that are empty. */
static void sweep_children(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	size_t n = strlen(name);
	for (struct dirent *e; (e = readdir(d));) {
		size_t k = strlen(e->d_name);
		if (e->d_type == DT_DIR && k > n + 1 && e->d_name[k - n - 1] == '-' &&
		    strcmp(e->d_name + k - n, name) == 0)
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void sweep_orphans(const char *parent)
{
	int fd = open_cgdir(AT_FDCWD, parent, O_RDONLY);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "ward-", 5) != 0 || e->d_name[5] < '1' || e->d_name[5] > '9')
			continue;
		long pid = strtol(e->d_name + 5, &end, 10);
		if (*end != '-' || pid <= 0 || pid > INT_MAX || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    now - st.st_mtime < ORPHAN_AGE_S)
			continue;
		/* Its ward may live where we cannot see its pid (another PID
		 * namespace on the same hierarchy): a live ward holds a shared
		 * lock on each of its run cgroups (cg_create), kept ones too. */
		int lk = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lk < 0)
			continue;
		bool held = flock(lk, LOCK_EX | LOCK_NB) < 0;
		close(lk);
		if (held)
			continue;
		sweep_children(dirfd(d), e->d_name);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void probe_once_fn(void)
{
	/* Static scratch (the probe runs once): these are large, and the first
	 * caller may be a thread with a small stack. */
	static struct mnt v2, v1[3];
	scan_mounts(&v2, v1);
	bool v2_has = false;
	if (v2.found) {
		char buf[512];
		int fd = open_cgdir(AT_FDCWD, v2.point, O_PATH);
		if (fd >= 0) {
			/* A hybrid host mounts an empty v2 tree beside v1: v2 is
			 * ours only when it has the controllers. */
			if (read_at(fd, "cgroup.controllers", buf, sizeof buf) > 0)
				v2_has = strstr(buf, "memory") || strstr(buf, "pids");
			close(fd);
		}
	}
	if (v2_has) {
		probe_v2(&v2);
		if (P.nh)
			probe_v2_files();
	} else if (v1[0].found || v1[1].found || v1[2].found) {
		probe_v1(v1);
	} else {
		P.pub.version = CG_NONE;
		why("no cgroup filesystem is mounted (mount cgroup2 at /sys/fs/cgroup)");
	}
	for (int i = 0; i < P.nh; i++)
		sweep_orphans(P.h[i].path);
	/* v1: the freezer cgroups of frozen-capable sessions (freezer.c) */
	char fz[PATH_MAX], so[512];
	if (P.pub.version == CG_V1 && cg_find_mount("cgroup", "freezer", fz, sizeof(fz) - 8, so, sizeof(so))) {
		strcat(fz, "/ward");
		sweep_orphans(fz);
	}
}

const struct cg_probe *cg_probe(void)
{
	pthread_once(&probe_once, probe_once_fn);
	return &P.pub;
}

/* ------------------------------------------------------------ one run */

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void close_all(struct ward_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++) {
		if (cg->d[i].dir >= 0)
			close(cg->d[i].dir);
		if (cg->d[i].parent >= 0)
			close(cg->d[i].parent);
	}
	for (int i = 0; i < NHIER; i++)
		if (cg->procs[i] >= 0)
			close(cg->procs[i]);
	if (cg->peak_fd >= 0)
		close(cg->peak_fd);
	for (int i = 0; i < NHIER; i++)
		for (int k = 0; k < CF_MAX && cg->cf[i][k].file; k++)
			close(cg->cf[i][k].fd);
	free(cg);
}

/* The fd of file in hierarchy i, opened once and kept (for writing when
 * w): a recycled cgroup's files are read and written run after run.  -1
 * when it cannot be kept (the caller opens it for once). */
static int kept_fd(struct ward_cgroup *cg, int i, const char *file, bool w)
{
	if (!cg->recyclable)
		return -1;
	int k = 0;
	for (; k < CF_MAX && cg->cf[i][k].file; k++)
		if (cg->cf[i][k].w == w && !strcmp(cg->cf[i][k].file, file))
			return cg->cf[i][k].fd;
	if (k == CF_MAX)
		return -1;
	int fd = openat(cg->d[i].dir, file, (w ? O_WRONLY : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0)
		cg->cf[i][k] = (typeof(cg->cf[i][k])){.file = file, .w = w, .fd = fd};
	return fd;
}

/* read_at and write_at of a run cgroup's file, through a kept fd where
 * there is one. */
static ssize_t cg_read(struct ward_cgroup *cg, int i, const char *file, char *buf, size_t len)
{
	int fd = kept_fd(cg, i, file, false);
	return fd < 0 ? read_at(cg->d[i].dir, file, buf, len) : pread_all(fd, buf, len);
}

static bool cg_read_u64(struct ward_cgroup *cg, int i, const char *file, uint64_t *v)
{
	char buf[64];
	return cg_read(cg, i, file, buf, sizeof buf) > 0 && parse_u64(buf, v);
}

static int cg_write(struct ward_cgroup *cg, int i, const char *file, const char *s)
{
	int fd = kept_fd(cg, i, file, true);
	if (fd < 0)
		return write_at(cg->d[i].dir, file, s);
	size_t len = strlen(s);
	ssize_t w = write(fd, s, len);
	return w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
}

/* A ward_cgroup with no directory yet: every fd -1. */
static struct ward_cgroup *cg_alloc(enum cg_version version)
{
	struct ward_cgroup *cg = calloc(1, sizeof *cg);
	if (!cg)
		return NULL;
	cg->version = version;
	for (int i = 0; i < NHIER; i++)
		cg->d[i].parent = cg->d[i].dir = cg->procs[i] = -1;
	cg->peak_fd = -1;
	return cg;
}

/* v1: socket buffers have a counter of their own, charged only once a
 * limit is set — before the sandbox makes its first socket.  The same figure
 * as the memory limit.  Not fatal: without it, --net loopback is refused
 * (cg_charges_sockets). */
static void set_tcp_limit(struct ward_cgroup *cg, int fd, uint64_t bytes)
{
	if (!P.kmem_tcp)
		return;
	int r = write_u64_at(fd, "memory.kmem.tcp.limit_in_bytes", bytes);
	if (r < 0)
		fprintf(stderr, "ward: cgroup %s: cannot write memory.kmem.tcp.limit_in_bytes: %s\n", cg->name,
			strerror(-r));
	cg->tcp = r == 0;
}

/* Set this run's limits in directory i.  0 or -errno, with what failed. */
/* update: the cgroup has limits already (see the v1 memsw ordering below). */
static int set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what, bool update)
{
	int fd = cg->d[i].dir, r = 0;
	unsigned m = cg->d[i].mask;
	if (cg->version == CG_V2) {
		if ((m & C_MEM) && lim->memory_bytes) {
			r = write_u64_at(fd, *what = "memory.max", lim->memory_bytes);
			if (r == 0 && P.swap_max && !P.swap_is_zero)
				r = write_at(fd, *what = "memory.swap.max", "0");
		}
		if (r == 0 && (m & C_PIDS) && lim->pids)
			r = write_u64_at(fd, *what = "pids.max", lim->pids);
		return r;
	}
	if ((m & C_MEM) && lim->memory_bytes) {
		/* memsw (RAM + swap) may never be below the RAM limit: set
		 * RAM first, then memsw to the same value, i.e. no swap.  When
		 * raising a limit, memsw must go first (the kernel refuses a
		 * RAM limit above memsw): try that order, and on EINVAL (it
		 * was a lowering) the other. */
		bool memsw_first = update && P.memsw;
		if (memsw_first) {
			r = write_u64_at(fd, *what = "memory.memsw.limit_in_bytes", lim->memory_bytes);
			if (r == -EINVAL)
				memsw_first = false;
			else if (r == 0)
				r = write_u64_at(fd, *what = "memory.limit_in_bytes", lim->memory_bytes);
		}
		if (!memsw_first) {
			r = write_u64_at(fd, *what = "memory.limit_in_bytes", lim->memory_bytes);
			if (r == 0 && P.memsw)
				r = write_u64_at(fd, *what = "memory.memsw.limit_in_bytes", lim->memory_bytes);
		}
	}
	if (r == 0 && (m & C_PIDS) && lim->pids)
		r = write_u64_at(fd, *what = "pids.max", lim->pids);
	if (r == 0 && (m & C_MEM) && lim->memory_bytes)
		set_tcp_limit(cg, fd, lim->memory_bytes);
	return r;
}

static int remove_dirs(struct ward_cgroup *cg);

/* ------------------------------------------------ recycling (ward serve)
 *
 * Making a cgroup and removing it is most of what cgroups cost a sandbox:
 * three mkdirs on v1 (each memory cgroup allocates per-CPU counters and
 * some thirty files), the limits written, three rmdirs whose offlining
 * the kernel finishes in workers.  A process that runs many sandboxes
 * (ward serve: ward_cgroup_keep) keeps up to n emptied run cgroups for the
 * next sandbox instead, but only one that, after its run's PID 1 was
 * reaped:
 *   - lists no process and counts no task (pids.current 0), has no cgroup
 *     beneath it (a session's), and
 *   - holds at most KEEP_LEFT_BYTES of memory still charged to it (kernel
 *     objects and page cache the run left, which the kernel reclaims under
 *     the next run's limit; a fresh cgroup would have had them reparented);
 * and whose counters can start again at this run's end:
 *   - v1: cpuacct.usage and memory(.memsw).max_usage_in_bytes are reset
 *     (written 0: the peak restarts at what is charged now), the OOM kill
 *     count read as a baseline;
 *   - v2: cpu.stat and memory.events are read as baselines, memory.peak is
 *     reset through an fd held for it (kernel 6.12 and later: before, the
 *     file cannot be reset, and no cgroup is kept).
 * Anything else and it is removed as before.  The next run's memory peak
 * starts at what was left charged (at most KEEP_LEFT_BYTES, as a fresh
 * cgroup's starts at the kernel objects its first process brings): it is
 * not subtracted, since the kernel frees part of it lazily during the run,
 * and a peak must not read lower than the run's own use.  What stays the
 * same is the directory's name, which says nothing a sandbox wrote; nothing
 * inside a sandbox can see or write its cgroup's files. */
#define KEEP_LEFT_BYTES (1u << 20)
static atomic_bool K_on;
static pthread_mutex_t K_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ward_cgroup **K_idle;
static unsigned K_n, K_keep, K_cap;
static uint64_t K_made, K_reused, K_discarded;

static struct ward_cgroup *keep_take(const struct cg_limits *lim, char *err, size_t errlen)
{
	if (!atomic_load(&K_on))
		return NULL;
	pthread_mutex_lock(&K_lock);
	struct ward_cgroup *cg = K_n ? K_idle[--K_n] : NULL;
	pthread_mutex_unlock(&K_lock);
	/* Still there (a ward that could not see our pid may have removed
	 * it, before the lock above existed), and with this run's limits:
	 * else a fresh one. */
	bool gone = false;
	for (int i = 0; cg && i < cg->n; i++) {
		struct stat st;
		gone = gone || fstatat(cg->d[i].parent, cg->name, &st, AT_SYMLINK_NOFOLLOW) < 0;
	}
	if (cg && (gone || ((cg->lim.memory_bytes != lim->memory_bytes || cg->lim.pids != lim->pids) &&
			    cg_set_limits(cg, lim, err, errlen) < 0))) {
		cg->recyclable = false; /* its limits are unknown now */
		cg_destroy(cg);
		cg = NULL;
	}
	pthread_mutex_lock(&K_lock);
	if (cg)
		K_reused++;
	else
		K_made++; /* the caller makes one */
	pthread_mutex_unlock(&K_lock);
	return cg;
}

/* Ready cg for another run: true, or false and it is removed instead. */
static bool keep_reset(struct ward_cgroup *cg)
{
	if (!cg->recyclable || cg->parent || cg->n == 0)
		return false;
	char buf[1024];
	uint64_t v;
	for (int i = 0; i < cg->n; i++) {
		int fd = cg->d[i].dir;
		unsigned m = cg->d[i].mask;
		bool v2 = cg->version == CG_V2;
		/* cgroup.procs read anew (v1 serves a kept fd the list it made
		 * up to a second before) */
		if (cg->d[i].removed || read_at(fd, "cgroup.procs", buf, 16) != 0)
			return false;
		if ((m & C_PIDS) && (!cg_read_u64(cg, i, "pids.current", &v) || v != 0))
			return false;
		if (m & C_MEM) {
			uint64_t left;
			if (!cg_read_u64(cg, i, v2 ? "memory.current" : "memory.usage_in_bytes", &left) ||
			    left > KEEP_LEFT_BYTES)
				return false;
			if (v2) {
				if (cg->peak_fd < 0)
					cg->peak_fd = openat(fd, "memory.peak", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
				if (cg->peak_fd < 0 || write(cg->peak_fd, "reset\n", 6) != 6 ||
				    cg_read(cg, i, "memory.events", buf, sizeof buf) <= 0 ||
				    !kv_get(buf, "oom_kill", &cg->base_oom))
					return false;
			} else if (cg_write(cg, i, "memory.max_usage_in_bytes", "0") < 0 ||
				   (P.memsw && cg_write(cg, i, "memory.memsw.max_usage_in_bytes", "0") < 0) ||
				   cg_read(cg, i, "memory.oom_control", buf, sizeof buf) <= 0 ||
				   !kv_get(buf, "oom_kill", &cg->base_oom)) {
				return false;
			}
		}
		if (v2) {
			if (cg_read(cg, i, "cpu.stat", buf, sizeof buf) <= 0 || !kv_get(buf, "usage_usec", &cg->base_cpu_us) ||
			    !kv_get(buf, "user_usec", &cg->base_user_us) || !kv_get(buf, "system_usec", &cg->base_sys_us))
				return false;
		} else if ((m & C_CPU) && cg_write(cg, i, "cpuacct.usage", "0") < 0) {
			return false;
		}
	}
	return true;
}

/* cg_destroy's first step: keep cg for the next run when it may be. */
static bool keep_put(struct ward_cgroup *cg)
{
	if (!cg->recyclable)
		return false;
	pthread_mutex_lock(&K_lock);
	bool room = K_n < K_keep;
	pthread_mutex_unlock(&K_lock);
	bool ok = room && keep_reset(cg);
	pthread_mutex_lock(&K_lock);
	if (ok && K_n < K_keep) {
		K_idle[K_n++] = cg;
		pthread_mutex_unlock(&K_lock);
		return true;
	}
	if (room)
		K_discarded++;
	pthread_mutex_unlock(&K_lock);
	cg->recyclable = false;
	return false;
}

/* The most fds one kept cgroup holds: per hierarchy its directory, its
 * parent, cgroup.procs and CF_MAX files; and memory.peak. */
#define KEEP_FDS (NHIER * (3 + CF_MAX) + 1)

void ward_cgroup_keep(unsigned n)
{
	/* Kept cgroups may hold at most a quarter of the open-files limit. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && n > rl.rlim_cur / 4 / KEEP_FDS)
		n = (unsigned)(rl.rlim_cur / 4 / KEEP_FDS);
	pthread_mutex_lock(&K_lock);
	if (n > K_cap) {
		struct ward_cgroup **grown = realloc(K_idle, sizeof(*K_idle) * n);
		if (!grown) {
			pthread_mutex_unlock(&K_lock);
			return;
		}
		K_idle = grown;
		K_cap = n;
	}
	K_keep = n;
	atomic_store(&K_on, n > 0);
	for (;;) {
		struct ward_cgroup *drop = K_n > K_keep ? K_idle[--K_n] : NULL;
		pthread_mutex_unlock(&K_lock);
		if (!drop)
			return;
		drop->recyclable = false;
		cg_destroy(drop);
		pthread_mutex_lock(&K_lock);
	}
}

void ward_cgroup_stats(struct ward_cgroup_stats *st)
{
	pthread_mutex_lock(&K_lock);
	*st = (struct ward_cgroup_stats){
		.keep = K_keep, .idle = K_n, .made = K_made, .reused = K_reused, .discarded = K_discarded};
	pthread_mutex_unlock(&K_lock);
}

struct ward_cgroup *cg_create(const struct cg_limits *lim, char *err, size_t errlen)
{
	const struct cg_probe *pr = cg_probe();
	if (!P.nh) {
		set_err(err, errlen, "%s", pr->why[0] ? pr->why : "no usable cgroups on this host");
		return NULL;
	}
	struct ward_cgroup *cg = keep_take(lim, err, errlen);
	if (cg)
		return cg;
	cg = cg_alloc(pr->version);
	if (!cg) {
		set_err(err, errlen, "cgroup: out of memory");
		return NULL;
	}
	cg->lim = *lim;
	/* v2 keeps one only where its memory peak can start again */
	cg->recyclable = atomic_load(&K_on) && (cg->version != CG_V2 || !P.pub.memory || P.peak_reset);

	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
		rnd = (uint32_t)now_ns() ^ (uint32_t)(uintptr_t)cg;
	unsigned n = atomic_fetch_add(&name_counter, 1);
	snprintf(cg->name, sizeof cg->name, "ward-%d-%u-%08x", (int)getpid(), n, rnd);

	for (int i = 0; i < P.nh; i++) {
		const char *what = "open";
		int pfd = open_cgdir(AT_FDCWD, P.h[i].path, O_PATH), r;
		if (pfd < 0) {
			set_err(err, errlen, "cgroup: cannot open %s: %s", P.h[i].path, strerror(-pfd));
			goto fail;
		}
		cg->d[cg->n].parent = pfd;
		cg->d[cg->n].mask = P.h[i].mask;
		cg->d[cg->n].removed = true; /* until mkdir succeeds */
		cg->n++;
		if (mkdirat(pfd, cg->name, 0755) < 0) {
			set_err(err, errlen, "cgroup: cannot create %s/%s: %s", P.h[i].path, cg->name, strerror(errno));
			goto fail;
		}
		cg->d[cg->n - 1].removed = false;
		r = open_cgdir(pfd, cg->name, O_RDONLY);
		if (r < 0) {
			set_err(err, errlen, "cgroup: cannot open %s/%s: %s", P.h[i].path, cg->name, strerror(-r));
			goto fail;
		}
		cg->d[cg->n - 1].dir = r;
		flock(r, LOCK_SH); /* ours while this fd lives: see sweep_orphans */
		r = set_limits(cg, cg->n - 1, lim, &what, false);
		if (r < 0) {
			set_err(err, errlen, "cgroup: cannot write %s/%s/%s: %s", P.h[i].path, cg->name, what, strerror(-r));
			goto fail;
		}
		cg->mask |= P.h[i].mask;
	}
	return cg;
fail:
	remove_dirs(cg);
	close_all(cg);
	return NULL;
}

int cg_set_limits(struct ward_cgroup *cg, const struct cg_limits *lim, char *err, size_t errlen)
{
	for (int i = 0; i < cg->n; i++) {
		const char *what = "";
		int r = set_limits(cg, i, lim, &what, true);
		if (r < 0) {
			set_err(err, errlen, "cgroup: cannot write %s/%s: %s", cg->name, what, strerror(-r));
			return -1;
		}
	}
	cg->lim = *lim;
	return 0;
}

int cg_attach(struct ward_cgroup *cg, pid_t pid)
{
	if (!cg)
		return -EINVAL;
	char buf[24];
	snprintf(buf, sizeof buf, "%d", (int)pid);
	size_t len = strlen(buf);
	for (int i = 0; i < cg->n; i++) {
		/* Kept open: a recycled cgroup takes many PID 1s. */
		if (cg->procs[i] < 0)
			cg->procs[i] = openat(cg->d[i].dir, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (cg->procs[i] < 0)
			return -errno;
		ssize_t w = write(cg->procs[i], buf, len);
		if (w < 0)
			return -errno;
		if ((size_t)w != len)
			return -EIO;
	}
	return 0;
}

int cg_dirfd(const struct ward_cgroup *cg)
{
	return cg && cg->version == CG_V2 ? cg->d[0].dir : -1;
}

const char *cg_mechanism(const struct ward_cgroup *cg)
{
	if (!cg)
		return "none";
	return cg->version == CG_V2 ? "cgroup-v2" : "cgroup-v1";
}

const char *cg_name(const struct ward_cgroup *cg)
{
	return cg ? cg->name : "";
}

bool cg_limits_memory(const struct ward_cgroup *cg) { return cg && (cg->mask & C_MEM); }
bool cg_limits_pids(const struct ward_cgroup *cg) { return cg && (cg->mask & C_PIDS); }
bool cg_accounts_cpu(const struct ward_cgroup *cg) { return cg && (cg->mask & C_CPU); }

bool cg_charges_sockets(const struct ward_cgroup *cg)
{
	if (!cg || !(cg->mask & C_MEM))
		return false;
	return cg->version == CG_V2 ? !P.nosocket : cg->tcp;
}

const char *cg_sockets_mechanism(const struct ward_cgroup *cg)
{
	if (!cg_charges_sockets(cg))
		return "none";
	return cg->version == CG_V2 ? "cgroup-v2" : "cgroup-v1-kmem";
}

/* Is pid (still) a member of this run's cgroup?  Reads /proc/PID/cgroup,
 * which names it relative to our own cgroup namespace. */
static bool pid_in_cgroup(const struct ward_cgroup *cg, pid_t pid)
{
	char path[40], buf[4096], needle[80];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	if (read_at(AT_FDCWD, path, buf, sizeof buf) <= 0)
		return false;
	snprintf(needle, sizeof needle, "/%s\n", cg->name);
	return strstr(buf, needle) != NULL;
}

/* SIGKILL pid, but only if it is in this cgroup: pids are recycled between
 * reading cgroup.procs and kill(2).  A pidfd pins the process, so what we
 * checked is what we signal (or something already dead). */
static void kill_member(const struct ward_cgroup *cg, pid_t pid, int sig)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		if (errno == ENOSYS && pid_in_cgroup(cg, pid))
			kill(pid, sig); /* kernel < 5.3: the check is all we have */
		return;
	}
	if (pid_in_cgroup(cg, pid))
		syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
	close(pfd);
}

/* Kill every process listed in dir's cgroup.procs.  The number listed, or
 * -errno. */
static int kill_listed(const struct ward_cgroup *cg, int dirfd, int sig)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	char buf[4096];
	long cur = -1;
	int count = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		/* A pid may straddle two reads: carry it over in cur. */
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				cur = (cur < 0 ? 0 : cur) * 10 + (buf[i] - '0');
				if (cur > INT_MAX)
					cur = INT_MAX;
			} else if (cur >= 0) {
				if (cur > 0) {
					kill_member(cg, (pid_t)cur, sig);
					count++;
				}
				cur = -1;
			}
		}
	}
	if (cur > 0) {
		kill_member(cg, (pid_t)cur, sig);
		count++;
	}
	close(fd);
	return count;
}

int cg_kill(struct ward_cgroup *cg)
{
	if (!cg)
		return -EINVAL;
	if (cg->version == CG_V2 && P.cg_kill && !cg->d[0].removed && write_at(cg->d[0].dir, "cgroup.kill", "1") == 0)
		return 0;
	int r = 0;
	for (int i = 0; i < cg->n; i++) {
		if (cg->d[i].removed)
			continue;
		int k = kill_listed(cg, cg->d[i].dir, SIGKILL);
		if (k < 0 && r == 0)
			r = k;
	}
	return r;
}

int cg_cpu_usage(struct ward_cgroup *cg, uint64_t *usage_us)
{
	if (!cg || !(cg->mask & C_CPU))
		return -ENOTSUP;
	for (int i = 0; i < cg->n; i++) {
		if (!(cg->d[i].mask & C_CPU))
			continue;
		if (cg->version == CG_V2) {
			char buf[512];
			ssize_t r = cg_read(cg, i, "cpu.stat", buf, sizeof buf);
			if (r < 0)
				return (int)r;
			if (!kv_get(buf, "usage_usec", usage_us))
				return -EIO;
			*usage_us -= *usage_us > cg->base_cpu_us ? cg->base_cpu_us : *usage_us;
			return 0;
		}
		uint64_t ns;
		if (!cg_read_u64(cg, i, "cpuacct.usage", &ns))
			return -EIO;
		*usage_us = ns / 1000;
		return 0;
	}
	return -ENOTSUP;
}

int cg_stats(struct ward_cgroup *cg, struct cg_stats *st)
{
	if (!cg || !st)
		return -EINVAL;
	memset(st, 0, sizeof *st);
	char buf[1024];
	uint64_t v;
	for (int i = 0; i < cg->n; i++) {
		int fd = cg->d[i].dir;
		unsigned m = cg->d[i].mask;
		if (cg->version == CG_V2) {
			if (cg_read(cg, i, "cpu.stat", buf, sizeof buf) > 0) {
				kv_get(buf, "usage_usec", &st->cpu_usage_us);
				kv_get(buf, "user_usec", &st->cpu_user_us);
				kv_get(buf, "system_usec", &st->cpu_sys_us);
				st->cpu_usage_us = since(st->cpu_usage_us, cg->base_cpu_us);
				st->cpu_user_us = since(st->cpu_user_us, cg->base_user_us);
				st->cpu_sys_us = since(st->cpu_sys_us, cg->base_sys_us);
			}
			if (m & C_MEM) {
				/* A recycled cgroup's peak: through the fd that reset it. */
				if (cg->peak_fd >= 0 ? !pread_u64(cg->peak_fd, &st->memory_peak)
						     : !cg_read_u64(cg, i, "memory.peak", &st->memory_peak))
					st->memory_peak = 0; /* before 5.19 */
				if (cg_read(cg, i, "memory.events", buf, sizeof buf) > 0 && kv_get(buf, "oom_kill", &v))
					st->oom_killed = v > cg->base_oom;
			}
			continue;
		}
		if (m & C_CPU) {
			if (cg_read_u64(cg, i, "cpuacct.usage", &v))
				st->cpu_usage_us = v / 1000;
			uint64_t u, s;
			if (cg_read_u64(cg, i, "cpuacct.usage_user", &u) && cg_read_u64(cg, i, "cpuacct.usage_sys", &s)) {
				st->cpu_user_us = u / 1000;
				st->cpu_sys_us = s / 1000;
			} else if (read_at(fd, "cpuacct.stat", buf, sizeof buf) > 0 && kv_get(buf, "user", &u) &&
				   kv_get(buf, "system", &s)) {
				long hz = sysconf(_SC_CLK_TCK);
				if (hz <= 0)
					hz = 100;
				st->cpu_user_us = u * 1000000 / (uint64_t)hz;
				st->cpu_sys_us = s * 1000000 / (uint64_t)hz;
			}
		}
		if (m & C_MEM) {
			if (!cg_read_u64(cg, i, P.memsw ? "memory.memsw.max_usage_in_bytes" : "memory.max_usage_in_bytes",
					 &st->memory_peak))
				st->memory_peak = 0;
			/* oom_kill in memory.oom_control since 4.13; before
			 * that, hitting the limit (failcnt) is the best sign. */
			if (cg_read(cg, i, "memory.oom_control", buf, sizeof buf) > 0 && kv_get(buf, "oom_kill", &v))
				st->oom_killed = v > cg->base_oom;
			else if (read_u64_at(fd, P.memsw ? "memory.memsw.failcnt" : "memory.failcnt", &v))
				st->oom_killed = v > 0;
		}
	}
	return 0;
}

/* rmdir what is left; 0 when all is gone, else -errno of the last failure. */
static int remove_dirs(struct ward_cgroup *cg)
{
	int r = 0;
	for (int i = 0; i < cg->n; i++) {
		if (cg->d[i].removed)
			continue;
		if (unlinkat(cg->d[i].parent, cg->name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			cg->d[i].removed = true;
		else
			r = -errno;
	}
	return r;
}

void cg_destroy(struct ward_cgroup *cg)
{
	if (!cg || keep_put(cg))
		return;
	/* Fast path: the supervisor has reaped the sandbox's init, and with
	 * it its PID namespace, so the cgroup is normally empty already. */
	int r = remove_dirs(cg);
	if (r == -EBUSY) {
		long long deadline = now_ns() + DESTROY_WAIT_NS;
		long us = 200;
		do {
			cg_kill(cg);
			nap_us(us);
			if (us < 20000)
				us *= 2;
			r = remove_dirs(cg);
		} while (r == -EBUSY && now_ns() < deadline);
	}
	if (r < 0)
		fprintf(stderr, "ward: cgroup %s not removed: %s\n", cg->name, strerror(-r));
	close_all(cg);
}

/* ------------------------------------------------- child cgroups (sessions) */

struct ward_cgroup *cg_child_create(struct ward_cgroup *parent, const char *prefix, char *err, size_t errlen)
{
	struct ward_cgroup *cg = cg_alloc(parent->version);
	if (!cg) {
		set_err(err, errlen, "cgroup: out of memory");
		return NULL;
	}
	cg->tcp = parent->tcp;
	parent->parent = true; /* a directory beneath: never recycled */
	/* Unique on the host (the parent's name is), so that pid_in_cgroup's
	 * match on "/NAME\n" names only this one. */
	unsigned n = atomic_fetch_add(&name_counter, 1);
	snprintf(cg->name, sizeof cg->name, "%.4s%u-%.40s", prefix, n, parent->name);
	for (int i = 0; i < parent->n; i++) {
		cg->d[i].parent = fcntl(parent->d[i].dir, F_DUPFD_CLOEXEC, 0);
		cg->d[i].mask = parent->d[i].mask;
		cg->d[i].removed = true;
		cg->n++;
		if (cg->d[i].parent < 0 || mkdirat(cg->d[i].parent, cg->name, 0755) < 0) {
			set_err(err, errlen, "cgroup: cannot create %s/%s: %s", parent->name, cg->name, strerror(errno));
			goto fail;
		}
		cg->d[i].removed = false;
		int r = open_cgdir(cg->d[i].parent, cg->name, O_RDONLY);
		if (r < 0) {
			set_err(err, errlen, "cgroup: cannot open %s/%s: %s", parent->name, cg->name, strerror(-r));
			goto fail;
		}
		cg->d[i].dir = r;
	}
	cg->mask = parent->mask;
	return cg;
fail:
	remove_dirs(cg);
	close_all(cg);
	return NULL;
}

int cg_delegate(struct ward_cgroup *cg)
{
	if (cg->version != CG_V2)
		return 0; /* v1: children share their parent's limits as they are */
	unsigned got = v2_enable(cg->d[0].dir, cg->d[0].mask, NULL);
	return (got & cg->d[0].mask) == cg->d[0].mask ? 0 : -EBUSY;
}

bool cg_empty(struct ward_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++) {
		char buf[16];
		if (!cg->d[i].removed && read_at(cg->d[i].dir, "cgroup.procs", buf, sizeof buf) > 0)
			return false;
	}
	return true;
}

int cg_now(struct ward_cgroup *cg, uint64_t *memory_bytes, uint64_t *pids)
{
	*memory_bytes = *pids = 0;
	for (int i = 0; i < cg->n; i++) {
		bool v2 = cg->version == CG_V2;
		if (cg->d[i].mask & C_MEM)
			read_u64_at(cg->d[i].dir, v2 ? "memory.current" : "memory.usage_in_bytes", memory_bytes);
		if (cg->d[i].mask & C_PIDS)
			read_u64_at(cg->d[i].dir, "pids.current", pids);
	}
	return 0;
}

int cg_signal(struct ward_cgroup *cg, int sig)
{
	if (sig == SIGKILL)
		return cg_kill(cg);
	/* one hierarchy lists every process (v1: each lists them all) */
	if (!cg->n || cg->d[0].removed)
		return -ESRCH;
	int k = kill_listed(cg, cg->d[0].dir, sig);
	return k < 0 ? k : 0;
}
