/* test_testjob.c — test jobs without a sandbox: job decoding (every refused
 * path form), the harness's report lines, JUnit XML (billion laughs and
 * XXE included) and the report JSON.  Called from tests/unit/main.c;
 * prints PASS:/FAIL: lines. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pathguard.h"
#include "testjob/testjob.h"
#include "unit.h"

void test_testjob(void);

/* Like unit.h's CHECK, with a group prefix. */
#define T(name, cond)                                                                   \
	do {                                                                            \
		if (cond)                                                               \
			printf("PASS: testjob: %s\n", name);                               \
		else {                                                                  \
			printf("FAIL: testjob: %s: %s is false\n", name, #cond);            \
			unit_failures++;                                                \
		}                                                                       \
	} while (0)

static char err[512];

static int decode(const char *json)
{
	struct testjob job;
	err[0] = '\0';
	int rc = testjob_from_json(json, strlen(json), &job, err, sizeof(err));
	if (rc == 0)
		testjob_free(&job);
	return rc;
}

#define JOB(files) "{\"source_files\":[" files "],\"test_files\":[{\"path\":\"test_x.py\",\"content\":\"\"}]}"

static void check_decode(void)
{
	struct testjob job;
	const char *ok = "{\"source_files\":[{\"path\":\"sol.py\",\"content\":\"x=1\\n\"},"
			 "{\"path\":\"pkg/data.bin\",\"content\":\"AAEC\",\"encoding\":\"base64\",\"mode\":493}],"
			 "\"test_files\":[{\"path\":\"tests/test_sol.py\",\"content\":\"\"}],"
			 "\"limits\":{\"timeout_s\":3,\"memory_mb\":256},\"env\":{\"A\":\"b\"}}";
	int rc = testjob_from_json(ok, strlen(ok), &job, err, sizeof(err));
	T("valid job decodes", rc == 0);
	if (rc == 0) {
		T("files in order", job.doc.req.nfiles == 3 && job.nsource == 2 &&
					    strcmp(job.doc.req.files[2].path, "tests/test_sol.py") == 0);
		T("base64 content", job.doc.req.files[1].len == 3 && job.doc.req.files[1].data[2] == 2);
		T("mode", job.doc.req.files[1].mode == 0755);
		T("limits", job.doc.req.limits.timeout_s == 3 && job.doc.req.limits.memory_mb == 256);
		T("runner python by default", job.runner == TJ_RUNNER_PYTHON && job.framework == TJ_FW_AUTO);
		T("env", job.doc.req.env && strcmp(job.doc.req.env[0], "A=b") == 0);
		testjob_free(&job);
	}

	T("empty path refused", decode(JOB("{\"path\":\"\",\"content\":\"\"}")) < 0 && strstr(err, "empty"));
	T("absolute path refused", decode(JOB("{\"path\":\"/etc/x\"}")) < 0 && strstr(err, "absolute"));
	T("dotdot refused", decode(JOB("{\"path\":\"../x\"}")) < 0 && strstr(err, ".."));
	T("dotdot deep refused", decode(JOB("{\"path\":\"a/b/../../../x\"}")) < 0 && strstr(err, ".."));
	T("NUL refused", decode(JOB("{\"path\":\"a\\u0000b\"}")) < 0 && strstr(err, "NUL"));
	T("double slash refused", decode(JOB("{\"path\":\"a//b\"}")) < 0 && strstr(err, "empty component"));
	T("path not a string refused", decode(JOB("{\"path\":7}")) < 0);
	T("path missing refused", decode(JOB("{\"content\":\"x\"}")) < 0);
	char *longjob = malloc(10000);
	char longpath[5000];
	memset(longpath, 'a', sizeof(longpath) - 1);
	for (size_t i = 100; i < sizeof(longpath) - 1; i += 100)
		longpath[i] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	snprintf(longjob, 10000, JOB("{\"path\":\"%s\"}"), longpath);
	T("too long refused", decode(longjob) < 0 && strstr(err, "PATH_MAX"));
	free(longjob);
	T("duplicate refused", decode(JOB("{\"path\":\"a.py\"},{\"path\":\"a.py\"}")) < 0 && strstr(err, "twice"));
	T("duplicate across lists refused", decode(JOB("{\"path\":\"test_x.py\"}")) < 0 && strstr(err, "twice"));
	T("file then dir refused", decode(JOB("{\"path\":\"a\"},{\"path\":\"a/b\"}")) < 0 && strstr(err, "directory"));
	T("dir then file refused", decode(JOB("{\"path\":\"a/b/c\"},{\"path\":\"a/b\"}")) < 0 && strstr(err, "directory"));
	T("sibling prefix accepted", decode(JOB("{\"path\":\"a\"},{\"path\":\"ab/c\"},{\"path\":\"a-b\"}")) == 0);
	T("mode out of range refused", decode(JOB("{\"path\":\"a\",\"mode\":2541}")) < 0);
	T("bad base64 refused", decode(JOB("{\"path\":\"a\",\"content\":\"!!\",\"encoding\":\"base64\"}")) < 0);
	T("malformed JSON refused", decode("{\"source_files\":") < 0 && strstr(err, "malformed"));
	T("not an object refused", decode("[1]") < 0);
	T("duplicate keys refused", decode("{\"runner\":\"python\",\"runner\":\"junit\"}") < 0);
	T("bad runner refused", decode("{\"runner\":\"mocha\",\"test_files\":[{\"path\":\"t.py\"}]}") < 0);
	T("python without tests refused", decode("{\"source_files\":[{\"path\":\"a.py\"}]}") < 0);
	T("python with command refused",
	  decode("{\"command\":[\"x\"],\"test_files\":[{\"path\":\"t.py\"}]}") < 0 && strstr(err, "command"));
	T("junit without command refused", decode("{\"runner\":\"junit\"}") < 0 && strstr(err, "command"));
	T("junit command with NUL refused", decode("{\"runner\":\"junit\",\"command\":[\"a\\u0000b\"]}") < 0);
	T("junit with command accepted", decode("{\"runner\":\"junit\",\"command\":[\"sh\",\"-c\",\"x\"]}") == 0);
	T("bad framework refused", decode("{\"framework\":\"nose\",\"test_files\":[{\"path\":\"t.py\"}]}") < 0);
	T("bad limits refused", decode("{\"limits\":{\"timeout_s\":\"x\"},\"test_files\":[{\"path\":\"t.py\"}]}") < 0);

	/* 1001 files */
	size_t cap = 1001 * 40 + 100, n = 0;
	char *many = malloc(cap);
	n += (size_t)snprintf(many + n, cap - n, "{\"test_files\":[");
	for (int i = 0; i < 1001; i++)
		n += (size_t)snprintf(many + n, cap - n, "%s{\"path\":\"t%d.py\"}", i ? "," : "", i);
	snprintf(many + n, cap - n, "]}");
	T("1001 files refused", decode(many) < 0 && strstr(err, "at most 1000"));
	free(many);

	/* 17 MiB of content in all */
	size_t big = (17u << 20) + 200;
	char *huge = malloc(big);
	n = (size_t)snprintf(huge, big, "{\"test_files\":[{\"path\":\"t.py\",\"content\":\"");
	memset(huge + n, 'x', (17u << 20) - 1000);
	n += (17u << 20) - 1000;
	snprintf(huge + n, big - n, "\"}]}");
	T("17 MiB of files refused", decode(huge) < 0 && strstr(err, "larger than"));
	free(huge);
}

/* Harness lines from events given without "seq" (numbered here in order);
 * an event starting with '!' goes in raw, without seq or newline. */
static int harness(bool timed_out, struct testjob_report *rep, ...)
{
	static char buf[8192];
	size_t n = 0, seq = 0;
	va_list ap;
	va_start(ap, rep);
	for (const char *e; (e = va_arg(ap, const char *));) {
		if (e[0] == '!')
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", e + 1);
		else
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"seq\":%zu,%s\n", seq++, e + 1);
	}
	va_end(ap);
	memset(rep, 0, sizeof(*rep));
	err[0] = '\0';
	return testjob_parse_harness(buf, n, timed_out, rep, err, sizeof(err));
}

#define HELLO "{\"event\":\"hello\",\"version\":1,\"framework\":\"unittest\"}"
#define START(n) "{\"event\":\"start\",\"name\":\"" n "\"}"
#define RES(n, o) "{\"event\":\"test\",\"name\":\"" n "\",\"outcome\":\"" o "\",\"message\":\"m\",\"duration_ms\":3}"
#define TEST(n, o) START(n), RES(n, o)
#define END "{\"event\":\"end\",\"exit\":1}"

static void check_harness(void)
{
	struct testjob_report r;
	T("harness normal", harness(false, &r, HELLO, TEST("a", "passed"), TEST("b", "failed"), TEST("c", "errored"),
				    TEST("d", "skipped"), END, NULL) == 0 &&
				    r.total == 4 && r.passed == 1 && r.failed == 1 && r.errored == 1 && r.skipped == 1 &&
				    r.ndetails == 4 && r.details[0].duration_ms == 3);
	testjob_report_free(&r);
	T("harness empty refused", harness(false, &r, NULL) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("harness garbage refused", harness(false, &r, "!100 passed, 0 failed\nOK\n", NULL) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("harness no hello refused", harness(false, &r, TEST("a", "passed"), END, NULL) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("harness no end refused", harness(false, &r, HELLO, TEST("a", "passed"), NULL) < 0 && r.total == 0 &&
					    strstr(err, "ended early"));
	testjob_report_free(&r);
	T("harness data after end refused",
	  harness(false, &r, HELLO, TEST("a", "failed"), END, TEST("b", "passed"), END, NULL) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("harness second hello refused", harness(false, &r, HELLO, HELLO, TEST("a", "passed"), END, NULL) < 0);
	testjob_report_free(&r);
	T("harness bad outcome refused",
	  harness(false, &r, HELLO, "{\"event\":\"test\",\"name\":\"a\",\"outcome\":\"pass\"}", END, NULL) < 0);
	testjob_report_free(&r);
	T("harness error event", harness(false, &r, HELLO, TEST("a", "passed"), "{\"event\":\"error\",\"message\":\"boom\"}",
					 END, NULL) < 0 && r.total == 0 && strstr(err, "boom"));
	testjob_report_free(&r);
	T("harness zero tests refused", harness(false, &r, HELLO, END, NULL) < 0 && strstr(err, "no tests"));
	testjob_report_free(&r);
	/* A line slipped in by the code under test (no seq, or a guessed one). */
	T("harness injected line refused",
	  harness(false, &r, HELLO, TEST("a", "failed"),
		  "!{\"event\":\"test\",\"name\":\"x\",\"outcome\":\"passed\"}\n", END, NULL) < 0 &&
		  r.total == 0 && strstr(err, "sequence"));
	testjob_report_free(&r);
	T("harness injected line with a guessed seq refused",
	  harness(false, &r, HELLO, START("a"), "!{\"seq\":2,\"event\":\"test\",\"name\":\"a\",\"outcome\":\"passed\"}\n",
		  RES("a", "failed"), END, NULL) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("harness timeout: hung test errored",
	  harness(true, &r, HELLO, TEST("a", "passed"), START("hang"), NULL) == 0 && r.total == 2 && r.passed == 1 &&
		  r.errored == 1 && strcmp(r.details[1].name, "hang") == 0);
	testjob_report_free(&r);
	T("harness timeout between tests not a pass",
	  harness(true, &r, HELLO, TEST("a", "passed"), NULL) == 0 && r.total == 2 && r.errored == 1);
	testjob_report_free(&r);
	T("harness timeout: cut line tolerated",
	  harness(true, &r, HELLO, TEST("a", "passed"), "!{\"event\":\"te", NULL) == 0 && r.passed == 1 && r.errored == 1);
	testjob_report_free(&r);
	T("harness cut line refused without timeout",
	  harness(false, &r, HELLO, TEST("a", "passed"), "!{\"event\":\"te", NULL) < 0);
	testjob_report_free(&r);
}

static int junit(const char *xml, struct testjob_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	err[0] = '\0';
	return testjob_parse_junit(xml, strlen(xml), rep, err, sizeof(err));
}

static void check_junit(void)
{
	struct testjob_report r;
	const char *xml =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites><testsuite name=\"s\" tests=\"99\" failures=\"0\">\n"
		" <testcase classname=\"C\" name=\"ok\" time=\"0.25\"/>\n"
		" <testcase classname=\"C\" name=\"bad\"><failure message=\"expected 1\">trace</failure></testcase>\n"
		" <testcase name=\"skip\"><skipped message=\"later\"/></testcase>\n"
		" <testcase name=\"err\"><error message=\"NPE\"/><failure message=\"f\"/></testcase>\n"
		" <testsuite name=\"inner\"><testcase name=\"nested\"><![CDATA[x]]></testcase></testsuite>\n"
		"</testsuite></testsuites>\n";
	T("junit parses", junit(xml, &r) == 0);
	T("junit counts from testcases, not attributes",
	  r.total == 5 && r.passed == 2 && r.failed == 1 && r.skipped == 1 && r.errored == 1);
	T("junit names", r.ndetails == 5 && strcmp(r.details[0].name, "C.ok") == 0 &&
				 strcmp(r.details[2].name, "skip") == 0);
	T("junit time", r.ndetails && r.details[0].duration_ms == 250);
	T("junit message", r.ndetails > 1 && strcmp(r.details[1].message, "expected 1\ntrace") == 0);
	T("junit error wins", r.ndetails > 3 && r.details[3].outcome == TJ_ERRORED);
	testjob_report_free(&r);

	T("junit testsuite root", junit("<testsuite><testcase name=\"a\"/></testsuite>", &r) == 0 && r.passed == 1);
	testjob_report_free(&r);

	/* billion laughs: must be refused, not expanded, and fast */
	char lol[4096];
	size_t n = (size_t)snprintf(lol, sizeof(lol), "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
	for (int i = 1; i <= 9; i++) {
		n += (size_t)snprintf(lol + n, sizeof(lol) - n, "<!ENTITY lol%d \"", i);
		for (int j = 0; j < 10; j++)
			n += (size_t)snprintf(lol + n, sizeof(lol) - n, "&lol%s;", i == 1 ? "" : (char[]){(char)('0' + i - 1), 0});
		n += (size_t)snprintf(lol + n, sizeof(lol) - n, "\">\n");
	}
	snprintf(lol + n, sizeof(lol) - n, "]>\n<testsuite><testcase name=\"&lol9;\"/></testsuite>\n");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = junit(lol, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	T("junit billion laughs refused", rc < 0 && r.total == 0 && strstr(err, "DOCTYPE"));
	T("junit billion laughs fast", ms < 100);
	testjob_report_free(&r);

	T("junit XXE refused",
	  junit("<?xml version=\"1.0\"?><!DOCTYPE t [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
		"<testsuite><testcase name=\"&x;\"/></testsuite>", &r) < 0 && strstr(err, "DOCTYPE"));
	testjob_report_free(&r);
	T("junit external DTD refused",
	  junit("<!DOCTYPE testsuite SYSTEM \"http://127.0.0.1:1/x.dtd\"><testsuite><testcase name=\"a\"/></testsuite>",
		&r) < 0 && strstr(err, "DOCTYPE"));
	testjob_report_free(&r);
	/* The same DOCTYPE in UTF-16: a byte scan for "<!DOCTYPE" would miss it. */
	const char *u8 = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE t [<!ENTITY a \"b\">]><testsuite><testcase name=\"&a;\"/></testsuite>";
	size_t l8 = strlen(u8);
	char *u16 = malloc(2 * l8 + 2);
	u16[0] = (char)0xff;
	u16[1] = (char)0xfe;
	for (size_t i = 0; i < l8; i++) {
		u16[2 + 2 * i] = u8[i];
		u16[3 + 2 * i] = 0;
	}
	memset(&r, 0, sizeof(r));
	T("junit UTF-16 DOCTYPE refused", testjob_parse_junit(u16, 2 * l8 + 2, &r, err, sizeof(err)) < 0 &&
						  strstr(err, "DOCTYPE"));
	testjob_report_free(&r);
	free(u16);

	T("junit empty refused", junit("", &r) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("junit not XML refused", junit("100 passed, 0 failed", &r) < 0 && strstr(err, "well-formed"));
	testjob_report_free(&r);
	T("junit truncated refused", junit("<testsuite><testcase name=\"a\"/>", &r) < 0 && r.total == 0);
	testjob_report_free(&r);
	T("junit wrong root refused", junit("<html><testcase name=\"a\"/></html>", &r) < 0 && strstr(err, "root"));
	testjob_report_free(&r);
	T("junit no testcases refused", junit("<testsuites><testsuite tests=\"5\"/></testsuites>", &r) < 0 &&
						strstr(err, "no test cases"));
	testjob_report_free(&r);
}

static void check_report_json(void)
{
	struct testjob_report r;
	memset(&r, 0, sizeof(r));
	testjob_report_add(&r, "a", 1, TJ_PASSED, "", 0, 1);
	testjob_report_add(&r, "b", 1, TJ_PASSED, "", 0, 1);
	testjob_report_add(&r, "c", 1, TJ_FAILED, "boom\xff", 5, 2);
	r.exit_code = 1;
	char *s = testjob_report_to_json(&r);
	T("report json", s && strstr(s, "\"total\":3,\"passed\":2,\"failed\":1,\"errored\":0,\"skipped\":0,"
					 "\"pass_rate\":66.7,\"timed_out\":false,\"exit_code\":1,"));
	T("report json details", s && strstr(s, "{\"name\":\"c\",\"outcome\":\"failed\",\"message\":\"boom\xef\xbf\xbd\",\"duration_ms\":2}"));
	free(s);
	testjob_report_free(&r);
	memset(&r, 0, sizeof(r));
	snprintf(r.error, sizeof(r.error), "no report");
	s = testjob_report_to_json(&r);
	T("report json null rate", s && strstr(s, "\"total\":0,") && strstr(s, "\"pass_rate\":null") &&
					   strstr(s, "\"error\":\"no report\"") && strstr(s, "\"details\":[]"));
	free(s);
	memset(&r, 0, sizeof(r));
	testjob_report_add(&r, "a", 1, TJ_PASSED, "", 0, 1);
	s = testjob_report_to_json(&r);
	T("report json 100.0", s && strstr(s, "\"pass_rate\":100.0,"));
	free(s);
	testjob_report_free(&r);
}

/* Mutation fuzzing of every parser a job's bytes reach, from valid seeds:
 * no crash (the ASan build runs this too), and the report invariants hold
 * whatever the input: refused means no counts; accepted means the counts
 * add up to the details. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t mutate(char *buf, size_t len, size_t cap)
{
	int k = 1 + (int)(next_rand() % 4);
	for (int i = 0; i < k; i++) {
		size_t at = len ? next_rand() % len : 0;
		switch (next_rand() % 5) {
		case 0: if (len) buf[at] = (char)next_rand(); break;
		case 1: len = at; break;
		case 2: if (len + 1 < cap) { memmove(buf + at + 1, buf + at, len - at); buf[at] = "<>&\"\\{}[]:,\n\0/."[next_rand() % 16]; len++; } break;
		case 3: if (len) { memmove(buf + at, buf + at + 1, len - at - 1); len--; } break;
		case 4: if (len && len * 2 < cap) { size_t n = next_rand() % (len - at + 1); memmove(buf + len, buf + at, n); len += n; } break;
		}
	}
	return len;
}

static bool invariants(int rc, const struct testjob_report *r)
{
	if (rc < 0)
		return r->total == 0 && r->ndetails == 0;
	return r->total == r->ndetails && r->total == r->passed + r->failed + r->errored + r->skipped && r->total > 0;
}

/* An independent oracle for an accepted path: non-empty, no NUL, every
 * component non-empty and neither "." nor "..", not absolute. */
static bool plain_relative(const char *p, size_t n)
{
	if (n == 0 || memchr(p, '\0', n))
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++)
		if (i == n || p[i] == '/') {
			size_t l = i - start;
			if (l == 0 || (l == 1 && p[start] == '.') || (l == 2 && p[start] == '.' && p[start + 1] == '.'))
				return false;
			start = i + 1;
		}
	return true;
}

static void check_fuzz(void)
{
	static const char harness_seed[] =
		"{\"seq\":0,\"event\":\"hello\",\"version\":1}\n{\"seq\":1,\"event\":\"start\",\"name\":\"a\"}\n"
		"{\"seq\":2,\"event\":\"test\",\"name\":\"a\",\"outcome\":\"failed\",\"message\":\"x\",\"duration_ms\":1}\n"
		"{\"seq\":3,\"event\":\"start\",\"name\":\"b\"}\n{\"seq\":4,\"event\":\"end\",\"exit\":1}\n";
	static const char junit_seed[] =
		"<?xml version=\"1.0\"?><testsuites><testsuite><testcase classname=\"C\" name=\"a\" time=\"1.5\"/>"
		"<testcase name=\"b\"><failure message=\"m\">t</failure></testcase><testcase name=\"c\"><skipped/>"
		"</testcase></testsuite></testsuites>";
	static const char job_seed[] =
		"{\"source_files\":[{\"path\":\"a/b.py\",\"content\":\"x\"},{\"path\":\"c\",\"content\":\"AA==\","
		"\"encoding\":\"base64\",\"mode\":420}],\"test_files\":[{\"path\":\"test_a.py\"}],"
		"\"limits\":{\"timeout_s\":3},\"env\":{\"A\":\"B\"},\"runner\":\"python\"}";
	static char buf[8192];
	int bad_h = 0, bad_j = 0, bad_job = 0, ok_h = 0, ok_j = 0;
	for (int i = 0; i < 3000; i++) {
		struct testjob_report r;
		char e[512];
		size_t n;

		memcpy(buf, harness_seed, sizeof(harness_seed) - 1);
		n = mutate(buf, sizeof(harness_seed) - 1, sizeof(buf));
		memset(&r, 0, sizeof(r));
		int rc = testjob_parse_harness(buf, n, next_rand() & 1, &r, e, sizeof(e));
		bad_h += !invariants(rc, &r);
		ok_h += rc == 0;
		testjob_report_free(&r);

		memcpy(buf, junit_seed, sizeof(junit_seed) - 1);
		n = mutate(buf, sizeof(junit_seed) - 1, sizeof(buf));
		memset(&r, 0, sizeof(r));
		rc = testjob_parse_junit(buf, n, &r, e, sizeof(e));
		bad_j += !invariants(rc, &r);
		ok_j += rc == 0;
		testjob_report_free(&r);

		memcpy(buf, job_seed, sizeof(job_seed) - 1);
		n = mutate(buf, sizeof(job_seed) - 1, sizeof(buf));
		struct testjob job;
		if (testjob_from_json(buf, n, &job, e, sizeof(e)) == 0) {
			for (size_t f = 0; f < job.doc.req.nfiles; f++)
				bad_job += pathguard_check(job.doc.req.files[f].path, strlen(job.doc.req.files[f].path),
							   NULL, 0) != 0;
			testjob_free(&job);
		}
		n = next_rand() % 64;
		for (size_t k = 0; k < n; k++)
			buf[k] = "ab./\0-"[next_rand() % 6];
		if (pathguard_check(buf, n, e, sizeof(e)) == 0)
			bad_job += !plain_relative(buf, n);
	}
	T("fuzz: harness report invariants", bad_h == 0);
	T("fuzz: harness report accepts some mutants", ok_h > 0);
	T("fuzz: junit invariants", bad_j == 0);
	T("fuzz: junit accepts some mutants", ok_j > 0);
	T("fuzz: decoded jobs only hold guarded paths", bad_job == 0);
}

void test_testjob(void)
{
	check_decode();
	check_harness();
	check_junit();
	check_report_json();
	check_fuzz();
}
