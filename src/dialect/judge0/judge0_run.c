/* judge0_run.c — running Judge0 submissions (SPEC §16): the runner
 * threads (each on a slot borrowed from admission, so never more sandboxes
 * than --max-concurrent, and native requests go first) take the queue's
 * head and every queued submission of its batch that shares its compile;
 * such a group is one judge job (SPEC §15), compiled once, a test each,
 * and its outcome becomes each submission's Judge0 attributes (research
 * judge.md §8.3: statuses are honest, a signal is 7-10 or 12). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dialect/judge0/judge0_int.h"
#include "judge/judge_json.h"

/* Judge0's fields of a test's verdict (research §8.3). */
static void verdict(struct j0_sub *x, const struct ward_judge_test_result *t)
{
	x->time = (double)t->cpu_ms / 1000;
	x->wall_time = (double)t->wall_ms / 1000;
	x->memory = (long)t->memory_kb;
	x->exit_code = 0, x->exit_signal = -1;
	j0_buf_set(&x->stdout_, t->out.data ? t->out.data : "", t->out.len);
	j0_buf_set(&x->stderr_, t->err.data ? t->err.data : "", t->err.len);
	switch (t->verdict) {
	case WARD_V_AC:
		x->status = 3;
		break;
	case WARD_V_WA:
		x->status = 4;
		break;
	case WARD_V_TLE:
		x->status = 5;
		snprintf(x->message, sizeof(x->message),
		         strstr(t->message, "wall") ? "Time limit exceeded (wall clock)" : "Time limit exceeded");
		break;
	case WARD_V_MLE:
		x->status = 12, x->exit_signal = 9;
		snprintf(x->message, sizeof(x->message), "Memory limit exceeded");
		break;
	case WARD_V_OLE:
		x->status = 8, x->exit_signal = 25;
		snprintf(x->message, sizeof(x->message), "Output limit exceeded");
		break;
	case WARD_V_RE:
		if (t->signal) {
			x->exit_signal = t->signal;
			x->status = t->signal == 11   ? 7
			            : t->signal == 25 ? 8
			            : t->signal == 8  ? 9
			            : t->signal == 6  ? 10
			                              : 12;
			snprintf(x->message, sizeof(x->message), "Caught fatal signal %d", t->signal);
		} else {
			x->status = 11, x->exit_code = t->exit_code;
			snprintf(x->message, sizeof(x->message), "Exited with error status %d", t->exit_code);
		}
		break;
	default:
		x->status = 13;
		snprintf(x->message, sizeof(x->message), "%.190s", t->message);
		break;
	}
}

/* A group's additional_files, unpacked once (its submissions share them). */
struct unpacked {
	struct ward_result res;
	struct ward_file *files;
	size_t n;
	bool done;
};

/* 0, or -1 with why: the zip could not be unpacked (the group's CE). */
static int unpack(struct server *s, struct j0 *j, const struct j0_sub *x, struct unpacked *u, char *why, size_t n)
{
	if (!x->zip.set)
		return 0;
	u->done = true;
	if (j0_unzip(s, &j->files, x->zip.p, x->zip.n, &u->res, why, n) < 0)
		return -1;
	u->files = calloc(u->res.nfiles + 1, sizeof(*u->files));
	if (!u->files) {
		snprintf(why, n, "additional_files: out of memory");
		return -1;
	}
	for (size_t i = 0; i < u->res.nfiles; i++) {
		const struct ward_collected *c = &u->res.files[i];
		u->files[i] = (struct ward_file){.path = c->path, .data = c->data, .len = c->size, .mode = c->mode};
	}
	u->n = u->res.nfiles;
	if (x->language_id == J0_MULTI_FILE_ID && !u->n) {
		snprintf(why, n, "additional_files: the zip has no files (language 89 runs its `run` script)");
		return -1;
	}
	return 0;
}

static void unpacked_free(struct unpacked *u)
{
	if (u->done)
		ward_result_free(&u->res);
	free(u->files);
}

/* The job's language and files: the submission's source with the zip's
 * files beside it; language 89's are the zip's only, its scripts run. */
static void job_files(struct j0 *j, const struct j0_sub *x, struct ward_judge_job *job, struct ward_file *src,
                      const struct unpacked *u, struct j0_multi *m)
{
	job->lang = x->lang;
	job->files = src;
	job->nfiles = 1;
	job->extra = u->files;
	job->nextra = u->n;
	if (x->language_id == J0_MULTI_FILE_ID) {
		j0_multi_lang(&j->files, u->files, u->n, m);
		job->lang = &m->lang;
		job->files = u->files;
		job->nfiles = u->n;
		job->extra = NULL;
		job->nextra = 0;
	}
}

/* A submission's fields from its runs (x->runs tests from t): the last
 * that ran (the first not Accepted ends them), with time and memory the
 * averages of those that ran, as Judge0 (memory whole KB). */
static void runs_result(struct j0_sub *x, const struct ward_judge_test_result *t)
{
	double time = 0, memory = 0;
	unsigned ran = 0;
	for (unsigned r = 0; r < x->runs; r++) {
		if (t[r].verdict == WARD_V_SKIPPED)
			break;
		verdict(x, &t[r]);
		time += x->time > 0 ? x->time : 0;
		memory += x->memory > 0 ? (double)x->memory : 0;
		ran++;
	}
	if (!ran)
		verdict(x, &t[0]); /* none ran (cancelled): Internal Error */
	if (ran > 1) {
		x->time = time / ran;
		x->memory = (long)(memory / ran);
	}
}

/* Each submission's fields from the group's outcome (the lock held).  why
 * set: the zip could not be unpacked; ie set: ward could not judge. */
static void group_results(struct j0 *j, struct j0_sub **v, size_t n, const struct ward_judge_result *res,
                          const char *why, const char *ie)
{
	struct server *s = j->s;
	size_t first = 0; /* the submission's first test */
	for (size_t i = 0; i < n; i++) {
		struct j0_sub *x = v[i];
		x->finished = now_real();
		x->expires = now_mono() + s->o.judge0_keep;
		if (ie) {
			x->status = 13;
			snprintf(x->message, sizeof(x->message), "%.190s", ie);
		} else if (why) {
			x->status = 6;
			j0_buf_set(&x->compile_output, why, strlen(why));
		} else if (res->verdict == WARD_V_CE) {
			x->status = 6;
			const struct ward_stream *o = &res->compile.out, *e = &res->compile.err;
			size_t len = o->len + e->len;
			unsigned char *both = malloc(len + 1);
			if (both) {
				if (o->len)
					memcpy(both, o->data, o->len);
				if (e->len)
					memcpy(both + o->len, e->data, e->len);
				j0_buf_set(&x->compile_output, both, len);
				free(both);
			}
			if (res->compile.timed_out)
				j0_buf_set(&x->compile_output, "Compilation time limit exceeded.", 32);
		} else if (res->verdict == WARD_V_IE || first + x->runs > res->ntests) {
			x->status = 13;
			snprintf(x->message, sizeof(x->message), "%.190s", res->error[0] ? res->error : "not run");
		} else {
			runs_result(x, &res->tests[first]);
			if (res->compiled && (res->compile.out.len || res->compile.err.len))
				j0_buf_set(&x->compile_output, res->compile.err.data ? res->compile.err.data : "",
				           res->compile.err.len);
		}
		first += x->runs;
		j0_finished(j, x);
	}
}

/* Each submission's runs as tests of the job (number_of_runs of them, in
 * order), from *k on.  false with err. */
static bool add_tests(struct server *s, const struct ward_judge_job *job, struct j0_sub *x, bool multi,
                      struct ward_judge_test *tests, struct ward_judge_limits *lims, char ***args, size_t *k, char *err,
                      size_t errlen)
{
	/* language 89 runs its script as it is: Judge0 passes it no arguments */
	if (x->args && !multi && judge_split_words(x->args, args, err, errlen) < 0)
		return false;
	struct ward_judge_limits l = job->run_limits;
	/* within the runner's maxima already (j0_decode_sub) */
	l.l.cpu_s = x->cpu_time_limit > 0 ? x->cpu_time_limit : 0.001;
	l.extra_cpu_s = x->cpu_extra_time;
	l.l.timeout_s = x->wall_time_limit;
	uint64_t mb = (uint64_t)((x->memory_limit + 1023) / 1024);
	l.l.memory_mb = mb < s->o.max.memory_mb ? mb : s->o.max.memory_mb;
	for (unsigned r = 0; r < x->runs; r++, (*k)++) {
		struct ward_judge_test *t = &tests[*k];
		t->id = x->token;
		t->stdin_data = x->stdin_.p;
		t->stdin_len = x->stdin_.n;
		t->expected = x->expected.set ? x->expected.p : NULL;
		t->expected_len = x->expected.n;
		lims[*k] = l;
		t->limits = &lims[*k];
		t->args = *args;
	}
	return true;
}

/* Run n submissions that share a compile as one job (compile once, a test
 * each; a submission of number_of_runs > 1 is alone in its job, its runs
 * one at a time, stopping at the first that is not Accepted, as Judge0);
 * the lock not held.  Their results are written under it. */
void j0_run_group(struct server *s, struct j0 *j, struct j0_sub **v, size_t n)
{
	struct ward_judge_job job = {0};
	size_t ntests = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		ntests += v[i]->runs;
	struct ward_judge_test *tests = calloc(ntests, sizeof(*tests));
	struct ward_judge_limits *lims = calloc(ntests, sizeof(*lims));
	char **flags = NULL, ***args = calloc(n, sizeof(*args)), err[200] = "out of memory", why[512] = "";
	struct ward_file f = {
		.path = v[0]->lang->source_file, .data = v[0]->source.p, .len = v[0]->source.n, .mode = 0644};
	struct ward_judge_result res = {0};
	struct unpacked u = {0};
	struct j0_multi multi_lang;
	bool multi = v[0]->language_id == J0_MULTI_FILE_ID;
	bool ok = tests && lims && args;
	if (ok && v[0]->compiler_options && judge_split_words(v[0]->compiler_options, &flags, err, sizeof(err)) < 0)
		ok = false;
	dialect_limits(s, v[0]->lang, &job.compile_limits, &job.run_limits);
	for (size_t i = 0; ok && i < n; i++)
		ok = add_tests(s, &job, v[i], multi, tests, lims, &args[i], &k, err, sizeof(err));
	bool unpacked = ok && unpack(s, j, v[0], &u, why, sizeof(why)) == 0;
	if (unpacked) {
		job_files(j, v[0], &job, &f, &u, &multi_lang);
		job.flags = flags;
		job.tests = tests;
		job.ntests = ntests;
		job.compare = WARD_CMP_LINES;
		if (ntests > n) {
			job.stop_on_first_failure = true;
			job.parallel = 1;
		}
		dialect_judge(s, &job, &res);
	}
	pthread_mutex_lock(&j->lock);
	group_results(j, v, n, &res, ok && !unpacked ? why : NULL, ok ? NULL : err);
	/* callbacks: the default fields, base64, as Judge0 sends them */
	for (size_t i = 0; i < n; i++)
		if (v[i]->callback_url) {
			j0_callback_queue(j->cb, v[i]->callback_url, j0_sub_text(v[i], NULL, true, NULL));
		}
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (unpacked)
		ward_judge_result_free(&res);
	unpacked_free(&u);
	for (size_t i = 0; args && i < n; i++)
		free(args[i]);
	free(args);
	free(flags);
	free(tests);
	free(lims);
}

static bool same_compile(const struct j0_sub *a, const struct j0_sub *b)
{
	return a->runs == 1 && b->runs == 1 && a->lang == b->lang && a->source.n == b->source.n &&
	       !memcmp(a->source.p, b->source.p, a->source.n) && a->zip.n == b->zip.n &&
	       (!a->zip.n || !memcmp(a->zip.p, b->zip.p, a->zip.n)) &&
	       !strcmp(a->compiler_options ? a->compiler_options : "", b->compiler_options ? b->compiler_options : "");
}

void *j0_runner_take(void *ctx, int thread)
{
	struct j0 *j = ctx;
	return j->qhead ? j : NULL; /* (taken in j0_runner_run, once a slot is had) */
}

void j0_runner_run(void *ctx, void *job, int thread)
{
	struct j0 *j = ctx;
	struct server *s = j->s;
	/* a slot of --max-concurrent that nothing native needs now */
	while (!j->runners.stop && slots_borrow(s, 1) == 0)
		usleep(10000);
	pthread_mutex_lock(&j->lock);
	if (j->runners.stop || !j->qhead) {
		pthread_mutex_unlock(&j->lock);
		if (!j->runners.stop)
			slots_return(s, 1);
		return;
	}
	/* the head and every queued one of its batch group */
	struct j0_sub *v[J0_MAX_BATCH];
	size_t n = 0;
	struct j0_sub *h = j->qhead;
	for (struct j0_sub **pp = &j->qhead; *pp && n < J0_MAX_BATCH;) {
		struct j0_sub *x = *pp;
		if (x == h || (h->group && x->group == h->group && same_compile(h, x))) {
			*pp = x->qnext;
			x->status = 2;
			v[n++] = x;
			j->queued--;
		} else
			pp = &x->qnext;
	}
	j->qtail = NULL;
	for (struct j0_sub *x = j->qhead; x; x = x->qnext)
		j->qtail = x;
	j->running++;
	pthread_mutex_unlock(&j->lock);
	j0_run_group(s, j, v, n);
	slots_return(s, 1);
	pthread_mutex_lock(&j->lock);
	j->running--;
	pthread_mutex_unlock(&j->lock);
}
