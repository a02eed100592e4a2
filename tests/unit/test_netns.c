/* test_netns.c — the network namespaces of --net none sandboxes
 * (src/system/netns.c): one given back untouched is kept and taken again; a
 * socket still open in it, or a counter it moved, and it is destroyed
 * instead; never more than the limit are kept.  Needs root (ward makes the
 * namespaces as the host's root). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system/netns.h"
#include "unit.h"
#include "ward.h"

void test_netns(void);

static struct ward_netns_stats stats(void)
{
	struct ward_netns_stats st;
	ward_netns_stats(&st);
	return st;
}

/* The inode of the namespace fd names. */
static ino_t ino(int fd)
{
	struct stat sb;
	return fstat(fd, &sb) == 0 ? sb.st_ino : 0;
}

/* In ns: a socket made there (returned open), or -1. */
static int socket_in(struct ward_netns *ns, int type)
{
	if (netns_enter(netns_fd(ns)) < 0)
		return -1;
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	netns_leave();
	return s;
}

/* In ns: a UDP send to 127.0.0.1, refused (lo is down) and counted. */
static int send_in(struct ward_netns *ns)
{
	if (netns_enter(netns_fd(ns)) < 0)
		return -1;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int r = s >= 0 ? (int)sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)) : -1;
	int e = errno;
	if (s >= 0)
		close(s);
	netns_leave();
	return r < 0 ? -e : r;
}

void test_netns(void)
{
	if (geteuid() != 0) {
		printf("# netns tests skipped: they need root\n");
		return;
	}
	ward_netns_keep(2);
	struct ward_netns *a = netns_take();
	CHECK("netns: ward makes one", a && netns_fd(a) >= 0);
	if (!a)
		return;
	int here = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK("netns: it is not the host's", ino(netns_fd(a)) != ino(here) && ino(here) != 0);
	ino_t ia = ino(netns_fd(a));
	struct ward_netns_stats s0 = stats();
	netns_give(a);
	CHECK("netns: given back untouched, it is kept", stats().idle == s0.idle + 1 && stats().discarded == s0.discarded);
	int back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK("netns: the thread is back in the host's namespace", ino(back) == ino(here));
	if (back >= 0)
		close(back);
	a = netns_take();
	CHECK("netns: the next take is the kept one", a && ino(netns_fd(a)) == ia && stats().reused == s0.reused + 1);

	/* a socket still open: destroyed */
	int sk = socket_in(a, SOCK_STREAM);
	CHECK("netns: a socket made inside", sk >= 0);
	s0 = stats();
	netns_give(a);
	CHECK("netns: given back with a socket open, it is destroyed", stats().discarded == s0.discarded + 1 &&
									  stats().idle == s0.idle);
	if (sk >= 0)
		close(sk);

	/* a socket made and closed leaves nothing: kept */
	a = netns_take();
	sk = a ? socket_in(a, SOCK_DGRAM) : -1;
	if (sk >= 0)
		close(sk);
	s0 = stats();
	netns_give(a);
	CHECK("netns: a socket made and closed inside leaves it fit to keep", stats().idle == s0.idle + 1);

	/* a refused send moved a counter: destroyed */
	a = netns_take();
	int r = a ? send_in(a) : 0;
	CHECK("netns: inside, 127.0.0.1 is unreachable", r == -ENETUNREACH);
	s0 = stats();
	netns_give(a);
	CHECK("netns: given back with a counter moved, it is destroyed", stats().discarded == s0.discarded + 1);

	/* the limit */
	struct ward_netns *m[3];
	for (int i = 0; i < 3; i++)
		m[i] = netns_take();
	CHECK("netns: three at once", m[0] && m[1] && m[2]);
	for (int i = 0; i < 3; i++)
		netns_give(m[i]);
	CHECK("netns: never more kept than the limit", stats().idle == 2);
	ward_netns_keep(0);
	CHECK("netns: a limit of 0 closes the kept ones", stats().idle == 0);
	a = netns_take();
	s0 = stats();
	netns_give(a);
	CHECK("netns: with a limit of 0, none is kept", stats().idle == 0 && stats().discarded == s0.discarded);

	/* shared across processes: kept in a slot of /run/ward/netns */
	ward_netns_share(WARD_NETNS_SHARED);
	a = netns_take();
	ia = a ? ino(netns_fd(a)) : 0;
	netns_give(a);
	s0 = stats();
	a = netns_take();
	CHECK("netns: shared, one given back untouched is taken again (from its slot, not the idle list)",
	      a && ino(netns_fd(a)) == ia && stats().reused == s0.reused + 1 && stats().idle == 0);
	sk = a ? socket_in(a, SOCK_STREAM) : -1;
	s0 = stats();
	netns_give(a);
	if (sk >= 0)
		close(sk);
	CHECK("netns: shared, one given back with a socket open is destroyed", stats().discarded == s0.discarded + 1);
	a = netns_take();
	CHECK("netns: shared, the destroyed one is not taken again", a && ino(netns_fd(a)) != ia);
	netns_give(a);
	ward_netns_share(0);
	if (here >= 0)
		close(here);
}
