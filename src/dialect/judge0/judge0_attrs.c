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
#include "wire/jsonw.h"

static const char *const all_fields[] = {"source_code",
                                         "language_id",
                                         "stdin",
                                         "expected_output",
                                         "stdout",
                                         "status_id",
                                         "created_at",
                                         "finished_at",
                                         "time",
                                         "memory",
                                         "stderr",
                                         "token",
                                         "number_of_runs",
                                         "cpu_time_limit",
                                         "cpu_extra_time",
                                         "wall_time_limit",
                                         "memory_limit",
                                         "stack_limit",
                                         "max_processes_and_or_threads",
                                         "enable_per_process_and_thread_time_limit",
                                         "enable_per_process_and_thread_memory_limit",
                                         "max_file_size",
                                         "compile_output",
                                         "exit_code",
                                         "exit_signal",
                                         "message",
                                         "wall_time",
                                         "compiler_options",
                                         "command_line_arguments",
                                         "redirect_stderr_to_stdout",
                                         "callback_url",
                                         "additional_files",
                                         "enable_network",
                                         "status",
                                         "language",
                                         NULL};
static const char *const default_fields[] = {"token",          "time",    "memory", "stdout", "stderr",
                                             "compile_output", "message", "status", NULL};

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
			k += (size_t)snprintf(bad + k, sizeof(bad) - k, "%s%.*s", k ? ", " : "",
			                      (int)(n > 100 ? 100 : n), p);
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

/* A text's bytes when it is answered raw: valid UTF-8, else Judge0's
 * conversion error. */
static bool text_ok(const char *fields, const char *name, const struct j0_buf *b, bool b64)
{
	return b64 || !want(fields, name) || !b->set || dialect_utf8(b->p, b->n);
}

bool j0_sub_answerable(const struct j0_sub *x, const char *fields, bool b64)
{
	return text_ok(fields, "source_code", &x->source, b64) && text_ok(fields, "stdin", &x->stdin_, b64) &&
	       text_ok(fields, "expected_output", &x->expected, b64) && text_ok(fields, "stdout", &x->stdout_, b64) &&
	       text_ok(fields, "stderr", &x->stderr_, b64) &&
	       text_ok(fields, "compile_output", &x->compile_output, b64) &&
	       (b64 || !want(fields, "message") || dialect_utf8((const unsigned char *)x->message, strlen(x->message)));
}

/* A text attribute: null when unset or empty; base64, or raw. */
static void text(struct jw *w, const char *fields, const char *name, const unsigned char *p, size_t n, bool b64)
{
	if (!want(fields, name))
		return;
	jw_key(w, name);
	if (!p || !n)
		jw_null(w);
	else if (b64)
		jw_base64(w, p, n);
	else
		jw_string(w, (const char *)p, n);
}

static void buf_text(struct jw *w, const char *fields, const char *name, const struct j0_buf *b, bool b64)
{
	text(w, fields, name, b->set ? b->p : NULL, b->n, b64);
}

/* A decimal as Judge0 answers one: a string of at most three places
 * ("0.012", "5.0"), or null when negative (not measured). */
static void decimal(struct jw *w, const char *fields, const char *name, double v)
{
	if (!want(fields, name))
		return;
	jw_key(w, name);
	if (v < 0) {
		jw_null(w);
		return;
	}
	char b[32];
	snprintf(b, sizeof(b), "%.3f", v);
	size_t n = strlen(b);
	while (n > 0 && b[n - 1] == '0' && b[n - 2] != '.')
		b[--n] = 0;
	jw_cstring(w, b);
}

static void whole(struct jw *w, const char *fields, const char *name, long v, bool null_if_negative)
{
	if (!want(fields, name))
		return;
	jw_key(w, name);
	if (null_if_negative && v < 0)
		jw_null(w);
	else
		jw_int(w, v);
}

static void str(struct jw *w, const char *fields, const char *name, const char *v)
{
	if (!want(fields, name))
		return;
	jw_key(w, name);
	if (v)
		jw_cstring(w, v);
	else
		jw_null(w);
}

static void flag(struct jw *w, const char *fields, const char *name, bool v)
{
	if (want(fields, name))
		jw_member_bool(w, name, v);
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

/* {"id", "name"|"description"}: the status and the language. */
static void named(struct jw *w, const char *fields, const char *name, int id, const char *key, const char *v)
{
	if (!want(fields, name))
		return;
	jw_key(w, name);
	jw_object_begin(w);
	jw_member_int(w, "id", id);
	jw_key(w, key);
	jw_cstring(w, v);
	jw_object_end(w);
}

/* The attributes that are not texts: numbers, times, limits, names. */
static void scalars(struct jw *w, const struct j0_sub *x, const char *fields)
{
	char t[40], f[40];
	str(w, fields, "token", x->token);
	whole(w, fields, "language_id", x->language_id, false);
	whole(w, fields, "status_id", x->status, false);
	iso(x->created, t, sizeof(t));
	str(w, fields, "created_at", t);
	if (x->finished > 0)
		iso(x->finished, f, sizeof(f));
	str(w, fields, "finished_at", x->finished > 0 ? f : NULL);
	decimal(w, fields, "time", x->time);
	decimal(w, fields, "wall_time", x->wall_time);
	whole(w, fields, "memory", x->memory, true);
	whole(w, fields, "number_of_runs", x->runs, false);
	decimal(w, fields, "cpu_time_limit", x->cpu_time_limit);
	decimal(w, fields, "cpu_extra_time", x->cpu_extra_time);
	decimal(w, fields, "wall_time_limit", x->wall_time_limit);
	whole(w, fields, "memory_limit", x->memory_limit, false);
	whole(w, fields, "stack_limit", 64000, false);
	whole(w, fields, "max_processes_and_or_threads", 60, false);
	flag(w, fields, "enable_per_process_and_thread_time_limit", false);
	flag(w, fields, "enable_per_process_and_thread_memory_limit", false);
	whole(w, fields, "max_file_size", 1024, false);
	whole(w, fields, "exit_code", x->exit_code, true);
	whole(w, fields, "exit_signal", x->exit_signal, true);
	str(w, fields, "compiler_options", x->compiler_options);
	str(w, fields, "command_line_arguments", x->args);
	flag(w, fields, "redirect_stderr_to_stdout", false);
	str(w, fields, "callback_url", x->callback_url);
	flag(w, fields, "enable_network", false);
	named(w, fields, "status", x->status, "description", j0_status_desc[x->status]);
	named(w, fields, "language", x->language_id, "name", x->lang ? x->lang->display : "");
}

void j0_sub_emit(struct jw *w, const struct j0_sub *x, const char *fields, bool b64)
{
	jw_object_begin(w);
	buf_text(w, fields, "source_code", &x->source, b64);
	buf_text(w, fields, "stdin", &x->stdin_, b64);
	buf_text(w, fields, "expected_output", &x->expected, b64);
	buf_text(w, fields, "stdout", &x->stdout_, b64);
	buf_text(w, fields, "stderr", &x->stderr_, b64);
	buf_text(w, fields, "compile_output", &x->compile_output, b64);
	text(w, fields, "message", (const unsigned char *)x->message, strlen(x->message), b64);
	scalars(w, x, fields);
	/* always base64, as Judge0 */
	text(w, fields, "additional_files", x->zip.set ? x->zip.p : NULL, x->zip.n, true);
	jw_object_end(w);
}

struct one {
	const struct j0_sub *x;
	const char *fields;
	bool b64;
};

static void emit_one(struct jw *w, const void *arg)
{
	const struct one *o = arg;
	j0_sub_emit(w, o->x, o->fields, o->b64);
}

char *j0_sub_text(const struct j0_sub *x, const char *fields, bool b64, size_t *len)
{
	struct one o = {x, fields, b64};
	return jw_build(emit_one, &o, len);
}
