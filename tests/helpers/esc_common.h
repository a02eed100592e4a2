/* esc_common.h — shared by the esc_*.c attack helpers (tests/escape/).
 *
 * Every helper refuses to attack unless it can see that it runs inside a
 * sandbox: the test passes the host's mount, PID and user namespace inodes
 * in WARD_ESC_HOST ("MNT PID USER"), and the helper stops (exit 3) when any
 * of its own equals the host's.  So a broken ward that runs the command on
 * the host never lets an attack loose on the test machine.
 *
 * Output protocol, one line per attempt:
 *   BLOCKED <what> <errno name>   the attack was refused
 *   ESCAPED <what> <detail>       it worked (the test fails)
 *   INFO <text>
 * Exit: 0 all blocked, 1 something escaped, 2 usage, 3 guard refused.
 */
#ifndef ESC_COMMON_H
#define ESC_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int esc_escaped;

__attribute__((unused)) static const char *esc_errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EBADF: return "EBADF";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ETXTBSY: return "ETXTBSY";
	case EROFS: return "EROFS";
	case ENOSYS: return "ENOSYS";
	case ENOTDIR: return "ENOTDIR";
	case ELOOP: return "ELOOP";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ENOSPC: return "ENOSPC";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ENODEV: return "ENODEV";
	case ENXIO: return "ENXIO";
	case EIO: return "EIO";
	default: return "E?";
	}
}

/* Report the outcome of a call that must fail: ok is true when it did. */
__attribute__((unused)) static void esc_result(const char *what, int failed, int err)
{
	if (failed) {
		printf("BLOCKED %s %s\n", what, esc_errname(err));
	} else {
		printf("ESCAPED %s\n", what);
		esc_escaped = 1;
	}
	fflush(stdout);
}

__attribute__((unused)) static unsigned long esc_ns_ino(const char *ns)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/self/ns/%s", ns);
	return stat(p, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

__attribute__((unused)) static void esc_guard(void)
{
	const char *h = getenv("WARD_ESC_HOST");
	unsigned long mnt = 0, pid = 0, user = 0;
	if (!h || sscanf(h, "%lu %lu %lu", &mnt, &pid, &user) != 3) {
		printf("GUARD WARD_ESC_HOST not set: refusing to run an attack\n");
		exit(3);
	}
	unsigned long m = esc_ns_ino("mnt"), p = esc_ns_ino("pid"), u = esc_ns_ino("user");
	if (m == 0 || p == 0 || u == 0 || m == mnt || p == pid || u == user) {
		printf("GUARD not in a sandbox (mnt %lu/%lu pid %lu/%lu user %lu/%lu): refusing\n", m, mnt, p,
		       pid, u, user);
		exit(3);
	}
	/* Everything the helpers print must reach the test even if the
	 * process is then killed by the filter. */
	setvbuf(stdout, NULL, _IOLBF, 0);
}

__attribute__((unused)) static int esc_done(void)
{
	fflush(stdout);
	return esc_escaped ? 1 : 0;
}

#endif
