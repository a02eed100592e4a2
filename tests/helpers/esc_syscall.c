/* esc_syscall.c — one escape or kernel-attack syscall per run:
 *   esc_syscall MODE
 * Fatal modes (the filter kills) do one call; "eperm-all" tries every call
 * the filter answers with an errno, one line each.  Arguments are chosen so
 * that even a call that got through would change nothing outside (a bad
 * reboot magic, a nonexistent swap file...), and esc_guard() refuses to run
 * outside a sandbox at all.  See esc_common.h for the output protocol. */
#include "esc_common.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif

/* Print what is about to be tried: a fatal call leaves no other trace. */
static void try(const char *what)
{
	printf("TRY %s\n", what);
	fflush(stdout);
}

#define CALL(what, expr)                                                                \
	do {                                                                            \
		try(what);                                                              \
		long r_ = (long)(expr);                                                 \
		esc_result(what, r_ < 0, errno);                                        \
	} while (0)

static int fatal(const char *m)
{
	if (!strcmp(m, "mount"))
		CALL("mount", mount("ward-esc", "/tmp", "tmpfs", 0, NULL));
	else if (!strcmp(m, "umount"))
		CALL("umount2", umount2("/proc", MNT_DETACH));
	else if (!strcmp(m, "pivot_root"))
		CALL("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
	else if (!strcmp(m, "chroot"))
		CALL("chroot", chroot("/tmp"));
	else if (!strcmp(m, "fsopen"))
		CALL("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
	else if (!strcmp(m, "fsmount"))
		CALL("fsmount", syscall(SYS_fsmount, -1, 0, 0));
	else if (!strcmp(m, "fsconfig"))
		CALL("fsconfig", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0));
	else if (!strcmp(m, "fspick"))
		CALL("fspick", syscall(SYS_fspick, AT_FDCWD, "/", 0));
	else if (!strcmp(m, "open_tree"))
		CALL("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE));
	else if (!strcmp(m, "move_mount"))
		CALL("move_mount", syscall(SYS_move_mount, -1, "", AT_FDCWD, "/tmp", 0));
	else if (!strcmp(m, "mount_setattr"))
		CALL("mount_setattr", syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, NULL, 0));
	else if (!strcmp(m, "open_by_handle_at")) {
		/* "shocker": a handle for inode 2 (a filesystem root) opened
		 * against any fd on that filesystem. */
		struct {
			unsigned int bytes;
			int type;
			unsigned char h[8];
		} fh = {8, 1, {2, 0, 0, 0, 0, 0, 0, 0}};
		int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CALL("open_by_handle_at", syscall(SYS_open_by_handle_at, fd, &fh, O_RDONLY));
	} else if (!strcmp(m, "kexec_load"))
		CALL("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
	else if (!strcmp(m, "kexec_file_load"))
		CALL("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
	else if (!strcmp(m, "init_module"))
		CALL("init_module", syscall(SYS_init_module, NULL, 0, ""));
	else if (!strcmp(m, "finit_module"))
		CALL("finit_module", syscall(SYS_finit_module, -1, "", 0));
	else if (!strcmp(m, "delete_module"))
		CALL("delete_module", syscall(SYS_delete_module, "ward_esc_nonexistent", O_NONBLOCK));
	else if (!strcmp(m, "reboot"))
		CALL("reboot", syscall(SYS_reboot, 0, 0, 0, NULL)); /* bad magic: EINVAL at worst */
	else if (!strcmp(m, "swapon"))
		CALL("swapon", syscall(SYS_swapon, "/nonexistent-ward-swap", 0));
	else if (!strcmp(m, "swapoff"))
		CALL("swapoff", syscall(SYS_swapoff, "/nonexistent-ward-swap"));
	else if (!strcmp(m, "acct"))
		CALL("acct", syscall(SYS_acct, "/nonexistent-ward-acct"));
	else if (!strcmp(m, "iopl"))
		CALL("iopl", syscall(SYS_iopl, 0));
	else if (!strcmp(m, "ioperm"))
		CALL("ioperm", syscall(SYS_ioperm, 0x80, 1, 0));
	else
		return 2;
	return esc_done();
}

/* Calls that fail with an errno (the filter's, or the kernel's). */
static void eperm_all(void)
{
	CALL("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
	CALL("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
	CALL("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET));
	CALL("unshare(CLONE_NEWPID)", unshare(CLONE_NEWPID));
	CALL("unshare(CLONE_NEWIPC)", unshare(CLONE_NEWIPC));
	CALL("unshare(CLONE_NEWUTS)", unshare(CLONE_NEWUTS));
	CALL("unshare(CLONE_NEWCGROUP)", unshare(CLONE_NEWCGROUP));
	CALL("unshare(CLONE_NEWTIME)", unshare(CLONE_NEWTIME));
	{
		try("clone(CLONE_NEWUSER)");
		long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, NULL, NULL, 0);
		if (r == 0)
			_exit(0);
		int e = errno;
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
		esc_result("clone(CLONE_NEWUSER)", r < 0, e);
	}
	{
		try("clone(CLONE_NEWNS|CLONE_NEWPID)");
		long r = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, NULL, NULL, 0);
		if (r == 0)
			_exit(0);
		int e = errno;
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
		esc_result("clone(CLONE_NEWNS|CLONE_NEWPID)", r < 0, e);
	}
	{
		/* clone3 hides its flags in memory: must be ENOSYS outright. */
		struct {
			unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
		} ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
		try("clone3(CLONE_NEWUSER)");
		long r = syscall(SYS_clone3, &ca, sizeof(ca));
		if (r == 0)
			_exit(0);
		int e = errno;
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
		esc_result("clone3(CLONE_NEWUSER)", r < 0, e);
	}
	{
		int fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
		CALL("setns(user)", setns(fd, 0));
		if (fd >= 0)
			close(fd);
		fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
		CALL("setns(mnt)", setns(fd, 0));
		if (fd >= 0)
			close(fd);
	}
	CALL("keyctl(GET_KEYRING_ID)", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 1));
	CALL("add_key(user)", syscall(SYS_add_key, "user", "ward-esc-key", "x", 1, -4 /* user keyring */));
	CALL("request_key(user)", syscall(SYS_request_key, "user", "ward-esc-key", NULL, -4));
	{
		union bpf_attr a;
		memset(&a, 0, sizeof(a));
		a.map_type = BPF_MAP_TYPE_ARRAY;
		a.key_size = 4;
		a.value_size = 4;
		a.max_entries = 1;
		CALL("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
	}
	{
		struct perf_event_attr pa;
		memset(&pa, 0, sizeof(pa));
		pa.type = PERF_TYPE_SOFTWARE;
		pa.size = sizeof(pa);
		pa.config = PERF_COUNT_SW_CPU_CLOCK;
		pa.disabled = 1;
		CALL("perf_event_open", syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
	}
	CALL("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
	CALL("open(/dev/userfaultfd)", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
	{
		unsigned char params[120] = {0};
		CALL("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
		CALL("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
		CALL("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));
	}
	{
		struct {
			unsigned int bytes;
			int type;
			unsigned char h[128];
		} fh = {128, 0, {0}};
		int mid;
		CALL("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mid, 0));
	}
	CALL("personality(ADDR_NO_RANDOMIZE)", personality(ADDR_NO_RANDOMIZE));
	CALL("personality(READ_IMPLIES_EXEC)", personality(READ_IMPLIES_EXEC));
	CALL("personality(hi|ADDR_NO_RANDOMIZE)", syscall(SYS_personality, (1UL << 32) | ADDR_NO_RANDOMIZE));
	{
		struct timeval tv;
		gettimeofday(&tv, NULL);
		CALL("settimeofday", settimeofday(&tv, NULL));
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		CALL("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
		struct timex tx;
		memset(&tx, 0, sizeof(tx));
		CALL("adjtimex", adjtimex(&tx));
		CALL("clock_adjtime", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
	}
	{
		char buf[64];
		CALL("syslog(READ_ALL)", syscall(SYS_syslog, 3, buf, sizeof(buf)));
	}
	CALL("quotactl", syscall(SYS_quotactl, 0, "/", 0, NULL));
	CALL("vhangup", syscall(SYS_vhangup));
	CALL("socket(AF_VSOCK)", socket(40, SOCK_STREAM | SOCK_CLOEXEC, 0));
	CALL("socket(AF_ALG)", socket(38, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	{
		char ldt[16];
		CALL("modify_ldt(read)", syscall(SYS_modify_ldt, 0, ldt, sizeof(ldt)));
	}
	/* FAN_REPORT_FID: what an unprivileged caller may ask for (5.13+). */
	CALL("fanotify_init(FAN_REPORT_FID)", syscall(SYS_fanotify_init, 0x00000200, O_RDONLY));
	/* Every netlink protocol but NETLINK_ROUTE: generic (16), sock_diag
	 * (4), uevents (15), audit (9), netfilter (12), xfrm (6), crypto (21),
	 * and generic with high bits in the protocol or the family (the kernel
	 * drops them). */
	static const struct {
		int proto;
		const char *what;
	} nl[] = {{16, "socket(AF_NETLINK,GENERIC)"}, {4, "socket(AF_NETLINK,SOCK_DIAG)"},
		  {15, "socket(AF_NETLINK,KOBJECT_UEVENT)"}, {9, "socket(AF_NETLINK,AUDIT)"},
		  {12, "socket(AF_NETLINK,NETFILTER)"}, {6, "socket(AF_NETLINK,XFRM)"},
		  {21, "socket(AF_NETLINK,CRYPTO)"}};
	for (size_t i = 0; i < sizeof(nl) / sizeof(nl[0]); i++)
		CALL(nl[i].what, socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, nl[i].proto));
	CALL("socket(AF_NETLINK,hi|GENERIC)",
	     syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, (1UL << 32) | 16));
	CALL("socket(hi|AF_NETLINK,GENERIC)",
	     syscall(SYS_socket, (1UL << 32) | AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 16));
	{
		/* NETLINK_ROUTE stays: getifaddrs, AI_ADDRCONFIG and ip(8) need it. */
		int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
		printf("INFO netlink-route %s\n", fd >= 0 ? "ok" : esc_errname(errno));
		if (fd >= 0)
			close(fd);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: esc_syscall MODE (a fatal call's name, or eperm-all)\n");
		return 2;
	}
	esc_guard();
	if (!strcmp(argv[1], "eperm-all")) {
		eperm_all();
		return esc_done();
	}
	int rc = fatal(argv[1]);
	if (rc == 2)
		fprintf(stderr, "esc_syscall: unknown mode %s\n", argv[1]);
	return rc;
}
