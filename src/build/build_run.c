/* build_run.c — the host side of one RUN of `ward image build` (SPEC §19).
 *
 * The step gets a sandbox of its own: new user, mount, PID, network, IPC,
 * UTS and cgroup namespaces (clone3); its user namespace maps 0..65535 to a
 * host range no other sandbox uses (BUILD_UID_BASE, a slot held by an OFD
 * lock while it runs), so it is root inside — apt-get, chown, setuid bits
 * work — and nobody on the host, with no capability there.  Its network
 * namespace has nothing in it; with --net allow, its loopback and ward's
 * egress proxy (system/egress.c, SPEC §13) on 127.0.0.1:3128 there, which
 * reaches only the allow-list's names.  Its root is the image so far: the layers
 * idmapped through its user namespace (the store's root-owned files are its
 * root's), read-only, under a writable layer on a tmpfs of layer_bytes (the
 * step's byte cap; its pages are charged to the step's cgroup, so they
 * count in --memory too), made here as a detached mount and handed in.
 * The cgroup caps memory and processes; the wall clock is timeout_s; the
 * syscall filter is a build's (sandbox/seccomp_build.c).  After the step the tmpfs is handed back: its
 * "upper" is the step's layer. */
#define _GNU_SOURCE
#include "build/build_run.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build/build_inside.h"
#include "sandbox/cgroup.h"
#include "sandbox/overlay.h"
#include "system/egress.h"

static int fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "a build step's sandbox: %s: %s", what, strerror(errno));
	return -1;
}

int build_ids_acquire(struct build_ids *ids, char *err, size_t errlen)
{
	ids->lock_fd = -1;
	mkdir("/run/ward", 0755);
	int fd = open("/run/ward/build-slots", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, "open /run/ward/build-slots (ward image build runs as root)");
	for (unsigned s = 0; s < BUILD_UID_SLOTS; s++) {
		struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = s, .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &l) == 0) {
			ids->base = BUILD_UID_BASE + s * BUILD_UID_COUNT;
			ids->lock_fd = fd;
			return 0;
		}
	}
	close(fd);
	snprintf(err, errlen, "all %u build slots are taken: wait for a build to end", BUILD_UID_SLOTS);
	return -1;
}

void build_ids_release(struct build_ids *ids)
{
	if (ids->lock_fd >= 0)
		close(ids->lock_fd);
	ids->lock_fd = -1;
}

static int write_file(pid_t pid, const char *name, const char *text)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, name);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, text, strlen(text));
	close(fd);
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

static int send_fd(int sock, int fd)
{
	char b = 'r';
	char ctl[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The user namespace's maps, and the step's root made through it. */
static int prepare(const struct build_run *r, pid_t pid, int sock, char *err, size_t errlen, int *tmpfs_fd)
{
	char map[64];
	snprintf(map, sizeof(map), "0 %u %u\n", r->ids->base, BUILD_UID_COUNT);
	if (write_file(pid, "uid_map", map) < 0 || write_file(pid, "gid_map", map) < 0)
		return fail(err, errlen, "write its uid and gid maps");
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return fail(err, errlen, "open its user namespace");
	int root = -1;
	uint64_t mb = (r->layer_bytes + (1u << 20) - 1) >> 20;
	int rc = overlay_open_rw_kept(r->layers, r->nlayers, ns, mb, r->ids->base, r->ids->base, &root, tmpfs_fd, err,
	                              errlen);
	close(ns);
	if (rc < 0)
		return -1;
	rc = send_fd(sock, root);
	close(root);
	return rc < 0 ? fail(err, errlen, "hand the root in") : 0;
}

static void keep_tail(struct build_run_result *res, const char *b, size_t n)
{
	size_t cap = sizeof(res->tail);
	if (n >= cap) {
		memcpy(res->tail, b + n - cap, cap);
		res->ntail = cap;
		return;
	}
	if (res->ntail + n > cap) {
		size_t drop = res->ntail + n - cap;
		memmove(res->tail, res->tail + drop, res->ntail - drop);
		res->ntail -= drop;
	}
	memcpy(res->tail + res->ntail, b, n);
	res->ntail += n;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The output to its end and the step to its exit, within the timeout. */
static int await(const struct build_run *r, pid_t pid, int pidfd, int out, struct build_run_result *res)
{
	double end = now() + r->timeout_s;
	bool open_out = true;
	for (;;) {
		double left = end - now();
		if (left <= 0 && !res->timed_out) {
			res->timed_out = true;
			kill(pid, SIGKILL); /* PID 1 of its namespace: all of it goes */
		}
		struct pollfd p[2] = {{.fd = open_out ? out : -1, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
		int ms = res->timed_out ? 1000 : left > 1 ? 1000 : (int)(left * 1000) + 1;
		if (poll(p, 2, ms) < 0 && errno != EINTR)
			return -1;
		if (p[0].revents) {
			char b[16384];
			ssize_t n = read(out, b, sizeof(b));
			if (n > 0) {
				keep_tail(res, b, (size_t)n);
				if (r->out_fd >= 0 && write(r->out_fd, b, (size_t)n) < 0)
					(void)0;
			} else if (n == 0 || errno != EINTR)
				open_out = false;
		}
		if (p[1].revents && !open_out)
			break;
		if (p[1].revents && open_out) /* the step is gone: what is left in the pipe, then done */
			continue;
	}
	int st;
	while (waitpid(pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return -1;
	res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

static pid_t spawn(int *pidfd)
{
	struct clone_args a = {.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
	                                CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD,
	                       .pidfd = (uint64_t)(uintptr_t)pidfd,
	                       .exit_signal = SIGCHLD};
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

/* The RUN's process (build_inside.c), in its new namespaces. */
__attribute__((noreturn)) static void child_main(const struct build_run *r, int sock, int out)
{
	struct build_inside in = {.sock = sock, .out = out, .argv = r->argv, .env = r->env};
	in.workdir = r->workdir;
	in.user = r->user;
	in.net_allow = r->egress != NULL;
	_exit(build_inside(&in));
}

int build_run_step(const struct build_run *r, struct build_run_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	res->tmpfs_fd = -1;
	struct cg_limits lim = {.memory_bytes = r->memory_bytes, .pids = r->pids};
	struct ward_cgroup *cg = cg_create(&lim, err, errlen);
	if (!cg)
		return -1;
	int sv[2] = {-1, -1}, pp[2] = {-1, -1}, pidfd = -1, rc = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(pp, O_CLOEXEC) < 0) {
		fail(err, errlen, "socketpair");
		goto out;
	}
	pid_t pid = spawn(&pidfd);
	if (pid == 0) {
		close(sv[0]);
		close(pp[0]);
		child_main(r, sv[1], pp[1]);
	}
	if (pid < 0) {
		fail(err, errlen, "clone3 (ward image build needs root and user namespaces)");
		goto out;
	}
	close(sv[1]);
	close(pp[1]);
	sv[1] = pp[1] = -1;
	if (cg_attach(cg, pid) < 0 || prepare(r, pid, sv[0], err, errlen, &res->tmpfs_fd) < 0) {
		if (!err[0])
			fail(err, errlen, "join its cgroup");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto out;
	}
	struct egress_proxy *proxy = NULL;
	if (r->egress) { /* the proxy's socket, made in the step's network namespace */
		int l = egress_recv_listener(sv[0], 10000);
		proxy = l < 0 ? NULL : egress_start(l, r->egress, err, errlen);
		if (!proxy) {
			if (l < 0)
				snprintf(err, errlen, "a build step's sandbox: the egress proxy's socket: %s",
				         strerror(-l));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, __WALL);
			goto out;
		}
	}
	int aw = await(r, pid, pidfd, pp[0], res);
	egress_stop(proxy);
	if (aw < 0) {
		fail(err, errlen, "wait for the step");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto out;
	}
	struct cg_stats st;
	if (cg_stats(cg, &st) == 0)
		res->oom = st.oom_killed;
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (pp[i] >= 0)
			close(pp[i]);
	}
	if (pidfd >= 0)
		close(pidfd);
	cg_kill(cg);
	cg_destroy(cg);
	if (rc < 0 && res->tmpfs_fd >= 0) {
		close(res->tmpfs_fd);
		res->tmpfs_fd = -1;
	}
	return rc;
}
