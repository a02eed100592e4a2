/* judge.c — ward_judge() (SPEC §15): compile once, run many tests, a
 * verdict each.
 *
 *  1. The compile (when the language has one) is one ward_run: the job's
 *     files in an ephemeral /work, the compile argv, the compile limits,
 *     stdin /dev/null.  Its failure (exit, signal, time, memory, a build
 *     larger than WARD_JUDGE_MAX_BUILD_BYTES) is CE and no test runs.
 *  2. The build's files (the language's declared artifacts, else all of
 *     /work) come back from that sandbox through files out (SPEC §12: read
 *     inside it, no symlink followed) and are kept in ward's memory, never
 *     on a path the program could reach.  An interpreter's "build" is the
 *     job's own files.
 *  3. Each test is one more ward_run: a fresh sandbox (pooled when it
 *     fits), the build's files written into its /work, the test's stdin,
 *     args and limits.  Nothing of one test is seen by another: no file, no
 *     process (a sandbox's processes die with its PID 1).
 *  4. Tests run `parallel` at a time on threads of this call: the caller's
 *     and up to parallel - 1 more, as many as job->take_slots grants (a
 *     runner lends what its --max-concurrent has idle; it never waits).
 *
 * Verdicts, the first that applies: IE > CE > TLE > MLE > OLE > RE > WA >
 * AC.  MLE is the cgroup's OOM kill count (result.oom_killed), never an
 * exit status 137; OLE is the output limit's kill (output_limit_kills). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ward_judge.h"

const char *ward_verdict_name(enum ward_verdict v)
{
	switch (v) {
	case WARD_V_AC:
		return "AC";
	case WARD_V_WA:
		return "WA";
	case WARD_V_RE:
		return "RE";
	case WARD_V_OLE:
		return "OLE";
	case WARD_V_MLE:
		return "MLE";
	case WARD_V_TLE:
		return "TLE";
	case WARD_V_CE:
		return "CE";
	case WARD_V_IE:
		return "IE";
	case WARD_V_SKIPPED:
		return "SKIPPED";
	}
	return "IE";
}

static void set_ie(struct ward_judge_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_ie(struct ward_judge_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
	res->verdict = WARD_V_IE;
}

/* "1.5", "2", "0.25": a number of seconds for a message. */
static void secs(char *buf, size_t n, double s)
{
	snprintf(buf, n, "%.2f", s);
	char *e = buf + strlen(buf) - 1;
	while (e > buf && *e == '0')
		*e-- = 0;
	if (*e == '.')
		*e = 0;
}

/* The build: the files every test's /work gets. */
struct build {
	struct ward_file *files;
	size_t n;
	struct ward_collected *owned; /* the compile's collected files, or NULL */
	size_t nowned;
};

static void build_free(struct build *b)
{
	for (size_t i = 0; i < b->nowned; i++) {
		free(b->owned[i].path);
		free(b->owned[i].data);
	}
	free(b->owned);
	free(b->files);
	memset(b, 0, sizeof(*b));
}

static bool has_path(const struct ward_file *f, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].path, path))
			return true;
	return false;
}

/* f[0..n) and then the job's extra files whose paths are not among them:
 * a malloc'd array (entries borrowed), its length in *out. */
static struct ward_file *with_extra(const struct ward_judge_job *job, const struct ward_file *f, size_t n, size_t *out)
{
	struct ward_file *v = calloc(n + job->nextra + 1, sizeof(*v));
	if (!v)
		return NULL;
	if (n)
		memcpy(v, f, n * sizeof(*v));
	size_t k = n;
	for (size_t i = 0; i < job->nextra; i++)
		if (!has_path(v, k, job->extra[i].path))
			v[k++] = job->extra[i];
	*out = k;
	return v;
}

/* The job's file paths, NULL-terminated (borrowed). */
static char **file_paths(const struct ward_file *f, size_t n)
{
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++)
		v[i] = (char *)f[i].path;
	return v;
}

static void describe_failure(const struct ward_result *r, const struct ward_limits *l, const char *what, char *msg,
                             size_t n)
{
	char a[32], b[32];
	uint64_t cpu = r->usage.cpu_user_ms + r->usage.cpu_sys_ms;
	double cpu_lim = l->cpu_s > 0 ? l->cpu_s : l->timeout_s;
	if (r->timed_out && cpu >= (uint64_t)(cpu_lim * 1000)) {
		secs(a, sizeof(a), (double)cpu / 1000);
		secs(b, sizeof(b), cpu_lim);
		snprintf(msg, n, "%s: CPU time %s s > %s s", what, a, b);
	} else if (r->timed_out) {
		secs(a, sizeof(a), (double)r->usage.wall_ms / 1000);
		secs(b, sizeof(b), l->timeout_s);
		snprintf(msg, n, "%s: wall time %s s > %s s", what, a, b);
	} else if (r->oom_killed) {
		snprintf(msg, n, "%s: memory limit %llu MB exceeded", what, (unsigned long long)l->memory_mb);
	} else if (r->signal) {
		const char *abbr = sigabbrev_np(r->signal); /* "SEGV" */
		snprintf(msg, n, "%s: killed by SIG%s", what, abbr ? abbr : "(unknown)");
	} else {
		snprintf(msg, n, "%s: exit status %d", what, r->exit_code);
	}
}

/* A compile that ran: CE in res (its files dropped) when it failed or left
 * no usable build; true then. */
static bool compile_failed(const struct ward_language *lang, const struct ward_limits *limits,
                           struct ward_judge_result *res)
{
	struct ward_result *r = &res->compile;
	if (r->status != WARD_ST_OK) {
		res->compile_verdict = res->verdict = WARD_V_CE;
		describe_failure(r, limits, "compile", res->compile_message, sizeof(res->compile_message));
	} else if (r->files_truncated) {
		res->compile_verdict = res->verdict = WARD_V_CE;
		snprintf(res->compile_message, sizeof(res->compile_message),
		         "compile: the build left more than %u files or %u MiB in /work (declare the language's "
		         "artifacts)",
		         WARD_JUDGE_MAX_BUILD_FILES, WARD_JUDGE_MAX_BUILD_BYTES >> 20);
	} else if (r->nfiles == 0) {
		res->compile_verdict = res->verdict = WARD_V_CE;
		snprintf(res->compile_message, sizeof(res->compile_message),
		         "compile: the build left none of its artifacts (%s) in /work",
		         lang->artifacts ? lang->artifacts[0] : "any file");
	}
	if (res->verdict == WARD_V_CE) {
		for (size_t i = 0; i < r->nfiles; i++) {
			free(r->files[i].path);
			free(r->files[i].data);
		}
		free(r->files);
		r->files = NULL;
		r->nfiles = 0;
		return true;
	}
	return false;
}

/* Compile: CE or IE set in res, or the build filled.  0 to go on, -1 not. */
static int compile(const struct ward_judge_job *job, const struct ward_image_root *root, struct ward_judge_result *res,
                   struct build *b)
{
	const struct ward_language *lang = job->lang;
	char **paths = file_paths(job->files, job->nfiles);
	char **argv = paths ? ward_judge_argv(lang->compile, job->files[0].path, paths, job->flags, NULL) : NULL;
	static char *const all[] = {"**", NULL};
	if (!argv) {
		free(paths);
		set_ie(res, "out of memory for the compile command");
		return -1;
	}
	size_t nall = 0;
	struct ward_file *all_files = with_extra(job, job->files, job->nfiles, &nall);
	if (!all_files) {
		free(argv);
		free(paths);
		set_ie(res, "out of memory for the compile's files");
		return -1;
	}
	struct ward_request q;
	ward_request_init(&q);
	q.argv = argv;
	q.env = lang->env;
	q.files = all_files;
	q.nfiles = nall;
	q.image = root;
	q.mounts = lang->mount_v;
	q.nmounts = lang->nmounts;
	q.capture = true;
	q.cancel = job->cancel;
	q.limits = job->compile_limits;
	q.limits.collect_max_files = WARD_JUDGE_MAX_BUILD_FILES;
	q.limits.collect_max_bytes = WARD_JUDGE_MAX_BUILD_BYTES;
	q.collect = lang->artifacts ? lang->artifacts : all;
	res->compiled = true;
	int rc = ward_run_pooled(job->pool, &q, &res->compile);
	free(all_files);
	free(argv);
	free(paths);
	struct ward_result *r = &res->compile;
	if (rc < 0 || r->status == WARD_ST_ERROR) {
		res->compile_verdict = WARD_V_IE;
		set_ie(res, "the compile could not run: %.460s", r->error);
		return -1;
	}
	if (compile_failed(lang, &q.limits, res))
		return -1;
	/* the build's files are the judge's now, out of the compile's result */
	b->owned = r->files;
	b->nowned = r->nfiles;
	r->files = NULL;
	r->nfiles = 0;
	struct ward_file *built = calloc(b->nowned + 1, sizeof(*built));
	for (size_t i = 0; built && i < b->nowned; i++)
		built[i] = (struct ward_file){.path = b->owned[i].path,
		                              .data = b->owned[i].data,
		                              .len = b->owned[i].size,
		                              .mode = b->owned[i].mode};
	b->files = built ? with_extra(job, built, b->nowned, &b->n) : NULL;
	free(built);
	if (!b->files) {
		set_ie(res, "out of memory for the build's files");
		return -1;
	}
	res->compile_verdict = WARD_V_AC;
	return 0;
}

/* ---------------------------------------------------------------- tests */

struct judging {
	const struct ward_judge_job *job;
	const struct ward_image_root *root;
	struct ward_judge_result *res;
	const struct build *b;
	pthread_mutex_t lock;
	size_t next; /* the next test to start */
	bool stop;   /* stop_on_first_failure: a test failed */
	unsigned running, most;
};

/* Keep at most WARD_JUDGE_KEPT_OUTPUT of a stream. */
static void keep_head(struct ward_stream *s)
{
	if (s->len <= WARD_JUDGE_KEPT_OUTPUT)
		return;
	s->len = WARD_JUDGE_KEPT_OUTPUT;
	s->data[s->len] = 0;
	s->truncated = true;
	char *shrunk = realloc(s->data, s->len + 1);
	if (shrunk)
		s->data = shrunk;
}

static void verdict_of(const struct ward_judge_job *job, const struct ward_judge_test *t,
                       const struct ward_judge_limits *lim, struct ward_result *r, struct ward_judge_test_result *tr)
{
	char a[32], b[32];
	uint64_t cpu = tr->cpu_ms;
	double cpu_lim = lim->l.cpu_s > 0 ? lim->l.cpu_s : lim->l.timeout_s;
	if (r->timed_out || (double)cpu > cpu_lim * 1000) {
		tr->verdict = WARD_V_TLE;
		if ((double)cpu >= cpu_lim * 1000 * 0.95) {
			secs(a, sizeof(a), (double)cpu / 1000);
			secs(b, sizeof(b), cpu_lim);
			snprintf(tr->message, sizeof(tr->message), "CPU time %s s > %s s", a, b);
		} else {
			secs(a, sizeof(a), (double)tr->wall_ms / 1000);
			secs(b, sizeof(b), lim->l.timeout_s);
			snprintf(tr->message, sizeof(tr->message), "wall time %s s > %s s", a, b);
		}
	} else if (r->oom_killed) {
		tr->verdict = WARD_V_MLE;
		snprintf(tr->message, sizeof(tr->message), "memory limit %llu MB exceeded (the cgroup's OOM killer)",
		         (unsigned long long)lim->l.memory_mb);
	} else if (r->output_exceeded) {
		tr->verdict = WARD_V_OLE;
		snprintf(tr->message, sizeof(tr->message), "%s passed max_output_bytes (%llu bytes): killed",
		         r->out.bytes > lim->l.output_limit ? "stdout" : "stderr",
		         (unsigned long long)lim->l.output_limit);
	} else if (r->signal) {
		tr->verdict = WARD_V_RE;
		const char *abbr = sigabbrev_np(r->signal);
		if (abbr)
			snprintf(tr->message, sizeof(tr->message), "killed by SIG%s", abbr);
		else
			snprintf(tr->message, sizeof(tr->message), "killed by signal %d", r->signal);
	} else if (r->exit_code != 0) {
		tr->verdict = WARD_V_RE;
		snprintf(tr->message, sizeof(tr->message), "exit status %d", r->exit_code);
	} else if (t->expected && !ward_judge_compare(job->compare, job->eps, (const unsigned char *)r->out.data,
	                                              r->out.len, t->expected, t->expected_len)) {
		tr->verdict = WARD_V_WA;
		snprintf(tr->message, sizeof(tr->message), "the output differs from the expected output (compare %s)",
		         job->compare == WARD_CMP_EXACT    ? "exact"
		         : job->compare == WARD_CMP_LINES  ? "lines"
		         : job->compare == WARD_CMP_TOKENS ? "tokens"
		                                           : "float");
	} else {
		tr->verdict = WARD_V_AC;
	}
}

static void run_test(struct judging *j, size_t i)
{
	const struct ward_judge_job *job = j->job;
	const struct ward_judge_test *t = &job->tests[i];
	struct ward_judge_test_result *tr = &j->res->tests[i];
	const struct ward_judge_limits *lim = t->limits ? t->limits : &job->run_limits;
	tr->id = strdup(t->id ? t->id : "");
	char **argv = ward_judge_argv(job->lang->run, job->files[0].path, NULL, NULL, t->args ? t->args : job->args);
	if (!argv) {
		tr->verdict = WARD_V_IE;
		snprintf(tr->message, sizeof(tr->message), "out of memory for the run command");
		return;
	}
	struct ward_request q;
	ward_request_init(&q);
	q.argv = argv;
	q.env = job->lang->env;
	q.files = j->b->files;
	q.nfiles = j->b->n;
	q.image = j->root;
	q.mounts = job->lang->mount_v;
	q.nmounts = job->lang->nmounts;
	q.capture = true;
	q.cancel = job->cancel;
	q.limits = lim->l;
	double cpu = lim->l.cpu_s > 0 ? lim->l.cpu_s : lim->l.timeout_s;
	q.limits.cpu_s = cpu + lim->extra_cpu_s;
	if (q.limits.timeout_s < q.limits.cpu_s)
		q.limits.timeout_s = q.limits.cpu_s;
	q.output_limit_kills = true;
	q.stdin_set = true;
	q.stdin_data = t->stdin_data ? t->stdin_data : (const unsigned char *)"";
	q.stdin_len = t->stdin_data ? t->stdin_len : 0;
	struct ward_result r;
	int rc = ward_run_pooled(job->pool, &q, &r);
	free(argv);
	tr->exit_code = r.exit_code;
	tr->signal = r.signal;
	tr->cpu_ms = r.usage.cpu_user_ms + r.usage.cpu_sys_ms;
	tr->wall_ms = r.usage.wall_ms;
	tr->memory_kb = r.usage.max_rss_kb;
	if (rc < 0 || r.status == WARD_ST_ERROR) {
		tr->verdict = WARD_V_IE;
		snprintf(tr->message, sizeof(tr->message), "%.190s", r.error[0] ? r.error : "the sandbox failed");
	} else {
		struct ward_judge_limits held = *lim;
		held.l.cpu_s = cpu;
		verdict_of(job, t, &held, &r, tr);
	}
	tr->out = r.out;
	tr->err = r.err;
	r.out.data = r.err.data = NULL;
	keep_head(&tr->out);
	keep_head(&tr->err);
	ward_result_free(&r);
}

/* The next test this thread runs, or false when there is none (all
 * started, or a failure stops the job). */
static bool take_test(struct judging *j, size_t *i)
{
	pthread_mutex_lock(&j->lock);
	bool go = !j->stop && j->next < j->job->ntests && !(j->job->cancel && *j->job->cancel);
	if (go) {
		*i = j->next++;
		if (++j->running > j->most)
			j->most = j->running;
	}
	pthread_mutex_unlock(&j->lock);
	return go;
}

static void test_ended(struct judging *j, size_t i)
{
	struct ward_judge_test_result *tr = &j->res->tests[i];
	pthread_mutex_lock(&j->lock);
	j->running--;
	if (tr->verdict != WARD_V_AC && j->job->stop_on_first_failure)
		j->stop = true;
	if (j->job->test_done)
		j->job->test_done(j->job->test_done_arg, tr, i);
	pthread_mutex_unlock(&j->lock);
}

static void *tests_thread(void *arg)
{
	struct judging *j = arg;
	size_t i;
	while (take_test(j, &i)) {
		run_test(j, i);
		test_ended(j, i);
	}
	return NULL;
}

/* Run every test, parallel at a time. */
static void run_tests(const struct ward_judge_job *job, const struct ward_image_root *root, const struct build *b,
                      struct ward_judge_result *res)
{
	struct judging j = {.job = job, .root = root, .res = res, .b = b};
	pthread_mutex_init(&j.lock, NULL);
	unsigned want = job->parallel ? job->parallel : 1;
	if (want > job->ntests)
		want = job->ntests ? (unsigned)job->ntests : 1;
	unsigned extra = want - 1;
	if (extra && job->take_slots)
		extra = job->take_slots(job->slots_arg, extra);
	pthread_t *th = extra ? calloc(extra, sizeof(*th)) : NULL;
	unsigned started = 0;
	for (; th && started < extra; started++)
		if (pthread_create(&th[started], NULL, tests_thread, &j) != 0)
			break;
	if (job->give_slots && extra > started)
		job->give_slots(job->slots_arg, extra - started);
	tests_thread(&j);
	for (unsigned k = 0; k < started; k++) {
		pthread_join(th[k], NULL);
		if (job->give_slots)
			job->give_slots(job->slots_arg, 1);
	}
	free(th);
	pthread_mutex_destroy(&j.lock);
	res->parallel = j.most;
}

/* The job's verdict and summary from its tests'. */
static void summarize(const struct ward_judge_job *job, struct ward_judge_result *res)
{
	res->first_failed = -1;
	res->verdict = WARD_V_AC;
	for (size_t i = 0; i < res->ntests; i++) {
		struct ward_judge_test_result *t = &res->tests[i];
		if (!t->id) { /* never started: stopped, or cancelled */
			t->id = strdup(job->tests[i].id ? job->tests[i].id : "");
			t->verdict = WARD_V_SKIPPED;
			snprintf(t->message, sizeof(t->message), "%s",
			         job->cancel && *job->cancel
			                 ? "not run: the job was cancelled"
			                 : "not run: an earlier test failed (stop_on_first_failure)");
		}
		if (t->verdict == WARD_V_AC)
			res->passed++;
		else if (t->verdict != WARD_V_SKIPPED && res->first_failed < 0) {
			res->first_failed = (long)i;
			res->verdict = t->verdict;
		}
	}
	if (job->cancel && *job->cancel && res->verdict == WARD_V_AC && res->passed < res->ntests)
		set_ie(res, "cancelled: the job was stopped before every test ran");
}

int ward_judge(const struct ward_judge_job *job, struct ward_judge_result *res)
{
	memset(res, 0, sizeof(*res));
	res->first_failed = -1;
	if (!job->lang || !job->lang->run || job->nfiles == 0 || !job->files[0].path) {
		set_ie(res, "the job names no language or no file: give a language and at least one file");
		return -1;
	}
	const struct ward_image_root *root = job->image ? job->image : job->lang->root;
	struct build b = {0};
	if (job->lang->compile) {
		if (compile(job, root, res, &b) < 0) {
			build_free(&b);
			return res->verdict == WARD_V_IE ? -1 : 0;
		}
	} else {
		b.files = with_extra(job, job->files, job->nfiles, &b.n);
		if (!b.files) {
			set_ie(res, "out of memory");
			return -1;
		}
	}
	res->tests = calloc(job->ntests ? job->ntests : 1, sizeof(*res->tests));
	if (!res->tests) {
		build_free(&b);
		set_ie(res, "out of memory for %zu tests", job->ntests);
		return -1;
	}
	res->ntests = job->ntests;
	run_tests(job, root, &b, res);
	summarize(job, res);
	build_free(&b);
	return res->verdict == WARD_V_IE && res->error[0] ? -1 : 0;
}

void ward_judge_result_free(struct ward_judge_result *res)
{
	ward_result_free(&res->compile);
	for (size_t i = 0; i < res->ntests; i++) {
		free(res->tests[i].id);
		free(res->tests[i].out.data);
		free(res->tests[i].err.data);
	}
	free(res->tests);
	res->tests = NULL;
	res->ntests = 0;
}
