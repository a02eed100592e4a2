/* container.c — the container ward runs in, and which of its restrictions
 * stops a sandbox (container.h).  Docker's defaults refuse a sandbox three
 * ways, each with a cause that looks like something else from inside:
 *   - its seccomp profile refuses clone/unshare with namespace flags, mount
 *     and pivot_root (EPERM, as a disabled user-namespace sysctl would);
 *   - it masks paths under /proc (kcore, sys, ...), and the kernel mounts a
 *     new procfs in a user namespace only where a fully visible one exists
 *     (fs/namespace.c, mount_too_revealing): EPERM again;
 *   - it mounts the cgroup filesystem read-only: EROFS on the first mkdir;
 * and where AppArmor is on (Debian and Ubuntu hosts), its docker-default
 * profile refuses every mount (EACCES).
 * Each hint names the engine's own fix (docs/deploy.md's table).  It only
 * reads: the engines' marker files, /proc/self/status, /proc/self/mountinfo,
 * the AppArmor label and two sysctls.  Called on the host side and by PID 1 before its root is
 * replaced (mounts.c), where / and /proc are still the container's. */
#define _GNU_SOURCE
#include "sandbox/container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *container_engine(void)
{
	if (access("/.dockerenv", F_OK) == 0)
		return "Docker";
	if (access("/run/.containerenv", F_OK) == 0)
		return "Podman";
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return "Kubernetes";
	return NULL;
}

static long read_long(const char *path, long dflt)
{
	FILE *f = fopen(path, "re");
	long v = dflt;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

/* Mode 2 in /proc/self/status: a seccomp filter is on this process. */
static bool seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	char line[256];
	bool on = false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Seccomp:", 8) == 0) {
			on = atoi(line + 8) == 2;
			break;
		}
	fclose(f);
	return on;
}

bool container_ns_hint(int e, char *buf, size_t n)
{
	if (e != EPERM || !seccomp_filtered() || read_long("/proc/sys/kernel/unprivileged_userns_clone", 1) == 0 ||
	    read_long("/proc/sys/user/max_user_namespaces", 1) == 0)
		return false;
	const char *eng = container_engine();
	if (eng && strcmp(eng, "Kubernetes") == 0)
		snprintf(buf, n,
		         "the pod's seccomp profile refuses the calls that make namespaces (not a host sysctl): give "
		         "the "
		         "container ward's profile, securityContext.seccompProfile {type: Localhost, localhostProfile: "
		         "ward-seccomp.json} (deploy/kubernetes/ward.yaml, docs/deploy.md)");
	else
		snprintf(buf, n,
		         "%s's seccomp profile refuses the calls that make namespaces (not a host sysctl): run it with "
		         "ward's profile, --security-opt seccomp=deploy/seccomp.json (Compose: security_opt; "
		         "docs/deploy.md)",
		         eng ? eng : "a seccomp filter on ward's own process (a container's?)");
	return true;
}

bool container_mount_hint(int e, char *buf, size_t n)
{
	char label[256] = "";
	FILE *f = fopen("/proc/self/attr/apparmor/current", "re");
	if (!f)
		f = fopen("/proc/self/attr/current", "re");
	if (f) {
		if (!fgets(label, sizeof(label), f))
			label[0] = 0;
		fclose(f);
	}
	label[strcspn(label, "\n")] = 0;
	if ((e != EACCES && e != EPERM) || !label[0] || strncmp(label, "unconfined", 10) == 0)
		return false;
	const char *eng = container_engine();
	snprintf(buf, n, "the AppArmor profile %s refuses mounts: %s (docs/deploy.md)", label,
	         eng && strcmp(eng, "Kubernetes") == 0
	                 ? "set securityContext.appArmorProfile {type: Unconfined} or a Localhost profile that allows "
	                   "them"
	                 : "run it with --security-opt apparmor=unconfined, or a profile of your own that allows them");
	return true;
}

/* One mountinfo line's mount point, per-mount options and type; false for
 * a line that is not one, or (whole) for a mount of a part of its
 * filesystem (Docker's read-only /proc/sys is a proc mount of /sys). */
static bool mount_fields(const char *line, bool whole, char *point, size_t pn, char *opts, size_t on, char *type,
                         size_t tn)
{
	const char *sep = strstr(line, " - ");
	char r[4096], p[4096], o[256], t[64];
	if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s %255s", r, p, o) != 3 || sscanf(sep + 3, "%63s", t) != 1 ||
	    (whole && strcmp(r, "/") != 0))
		return false;
	snprintf(point, pn, "%s", p);
	snprintf(opts, on, "%s", o);
	snprintf(type, tn, "%s", t);
	return true;
}

/* The mount table, read once into lines (NULL-terminated); NULL on error. */
static char **mount_table(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return NULL;
	char **v = NULL, *line = NULL;
	size_t nv = 0, cap = 0;
	while (getline(&line, &cap, f) > 0) {
		char **nv2 = realloc(v, (nv + 2) * sizeof(*v));
		if (!nv2)
			break;
		v = nv2;
		v[nv++] = line;
		v[nv] = NULL;
		line = NULL;
		cap = 0;
	}
	free(line);
	fclose(f);
	return v;
}

static void table_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

bool container_proc_hint(char *buf, size_t n)
{
	char **tab = mount_table();
	if (!tab)
		return false;
	char point[4096], opts[256], type[64], sub[4096], sopts[256], stype[64], first[4096] = "";
	bool visible = false, anyproc = false;
	size_t masks = 0;
	for (size_t i = 0; tab[i] && !visible; i++) {
		if (!mount_fields(tab[i], true, point, sizeof point, opts, sizeof opts, type, sizeof type) ||
		    strcmp(type, "proc") != 0)
			continue;
		anyproc = true;
		size_t pl = strlen(point), below = 0;
		for (size_t j = 0; tab[j]; j++)
			if (mount_fields(tab[j], false, sub, sizeof sub, sopts, sizeof sopts, stype, sizeof stype) &&
			    strncmp(sub, point, pl) == 0 && sub[pl] == '/' && strcmp(stype, "binfmt_misc") != 0) {
				if (!below++ && !first[0])
					snprintf(first, sizeof first, "%s", sub);
			}
		if (!below)
			visible = true;
		masks += below;
	}
	table_free(tab);
	if (visible || !anyproc)
		return false;
	const char *eng = container_engine();
	const char *fix =
		!eng ? "--security-opt systempaths=unconfined (Docker), --security-opt unmask=ALL (Podman), "
		       "securityContext.procMount: Unmasked (Kubernetes)"
		: strcmp(eng, "Docker") == 0
			? "run it with --security-opt systempaths=unconfined (with Compose 1.29, which cannot pass "
			  "that, a volume of type proc)"
		: strcmp(eng, "Podman") == 0 ? "run it with --security-opt unmask=ALL"
					     : "set securityContext.procMount: Unmasked (with hostUsers: false)";
	snprintf(
		buf, n,
		"%s masks paths under /proc (%s and %zu more), and the kernel gives a sandbox a procfs of its own only "
		"where one is fully visible: %s (docs/deploy.md)",
		eng ? eng : "this container", first, masks ? masks - 1 : 0, fix);
	return true;
}

bool container_cgroup_hint(char *buf, size_t n)
{
	char **tab = mount_table();
	if (!tab)
		return false;
	char point[4096], opts[256], type[64], where[4096] = "";
	bool rw = false, any = false, v2 = false;
	for (size_t i = 0; tab[i]; i++) {
		if (!mount_fields(tab[i], false, point, sizeof point, opts, sizeof opts, type, sizeof type) ||
		    (strcmp(type, "cgroup") != 0 && strcmp(type, "cgroup2") != 0))
			continue;
		if (!any)
			snprintf(where, sizeof where, "%s", point);
		any = true;
		v2 = v2 || strcmp(type, "cgroup2") == 0;
		if (strncmp(opts, "rw", 2) == 0 && (opts[2] == ',' || opts[2] == 0))
			rw = true;
	}
	table_free(tab);
	if (!any || rw)
		return false;
	const char *eng = container_engine();
	bool k8s = eng && strcmp(eng, "Kubernetes") == 0;
	snprintf(buf, n,
	         "%s mounts the cgroup filesystem read-only (%s): memory, pids and CPU fall back to rlimits, and "
	         "--net loopback and egress are refused; %s (docs/deploy.md, \"A writable cgroup in a container\")",
	         eng ? eng : "this container", where,
	         k8s  ? "give the pod hostPath volumes of a prepared subtree as for Docker, or privileged: true"
	         : v2 ? "bind a subtree of the host's on /sys/fs/cgroup: deploy/cgroup-subtree makes one and prints "
	                "the flags"
	              : "mount a tmpfs on /sys/fs/cgroup and bind a prepared subtree of the host's memory, pids and "
	                "cpuacct hierarchies beneath it: deploy/cgroup-subtree makes one and prints the flags");
	return true;
}
