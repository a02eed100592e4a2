/* netns.c — the network namespaces of `--net none` sandboxes (netns.h;
 * ward.h: ward_netns_keep, ward_netns_stats).
 *
 * ward makes each one itself, as root in the host's user namespace
 * (unshare(CLONE_NEWNET) on the calling thread), and PID 1 is cloned into
 * it instead of into a namespace of its own.  So the namespace belongs to
 * the host's user namespace, not the sandbox's: nothing inside holds
 * CAP_NET_ADMIN or CAP_NET_RAW over it.  No interface, address, route,
 * sysctl, netfilter table or raw socket can be made or changed from inside,
 * and `lo` stays down: no packet can be sent, not even to 127.0.0.1.
 *
 * What a sandbox can still leave in it is sockets (a listener on 0.0.0.0,
 * an abstract unix name, one held in flight by another's queue) and
 * counters (a refused connect counts in /proc/net/snmp).  Making a network
 * namespace, and the kernel's work to destroy it, is most of what fresh
 * namespaces cost (bench/nsfloor), so a process that runs many sandboxes
 * (ward serve: ward_netns_keep) keeps one for the next sandbox, but only
 * when, after its PID 1 was reaped and with it every process of the
 * sandbox:
 *   - /proc/net/sockstat counts no socket of the namespace ("sockets:
 *     used 0") and no TCP TIME-WAIT ("tw 0"), and
 *   - every per-namespace counter and table file below reads byte for
 *     byte as it did when the namespace was made.
 * Anything else (any traffic, any socket left) and it is closed, so the
 * kernel destroys it.  What stays the same across a reuse is only the
 * namespace's identity (its inode number, its cookie), which says nothing a
 * sandbox wrote.
 *
 * Where ward is not root in the host's user namespace, unshare fails, no
 * namespace is made here, and each sandbox clones its own (CLONE_NEWNET).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "system/netns.h"
#include "ward.h"

/* The per-namespace files whose bytes must not change: the SNMP and
 * extended counters (any packet, any refused send or connect; SCTP's where
 * the kernel has it), the interface counters, IPv6 flow labels (they
 * outlive their socket).  Multicast groups, whose report timers outlive
 * theirs, cannot be joined (seccomp.c). */
static const char *const g_files[] = {"snmp", "snmp6", "netstat", "dev", "ip6_flowlabel", "sctp/snmp"};
#define SNAP_MAX (64 * 1024)

struct ward_netns {
	int fd;
	char *snap; /* g_files as read when made; NULL: not kept */
	size_t snaplen;
	int slot;  /* its shared slot (locked by us), or -1 */
	bool busy; /* taken from that slot: its snapshot is "N.busy" */
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_host = -1; /* the host's network namespace */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_off;      /* unshare was refused: never again */
static unsigned g_keep; /* at most this many kept idle */
static struct ward_netns **g_idle;
static unsigned g_nidle, g_cap;
static uint64_t g_made, g_reused, g_discarded;

/* Shared across processes (ward_netns_share): SHARE_DIR holds, per slot N,
 * a bind mount of a kept namespace at "N" and its snapshot at "N.snap"
 * ("N.busy" while in use); byte N of "slots" is OFD-locked by the process
 * using slot N. */
#define SHARE_DIR "/run/ward/netns"
static int g_share_dir = -1;  /* O_PATH of SHARE_DIR */
static int g_share_lock = -1; /* its "slots" file */
static unsigned g_share_slots;
static uint64_t g_share_busy; /* slots this process uses (an OFD lock does not exclude its own holder) */
#define SHARE_SLOTS_MAX 64

/* The calling thread's network namespace, if this process may come back
 * to it (a setns into it works), else -1. */
static int host_fd(void)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && setns(fd, CLONE_NEWNET) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void open_host(void)
{
	/* The first caller is on a thread in the host's namespace: every
	 * thread that enters another leaves it before returning.  Coming back
	 * takes what going back into our own namespace takes (CAP_SYS_ADMIN
	 * over the user namespace that owns it), which root in a user
	 * namespace of its own (a rootless container) lacks, though it could
	 * make a namespace: so unless that works now, ward makes none. */
	g_host = host_fd();
}

void netns_init(void)
{
	pthread_once(&g_once, open_host); /* done now, or inherited as done */
	/* A helper forked from a process that had opened it holds that
	 * number no more (it closed every fd but its socket): its own. */
	int fd = host_fd();
	struct stat a, b;
	if (fd >= 0 && g_host >= 0 && fstat(g_host, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino) {
		close(fd);
		return;
	}
	g_host = fd;
}

int netns_enter(int fd)
{
	pthread_once(&g_once, open_host);
	if (g_host < 0)
		return -EBADF;
	return setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
}

void netns_leave(void)
{
	if (setns(g_host, CLONE_NEWNET) < 0)
		abort();
}

/* Append /proc/thread-self/net/NAME to buf (cap bytes, *len used).  0, or
 * -1, also when it does not fit (missing files read as empty: a kernel
 * without IPv6 has no snmp6). */
static int read_net_file(const char *name, char *buf, size_t cap, size_t *len)
{
	char path[64] = "/proc/thread-self/net/";
	strncat(path, name, sizeof(path) - strlen(path) - 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	int rc = 0;
	for (;;) {
		if (*len >= cap) {
			rc = -1;
			break;
		}
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return rc;
}

/* The value after KEY in sockstat's text, or UINT64_MAX when absent. */
static uint64_t field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p)
		return UINT64_MAX;
	char *end;
	unsigned long long v = strtoull(p + strlen(key), &end, 10);
	return end == p + strlen(key) ? UINT64_MAX : (uint64_t)v;
}

/* On a thread inside the namespace: no socket and no TIME-WAIT in it. */
static bool no_sockets(void)
{
	char buf[4096];
	size_t len = 0;
	if (read_net_file("sockstat", buf, sizeof(buf) - 1, &len) < 0)
		return false;
	buf[len] = 0;
	return field(buf, "sockets: used ") == 0 && field(buf, " tw ") == 0;
}

/* On a thread inside the namespace: g_files' bytes, malloc'd (NULL on
 * failure). */
static char *snapshot(size_t *len)
{
	char *buf = malloc(SNAP_MAX);
	if (!buf)
		return NULL;
	*len = 0;
	for (size_t i = 0; i < sizeof(g_files) / sizeof(g_files[0]); i++) {
		if (read_net_file(g_files[i], buf, SNAP_MAX - 1, len) < 0) {
			free(buf);
			return NULL;
		}
		buf[(*len)++] = 0; /* the files' boundary */
	}
	char *fit = realloc(buf, *len ? *len : 1);
	return fit ? fit : buf;
}

static void netns_free(struct ward_netns *ns)
{
	if (!ns)
		return;
	if (ns->fd >= 0)
		close(ns->fd);
	free(ns->snap);
	free(ns);
}

/* A new namespace, made on the calling thread and left at once. */
static struct ward_netns *make(bool keepable)
{
	struct ward_netns *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return NULL;
	ns->fd = -1;
	ns->slot = -1;
	if (unshare(CLONE_NEWNET) < 0) {
		if (errno == EPERM || errno == EINVAL || errno == ENOSYS) {
			pthread_mutex_lock(&g_lock);
			g_off = true;
			pthread_mutex_unlock(&g_lock);
		}
		free(ns);
		return NULL;
	}
	ns->fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns->fd >= 0 && keepable)
		ns->snap = snapshot(&ns->snaplen);
	netns_leave();
	if (ns->fd < 0) {
		free(ns);
		return NULL;
	}
	return ns;
}

/* ---- namespaces shared across processes (ward_netns_share) ------------ */

/* A directory or file of ours: root's, closed to others. */
static bool root_only(int fd, bool dir)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_uid == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
	       !(st.st_mode & 077);
}

/* SHARE_DIR and its lock file, made and checked once (never through a
 * symlink, root's, mode 0700/0600).  False: no sharing in this process. */
static bool share_open(void)
{
	int run = open("/run", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (run < 0)
		return false;
	int dir = -1, lock = -1;
	const char *steps[] = {"ward", "netns"};
	dir = run;
	for (size_t i = 0; i < 2 && dir >= 0; i++) {
		if (mkdirat(dir, steps[i], 0700) < 0 && errno != EEXIST) {
			close(dir);
			return false;
		}
		int next = openat(dir, steps[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		dir = next;
	}
	if (dir < 0 || !root_only(dir, true)) {
		if (dir >= 0)
			close(dir);
		return false;
	}
	lock = openat(dir, "slots", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || !root_only(lock, false)) {
		if (lock >= 0)
			close(lock);
		close(dir);
		return false;
	}
	g_share_dir = dir;
	g_share_lock = lock;
	return true;
}

void ward_netns_share(unsigned slots)
{
	if (slots > SHARE_SLOTS_MAX)
		slots = SHARE_SLOTS_MAX;
	pthread_mutex_lock(&g_lock);
	if (slots && g_share_dir < 0 && geteuid() == 0 && !share_open())
		slots = 0;
	g_share_slots = slots;
	pthread_mutex_unlock(&g_lock);
}

static void share_release(unsigned slot)
{
	pthread_mutex_lock(&g_lock);
	g_share_busy &= ~(1ull << slot);
	pthread_mutex_unlock(&g_lock);
}

static bool slot_lock(unsigned slot, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)slot, .l_len = 1};
	return fcntl(g_share_lock, F_OFD_SETLK, &fl) == 0;
}

/* Slot N's kept namespace: the nsfs bind mount at "N", with the snapshot
 * made when the namespace was, "N.snap".  Taking it renames the snapshot
 * "N.busy" (giving it back renames it again): a slot whose user died
 * mid-run holds a mount and no "N.snap", which the next one discards
 * instead of trusting.  NULL when the slot holds no whole one. */
static struct ward_netns *slot_take(unsigned slot)
{
	char name[16], snapname[24], busy[24];
	snprintf(name, sizeof(name), "%u", slot);
	snprintf(snapname, sizeof(snapname), "%u.snap", slot);
	snprintf(busy, sizeof(busy), "%u.busy", slot);
	unlinkat(g_share_dir, busy, 0); /* a dead user's */
	if (renameat(g_share_dir, snapname, g_share_dir, busy) < 0)
		return NULL;
	int fd = openat(g_share_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int sfd = openat(g_share_dir, busy, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct statfs sf;
	struct stat st;
	bool whole = fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type == NSFS_MAGIC && sfd >= 0 && root_only(sfd, false) &&
	             fstat(sfd, &st) == 0 && st.st_size > 0 && st.st_size < SNAP_MAX;
	char *snap = whole ? malloc((size_t)st.st_size) : NULL;
	size_t len = 0;
	while (snap && len < (size_t)st.st_size) {
		ssize_t n = read(sfd, snap + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (sfd >= 0)
		close(sfd);
	struct ward_netns *ns = NULL;
	if (snap && len == (size_t)st.st_size && (ns = calloc(1, sizeof(*ns)))) {
		*ns = (struct ward_netns){.fd = fd, .snap = snap, .snaplen = len, .slot = (int)slot, .busy = true};
		return ns;
	}
	free(snap);
	if (fd >= 0)
		close(fd);
	unlinkat(g_share_dir, busy, 0);
	return NULL; /* not whole, so not trusted: the caller unmounts it */
}

/* "/proc/self/fd/DIR/NAME": SHARE_DIR's entry, reached through the fd we
 * checked (mount(2) takes paths). */
static void slot_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "/proc/self/fd/%d/%s", g_share_dir, name);
}

static void slot_unmount(unsigned slot)
{
	char name[16], path[64];
	snprintf(name, sizeof(name), "%u", slot);
	slot_path(path, sizeof(path), name);
	while (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		; /* every mount stacked there */
}

/* A slot of our own (locked), with its kept namespace or a new one made
 * keepable.  NULL when every slot is in use (or none is shared). */
static struct ward_netns *share_take(void)
{
	pthread_mutex_lock(&g_lock);
	unsigned slots = g_share_slots;
	pthread_mutex_unlock(&g_lock);
	for (unsigned i = 0; i < slots; i++) {
		pthread_mutex_lock(&g_lock);
		bool mine = g_share_busy & (1ull << i);
		if (!mine)
			g_share_busy |= 1ull << i;
		pthread_mutex_unlock(&g_lock);
		if (mine)
			continue;
		if (!slot_lock(i, F_WRLCK)) {
			share_release(i);
			continue;
		}
		struct ward_netns *ns = slot_take(i);
		if (ns) {
			pthread_mutex_lock(&g_lock);
			g_reused++;
			pthread_mutex_unlock(&g_lock);
			return ns;
		}
		slot_unmount(i);
		ns = make(true);
		if (!ns) {
			slot_lock(i, F_UNLCK);
			share_release(i);
			return NULL;
		}
		ns->slot = (int)i;
		pthread_mutex_lock(&g_lock);
		g_made++;
		pthread_mutex_unlock(&g_lock);
		return ns;
	}
	return NULL;
}

/* After its sandbox: back into its slot when untouched (a new one mounted
 * there and its snapshot written after the mount; a kept one's "N.busy"
 * renamed back), else unmounted from it (the kernel destroys it when the
 * last holder closes).  Then the slot is free. */
static void share_give(struct ward_netns *ns, bool keep)
{
	unsigned slot = (unsigned)ns->slot;
	char name[16], snapname[24], busy[24], path[64];
	snprintf(name, sizeof(name), "%u", slot);
	snprintf(snapname, sizeof(snapname), "%u.snap", slot);
	snprintf(busy, sizeof(busy), "%u.busy", slot);
	slot_path(path, sizeof(path), name);
	if (keep && ns->busy) {
		keep = renameat(g_share_dir, busy, g_share_dir, snapname) == 0;
	} else if (keep) {
		slot_unmount(slot);
		int f = openat(g_share_dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		char src[40];
		snprintf(src, sizeof(src), "/proc/self/fd/%d", ns->fd);
		keep = f >= 0 && mount(src, path, NULL, MS_BIND, NULL) == 0;
		if (f >= 0)
			close(f);
		int w = keep ? openat(g_share_dir, busy, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)
		             : -1;
		keep = w >= 0 && write(w, ns->snap, ns->snaplen) == (ssize_t)ns->snaplen;
		if (w >= 0 && close(w) < 0)
			keep = false;
		keep = keep && renameat(g_share_dir, busy, g_share_dir, snapname) == 0;
	}
	if (!keep) {
		unlinkat(g_share_dir, busy, 0);
		slot_unmount(slot);
	}
	slot_lock(slot, F_UNLCK);
	share_release(slot);
}

struct ward_netns *netns_take(void)
{
	pthread_once(&g_once, open_host);
	pthread_mutex_lock(&g_lock);
	if (g_host < 0 || g_off) {
		pthread_mutex_unlock(&g_lock);
		return NULL;
	}
	struct ward_netns *ns = g_nidle ? g_idle[--g_nidle] : NULL;
	bool keepable = g_keep > 0;
	if (ns)
		g_reused++;
	pthread_mutex_unlock(&g_lock);
	if (ns)
		return ns;
	if ((ns = share_take()))
		return ns;
	ns = make(keepable);
	if (ns) {
		pthread_mutex_lock(&g_lock);
		g_made++;
		pthread_mutex_unlock(&g_lock);
	}
	return ns;
}

int netns_fd(const struct ward_netns *ns)
{
	return ns ? ns->fd : -1;
}

/* As it was made: no socket, and the counter files' bytes unchanged. */
static bool untouched(const struct ward_netns *ns)
{
	if (!ns->snap || netns_enter(ns->fd) < 0)
		return false;
	bool ok = no_sockets();
	size_t len = 0;
	char *now = ok ? snapshot(&len) : NULL;
	netns_leave();
	ok = now && len == ns->snaplen && memcmp(now, ns->snap, len) == 0;
	free(now);
	return ok;
}

void netns_give(struct ward_netns *ns)
{
	if (!ns)
		return;
	if (ns->slot >= 0) {
		bool keep = untouched(ns);
		pthread_mutex_lock(&g_lock);
		if (!keep)
			g_discarded++;
		pthread_mutex_unlock(&g_lock);
		share_give(ns, keep);
		netns_free(ns);
		return;
	}
	pthread_mutex_lock(&g_lock);
	bool room = g_nidle < g_keep;
	pthread_mutex_unlock(&g_lock);
	if (room && untouched(ns)) {
		pthread_mutex_lock(&g_lock);
		if (g_nidle < g_keep) {
			g_idle[g_nidle++] = ns;
			ns = NULL;
		}
		pthread_mutex_unlock(&g_lock);
	} else if (room) {
		pthread_mutex_lock(&g_lock);
		g_discarded++;
		pthread_mutex_unlock(&g_lock);
	}
	netns_free(ns);
}

void ward_netns_keep(unsigned n)
{
	pthread_mutex_lock(&g_lock);
	if (n > g_cap) {
		struct ward_netns **grown = realloc(g_idle, sizeof(*g_idle) * n);
		if (!grown) {
			pthread_mutex_unlock(&g_lock);
			return;
		}
		g_idle = grown;
		g_cap = n;
	}
	g_keep = n;
	for (;;) {
		struct ward_netns *drop = g_nidle > g_keep ? g_idle[--g_nidle] : NULL;
		pthread_mutex_unlock(&g_lock);
		if (!drop)
			return;
		netns_free(drop);
		pthread_mutex_lock(&g_lock);
	}
}

void ward_netns_stats(struct ward_netns_stats *st)
{
	pthread_mutex_lock(&g_lock);
	*st = (struct ward_netns_stats){.keep = g_keep,
	                                .idle = g_nidle,
	                                .made = g_made,
	                                .reused = g_reused,
	                                .discarded = g_discarded,
	                                .own = !g_off && g_host >= 0};
	pthread_mutex_unlock(&g_lock);
}
