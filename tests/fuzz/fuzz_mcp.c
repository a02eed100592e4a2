/* libFuzzer target for MCP's message reader and dispatcher
 * (src/dialect/mcp/mcp_rpc.c: JSON-RPC in, SPEC §21): `make fuzz` builds
 * build/fuzz_mcp with clang; run it with a corpus directory, e.g.
 *     build/fuzz_mcp -max_total_time=60 build/fuzz-mcp-corpus
 * Each input is split into lines, each line read as one message (as
 * `ward mcp` reads stdin) and answered on one connection; the process
 * aborts when an answer is not a JSON-RPC 2.0 object.  tools/call is
 * registered and dropped, never run (no sandbox here): the tools and the
 * server beneath are stubbed. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dialect/mcp/mcp.h"

double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

json_t *mcp_tools_list(void)
{
	return json_pack("{s:[]}", "tools");
}

json_t *mcp_tool_call(struct mcp_conn *c, struct mcp_call *call, const char *name, json_t *args, int *code,
		      char *msg, size_t n)
{
	abort(); /* never run here */
}

void mcp_session_end(struct mcp_conn *c)
{
}

static void check_answer(char *a)
{
	if (!a)
		return;
	json_t *j = json_loads(a, 0, NULL);
	if (!json_is_object(j) || strcmp(json_string_value(json_object_get(j, "jsonrpc")) ?: "", "2.0") ||
	    (!json_object_get(j, "result") == !json_object_get(j, "error")))
		abort();
	json_decref(j);
	free(a);
}

/* A progress notification: JSON-RPC 2.0, the call's token. */
static void check_note(struct mcp_call *call, char *json, void *arg)
{
	json_t *j = json_loads(json, 0, NULL);
	if (!json_is_object(j) || strcmp(json_string_value(json_object_get(j, "method")) ?: "", "notifications/progress") ||
	    !json_equal(json_object_get(json_object_get(j, "params"), "progressToken"), call->token))
		abort();
	json_decref(j);
	free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct server s;
	struct mcp_conn c;
	mcp_conn_init(&c, &s, "fuzz");
	for (size_t start = 0; start < size;) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) : size;
		json_t *m;
		char *reply;
		enum mcp_kind k = mcp_read((const char *)data + start, end - start, WARD_JSON_MAX_VALUES, &m, &reply);
		check_answer(reply);
		if (k == MCP_REQUEST || k == MCP_NOTIFICATION) {
			struct mcp_call *call = NULL;
			check_answer(mcp_answer(&c, m, &call));
			if (call) {
				mcp_call_begin(&c, call, &c, check_note, NULL);
				mcp_call_done(&c, call);
			}
		}
		json_decref(m);
		start = end + 1;
	}
	while (c.calls)
		mcp_call_done(&c, c.calls);
	pthread_mutex_destroy(&c.lock);
	pthread_mutex_destroy(&c.mk);
	return 0;
}
