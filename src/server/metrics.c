/* metrics.c — GET /metrics (Prometheus text format): runs by status and
 * isolation, the run duration histogram, what is running, queued and
 * held, refusals, HTTP answers, connections, the pool and the spawners.
 *
 * Owns the run counters and the histogram (metrics_count_run); the other
 * counters are kept where they happen, under s->lock or s->conn_lock, and
 * only read here.  Never holds a lock while it formats: it copies first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "server/server.h"

static const double latency_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
_Static_assert(sizeof(latency_buckets) / sizeof(latency_buckets[0]) == NBUCKETS, "NBUCKETS is the bucket count");

/* One finished run: its status, its level, and the seconds from admission
 * to its result. */
void metrics_count_run(struct server *s, enum ward_status status, enum ward_isolation iso, double secs)
{
	pthread_mutex_lock(&s->lock);
	int st = status <= WARD_ST_ERROR ? (int)status : WARD_ST_ERROR;
	s->m.runs[st][iso == WARD_ISO_APPLICATION]++;
	size_t b = 0;
	while (b < NBUCKETS && secs > latency_buckets[b])
		b++;
	s->m.buckets[b]++;
	s->m.sum += secs;
	s->m.count++;
	pthread_mutex_unlock(&s->lock);
}

/* One judge job finished: its compile, when it ran one. */
void metrics_count_judge(struct server *s, const struct ward_judge_result *res)
{
	unsigned long long ran = 0;
	for (size_t i = 0; i < res->ntests; i++)
		ran += res->tests[i].verdict != WARD_V_SKIPPED;
	pthread_mutex_lock(&s->lock);
	s->m.judge_compiles += res->compiled;
	s->m.judge_tests += ran;
	pthread_mutex_unlock(&s->lock);
}

void metrics_count_egress(struct server *s, const struct req *r, const struct ward_result *res)
{
	if (!res->egress_on)
		return;
	uint64_t ok = 0;
	for (size_t i = 0; i < res->negress; i++) {
		const struct ward_egress *e = &res->egress[i];
		ok += e->allowed;
		log_event(s, "egress", "client=%s host=%s port=%u %s%s%s bytes_out=%llu bytes_in=%llu", r->client,
		          e->host, e->port, e->allowed ? "allowed" : "refused", e->reason[0] ? ": " : "", e->reason,
		          (unsigned long long)e->bytes_out, (unsigned long long)e->bytes_in);
	}
	if (res->egress_truncated)
		log_event(s, "egress", "client=%s more connections than the %d a result lists", r->client,
		          WARD_EGRESS_MAX_RECORDS);
	pthread_mutex_lock(&s->lock);
	s->m.egress_allowed += ok;
	s->m.egress_refused += res->negress - ok;
	pthread_mutex_unlock(&s->lock);
}

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = b->oom ? 0 : vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (b->oom || n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/* What s->lock guards, copied at one instant. */
struct snapshot {
	struct metrics m;
	unsigned running, queued, answering;
	bool healthy;
};

static void runs_section(struct buf *b, const struct metrics *m)
{
	bprintf(b, "# HELP ward_runs_total Sandbox runs finished, by result status and isolation level.\n"
	           "# TYPE ward_runs_total counter\n");
	for (int st = WARD_ST_OK; st <= WARD_ST_ERROR; st++)
		for (int iso = 0; iso < 2; iso++)
			bprintf(b, "ward_runs_total{status=\"%s\",isolation=\"%s\"} %llu\n",
			        ward_status_name((enum ward_status)st), ward_isolation_name((enum ward_isolation)iso),
			        (unsigned long long)m->runs[st][iso]);
	bprintf(b, "# HELP ward_run_duration_seconds Time from admission to result (queue wait included).\n"
	           "# TYPE ward_run_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += m->buckets[i];
		bprintf(b, "ward_run_duration_seconds_bucket{le=\"%g\"} %llu\n", latency_buckets[i],
		        (unsigned long long)cum);
	}
	cum += m->buckets[NBUCKETS];
	bprintf(b, "ward_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	bprintf(b, "ward_run_duration_seconds_sum %.6f\nward_run_duration_seconds_count %llu\n", m->sum,
	        (unsigned long long)m->count);
	bprintf(b,
	        "# HELP ward_egress_connections_total Connections sandboxes asked the egress proxy for (the "
	        "first 64 of each run or exec), by whether it allowed them.\n"
	        "# TYPE ward_egress_connections_total counter\n"
	        "ward_egress_connections_total{result=\"allowed\"} %llu\n"
	        "ward_egress_connections_total{result=\"refused\"} %llu\n",
	        (unsigned long long)m->egress_allowed, (unsigned long long)m->egress_refused);
	bprintf(b,
	        "# HELP ward_judge_compiles_total Compile steps run by judge jobs (POST /judge and the dialects: "
	        "one per job whose language compiles, whatever its test count).\n"
	        "# TYPE ward_judge_compiles_total counter\nward_judge_compiles_total %llu\n",
	        (unsigned long long)m->judge_compiles);
	bprintf(b,
	        "# HELP ward_judge_tests_total Tests run by judge jobs (POST /judge and the dialects; a Judge0 "
	        "run of number_of_runs is one), skipped ones not counted.\n"
	        "# TYPE ward_judge_tests_total counter\nward_judge_tests_total %llu\n",
	        (unsigned long long)m->judge_tests);
}

static void requests_section(struct buf *b, const struct snapshot *n)
{
	const struct metrics *m = &n->m;
	bprintf(b, "# HELP ward_in_flight Sandboxes running now.\n# TYPE ward_in_flight gauge\nward_in_flight %u\n",
	        n->running);
	bprintf(b, "# HELP ward_queued Requests waiting for a slot.\n# TYPE ward_queued gauge\nward_queued %u\n",
	        n->queued);
	bprintf(b,
	        "# HELP ward_answering Requests admitted whose answer is not yet sent.\n"
	        "# TYPE ward_answering gauge\nward_answering %u\n",
	        n->answering);
	bprintf(b,
	        "# HELP ward_streamed_total Runs whose answer was streamed (Accept: application/x-ndjson or "
	        "text/event-stream).\n# TYPE ward_streamed_total counter\nward_streamed_total %llu\n",
	        (unsigned long long)m->streamed);
	bprintf(b,
	        "# HELP ward_rejected_total Requests refused for capacity or quota.\n"
	        "# TYPE ward_rejected_total counter\n"
	        "ward_rejected_total{reason=\"busy\"} %llu\n"
	        "ward_rejected_total{reason=\"client_concurrency\"} %llu\n"
	        "ward_rejected_total{reason=\"client_rate\"} %llu\n"
	        "ward_rejected_total{reason=\"unhealthy\"} %llu\n",
	        (unsigned long long)m->rejected_busy, (unsigned long long)m->rejected_client_conc,
	        (unsigned long long)m->rejected_client_rate, (unsigned long long)m->rejected_unhealthy);
	bprintf(b, "# HELP ward_http_requests_total HTTP answers by status code.\n"
	           "# TYPE ward_http_requests_total counter\n");
	for (int c = 100; c < 600; c++)
		if (m->http[c])
			bprintf(b, "ward_http_requests_total{code=\"%d\"} %llu\n", c, (unsigned long long)m->http[c]);
}

static void connections_section(struct buf *b, struct server *s)
{
	pthread_mutex_lock(&s->conn_lock);
	unsigned live = s->nlive, pending = s->npending;
	uint64_t cut_addr = s->cut_addr, cut_full = s->cut_full;
	pthread_mutex_unlock(&s->conn_lock);
	bprintf(b,
	        "# HELP ward_connections Open connections: pending (no request with a valid token yet; without "
	        "--token-file, no run admitted now) and trusted.\n# TYPE ward_connections gauge\n"
	        "ward_connections{state=\"pending\"} %u\nward_connections{state=\"trusted\"} %u\n",
	        pending, live - pending);
	bprintf(b,
	        "# HELP ward_connections_cut_total Pending connections cut to make room: their address held more "
	        "than --max-conns-per-addr, or the server --max-connections.\n"
	        "# TYPE ward_connections_cut_total counter\n"
	        "ward_connections_cut_total{reason=\"address\"} %llu\nward_connections_cut_total{reason=\"full\"} "
	        "%llu\n",
	        (unsigned long long)cut_addr, (unsigned long long)cut_full);
}

static void capacity_section(struct buf *b, struct server *s, bool healthy)
{
	bprintf(b,
	        "# HELP ward_body_bytes Request bodies and decoded requests held now (--max-body-total caps it).\n"
	        "# TYPE ward_body_bytes gauge\nward_body_bytes %zu\n",
	        __atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED));
	bprintf(b,
	        "# HELP ward_answer_bytes Encoded answers held until their clients take them "
	        "(--max-answer-total caps it).\n# TYPE ward_answer_bytes gauge\nward_answer_bytes %zu\n",
	        __atomic_load_n(&s->answer_bytes, __ATOMIC_RELAXED));
	bprintf(b,
	        "# HELP ward_session_bg_output_bytes Output capture that sessions' background processes "
	        "hold reserved (--max-bg-output-total caps it).\n# TYPE ward_session_bg_output_bytes gauge\n"
	        "ward_session_bg_output_bytes %zu\n",
	        __atomic_load_n(&s->bg_output.held, __ATOMIC_RELAXED));
	bprintf(b,
	        "# HELP ward_max_concurrent Sandbox slots.\n# TYPE ward_max_concurrent gauge\n"
	        "ward_max_concurrent %u\n"
	        "# HELP ward_queue_capacity Queue places.\n# TYPE ward_queue_capacity gauge\nward_queue_capacity %u\n"
	        "# HELP ward_healthy 1 when the last backend probe succeeded.\n# TYPE ward_healthy gauge\n"
	        "ward_healthy{isolation=\"%s\"} %d\n",
	        s->o.max_concurrent, s->o.queue, ward_isolation_name(s->o.isolation), healthy ? 1 : 0);
}

static void sandboxes_section(struct buf *b, struct server *s)
{
	bprintf(b,
	        "# HELP ward_spawner_helpers Spawner helpers alive (--spawners); when one dies the server clones "
	        "sandboxes itself, which costs more CPU.\n# TYPE ward_spawner_helpers gauge\nward_spawner_helpers %u\n",
	        ward_spawner_helpers());
	struct ward_netns_stats ns;
	ward_netns_stats(&ns);
	bprintf(b,
	        "# HELP ward_netns_idle Network namespaces of --net none sandboxes kept for reuse, idle now.\n"
	        "# TYPE ward_netns_idle gauge\nward_netns_idle %u\n"
	        "# HELP ward_netns_total Network namespaces of --net none sandboxes: made, reused (given to a "
	        "sandbox again, untouched), discarded (returned with a socket or traffic counted, so destroyed).\n"
	        "# TYPE ward_netns_total counter\n"
	        "ward_netns_total{event=\"made\"} %llu\nward_netns_total{event=\"reused\"} %llu\n"
	        "ward_netns_total{event=\"discarded\"} %llu\n",
	        ns.idle, (unsigned long long)ns.made, (unsigned long long)ns.reused, (unsigned long long)ns.discarded);
	struct ward_cgroup_stats cs;
	ward_cgroup_stats(&cs);
	bprintf(b,
	        "# HELP ward_cgroups_idle Cgroups of finished sandboxes kept for the next, idle now.\n"
	        "# TYPE ward_cgroups_idle gauge\nward_cgroups_idle %u\n"
	        "# HELP ward_cgroups_total Sandbox cgroups: made, reused (emptied, reset and given to the next "
	        "sandbox), discarded (left with a process or memory charged, so removed).\n"
	        "# TYPE ward_cgroups_total counter\n"
	        "ward_cgroups_total{event=\"made\"} %llu\nward_cgroups_total{event=\"reused\"} %llu\n"
	        "ward_cgroups_total{event=\"discarded\"} %llu\n",
	        cs.idle, (unsigned long long)cs.made, (unsigned long long)cs.reused, (unsigned long long)cs.discarded);
	bprintf(b,
	        "# HELP ward_cgroup_moves_total Processes moved into a sandbox's cgroup after they were made (on "
	        "cgroup v1 each may wait for an RCU grace period).\n"
	        "# TYPE ward_cgroup_moves_total counter\nward_cgroup_moves_total %llu\n"
	        "# HELP ward_cgroup_parked_total cgroup v1: processes parked in kept cgroups (moved in ahead), and "
	        "sandboxes whose PID 1 such a process cloned there (born in its cgroup: no move).\n"
	        "# TYPE ward_cgroup_parked_total counter\n"
	        "ward_cgroup_parked_total{event=\"parked\"} %llu\nward_cgroup_parked_total{event=\"born\"} %llu\n",
	        (unsigned long long)cs.moved, (unsigned long long)cs.parked, (unsigned long long)cs.born_parked);
	if (!s->pool)
		return;
	struct ward_pool_stats ps;
	ward_pool_stats(s->pool, &ps);
	bprintf(b,
	        "# HELP ward_pool_ready Sandboxes built ahead and waiting (--pool).\n# TYPE ward_pool_ready gauge\n"
	        "ward_pool_ready %u\n"
	        "# HELP ward_pool_size Sandboxes the pool keeps ready.\n# TYPE ward_pool_size gauge\n"
	        "ward_pool_size %u\n"
	        "# HELP ward_pool_takes_total Requests of the pool's shape, by whether a sandbox was ready.\n"
	        "# TYPE ward_pool_takes_total counter\n"
	        "ward_pool_takes_total{result=\"hit\"} %llu\nward_pool_takes_total{result=\"miss\"} %llu\n"
	        "# HELP ward_pool_build_failures_total Sandboxes the pool could not build.\n"
	        "# TYPE ward_pool_build_failures_total counter\nward_pool_build_failures_total %llu\n",
	        ps.ready, ps.size, (unsigned long long)ps.hits, (unsigned long long)ps.misses,
	        (unsigned long long)ps.failures);
}

static void sessions_section(struct buf *b, struct server *s)
{
	pthread_mutex_lock(&s->sess_lock);
	struct sess_metrics m = s->sm;
	unsigned alive = s->nsessions;
	pthread_mutex_unlock(&s->sess_lock);
	bprintf(b, "# HELP ward_sessions Sessions alive now.\n# TYPE ward_sessions gauge\nward_sessions %u\n", alive);
	bprintf(b,
	        "# HELP ward_sessions_total Sessions by how they began or ended.\n"
	        "# TYPE ward_sessions_total counter\n"
	        "ward_sessions_total{event=\"created\"} %llu\nward_sessions_total{event=\"expired\"} %llu\n"
	        "ward_sessions_total{event=\"deleted\"} %llu\n",
	        (unsigned long long)m.created, (unsigned long long)m.expired, (unsigned long long)m.deleted);
	bprintf(b, "# HELP ward_session_execs_total Execs in sessions by status (background starts as ok or "
	           "error).\n# TYPE ward_session_execs_total counter\n");
	for (int st = 0; st <= WARD_ST_ERROR; st++)
		bprintf(b, "ward_session_execs_total{status=\"%s\"} %llu\n", ward_status_name((enum ward_status)st),
		        (unsigned long long)m.execs[st]);
}

void metrics_count_http(struct server *s, int code)
{
	if (code <= 0 || code >= 600)
		return;
	pthread_mutex_lock(&s->lock);
	s->m.http[code]++;
	pthread_mutex_unlock(&s->lock);
}

void answer_metrics(struct server *s, struct req *r)
{
	struct snapshot n;
	pthread_mutex_lock(&s->lock);
	n.m = s->m;
	n.running = s->running;
	n.queued = s->queued;
	n.answering = s->answering;
	n.healthy = s->healthy;
	pthread_mutex_unlock(&s->lock);

	struct buf b = {0};
	runs_section(&b, &n.m);
	requests_section(&b, &n);
	connections_section(&b, s);
	capacity_section(&b, s, n.healthy);
	sandboxes_section(&b, s);
	sessions_section(&b, s);
	for (size_t i = 0; i < s->nlisteners; i++) { /* the APIs' own lines (E2B's ports) */
		const struct listener *l = &s->listeners[i];
		char *more = l->started && l->api->metrics ? l->api->metrics(s, l->state) : NULL;
		if (more)
			bprintf(&b, "%s", more);
		free(more);
	}
	if (b.oom) {
		free(b.p);
		b.p = NULL;
	}
	set_answer(r, 200, b.p, "text/plain; version=0.0.4");
}
