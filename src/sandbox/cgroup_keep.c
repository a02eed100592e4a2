/* cgroup_keep.c — emptied cgroups kept for the next run (ward serve), and
 * across processes in host-wide slots (ward run: see "slots" below).
 *
 * Making a cgroup and removing it is most of what cgroups cost a sandbox:
 * three mkdirs on v1 (each memory cgroup allocates per-CPU counters and
 * some thirty files), the limits written, three rmdirs whose offlining
 * the kernel finishes in workers.  A process that runs many sandboxes
 * (ward serve: ward_cgroup_keep) keeps up to n emptied run cgroups for the
 * next sandbox instead, but only one that, after its run's PID 1 was
 * reaped:
 *   - lists no process and counts no task (pids.current 0) but the one
 *     parked in it (cgroup_park.c), has no cgroup
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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"
#include "sandbox/lockfile.h"
#include "ward.h"

/* The kept cgroups, shared by every thread that runs sandboxes. */
static struct {
	atomic_bool on;
	pthread_mutex_t lock;
	struct ward_cgroup **idle;
	unsigned n, keep, cap;
	uint64_t made, reused, discarded;
} K = {.lock = PTHREAD_MUTEX_INITIALIZER};

bool cg_keep_on(void)
{
	return atomic_load(&K.on);
}

struct ward_cgroup *cg_keep_take(const struct cg_limits *lim, char *err, size_t errlen)
{
	if (!atomic_load(&K.on))
		return NULL;
	pthread_mutex_lock(&K.lock);
	struct ward_cgroup *cg = K.n ? K.idle[--K.n] : NULL;
	pthread_mutex_unlock(&K.lock);
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
	pthread_mutex_lock(&K.lock);
	if (cg)
		K.reused++;
	else
		K.made++; /* the caller makes one */
	pthread_mutex_unlock(&K.lock);
	return cg;
}

/* Ready cg for another run: true, or false and it is removed instead. */
bool cg_keep_reset(struct ward_cgroup *cg)
{
	if (!cg->recyclable || cg->parent || cg->n == 0)
		return false;
	char buf[16];
	uint64_t v;
	/* what cgroup.procs lists when it holds no process but the parked
	 * one (cgroup_park.c) */
	char alone[16] = "";
	if (cg->park_pid > 0)
		snprintf(alone, sizeof alone, "%d\n", (int)cg->park_pid);
	for (int i = 0; i < cg->n; i++) {
		/* cgroup.procs read anew (v1 serves a kept fd the list it made
		 * up to a second before) */
		ssize_t n = cg->d[i].removed ? -1 : cg_read_at(cg->d[i].dir, "cgroup.procs", buf, sizeof buf - 1);
		if (n < 0 || (size_t)n != strlen(alone) || memcmp(buf, alone, (size_t)n) != 0)
			return false;
		if ((cg->d[i].mask & C_PIDS) && (!cg_read_u64(cg, i, "pids.current", &v) || v != (cg->park_pid > 0)))
			return false;
		if (!(cg->version == CG_V2 ? cg_v2_reset(cg, i) : cg_v1_reset(cg, i)))
			return false;
	}
	return true;
}

/* cg_destroy's first step: keep cg for the next run when it may be. */
bool cg_keep_put(struct ward_cgroup *cg)
{
	if (!cg->recyclable)
		return false;
	pthread_mutex_lock(&K.lock);
	bool room = K.n < K.keep;
	pthread_mutex_unlock(&K.lock);
	bool ok = room && cg_keep_reset(cg);
	if (ok)
		cg_park(cg); /* v1: the next PID 1s' cloner, moved in once (cgroup_park.c) */
	pthread_mutex_lock(&K.lock);
	if (ok && K.n < K.keep) {
		K.idle[K.n++] = cg;
		pthread_mutex_unlock(&K.lock);
		return true;
	}
	if (room)
		K.discarded++;
	pthread_mutex_unlock(&K.lock);
	cg->recyclable = false;
	return false;
}

/* The most fds one kept cgroup holds: per hierarchy its directory, its
 * parent, cgroup.procs and CF_MAX files; memory.peak; a parked process's
 * socket. */
#define KEEP_FDS (NHIER * (3 + CF_MAX) + 2)

void ward_cgroup_keep(unsigned n)
{
	/* Kept cgroups may hold at most a quarter of the open-files limit. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && n > rl.rlim_cur / 4 / KEEP_FDS)
		n = (unsigned)(rl.rlim_cur / 4 / KEEP_FDS);
	pthread_mutex_lock(&K.lock);
	if (n > K.cap) {
		struct ward_cgroup **grown = realloc(K.idle, sizeof(*K.idle) * n);
		if (!grown) {
			pthread_mutex_unlock(&K.lock);
			return;
		}
		K.idle = grown;
		K.cap = n;
	}
	K.keep = n;
	atomic_store(&K.on, n > 0);
	for (;;) {
		struct ward_cgroup *drop = K.n > K.keep ? K.idle[--K.n] : NULL;
		pthread_mutex_unlock(&K.lock);
		if (!drop)
			return;
		drop->recyclable = false;
		cg_destroy(drop);
		pthread_mutex_lock(&K.lock);
	}
}

void ward_cgroup_stats(struct ward_cgroup_stats *st)
{
	pthread_mutex_lock(&K.lock);
	*st = (struct ward_cgroup_stats){
		.keep = K.keep, .idle = K.n, .made = K.made, .reused = K.reused, .discarded = K.discarded};
	pthread_mutex_unlock(&K.lock);
	cg_park_stats(&st->parked, &st->born_parked, &st->moved);
}

/* ------------------------------------------------------------------ slots
 *
 * A process that runs one sandbox (ward run) cannot keep its cgroup for a
 * next run of its own: it keeps it for the next such process instead, in
 * one of SLOTS host-wide slots.  Slot N is the run cgroup "ward-slot-N" in
 * each hierarchy, held by an OFD lock on byte N of /run/ward/cg-slots (the
 * lock goes with the process, however it ends).  A run takes the first
 * free slot, and uses its cgroup only under the proof kept cgroups pass
 * (no process, no pids, at most KEEP_LEFT_BYTES still charged; counters
 * reset, baselines read: cg_keep_reset) — else it removes what it can of
 * it and makes a cgroup of its own, as without slots.  At its end it
 * leaves the cgroup in place when it is empty, else removes it.  The
 * sweep of dead wards' cgroups never matches these names (cgroup_probe.c:
 * "ward-" and a pid). */
#define SLOTS 8
#define SLOT_FILE "cg-slots"

static atomic_bool slots_on;

void ward_cgroup_slots(bool on)
{
	atomic_store(&slots_on, on);
}

struct ward_cgroup *cg_slot_take(const struct cg_limits *lim)
{
	const struct cg_probe *pr = cg_probe();
	/* v2: only where the memory peak can start again (as kept cgroups) */
	if (!atomic_load(&slots_on) || cg_keep_on() || geteuid() != 0 ||
	    (pr->version == CG_V2 && cg_host.pub.memory && !cg_host.peak_reset))
		return NULL;
	int fd = lockfile_open(SLOT_FILE);
	if (fd < 0)
		return NULL;
	for (int n = 0; n < SLOTS; n++) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = n, .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
			continue;
		struct ward_cgroup *cg = cg_alloc(pr->version);
		if (!cg)
			break;
		cg->slot_fd = fd;
		cg->recyclable = true; /* its files kept open, and cg_keep_reset's proof */
		cg->lim = *lim;
		snprintf(cg->name, sizeof cg->name, "ward-slot-%d", n);
		char err[256];
		if (cg_make_dirs(cg, lim, true, err, sizeof err) == 0 && cg_keep_reset(cg))
			return cg;
		cg->recyclable = false;
		cg_remove_dirs(cg); /* what can go (an emptied one holding too much) */
		cg_close_all(cg);   /* and the slot with it */
		return NULL;
	}
	close(fd);
	return NULL;
}

bool cg_slot_put(struct ward_cgroup *cg)
{
	if (cg->slot_fd < 0)
		return false;
	char buf[16];
	uint64_t v;
	bool empty = !cg->parent && cg->n > 0;
	for (int i = 0; empty && i < cg->n; i++)
		empty = !cg->d[i].removed && cg_read_at(cg->d[i].dir, "cgroup.procs", buf, sizeof buf) == 0 &&
		        (!(cg->d[i].mask & C_PIDS) || (cg_read_u64(cg, i, "pids.current", &v) && v == 0));
	if (!empty) {
		cg->recyclable = false; /* removed as any other (cg_destroy) */
		return false;
	}
	cg_close_all(cg); /* left for the next run: the slot's lock goes */
	return true;
}
