/* cgroup_v2.c — what only cgroup v2 does: its probe (one directory for
 * every controller: the root's ward/, or a delegated cgroup's siblings of
 * ward-supervisor), its limits, its counters and their baselines. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"

/* Enable the controllers of `want` that dir offers its children.  Returns
 * the bits enabled afterwards; *offered (may be NULL) gets those dir has. */
unsigned cg_v2_enable(int dirfd, unsigned want, unsigned *offered)
{
	static const char *const names[3] = {"memory", "pids", "cpu"};
	static const unsigned bits[3] = {C_MEM, C_PIDS, C_CPU};
	char avail[512], on[512];
	if (cg_read_at(dirfd, "cgroup.controllers", avail, sizeof avail) < 0)
		return 0;
	if (cg_read_at(dirfd, "cgroup.subtree_control", on, sizeof on) < 0)
		return 0;
	unsigned got = 0;
	for (int i = 0; i < 3; i++) {
		char word[16];
		snprintf(word, sizeof word, "+%s", names[i]);
		bool avail_i = false, on_i = false;
		/* space-separated lists */
		for (char *s = avail; (s = strstr(s, names[i])); s++)
			if ((s == avail || s[-1] == ' ') &&
			    (s[strlen(names[i])] == ' ' || s[strlen(names[i])] == '\n' || !s[strlen(names[i])]))
				avail_i = true;
		for (char *s = on; (s = strstr(s, names[i])); s++)
			if ((s == on || s[-1] == ' ') &&
			    (s[strlen(names[i])] == ' ' || s[strlen(names[i])] == '\n' || !s[strlen(names[i])]))
				on_i = true;
		/* One write per controller: one the kernel refuses (cpu with
		 * realtime tasks around) must not cost us the others. */
		if (!on_i && avail_i && (want & bits[i]) && cg_write_at(dirfd, "cgroup.subtree_control", word) == 0)
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
	ssize_t r = cg_read_at(dirfd, "cgroup.procs", buf, sizeof buf);
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
	int lfd = cg_open_dir(dirfd, "ward-supervisor", O_PATH);
	if (lfd < 0)
		return lfd;
	char pid[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	int r = cg_write_at(lfd, "cgroup.procs", pid);
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
	int tfd = cg_open_dir(AT_FDCWD, top, O_PATH);
	if (tfd < 0)
		return tfd;
	/* The top of a cgroup namespace (a container) is no real root: it
	 * cannot enable memory while it holds processes.  When the only one
	 * is us, step aside into a leaf first.  Memory alone, and first: the
	 * threaded controllers (pids, cpu) would be accepted and make the top
	 * a "thread root", whose children can then take no process at all. */
	unsigned offered = 0;
	unsigned got = cg_v2_enable(tfd, C_MEM, &offered);
	if ((offered & C_MEM) && !(got & C_MEM) && alone_in(tfd))
		move_to_leaf(tfd);
	cg_v2_enable(tfd, C_MEM | C_PIDS | C_CPU, NULL);
	close(tfd);
	return cg_make_ward_dir(top, wherebuf, len);
}

/* Where run cgroups go (the parent's path into parent, "" when nowhere):
 * beside another ward's leaf, at the top, or in our own delegated cgroup
 * after moving into its leaf; why not, in the probe's notes. */
static void v2_choose_parent(const struct mnt *m, char *own, char *parent, size_t plen)
{
	char owndir[PATH_MAX];
	const char *leaf = "/ward-supervisor";
	size_t ol = strlen(own), ll = strlen(leaf);
	int r;
	if (ol > ll && strcmp(own + ol - ll, leaf) == 0) {
		/* Another ward in this process tree already moved into the
		 * leaf: its parent is the place. */
		own[ol - ll] = 0;
		cg_dir_of(m, own, parent, plen);
	} else if (strcmp(own, "/") == 0 || strcmp(own, leaf) == 0) {
		r = v2_use_top(m, parent, plen);
		if (r < 0) {
			cg_why("cgroup v2: cannot create %s/ward: %s (run ward as root, or in a cgroup delegated to "
			       "uid %u)",
			       m->point, strerror(-r), (unsigned)geteuid());
			parent[0] = 0;
		}
	} else {
		cg_dir_of(m, own, owndir, sizeof owndir);
		int ofd = cg_open_dir(AT_FDCWD, owndir, O_PATH);
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
				cg_scopy(parent, plen, owndir);
			} else {
				cg_why("cgroup v2: cannot move into %s%s: %s", owndir, leaf, strerror(-r));
			}
		}
		if (ofd >= 0)
			close(ofd);
		if (!moved && geteuid() == 0) {
			/* root in somebody else's cgroup (a login session):
			 * the top of the hierarchy is ours to use. */
			cg_host.pub.why[0] = 0;
			r = v2_use_top(m, parent, plen);
			if (r < 0) {
				cg_why("cgroup v2: cannot create %s/ward: %s", m->point, strerror(-r));
				parent[0] = 0;
			}
		} else if (!moved) {
			if (!delegated)
				cg_why("cgroup v2: %s is not delegated to uid %u; run ward as root, under systemd with "
				       "Delegate=yes, or in a cgroup chowned to this user",
				       owndir, (unsigned)geteuid());
			else if (!alone)
				cg_why("cgroup v2: %s holds other processes besides ward; start ward in a cgroup of "
				       "its own (e.g. systemd-run --user --scope -p Delegate=yes)",
				       owndir);
		}
	}
}

void cg_v2_probe(const struct mnt *m)
{
	cg_host.pub.version = CG_V2;
	char own[PATH_MAX], parent[PATH_MAX] = "";
	if (!cg_own_cgroup("", own, sizeof own)) {
		cg_why("cgroup v2: no 0:: line in /proc/self/cgroup");
		return;
	}
	v2_choose_parent(m, own, parent, sizeof parent);
	if (!parent[0])
		return;
	int pfd = cg_open_dir(AT_FDCWD, parent, O_PATH);
	if (pfd < 0) {
		cg_why("cgroup v2: cannot open %s: %s", parent, strerror(-pfd));
		return;
	}
	unsigned got = cg_v2_enable(pfd, C_MEM | C_PIDS | C_CPU, NULL);
	/* Every cgroup has cpu.stat usage_usec, with or without the cpu
	 * controller: accounting needs no controller. */
	got |= C_CPU;
	if (!(got & C_MEM))
		cg_why("cgroup v2: the memory controller is not available in %s (enable it in the parent's "
		       "cgroup.subtree_control)",
		       parent);
	if (!(got & C_PIDS))
		cg_why("cgroup v2: the pids controller is not available in %s (enable it in the parent's "
		       "cgroup.subtree_control)",
		       parent);
	char buf[64];
	if (got & C_MEM) {
		/* A swap limit of 0 on the parent covers every run below it. */
		if (cg_read_at(pfd, "memory.swap.max", buf, sizeof buf) > 0 && strcmp(buf, "0\n") == 0)
			cg_host.swap_is_zero = true;
		else if (cg_write_at(pfd, "memory.swap.max", "0") == 0)
			cg_host.swap_is_zero = true;
	}
	close(pfd);
	snprintf(cg_host.h[0].path, sizeof cg_host.h[0].path, "%s", parent);
	cg_host.h[0].mask = got;
	cg_host.nh = 1;
	cg_scopy(cg_host.pub.where, sizeof cg_host.pub.where, parent);
	cg_host.pub.memory = got & C_MEM;
	cg_host.pub.pids = got & C_PIDS;
	cg_host.pub.cpu = true;
}

/* Does the kernel command line have cgroup.memory=...nosocket...? */
static bool booted_nosocket(void)
{
	char buf[4096];
	if (cg_read_at(AT_FDCWD, "/proc/cmdline", buf, sizeof buf) <= 0)
		return false;
	for (char *p = buf; (p = strstr(p, "cgroup.memory=")); p++) {
		if (p != buf && p[-1] != ' ')
			continue;
		char *v = p + strlen("cgroup.memory=");
		size_t n = strcspn(v, " \n");
		char save = v[n];
		v[n] = 0;
		bool hit = cg_has_word(v, "nosocket");
		v[n] = save;
		if (hit)
			return true;
	}
	return false;
}

/* Which optional files run cgroups will have, read off the parent (a
 * non-root cgroup has the same ones): cgroup.kill appeared in 5.14,
 * memory.swap.max needs swap accounting. */
void cg_v2_probe_files(void)
{
	int pfd = cg_open_dir(AT_FDCWD, cg_host.h[0].path, O_PATH);
	if (pfd < 0)
		return;
	cg_host.cg_kill = faccessat(pfd, "cgroup.kill", F_OK, 0) == 0;
	cg_host.swap_max = faccessat(pfd, "memory.swap.max", F_OK, 0) == 0;
	/* memory.peak is writable (a per-fd reset) since Linux 6.12: without
	 * it, no cgroup can be kept for another run (see recycling) */
	struct stat st;
	cg_host.peak_reset = fstatat(pfd, "memory.peak", &st, 0) == 0 && (st.st_mode & S_IWUSR);
	close(pfd);
	if (cg_host.pub.memory && !cg_host.swap_max)
		cg_why("cgroup v2: no memory.swap.max (kernel without swap accounting): swap is not limited");
	/* v2 charges socket buffers to memory.max, unless the kernel was
	 * booted with cgroup.memory=nosocket. */
	cg_host.nosocket = booted_nosocket();
	if (cg_host.pub.memory && cg_host.nosocket)
		cg_why("cgroup v2: the kernel was booted with cgroup.memory=nosocket: socket buffers are not charged, "
		       "so --net loopback is refused");
}

/* v2's limits in directory i.  0 or -errno, *what naming the file. */
int cg_v2_set_limits(struct ward_cgroup *cg, int i, const struct cg_limits *lim, const char **what)
{
	int fd = cg->d[i].dir, r = 0;
	unsigned m = cg->d[i].mask;
	if ((m & C_MEM) && lim->memory_bytes) {
		r = cg_write_u64_at(fd, *what = "memory.max", lim->memory_bytes);
		if (r == 0 && cg_host.swap_max && !cg_host.swap_is_zero)
			r = cg_write_at(fd, *what = "memory.swap.max", "0");
	}
	if (r == 0 && (m & C_PIDS) && lim->pids)
		r = cg_write_u64_at(fd, *what = "pids.max", lim->pids);
	return r;
}

/* A kept cgroup's counters start again (cgroup_keep.c): memory.peak reset
 * through an fd held for it (6.12+), cpu.stat and memory.events read as
 * baselines.  False when it cannot be kept. */
bool cg_v2_reset(struct ward_cgroup *cg, int i)
{
	char buf[1024];
	uint64_t left;
	if (cg->d[i].mask & C_MEM) {
		if (!cg_read_u64(cg, i, "memory.current", &left) || left > KEEP_LEFT_BYTES)
			return false;
		if (cg->peak_fd < 0)
			cg->peak_fd = openat(cg->d[i].dir, "memory.peak", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (cg->peak_fd < 0 || write(cg->peak_fd, "reset\n", 6) != 6 ||
		    cg_read(cg, i, "memory.events", buf, sizeof buf) <= 0 || !cg_kv_get(buf, "oom_kill", &cg->base_oom))
			return false;
	}
	return cg_read(cg, i, "cpu.stat", buf, sizeof buf) > 0 && cg_kv_get(buf, "usage_usec", &cg->base_cpu_us) &&
	       cg_kv_get(buf, "user_usec", &cg->base_user_us) && cg_kv_get(buf, "system_usec", &cg->base_sys_us);
}

/* What directory i counted of this run since its baselines (cg_stats). */
void cg_v2_stats(struct ward_cgroup *cg, int i, struct cg_stats *st)
{
	char buf[1024];
	uint64_t v;
	if (cg_read(cg, i, "cpu.stat", buf, sizeof buf) > 0) {
		cg_kv_get(buf, "usage_usec", &st->cpu_usage_us);
		cg_kv_get(buf, "user_usec", &st->cpu_user_us);
		cg_kv_get(buf, "system_usec", &st->cpu_sys_us);
		st->cpu_usage_us = cg_since(st->cpu_usage_us, cg->base_cpu_us);
		st->cpu_user_us = cg_since(st->cpu_user_us, cg->base_user_us);
		st->cpu_sys_us = cg_since(st->cpu_sys_us, cg->base_sys_us);
	}
	if (cg->d[i].mask & C_MEM) {
		/* A recycled cgroup's peak: through the fd that reset it. */
		if (cg->peak_fd >= 0 ? !cg_pread_u64(cg->peak_fd, &st->memory_peak)
		                     : !cg_read_u64(cg, i, "memory.peak", &st->memory_peak))
			st->memory_peak = 0; /* before 5.19 */
		if (cg_read(cg, i, "memory.events", buf, sizeof buf) > 0 && cg_kv_get(buf, "oom_kill", &v))
			st->oom_killed = v > cg->base_oom;
	}
}
