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
 * The mechanism's files are listed in cgroup_int.h: this one is one run's
 * cgroup; the probe, each version's own files, the kept cgroups and the
 * file I/O are beside it.
 *
 * Threads: the probe is computed once under pthread_once and never changes;
 * the kept cgroups have their lock (cgroup_keep.c); the name counter is
 * atomic.  A struct ward_cgroup belongs to one caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errf.h"
#include "sandbox/cgroup_int.h"
#include "ward.h"

static atomic_uint name_counter; /* makes run cgroups' names unique in this process */

void cg_close_all(struct ward_cgroup *cg)
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
	if (cg->slot_fd >= 0)
		close(cg->slot_fd); /* the slot is free again */
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
ssize_t cg_read(struct ward_cgroup *cg, int i, const char *file, char *buf, size_t len)
{
	int fd = kept_fd(cg, i, file, false);
	return fd < 0 ? cg_read_at(cg->d[i].dir, file, buf, len) : cg_pread_all(fd, buf, len);
}

bool cg_read_u64(struct ward_cgroup *cg, int i, const char *file, uint64_t *v)
{
	char buf[64];
	return cg_read(cg, i, file, buf, sizeof buf) > 0 && cg_parse_u64(buf, v);
}

int cg_write(struct ward_cgroup *cg, int i, const char *file, const char *s)
{
	int fd = kept_fd(cg, i, file, true);
	if (fd < 0)
		return cg_write_at(cg->d[i].dir, file, s);
	size_t len = strlen(s);
	ssize_t w = write(fd, s, len);
	return w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
}

/* A ward_cgroup with no directory yet: every fd -1. */
struct ward_cgroup *cg_alloc(enum cg_version version)
{
	struct ward_cgroup *cg = calloc(1, sizeof *cg);
	if (!cg)
		return NULL;
	cg->version = version;
	for (int i = 0; i < NHIER; i++)
		cg->d[i].parent = cg->d[i].dir = cg->procs[i] = -1;
	cg->peak_fd = cg->slot_fd = cg->park_sock = -1;
	return cg;
}

/* Set this run's limits in directory i.  0 or -errno, with what failed.
 * update: the cgroup has limits already (v1 orders memsw by it). */
static int set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what, bool update)
{
	return cg->version == CG_V2 ? cg_v2_set_limits(cg, i, lim, what) : cg_v1_set_limits(cg, i, lim, what, update);
}

struct ward_cgroup *cg_create(const struct cg_limits *lim, char *err, size_t errlen)
{
	const struct cg_probe *pr = cg_probe();
	if (!cg_host.nh) {
		base_errf(err, errlen, "%s", pr->why[0] ? pr->why : "no usable cgroups on this host");
		return NULL;
	}
	struct ward_cgroup *cg = cg_keep_take(lim, err, errlen);
	if (cg || (cg = cg_slot_take(lim)))
		return cg;
	cg = cg_alloc(pr->version);
	if (!cg) {
		base_errf(err, errlen, "cgroup: out of memory");
		return NULL;
	}
	cg->lim = *lim;
	/* v2 keeps one only where its memory peak can start again */
	cg->recyclable = cg_keep_on() && (cg->version != CG_V2 || !cg_host.pub.memory || cg_host.peak_reset);

	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
		rnd = (uint32_t)cg_now_ns() ^ (uint32_t)(uintptr_t)cg;
	unsigned n = atomic_fetch_add(&name_counter, 1);
	snprintf(cg->name, sizeof cg->name, "ward-%d-%u-%08x", (int)getpid(), n, rnd);

	if (cg_make_dirs(cg, lim, false, err, errlen) < 0) {
		cg_remove_dirs(cg);
		cg_close_all(cg);
		return NULL;
	}
	return cg;
}

int cg_make_dirs(struct ward_cgroup *cg, const struct cg_limits *lim, bool reuse, char *err, size_t errlen)
{
	for (int i = 0; i < cg_host.nh; i++) {
		const char *what = "open";
		int pfd = cg_open_dir(AT_FDCWD, cg_host.h[i].path, O_PATH), r;
		if (pfd < 0) {
			base_errf(err, errlen, "cgroup: cannot open %s: %s", cg_host.h[i].path, strerror(-pfd));
			return -1;
		}
		cg->d[cg->n].parent = pfd;
		cg->d[cg->n].mask = cg_host.h[i].mask;
		cg->d[cg->n].removed = true; /* until mkdir succeeds */
		cg->n++;
		bool existed = false;
		if (mkdirat(pfd, cg->name, 0755) < 0 && !(existed = reuse && errno == EEXIST)) {
			base_errf(err, errlen, "cgroup: cannot create %s/%s: %s", cg_host.h[i].path, cg->name,
			          strerror(errno));
			return -1;
		}
		cg->d[cg->n - 1].removed = false;
		r = cg_open_dir(pfd, cg->name, O_RDONLY);
		if (r < 0) {
			base_errf(err, errlen, "cgroup: cannot open %s/%s: %s", cg_host.h[i].path, cg->name,
			          strerror(-r));
			return -1;
		}
		cg->d[cg->n - 1].dir = r;
		flock(r, LOCK_SH); /* ours while this fd lives: see sweep_orphans */
		char procs[16];
		if (existed && cg_read_at(r, "cgroup.procs", procs, sizeof procs) != 0) {
			base_errf(err, errlen, "cgroup: %s/%s is in use", cg_host.h[i].path, cg->name);
			return -1;
		}
		r = set_limits(cg, cg->n - 1, lim, &what, existed);
		if (r < 0) {
			base_errf(err, errlen, "cgroup: cannot write %s/%s/%s: %s", cg_host.h[i].path, cg->name, what,
			          strerror(-r));
			return -1;
		}
		cg->mask |= cg_host.h[i].mask;
	}
	return 0;
}

int cg_set_limits(struct ward_cgroup *cg, const struct cg_limits *lim, char *err, size_t errlen)
{
	for (int i = 0; i < cg->n; i++) {
		const char *what = "";
		int r = set_limits(cg, i, lim, &what, true);
		if (r < 0) {
			base_errf(err, errlen, "cgroup: cannot write %s/%s: %s", cg->name, what, strerror(-r));
			return -1;
		}
	}
	cg->lim = *lim;
	return 0;
}

int cg_procs_fd(struct ward_cgroup *cg, int i)
{
	/* Kept open: a recycled cgroup takes many PID 1s. */
	if (cg->procs[i] < 0)
		cg->procs[i] = openat(cg->d[i].dir, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	return cg->procs[i] < 0 ? -errno : cg->procs[i];
}

int cg_attach(struct ward_cgroup *cg, pid_t pid)
{
	if (!cg)
		return -EINVAL;
	char buf[24];
	snprintf(buf, sizeof buf, "%d", (int)pid);
	size_t len = strlen(buf);
	cg_count_move();
	for (int i = 0; i < cg->n; i++) {
		int fd = cg_procs_fd(cg, i);
		if (fd < 0)
			return fd;
		ssize_t w = write(fd, buf, len);
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

bool cg_limits_memory(const struct ward_cgroup *cg)
{
	return cg && (cg->mask & C_MEM);
}
bool cg_limits_pids(const struct ward_cgroup *cg)
{
	return cg && (cg->mask & C_PIDS);
}
bool cg_accounts_cpu(const struct ward_cgroup *cg)
{
	return cg && (cg->mask & C_CPU);
}

bool cg_charges_sockets(const struct ward_cgroup *cg)
{
	if (!cg || !(cg->mask & C_MEM))
		return false;
	return cg->version == CG_V2 ? !cg_host.nosocket : cg->tcp;
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
	if (cg_read_at(AT_FDCWD, path, buf, sizeof buf) <= 0)
		return false;
	snprintf(needle, sizeof needle, "/%s\n", cg->name);
	return strstr(buf, needle) != NULL;
}

/* SIGKILL pid, but only if it is in this cgroup: pids are recycled between
 * reading cgroup.procs and kill(2).  A pidfd pins the process, so what we
 * checked is what we signal (or something already dead). */
static void kill_member(const struct ward_cgroup *cg, pid_t pid, int sig)
{
	if (cg_is_parked(cg, pid))
		return; /* not the sandbox's (cgroup_park.c) */
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
	if (cg->version == CG_V2 && cg_host.cg_kill && !cg->d[0].removed &&
	    cg_write_at(cg->d[0].dir, "cgroup.kill", "1") == 0)
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
			if (!cg_kv_get(buf, "usage_usec", usage_us))
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
	for (int i = 0; i < cg->n; i++) {
		if (cg->version == CG_V2)
			cg_v2_stats(cg, i, st);
		else
			cg_v1_stats(cg, i, st);
	}
	return 0;
}

/* rmdir what is left; 0 when all is gone, else -errno of the last failure. */
int cg_remove_dirs(struct ward_cgroup *cg)
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
	if (!cg || cg_slot_put(cg) || cg_keep_put(cg))
		return;
	(void)cg_unpark(cg);
	/* Fast path: the supervisor has reaped the sandbox's init, and with
	 * it its PID namespace, so the cgroup is normally empty already. */
	int r = cg_remove_dirs(cg);
	if (r == -EBUSY) {
		long long deadline = cg_now_ns() + DESTROY_WAIT_NS;
		long us = 200;
		do {
			cg_kill(cg);
			cg_nap_us(us);
			if (us < 20000)
				us *= 2;
			r = cg_remove_dirs(cg);
		} while (r == -EBUSY && cg_now_ns() < deadline);
	}
	if (r < 0)
		fprintf(stderr, "ward: cgroup %s not removed: %s\n", cg->name, strerror(-r));
	cg_close_all(cg);
}

/* ------------------------------------------------- child cgroups (sessions) */

struct ward_cgroup *cg_child_create(struct ward_cgroup *parent, const char *prefix, char *err, size_t errlen)
{
	struct ward_cgroup *cg = cg_alloc(parent->version);
	if (!cg) {
		base_errf(err, errlen, "cgroup: out of memory");
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
			base_errf(err, errlen, "cgroup: cannot create %s/%s: %s", parent->name, cg->name,
			          strerror(errno));
			goto fail;
		}
		cg->d[i].removed = false;
		int r = cg_open_dir(cg->d[i].parent, cg->name, O_RDONLY);
		if (r < 0) {
			base_errf(err, errlen, "cgroup: cannot open %s/%s: %s", parent->name, cg->name, strerror(-r));
			goto fail;
		}
		cg->d[i].dir = r;
	}
	cg->mask = parent->mask;
	return cg;
fail:
	cg_remove_dirs(cg);
	cg_close_all(cg);
	return NULL;
}

int cg_delegate(struct ward_cgroup *cg)
{
	if (cg->version != CG_V2)
		return 0; /* v1: children share their parent's limits as they are */
	unsigned got = cg_v2_enable(cg->d[0].dir, cg->d[0].mask, NULL);
	return (got & cg->d[0].mask) == cg->d[0].mask ? 0 : -EBUSY;
}

bool cg_empty(struct ward_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++) {
		char buf[16];
		if (!cg->d[i].removed && cg_read_at(cg->d[i].dir, "cgroup.procs", buf, sizeof buf) > 0)
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
			cg_read_u64_at(cg->d[i].dir, v2 ? "memory.current" : "memory.usage_in_bytes", memory_bytes);
		if ((cg->d[i].mask & C_PIDS) && cg_read_u64_at(cg->d[i].dir, "pids.current", pids) && *pids &&
		    cg->park_pid > 0)
			(*pids)--; /* the parked process is not the sandbox's */
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
