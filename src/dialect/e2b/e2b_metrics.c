/* e2b_metrics.c — getMetrics (SPEC §18): a sandbox's CPU, memory and
 * disk, sampled when asked, and the bytes its ports relayed; the
 * dialect's part of ward serve's /metrics. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "dialect/e2b/e2b_int.h"

/* GET /sandboxes/{id}/metrics (SPEC §18): one sample, now, from the
 * session's cgroup (CPU since the last sample or its start, memory) and
 * its home's file system (statfs inside, as its user). */
enum MHD_Result e2b_metrics(struct ereq *q)
{
	struct e2b_sbx *x = e2b_own(q, q->arg);
	struct sess *ss = x ? e2b_sess(q->e, x) : NULL;
	if (!ss) {
		if (x)
			e2b_sbx_put(q->e, x);
		return e2b_not_found(q, q->arg);
	}
	struct ward_session_usage u;
	memset(&u, 0, sizeof(u));
	ward_session_usage(ss->ws, &u);
	uint64_t port_used, port_cap;
	ward_session_net(ss->ws, &port_used, &port_cap);
	char out[200] = "", err[400];
	char *argv[] = {"stat", "-f", "-c", "%S %b %f", "/work", NULL};
	unsigned long long bs = 0, blocks = 0, bfree = 0;
	if (e2b_run(q, ss->ws, argv, out, sizeof(out), err, sizeof(err)) != 0 ||
	    sscanf(out, "%llu %llu %llu", &bs, &blocks, &bfree) != 3)
		bs = blocks = bfree = 0;
	sess_unref(q->s, ss);
	double t = now_real();
	pthread_mutex_lock(&q->e->lock);
	double since = x->m_time > 0 ? x->m_time : x->started_rt;
	uint64_t cpu0 = x->m_time > 0 ? x->m_cpu_ms : 0;
	x->m_time = t;
	x->m_cpu_ms = u.cpu_ms;
	pthread_mutex_unlock(&q->e->lock);
	double pct = t > since && u.cpu_ms >= cpu0 ? (double)(u.cpu_ms - cpu0) / 10.0 / (t - since) : 0;
	char ts[40];
	e2b_iso_time(ts, sizeof(ts), t);
	json_t *v = json_pack("[{s:s,s:I,s:f,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I}]", "timestamp", ts, "timestampUnix",
	                      (json_int_t)t, "cpuUsedPct", pct, "cpuCount", (int)x->cpu, "memUsed",
	                      (json_int_t)u.memory_bytes, "memTotal", (json_int_t)x->memory_mb << 20, "memCache",
	                      (json_int_t)0, "diskUsed", (json_int_t)((blocks - bfree) * bs), "diskTotal",
	                      (json_int_t)(blocks * bs), "portBytesUsed", (json_int_t)port_used, "portBytesTotal",
	                      (json_int_t)port_cap);
	e2b_sbx_put(q->e, x);
	return e2b_answer_json(q, 200, v);
}

char *e2b_prometheus(struct server *s, void *state)
{
	struct e2b *e = state;
	(void)s;
	char *out = NULL;
	if (asprintf(&out,
	             "# HELP ward_e2b_port_bytes_total Bytes E2B's port proxy relayed to and from sandboxes' servers, "
	             "both ways (heads, bodies, WebSocket frames), each charged to its sandbox.\n"
	             "# TYPE ward_e2b_port_bytes_total counter\nward_e2b_port_bytes_total %llu\n"
	             "# HELP ward_e2b_port_spent_total Past a sandbox's --e2b-port-bytes: requests refused (403) and "
	             "relays cut (an answer ended short, a WebSocket closed).\n"
	             "# TYPE ward_e2b_port_spent_total counter\n"
	             "ward_e2b_port_spent_total{event=\"refused\"} %llu\n"
	             "ward_e2b_port_spent_total{event=\"cut\"} %llu\n",
	             (unsigned long long)__atomic_load_n(&e->port_bytes, __ATOMIC_RELAXED),
	             (unsigned long long)__atomic_load_n(&e->port_refused, __ATOMIC_RELAXED),
	             (unsigned long long)__atomic_load_n(&e->port_cut, __ATOMIC_RELAXED)) < 0)
		return NULL;
	return out;
}
