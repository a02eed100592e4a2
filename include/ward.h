/* ward.h — the public C API of libward.
 *
 * Data flows one way: a caller fills a struct ward_request (ward_request_init
 * gives the defaults of SPEC §2), ward_run() validates it, turns it into a
 * plan, runs it at the requested isolation level and fills a struct
 * ward_result (SPEC §4).  Front ends (ward run, ward serve, ward test) only
 * translate their input into a request and the result back out.
 *
 * Ownership: every pointer in a request is borrowed; ward_run() copies
 * nothing it keeps.  Every pointer in a result is owned by the result and
 * released by ward_result_free().
 *
 * Only plain C types cross this line: no kernel mechanism's, no
 * backend's and no JSON library's (those stay under src/).
 */
#ifndef WARD_H
#define WARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API is what libward exports: every other symbol of the library is
 * hidden (built with -fvisibility=hidden, localized in the installed
 * archive; tests/house/symbols.sh checks the set). */
#pragma GCC visibility push(default)

#define WARD_VERSION "0.1.0"

/* Exit statuses of SPEC §2. */
enum {
	WARD_EXIT_TIMEOUT = 124,
	WARD_EXIT_FAILED = 125, /* ward itself failed or refused: nothing ran */
	WARD_EXIT_NOTFOUND = 127,
	WARD_EXIT_MEMORY = 137,
};

enum ward_isolation {
	WARD_ISO_SYSTEM = 0,
	WARD_ISO_APPLICATION,
};

enum ward_net {
	WARD_NET_NONE = 0,
	WARD_NET_LOOPBACK,
	WARD_NET_ALLOW, /* loopback, and ward's proxy to the names of egress_allow (SPEC §13) */
};

enum ward_status {
	WARD_ST_OK = 0,  /* exited 0 */
	WARD_ST_NONZERO, /* exited non-zero */
	WARD_ST_SIGNAL,  /* ended by a signal (not ward's timeout or OOM) */
	WARD_ST_TIMEOUT, /* wall or CPU limit: ward killed the tree */
	WARD_ST_MEMORY,  /* memory limit: the kernel's OOM killer fired */
	WARD_ST_ERROR,   /* the sandbox itself failed; see result.error */
};

/* Limits.  The defaults live in one table (src/core/request.c) that --help and the
 * docs use too. */
struct ward_limits {
	double timeout_s;           /* wall clock; > 0 */
	double cpu_s;               /* CPU time of the whole tree; 0 = same as timeout_s */
	uint64_t memory_mb;         /* RAM of the whole tree, no swap */
	uint32_t pids;              /* processes + threads at once */
	uint64_t output_limit;      /* bytes kept per stream (head + tail) */
	uint64_t fsize_mb;          /* largest file written */
	uint64_t tmp_size_mb;       /* size of /tmp (and of an ephemeral /work) */
	uint32_t nofile;            /* open files per process */
	uint32_t collect_max_files; /* files out (SPEC §12): most files collected */
	uint64_t collect_max_bytes; /* files out: most bytes collected in all */
	uint64_t egress_bytes;      /* bytes through the egress proxy, both ways, in all (WARD_NET_ALLOW) */
};

/* Host paths (mounts, workdir, rootfs) may be "/proc/self/fd/N" for a
 * directory the caller holds open (O_PATH is enough; "/proc/self/fd/N/SUB"
 * for a path beneath it, found without following a symlink): ward then
 * binds exactly that directory — run as root, cloned from the descriptor;
 * else the sandbox binds the descriptor's path only while it is still that
 * inode, which the caller must hold open until the run ends — so a path
 * checked by the caller cannot be swapped before the mount.  ward serve
 * does this for --allow-root. */
#define WARD_HELD_PATH "/proc/self/fd/"
struct ward_mount {
	const char *host_path;    /* host path (absolute) */
	const char *sandbox_path; /* absolute path inside; NULL = same as host_path */
	bool read_only;
	/* Writable, ward running as root: the directory's owner is the sandbox's
	 * user through an idmapped mount, or the sandbox is not made (no plain
	 * bind instead).  Sandboxes of different host uids then share the
	 * directory and each other's files (E2B's volumes). */
	bool must_idmap;
};

/* A file written into /work before the command starts (server requests,
 * test jobs).  Paths are checked by the path guard: relative, no "..", no
 * NUL, never through a symlink. */
struct ward_file {
	const char *path;
	const unsigned char *data;
	size_t len;
	mode_t mode; /* 0 = 0644 */
};

struct ward_request {
	/* What to run: argv (NULL-terminated) is authoritative; otherwise
	 * shell is run as /bin/sh -c SHELL.  Exactly one must be set. */
	char *const *argv;
	const char *shell;

	char *const *env; /* "K=V" strings, NULL-terminated; may be NULL */

	const struct ward_mount *mounts;
	size_t nmounts;

	const char *workdir; /* host dir mounted rw at /work; NULL = ephemeral tmpfs */
	/* A second name of /work inside the sandbox: a symlink at this path
	 * (e.g. "/home/user", E2B's home; parents made in the root tmpfs).
	 * "/home/" and one name of [a-z0-9_-]; NULL = none.  The sandbox's
	 * user (uid 1000) is then named NAME in its /etc/passwd, with this
	 * home (else "sandbox", home /work). */
	const char *work_link;
	const char *rootfs; /* NULL = the host's system directories */
	/* An image as the root (SPEC §14), opened with ward_image_root_open
	 * (include/ward_image.h): its layers merged read-only are /, its /etc
	 * beside ward's generated files, its Env under env.  NULL: none. */
	const struct ward_image_root *image;
	/* With an image: a writable layer over it (SPEC §14 "root": "overlay"),
	 * on a tmpfs of limits.tmp_size_mb in the sandbox's memory, where the
	 * sandbox's user owns the image's files; gone with the sandbox. */
	bool root_overlay;
	/* The image's name, for a runner (ward run --remote: "image" in the
	 * request; the runner opens its own). */
	const char *image_name;

	const struct ward_file *files;
	size_t nfiles;

	/* Standard input: stdin_data when stdin_set, else stdin_fd when >= 0,
	 * else /dev/null. */
	bool stdin_set;
	const unsigned char *stdin_data;
	size_t stdin_len;
	int stdin_fd;

	enum ward_net net;
	enum ward_isolation isolation;
	struct ward_limits limits;

	/* Egress (net WARD_NET_ALLOW, SPEC §13): the patterns ward's proxy
	 * lets the sandbox reach ("pypi.org", "*.pythonhosted.org",
	 * "files.example:8443", "[2001:db8::1]:443"; at most 64), and
	 * "NAME:ADDR" pins (like curl's --resolve; a pinned name is reached at
	 * that address whatever it is). */
	const char *const *egress_allow;
	size_t negress_allow;
	const char *const *egress_resolve;
	size_t negress_resolve;

	/* Output: when capture is true both streams are kept (head + tail) in
	 * the result; otherwise they stream live to stream_fd[0] and
	 * stream_fd[1] (normally 1 and 2), with the same caps. */
	bool capture;
	int stream_fd[2];
	/* A judge's output limit (SPEC §15): when set, a stream that passes
	 * limits.output_limit bytes kills the run's whole tree at once
	 * (result.output_exceeded) instead of being cut to head and tail
	 * while the program runs on.  One-shot runs (ward_run). */
	bool output_limit_kills;
	/* A session's background process (ward_session_spawn) read by one
	 * reader that follows it (ward_session_proc_output from where it left
	 * off): its output past what that reader took and limits.output_limit
	 * keeps is not read from its pipes, which fill and block the process,
	 * instead of being lost; the reader's next read lets it on.  Bytes
	 * written as it ends are still cut to head and tail. */
	bool output_waits_reader;

	/* A report channel: when set, the child gets the write end of a pipe
	 * as fd 3 (the only fd beyond 0-2 it ever gets) and whatever it writes
	 * there, up to report_limit bytes, lands in result.report.  Used by
	 * test jobs' harness. */
	bool report_channel;
	size_t report_limit;

	/* Watching the output as it is captured (ward serve's streaming):
	 * when observe is true, observe_fd is the write end of a
	 * SOCK_SEQPACKET socket pair, and each piece of the head of stdout and
	 * stderr (what the result keeps of their start) is sent there as one
	 * message as it arrives: a byte WARD_OBSERVE_STDOUT or
	 * WARD_OBSERVE_STDERR, then the bytes (at most WARD_OBSERVE_MAX).
	 * ward never waits for the reader: a message it does not take now is
	 * dropped, and once it takes one again a message of the byte
	 * WARD_OBSERVE_DROPPED | stream, then the count of bytes dropped (8
	 * bytes, little-endian), comes first.  When the reader closes its end
	 * the run is cancelled as by *cancel.  The caller keeps and closes
	 * observe_fd. */
	bool observe;
	int observe_fd;

	/* When non-NULL and *cancel becomes non-zero (e.g. from a signal
	 * handler), the run's whole tree is killed and the result is an error
	 * ("cancelled").  ward checks it at least every 50 ms and whenever a
	 * signal interrupts it. */
	const volatile int *cancel;

	/* Files out (SPEC §12): after the command ends, the regular files of
	 * /work that these globs match ('*' and '?' within a name, '[...]',
	 * '**' as a whole name for any depth; a match that is a directory, or
	 * a glob ending in '/', takes every file below it) come back in
	 * result.files, read inside the sandbox without following a symlink,
	 * within limits.collect_max_files and collect_max_bytes.  System
	 * isolation only; not with report_channel.  NULL-terminated; NULL or
	 * empty = none. */
	char *const *collect;
};

enum {
	WARD_OBSERVE_STDOUT = 1,
	WARD_OBSERVE_STDERR = 2,
	WARD_OBSERVE_DROPPED = 0x80,
	WARD_OBSERVE_MAX = 16384,
};

/* Which mechanism enforced a limit: "cgroup-v2", "cgroup-v1", "rlimit",
 * "ward", "landlock", "seccomp", "none".  Static strings. */
struct ward_enforced {
	const char *memory;
	const char *pids;
	const char *cpu;
	const char *time;
	const char *fsize;
	const char *seccomp;    /* "seccomp" or "none" */
	const char *landlock;   /* "landlock-abi-N" or "none" */
	const char *tcp_memory; /* socket buffers: "cgroup-v2", "cgroup-v1-kmem" or "none" */
	char user[40];          /* "userns-uid-N" (the sandbox's host uid) or "none" */
};

struct ward_usage {
	uint64_t wall_ms;
	uint64_t cpu_user_ms;
	uint64_t cpu_sys_ms;
	uint64_t max_rss_kb;
	/* With WARD_NET_ALLOW: the CPU time of ward's egress proxy for this run
	 * (a session's exec: while it ran), which runs in ward's process and no
	 * cgroup of the sandbox's counts (SPEC §13). */
	uint64_t proxy_cpu_ms;
};

struct ward_stream {
	char *data; /* NUL-terminated, raw bytes (not yet UTF-8 checked) */
	size_t len;
	bool truncated;
	uint64_t bytes; /* what the child wrote in all */
};

/* A file collected from /work (SPEC §12): its path relative to /work, its
 * permission bits and its bytes (size of them, as read: a file that grew
 * while it was read is cut at the size it had when opened). */
struct ward_collected {
	char *path;
	unsigned char *data;
	size_t size;
	mode_t mode;
};
/* One connection the sandbox asked ward's egress proxy for (SPEC §13). */
struct ward_egress {
	char host[256]; /* as asked (a name, or an address without []) */
	unsigned port;
	bool allowed;
	char reason[96];    /* why not, when !allowed; or why it was cut */
	uint64_t bytes_out; /* sandbox -> upstream */
	uint64_t bytes_in;  /* upstream -> sandbox */
};
#define WARD_EGRESS_MAX_RECORDS 64

struct ward_result {
	enum ward_status status;
	int exit_code; /* SPEC §2 mapping: 124, 137, 128+N, or the child's */
	int signal;    /* 0 = none */
	bool timed_out;
	bool oom_killed;
	bool output_exceeded; /* request.output_limit_kills: a stream passed the limit, the tree was killed */
	struct ward_stream out, err;
	char error[512]; /* non-empty only when the sandbox itself failed */
	enum ward_isolation isolation;
	struct ward_enforced enforced;
	struct ward_usage usage;
	char *report; /* report channel contents, or NULL */
	size_t report_len;
	bool report_truncated;
	struct ward_collected *files; /* the request's collect, or NULL */
	size_t nfiles;
	bool files_truncated; /* a cap (files, bytes, entries walked) left files out */
	/* Egress (a run with WARD_NET_ALLOW): the first WARD_EGRESS_MAX_RECORDS
	 * connections tried, in order; truncated when there were more. */
	bool egress_on;
	struct ward_egress *egress;
	size_t negress;
	bool egress_truncated;
};

/* Fill a request with the defaults of SPEC §2. */
void ward_request_init(struct ward_request *req);

/* Check a request; returns 0, or -1 with a one-line message in err that
 * names the problem and the fix. ward_run() calls it too. */
int ward_request_validate(const struct ward_request *req, char *err, size_t errlen);

/* Run a request.  Returns 0 when the command ran (whatever it did) and -1
 * when ward failed or refused: then result->status is WARD_ST_ERROR and
 * result->error says why.  result must be freed with ward_result_free()
 * in both cases.
 *
 * Threads: ward_run() is thread-safe.  The sandbox's PID 1 dies with the
 * *thread* that called ward_run (PR_SET_PDEATHSIG), so call it from a thread
 * that lives until ward_run returns (it always does). */
int ward_run(const struct ward_request *req, struct ward_result *result);

void ward_result_free(struct ward_result *result);

/* Sandboxes cloned by helper processes, for a caller with many threads
 * (`ward serve` starts them).  Cloning a sandbox from a large,
 * multi-threaded process copies its address space, and every page its
 * threads write afterwards costs a copy and a TLB shoot-down on every CPU
 * they run on.  Started before any other thread exists (from the main
 * thread, which must outlive the runs: their PID 1s die with it), small
 * single-threaded helpers clone instead, for runs with no workdir, mounts,
 * rootfs or stdin fd; the sandbox is the same and still the caller's child.
 * helpers = 0: one per CPU, at most 4.  exe_fd: -1, or an fd (O_PATH will
 * do) of the lean, static `ward` binary: the helpers exec it, and a static
 * process's few mappings make each clone and each PID 1's exit cheaper.
 * 0, or -1 with err set (runs then clone for themselves).
 * ward_spawner_stop ends them. */
int ward_spawner_start(unsigned helpers, int exe_fd, char *err, size_t errlen);
void ward_spawner_stop(void);
/* Helpers alive now.  Runs that find one dead clone for themselves until
 * ward_spawner_heal (called from the thread that started them, which
 * PID 1s die with) replaces it; it can only when exe_fd was given, since a
 * fork of a threaded process may do nothing but exec.  It returns how many
 * it started. */
unsigned ward_spawner_helpers(void);
unsigned ward_spawner_heal(void);

/* A pool of system-level sandboxes built ahead of demand (`ward serve
 * --pool N`): each has its namespaces, root, cgroup and host uid ready and
 * waits for a command.  A request of the pool's shape (no workdir, mounts
 * or rootfs; network and /tmp size as the pool's; stdin from data or
 * nothing) takes one, hands it the command, its limits and files, and the
 * sandbox is destroyed after the run: never reused.  Any other request, or
 * one that finds the pool empty, builds its sandbox as ward_run does.
 *
 * A thread of the pool's own keeps `size` sandboxes ready; ward_pool_free
 * (or the process's death) kills them.  ward_pool_new returns
 * once they are built, or NULL with err set when none could be. */
struct ward_pool;
struct ward_pool_stats {
	unsigned size, ready;
	uint64_t hits;     /* requests that took a sandbox from the pool */
	uint64_t misses;   /* requests of the pool's shape that found it empty */
	uint64_t failures; /* sandboxes that could not be built or had died */
};
struct ward_pool *ward_pool_new(unsigned size, enum ward_net net, char *err, size_t errlen);
/* The same for requests on an image (ward_request.image == image, no
 * workdir or mounts): sandboxes on that image's root, built ahead. */
struct ward_pool *ward_pool_new_on(unsigned size, enum ward_net net, const struct ward_image_root *image, char *err,
                                   size_t errlen);
void ward_pool_free(struct ward_pool *pool);
void ward_pool_stats(struct ward_pool *pool, struct ward_pool_stats *st);

/* A process that runs many sandboxes (ward serve) can have them torn down
 * by a thread of ward's after each answer: a run then ends when PID 1 has
 * reported the command's status, which it does once every process of the
 * sandbox is killed and reaped, so the result is complete; PID 1's exit,
 * the namespaces' teardown and the cgroups' removal follow off the
 * caller's path.  ward_reaper_stop tears down what waits and stops the
 * thread.  0, or -1 when the thread cannot be started (runs then tear down
 * their own, as without it). */
int ward_reaper_start(void);
void ward_reaper_stop(void);

/* The network namespaces of `--net none` sandboxes are made by ward, as
 * root in the host's user namespace (so nothing inside one has any
 * capability over it; where ward is not root, each sandbox makes its own).
 * A process that runs many sandboxes keeps up to n idle ones for reuse
 * (ward serve does; the default, 0, closes each after its run).  One is
 * kept only when, after its sandbox's last process is gone, it holds no
 * socket and its counters read as when it was made (src/system/netns.c);
 * any traffic or leftover socket and it is destroyed. */
void ward_netns_keep(unsigned n);
/* Across processes: up to `slots` (at most 64) proven-untouched namespaces
 * are left for the next process in /run/ward/netns (root only: a bind
 * mount of each, with the snapshot it is proven against); a process takes
 * a free slot's (an OFD lock on it while in use), and gives it back after
 * its sandbox under the same rule as ward_netns_keep.  `ward run` shares
 * WARD_NETNS_SHARED (unless $WARD_NETNS_SHARE is 0): a one-shot run then
 * does not pay for making and destroying a namespace.  0 (the default):
 * none. */
#define WARD_NETNS_SHARED 4
void ward_netns_share(unsigned slots);
struct ward_netns_stats {
	unsigned keep, idle;
	uint64_t made;      /* namespaces made */
	uint64_t reused;    /* sandboxes given a kept one */
	uint64_t discarded; /* returned touched, so destroyed instead of kept */
	bool own;           /* ward makes them (false: each sandbox makes its own) */
};
void ward_netns_stats(struct ward_netns_stats *st);

/* The cgroups of sandboxes, likewise: a process that runs many keeps up to
 * n emptied ones for the next sandbox (ward serve does; the default, 0,
 * removes each after its run).  One is kept only when no process, no
 * cgroup beneath it and at most 1 MiB of charged memory is left in it and
 * its counters can start again (src/sandbox/cgroup.c); else it is removed.
 * ward_cgroup_keep(0) removes every kept one (a server does at exit). */
void ward_cgroup_keep(unsigned n);
/* A process that runs one sandbox (ward run) may keep its cgroup for the
 * next such process instead: with ward_cgroup_slots(true), as root, a
 * sandbox takes one of a few host-wide slots (run cgroups named
 * ward-slot-N, each held by a lock on a byte of /run/ward/cg-slots) under
 * the same proof as ward_cgroup_keep's, and leaves it emptied for the next;
 * without a free, clean slot it makes and removes its own as before. */
void ward_cgroup_slots(bool on);
struct ward_cgroup_stats {
	unsigned keep, idle;
	uint64_t made;        /* cgroups made while keeping */
	uint64_t reused;      /* sandboxes given a kept one */
	uint64_t discarded;   /* returned not reusable, so removed */
	uint64_t parked;      /* v1: processes parked in kept cgroups (to clone the next PID 1 there) */
	uint64_t born_parked; /* sandboxes whose PID 1 such a process cloned in its cgroup */
	uint64_t moved;       /* processes moved into a sandbox's cgroup (each may wait a grace period) */
};
void ward_cgroup_stats(struct ward_cgroup_stats *st);

/* ward_run, taking a sandbox from pool when the request fits (pool may be
 * NULL). */
int ward_run_pooled(struct ward_pool *pool, const struct ward_request *req, struct ward_result *result);

/* ---- Sessions (SPEC §11): one system-level sandbox across many calls ----
 *
 * A session is one sandbox (namespaces, root, /work, /tmp, cgroup, PID 1)
 * that stays up between calls; each exec is a new process tree in it with a
 * cgroup of its own under the session's.
 *
 * Conventions: every call but ward_session_new returns 0 or a negative
 * errno, and then writes a one-line message (problem and fix) into err when
 * err is given.  The errnos a caller maps: -EINVAL (a bad argument or path),
 * -ENOENT (no such file, or no such process id), -EFBIG (a read over max),
 * -ENOSPC (/work is full), -EISDIR / -ENOTDIR, -EACCES / -EPERM (the
 * sandbox itself may not do it), -EAGAIN (WARD_SESSION_MAX_EXECS running
 * already), -ESRCH (the session's sandbox is gone: destroy it).
 *
 * Threads: every call is thread-safe against every other on the same
 * session except ward_session_destroy, which the caller makes sure no call
 * is in flight for (e.g. with a reference count).  Ending a session never
 * waits for a call on it: ward_session_kill, from any thread, kills
 * everything in it at once, and a call blocked on it wakes with an error.
 * A files or stdin call has one deadline in all (call_timeout_s): past it,
 * -ETIMEDOUT.  The session's PID 1 dies
 * with the *thread* that called ward_session_new (PR_SET_PDEATHSIG): call it
 * from a thread that outlives the session. */
struct ward_session;

/* Execs and background processes running at once in one session. */
#define WARD_SESSION_MAX_EXECS 16
/* Background processes a session remembers (running or exited); the oldest
 * exited one is forgotten when a new one would exceed it. */
#define WARD_SESSION_MAX_PROCS 64
/* Wake an event loop when a background process of the session has
 * something new: efd (an eventfd the caller made, non-blocking) gets 1
 * added at each piece of output and the end of process pid (0: of any
 * of them; a stream gives its own, so that another's chatter does not
 * wake it), until
 * ward_session_unnotify(s, key) (or the session's end; then nothing wakes
 * it).  The session keeps a duplicate of efd: the caller closes its own
 * when it likes.  A wake says "look again" (ward_session_proc_output with
 * wait_s 0); read efd to clear it before looking, so that nothing that
 * comes after the look is missed.  0, or -EMFILE past 4096 of them a
 * session (then look on a timer), -ENOMEM, -EBADF. */
int ward_session_notify(struct ward_session *s, int efd, const void *key, int pid);
void ward_session_unnotify(struct ward_session *s, const void *key);

/* The most ward_session_proc_output returns of one stream in one call. */
#define WARD_SESSION_OUTPUT_CHUNK (256 * 1024)
/* A files or stdin call's deadline, in all, when the options give none. */
#define WARD_SESSION_CALL_TIMEOUT 60.0
/* What ward_session_list keeps of one directory at most: entries, and
 * bytes (names and records). */
#define WARD_SESSION_LIST_MAX 100000
#define WARD_SESSION_LIST_MAX_BYTES (8u << 20)
/* What a session's background records may hold of their output, in all,
 * when the options give no budget. */
#define WARD_SESSION_BG_OUTPUT ((size_t)64 << 20)
/* The stdin bytes a background process has not read yet that a session
 * keeps for it (ward_session_proc_stdin). */
#define WARD_SESSION_STDIN_QUEUE (1u << 20)
/* The bytes a front end may relay to and from a session's own servers
 * when the options give no cap (ward_session_opts.net_bytes). */
#define WARD_SESSION_NET_BYTES (4ull << 30)
/* The bytes of a background process's argv its record keeps. */
#define WARD_SESSION_ARGV_KEPT 4096

/* Bytes that several sessions take from (a runner's shared budget): max
 * is set by its owner, held is changed by libward, atomically. */
struct ward_budget {
	size_t max;
	size_t held;
};

struct ward_session_opts {
	/* The sandbox's shape and the session's limits together:
	 * shape.workdir / mounts / rootfs / net / env / files as in a request
	 * (files are written into /work at creation; env is every exec's
	 * default), shape.limits.memory_mb / pids / tmp_size_mb / fsize_mb /
	 * nofile hold for everything in the session together.
	 * shape.argv / shell / stdin / timeout_s / cpu_s / capture are ignored;
	 * isolation must be WARD_ISO_SYSTEM. */
	struct ward_request shape;
	uint64_t work_size_mb; /* size of /work when ephemeral (0: = tmp_size_mb) */
	double cpu_budget_s;   /* CPU of the whole session, all execs (0: none) */
	double call_timeout_s; /* a files or stdin call's deadline (0: WARD_SESSION_CALL_TIMEOUT) */
	/* What its background processes' records may hold of their output in
	 * all, ward's memory (0: WARD_SESSION_BG_OUTPUT); each reserves twice
	 * its output_limit when it starts.  bg_output_shared: a budget every
	 * session of a runner takes from too (NULL: none). */
	size_t bg_output_bytes;
	struct ward_budget *bg_output_shared;
	/* The bytes a front end may relay to and from the session's own
	 * servers (ward_session_charge_net), both ways, for its whole life
	 * (0: WARD_SESSION_NET_BYTES). */
	uint64_t net_bytes;
};

/* Build the sandbox and keep it up.  NULL with err set on failure. */
struct ward_session *ward_session_new(const struct ward_session_opts *o, char *err, size_t errlen);

/* Kill every process, remove the sandbox, its cgroups (the execs' too), its
 * uid slot, mounts and temporary files.  NULL is a no-op. */
void ward_session_destroy(struct ward_session *s);

/* End it now: PID 1 and every process in it are killed; calls in flight
 * (an exec, a files call, a stdin write blocked on a reader that never
 * reads) wake with an error and return.  From any thread, at any time,
 * more than once; ward_session_destroy still frees it afterwards. */
void ward_session_kill(struct ward_session *s);

/* false once the session's PID 1 has died (every later call: -ESRCH). */
bool ward_session_alive(struct ward_session *s);

/* Run one command in the session and wait for its main process.  From req:
 * argv / shell, env (over the session's), stdin (data, fd or /dev/null),
 * limits.timeout_s, cpu_s, output_limit, capture / stream_fd, cancel;
 * everything else is the session's.  cwd: inside the sandbox (absolute; NULL
 * = /work).  A timeout, CPU limit or cancel kills the exec's whole tree (its
 * cgroup: daemons it started included) and nothing else; what it left
 * running after a normal exit stays up.  A memory kill ends what the kernel
 * picked (status memory when that was in this exec); the session lives on.
 * Returns as ward_run (0 when the command ran, -1 with result->error set),
 * and result must be freed with ward_result_free in both cases. */
int ward_session_exec(struct ward_session *s, const struct ward_request *req, const char *cwd,
                      struct ward_result *result);

/* Background: start req as an exec does but return at once; *id is the
 * process's pid inside the sandbox.  limits.timeout_s and cpu_s: 0 = none
 * (it runs until it exits, is signalled or the session ends), else as an
 * exec's.  Its output is kept per stream as a run's (head and tail,
 * limits.output_limit each); capture / stream_fd are ignored.  stdin_pipe:
 * its stdin is a pipe ward_session_proc_stdin writes to (else req's stdin
 * data or /dev/null). */
int ward_session_spawn(struct ward_session *s, const struct ward_request *req, const char *cwd, bool stdin_pipe,
                       int *id, char *err, size_t errlen);

struct ward_session_proc {
	int id;      /* pid inside the sandbox */
	char **argv; /* NULL-terminated (a shell command: sh -c CMD) */
	bool running;
	enum ward_status status; /* when !running */
	int exit_code;           /* SPEC §2 mapping, when !running */
	double started_at;       /* CLOCK_REALTIME seconds */
	double ended_at;         /* 0 while running */
};
/* The background processes the session remembers, oldest first (*out is
 * malloc'd; free it with ward_session_procs_free). */
int ward_session_procs(struct ward_session *s, struct ward_session_proc **out, size_t *n);
void ward_session_procs_free(struct ward_session_proc *p, size_t n);

/* Output of background process id from byte offset from_out / from_err of
 * each stream (offsets count every byte it wrote; a part dropped from the
 * middle is skipped and the stream's truncated is set), at most
 * WARD_SESSION_OUTPUT_CHUNK bytes of each per call.  out / err get
 * malloc'd data (free(stream->data)) and ->bytes = the offset after what
 * was returned: the next call's (all it wrote so far unless the chunk's
 * size cut it).  wait_s > 0: when nothing new is there yet, wait up to
 * that long for output or for its exit.  *exited (and *exit_code, SPEC §2)
 * say whether it has ended; either pointer may be NULL. */
int ward_session_proc_output(struct ward_session *s, int id, uint64_t from_out, uint64_t from_err, double wait_s,
                             struct ward_stream *out, struct ward_stream *err, bool *exited, int *exit_code,
                             char *errbuf, size_t errlen);
/* Write to its stdin pipe, never waiting for the process to read: what the
 * pipe takes is written, the rest queued (at most
 * WARD_SESSION_STDIN_QUEUE bytes, held from the session's background
 * budget) and written by the process's thread as it reads.  All of data
 * is taken, or none: -EAGAIN when the queue or the budget has no room
 * (retry once it reads), -EMSGSIZE for more than WARD_SESSION_STDIN_QUEUE
 * at once.  After the main process has ended (a daemon it left may hold
 * the pipe) nothing is queued: -EAGAIN when the pipe does not take it all,
 * with what was written said in err.  -EPIPE when it is closed or nothing
 * reads it.  close_after closes it after what is queued (len 0: just
 * close).  -EINVAL when it was not started with stdin_pipe. */
int ward_session_proc_stdin(struct ward_session *s, int id, const void *data, size_t len, bool close_after, char *err,
                            size_t errlen);
/* sig: SIGINT, SIGTERM or SIGKILL, to the process's whole tree (its exec
 * cgroup).  -EINVAL for another signal. */
int ward_session_proc_signal(struct ward_session *s, int id, int sig, char *err, size_t errlen);

/* Files of the sandbox, resolved inside it (as its user, in its mount
 * namespace, from its own root, under its Landlock rules: a symlink it
 * planted, /proc/self/root included, resolves to what the sandbox itself
 * sees there, never to a host path).  path: relative to /work, no "..",
 * no NUL (the guard of SPEC §6); or absolute, "/" and such a path: any
 * file the sandbox's user may reach ("/" itself: list only); "" is /work
 * itself (list only).  Writes replace the file, create missing
 * parents (0755) and count against /work's size (-ENOSPC).  mode 0 = 0644.
 * read: at most max bytes (more: -EFBIG); *data is malloc'd (free it). */
int ward_session_write(struct ward_session *s, const char *path, const void *data, size_t len, mode_t mode, char *err,
                       size_t errlen);
/* The same write with its bytes in pieces (an upload that is never held
 * whole): begin, more as they come (each piece within the call's
 * deadline; -EIO once the worker stopped reading, e.g. /work is full),
 * then end, which frees u and answers as ward_session_write does. */
struct ward_session_upload;
int ward_session_write_begin(struct ward_session *s, const char *path, mode_t mode, struct ward_session_upload **u,
                             char *err, size_t errlen);
int ward_session_write_more(struct ward_session_upload *u, const void *data, size_t len);
int ward_session_write_end(struct ward_session_upload *u, char *err, size_t errlen);
int ward_session_read(struct ward_session *s, const char *path, size_t max, unsigned char **data, size_t *len,
                      char *err, size_t errlen);
struct ward_dirent {
	char *name;
	char type; /* 'f' file, 'd' directory, 'l' symlink, 'o' other */
	uint64_t size;
	mode_t mode;  /* permission bits (07777) */
	double mtime; /* CLOCK_REALTIME seconds */
};
/* Entries of directory path, sorted by name (*out malloc'd; free it with
 * ward_session_list_free).  -ENOTDIR when path is not a directory. */
int ward_session_list(struct ward_session *s, const char *path, struct ward_dirent **out, size_t *n, char *err,
                      size_t errlen);
/* The same, keeping at most max_entries entries and max_bytes of names
 * and records (those that come first from the directory, sorted);
 * *truncated (may be NULL) says whether entries were left out. */
int ward_session_list_max(struct ward_session *s, const char *path, size_t max_entries, size_t max_bytes,
                          struct ward_dirent **out, size_t *n, bool *truncated, char *err, size_t errlen);
void ward_session_list_free(struct ward_dirent *d, size_t n);
/* Remove a file, a symlink (not what it points to) or a directory with
 * everything in it. */
int ward_session_remove(struct ward_session *s, const char *path, char *err, size_t errlen);

/* A TCP connection to a server the sandbox runs on its own 127.0.0.1:port
 * (a socket made in its network namespace by a thread of ward's, never
 * the caller's, which stays where it is): the connected socket
 * (O_CLOEXEC, blocking), or a negative errno: -ECONNREFUSED when nothing
 * listens there, -ETIMEDOUT past timeout_s, -EPERM when ward may not enter
 * the namespace (not root). */
int ward_session_connect(struct ward_session *s, int port, double timeout_s, char *err, size_t errlen);
/* The session's relayed bytes: what a front end moves through those
 * sockets (a port proxy's requests, answers and WebSocket frames, both
 * ways, heads included), charged by it as they move, from any thread at
 * once (atomic), for the session's whole life, within its cap
 * (ward_session_opts.net_bytes).  Its own count, apart from the egress
 * proxy's limits.egress_bytes (what the sandbox fetches from outside): a
 * dev server's previews do not spend its egress.  0 when the bytes fit in
 * what is left; -EDQUOT when they do not, or nothing is left (then the
 * cap is spent: used = cap, and every later charge, of 0 bytes too, is
 * -EDQUOT): the caller drops them and cuts what it relays. */
int ward_session_charge_net(struct ward_session *s, uint64_t bytes);
void ward_session_net(struct ward_session *s, uint64_t *used, uint64_t *cap);
/* The same without waiting, for a caller with an event loop: a socket
 * (O_CLOEXEC, non-blocking) whose connect is done, or still going
 * (*pending: the loopback retries a server whose backlog is full; poll
 * it for POLLOUT, then SO_ERROR says how it ended), or a negative errno. */
int ward_session_connect_start(struct ward_session *s, int port, bool *pending, char *err, size_t errlen);

struct ward_session_usage {
	uint64_t memory_bytes, memory_peak_bytes, pids, cpu_ms;
};
int ward_session_usage(struct ward_session *s, struct ward_session_usage *u);
/* Has the session used its cpu_budget_s?  Then every exec's tree was
 * killed when it did (reported as a CPU limit), and each later exec is
 * killed as it starts; files calls still work. */
bool ward_session_cpu_spent(struct ward_session *s);
/* Network allow (SPEC §13): connections the session's proxy was asked for
 * so far, and how many it allowed.  -ENOENT for a session without egress.
 * (Each exec's result lists the connections tried while it ran.) */
int ward_session_egress(struct ward_session *s, uint64_t *tried, uint64_t *allowed);
/* What the session's limits are enforced by (as a result's "enforced"). */
void ward_session_enforced(struct ward_session *s, struct ward_enforced *e);

/* ---- A session's lifecycle: freeze and thaw, save and restore, fork ----
 *
 * Mechanisms any front end can use (ward serve's /pause, /resume, /fork;
 * E2B's pause, connect, fork and snapshots above it). */

/* Freeze: every process of the session stops where it is (cgroup v2's
 * cgroup.freeze, v1's freezer hierarchy), keeping its memory; the
 * session holds no thread of ward's while frozen (its seccomp listener's,
 * its egress proxy's, its background processes' — each after draining
 * what their pipes hold — and its armer's end, their state kept; the thaw
 * starts them again, the listener before any process runs), and its
 * clocks stop: the time frozen does not count in a background process's
 * timeout_s, and no CPU is used, so the CPU budget does not move.  While
 * frozen, exec, spawn and the files API answer -EBUSY; output, stdin
 * (queued, written after the thaw), signal, usage, save, fork, kill and
 * destroy work.  -EBUSY when a ward_session_exec is in progress (freeze
 * after it); -ENOTSUP with the reason when this host has no freezer.
 * Freezing a frozen session, or thawing a running one, is a no-op; a thaw
 * that cannot start a thread again fails (-EAGAIN) and leaves it frozen. */
int ward_session_freeze(struct ward_session *s, char *err, size_t errlen);
int ward_session_thaw(struct ward_session *s, char *err, size_t errlen);
bool ward_session_frozen(struct ward_session *s);
/* Seconds the session has spent frozen in all, so far (for a caller's own
 * deadlines: a TTL that should not run while paused). */
double ward_session_frozen_seconds(struct ward_session *s);

/* The most entries (files, directories, links) a save, restore or fork
 * copies. */
#define WARD_SESSION_SAVE_MAX_ENTRIES 100000
struct ward_session_saved {
	uint64_t bytes, files, dirs, links, skipped; /* skipped: FIFOs, sockets, devices */
};
/* Save the session's files — its /work: regular files, directories,
 * symlinks as links (never followed), modes (no set-uid/gid) and mtimes;
 * not its processes — into dir, which is made (mode 0700; -EEXIST when it
 * exists) and should be under the caller's state directory.  At most
 * max_bytes of file data (holes are kept as holes and not counted) and
 * WARD_SESSION_SAVE_MAX_ENTRIES entries: past them -EFBIG / -EMLINK, and
 * dir is removed.  The files are read from the host through the session's
 * root (a frozen session's too) with the sandbox user's rights and no
 * capability, never across a mount (what is mounted into /work is not
 * saved: info's skipped counts it), by a child process with the session's
 * call_timeout_s as its deadline (-ETIMEDOUT), with the session frozen for
 * the copy if it was not and can be (not while an exec runs: then the copy
 * is of a moving tree), then thawed.  info may be NULL. */
int ward_session_save(struct ward_session *s, const char *dir, uint64_t max_bytes, struct ward_session_saved *info,
                      char *err, size_t errlen);
/* Copy saved files (dir, as ward_session_save made it) into the session's
 * /work, owned by the sandbox's user: a session made with
 * ward_session_new then restored is the saved one's files without its
 * processes.  Bounded as a save.  The copy is made by a child process in
 * s's cgroup (what it writes is s's memory: past memory_mb, -ENOMEM), with
 * s's call_timeout_s as its deadline; -EBUSY while s is frozen; a name
 * /work holds already: -EEXIST. */
int ward_session_restore(struct ward_session *s, const char *dir, uint64_t max_bytes, struct ward_session_saved *info,
                         char *err, size_t errlen);
/* Fork: n new sessions made with o (their shape, limits, budgets), each
 * with a copy of s's files at this moment — files only: no process of s
 * is copied (what runs in s goes on in s alone).  s is frozen for the
 * copies if it was not and can be (not while an exec runs), then thawed.
 * out[0..n) get the sessions; on failure none is left (-errno with err
 * set).  Bounded as a save, per copy, and never more than s's /work holds;
 * read as a save reads, written as a restore writes (charged to each
 * fork's memory: past o's memory_mb, -ENOMEM). */
int ward_session_fork(struct ward_session *s, const struct ward_session_opts *o, unsigned n, uint64_t max_bytes,
                      struct ward_session **out, char *err, size_t errlen);

/* Replace a session's egress allow-list (SPEC §13) while it runs, for new
 * connections (those relaying go on): patterns as ward_request's
 * egress_allow, at most 64, none beyond what the caller allows (the
 * caller applies its ceiling).  -ENOTSUP when the session was made
 * without WARD_NET_ALLOW (it has no proxy), -EINVAL for a malformed
 * pattern; nothing changed then. */
int ward_session_set_egress(struct ward_session *s, const char *const *allow, size_t n, char *err, size_t errlen);

/* Turn on the kernel's favordynmods, host-wide (it outlives the process;
 * `ward serve --favor-dynmods`): moving a process into a cgroup then costs
 * ~0.1 ms instead of an RCU grace period, which every session exec pays,
 * and every sandbox on cgroup v1.  Needs root and Linux 6.0+.  0, or -1
 * with err set. */
int ward_cgroup_favor_dynmods(char *err, size_t errlen);

/* The exit status a CLI reports for a result (SPEC §2). */
int ward_result_exit_status(const struct ward_result *result);

const char *ward_status_name(enum ward_status st);
const char *ward_isolation_name(enum ward_isolation iso);
int ward_isolation_parse(const char *s, enum ward_isolation *out);
int ward_net_parse(const char *s, enum ward_net *out);

/* ---- JSON (src/wire/json.c is the only file that knows the wire format) ---- */

/* The result object of SPEC §4 as a NUL-terminated JSON string (malloc'd,
 * exactly its length: nothing but the text is allocated, whatever the
 * streams hold); invalid UTF-8 in the streams becomes U+FFFD. NULL on
 * allocation failure. */
char *ward_result_to_json(const struct ward_result *result);
/* The same object and a newline written to fd through a small buffer, with
 * no copy of the streams.  0, or -1 with errno set. */
int ward_result_to_json_fd(const struct ward_result *result, int fd);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
