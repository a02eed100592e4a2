/* A session's lifecycle (session_freeze.c, session_save.c): freeze and thaw
 * (nothing runs, the session holds no ward thread, a background
 * process's timeout does not run, calls are refused while frozen), save
 * (files only, links never followed, bounded), restore and fork.  Needs
 * root and cgroups; every process is bounded by its session's limits. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sys/syscall.h>

#include "sandbox/cgroup.h"
#include "sandbox/freezer.h"
#include "system/session.h"
#include "system/session_copy.h"
#include "system/treecopy.h"
#include "unit.h"
#include "ward.h"

static struct ward_session *life_session(double cpu_budget)
{
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.limits.memory_mb = 256;
	o.shape.limits.pids = 64;
	o.shape.limits.tmp_size_mb = 64;
	o.cpu_budget_s = cpu_budget;
	char err[512] = "";
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	if (!s)
		printf("# session: %s\n", err);
	return s;
}

/* stdout of cmd run in s ("" on failure). */
static const char *run(struct ward_session *s, const char *cmd, char *buf, size_t n)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = cmd;
	r.capture = true;
	r.limits.timeout_s = 20;
	struct ward_result res;
	buf[0] = 0;
	if (ward_session_exec(s, &r, NULL, &res) == 0 && res.out.data)
		snprintf(buf, n, "%s", res.out.data);
	ward_result_free(&res);
	return buf;
}

static int spawn(struct ward_session *s, const char *cmd, double timeout_s)
{
	struct ward_request r;
	ward_request_init(&r);
	r.shell = cmd;
	r.limits.timeout_s = timeout_s;
	int id = -1;
	char err[256];
	return ward_session_spawn(s, &r, NULL, false, &id, err, sizeof err) == 0 ? id : -1;
}

/* Context switches of the sessions' threads in this process (named
 * ward-sess-*: the armer, the listener, the background readers): each
 * wakeup counts one.  *n (may be NULL): how many such threads there are. */
static long thread_wakeups(int *n)
{
	long sum = 0;
	if (n)
		*n = 0;
	char path[300], line[256];
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		bool ours = f && fgets(line, sizeof line, f) && strncmp(line, "ward-sess-", 10) == 0;
		if (f)
			fclose(f);
		if (!ours)
			continue;
		if (n)
			(*n)++;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "re");
		long v;
		while (f && fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
				sum += v;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

static bool proc_state(struct ward_session *s, int id, bool *running, int *code)
{
	struct ward_session_proc *p = NULL;
	size_t n = 0;
	bool found = false;
	if (ward_session_procs(s, &p, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (p[i].id == id) {
				*running = p[i].running;
				*code = p[i].exit_code;
				found = true;
			}
	ward_session_procs_free(p, n);
	return found;
}

static void test_freeze(void)
{
	struct ward_session *s = life_session(1000); /* a budget: its listener thread polls */
	CHECK("session freeze: new", s != NULL);
	if (!s)
		return;
	char err[512] = "", b[256];
	int spin = spawn(s, "while :; do :; done", 0);
	int slow = spawn(s, "exec sleep 3011", 2); /* killed by its 2 s timeout */
	run(s, "true", b, sizeof b);               /* the armer runs from now on */
	struct timespec hundred = {0, 100 * 1000 * 1000};
	nanosleep(&hundred, NULL);
	int before = 0, frozen = -1, after = 0;
	long w0 = thread_wakeups(&before);
	usleep(500 * 1000);
	long awake = thread_wakeups(NULL) - w0;
	int rc = ward_session_freeze(s, err, sizeof err);
	CHECK("session freeze: freezes", rc == 0 && ward_session_frozen(s) && spin > 1 && slow > 1);
	thread_wakeups(&frozen);
	printf("# the session's threads: %d running, %d frozen\n", before, frozen);
	/* the armer, the listener, one per background process: none frozen */
	CHECK("session freeze: a frozen session holds no thread (4 before)", before == 4 && frozen == 0);
	struct ward_session_usage u0, u1;
	/* a thread in its poll when the freeze came wakes once more, within
	 * its 100 ms interval, and then waits without a timeout */
	usleep(300 * 1000);
	ward_session_usage(s, &u0);
	w0 = thread_wakeups(NULL);
	usleep(3000 * 1000); /* longer than the background process's timeout */
	long asleep = thread_wakeups(NULL) - w0;
	ward_session_usage(s, &u1);
	printf("# wakeups of the session's threads in 0.5 s running: %ld; in 3 s frozen: %ld\n", awake, asleep);
	CHECK("session freeze: the spinning process holds no CPU", u1.cpu_ms == u0.cpu_ms && u0.memory_bytes > 0);
	CHECK("session freeze: no thread of the session wakes while frozen (some did while running)",
	      awake > 0 && asleep == 0);
	struct ward_request r;
	ward_request_init(&r);
	r.shell = "true";
	struct ward_result res;
	ward_session_exec(s, &r, NULL, &res);
	CHECK("session freeze: an exec is refused while frozen", res.status == WARD_ST_ERROR && strstr(res.error, "frozen"));
	ward_result_free(&res);
	CHECK("session freeze: the files API is refused while frozen",
	      ward_session_write(s, "f", "x", 1, 0, err, sizeof err) == -EBUSY);
	CHECK("session freeze: a spawn is refused while frozen", spawn(s, "true", 0) < 0);
	bool running = false;
	int code = -1;
	CHECK("session freeze: a background timeout does not run while frozen",
	      proc_state(s, slow, &running, &code) && running);
	CHECK("session freeze: freezing again is a no-op", ward_session_freeze(s, err, sizeof err) == 0);
	rc = ward_session_thaw(s, err, sizeof err);
	CHECK("session thaw: thaws; the session works again",
	      rc == 0 && !ward_session_frozen(s) && strcmp(run(s, "echo back", b, sizeof b), "back\n") == 0);
	CHECK("session thaw: the frozen time is counted", ward_session_frozen_seconds(s) >= 2.9);
	thread_wakeups(&after);
	CHECK("session thaw: its threads run again (the listener, the background ones, the armer)", after >= 3);
	for (int i = 0; i < 100 && proc_state(s, slow, &running, &code) && running; i++)
		usleep(100 * 1000);
	CHECK("session thaw: the background timeout runs on after the thaw (124)", !running && code == WARD_EXIT_TIMEOUT);
	ward_session_usage(s, &u0);
	usleep(300 * 1000);
	ward_session_usage(s, &u1);
	CHECK("session thaw: the spinning process runs again", u1.cpu_ms > u0.cpu_ms);
	/* destroyed while frozen: everything dies (v1: a frozen task dies only thawed) */
	int keep = spawn(s, "exec sleep 3013", 0);
	rc = ward_session_freeze(s, err, sizeof err);
	ward_session_destroy(s);
	FILE *p = popen("pgrep -f 'sleep 301[3]' | wc -l", "r");
	int left = -1;
	if (p && fscanf(p, "%d", &left) != 1)
		left = -1;
	if (p)
		pclose(p);
	CHECK("session freeze: a frozen session is destroyed, nothing left", keep > 1 && rc == 0 && left == 0);
}

static void *destroy_main(void *arg)
{
	ward_session_destroy(arg);
	return NULL;
}

/* A kill that came while a freeze froze (review3's pause_race: a DELETE
 * raced with a pause): ward_session_kill thawed nothing, then the tree was
 * frozen dying.  The destroy must thaw it itself, or it waits for PID 1
 * for good (it did: the server's sweep hung in wait4).  The state is made
 * as that race leaves it: frozen, then PID 1 killed and the session marked
 * killed without a thaw. */
static void test_killed_frozen(void)
{
	struct ward_session *s = life_session(0);
	CHECK("session killed frozen: new", s != NULL);
	if (!s)
		return;
	char err[512] = "";
	int keep = spawn(s, "exec sleep 3019", 0);
	int rc = ward_session_freeze(s, err, sizeof err);
	__atomic_store_n(&s->killed, 1, __ATOMIC_RELAXED);
	syscall(SYS_pidfd_send_signal, s->parts.pidfd, SIGKILL, NULL, 0);
	struct freezer *f = s->freezer;
	pthread_t t;
	bool started = pthread_create(&t, NULL, destroy_main, s) == 0, ended = false;
	for (int i = 0; started && i < 300 && !ended; i++) { /* up to 30 s: it ends in well under one */
		usleep(100 * 1000);
		ended = pthread_tryjoin_np(t, NULL) == 0;
	}
	CHECK("session killed frozen: destroyed, not left waiting for its frozen PID 1", keep > 1 && rc == 0 && ended);
	if (started && !ended) { /* (without the fix: thawed here so that the test ends) */
		freezer_set(f, false, 5);
		pthread_join(t, NULL);
	}
}

static bool host_file_is(int dir, const char *path, const char *want)
{
	char buf[256] = "";
	int fd = openat(dir, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	return n >= 0 && (buf[n] = 0, strcmp(buf, want) == 0);
}

static void test_save_restore_fork(void)
{
	struct ward_session *s = life_session(0);
	CHECK("session save: new", s != NULL);
	if (!s)
		return;
	char err[512] = "", b[256], tmp[] = "/tmp/ward-save-test.XXXXXX";
	if (!mkdtemp(tmp))
		return;
	run(s, "mkdir -p d/e && printf abc > d/e/f && chmod 0750 d/e/f && ln -s /etc/shadow shadow && "
	       "ln -s /proc/1/root hostroot && mkfifo fifo && head -c 1048576 /dev/zero > big && echo ok", b, sizeof b);
	CHECK("session save: files made", strcmp(b, "ok\n") == 0);
	int bg = spawn(s, "exec sleep 3012", 0);
	char dir[sizeof tmp + 16];
	snprintf(dir, sizeof dir, "%s/saved", tmp);
	struct ward_session_saved info;
	int rc = ward_session_save(s, dir, 8 << 20, &info, err, sizeof err);
	int sd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char link[256] = "";
	ssize_t ln = sd < 0 ? -1 : readlinkat(sd, "shadow", link, sizeof link - 1);
	struct stat fb = {0};
	if (sd >= 0)
		fstatat(sd, "d/e/f", &fb, AT_SYMLINK_NOFOLLOW);
	CHECK("session save: files, directories and links saved", rc == 0 && host_file_is(sd, "d/e/f", "abc") &&
									  info.files == 2 && info.links == 2 && info.skipped == 1);
	CHECK("session save: a link is saved as a link, never followed",
	      ln > 0 && strncmp(link, "/etc/shadow", (size_t)ln) == 0 && !host_file_is(sd, "shadow", ""));
	CHECK("session save: modes kept", (fb.st_mode & 07777) == 0750);
	CHECK("session save: the session is running again after", !ward_session_frozen(s));
	rc = ward_session_save(s, dir, 8 << 20, NULL, err, sizeof err);
	CHECK("session save: into a directory that exists: -EEXIST", rc == -EEXIST);
	char small[sizeof tmp + 16];
	snprintf(small, sizeof small, "%s/small", tmp);
	rc = ward_session_save(s, small, 4096, NULL, err, sizeof err);
	CHECK("session save: past max_bytes: -EFBIG, nothing left", rc == -EFBIG && access(small, F_OK) < 0);
	/* restore into a new session */
	struct ward_session *t = life_session(0);
	rc = t ? ward_session_restore(t, dir, 8 << 20, NULL, err, sizeof err) : -1;
	CHECK("session restore: the files are there, the sandbox user's",
	      rc == 0 && strcmp(run(t, "cat d/e/f; echo more >> d/e/f && readlink shadow", b, sizeof b), "abc/etc/shadow\n") == 0);
	CHECK("session restore: no process came with the files",
	      strcmp(run(t, "pgrep -c -x sleep || true", b, sizeof b), "0\n") == 0);
	ward_session_destroy(t);
	/* fork: two sessions with the files of this moment */
	run(s, "echo later > later", b, sizeof b);
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.limits.memory_mb = 256;
	o.shape.limits.tmp_size_mb = 64;
	struct ward_session *f[2] = {NULL, NULL};
	rc = ward_session_fork(s, &o, 2, 8 << 20, f, err, sizeof err);
	CHECK("session fork: two sessions", rc == 0 && f[0] && f[1]);
	if (rc < 0)
		printf("# fork: %s\n", err);
	for (int i = 0; rc == 0 && i < 2; i++) {
		CHECK("session fork: the fork has the files of the moment",
		      strcmp(run(f[i], "cat later d/e/f; wc -c < big", b, sizeof b), "later\nabc1048576\n") == 0);
		CHECK("session fork: no process was copied", strcmp(run(f[i], "pgrep -c -x sleep || true", b, sizeof b), "0\n") == 0);
		ward_session_destroy(f[i]);
	}
	bool running = false;
	int code;
	CHECK("session fork: the source runs on, its process too",
	      !ward_session_frozen(s) && proc_state(s, bg, &running, &code) && running);
	/* hostile: a tree deeper than the walk goes */
	run(s, "d=deep; for i in $(seq 140); do d=$d/x; done; mkdir -p $d && echo ok", b, sizeof b);
	char deep[sizeof tmp + 16];
	snprintf(deep, sizeof deep, "%s/deep", tmp);
	rc = ward_session_save(s, deep, 8 << 20, NULL, err, sizeof err);
	CHECK("session save: a tree deeper than 128: -EMLINK, nothing left", rc == -EMLINK && access(deep, F_OK) < 0);
	ward_session_destroy(s);
	if (sd >= 0)
		close(sd);
	int td = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	treecopy_remove(td, tmp + 5);
	close(td);
}

/* A host directory mounted into /work, moved elsewhere in /work by the
 * tenant: neither a save nor a fork may read what is in it (its files are
 * root's, mode 0600: the tenant cannot read them; the copy ran with
 * CAP_DAC_OVERRIDE and walked into the mount). */
static void test_copy_mounts(void)
{
	char host[] = "/tmp/ward-copy-mount.XXXXXX", sub[128], secret[160], b[512], err[512] = "";
	if (!mkdtemp(host))
		return;
	snprintf(sub, sizeof sub, "%s/secretdir", host);
	snprintf(secret, sizeof secret, "%s/secret", sub);
	mkdir(sub, 0755);
	int fd = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!write(fd, "HOSTSECRET\n", 11);
		close(fd);
	}
	struct ward_mount m = {.host_path = sub, .sandbox_path = "/work/a/b", .read_only = true};
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.limits.memory_mb = 256;
	o.shape.limits.tmp_size_mb = 64;
	o.shape.mounts = &m;
	o.shape.nmounts = 1;
	struct ward_session *s = ward_session_new(&o, err, sizeof err);
	CHECK("session copy: a session with a mount under /work", s != NULL);
	if (!s) {
		printf("# %s\n", err);
		goto out;
	}
	run(s, "cat /work/a/b/secret 2>/dev/null || echo denied; mv /work/a /work/z && echo mine > /work/z/f && echo moved",
	    b, sizeof b);
	CHECK("session copy: the tenant cannot read the mounted secret, and moves the mount's parent",
	      strcmp(b, "denied\nmoved\n") == 0);
	char dir[64], got[96];
	snprintf(dir, sizeof dir, "%s/saved", host);
	struct ward_session_saved info = {0};
	int rc = ward_session_save(s, dir, 8 << 20, &info, err, sizeof err);
	snprintf(got, sizeof got, "%s/z/b/secret", dir);
	snprintf(sub, sizeof sub, "%s/z/f", dir);
	CHECK("session save: a mount in /work is not crossed (its files are not saved), the rest is",
	      rc == 0 && access(got, F_OK) < 0 && access(sub, F_OK) == 0 && info.skipped >= 1);
	struct ward_session_opts fo = {0};
	ward_request_init(&fo.shape);
	fo.shape.limits.memory_mb = 256;
	fo.shape.limits.tmp_size_mb = 64;
	struct ward_session *f = NULL;
	rc = ward_session_fork(s, &fo, 1, UINT64_MAX, &f, err, sizeof err);
	CHECK("session fork: a mount in /work is not crossed (the fork cannot read the host's file)",
	      rc == 0 && strcmp(run(f, "cat z/f; cat z/b/secret 2>/dev/null || echo absent", b, sizeof b), "mine\nabsent\n") == 0);
	if (rc < 0)
		printf("# fork: %s\n", err);
	ward_session_destroy(f);
	f = NULL;
	run(s, "echo hidden > z/g && chmod 000 z/g && echo ok", b, sizeof b);
	rc = ward_session_fork(s, &fo, 1, UINT64_MAX, &f, err, sizeof err);
	CHECK("session fork: a file the sandbox user cannot read is not read: the fork fails naming it",
	      rc == -EACCES && f == NULL && strstr(err, "'g'") != NULL);
	ward_session_destroy(s);
out:;
	int td = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	treecopy_remove(td, host + 5);
	close(td);
}

/* What a fork writes is the fork's memory (its cgroup's), not ward's: a
 * fork whose memory_mb cannot hold the files fails cleanly; a sparse file
 * stays sparse. */
static void test_copy_memory(void)
{
	struct ward_session *s = life_session(0);
	CHECK("session copy memory: new", s != NULL);
	if (!s)
		return;
	char b[256], err[512] = "";
	run(s, "head -c 40000000 /dev/urandom > data && truncate -s 60M sparse && echo ok", b, sizeof b);
	CHECK("session copy memory: 40 MB of data and a 60 MB sparse file", strcmp(b, "ok\n") == 0);
	struct ward_session_opts o = {0};
	ward_request_init(&o.shape);
	o.shape.limits.memory_mb = 128;
	o.shape.limits.tmp_size_mb = 64;
	struct ward_session *f = NULL;
	int rc = ward_session_fork(s, &o, 1, UINT64_MAX, &f, err, sizeof err);
	struct ward_session_usage u = {0};
	if (rc == 0)
		ward_session_usage(f, &u);
	printf("# the fork's cgroup after the copy: %llu bytes\n", (unsigned long long)u.memory_bytes);
	CHECK("session fork: the copy is charged to the fork's cgroup (40 MB there)",
	      rc == 0 && u.memory_bytes >= 40000000);
	CHECK("session fork: a sparse file stays sparse (60 MB, no block)",
	      rc == 0 && strcmp(run(f, "stat -c '%s %b' sparse", b, sizeof b), "62914560 0\n") == 0);
	if (rc < 0)
		printf("# fork: %s\n", err);
	ward_session_destroy(f);
	f = NULL;
	o.shape.limits.memory_mb = 24;
	rc = ward_session_fork(s, &o, 1, UINT64_MAX, &f, err, sizeof err);
	printf("# a fork of 24 MB: %d %s\n", rc, err);
	CHECK("session fork: files past the fork's memory_mb: it fails, saying so, no session left",
	      rc < 0 && f == NULL && strstr(err, "memory") != NULL);
	ward_session_destroy(s);
}

/* The copy's deadline: past it the child is killed and reaped, and the
 * copy fails (a deadline of 0 is past at once). */
static void test_copy_deadline(void)
{
	char tmp[] = "/tmp/ward-copy-deadline.XXXXXX", err[512] = "";
	if (!mkdtemp(tmp))
		return;
	int d = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	mkdirat(d, "a", 0700);
	mkdirat(d, "b", 0700);
	int a = openat(d, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC), bd = openat(d, "b", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int f = openat(a, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (f >= 0) {
		(void)!write(f, "x", 1);
		close(f);
	}
	struct treecopy_side me = {geteuid(), getegid(), true};
	struct treecopy_limits lim = {1 << 20, 100, me, me};
	int rc = session_copy(a, bd, NULL, 0, &lim, NULL, err, sizeof err);
	CHECK("session copy: past its deadline: -ETIMEDOUT, saying so", rc == -ETIMEDOUT && strstr(err, "longer than"));
	mkdirat(d, "c", 0700);
	int c = openat(d, "c", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = session_copy(a, c, NULL, 30, &lim, NULL, err, sizeof err);
	CHECK("session copy: within its deadline: copied", rc == 0 && faccessat(c, "f", F_OK, 0) == 0);
	close(a);
	close(bd);
	close(c);
	close(d);
	int td = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	treecopy_remove(td, tmp + 5);
	close(td);
}

void test_session_life(void)
{
	if (geteuid() != 0 || cg_probe()->version == CG_NONE) {
		printf("# session lifecycle tests skipped: they need root and cgroups\n");
		return;
	}
	test_freeze();
	test_killed_frozen();
	test_save_restore_fork();
	test_copy_mounts();
	test_copy_memory();
	test_copy_deadline();
}
