/* mcp_tools.c — MCP's tools (SPEC §21), each a native request: run_code is
 * a POST /judge of one test (the language table's compile and run, SPEC
 * §15), run_command a POST /exec, run_in_session a session's exec, the
 * connection's session a POST /sessions made at its first use; the files
 * tools call libward's session files as the files endpoints do.  So the
 * runner's defaults, maxima, budgets and isolation hold for every call as
 * for the native API: the native handlers decide, on the calling thread
 * (a worker), and their answers become tool results.
 *
 * Errors: arguments of the wrong shape, or a limit over the runner's
 * maximum (the native 400), are JSON-RPC's -32602; what went wrong with
 * the program or the runner (a non-zero exit, a timeout, a full runner,
 * an unknown session) is a tool result with isError and the reason. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pathguard.h"
#include "dialect/dialect.h"
#include "dialect/mcp/mcp.h"
#include "judge/judge_json.h"
#include "wire/base64.h"

#define MCP_READ_MAX (8u << 20) /* read_file's most */
#define MCP_LIST_MAX 1000       /* list_files' most entries */

/* The tools' schemas: what tools/list answers. */
#define LIMITS                                                                                                    \
	"{\"type\":\"object\",\"additionalProperties\":false,\"description\":\"Limits of this run; the runner's " \
	"defaults when absent, refused above its maxima.\",\"properties\":{"                                      \
	"\"timeout_s\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"wall-clock seconds\"},"      \
	"\"cpu_seconds\":{\"type\":\"number\",\"exclusiveMinimum\":0},"                                           \
	"\"memory_mb\":{\"type\":\"integer\",\"minimum\":1},\"pids\":{\"type\":\"integer\",\"minimum\":1}}}"
#define FILES                                                                                                     \
	"{\"type\":\"array\",\"description\":\"More files in /work beside the program\",\"items\":{\"type\":"     \
	"\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"content\"],\"properties\":{\"path\":" \
	"{\"type\":\"string\",\"description\":\"relative to /work\"},\"content\":{\"type\":\"string\"},"          \
	"\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]}}}}"
#define SESSION_ID                                                                                             \
	"\"session_id\":{\"type\":\"string\",\"description\":\"a session of yours by its id; absent: the one " \
	"kept for this connection\"}"
#define COMMAND                                                                                                    \
	"\"command\":{\"type\":\"string\",\"description\":\"a shell command (sh -c)\"},\"argv\":{\"type\":"        \
	"\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"},\"description\":\"a program and its arguments, " \
	"no shell (instead of command)\"},\"stdin\":{\"type\":\"string\"},\"env\":{\"type\":\"object\","           \
	"\"additionalProperties\":{\"type\":\"string\"}}"
#define USAGE                                                                                                     \
	"\"usage\":{\"type\":\"object\",\"properties\":{\"wall_ms\":{\"type\":\"integer\"},\"cpu_ms\":{\"type\":" \
	"\"integer\"},\"memory_kb\":{\"type\":\"integer\"}}}"
#define RESULT                                                                                                    \
	"{\"type\":\"object\",\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\"],\"properties\":{"     \
	"\"status\":{\"type\":\"string\",\"description\":\"ok, nonzero, signal, timeout, memory or error\"},"     \
	"\"exit_code\":{\"type\":\"integer\"},\"signal\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":" \
	"\"string\"},\"stderr\":{\"type\":\"string\"},\"timed_out\":{\"type\":\"boolean\"},\"error\":{\"type\":"  \
	"\"string\"},\"usage\":{\"type\":\"object\"}}}"

static const char tools_json[] =
	"[{\"name\":\"run_code\",\"title\":\"Run code\",\"description\":\"Run a program in a language of "
	"list_languages (compiled first when the language compiles) in a fresh sandbox: no network, limited "
	"memory, processes and time. Answers stdout, stderr, exit code, status and usage.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"language\",\"code\"],"
	"\"properties\":{\"language\":{\"type\":\"string\",\"description\":\"an id or alias of list_languages: "
	"python, c, cpp, javascript, ...\"},\"code\":{\"type\":\"string\",\"description\":\"the program's "
	"source\"},\"stdin\":{\"type\":\"string\"},\"files\":" FILES ",\"limits\":" LIMITS "}},"
	"\"outputSchema\":{\"type\":\"object\",\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\","
	"\"usage\"],\"properties\":{\"status\":{\"type\":\"string\",\"description\":\"ok, nonzero, signal, "
	"timeout, memory, output_limit, compile_error or error\"},\"exit_code\":{\"type\":\"integer\"},"
	"\"signal\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":"
	"\"string\"},\"message\":{\"type\":\"string\"},\"language\":{\"type\":\"string\"},\"version\":{\"type\":"
	"\"string\"}," USAGE ",\"compile\":{\"type\":[\"object\",\"null\"]}}},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"run_command\",\"title\":\"Run a command\",\"description\":\"Run a shell command (or an "
	"argv) in a fresh sandbox with files of yours in /work: no network, limited memory, processes and "
	"time. Answers the result: stdout, stderr, exit code, status and usage.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" COMMAND
	",\"files\":" FILES ",\"limits\":" LIMITS "}},\"outputSchema\":" RESULT ","
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"run_in_session\",\"title\":\"Run in the session\",\"description\":\"Run a shell command "
	"(or an argv) in the sandbox kept for this connection: files under /work and processes left in the "
	"background persist between calls.\",\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":"
	"false,\"properties\":{" COMMAND ",\"cwd\":{\"type\":\"string\",\"description\":\"inside the sandbox, "
	"default /work\"},\"limits\":" LIMITS "," SESSION_ID "}},\"outputSchema\":" RESULT ","
	"\"annotations\":{\"destructiveHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"write_file\",\"title\":\"Write a file\",\"description\":\"Write a file under /work of the "
	"session (parents are made; an existing file is replaced).\",\"inputSchema\":{\"type\":\"object\","
	"\"additionalProperties\":false,\"required\":[\"path\",\"content\"],\"properties\":{\"path\":{\"type\":"
	"\"string\",\"description\":\"relative to /work\"},\"content\":{\"type\":\"string\"},\"encoding\":"
	"{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]}," SESSION_ID "}},\"outputSchema\":{\"type\":"
	"\"object\",\"required\":[\"path\",\"size\"],\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}}},"
	"\"annotations\":{\"destructiveHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"read_file\",\"title\":\"Read a file\",\"description\":\"Read a file under /work of the "
	"session (text as it is, other bytes in base64).\",\"inputSchema\":{\"type\":\"object\","
	"\"additionalProperties\":false,\"required\":[\"path\"],\"properties\":{\"path\":{\"type\":\"string\","
	"\"description\":\"relative to /work\"}," SESSION_ID "}},\"outputSchema\":{\"type\":\"object\","
	"\"required\":[\"path\",\"size\",\"encoding\",\"content\"],\"properties\":{\"session_id\":{\"type\":"
	"\"string\"},\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"encoding\":{\"type\":"
	"\"string\",\"enum\":[\"utf-8\",\"base64\"]},\"content\":{\"type\":\"string\"}}},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_files\",\"title\":\"List files\",\"description\":\"List a directory under /work of "
	"the session.\",\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":"
	"{\"path\":{\"type\":\"string\",\"description\":\"relative to /work; absent: /work\"}," SESSION_ID
	"}},\"outputSchema\":{\"type\":\"object\",\"required\":[\"path\",\"entries\"],\"properties\":{"
	"\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},\"truncated\":{\"type\":"
	"\"boolean\"},\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":"
	"{\"type\":\"string\"},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"mode\":{\"type\":"
	"\"integer\"},\"mtime\":{\"type\":\"number\"}}}}}},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_languages\",\"title\":\"List languages\",\"description\":\"The languages run_code "
	"takes on this runner, with their versions and aliases.\",\"inputSchema\":{\"type\":\"object\","
	"\"additionalProperties\":false,\"properties\":{}},\"outputSchema\":{\"type\":\"object\",\"required\":"
	"[\"languages\"],\"properties\":{\"languages\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{\"id\":{\"type\":\"string\"},\"display\":{\"type\":\"string\"},\"version\":{\"type\":"
	"\"string\"},\"aliases\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"compiled\":{\"type\":"
	"\"boolean\"}}}}}},\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}]";

json_t *mcp_tools_list(void)
{
	json_t *t = json_loads(tools_json, 0, NULL);
	return t ? json_pack("{s:o}", "tools", t) : json_object();
}

/* ---- arguments ---- */

enum atype { A_STR, A_NUM, A_INT, A_OBJ, A_ARR };

struct arg {
	const char *name;
	enum atype type;
	bool required;
};

static const char *const type_names[] = {"a string", "a number", "an integer", "an object", "an array"};

static bool type_is(const json_t *v, enum atype t)
{
	switch (t) {
	case A_STR:
		return json_is_string(v);
	case A_NUM:
		return json_is_number(v);
	case A_INT:
		return json_is_integer(v);
	case A_OBJ:
		return json_is_object(v);
	case A_ARR:
		return json_is_array(v);
	}
	return false;
}

/* args against the tool's table: every member known and of its type,
 * the required ones there.  false with msg. */
static bool args_ok(const char *tool, const json_t *args, const struct arg *spec, size_t n, char *msg, size_t len)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)args, key, v)
	{
		size_t i = 0;
		while (i < n && strcmp(spec[i].name, key))
			i++;
		if (i == n) {
			snprintf(msg, len, "%s: unknown argument '%.60s' (see its inputSchema in tools/list)", tool,
			         key);
			return false;
		}
		if (!type_is(v, spec[i].type)) {
			snprintf(msg, len, "%s: argument '%s' must be %s", tool, key, type_names[spec[i].type]);
			return false;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (spec[i].required && !json_object_get(args, spec[i].name)) {
			snprintf(msg, len, "%s: argument '%s' is required", tool, spec[i].name);
			return false;
		}
	return true;
}

/* The members of args named in keys, copied into a new object (native). */
static json_t *pick(const json_t *args, const char *const *keys)
{
	json_t *o = json_object();
	for (; *keys; keys++) {
		json_t *v = json_object_get(args, *keys);
		if (v)
			json_object_set(o, *keys, v);
	}
	return o;
}

/* ---- results ---- */

static json_t *text_block(const char *text)
{
	return json_pack("[{s:s,s:s}]", "type", "text", "text", text);
}

/* A tool's result: its structured content (taken), the same as text (MCP's
 * advice for clients that read only text), a headline first when it failed. */
static json_t *tool_result(json_t *structured, bool failed, const char *headline)
{
	char *j = json_dumps(structured, JSON_COMPACT | JSON_ENSURE_ASCII);
	char *text = NULL;
	if (!j || asprintf(&text, "%s%s%s", failed && headline ? headline : "", failed && headline ? "\n" : "", j) < 0)
		text = NULL;
	free(j);
	json_t *r = json_pack("{s:o,s:o,s:b}", "content", text_block(text ? text : ""), "structuredContent", structured,
	                      "isError", failed);
	free(text);
	return r;
}

static json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *tool_error(const char *fmt, ...)
{
	char msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:o,s:b}", "content", text_block(msg), "isError", 1);
}

/* ---- native requests ---- */

/* A native request of c's client, its body body (taken), its run
 * cancelled by call's cancel.  NULL when the runner's --max-body-total is
 * spent (msg says so). */
static struct req *native_new(struct mcp_conn *c, struct mcp_call *call, json_t *body, char *msg, size_t n)
{
	struct server *s = c->s;
	char *b = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct req *r = b ? calloc(1, sizeof(*r)) : NULL;
	size_t len = b ? strlen(b) : 0;
	if (!r || !body_reserve(s, len + 1)) {
		snprintf(msg, n,
		         r ? "the runner holds --max-body-total of requests already; retry later" : "out of memory");
		free(b);
		free(r);
		return NULL;
	}
	r->srv = s;
	r->body = b;
	r->len = len;
	r->cap = len + 1;
	r->cancel = &call->cancel;
	r->t_start = r->t_admit = now_mono();
	snprintf(r->who, sizeof(r->who), "%s", c->who);
	snprintf(r->client, sizeof(r->client), "%s", c->who);
	return r;
}

static void native_free(struct req *r)
{
	if (!r)
		return;
	body_release(r->srv, r);
	free(r->resp);
	doc_release(r);
	sess_release(r);
	free(r->ext);
	free(r);
}

/* r's answer as JSON when it succeeded; else NULL and either *fail (a tool
 * error: the runner could not) or *code and msg (the native 400: the
 * arguments). */
static json_t *native_answer(struct req *r, json_t **fail, int *code, char *msg, size_t n)
{
	if (r->code == 400) {
		*code = MCP_INVALID_PARAMS;
		snprintf(msg, n, "%s", r->message);
		return NULL;
	}
	if (r->code < 200 || r->code > 299 || !r->resp) {
		*fail = tool_error("the runner could not do it (HTTP %u): %s", r->code,
		                   r->message[0] ? r->message : "?");
		return NULL;
	}
	json_t *j = json_loadb(r->resp, r->resp_len ? r->resp_len : strlen(r->resp), 0, NULL);
	if (!j)
		*fail = tool_error("the runner's answer was not JSON (out of memory?)");
	return j;
}

/* ---- the session of a call ---- */

/* id's session if it is c's client's and alive: held (sess_unref). */
static struct sess *session_find(struct mcp_conn *c, const char *id)
{
	struct req q;
	memset(&q, 0, sizeof(q));
	q.srv = c->s;
	snprintf(q.args.sid, sizeof(q.args.sid), "%s", id);
	snprintf(q.who, sizeof(q.who), "%s", c->who);
	bool ok = sess_find(c->s, &q);
	free(q.resp);
	return ok ? q.sess : NULL;
}

/* The connection's session, made now (a POST /sessions) when it has none
 * or the one it had is gone. */
static struct sess *session_own(struct mcp_conn *c, struct mcp_call *call, json_t **fail, char *msg, size_t n)
{
	pthread_mutex_lock(&c->mk);
	pthread_mutex_lock(&c->lock);
	char sid[sizeof(c->sid)];
	memcpy(sid, c->sid, sizeof(sid));
	pthread_mutex_unlock(&c->lock);
	struct sess *x = sid[0] ? session_find(c, sid) : NULL;
	if (!x) {
		struct req *r = native_new(c, call, json_object(), msg, n);
		if (!r) {
			*fail = tool_error("%s", msg);
			goto out;
		}
		if (prepare_session_new(c->s, r))
			run_session_new(r);
		int code = 0;
		json_t *a = native_answer(r, fail, &code, msg, n);
		if (!a && !*fail)
			*fail = tool_error("cannot make the session: %s", msg);
		const char *id = json_string_value(json_object_get(a, "id"));
		if (id) {
			pthread_mutex_lock(&c->lock);
			snprintf(c->sid, sizeof(c->sid), "%s", id);
			pthread_mutex_unlock(&c->lock);
			x = session_find(c, id);
		}
		json_decref(a);
		native_free(r);
	}
out:
	pthread_mutex_unlock(&c->mk);
	return x;
}

/* The session a call works in: session_id's (the client's own), else the
 * connection's.  NULL with *fail set. */
static struct sess *call_session(struct mcp_conn *c, struct mcp_call *call, const json_t *args, json_t **fail,
                                 char *msg, size_t n)
{
	const char *id = json_string_value(json_object_get(args, "session_id"));
	if (!id)
		return session_own(c, call, fail, msg, n);
	struct sess *x = session_find(c, id);
	if (!x)
		*fail = tool_error("%s", SESS_404);
	return x;
}

void mcp_session_end(struct mcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	char sid[sizeof(c->sid)];
	memcpy(sid, c->sid, sizeof(sid));
	c->sid[0] = 0;
	pthread_mutex_unlock(&c->lock);
	struct sess *x = sid[0] ? session_find(c, sid) : NULL;
	if (!x)
		return;
	/* ends now: the sweep (the main thread) destroys it, never here */
	sess_set_end(c->s, x, 0);
	sess_unref(c->s, x);
}

/* ---- the tools ---- */

/* The SPEC §4 result (taken) as a tool's: failed unless status is ok. */
static json_t *run_result(json_t *res, const char *sid)
{
	const char *st = json_string_value(json_object_get(res, "status"));
	bool failed = !st || strcmp(st, "ok");
	char head[300] = "";
	const char *err = json_string_value(json_object_get(res, "error"));
	if (err && err[0])
		snprintf(head, sizeof(head), "ward could not run it: %.250s", err);
	else if (failed)
		snprintf(head, sizeof(head), "the program failed: status %s, exit code %" JSON_INTEGER_FORMAT,
		         st ? st : "?", json_integer_value(json_object_get(res, "exit_code")));
	if (sid)
		json_object_set_new(res, "session_id", json_string(sid));
	return tool_result(res, failed, head);
}

static json_t *run_command(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"command", A_STR, false}, {"argv", A_ARR, false},  {"stdin", A_STR, false},
	                                  {"env", A_OBJ, false},     {"files", A_ARR, false}, {"limits", A_OBJ, false}};
	static const char *const keys[] = {"command", "argv", "stdin", "env", "files", "limits", NULL};
	if (!args_ok("run_command", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	struct req *r = native_new(c, call, pick(args, keys), msg, n);
	if (!r)
		return tool_error("%s", msg);
	if (prepare_exec(c->s, r))
		run_exec(r);
	json_t *fail = NULL, *a = native_answer(r, &fail, code, msg, n);
	native_free(r);
	return a ? run_result(a, NULL) : fail;
}

static json_t *run_in_session(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"command", A_STR, false},   {"argv", A_ARR, false}, {"stdin", A_STR, false},
	                                  {"env", A_OBJ, false},       {"cwd", A_STR, false},  {"limits", A_OBJ, false},
	                                  {"session_id", A_STR, false}};
	static const char *const keys[] = {"command", "argv", "stdin", "env", "cwd", "limits", NULL};
	if (!args_ok("run_in_session", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	json_t *fail = NULL;
	struct sess *x = call_session(c, call, args, &fail, msg, n);
	if (!x)
		return fail;
	char sid[sizeof(x->id)];
	memcpy(sid, x->id, sizeof(sid));
	sess_unref(c->s, x); /* the exec finds it again, as a native one does */
	struct req *r = native_new(c, call, pick(args, keys), msg, n);
	if (!r)
		return tool_error("%s", msg);
	snprintf(r->args.sid, sizeof(r->args.sid), "%s", sid);
	if (prepare_session_exec(c->s, r))
		run_session_exec(r);
	json_t *a = native_answer(r, &fail, code, msg, n);
	native_free(r);
	return a ? run_result(a, sid) : fail;
}

/* The language named (an id or alias), enabled; NULL with msg. */
static const struct ward_language *language(struct server *s, const char *name, char *msg, size_t n)
{
	const struct ward_language *l = ward_language_find(&s->langs, name, NULL);
	if (l && l->enabled)
		return l;
	size_t k = (size_t)snprintf(msg, n, "run_code: language '%.60s' is not enabled here; give one of: ", name);
	for (size_t i = 0, first = 1; i < s->langs.n && k < n; i++)
		if (s->langs.v[i].enabled) {
			k += (size_t)snprintf(msg + k, n - k, "%s%s", first ? "" : ", ", s->langs.v[i].id);
			first = 0;
		}
	return NULL;
}

/* A judge verdict as a run's status. */
static const char *verdict_status(const char *v, bool signalled)
{
	static const struct {
		const char *verdict, *status;
	} map[] = {
		{"AC", "ok"},   {"TLE", "timeout"}, {"MLE", "memory"}, {"OLE", "output_limit"}, {"CE", "compile_error"},
		{"IE", "error"}};
	if (v && !strcmp(v, "RE"))
		return signalled ? "signal" : "nonzero";
	for (size_t i = 0; v && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(v, map[i].verdict))
			return map[i].status;
	return "error";
}

/* The judge's answer (one test) as run_code's result. */
static json_t *code_result(json_t *a)
{
	const char *verdict = json_string_value(json_object_get(a, "verdict"));
	json_t *test = json_array_get(json_object_get(a, "tests"), 0), *comp = json_object_get(a, "compile");
	bool ce = verdict && !strcmp(verdict, "CE");
	json_t *from = ce ? comp : test;
	json_t *sig = json_object_get(from, "signal");
	json_t *o = json_pack(
		"{s:s,s:I,s:O,s:s,s:s,s:s,s:O,s:O}", "status",
		verdict_status(ce ? verdict : json_string_value(json_object_get(test, "verdict")),
	                       json_is_integer(sig)),
		"exit_code", json_integer_value(json_object_get(from, "exit_code")), "signal", sig ? sig : json_null(),
		"stdout", json_string_value(json_object_get(from, "stdout")) ?: "", "stderr",
		json_string_value(json_object_get(from, "stderr")) ?: "", "message",
		json_string_value(json_object_get(test ? test : comp, "message")) ?: "", "language",
		json_object_get(a, "language") ?: json_null(), "version", json_object_get(a, "version") ?: json_null());
	json_t *u = json_object_get(test, "usage");
	if (!u && comp) {
		json_t *cu = json_object_get(comp, "usage");
		u = json_pack("{s:I,s:I,s:I}", "wall_ms", json_integer_value(json_object_get(cu, "wall_ms")), "cpu_ms",
		              json_integer_value(json_object_get(cu, "cpu_user_ms")) +
		                      json_integer_value(json_object_get(cu, "cpu_sys_ms")),
		              "memory_kb", json_integer_value(json_object_get(cu, "max_rss_kb")));
		json_object_set_new(o, "usage", u ? u : json_object());
	} else
		json_object_set(o, "usage", u ? u : json_object());
	json_object_set_new(o, "compile",
	                    comp && json_is_object(comp)
	                            ? json_pack("{s:O,s:O,s:O,s:O}", "exit_code", json_object_get(comp, "exit_code"),
	                                        "stdout", json_object_get(comp, "stdout"), "stderr",
	                                        json_object_get(comp, "stderr"), "message",
	                                        json_object_get(comp, "message") ?: json_null())
	                            : json_null());
	const char *err = json_string_value(json_object_get(a, "error"));
	const char *st = json_string_value(json_object_get(o, "status"));
	char head[400] = "";
	if (err && err[0])
		snprintf(head, sizeof(head), "ward could not run it: %.350s", err);
	else if (ce)
		snprintf(head, sizeof(head), "the program did not compile");
	else if (strcmp(st, "ok"))
		snprintf(head, sizeof(head), "the program failed: %s%s%s", st,
		         json_string_value(json_object_get(o, "message"))[0] ? ": " : "",
		         json_string_value(json_object_get(o, "message")));
	json_decref(a);
	return tool_result(o, strcmp(st, "ok") != 0, head);
}

static json_t *run_code(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"language", A_STR, true},
	                                  {"code", A_STR, true},
	                                  {"stdin", A_STR, false},
	                                  {"files", A_ARR, false},
	                                  {"limits", A_OBJ, false}};
	if (!args_ok("run_code", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	const struct ward_language *l = language(c->s, json_string_value(json_object_get(args, "language")), msg, n);
	if (!l) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	/* POST /judge: the code is the main file, the files beside it; one test */
	json_t *files = json_pack("[{s:O}]", "content", json_object_get(args, "code"));
	json_t *more = json_object_get(args, "files");
	if (more)
		json_array_extend(files, more);
	json_t *test = json_pack("{s:s}", "id", "run");
	if (json_object_get(args, "stdin"))
		json_object_set(test, "stdin", json_object_get(args, "stdin"));
	json_t *body = json_pack("{s:s,s:o,s:[o]}", "language", l->id, "files", files, "tests", test);
	if (json_object_get(args, "limits"))
		json_object_set_new(body, "run", json_pack("{s:O}", "limits", json_object_get(args, "limits")));
	struct req *r = native_new(c, call, body, msg, n);
	if (!r)
		return tool_error("%s", msg);
	run_judge(r);
	json_t *fail = NULL, *a = native_answer(r, &fail, code, msg, n);
	native_free(r);
	return a ? code_result(a) : fail;
}

static json_t *list_languages(struct mcp_conn *c, json_t *args, int *code, char *msg, size_t n)
{
	if (!args_ok("list_languages", args, NULL, 0, msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	char *j = judge_languages_to_json(&c->s->langs, false);
	json_t *a = j ? json_loads(j, 0, NULL) : NULL;
	free(j);
	if (!a)
		return tool_error("out of memory");
	return tool_result(json_pack("{s:o}", "languages", a), false, NULL);
}

/* ---- files of the session ---- */

/* path checked with the guard of SPEC §6 (empty only when empty_ok). */
static bool path_ok(const char *tool, const char *path, bool empty_ok, char *msg, size_t n)
{
	char why[200];
	if (!path[0] && empty_ok)
		return true;
	if (pathguard_check(path, strlen(path), why, sizeof(why)) < 0) {
		snprintf(msg, n, "%s: path '%.100s' refused: %s; give a path relative to /work", tool, path, why);
		return false;
	}
	return true;
}

static json_t *write_file(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"path", A_STR, true},
	                                  {"content", A_STR, true},
	                                  {"encoding", A_STR, false},
	                                  {"session_id", A_STR, false}};
	const char *path = json_string_value(json_object_get(args, "path"));
	const char *enc = json_string_value(json_object_get(args, "encoding"));
	if (!args_ok("write_file", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n) ||
	    !path_ok("write_file", path, false, msg, n) ||
	    (enc && strcmp(enc, "utf-8") && strcmp(enc, "base64") &&
	     snprintf(msg, n, "write_file: encoding must be utf-8 or base64") > 0)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	json_t *content = json_object_get(args, "content");
	size_t len = json_string_length(content);
	unsigned char *bytes = NULL;
	if (enc && !strcmp(enc, "base64") && !(bytes = base64_decode(json_string_value(content), len, &len))) {
		snprintf(msg, n, "write_file: content is not base64");
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	json_t *fail = NULL;
	struct sess *x = call_session(c, call, args, &fail, msg, n);
	if (!x) {
		free(bytes);
		return fail;
	}
	char err[512] = "";
	int rc = ward_session_write(x->ws, path, bytes ? (const void *)bytes : json_string_value(content), len, 0, err,
	                            sizeof(err));
	free(bytes);
	json_t *res = rc < 0 ? tool_error("write_file: %s: %s", path, err[0] ? err : strerror(-rc))
	                     : tool_result(json_pack("{s:s,s:s,s:I}", "session_id", x->id, "path", path, "size",
	                                             (json_int_t)len),
	                                   false, NULL);
	sess_unref(c->s, x);
	return res;
}

static json_t *read_file(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"path", A_STR, true}, {"session_id", A_STR, false}};
	const char *path = json_string_value(json_object_get(args, "path"));
	if (!args_ok("read_file", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n) ||
	    !path_ok("read_file", path, false, msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	json_t *fail = NULL;
	struct sess *x = call_session(c, call, args, &fail, msg, n);
	if (!x)
		return fail;
	unsigned char *data = NULL;
	size_t len = 0;
	char err[512] = "";
	int rc = ward_session_read(x->ws, path, MCP_READ_MAX, &data, &len, err, sizeof(err));
	json_t *res;
	if (rc < 0)
		res = rc == -EFBIG ? tool_error("read_file: %s is larger than %u bytes; read it in parts with "
		                                "run_in_session (head, tail, split)",
		                                path, MCP_READ_MAX)
		                   : tool_error("read_file: %s: %s", path, err[0] ? err : strerror(-rc));
	else {
		bool text = dialect_utf8(data, len) && !memchr(data, 0, len);
		char *b64 = text ? NULL : base64_encode(data, len);
		json_t *content = text ? json_stringn((const char *)data, len) : b64 ? json_string(b64) : NULL;
		free(b64);
		res = content ? tool_result(json_pack("{s:s,s:s,s:I,s:s,s:o}", "session_id", x->id, "path", path,
		                                      "size", (json_int_t)len, "encoding", text ? "utf-8" : "base64",
		                                      "content", content),
		                            false, NULL)
		              : tool_error("out of memory");
	}
	free(data);
	sess_unref(c->s, x);
	return res;
}

static const char *type_name(char t)
{
	return t == 'f' ? "file" : t == 'd' ? "directory" : t == 'l' ? "symlink" : "other";
}

static json_t *list_files(struct mcp_conn *c, struct mcp_call *call, json_t *args, int *code, char *msg, size_t n)
{
	static const struct arg spec[] = {{"path", A_STR, false}, {"session_id", A_STR, false}};
	const char *path = json_string_value(json_object_get(args, "path"));
	if (!path)
		path = "";
	if (!args_ok("list_files", args, spec, sizeof(spec) / sizeof(spec[0]), msg, n) ||
	    !path_ok("list_files", path, true, msg, n)) {
		*code = MCP_INVALID_PARAMS;
		return NULL;
	}
	json_t *fail = NULL;
	struct sess *x = call_session(c, call, args, &fail, msg, n);
	if (!x)
		return fail;
	struct ward_dirent *d = NULL;
	size_t k = 0;
	bool cut = false;
	char err[512] = "";
	int rc = ward_session_list_max(x->ws, path, MCP_LIST_MAX, 1u << 20, &d, &k, &cut, err, sizeof(err));
	json_t *res;
	if (rc < 0)
		res = tool_error("list_files: %s: %s", path[0] ? path : "/work", err[0] ? err : strerror(-rc));
	else {
		json_t *e = json_array();
		for (size_t i = 0; i < k; i++)
			json_array_append_new(e, json_pack("{s:s,s:s,s:I,s:i,s:f}", "name", d[i].name, "type",
			                                   type_name(d[i].type), "size", (json_int_t)d[i].size, "mode",
			                                   (int)d[i].mode, "mtime", d[i].mtime));
		res = tool_result(json_pack("{s:s,s:s,s:o,s:b}", "session_id", x->id, "path", path, "entries", e,
		                            "truncated", cut),
		                  false, NULL);
		ward_session_list_free(d, k);
	}
	sess_unref(c->s, x);
	return res;
}

json_t *mcp_tool_call(struct mcp_conn *c, struct mcp_call *call, const char *name, json_t *args, int *code, char *msg,
                      size_t n)
{
	if (!strcmp(name, "run_code"))
		return run_code(c, call, args, code, msg, n);
	if (!strcmp(name, "run_command"))
		return run_command(c, call, args, code, msg, n);
	if (!strcmp(name, "run_in_session"))
		return run_in_session(c, call, args, code, msg, n);
	if (!strcmp(name, "write_file"))
		return write_file(c, call, args, code, msg, n);
	if (!strcmp(name, "read_file"))
		return read_file(c, call, args, code, msg, n);
	if (!strcmp(name, "list_files"))
		return list_files(c, call, args, code, msg, n);
	if (!strcmp(name, "list_languages"))
		return list_languages(c, args, code, msg, n);
	*code = MCP_INVALID_PARAMS;
	snprintf(msg, n, "unknown tool: %.80s (see tools/list)", name);
	return NULL;
}
