/* cgroup_park.c — a process parked in each kept cgroup v1, which clones
 * every next sandbox's PID 1 there instead of PID 1 being moved into it.
 *
 * Moving a process into a cgroup takes the kernel's threadgroup lock for
 * writing, which after an idle moment first waits for an RCU grace period
 * (3.9-11 ms on some hosts; `ward doctor` measures it).  v2 clones PID 1
 * straight into its cgroup (CLONE_INTO_CGROUP); v1 has no such flag: a
 * process enters a v1 cgroup only by a move or by being forked there.  So
 * when a cgroup is first kept for the next sandbox (cgroup_keep.c), a
 * parker (the spawner helpers: system/spawner.c) forks a process that moves
 * itself into it — the wait is paid there, once, off any request's path —
 * and then clones each PID 1 asked of it on its socket, as a helper would
 * (CLONE_PARENT: PID 1 is still the caller's child).  It stays for the
 * cgroup's life, so that no sandbox pays a fork, a move or an exit for it.
 *
 * It is not the sandbox's: forked from the helper, never in the sandbox's
 * namespaces (PID 1 cannot see it), it only sleeps while a sandbox runs.
 * What it would otherwise change is taken out: pids.max is the limit plus
 * one (cg_write_pids_max), the pids counted and signals sent to the
 * sandbox's processes (cg_now, cg_kill, cg_signal) leave it out, the OOM
 * killer does not pick it (oom_score_adj -1000 where the caller may set
 * it; should it die, the next sandbox is cloned as without it and it is
 * reaped), its stack was faulted before it moved (what it writes after,
 * some tens of KiB measured, stays charged here between sandboxes, as what
 * a run leaves does: KEEP_LEFT_BYTES), and the counters start again after
 * each clone (what the clone cost is not the sandbox's).  An
 * emptied cgroup is kept only when it holds that process alone.  It dies
 * with the caller (PR_SET_PDEATHSIG), and before its cgroup is removed
 * (cg_destroy: cg_unpark). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"

static _Atomic(cg_parker *) g_parker;
static atomic_ullong g_parked, g_born, g_moved;

void cg_set_parker(cg_parker *p)
{
	atomic_store(&g_parker, p);
}

/* pids.max of directory i: the limit, plus one for a parked process. */
int cg_write_pids_max(struct ward_cgroup *cg, int i, uint32_t pids)
{
	return cg_write_u64_at(cg->d[i].dir, "pids.max", (uint64_t)pids + (cg->park_pid > 0));
}

static int set_pids_max(struct ward_cgroup *cg)
{
	int r = 0;
	for (int i = 0; i < cg->n && r == 0; i++)
		if ((cg->d[i].mask & C_PIDS) && cg->lim.pids)
			r = cg_write_pids_max(cg, i, cg->lim.pids);
	return r;
}

void cg_park(struct ward_cgroup *cg)
{
	cg_parker *p = atomic_load(&g_parker);
	if (!p || cg->version != CG_V1 || cg->park_pid > 0 || cg->n == 0)
		return;
	int procs[NHIER];
	for (int i = 0; i < cg->n; i++)
		if ((procs[i] = cg_procs_fd(cg, i)) < 0)
			return;
	cg->park_pid = 1; /* room for it first: pids.max + 1 */
	pid_t pid = -1;
	int sock = set_pids_max(cg) == 0 ? p(procs, cg->n, &pid) : -1;
	if (sock < 0) {
		cg->park_pid = 0;
		(void)set_pids_max(cg);
		return;
	}
	cg->park_pid = pid;
	cg->park_sock = sock;
	atomic_fetch_add(&g_parked, 1);
}

int cg_parked_sock(const struct ward_cgroup *cg)
{
	return cg && cg->park_pid > 0 ? cg->park_sock : -1;
}

int cg_parked_cloned(struct ward_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++)
		if (!cg_v1_restart(cg, i))
			return -EIO;
	atomic_fetch_add(&g_born, 1);
	return 0;
}

bool cg_is_parked(const struct ward_cgroup *cg, pid_t pid)
{
	return cg->park_pid > 0 && pid == cg->park_pid;
}

int cg_unpark(struct ward_cgroup *cg)
{
	if (!cg || cg->park_pid <= 0)
		return 0;
	close(cg->park_sock); /* (it exits at end of file) */
	cg->park_sock = -1;
	kill(cg->park_pid, SIGKILL);
	while (waitpid(cg->park_pid, NULL, 0) < 0 && errno == EINTR)
		;
	cg->park_pid = 0;
	return set_pids_max(cg);
}

void cg_count_move(void)
{
	atomic_fetch_add(&g_moved, 1);
}

void cg_park_stats(uint64_t *parked, uint64_t *born, uint64_t *moved)
{
	*parked = atomic_load(&g_parked);
	*born = atomic_load(&g_born);
	*moved = atomic_load(&g_moved);
}
