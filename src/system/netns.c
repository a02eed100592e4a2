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
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	char *snap;      /* g_files as read when made; NULL: not kept */
	size_t snaplen;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_host = -1;          /* the host's network namespace */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_off;               /* unshare was refused: never again */
static unsigned g_keep;          /* at most this many kept idle */
static struct ward_netns **g_idle;
static unsigned g_nidle, g_cap;
static uint64_t g_made, g_reused, g_discarded;

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
	*st = (struct ward_netns_stats){.keep = g_keep, .idle = g_nidle, .made = g_made, .reused = g_reused,
					.discarded = g_discarded, .own = !g_off && g_host >= 0};
	pthread_mutex_unlock(&g_lock);
}
