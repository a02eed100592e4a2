/* seccomp_build.c — the syscall filter of a `ward image build` step.
 *
 * A build step is root of its own user namespace: apt-get, chown and
 * setuid bits must work, so ward's run filter (seccomp.c, which refuses
 * setuid modes among much else a uid-1000 program never needs) does not
 * fit.  What being root in a namespace adds is kernel surface: mounts,
 * new namespaces, keys, BPF, module and kexec calls.  A step needs none of
 * them, so they fail with EPERM (io_uring with ENOSYS, as if absent; clone3
 * with ENOSYS too, so that libc falls back to clone, whose flags can be
 * checked: no new user namespace).  Everything else is the step's.
 * Compiled with libseccomp in the step's process just before exec (a
 * single-threaded child of a single-threaded parent). */
#define _GNU_SOURCE
#include "sandbox/seccomp_build.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>

static const char *const denied[] = {
	"mount",
	"umount2",
	"pivot_root",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"move_mount",
	"open_tree",
	"mount_setattr",
	"unshare",
	"setns",
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"iopl",
	"ioperm",
	"swapon",
	"swapoff",
	"reboot",
	"acct",
	"quotactl",
	"open_by_handle_at",
	"name_to_handle_at",
	"syslog",
	"lookup_dcookie",
	"quotactl_fd",
};
static const char *const absent[] = {"io_uring_setup", "io_uring_enter", "io_uring_register", "clone3"};

int seccomp_build_load(void)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	if (!f)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(denied) / sizeof(denied[0]); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	for (size_t i = 0; rc == 0 && i < sizeof(absent) / sizeof(absent[0]); i++) {
		int nr = seccomp_syscall_resolve_name(absent[i]);
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	if (rc == 0)
		rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		                      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (rc == 0)
		rc = seccomp_load(f);
	seccomp_release(f);
	return rc;
}
