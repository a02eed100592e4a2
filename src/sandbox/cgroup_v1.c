/* cgroup_v1.c — what only cgroup v1 does: its probe (one hierarchy per
 * controller, each with <mount>/ward/), its limits (memsw beside memory,
 * the TCP counter), its counters and their resets. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"

void cg_v1_probe(const struct mnt v1[3])
{
	static const char *const names[3] = {"memory", "pids", "cpuacct"};
	static const unsigned bits[3] = {C_MEM, C_PIDS, C_CPU};
	cg_host.pub.version = CG_V1;
	size_t wl = 0;
	for (int i = 0; i < 3; i++) {
		if (!v1[i].found) {
			cg_why("cgroup v1: no %s hierarchy is mounted", names[i]);
			continue;
		}
		/* Controllers mounted together share one directory. */
		int j;
		for (j = 0; j < cg_host.nh; j++)
			if (strncmp(cg_host.h[j].path, v1[i].point, strlen(v1[i].point)) == 0 &&
			    strcmp(cg_host.h[j].path + strlen(v1[i].point), "/ward") == 0)
				break;
		if (j < cg_host.nh) {
			cg_host.h[j].mask |= bits[i];
			continue;
		}
		/* The top of the mount, not our own cgroup: on v1 there is no
		 * rule against it, and a cgroup of a login session or a
		 * per-command cgroup may vanish under us. */
		char base[PATH_MAX];
		cg_dir_of(&v1[i], "/", base, sizeof base);
		int r = cg_make_ward_dir(base, cg_host.h[cg_host.nh].path, sizeof cg_host.h[cg_host.nh].path);
		if (r < 0) {
			cg_why("cgroup v1: cannot create %s/ward: %s (run ward as root, or create it and chown it to "
			       "uid %u)",
			       base, strerror(-r), (unsigned)geteuid());
			continue;
		}
		cg_host.h[cg_host.nh].mask = bits[i];
		wl += (size_t)snprintf(cg_host.pub.where + wl,
		                       wl < sizeof cg_host.pub.where ? sizeof cg_host.pub.where - wl : 0, "%s%s",
		                       wl ? " " : "", cg_host.h[cg_host.nh].path);
		if (wl >= sizeof cg_host.pub.where)
			wl = sizeof cg_host.pub.where;
		cg_host.nh++;
	}
	for (int j = 0; j < cg_host.nh; j++) {
		if (!(cg_host.h[j].mask & C_MEM))
			continue;
		int fd = cg_open_dir(AT_FDCWD, cg_host.h[j].path, O_PATH);
		if (fd < 0)
			continue;
		cg_host.memsw = faccessat(fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
		/* v1 charges socket buffers only to a cgroup given a TCP
		 * limit (a counter of their own), and only sockets made after. */
		cg_host.kmem_tcp = faccessat(fd, "memory.kmem.tcp.limit_in_bytes", F_OK, 0) == 0;
		if (!cg_host.kmem_tcp)
			cg_why("cgroup v1: no memory.kmem.tcp.limit_in_bytes: socket buffers cannot be charged, so "
			       "--net loopback is refused");
		/* Without swap accounting, at least make reclaim never swap:
		 * children copy swappiness from this parent when created. */
		if (!cg_host.memsw) {
			char cur[16];
			if (cg_read_at(fd, "memory.swappiness", cur, sizeof cur) > 0 && atoi(cur) != 0)
				cg_write_at(fd, "memory.swappiness", "0");
			cg_why("cgroup v1: no swap accounting (memory.memsw.*): swap is held off with swappiness 0 "
			       "only; boot with swapaccount=1");
		}
		close(fd);
	}
	for (int j = 0; j < cg_host.nh; j++) {
		cg_host.pub.memory |= (cg_host.h[j].mask & C_MEM) != 0;
		cg_host.pub.pids |= (cg_host.h[j].mask & C_PIDS) != 0;
		cg_host.pub.cpu |= (cg_host.h[j].mask & C_CPU) != 0;
	}
}

/* v1: socket buffers have a counter of their own, charged only once a
 * limit is set — before the sandbox makes its first socket.  The same figure
 * as the memory limit.  Not fatal: without it, --net loopback is refused
 * (cg_charges_sockets). */
static void set_tcp_limit(struct ward_cgroup *cg, int fd, uint64_t bytes)
{
	if (!cg_host.kmem_tcp)
		return;
	int r = cg_write_u64_at(fd, "memory.kmem.tcp.limit_in_bytes", bytes);
	if (r < 0)
		fprintf(stderr, "ward: cgroup %s: cannot write memory.kmem.tcp.limit_in_bytes: %s\n", cg->name,
		        strerror(-r));
	cg->tcp = r == 0;
}

/* v1's limits in directory i (update: the cgroup has limits already: see
 * the memsw ordering below).  0 or -errno, *what naming the file. */
int cg_v1_set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what, bool update)
{
	int fd = cg->d[i].dir, r = 0;
	unsigned m = cg->d[i].mask;
	if ((m & C_MEM) && lim->memory_bytes) {
		/* memsw (RAM + swap) may never be below the RAM limit: set
		 * RAM first, then memsw to the same value, i.e. no swap.  When
		 * raising a limit, memsw must go first (the kernel refuses a
		 * RAM limit above memsw): try that order, and on EINVAL (it
		 * was a lowering) the other. */
		bool memsw_first = update && cg_host.memsw;
		if (memsw_first) {
			r = cg_write_u64_at(fd, *what = "memory.memsw.limit_in_bytes", lim->memory_bytes);
			if (r == -EINVAL)
				memsw_first = false;
			else if (r == 0)
				r = cg_write_u64_at(fd, *what = "memory.limit_in_bytes", lim->memory_bytes);
		}
		if (!memsw_first) {
			r = cg_write_u64_at(fd, *what = "memory.limit_in_bytes", lim->memory_bytes);
			if (r == 0 && cg_host.memsw)
				r = cg_write_u64_at(fd, *what = "memory.memsw.limit_in_bytes", lim->memory_bytes);
		}
	}
	if (r == 0 && (m & C_PIDS) && lim->pids) {
		*what = "pids.max";
		r = cg_write_pids_max(cg, i, lim->pids);
	}
	if (r == 0 && (m & C_MEM) && lim->memory_bytes)
		set_tcp_limit(cg, fd, lim->memory_bytes);
	return r;
}

/* Directory i's counters start again: the memory peak and CPU usage
 * written 0 (the peak restarts at what is charged now), the OOM kill count
 * read as a baseline.  False when one cannot. */
bool cg_v1_restart(struct ward_cgroup *cg, int i)
{
	char buf[1024];
	unsigned m = cg->d[i].mask;
	if ((m & C_MEM) &&
	    (cg_write(cg, i, "memory.max_usage_in_bytes", "0") < 0 ||
	     (cg_host.memsw && cg_write(cg, i, "memory.memsw.max_usage_in_bytes", "0") < 0) ||
	     cg_read(cg, i, "memory.oom_control", buf, sizeof buf) <= 0 || !cg_kv_get(buf, "oom_kill", &cg->base_oom)))
		return false;
	return !(m & C_CPU) || cg_write(cg, i, "cpuacct.usage", "0") == 0;
}

/* A kept cgroup's counters start again (cgroup_keep.c), when it holds at
 * most KEEP_LEFT_BYTES still charged.  False when it cannot be kept. */
bool cg_v1_reset(struct ward_cgroup *cg, int i)
{
	uint64_t left;
	if ((cg->d[i].mask & C_MEM) && (!cg_read_u64(cg, i, "memory.usage_in_bytes", &left) || left > KEEP_LEFT_BYTES))
		return false;
	return cg_v1_restart(cg, i);
}

/* What directory i counted of this run (cg_stats). */
void cg_v1_stats(struct ward_cgroup *cg, int i, struct cg_stats *st)
{
	char buf[1024];
	uint64_t v;
	int fd = cg->d[i].dir;
	unsigned m = cg->d[i].mask;
	if (m & C_CPU) {
		if (cg_read_u64(cg, i, "cpuacct.usage", &v))
			st->cpu_usage_us = v / 1000;
		uint64_t u, s;
		if (cg_read_u64(cg, i, "cpuacct.usage_user", &u) && cg_read_u64(cg, i, "cpuacct.usage_sys", &s)) {
			st->cpu_user_us = u / 1000;
			st->cpu_sys_us = s / 1000;
		} else if (cg_read_at(fd, "cpuacct.stat", buf, sizeof buf) > 0 && cg_kv_get(buf, "user", &u) &&
		           cg_kv_get(buf, "system", &s)) {
			long hz = sysconf(_SC_CLK_TCK);
			if (hz <= 0)
				hz = 100;
			st->cpu_user_us = u * 1000000 / (uint64_t)hz;
			st->cpu_sys_us = s * 1000000 / (uint64_t)hz;
		}
	}
	if (m & C_MEM) {
		if (!cg_read_u64(cg, i, cg_host.memsw ? "memory.memsw.max_usage_in_bytes" : "memory.max_usage_in_bytes",
		                 &st->memory_peak))
			st->memory_peak = 0;
		/* oom_kill in memory.oom_control since 4.13; before
		 * that, hitting the limit (failcnt) is the best sign. */
		if (cg_read(cg, i, "memory.oom_control", buf, sizeof buf) > 0 && cg_kv_get(buf, "oom_kill", &v))
			st->oom_killed = v > cg->base_oom;
		else if (cg_read_u64_at(fd, cg_host.memsw ? "memory.memsw.failcnt" : "memory.failcnt", &v))
			st->oom_killed = v > 0;
	}
}
