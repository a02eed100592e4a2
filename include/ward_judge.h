/* ward_judge.h — languages and judging (SPEC §15) in libward: a language
 * table, and a judge job that builds a program once in a sandbox and runs
 * it against many tests, each in a fresh sandbox, with a verdict each.
 *
 * Data flow: a table file --ward_languages_load--> struct ward_languages
 * --ward_languages_probe--> entries enabled or disabled (version_cmd run in
 * a sandbox); a job (struct ward_judge_job, naming one enabled entry)
 * --ward_judge--> struct ward_judge_result.  The JSON of POST /judge and of
 * the answer is src/judge/judge_json.c's; this API is plain C.
 *
 * Ownership as in ward.h: a job's pointers are borrowed; a result owns what
 * it holds and is released by ward_judge_result_free().
 */
#ifndef WARD_JUDGE_H
#define WARD_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The API is what libward exports: every other symbol of the library is
 * hidden (built with -fvisibility=hidden, localized in the installed
 * archive; tests/house/symbols.sh checks the set). */
#pragma GCC visibility push(default)

/* ---- the language table ---- */

/* The most entries a table may have, and what one entry may hold. */
#define WARD_LANG_MAX 256
#define WARD_LANG_MAX_ARGV 64
#define WARD_LANG_MAX_TABLE_BYTES (1u << 20)

/* Defaults a language gives a job that names no limit (0: the runner's). */
struct ward_lang_limits {
	double timeout_s, cpu_s;
	uint64_t memory_mb, tmp_size_mb;
	uint32_t pids;
};

struct ward_language {
	char *id;          /* "cpp" */
	char *display;     /* "C++ (GCC 12.2.0)" */
	char *version;     /* the table's, replaced by what version_cmd printed */
	char **aliases;    /* NULL-terminated */
	char *source_file; /* the main file's name: "main.cpp" */
	char **compile;    /* argv with placeholders; NULL for an interpreter */
	char **run;        /* argv with placeholders */
	/* argv that runs the main file as it is, no compile (Java's source
	 * launcher: its first class, whatever its name); NULL: none.  Piston's
	 * dialect runs it, as Piston's own package does. */
	char **run_source;
	char **version_cmd;         /* argv; run at start-up in a sandbox */
	char **env;                 /* "K=V", NULL-terminated */
	char **artifacts;           /* what the build leaves for the run (globs of /work); NULL: all of /work */
	char *image;                /* an image's name (SPEC §14), or NULL: the host's directories */
	char *package;              /* what to install when it is missing (the doctor's fix), or NULL */
	char **mounts;              /* host paths bound read-only at the same place (Java's /etc/java-17-openjdk) */
	struct ward_mount *mount_v; /* the same as the requests' mounts */
	size_t nmounts;
	struct ward_lang_limits compile_limits, run_limits;
	/* set by ward_languages_probe */
	bool enabled;
	char why[256];                      /* disabled: why, and the fix */
	const struct ward_image_root *root; /* the image's opened root (the caller's), or NULL */
};

struct ward_languages {
	struct ward_language *v;
	size_t n;
};

/* Where the shipped table is looked for when no file is named:
 * $WARD_LANGUAGES, then beside the binary (../share/ward/languages.json,
 * ../languages.json: a build tree), then PREFIX/share/ward/languages.json.
 * The path found, in buf (a static buffer's size); NULL when none. */
const char *ward_languages_default_path(char *buf, size_t n);

/* Read a table (a JSON array of entries, SPEC §15).  0, or -1 with a
 * message naming the entry and field in err (t is then empty). */
int ward_languages_load(const char *path, struct ward_languages *t, char *err, size_t errlen);
int ward_languages_parse(const char *json, size_t len, struct ward_languages *t, char *err, size_t errlen);
void ward_languages_free(struct ward_languages *t);

/* Run every entry's version_cmd in a sandbox (a few at a time), from the
 * threads of this call: an entry whose command is missing or fails is
 * disabled with why.  An entry naming an image must have its root set
 * first (else it is disabled: "image X is not available ..."). */
void ward_languages_probe(struct ward_languages *t, struct ward_pool *pool);

/* The enabled entry whose id or alias is name (NULL when none).  version:
 * NULL, "", "*" or a prefix of the entry's version ("3", "3.11"). */
const struct ward_language *ward_language_find(const struct ward_languages *t, const char *name, const char *version);

/* ---- the judge ---- */

enum ward_verdict {
	WARD_V_AC = 0,
	WARD_V_WA,
	WARD_V_RE,
	WARD_V_OLE,
	WARD_V_MLE,
	WARD_V_TLE,
	WARD_V_CE,
	WARD_V_IE,
	WARD_V_SKIPPED,
};
const char *ward_verdict_name(enum ward_verdict v);

enum ward_compare {
	WARD_CMP_EXACT = 0, /* byte for byte */
	WARD_CMP_LINES,     /* trailing whitespace of each line and trailing empty lines ignored */
	WARD_CMP_TOKENS,    /* whitespace-separated tokens */
	WARD_CMP_FLOAT,     /* tokens; numbers equal within eps, absolute or relative */
};

/* Maxima of a job (SPEC §10, §15); a runner's own may be lower. */
#define WARD_JUDGE_MAX_TESTS 1000
#define WARD_JUDGE_MAX_TEST_BYTES (64u << 20)  /* stdin and expected output of all tests */
#define WARD_JUDGE_MAX_BUILD_BYTES (48u << 20) /* the build's files kept for the runs (within the handover's 64 MiB) */
#define WARD_JUDGE_MAX_BUILD_FILES 1000
/* What an answer keeps of each test's stdout and stderr (the comparison
 * sees all of it, up to max_output_bytes). */
#define WARD_JUDGE_KEPT_OUTPUT (64u << 10)

/* A run's limits: limits.output_limit is max_output_bytes, and a stream
 * past it kills the test (OLE); cpu_s + extra_cpu_s is when the run is
 * killed, cpu_s is what the verdict holds it to. */
struct ward_judge_limits {
	struct ward_limits l;
	double extra_cpu_s;
};

struct ward_judge_test {
	const char *id;
	const unsigned char *stdin_data; /* NULL: nothing */
	size_t stdin_len;
	const unsigned char *expected; /* NULL: none, any output of a run that ends well is AC */
	size_t expected_len;
	char *const *args;                      /* NULL: the job's */
	const struct ward_judge_limits *limits; /* NULL: the job's run limits */
};

struct ward_judge_test_result {
	char *id;
	enum ward_verdict verdict;
	int exit_code;               /* SPEC §2's mapping */
	int signal;                  /* 0: none */
	struct ward_stream out, err; /* at most WARD_JUDGE_KEPT_OUTPUT of each (truncated says so) */
	uint64_t cpu_ms, wall_ms, memory_kb;
	char message[200]; /* "killed by SIGSEGV", "CPU time 1.50 s > 1 s", ... */
};

struct ward_judge_job {
	const struct ward_language *lang;
	const struct ward_file *files; /* files[0] is the main file */
	size_t nfiles;
	/* More files in /work for the compile and for every test (data, headers,
	 * a zip's contents), never among {sources}; one whose path a job file
	 * or the build already has is left out (the job's own file wins). */
	const struct ward_file *extra;
	size_t nextra;
	char *const *flags; /* {flags}; NULL: none */
	char *const *args;  /* {args}; NULL: none */
	struct ward_limits compile_limits;
	struct ward_judge_limits run_limits;
	const struct ward_judge_test *tests;
	size_t ntests;
	enum ward_compare compare;
	double eps;
	bool stop_on_first_failure;
	unsigned parallel;                   /* tests at once (1 when 0) */
	const struct ward_image_root *image; /* the root for this job; NULL: the language's */
	struct ward_pool *pool;              /* may be NULL */
	const volatile int *cancel;          /* as ward_request.cancel */
	/* More sandboxes at once than the caller's own: take_slots(arg, want)
	 * returns how many (0..want) it may run beside it now, never waiting;
	 * give_slots gives them back.  NULL: parallel as asked. */
	unsigned (*take_slots)(void *arg, unsigned want);
	void (*give_slots)(void *arg, unsigned n);
	void *slots_arg;
	/* Told as each test ends (from the thread that ran it, one at a
	 * time), with its index; NULL: not told. */
	void (*test_done)(void *arg, const struct ward_judge_test_result *t, size_t index);
	void *test_done_arg;
};

struct ward_judge_result {
	enum ward_verdict verdict;
	bool compiled;                     /* the language compiles: compile is set */
	struct ward_result compile;        /* the compile's run (SPEC §4) */
	enum ward_verdict compile_verdict; /* AC (built) or CE, or IE */
	char compile_message[200];
	struct ward_judge_test_result *tests; /* ntests of them (none after a CE or IE) */
	size_t ntests;
	unsigned passed;
	long first_failed; /* index, -1 when none */
	unsigned parallel; /* tests that ran at once, at most */
	char error[512];   /* IE: what ward could not do */
};

/* Judge a job.  0 when it was judged (whatever the verdicts), -1 when ward
 * failed or refused it (res->verdict IE, res->error says why).  res must be
 * freed with ward_judge_result_free in both cases.  Call it from a thread
 * that lives until it returns (the sandboxes' PID 1 die with their
 * threads). */
int ward_judge(const struct ward_judge_job *job, struct ward_judge_result *res);
void ward_judge_result_free(struct ward_judge_result *res);

/* The comparison of a run's output with the expected output (pure). */
bool ward_judge_compare(enum ward_compare mode, double eps, const unsigned char *got, size_t got_len,
                        const unsigned char *want, size_t want_len);

/* argv from a template: each placeholder word "{source}", "{sources}",
 * "{flags}", "{args}" replaced by zero or more words (never through a
 * shell); other words kept.  sources: the files (NULL-terminated), of which
 * {sources} takes those with the main file's extension.  A malloc'd,
 * NULL-terminated array of borrowed strings (free only the array), or NULL
 * (ENOMEM, or more than WARD_LANG_MAX_ARGV + the words given). */
char **ward_judge_argv(char *const *tmpl, const char *main_file, char *const *sources, char *const *flags,
                       char *const *args);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
