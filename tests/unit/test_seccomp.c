/* test_seccomp.c — the seccomp filter and the Landlock ruleset on their own.
 *
 * Two kinds of checks: the compiled BPF is run through a small classic-BPF
 * interpreter on synthetic seccomp_data (so that foreign architectures, x32
 * numbers and high-bit ioctl requests are checked even on a kernel that
 * lacks them), and forked children load the real filter / ruleset and try
 * the calls.  Also prints the cost of prepare and apply (INFO: lines).
 * Called from tests/unit/main.c; prints PASS:/FAIL: lines. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"
#include "unit.h"

void test_seccomp(void);
void test_landlock(void);

#define T(name, cond) CHECK("seccomp: " name, cond)
#define FAILF(...)                                                                     \
	do {                                                                           \
		printf("FAIL: " __VA_ARGS__);                                          \
		unit_failures++;                                                       \
	} while (0)

#ifndef AUDIT_ARCH_I386
#define AUDIT_ARCH_I386 0x40000003
#endif
#define RET_KILL_PROCESS 0x80000000U
#define RET_ERRNO(e) (0x00050000U | (e))
#define RET_ALLOW 0x7fff0000U
#define RET_NOTIF 0x7fc00000U
#define RET_BAD 0xdeadU /* the interpreter met something it does not know */

/* Classic BPF as the kernel runs it for seccomp (the subset libseccomp
 * emits and a bit more). */
static uint32_t bpf_run(const struct sock_fprog *p, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[16] = {0};
	const unsigned char *data = (const unsigned char *)d;
	for (unsigned pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->filter[pc];
		uint32_t k = f->k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k + 4 > sizeof(*d) || k % 4)
				return RET_BAD;
			memcpy(&A, data + k, 4);
			break;
		case BPF_LD | BPF_MEM: A = M[k & 15]; break;
		case BPF_LDX | BPF_MEM: X = M[k & 15]; break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_ST: M[k & 15] = A; break;
		case BPF_STX: M[k & 15] = X; break;
		case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
		case BPF_ALU | BPF_OR | BPF_K: A |= k; break;
		case BPF_ALU | BPF_AND | BPF_X: A &= X; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += (A == k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += (A > k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += (A >= k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (A & k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JEQ | BPF_X: pc += (A == X) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_X: pc += (A > X) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_X: pc += (A >= X) ? f->jt : f->jf; break;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return A;
		default: return RET_BAD;
		}
	}
	return RET_BAD;
}

static uint32_t eval(const struct sock_fprog *p, uint32_t arch, int nr, uint64_t a0, uint64_t a1)
{
	struct seccomp_data d = {.nr = nr, .arch = arch};
	d.args[0] = a0;
	d.args[1] = a1;
	return bpf_run(p, &d);
}

static uint32_t eval3(const struct sock_fprog *p, int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct seccomp_data d = {.nr = nr, .arch = AUDIT_ARCH_X86_64};
	d.args[0] = a0;
	d.args[1] = a1;
	d.args[2] = a2;
	return bpf_run(p, &d);
}

static void test_bpf(const struct ward_seccomp *f)
{
	const struct sock_fprog *p = &f->prog;
	const uint32_t X64 = AUDIT_ARCH_X86_64;
	T("bpf: getpid allowed", eval(p, X64, __NR_getpid, 0, 0) == RET_ALLOW);
	T("bpf: read allowed", eval(p, X64, __NR_read, 0, 0) == RET_ALLOW);
	T("bpf: mount kills", eval(p, X64, __NR_mount, 0, 0) == RET_KILL_PROCESS);
	T("bpf: fsopen kills", eval(p, X64, __NR_fsopen, 0, 0) == RET_KILL_PROCESS);
	T("bpf: move_mount kills", eval(p, X64, __NR_move_mount, 0, 0) == RET_KILL_PROCESS);
	T("bpf: open_tree_attr kills", eval(p, X64, 467, 0, 0) == RET_KILL_PROCESS);
	T("bpf: pivot_root kills", eval(p, X64, __NR_pivot_root, 0, 0) == RET_KILL_PROCESS);
	T("bpf: open_by_handle_at kills", eval(p, X64, __NR_open_by_handle_at, 0, 0) == RET_KILL_PROCESS);
	T("bpf: i386 arch kills", eval(p, AUDIT_ARCH_I386, 20, 0, 0) == RET_KILL_PROCESS);
	T("bpf: i386 personality kills", eval(p, AUDIT_ARCH_I386, 136, 0, 0) == RET_KILL_PROCESS);
	T("bpf: x32 getpid kills", eval(p, X64, 0x40000000 | __NR_getpid, 0, 0) == RET_KILL_PROCESS);
	T("bpf: x32 mount kills", eval(p, X64, 0x40000000 | __NR_mount, 0, 0) == RET_KILL_PROCESS);
	T("bpf: ioctl TCGETS allowed", eval(p, X64, __NR_ioctl, 0, TCGETS) == RET_ALLOW);
	T("bpf: ioctl TIOCSTI kills", eval(p, X64, __NR_ioctl, 0, TIOCSTI) == RET_KILL_PROCESS);
	T("bpf: ioctl TIOCSTI high bits kills",
	  eval(p, X64, __NR_ioctl, 0, TIOCSTI | 0xdead00000000ULL) == RET_KILL_PROCESS);
	T("bpf: ioctl TIOCLINUX high bits kills",
	  eval(p, X64, __NR_ioctl, 0, 0x541CULL | (1ULL << 32)) == RET_KILL_PROCESS);
	T("bpf: ioctl TIOCSETD eperm", eval(p, X64, __NR_ioctl, 0, TIOCSETD) == RET_ERRNO(EPERM));
	T("bpf: clone SIGCHLD allowed", eval(p, X64, __NR_clone, SIGCHLD, 0) == RET_ALLOW);
	T("bpf: clone thread flags allowed",
	  eval(p, X64, __NR_clone, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, 0) ==
		  RET_ALLOW);
	T("bpf: clone NEWUSER eperm", eval(p, X64, __NR_clone, CLONE_NEWUSER | SIGCHLD, 0) == RET_ERRNO(EPERM));
	T("bpf: clone NEWNET eperm", eval(p, X64, __NR_clone, CLONE_NEWNET, 0) == RET_ERRNO(EPERM));
	T("bpf: unshare NEWNS eperm", eval(p, X64, __NR_unshare, CLONE_NEWNS, 0) == RET_ERRNO(EPERM));
	T("bpf: unshare NEWTIME eperm", eval(p, X64, __NR_unshare, 0x80, 0) == RET_ERRNO(EPERM));
	T("bpf: unshare FILES allowed", eval(p, X64, __NR_unshare, CLONE_FILES, 0) == RET_ALLOW);
	T("bpf: setns eperm", eval(p, X64, __NR_setns, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: clone3 enosys", eval(p, X64, __NR_clone3, 0, 0) == RET_ERRNO(ENOSYS));
	T("bpf: io_uring_setup enosys", eval(p, X64, __NR_io_uring_setup, 0, 0) == RET_ERRNO(ENOSYS));
	T("bpf: bpf eperm", eval(p, X64, __NR_bpf, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: keyctl eperm", eval(p, X64, __NR_keyctl, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: userfaultfd eperm", eval(p, X64, __NR_userfaultfd, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: perf_event_open eperm", eval(p, X64, __NR_perf_event_open, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: personality 0 allowed", eval(p, X64, __NR_personality, 0, 0) == RET_ALLOW);
	T("bpf: personality query allowed", eval(p, X64, __NR_personality, 0xffffffffULL, 0) == RET_ALLOW);
	T("bpf: personality ADDR_NO_RANDOMIZE eperm",
	  eval(p, X64, __NR_personality, ADDR_NO_RANDOMIZE, 0) == RET_ERRNO(EPERM));
	T("bpf: personality high bits + READ_IMPLIES_EXEC eperm",
	  eval(p, X64, __NR_personality, (1ULL << 40) | READ_IMPLIES_EXEC, 0) == RET_ERRNO(EPERM));
	T("bpf: socket AF_VSOCK eafnosupport", eval(p, X64, __NR_socket, 40, 0) == RET_ERRNO(EAFNOSUPPORT));
	T("bpf: socket AF_INET allowed", eval(p, X64, __NR_socket, AF_INET, 0) == RET_ALLOW);
	T("bpf: modify_ldt eperm", eval(p, X64, __NR_modify_ldt, 0, 0) == RET_ERRNO(EPERM));
	T("bpf: fanotify_init eperm", eval(p, X64, __NR_fanotify_init, 0x200, 0) == RET_ERRNO(EPERM));
	T("bpf: socket AF_NETLINK ROUTE allowed", eval3(p, __NR_socket, AF_NETLINK, SOCK_RAW, 0) == RET_ALLOW);
	T("bpf: socket AF_NETLINK GENERIC eprotonosupport",
	  eval3(p, __NR_socket, AF_NETLINK, SOCK_RAW, 16) == RET_ERRNO(EPROTONOSUPPORT));
	T("bpf: socket AF_NETLINK SOCK_DIAG eprotonosupport",
	  eval3(p, __NR_socket, AF_NETLINK, SOCK_DGRAM, 4) == RET_ERRNO(EPROTONOSUPPORT));
	T("bpf: socket AF_NETLINK protocol with high bits eprotonosupport",
	  eval3(p, __NR_socket, AF_NETLINK, SOCK_RAW, (1ULL << 32) | 16) == RET_ERRNO(EPROTONOSUPPORT));
	T("bpf: socket AF_NETLINK family with high bits eprotonosupport",
	  eval3(p, __NR_socket, (1ULL << 32) | AF_NETLINK, SOCK_RAW, 16) == RET_ERRNO(EPROTONOSUPPORT));
	T("bpf: socket AF_INET protocol 16 allowed", eval3(p, __NR_socket, AF_INET, SOCK_RAW, 16) == RET_ALLOW);
	T("bpf: socket AF_UNIX allowed", eval(p, X64, __NR_socket, AF_UNIX, 0) == RET_ALLOW);
	T("bpf: ptrace allowed", eval(p, X64, __NR_ptrace, 0, 0) == RET_ALLOW);
	T("bpf: chmod 0755 allowed", eval(p, X64, __NR_chmod, 0, 0755) == RET_ALLOW);
	T("bpf: chmod 04755 eperm", eval(p, X64, __NR_chmod, 0, 04755) == RET_ERRNO(EPERM));
	T("bpf: fchmod 02755 eperm", eval(p, X64, __NR_fchmod, 3, 02755) == RET_ERRNO(EPERM));
	T("bpf: creat 04700 eperm", eval(p, X64, __NR_creat, 0, 04700) == RET_ERRNO(EPERM));
	T("bpf: mknod S_IFREG|S_ISUID eperm", eval(p, X64, __NR_mknod, 0, S_IFREG | 04755) == RET_ERRNO(EPERM));
	T("bpf: open O_RDONLY allowed", eval(p, X64, __NR_open, 0, O_RDONLY) == RET_ALLOW);
	T("bpf: openat2 enosys", eval(p, X64, 437, 0, 0) == RET_ERRNO(ENOSYS));
	T("bpf: fchmodat2 plain mode allowed", eval(p, X64, 452, 0, 0) == RET_ALLOW);
	T("bpf: fchmodat2 04755 eperm", ({ struct seccomp_data d = {.nr = 452, .arch = X64}; d.args[2] = 04755; bpf_run(p, &d); }) == RET_ERRNO(EPERM));
	T("bpf: openat 02755 eperm", ({ struct seccomp_data d = {.nr = __NR_openat, .arch = X64}; d.args[3] = 02755; bpf_run(p, &d); }) == RET_ERRNO(EPERM));
	T("bpf: notify variant sends mount to the listener",
	  eval(&f->notify_prog, X64, __NR_mount, 0, 0) == RET_NOTIF);
	T("bpf: notify variant still kills i386", eval(&f->notify_prog, AUDIT_ARCH_I386, 20, 0, 0) == RET_KILL_PROCESS);
	T("bpf: notify variant keeps EPERM rules",
	  eval(&f->notify_prog, X64, __NR_unshare, CLONE_NEWUSER, 0) == RET_ERRNO(EPERM));
	T("bpf: notify variant allows getpid", eval(&f->notify_prog, X64, __NR_getpid, 0, 0) == RET_ALLOW);
}

/* Fork a child that loads the filter and runs fn; returns its wait status. */
static int in_child(const struct ward_seccomp *f, int (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		alarm(10);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || ward_seccomp_apply(f) < 0)
			_exit(99);
		_exit(fn());
	}
	int st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	return st;
}

static bool exited(int st, int code) { return WIFEXITED(st) && WEXITSTATUS(st) == code; }
static bool sigsys(int st) { return WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS; }

/* Each returns 0 when the call was refused as the table says. */
static int c_getpid(void) { return getpid() > 0 ? 0 : 1; }
static int c_userns(void) { return unshare(CLONE_NEWUSER) < 0 && errno == EPERM ? 0 : 1; }
static int c_clone_userns(void)
{
	long r = syscall(__NR_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	return r < 0 && errno == EPERM ? 0 : 1;
}
static int c_clone3(void) { return syscall(__NR_clone3, NULL, 0) < 0 && errno == ENOSYS ? 0 : 1; }
static int c_fork(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int st;
	return p > 0 && waitpid(p, &st, 0) == p && exited(st, 7) ? 0 : 1;
}
static int c_mount(void)
{
	mount("none", "/tmp", "tmpfs", 0, NULL);
	return 1; /* still alive: wrong */
}
static int c_io_uring(void) { return syscall(__NR_io_uring_setup, 8, NULL) < 0 && errno == ENOSYS ? 0 : 1; }
static int c_personality(void)
{
	return personality(ADDR_NO_RANDOMIZE) < 0 && errno == EPERM && personality(0xffffffff) >= 0 ? 0 : 1;
}
static int c_bpf(void) { return syscall(__NR_bpf, 0, NULL, 0) < 0 && errno == EPERM ? 0 : 1; }
static int c_tiocsti_high(void)
{
	int m, s;
	if (openpty(&m, &s, NULL, NULL, NULL) < 0)
		return 2;
	char c = 'x';
	syscall(__NR_ioctl, s, (unsigned long)TIOCSTI | (1UL << 32), &c);
	return 1;
}

static int c_setid(void)
{
	char d[] = "/tmp/ward-setid.XXXXXX";
	if (!mkdtemp(d))
		return 2;
	char f[64];
	snprintf(f, sizeof(f), "%s/f", d);
	int ok = 1;
	int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 04755);
	ok &= fd < 0 && errno == EPERM;
	fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	ok &= fd >= 0;
	ok &= chmod(f, 0700) == 0;
	ok &= chmod(f, 04755) < 0 && errno == EPERM;
	ok &= fchmod(fd, 02755) < 0 && errno == EPERM;
	ok &= fchmodat(AT_FDCWD, f, 06755, 0) < 0 && errno == EPERM;
	struct stat st;
	ok &= stat(f, &st) == 0 && !(st.st_mode & (S_ISUID | S_ISGID));
	if (fd >= 0)
		close(fd);
	unlink(f);
	rmdir(d);
	return ok ? 0 : 1;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void test_live(const struct ward_seccomp *f)
{
	T("live: getpid allowed", exited(in_child(f, c_getpid), 0));
	T("live: fork allowed", exited(in_child(f, c_fork), 0));
	T("live: unshare(CLONE_NEWUSER) EPERM", exited(in_child(f, c_userns), 0));
	T("live: clone(CLONE_NEWUSER) EPERM", exited(in_child(f, c_clone_userns), 0));
	T("live: clone3 ENOSYS", exited(in_child(f, c_clone3), 0));
	T("live: mount killed by SIGSYS", sigsys(in_child(f, c_mount)));
	T("live: io_uring_setup ENOSYS", exited(in_child(f, c_io_uring), 0));
	T("live: personality(ADDR_NO_RANDOMIZE) EPERM, query allowed", exited(in_child(f, c_personality), 0));
	T("live: bpf EPERM", exited(in_child(f, c_bpf), 0));
	T("live: ioctl TIOCSTI with high bits killed", sigsys(in_child(f, c_tiocsti_high)));
	T("live: set-id modes refused, plain modes allowed", exited(in_child(f, c_setid), 0));
}

/* The notify variant: the child's fatal call blocks, the parent names it.
 * what: 0 mount, 1 ioctl(TIOCSTI) with high bits, 2 mount with the listener
 * closed (no supervisor).  Returns the child's wait status. */
static int notify_case(const struct ward_seccomp *f, int what, struct ward_seccomp_event *ev, int *rc, pid_t *cpid)
{
	int sv[2];
	*rc = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(10);
		close(sv[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(98);
		int m = -1, s = -1;
		if (what == 1 && openpty(&m, &s, NULL, NULL, NULL) < 0)
			_exit(96);
		int lfd = ward_seccomp_apply_listener(f);
		if (lfd < 0)
			_exit(99);
		if (what != 2 && ward_seccomp_send_listener(sv[1], lfd) < 0)
			_exit(97);
		close(lfd);
		close(sv[1]);
		long r;
		if (what == 1) {
			char c = 'x';
			r = syscall(__NR_ioctl, s, (unsigned long)TIOCSTI | (1UL << 32), &c);
		} else {
			r = mount("none", "/tmp", "tmpfs", 0, NULL);
		}
		_exit(r < 0 && errno == (what == 2 ? ENOSYS : EPERM) ? 42 : 1);
	}
	close(sv[1]);
	*cpid = pid;
	int lfd = what == 2 ? -1 : ward_seccomp_recv_listener(sv[0]);
	close(sv[0]);
	if (lfd >= 0) {
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};
		if (poll(&pfd, 1, 5000) == 1)
			*rc = ward_seccomp_notify_handle(lfd, ev);
		close(lfd);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

static void on_usr1(int sig) { (void)sig; }

static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

/* The state letter of /proc/PID/stat ('S' asleep, 'D' in a killable wait). */
static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* A fatal call whose caller catches SIGUSR1 (no SA_RESTART) and gets it
 * while the call waits for the supervisor.  read_first: the notification was
 * read before the signal, and the caller must stay in the call until it is
 * killed (WAIT_KILLABLE_RECV), not come back with EINTR and run on.  Else
 * the signal comes first: the call is withdrawn (it returns EINTR, having
 * never run) and the supervisor's read says -ENOENT, which ward counts as a
 * fatal call.  1 when so, 0 when not, -1 when the setup failed. */
static int signal_case(const struct ward_seccomp *f, bool read_first)
{
	int sv[2], done[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if (pipe2(done, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(10);
		close(sv[0]);
		close(done[0]);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		int lfd = -1;
		if (sigaction(SIGUSR1, &sa, NULL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    (lfd = ward_seccomp_apply_listener(f)) < 0 || ward_seccomp_send_listener(sv[1], lfd) < 0)
			_exit(99);
		close(lfd);
		close(sv[1]);
		long r = mount("none", "/tmp", "tmpfs", 0, NULL);
		char c = r < 0 && errno == EINTR ? 'I' : 'R';
		(void)!write(done[1], &c, 1);
		pause();
		_exit(0);
	}
	close(sv[1]);
	close(done[1]);
	int result = -1;
	int lfd = pid > 0 ? ward_seccomp_recv_listener(sv[0]) : -1;
	struct pollfd pl = {.fd = lfd, .events = POLLIN};
	struct ward_seccomp_event ev;
	if (lfd >= 0 && poll(&pl, 1, 5000) == 1 && (!read_first || ward_seccomp_notify_read(lfd, &ev) == 0)) {
		kill(pid, SIGUSR1);
		struct pollfd pd = {.fd = done[0], .events = POLLIN};
		if (read_first) {
			/* Back from the call (wrong), or in a killable wait. */
			result = 0;
			for (int i = 0; i < 5000; i++) {
				if (poll(&pd, 1, 1) != 0)
					break;
				if (proc_state(pid) == 'D' && poll(&pd, 1, 0) == 0) {
					result = 1;
					break;
				}
			}
		} else {
			char c = 0;
			result = poll(&pd, 1, 5000) == 1 && read(done[0], &c, 1) == 1 && c == 'I' &&
				 ward_seccomp_notify_read(lfd, &ev) == -ENOENT;
		}
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (lfd >= 0)
		close(lfd);
	close(sv[0]);
	close(done[0]);
	return result;
}

static void test_notify(const struct ward_seccomp *f)
{
	struct ward_seccomp_event ev = {0};
	int rc;
	pid_t pid = -1;
	int st = notify_case(f, 0, &ev, &rc, &pid);
	T("notify: listener passed and handled", rc == 0);
	T("notify: names mount", strstr(ev.text, "blocked mount(2)") != NULL);
	T("notify: pid is the child", ev.pid == pid);
	T("notify: the call failed with EPERM", exited(st, 42));
	memset(&ev, 0, sizeof(ev));
	st = notify_case(f, 1, &ev, &rc, &pid);
	T("notify: names ioctl(TIOCSTI) sent with high bits", rc == 0 && strstr(ev.text, "ioctl(TIOCSTI)") != NULL);
	T("notify: TIOCSTI failed with EPERM", exited(st, 42));
	st = notify_case(f, 2, &ev, &rc, &pid);
	T("notify: no listener left: the call fails with ENOSYS, never runs", exited(st, 42));
	if (kernel_at_least(5, 19))
		T("notify: once read, a signal does not bring the caller back from the call (WAIT_KILLABLE_RECV)",
		  signal_case(f, true) == 1);
	else
		printf("PASS: seccomp: notify: WAIT_KILLABLE_RECV skipped, kernel before 5.19\n");
	T("notify: a call withdrawn by a signal before the read reads as ENOENT", signal_case(f, false) == 1);
	T("notify: syscall_name(mount)", ward_seccomp_syscall_name(__NR_mount) &&
						 strcmp(ward_seccomp_syscall_name(__NR_mount), "mount") == 0);
	T("notify: syscall_name(getpid) is NULL", ward_seccomp_syscall_name(__NR_getpid) == NULL);
	T("notify: recv on a socket without an fd fails", ({
		int sp[2];
		int ok = 0;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0) {
			ok = write(sp[1], "x", 1) == 1 && ward_seccomp_recv_listener(sp[0]) == -EPROTO;
			close(sp[0]);
			close(sp[1]);
		}
		ok;
	}));
}

/* ---- Landlock ---- */

static int ll_child(int abi, const char *okdir, const char *nodir, int ready_fd)
{
	const char *paths[] = {okdir};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return 90;
	int rs = ward_landlock_ruleset(abi, paths, 1);
	if (rs < 0 || !(fcntl(rs, F_GETFD) & FD_CLOEXEC))
		return 91; /* no ruleset, or one that would leak into the command */
	if (ward_landlock_restrict(rs) < 0)
		return 92;
	if (fcntl(rs, F_GETFD) >= 0)
		return 93; /* restrict closes it */
	char p[512];
	snprintf(p, sizeof(p), "%s/inside", okdir);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return 10; /* write inside refused */
	close(fd);
	if (unlink(p) < 0)
		return 11;
	snprintf(p, sizeof(p), "%s/outside", nodir);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 || errno != EACCES)
		return 12; /* write outside allowed */
	if (mkdir(p, 0755) == 0 || errno != EACCES)
		return 13;
	snprintf(p, sizeof(p), "%s/existing", nodir);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 || errno != EACCES)
		return 14; /* an existing file outside is writable */
	if (abi >= 3 && (truncate(p, 0) == 0 || errno != EACCES))
		return 15;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 16; /* reading outside must stay allowed */
	close(fd);
	if (abi >= 2) {
		/* REFER: a rename across directories inside the write path. */
		char a[256], b[256];
		snprintf(a, sizeof(a), "%s/ra", okdir);
		snprintf(b, sizeof(b), "%s/rb", okdir);
		if (mkdir(a, 0755) < 0 || mkdir(b, 0755) < 0)
			return 23;
		snprintf(p, sizeof(p), "%s/f", a);
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return 24;
		close(fd);
		char q[600];
		snprintf(q, sizeof(q), "%s/f", b);
		if (rename(p, q) < 0)
			return 25;
		if (unlink(q) < 0 || rmdir(a) < 0 || rmdir(b) < 0)
			return 26;
	}
	fd = open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return 17;
	close(fd);
	if (access("/bin/sh", X_OK) < 0)
		return 18;
	int m, s;
	if (openpty(&m, &s, NULL, NULL, NULL) == 0) {
		struct winsize ws = {.ws_row = 24, .ws_col = 80};
		if (ioctl(s, TIOCSWINSZ, &ws) < 0 || write(s, "hi\n", 3) != 3)
			return 19; /* ptys must keep working */
		close(m);
		close(s);
	}
	if (abi >= 6) {
		/* Signals and abstract sockets out of the domain are scoped. */
		if (kill(getppid(), 0) == 0 || errno != EPERM)
			return 20;
		int sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		memcpy(sa.sun_path, "\0ward-test-ll", 13);
		int r = connect(sfd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 13);
		close(sfd);
		if (r == 0 || errno != EPERM)
			return 21;
		/* Its own children stay signalable. */
		pid_t c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		if (c < 0 || kill(c, SIGKILL) < 0)
			return 22;
		waitpid(c, NULL, 0);
	}
	(void)ready_fd;
	return 0;
}

void test_landlock(void)
{
	int abi = ward_landlock_abi();
	printf("INFO: landlock ABI %d\n", abi);
	if (abi < 1) {
		printf("PASS: landlock: not on this kernel (skipped)\n");
		return;
	}
	char ok[] = "/tmp/ward-ll-ok.XXXXXX", no[] = "/tmp/ward-ll-no.XXXXXX";
	if (!mkdtemp(ok) || !mkdtemp(no)) {
		FAILF("landlock: mkdtemp: %s\n", strerror(errno));
		return;
	}
	char p[512];
	snprintf(p, sizeof(p), "%s/existing", no);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, "keep", 4) != 4)
			FAILF("landlock: write existing\n");
		close(fd);
	}
	/* A host listener on an abstract socket the child must not reach. */
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, "\0ward-test-ll", 13);
	if (bind(lfd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 13) < 0 ||
	    listen(lfd, 1) < 0)
		printf("INFO: landlock: abstract listener: %s\n", strerror(errno));
	/* Every ABI up to the kernel's: the code paths for older kernels (the
	 * test VM has ABI 2) run here too, since a newer kernel takes them. */
	pid_t pid;
	int st = -1;
	for (int a = 1; a <= abi; a++) {
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			alarm(10);
			_exit(ll_child(a, ok, no, -1));
		}
		waitpid(pid, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			printf("PASS: landlock: writes confined, reads, devices and ptys work (ABI %d)\n", a);
		else
			FAILF("landlock: ABI %d: child check %d failed (status 0x%x; see ll_child)\n", a,
			      WIFEXITED(st) ? WEXITSTATUS(st) : -1, st);
	}
	close(lfd);
	char buf[8] = {0};
	fd = open(p, O_RDONLY | O_CLOEXEC);
	CHECK("landlock: existing file outside unchanged", fd >= 0 && read(fd, buf, 8) == 4 && memcmp(buf, "keep", 4) == 0);
	if (fd >= 0)
		close(fd);
	unlink(p);
	snprintf(p, sizeof(p), "%s/outside", no);
	CHECK("landlock: nothing created outside", access(p, F_OK) < 0);
	rmdir(no);
	rmdir(ok);

	/* A path that does not exist is an error, never skipped. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		const char *bad[] = {"/nonexistent-ward-path"};
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		_exit(ward_landlock_ruleset(abi, bad, 1) == -ENOENT ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK("landlock: missing write path is -ENOENT", exited(st, 0));
	CHECK("landlock: abi 0 refused", ward_landlock_ruleset(0, NULL, 0) == -EOPNOTSUPP);
}

static void timing(void)
{
	char err[256];
	struct ward_seccomp f;
	int n = 20;
	double t0 = now_us();
	for (int i = 0; i < n; i++) {
		if (ward_seccomp_prepare(&f, err, sizeof(err)) < 0)
			return;
		ward_seccomp_free(&f);
	}
	double prep = (now_us() - t0) / n;
	if (ward_seccomp_prepare(&f, err, sizeof(err)) < 0)
		return;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		ward_seccomp_free(&f);
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		double a = now_us();
		ward_seccomp_apply(&f);
		double b = now_us();
		const char *paths[] = {"/tmp"};
		int abi = ward_landlock_abi();
		double c = now_us();
		if (abi > 0) {
			int rs = ward_landlock_ruleset(abi, paths, 1);
			if (rs >= 0)
				ward_landlock_restrict(rs);
		}
		double d = now_us();
		/* getpid cost under the filter vs. before is measured by the
		 * parent; here: a loop of getppid under the filter. */
		double e = now_us();
		for (int i = 0; i < 100000; i++)
			syscall(__NR_getppid);
		double g = now_us();
		for (int i = 0; i < 20000; i++)
			close(open("/dev/null", O_RDONLY | O_CLOEXEC));
		double h = now_us();
		double out[4] = {b - a, d - c, (g - e) / 100000 * 1000, (h - g) / 20000 * 1000};
		if (write(pfd[1], out, sizeof(out)) != sizeof(out))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	double out[4] = {0};
	ssize_t got = read(pfd[0], out, sizeof(out));
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	double e = now_us();
	for (int i = 0; i < 100000; i++)
		syscall(__NR_getppid);
	double base = (now_us() - e) / 100000 * 1000;
	e = now_us();
	for (int i = 0; i < 20000; i++)
		close(open("/dev/null", O_RDONLY | O_CLOEXEC));
	double obase = (now_us() - e) / 20000 * 1000;
	if (got == sizeof(out))
		printf("INFO: seccomp: prepare %.0f us (both variants, %u+%u insns), apply %.1f us, "
		       "landlock apply %.1f us, getppid %.0f ns filtered vs %.0f ns bare, "
		       "open+close %.0f ns filtered+landlocked vs %.0f ns bare\n",
		       prep, f.prog.len, f.notify_prog.len, out[0], out[1], out[2], base, out[3], obase);
	ward_seccomp_free(&f);
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

void test_seccomp(void)
{
	char err[256] = "";
	struct ward_seccomp f;
	int fds_before = count_fds();
	int rc = ward_seccomp_prepare(&f, err, sizeof(err));
	T("prepare leaves no fd open", count_fds() == fds_before);
	T("prepare", rc == 0);
	if (rc < 0) {
		FAILF("seccomp: prepare: %s\n", err);
		return;
	}
	T("prepare: program fits", f.prog.len > 9 && f.prog.len < 4096 && f.notify_prog.len > 9);
	test_bpf(&f);
	test_live(&f);
	test_notify(&f);
	ward_seccomp_free(&f);
	T("free clears", f.prog.filter == NULL && f.notify_prog.filter == NULL);
	timing();
}
