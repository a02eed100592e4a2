/* probe_tcpmem PAIRS CAP_MB [RCVBUF_KB] — fill TCP buffers on the sandbox's
 * own loopback: PAIRS connections to itself on 127.0.0.1 (capped at 32) whose
 * receivers never read, the senders writing without blocking until nothing
 * more goes in, or CAP_MB mebibytes in all (capped at 128) are queued, or
 * 10 s passed.  Bounded even when nothing limits socket memory.  Prints
 *   queued=MB sndq=MB rcvq=MB pairs=N stopped=cap|full|time|ERROR
 * queued: what the kernel accepted (write's count); sndq / rcvq: what the
 * send and receive queues held at the end (SIOCOUTQ / SIOCINQ).  Exit 0, or
 * 2 on a setup error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXPAIRS 32

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	printf("queued=0 sndq=0 rcvq=0 pairs=0 stopped=ERROR %s: %s\n", what, strerror(errno));
	return 2;
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 4;
	long cap_mb = argc > 2 ? atol(argv[2]) : 64;
	int rcvbuf = argc > 3 ? atoi(argv[3]) * 1024 : 0;
	if (pairs < 1 || pairs > MAXPAIRS)
		pairs = MAXPAIRS;
	if (cap_mb < 1 || cap_mb > 128)
		cap_mb = 128;
	alarm(30);

	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return die("socket");
	/* Set on the listener, so that the accepted sockets start with it
	 * (and the window scale follows). */
	if (rcvbuf > 0)
		setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, MAXPAIRS) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0)
		return die("listen on 127.0.0.1");
	int snd[MAXPAIRS], rcv[MAXPAIRS];
	for (int i = 0; i < pairs; i++) {
		snd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (snd[i] < 0 || connect(snd[i], (struct sockaddr *)&a, sizeof(a)) < 0)
			return die("connect");
		rcv[i] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (rcv[i] < 0)
			return die("accept");
		fcntl(snd[i], F_SETFL, O_NONBLOCK);
	}

	static char chunk[65536];
	memset(chunk, 'x', sizeof(chunk));
	long long cap = cap_mb << 20, queued = 0;
	double end = now_s() + 10;
	const char *stopped = "time";
	int idle = 0;
	while (now_s() < end) {
		int progress = 0;
		for (int i = 0; i < pairs && queued < cap; i++) {
			size_t want = sizeof(chunk);
			if ((long long)want > cap - queued)
				want = (size_t)(cap - queued);
			ssize_t w = write(snd[i], chunk, want);
			if (w > 0) {
				queued += w;
				progress = 1;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				return die("write");
			}
		}
		if (queued >= cap) {
			stopped = "cap";
			break;
		}
		if (progress) {
			idle = 0;
			continue;
		}
		/* Nothing went in: full when no sender gets room within a
		 * second, or none takes a byte for 20 rounds of 50 ms (POLLOUT
		 * without room for a chunk). */
		struct pollfd p[MAXPAIRS];
		for (int i = 0; i < pairs; i++)
			p[i] = (struct pollfd){.fd = snd[i], .events = POLLOUT};
		if (poll(p, (nfds_t)pairs, 1000) == 0 || ++idle >= 20) {
			stopped = "full";
			break;
		}
		struct timespec ts = {0, 50 * 1000000};
		nanosleep(&ts, NULL);
	}
	long long sq = 0, rq = 0;
	for (int i = 0; i < pairs; i++) {
		int v = 0;
		if (ioctl(snd[i], SIOCOUTQ, &v) == 0)
			sq += v;
		if (ioctl(rcv[i], SIOCINQ, &v) == 0)
			rq += v;
	}
	printf("queued=%lld sndq=%lld rcvq=%lld pairs=%d stopped=%s\n", queued >> 20, sq >> 20, rq >> 20, pairs,
	       stopped);
	return 0;
}
