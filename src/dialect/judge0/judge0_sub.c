/* judge0_sub.c — one Judge0 submission decoded (research judge.md §3):
 * its attributes checked as Judge0 1.13.1 checks them (422 {"attr":
 * ["message"]}), its limits within Judge0's maxima lowered to the runner's
 * (SPEC §10: a limit above them is refused, a default is lowered), its
 * texts decoded (base64 as Ruby's lenient decoder), into a new record.
 *
 * Owns nothing between calls: a record is the store's once held. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dialect/judge0/judge0.h"
#include "dialect/judge0/judge0_int.h"

unsigned char *judge0_b64_lenient(const char *in, size_t len, size_t *n)
{
	unsigned char *out = malloc(len / 4 * 3 + 4);
	if (!out)
		return NULL;
	unsigned acc = 0, bits = 0;
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		char c = in[i];
		int v = c >= 'A' && c <= 'Z'   ? c - 'A'
		        : c >= 'a' && c <= 'z' ? c - 'a' + 26
		        : c >= '0' && c <= '9' ? c - '0' + 52
		        : c == '+'             ? 62
		        : c == '/'             ? 63
		                               : -1;
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

static void buf_free(struct j0_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

bool j0_buf_set(struct j0_buf *b, const void *p, size_t n)
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

void j0_sub_free(struct j0_sub *x)
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
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
	         b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

void j0_unprocessable(struct req *r, const char *attr, const char *msg)
{
	snprintf(r->message, sizeof(r->message), "%s %s", attr, msg);
	dialect_answer(r, 422, json_pack("{s:[s]}", attr, msg));
}

/* A number or a numeric string (Judge0 takes both), finite, in [lo, hi]
 * (lo excluded when lo_strict); absent or null leaves *out as it is. */
static bool num(struct req *r, json_t *o, const char *key, double lo, bool lo_strict, double hi, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return true;
	double x = NAN;
	if (json_is_number(v))
		x = json_number_value(v);
	else if (json_is_string(v) && json_string_length(v) && json_string_length(v) < 30) {
		char *end;
		x = strtod(json_string_value(v), &end);
		if (*end)
			x = NAN;
	}
	if (!isfinite(x)) { /* "nan" and "inf" are no numbers to Judge0 either */
		j0_unprocessable(r, key, "is not a number");
		return false;
	}
	char m[80];
	if (lo_strict ? x <= lo : x < lo) {
		snprintf(m, sizeof(m), "must be greater than %s%g", lo_strict ? "" : "or equal to ", lo);
		j0_unprocessable(r, key, m);
		return false;
	}
	if (x > hi) {
		snprintf(m, sizeof(m), "must be less than or equal to %.1f", hi);
		j0_unprocessable(r, key, m);
		return false;
	}
	*out = x;
	return true;
}

static bool get_text(struct req *r, json_t *o, const char *key, bool b64, struct j0_buf *b)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		j0_unprocessable(r, key, "is not a string");
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
	return j0_buf_set(b, json_string_value(v), json_string_length(v));
}

static bool callback_ok(struct req *r, struct j0 *j, const char *url, struct j0_sub *x)
{
	char why[300];
	if (!j->cb) {
		j0_unprocessable(r, "callback_url", "setting callback is not allowed");
		return false;
	}
	if (j0_callback_refused(r->srv, url, why, sizeof(why))) {
		j0_unprocessable(r, "callback_url", why);
		return false;
	}
	return (x->callback_url = strdup(url)) != NULL;
}

/* additional_files: always base64 (whatever base64_encoded says), a zip of
 * at most max_extract_size; required by language 89.  false with the 422. */
static bool get_zip(struct req *r, struct j0 *j, json_t *o, bool multi, struct j0_sub *x)
{
	json_t *af = json_object_get(o, "additional_files");
	bool given = json_is_string(af) && json_string_length(af);
	if (af && !json_is_null(af) && !json_is_string(af)) {
		j0_unprocessable(r, "additional_files", "is not a string");
		return false;
	}
	if (!given) {
		if (multi)
			j0_unprocessable(r, "additional_files", "can't be blank");
		return !multi;
	}
	if (!j->files.prog) {
		j0_unprocessable(r, "additional_files", "setting additional files is not allowed");
		return false;
	}
	char m[120];
	snprintf(m, sizeof(m), "is too large (a zip of at most %u KB)", J0_MAX_EXTRACT_KB);
	if (json_string_length(af) > (size_t)J0_MAX_EXTRACT_KB * 1024 / 3 * 4 + 8192) {
		j0_unprocessable(r, "additional_files", m);
		return false;
	}
	size_t n;
	unsigned char *p = judge0_b64_lenient(json_string_value(af), json_string_length(af), &n);
	if (!p)
		return false;
	x->zip = (struct j0_buf){p, n, true};
	if (n > (size_t)J0_MAX_EXTRACT_KB * 1024) {
		j0_unprocessable(r, "additional_files", m);
		return false;
	}
	return true;
}

/* The limits, within Judge0's maxima under the runner's (j->lim): a value
 * above is refused as Judge0 refuses one above its own; the CPU time and
 * its extra together stay within --max-cpu (the extra lowered to fit). */
static bool get_limits(struct req *r, struct j0 *j, json_t *o, struct j0_sub *x)
{
	const struct j0_limits *l = &j->lim;
	double mem = (double)l->memory;
	x->cpu_time_limit = l->cpu, x->cpu_extra_time = l->extra, x->wall_time_limit = l->wall;
	bool extra_given = json_object_get(o, "cpu_extra_time") && !json_is_null(json_object_get(o, "cpu_extra_time"));
	if (!num(r, o, "cpu_time_limit", 0, false, l->cpu_max, &x->cpu_time_limit) ||
	    !num(r, o, "cpu_extra_time", 0, false, fmin(l->extra_max, l->cpu_total - x->cpu_time_limit),
	         &x->cpu_extra_time) ||
	    !num(r, o, "wall_time_limit", fmin(1, l->wall_max), false, l->wall_max, &x->wall_time_limit) ||
	    !num(r, o, "memory_limit", 2048, false, (double)l->memory_max, &mem))
		return false;
	if (!extra_given)
		x->cpu_extra_time = fmax(0, fmin(x->cpu_extra_time, l->cpu_total - x->cpu_time_limit));
	x->memory_limit = (long)mem;
	return true;
}

/* compiler_options and command_line_arguments: at most 512 characters;
 * options only for a compiled language.  false with the 422. */
static bool get_words(struct req *r, json_t *o, struct j0_sub *x)
{
	static const char *const keys[] = {"compiler_options", "command_line_arguments"};
	for (size_t i = 0; i < 2; i++) {
		json_t *v = json_object_get(o, keys[i]);
		if (v && !json_is_null(v) && (!json_is_string(v) || json_string_length(v) > 512)) {
			j0_unprocessable(r, keys[i], "is too long (maximum is 512 characters)");
			return false;
		}
	}
	json_t *co = json_object_get(o, "compiler_options"), *ca = json_object_get(o, "command_line_arguments");
	if (json_is_string(co) && json_string_length(co)) {
		if (!x->lang->compile) {
			j0_unprocessable(r, "compiler_options",
			                 "setting compiler options is only allowed for compiled languages");
			return false;
		}
		x->compiler_options = strdup(json_string_value(co));
	}
	if (json_is_string(ca) && json_string_length(ca))
		x->args = strdup(json_string_value(ca));
	return true;
}

/* language_id, then source_code against it (language 89 has none). */
static bool get_language(struct req *r, struct j0 *j, json_t *o, struct j0_sub *x)
{
	json_t *lid = json_object_get(o, "language_id");
	double id = 0;
	char m[120];
	if (!lid || json_is_null(lid)) {
		j0_unprocessable(r, "language_id", "can't be blank");
		return false;
	}
	if (!num(r, o, "language_id", 0, false, 1e9, &id))
		return false;
	x->language_id = (int)id;
	if (!(x->lang = j0_lang(j, x->language_id))) {
		snprintf(m, sizeof(m), "language with id %d doesn't exist", x->language_id);
		j0_unprocessable(r, "language_id", m);
		return false;
	}
	json_t *sc = json_object_get(o, "source_code");
	bool multi = x->language_id == J0_MULTI_FILE_ID, blank = !json_is_string(sc) || !json_string_length(sc);
	if (blank != multi) {
		j0_unprocessable(r, "source_code", multi ? "must be blank" : "can't be blank");
		return false;
	}
	return get_zip(r, j, o, multi, x);
}

static bool get_runs(struct req *r, json_t *o, struct j0_sub *x)
{
	double runs = 1;
	char m[120];
	if (!num(r, o, "number_of_runs", 0, true, 1e9, &runs))
		return false;
	if (runs > r->srv->o.judge0_max_runs) {
		snprintf(m, sizeof(m), "must be less than or equal to %u", r->srv->o.judge0_max_runs);
		j0_unprocessable(r, "number_of_runs", m);
		return false;
	}
	x->runs = runs < 1 ? 1 : (unsigned)runs;
	return true;
}

static bool get_callback(struct req *r, struct j0 *j, json_t *o, struct j0_sub *x)
{
	json_t *cb = json_object_get(o, "callback_url");
	if (json_is_true(json_object_get(o, "enable_network"))) {
		j0_unprocessable(r, "enable_network", "enabling network is not allowed");
		return false;
	}
	if (cb && !json_is_null(cb) && !json_is_string(cb)) {
		j0_unprocessable(r, "callback_url", "is not a string");
		return false;
	}
	return !(json_is_string(cb) && json_string_length(cb)) || callback_ok(r, j, json_string_value(cb), x);
}

struct j0_sub *j0_decode_sub(struct req *r, struct j0 *j, json_t *o, bool b64)
{
	if (!json_is_object(o)) {
		j0_unprocessable(r, "submission", "must be an object");
		return NULL;
	}
	struct j0_sub *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->time = x->wall_time = -1, x->memory = x->exit_code = x->exit_signal = -1;
	x->status = 1;
	if (!get_language(r, j, o, x) || !get_text(r, o, "source_code", b64, &x->source) ||
	    !get_text(r, o, "stdin", b64, &x->stdin_) || !get_text(r, o, "expected_output", b64, &x->expected) ||
	    !get_limits(r, j, o, x) || !get_runs(r, o, x) || !get_words(r, o, x) || !get_callback(r, j, o, x)) {
		j0_sub_free(x);
		return NULL;
	}
	uuid4(x->token);
	x->created = now_real();
	x->held = sizeof(*x) + x->source.n + x->stdin_.n + x->expected.n + x->zip.n +
	          (x->callback_url ? strlen(x->callback_url) : 0) + 256;
	return x;
}
