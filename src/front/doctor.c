/* doctor.c — probe each mechanism, then prove the whole by running a real
 * sandbox: a host can have every part and still refuse the whole (an LSM
 * that blocks user namespaces, a read-only /run).  It only looks: it
 * writes no sysctl and no setting, and its proof is one ordinary
 * ward_run().  The report's type and JSON are the wire's (wire/wire.h). */
#define _GNU_SOURCE
#include "front/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/container.h"
#include "sandbox/landlock.h"
#include "sandbox/overlay.h"
#include "sandbox/seccomp.h"
#include "ward.h"
#include "ward_image.h"
#include "ward_judge.h"

static struct doctor_item *item(struct doctor_report *r, const char *name, bool ok, const char *fmt, ...)
{
	struct doctor_item *it = &r->items[r->n++];
	it->name = name;
	it->ok = ok;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
	return it;
}

/* Languages (SPEC §15): the installed table, each version_cmd run in a
 * sandbox; the disabled ones named with why and the fix. */
static void languages_item(struct doctor_report *r)
{
	char buf[4096], err[512];
	const char *path = ward_languages_default_path(buf, sizeof(buf));
	struct ward_languages t;
	if (!path) {
		item(r, "languages", false,
		     "no language table (make install puts languages.json in share/ward; or set "
		     "$WARD_LANGUAGES): ward judge and POST /judge have no language");
		return;
	}
	if (ward_languages_load(path, &t, err, sizeof(err)) < 0) {
		item(r, "languages", false, "%s", err);
		return;
	}
	/* an entry on an image is disabled here ("image X is not available"):
	 * ward serve --image X checks it */
	ward_languages_probe(&t, NULL);
	char off[900] = "";
	size_t k = 0, on = 0;
	for (size_t i = 0; i < t.n; i++) {
		if (t.v[i].enabled)
			on++;
		else if (k < sizeof(off))
			k += (size_t)snprintf(off + k, sizeof(off) - k, "; %s disabled: %s", t.v[i].id, t.v[i].why);
	}
	item(r, "languages", on > 0, "%zu of %zu enabled (%s)%s", on, t.n, path, off);
	ward_languages_free(&t);
}

/* Egress (SPEC §13): a sandbox with network allow, its proxy up. */
static void egress_item(struct doctor_report *r)
{
	struct ward_request req;
	ward_request_init(&req);
	char *argv[] = {"/bin/true", NULL};
	const char *allow[] = {"doctor.invalid"};
	req.argv = argv;
	req.capture = true;
	req.limits.timeout_s = 10;
	req.net = WARD_NET_ALLOW;
	req.egress_allow = allow;
	req.negress_allow = 1;
	struct ward_result res;
	bool ok = ward_run(&req, &res) == 0 && res.status == WARD_ST_OK && res.egress_on;
	if (ok)
		item(r, "egress", true,
		     "--net allow works: a sandbox ran with ward's proxy on its 127.0.0.1:3128 "
		     "(ward serve offers it only with --egress-allow)");
	else
		item(r, "egress", false, "--net allow is unavailable: %s",
		     res.error[0] ? res.error : "the test run failed");
	ward_result_free(&res);
}

static int read_int_file(const char *path, long *v)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fscanf(f, "%ld", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* Can this process create all the namespaces a sandbox needs? */
static int try_namespaces(void)
{
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
	                      CLONE_NEWCGROUP | SIGCHLD;
	pid_t pid = (pid_t)syscall(SYS_clone, flags, 0, 0, 0, 0);
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(0);
	int st;
	waitpid(pid, &st, 0);
	return 0;
}

/* What moving a process into a cgroup costs here (cgroup_dynmods.c): a
 * whole RCU grace period unless the kernel favours dynamic changes. */
static void migration_item(struct doctor_report *r)
{
	double ms = cg_migrate_cost_ms();
	if (ms < 0)
		item(r, "migration", false, "cannot measure what moving a process into a cgroup costs here");
	else if (ms < 1.0)
		item(r, "migration", true, "moving a process into a cgroup took %.2f ms after an idle moment", ms);
	else
		item(r, "migration", false,
		     "moving a process into a cgroup took %.1f ms after an idle moment (an RCU grace period, unless "
		     "the kernel favours dynamic changes): ward serve moves ahead what it can (a pooled sandbox; on "
		     "cgroup v1 a process parked in each kept cgroup, which clones the next fresh sandbox there, and "
		     "v2 clones it straight in; a session's first exec, armed as the session starts, and its next, "
		     "armed while it idles), but on v1 a sandbox in a cgroup not yet kept (ward run's, a server's "
		     "first) and a session exec right behind another still pay it; ward serve --favor-dynmods makes "
		     "it ~0.1 ms",
		     ms);
}

/* The image store (SPEC §14): where it is, how many images, how big. */
/* Can ward shield a session's PID 1 from the OOM killer (oom_score_adj
 * -1000 needs CAP_SYS_RESOURCE)?  Without it a memory kill inside a session
 * may pick PID 1, and the session ends. */
static void oom_item(struct doctor_report *r)
{
	if (geteuid() != 0) {
		item(r, "oom-shield", false,
		     "not root: a session's PID 1 cannot be shielded from the OOM killer (a "
		     "memory kill inside a session may end it)");
		return;
	}
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	bool ok = eff & (1ull << 24); /* CAP_SYS_RESOURCE */
	item(r, "oom-shield", ok,
	     ok ? "a session's PID 1 is shielded from the OOM killer (oom_score_adj -1000): a memory kill ends "
	          "what ran in it, never the session"
	        : "root here lacks CAP_SYS_RESOURCE (a container's bounding set?): a session's PID 1 cannot be "
	          "shielded from the OOM killer, so a memory kill inside a session may end it; give ward the "
	          "capability to keep sessions alive through memory kills");
}

static void images_item(struct doctor_report *r)
{
	char path[4096], err[256];
	uint64_t n, bytes;
	if (!ward_image_store_default(NULL, path, sizeof(path)))
		item(r, "images", false, "cannot tell where the image store is: set WARD_IMAGE_STORE");
	else if (ward_image_store_usage(NULL, &n, &bytes, err, sizeof(err)) < 0)
		item(r, "images", false, "store %s: %s", path, err);
	else
		item(r, "images", true, "store %s: %llu image%s, %.1f MiB of layers", path, (unsigned long long)n,
		     n == 1 ? "" : "s", (double)bytes / 1048576.0);
}

/* What E2B's code interpreter finds in a root (SPEC §18): IPython or the
 * plain kernel, node (and TypeScript), bash; into out, one line. */
static void interp_probe(const struct ward_image_root *image, char *out, size_t n)
{
	static const char probe[] =
		"python3 -c 'import IPython; print(\"IPython \" + IPython.__version__)' 2>/dev/null ||"
		" { command -v python3 >/dev/null && echo 'python3 without IPython (the plain kernel)' || echo 'no "
		"python3'; }\n"
		"if command -v node >/dev/null; then printf 'node %s' \"$(node --version)\";"
		" node -e 'try { process.stdout.write(\" with TypeScript \" + require(\"typescript\").version) } catch "
		"(e) {}';"
		" echo; else echo 'no node (no js, ts)'; fi\n"
		"command -v bash >/dev/null && echo bash || echo 'no bash'\n";
	char *argv[] = {"/bin/sh", "-c", (char *)probe, NULL};
	struct ward_request req;
	ward_request_init(&req);
	req.argv = argv;
	req.capture = true;
	req.image = image;
	req.limits.timeout_s = 20;
	struct ward_result res;
	if (ward_run(&req, &res) != 0 || !res.out.data) {
		snprintf(out, n, "cannot tell: %.200s", res.error[0] ? res.error : "the probe did not run");
		ward_result_free(&res);
		return;
	}
	size_t k = 0;
	for (char *line = strtok(res.out.data, "\n"); line && k < n; line = strtok(NULL, "\n"))
		k += (size_t)snprintf(out + k, n - k, "%s%s", k ? ", " : "", line);
	ward_result_free(&res);
}

static void interp_item(struct doctor_report *r)
{
	char base[300], ci[300] = "";
	interp_probe(NULL, base, sizeof(base));
	struct ward_image_root *root = NULL;
	char err[256];
	if (ward_image_root_open(NULL, "code-interpreter-v1", &root, err, sizeof(err)) == 0) {
		interp_probe(root, ci, sizeof(ci));
		ward_image_root_close(root);
	}
	item(r, "interpreter", true, "E2B's code interpreter: base: %s; code-interpreter-v1: %s", base,
	     ci[0] ? ci : "not in the store (the base root serves it; make code-interpreter-image builds it)");
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return rc;
}

/* Does overlayfs mount in a user namespace here?  A child unshares a user
 * and a mount namespace (its maps written by us) and mounts two lower
 * directories of ours; 0 or an errno. */
static int try_overlay_userns(const char *dir)
{
	int go[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0)
		return errno;
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		close(go[1]);
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(errno & 0x7f);
		char c;
		if (write(go[0], "u", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(EIO);
		char opts[8300], m[4200], f[4200];
		snprintf(opts, sizeof(opts), "lowerdir=%s/l2:%s/l1", dir, dir);
		snprintf(m, sizeof(m), "%s/m", dir);
		if (mount("overlay", m, "overlay", 0, opts) < 0)
			_exit(errno & 0x7f);
		snprintf(f, sizeof(f), "%s/m/a", dir);
		struct stat st;
		_exit(stat(f, &st) == 0 ? 0 : ENOENT);
	}
	/* The child says it has unshared, then waits for our byte: its maps
	 * are written. */
	close(go[0]);
	char c, p[64], map[64];
	int rc = 0;
	if (read(go[1], &c, 1) != 1)
		rc = EIO;
	snprintf(map, sizeof(map), "0 %d 1", (int)geteuid());
	snprintf(p, sizeof(p), "/proc/%d/uid_map", (int)pid);
	if (!rc && write_str(p, map) < 0)
		rc = errno;
	snprintf(p, sizeof(p), "/proc/%d/setgroups", (int)pid);
	if (!rc)
		write_str(p, "deny");
	snprintf(map, sizeof(map), "0 %d 1", (int)getegid());
	snprintf(p, sizeof(p), "/proc/%d/gid_map", (int)pid);
	if (!rc && write_str(p, map) < 0)
		rc = errno;
	if (write(go[1], "g", 1) != 1 && !rc)
		rc = EIO;
	close(go[1]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!rc)
		rc = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	return rc;
}

static void overlay_item(struct doctor_report *r)
{
	char dir[] = "/tmp/ward-doctor-ovl.XXXXXX", p[64];
	if (!mkdtemp(dir)) {
		item(r, "overlay", false, "cannot make a directory in /tmp to try overlayfs: %s", strerror(errno));
		return;
	}
	chmod(dir, 0755);
	const char *sub[] = {"l1", "l2", "m"};
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, sub[i]);
		mkdir(p, 0755);
	}
	snprintf(p, sizeof(p), "%s/l1/a", dir);
	close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	int e = try_overlay_userns(dir);
	/* what ward itself does as root: an image's root read-only, and a
	 * session's writable one (detached layers under a tmpfs layer) */
	char l1[80], l2[80], err[256] = "", werr[256] = "";
	snprintf(l1, sizeof(l1), "%s/l1", dir);
	snprintf(l2, sizeof(l2), "%s/l2", dir);
	char *layers[] = {l1, l2};
	int ro = -1, rw = -1;
	bool root = geteuid() == 0;
	if (root && overlay_open_ro(layers, 2, &ro, err, sizeof(err)) == 0)
		close(ro);
	if (root && overlay_open_rw(layers, 2, -1, 1, 0, 0, &rw, werr, sizeof(werr)) == 0)
		close(rw);
	unlink(p);
	for (int i = 2; i >= 0; i--) {
		snprintf(p, sizeof(p), "%s/%s", dir, sub[i]);
		rmdir(p);
	}
	rmdir(dir);
	if (!root)
		item(r, "overlay", false,
		     "images need ward to run as root (it merges their layers with overlayfs); "
		     "in a user namespace overlayfs %s here",
		     e == 0 ? "mounts" : "does not mount");
	else if (ro < 0)
		item(r, "overlay", false, "%s", err);
	else
		item(r, "overlay", true,
		     "an image's layers merge read-only here; writable session roots (\"root\": "
		     "\"overlay\") %s; in a user namespace overlayfs %s",
		     rw >= 0 ? "too" : "not (this kernel's overlayfs takes no detached layers: Linux 6.15+)",
		     e == 0 ? "mounts too" : "does not mount");
}

/* Whether namespaces can be made; when not, the cause and its fix: the
 * container's restriction where ward runs in one, else the host's sysctl. */
static void namespaces_item(struct doctor_report *r)
{
	int ns = try_namespaces();
	long maxns = -1, unpriv = -1, apparmor = -1;
	read_int_file("/proc/sys/user/max_user_namespaces", &maxns);
	read_int_file("/proc/sys/kernel/unprivileged_userns_clone", &unpriv);
	read_int_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &apparmor);
	char hint[512];
	if (ns == 0)
		item(r, "namespaces", true, "user, mount, pid, ipc, uts, net and cgroup namespaces can be created");
	else if (container_ns_hint(-ns, hint, sizeof(hint)))
		item(r, "namespaces", false, "cannot create namespaces (%s): %s", strerror(-ns), hint);
	else
		item(r, "namespaces", false, "cannot create namespaces (%s): %s", strerror(-ns),
		     maxns == 0 ? "user.max_user_namespaces is 0: set it above 0"
		     : unpriv == 0
		             ? "user namespaces are disabled: set kernel.unprivileged_userns_clone=1 or run as root"
		     : apparmor == 1
		             ? "AppArmor restricts unprivileged user namespaces: set "
		               "kernel.apparmor_restrict_unprivileged_userns=0, add an AppArmor profile for ward, "
		               "or run as root"
		             : "run as root, or enable unprivileged user namespaces");
}

/* The proof: a real sandbox runs /bin/true, and what enforced it. */
static void system_item(struct doctor_report *r)
{
	struct ward_request req;
	ward_request_init(&req);
	char *argv[] = {"/bin/true", NULL};
	req.argv = argv;
	req.capture = true;
	req.limits.timeout_s = 10;
	struct ward_result res;
	int rc = ward_run(&req, &res);
	r->system_ok = rc == 0 && res.status == WARD_ST_OK;
	if (r->system_ok)
		item(r, "system", true,
		     "a sandbox ran /bin/true in %llu ms (memory: %s, pids: %s, landlock: %s, tcp memory: %s%s)",
		     (unsigned long long)res.usage.wall_ms, res.enforced.memory, res.enforced.pids,
		     res.enforced.landlock, res.enforced.tcp_memory,
		     strcmp(res.enforced.tcp_memory, "none") == 0 ? ", so --net loopback is refused" : "");
	else
		item(r, "system", false, "a test sandbox failed: %s",
		     res.error[0]   ? res.error
		     : res.err.data ? res.err.data
		                    : "");
	ward_result_free(&res);
}

void doctor_run(struct doctor_report *r)
{
	memset(r, 0, sizeof(*r));
	r->root = geteuid() == 0;
	const char *allow = getenv("WARD_ALLOW_APPLICATION");
	r->application_allowed = allow && strcmp(allow, "1") == 0;
	item(r, "user", true,
	     r->root ? "running as root: each sandbox gets its own host uid (WARD_UID_BASE..)"
	             : "running as uid %d: sandboxes run as this uid through user namespaces",
	     (int)geteuid());

	namespaces_item(r);

	struct ward_seccomp f;
	char err[256];
	if (ward_seccomp_prepare(&f, err, sizeof(err)) == 0) {
		item(r, "seccomp", true, "filter compiled (%u instructions)", (unsigned)f.prog.len);
		ward_seccomp_free(&f);
	} else
		item(r, "seccomp", false, "%s", err);

	r->landlock_abi = ward_landlock_abi();
	if (r->landlock_abi > 0)
		item(r, "landlock", true, "ABI %d: writes confined to /tmp, /work, /dev/shm and writable binds",
		     r->landlock_abi);
	else
		item(r, "landlock", false,
		     "not available: the sandbox runs without this layer (add landlock to the kernel's lsm= boot "
		     "parameter to enable it)");

	const struct cg_probe *cg = cg_probe();
	r->cgroup_version = cg ? (int)cg->version : 0;
	char hint[512];
	if (cg && !(cg->memory && cg->pids) && container_cgroup_hint(hint, sizeof(hint)))
		item(r, "cgroup", false, "%s", hint);
	else if (cg && cg->version != CG_NONE)
		item(r, "cgroup", cg->memory && cg->pids, "v%d at %s: memory %s, pids %s, cpu %s%s%s", (int)cg->version,
		     cg->where, cg->memory ? "yes" : "no", cg->pids ? "yes" : "no", cg->cpu ? "yes" : "no",
		     cg->why[0] ? "; " : "", cg->why);
	else
		item(r, "cgroup", false, "no usable cgroups: limits fall back to rlimits%s%s",
		     cg && cg->why[0] ? "; " : "", cg ? cg->why : "");

	if (cg && cg->version != CG_NONE)
		migration_item(r);

	system_item(r);
	if (r->system_ok)
		egress_item(r);
	oom_item(r);
	images_item(r);
	overlay_item(r);
	if (r->system_ok) {
		languages_item(r);
		interp_item(r);
	}
	item(r, "application", r->application_allowed,
	     r->application_allowed ? "allowed (WARD_ALLOW_APPLICATION=1): no kernel isolation"
	                            : "off: set WARD_ALLOW_APPLICATION=1 to allow this weaker level");
}
