/* testjob.c — test jobs (SPEC §6): a job becomes one ward_request, whose
 * report comes back over the report channel and becomes the job's report.
 *
 * Runners:
 *  - python: the embedded harness (src/testjob/ward_harness.py) is run as
 *    `python3 -s -B -c HARNESS FRAMEWORK TESTFILE...` and writes one JSON
 *    line per event to fd 3 (parsed in testjob_json.c, testjob_parse_harness).
 *  - junit: the job's command runs under a tiny /bin/sh wrapper with fd 3
 *    closed; when it has exited, the wrapper copies $WARD_REPORT to fd 3,
 *    and the XML is parsed here with libxml2.
 *
 * Also `ward test` and POST /test's handler (declared in testjob.h).  JSON
 * is testjob_json.c's; this file never parses or writes it.
 *
 * Counts never come from stdout, and a job that leaves no report, an empty
 * one or one that does not parse has `error` set and total 0: never a pass.
 * The sandbox's /work is an ephemeral tmpfs, so there is no host workdir to
 * leave behind.
 */
#include "testjob/testjob.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "core/egress.h"
#include "core/request.h"
#include "harness_py.h" /* generated: static const unsigned char ward_harness_py[], NUL-terminated */

const char *testjob_harness_source(void)
{
	return (const char *)ward_harness_py;
}

const char *testjob_outcome_name(enum testjob_outcome o)
{
	switch (o) {
	case TJ_PASSED:
		return "passed";
	case TJ_FAILED:
		return "failed";
	case TJ_ERRORED:
		return "errored";
	case TJ_SKIPPED:
		return "skipped";
	}
	return "errored";
}

/* ---------------------------------------------------------------- report */

int testjob_report_add(struct testjob_report *rep, const char *name, size_t namelen, enum testjob_outcome o,
                       const char *msg, size_t msglen, uint64_t duration_ms)
{
	if (rep->ndetails == rep->cap) {
		size_t cap = rep->cap ? rep->cap * 2 : 16;
		struct testjob_detail *d = realloc(rep->details, cap * sizeof(*d));
		if (!d)
			return -1;
		rep->details = d;
		rep->cap = cap;
	}
	struct testjob_detail *t = &rep->details[rep->ndetails];
	t->name = strndup(name ? name : "", name ? namelen : 0);
	t->message = strndup(msg ? msg : "", msg ? msglen : 0);
	if (!t->name || !t->message) {
		free(t->name);
		free(t->message);
		return -1;
	}
	t->outcome = o;
	t->duration_ms = duration_ms;
	rep->ndetails++;
	rep->total++;
	switch (o) {
	case TJ_PASSED:
		rep->passed++;
		break;
	case TJ_FAILED:
		rep->failed++;
		break;
	case TJ_ERRORED:
		rep->errored++;
		break;
	case TJ_SKIPPED:
		rep->skipped++;
		break;
	}
	return 0;
}

void testjob_report_clear_tests(struct testjob_report *rep)
{
	for (size_t i = 0; i < rep->ndetails; i++) {
		free(rep->details[i].name);
		free(rep->details[i].message);
	}
	free(rep->details);
	rep->details = NULL;
	rep->ndetails = rep->cap = 0;
	rep->total = rep->passed = rep->failed = rep->errored = rep->skipped = 0;
}

void testjob_report_free(struct testjob_report *rep)
{
	testjob_report_clear_tests(rep);
	free(rep->out.data);
	free(rep->err.data);
	memset(rep, 0, sizeof(*rep));
}

static void report_error(struct testjob_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_error(struct testjob_report *rep, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rep->error, sizeof(rep->error), fmt, ap);
	va_end(ap);
	testjob_report_clear_tests(rep);
}

/* ----------------------------------------------------------------- junit */

/* libxml2's global state is initialised once per process, whichever
 * thread parses first. */
static pthread_once_t xml_once = PTHREAD_ONCE_INIT;
static void xml_init(void)
{
	xmlInitParser();
}

/* A DOCTYPE is where entities are declared, and JUnit XML never needs one:
 * stop the parse the moment one starts, before any declaration in it is
 * read, so a billion-laughs document costs nothing. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *ext_id, const xmlChar *sys_id)
{
	xmlParserCtxtPtr ctxt = ctx;
	ctxt->_private = (void *)refuse_doctype; /* remember why the parse stopped */
	xmlStopParser(ctxt);
}

static bool is_elem(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, (const xmlChar *)name) == 0;
}

/* "message" attribute, then the element's text, joined by a newline. */
static char *junit_message(xmlNode *n)
{
	xmlChar *attr = xmlGetProp(n, (const xmlChar *)"message");
	xmlChar *text = xmlNodeGetContent(n);
	const char *a = attr ? (const char *)attr : "", *t = text ? (const char *)text : "";
	while (*t == '\n' || *t == ' ' || *t == '\t' || *t == '\r')
		t++;
	size_t la = strlen(a), lt = strlen(t);
	char *m = malloc(la + lt + 2);
	if (m) {
		memcpy(m, a, la);
		size_t at = la;
		if (la && lt)
			m[at++] = '\n';
		memcpy(m + at, t, lt);
		m[at + lt] = '\0';
	}
	xmlFree(attr);
	xmlFree(text);
	return m;
}

static int junit_testcase(xmlNode *tc, struct testjob_report *rep)
{
	enum testjob_outcome o = TJ_PASSED;
	xmlNode *why = NULL;
	/* error > failure > skipped: the worst thing a case reports wins */
	for (xmlNode *c = tc->children; c; c = c->next) {
		if (is_elem(c, "error")) {
			o = TJ_ERRORED;
			why = c;
		} else if (is_elem(c, "failure") && o != TJ_ERRORED) {
			o = TJ_FAILED;
			why = c;
		} else if (is_elem(c, "skipped") && o == TJ_PASSED) {
			o = TJ_SKIPPED;
			why = c;
		}
	}
	xmlChar *cls = xmlGetProp(tc, (const xmlChar *)"classname");
	xmlChar *name = xmlGetProp(tc, (const xmlChar *)"name");
	xmlChar *time = xmlGetProp(tc, (const xmlChar *)"time");
	char *msg = why ? junit_message(why) : strdup("");
	char *full = NULL;
	int rc = -1;
	const char *c = cls ? (const char *)cls : "", *nm = name ? (const char *)name : "(unnamed)";
	size_t lc = strlen(c), ln = strlen(nm);
	if (!msg || !(full = malloc(lc + ln + 2)))
		goto out;
	memcpy(full, c, lc);
	if (lc)
		full[lc++] = '.';
	memcpy(full + lc, nm, ln + 1);
	double secs = time ? strtod((const char *)time, NULL) : 0;
	uint64_t ms = 0;
	if (isfinite(secs) && secs > 0)
		ms = secs > 1e12 ? (uint64_t)1e15 : (uint64_t)llround(secs * 1000.0);
	rc = testjob_report_add(rep, full, strlen(full), o, msg, strlen(msg), ms);
out:
	free(full);
	free(msg);
	xmlFree(cls);
	xmlFree(name);
	xmlFree(time);
	return rc;
}

/* Every <testcase>, wherever it is nested (suites in suites).  libxml2
 * bounds the depth (256 without XML_PARSE_HUGE), so recursion is bounded. */
static int junit_walk(xmlNode *n, struct testjob_report *rep)
{
	for (; n; n = n->next) {
		if (is_elem(n, "testcase")) {
			if (junit_testcase(n, rep) < 0)
				return -1;
		} else if (n->type == XML_ELEMENT_NODE && junit_walk(n->children, rep) < 0)
			return -1;
	}
	return 0;
}

int testjob_parse_junit(const char *xml, size_t len, struct testjob_report *rep, char *err, size_t errlen)
{
	pthread_once(&xml_once, xml_init);
	if (len == 0) {
		snprintf(err, errlen, "the JUnit report is empty");
		return -1;
	}
	if (len > INT_MAX) {
		snprintf(err, errlen, "the JUnit report is too large");
		return -1;
	}
	xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
	if (!ctxt) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ctxt->sax->internalSubset = refuse_doctype;
	/* NONET: never fetch anything; no NOENT, no DTDLOAD, no HUGE: entities
	 * are never substituted and libxml2's own size limits stay on. */
	xmlDocPtr doc =
		xmlCtxtReadMemory(ctxt, xml, (int)len, "junit.xml", NULL,
	                          XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
	int rc = -1;
	if (ctxt->_private == (void *)refuse_doctype) {
		snprintf(err, errlen, "the JUnit report has a DOCTYPE, which ward refuses (no entities, no DTDs)");
		goto out;
	}
	if (!doc || !ctxt->wellFormed) {
		const xmlError *e = xmlCtxtGetLastError(ctxt);
		snprintf(err, errlen, "the JUnit report is not well-formed XML%s%s", e && e->message ? ": " : "",
		         e && e->message ? e->message : "");
		/* libxml2's messages end with a newline */
		size_t l = strlen(err);
		if (l && err[l - 1] == '\n')
			err[l - 1] = '\0';
		goto out;
	}
	xmlNode *root = xmlDocGetRootElement(doc);
	if (!root || (!is_elem(root, "testsuites") && !is_elem(root, "testsuite"))) {
		snprintf(err, errlen,
		         "the report is not JUnit XML: its root element is <%s>, not <testsuites> or <testsuite>",
		         root ? (const char *)root->name : "(none)");
		goto out;
	}
	if (is_elem(root, "testsuite") ? junit_walk(root->children, rep) < 0 : junit_walk(root->children, rep) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (rep->total == 0) {
		snprintf(err, errlen, "the JUnit report lists no test cases");
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		testjob_report_clear_tests(rep);
	xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
	return rc;
}

/* ------------------------------------------------------------------- run */

/* The junit runner's wrapper: the command runs without fd 3; afterwards
 * its report file is copied to fd 3.  The command could still reach the
 * wrapper's fd 3 through /proc, but it writes the report anyway: see
 * docs/testjobs.md. */
static const char junit_wrapper[] = "r=" TJ_JUNIT_REPORT "\n"
				    "mkdir -p \"${r%/*}\" || exit 125\n"
				    "\"$@\" 3>&-\n"
				    "rc=$?\n"
				    "if [ -f \"$r\" ] && [ ! -L \"$r\" ]; then cat -- \"$r\" >&3; fi\n"
				    "exit $rc\n";

/* The deterministic environment of a test job; the job's env overrides
 * any of it. */
static const char *const default_env[] = {
	"TZ=UTC",
	"PYTHONHASHSEED=0",
	"LANG=C.UTF-8",
	"PYTHONDONTWRITEBYTECODE=1",
};

static bool env_has(char *const *env, const char *kv)
{
	size_t k = strcspn(kv, "=");
	for (; env && *env; env++)
		if (strncmp(*env, kv, k) == 0 && (*env)[k] == '=')
			return true;
	return false;
}

/* A python test module: test*.py or *_test.py (unittest's and pytest's
 * default patterns together). */
static bool is_test_module(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t l = strlen(base);
	if (l < 4 || strcmp(base + l - 3, ".py") != 0)
		return false;
	return strncmp(base, "test", 4) == 0 || (l >= 8 && strcmp(base + l - 8, "_test.py") == 0);
}

/* Build argv and env for the job.  Everything is borrowed from job or the
 * static tables except the two arrays, which the caller frees. */
static int build_command(const struct testjob *job, char ***argvp, char ***envp, char *err, size_t errlen)
{
	const struct ward_request *req = &job->doc.req;
	size_t nenv = 0, nargv;
	for (char *const *e = req->env; e && *e; e++)
		nenv++;
	char **env = calloc(nenv + 8, sizeof(char *));
	nargv = job->runner == TJ_RUNNER_JUNIT ? 5 : 6 + req->nfiles;
	for (char **c = job->command; c && *c; c++)
		nargv++;
	char **argv = calloc(nargv + 1, sizeof(char *));
	if (!env || !argv) {
		free(env);
		free(argv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < sizeof(default_env) / sizeof(default_env[0]); i++)
		if (!env_has(req->env, default_env[i]))
			env[n++] = (char *)default_env[i];
	for (char *const *e = req->env; e && *e; e++)
		if (job->runner != TJ_RUNNER_JUNIT || strncmp(*e, "WARD_REPORT=", 12) != 0)
			env[n++] = *e;
	if (job->runner == TJ_RUNNER_JUNIT)
		env[n++] = "WARD_REPORT=" TJ_JUNIT_REPORT;

	size_t a = 0;
	if (job->runner == TJ_RUNNER_JUNIT) {
		argv[a++] = "/bin/sh";
		argv[a++] = "-c";
		argv[a++] = (char *)junit_wrapper;
		argv[a++] = "ward-junit";
		for (char **c = job->command; c && *c; c++)
			argv[a++] = *c;
	} else {
		static const char *const fw[] = {
			[TJ_FW_AUTO] = "auto", [TJ_FW_PYTEST] = "pytest", [TJ_FW_UNITTEST] = "unittest"};
		argv[a++] = "python3";
		argv[a++] = "-s"; /* no user site-packages */
		argv[a++] = "-B"; /* no .pyc files */
		argv[a++] = "-c";
		argv[a++] = (char *)testjob_harness_source();
		argv[a++] = (char *)fw[job->framework];
		size_t first = a;
		for (size_t i = job->nsource; i < req->nfiles; i++)
			if (is_test_module(req->files[i].path))
				argv[a++] = (char *)req->files[i].path;
		/* No file looks like a test module: run every python test file. */
		if (a == first)
			for (size_t i = job->nsource; i < req->nfiles; i++) {
				size_t l = strlen(req->files[i].path);
				if (l > 3 && strcmp(req->files[i].path + l - 3, ".py") == 0)
					argv[a++] = (char *)req->files[i].path;
			}
	}
	*argvp = argv;
	*envp = env;
	return 0;
}

static void steal_stream(struct ward_stream *to, struct ward_stream *from)
{
	*to = *from;
	memset(from, 0, sizeof(*from));
}

int testjob_run(const struct testjob *job, struct testjob_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	char **argv = NULL, **env = NULL, err[512];
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	int rc = TJ_FAILED_RC;

	if (build_command(job, &argv, &env, err, sizeof(err)) < 0) {
		report_error(rep, "%s", err);
		return TJ_FAILED_RC;
	}
	struct ward_request req = job->doc.req;
	req.argv = argv;
	req.shell = NULL;
	req.env = env;
	req.capture = true;
	req.stdin_set = false;
	req.stdin_fd = -1;
	req.report_channel = true;
	req.report_limit = TJ_REPORT_LIMIT;

	if (ward_request_validate(&req, err, sizeof(err)) < 0) {
		report_error(rep, "job refused: %.480s", err);
		rc = TJ_REFUSED_RC;
		goto out;
	}
	if (job->observer && job->observer->started)
		job->observer->started(job->observer->arg, &req);
	int run = ward_run_pooled(job->pool, &req, &res);
	if (job->observer && job->observer->ended)
		job->observer->ended(job->observer->arg, &res);
	rep->timed_out = res.timed_out;
	rep->exit_code = res.exit_code;
	steal_stream(&rep->out, &res.out);
	steal_stream(&rep->err, &res.err);
	if (run < 0 || res.status == WARD_ST_ERROR) {
		report_error(rep, "ward could not run the job: %.480s", res.error[0] ? res.error : "unknown error");
		goto out;
	}
	rc = 0;
	if (res.report_truncated) {
		report_error(rep, "the report is larger than %u bytes: ward read no counts from it", TJ_REPORT_LIMIT);
		goto out;
	}
	if (!res.report || res.report_len == 0) {
		const char *why =
			res.timed_out    ? "the time limit stopped the run before the report was written"
			: res.oom_killed ? "the memory limit killed the run before the report was written"
			: res.exit_code == WARD_EXIT_NOTFOUND
				? (job->runner == TJ_RUNNER_PYTHON ? "python3 was not found in the sandbox"
		                                                   : "the command was not found in the sandbox")
			: job->runner == TJ_RUNNER_JUNIT
				? "the command left no report at $WARD_REPORT (" TJ_JUNIT_REPORT ")"
				: "the harness wrote nothing (it did not start, or was killed)";
		report_error(rep, "no report: %s", why);
		goto out;
	}
	if (job->runner == TJ_RUNNER_PYTHON) {
		if (testjob_parse_harness(res.report, res.report_len, res.timed_out, rep, err, sizeof(err)) < 0)
			report_error(rep, "%s", err);
	} else {
		if (testjob_parse_junit(res.report, res.report_len, rep, err, sizeof(err)) < 0)
			report_error(rep, "%s", err);
		else if (res.timed_out) {
			/* The command finished its report, then hung: still not a pass. */
			const char *msg = "the time limit stopped the command after it wrote its report";
			if (testjob_report_add(rep, "(timed out)", 11, TJ_ERRORED, msg, strlen(msg), 0) < 0)
				report_error(rep, "out of memory");
		}
	}
out:
	ward_result_free(&res);
	free(argv);
	free(env);
	return rc;
}

/* ------------------------------------------------------------ front ends */

/* Read all of fd, up to max bytes (more is an error). */
static char *read_all(int fd, size_t max, size_t *lenp, char *err, size_t errlen)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				snprintf(err, errlen, "the job is larger than %zu bytes", max);
				free(buf);
				return NULL;
			}
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				snprintf(err, errlen, "out of memory");
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "reading the job: %s", strerror(errno));
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max) {
		snprintf(err, errlen, "the job is larger than %zu bytes", max);
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

static bool report_passed(const struct testjob_report *r)
{
	return !r->error[0] && !r->timed_out && r->total > 0 && r->passed > 0 && r->failed == 0 && r->errored == 0;
}

/* A report that only says why the job was refused. */
static char *refusal_json(const char *msg)
{
	struct testjob_report rep;
	memset(&rep, 0, sizeof(rep));
	snprintf(rep.error, sizeof(rep.error), "job refused: %.480s", msg);
	return testjob_report_to_json(&rep);
}

static const char test_usage[] = "usage: ward test JOB.json   (or - to read the job from stdin)\n"
				 "Runs a test job (SPEC §6) in a fresh sandbox and prints its report as JSON.\n"
				 "Exit status: 0 when tests ran and none failed or errored, 1 when some failed,\n"
				 "errored or timed out or no honest report came back, 125 when the job was\n"
				 "refused or ward itself failed.\n";

int ward_test_main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(test_usage, stdout);
		return 0;
	}
	if (argc != 2) {
		fputs(test_usage, stderr);
		return WARD_EXIT_FAILED;
	}
	char err[512];
	size_t len = 0;
	int fd = 0;
	if (strcmp(argv[1], "-") != 0) {
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "ward test: cannot open %s: %s\n", argv[1], strerror(errno));
			return WARD_EXIT_FAILED;
		}
	}
	char *buf = read_all(fd, TJ_MAX_JOB_BYTES, &len, err, sizeof(err));
	if (fd != 0)
		close(fd);
	if (!buf) {
		fprintf(stderr, "ward test: %s\n", err);
		return WARD_EXIT_FAILED;
	}

	struct testjob job;
	int code;
	if (testjob_from_json(buf, len, &job, err, sizeof(err)) < 0) {
		free(buf);
		char *out = refusal_json(err);
		if (out)
			puts(out);
		free(out);
		fprintf(stderr, "ward test: job refused: %s\n", err);
		return WARD_EXIT_FAILED;
	}
	free(buf);
	struct testjob_report rep;
	int rc = testjob_run(&job, &rep);
	char *out = testjob_report_to_json(&rep);
	if (!out) {
		fprintf(stderr, "ward test: out of memory\n");
		code = WARD_EXIT_FAILED;
	} else {
		puts(out);
		code = rc != 0 ? WARD_EXIT_FAILED : report_passed(&rep) ? 0 : 1;
	}
	if (rc != 0)
		fprintf(stderr, "ward test: %s\n", rep.error);
	free(out);
	testjob_report_free(&rep);
	testjob_free(&job);
	fflush(stdout);
	return code;
}

int ward_testjob_http(struct ward_pool *pool, const struct ward_limits *maxima, const struct egress_policy *egress,
                      const char *body, size_t len, char **report_json)
{
	return ward_testjob_http_observed(pool, maxima, egress, body, len, NULL, report_json);
}

int ward_testjob_http_observed(struct ward_pool *pool, const struct ward_limits *maxima,
                               const struct egress_policy *egress, const char *body, size_t len,
                               const struct testjob_observer *obs, char **report_json)
{
	struct testjob job;
	char err[512];
	*report_json = NULL;
	struct ward_limits dflt;
	if (maxima)
		ward_defaults_under(maxima, &dflt);
	if (testjob_from_json_under(body, len, maxima ? &dflt : NULL, &job, err, sizeof(err)) < 0) {
		*report_json = refusal_json(err);
		return 400;
	}
	/* the runner's maxima, as for /exec (SPEC §10) */
	if ((maxima && ward_limits_within(&job.doc.req.limits, maxima, err, sizeof(err)) < 0) ||
	    (egress && egress_policy_apply(egress, &job.doc.req, err, sizeof(err)) < 0)) {
		testjob_free(&job);
		*report_json = refusal_json(err);
		return 400;
	}
	job.pool = pool;
	job.observer = obs;
	if (job.doc.req.image_name) { /* SPEC §14: one of the images the runner offers */
		const struct ward_image_root *root =
			obs && obs->image ? obs->image(obs->arg, job.doc.req.image_name, err, sizeof(err)) : NULL;
		if (!root) {
			if (!obs || !obs->image)
				snprintf(err, sizeof(err), "image: this runner offers no image");
			testjob_free(&job);
			*report_json = refusal_json(err);
			return 400;
		}
		job.doc.req.image = root;
	}
	struct testjob_report rep;
	int rc = testjob_run(&job, &rep);
	*report_json = testjob_report_to_json(&rep);
	testjob_report_free(&rep);
	testjob_free(&job);
	if (!*report_json)
		return 500;
	return rc == TJ_REFUSED_RC ? 400 : rc != 0 ? 503 : 200;
}
