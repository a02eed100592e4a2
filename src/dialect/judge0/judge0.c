/* judge0.c — Judge0 CE 1.13.1 (research judge.md §3, §5.2, §8.3) as a
 * listener of ward serve (SPEC §16): submissions single and batch, wait,
 * fields, base64_encoded, languages with Judge0's ids, statuses 1-14,
 * /about, /config_info, /workers; translated into judge jobs (SPEC §15).
 *
 * Submissions are held in memory (their bytes counted in --max-body-total)
 * for --judge0-keep seconds, at most --judge0-max-queue of them (then 503
 * "queue is full").  wait=true runs on the request's worker; the others
 * are run by this dialect's runner threads, each on a slot borrowed from
 * admission (so never more sandboxes than --max-concurrent, and native
 * requests go first).  Submissions of one batch that share language,
 * source and compiler options are one job: compiled once, a test each.
 * Statuses are honest: a signal is 7-10 or 12, never a blanket NZEC. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dialect/dialect.h"
#include "dialect/judge0/judge0.h"
#include "dialect/judge0/judge0_int.h"
#include "judge/judge_json.h"
#include "wire/base64.h"

#define MAX_BATCH 20
#define RUNNERS_MAX 64

/* Judge0's ids for the table's languages: the first is listed, all are
 * accepted (1.13.1's and the hosted CE's). */
static const struct {
	const char *id;
	int ids[8];
} jids[] = {
	{"c", {50, 48, 49, 75, 103, 104, 110}},
	{"cpp", {54, 52, 53, 76, 105}},
	{"python", {71, 92, 100, 109, 113}},
	{"javascript", {63, 93, 97, 102}},
	{"java", {62, 91}},
	{"go", {60, 95, 106, 107}},
	{"rust", {73, 108}},
	{"ruby", {72}},
	{"php", {68, 98}},
	{"bash", {46}},
	{"lua", {64}},
	{"perl", {85}},
};

static const char *const status_desc[] = {
	"",
	"In Queue",
	"Processing",
	"Accepted",
	"Wrong Answer",
	"Time Limit Exceeded",
	"Compilation Error",
	"Runtime Error (SIGSEGV)",
	"Runtime Error (SIGXFSZ)",
	"Runtime Error (SIGFPE)",
	"Runtime Error (SIGABRT)",
	"Runtime Error (NZEC)",
	"Runtime Error (Other)",
	"Internal Error",
	"Exec Format Error",
};

struct buf {
	unsigned char *p;
	size_t n;
	bool set;
};

/* One submission. */
struct sub {
	char token[37];
	int language_id;
	const struct ward_language *lang;
	struct buf source, stdin_, expected, stdout_, stderr_, compile_output;
	struct buf zip;            /* additional_files, decoded */
	char *compiler_options, *args;
	char *callback_url;        /* PUT when it ends, or NULL */
	double cpu_time_limit, cpu_extra_time, wall_time_limit;
	long memory_limit;
	unsigned runs;             /* number_of_runs */
	int status;                /* 1..14 */
	char message[200];
	double time, wall_time;    /* -1: null */
	long memory;               /* -1: null */
	int exit_code, exit_signal; /* -1: null */
	double created, finished;  /* CLOCK_REALTIME; finished 0: null */
	double expires;            /* now_mono() */
	size_t held;               /* bytes counted in body_bytes */
	unsigned group;            /* a batch's compile group (0: alone) */
	struct sub *next;          /* the table */
	struct sub *qnext;         /* the run queue */
};

struct j0 {
	struct server *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sub *subs;          /* all held */
	unsigned nsubs;
	struct sub *qhead, *qtail; /* waiting to run */
	unsigned queued, running;
	bool stop;
	pthread_t runners[RUNNERS_MAX];
	unsigned nrunners;
	unsigned next_group;
	struct j0_files files;     /* additional_files, language 89 */
	struct j0_callbacks *cb;   /* callback_url's senders, or NULL: refused */
};

static struct j0 *J(struct req *r)
{
	return r->ln->state;
}

/* ---- encodings ---- */

unsigned char *judge0_b64_lenient(const char *in, size_t len, size_t *n)
{
	unsigned char *out = malloc(len / 4 * 3 + 4);
	if (!out)
		return NULL;
	unsigned acc = 0, bits = 0;
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		char c = in[i];
		int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
			: c == '+' ? 62 : c == '/' ? 63 : -1;
		if (c == '=')
			break;
		if (v < 0)
			continue;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	out[k] = 0;
	*n = k;
	return out;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static bool buf_set(struct buf *b, const void *p, size_t n)
{
	buf_free(b);
	b->p = malloc(n + 1);
	if (!b->p)
		return false;
	if (n)
		memcpy(b->p, p, n);
	b->p[n] = 0;
	b->n = n;
	b->set = true;
	return true;
}

static void sub_free(struct sub *x)
{
	buf_free(&x->source), buf_free(&x->stdin_), buf_free(&x->expected);
	buf_free(&x->stdout_), buf_free(&x->stderr_), buf_free(&x->compile_output);
	buf_free(&x->zip);
	free(x->compiler_options);
	free(x->args);
	free(x->callback_url);
	free(x);
}

static void uuid4(char out[37])
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)rand();
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
		 b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void iso(double t, char *out, size_t n)
{
	time_t sec = (time_t)t;
	struct tm tm;
	gmtime_r(&sec, &tm);
	char b[32];
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, n, "%s.%03dZ", b, (int)((t - (double)sec) * 1000) % 1000);
}

static const struct ward_language *lang_of(struct j0 *j, int id)
{
	struct server *s = j->s;
	if (id == J0_MULTI_FILE_ID)
		return j->files.multi_on ? &j->files.multi : NULL;
	for (size_t i = 0; i < sizeof(jids) / sizeof(jids[0]); i++)
		for (size_t k = 0; k < 8 && jids[i].ids[k]; k++)
			if (jids[i].ids[k] == id)
				return dialect_lang(s, jids[i].id);
	return NULL;
}

/* ---- answers ---- */

static char *error_json(const char *msg)
{
	json_t *o = json_pack("{s:s}", "error", msg);
	char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return j;
}

static void answer_json(struct req *r, unsigned code, json_t *o)
{
	char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!j) {
		set_error(r, 500, "out of memory");
		return;
	}
	set_answer(r, code, j, "application/json");
}

/* {"attr": ["message"]}: Judge0's 422. */
static void unprocessable(struct req *r, const char *attr, const char *msg)
{
	snprintf(r->message, sizeof(r->message), "%s %s", attr, msg);
	answer_json(r, 422, json_pack("{s:[s]}", attr, msg));
}

static const char *const all_fields[] = {
	"source_code", "language_id", "stdin", "expected_output", "stdout", "status_id", "created_at", "finished_at",
	"time", "memory", "stderr", "token", "number_of_runs", "cpu_time_limit", "cpu_extra_time", "wall_time_limit",
	"memory_limit", "stack_limit", "max_processes_and_or_threads", "enable_per_process_and_thread_time_limit",
	"enable_per_process_and_thread_memory_limit", "max_file_size", "compile_output", "exit_code", "exit_signal",
	"message", "wall_time", "compiler_options", "command_line_arguments", "redirect_stderr_to_stdout",
	"callback_url", "additional_files", "enable_network", "status", "language", NULL};
static const char *const default_fields[] = {"token", "time", "memory", "stdout", "stderr", "compile_output",
					      "message", "status", NULL};

static bool known_field(const char *f, size_t n)
{
	for (size_t i = 0; all_fields[i]; i++)
		if (strlen(all_fields[i]) == n && !strncmp(all_fields[i], f, n))
			return true;
	return false;
}

/* ?fields: NULL the default ones, "*" all; false with the 400 set. */
static bool fields_ok(struct req *r, const char *fields)
{
	if (!fields || !fields[0] || !strcmp(fields, "*"))
		return true;
	char bad[300] = "";
	size_t k = 0;
	for (const char *p = fields;;) {
		size_t n = strcspn(p, ",");
		if (!known_field(p, n) && k < sizeof(bad) - 4)
			k += (size_t)snprintf(bad + k, sizeof(bad) - k, "%s%.*s", k ? ", " : "", (int)(n > 100 ? 100 : n), p);
		if (!p[n])
			break;
		p += n + 1;
	}
	if (!k)
		return true;
	snprintf(r->message, sizeof(r->message), "invalid fields: [%s]", bad);
	set_answer(r, 400, error_json(r->message), "application/json");
	return false;
}

static bool want(const char *fields, const char *name)
{
	if (fields && !strcmp(fields, "*"))
		return true;
	if (!fields || !fields[0]) {
		for (size_t i = 0; default_fields[i]; i++)
			if (!strcmp(default_fields[i], name))
				return true;
		return false;
	}
	size_t n = strlen(name);
	for (const char *p = fields;;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return true;
		if (!p[k])
			return false;
		p += k + 1;
	}
}

/* A text attribute: null when unset or empty; base64, or raw (false when
 * it is not UTF-8: Judge0's conversion error). */
static bool text(json_t *o, const char *fields, const char *name, const struct buf *b, bool b64)
{
	if (!want(fields, name))
		return true;
	if (!b->set || !b->n) {
		json_object_set_new(o, name, json_null());
		return true;
	}
	if (b64) {
		char *e = base64_encode(b->p, b->n);
		json_object_set_new(o, name, e ? json_string(e) : json_null());
		free(e);
		return true;
	}
	if (!dialect_utf8(b->p, b->n))
		return false;
	json_object_set_new(o, name, json_stringn((const char *)b->p, b->n));
	return true;
}

static json_t *decimal(double v)
{
	if (v < 0)
		return json_null();
	char b[32];
	snprintf(b, sizeof(b), "%.3f", v);
	size_t n = strlen(b);
	while (n > 0 && b[n - 1] == '0' && b[n - 2] != '.')
		b[--n] = 0;
	return json_string(b);
}

#define SET(name, v)                                 \
	do {                                         \
		if (want(fields, name))              \
			json_object_set_new(o, name, v); \
		else                                 \
			json_decref(v);              \
	} while (0)

static json_t *intn(long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* A submission's attributes (the lock held); NULL when a text is not
 * UTF-8 and base64 was not asked for. */
static json_t *sub_json(const struct sub *x, const char *fields, bool b64)
{
	json_t *o = json_object();
	char t[40];
	struct buf msg = {(unsigned char *)x->message, strlen(x->message), x->message[0] != 0};
	if (!text(o, fields, "source_code", &x->source, b64) || !text(o, fields, "stdin", &x->stdin_, b64) ||
	    !text(o, fields, "expected_output", &x->expected, b64) || !text(o, fields, "stdout", &x->stdout_, b64) ||
	    !text(o, fields, "stderr", &x->stderr_, b64) ||
	    !text(o, fields, "compile_output", &x->compile_output, b64) || !text(o, fields, "message", &msg, b64)) {
		json_decref(o);
		return NULL;
	}
	SET("token", json_string(x->token));
	SET("language_id", json_integer(x->language_id));
	SET("status_id", json_integer(x->status));
	iso(x->created, t, sizeof(t));
	SET("created_at", json_string(t));
	if (x->finished > 0)
		iso(x->finished, t, sizeof(t));
	SET("finished_at", x->finished > 0 ? json_string(t) : json_null());
	SET("time", decimal(x->time));
	SET("wall_time", decimal(x->wall_time));
	SET("memory", intn(x->memory));
	SET("number_of_runs", json_integer(x->runs));
	SET("cpu_time_limit", decimal(x->cpu_time_limit));
	SET("cpu_extra_time", decimal(x->cpu_extra_time));
	SET("wall_time_limit", decimal(x->wall_time_limit));
	SET("memory_limit", json_integer(x->memory_limit));
	SET("stack_limit", json_integer(64000));
	SET("max_processes_and_or_threads", json_integer(60));
	SET("enable_per_process_and_thread_time_limit", json_false());
	SET("enable_per_process_and_thread_memory_limit", json_false());
	SET("max_file_size", json_integer(1024));
	SET("exit_code", intn(x->exit_code));
	SET("exit_signal", intn(x->exit_signal));
	SET("compiler_options", x->compiler_options ? json_string(x->compiler_options) : json_null());
	SET("command_line_arguments", x->args ? json_string(x->args) : json_null());
	SET("redirect_stderr_to_stdout", json_false());
	SET("callback_url", x->callback_url ? json_string(x->callback_url) : json_null());
	char *zip = x->zip.set ? base64_encode(x->zip.p, x->zip.n) : NULL;
	SET("additional_files", zip ? json_string(zip) : json_null()); /* always base64, as Judge0 */
	free(zip);
	SET("enable_network", json_false());
	SET("status", json_pack("{s:i,s:s}", "id", x->status, "description", status_desc[x->status]));
	SET("language", json_pack("{s:i,s:s}", "id", x->language_id, "name", x->lang ? x->lang->display : ""));
	return o;
}

/* ---- the store ---- */

static struct sub *find(struct j0 *j, const char *token)
{
	for (struct sub *x = j->subs; x; x = x->next)
		if (!strcmp(x->token, token))
			return x;
	return NULL;
}

static void j0_sweep(struct server *s, void *state)
{
	struct j0 *j = state;
	double now = now_mono();
	pthread_mutex_lock(&j->lock);
	for (struct sub **pp = &j->subs; *pp;) {
		struct sub *x = *pp;
		/* a finished one past its time; a queued or running one stays */
		if (x->status > 2 && x->expires <= now) {
			*pp = x->next;
			j->nsubs--;
			__atomic_sub_fetch(&s->body_bytes, x->held, __ATOMIC_RELAXED);
			sub_free(x);
		} else
			pp = &x->next;
	}
	pthread_mutex_unlock(&j->lock);
}

/* ---- decoding a submission ---- */

static bool num(struct req *r, json_t *o, const char *key, double lo, bool lo_strict, double hi, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return true;
	double x;
	if (json_is_number(v))
		x = json_number_value(v);
	else if (json_is_string(v) && json_string_length(v) && json_string_length(v) < 30) {
		char *end;
		x = strtod(json_string_value(v), &end);
		if (*end || isnan(x)) { /* "nan" parses, and passes every comparison */
			unprocessable(r, key, "is not a number");
			return false;
		}
	} else {
		unprocessable(r, key, "is not a number");
		return false;
	}
	char m[80];
	if (lo_strict ? x <= lo : x < lo) {
		snprintf(m, sizeof(m), "must be greater than %s%g", lo_strict ? "" : "or equal to ", lo);
		unprocessable(r, key, m);
		return false;
	}
	if (x > hi) {
		snprintf(m, sizeof(m), "must be less than or equal to %.1f", hi);
		unprocessable(r, key, m);
		return false;
	}
	*out = x;
	return true;
}

static bool get_text(struct req *r, json_t *o, const char *key, bool b64, struct buf *b)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		unprocessable(r, key, "is not a string");
		return false;
	}
	if (b64) {
		size_t n;
		unsigned char *p = judge0_b64_lenient(json_string_value(v), json_string_length(v), &n);
		if (!p)
			return false;
		b->p = p, b->n = n, b->set = true;
		return true;
	}
	return buf_set(b, json_string_value(v), json_string_length(v));
}

static bool callback_ok(struct req *r, const char *url, struct sub *x)
{
	char why[300];
	if (!J(r)->cb) {
		unprocessable(r, "callback_url", "setting callback is not allowed");
		return false;
	}
	if (j0_callback_refused(r->srv, url, why, sizeof(why))) {
		unprocessable(r, "callback_url", why);
		return false;
	}
	return (x->callback_url = strdup(url)) != NULL;
}

/* additional_files: always base64 (whatever base64_encoded says), a zip of
 * at most max_extract_size; required by language 89.  false with the 422. */
static bool get_zip(struct req *r, json_t *o, bool multi, struct sub *x)
{
	json_t *af = json_object_get(o, "additional_files");
	bool given = json_is_string(af) && json_string_length(af);
	if (af && !json_is_null(af) && !json_is_string(af)) {
		unprocessable(r, "additional_files", "is not a string");
		return false;
	}
	if (!given) {
		if (multi)
			unprocessable(r, "additional_files", "can't be blank");
		return !multi;
	}
	if (!J(r)->files.prog) {
		unprocessable(r, "additional_files", "setting additional files is not allowed");
		return false;
	}
	char m[120];
	snprintf(m, sizeof(m), "is too large (a zip of at most %u KB)", J0_MAX_EXTRACT_KB);
	if (json_string_length(af) > (size_t)J0_MAX_EXTRACT_KB * 1024 / 3 * 4 + 8192) {
		unprocessable(r, "additional_files", m);
		return false;
	}
	size_t n;
	unsigned char *p = judge0_b64_lenient(json_string_value(af), json_string_length(af), &n);
	if (!p)
		return false;
	x->zip = (struct buf){p, n, true};
	if (n > (size_t)J0_MAX_EXTRACT_KB * 1024) {
		unprocessable(r, "additional_files", m);
		return false;
	}
	return true;
}

/* One submission object into a new record; NULL with the 422 set. */
static struct sub *decode_sub(struct req *r, json_t *o, bool b64)
{
	if (!json_is_object(o)) {
		unprocessable(r, "submission", "must be an object");
		return NULL;
	}
	struct sub *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->cpu_time_limit = 5, x->cpu_extra_time = 1, x->wall_time_limit = 10, x->memory_limit = 128000;
	x->time = x->wall_time = -1, x->memory = x->exit_code = x->exit_signal = -1;
	x->status = 1;
	json_t *lid = json_object_get(o, "language_id");
	double id = 0, mem = 128000;
	char m[120];
	if (!lid || json_is_null(lid)) {
		unprocessable(r, "language_id", "can't be blank");
		goto bad;
	}
	if (!num(r, o, "language_id", 0, false, 1e9, &id))
		goto bad;
	x->language_id = (int)id;
	if (!(x->lang = lang_of(J(r), x->language_id))) {
		snprintf(m, sizeof(m), "language with id %d doesn't exist", x->language_id);
		unprocessable(r, "language_id", m);
		goto bad;
	}
	json_t *sc = json_object_get(o, "source_code");
	bool multi = x->language_id == J0_MULTI_FILE_ID, blank = !json_is_string(sc) || !json_string_length(sc);
	if (blank != multi) {
		unprocessable(r, "source_code", multi ? "must be blank" : "can't be blank");
		goto bad;
	}
	if (!get_zip(r, o, multi, x))
		goto bad;
	if (!get_text(r, o, "source_code", b64, &x->source) || !get_text(r, o, "stdin", b64, &x->stdin_) ||
	    !get_text(r, o, "expected_output", b64, &x->expected))
		goto bad;
	if (!num(r, o, "cpu_time_limit", 0, false, 15, &x->cpu_time_limit) ||
	    !num(r, o, "cpu_extra_time", 0, false, 5, &x->cpu_extra_time) ||
	    !num(r, o, "wall_time_limit", 1, false, 20, &x->wall_time_limit) ||
	    !num(r, o, "memory_limit", 2048, false, 512000, &mem))
		goto bad;
	x->memory_limit = (long)mem;
	double runs = 1;
	if (!num(r, o, "number_of_runs", 0, true, 1e9, &runs))
		goto bad;
	if (runs > r->srv->o.judge0_max_runs) {
		snprintf(m, sizeof(m), "must be less than or equal to %u", r->srv->o.judge0_max_runs);
		unprocessable(r, "number_of_runs", m);
		goto bad;
	}
	x->runs = runs < 1 ? 1 : (unsigned)runs;
	json_t *co = json_object_get(o, "compiler_options"), *ca = json_object_get(o, "command_line_arguments");
	if ((co && !json_is_null(co) && (!json_is_string(co) || json_string_length(co) > 512)) ||
	    (ca && !json_is_null(ca) && (!json_is_string(ca) || json_string_length(ca) > 512))) {
		unprocessable(r, co && !json_is_null(co) && (!json_is_string(co) || json_string_length(co) > 512)
					 ? "compiler_options" : "command_line_arguments",
			      "is too long (maximum is 512 characters)");
		goto bad;
	}
	if (json_is_string(co) && json_string_length(co)) {
		if (!x->lang->compile) {
			unprocessable(r, "compiler_options", "setting compiler options is only allowed for compiled languages");
			goto bad;
		}
		x->compiler_options = strdup(json_string_value(co));
	}
	if (json_is_string(ca) && json_string_length(ca))
		x->args = strdup(json_string_value(ca));
	json_t *cb = json_object_get(o, "callback_url");
	if (json_is_true(json_object_get(o, "enable_network"))) {
		unprocessable(r, "enable_network", "enabling network is not allowed");
		goto bad;
	}
	if (cb && !json_is_null(cb) && !json_is_string(cb)) {
		unprocessable(r, "callback_url", "is not a string");
		goto bad;
	}
	if (json_is_string(cb) && json_string_length(cb) && !callback_ok(r, json_string_value(cb), x))
		goto bad;
	uuid4(x->token);
	x->created = now_real();
	x->held = sizeof(*x) + x->source.n + x->stdin_.n + x->expected.n + x->zip.n +
		  (x->callback_url ? strlen(x->callback_url) : 0) + 256;
	return x;
bad:
	sub_free(x);
	return NULL;
}

/* ---- running ---- */

/* Judge0's fields of a test's verdict (research §8.3). */
static void verdict(struct sub *x, const struct ward_judge_test_result *t)
{
	x->time = (double)t->cpu_ms / 1000;
	x->wall_time = (double)t->wall_ms / 1000;
	x->memory = (long)t->memory_kb;
	x->exit_code = 0, x->exit_signal = -1;
	buf_set(&x->stdout_, t->out.data ? t->out.data : "", t->out.len);
	buf_set(&x->stderr_, t->err.data ? t->err.data : "", t->err.len);
	switch (t->verdict) {
	case WARD_V_AC: x->status = 3; break;
	case WARD_V_WA: x->status = 4; break;
	case WARD_V_TLE:
		x->status = 5;
		snprintf(x->message, sizeof(x->message), strstr(t->message, "wall") ? "Time limit exceeded (wall clock)"
										      : "Time limit exceeded");
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
			x->status = t->signal == 11 ? 7 : t->signal == 25 ? 8 : t->signal == 8 ? 9 : t->signal == 6 ? 10 : 12;
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
static int unpack(struct server *s, struct j0 *j, const struct sub *x, struct unpacked *u, char *why, size_t n)
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
static void job_files(struct j0 *j, const struct sub *x, struct ward_judge_job *job, struct ward_file *src,
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
static void runs_result(struct sub *x, const struct ward_judge_test_result *t)
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
static void group_results(struct server *s, struct sub **v, size_t n, const struct ward_judge_result *res,
			  const char *why, const char *ie)
{
	size_t first = 0; /* the submission's first test */
	for (size_t i = 0; i < n; i++) {
		struct sub *x = v[i];
		x->finished = now_real();
		x->expires = now_mono() + s->o.judge0_keep;
		if (ie) {
			x->status = 13;
			snprintf(x->message, sizeof(x->message), "%.190s", ie);
		} else if (why) {
			x->status = 6;
			buf_set(&x->compile_output, why, strlen(why));
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
				buf_set(&x->compile_output, both, len);
				free(both);
			}
			if (res->compile.timed_out)
				buf_set(&x->compile_output, "Compilation time limit exceeded.", 32);
		} else if (res->verdict == WARD_V_IE || first + x->runs > res->ntests) {
			x->status = 13;
			snprintf(x->message, sizeof(x->message), "%.190s", res->error[0] ? res->error : "not run");
		} else {
			runs_result(x, &res->tests[first]);
			if (res->compiled && (res->compile.out.len || res->compile.err.len))
				buf_set(&x->compile_output, res->compile.err.data ? res->compile.err.data : "",
					res->compile.err.len);
		}
		first += x->runs;
	}
}

/* Each submission's runs as tests of the job (number_of_runs of them, in
 * order), from *k on.  false with err. */
static bool add_tests(struct server *s, const struct ward_judge_job *job, struct sub *x, bool multi,
		      struct ward_judge_test *tests, struct ward_judge_limits *lims, char ***args, size_t *k, char *err,
		      size_t errlen)
{
	/* language 89 runs its script as it is: Judge0 passes it no arguments */
	if (x->args && !multi && judge_split_words(x->args, args, err, errlen) < 0)
		return false;
	struct ward_judge_limits l = job->run_limits;
	l.l.cpu_s = fmin(x->cpu_time_limit > 0 ? x->cpu_time_limit : 0.001, s->o.max.timeout_s);
	l.extra_cpu_s = x->cpu_extra_time;
	l.l.timeout_s = fmin(x->wall_time_limit, s->o.max.timeout_s);
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
static void run_group(struct server *s, struct j0 *j, struct sub **v, size_t n)
{
	struct ward_judge_job job = {0};
	size_t ntests = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		ntests += v[i]->runs;
	struct ward_judge_test *tests = calloc(ntests, sizeof(*tests));
	struct ward_judge_limits *lims = calloc(ntests, sizeof(*lims));
	char **flags = NULL, ***args = calloc(n, sizeof(*args)), err[200] = "out of memory", why[512] = "";
	struct ward_file f = {.path = v[0]->lang->source_file, .data = v[0]->source.p, .len = v[0]->source.n, .mode = 0644};
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
	group_results(s, v, n, &res, ok && !unpacked ? why : NULL, ok ? NULL : err);
	/* callbacks: the default fields, base64, as Judge0 sends them */
	for (size_t i = 0; i < n; i++)
		if (v[i]->callback_url) {
			json_t *o = sub_json(v[i], NULL, true);
			j0_callback_queue(j->cb, v[i]->callback_url, o ? json_dumps(o, JSON_COMPACT) : NULL);
			json_decref(o);
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

static bool same_compile(const struct sub *a, const struct sub *b)
{
	return a->runs == 1 && b->runs == 1 && a->lang == b->lang && a->source.n == b->source.n &&
	       !memcmp(a->source.p, b->source.p, a->source.n) &&
	       a->zip.n == b->zip.n && (!a->zip.n || !memcmp(a->zip.p, b->zip.p, a->zip.n)) &&
	       !strcmp(a->compiler_options ? a->compiler_options : "", b->compiler_options ? b->compiler_options : "");
}

static void *runner_main(void *arg)
{
	struct j0 *j = arg;
	struct server *s = j->s;
	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (!j->stop && !j->qhead)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stop)
			break;
		pthread_mutex_unlock(&j->lock);
		/* a slot of --max-concurrent that nothing native needs now */
		while (!j->stop && slots_borrow(s, 1) == 0)
			usleep(10000);
		pthread_mutex_lock(&j->lock);
		if (j->stop || !j->qhead) {
			pthread_mutex_unlock(&j->lock);
			if (!j->stop)
				slots_return(s, 1);
			pthread_mutex_lock(&j->lock);
			if (j->stop)
				break;
			continue;
		}
		/* the head and every queued one of its batch group */
		struct sub *v[MAX_BATCH];
		size_t n = 0;
		struct sub *h = j->qhead;
		for (struct sub **pp = &j->qhead; *pp && n < MAX_BATCH;) {
			struct sub *x = *pp;
			if (x == h || (h->group && x->group == h->group && same_compile(h, x))) {
				*pp = x->qnext;
				x->status = 2;
				v[n++] = x;
				j->queued--;
			} else
				pp = &x->qnext;
		}
		j->qtail = NULL;
		for (struct sub *x = j->qhead; x; x = x->qnext)
			j->qtail = x;
		j->running++;
		pthread_mutex_unlock(&j->lock);
		run_group(s, j, v, n);
		slots_return(s, 1);
		pthread_mutex_lock(&j->lock);
		j->running--;
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* Hold n new submissions (all or none): the count cap and the memory
 * budget; false with the 503 set. */
static bool hold(struct req *r, struct sub **v, size_t n, bool queue)
{
	struct server *s = r->srv;
	struct j0 *j = J(r);
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += v[i]->held;
	pthread_mutex_lock(&j->lock);
	if (j->nsubs + n > s->o.judge0_max_queue || !body_reserve(s, bytes)) {
		pthread_mutex_unlock(&j->lock);
		r->retry_after = 1;
		snprintf(r->message, sizeof(r->message), "queue is full");
		set_answer(r, 503, error_json("queue is full"), "application/json");
		return false;
	}
	unsigned group = n > 1 ? ++j->next_group : 0;
	for (size_t i = 0; i < n; i++) {
		struct sub *x = v[i];
		x->group = group;
		x->expires = now_mono() + s->o.judge0_keep;
		x->next = j->subs;
		j->subs = x;
		j->nsubs++;
		if (queue) {
			if (j->qtail)
				j->qtail->qnext = x;
			else
				j->qhead = x;
			j->qtail = x;
			j->queued++;
		}
	}
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return true;
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
		set_answer(r, 400, error_json(r->message), "application/json");
	}
	return o;
}

static const char *const UTF8_ONE = "some attributes for this submission cannot be converted to UTF-8, use "
				    "base64_encoded=true query parameter";
static const char *const UTF8_MANY = "some attributes for one or more submissions cannot be converted to UTF-8, use "
				     "base64_encoded=true query parameter";

/* POST /submissions: on a worker.  wait=true runs it here. */
static void run_create(struct req *r)
{
	struct server *s = r->srv;
	struct j0 *j = J(r);
	const char *w = arg(r, "wait");
	bool wait = w && !strcmp(w, "true"), b64 = b64_of(r);
	const char *fields = arg(r, "fields");
	if (wait && !fields_ok(r, fields))
		return;
	json_t *o = load(r);
	if (!o)
		return;
	struct sub *x = decode_sub(r, o, b64);
	json_decref(o);
	body_release(s, r);
	if (!x || !hold(r, &x, 1, !wait)) {
		if (x)
			sub_free(x);
		return;
	}
	if (!wait) {
		answer_json(r, 201, json_pack("{s:s}", "token", x->token));
		return;
	}
	pthread_mutex_lock(&j->lock);
	x->status = 2;
	pthread_mutex_unlock(&j->lock);
	run_group(s, j, &x, 1);
	metrics_count_run(s, WARD_ST_OK, WARD_ISO_SYSTEM, now_mono() - r->t_admit);
	pthread_mutex_lock(&j->lock);
	json_t *a = sub_json(x, fields, b64);
	if (!a)
		a = json_pack("{s:s,s:s}", "token", x->token, "error", UTF8_ONE);
	pthread_mutex_unlock(&j->lock);
	answer_json(r, 201, a);
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
	if (!json_is_array(a) || n == 0 || n > MAX_BATCH) {
		json_decref(o);
		snprintf(r->message, sizeof(r->message), "%s",
			 n > MAX_BATCH ? "number of submissions in a batch should be less than or equal to 20"
				       : "there should be at least one submission in a batch");
		set_answer(r, 400, error_json(r->message), "application/json");
		return;
	}
	struct sub *v[MAX_BATCH];
	json_t *out = json_array(), *errs[MAX_BATCH] = {0};
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct sub *x = decode_sub(r, json_array_get(a, i), b64);
		if (x)
			v[k++] = x;
		else {
			/* the 422's body, in its place in the answer */
			errs[i] = r->resp ? json_loads(r->resp, 0, NULL) : NULL;
		}
	}
	json_decref(o);
	body_release(s, r);
	if (k && !hold(r, v, k, true)) {
		for (size_t i = 0; i < k; i++)
			sub_free(v[i]);
		for (size_t i = 0; i < n; i++)
			json_decref(errs[i]);
		json_decref(out);
		return;
	}
	for (size_t i = 0, m = 0; i < n; i++)
		json_array_append_new(out, errs[i] ? errs[i] : json_pack("{s:s}", "token", v[m++]->token));
	answer_json(r, k ? 201 : 422, out);
}

static void answer_get(struct server *s, struct req *r)
{
	struct j0 *j = J(r);
	const char *fields = arg(r, "fields");
	if (!fields_ok(r, fields))
		return;
	pthread_mutex_lock(&j->lock);
	struct sub *x = find(j, r->args.sid);
	json_t *o = x ? sub_json(x, fields, b64_of(r)) : NULL;
	pthread_mutex_unlock(&j->lock);
	if (!x) {
		snprintf(r->message, sizeof(r->message), "no such submission: unknown or expired (kept --judge0-keep seconds)");
		set_answer(r, 404, error_json("Not Found"), "application/json");
		return;
	}
	if (!o) {
		snprintf(r->message, sizeof(r->message), "%s", UTF8_ONE);
		set_answer(r, 400, error_json(UTF8_ONE), "application/json");
		return;
	}
	answer_json(r, 200, o);
}

static void answer_get_batch(struct server *s, struct req *r)
{
	struct j0 *j = J(r);
	const char *fields = arg(r, "fields"), *tokens = arg(r, "tokens");
	if (!tokens)
		tokens = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "tokens");
	if (!fields_ok(r, fields))
		return;
	json_t *a = json_array();
	size_t n = 0;
	bool bad = false;
	pthread_mutex_lock(&j->lock);
	for (const char *p = tokens ? tokens : ""; *p && n <= MAX_BATCH;) {
		size_t k = strcspn(p, ",");
		char t[40];
		snprintf(t, sizeof(t), "%.*s", (int)(k < 39 ? k : 39), p);
		struct sub *x = find(j, t);
		json_t *o = x ? sub_json(x, fields, b64_of(r)) : json_null();
		bad = bad || !o;
		json_array_append_new(a, o ? o : json_null());
		n++;
		p += k + (p[k] == ',');
	}
	pthread_mutex_unlock(&j->lock);
	if (n == 0 || n > MAX_BATCH || bad) {
		json_decref(a);
		snprintf(r->message, sizeof(r->message), "%s",
			 bad ? UTF8_MANY : n ? "number of submissions in a batch should be less than or equal to 20"
					    : "there should be at least one submission in a batch");
		set_answer(r, 400, error_json(r->message), "application/json");
		return;
	}
	answer_json(r, 200, json_pack("{s:o}", "submissions", a));
}

/* ---- the static endpoints ---- */

static void j0_languages(struct server *s, struct req *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof(jids) / sizeof(jids[0]); i++) {
		const struct ward_language *l = dialect_lang(s, jids[i].id);
		if (l)
			json_array_append_new(a, json_pack("{s:i,s:s}", "id", jids[i].ids[0], "name", l->display));
	}
	if (J(r)->files.multi_on)
		json_array_append_new(a, json_pack("{s:i,s:s}", "id", J0_MULTI_FILE_ID, "name", J(r)->files.multi.display));
	answer_json(r, 200, a);
}

static void j0_language(struct server *s, struct req *r)
{
	const struct ward_language *l = lang_of(J(r), r->args.pid);
	if (!l) {
		set_answer(r, 404, error_json("Not Found"), "application/json");
		return;
	}
	/* language 89 has no source file of its own (Judge0: null) */
	bool multi = r->args.pid == J0_MULTI_FILE_ID;
	answer_json(r, 200, json_pack("{s:i,s:s,s:b,s:o,s:n,s:n}", "id", r->args.pid, "name", l->display, "is_archived",
				      0, "source_file", multi ? json_null() : json_string(l->source_file), "compile_cmd",
				      "run_cmd"));
}

static void answer_statuses(struct server *s, struct req *r)
{
	json_t *a = json_array();
	for (int i = 1; i <= 14; i++)
		json_array_append_new(a, json_pack("{s:i,s:s}", "id", i, "description", status_desc[i]));
	answer_json(r, 200, a);
}

static void answer_about(struct server *s, struct req *r)
{
	answer_json(r, 200, json_pack("{s:s,s:s,s:s,s:s}", "version", "1.13.1", "homepage", "https://judge0.com",
				      "source_code", "https://github.com/judge0/judge0", "maintainer",
				      "ward (a Judge0 CE 1.13.1 dialect, SPEC §16)"));
}

static void answer_config(struct server *s, struct req *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "maintenance_mode", json_false());
	json_object_set_new(o, "enable_wait_result", json_true());
	json_object_set_new(o, "enable_compiler_options", json_true());
	json_object_set_new(o, "allowed_languages_for_compile_options", json_array());
	json_object_set_new(o, "enable_command_line_arguments", json_true());
	json_object_set_new(o, "enable_submission_delete", json_false());
	json_object_set_new(o, "enable_callbacks", json_boolean(J(r)->cb != NULL));
	json_object_set_new(o, "callbacks_max_tries", json_integer(3));
	json_object_set_new(o, "callbacks_timeout", json_real(5.0));
	json_object_set_new(o, "enable_additional_files", json_boolean(J(r)->files.prog != NULL));
	json_object_set_new(o, "max_queue_size", json_integer(s->o.judge0_max_queue));
	json_object_set_new(o, "cpu_time_limit", json_real(5.0));
	json_object_set_new(o, "max_cpu_time_limit", json_real(15.0));
	json_object_set_new(o, "cpu_extra_time", json_real(1.0));
	json_object_set_new(o, "max_cpu_extra_time", json_real(5.0));
	json_object_set_new(o, "wall_time_limit", json_real(10.0));
	json_object_set_new(o, "max_wall_time_limit", json_real(20.0));
	json_object_set_new(o, "memory_limit", json_integer(128000));
	json_object_set_new(o, "max_memory_limit", json_integer(512000));
	json_object_set_new(o, "stack_limit", json_integer(64000));
	json_object_set_new(o, "max_stack_limit", json_integer(128000));
	json_object_set_new(o, "max_processes_and_or_threads", json_integer(60));
	json_object_set_new(o, "max_max_processes_and_or_threads", json_integer(120));
	json_object_set_new(o, "enable_per_process_and_thread_time_limit", json_false());
	json_object_set_new(o, "allow_enable_per_process_and_thread_time_limit", json_false());
	json_object_set_new(o, "enable_per_process_and_thread_memory_limit", json_false());
	json_object_set_new(o, "allow_enable_per_process_and_thread_memory_limit", json_false());
	json_object_set_new(o, "max_file_size", json_integer(1024));
	json_object_set_new(o, "max_max_file_size", json_integer(4096));
	json_object_set_new(o, "number_of_runs", json_integer(1));
	json_object_set_new(o, "max_number_of_runs", json_integer(s->o.judge0_max_runs));
	json_object_set_new(o, "redirect_stderr_to_stdout", json_false());
	json_object_set_new(o, "max_extract_size", json_integer(J0_MAX_EXTRACT_KB));
	json_object_set_new(o, "enable_batched_submissions", json_true());
	json_object_set_new(o, "max_submission_batch_size", json_integer(MAX_BATCH));
	json_object_set_new(o, "submission_cache_duration", json_real(1.0));
	json_object_set_new(o, "use_docs_as_homepage", json_false());
	json_object_set_new(o, "allow_enable_network", json_false());
	json_object_set_new(o, "enable_network", json_false());
	answer_json(r, 200, o);
}

static void answer_workers(struct server *s, struct req *r)
{
	struct j0 *j = J(r);
	pthread_mutex_lock(&j->lock);
	unsigned q = j->queued, run = j->running, n = j->nrunners;
	pthread_mutex_unlock(&j->lock);
	answer_json(r, 200, json_pack("[{s:s,s:i,s:i,s:i,s:i,s:i,s:i}]", "queue", "judge0", "size", q, "available", n,
				      "idle", n - run, "working", run, "paused", 0, "failed", 0));
}

static void answer_root(struct server *s, struct req *r)
{
	set_answer(r, 200, strdup(""), "text/plain");
}

static void not_found(struct server *s, struct req *r)
{
	snprintf(r->message, sizeof(r->message), "no such endpoint: %s", r->path);
	set_answer(r, 404, error_json("Not Found"), "application/json");
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
	j0_files_start(s, &j->files);
	if (s->o.njudge0_callback_allow)
		j->cb = j0_callbacks_start(s, J0_CALLBACKS_PENDING);
	unsigned n = s->o.max_concurrent < RUNNERS_MAX ? s->o.max_concurrent : RUNNERS_MAX;
	for (; j->nrunners < n; j->nrunners++)
		if (pthread_create(&j->runners[j->nrunners], NULL, runner_main, j)) {
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
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	for (unsigned i = 0; i < j->nrunners; i++)
		pthread_join(j->runners[i], NULL);
	j0_callbacks_stop(j->cb);
	for (struct sub *x = j->subs, *nx; x; x = nx) {
		nx = x->next;
		__atomic_sub_fetch(&s->body_bytes, x->held, __ATOMIC_RELAXED);
		sub_free(x);
	}
	j0_files_stop(&j->files);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

#define R(p, m, al, ...) {.path = p, .method = m, .allow = al, __VA_ARGS__}
static const struct route routes[] = {
	R("/", "GET", "GET, HEAD", .open = true, .answer = answer_root),
	R("/submissions/batch", "POST", "GET, HEAD, POST", .run = run_batch),
	R("/submissions/batch", "GET", "GET, HEAD, POST", .answer = answer_get_batch),
	R("/submissions", "POST", "POST", .run = run_create),
	R("/submissions/{id}", "GET", "GET, HEAD", .answer = answer_get),
	R("/languages", "GET", "GET, HEAD", .answer = j0_languages),
	R("/languages/all", "GET", "GET, HEAD", .answer = j0_languages),
	R("/languages/{pid}", "GET", "GET, HEAD", .answer = j0_language),
	R("/statuses", "GET", "GET, HEAD", .answer = answer_statuses),
	R("/about", "GET", "GET, HEAD", .answer = answer_about),
	R("/config_info", "GET", "GET, HEAD", .answer = answer_config),
	R("/workers", "GET", "GET, HEAD", .answer = answer_workers),
};

const struct api judge0_api = {
	.name = "judge0",
	.routes = routes,
	.nroutes = sizeof(routes) / sizeof(routes[0]),
	.error_json = error_json,
	.token = token,
	.not_found = not_found,
	.start = start,
	.tick = j0_sweep,
	.stop = stop,
};
