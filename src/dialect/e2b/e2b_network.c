/* e2b_network.c — PUT /sandboxes/{id}/network (updateNetwork; SPEC §18,
 * issue 32.6): the running sandbox's egress allow-list replaced whole,
 * within the operator's ceiling (--egress-allow, core/egress.c), for new
 * connections (its proxy's rules swapped under their lock; connections
 * relaying go on).
 *
 * E2B's body, read as ward's allow-list (research note §5):
 *   allow_internet_access false, or denyOut with 0.0.0.0/0 and no
 *   allowOut: nothing is reached;
 *   allowOut: those names and addresses (a name needs 0.0.0.0/0 in
 *   denyOut, as E2B asks);
 *   {}: what the sandbox gets by default, the operator's ceiling.
 * ward's egress is an allow-list: denyOut may name only all traffic
 * (0.0.0.0/0, ::/0); rules and egressProxy are not offered (403, as E2B
 * answers without their feature).  A sandbox made without egress (no
 * allowOut at create and no --egress-allow, or allow_internet_access
 * false) has no proxy to change: 409 naming that. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/request.h"
#include "dialect/e2b/e2b_int.h"

static bool is_all_traffic(const char *s)
{
	return strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "::/0") == 0;
}

/* An IP literal (what E2B lets allowOut hold without ALL_TRAFFIC denied). */
static bool is_address(const char *s)
{
	unsigned char b[16];
	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* The new list from the body into allow (*n): 0, or the status with why in err. */
static unsigned network_parse(struct server *s, json_t *b, const char **allow, size_t *n, char *err, size_t errlen)
{
	*n = 0;
	json_t *ao = json_object_get(b, "allowOut"), *dout = json_object_get(b, "denyOut");
	json_t *rules = json_object_get(b, "rules"), *proxy = json_object_get(b, "egressProxy");
	if ((rules && !json_is_null(rules) && !(json_is_object(rules) && !json_object_size(rules))) ||
	    (proxy && !json_is_null(proxy))) {
		snprintf(err, errlen,
		         "network rules and egressProxy are not offered by this runner: give allowOut and "
		         "denyOut only");
		return 403;
	}
	if ((ao && !json_is_array(ao) && !json_is_null(ao)) || (dout && !json_is_array(dout) && !json_is_null(dout))) {
		snprintf(err, errlen, "allowOut and denyOut: arrays of strings");
		return 400;
	}
	bool deny_all = false;
	size_t i;
	json_t *v;
	json_array_foreach(dout, i, v)
	{
		if (!json_is_string(v) || !is_all_traffic(json_string_value(v))) {
			snprintf(err, errlen,
			         "denyOut: this runner's egress is an allow-list; denyOut may only hold "
			         "0.0.0.0/0 (ALL_TRAFFIC): list what may be reached in allowOut");
			return 400;
		}
		deny_all = true;
	}
	json_array_foreach(ao, i, v)
	{
		if (!json_is_string(v) || *n == EGRESS_MAX_PATTERNS) {
			snprintf(err, errlen, "allowOut: at most %d strings", EGRESS_MAX_PATTERNS);
			return 400;
		}
		const char *a = json_string_value(v);
		if (!is_address(a) && !deny_all) {
			snprintf(err, errlen,
			         "When specifying allowed domains in allow out, you must include "
			         "'ALL_TRAFFIC' in deny out (0.0.0.0/0): '%.100s'",
			         a);
			return 400;
		}
		allow[(*n)++] = a;
	}
	if (json_is_false(json_object_get(b, "allow_internet_access"))) {
		*n = 0; /* no internet: nothing */
		return 0;
	}
	if (*n) { /* within the operator's ceiling, as at create */
		struct ward_request q;
		ward_request_init(&q);
		q.net = WARD_NET_ALLOW;
		q.egress_allow = allow;
		q.negress_allow = *n;
		return egress_policy_apply(&s->o.egress, &q, err, errlen) < 0 ? 400 : 0;
	}
	if (!deny_all) { /* {}: the default, the operator's ceiling */
		for (i = 0; i < s->o.egress.nallow; i++)
			allow[(*n)++] = s->o.egress.allow[i];
	}
	return 0;
}

enum MHD_Result e2b_network(struct ereq *q)
{
	json_error_t je;
	json_t *b = json_loadb(q->len ? q->body : "{}", q->len ? q->len : 2, 0, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		return e2b_api_error(q, 400, "the body is not a JSON object: %s", je.text);
	}
	const char *allow[EGRESS_MAX_PATTERNS];
	size_t n;
	char err[600];
	unsigned code = network_parse(q->s, b, allow, &n, err, sizeof(err));
	struct e2b_sbx *x = code ? NULL : e2b_own(q, q->arg);
	if (!code && !x)
		code = 404;
	else if (x && e2b_is_paused(q->e, x)) {
		snprintf(err, sizeof(err), "sandbox '%s' is paused: resume it (connect) to change its network", x->id);
		code = 409;
	}
	struct sess *ss = x && !code ? e2b_sess(q->e, x) : NULL;
	if (!code && !ss)
		code = 404;
	if (!code) {
		int r = ward_session_set_egress(ss->ws, allow, n, err, sizeof(err));
		code = r == -ENOTSUP ? 409 : r == -EINVAL ? 400 : r < 0 ? 500 : 0;
		if (!code)
			log_event(q->s, "e2b-sandbox-network", "%s: %zu names may be reached", x->id, n);
	}
	if (ss)
		sess_unref(q->s, ss);
	if (x)
		e2b_sbx_put(q->e, x);
	json_decref(b); /* allow points into b until here */
	if (code == 404)
		return e2b_not_found(q, q->arg);
	if (code)
		return e2b_api_error(q, code, "%s", err);
	return e2b_answer(q, 204, NULL, NULL, 0);
}
