/* exec.c — the POST endpoints that run something: /exec (SPEC §5: one
 * command) and /test (SPEC §6: a test job).  prepare_exec decodes and
 * checks an /exec body on the I/O thread, before admission; run_exec and
 * run_test run on a worker thread and set the answer.
 *
 * Owns a request's decoded form (r->doc) and its lifetime.  Never lets a
 * request run what the runner's options do not allow (--allow-root, the
 * maxima, WARD_ALLOW_APPLICATION): each is refused as a 400 before a slot
 * is taken. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "server/server.h"
#include "testjob/testjob.h"

/* The decoded request and the paths it holds. */
void doc_release(struct req *r)
{
	if (r->have_doc)
		ward_request_doc_free(&r->doc);
	r->have_doc = false;
	if (r->doc_bytes)
		__atomic_sub_fetch(&r->srv->body_bytes, r->doc_bytes, __ATOMIC_RELAXED);
	r->doc_bytes = 0;
	held_release(r);
}

/* ward_request_validate() speaks in ward run's option names; say the
 * field of the body instead, so that the 400 names what to fix.  keep: the
 * message goes on whole after the field (it does not start with an
 * option's name). */
static void option_to_field(const char *msg, char *out, size_t n)
{
	static const struct {
		const char *prefix, *field;
		bool keep;
	} map[] = {
		{"--timeout", "limits.timeout_s", false},
		{"--cpu", "limits.cpu_seconds", false},
		{"--memory", "limits.memory_mb", false},
		{"--pids", "limits.pids", false},
		{"--output-limit", "limits.max_output_chars", false},
		{"--fsize", "limits.fsize_mb", false},
		{"--tmp-size", "limits.tmp_size_mb", false},
		{"--nofile", "limits.nofile", false},
		{"--collect-max-files", "limits.collect_max_files", false},
		{"--collect-max-bytes", "limits.collect_max_bytes", false},
		{"collect", "collect", true},
		{"--workdir", "workdir", false},
		{"--rootfs", "rootfs", false},
		{"bind source", "mounts[].host_path", false},
		{"sandbox path", "mounts[].sandbox_path", true},
		{"too many mounts", "mounts", true},
		{"environment", "env", true},
		{"file", "files", true},
		{"too many files", "files", true},
		{"stdin", "stdin", true},
		{"the program name", "argv[0]", true},
		{"no command", "command", true},
		{"unknown isolation", "isolation", true},
		{"unknown network", "network", true},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t k = strlen(map[i].prefix);
		if (strncmp(msg, map[i].prefix, k) == 0) {
			const char *rest = map[i].keep ? msg : msg + k + (msg[k] == ' ');
			snprintf(out, n, "%s: %s", map[i].field, rest);
			return;
		}
	}
	snprintf(out, n, "%s", msg);
}

/* The body as a request: decoded (it then owns copies of everything, and
 * the raw body is dropped rather than held twice while the request waits,
 * the decoded form counted in its place), at the runner's isolation level
 * unless it names one. */
static bool decode_exec(struct server *s, struct req *r)
{
	char err[512];
	if (ward_request_from_json_under(r->body ? r->body : "", r->len, &s->o.defaults, &r->doc, err, sizeof(err)) <
	    0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	r->have_doc = true;
	body_release(s, r);
	size_t held = ward_request_doc_bytes(&r->doc);
	if (!body_reserve(s, held)) {
		r->retry_after = 1;
		set_error(r, 503, "the runner holds --max-body-total (%zu bytes) of requests already; retry later",
		          s->o.max_body_total);
		return false;
	}
	r->doc_bytes = held;
	if (!r->doc.isolation_set)
		r->doc.req.isolation = s->o.isolation;
	return true;
}

/* What the runner allows: the application level only with the operator's
 * opt-in (as ward_run() checks it), limits within the maxima, and a
 * request that ward_request_validate() accepts, its message naming the
 * body's field. */
static bool check_exec(struct server *s, struct req *r)
{
	char err[512];
	struct ward_request *q = &r->doc.req;
	const char *allow = getenv("WARD_ALLOW_APPLICATION");
	if (q->isolation == WARD_ISO_APPLICATION && (!allow || strcmp(allow, "1") != 0)) {
		set_error(r, 400,
		          "isolation: 'application' is not allowed on this runner (its operator has "
		          "not set WARD_ALLOW_APPLICATION=1); use \"system\"");
		return false;
	}
	/* a drain that runs out of time cancels the runs still going */
	q->cancel = r->cancel ? r->cancel : &s->cancel;
	if (ward_limits_within(&q->limits, &s->o.max, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	if (egress_policy_apply(&s->o.egress, q, err, sizeof(err)) < 0) {
		set_error(r, 400, "%s", err);
		return false;
	}
	char verr[400]; /* room for the field name in err */
	if (ward_request_validate(q, verr, sizeof(verr)) < 0) {
		option_to_field(verr, err, sizeof(err));
		set_error(r, 400, "%s", err);
		return false;
	}
	return true;
}

/* POST /exec before admission: false with the answer (an error) set. */
bool prepare_exec(struct server *s, struct req *r)
{
	return decode_exec(s, r) && hold_paths(s, r) && image_resolve(s, r, &r->doc.req) && check_exec(s, r);
}

void run_exec(struct req *r)
{
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	stream_start(r, &r->doc.req);
	ward_run_pooled(image_pool(r->srv, &r->doc.req), &r->doc.req, &res);
	stream_totals(r, &res.out, &res.err);
	/* 200 also when the sandbox failed: the result says so in "error" */
	set_answer(r, 200, ward_result_to_json(&res), "application/json");
	r->sandbox_status = ward_status_name(res.status);
	if (res.error[0])
		snprintf(r->message, sizeof(r->message), "%s", res.error);
	metrics_count_run(r->srv, res.status, res.isolation, now_mono() - r->t_admit);
	metrics_count_egress(r->srv, r, &res);
	ward_result_free(&res);
	doc_release(r);
}

/* A test job's run begins: its stream too, when asked for. */
static void test_started(void *arg, struct ward_request *q)
{
	stream_start(arg, q);
}

static void test_ended(void *arg, const struct ward_result *res)
{
	stream_totals(arg, &res->out, &res->err);
}

static const struct ward_image_root *test_image(void *arg, const char *name, char *err, size_t errlen)
{
	struct req *r = arg;
	return image_find(r->srv, name, err, errlen);
}

void run_test(struct req *r)
{
	char *out = NULL;
	struct testjob_observer obs = {.started = r->live ? test_started : NULL,
	                               .ended = r->live ? test_ended : NULL,
	                               .image = test_image,
	                               .arg = r};
	int code = ward_testjob_http_observed(r->srv->pool, &r->srv->o.max, &r->srv->o.egress, r->body ? r->body : "",
	                                      r->len, &obs, &out);
	if (!out) {
		set_error(r, 500, "the test job produced no answer");
		return;
	}
	set_answer(r, code >= 200 && code < 600 ? (unsigned)code : 500, out, "application/json");
	r->sandbox_status = code == 200 ? "ok" : "error";
}
