/* cgroup_int.h — what the files of the cgroup mechanism share (cgroup.h is
 * its interface; nothing outside src/sandbox/cgroup*.c includes this).
 *
 *   cgroup.c        one run's cgroup: create, limits, attach, kill, stats,
 *                   destroy; child cgroups (sessions)
 *   cgroup_probe.c  the host's layout, learnt once: mounts, the version,
 *                   where run cgroups go; the sweep of a dead ward's ones
 *   cgroup_v1.c     what only v1 does: its probe, limits, counters, resets
 *   cgroup_v2.c     what only v2 does: its probe (delegation, the leaf),
 *                   limits, counters, resets
 *   cgroup_keep.c   emptied cgroups kept for the next run (ward serve), or
 *                   for the next process in a host-wide slot (ward run)
 *   cgroup_park.c   v1: a process parked in each kept cgroup, which clones
 *                   the next PID 1 there (no move on its path)
 *   cgroup_io.c     reading and writing cgroup files; the probe's notes
 *
 * Threads: cg_host is written once under pthread_once (cg_probe) and only
 * read after; the kept cgroups have a lock of their own (cgroup_keep.c);
 * a struct ward_cgroup belongs to one caller. */
#ifndef WARD_SANDBOX_CGROUP_INT_H
#define WARD_SANDBOX_CGROUP_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/cgroup.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The controllers ward uses, as bits.  On v1 "cpu" means cpuacct. */
enum { C_MEM = 1, C_PIDS = 2, C_CPU = 4 };
#define NHIER 3  /* at most one v1 hierarchy per controller */
#define CF_MAX 8 /* files kept open per hierarchy of a recycled cgroup */

/* How long cg_destroy waits for a cgroup to empty before giving up: long
 * enough for a killed tree to exit, short enough never to hang a run. */
#define DESTROY_WAIT_NS (5LL * 1000000000)
/* The most memory still charged to an emptied cgroup that is kept for the
 * next run (cgroup_keep.c). */
#define KEEP_LEFT_BYTES (1u << 20)
/* How old an empty run cgroup of a dead ward must be before we remove it. */
#define ORPHAN_AGE_S 30

struct hier {
	char path[PATH_MAX]; /* parent directory of run cgroups */
	unsigned mask;       /* controllers of this hierarchy ward uses */
};

/* Everything the probe learns: the host's cgroup layout, the same for every
 * run, so learnt once (pthread_once, cg_probe) and read-only after. */
struct cg_host {
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
};
extern struct cg_host cg_host;

/* A mount of a cgroup filesystem (mountinfo). */
struct mnt {
	char point[PATH_MAX];
	char root[PATH_MAX];
	bool found;
};

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
	bool tcp; /* socket buffers are charged to a limit (see cg_charges_sockets) */
	char name[64];
	/* Recycling (ward_cgroup_keep): */
	bool recyclable;      /* made by cg_create while cgroups are kept */
	bool parent;          /* cg_child_create made one beneath it: never kept */
	struct cg_limits lim; /* as last written */
	int procs[NHIER];     /* cgroup.procs, kept open: -1 until first used */
	int peak_fd;          /* v2: memory.peak, reset through this fd; -1 */
	struct {
		const char *file;
		bool w;
		int fd;
	} cf[NHIER][CF_MAX];                             /* files of a recycled cgroup, kept open */
	uint64_t base_cpu_us, base_user_us, base_sys_us; /* v2: cpu.stat when this run began */
	uint64_t base_oom;                               /* OOM kills counted when this run began */
	int slot_fd;                                     /* cg_slot_take: the slot's lock, released with it; -1 */
	pid_t park_pid;                                  /* v1: the process parked in it (cgroup_park.c); 0 */
	int park_sock;                                   /* its socket; -1 */
};

/* cgroup_io.c: files by directory fd (one write(2) each, as cgroup files
 * want; reads NUL-terminated), numbers, and the probe's notes (cg_why). */
long long cg_now_ns(void);
void cg_nap_us(long us);
int cg_write_at(int dirfd, const char *file, const char *s);
int cg_write_u64_at(int dirfd, const char *file, uint64_t v);
ssize_t cg_read_at(int dirfd, const char *file, char *buf, size_t len);
bool cg_kv_get(const char *buf, const char *key, uint64_t *v);
bool cg_parse_u64(const char *buf, uint64_t *v);
bool cg_read_u64_at(int dirfd, const char *file, uint64_t *v);
ssize_t cg_pread_all(int fd, char *buf, size_t len);
bool cg_pread_u64(int fd, uint64_t *v);
uint64_t cg_since(uint64_t now, uint64_t base);
int cg_open_dir(int at, const char *path, int flags);
void cg_scopy(char *dst, size_t n, const char *src);
void cg_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cgroup_probe.c: what the version probes share. */
bool cg_has_word(const char *list, const char *word);
bool cg_own_cgroup(const char *ctrl, char *out, size_t outlen);
void cg_dir_of(const struct mnt *m, const char *cg, char *out, size_t outlen);
int cg_make_ward_dir(const char *parent, char *out, size_t outlen);

/* cgroup_v1.c and cgroup_v2.c: each version's probe, limits (in directory
 * i; 0 or -errno with *what naming the file), counters and resets. */
void cg_v1_probe(const struct mnt v1[3]);
int cg_v1_set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what, bool update);
bool cg_v1_reset(struct ward_cgroup *cg, int i);
bool cg_v1_restart(struct ward_cgroup *cg, int i);
void cg_v1_stats(struct ward_cgroup *cg, int i, struct cg_stats *st);
void cg_v2_probe(const struct mnt *m);
void cg_v2_probe_files(void);
unsigned cg_v2_enable(int dirfd, unsigned want, unsigned *offered);
int cg_v2_set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what);
bool cg_v2_reset(struct ward_cgroup *cg, int i);
void cg_v2_stats(struct ward_cgroup *cg, int i, struct cg_stats *st);

/* cgroup.c: a run cgroup's files, through a kept fd where there is one. */
ssize_t cg_read(struct ward_cgroup *cg, int i, const char *file, char *buf, size_t len);
bool cg_read_u64(struct ward_cgroup *cg, int i, const char *file, uint64_t *v);
int cg_write(struct ward_cgroup *cg, int i, const char *file, const char *s);
struct ward_cgroup *cg_alloc(enum cg_version version);
void cg_close_all(struct ward_cgroup *cg);
int cg_remove_dirs(struct ward_cgroup *cg);
int cg_procs_fd(struct ward_cgroup *cg, int i); /* cgroup.procs of directory i, kept open; or -errno */

/* cgroup_park.c: park a process in kept cg (v1, when a parker is set; on
 * failure none is); whether pid is the one parked in cg; pids.max of
 * directory i, one higher while one is parked; moves counted (cg_attach);
 * the counters of ward_cgroup_stats. */
void cg_park(struct ward_cgroup *cg);
bool cg_is_parked(const struct ward_cgroup *cg, pid_t pid);
int cg_write_pids_max(struct ward_cgroup *cg, int i, uint32_t pids);
void cg_count_move(void);
void cg_park_stats(uint64_t *parked, uint64_t *born, uint64_t *moved);

/* cgroup_keep.c: a kept cgroup with these limits, or NULL (make one); keep
 * cg for the next run (true) or not (false: the caller removes it). */
bool cg_keep_on(void);
struct ward_cgroup *cg_keep_take(const struct cg_limits *lim, char *err, size_t errlen);
bool cg_keep_put(struct ward_cgroup *cg);
bool cg_keep_reset(struct ward_cgroup *cg);
struct ward_cgroup *cg_slot_take(const struct cg_limits *lim);
bool cg_slot_put(struct ward_cgroup *cg);
/* cgroup.c: cg->name's directory in each hierarchy, opened, with lim
 * written; reuse: one that exists already is taken if it lists no
 * process.  0, or -1 with err set (what was made stays: the caller removes
 * it). */
int cg_make_dirs(struct ward_cgroup *cg, const struct cg_limits *lim, bool reuse, char *err, size_t errlen);

#endif
