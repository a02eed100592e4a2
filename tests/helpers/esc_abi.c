/* esc_abi.c — foreign syscall ABIs that a filter written for x86_64 numbers
 * would misread: i386 through int 0x80 (its numbers mean other calls) and
 * x32 (nr | 0x40000000).
 *   esc_abi probe-int80     harmless i386 getpid, no guard: tells the test
 *                           whether this kernel has int 0x80 at all
 *   esc_abi int80-unshare   i386 unshare(CLONE_NEWUSER) (nr 310)
 *   esc_abi int80-mount     i386 mount (nr 21) with harmless arguments
 *   esc_abi x32-unshare     x32 unshare(CLONE_NEWUSER)
 *   esc_abi x32-getpid      x32 getpid
 * See esc_common.h. */
#include "esc_common.h"

#include <sched.h>
#include <sys/syscall.h>

#define X32_BIT 0x40000000L

static long int80(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;
	/* The kernel zeroes r8-r11 on an int 0x80 return: tell the compiler. */
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return r;
#else
	(void)nr, (void)a, (void)b, (void)c;
	return -ENOSYS;
#endif
}

static void try(const char *what)
{
	printf("TRY %s\n", what);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: esc_abi MODE\n");
		return 2;
	}
	const char *m = argv[1];
	if (!strcmp(m, "probe-int80")) {
		long r = int80(20, 0, 0, 0); /* i386 getpid */
		printf("PROBE int80 getpid -> %ld (real %d)\n", r, getpid());
		return r == getpid() ? 0 : 1;
	}
	esc_guard();
	if (!strcmp(m, "int80-unshare")) {
		try("int80 unshare(CLONE_NEWUSER)");
		long r = int80(310, CLONE_NEWUSER, 0, 0);
		esc_result("int80 unshare(CLONE_NEWUSER)", r < 0, (int)-r);
	} else if (!strcmp(m, "int80-mount")) {
		try("int80 mount");
		long r = int80(21, (long)"ward-esc", (long)"/tmp", (long)"tmpfs");
		esc_result("int80 mount", r < 0, (int)-r);
	} else if (!strcmp(m, "x32-unshare")) {
		try("x32 unshare(CLONE_NEWUSER)");
		long r = syscall(X32_BIT | SYS_unshare, CLONE_NEWUSER);
		esc_result("x32 unshare(CLONE_NEWUSER)", r < 0, errno);
	} else if (!strcmp(m, "x32-getpid")) {
		try("x32 getpid");
		long r = syscall(X32_BIT | SYS_getpid);
		esc_result("x32 getpid", r < 0, errno);
	} else {
		fprintf(stderr, "esc_abi: unknown mode %s\n", m);
		return 2;
	}
	return esc_done();
}
