/* test_wire_absent.c — SPEC §5: a member that is null, and a workdir or
 * command that is "", count as absent in /exec bodies and test jobs
 * (src/wire/json.c).  Each body here is decoded next to the same body without
 * the member, and the two requests must be the same; the shapes that leave
 * nothing to run are refused with a message that names the problem. */
#include <stdlib.h>
#include <string.h>

#include "testjob/testjob.h"
#include "unit.h"
#include "ward.h"
#include "wire/wire.h"

void test_wire_absent(void);

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* NULL and an empty list are the same (no variables, as ward reads env) */
static bool same_strv(char *const *a, char *const *b)
{
	static char *const none[] = {NULL};
	a = a ? a : none;
	b = b ? b : none;
	for (; *a && *b; a++, b++)
		if (strcmp(*a, *b) != 0)
			return false;
	return !*a && !*b;
}

static bool same_limits(const struct ward_limits *a, const struct ward_limits *b)
{
	return a->timeout_s == b->timeout_s && a->cpu_s == b->cpu_s && a->memory_mb == b->memory_mb &&
	       a->pids == b->pids && a->output_limit == b->output_limit && a->fsize_mb == b->fsize_mb &&
	       a->tmp_size_mb == b->tmp_size_mb && a->nofile == b->nofile;
}

/* The decoded requests are the same run: every field the body can set. */
static bool same_request(const struct ward_request_doc *x, const struct ward_request_doc *y)
{
	const struct ward_request *a = &x->req, *b = &y->req;
	if (!same_str(a->shell, b->shell) || !same_strv(a->argv, b->argv) || !same_str(a->workdir, b->workdir) ||
	    !same_str(a->rootfs, b->rootfs) || !same_strv(a->env, b->env) || a->nmounts != b->nmounts ||
	    a->nfiles != b->nfiles || a->stdin_set != b->stdin_set || a->stdin_len != b->stdin_len ||
	    a->net != b->net || a->isolation != b->isolation || x->isolation_set != y->isolation_set ||
	    !same_limits(&a->limits, &b->limits))
		return false;
	for (size_t i = 0; i < a->nmounts; i++)
		if (!same_str(a->mounts[i].host_path, b->mounts[i].host_path) ||
		    !same_str(a->mounts[i].sandbox_path, b->mounts[i].sandbox_path) ||
		    a->mounts[i].read_only != b->mounts[i].read_only)
			return false;
	for (size_t i = 0; i < a->nfiles; i++)
		if (!same_str(a->files[i].path, b->files[i].path) || a->files[i].len != b->files[i].len ||
		    memcmp(a->files[i].data, b->files[i].data, a->files[i].len) != 0 || a->files[i].mode != b->files[i].mode)
			return false;
	return true;
}

/* BODY decodes, and to the same request as PLAIN (the body without the
 * absent members). */
static void same_as(const char *name, const char *body, const char *plain)
{
	struct ward_request_doc d1, d2;
	char e1[512] = "", e2[512] = "";
	int r1 = ward_request_from_json(body, strlen(body), &d1, e1, sizeof(e1));
	int r2 = ward_request_from_json(plain, strlen(plain), &d2, e2, sizeof(e2));
	char label[256];
	snprintf(label, sizeof(label), "wire absent: %s", name);
	CHECK(label, r1 == 0 && r2 == 0 && same_request(&d1, &d2));
	if (r1 < 0 || r2 < 0)
		printf("   (messages: [%s] [%s])\n", e1, e2);
	if (r1 == 0)
		ward_request_doc_free(&d1);
	if (r2 == 0)
		ward_request_doc_free(&d2);
}

/* BODY is refused with a message that contains WANT. */
static void refused(const char *name, const char *body, const char *want)
{
	struct ward_request_doc doc;
	char err[512] = "";
	int rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	char label[256];
	snprintf(label, sizeof(label), "wire absent: refuses %s", name);
	CHECK(label, rc < 0 && strstr(err, want));
	if (rc == 0)
		ward_request_doc_free(&doc);
	else if (!strstr(err, want))
		printf("   (message was: %s)\n", err);
}

/* Every DeepTutor request carries its defaults: RunnerSidecarBackend's body
 * for ExecRequest(command=...), field for field. */
#define DT_LIMITS "\"limits\":{\"timeout_s\":30,\"memory_mb\":512,\"cpu_seconds\":30,\"max_output_chars\":10000}"

static void test_exec_defaults(void)
{
	same_as("DeepTutor's defaults (workdir \"\", argv [], mounts [], env {})",
		"{\"command\":\"echo hi\",\"argv\":[],\"workdir\":\"\",\"env\":{},\"mounts\":[]," DT_LIMITS "}",
		"{\"command\":\"echo hi\"," DT_LIMITS "}");
	struct ward_request_doc doc;
	char err[512] = "";
	const char *b = "{\"command\":\"echo hi\",\"argv\":[],\"workdir\":\"\",\"env\":{},\"mounts\":[]," DT_LIMITS "}";
	int rc = ward_request_from_json(b, strlen(b), &doc, err, sizeof(err));
	CHECK("wire absent: workdir \"\" is no workdir (an ephemeral /work)", rc == 0 && doc.req.workdir == NULL);
	CHECK("wire absent: mounts [] binds nothing", rc == 0 && doc.req.nmounts == 0);
	CHECK("wire absent: argv [] next to command runs the command",
	      rc == 0 && !doc.req.argv && doc.req.shell && strcmp(doc.req.shell, "echo hi") == 0);
	if (rc == 0)
		ward_request_doc_free(&doc);

	same_as("DeepTutor's of_argv (command and argv both sent: argv wins)",
		"{\"command\":\"echo 'a b'\",\"argv\":[\"echo\",\"a b\"],\"workdir\":\"\",\"env\":{},\"mounts\":[]}",
		"{\"argv\":[\"echo\",\"a b\"]}");
	same_as("workdir \"\" next to argv", "{\"argv\":[\"true\"],\"workdir\":\"\"}", "{\"argv\":[\"true\"]}");
}

static void test_exec_nulls(void)
{
	static const char *const fields[] = {
		"\"argv\":null",      "\"workdir\":null", "\"rootfs\":null",	    "\"env\":null",
		"\"mounts\":null",    "\"limits\":null",  "\"files\":null",	    "\"stdin\":null",
		"\"stdin_encoding\":null", "\"network\":null", "\"isolation\":null", "\"a_future_field\":null",
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char body[256], name[128];
		snprintf(body, sizeof(body), "{\"command\":\"echo hi\",%s}", fields[i]);
		snprintf(name, sizeof(name), "%s is absent", fields[i]);
		same_as(name, body, "{\"command\":\"echo hi\"}");
	}
	same_as("command null next to argv", "{\"command\":null,\"argv\":[\"ls\"]}", "{\"argv\":[\"ls\"]}");
	same_as("every limit null",
		"{\"command\":\"a\",\"limits\":{\"timeout_s\":null,\"memory_mb\":null,\"cpu_seconds\":null,"
		"\"max_output_chars\":null,\"pids\":null,\"output_limit\":null,\"fsize_mb\":null,"
		"\"tmp_size_mb\":null,\"nofile\":null}}",
		"{\"command\":\"a\"}");
	same_as("one limit null, another set", "{\"command\":\"a\",\"limits\":{\"timeout_s\":null,\"pids\":7}}",
		"{\"command\":\"a\",\"limits\":{\"pids\":7}}");
	same_as("an env variable null is not set", "{\"command\":\"a\",\"env\":{\"A\":\"1\",\"B\":null}}",
		"{\"command\":\"a\",\"env\":{\"A\":\"1\"}}");
	same_as("mount members null (sandbox_path, read_only: the defaults)",
		"{\"command\":\"a\",\"mounts\":[{\"host_path\":\"/h\",\"sandbox_path\":null,\"read_only\":null}]}",
		"{\"command\":\"a\",\"mounts\":[{\"host_path\":\"/h\"}]}");
	same_as("file members null (encoding, content, mode)",
		"{\"command\":\"a\",\"files\":[{\"path\":\"x\",\"encoding\":null,\"content\":null,\"mode\":null}]}",
		"{\"command\":\"a\",\"files\":[{\"path\":\"x\"}]}");
	same_as("stdin_encoding null: stdin is utf-8", "{\"command\":\"a\",\"stdin\":\"in\",\"stdin_encoding\":null}",
		"{\"command\":\"a\",\"stdin\":\"in\"}");
}

/* What leaves nothing to run, or nothing to bind, is still refused. */
static void test_exec_refusals(void)
{
	refused("argv [] and no command", "{\"argv\":[]}", "argv: is empty and there is no command");
	refused("argv [] and command \"\"", "{\"argv\":[],\"command\":\"\"}", "argv: is empty and there is no command");
	refused("argv [] and command null", "{\"argv\":[],\"command\":null}", "argv: is empty and there is no command");
	refused("command \"\" alone", "{\"command\":\"\"}", "command: one of");
	refused("command null alone", "{\"command\":null}", "command: one of");
	refused("command \"\" with DeepTutor's defaults",
		"{\"command\":\"\",\"argv\":null,\"workdir\":\"\",\"env\":{},\"mounts\":[]}", "command: one of");
	refused("an empty body", "{}", "command: one of");
	refused("a mount whose host_path is null", "{\"command\":\"a\",\"mounts\":[{\"host_path\":null}]}",
		"mounts[0].host_path: is required");
	refused("a file whose path is null", "{\"command\":\"a\",\"files\":[{\"path\":null}]}",
		"files[0].path: is required");
	refused("a null element of argv", "{\"argv\":[\"ls\",null]}", "argv[1]: must be a string");
	refused("a null element of mounts", "{\"command\":\"a\",\"mounts\":[null]}", "mounts[0]: must be an object");
	refused("workdir that is a number", "{\"command\":\"a\",\"workdir\":0}", "workdir: must be a string");
}

/* `ward run --remote --shell ''` runs what `ward run --shell ''` runs
 * (sh -c '', exit 0): "command": "" would read as no command, so the
 * encoder sends the shell's argv. */
static void test_empty_shell_encoding(void)
{
	struct ward_request q;
	ward_request_init(&q);
	q.shell = "";
	char err[512] = "";
	char *js = ward_request_to_json(&q, err, sizeof(err));
	struct ward_request_doc doc;
	int rc = js ? ward_request_from_json(js, strlen(js), &doc, err, sizeof(err)) : -1;
	char *const want[] = {"/bin/sh", "-c", "", NULL};
	CHECK("wire absent: an empty shell string travels as argv [/bin/sh, -c, \"\"]",
	      rc == 0 && !doc.req.shell && same_strv(doc.req.argv, want));
	if (rc == 0)
		ward_request_doc_free(&doc);
	else
		printf("   (%s: %s)\n", js ? js : "no JSON", err);
	free(js);
}

/* Test jobs (POST /test) read their members the same way. */
static void job_same_as(const char *name, const char *body, const char *plain)
{
	struct testjob j1, j2;
	char e1[512] = "", e2[512] = "";
	int r1 = testjob_from_json(body, strlen(body), &j1, e1, sizeof(e1));
	int r2 = testjob_from_json(plain, strlen(plain), &j2, e2, sizeof(e2));
	char label[256];
	snprintf(label, sizeof(label), "wire absent: test job %s", name);
	CHECK(label, r1 == 0 && r2 == 0 && j1.runner == j2.runner && j1.framework == j2.framework &&
			     same_strv(j1.command, j2.command) && j1.nsource == j2.nsource &&
			     same_request(&j1.doc, &j2.doc));
	if (r1 < 0 || r2 < 0)
		printf("   (messages: [%s] [%s])\n", e1, e2);
	if (r1 == 0)
		testjob_free(&j1);
	if (r2 == 0)
		testjob_free(&j2);
}

static void job_refused(const char *name, const char *body, const char *want)
{
	struct testjob job;
	char err[512] = "";
	int rc = testjob_from_json(body, strlen(body), &job, err, sizeof(err));
	char label[256];
	snprintf(label, sizeof(label), "wire absent: test job refuses %s", name);
	CHECK(label, rc < 0 && strstr(err, want));
	if (rc == 0)
		testjob_free(&job);
	else if (!strstr(err, want))
		printf("   (message was: %s)\n", err);
}

#define TJ_T "\"test_files\":[{\"path\":\"test_a.py\",\"content\":\"x\"}]"

static void test_job(void)
{
	job_same_as("with every member null",
		    "{" TJ_T ",\"runner\":null,\"framework\":null,\"command\":null,\"source_files\":null,"
		    "\"limits\":null,\"env\":null,\"network\":null,\"isolation\":null}",
		    "{" TJ_T "}");
	job_same_as("python runner with command []", "{" TJ_T ",\"command\":[]}", "{" TJ_T "}");
	job_same_as("python runner with command \"\"", "{" TJ_T ",\"command\":\"\"}", "{" TJ_T "}");
	job_same_as("file members null",
		    "{\"test_files\":[{\"path\":\"test_a.py\",\"content\":null,\"encoding\":null,\"mode\":null}]}",
		    "{\"test_files\":[{\"path\":\"test_a.py\"}]}");
	job_same_as("a limit and an env variable null",
		    "{" TJ_T ",\"limits\":{\"timeout_s\":null,\"pids\":5},\"env\":{\"A\":null,\"B\":\"1\"}}",
		    "{" TJ_T ",\"limits\":{\"pids\":5},\"env\":{\"B\":\"1\"}}");
	job_refused("the junit runner with command []", "{" TJ_T ",\"runner\":\"junit\",\"command\":[]}",
		    "command: the junit runner needs a command");
	job_refused("the junit runner with command \"\"", "{" TJ_T ",\"runner\":\"junit\",\"command\":\"\"}",
		    "command: the junit runner needs a command");
	job_refused("the python runner with test_files null", "{\"test_files\":null}",
		    "test_files: the python runner needs at least one test file");
}

void test_wire_absent(void)
{
	test_exec_defaults();
	test_exec_nulls();
	test_exec_refusals();
	test_empty_shell_encoding();
	test_job();
}
