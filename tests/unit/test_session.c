/* Sessions (SPEC §11; ward.h's ward_session_*): real sandboxes, so only as
 * root with cgroups (skipped otherwise).  Every command is bounded by its
 * exec's timeout and the session's memory and pids limits. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "system/session.h"
#include "unit.h"
#include "ward.h"

static struct ward_session *new_session(uint64_t memory_mb, uint32_t pids, uint64_t work_mb)
{
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.limits.memory_mb = memory_mb;
	o.shape.limits.pids = pids;
	o.work_size_mb = work_mb;
	static const unsigned char hello[] = "hello from files\n";
	static const struct ward_file f = {.path = "init/hello.txt", .data = hello, .len = sizeof(hello) - 1};
	o.shape.files = &f;
	o.shape.nfiles = 1;
	static char *const env[] = {"SESSION_VAR=s", "BOTH=session", NULL};
	o.shape.env = env;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof(err));
	if (!s)
		printf("# ward_session_new: %s\n", err);
	return s;
}

/* Run sh -c CMD in s; the result in *res (freed by the caller). */
static int sh(struct ward_session *s, const char *cmd, double timeout, struct ward_result *res)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = cmd;
	r.capture = true;
	r.limits.timeout_s = timeout;
	int rc = ward_session_exec(s, &r, NULL, res);
	if (rc < 0 || getenv("WARD_TEST_VERBOSE"))
		printf("# exec '%s': rc %d status %s exit %d error '%s' stderr '%s'\n", cmd, rc,
		       ward_status_name(res->status), res->exit_code, res->error, res->err.data ? res->err.data : "");
	return rc;
}

/* The stdout of sh -c CMD ("" on failure), in buf. */
static const char *out_of(struct ward_session *s, const char *cmd, char *buf, size_t len)
{
	struct ward_result res;
	buf[0] = 0;
	if (sh(s, cmd, 10, &res) == 0)
		snprintf(buf, len, "%s", res.out.data);
	ward_result_free(&res);
	return buf;
}

/* The host pid of the session's "sleep SECS" whose pid inside is inner
 * (any, when inner is 0). */
static long host_pid_of_sleep(const char *secs, long inner)
{
	char want[32];
	int wn = snprintf(want, sizeof want, "sleep%c%s", 0, secs) + 1;
	DIR *d = opendir("/proc");
	long found = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[300], buf[4096] = "";
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		if (n != (size_t)wn || memcmp(buf, want, (size_t)wn) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
		f = fopen(path, "r");
		n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		buf[n] = 0;
		if (f)
			fclose(f);
		char *p = strstr(buf, "NSpid:");
		char *nl = p ? strchr(p, '\n') : NULL;
		if (!nl)
			continue;
		*nl = 0;
		char *last = strrchr(p, '\t');
		if (last && (inner == 0 || atol(last + 1) == inner))
			found = atol(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* The session's cgroup name, from the marker's /proc/PID/cgroup. */
static void session_cgroup(long pid, char *out, size_t len)
{
	char path[64], buf[4096] = "";
	snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	out[0] = 0;
	char *p = strstr(buf, "/ward-");
	if (p)
		snprintf(out, len, "%.*s", (int)strcspn(p + 1, "/\n"), p + 1);
}

/* Is byte uid of ward's uid-slot file locked (by anyone)? */
static bool uid_slot_locked(int uid)
{
	int fd = open("/run/ward/uid-slots", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = uid, .l_len = 1};
	bool locked = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return locked;
}

static bool pid_alive(long pid)
{
	return pid > 0 && kill((pid_t)pid, 0) == 0;
}

/* Count cgroup directories whose name holds `needle` (the session's
 * cgroups all contain its name) in the v1 hierarchies and v2. */
static int cgroups_named(const char *needle)
{
	static const char *const where[] = {"/sys/fs/cgroup/memory/ward", "/sys/fs/cgroup/pids/ward",
					    "/sys/fs/cgroup/cpuacct/ward", "/sys/fs/cgroup/ward"};
	int n = 0;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		DIR *d = opendir(where[i]);
		for (struct dirent *e; d && (e = readdir(d));)
			if (strstr(e->d_name, needle))
				n++;
		if (d)
			closedir(d);
	}
	return n;
}

static void test_execs_share_state(struct ward_session *s)
{
	char b[256];
	CHECK("session: files given at creation are in /work", strcmp(out_of(s, "cat init/hello.txt", b, sizeof b),
								      "hello from files\n") == 0);
	out_of(s, "echo one >/work/a; echo two >/tmp/b", b, sizeof b);
	CHECK("session: a second exec sees the first's /work and /tmp",
	      strcmp(out_of(s, "cat /work/a /tmp/b", b, sizeof b), "one\ntwo\n") == 0);
	CHECK("session: execs share PID 1 (the same PID namespace)",
	      strcmp(out_of(s, "cat /proc/1/comm 2>/dev/null || echo none", b, sizeof b), "ward-init\n") == 0 ||
		      strcmp(b, "none\n") == 0);
	struct ward_request er;
	ward_request_init(&er);
	er.shell = "echo $SESSION_VAR $BOTH";
	er.capture = true;
	static char *const eenv[] = {"BOTH=exec", NULL};
	er.env = eenv;
	struct ward_result res;
	ward_session_exec(s, &er, NULL, &res);
	CHECK("session: an exec's env goes over the session's", res.out.data && strcmp(res.out.data, "s exec\n") == 0);
	ward_result_free(&res);
	sh(s, "exit 3", 10, &res);
	CHECK("session: an exec's exit status is its own", res.exit_code == 3 && res.status == WARD_ST_NONZERO);
	ward_result_free(&res);
}

/* A background sleep left by one exec lives on into the next; an exec
 * that times out takes its double-forked daemon with it and nothing else. */
static void test_processes(struct ward_session *s, long *marker)
{
	char b[256];
	out_of(s, "sleep 3001 >/dev/null 2>&1 & echo $! >/work/bg.pid", b, sizeof b);
	CHECK("session: a background process left by an exec runs on",
	      strcmp(out_of(s, "kill -0 $(cat /work/bg.pid) && echo alive", b, sizeof b), "alive\n") == 0);
	struct ward_result res;
	sh(s, "(setsid sh -c 'sleep 300' >/dev/null 2>&1 &); echo x >/work/daemon; sleep 300", 0.5, &res);
	CHECK("session: an exec's timeout is reported", res.status == WARD_ST_TIMEOUT);
	ward_result_free(&res);
	CHECK("session: the timeout killed the exec's double-forked daemon",
	      strcmp(out_of(s, "ps -eo args 2>/dev/null | grep -c '^sh -c sleep 300' || true", b, sizeof b),
		     "0\n") == 0 ||
		      strcmp(out_of(s, "for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline; echo; done | grep -c "
				       "'^sh -c sleep 300' || true",
				    b, sizeof b),
			     "0\n") == 0);
	CHECK("session: ... and not another exec's background process",
	      strcmp(out_of(s, "kill -0 $(cat /work/bg.pid) && echo alive", b, sizeof b), "alive\n") == 0);
	/* the host pid of the background sleep, for after destroy */
	*marker = host_pid_of_sleep("3001", atol(out_of(s, "cat /work/bg.pid", b, sizeof b)));
}

static void test_limits(struct ward_session *s)
{
	char b[256];
	struct ward_result res;
	/* bash retries a fork that fails: killed by its timeout, with all it forked */
	sh(s, "exec bash -c 'for i in $(seq 200); do sleep 30 & done 2>/dev/null; sleep 30'", 3, &res);
	CHECK("session: an exec forking up to the pids limit times out", res.status == WARD_ST_TIMEOUT);
	ward_result_free(&res);
	CHECK("session: usable after an exec forked up to the pids limit",
	      strcmp(out_of(s, "echo ok", b, sizeof b), "ok\n") == 0);
	sh(s, "head -c 400m /dev/zero | tail >/dev/null", 10, &res);
	CHECK("session: a memory hog's exec reports status memory", res.status == WARD_ST_MEMORY);
	ward_result_free(&res);
	CHECK("session: the next exec runs after a memory kill", strcmp(out_of(s, "echo ok", b, sizeof b), "ok\n") == 0);
}

static void test_files(struct ward_session *s)
{
	char err[512] = "";
	unsigned char *data = NULL;
	size_t len = 0;
	int r = ward_session_write(s, "dir/sub/f.txt", "abc", 3, 0600, err, sizeof err);
	CHECK("session files: write creates parents", r == 0);
	char b[256];
	CHECK("session files: an exec sees the file", strcmp(out_of(s, "cat dir/sub/f.txt", b, sizeof b), "abc") == 0);
	r = ward_session_read(s, "dir/sub/f.txt", 100, &data, &len, err, sizeof err);
	CHECK("session files: read", r == 0 && len == 3 && memcmp(data, "abc", 3) == 0);
	free(data);
	r = ward_session_read(s, "dir/sub/f.txt", SIZE_MAX, &data, &len, err, sizeof err);
	CHECK("session files: read with no bound to speak of (SIZE_MAX)", r == 0 && len == 3 && memcmp(data, "abc", 3) == 0);
	free(data);
	r = ward_session_read(s, "dir/sub/f.txt", 2, &data, &len, err, sizeof err);
	CHECK("session files: a read over max is -EFBIG", r == -EFBIG);
	struct ward_dirent *d = NULL;
	size_t n = 0;
	r = ward_session_list(s, "dir/sub", &d, &n, err, sizeof err);
	CHECK("session files: list", r == 0 && n == 1 && strcmp(d[0].name, "f.txt") == 0 && d[0].type == 'f' &&
					     d[0].size == 3 && d[0].mode == 0600);
	ward_session_list_free(d, n);
	r = ward_session_list(s, "", &d, &n, err, sizeof err);
	CHECK("session files: list of /work itself", r == 0 && n >= 2);
	ward_session_list_free(d, n);
	CHECK("session files: guard refuses ..", ward_session_read(s, "../etc/passwd", 100, &data, &len, err,
								   sizeof err) == -EINVAL);
	/* absolute: any path of the sandbox, as its user may reach it */
	r = ward_session_write(s, "/etc/x", "a", 1, 0, err, sizeof err);
	CHECK("session files: an absolute path the user may not write refused", r == -EACCES || r == -EROFS ||
										 r == -EPERM);
	CHECK("session files: an absolute path written and read, in the sandbox",
	      ward_session_write(s, "/tmp/abs", "ab", 2, 0, err, sizeof err) == 0 &&
		      strcmp(out_of(s, "cat /tmp/abs", b, sizeof b), "ab") == 0);
	r = ward_session_read(s, "/etc/passwd", 1 << 20, &data, &len, err, sizeof err);
	CHECK("session files: /etc/passwd is the sandbox's", r == 0 && len > 0 && memmem(data, len, ":/work:", 7));
	free(data);
	r = ward_session_read(s, "/proc/self/environ", 1 << 20, &data, &len, err, sizeof err);
	CHECK("session files: a file of /proc refused (the worker's own)", r == -EACCES);
	free(data);
	CHECK("session files: guard refuses /.. and /", ward_session_read(s, "/../etc/passwd", 100, &data, &len, err,
									  sizeof err) == -EINVAL &&
								ward_session_remove(s, "/", err, sizeof err) == -EINVAL);
	out_of(s, "ln -s /etc/shadow sh1; ln -s /proc/1/root/etc/shadow sh2; ln -s /proc/1/root/ sh3", b, sizeof b);
	r = ward_session_read(s, "sh1", 1 << 20, &data, &len, err, sizeof err);
	CHECK("session files: a symlink to /etc/shadow reads the sandbox's view (fails)", r < 0);
	free(data);
	r = ward_session_read(s, "sh2", 1 << 20, &data, &len, err, sizeof err);
	CHECK("session files: a symlink to /proc/1/root/etc/shadow fails", r < 0);
	free(data);
	r = ward_session_write(s, "sh3/tmp/owned", "x", 1, 0, err, sizeof err);
	CHECK("session files: no write through /proc/1/root", r < 0);
	r = ward_session_remove(s, "dir", err, sizeof err);
	if (r)
		printf("# remove: %s\n", err);
	CHECK("session files: remove a directory with everything in it", r == 0);
	CHECK("session files: it is gone", strcmp(out_of(s, "ls dir 2>&1 >/dev/null | wc -l", b, sizeof b), "1\n") == 0);
	r = ward_session_remove(s, "sh1", err, sizeof err);
	CHECK("session files: remove a symlink", r == 0);
	static char big[6 << 20];
	r = ward_session_write(s, "big", big, sizeof big, 0, err, sizeof err);
	CHECK("session files: an upload larger than /work fails with ENOSPC", r == -ENOSPC);
}

/* Wait (bounded: 50 waits of 0.2 s) until process id's stdout holds want. */
static bool wait_output(struct ward_session *s, int id, const char *want, bool *exited, int *code)
{
	char seen[4096] = "";
	uint64_t from_out = 0, from_err = 0;
	for (int i = 0; i < 50; i++) {
		struct ward_stream o, e;
		char err[256];
		if (ward_session_proc_output(s, id, from_out, from_err, 0.2, &o, &e, exited, code, err, sizeof err) < 0)
			return false;
		from_out = o.bytes;
		from_err = e.bytes;
		strncat(seen, o.data, sizeof seen - strlen(seen) - 1);
		free(o.data);
		free(e.data);
		if (strstr(seen, want))
			return true;
		if (*exited)
			return false;
	}
	return false;
}

static void test_background(struct ward_session *s)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "echo start; read line; echo oops >&2; echo got $line; exec sleep 3002";
	r.limits.timeout_s = 0;
	char err[512] = "";
	int id = -1;
	int rc = ward_session_spawn(s, &r, NULL, true, &id, err, sizeof err);
	if (rc < 0)
		printf("# spawn: %s\n", err);
	CHECK("session bg: spawn answers an id at once", rc == 0 && id > 1);
	bool exited = true;
	int code = -1;
	CHECK("session bg: its output so far", wait_output(s, id, "start\n", &exited, &code) && !exited);
	rc = ward_session_proc_stdin(s, id, "hi\n", 3, false, err, sizeof err);
	CHECK("session bg: write to its stdin", rc == 0 && wait_output(s, id, "got hi\n", &exited, &code));
	struct ward_stream o, e;
	for (int i = 0;; i++) { /* stderr is drained on its own: wait (bounded) for it too */
		rc = ward_session_proc_output(s, id, 6, 0, 0.2, &o, &e, &exited, &code, err, sizeof err);
		if (rc < 0 || e.len >= 5 || i == 50)
			break;
		free(o.data);
		free(e.data);
		usleep(50000);
	}
	CHECK("session bg: output from an offset, per stream",
	      rc == 0 && strcmp(o.data, "got hi\n") == 0 && strcmp(e.data, "oops\n") == 0 && o.bytes == 13);
	if (rc == 0) {
		free(o.data);
		free(e.data);
	}
	struct ward_session_proc *ps = NULL;
	size_t n = 0;
	ward_session_procs(s, &ps, &n);
	CHECK("session bg: listed as running", n == 1 && ps[0].id == id && ps[0].running &&
						       strcmp(ps[0].argv[0], "/bin/sh") == 0);
	ward_session_procs_free(ps, n);
	char b[64];
	CHECK("session bg: an exec sees it", strcmp(out_of(s, "pgrep -c -f 'sleep 3002' || ps -e | grep -c sleep",
							   b, sizeof b), "0\n") != 0);
	rc = ward_session_proc_signal(s, id, SIGTERM, err, sizeof err);
	wait_output(s, id, "never", &exited, &code);
	CHECK("session bg: TERM ends its tree; exited 143", rc == 0 && exited && code == 143);
	CHECK("session bg: only INT, TERM, KILL", ward_session_proc_signal(s, id, SIGHUP, err, sizeof err) == -EINVAL);
	r.shell = "sleep 3003";
	r.limits.timeout_s = 0.5;
	rc = ward_session_spawn(s, &r, NULL, false, &id, err, sizeof err);
	wait_output(s, id, "never", &exited, &code);
	CHECK("session bg: its timeout kills it (124)", rc == 0 && exited && code == WARD_EXIT_TIMEOUT);
}

/* ward_session_notify: the caller's eventfd is woken by the output and the
 * end of the session's background processes (what ward serve's streams
 * park on), not while they are silent, and no more once unnotified; one
 * given a pid by that process's alone (another's output wakes no stream
 * parked on a silent one: review3's wake storm). */
static void test_notify(struct ward_session *s)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), key = 0;
	CHECK("session notify: an eventfd registered", efd >= 0 && ward_session_notify(s, efd, &key, 0) == 0);
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "read x; echo got $x";
	r.limits.timeout_s = 0;
	char err[512] = "";
	int id = -1;
	uint64_t v;
	int rc = ward_session_spawn(s, &r, NULL, true, &id, err, sizeof err);
	int mine = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), other = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), kmine, kother;
	CHECK("session notify: eventfds of one process and of another registered",
	      rc == 0 && ward_session_notify(s, mine, &kmine, id) == 0 &&
	              ward_session_notify(s, other, &kother, id + 7) == 0);
	struct pollfd p = {.fd = efd, .events = POLLIN};
	while (read(efd, &v, sizeof(v)) > 0) /* what came before (none is due) */
		;
	CHECK("session notify: not woken while its process says nothing", rc == 0 && poll(&p, 1, 300) == 0);
	rc = ward_session_proc_stdin(s, id, "hi\n", 3, true, err, sizeof err);
	CHECK("session notify: woken by its output", rc == 0 && poll(&p, 1, 30000) == 1 && read(efd, &v, sizeof(v)) == 8);
	/* (one call wakes all three, the oldest, efd, last: the others were looked at) */
	CHECK("session notify: its process's eventfd woken too", read(mine, &v, sizeof(v)) == 8);
	CHECK("session notify: another process's eventfd not woken by it", read(other, &v, sizeof(v)) < 0);
	ward_session_unnotify(s, &kmine);
	ward_session_unnotify(s, &kother);
	close(mine);
	close(other);
	bool exited = false;
	int code = -1;
	CHECK("session notify: what woke it is there to read", wait_output(s, id, "got hi\n", &exited, &code));
	wait_output(s, id, "never", &exited, &code); /* its end */
	ward_session_unnotify(s, &key);
	while (read(efd, &v, sizeof(v)) > 0)
		;
	r.shell = "echo again";
	rc = ward_session_spawn(s, &r, NULL, false, &id, err, sizeof err);
	wait_output(s, id, "never", &exited, &code);
	CHECK("session notify: unnotified, its process's output and end wake nothing",
	      rc == 0 && exited && poll(&p, 1, 0) == 0);
	close(efd);
}

struct conc {
	struct ward_session *s;
	int i;
	bool ok;
};

/* Output is taken a chunk at a time (WARD_SESSION_OUTPUT_CHUNK): a reader
 * (the server's follow stream) never holds more than that of a stream per
 * call, and the offsets walk through all of it, in order. */
static void test_output_chunks(struct ward_session *s)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "head -c 600000 /dev/zero | tr '\\0' x; printf END";
	r.limits.timeout_s = 20;
	r.limits.output_limit = 1 << 20;
	char err[512] = "";
	int id = -1;
	bool exited = false;
	int code = -1;
	CHECK("session bg chunks: spawn", ward_session_spawn(s, &r, NULL, false, &id, err, sizeof err) == 0);
	for (int i = 0; i < 100 && !exited; i++) { /* bounded: 100 waits of 0.2 s */
		struct ward_stream o, e;
		if (ward_session_proc_output(s, id, UINT64_MAX, UINT64_MAX, 0.2, &o, &e, &exited, &code, err,
					     sizeof err) < 0)
			break;
		free(o.data);
		free(e.data);
	}
	uint64_t off = 0;
	size_t calls = 0, most = 0, total = 0;
	bool in_order = true;
	for (; calls < 10; calls++) {
		struct ward_stream o, e;
		if (ward_session_proc_output(s, id, off, 0, 0, &o, &e, NULL, NULL, err, sizeof err) < 0)
			break;
		if (o.len > most)
			most = o.len;
		in_order &= o.bytes == off + o.len;
		total += o.len;
		bool last = o.len < WARD_SESSION_OUTPUT_CHUNK;
		if (last)
			in_order &= o.len >= 3 && memcmp(o.data + o.len - 3, "END", 3) == 0;
		off = o.bytes;
		free(o.data);
		free(e.data);
		if (last)
			break;
	}
	CHECK("session bg chunks: no call returns more than a chunk", exited && most == WARD_SESSION_OUTPUT_CHUNK);
	CHECK("session bg chunks: the offsets walk through all of it, in order",
	      in_order && total == 600003 && calls == 2);
}

static void *conc_main(void *arg)
{
	struct conc *c = arg;
	char cmd[64], want[32], b[64];
	snprintf(cmd, sizeof cmd, "sleep 0.3; echo %d", c->i);
	snprintf(want, sizeof want, "%d\n", c->i);
	c->ok = strcmp(out_of(c->s, cmd, b, sizeof b), want) == 0;
	return NULL;
}

static void test_concurrent(struct ward_session *s)
{
	pthread_t t[6];
	struct conc c[6];
	for (int i = 0; i < 6; i++) {
		c[i] = (struct conc){.s = s, .i = i};
		pthread_create(&t[i], NULL, conc_main, &c[i]);
	}
	bool ok = true;
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		ok = ok && c[i].ok;
	}
	CHECK("session: concurrent execs each get their own output", ok);
}

static void test_cwd_usage(struct ward_session *s)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "pwd";
	r.capture = true;
	struct ward_result res;
	ward_session_exec(s, &r, "/tmp", &res);
	CHECK("session: an exec's cwd", res.status == WARD_ST_OK && strcmp(res.out.data, "/tmp\n") == 0);
	ward_result_free(&res);
	int rc = ward_session_exec(s, &r, "tmp", &res);
	CHECK("session: a relative cwd is refused", rc < 0 && res.status == WARD_ST_ERROR && res.exit_code == 125);
	ward_result_free(&res);
	ward_session_exec(s, &r, "/nonexistent", &res);
	CHECK("session: a cwd that does not exist is ward's error, not the program's",
	      res.status == WARD_ST_ERROR && strstr(res.error, "/nonexistent"));
	ward_result_free(&res);
	struct ward_session_usage u;
	CHECK("session: usage", ward_session_usage(s, &u) == 0 && u.memory_bytes > 0 && u.pids >= 1);
}

static void *charge_many(void *arg)
{
	for (int i = 0; i < 100000; i++)
		ward_session_charge_net(arg, 3);
	return NULL;
}

/* The relayed bytes a front end charges (ward_session_charge_net): its
 * own count within its cap, one session's never another's, spent for
 * good once a charge does not fit. */
static void test_net_charge(struct ward_session *s)
{
	uint64_t used, cap, used2, cap2;
	ward_session_net(s, &used, &cap);
	CHECK("session: relayed bytes: none at first, the default cap", used == 0 && cap == WARD_SESSION_NET_BYTES);
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.net_bytes = 1000;
	char err[512] = "";
	struct ward_session *t = ward_session_new(&o, err, sizeof(err));
	if (!t) {
		printf("FAIL: session: relayed bytes: a second session: %s\n", err);
		unit_failures++;
		return;
	}
	int a = ward_session_charge_net(t, 600), b = ward_session_charge_net(t, 400);
	ward_session_net(t, &used, &cap);
	CHECK("session: relayed bytes: charges up to the cap fit exactly", a == 0 && b == 0 && used == 1000 && cap == 1000);
	CHECK("session: relayed bytes: nothing left: even 0 bytes are -EDQUOT", ward_session_charge_net(t, 0) == -EDQUOT);
	ward_session_destroy(t);
	o.net_bytes = 1000000;
	t = ward_session_new(&o, err, sizeof(err));
	pthread_t th[4];
	int started = 0;
	for (; t && started < 4 && pthread_create(&th[started], NULL, charge_many, t) == 0; started++)
		;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (t)
		ward_session_net(t, &used, &cap);
	CHECK("session: relayed bytes: four threads at once, none lost, none past the cap",
	      started == 4 && used == 1000000 && ward_session_charge_net(t, 0) == -EDQUOT);
	ward_session_destroy(t);
	o.net_bytes = 1000;
	t = ward_session_new(&o, err, sizeof(err));
	a = t ? ward_session_charge_net(t, 999) : -1;
	b = t ? ward_session_charge_net(t, 2) : -1;
	int c = t ? ward_session_charge_net(t, 1) : -1;
	if (t)
		ward_session_net(t, &used, &cap);
	ward_session_net(s, &used2, &cap2);
	CHECK("session: relayed bytes: a charge past the cap is refused and spends what was left",
	      a == 0 && b == -EDQUOT && c == -EDQUOT && used == 1000);
	CHECK("session: relayed bytes: another session's charges are not this one's", used2 == 0);
	ward_session_destroy(t);
}

/* The caller's death (SIGKILL, no destroy) takes the session's processes
 * with it: PID 1's PDEATHSIG. */
static void test_caller_death(void)
{
	int p[2];
	if (pipe(p) < 0)
		return;
	pid_t child = fork();
	if (child == 0) {
		struct ward_session *s = new_session(64, 64, 4);
		char b[64];
		if (s)
			out_of(s, "sleep 3004 >/dev/null 2>&1 &", b, sizeof b);
		long m = s ? host_pid_of_sleep("3004", 0) : 0;
		(void)!write(p[1], &m, sizeof m);
		pause();
		_exit(0);
	}
	long marker = 0;
	close(p[1]);
	(void)!read(p[0], &marker, sizeof marker);
	close(p[0]);
	bool was_alive = pid_alive(marker);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	for (int i = 0; i < 100 && pid_alive(marker); i++)
		usleep(50000);
	CHECK("session: the caller's death kills what the session ran", marker > 0 && was_alive && !pid_alive(marker));
}

/* The session's CPU budget holds across execs: a spinning exec is stopped
 * at it (status timeout), and so is any exec after. */
static void test_cpu_budget(void)
{
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.cpu_budget_s = 0.5;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	CHECK("session: new with a CPU budget", s != NULL);
	if (!s)
		return;
	struct ward_result res;
	sh(s, "while :; do :; done", 30, &res);
	CHECK("session: an exec is stopped at the session's CPU budget", res.status == WARD_ST_TIMEOUT &&
									    res.usage.wall_ms < 25000);
	ward_result_free(&res);
	sh(s, "while :; do :; done", 30, &res);
	CHECK("session: ... and so is the next one", res.status == WARD_ST_TIMEOUT && res.usage.wall_ms < 25000);
	ward_result_free(&res);
	ward_session_destroy(s);
}

/* A session on a host workdir: the files API writes into it (as its owner,
 * through the idmapped bind), and a symlink to the workdir's parent on the
 * host resolves inside the sandbox, where that path is not there. */
static void test_workdir(void)
{
	char top[] = "/tmp/ward-session-test.XXXXXX", work[100], secret[100], link[200];
	if (!mkdtemp(top))
		return;
	snprintf(work, sizeof work, "%s/work", top);
	snprintf(secret, sizeof secret, "%s/secret", top);
	/* writable by anyone: where the kernel cannot idmap the bind (tmpfs
	 * before 6.3, as in the cgroup v2 guest), the sandbox's user writes
	 * as itself */
	mkdir(work, 0777);
	(void)!chmod(work, 0777);
	FILE *f = fopen(secret, "w");
	if (f) {
		fputs("host secret\n", f);
		fclose(f);
	}
	snprintf(link, sizeof link, "%s/up", work);
	(void)!symlink("../secret", link);
	snprintf(link, sizeof link, "%s/abs", work);
	(void)!symlink(secret, link);
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.workdir = work;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	CHECK("session: new on a host workdir", s != NULL);
	if (s) {
		unsigned char *data = NULL;
		size_t len = 0;
		CHECK("session files: write into the workdir", ward_session_write(s, "out.txt", "w", 1, 0, err, sizeof err) == 0);
		snprintf(link, sizeof link, "%s/out.txt", work);
		struct stat st;
		CHECK("session files: ... it is there on the host", stat(link, &st) == 0 && st.st_size == 1);
		int r = ward_session_read(s, "up", 1 << 20, &data, &len, err, sizeof err);
		CHECK("session files: a symlink to the workdir's parent is not followed on the host", r < 0);
		free(data);
		r = ward_session_read(s, "abs", 1 << 20, &data, &len, err, sizeof err);
		CHECK("session files: a symlink to a host path resolves in the sandbox (absent there)", r < 0);
		free(data);
		ward_session_destroy(s);
	}
	unlink(link);
	snprintf(link, sizeof link, "%s/up", work);
	unlink(link);
	snprintf(link, sizeof link, "%s/abs", work);
	unlink(link);
	rmdir(work);
	unlink(secret);
	rmdir(top);
}

/* A child blocked in getppid under a filter that notifies: its pid, the
 * listener (*listener) and the notification read from it (*id); -1 when
 * the kernel has no user notification. */
static pid_t blocked_caller(int *listener, uint64_t *id)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(30); /* bounded whatever the test does */
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {.len = 4, .filter = f};
		int l = -1;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
			l = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} u = {0};
		char tag = 'L';
		struct iovec iov = {.iov_base = &tag, .iov_len = 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &l, sizeof(int));
		if (l < 0 || sendmsg(sv[1], &mh, 0) < 0)
			_exit(1);
		syscall(SYS_getppid); /* blocks: nobody answers */
		_exit(0);
	}
	close(sv[1]);
	*listener = -1;
	if (pid > 0) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} u = {0};
		char tag = 0;
		struct iovec iov = {.iov_base = &tag, .iov_len = 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == 1 && cm && cm->cmsg_type == SCM_RIGHTS)
			memcpy(listener, CMSG_DATA(cm), sizeof(int));
		struct seccomp_notif n;
		memset(&n, 0, sizeof(n));
		if (*listener < 0 || ioctl(*listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			if (*listener >= 0)
				close(*listener);
			pid = -1;
		}
		*id = n.id;
	}
	close(sv[0]);
	return pid;
}

/* The listener thread's kill: the caller of a pending notification is
 * killed; a notification gone stale (its caller died, and its pid is
 * another process's now) kills nobody. */
static void test_seccomp_kill_stale(struct ward_session *s)
{
	int l = -1;
	uint64_t id = 0;
	pid_t caller = blocked_caller(&l, &id);
	if (caller < 0) {
		printf("# seccomp kill: no user notification here, skipped\n");
		return;
	}
	session_seccomp_kill(s, l, id, caller, "test");
	int st = 0;
	CHECK("session seccomp: the caller of a pending notification is killed",
	      waitpid(caller, &st, 0) == caller && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(l);

	caller = blocked_caller(&l, &id);
	if (caller < 0)
		return;
	kill(caller, SIGKILL);
	waitpid(caller, NULL, 0); /* the notification is stale now */
	pid_t other = fork(); /* stands for a process that took the pid since */
	if (other == 0) {
		alarm(30);
		pause();
		_exit(0);
	}
	session_seccomp_kill(s, l, id, other, "test");
	/* a SIGKILL sent above decides its end already: it dies of SIGTERM
	 * only when nothing else was sent */
	kill(other, SIGTERM);
	CHECK("session seccomp: a stale notification kills no other process",
	      waitpid(other, &st, 0) == other && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	close(l);
}


static char stdin_big[256 * 1024];

/* n writes of stdin_big to process id: how many were taken (0), the
 * first refusal's errno in *refused. */
static int stdin_writes(struct ward_session *s, int id, int n, int *refused, char *err, size_t errlen)
{
	int ok = 0;
	*refused = 0;
	for (int i = 0; i < n && !*refused; i++) {
		int rc = ward_session_proc_stdin(s, id, stdin_big, sizeof stdin_big, false, err, errlen);
		if (rc == 0)
			ok++;
		else
			*refused = rc;
	}
	return ok;
}

static struct ward_session *stdin_session(size_t bg_bytes)
{
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.call_timeout_s = 300; /* a write that waited for a reader would wait that long */
	o.bg_output_bytes = bg_bytes;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	CHECK("session: new for the stdin checks", s != NULL);
	return s;
}

/* A stdin write never waits for the process to read: what the pipe has no
 * room for is queued, up to WARD_SESSION_STDIN_QUEUE and the session's
 * background budget (-EAGAIN beyond, at once), and written as it reads;
 * after the main process ended, what a daemon's full pipe does not take is
 * -EAGAIN saying how much went in. */
static void test_stdin_queue(void)
{
	struct ward_session *s = stdin_session(8u << 20);
	if (!s)
		return;
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "exec sleep 3003";
	r.limits.timeout_s = 0;
	r.limits.output_limit = 1u << 20;
	char err[512] = "";
	int id = -1, refused;
	int rc = ward_session_spawn(s, &r, NULL, true, &id, err, sizeof err);
	int ok = rc == 0 ? stdin_writes(s, id, 8, &refused, err, sizeof err) : -1;
	/* 64 KiB in the pipe, 1 MiB queued: the fifth write of 256 KiB is refused */
	CHECK("session stdin: a reader that never reads: writes are queued to 1 MiB, then -EAGAIN",
	      ok == 4 && refused == -EAGAIN && strstr(err, "has not read"));
	static char huge[WARD_SESSION_STDIN_QUEUE + 1];
	rc = ward_session_proc_stdin(s, id, huge, sizeof huge, false, err, sizeof err);
	CHECK("session stdin: one write of more than the queue: -EMSGSIZE", rc == -EMSGSIZE);
	/* a late reader gets every byte, and the close after them */
	r.shell = "while [ ! -e /work/go ]; do sleep 0.05; done; wc -c";
	int id2 = -1;
	rc = ward_session_spawn(s, &r, NULL, true, &id2, err, sizeof err);
	ok = rc == 0 ? stdin_writes(s, id2, 3, &refused, err, sizeof err) : -1;
	rc = ward_session_proc_stdin(s, id2, "", 0, true, err, sizeof err);
	CHECK("session stdin: 768 KiB and the close taken before the process reads", ok == 3 && rc == 0);
	ward_session_write(s, "go", "", 0, 0, err, sizeof err);
	bool exited = false;
	int code = -1;
	CHECK("session stdin: the late reader got all of it", wait_output(s, id2, "786432", &exited, &code));
	/* after the main process ended, a daemon holds the pipe and never reads */
	r.shell = "setsid -f sleep 3003; exit 0";
	rc = ward_session_spawn(s, &r, NULL, true, &id, err, sizeof err);
	for (int i = 0; rc == 0 && i < 100; i++) {
		wait_output(s, id, "-", &exited, &code);
		if (exited)
			break;
	}
	ok = rc == 0 ? stdin_writes(s, id, 1, &refused, err, sizeof err) : -1;
	CHECK("session stdin: a daemon's full pipe: -EAGAIN, saying what went in",
	      exited && ok == 0 && refused == -EAGAIN && strstr(err, "bytes written"));
	ward_session_destroy(s);
	/* the queue is held from the session's background budget */
	s = stdin_session((2u << 20) + (512u << 10));
	if (!s)
		return;
	r.shell = "exec sleep 3003";
	rc = ward_session_spawn(s, &r, NULL, true, &id, err, sizeof err);
	ok = rc == 0 ? stdin_writes(s, id, 4, &refused, err, sizeof err) : -1;
	CHECK("session stdin: the queue stops at the session's background budget",
	      ok >= 1 && ok <= 3 && refused == -EAGAIN && strstr(err, "budget"));
	ward_session_destroy(s);
}

/* A writable bind that must be the sandbox user's (ward_mount.must_idmap,
 * E2B's volumes): files owned on the host by the directory's owner are
 * uid 1000's inside and what it writes is that owner's; on a file system
 * without idmapped mounts the session is not made (never a plain bind). */
static void test_must_idmap(void)
{
	char dir[] = "/tmp/ward-idmap-XXXXXX", f[64];
	if (!mkdtemp(dir) || chown(dir, 2999999, 2999999) < 0)
		return;
	struct ward_mount m = {.host_path = dir, .sandbox_path = "/mnt/v", .must_idmap = true};
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.mounts = &m;
	o.shape.nmounts = 1;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	/* tmpfs has idmapped mounts from Linux 6.3 (the cgroup v2 guest's 6.1
	 * has not: there the session must be refused, never a plain bind) */
	struct statfs sf;
	struct utsname u;
	int major = 0, minor = 0;
	bool old_tmpfs = statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC && uname(&u) == 0 &&
	                 sscanf(u.release, "%d.%d", &major, &minor) == 2 && (major < 6 || (major == 6 && minor < 3));
	if (old_tmpfs) {
		CHECK("session must_idmap: refused on a tmpfs without idmapped mounts (Linux < 6.3), saying so",
		      !s && strstr(err, "idmapped"));
		rmdir(dir);
		return;
	}
	CHECK("session must_idmap: made on a file system with idmapped mounts", s != NULL);
	struct ward_result res;
	struct stat st;
	snprintf(f, sizeof f, "%s/f", dir);
	if (s && sh(s, "echo hi > /mnt/v/f && stat -c %u /mnt/v/f", 10, &res) == 0) {
		CHECK("session must_idmap: the directory's owner is the sandbox's user inside",
		      res.out.data && !strcmp(res.out.data, "1000\n"));
		CHECK("session must_idmap: what it writes is the directory's owner's on the host",
		      stat(f, &st) == 0 && st.st_uid == 2999999);
		ward_result_free(&res);
	}
	ward_session_destroy(s);
	unlink(f);
	rmdir(dir);
	m.host_path = "/sys/kernel"; /* sysfs: no idmapped mounts */
	s = ward_session_new(&o, err, sizeof err);
	CHECK("session must_idmap: refused where the kernel cannot idmap, saying so", !s && strstr(err, "idmapped"));
	ward_session_destroy(s);
}

void test_session(void)
{
	if (geteuid() != 0 || cg_probe()->version == CG_NONE) {
		printf("# session tests skipped: they need root and cgroups\n");
		return;
	}
	struct ward_session *s = new_session(64, 64, 4);
	CHECK("session: new", s != NULL);
	if (!s)
		return;
	struct ward_enforced e;
	ward_session_enforced(s, &e);
	int uid = 0;
	sscanf(e.user, "userns-uid-%d", &uid);
	char name[64] = "";
	test_execs_share_state(s);
	long marker = 0;
	test_processes(s, &marker);
	test_limits(s);
	test_files(s);
	test_background(s);
	test_output_chunks(s);
	test_concurrent(s);
	test_cwd_usage(s);
	test_net_charge(s);
	test_notify(s);
	test_seccomp_kill_stale(s);
	CHECK("session: the marker process lives before destroy", pid_alive(marker));
	session_cgroup(marker, name, sizeof name);
	CHECK("session: its cgroup exists before destroy", name[0] && cgroups_named(name) > 0);
	CHECK("session: its uid slot is held before destroy", uid > 0 && uid_slot_locked(uid));
	ward_session_destroy(s);
	CHECK("session: destroy kills what the session left running", !pid_alive(marker));
	CHECK("session: destroy leaves no cgroup", name[0] && cgroups_named(name) == 0);
	CHECK("session: destroy frees the uid slot", uid > 0 && !uid_slot_locked(uid));
	test_caller_death();
	test_cpu_budget();
	test_workdir();
	test_stdin_queue();
	test_must_idmap();
}
