/* esc_proc.c — reaching outside through /proc, ptrace, fds, signals and
 * sockets:
 *   esc_proc exe                 /proc/self/exe and every /proc/PID/exe opened
 *                                for writing (runc CVE-2019-5736), and PID 1's
 *                                exe kept as an fd to reopen later
 *   esc_proc root PATH SECRET    PATH read through /proc/PID/root and
 *                                /proc/PID/cwd of every visible process
 *   esc_proc ptrace1             ptrace, process_vm_readv and /proc/1/mem of PID 1
 *   esc_proc ptrace-child        a debugger's ptrace of its own child (must work)
 *   esc_proc fds                 any fd beyond 0-2 (runc CVE-2024-21626)
 *   esc_proc kill PID            signal a host pid, then kill(-1, SIGKILL)
 *   esc_proc abstract NAME       connect to the abstract socket @NAME
 *   esc_proc tcp PORT            connect to 127.0.0.1:PORT
 * See esc_common.h. */
#include "esc_common.h"

#include <dirent.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static int is_pid(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static void exe_attack(void)
{
	char what[600], path[300];
	int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
	esc_result("open(/proc/self/exe, O_WRONLY)", fd < 0, errno);
	if (fd >= 0)
		close(fd);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!is_pid(e->d_name) || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/exe", e->d_name);
		snprintf(what, sizeof(what), "open(%s, O_WRONLY)", path);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		esc_result(what, fd < 0, errno);
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	/* The exploit's second half: hold the binary by an O_PATH fd and
	 * reopen it for writing through /proc/self/fd once it stops running. */
	fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	esc_result("open(/proc/1/exe, O_PATH)", fd < 0, errno);
	if (fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		int w = -1;
		for (int i = 0; i < 50 && w < 0; i++) { /* bounded: ~0.5 s */
			w = open(path, O_WRONLY | O_CLOEXEC);
			if (w < 0)
				usleep(10000);
		}
		esc_result("reopen /proc/1/exe for writing", w < 0, errno);
		if (w >= 0)
			close(w);
		close(fd);
	}
}

static void root_attack(const char *rel, const char *secret)
{
	char path[512], what[600], buf[256];
	DIR *d = opendir("/proc");
	struct dirent *e;
	const char *via[] = {"root", "cwd"};
	while (d && (e = readdir(d))) {
		if (!is_pid(e->d_name) && strcmp(e->d_name, "self") != 0)
			continue;
		for (int v = 0; v < 2; v++) {
			snprintf(path, sizeof(path), "/proc/%s/%s/%s", e->d_name, via[v], rel);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
			int err = errno;
			if (fd >= 0)
				close(fd);
			buf[n > 0 ? n : 0] = 0;
			snprintf(what, sizeof(what), "read %s", path);
			/* Escaped only when the host's secret came back. */
			esc_result(what, !(n > 0 && strstr(buf, secret)), fd < 0 ? err : 0);
		}
	}
	if (d)
		closedir(d);
}

static void ptrace1(void)
{
	long r = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
	esc_result("ptrace(PTRACE_ATTACH, 1)", r < 0, errno);
	if (r == 0)
		ptrace(PTRACE_DETACH, 1, NULL, NULL);
	r = ptrace(PTRACE_SEIZE, 1, NULL, NULL);
	esc_result("ptrace(PTRACE_SEIZE, 1)", r < 0, errno);
	if (r == 0)
		ptrace(PTRACE_DETACH, 1, NULL, NULL);
	char buf[16];
	struct iovec l = {buf, sizeof(buf)}, rv = {(void *)0x400000, sizeof(buf)};
	ssize_t n = process_vm_readv(1, &l, 1, &rv, 1, 0);
	esc_result("process_vm_readv(1)", n < 0, errno);
	int fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
	esc_result("open(/proc/1/mem)", fd < 0, errno);
	if (fd >= 0)
		close(fd);
	fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
	esc_result("open(/proc/1/environ)", fd < 0, errno);
	if (fd >= 0)
		close(fd);
}

static int ptrace_child(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (int i = 0; i < 100; i++)
			usleep(20000);
		_exit(0);
	}
	int ok = c > 0 && ptrace(PTRACE_ATTACH, c, NULL, NULL) == 0;
	int st;
	ok = ok && waitpid(c, &st, 0) == c && WIFSTOPPED(st);
	errno = 0;
	ok = ok && (ptrace(PTRACE_PEEKUSER, c, NULL, NULL) != -1 || errno == 0);
	ok = ok && ptrace(PTRACE_DETACH, c, NULL, NULL) == 0;
	if (c > 0) {
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
	}
	printf("%s ptrace-child\n", ok ? "OK" : "BROKEN");
	return ok ? 0 : 1;
}

static void fds(void)
{
	char what[128], path[64], target[256];
	for (int fd = 3; fd < 4096; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		snprintf(what, sizeof(what), "fd %d open", fd);
		printf("INFO fd %d -> %s\n", fd, target);
		esc_result(what, 0, 0);
	}
	/* runc's cwd trick: a path through a leaked fd. */
	for (int fd = 3; fd < 10; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d/..", fd);
		snprintf(what, sizeof(what), "chdir(%s)", path);
		int r = chdir(path);
		esc_result(what, r < 0, errno);
	}
	printf("OK fds checked\n");
}

static void kill_attack(pid_t host)
{
	int r = kill(host, SIGKILL);
	esc_result("kill(host pid, SIGKILL)", r < 0, errno);
	r = kill(host, 0);
	esc_result("kill(host pid, 0)", r < 0, errno);
	/* Everything this process may signal: inside a PID namespace, that is
	 * the sandbox only.  esc_guard() has checked that we are in one. */
	r = kill(-1, SIGKILL);
	printf("INFO kill(-1, SIGKILL) -> %d %s\n", r, r < 0 ? esc_errname(errno) : "");
}

static void abstract_attack(const char *name)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n > sizeof(sa.sun_path) - 2)
		n = sizeof(sa.sun_path) - 2;
	memcpy(sa.sun_path + 1, name, n);
	int r = connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	int e = errno;
	if (r == 0)
		(void)!write(s, "WARD-ESC\n", 9);
	esc_result("connect(abstract)", r < 0, e);
	close(s);
}

static void tcp_attack(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {2, 0};
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	if (r == 0)
		(void)!write(s, "WARD-ESC\n", 9);
	esc_result("connect(127.0.0.1)", r < 0, e);
	close(s);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: esc_proc MODE [ARG...]\n");
		return 2;
	}
	const char *m = argv[1];
	if (!strcmp(m, "fds")) {
		/* Before anything else opens an fd. */
		esc_guard();
		fds();
		return esc_done();
	}
	esc_guard();
	if (!strcmp(m, "exe"))
		exe_attack();
	else if (!strcmp(m, "root") && argc == 4)
		root_attack(argv[2], argv[3]);
	else if (!strcmp(m, "ptrace1"))
		ptrace1();
	else if (!strcmp(m, "ptrace-child"))
		return ptrace_child();
	else if (!strcmp(m, "kill") && argc == 3)
		kill_attack((pid_t)atoi(argv[2]));
	else if (!strcmp(m, "abstract") && argc == 3)
		abstract_attack(argv[2]);
	else if (!strcmp(m, "tcp") && argc == 3)
		tcp_attack(atoi(argv[2]));
	else {
		fprintf(stderr, "esc_proc: bad mode or arguments\n");
		return 2;
	}
	return esc_done();
}
