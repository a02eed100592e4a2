/* judge_api.c — POST /judge and GET /languages (SPEC §15): the language
 * table loaded and probed at start-up (each entry's version_cmd in a
 * sandbox, an entry naming an image given one of the offered roots), a
 * judge job decoded, checked against the runner's maxima and run with
 * ward_judge on a worker.
 *
 * Scheduling: the job holds its worker's slot; its tests run `parallel` at
 * a time (clamped to --max-concurrent), the extra ones on slots borrowed
 * from admission that nothing else needs now (slots_borrow: never
 * waiting, so a judge never waits on workers, and workers never wait on a
 * judge beyond those slots).  Borrowed slots count as runs for admission
 * and the queue, so sandboxes never outnumber --max-concurrent.
 *
 * Owns s->langs.  With Accept: application/x-ndjson, one {"test": ...}
 * event as each test ends, then {"result": ...} (stream.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/judge_json.h"
#include "server/server.h"

static bool same_image(const char *a, const char *b)
{
	size_t n = strlen(b);
	/* "name" is "name:latest" */
	return !strcmp(a, b) || (!strncmp(a, b, n) && !strcmp(a + n, ":latest")) ||
	       (!strncmp(b, a, strlen(a)) && !strcmp(b + strlen(a), ":latest"));
}

static const struct ward_image_root *offered(struct server *s, const char *name)
{
	for (size_t i = 0; i < s->nimages; i++)
		if (same_image(s->images[i].name, name))
			return s->images[i].root;
	return NULL;
}

int languages_start(struct server *s)
{
	char buf[4096], err[600];
	const char *path = s->o.languages_file ? s->o.languages_file : ward_languages_default_path(buf, sizeof(buf));
	if (!path) {
		log_event(s, "languages",
		          "no language table found (install ward, or give --languages FILE): "
		          "POST /judge has no language");
		return 0;
	}
	if (ward_languages_load(path, &s->langs, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward serve: %s\n", err);
		return -1;
	}
	for (size_t i = 0; i < s->langs.n; i++)
		if (s->langs.v[i].image)
			s->langs.v[i].root = offered(s, s->langs.v[i].image);
	ward_languages_probe(&s->langs, s->pool);
	char on[1024] = "", off[2048] = "";
	size_t a = 0, b = 0;
	for (size_t i = 0; i < s->langs.n; i++) {
		const struct ward_language *l = &s->langs.v[i];
		if (l->enabled && a < sizeof(on))
			a += (size_t)snprintf(on + a, sizeof(on) - a, "%s%s %s", a ? ", " : "", l->id, l->version);
		else if (!l->enabled && b < sizeof(off))
			b += (size_t)snprintf(off + b, sizeof(off) - b, "%s%s (%s)", b ? "; " : "", l->id, l->why);
	}
	log_event(s, "languages", "%s: enabled: %s%s%s", path, a ? on : "none", b ? "; disabled: " : "", off);
	return 0;
}

void languages_free(struct server *s)
{
	ward_languages_free(&s->langs);
}

void answer_languages(struct server *s, struct req *r)
{
	const char *all = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "all");
	char *j = judge_languages_to_json(&s->langs, all && strcmp(all, "0") != 0);
	if (!j) {
		set_error(r, 500, "out of memory");
		return;
	}
	set_answer(r, 200, j, "application/json");
}

static unsigned take_slots(void *arg, unsigned want)
{
	return slots_borrow(arg, want);
}

static void give_slots(void *arg, unsigned n)
{
	slots_return(arg, n);
}

void serve_judge(struct server *s, struct ward_judge_job *job, struct ward_judge_result *res)
{
	job->pool = s->pool;
	if (!job->cancel)
		job->cancel = &s->cancel;
	job->take_slots = take_slots;
	job->give_slots = give_slots;
	job->slots_arg = s;
	ward_judge(job, res);
	metrics_count_judge(s, res);
}

static void test_done(void *arg, const struct ward_judge_test_result *t, size_t index)
{
	size_t n = 0;
	char *j = judge_test_event_json(t, &n);
	stream_event(arg, "test", j, n);
}

/* The longest the job can take: the compile and every test one after
 * another (the stream's deadline). */
static double job_time(const struct ward_judge_job *job)
{
	double t = job->lang->compile ? job->compile_limits.timeout_s : 0;
	for (size_t i = 0; i < job->ntests; i++) {
		const struct ward_judge_limits *l = job->tests[i].limits ? job->tests[i].limits : &job->run_limits;
		double cpu = (l->l.cpu_s > 0 ? l->l.cpu_s : l->l.timeout_s) + l->extra_cpu_s;
		t += (cpu > l->l.timeout_s ? cpu : l->l.timeout_s) + 1;
	}
	return t;
}

void run_judge(struct req *r)
{
	struct server *s = r->srv;
	struct judge_bounds b;
	judge_bounds_init(&b, &s->o.max);
	b.defaults = s->o.defaults;
	b.max_tests = s->o.max_tests;
	b.max_test_bytes = s->o.max_test_bytes;
	b.max_parallel = s->o.max_parallel;
	b.clamp_parallel = s->o.max_concurrent;
	struct judge_doc doc;
	bool unknown;
	char err[600];
	if (judge_from_json(r->body ? r->body : "", r->len, &s->langs, &b, &doc, &unknown, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return;
	}
	if (doc.image && !(doc.job.image = offered(s, doc.image))) {
		set_error(r, 400, "image: '%.200s' is not offered by this runner (ward serve --image NAME offers one)",
		          doc.image);
		judge_doc_free(&doc);
		return;
	}
	/* the body is decoded: it is not needed any more */
	body_release(s, r);
	doc.job.cancel = r->cancel; /* an MCP call's own, else the server's (serve_judge) */
	if (r->live && stream_start_events(r, job_time(&doc.job))) {
		doc.job.test_done = test_done;
		doc.job.test_done_arg = r;
	}
	struct ward_judge_result res;
	serve_judge(s, &doc.job, &res);
	size_t n = 0;
	char *out = judge_result_to_json(&doc.job, &res, &n);
	if (!out)
		set_error(r, 500, "out of memory for the answer");
	else
		set_answer_bytes(r, 200, out, n, "application/json");
	r->sandbox_status = res.verdict == WARD_V_IE ? "error" : "ok";
	if (res.error[0])
		snprintf(r->message, sizeof(r->message), "%s", res.error);
	metrics_count_run(s, res.verdict == WARD_V_IE ? WARD_ST_ERROR : WARD_ST_OK, WARD_ISO_SYSTEM,
	                  now_mono() - r->t_admit);
	ward_judge_result_free(&res);
	judge_doc_free(&doc);
}
