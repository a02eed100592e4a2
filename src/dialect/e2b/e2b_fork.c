/* e2b_fork.c — POST /sandboxes/{id}/fork {"count": n, "timeout": s}
 * (SPEC §18, issue 32.4): n new running sandboxes, each with a copy of the
 * source's files at that moment (libward's ward_session_fork, on a maker
 * thread: the new sessions' PID 1s live as long as the server).  Files
 * only: no process of the source is copied, and the source runs on (E2B
 * copies memory too; docs/SPEC.md says the difference).  Each new sandbox
 * is the source's create body again (template, sizes, network, lifecycle)
 * with tokens of its own.  The answer is 201 and one entry per fork,
 * {"sandbox": ...} or {"error": {code, message}} (one over --max-sessions
 * is a 429 there, the others made). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"

#define FORK_MAX 100                /* E2B's own bound on count */
#define FORK_DEFAULT_TIMEOUT_S 15.0 /* E2B's default for a fork (dts:2531) */

static json_t *fork_error(unsigned code, const char *msg)
{
	return json_pack("{s:{s:i,s:s}}", "error", "code", (int)code, "message", msg);
}

enum MHD_Result e2b_fork(struct ereq *q)
{
	struct e2b *e = q->e;
	json_t *b = q->len ? json_loadb(q->body, q->len, 0, NULL) : json_object();
	json_t *jc = json_object_get(b, "count"), *jt = json_object_get(b, "timeout");
	bool bad = !json_is_object(b) || (jc && !json_is_integer(jc)) || (jt && !json_is_number(jt));
	json_int_t count = jc && json_is_integer(jc) ? json_integer_value(jc) : 1;
	double ttl = jt && json_is_number(jt) ? json_number_value(jt) : FORK_DEFAULT_TIMEOUT_S;
	json_decref(b);
	if (bad || count < 1 || count > FORK_MAX || ttl <= 0)
		return e2b_api_error(q, 400, "give {\"count\": 1 to %d, \"timeout\": seconds more than 0}", FORK_MAX);
	struct e2b_sbx *x = e2b_own(q, q->arg);
	if (!x)
		return e2b_not_found(q, q->arg);
	if (e2b_is_paused(e, x)) {
		e2b_sbx_put(e, x);
		return e2b_api_error(q, 409, "sandbox '%s' is paused and cannot be forked; resume it first (connect)",
		                     q->arg);
	}
	struct sess *src = e2b_sess(e, x);
	if (!src) {
		e2b_sbx_put(e, x);
		return e2b_not_found(q, q->arg);
	}
	json_t *out = json_array();
	for (json_int_t i = 0; i < count; i++) {
		char err[600];
		struct sess *slot;
		struct ward_session *ws;
		double t;
		unsigned code = e2b_make(e, x->owner, x->recipe, ttl, src->ws, NULL, &slot, &ws, &t, err, sizeof(err));
		if (code) {
			json_array_append_new(out, fork_error(code, err));
			continue;
		}
		struct e2b_sbx *y = e2b_record_like(e, x, slot, t);
		if (!y) {
			sess_commit(q->s, slot, NULL, 0, 0);
			ward_session_destroy(ws);
			json_array_append_new(out, fork_error(500, "out of memory for the sandbox's record"));
			continue;
		}
		sess_commit(q->s, slot, ws, t, t + 1);
		e2b_list_add(e, y);
		log_event(q->s, "e2b-sandbox-fork", "%s from %s for %s", y->id, x->id, q->who);
		json_array_append_new(out, json_pack("{s:o}", "sandbox", e2b_sandbox_json(e, y)));
	}
	sess_unref(q->s, src);
	e2b_sbx_put(e, x);
	return e2b_answer_json(q, 201, out);
}
