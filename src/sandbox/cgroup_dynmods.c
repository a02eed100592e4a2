/* cgroup_dynmods.c — what moving a process between cgroups costs here, and
 * the kernel's switch that makes it cheap.
 *
 * Writing a pid into cgroup.procs takes the kernel's threadgroup lock for
 * writing.  By default that lock is tuned for its readers (every fork and
 * exit): a writer first waits for an RCU grace period, unless another
 * writer came within the last one.  So an occasional migration pays a
 * whole grace period — measured at 6.6-10.6 ms on a 2-core host, every
 * hierarchy alike — and ward migrates on every session exec (the command
 * PID 1 forks goes into its exec's cgroup) and, on cgroup v1, on every
 * fresh sandbox (v2 clones straight into the cgroup).  The kernel's
 * `favordynmods` option (cgroup2 mount option, and cgroup v1's, Linux
 * 6.0+) keeps the lock in writer-friendly mode: a migration then takes
 * ~0.1 ms, for a little more work in every fork and exit, host-wide.
 *
 * ward never changes this by itself (it is the host's, and it outlives
 * ward: on some kernels, once set it stays until reboot): `ward doctor`
 * measures the cost, `ward serve --favor-dynmods` turns the option on. */
#define _GNU_SOURCE
#include "sandbox/cgroup.h"
#include "ward.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Where the v1 switch is mounted (a named hierarchy with no controllers:
 * it only holds the option; it stays mounted, since on some kernels the
 * option ends with the hierarchy). */
#define DYNMODS_V1_DIR "/run/ward-favordynmods"
/* Long enough for the lock to go back to its reader-friendly mode. */
#define IDLE_NS 60000000L

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double cg_migrate_cost_ms(void)
{
	char err[256];
	struct cg_limits lim = {0};
	struct ward_cgroup *cg = cg_create(&lim, err, sizeof(err));
	if (!cg)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	double ms = -1;
	if (pid > 0) {
		struct timespec idle = {0, IDLE_NS};
		nanosleep(&idle, NULL);
		double t = mono_ms();
		if (cg_attach(cg, pid) == 0)
			ms = mono_ms() - t;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	cg_destroy(cg);
	return ms;
}

/* The mount's own flags, which a remount would otherwise reset. */
static unsigned long mount_flags(const char *point)
{
	struct statvfs sv;
	if (statvfs(point, &sv) < 0)
		return 0;
	static const struct {
		unsigned long st, ms;
	} map[] = {{ST_RDONLY, MS_RDONLY},    {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},
	           {ST_NOEXEC, MS_NOEXEC},    {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
	           {ST_RELATIME, MS_RELATIME}};
	unsigned long ms = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sv.f_flag & map[i].st)
			ms |= map[i].ms;
	return ms;
}

/* Remount cgroup2 (the mount the probe uses: the first) with its options
 * kept (a remount's options replace them all: nsdelegate would go) and
 * favordynmods added. */
static int favor_v2(const char *where, char *err, size_t errlen)
{
	char point[4096], opts[512];
	if (!cg_find_mount("cgroup2", NULL, point, sizeof(point), opts, sizeof(opts))) {
		snprintf(err, errlen,
		         "cannot find the cgroup2 mount above '%s' in /proc/self/mountinfo (run without "
		         "--favor-dynmods)",
		         where);
		return -1;
	}
	if (strstr(opts, "favordynmods"))
		return 0;
	char data[1100];
	const char *rest = strncmp(opts, "rw", 2) == 0 ? opts + 2 : strncmp(opts, "ro", 2) == 0 ? opts + 2 : opts;
	snprintf(data, sizeof(data), "favordynmods%s", rest);
	if (mount(NULL, point, NULL, MS_REMOUNT | mount_flags(point), data) < 0) {
		snprintf(err, errlen,
		         "cannot remount %s with favordynmods: %s (it needs root and Linux 6.0 or later; or run "
		         "without --favor-dynmods)",
		         point, strerror(errno));
		return -1;
	}
	return 0;
}

/* v1: a named hierarchy mounted with the option turns it on for the
 * kernel's one lock, which every hierarchy shares. */
static int favor_v1(char *err, size_t errlen)
{
	char point[4096], opts[512];
	if (cg_find_mount("cgroup", "name=ward-favordynmods", point, sizeof(point), opts, sizeof(opts)))
		return 0; /* an earlier ward serve's */
	if (mkdir(DYNMODS_V1_DIR, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s (it needs root; or run without --favor-dynmods)",
		         DYNMODS_V1_DIR, strerror(errno));
		return -1;
	}
	if (mount("cgroup", DYNMODS_V1_DIR, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "none,name=ward-favordynmods,favordynmods") < 0) {
		snprintf(err, errlen,
		         "cannot mount a cgroup hierarchy with favordynmods at %s: %s (it needs root and Linux 6.0 "
		         "or later; or run without --favor-dynmods)",
		         DYNMODS_V1_DIR, strerror(errno));
		return -1;
	}
	return 0;
}

int ward_cgroup_favor_dynmods(char *err, size_t errlen)
{
	return cg_favor_dynmods(err, errlen);
}

int cg_favor_dynmods(char *err, size_t errlen)
{
	const struct cg_probe *p = cg_probe();
	if (!p || p->version == CG_NONE) {
		snprintf(err, errlen,
		         "--favor-dynmods: this host gives ward no cgroups, so there is nothing to tune (run without "
		         "--favor-dynmods)");
		return -1;
	}
	return p->version == CG_V2 ? favor_v2(p->where, err, errlen) : favor_v1(err, errlen);
}
