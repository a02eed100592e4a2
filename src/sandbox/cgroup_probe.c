/* cgroup_probe.c — the host's cgroup layout, learnt once (cg_probe): which
 * filesystems are mounted where, which version ward uses (cgroup_v1.c,
 * cgroup_v2.c probe their own), where run cgroups go; and the sweep of
 * the run cgroups a dead ward left. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup_int.h"

struct cg_host cg_host;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

bool cg_has_word(const char *list, const char *word)
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
		if (mount_line(line, root, mp, fs, so) && strcmp(fs, fstype) == 0 && (!opt || cg_has_word(so, opt))) {
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
				if (cg_has_word(superopts, names[i]) && !v1[i].found)
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
bool cg_own_cgroup(const char *ctrl, char *out, size_t outlen)
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
		bool match = *ctrl ? cg_has_word(c1 + 1, ctrl) : (c1[1] == 0 && strncmp(line, "0:", 2) == 0);
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
void cg_dir_of(const struct mnt *m, const char *cg, char *out, size_t outlen)
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
int cg_make_ward_dir(const char *parent, char *out, size_t outlen)
{
	int pfd = cg_open_dir(AT_FDCWD, parent, O_PATH);
	if (pfd < 0)
		return pfd;
	int r = 0;
	if (mkdirat(pfd, "ward", 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0) {
		int fd = cg_open_dir(pfd, "ward", O_PATH);
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
	int fd = cg_open_dir(AT_FDCWD, parent, O_RDONLY);
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
		int fd = cg_open_dir(AT_FDCWD, v2.point, O_PATH);
		if (fd >= 0) {
			/* A hybrid host mounts an empty v2 tree beside v1: v2 is
			 * ours only when it has the controllers. */
			if (cg_read_at(fd, "cgroup.controllers", buf, sizeof buf) > 0)
				v2_has = strstr(buf, "memory") || strstr(buf, "pids");
			close(fd);
		}
	}
	if (v2_has) {
		cg_v2_probe(&v2);
		if (cg_host.nh)
			cg_v2_probe_files();
	} else if (v1[0].found || v1[1].found || v1[2].found) {
		cg_v1_probe(v1);
	} else {
		cg_host.pub.version = CG_NONE;
		cg_why("no cgroup filesystem is mounted (mount cgroup2 at /sys/fs/cgroup)");
	}
	for (int i = 0; i < cg_host.nh; i++)
		sweep_orphans(cg_host.h[i].path);
	/* v1: the freezer cgroups of frozen-capable sessions (freezer.c) */
	char fz[PATH_MAX], so[512];
	if (cg_host.pub.version == CG_V1 && cg_find_mount("cgroup", "freezer", fz, sizeof(fz) - 8, so, sizeof(so))) {
		strcat(fz, "/ward");
		sweep_orphans(fz);
	}
}

const struct cg_probe *cg_probe(void)
{
	pthread_once(&probe_once, probe_once_fn);
	return &cg_host.pub;
}
