/* judge0.c — Judge0 CE 1.13.1 (research judge.md §3, §5.2, §8.3) as a
 * listener of ward serve (SPEC §16): submissions single and batch, wait,
 * fields, base64_encoded, languages with Judge0's ids, statuses 1-14,
 * /about, /config_info, /workers; translated into judge jobs (SPEC §15).
 * This file is the API: its routes, what each request does, the token,
 * and the dialect's start and stop; judge0_int.h names the other parts.
 *
 * wait=true runs on the request's worker; the others are run by this
 * dialect's runner threads (judge0_run.c).  An answer is made outside the
 * dialect's lock from a snapshot of each submission, written once by
 * src/wire/jsonw.h (no tree of copies); a batch's answer on a worker, its
 * exact size counted before it is made and checked against the answer
 * budget (--max-answer-total, --max-answer-client), in which it is held
 * until it is sent. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"
#include "dialect/judge0/judge0.h"
#include "dialect/judge0/judge0_int.h"
#include "wire/jsonw.h"

static struct j0 *J(struct req *r)
{
	return r->ln->state;
}

static const char *arg(struct req *r, const char *k)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, k);
}

static bool b64_of(struct req *r)
{
	const char *b = arg(r, "base64_encoded");
	return b && !strcmp(b, "true");
}

static json_t *load(struct req *r)
{
	json_error_t je;
	json_t *o = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!o) {
		snprintf(r->message, sizeof(r->message), "the body is not JSON: %s", je.text);
		set_answer(r, 400, j0_error_json(r->message), "application/json");
	}
	return o;
}

static void bad_request(struct req *r, const char *msg)
{
	snprintf(r->message, sizeof(r->message), "%s", msg);
	set_answer(r, 400, j0_error_json(r->message), "application/json");
}

static const char *const UTF8_ONE = "some attributes for this submission cannot be converted to UTF-8, use "
				    "base64_encoded=true query parameter";
static const char *const UTF8_MANY = "some attributes for one or more submissions cannot be converted to UTF-8, use "
				     "base64_encoded=true query parameter";
static const char *const BATCH_MAX = "number of submissions in a batch should be less than or equal to 20";
static const char *const BATCH_MIN = "there should be at least one submission in a batch";

/* POST /submissions: on a worker.  wait=true runs it here. */
static void run_create(struct req *r)
{
	struct server *s = r->srv;
	struct j0 *j = J(r);
	const char *w = arg(r, "wait");
	bool wait = w && !strcmp(w, "true"), b64 = b64_of(r);
	const char *fields = arg(r, "fields");
	if (wait && !j0_fields_ok(r, fields))
		return;
	json_t *o = load(r);
	if (!o)
		return;
	struct j0_sub *x = j0_decode_sub(r, j, o, b64);
	json_decref(o);
	body_release(s, r);
	if (!x || !j0_hold(r, j, &x, 1, !wait)) {
		if (x)
			j0_sub_free(x);
		return;
	}
	if (!wait) {
		dialect_answer(r, 201, json_pack("{s:s}", "token", x->token));
		return;
	}
	j0_run_group(s, j, &x, 1);
	metrics_count_run(s, WARD_ST_OK, WARD_ISO_SYSTEM, now_mono() - r->t_admit);
	/* finished: its outcome does not change any more; held by our reference */
	size_t len = 0;
	char *a = j0_sub_answerable(x, fields, b64) ? j0_sub_text(x, fields, b64, &len) : NULL;
	if (a)
		set_answer_bytes(r, 201, a, len, "application/json");
	else
		dialect_answer(r, 201, json_pack("{s:s,s:s}", "token", x->token, "error", UTF8_ONE));
	j0_unref(j, x);
}

/* POST /submissions/batch */
static void run_batch(struct req *r)
{
	struct server *s = r->srv;
	bool b64 = b64_of(r);
	json_t *o = load(r);
	if (!o)
		return;
	json_t *a = json_object_get(o, "submissions");
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n == 0 || n > J0_MAX_BATCH) {
		json_decref(o);
		bad_request(r, n > J0_MAX_BATCH ? BATCH_MAX : BATCH_MIN);
		return;
	}
	struct j0_sub *v[J0_MAX_BATCH];
	json_t *out = json_array(), *errs[J0_MAX_BATCH] = {0};
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct j0_sub *x = j0_decode_sub(r, J(r), json_array_get(a, i), b64);
		if (x)
			v[k++] = x;
		else /* the 422's body, in its place in the answer */
			errs[i] = r->resp ? json_loads(r->resp, 0, NULL) : NULL;
	}
	json_decref(o);
	body_release(s, r);
	if (k && !j0_hold(r, J(r), v, k, true)) {
		for (size_t i = 0; i < k; i++)
			j0_sub_free(v[i]);
		for (size_t i = 0; i < n; i++)
			json_decref(errs[i]);
		json_decref(out);
		return;
	}
	for (size_t i = 0, m = 0; i < n; i++)
		json_array_append_new(out, errs[i] ? errs[i] : json_pack("{s:s}", "token", v[m++]->token));
	dialect_answer(r, k ? 201 : 422, out);
}

/* GET /submissions/{token}: one submission, on the I/O thread (a poll
 * must not wait for a worker), from its snapshot, counted in the answer
 * budget. */
static void answer_get(struct server *s, struct req *r)
{
	struct j0 *j = J(r);
	const char *fields = arg(r, "fields");
	struct j0_sub x;
	if (!j0_fields_ok(r, fields))
		return;
	if (!j0_snap(j, r->args.sid, &x)) {
		snprintf(r->message, sizeof(r->message),
		         "no such submission: unknown or expired (kept --judge0-keep seconds)");
		set_answer(r, 404, j0_error_json("Not Found"), "application/json");
		return;
	}
	bool ok = j0_sub_answerable(&x, fields, b64_of(r));
	size_t len = 0;
	char *o = ok ? j0_sub_text(&x, fields, b64_of(r), &len) : NULL;
	j0_unsnap(j, &x);
	if (!ok)
		bad_request(r, UTF8_ONE);
	else if (!o)
		set_error(r, 500, "out of memory for the answer");
	else {
		set_answer_bytes(r, 200, o, len, "application/json");
		hold_answer(s, r);
	}
}

/* ?tokens (or the tokens header): 1 to 20 of them, each once, into t;
 * their number, or 0 with the 400 set. */
static size_t batch_tokens(struct req *r, char t[J0_MAX_BATCH][40])
{
	const char *tokens = arg(r, "tokens");
	if (!tokens)
		tokens = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "tokens");
	size_t n = 0;
	for (const char *p = tokens ? tokens : ""; *p;) {
		size_t k = strcspn(p, ",");
		if (n == J0_MAX_BATCH) {
			bad_request(r, BATCH_MAX);
			return 0;
		}
		snprintf(t[n], 40, "%.*s", (int)(k < 39 ? k : 39), p);
		for (size_t i = 0; i < n; i++)
			if (!strcmp(t[i], t[n])) {
				bad_request(r, "a token is given twice in tokens: give each token once");
				return 0;
			}
		n++;
		p += k + (p[k] == ',');
	}
	if (!n)
		bad_request(r, BATCH_MIN);
	return n;
}

/* A batch's answer: {"submissions": [...]}, null for an unknown token. */
struct batch {
	const struct j0_sub *x;
	const bool *found;
	size_t n;
	const char *fields;
	bool b64;
};

static void emit_batch(struct jw *w, const void *arg)
{
	const struct batch *b = arg;
	jw_object_begin(w);
	jw_key(w, "submissions");
	jw_array_begin(w);
	for (size_t i = 0; i < b->n; i++) {
		jw_element(w);
		if (b->found[i])
			j0_sub_emit(w, &b->x[i], b->fields, b->b64);
		else
			jw_null(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}

/* The snapshots' answer, its exact size counted first (nothing held), and
 * made only when that fits the answer budget now; else the 503 (or the
 * 400: not UTF-8). */
static void batch_answer(struct req *r, const struct batch *b)
{
	struct server *s = r->srv;
	for (size_t i = 0; i < b->n; i++)
		if (b->found[i] && !j0_sub_answerable(&b->x[i], b->fields, b->b64)) {
			bad_request(r, UTF8_MANY);
			return;
		}
	struct jw count = {.fd = -1};
	emit_batch(&count, b);
	size_t n = count.len + 1;
	if (n > s->o.max_answer_client || !answer_reserve(s, n)) {
		r->retry_after = 1;
		set_error(r, 503,
		          "the answer of these submissions takes %zu bytes, more than the answer budget has now "
		          "(--max-answer-total, --max-answer-client %zu): ask for fewer tokens or fields, or "
		          "base64_encoded=true",
		          n, s->o.max_answer_client);
		return;
	}
	size_t len = 0;
	char *out = jw_build(emit_batch, b, &len);
	if (out)
		set_answer_bytes(r, 200, out, len, "application/json");
	else
		set_error(r, 500, "out of memory for the answer");
	answer_release(s, n); /* the answer itself is counted by the worker (hold_answer) */
}

/* GET /submissions/batch: on a worker (light: it makes no sandbox, so
 * the dialect's runs holding every slot do not hold up a poll). */
static void run_get_batch(struct req *r)
{
	struct j0 *j = J(r);
	const char *fields = arg(r, "fields");
	char t[J0_MAX_BATCH][40];
	struct j0_sub x[J0_MAX_BATCH];
	bool found[J0_MAX_BATCH];
	if (!j0_fields_ok(r, fields))
		return;
	size_t n = batch_tokens(r, t);
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		found[i] = j0_snap(j, t[i], &x[i]);
	struct batch b = {x, found, n, fields, b64_of(r)};
	batch_answer(r, &b);
	for (size_t i = 0; i < n; i++)
		if (found[i])
			j0_unsnap(j, &x[i]);
}

/* POST /submissions(/batch), before admission: a client whose share of
 * the queue is full is refused here, not after waiting for a worker. */
static bool prepare_submit(struct server *s, struct req *r)
{
	return j0_room(r, J(r));
}

static void answer_root(struct server *s, struct req *r)
{
	set_answer(r, 200, strdup(""), "text/plain");
}

static void not_found(struct server *s, struct req *r)
{
	snprintf(r->message, sizeof(r->message), "no such endpoint: %s", r->path);
	set_answer(r, 404, j0_error_json("Not Found"), "application/json");
}

/* X-Auth-Token, as a header or a query parameter. */
static const char *token(struct MHD_Connection *c)
{
	const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Auth-Token");
	return t ? t : MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "X-Auth-Token");
}

static int start(struct server *s, void **state)
{
	struct j0 *j = calloc(1, sizeof(*j));
	if (!j)
		return -1;
	j->s = s;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	*state = j;
	j0_limits_init(j);
	j0_files_start(s, &j->files);
	if (s->o.njudge0_callback_allow)
		j->cb = j0_callbacks_start(s, J0_CALLBACKS_PENDING);
	unsigned n = s->o.max_concurrent < J0_RUNNERS_MAX ? s->o.max_concurrent : J0_RUNNERS_MAX;
	j->runners = (struct workq){.lock = &j->lock,
	                            .cond = &j->cond,
	                            .take = j0_runner_take,
	                            .run = j0_runner_run,
	                            .ctx = j,
	                            .name = "judge0-runner"};
	if (workq_start(&j->runners, (int)n)) {
		fprintf(stderr, "ward serve: --judge0: cannot start its runner threads\n");
		return -1;
	}
	return 0;
}

static void stop(struct server *s, void *state)
{
	struct j0 *j = state;
	if (!j)
		return;
	workq_stop(&j->runners);
	j0_callbacks_stop(j->cb);
	j0_store_free(j);
	j0_files_stop(&j->files);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

#define R(p, m, al, ...)                                         \
	{                                                        \
		.path = p, .method = m, .allow = al, __VA_ARGS__ \
	}
static const struct route routes[] = {
	R("/", "GET", "GET, HEAD", .open = true, .answer = answer_root),
	R("/submissions/batch", "POST", "GET, HEAD, POST", .prepare = prepare_submit, .run = run_batch),
	R("/submissions/batch", "GET", "GET, HEAD, POST", .light = true, .run = run_get_batch),
	R("/submissions", "POST", "POST", .prepare = prepare_submit, .run = run_create),
	R("/submissions/{id}", "GET", "GET, HEAD", .answer = answer_get),
	R("/languages", "GET", "GET, HEAD", .answer = j0_languages),
	R("/languages/all", "GET", "GET, HEAD", .answer = j0_languages),
	R("/languages/{pid}", "GET", "GET, HEAD", .answer = j0_language),
	R("/statuses", "GET", "GET, HEAD", .answer = j0_statuses),
	R("/about", "GET", "GET, HEAD", .answer = j0_about),
	R("/config_info", "GET", "GET, HEAD", .answer = j0_config),
	R("/workers", "GET", "GET, HEAD", .answer = j0_workers),
};

const struct api judge0_api = {
	.name = "judge0",
	.routes = routes,
	.nroutes = sizeof(routes) / sizeof(routes[0]),
	.error_json = j0_error_json,
	.token = token,
	.token_hint = "send X-Auth-Token: <token> (a header, or the X-Auth-Token query parameter)",
	.not_found = not_found,
	.start = start,
	.tick = j0_sweep,
	.stop = stop,
};
