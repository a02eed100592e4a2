/* The judge (SPEC §15): compare modes, shell words, argv templates, the
 * language table, the job's decoding against maxima, and ward_judge end to
 * end with C (compile once; AC, WA, RE by signal; CE with no test run). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "judge/judge_json.h"
#include "unit.h"
#include "ward_judge.h"

#define U(s) (const unsigned char *)(s), strlen(s)

static void compare_modes(void)
{
	CHECK("judge: exact equal", ward_judge_compare(WARD_CMP_EXACT, 0, U("3\n"), U("3\n")));
	CHECK("judge: exact sees a trailing newline", !ward_judge_compare(WARD_CMP_EXACT, 0, U("3"), U("3\n")));
	CHECK("judge: lines ignores trailing blanks and empty lines",
	      ward_judge_compare(WARD_CMP_LINES, 0, U("a b  \nc\t\n\n\n"), U("a b\nc")));
	CHECK("judge: lines keeps inner spaces", !ward_judge_compare(WARD_CMP_LINES, 0, U("a  b\n"), U("a b\n")));
	CHECK("judge: lines keeps a leading empty line", !ward_judge_compare(WARD_CMP_LINES, 0, U("\na\n"), U("a\n")));
	CHECK("judge: tokens", ward_judge_compare(WARD_CMP_TOKENS, 0, U(" 1\n2   3 "), U("1 2\n3\n")));
	CHECK("judge: tokens differ", !ward_judge_compare(WARD_CMP_TOKENS, 0, U("1 2"), U("1 2 3")));
	CHECK("judge: float within eps", ward_judge_compare(WARD_CMP_FLOAT, 1e-6, U("0.3333333 x"), U("0.33333334 x")));
	CHECK("judge: float relative", ward_judge_compare(WARD_CMP_FLOAT, 1e-6, U("1000000.5"), U("1000000.0")));
	CHECK("judge: float beyond eps", !ward_judge_compare(WARD_CMP_FLOAT, 1e-6, U("0.334"), U("0.333")));
	CHECK("judge: float: no nan", !ward_judge_compare(WARD_CMP_FLOAT, 1, U("nan"), U("1")));
	CHECK("judge: float: words exact", !ward_judge_compare(WARD_CMP_FLOAT, 1, U("yes"), U("YES")));
}

static void words_and_argv(void)
{
	char **w = NULL, err[128];
	CHECK("judge: words split", judge_split_words(" -O2 'a b' \"c\\\"d\" e\\ f ", &w, err, sizeof(err)) == 0 && w &&
					   !strcmp(w[0], "-O2") && !strcmp(w[1], "a b") && !strcmp(w[2], "c\"d") &&
					   !strcmp(w[3], "e f") && !w[4]);
	free(w);
	w = NULL;
	CHECK("judge: an unterminated quote is refused", judge_split_words("'abc", &w, err, sizeof(err)) < 0 && !w);
	char *tmpl[] = {"g++", "{flags}", "-o", "main", "{sources}", "{args}", NULL};
	char *srcs[] = {"main.cpp", "util.cpp", "util.h", NULL}, *flags[] = {"-O2", "-DX=1 2", NULL};
	char **v = ward_judge_argv(tmpl, "main.cpp", srcs, flags, NULL);
	CHECK("judge: argv: placeholders become words, sources by extension",
	      v && !strcmp(v[0], "g++") && !strcmp(v[1], "-O2") && !strcmp(v[2], "-DX=1 2") && !strcmp(v[5], "main.cpp") &&
		      !strcmp(v[6], "util.cpp") && !v[7]);
	free(v);
	char *run[] = {"./main", "{args}", NULL}, *args[] = {"; rm -rf /", "$(id)", NULL};
	v = ward_judge_argv(run, "main.c", NULL, NULL, args);
	CHECK("judge: argv: args stay single words, no shell",
	      v && !strcmp(v[1], "; rm -rf /") && !strcmp(v[2], "$(id)") && !v[3]);
	free(v);
}

static const char table[] =
	"[{\"id\": \"c\", \"aliases\": [\"gcc\"], \"version\": \"12.2.0\", \"source_file\": \"main.c\","
	" \"compile\": [\"/usr/bin/gcc\", \"-O2\", \"{flags}\", \"-o\", \"main\", \"{sources}\"],"
	" \"artifacts\": [\"main\"], \"run\": [\"./main\", \"{args}\"], \"version_cmd\": [\"/usr/bin/gcc\", \"-dumpfullversion\"]},"
	" {\"id\": \"nope\", \"source_file\": \"x\", \"run\": [\"/nonexistent/nope\"], \"version_cmd\": [\"/nonexistent/nope\"],"
	"  \"package\": \"nope-pkg\"}]";

static void table_parse(void)
{
	struct ward_languages t;
	char err[400];
	static const char *const bad[] = {
		"{}", "[]", "[{\"id\": \"../x\", \"source_file\": \"a\", \"run\": [\"a\"], \"version_cmd\": [\"a\"]}]",
		"[{\"id\": \"a\", \"source_file\": \"a\", \"version_cmd\": [\"a\"]}]",
		"[{\"id\": \"a\", \"source_file\": \"../a\", \"run\": [\"a\"], \"version_cmd\": [\"a\"]}]",
		"[{\"id\": \"a\", \"source_file\": \"a\", \"run\": [\"a\"], \"version_cmd\": [\"a\"]},"
		" {\"id\": \"a\", \"source_file\": \"a\", \"run\": [\"a\"], \"version_cmd\": [\"a\"]}]",
		"[{\"id\": \"a\", \"source_file\": \"a\", \"run\": [], \"version_cmd\": [\"a\"]}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "judge: a bad table is refused (%zu)", i);
		int rc = ward_languages_parse(bad[i], strlen(bad[i]), &t, err, sizeof(err));
		CHECK(name, rc < 0 && err[0] && t.n == 0);
	}
	CHECK("judge: the table parses", ward_languages_parse(table, strlen(table), &t, err, sizeof(err)) == 0 && t.n == 2);
	CHECK("judge: nothing is found before the probe", ward_language_find(&t, "c", NULL) == NULL);
	ward_languages_free(&t);
}

/* A C program: a+b, a SIGSEGV when a < 0. */
static const char prog[] = "#include <stdio.h>\n#include <signal.h>\nint main(void){long a,b;"
			   "if(scanf(\"%ld %ld\",&a,&b)!=2)return 3;if(a<0)raise(SIGSEGV);"
			   "printf(\"%ld\\n\",a+b);return 0;}\n";

static void decode(const struct ward_languages *t)
{
	struct judge_bounds b;
	struct ward_limits max;
	ward_maxima_init(&max);
	judge_bounds_init(&b, &max);
	b.max_tests = 3;
	b.max_test_bytes = 16;
	b.max_parallel = 4;
	b.clamp_parallel = 2;
	struct judge_doc d;
	bool unknown;
	char err[600];
	static const struct {
		const char *name, *body, *want;
	} bad[] = {
		{"judge: a source named ../x is refused", "{\"language\":\"c\",\"files\":[{\"path\":\"../x\"}],\"tests\":[{}]}",
		 "files[0].path"},
		{"judge: a source named /etc/x is refused", "{\"language\":\"c\",\"files\":[{\"path\":\"/etc/x\"}],\"tests\":[{}]}",
		 "files[0].path"},
		{"judge: more tests than the maximum: named", "{\"language\":\"c\",\"files\":[{}],\"tests\":[{},{},{},{}]}",
		 "--max-tests"},
		{"judge: more test bytes than the maximum: named",
		 "{\"language\":\"c\",\"files\":[{}],\"tests\":[{\"stdin\":\"0123456789\",\"expected_stdout\":\"0123456\"}]}",
		 "--max-test-bytes"},
		{"judge: parallel over the maximum: named", "{\"language\":\"c\",\"files\":[{}],\"tests\":[{}],\"parallel\":5}",
		 "--max-parallel"},
		{"judge: a limit over the maximum: named",
		 "{\"language\":\"c\",\"files\":[{}],\"tests\":[{}],\"run\":{\"limits\":{\"memory_mb\":999999}}}",
		 "run.limits.memory_mb"},
		{"judge: extra CPU over the maximum: named",
		 "{\"language\":\"c\",\"files\":[{}],\"tests\":[{}],\"run\":{\"limits\":{\"cpu_seconds\":200,\"extra_cpu_seconds\":200}}}",
		 "extra_cpu_seconds"},
		{"judge: an unknown compare", "{\"language\":\"c\",\"files\":[{}],\"tests\":[{}],\"compare\":\"fuzzy\"}", "compare"},
		{"judge: an unknown language", "{\"language\":\"cobol\",\"files\":[{}],\"tests\":[{}]}", "GET /languages"},
		{"judge: no tests", "{\"language\":\"c\",\"files\":[{}],\"tests\":[]}", "tests"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		int rc = judge_from_json(bad[i].body, strlen(bad[i].body), t, &b, &d, &unknown, err, sizeof(err));
		CHECK(bad[i].name, rc < 0 && strstr(err, bad[i].want));
		if (rc == 0)
			judge_doc_free(&d);
	}
	const char *ok = "{\"language\":\"gcc\",\"files\":[{\"content\":\"x\"}],\"tests\":[{\"stdin\":\"YQ==\","
			 "\"stdin_encoding\":\"base64\"}],\"parallel\":4,\"compare\":{\"float\":0.5},"
			 "\"compile\":{\"flags\":\"-O0 -g\"}}";
	int rc = judge_from_json(ok, strlen(ok), t, &b, &d, &unknown, err, sizeof(err));
	CHECK("judge: a job decodes (alias, base64 stdin, default main file, float, flags)",
	      rc == 0 && !strcmp(d.job.files[0].path, "main.c") && d.job.tests[0].stdin_len == 1 &&
		      d.job.tests[0].stdin_data[0] == 'a' && d.job.compare == WARD_CMP_FLOAT && d.job.eps == 0.5 &&
		      d.job.flags && !strcmp(d.job.flags[1], "-g") && !strcmp(d.job.tests[0].id, "1"));
	CHECK("judge: parallel is clamped to --max-concurrent", rc == 0 && d.job.parallel == 2);
	if (rc == 0)
		judge_doc_free(&d);
}

/* A request's default limits for the compile and the runs, 5 s a run. */
static void default_limits(struct ward_judge_job *job)
{
	struct ward_request dflt;
	ward_request_init(&dflt);
	job->compile_limits = dflt.limits;
	job->run_limits.l = dflt.limits;
	job->run_limits.l.timeout_s = 5;
}

static void judge_c(const struct ward_language *c)
{
	struct ward_file f = {.path = "main.c", .data = (const unsigned char *)prog, .len = sizeof(prog) - 1};
	struct ward_judge_test tests[] = {
		{.id = "ok", .stdin_data = U("1 2\n"), .expected = U("3\n")},
		{.id = "wrong", .stdin_data = U("2 2\n"), .expected = U("5\n")},
		{.id = "crash", .stdin_data = U("-1 2\n"), .expected = U("1\n")},
	};
	struct ward_judge_job job = {.lang = c, .files = &f, .nfiles = 1, .tests = tests, .ntests = 3, .parallel = 2,
				     .compare = WARD_CMP_LINES};
	default_limits(&job);
	struct ward_judge_result r;
	int rc = ward_judge(&job, &r);
	CHECK("judge: a C job is judged", rc == 0 && r.compiled && r.compile_verdict == WARD_V_AC && r.ntests == 3);
	if (rc == 0 && r.ntests == 3) {
		CHECK("judge: AC", r.tests[0].verdict == WARD_V_AC && !strcmp(r.tests[0].out.data, "3\n"));
		CHECK("judge: WA", r.tests[1].verdict == WARD_V_WA);
		CHECK("judge: RE by SIGSEGV, said so",
		      r.tests[2].verdict == WARD_V_RE && r.tests[2].signal == 11 &&
			      !strcmp(r.tests[2].message, "killed by SIGSEGV"));
		CHECK("judge: the job's verdict is the first failure's", r.verdict == WARD_V_WA && r.first_failed == 1 &&
									  r.passed == 1);
	}
	ward_judge_result_free(&r);

	static const char broken[] = "int main(void) { return x; }\n";
	f.data = (const unsigned char *)broken;
	f.len = sizeof(broken) - 1;
	rc = ward_judge(&job, &r);
	CHECK("judge: CE, and no test runs", rc == 0 && r.verdict == WARD_V_CE && r.ntests == 0 &&
						     strstr(r.compile.err.data, "error"));
	ward_judge_result_free(&r);

	f.data = (const unsigned char *)prog;
	f.len = sizeof(prog) - 1;
	job.stop_on_first_failure = true;
	job.parallel = 1;
	rc = ward_judge(&job, &r);
	CHECK("judge: stop_on_first_failure skips the rest",
	      rc == 0 && r.ntests == 3 && r.tests[1].verdict == WARD_V_WA && r.tests[2].verdict == WARD_V_SKIPPED);
	ward_judge_result_free(&r);
}

/* ward_judge_job.extra: in /work for the compile and every test (the
 * build keeps only the artifact "main"), never among {sources}, and the
 * job's own file wins a path both have. */
static void judge_extra(const struct ward_language *c)
{
	static const char src[] = "#include <stdio.h>\n#include \"inc/k.h\"\nint main(void){int v = 0; FILE *f = "
				  "fopen(\"data.txt\", \"r\"); if (!f || fscanf(f, \"%d\", &v) != 1) return 3; "
				  "printf(\"%d\\n\", v + K); return 0;}\n";
	struct ward_file f = {.path = "main.c", .data = (const unsigned char *)src, .len = sizeof(src) - 1};
	struct ward_file extra[] = {
		{.path = "inc/k.h", .data = (const unsigned char *)"#define K 2\n", .len = 12},
		{.path = "data.txt", .data = (const unsigned char *)"40\n", .len = 3},
		{.path = "main.c", .data = (const unsigned char *)"int main(void){return 9;}\n", .len = 26},
		{.path = "other.c", .data = (const unsigned char *)"int main(void){return 8;}\n", .len = 26},
	};
	struct ward_judge_test tests[] = {{.id = "1", .expected = U("42\n")}, {.id = "2", .expected = U("42\n")}};
	struct ward_judge_job job = {.lang = c, .files = &f, .nfiles = 1, .extra = extra, .nextra = 4, .tests = tests,
				     .ntests = 2, .parallel = 2, .compare = WARD_CMP_EXACT};
	default_limits(&job);
	struct ward_judge_result r;
	int rc = ward_judge(&job, &r);
	CHECK("judge: extra files: a header at the compile, a data file at each run; the job's main.c wins, "
	      "other.c is not compiled",
	      rc == 0 && r.verdict == WARD_V_AC && r.ntests == 2 && r.tests[1].verdict == WARD_V_AC);
	ward_judge_result_free(&r);
}

void test_judge(void)
{
	compare_modes();
	words_and_argv();
	table_parse();
	struct ward_languages t;
	char err[400];
	if (ward_languages_parse(table, strlen(table), &t, err, sizeof(err)) < 0) {
		CHECK("judge: table", 0);
		return;
	}
	ward_languages_probe(&t, NULL);
	CHECK("judge: a missing toolchain is disabled, named with its package",
	      !t.v[1].enabled && strstr(t.v[1].why, "nope-pkg") && !ward_language_find(&t, "nope", NULL));
	const struct ward_language *c = ward_language_find(&t, "gcc", "12");
	CHECK("judge: probed, found by alias and version prefix", c && c->enabled && c->version[0] != 0);
	CHECK("judge: a version that is not there", ward_language_find(&t, "c", "1") == NULL);
	decode(&t);
	if (c) {
		judge_c(c);
		judge_extra(c);
	}
	ward_languages_free(&t);
}
