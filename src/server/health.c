/* health.c — whether the backend can make a sandbox: the probe (a run of
 * `true` at the server's isolation level, at start and then every
 * PROBE_OK_INTERVAL, PROBE_BAD_INTERVAL while unhealthy) and GET /health.
 *
 * Owns s->healthy and s->health_reason: the only place that sets them.
 * The probe runs only on the main thread, never on an I/O thread. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "server/session_json.h"

/* Run `true` at the server's isolation level: the backend is healthy when
 * a sandbox can be made.  Runs on the main thread, which outlives it. */
void probe(struct server *s)
{
	static char *const argv[] = {"true", NULL};
	struct ward_request q;
	struct ward_result res;
	ward_request_init(&q);
	q.argv = argv;
	q.capture = true;
	q.isolation = s->o.isolation;
	q.limits.timeout_s = 10;
	memset(&res, 0, sizeof(res));
	int rc = ward_run(&q, &res);
	bool ok = rc == 0 && res.status == WARD_ST_OK;
	pthread_mutex_lock(&s->lock);
	bool was = s->healthy;
	s->healthy = ok;
	if (!ok)
		snprintf(s->health_reason, sizeof(s->health_reason), "%s",
		         res.error[0] ? res.error : "a probe run of `true` did not exit 0");
	else
		s->health_reason[0] = 0;
	pthread_mutex_unlock(&s->lock);
	if (ok != was)
		log_event(s, ok ? "healthy" : "unhealthy", "%s", ok ? "probe run succeeded" : s->health_reason);
	ward_result_free(&res);
}

/* When the main thread probes again. */
double probe_next(const struct server *s)
{
	return now_mono() + (s->healthy ? PROBE_OK_INTERVAL : PROBE_BAD_INTERVAL);
}

void answer_health(struct server *s, struct req *r)
{
	pthread_mutex_lock(&s->lock);
	bool ok = s->healthy && !s->draining;
	char reason[600];
	snprintf(reason, sizeof(reason), "%s", s->draining ? "shutting down" : s->health_reason);
	pthread_mutex_unlock(&s->lock);
	struct sj_session_limits sl = {s->o.max_sessions,     s->o.client_sessions, s->o.session_max_ttl,
	                               s->o.session_max_idle, s->o.max_work_size,   s->o.node_id};
	char *body = ward_health_egress_to_json(ok, ward_isolation_name(s->o.isolation), reason, &s->o.defaults,
	                                        &s->o.max, s->o.egress_allow, s->o.egress.nallow);
	/* what the server adds to the library's answer: sessions, images */
	json_t *o = body ? json_loads(body, 0, NULL) : NULL;
	char *out = NULL;
	if (o) {
		sj_health_sessions(o, &sl);
		images_health(s, o);
		out = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	if (out) {
		free(body);
		body = out;
	}
	set_answer(r, ok ? 200 : 503, body, "application/json");
	if (!ok)
		r->retry_after = (unsigned)PROBE_BAD_INTERVAL;
}
