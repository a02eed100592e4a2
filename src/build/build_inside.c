/* build_inside.c — what runs inside a build step's sandbox (build_run.c
 * makes it): PID 1 of its own PID namespace, uid 0 of its own user
 * namespace, in its own mount, network (nothing but lo, down), IPC and UTS
 * namespaces.  It takes the root (the image so far under a writable layer,
 * a detached mount) from its parent, puts /proc and a small /dev in it,
 * pivots into it, runs the step's command as the step's user, and exits
 * with the command's status; everything left in the namespace dies with it.
 * Only the step's command runs the image's code; nothing here reads what
 * the image wrote but /etc/passwd and /etc/group (bounded). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
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

#include "build/build_inside.h"
#include "sandbox/seccomp_build.h"
#include "system/netinside.h"

static int say(int fd, const char *what)
{
	dprintf(fd, "ward: build step sandbox: %s: %s\n", what, strerror(errno));
	return 125;
}

static int take_root(int sock)
{
	char b;
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

/* /dev: a tmpfs with the host's harmless devices bound in. */
static int make_dev(void)
{
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	mkdir("dev", 0755);
	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k") < 0)
		return -1;
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		char host[32], in[32];
		snprintf(host, sizeof(host), "/dev/%s", devs[i]);
		snprintf(in, sizeof(in), "dev/%s", devs[i]);
		int fd = open(in, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		if (mount(host, in, NULL, MS_BIND, NULL) < 0)
			return -1;
	}
	if (symlink("/proc/self/fd", "dev/fd") < 0 || symlink("/proc/self/fd/0", "dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "dev/stdout") < 0 || symlink("/proc/self/fd/2", "dev/stderr") < 0)
		return -1;
	mkdir("dev/shm", 01777);
	return mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m");
}

/* The root from the parent at /tmp of this private namespace, /proc and
 * /dev in it, then pivoted into. */
static int enter_root(int sock, int out, bool net_allow)
{
	int root = take_root(sock);
	if (root < 0)
		return say(out, "the root was not handed over");
	/* The maps are written now: become the namespace's root (until this,
	 * this process was the host's root, which the namespace does not map). */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 || setgroups(0, NULL) < 0)
		return say(out, "become root of the user namespace");
	if (net_allow && (net_loopback_up() < 0 || net_proxy_listener(sock) < 0))
		return say(out, "make the egress proxy's socket");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return say(out, "make / private");
	if (syscall(SYS_move_mount, root, "", AT_FDCWD, "/tmp", 0x4 /* MOVE_MOUNT_F_EMPTY_PATH */) < 0)
		return say(out, "attach the root");
	close(root);
	if (chdir("/tmp") < 0)
		return say(out, "enter the root");
	mkdir("proc", 0555);
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return say(out, "mount /proc");
	if (make_dev() < 0)
		return say(out, "make /dev");
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return say(out, "pivot into the root");
	if (sethostname("ward-build", 10) < 0)
		return say(out, "set the hostname");
	return 0;
}

/* A passwd or group line's number (field 2) and group (field 3), found by
 * its name (field 0) or, by_id, by its number. */
static bool db_find(const char *file, const char *name, bool by_id, long *id, long *gid)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	for (int n = 0; !found && n < 100000 && fgets(line, sizeof(line), f); n++) {
		char *fields[4] = {0};
		char *p = line;
		for (int i = 0; i < 4 && p; i++) {
			fields[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = 0;
		}
		if (fields[2] && fields[0] && (!strcmp(fields[0], name) || (by_id && !strcmp(fields[2], name)))) {
			*id = strtol(fields[2], NULL, 10);
			if (gid && fields[3])
				*gid = strtol(fields[3], NULL, 10);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool number(const char *s, long *v)
{
	char *end;
	*v = strtol(s, &end, 10);
	return *s && !*end && *v >= 0 && *v < 65536;
}

/* USER uid[:gid] or name[:group], as Docker resolves it. */
static int become(const char *user, int out)
{
	if (!user || !*user)
		return 0;
	char u[256];
	snprintf(u, sizeof(u), "%s", user);
	char *g = strchr(u, ':');
	if (g)
		*g++ = 0;
	long uid = -1, gid = -1, pg = 0;
	if (!number(u, &uid)) {
		if (!db_find("/etc/passwd", u, false, &uid, &pg)) {
			dprintf(out, "ward: USER %s: no such user in the image's /etc/passwd\n", user);
			return 125;
		}
		gid = pg;
	} else if (!db_find("/etc/passwd", u, true, &pg, &gid))
		gid = 0; /* a uid the image does not name: group 0, as Docker */
	if (g && !number(g, &gid) && !db_find("/etc/group", g, false, &gid, NULL)) {
		dprintf(out, "ward: USER %s: no such group in the image's /etc/group\n", user);
		return 125;
	}
	gid_t gg = (gid_t)gid;
	if (setgroups(1, &gg) < 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0 ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0)
		return say(out, "become the step's USER");
	return 0;
}

static void mkdir_p(const char *path)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static int command(const struct build_inside *in)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(in->out, 1) < 0 || dup2(in->out, 2) < 0)
		return say(in->out, "set up the standard streams");
	const char *wd = in->workdir && *in->workdir ? in->workdir : "/";
	mkdir_p(wd);
	int rc = become(in->user, in->out);
	if (rc)
		return rc;
	if (chdir(wd) < 0)
		return say(in->out, "enter the WORKDIR");
	int e = seccomp_build_load();
	if (e < 0) {
		errno = -e;
		return say(in->out, "load the syscall filter");
	}
	environ = (char **)in->env;
	execvp(in->argv[0], in->argv);
	dprintf(2, "ward: cannot run '%s': %s\n", in->argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int build_inside(const struct build_inside *in)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int rc = enter_root(in->sock, in->out, in->net_allow);
	if (rc)
		return rc;
	pid_t pid = fork();
	if (pid < 0)
		return say(in->out, "fork");
	if (pid == 0)
		_exit(command(in));
	/* PID 1: reap everything; end with the command. */
	for (;;) {
		int st;
		pid_t w = wait(&st);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return 125;
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}
