/* testjob_json.c — the test job's formats (SPEC §6): a job document in, its
 * report out, and the python harness's report lines (ward_harness.py, fd 3
 * of the sandbox) in between.  Types in testjob.h.
 *
 * Decoding is built on the wire's shared checks (src/wire/decode.h) and
 * the report is written by the wire's bounded writer (jsonw): wire/ knows
 * nothing of test jobs.  Never runs anything: testjob.c does. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errf.h"
#include "core/pathguard.h"
#include "core/request.h"
#include "testjob/testjob.h"
#include "wire/decode.h"
#include "wire/jsonw.h"

/* ------------------------------------------------------------- the job */

/* One list of files ("source_files" or "test_files") appended to
 * doc->files from index *at on. */
static int tj_decode_file_list(struct ward_request_doc *doc, const json_t *a, const char *list, size_t *at,
                               size_t *total, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return base_errf(err, errlen, "%s: must be an array of {\"path\", \"content\"} objects", list);
	for (size_t i = 0; i < json_array_size(a); i++, (*at)++) {
		json_t *f = json_array_get(a, i), *v;
		struct ward_file *wf = &doc->files[*at];
		char at_name[48], perr[300];
		if (!json_is_object(f))
			return base_errf(err, errlen, "%s[%zu]: must be an object", list, i);
		if (!(v = wire_member(f, "path")) || !json_is_string(v))
			return base_errf(err, errlen, "%s[%zu].path: is required and must be a string", list, i);
		/* The length is explicit: a "\u0000" inside the path is seen. */
		if (pathguard_check(json_string_value(v), json_string_length(v), perr, sizeof(perr)) < 0)
			return base_errf(err, errlen, "%s[%zu].path: %s", list, i, perr);
		wf->path = json_string_value(v);
		snprintf(at_name, sizeof(at_name), "%s[%zu]", list, i);
		if (wire_decode_file_body(f, at_name, 0777, wf, &doc->file_data[*at], err, errlen) < 0)
			return -1;
		*total += wf->len;
		if (*total > WARD_MAX_FILES_BYTES)
			return base_errf(err, errlen, "%s[%zu]: the job's files are larger than %u bytes in all", list,
			                 i, WARD_MAX_FILES_BYTES);
	}
	return 0;
}

/* Two paths that cannot both be written: the same path twice, or a path
 * that passes through another given as a file ("a" and "a/b"). */
static int tj_check_conflicts(const struct testjob *job, char *err, size_t errlen)
{
	const struct ward_file *f = job->doc.req.files;
	size_t n = job->doc.req.nfiles;
	for (size_t i = 0; i < n; i++) {
		size_t li = strlen(f[i].path);
		for (size_t j = i + 1; j < n; j++) {
			size_t lj = strlen(f[j].path);
			const char *what = NULL;
			if (li == lj && memcmp(f[i].path, f[j].path, li) == 0)
				what = "is given twice";
			else if ((li < lj && memcmp(f[i].path, f[j].path, li) == 0 && f[j].path[li] == '/') ||
			         (lj < li && memcmp(f[i].path, f[j].path, lj) == 0 && f[i].path[lj] == '/'))
				what = "and another file's path need the same name as a file and as a directory";
			if (what)
				return base_errf(err, errlen, "%s[%zu].path \"%.200s\" %s (%s[%zu].path \"%.200s\")",
				                 j < job->nsource ? "source_files" : "test_files",
				                 j < job->nsource ? j : j - job->nsource, f[j].path, what,
				                 i < job->nsource ? "source_files" : "test_files",
				                 i < job->nsource ? i : i - job->nsource, f[i].path);
		}
	}
	return 0;
}

/* "runner" and, for the python runner, "framework". */
static int tj_decode_runner(struct testjob *job, const json_t *root, char *err, size_t errlen)
{
	json_t *v;
	const char *runner = "python";
	if ((v = wire_member(root, "runner")) && wire_cstr(v, "runner", &runner, err, errlen) < 0)
		return -1;
	if (strcmp(runner, "python") == 0)
		job->runner = TJ_RUNNER_PYTHON;
	else if (strcmp(runner, "junit") == 0)
		job->runner = TJ_RUNNER_JUNIT;
	else
		return base_errf(err, errlen, "runner: must be \"python\" or \"junit\"");

	if ((v = wire_member(root, "framework"))) {
		const char *fw;
		if (wire_cstr(v, "framework", &fw, err, errlen) < 0)
			return -1;
		if (job->runner != TJ_RUNNER_PYTHON)
			return base_errf(err, errlen, "framework: only the python runner takes a framework");
		if (strcmp(fw, "auto") == 0)
			job->framework = TJ_FW_AUTO;
		else if (strcmp(fw, "pytest") == 0)
			job->framework = TJ_FW_PYTEST;
		else if (strcmp(fw, "unittest") == 0)
			job->framework = TJ_FW_UNITTEST;
		else
			return base_errf(err, errlen, "framework: must be \"auto\", \"pytest\" or \"unittest\"");
	}
	return 0;
}

/* "command": the junit runner needs one, the python runner takes none. */
static int tj_decode_command(struct testjob *job, const json_t *root, char *err, size_t errlen)
{
	json_t *v = wire_member_nonempty(root, "command");
	if (json_is_array(v) && json_array_size(v) == 0)
		v = NULL; /* [] and "" are a client's "no command", as in /exec */
	if (job->runner == TJ_RUNNER_JUNIT) {
		if (!v || !json_is_array(v) || json_array_size(v) == 0)
			return base_errf(err, errlen,
			                 "command: the junit runner needs a command, a non-empty array of "
			                 "strings that leaves JUnit XML at $WARD_REPORT");
		if (wire_string_array(v, "command", &job->doc.argv, err, errlen) < 0)
			return -1;
		job->command = job->doc.argv;
	} else if (v)
		return base_errf(err, errlen,
		                 "command: only the junit runner takes a command; the python runner "
		                 "runs its test files with ward's harness");
	return 0;
}

/* "source_files", then "test_files", into doc.files; then the paths
 * against each other. */
static int tj_decode_files(struct testjob *job, const json_t *root, char *err, size_t errlen)
{
	struct ward_request_doc *doc = &job->doc;
	json_t *src = wire_member(root, "source_files"), *tests = wire_member(root, "test_files");
	size_t ns = json_is_array(src) ? json_array_size(src) : 0;
	size_t nt = json_is_array(tests) ? json_array_size(tests) : 0;
	if (ns + nt > WARD_MAX_FILES)
		return base_errf(err, errlen, "the job has %zu files: at most %d are allowed", ns + nt, WARD_MAX_FILES);
	doc->files = calloc(ns + nt ? ns + nt : 1, sizeof(*doc->files));
	doc->file_data = calloc(ns + nt ? ns + nt : 1, sizeof(*doc->file_data));
	if (!doc->files || !doc->file_data)
		return base_errf(err, errlen, "out of memory");
	doc->req.files = doc->files;
	doc->req.nfiles = ns + nt; /* now, so that doc_free releases what was decoded */
	size_t at = 0, total = 0;
	if (src && tj_decode_file_list(doc, src, "source_files", &at, &total, err, errlen) < 0)
		return -1;
	job->nsource = at;
	if (tests && tj_decode_file_list(doc, tests, "test_files", &at, &total, err, errlen) < 0)
		return -1;
	if (job->runner == TJ_RUNNER_PYTHON && nt == 0)
		return base_errf(err, errlen, "test_files: the python runner needs at least one test file");
	return tj_check_conflicts(job, err, errlen);
}

static int tj_decode_job(struct testjob *job, const json_t *root, char *err, size_t errlen)
{
	if (!json_is_object(root))
		return base_errf(err, errlen, "the job must be a JSON object");
	if (tj_decode_runner(job, root, err, errlen) < 0 || tj_decode_command(job, root, err, errlen) < 0 ||
	    tj_decode_files(job, root, err, errlen) < 0)
		return -1;
	json_t *v;
	if ((v = wire_member(root, "limits")) && wire_decode_limits(&job->doc.req, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "env")) && wire_decode_env(&job->doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member_nonempty(root, "image")) &&
	    wire_cstr(v, "image", &job->doc.req.image_name, err, errlen) < 0)
		return -1;
	return wire_decode_network_isolation(&job->doc, root, err, errlen);
}

int testjob_from_json(const char *buf, size_t len, struct testjob *job, char *err, size_t errlen)
{
	return testjob_from_json_under(buf, len, NULL, job, err, errlen);
}

int testjob_from_json_under(const char *buf, size_t len, const struct ward_limits *defaults, struct testjob *job,
                            char *err, size_t errlen)
{
	memset(job, 0, sizeof(*job));
	wire_request_doc_init(&job->doc);
	if (defaults)
		job->doc.req.limits = *defaults;
	if (len > TJ_MAX_JOB_BYTES)
		return base_errf(err, errlen, "the job is %zu bytes: at most %u are allowed", len, TJ_MAX_JOB_BYTES);
	json_t *root = wire_load(buf, len, err, errlen);
	if (!root)
		return -1;
	job->doc.json = root;
	if (tj_decode_job(job, root, err, errlen) < 0) {
		testjob_free(job);
		return -1;
	}
	return 0;
}

void testjob_free(struct testjob *job)
{
	ward_request_doc_free(&job->doc); /* command is doc.argv */
	memset(job, 0, sizeof(*job));
}

/* ---------------------------------------------------------- the report */

/* Written by jsonw, as results are: stdout, stderr and the tests' names
 * and messages are the program's. */
static void emit_report(struct jw *w, const void *arg)
{
	const struct testjob_report *r = arg;
	jw_object_begin(w);
	const struct {
		const char *key;
		unsigned v;
	} counts[] = {{"total", r->total},
	              {"passed", r->passed},
	              {"failed", r->failed},
	              {"errored", r->errored},
	              {"skipped", r->skipped}};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		jw_member_int(w, counts[i].key, counts[i].v);
	/* Percent with one decimal; null when nothing ran, so that "no tests"
	 * can never be read as 0 % or 100 %.  %.4g is enough for 0.0-100.0
	 * with one decimal and prints 66.7, not 66.700000000000003. */
	jw_key(w, "pass_rate");
	if (r->total)
		jw_real(w, round(r->passed * 1000.0 / r->total) / 10.0, 4);
	else
		jw_null(w);
	jw_member_bool(w, "timed_out", r->timed_out);
	jw_member_int(w, "exit_code", r->exit_code);
	jw_member_string(w, "stdout", r->out.data, r->out.len);
	jw_member_string(w, "stderr", r->err.data, r->err.len);
	jw_member_string(w, "error", r->error, strnlen(r->error, sizeof(r->error)));
	jw_key(w, "details");
	jw_array_begin(w);
	for (size_t i = 0; i < r->ndetails; i++) {
		const struct testjob_detail *t = &r->details[i];
		jw_element(w);
		jw_object_begin(w);
		jw_key(w, "name");
		jw_cstring(w, t->name);
		jw_key(w, "outcome");
		jw_cstring(w, testjob_outcome_name(t->outcome));
		jw_key(w, "message");
		jw_cstring(w, t->message);
		jw_key(w, "duration_ms");
		jw_int(w, (int64_t)t->duration_ms);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}

char *testjob_report_to_json(const struct testjob_report *r)
{
	return jw_build(emit_report, r, NULL);
}

/* ------------------------------------------------ the harness's report lines */

static int tj_outcome_parse(const char *s, enum testjob_outcome *o)
{
	static const struct {
		const char *name;
		enum testjob_outcome o;
	} names[] = {{"passed", TJ_PASSED}, {"failed", TJ_FAILED}, {"errored", TJ_ERRORED}, {"skipped", TJ_SKIPPED}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0) {
			*o = names[i].o;
			return 0;
		}
	return -1;
}

/* One harness line: 0, 1 for "end", or -1 with a message. */
static int tj_harness_line(json_t *o, size_t lineno, struct testjob_report *rep, char **pending, char *harness_err,
                           size_t helen, bool *hello, char *err, size_t errlen)
{
	const char *ev;
	json_t *v;
	if (!json_is_object(o) || wire_cstr(wire_member(o, "event"), "event", &ev, err, errlen) < 0)
		return base_errf(err, errlen, "report line %zu is not a harness event", lineno);
	/* The harness numbers its lines from 0: a line written into the pipe
	 * by anything else breaks the sequence. */
	v = wire_member(o, "seq");
	if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)(lineno - 1))
		return base_errf(err, errlen,
		                 "report line %zu is out of sequence: something other than the harness "
		                 "wrote to the report channel",
		                 lineno);
	if (!*hello) {
		json_t *ver = wire_member(o, "version");
		if (strcmp(ev, "hello") != 0 || !json_is_integer(ver) || json_integer_value(ver) != 1)
			return base_errf(err, errlen, "the report does not start with the harness's hello line");
		*hello = true;
		return 0;
	}
	if (strcmp(ev, "start") == 0) {
		const char *name;
		if (wire_cstr(wire_member(o, "name"), "name", &name, err, errlen) < 0)
			return base_errf(err, errlen, "report line %zu: a start event without a name", lineno);
		free(*pending);
		*pending = strdup(name);
		if (!*pending)
			return base_errf(err, errlen, "out of memory");
		return 0;
	}
	if (strcmp(ev, "test") == 0) {
		const char *name, *outcome, *msg = "";
		enum testjob_outcome oc;
		uint64_t ms = 0;
		if (!json_is_string(v = wire_member(o, "name")))
			return base_errf(err, errlen, "report line %zu: a test without a name", lineno);
		name = json_string_value(v);
		size_t namelen = json_string_length(v);
		if (wire_cstr(wire_member(o, "outcome"), "outcome", &outcome, err, errlen) < 0 ||
		    tj_outcome_parse(outcome, &oc) < 0)
			return base_errf(err, errlen,
			                 "report line %zu: outcome must be passed, failed, errored or skipped", lineno);
		size_t msglen = 0;
		if ((v = wire_member(o, "message"))) {
			if (!json_is_string(v))
				return base_errf(err, errlen, "report line %zu: message must be a string", lineno);
			msg = json_string_value(v);
			msglen = json_string_length(v);
		}
		if ((v = wire_member(o, "duration_ms")) &&
		    wire_uint(v, "duration_ms", UINT64_MAX / 2, &ms, err, errlen) < 0)
			return -1;
		if (testjob_report_add(rep, name, namelen, oc, msg, msglen, ms) < 0)
			return base_errf(err, errlen, "out of memory");
		free(*pending);
		*pending = NULL;
		return 0;
	}
	if (strcmp(ev, "done") == 0) { /* what started finished without being a test (an import) */
		free(*pending);
		*pending = NULL;
		return 0;
	}
	if (strcmp(ev, "error") == 0) {
		const char *msg = "(no message)";
		if ((v = wire_member(o, "message")) && json_is_string(v))
			msg = json_string_value(v);
		if (!harness_err[0])
			snprintf(harness_err, helen, "%s", msg);
		return 0;
	}
	if (strcmp(ev, "end") == 0)
		return 1;
	if (strcmp(ev, "hello") == 0)
		return base_errf(err, errlen, "report line %zu: a second hello line", lineno);
	return 0; /* an event from a newer harness: ignored */
}

/* What the report's lines have said so far. */
struct harness_state {
	char *pending;   /* a test that started and has no outcome yet */
	char error[400]; /* the harness's own "error" event */
	bool hello, ended;
};

/* Every line of buf, in order, into rep and h: 0, or -1 with a message. */
static int tj_harness_lines(const char *buf, size_t len, bool timed_out, struct testjob_report *rep,
                            struct harness_state *h, char *err, size_t errlen)
{
	size_t lineno = 0;
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		lineno++;
		/* Nothing may follow the end: whatever does was not written by
		 * the harness. */
		if (h->ended)
			return base_errf(err, errlen, "the report has data after its end line (line %zu)", lineno);
		json_error_t je;
		json_t *o = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (!o) {
			/* A line cut short by the time limit's kill is expected. */
			if (!nl && timed_out)
				break;
			return base_errf(err, errlen, "report line %zu is not JSON: %s", lineno, je.text);
		}
		int r = tj_harness_line(o, lineno, rep, &h->pending, h->error, sizeof(h->error), &h->hello, err,
		                        errlen);
		json_decref(o);
		if (r < 0)
			return -1;
		if (r == 1) {
			if (!nl) /* the harness always ends its lines */
				return base_errf(err, errlen, "the report's end line is cut short");
			h->ended = true;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* Is what the lines said an honest report?  0, or -1 with why not. */
static int tj_harness_verdict(const struct harness_state *h, bool timed_out, struct testjob_report *rep, char *err,
                              size_t errlen)
{
	if (!h->hello)
		return base_errf(err, errlen, "the report is empty: the harness did not start");
	if (h->error[0])
		return base_errf(err, errlen, "%s", h->error);
	if (!h->ended && !timed_out)
		return base_errf(err, errlen,
		                 "the report ended early: the test process exited before the harness "
		                 "finished (a test called os._exit(), or the process was killed)%s%s",
		                 h->pending ? "; last test started: " : "", h->pending ? h->pending : "");
	if (!h->ended) {
		/* Timed out: the test that was running did not pass, and if none
		 * was, something after the tests hung — either way the run is
		 * not a pass. */
		const char *name = h->pending ? h->pending : "(outside any test)";
		const char *msg = "the time limit stopped this test before it finished";
		if (testjob_report_add(rep, name, strlen(name), TJ_ERRORED, msg, strlen(msg), 0) < 0)
			return base_errf(err, errlen, "out of memory");
	}
	if (rep->total == 0)
		return base_errf(err, errlen, "no tests ran: the test files define no tests");
	return 0;
}

int testjob_parse_harness(const char *buf, size_t len, bool timed_out, struct testjob_report *rep, char *err,
                          size_t errlen)
{
	struct harness_state h = {0};
	int rc = tj_harness_lines(buf, len, timed_out, rep, &h, err, errlen);
	if (rc == 0)
		rc = tj_harness_verdict(&h, timed_out, rep, err, errlen);
	free(h.pending);
	if (rc < 0)
		testjob_report_clear_tests(rep);
	return rc;
}
