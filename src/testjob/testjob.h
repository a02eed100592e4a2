/* testjob.h — test jobs (SPEC §6): a job (source files, test files, a
 * runner) becomes one struct ward_request; its report is read from the
 * report channel (fd 3 of the sandboxed harness), never from stdout.
 *
 * Data flow: JSON job --testjob_from_json--> struct testjob
 *            --testjob_run--> ward_run() --> struct testjob_report
 *            --testjob_report_to_json--> the report JSON.
 * The JSON (the job, the report, the harness's lines) lives in
 * src/testjob/testjob_json.c, on the wire's shared checks; the running, the
 * JUnit XML and the two front ends (`ward test`, POST /test) in
 * src/testjob/testjob.c.  Depends on core (ward_run) and wire, never on a
 * front end or the server: they call in.
 */
#ifndef WARD_TESTJOB_H
#define WARD_TESTJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"
#include "wire/wire.h"

enum testjob_runner {
	TJ_RUNNER_PYTHON = 0, /* the embedded harness: pytest or unittest */
	TJ_RUNNER_JUNIT,      /* the job's command leaves JUnit XML at $WARD_REPORT */
};

/* Which python framework the harness uses: pytest when the sandbox's
 * python3 has it ("auto"), or the one the job names. */
enum testjob_framework {
	TJ_FW_AUTO = 0,
	TJ_FW_PYTEST,
	TJ_FW_UNITTEST,
};

/* Where the junit runner's command must leave its report, inside the
 * sandbox (a tmpfs that dies with it). */
#define TJ_JUNIT_REPORT "/tmp/.ward-report/junit.xml"
/* The most report bytes read back from the sandbox. */
#define TJ_REPORT_LIMIT (8u << 20)
/* The most bytes of a job document (base64 makes 16 MiB of files ~22 MiB). */
#define TJ_MAX_JOB_BYTES (32u << 20)

/* A decoded job.  doc.req holds the files (source files first, then test
 * files), limits, env, network and isolation; doc owns all storage. */
/* Who watches a job's run (POST /test streaming): started is called just
 * before the run, once the job is accepted, with the request about to run
 * (it may set the request's observe fields); ended right after the run,
 * with its result. */
struct testjob_observer {
	void (*started)(void *arg, struct ward_request *req);    /* or NULL */
	void (*ended)(void *arg, const struct ward_result *res); /* or NULL */
	/* The job's "image" (SPEC §14): the root of one the runner offers, or
	 * NULL with err set (NULL function: the runner offers none). */
	const struct ward_image_root *(*image)(void *arg, const char *name, char *err, size_t errlen);
	void *arg;
};

struct testjob {
	struct ward_request_doc doc;
	size_t nsource; /* doc.req.files[0..nsource) are source files */
	enum testjob_runner runner;
	enum testjob_framework framework;
	char **command;                          /* junit: the command (NULL-terminated; = doc.argv) */
	struct ward_pool *pool;                  /* sandboxes built ahead (ward serve --pool), or NULL */
	const struct testjob_observer *observer; /* told when the run begins, or NULL */
};

enum testjob_outcome {
	TJ_PASSED = 0,
	TJ_FAILED,
	TJ_ERRORED,
	TJ_SKIPPED,
};

struct testjob_detail {
	char *name;
	enum testjob_outcome outcome;
	char *message;
	uint64_t duration_ms;
};

struct testjob_report {
	unsigned total, passed, failed, errored, skipped;
	bool timed_out;
	int exit_code;
	struct ward_stream out, err; /* the run's streams, capped as for /exec */
	char error[512];             /* non-empty: the job did not produce an honest report */
	struct testjob_detail *details;
	size_t ndetails, cap;
};

/* ---- testjob_json.c ---- */

/* Decode a job.  0, or -1 with a message in err naming the field (job is
 * then freed).  Paths are checked here, before anything is written: the
 * path guard's rules, duplicates, and a path that passes through a file
 * named earlier ("a" and "a/b"); at most WARD_MAX_FILES files and
 * WARD_MAX_FILES_BYTES bytes. */
int testjob_from_json(const char *buf, size_t len, struct testjob *job, char *err, size_t errlen);
/* The same, with the limits a job that names none gets (NULL: SPEC §2's). */
int testjob_from_json_under(const char *buf, size_t len, const struct ward_limits *defaults, struct testjob *job,
                            char *err, size_t errlen);
void testjob_free(struct testjob *job);

/* The report of SPEC §6 as a malloc'd JSON string, or NULL (ENOMEM). */
char *testjob_report_to_json(const struct testjob_report *rep);

/* Parse the python harness's report lines (one JSON object a line) into
 * rep's details and counts.  timed_out: the run hit its time limit, so an
 * unfinished report is expected and its unfinished test counts as errored.
 * 0, or -1 with a message in err (rep's counts are then zeroed). */
int testjob_parse_harness(const char *buf, size_t len, bool timed_out, struct testjob_report *rep, char *err,
                          size_t errlen);

/* ---- testjob.c ---- */

/* Add one test to rep and count it.  0 or -1 (ENOMEM). */
int testjob_report_add(struct testjob_report *rep, const char *name, size_t namelen, enum testjob_outcome o,
                       const char *msg, size_t msglen, uint64_t duration_ms);
/* Forget every test (counts and details), keeping streams and error. */
void testjob_report_clear_tests(struct testjob_report *rep);
void testjob_report_free(struct testjob_report *rep);
const char *testjob_outcome_name(enum testjob_outcome o);

/* Parse JUnit XML (surefire / pytest / go-junit-report flavours: every
 * <testcase>, wherever it is nested).  A DOCTYPE is refused outright — no
 * entity is ever declared or expanded — and nothing is fetched from the
 * network.  0, or -1 with a message in err. */
int testjob_parse_junit(const char *xml, size_t len, struct testjob_report *rep, char *err, size_t errlen);

/* Run a decoded job and fill rep (free it with testjob_report_free in
 * every case).  Returns 0 when the job ran, whatever the tests did;
 * TJ_REFUSED_RC when the request it makes is refused (limits out of range,
 * isolation not allowed); TJ_FAILED_RC when ward itself failed.
 * rep->error says why in both. */
enum { TJ_FAILED_RC = -1, TJ_REFUSED_RC = -2 };
int testjob_run(const struct testjob *job, struct testjob_report *rep);

/* The harness source (embedded at build time from src/testjob/). */
const char *testjob_harness_source(void);

/* ---- testjob.c: the front ends ---- */

/* `ward test JOB.json|-` (argv[0] = "test"): runs a test job (SPEC §6) and
 * prints its report.  Exit 0 when tests ran and none failed, errored or
 * timed out; 1 otherwise (also when no honest report came back); 125 when
 * the job was refused or ward failed. */
int ward_test_main(int argc, char **argv);

/* POST /test: *report_json (malloc'd, always set unless out of memory) is
 * the report; returns the HTTP status: 200 when the job ran (failing tests
 * included), 400 when the job was refused (the report's "error" says why:
 * also a limit above the runner's maxima, when maxima is not NULL), 503
 * when ward could not run it. */
struct egress_policy;
/* egress: the runner's egress policy (a job asking for network allow must
 * lie within its ceiling, and gets its pins), or NULL. */
int ward_testjob_http(struct ward_pool *pool, const struct ward_limits *maxima, const struct egress_policy *egress,
                      const char *body, size_t len, char **report_json);
/* The same, obs (or NULL) told when the run begins. */
int ward_testjob_http_observed(struct ward_pool *pool, const struct ward_limits *maxima,
                               const struct egress_policy *egress, const char *body, size_t len,
                               const struct testjob_observer *obs, char **report_json);

#endif
