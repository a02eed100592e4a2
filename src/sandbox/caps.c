/* caps.c — the command runs as a non-root uid with no capabilities, the
 * bounding set empty, and no_new_privs: setuid binaries and file
 * capabilities grant nothing.  Runs inside, in PID 1 (the bounding set) and
 * in the command's clone (the rest): syscalls only, the setxid ones raw
 * (glibc's wrappers would signal threads that do not exist in a clone). */
#define _GNU_SOURCE
#include "sandbox/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int last_cap(void)
{
	/* Probe instead of reading /proc/sys/kernel/cap_last_cap: /proc may
	 * not be the host's any more. */
	int c = 40;
	while (c < 63 && prctl(PR_CAPBSET_READ, c + 1, 0, 0, 0) >= 0)
		c++;
	while (c > 0 && prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0)
		c--;
	return c;
}

int caps_drop_bounding(void)
{
	int top = last_cap();
	for (int c = 0; c <= top; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	return 0;
}

int caps_drop_to(uid_t uid, gid_t gid)
{
	/* The bounding set is already empty (caps.h); a last check of the
	 * capability that matters most, in one call. */
	if (prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
		return -EPERM;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	/* Inherited supplementary groups (root's, when ward runs as root) would
	 * still count for host files: drop them.  EPERM means setgroups is
	 * denied in this namespace (unprivileged ward): the groups are then the
	 * caller's own. */
	/* Raw syscalls, not glibc's wrappers: those broadcast the change to
	 * every thread glibc believes exists, and a process cloned from a
	 * multi-threaded server has only one. */
	if (syscall(SYS_setgroups, 0, NULL) < 0 && errno != EPERM)
		return -errno;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -errno;
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -errno;
	/* The uid change from an unmapped (overflow) uid does not clear
	 * capabilities by itself: clear every set explicitly. */
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* Verify. */
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	if (d[0].effective | d[0].permitted | d[0].inheritable | d[1].effective | d[1].permitted | d[1].inheritable)
		return -EPERM;
	if (getuid() != uid || geteuid() != uid || getgid() != gid)
		return -EPERM;
	return 0;
}
