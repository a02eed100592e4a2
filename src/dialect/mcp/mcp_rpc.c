/* mcp_rpc.c — the Model Context Protocol's JSON-RPC 2.0, whatever carries
 * it (SPEC §21): a message read and checked (one object: MCP has had no
 * batches since 2025-06-18), initialize with its version and capability
 * negotiation, ping, tools/list, tools/call handed to the transport as a
 * call, notifications/cancelled, and the progress of calls that asked for
 * it (params._meta.progressToken).
 *
 * Owns a connection's record and its calls in flight.  Never runs a
 * sandbox itself (mcp_tools.c does, on the transport's worker) and never
 * writes to a transport: it makes the messages, the transport sends them. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/mcp/mcp.h"

/* The revisions ward speaks, newest first: a client that asks for one of
 * them gets it, any other the newest (the client then decides). */
static const char *const versions[] = {MCP_LATEST_VERSION, "2025-06-18", "2025-03-26", "2024-11-05"};

bool mcp_version_known(const char *v)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(v, versions[i]))
			return true;
	return false;
}

void mcp_conn_init(struct mcp_conn *c, struct server *s, const char *who)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	snprintf(c->who, sizeof(c->who), "%s", who);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->mk, NULL);
}

void mcp_conn_end(struct mcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	for (struct mcp_call *k = c->calls; k; k = k->next)
		k->cancel = 1;
	pthread_mutex_unlock(&c->lock);
	mcp_session_end(c);
}

static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

char *mcp_error(const json_t *id, int code, const char *fmt, ...)
{
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return dump(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", "code",
	                      code, "message", msg));
}

static char *result(const json_t *id, json_t *res)
{
	return dump(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res));
}

/* An id as MCP has it: a string or an integer (never null). */
static bool id_ok(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

enum mcp_kind mcp_read(const char *buf, size_t len, size_t max_values, json_t **msg, char **reply)
{
	char err[400];
	*msg = NULL;
	*reply = NULL;
	if (ward_json_check_values(buf, len, max_values, err, sizeof(err)) < 0) {
		*reply = mcp_error(NULL, MCP_INVALID_REQUEST, "%s", err);
		return MCP_BAD;
	}
	json_error_t je;
	json_t *m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!m) {
		*reply = mcp_error(NULL, MCP_PARSE_ERROR,
		                   "parse error: %s (line %d, column %d): send one JSON-RPC 2.0 "
		                   "message as a JSON object",
		                   je.text, je.line, je.column);
		return MCP_BAD;
	}
	json_t *id = json_object_get(m, "id"), *method = json_object_get(m, "method");
	const char *why = NULL;
	if (json_is_array(m))
		why = "a batch (JSON array): MCP takes one message at a time since 2025-06-18";
	else if (!json_is_object(m))
		why = "the message is not a JSON object";
	else if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	         strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0"))
		why = "\"jsonrpc\" must be \"2.0\"";
	else if (method && !json_is_string(method))
		why = "\"method\" must be a string";
	else if (!method && !json_object_get(m, "result") && !json_object_get(m, "error"))
		why = "neither a request (\"method\") nor a response (\"result\" or \"error\")";
	else if (id && !id_ok(id))
		why = "\"id\" must be a string or an integer";
	else if (method && json_object_get(m, "params") && !json_is_object(json_object_get(m, "params")))
		why = "\"params\" must be an object";
	if (why) {
		*reply = mcp_error(id && id_ok(id) ? id : NULL, MCP_INVALID_REQUEST, "invalid request: %s", why);
		json_decref(m);
		return MCP_BAD;
	}
	*msg = m;
	return !method ? MCP_RESPONSE : id ? MCP_REQUEST : MCP_NOTIFICATION;
}

/* initialize: the client's version if ward speaks it, else ward's newest;
 * ward offers tools (a list that never changes) and nothing else. */
static char *initialize(struct mcp_conn *c, const json_t *id, const json_t *params)
{
	const json_t *pv = json_object_get(params, "protocolVersion");
	if (!json_is_string(pv) || !json_is_object(json_object_get(params, "capabilities")) ||
	    !json_is_object(json_object_get(params, "clientInfo")))
		return mcp_error(id, MCP_INVALID_PARAMS,
		                 "initialize: give protocolVersion (a string), capabilities "
		                 "and clientInfo (objects)");
	const char *want = json_string_value(pv);
	pthread_mutex_lock(&c->lock);
	snprintf(c->proto, sizeof(c->proto), "%s", mcp_version_known(want) ? want : MCP_LATEST_VERSION);
	char v[16];
	memcpy(v, c->proto, sizeof(v));
	pthread_mutex_unlock(&c->lock);
	json_t *res = json_pack(
		"{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", v, "capabilities", "tools", "listChanged",
		0, "serverInfo", "name", "ward", "title", "ward: a sandbox for untrusted code", "version", WARD_VERSION,
		"instructions",
		"Every tool call runs in a sandbox of its own (namespaces, seccomp, cgroup limits) with no network. "
		"run_code runs a program in a language of list_languages; run_command runs a shell command. "
		"write_file, read_file, list_files and run_in_session share one sandbox kept for this connection "
		"(its /work persists between calls).");
	return result(id, res);
}

/* Cancel the call whose id the notification names (none: nothing). */
static void cancelled(struct mcp_conn *c, const json_t *params)
{
	const json_t *rid = json_object_get(params, "requestId");
	if (!rid)
		return;
	pthread_mutex_lock(&c->lock);
	for (struct mcp_call *k = c->calls; k; k = k->next)
		if (json_equal(k->id, rid))
			k->cancel = 1;
	pthread_mutex_unlock(&c->lock);
}

static const char *str_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* tools/call: the tool named and its arguments checked as far as the
 * shape goes; the call registered. */
static char *tool_call(struct mcp_conn *c, json_t *id, json_t *params, struct mcp_call **call)
{
	const char *name = str_of(params, "name");
	json_t *args = json_object_get(params, "arguments");
	if (!name)
		return mcp_error(id, MCP_INVALID_PARAMS, "tools/call: \"name\" must be a tool's name (see tools/list)");
	if (args && !json_is_object(args))
		return mcp_error(id, MCP_INVALID_PARAMS, "tools/call: \"arguments\" must be an object");
	json_t *meta = json_object_get(params, "_meta"), *token = json_object_get(meta, "progressToken");
	struct mcp_call *k = calloc(1, sizeof(*k));
	if (!k)
		return mcp_error(id, MCP_INTERNAL_ERROR, "out of memory");
	k->id = json_incref(id);
	k->token = (json_is_string(token) || json_is_integer(token)) ? json_incref(token) : NULL;
	k->params = json_incref(params);
	k->t0 = now_mono();
	/* progress's total: the timeout it asks for, else none (the default is
	 * the native request's: /exec's, or /judge's for run_code) */
	json_t *limit = json_object_get(json_object_get(args, "limits"), "timeout_s");
	k->total = json_is_number(limit) && json_number_value(limit) > 0 ? json_number_value(limit) : 0;
	k->sent = -1;
	pthread_mutex_lock(&c->lock);
	k->next = c->calls;
	c->calls = k;
	pthread_mutex_unlock(&c->lock);
	*call = k;
	return NULL;
}

char *mcp_answer(struct mcp_conn *c, json_t *msg, struct mcp_call **call)
{
	*call = NULL;
	const char *method = str_of(msg, "method");
	json_t *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params");
	if (!id) { /* a notification: nothing is ever answered */
		if (!strcmp(method, "notifications/initialized")) {
			pthread_mutex_lock(&c->lock);
			c->initialized = true;
			pthread_mutex_unlock(&c->lock);
		} else if (!strcmp(method, "notifications/cancelled"))
			cancelled(c, params);
		return NULL;
	}
	if (!strcmp(method, "initialize"))
		return initialize(c, id, params);
	if (!strcmp(method, "ping"))
		return result(id, json_object());
	pthread_mutex_lock(&c->lock);
	bool ready = c->proto[0] != 0;
	pthread_mutex_unlock(&c->lock);
	if (!ready)
		return mcp_error(id, MCP_INVALID_REQUEST, "%s before initialize: send initialize first", method);
	if (!strcmp(method, "tools/list"))
		return result(id, mcp_tools_list());
	if (!strcmp(method, "tools/call"))
		return params ? tool_call(c, id, params, call)
		              : mcp_error(id, MCP_INVALID_PARAMS, "tools/call: give params {\"name\", \"arguments\"}");
	return mcp_error(id, MCP_METHOD_NOT_FOUND,
	                 "method not found: %.100s (ward offers initialize, ping, "
	                 "tools/list and tools/call)",
	                 method);
}

char *mcp_call_run(struct mcp_conn *c, struct mcp_call *call)
{
	if (call->cancel) /* cancelled while it waited: it never runs */
		return NULL;
	int code = 0;
	char msg[700] = "";
	json_t *args = json_object_get(call->params, "arguments");
	json_t *owned = args ? NULL : json_object();
	json_t *res =
		mcp_tool_call(c, call, str_of(call->params, "name"), args ? args : owned, &code, msg, sizeof(msg));
	json_decref(owned);
	if (call->cancel) { /* MCP: a cancelled request gets no response */
		json_decref(res);
		return NULL;
	}
	if (!res)
		return mcp_error(call->id, code ? code : MCP_INTERNAL_ERROR, "%s", msg[0] ? msg : "out of memory");
	return result(call->id, res);
}

void mcp_call_begin(struct mcp_conn *c, struct mcp_call *call, void *arg,
                    void (*emit)(struct mcp_call *call, char *json, void *arg), void *emit_arg)
{
	pthread_mutex_lock(&c->lock);
	call->arg = arg;
	pthread_mutex_unlock(&c->lock);
	mcp_progress(c, emit, emit_arg);
}

void mcp_call_done(struct mcp_conn *c, struct mcp_call *call)
{
	pthread_mutex_lock(&c->lock);
	for (struct mcp_call **pp = &c->calls; *pp; pp = &(*pp)->next)
		if (*pp == call) {
			*pp = call->next;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	json_decref(call->id);
	json_decref(call->token);
	json_decref(call->params);
	free(call);
}

void mcp_calls_each(struct mcp_conn *c, void (*fn)(struct mcp_call *call, void *arg), void *arg)
{
	pthread_mutex_lock(&c->lock);
	for (struct mcp_call *k = c->calls; k; k = k->next)
		fn(k, arg);
	pthread_mutex_unlock(&c->lock);
}

void mcp_progress(struct mcp_conn *c, void (*emit)(struct mcp_call *call, char *json, void *arg), void *arg)
{
	double t = now_mono();
	pthread_mutex_lock(&c->lock);
	for (struct mcp_call *k = c->calls; k; k = k->next) {
		double done = floor((t - k->t0) * 10) / 10; /* seconds so far, to a tenth */
		if (!k->token || !k->arg || k->cancel || (k->sent >= 0 && done < k->sent + 1))
			continue;
		k->sent = done;
		char m[120];
		snprintf(m, sizeof(m), "running for %.1f s", done);
		json_t *n = json_pack("{s:s,s:s,s:{s:O,s:f,s:s}}", "jsonrpc", "2.0", "method", "notifications/progress",
		                      "params", "progressToken", k->token, "progress", done, "message", m);
		if (n && k->total > 0)
			json_object_set_new(json_object_get(n, "params"), "total", json_real(k->total));
		char *j = dump(n);
		if (j)
			emit(k, j, arg);
	}
	pthread_mutex_unlock(&c->lock);
}
