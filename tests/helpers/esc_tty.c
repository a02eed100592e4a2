/* esc_tty.c — terminal injection (CVE-2016-7545, bubblewrap CVE-2017-5226,
 * the high-bits bypass CVE-2019-10063) and terminal sanity:
 *   esc_tty sti-fd0 | sti-fd0-high | linux-fd0      on the inherited stdin
 *   esc_tty sti-own | sti-own-high | linux-own | setd-own   on a pty of its own
 *   esc_tty pty-works                               a pty must keep working
 *   esc_tty pty-flood N                             open /dev/ptmx up to N times
 *                                                   (the last must fail), then
 *                                                   close one and open again
 * TIOCSTI pushes bytes into a terminal's input queue, to be read — and run —
 * by the shell that owns it once the sandbox is gone.  See esc_common.h. */
#include "esc_common.h"

#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define INJECT "echo WARD-ESC-INJECTED\n"

static void try(const char *what)
{
	printf("TRY %s\n", what);
	fflush(stdout);
}

static void sti(int fd, const char *what, unsigned long high)
{
	try(what);
	int failed = 0, err = 0;
	for (const char *p = INJECT; *p; p++) {
		/* The raw syscall keeps the high bits that glibc's int would drop. */
		if (syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI | high, p) < 0) {
			failed = 1;
			err = errno;
			break;
		}
	}
	esc_result(what, failed, err);
}

static void linux_ioctl(int fd, const char *what)
{
	try(what);
	char sub = 3; /* TIOCL_PASTESEL: paste the console selection as input */
	long r = syscall(SYS_ioctl, fd, (unsigned long)TIOCLINUX, &sub);
	esc_result(what, r < 0, errno);
}

static int own_pty(int *m, int *s)
{
	if (openpty(m, s, NULL, NULL, NULL) < 0) {
		printf("INFO openpty: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Hold up to n ptys (n small: they come from a pool the host shares); the
 * n-th open must fail.  Then one freed must be usable again. */
static int pty_flood(int n)
{
	int fds[64], got = 0, err = 0;
	if (n < 1 || n > 64)
		return 2;
	try("ptmx flood");
	while (got < n) {
		int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			err = errno;
			break;
		}
		fds[got++] = fd;
	}
	printf("INFO ptys held %d\n", got);
	esc_result("ptmx flood", got < n, err);
	if (got > 0) {
		close(fds[--got]);
		int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		printf("INFO reopen after close %s\n", fd >= 0 ? "ok" : esc_errname(errno));
		if (fd >= 0)
			close(fd);
	}
	while (got > 0)
		close(fds[--got]);
	return esc_done();
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 3 && !strcmp(argv[1], "pty-flood"))) {
		fprintf(stderr, "usage: esc_tty MODE | esc_tty pty-flood N\n");
		return 2;
	}
	const char *m = argv[1];
	esc_guard();
	int pm = -1, ps = -1;
	if (!strcmp(m, "pty-flood"))
		return pty_flood(atoi(argv[2]));
	if (!strcmp(m, "sti-fd0"))
		sti(0, "TIOCSTI(stdin)", 0);
	else if (!strcmp(m, "sti-fd0-high"))
		sti(0, "TIOCSTI|1<<32(stdin)", 1UL << 32);
	else if (!strcmp(m, "linux-fd0"))
		linux_ioctl(0, "TIOCLINUX(stdin)");
	else if (!strcmp(m, "pty-works")) {
		if (own_pty(&pm, &ps) < 0)
			return 1;
		struct termios t;
		struct winsize ws = {.ws_row = 30, .ws_col = 100};
		char buf[16] = {0};
		int ok = tcgetattr(ps, &t) == 0 && tcsetattr(ps, TCSANOW, &t) == 0 &&
			 ioctl(ps, TIOCSWINSZ, &ws) == 0 && write(pm, "ping\n", 5) == 5 &&
			 read(ps, buf, sizeof(buf) - 1) > 0 && strncmp(buf, "ping", 4) == 0;
		printf("%s pty-works\n", ok ? "OK" : "BROKEN");
		return ok ? 0 : 1;
	} else {
		if (own_pty(&pm, &ps) < 0)
			return 1;
		if (!strcmp(m, "sti-own"))
			sti(ps, "TIOCSTI(own pty)", 0);
		else if (!strcmp(m, "sti-own-high"))
			sti(ps, "TIOCSTI|1<<32(own pty)", 1UL << 32);
		else if (!strcmp(m, "linux-own"))
			linux_ioctl(ps, "TIOCLINUX(own pty)");
		else if (!strcmp(m, "setd-own")) {
			int ld = 13; /* N_HDLC: CVE-2017-2636 */
			try("TIOCSETD(N_HDLC)");
			long r = ioctl(ps, TIOCSETD, &ld);
			esc_result("TIOCSETD(N_HDLC)", r < 0, errno);
		} else {
			fprintf(stderr, "esc_tty: unknown mode %s\n", m);
			return 2;
		}
	}
	return esc_done();
}
