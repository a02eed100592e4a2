/* judge0_attrs.c — a submission's attributes as Judge0 1.13.1 answers
 * them (research judge.md §3): ?fields (the default eight, "*", or a list,
 * unknown names a 400), texts null when empty, base64 (Ruby's, a newline
 * every 60) or raw UTF-8 (else Judge0's conversion error), decimals as
 * strings; and a bound on what such an answer takes, so that an answer of
 * many submissions is refused before it is made, not after. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dialect/judge0/judge0_int.h"
#include "wire/base64.h"

static const char *const all_fields[] = {
	"source_code", "language_id", "stdin", "expected_output", "stdout", "status_id", "created_at", "finished_at",
	"time", "memory", "stderr", "token", "number_of_runs", "cpu_time_limit", "cpu_extra_time", "wall_time_limit",
	"memory_limit", "stack_limit", "max_processes_and_or_threads", "enable_per_process_and_thread_time_limit",
	"enable_per_process_and_thread_memory_limit", "max_file_size", "compile_output", "exit_code", "exit_signal",
	"message", "wall_time", "compiler_options", "command_line_arguments", "redirect_stderr_to_stdout",
	"callback_url", "additional_files", "enable_network", "status", "language", NULL};
static const char *const default_fields[] = {"token", "time", "memory", "stdout", "stderr", "compile_output",
					      "message", "status", NULL};

char *j0_error_json(const char *msg)
{
	return dialect_msg_json("error", msg);
}

static bool known_field(const char *f, size_t n)
{
	for (size_t i = 0; all_fields[i]; i++)
		if (strlen(all_fields[i]) == n && !strncmp(all_fields[i], f, n))
			return true;
	return false;
}

bool j0_fields_ok(struct req *r, const char *fields)
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
	set_answer(r, 400, j0_error_json(r->message), "application/json");
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
static bool text(json_t *o, const char *fields, const char *name, const struct j0_buf *b, bool b64)
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

static json_t *intn(long v)
{
	return v < 0 ? json_null() : json_integer(v);
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

static void set(json_t *o, const char *fields, const char *name, json_t *v)
{
	if (want(fields, name))
		json_object_set_new(o, name, v);
	else
		json_decref(v);
}

/* The attributes that are not texts: numbers, times, limits, names. */
static void scalars(json_t *o, const struct j0_sub *x, const char *fields)
{
	char t[40];
	set(o, fields, "token", json_string(x->token));
	set(o, fields, "language_id", json_integer(x->language_id));
	set(o, fields, "status_id", json_integer(x->status));
	iso(x->created, t, sizeof(t));
	set(o, fields, "created_at", json_string(t));
	if (x->finished > 0)
		iso(x->finished, t, sizeof(t));
	set(o, fields, "finished_at", x->finished > 0 ? json_string(t) : json_null());
	set(o, fields, "time", decimal(x->time));
	set(o, fields, "wall_time", decimal(x->wall_time));
	set(o, fields, "memory", intn(x->memory));
	set(o, fields, "number_of_runs", json_integer(x->runs));
	set(o, fields, "cpu_time_limit", decimal(x->cpu_time_limit));
	set(o, fields, "cpu_extra_time", decimal(x->cpu_extra_time));
	set(o, fields, "wall_time_limit", decimal(x->wall_time_limit));
	set(o, fields, "memory_limit", json_integer(x->memory_limit));
	set(o, fields, "stack_limit", json_integer(64000));
	set(o, fields, "max_processes_and_or_threads", json_integer(60));
	set(o, fields, "enable_per_process_and_thread_time_limit", json_false());
	set(o, fields, "enable_per_process_and_thread_memory_limit", json_false());
	set(o, fields, "max_file_size", json_integer(1024));
	set(o, fields, "exit_code", intn(x->exit_code));
	set(o, fields, "exit_signal", intn(x->exit_signal));
	set(o, fields, "compiler_options", x->compiler_options ? json_string(x->compiler_options) : json_null());
	set(o, fields, "command_line_arguments", x->args ? json_string(x->args) : json_null());
	set(o, fields, "redirect_stderr_to_stdout", json_false());
	set(o, fields, "callback_url", x->callback_url ? json_string(x->callback_url) : json_null());
	set(o, fields, "enable_network", json_false());
	set(o, fields, "status", json_pack("{s:i,s:s}", "id", x->status, "description", j0_status_desc[x->status]));
	set(o, fields, "language",
	    json_pack("{s:i,s:s}", "id", x->language_id, "name", x->lang ? x->lang->display : ""));
}

json_t *j0_sub_json(const struct j0_sub *x, const char *fields, bool b64)
{
	json_t *o = json_object();
	struct j0_buf msg = {(unsigned char *)x->message, strlen(x->message), x->message[0] != 0};
	if (!text(o, fields, "source_code", &x->source, b64) || !text(o, fields, "stdin", &x->stdin_, b64) ||
	    !text(o, fields, "expected_output", &x->expected, b64) || !text(o, fields, "stdout", &x->stdout_, b64) ||
	    !text(o, fields, "stderr", &x->stderr_, b64) ||
	    !text(o, fields, "compile_output", &x->compile_output, b64) || !text(o, fields, "message", &msg, b64)) {
		json_decref(o);
		return NULL;
	}
	scalars(o, x, fields);
	char *zip = x->zip.set && want(fields, "additional_files") ? base64_encode(x->zip.p, x->zip.n) : NULL;
	set(o, fields, "additional_files", zip ? json_string(zip) : json_null()); /* always base64, as Judge0 */
	free(zip);
	return o;
}

/* A text's bytes in the answer at most: base64 (with its newlines), or
 * JSON-escaped (a control byte is six: \u0001). */
static size_t text_bound(const char *fields, const char *name, const struct j0_buf *b, bool b64)
{
	if (!want(fields, name) || !b->set)
		return 8;
	return (b64 ? b->n / 3 * 4 + b->n / 45 + 8 : b->n * 6) + 8;
}

size_t j0_sub_json_bound(const struct j0_sub *x, const char *fields, bool b64)
{
	size_t n = 4096 + strlen(x->message) * 6; /* the scalars, names and punctuation */
	n += text_bound(fields, "source_code", &x->source, b64) + text_bound(fields, "stdin", &x->stdin_, b64) +
	     text_bound(fields, "expected_output", &x->expected, b64) + text_bound(fields, "stdout", &x->stdout_, b64) +
	     text_bound(fields, "stderr", &x->stderr_, b64) +
	     text_bound(fields, "compile_output", &x->compile_output, b64) +
	     text_bound(fields, "additional_files", &x->zip, true);
	n += (x->compiler_options ? strlen(x->compiler_options) * 6 : 0) + (x->args ? strlen(x->args) * 6 : 0) +
	     (x->callback_url ? strlen(x->callback_url) * 6 : 0);
	return n;
}
