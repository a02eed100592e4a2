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

#define WARD_VERSION "0.1.0"

/* Exit statuses of SPEC §2. */
enum {
	WARD_EXIT_TIMEOUT = 124,
	WARD_EXIT_FAILED = 125,  /* ward itself failed or refused: nothing ran */
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
};

enum ward_status {
	WARD_ST_OK = 0,     /* exited 0 */
	WARD_ST_NONZERO,    /* exited non-zero */
	WARD_ST_SIGNAL,     /* ended by a signal (not ward's timeout or OOM) */
	WARD_ST_TIMEOUT,    /* wall or CPU limit: ward killed the tree */
	WARD_ST_MEMORY,     /* memory limit: the kernel's OOM killer fired */
	WARD_ST_ERROR,      /* the sandbox itself failed; see result.error */
};

/* Limits.  The defaults live in one table (src/core/request.c) that --help and the
 * docs use too. */
struct ward_limits {
	double timeout_s;       /* wall clock; > 0 */
	double cpu_s;           /* CPU time of the whole tree; 0 = same as timeout_s */
	uint64_t memory_mb;     /* RAM of the whole tree, no swap */
	uint32_t pids;          /* processes + threads at once */
	uint64_t output_limit;  /* bytes kept per stream (head + tail) */
	uint64_t fsize_mb;      /* largest file written */
	uint64_t tmp_size_mb;   /* size of /tmp (and of an ephemeral /work) */
	uint32_t nofile;        /* open files per process */
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

	char *const *env;  /* "K=V" strings, NULL-terminated; may be NULL */

	const struct ward_mount *mounts;
	size_t nmounts;

	const char *workdir; /* host dir mounted rw at /work; NULL = ephemeral tmpfs */
	const char *rootfs;  /* NULL = the host's system directories */

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

	/* Output: when capture is true both streams are kept (head + tail) in
	 * the result; otherwise they stream live to stream_fd[0] and
	 * stream_fd[1] (normally 1 and 2), with the same caps. */
	bool capture;
	int stream_fd[2];

	/* A report channel: when set, the child gets the write end of a pipe
	 * as fd 3 (the only fd beyond 0-2 it ever gets) and whatever it writes
	 * there, up to report_limit bytes, lands in result.report.  Used by
	 * test jobs' harness. */
	bool report_channel;
	size_t report_limit;

	/* When non-NULL and *cancel becomes non-zero (e.g. from a signal
	 * handler), the run's whole tree is killed and the result is an error
	 * ("cancelled").  ward checks it at least every 50 ms and whenever a
	 * signal interrupts it. */
	const volatile int *cancel;
};

/* Which mechanism enforced a limit: "cgroup-v2", "cgroup-v1", "rlimit",
 * "ward", "landlock", "seccomp", "none".  Static strings. */
struct ward_enforced {
	const char *memory;
	const char *pids;
	const char *cpu;
	const char *time;
	const char *fsize;
	const char *seccomp;  /* "seccomp" or "none" */
	const char *landlock; /* "landlock-abi-N" or "none" */
	const char *tcp_memory; /* socket buffers: "cgroup-v2", "cgroup-v1-kmem" or "none" */
	char user[40];        /* "userns-uid-N" (the sandbox's host uid) or "none" */
};

struct ward_usage {
	uint64_t wall_ms;
	uint64_t cpu_user_ms;
	uint64_t cpu_sys_ms;
	uint64_t max_rss_kb;
};

struct ward_stream {
	char *data;     /* NUL-terminated, raw bytes (not yet UTF-8 checked) */
	size_t len;
	bool truncated;
	uint64_t bytes; /* what the child wrote in all */
};

struct ward_result {
	enum ward_status status;
	int exit_code;    /* SPEC §2 mapping: 124, 137, 128+N, or the child's */
	int signal;       /* 0 = none */
	bool timed_out;
	bool oom_killed;
	struct ward_stream out, err;
	char error[512];  /* non-empty only when the sandbox itself failed */
	enum ward_isolation isolation;
	struct ward_enforced enforced;
	struct ward_usage usage;
	char *report;     /* report channel contents, or NULL */
	size_t report_len;
	bool report_truncated;
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
	uint64_t hits;        /* requests that took a sandbox from the pool */
	uint64_t misses;      /* requests of the pool's shape that found it empty */
	uint64_t failures;    /* sandboxes that could not be built or had died */
};
struct ward_pool *ward_pool_new(unsigned size, enum ward_net net, char *err, size_t errlen);
void ward_pool_free(struct ward_pool *pool);
void ward_pool_stats(struct ward_pool *pool, struct ward_pool_stats *st);

/* ward_run, taking a sandbox from pool when the request fits (pool may be
 * NULL). */
int ward_run_pooled(struct ward_pool *pool, const struct ward_request *req, struct ward_result *result);

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

#ifdef __cplusplus
}
#endif
#endif
