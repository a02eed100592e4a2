/* test_wire.c — the /exec wire format (src/wire/json.c, server section) and
 * base64: shapes, field-naming errors, hostile documents, and the round
 * trip request -> JSON -> request that `ward run --remote` relies on. */
#include <stdlib.h>
#include <string.h>

#include "wire/base64.h"
#include "unit.h"
#include "ward.h"
#include "wire/wire.h"

void test_wire(void);

/* decode BODY; expect failure whose message starts with PREFIX */
static void refuses(const char *name, const char *body, const char *prefix)
{
	struct ward_request_doc doc;
	char err[512] = "";
	int rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	char label[256];
	snprintf(label, sizeof(label), "wire: refuses %s", name);
	CHECK(label, rc < 0 && strncmp(err, prefix, strlen(prefix)) == 0);
	if (rc == 0)
		ward_request_doc_free(&doc);
	else if (strncmp(err, prefix, strlen(prefix)) != 0)
		printf("   (message was: %s)\n", err);
}

static void test_base64(void)
{
	size_t n;
	unsigned char *d = base64_decode("aGVsbG8=", 8, &n);
	CHECK("base64: decodes padded", d && n == 5 && memcmp(d, "hello", 5) == 0);
	free(d);
	d = base64_decode("aGVsbG8", 7, &n);
	CHECK("base64: decodes unpadded", d && n == 5 && memcmp(d, "hello", 5) == 0);
	free(d);
	d = base64_decode("aGVs\nbG8=\n", 10, &n);
	CHECK("base64: ignores whitespace", d && n == 5);
	free(d);
	d = base64_decode("", 0, &n);
	CHECK("base64: empty", d && n == 0);
	free(d);
	CHECK("base64: refuses a bad character", !base64_decode("aGV!", 4, &n));
	CHECK("base64: refuses data after padding", !base64_decode("aG==aGVs", 8, &n));
	CHECK("base64: refuses a lone sextet", !base64_decode("aGVsb", 5, &n));
	CHECK("base64: refuses too much padding", !base64_decode("aGVsbG8===", 10, &n));
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	int ok = 1;
	for (size_t len = 0; len <= 256 && ok; len++) {
		char *e = base64_encode(all, len);
		unsigned char *back = e ? base64_decode(e, strlen(e), &n) : NULL;
		ok = back && n == len && memcmp(back, all, len) == 0;
		free(e);
		free(back);
	}
	CHECK("base64: round trip of every length 0..256", ok);
}

static void test_decode(void)
{
	const char *body = "{\"command\":\"echo hi\",\"argv\":null,\"workdir\":\"/w\",\"env\":{\"A\":\"1\",\"B\":\"x=y\"},"
			   "\"mounts\":[{\"host_path\":\"/h\",\"sandbox_path\":\"/s\",\"read_only\":false},{\"host_path\":\"/r\"}],"
			   "\"limits\":{\"timeout_s\":2.5,\"memory_mb\":256.0,\"cpu_seconds\":3,\"max_output_chars\":100,\"pids\":9},"
			   "\"files\":[{\"path\":\"a.txt\",\"content\":\"hi\"},{\"path\":\"b.bin\",\"content\":\"AAH/\",\"encoding\":\"base64\",\"mode\":493}],"
			   "\"stdin\":\"in\",\"network\":\"loopback\",\"future\":[1,{\"x\":2}]}";
	struct ward_request_doc doc;
	char err[512];
	int rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	CHECK("wire: decodes DeepTutor's request", rc == 0);
	if (rc != 0) {
		printf("   (%s)\n", err);
		return;
	}
	struct ward_request *q = &doc.req;
	CHECK("wire: command becomes shell", q->shell && strcmp(q->shell, "echo hi") == 0 && !q->argv);
	CHECK("wire: workdir", q->workdir && strcmp(q->workdir, "/w") == 0);
	CHECK("wire: env as K=V", q->env && strcmp(q->env[0], "A=1") == 0 && strcmp(q->env[1], "B=x=y") == 0 && !q->env[2]);
	CHECK("wire: mounts", q->nmounts == 2 && !q->mounts[0].read_only && strcmp(q->mounts[0].sandbox_path, "/s") == 0);
	CHECK("wire: mounts read-only by default", q->mounts[1].read_only && !q->mounts[1].sandbox_path);
	CHECK("wire: limits", q->limits.timeout_s == 2.5 && q->limits.memory_mb == 256 && q->limits.cpu_s == 3 &&
				      q->limits.output_limit == 100 && q->limits.pids == 9);
	CHECK("wire: files utf-8", q->nfiles == 2 && q->files[0].len == 2 && memcmp(q->files[0].data, "hi", 2) == 0);
	CHECK("wire: files base64 and mode",
	      q->files[1].len == 3 && memcmp(q->files[1].data, "\0\1\377", 3) == 0 && q->files[1].mode == 0755);
	CHECK("wire: stdin", q->stdin_set && q->stdin_len == 2 && memcmp(q->stdin_data, "in", 2) == 0);
	CHECK("wire: network", q->net == WARD_NET_LOOPBACK);
	CHECK("wire: capture is on", q->capture && q->stdin_fd == -1);
	CHECK("wire: isolation not set by the body", !doc.isolation_set);

	/* and back: the encoder gives an equivalent request */
	char *js = ward_request_to_json(q, err, sizeof(err));
	struct ward_request_doc d2;
	int rc2 = js ? ward_request_from_json(js, strlen(js), &d2, err, sizeof(err)) : -1;
	CHECK("wire: request round trip decodes", rc2 == 0);
	if (rc2 == 0) {
		struct ward_request *p = &d2.req;
		CHECK("wire: round trip keeps everything",
		      strcmp(p->shell, "echo hi") == 0 && strcmp(p->workdir, "/w") == 0 && strcmp(p->env[1], "B=x=y") == 0 &&
			      p->nmounts == 2 && !p->mounts[0].read_only && p->limits.timeout_s == 2.5 &&
			      p->limits.memory_mb == 256 && p->limits.pids == 9 && p->limits.output_limit == 100 &&
			      p->nfiles == 2 && p->files[1].len == 3 && memcmp(p->files[1].data, "\0\1\377", 3) == 0 &&
			      p->files[1].mode == 0755 && p->stdin_len == 2 && p->net == WARD_NET_LOOPBACK &&
			      d2.isolation_set && p->isolation == WARD_ISO_SYSTEM);
		ward_request_doc_free(&d2);
	}
	free(js);
	ward_request_doc_free(&doc);

	body = "{\"argv\":[\"echo\",\"$HOME;id\"],\"command\":5}";
	rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	CHECK("wire: argv is authoritative (command not even checked)",
	      rc == 0 && doc.req.argv && !doc.req.shell && strcmp(doc.req.argv[1], "$HOME;id") == 0 && !doc.req.argv[2]);
	if (rc == 0)
		ward_request_doc_free(&doc);

	body = "{\"argv\":[],\"command\":\"echo from-command\"}";
	rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	CHECK("wire: an empty argv next to command counts as absent (DeepTutor sends both)",
	      rc == 0 && !doc.req.argv && doc.req.shell && strcmp(doc.req.shell, "echo from-command") == 0);
	if (rc == 0)
		ward_request_doc_free(&doc);

	/* binary stdin travels as base64 */
	struct ward_request q2;
	ward_request_init(&q2);
	char *const av[] = {"cat", NULL};
	q2.argv = av;
	q2.stdin_set = true;
	q2.stdin_data = (const unsigned char *)"\0\xff";
	q2.stdin_len = 2;
	js = ward_request_to_json(&q2, err, sizeof(err));
	CHECK("wire: binary stdin is sent as base64", js && strstr(js, "\"stdin_encoding\":\"base64\""));
	rc = js ? ward_request_from_json(js, strlen(js), &doc, err, sizeof(err)) : -1;
	CHECK("wire: binary stdin round trip",
	      rc == 0 && doc.req.stdin_len == 2 && memcmp(doc.req.stdin_data, "\0\xff", 2) == 0);
	if (rc == 0)
		ward_request_doc_free(&doc);
	free(js);
}

static void test_refusals(void)
{
	refuses("malformed JSON", "{\"command\":", "malformed JSON");
	refuses("an array body", "[1]", "the body must be a JSON object");
	refuses("no command", "{}", "command:");
	refuses("a number command", "{\"command\":1}", "command:");
	refuses("argv not an array", "{\"argv\":\"ls\"}", "argv:");
	refuses("empty argv", "{\"argv\":[]}", "argv:");
	refuses("argv with a number", "{\"argv\":[\"a\",1]}", "argv[1]:");
	refuses("argv with a NUL", "{\"argv\":[\"a\\u0000b\"]}", "argv[0]:");
	refuses("command with a NUL", "{\"command\":\"a\\u0000b\"}", "command:");
	refuses("duplicate keys", "{\"command\":\"a\",\"command\":\"b\"}", "malformed JSON");
	refuses("env not an object", "{\"command\":\"a\",\"env\":[]}", "env:");
	refuses("env value not a string", "{\"command\":\"a\",\"env\":{\"K\":1}}", "env.K:");
	refuses("env name with =", "{\"command\":\"a\",\"env\":{\"K=J\":\"1\"}}", "env.K=J:");
	refuses("mounts not an array", "{\"command\":\"a\",\"mounts\":{}}", "mounts:");
	refuses("mount without host_path", "{\"command\":\"a\",\"mounts\":[{}]}", "mounts[0].host_path:");
	refuses("mount read_only not bool", "{\"command\":\"a\",\"mounts\":[{\"host_path\":\"/x\",\"read_only\":1}]}",
		"mounts[0].read_only:");
	refuses("limits not an object", "{\"command\":\"a\",\"limits\":5}", "limits:");
	refuses("timeout as string", "{\"command\":\"a\",\"limits\":{\"timeout_s\":\"5\"}}", "limits.timeout_s:");
	refuses("negative memory", "{\"command\":\"a\",\"limits\":{\"memory_mb\":-1}}", "limits.memory_mb:");
	refuses("fractional memory", "{\"command\":\"a\",\"limits\":{\"memory_mb\":1.5}}", "limits.memory_mb:");
	refuses("huge pids", "{\"command\":\"a\",\"limits\":{\"pids\":99999999999}}", "limits.pids:");
	refuses("file without path", "{\"command\":\"a\",\"files\":[{\"content\":\"x\"}]}", "files[0].path:");
	refuses("file bad encoding", "{\"command\":\"a\",\"files\":[{\"path\":\"x\",\"content\":\"x\",\"encoding\":\"rot13\"}]}",
		"files[0].content:");
	refuses("file bad base64", "{\"command\":\"a\",\"files\":[{\"path\":\"x\",\"content\":\"!!\",\"encoding\":\"base64\"}]}",
		"files[0].content:");
	refuses("file mode too big", "{\"command\":\"a\",\"files\":[{\"path\":\"x\",\"mode\":99999}]}", "files[0].mode:");
	refuses("network unknown", "{\"command\":\"a\",\"network\":\"host\"}", "network:");
	refuses("network true", "{\"command\":\"a\",\"network\":true}", "network:");
	refuses("isolation unknown", "{\"command\":\"a\",\"isolation\":\"none\"}", "isolation:");
	refuses("stdin not a string", "{\"command\":\"a\",\"stdin\":[1]}", "stdin:");

	/* deep nesting: jansson's depth limit, not the stack */
	size_t depth = 50000; /* under WARD_JSON_MAX_VALUES: jansson's own depth limit answers */
	char *deep = malloc(depth * 2 + 1);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	deep[depth * 2] = 0;
	refuses("50000 nested arrays", deep, "malformed JSON");
	memcpy(deep, "{\"command\":\"a\",\"x\":", 19);
	refuses("deep nesting inside an unknown field", deep, "malformed JSON");
	free(deep);
}

static void test_result(void)
{
	struct ward_result r, back;
	memset(&r, 0, sizeof(r));
	r.status = WARD_ST_SIGNAL;
	r.exit_code = 137;
	r.signal = 9;
	r.out.data = strdup("out\xff");
	r.out.len = 4;
	r.out.bytes = 4;
	r.err.data = strdup("");
	r.err.truncated = true;
	r.err.bytes = 1 << 20;
	r.isolation = WARD_ISO_APPLICATION;
	r.enforced.memory = "cgroup-v1";
	r.enforced.landlock = "landlock-abi-4";
	snprintf(r.enforced.user, sizeof(r.enforced.user), "userns-uid-123");
	r.usage.wall_ms = 42;
	char *js = ward_result_to_json(&r);
	char err[256];
	memset(&back, 0, sizeof(back));
	int rc = js ? ward_result_from_json(js, strlen(js), &back, err, sizeof(err)) : -1;
	CHECK("wire: result decodes", rc == 0);
	CHECK("wire: result round trip",
	      rc == 0 && back.status == WARD_ST_SIGNAL && back.exit_code == 137 && back.signal == 9 &&
		      strcmp(back.out.data, "out\xef\xbf\xbd") == 0 && back.err.truncated && back.err.bytes == (1 << 20) &&
		      back.isolation == WARD_ISO_APPLICATION && strcmp(back.enforced.memory, "cgroup-v1") == 0 &&
		      strcmp(back.enforced.landlock, "landlock-abi-4") == 0 &&
		      strcmp(back.enforced.user, "userns-uid-123") == 0 && back.usage.wall_ms == 42 &&
		      ward_result_exit_status(&back) == ward_result_exit_status(&r));
	ward_result_free(&back);
	free(js);
	ward_result_free(&r);

	memset(&back, 0, sizeof(back));
	CHECK("wire: a non-result answer is refused", ward_result_from_json("{\"error\":\"x\"}", 13, &back, err, sizeof(err)) < 0);
	ward_result_free(&back);
	memset(&back, 0, sizeof(back));
	CHECK("wire: garbage is refused", ward_result_from_json("<html>", 6, &back, err, sizeof(err)) < 0);
	ward_result_free(&back);

	char buf[64];
	char *e = ward_error_to_json("bad \"thing\"");
	ward_error_from_json(e, strlen(e), buf, sizeof(buf));
	CHECK("wire: error envelope round trip", strcmp(buf, "bad \"thing\"") == 0);
	free(e);
}

static void test_value_count(void)
{
	char err[128];
	const char *s = "[1,2,{\"a\":[3]}]"; /* [ , { [ , : 5 */
	CHECK("wire: value count within the limit", ward_json_check_values(s, strlen(s), 5, err, sizeof(err)) == 0);
	CHECK("wire: value count over the limit", ward_json_check_values(s, strlen(s), 4, err, sizeof(err)) < 0);
	s = "{\"k\":\"a,b,[c{\\\",\\\\\"}"; /* {"k":"a,b,[c{\",\\"} : one '{' outside strings */
	CHECK("wire: commas and brackets in strings (escaped quotes too) do not count",
	      ward_json_check_values(s, strlen(s), 1, err, sizeof(err)) == 0);
	size_t n = WARD_JSON_MAX_VALUES + 10;
	char *big = malloc(2 * n + 64);
	size_t k = (size_t)sprintf(big, "{\"command\":\"a\",\"x\":[");
	for (size_t i = 0; i < n; i++) {
		big[k++] = '0';
		big[k++] = ',';
	}
	memcpy(big + k, "0]}", 4);
	refuses("more than WARD_JSON_MAX_VALUES values", big, "the document has more than");
	free(big);
}

void test_wire(void)
{
	test_value_count();
	test_base64();
	test_decode();
	test_refusals();
	test_result();
}
