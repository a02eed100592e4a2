/* cgroup.h — resource limits for one run's process tree, cgroup v1 or v2
 * behind one small interface (create / attach / kill / stats / destroy).
 *
 * The supervisor creates the cgroup before the sandbox's PID 1 runs any of
 * the user's code, attaches PID 1 to it (every descendant inherits it), and
 * destroys it after the run: kill what is left, wait until it is empty,
 * rmdir.  Every cgroup ward creates is removed, also when the run fails.
 *
 * None of this runs inside the sandbox: only the supervisor calls it.
 */
#ifndef WARD_CGROUP_H
#define WARD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum cg_version { CG_NONE = 0, CG_V1 = 1, CG_V2 = 2 };

/* What this host lets this process use. */
struct cg_probe {
	enum cg_version version;
	bool memory, pids, cpu; /* controllers ward can use here */
	char where[256];        /* parent directory ward creates its cgroups in */
	char why[256];          /* when a controller is missing: why, and the fix */
};

struct cg_limits {
	uint64_t memory_bytes; /* 0 = no limit; swap is always limited to 0 */
	uint32_t pids;         /* 0 = no limit */
};

struct cg_stats {
	uint64_t cpu_usage_us; /* user + system of the whole tree */
	uint64_t cpu_user_us;
	uint64_t cpu_sys_us;
	uint64_t memory_peak; /* bytes, 0 when unknown */
	bool oom_killed;      /* the OOM killer fired in this cgroup */
};

struct ward_cgroup;

/* Probe once per process (cheap to call again: the answer is cached).
 * The first call also prepares the parent: it makes <ctrl>/ward (v1) or
 * /sys/fs/cgroup/ward (v2) and enables controllers there, or, in a
 * delegated v2 cgroup, moves this process into <own>/ward-supervisor; and
 * it removes empty run cgroups left by wards that died (SIGKILL) over 30 s
 * ago. */
const struct cg_probe *cg_probe(void);

/* Create a fresh, uniquely named cgroup with these limits.  Returns NULL and
 * a message in err when this host gives ward no cgroups (the caller then
 * falls back to rlimits and says so). */
struct ward_cgroup *cg_create(const struct cg_limits *lim, char *err, size_t errlen);

/* Change the limits of a cgroup (a sandbox built ahead of its request
 * gets those of the request), up or down.  0, or -1 with err set. */
int cg_set_limits(struct ward_cgroup *cg, const struct cg_limits *lim, char *err, size_t errlen);

/* Move pid into the cgroup. 0 or -errno. */
int cg_attach(struct ward_cgroup *cg, pid_t pid);

/* cgroup v1 (cgroup_park.c): a parker forks a process that moves itself
 * into the cgroup.procs fds given (one per hierarchy: n), then clones a
 * PID 1 on each request over the socket it returns (or -errno), until that
 * socket closes; *pid is its pid, a child of the caller.  Set one (NULL:
 * none) and each kept v1 cgroup gets a process parked in it. */
typedef int cg_parker(const int *procs, int n, pid_t *pid);
void cg_set_parker(cg_parker *p);
/* The socket of the process parked in cg, or -1: none. */
int cg_parked_sock(const struct ward_cgroup *cg);
/* It cloned PID 1 (which has not gone yet): the counters start again, so
 * that what it spent is not the sandbox's.  0 or -errno. */
int cg_parked_cloned(struct ward_cgroup *cg);
/* It is killed and reaped, and pids.max is back at the limit (it failed,
 * or cg is removed).  0 or -errno; no-op without one. */
int cg_unpark(struct ward_cgroup *cg);

/* A directory fd of the cgroup (v2: for clone3 CLONE_INTO_CGROUP), or -1. */
int cg_dirfd(const struct ward_cgroup *cg);

/* "cgroup-v1" / "cgroup-v2"; which of the limits this cgroup enforces. */
const char *cg_mechanism(const struct ward_cgroup *cg);
bool cg_limits_memory(const struct ward_cgroup *cg);
bool cg_limits_pids(const struct ward_cgroup *cg);
bool cg_accounts_cpu(const struct ward_cgroup *cg);

/* Are the sandbox's socket buffers (TCP on its loopback) charged to a
 * limit?  v2: to memory.max, with the rest of its memory (unless booted
 * with cgroup.memory=nosocket).  v1: to memory.kmem.tcp, a counter of its
 * own, limited to the memory limit's figure.  The mechanism's name for the
 * result's enforced.tcp_memory: "cgroup-v2", "cgroup-v1-kmem" or "none". */
bool cg_charges_sockets(const struct ward_cgroup *cg);
const char *cg_sockets_mechanism(const struct ward_cgroup *cg);

/* SIGKILL every process in the cgroup (cgroup.kill where the kernel has
 * it); 0 or -errno. */
int cg_kill(struct ward_cgroup *cg);

/* CPU time (user + system) of the whole tree so far, cheap enough to poll
 * (one small read): the supervisor enforces the tree-wide CPU limit with
 * it.  0 or -errno (-ENOTSUP without CPU accounting). */
int cg_cpu_usage(struct ward_cgroup *cg, uint64_t *usage_us);

/* The cgroup's directory name (ward-<pid>-<counter>-<random>), for logs and
 * tests. */
const char *cg_name(const struct ward_cgroup *cg);

/* Read usage; 0 or -errno. */
int cg_stats(struct ward_cgroup *cg, struct cg_stats *st);

/* Sessions: a cgroup beneath cg (named PREFIX<n>-<cg's name>, unique on the
 * host), with no limits of its own: its processes count against cg's.
 * cg_destroy removes it (before cg).  NULL with err set on failure. */
struct ward_cgroup *cg_child_create(struct ward_cgroup *cg, const char *prefix, char *err, size_t errlen);
/* v2: enable cg's controllers for its children (cg must hold no process
 * then: a v2 cgroup with controllers for children has none of its own).
 * v1: nothing to do.  0 or -errno. */
int cg_delegate(struct ward_cgroup *cg);
/* Send sig to every process in the cgroup (SIGKILL: cg_kill).  0 or -errno. */
int cg_signal(struct ward_cgroup *cg, int sig);
/* No process in the cgroup (its children aside)? */
bool cg_empty(struct ward_cgroup *cg);
/* Memory charged and processes in the cgroup now (0 when unknown). */
int cg_now(struct ward_cgroup *cg, uint64_t *memory_bytes, uint64_t *pids);

/* Kill what is left, wait (bounded) until empty, remove, free.  NULL ok. */
void cg_destroy(struct ward_cgroup *cg);

/* The first mount of fstype ("cgroup2", "cgroup") whose super options
 * have the word opt (NULL: any), from /proc/self/mountinfo: its point
 * (unescaped) and super options.  false when there is none. */
bool cg_find_mount(const char *fstype, const char *opt, char *point, size_t pn, char *superopts, size_t sn);

/* The kernel's price for moving a process into a cgroup after an idle
 * moment (cgroup_dynmods.c): milliseconds, measured on a fresh cgroup of
 * ward's, or -1 when it cannot be.  ~0.1 ms with favordynmods, a whole RCU
 * grace period (several ms) without. */
double cg_migrate_cost_ms(void);
/* Turn the kernel's favordynmods on (cgroup2: remount with the option
 * added; v1: mount a named hierarchy with it at /run/ward-favordynmods).
 * Host-wide, and it outlives ward.  0, or -1 with err set. */
int cg_favor_dynmods(char *err, size_t errlen);

#endif
