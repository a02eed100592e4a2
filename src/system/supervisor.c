/* supervisor.c — one system-level sandbox, from the supervisor's side
 * (supervisor.h): a run in its own user, mount, PID, IPC, UTS, cgroup and
 * network namespaces.  Builds it (host identity, plan, detached trees,
 * cgroup, pipes, PID 1's clone, uid map), hands it its command, supervises
 * the run (core/supervise.c) and destroys it.
 *
 * Runs on the host, in ward (any of a server's threads): it may allocate,
 * and it owns every host resource of the sandbox.  No code here runs inside
 * a sandbox: PID 1 is init.c, the command's last steps are command.c, and
 * all they get from here is child.h's child_ctx.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/plan.h"
#include "core/supervise.h"
#include "image/root.h"
#include "sandbox/cgroup.h"
#include "sandbox/container.h"
#include "sandbox/mounts.h"
#include "sandbox/overlay.h"
#include "sandbox/userns.h"
#include "system/child.h"
#include "system/clone.h"
#include "system/collect_walk.h"
#include "system/egress.h"
#include "system/handover.h"
#include "system/netns.h"
#include "system/spawner.h"
#include "system/supervisor.h"

static const char *landlock_name(int abi)
{
	static const char *const names[] = {"none",           "landlock-abi-1", "landlock-abi-2", "landlock-abi-3",
	                                    "landlock-abi-4", "landlock-abi-5", "landlock-abi-6", "landlock-abi-7",
	                                    "landlock-abi-8", "landlock-abi-9"};
	if (abi < 0)
		abi = 0;
	return abi < 10 ? names[abi] : "landlock";
}

static void kill_tree(void *arg)
{
	/* PID 1's death takes the whole PID namespace with it */
	syscall(SYS_pidfd_send_signal, *(int *)arg, SIGKILL, NULL, 0);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* One sandbox, supervisor side. */
struct sandbox {
	const struct sandbox_facts *facts;
	struct ward_identity id;
	struct plan plan;
	struct ward_cgroup *cg;
	pid_t pid;
	int pidfd;
	bool ahead;           /* built before its request (a pool's) */
	bool session;         /* PID 1 runs a session (init_session.c) */
	struct cg_limits lim; /* the cgroup's limits now */
	int sync_w;           /* "g"/"p", then the handover; held open until the end */
	int ctl_r, out_r, err_r, in_w, rep_r, nsock;
	struct egress_proxy *egress; /* network allow: ward's proxy for it */
	struct ward_netns *netns;    /* network none: ward's namespace for it (netns.c) */
	int root_fd;                 /* an image's writable root ("root": "overlay"), or -1 */
	char root_path[40];          /* "/proc/self/fd/N" of it */
};

/* Files out (SPEC §12): PID 1 sends them on the report pipe. */
static bool wants_collect(const struct ward_request *r)
{
	return r->collect && r->collect[0];
}

/* Binds nothing of the host's but the system directories every sandbox
 * has (no workdir, mounts or rootfs) and adds nothing to them (no
 * work_link): the shape a pool or a spawner helper builds without the
 * caller's plan. */
static bool binds_nothing(const struct ward_request *r)
{
	return !r->workdir && !r->rootfs && r->nmounts == 0 && !r->work_link;
}

/* On an image's root and nothing of the host's else (the root's path is
 * the image's: one for every sandbox on it). */
static bool image_only(const struct ward_request *r)
{
	return r->image && !r->workdir && r->nmounts == 0 && !r->work_link;
}

bool sandbox_same_shape(const struct ward_request *a, const struct ward_request *b)
{
	bool same_root =
		(binds_nothing(a) && binds_nothing(b)) || (image_only(a) && image_only(b) && a->image == b->image);
	return a->isolation == WARD_ISO_SYSTEM && b->isolation == WARD_ISO_SYSTEM && same_root && a->net == b->net &&
	       a->limits.tmp_size_mb == b->limits.tmp_size_mb;
}

void sandbox_destroy(struct sandbox *sb)
{
	if (!sb)
		return;
	if (sb->pid > 0) {
		if (sb->pidfd >= 0)
			kill_tree(&sb->pidfd);
		while (waitpid(sb->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&sb->pidfd);
	close_fd(&sb->root_fd);
	/* Every process of the sandbox is gone with its PID 1 (reaped above,
	 * or never cloned): its network namespace may serve another. */
	netns_give(sb->netns);
	sb->netns = NULL;
	egress_stop(sb->egress);
	int *fds[] = {&sb->sync_w, &sb->ctl_r, &sb->out_r, &sb->err_r, &sb->in_w, &sb->rep_r, &sb->nsock};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close_fd(fds[i]);
	cg_destroy(sb->cg);
	userns_release(&sb->id);
	plan_free(&sb->plan);
	free(sb);
}

/* The pipes of a build, both ends, until the supervisor's ends move into
 * the sandbox. */
struct build_fds {
	int sync[2], ctl[2], out[2], err[2], in[2], rep[2], nsock[2];
};

static void build_fds_close(struct build_fds *f, int *trees, size_t ntrees)
{
	int *all = &f->sync[0];
	for (size_t i = 0; i < sizeof(*f) / sizeof(int); i++)
		close_fd(&all[i]);
	if (trees)
		for (size_t i = 0; i < ntrees; i++)
			close_fd(&trees[i]);
	free(trees);
}

/* What PID 1 said on the control pipe when its setup failed ("E why"),
 * as an error message; false when it said something else. */
static bool setup_error(const char *ctl, char *err, size_t errlen)
{
	if (ctl[0] != 'E')
		return false;
	const char *why = ctl[1] == ' ' ? ctl + 2 : "(no reason given)";
	size_t n = strcspn(why, "\n");
	snprintf(err, errlen, "sandbox setup failed: %.*s", (int)n, why);
	return true;
}

/* Wait (bounded) for a sandbox built ahead to say "R"; 0 or -1 (err set). */
static int wait_ready(struct sandbox *sb, char *err, size_t errlen)
{
	char buf[600];
	size_t got = 0;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = {.fd = sb->ctl_r, .events = POLLIN};
		int n = poll(&p, 1, 30000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t k = read(sb->ctl_r, buf + got, sizeof(buf) - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		buf[got] = 0;
		if (strchr(buf, '\n'))
			break;
	}
	buf[got] = 0;
	if (strcmp(buf, "R\n") == 0)
		return 0;
	if (!setup_error(buf, err, errlen))
		snprintf(err, errlen, "the sandbox's init did not get ready");
	return -1;
}

/* A loopback's TCP buffers are kernel memory that only a memory cgroup
 * charges (no rlimit bounds them): without one, a sandbox could fill the
 * host's TCP memory (and push every socket on it into memory pressure).
 * Network allow has the loopback too (the proxy's connections). */
static void loopback_refused(const struct ward_cgroup *cg, enum ward_net net, const char *cgerr, char *err,
                             size_t errlen)
{
	const char *mode = net == WARD_NET_ALLOW ? "allow" : "loopback";
	if (!cg)
		snprintf(err, errlen,
		         "--net %s needs a memory cgroup to charge the sandbox's socket buffers to: use --net "
		         "none, or run ward as root or in a delegated cgroup (here ward has none: %.200s)",
		         mode, cgerr[0] ? cgerr : "no usable cgroups");
	else
		snprintf(err, errlen,
		         "--net %s needs the sandbox's socket buffers charged to its memory cgroup, which this "
		         "kernel does not do (cgroup v1 without memory.kmem.tcp.limit_in_bytes, or v2 booted with "
		         "cgroup.memory=nosocket; see `ward doctor`); use --net none",
		         mode);
}

static void clone_error(int e, char *err, size_t errlen)
{
	char hint[512];
	if (container_ns_hint(e, hint, sizeof(hint)))
		snprintf(err, errlen, "cannot create the sandbox's namespaces: %s; %s", strerror(e), hint);
	else if (e == EPERM || e == ENOSPC || e == EINVAL)
		snprintf(err, errlen,
		         "cannot create the sandbox's namespaces: %s; user namespaces may be disabled on this "
		         "host: set kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or "
		         "run as root (see `ward doctor`)",
		         strerror(e));
	else
		snprintf(err, errlen, "cannot create the sandbox: clone: %s", strerror(e));
}

/* Running as root, the sandbox's host uid owns nothing: a writable bind
 * maps the directory's owner to it, so that writes come back owned by that
 * owner.  The tree, or -errno: a filesystem without idmapped mounts gets a
 * plain bind (the sandbox then writes only where its uid may), unless the
 * bind must be idmapped (OPF_IDMAP_ONLY). */
static int idmapped_tree(const struct ward_identity *id, const struct mount_op *op)
{
	bool held = mounts_held_fd(op->src, NULL) != -1;
	int src = held ? mounts_open_source(op) : open(op->src, O_PATH | O_CLOEXEC);
	if (src < 0)
		return held ? src : -errno;
	int t = -EIO;
	struct stat st;
	if (fstat(src, &st) == 0) {
		int ns = userns_idmap_fd(id, st.st_uid, st.st_gid);
		t = ns;
		if (ns >= 0) {
			t = mounts_idmapped_tree(src, ns);
			close(ns);
		}
	}
	close(src);
	return t;
}

/* The detached trees PID 1 mounts instead of a path: idmapped binds, and
 * sources the caller holds open (ward serve's --allow-root checks), which
 * are cloned here, where that fd lives: PID 1 keeps none of the caller's
 * fds, and lives in a mount namespace where they cannot be cloned.  Without
 * the right to clone mounts here (not root), PID 1 binds its path instead,
 * pinned to the descriptor's inode: never a symlink swapped in.  trees has
 * plan.nops entries, all -1.  0, or -1 with err set. */
static int prepare_trees(struct sandbox *sb, int *trees, char *err, size_t errlen)
{
	for (size_t i = 0; i < sb->plan.nops; i++) {
		struct mount_op *op = &sb->plan.ops[i];
		if (op->kind != OP_BIND)
			continue;
		if (op->flags & OPF_IDMAP)
			trees[i] = idmapped_tree(&sb->id, op);
		if (trees[i] < 0 && (op->flags & OPF_IDMAP_ONLY)) {
			snprintf(err, errlen,
			         "cannot bind '%s' at %s as the sandbox's own (an idmapped mount): %s; it needs "
			         "ward to run as root and Linux 5.12+ with a file system that supports "
			         "idmapped mounts (ext4, xfs, btrfs)",
			         op->src, op->dst, strerror(-trees[i]));
			trees[i] = -1;
			return -1;
		}
		if (trees[i] < 0)
			trees[i] = -1;
		if (trees[i] >= 0 || mounts_held_fd(op->src, NULL) == -1)
			continue;
		trees[i] = geteuid() == 0 ? mounts_held_tree(op) : -EPERM;
		if (trees[i] == -EPERM) {
			trees[i] = -1;
			if (plan_pin_held(&sb->plan, op, err, errlen) < 0)
				return -1;
		} else if (trees[i] < 0) {
			snprintf(err, errlen, "cannot bind '%s': %s", op->src,
			         trees[i] == -ELOOP ? "a symlink lies on the way inside it, which is refused"
			                            : strerror(-trees[i]));
			return -1;
		}
	}
	return 0;
}

/* The cgroup, with the shape's limits: built ahead, the (default) ones; a
 * request that asks for others gets them when it takes the sandbox.  None
 * at all is allowed (rlimits stand in), but not for --net loopback.  0, or
 * -1 with err set. */
static int make_cgroup(struct sandbox *sb, const struct ward_request *shape, double start, char *err, size_t errlen)
{
	sb->lim = (struct cg_limits){.memory_bytes = shape->limits.memory_mb << 20, .pids = shape->limits.pids};
	char cgerr[256] = "";
	sb->cg = cg_create(&sb->lim, cgerr, sizeof(cgerr));
	trace_phase("cgroup", start);
	if (shape->net != WARD_NET_NONE && !cg_charges_sockets(sb->cg)) {
		loopback_refused(sb->cg, shape->net, cgerr, err, errlen);
		return -1;
	}
	return 0;
}

/* The run's pipes and the seccomp listener's socket.  stdin: a pipe that
 * the supervisor feeds (the request's bytes, or what it relays from the
 * caller's fd), never the caller's fd itself (a terminal inside could be
 * reconfigured, or written past the output caps).  0, or -1 with err set. */
static int make_pipes(struct build_fds *f, bool want_in, bool want_rep, char *err, size_t errlen)
{
	if (pipe2(f->sync, O_CLOEXEC) < 0 || pipe2(f->ctl, O_CLOEXEC) < 0 || pipe2(f->out, O_CLOEXEC) < 0 ||
	    pipe2(f->err, O_CLOEXEC) < 0 || (want_in && pipe2(f->in, O_CLOEXEC) < 0) ||
	    (want_rep && pipe2(f->rep, O_CLOEXEC) < 0) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f->nsock) < 0) {
		snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
		return -1;
	}
	/* The command must be able to reopen its pipes (/dev/stdout,
	 * /proc/self/fd/N) like any program, but as root ward created them
	 * owned by a uid the sandbox does not map.  Anonymous pipes are
	 * reachable only through /proc/PID/fd, which needs ptrace access to a
	 * holder, so opening their mode up exposes them to nobody else. */
	int ends[] = {f->out[1], f->err[1], f->in[0], f->rep[1]};
	for (size_t i = 0; i < 4; i++)
		if (ends[i] >= 0 && fchmod(ends[i], 0666) < 0) {
			snprintf(err, errlen, "cannot hand the pipes to the sandbox: %s", strerror(errno));
			return -1;
		}
	return 0;
}

/* PID 1, cloned by a helper (the plain shape: the helper makes the plan
 * itself).  The pid, or -errno (-EPIPE, -ENOSYS: no helper took it). */
static pid_t clone_by_helper(struct sandbox *sb, sandbox_cloner *helper, const struct ward_request *shape,
                             const struct build_fds *f, uint64_t work_size_mb, double start, bool *born_in_cg)
{
	struct spawn_req sr = {.net = shape->net,
	                       .tmp_size_mb = shape->limits.tmp_size_mb,
	                       .work_size_mb = work_size_mb,
	                       .start = start};
	int sfds[SP_NFDS] = {f->sync[0], f->ctl[1],   f->out[1],        f->err[1],          f->in[0],
	                     f->rep[1],  f->nsock[1], cg_dirfd(sb->cg), netns_fd(sb->netns)};
	/* cgroup v1: the process parked in a kept cgroup clones PID 1 there
	 * (no move on this path). */
	int parked = cg_parked_sock(sb->cg);
	if (parked >= 0) {
		pid_t pid = spawner_clone_parked(parked, &sr, sfds, &sb->pidfd, born_in_cg);
		int r = pid > 0 ? cg_parked_cloned(sb->cg) : cg_unpark(sb->cg);
		if (pid > 0 && r == 0)
			return pid;
		if (pid > 0) { /* its counters could not start again: not this cgroup */
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			close(sb->pidfd);
			sb->pidfd = -1;
			return r;
		}
		*born_in_cg = false; /* it died, or could not clone: a helper does */
	}
	return helper(&sr, sfds, &sb->pidfd, born_in_cg);
}

/* Landlock's writable paths at most: /tmp, /work, /dev/shm, the request's
 * writable mounts, and a writable root's binds. */
#define WRITE_PATHS_MAX 256

/* PID 1, cloned by us: it runs init_main on a copy of this stack, where
 * its child_ctx and the Landlock write paths live.  The pid, or -errno. */
static pid_t clone_by_us(struct sandbox *sb, const struct ward_request *shape, int *trees, const struct build_fds *f,
                         double start, bool *born_in_cg)
{
	/* Landlock: writes stay allowed only where the sandbox has writable
	 * mounts. */
	const char *write_paths[WRITE_PATHS_MAX];
	size_t nwrite = landlock_write_paths(shape, write_paths, WRITE_PATHS_MAX);
	/* a writable root (an image's "root": "overlay"): each of its binds */
	for (size_t i = 0; shape->root_overlay && i < sb->plan.nops && nwrite < WRITE_PATHS_MAX; i++)
		if (sb->plan.ops[i].kind == OP_BIND && (sb->plan.ops[i].flags & OPF_RW) &&
		    strncmp(sb->plan.ops[i].dst, "/dev/", 5) != 0)
			write_paths[nwrite++] = sb->plan.ops[i].dst;
	struct child_ctx c = {
		.facts = sb->facts,
		.plan = &sb->plan,
		.trees = trees,
		.net = shape->net,
		.write_paths = write_paths,
		.nwrite = nwrite,
		.landlock_abi = sb->facts->landlock_abi,
		.sync_r = f->sync[0],
		.ctl_w = f->ctl[1],
		.out_w = f->out[1],
		.err_w = f->err[1],
		.in_r = f->in[0],
		.rep_w = f->rep[1],
		.notify_w = f->nsock[1],
		.start = start,
	};
	return clone_pid1(&c, cg_dirfd(sb->cg), netns_fd(sb->netns), 0, &sb->pidfd, born_in_cg);
}

/* The supervisor's ends of the pipes move into the sandbox. */
static void take_ends(struct sandbox *sb, struct build_fds *f)
{
	sb->sync_w = f->sync[1];
	sb->ctl_r = f->ctl[0];
	sb->out_r = f->out[0];
	sb->err_r = f->err[0];
	sb->in_w = f->in[1];
	sb->rep_r = f->rep[0];
	sb->nsock = f->nsock[0];
	f->sync[1] = f->ctl[0] = f->out[0] = f->err[0] = f->in[1] = f->rep[0] = f->nsock[0] = -1;
}

/* PID 1 exists: its uid map, its cgroup (unless born there), then go ("g";
 * "p" and wait for "R" when built ahead).  0, or -1 with err set. */
static int start_pid1(struct sandbox *sb, bool born_in_cg, double start, char *err, size_t errlen)
{
	if (userns_write_maps(sb->pid, &sb->id, err, errlen) < 0)
		return -1;
	trace_phase("uidmap", start);
	if (sb->cg && !born_in_cg) {
		int r = cg_attach(sb->cg, sb->pid);
		if (r < 0) {
			snprintf(err, errlen, "cannot move the sandbox into its cgroup: %s", strerror(-r));
			return -1;
		}
	}
	trace_phase("attach", start);
	if (write(sb->sync_w, sb->session ? "s" : sb->ahead ? "p" : "g", 1) != 1) {
		snprintf(err, errlen, "cannot start the sandbox: %s", strerror(errno));
		return -1;
	}
	if ((sb->ahead || sb->session) && wait_ready(sb, err, errlen) < 0)
		return -1;
	return 0;
}

/* Network allow: the proxy's listening socket, which PID 1 made in the
 * sandbox's namespace and sends first on the notify socket (before the
 * seccomp listener), and the proxy on it.  0, or -1 with err set (PID 1's
 * own reason when it gave one). */
static int start_egress(struct sandbox *sb, const struct ward_request *shape, double start, char *err, size_t errlen)
{
	if (shape->net != WARD_NET_ALLOW || sb->ahead)
		return 0;
	int fd = egress_recv_listener(sb->nsock, 30000);
	if (fd < 0) {
		char buf[600] = "";
		struct pollfd p = {.fd = sb->ctl_r, .events = POLLIN};
		if (poll(&p, 1, 1000) == 1) {
			ssize_t n = read(sb->ctl_r, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = 0;
		}
		if (!setup_error(buf, err, errlen))
			snprintf(err, errlen, "the sandbox's init sent no socket for the egress proxy: %s",
			         strerror(-fd));
		return -1;
	}
	sb->egress = egress_start(fd, shape, err, errlen);
	trace_phase("egress", start);
	return sb->egress ? 0 : -1;
}

static struct sandbox *sandbox_new(const struct sandbox_facts *facts, bool ahead)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return NULL;
	sb->facts = facts;
	sb->id = (struct ward_identity){.lock_fd = -1, .slot = -1};
	sb->pid = -1;
	sb->pidfd = sb->sync_w = sb->ctl_r = sb->out_r = sb->err_r = sb->in_w = sb->rep_r = sb->nsock = -1;
	sb->root_fd = -1;
	sb->ahead = ahead;
	return sb;
}

/* An image's "root": "overlay" (SPEC §14): the image's layers, idmapped so
 * that their root-owned files are the sandbox user's, under a writable
 * layer on a tmpfs of the shape's /tmp size, mounted for this sandbox
 * alone (sb->root_fd); *own is shape with it as the rootfs.  0, or -1 with
 * err set. */
static int writable_root(struct sandbox *sb, const struct ward_request *shape, struct ward_request *own, char *err,
                         size_t errlen)
{
	if (!shape->image) {
		snprintf(err, errlen, "root: overlay is a writable layer over an image: give an image");
		return -1;
	}
	char *const *dirs;
	size_t n;
	image_root_layers(shape->image, &dirs, &n);
	int ns = userns_idmap_fd(&sb->id, 0, 0);
	if (ns < 0) {
		snprintf(err, errlen, "root: overlay: cannot make the idmapping of its layers: %s", strerror(-ns));
		return -1;
	}
	int r = overlay_open_rw(dirs, n, ns, shape->limits.tmp_size_mb, sb->id.host_uid, sb->id.host_gid, &sb->root_fd,
	                        err, errlen);
	close(ns);
	if (r < 0)
		return -1;
	snprintf(sb->root_path, sizeof(sb->root_path), "/proc/self/fd/%d", sb->root_fd);
	*own = *shape;
	own->rootfs = sb->root_path;
	return 0;
}

/* One attempt at sandbox_build: through the helper when there is one and
 * the shape is plain (the helper makes the plan itself, and binds nothing
 * held, so none is made here), else a clone of our own.  *no_helper: the
 * helper did not take it (the caller starts over without). */
static struct sandbox *build(const struct ward_request *shape, bool ahead, double start, sandbox_cloner *helper,
                             bool *no_helper, uint64_t session_work_mb, char *err, size_t errlen)
{
	const struct sandbox_facts *facts = sandbox_facts();
	trace_phase("prepare", start);
	if (!facts->filter_ok) {
		snprintf(err, errlen, "seccomp is not available: %s", facts->filter_err);
		return NULL;
	}
	struct sandbox *sb = sandbox_new(facts, ahead);
	if (!sb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sb->session = session_work_mb > 0;
	bool spawn = helper && binds_nothing(shape);
	int *trees = NULL;
	struct build_fds f;
	memset(&f, -1, sizeof(f));

	if (userns_acquire(&sb->id, err, errlen) < 0)
		goto fail;
	trace_phase("identity", start);
	struct ward_request own;
	if (shape->root_overlay) { /* a writable root of its own, its layers idmapped to its uid */
		if (writable_root(sb, shape, &own, err, errlen) < 0)
			goto fail;
		shape = &own;
	}
	if (!spawn && plan_build(&sb->plan, shape, geteuid(), err, errlen) < 0)
		goto fail;
	plan_size_work(&sb->plan, session_work_mb);
	trace_phase("plan", start);
	trees = malloc(sizeof(int) * (sb->plan.nops ? sb->plan.nops : 1));
	if (!trees) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < sb->plan.nops; i++)
		trees[i] = -1;
	if (prepare_trees(sb, trees, err, errlen) < 0)
		goto fail;
	trace_phase("idmap", start);
	if (make_cgroup(sb, shape, start, err, errlen) < 0)
		goto fail;
	if (shape->net == WARD_NET_NONE)
		sb->netns = netns_take();
	trace_phase("netns", start);
	if (make_pipes(&f, ahead || shape->stdin_set || shape->stdin_fd >= 0,
	               ahead || shape->report_channel || wants_collect(shape), err, errlen) < 0)
		goto fail;

	bool born_in_cg = false;
	pid_t pid = spawn ? clone_by_helper(sb, helper, shape, &f, session_work_mb, start, &born_in_cg)
	                  : clone_by_us(sb, shape, trees, &f, start, &born_in_cg);
	if (spawn && (pid == -EPIPE || pid == -ENOSYS)) {
		*no_helper = true;
		snprintf(err, errlen, "no sandbox spawner helper is alive");
		goto fail;
	}
	if (pid < 0) {
		clone_error(-pid, err, errlen);
		goto fail;
	}
	sb->pid = pid;
	trace_phase(spawn ? "spawn" : "clone", start);
	take_ends(sb, &f);
	build_fds_close(&f, trees, sb->plan.nops);
	trees = NULL;
	if (start_pid1(sb, born_in_cg, start, err, errlen) < 0 || start_egress(sb, shape, start, err, errlen) < 0)
		goto fail;
	return sb;

fail:
	build_fds_close(&f, trees, sb->plan.nops);
	sandbox_destroy(sb);
	return NULL;
}

/* build through the helper, and once more without it when it did not take
 * the clone. */
static struct sandbox *build_any(const struct ward_request *shape, bool ahead, double start, sandbox_cloner *helper,
                                 uint64_t session_work_mb, char *err, size_t errlen)
{
	bool no_helper = false;
	struct sandbox *sb = build(shape, ahead, start, helper, &no_helper, session_work_mb, err, errlen);
	if (!sb && no_helper)
		sb = build(shape, ahead, start, NULL, &no_helper, session_work_mb, err, errlen);
	return sb;
}

struct sandbox *sandbox_build(const struct ward_request *shape, bool ahead, double start, sandbox_cloner *helper,
                              char *err, size_t errlen)
{
	return build_any(shape, ahead, start, helper, 0, err, errlen);
}

struct sandbox *sandbox_build_session(const struct ward_request *shape, uint64_t work_size_mb, sandbox_cloner *helper,
                                      int *listener, char *err, size_t errlen)
{
	*listener = -1;
	/* Through a spawner helper where the shape is plain, as a run's: PID 1
	 * is then a copy of the small helper, not of the server, and so is
	 * every exec it forks (a fork copies the forker's page tables). */
	uint64_t work = work_size_mb ? work_size_mb : shape->limits.tmp_size_mb ? shape->limits.tmp_size_mb : 1;
	struct sandbox *sb = build_any(shape, false, monotonic_now(), helper, work, err, errlen);
	if (!sb)
		return NULL;
	/* The filter's listener: session_seccomp.c reads it, so that a fatal
	 * call kills the exec it was made in. */
	int lis = ward_seccomp_recv_listener(sb->nsock);
	if (lis >= 0)
		*listener = lis;
	else if (!sb->facts->no_seccomp) {
		snprintf(err, errlen, "the session's init sent no seccomp listener: %s", strerror(-lis));
		sandbox_destroy(sb);
		return NULL;
	}
	return sb;
}

struct sandbox_session sandbox_session_parts(struct sandbox *sb)
{
	return (struct sandbox_session){.cg = sb->cg,
	                                .pid = sb->pid,
	                                .pidfd = sb->pidfd,
	                                .sock = sb->nsock,
	                                .host_uid = sb->id.host_uid,
	                                .host_gid = sb->id.host_gid,
	                                .egress = sb->egress};
}

void sandbox_session_kill(struct sandbox *sb)
{
	if (sb->pid > 0) {
		if (sb->pidfd >= 0)
			kill_tree(&sb->pidfd);
		while (waitpid(sb->pid, NULL, 0) < 0 && errno == EINTR)
			;
		sb->pid = -1;
	}
}

/* Encode req's command and write it to PID 1.  0, or -errno (-EPIPE: PID 1
 * is gone). */
int sandbox_write_handover(int fd, const struct ward_request *req, bool with_as)
{
	char **argv = argv_build(req);
	char **envp = env_build(req, NULL);
	int r = -ENOMEM;
	if (argv && envp) {
		struct handover ho = {
			.flags = (req->stdin_set || req->stdin_fd >= 0 ? HO_STDIN_PIPE : 0) |
		                 (req->report_channel ? HO_REPORT : 0) | (with_as ? HO_WITH_AS : 0),
			.limits = req->limits,
			.argv = argv,
			.envp = envp,
			.files = (struct ward_file *)req->files,
			.nfiles = req->nfiles,
			.collect = (char **)req->collect,
		};
		size_t len = 0;
		char *buf = handover_encode(&ho, &len);
		if (!buf)
			r = -E2BIG;
		else {
			/* PID 1 reads as we write: a large body (files) does not
			 * need to fit in the pipe. */
			/* A library must not die of SIGPIPE when PID 1 is gone:
			 * block it for this thread and take back the one the
			 * write raised. */
			sigset_t pipe_set, old;
			sigemptyset(&pipe_set);
			sigaddset(&pipe_set, SIGPIPE);
			pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
			r = 0;
			for (size_t off = 0; off < len;) {
				ssize_t n = write(fd, buf + off, len - off);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					r = -errno;
					break;
				}
				off += (size_t)n;
			}
			if (r == -EPIPE && !sigismember(&old, SIGPIPE)) {
				struct timespec zero = {0, 0};
				sigtimedwait(&pipe_set, NULL, &zero);
			}
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			free(buf);
		}
	}
	env_free(envp);
	free(argv);
	return r;
}

/* The request's memory and pids limits on the cgroup, when they are not
 * the ones it has (a sandbox built ahead has the shape's).  0, or -1: they
 * cannot be set (the caller takes a fresh sandbox, which reports why). */
static int fit_limits(struct sandbox *sb, const struct ward_request *req)
{
	struct cg_limits lim = {.memory_bytes = req->limits.memory_mb << 20, .pids = req->limits.pids};
	if (sb->cg && (lim.memory_bytes != sb->lim.memory_bytes || lim.pids != sb->lim.pids)) {
		char cgerr[256];
		if (cg_set_limits(sb->cg, &lim, cgerr, sizeof(cgerr)) < 0)
			return -1;
		sb->lim = lim;
	}
	return 0;
}

/* Which mechanism enforces each limit and layer (the result's "enforced"). */
void sandbox_enforced(const struct sandbox *sb, struct ward_result *res)
{
	struct ward_cgroup *cg = sb->cg;
	res->enforced.memory = cg && cg_limits_memory(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.pids = cg && cg_limits_pids(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.cpu = cg && cg_accounts_cpu(cg) ? cg_mechanism(cg) : "rlimit";
	res->enforced.fsize = "rlimit";
	res->enforced.seccomp = sb->facts->no_seccomp ? "none" : "seccomp";
	res->enforced.landlock = landlock_name(sb->facts->landlock_abi);
	res->enforced.tcp_memory = cg_sockets_mechanism(cg);
	snprintf(res->enforced.user, sizeof(res->enforced.user), "userns-uid-%u", (unsigned)sb->id.host_uid);
}

/* Reap PID 1 (its exit took every process of the sandbox with it), unless
 * the run ended at PID 1's report (s->end_at_report: sandbox_destroy reaps
 * it).  Its wait status (0 when not reaped), its rusage in *ru. */
static int reap_pid1(struct sandbox *sb, const struct supervise *s, struct rusage *ru, double start)
{
	int st = 0;
	memset(ru, 0, sizeof(*ru));
	if (!(s->end_at_report && s->ctl[0] == 'X')) {
		while (wait4(sb->pid, &st, 0, ru) < 0 && errno == EINTR)
			;
		sb->pid = -1;
		trace_phase("reaped", start);
	}
	return st;
}

/* CPU and peak memory: the rusage, bettered by the cgroup's figures; and
 * whether the cgroup saw an OOM kill. */
static void collect_usage(const struct sandbox *sb, const struct rusage *ru, struct ward_result *res,
                          struct backend_outcome *o)
{
	usage_from_rusage(ru, &res->usage);
	if (!sb->cg)
		return;
	struct cg_stats cs;
	if (cg_stats(sb->cg, &cs) == 0) {
		o->oom_killed = cs.oom_killed;
		if (cs.cpu_usage_us) {
			res->usage.cpu_user_ms = cs.cpu_user_us / 1000;
			res->usage.cpu_sys_ms = cs.cpu_sys_us / 1000;
		}
		if (cs.memory_peak / 1024 > res->usage.max_rss_kb)
			res->usage.max_rss_kb = cs.memory_peak / 1024;
	}
}

/* What the run came to: the command's status as PID 1 reported it, a kill
 * before it could (still a run), or the setup's failure.  sandbox_run's
 * return. */
static int run_outcome(const struct supervise *s, int st, struct ward_result *res, struct backend_outcome *o)
{
	o->timed_out = s->timed_out;
	o->cancelled = s->cancelled;
	o->seccomp_killed = s->seccomp_killed;
	o->cpu_exceeded = s->cpu_exceeded;
	o->output_exceeded = s->output_exceeded;

	int wst;
	if (sscanf(s->ctl, "X %d", &wst) == 1) {
		o->ran = true;
		o->wait_status = wst;
		return 0;
	}
	if (s->timed_out || s->cpu_exceeded || s->output_exceeded || s->seccomp_killed ||
	    (WIFSIGNALED(st) && o->oom_killed)) {
		/* killed before PID 1 could report: still a timeout (or PID 1
		 * itself was OOM-killed with the command) */
		o->ran = true;
		o->wait_status = SIGKILL;
		return 0;
	}
	if (!setup_error(s->ctl, res->error, sizeof(res->error)))
		snprintf(res->error, sizeof(res->error), "the sandbox's init ended without a report (wait status %d)",
		         st);
	return -1;
}

/* The files PID 1 sent on the report pipe, into the result's files; the
 * frames themselves are dropped.  0, or -1 out of memory. */
static int take_collected(const struct ward_request *req, struct ward_result *res)
{
	int r = collect_decode(res->report ? res->report : "", res->report ? res->report_len : 0,
	                       req->limits.collect_max_files, req->limits.collect_max_bytes, res);
	free(res->report);
	res->report = NULL;
	res->report_len = 0;
	res->report_truncated = false;
	return r;
}

int sandbox_run(struct sandbox *sb, const struct ward_request *req, struct ward_result *res, struct backend_outcome *o,
                bool defer, double start)
{
	if (fit_limits(sb, req) < 0)
		return SANDBOX_STALE; /* a fresh sandbox reports what happens */
	sandbox_enforced(sb, res);

	int r = sandbox_write_handover(sb->sync_w, req, !(sb->cg && cg_limits_memory(sb->cg)));
	trace_phase("handover", start);
	if (r == -EPIPE && sb->ahead)
		return SANDBOX_STALE; /* died while it waited: the caller builds another */
	if (r < 0 && r != -EPIPE) {
		/* -EPIPE on a fresh sandbox: PID 1 failed its setup and said
		 * why on the control pipe, which supervise reads. */
		snprintf(res->error, sizeof(res->error), "cannot hand the command to the sandbox: %s", strerror(-r));
		return -1;
	}
	/* sync_w stays open until the end: PID 1 checks it to know that we
	 * are alive (see init.c). */
	if (!req->stdin_set && req->stdin_fd < 0)
		close_fd(&sb->in_w);
	bool collect = wants_collect(req);
	if (!req->report_channel && !collect)
		close_fd(&sb->rep_r);

	struct supervise s = {
		.pidfd = sb->pidfd,
		.out_fd = sb->out_r,
		.err_fd = sb->err_r,
		.report_fd = sb->rep_r,
		.ctl_fd = sb->ctl_r,
		.stdin_fd = sb->in_w,
		.stdin_src = req->stdin_set ? -1 : req->stdin_fd,
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.timeout_s = req->limits.timeout_s,
		.cpu_s = req->limits.cpu_s > 0 ? req->limits.cpu_s : req->limits.timeout_s,
		.cg = sb->cg,
		.kill_tree = kill_tree,
		.kill_arg = &sb->pidfd,
		.output_limit = req->limits.output_limit,
		.output_kill = req->output_limit_kills,
		.live_fd = {req->capture ? -1 : req->stream_fd[0], req->capture ? -1 : req->stream_fd[1]},
		.report_limit = collect ? (size_t)collect_stream_bound(req->limits.collect_max_files,
	                                                               req->limits.collect_max_bytes)
	                                : req->report_limit,
		.start = start,
		.cancel = req->cancel,
		.observe_fd = req->observe ? req->observe_fd : -1,
		.notify_sock = sb->nsock,
		/* PID 1 closes it before it reports, and its exit leaves no
		 * other holder: its end comes at once */
		.report_to_eof = collect,
	};
	/* Deferred: once PID 1 reports the command's status, the result is
	 * complete (usage comes from the cgroup); PID 1's exit, the
	 * namespaces' teardown and the reaping happen after the caller has
	 * its answer (sandbox_destroy, from the pool's thread). */
	s.end_at_report = defer && sb->cg && cg_accounts_cpu(sb->cg);
	sb->out_r = sb->err_r = sb->rep_r = sb->ctl_r = sb->in_w = sb->nsock = -1; /* supervise owns them now */
	supervise_run(&s);
	trace_phase("supervised", start);

	struct rusage ru;
	int st = reap_pid1(sb, &s, &ru, start);
	outcome_collect(&s, res);
	if (collect && take_collected(req, res) < 0) {
		snprintf(res->error, sizeof(res->error), "out of memory for the collected files");
		return -1;
	}
	collect_usage(sb, &ru, res, o);
	if (sb->egress && egress_records(sb->egress, 0, res) < 0)
		snprintf(res->error, sizeof(res->error), "out of memory for the egress records");
	if (sb->egress)
		res->usage.proxy_cpu_ms = egress_cpu_us(sb->egress) / 1000;
	return run_outcome(&s, st, res, o);
}

int sandbox_set_egress(struct sandbox *sb, const char *const *allow, size_t n, char *err, size_t errlen)
{
	if (!sb->egress) {
		snprintf(err, errlen,
		         "this sandbox has no egress proxy (it was made without network allow): its "
		         "network cannot be opened after it started");
		return -ENOTSUP;
	}
	return egress_set_allow(sb->egress, allow, n, err, errlen);
}
