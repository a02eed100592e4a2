/* test_mcp.c — MCP's protocol layer (SPEC §21, src/dialect/mcp/mcp_rpc.c),
 * no sandbox: messages read and classified, hostile ones answered with the
 * right JSON-RPC error, version negotiation, tools/list's schemas (the
 * static JSON parses and names every tool), a call registered, cancelled
 * by notifications/cancelled, and its progress notifications. */
#include <jansson.h>
#include <stdlib.h>

#include "dialect/mcp/mcp.h"
#include "unit.h"

static int read_code(const char *msg, enum mcp_kind *k)
{
	json_t *m;
	char *reply;
	*k = mcp_read(msg, strlen(msg), WARD_JSON_MAX_VALUES, &m, &reply);
	json_decref(m);
	if (!reply)
		return 0;
	json_t *r = json_loads(reply, 0, NULL);
	free(reply);
	int code = (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
	json_decref(r);
	return code;
}

/* mcp_answer of text on c: the response parsed (NULL: none), *call set. */
static json_t *answer(struct mcp_conn *c, const char *text, struct mcp_call **call)
{
	json_t *m;
	char *reply;
	mcp_read(text, strlen(text), WARD_JSON_MAX_VALUES, &m, &reply);
	free(reply);
	char *r = m ? mcp_answer(c, m, call) : NULL;
	json_decref(m);
	json_t *j = r ? json_loads(r, 0, NULL) : NULL;
	free(r);
	return j;
}

static int notes;
static void count(struct mcp_call *call, char *json, void *arg)
{
	json_t *n = json_loads(json, 0, NULL);
	if (!strcmp(json_string_value(json_object_get(n, "method")), "notifications/progress") &&
	    json_equal(json_object_get(json_object_get(n, "params"), "progressToken"), call->token))
		notes++;
	json_decref(n);
	free(json);
}

void test_mcp(void)
{
	enum mcp_kind k;
	CHECK("mcp: malformed JSON is -32700", read_code("{\"jsonrpc\":", &k) == MCP_PARSE_ERROR && k == MCP_BAD);
	CHECK("mcp: a batch is -32600", read_code("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", &k) == -32600);
	CHECK("mcp: jsonrpc 1.0 is -32600", read_code("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", &k) == -32600);
	CHECK("mcp: an object id is -32600", read_code("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", &k) == -32600);
	CHECK("mcp: a null id is -32600", read_code("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &k) == -32600);
	CHECK("mcp: a method that is a number is -32600", read_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", &k) == -32600);
	CHECK("mcp: params an array is -32600",
	      read_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}", &k) == -32600);
	CHECK("mcp: a duplicate key is refused", read_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", &k) ==
						      MCP_PARSE_ERROR);
	CHECK("mcp: a request", read_code("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}", &k) == 0 && k == MCP_REQUEST);
	CHECK("mcp: a notification", read_code("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &k) == 0 &&
					     k == MCP_NOTIFICATION);
	CHECK("mcp: a response", read_code("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &k) == 0 && k == MCP_RESPONSE);
	char many[2 * WARD_JSON_MAX_VALUES + 64];
	size_t n = (size_t)sprintf(many, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":[");
	for (int i = 0; i < WARD_JSON_MAX_VALUES; i++)
		n += (size_t)sprintf(many + n, "0,");
	sprintf(many + n, "0]}}");
	CHECK("mcp: more values than a message may hold is -32600", read_code(many, &k) == -32600);

	struct server s;
	memset(&s, 0, sizeof(s));
	s.o.defaults.timeout_s = 30;
	struct mcp_conn c;
	mcp_conn_init(&c, &s, "unit");
	struct mcp_call *call = NULL;
	json_t *r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &call);
	CHECK("mcp: tools/list before initialize is -32600",
	      json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32600);
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		       "\"2099-01-01\",\"capabilities\":{},\"clientInfo\":{\"name\":\"u\",\"version\":\"1\"}}}", &call);
	CHECK("mcp: an unknown version gets ward's newest",
	      !strcmp(json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")) ?: "",
		      MCP_LATEST_VERSION));
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		       "\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"u\",\"version\":\"1\"}}}", &call);
	CHECK("mcp: a version ward speaks is answered as asked",
	      !strcmp(json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")) ?: "",
		      "2025-03-26"));
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":3}}", &call);
	CHECK("mcp: initialize without its params' shapes is -32602",
	      json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32602);
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}", &call);
	json_t *tools = json_object_get(json_object_get(r, "result"), "tools");
	bool schemas = json_array_size(tools) == 7;
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
		schemas = schemas && json_is_string(json_object_get(t, "name")) &&
			  json_is_object(json_object_get(t, "inputSchema")) && json_is_object(json_object_get(t, "outputSchema"));
	CHECK("mcp: tools/list names seven tools, each with both schemas", schemas);
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"prompts/list\"}", &call);
	CHECK("mcp: an unknown method is -32601",
	      json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32601);
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\","
		       "\"arguments\":[]}}", &call);
	CHECK("mcp: arguments not an object is -32602",
	      !call && json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32602);
	json_decref(r);
	r = answer(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"c8\",\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\","
		       "\"arguments\":{},\"_meta\":{\"progressToken\":\"tok\"}}}", &call);
	CHECK("mcp: tools/call is handed over as a call", !r && call && json_is_string(call->token));
	notes = 0;
	mcp_progress(&c, count, NULL);
	CHECK("mcp: no progress before its run begins", notes == 0);
	mcp_call_begin(&c, call, &c, count, NULL);
	CHECK("mcp: progress when its run begins", notes == 1);
	mcp_progress(&c, count, NULL);
	CHECK("mcp: no second progress within the second", notes == 1);
	call->t0 -= 1.5;
	mcp_progress(&c, count, NULL);
	CHECK("mcp: progress again a second later", notes == 2);
	json_decref(answer(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":8}}",
			   &call));
	struct mcp_call *k8 = c.calls;
	CHECK("mcp: a cancel of another id (8 is not \"c8\") leaves it", k8 && !k8->cancel);
	json_decref(answer(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":"
			       "\"c8\"}}",
			   &call));
	CHECK("mcp: notifications/cancelled sets its call's cancel", k8 && k8->cancel);
	mcp_call_done(&c, k8);
	CHECK("mcp: the call is gone once done", c.calls == NULL);
	pthread_mutex_destroy(&c.lock);
	pthread_mutex_destroy(&c.mk);
}
