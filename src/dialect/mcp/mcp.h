/* mcp.h — the Model Context Protocol (SPEC §21): ward as an MCP server,
 * one more foreign API above the server: JSON-RPC in, native requests out.
 *
 *   mcp_rpc.c    the protocol, whatever carries it: a message read and
 *                checked, initialize and its negotiation, ping, tools/list,
 *                tools/call handed to the transport as a call, cancellation,
 *                progress notifications; a connection's calls in flight
 *   mcp_tools.c  the tools: their schemas, and each call made a native
 *                request (POST /exec, POST /judge, the session endpoints) run
 *                on the calling thread, its answer made a tool result
 *   mcp_stdio.c  `ward mcp`: newline-delimited JSON-RPC on stdin/stdout, a
 *                headless server (ward serve's options, limits and maxima)
 *                with worker threads of its own
 *   mcp_http.c   `ward serve --mcp ADDR`: the streamable HTTP transport as a
 *                listener (listeners.c), on the server's tokens, admission,
 *                quotas and workers; MCP sessions by Mcp-Session-Id
 *
 * Uses server/server.h; nothing of the server or below includes this. */
#ifndef WARD_MCP_H
#define WARD_MCP_H

#include <jansson.h>
#include <pthread.h>

#include "server/server.h"

/* JSON-RPC's error codes. */
#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603

/* The protocol revision ward prefers (the newest it speaks). */
#define MCP_LATEST_VERSION "2025-11-25"

/* One tools/call in flight. */
struct mcp_call {
	json_t *id;          /* the request's id (held) */
	json_t *token;       /* params._meta.progressToken (held), or NULL: no progress wanted */
	json_t *params;      /* the call's params (held) */
	volatile int cancel; /* notifications/cancelled, or the connection ended: its run is killed */
	double t0;           /* when it began (now_mono) */
	double total;        /* the timeout_s it asks for: progress's total (0: none given) */
	double sent;         /* the progress last sent, -1 none */
	void *arg;           /* the transport's, once its run began (HTTP: the request it answers), or NULL */
	struct mcp_call *next;
};

/* One MCP connection: stdio's process, or an HTTP session. */
struct mcp_conn {
	struct server *s;
	char who[96];         /* its client: a token's name or an address; "stdio" */
	char proto[16];       /* the negotiated protocol version, "" before initialize */
	bool initialized;     /* notifications/initialized came */
	pthread_mutex_t lock; /* calls, sid */
	struct mcp_call *calls;
	pthread_mutex_t mk; /* one making of its session at a time */
	char sid[100];      /* the ward session kept for it (SPEC §11), "" none yet */
};

/* What a message is. */
enum mcp_kind { MCP_BAD, MCP_REQUEST, MCP_NOTIFICATION, MCP_RESPONSE };

/* mcp_rpc.c */
void mcp_conn_init(struct mcp_conn *c, struct server *s, const char *who);
/* Cancel its calls; its session ends (from a thread that may end one). */
void mcp_conn_end(struct mcp_conn *c);
/* One message: *msg (held) for a request, notification or response; for
 * MCP_BAD *reply is the JSON-RPC error to send (malloc'd). */
enum mcp_kind mcp_read(const char *buf, size_t len, size_t max_values, json_t **msg, char **reply);
/* A request or notification on c: the response (malloc'd; NULL for a
 * notification), or NULL with *call set: a tools/call, registered on c,
 * for the transport to run (mcp_call_run) and end (mcp_call_done). */
char *mcp_answer(struct mcp_conn *c, json_t *msg, struct mcp_call **call);
/* Run call on this thread (one that outlives the sandboxes it makes: a
 * worker); its response, or NULL when it was cancelled (none is sent). */
char *mcp_call_run(struct mcp_conn *c, struct mcp_call *call);
/* The call's run begins: its progress goes through the transport's arg
 * (never NULL) from now on, the first (0) at once. */
void mcp_call_begin(struct mcp_conn *c, struct mcp_call *call, void *arg,
                    void (*emit)(struct mcp_call *call, char *json, void *arg), void *emit_arg);
void mcp_call_done(struct mcp_conn *c, struct mcp_call *call);
/* The calls of c that want progress and had none for a second (or none
 * yet): emit gets each notification (taking it), under c's lock. */
void mcp_progress(struct mcp_conn *c, void (*emit)(struct mcp_call *call, char *json, void *arg), void *arg);
/* fn on each call of c, under c's lock. */
void mcp_calls_each(struct mcp_conn *c, void (*fn)(struct mcp_call *call, void *arg), void *arg);
/* A JSON-RPC error response (malloc'd); id NULL: null. */
char *mcp_error(const json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether v is a protocol version ward speaks. */
bool mcp_version_known(const char *v);

/* mcp_tools.c */
/* tools/list's result. */
json_t *mcp_tools_list(void);
/* A CallToolResult, or NULL with *code and msg a JSON-RPC error (unknown
 * tool, arguments of the wrong shape or over the runner's maxima). */
json_t *mcp_tool_call(struct mcp_conn *c, struct mcp_call *call, const char *name, json_t *args, int *code, char *msg,
                      size_t n);
/* c's session ends (its connection is over): from any thread. */
void mcp_session_end(struct mcp_conn *c);

/* mcp_http.c */
extern const struct api mcp_api;

#endif
