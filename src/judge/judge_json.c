/* judge_json.c — the judge's wire shapes (SPEC §15; judge_json.h): the
 * POST /judge body into a struct ward_judge_job, checked against a
 * runner's maxima (SPEC §10: tests, bytes of tests, parallel, every limit;
 * over one: refused naming it, never clamped but "parallel" down to
 * --max-concurrent, as §15 says), and the answer, the stream's events and
 * GET /languages out.  Reads with jansson on the wire's shared checks
 * (wire/decode.h); writes with jsonw (a test's output is the program's). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errf.h"
#include "core/pathguard.h"
#include "core/request.h"
#include "judge/judge_json.h"
#include "wire/decode.h"
#include "wire/jsonw.h"
#include "wire/utf8.h"

void judge_bounds_init(struct judge_bounds *b, const struct ward_limits *max)
{
	memset(b, 0, sizeof(*b));
	b->max = *max;
	ward_defaults_under(max, &b->defaults);
	b->max_tests = WARD_JUDGE_MAX_TESTS;
	b->max_test_bytes = WARD_JUDGE_MAX_TEST_BYTES;
	b->max_parallel = 64;
	b->clamp_parallel = 64;
}

/* ---------------------------------------------------------------- words */

int judge_split_words(const char *s, char ***words, char *err, size_t errlen)
{
	size_t n = strlen(s);
	/* at most n/2+1 words, each at most n bytes in all */
	char **v = malloc((n / 2 + 2) * sizeof(char *) + n + 1);
	if (!v)
		return base_errf(err, errlen, "out of memory");
	char *out = (char *)(v + n / 2 + 2), *w = out;
	size_t k = 0;
	const char *p = s;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		v[k++] = w;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');
				if (!e) {
					free(v);
					return base_errf(err, errlen, "an unterminated ' quote");
				}
				memcpy(w, p + 1, (size_t)(e - p - 1));
				w += e - p - 1;
				p = e + 1;
			} else if (*p == '"') {
				p++;
				while (*p && *p != '"') {
					if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
						p++;
					*w++ = *p++;
				}
				if (*p != '"') {
					free(v);
					return base_errf(err, errlen, "an unterminated \" quote");
				}
				p++;
			} else if (*p == '\\' && p[1]) {
				*w++ = p[1];
				p += 2;
			} else {
				*w++ = *p++;
			}
		}
		*w++ = 0;
	}
	v[k] = NULL;
	*words = v;
	return 0;
}

/* ---------------------------------------------------------------- decode */

static int keep_words(struct judge_doc *d, char **w, char *err, size_t errlen)
{
	if (d->nwords == d->capwords) {
		size_t cap = d->capwords ? d->capwords * 2 : 8;
		char **nw = realloc(d->words, cap * sizeof(char *));
		if (!nw) {
			free(w);
			return base_errf(err, errlen, "out of memory");
		}
		d->words = nw;
		d->capwords = cap;
	}
	d->words[d->nwords++] = (char *)w;
	return 0;
}

static int keep_owned(struct judge_doc *d, unsigned char *p, char *err, size_t errlen)
{
	if (!p)
		return 0;
	if (d->nowned == d->capowned) {
		size_t cap = d->capowned ? d->capowned * 2 : 8;
		unsigned char **no = realloc(d->owned, cap * sizeof(*no));
		if (!no) {
			free(p);
			return base_errf(err, errlen, "out of memory");
		}
		d->owned = no;
		d->capowned = cap;
	}
	d->owned[d->nowned++] = p;
	return 0;
}

/* Arguments: an array of strings, or one string split as shell words. */
static int get_words(struct judge_doc *d, const json_t *v, const char *field, char *const **out, char *err,
                     size_t errlen)
{
	char **w = NULL;
	if (json_is_string(v)) {
		const char *s;
		char e2[128];
		if (wire_cstr(v, field, &s, err, errlen) < 0)
			return -1;
		if (judge_split_words(s, &w, e2, sizeof(e2)) < 0)
			return base_errf(err, errlen, "%s: %s", field, e2);
	} else if (json_is_array(v)) {
		if (json_array_size(v) > 4096)
			return base_errf(err, errlen, "%s: at most 4096 arguments", field);
		if (wire_string_array(v, field, &w, err, errlen) < 0) {
			free(w);
			return -1;
		}
	} else {
		return base_errf(err, errlen, "%s: must be a string (split as shell words) or an array of strings",
		                 field);
	}
	*out = w;
	return keep_words(d, w, err, errlen);
}

static int get_number(const json_t *v, const char *field, double *out, char *err, size_t errlen)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
		return base_errf(err, errlen, "%s: must be a non-negative number", field);
	*out = json_number_value(v);
	return 0;
}

/* A "limits" object over l (at names it: "run.limits"). */
static int get_limits(const json_t *o, const char *at, struct ward_judge_limits *l, bool run, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return base_errf(err, errlen, "%s: must be an object", at);
	char f[96];
	json_t *v;
	uint64_t u;
#define FIELD(name) (snprintf(f, sizeof(f), "%s.%s", at, name), (v = wire_member(o, name)) != NULL)
	if (FIELD("timeout_s") && get_number(v, f, &l->l.timeout_s, err, errlen) < 0)
		return -1;
	if (FIELD("cpu_seconds") && get_number(v, f, &l->l.cpu_s, err, errlen) < 0)
		return -1;
	if (FIELD("extra_cpu_seconds")) {
		if (!run)
			return base_errf(err, errlen, "%s: only a run's limits have it", f);
		if (get_number(v, f, &l->extra_cpu_s, err, errlen) < 0)
			return -1;
	}
	if (FIELD("memory_mb")) {
		if (wire_uint(v, f, UINT64_MAX >> 20, &u, err, errlen) < 0)
			return -1;
		l->l.memory_mb = u;
	}
	if (FIELD("pids")) {
		if (wire_uint(v, f, 1u << 20, &u, err, errlen) < 0)
			return -1;
		l->l.pids = (uint32_t)u;
	}
	if (FIELD("fsize_mb")) {
		if (wire_uint(v, f, 1u << 20, &u, err, errlen) < 0)
			return -1;
		l->l.fsize_mb = u;
	}
	if (FIELD("tmp_size_mb")) {
		if (wire_uint(v, f, 1u << 20, &u, err, errlen) < 0)
			return -1;
		l->l.tmp_size_mb = u;
	}
	if (FIELD("max_output_bytes")) {
		if (wire_uint(v, f, 1ull << 32, &u, err, errlen) < 0)
			return -1;
		l->l.output_limit = u;
	}
#undef FIELD
	return 0;
}

/* Limits against the maxima, the message naming at's field. */
static int check_limits(const struct ward_judge_limits *l, const struct judge_bounds *b, const char *at, char *err,
                        size_t errlen)
{
	char e2[400];
	struct ward_limits c = l->l;
	double cpu = c.cpu_s > 0 ? c.cpu_s : c.timeout_s;
	c.cpu_s = cpu + l->extra_cpu_s;
	if (ward_limits_within(&c, &b->max, e2, sizeof(e2)) < 0) {
		/* its names are /exec's: say this job's */
		const char *rest = strncmp(e2, "limits.", 7) == 0 ? e2 + 7 : e2;
		if (strncmp(rest, "max_output_chars", 16) == 0)
			return base_errf(err, errlen, "%s.max_output_bytes%s", at, rest + 16);
		if (strncmp(rest, "cpu_seconds", 11) == 0 && l->extra_cpu_s > 0)
			return base_errf(err, errlen, "%s.cpu_seconds + extra_cpu_seconds%s", at, rest + 11);
		return base_errf(err, errlen, "%s.%s", at, rest);
	}
	if (l->l.timeout_s <= 0)
		return base_errf(err, errlen, "%s.timeout_s: must be above 0", at);
	if (l->l.memory_mb < 4)
		return base_errf(err, errlen, "%s.memory_mb: must be at least 4", at);
	if (l->l.pids < 1)
		return base_errf(err, errlen, "%s.pids: must be at least 1", at);
	return 0;
}

/* The language's defaults over the runner's, each kept under the maxima. */
static void lang_defaults(const struct ward_lang_limits *ll, const struct ward_limits *max, struct ward_limits *l)
{
	if (ll->timeout_s)
		l->timeout_s = fmin(ll->timeout_s, max->timeout_s);
	if (ll->cpu_s)
		l->cpu_s = fmin(ll->cpu_s, max->cpu_s > 0 ? max->cpu_s : max->timeout_s);
	if (ll->memory_mb)
		l->memory_mb = ll->memory_mb < max->memory_mb ? ll->memory_mb : max->memory_mb;
	if (ll->pids)
		l->pids = ll->pids < max->pids ? ll->pids : max->pids;
	if (ll->tmp_size_mb)
		l->tmp_size_mb = ll->tmp_size_mb < max->tmp_size_mb ? ll->tmp_size_mb : max->tmp_size_mb;
}

void judge_stage_defaults(const struct ward_language *lang, const struct ward_limits *defaults,
                          const struct ward_limits *max, struct ward_judge_limits *compile,
                          struct ward_judge_limits *run)
{
	*compile = (struct ward_judge_limits){.l = *defaults};
	compile->l.output_limit = JUDGE_COMPILE_OUTPUT < max->output_limit ? JUDGE_COMPILE_OUTPUT : max->output_limit;
	lang_defaults(&lang->compile_limits, max, &compile->l);
	*run = (struct ward_judge_limits){.l = *defaults};
	run->l.timeout_s = fmin(JUDGE_RUN_TIMEOUT_S, max->timeout_s);
	lang_defaults(&lang->run_limits, max, &run->l);
}

static int decode_files(struct judge_doc *d, const json_t *a, const struct ward_language *lang, char *err,
                        size_t errlen)
{
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n == 0)
		return base_errf(err, errlen, "files: must be an array of 1 to %d objects {\"path\", \"content\"}",
		                 WARD_MAX_FILES);
	if (n > WARD_MAX_FILES)
		return base_errf(err, errlen, "files: %zu files; at most %d are allowed", n, WARD_MAX_FILES);
	d->files = calloc(n, sizeof(*d->files));
	if (!d->files)
		return base_errf(err, errlen, "out of memory");
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(a, i), *v;
		struct ward_file *wf = &d->files[i];
		char at[48], field[64];
		unsigned char *owned = NULL;
		if (!json_is_object(f))
			return base_errf(err, errlen, "files[%zu]: must be an object", i);
		snprintf(field, sizeof(field), "files[%zu].path", i);
		wf->path = lang->source_file; /* a file with no path is the main file */
		if ((v = wire_member(f, "path")) && wire_cstr(v, field, &wf->path, err, errlen) < 0)
			return -1;
		char why[200];
		if (pathguard_check(wf->path, strlen(wf->path), why, sizeof(why)) < 0)
			return base_errf(err, errlen, "%s: \"%.100s\" refused: %s; give a path relative to /work",
			                 field, wf->path, why);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(d->files[j].path, wf->path))
				return base_errf(err, errlen, "%s: \"%.100s\" is given twice", field, wf->path);
		snprintf(at, sizeof(at), "files[%zu]", i);
		if (wire_decode_file_body(f, at, 07777, wf, &owned, err, errlen) < 0 ||
		    keep_owned(d, owned, err, errlen) < 0)
			return -1;
		total += wf->len;
		if (total > WARD_MAX_FILES_BYTES)
			return base_errf(err, errlen, "files: more than %u bytes in all", WARD_MAX_FILES_BYTES);
	}
	d->job.files = d->files;
	d->job.nfiles = n;
	return 0;
}

/* content or stdin with its sibling "NAME_encoding". */
static int get_bytes(struct judge_doc *d, const json_t *o, const char *key, const char *at, const unsigned char **data,
                     size_t *len, char *err, size_t errlen)
{
	char ek[64], field[96];
	snprintf(ek, sizeof(ek), "%s_encoding", key);
	const char *enc = NULL;
	json_t *v = wire_member(o, ek);
	snprintf(field, sizeof(field), "%s.%s", at, ek);
	if (v && wire_cstr(v, field, &enc, err, errlen) < 0)
		return -1;
	if (!(v = wire_member(o, key)))
		return 0;
	snprintf(field, sizeof(field), "%s.%s", at, key);
	unsigned char *owned = NULL;
	if (wire_content(v, enc, field, data, len, &owned, err, errlen) < 0)
		return -1;
	return keep_owned(d, owned, err, errlen);
}

static int decode_tests(struct judge_doc *d, const json_t *a, const struct judge_bounds *b, char *err, size_t errlen)
{
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n == 0)
		return base_errf(err, errlen,
		                 "tests: must be an array of 1 or more objects {\"stdin\", \"expected_stdout\"}");
	if (n > b->max_tests)
		return base_errf(err, errlen, "tests: %zu tests; this runner's maximum is %zu a job (--max-tests)", n,
		                 b->max_tests);
	d->tests = calloc(n, sizeof(*d->tests));
	d->test_limits = calloc(n, sizeof(*d->test_limits));
	if (!d->tests || !d->test_limits)
		return base_errf(err, errlen, "out of memory");
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i), *v;
		struct ward_judge_test *t = &d->tests[i];
		char at[48], field[80];
		snprintf(at, sizeof(at), "tests[%zu]", i);
		if (!json_is_object(o))
			return base_errf(err, errlen, "%s: must be an object", at);
		char *idbuf = NULL;
		snprintf(field, sizeof(field), "%s.id", at);
		if ((v = wire_member(o, "id"))) {
			if (json_is_integer(v)) {
				if (asprintf(&idbuf, "%lld", (long long)json_integer_value(v)) < 0)
					return base_errf(err, errlen, "out of memory");
			} else if (wire_cstr(v, field, &t->id, err, errlen) < 0) {
				return -1;
			} else if (strlen(t->id) > 256) {
				return base_errf(err, errlen, "%s: at most 256 bytes", field);
			}
		} else if (asprintf(&idbuf, "%zu", i + 1) < 0) {
			return base_errf(err, errlen, "out of memory");
		}
		if (idbuf) {
			if (keep_owned(d, (unsigned char *)idbuf, err, errlen) < 0)
				return -1;
			t->id = idbuf;
		}
		if (get_bytes(d, o, "stdin", at, &t->stdin_data, &t->stdin_len, err, errlen) < 0 ||
		    get_bytes(d, o, "expected_stdout", at, &t->expected, &t->expected_len, err, errlen) < 0)
			return -1;
		if (wire_member(o, "expected_stdout") && !t->expected)
			t->expected = (const unsigned char *)"";
		bytes += t->stdin_len + t->expected_len;
		if (bytes > b->max_test_bytes)
			return base_errf(
				err, errlen,
				"tests: more than %zu bytes of stdin and expected output in all (up to %s); this "
				"runner's maximum is %zu a job (--max-test-bytes)",
				b->max_test_bytes, at, b->max_test_bytes);
		snprintf(field, sizeof(field), "%s.args", at);
		if ((v = wire_member(o, "args")) && get_words(d, v, field, &t->args, err, errlen) < 0)
			return -1;
		if ((v = wire_member(o, "limits"))) {
			d->test_limits[i] = d->job.run_limits;
			snprintf(field, sizeof(field), "%s.limits", at);
			if (get_limits(v, field, &d->test_limits[i], true, err, errlen) < 0 ||
			    check_limits(&d->test_limits[i], b, field, err, errlen) < 0)
				return -1;
			t->limits = &d->test_limits[i];
		}
	}
	d->job.tests = d->tests;
	d->job.ntests = n;
	return 0;
}

static int decode_compare(struct judge_doc *d, const json_t *v, char *err, size_t errlen)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!strcmp(s, "exact"))
			d->job.compare = WARD_CMP_EXACT;
		else if (!strcmp(s, "lines"))
			d->job.compare = WARD_CMP_LINES;
		else if (!strcmp(s, "tokens"))
			d->job.compare = WARD_CMP_TOKENS;
		else
			return base_errf(err, errlen,
			                 "compare: \"%.40s\" is not one of \"exact\", \"lines\", \"tokens\", "
			                 "{\"float\": EPS}",
			                 s);
		return 0;
	}
	json_t *eps = json_is_object(v) ? json_object_get(v, "float") : NULL;
	if (!eps || json_object_size(v) != 1 || !json_is_number(eps) || !(json_number_value(eps) >= 0) ||
	    !isfinite(json_number_value(eps)))
		return base_errf(err, errlen,
		                 "compare: must be \"exact\", \"lines\", \"tokens\" or {\"float\": EPS} (EPS a "
		                 "non-negative number)");
	d->job.compare = WARD_CMP_FLOAT;
	d->job.eps = json_number_value(eps);
	return 0;
}

/* "compile": {"flags", "limits"} and "run": {"args", "limits"}. */
static int decode_stages(struct judge_doc *d, const json_t *root, const struct ward_language *lang,
                         const struct judge_bounds *b, char *err, size_t errlen)
{
	struct ward_judge_limits cl;
	judge_stage_defaults(lang, &b->defaults, &b->max, &cl, &d->job.run_limits);
	json_t *c = wire_member(root, "compile"), *r = wire_member(root, "run"), *v;
	if (c && !json_is_object(c))
		return base_errf(err, errlen, "compile: must be an object {\"flags\", \"limits\"}");
	if (r && !json_is_object(r))
		return base_errf(err, errlen, "run: must be an object {\"args\", \"limits\"}");
	if (c && (v = wire_member(c, "flags")) && get_words(d, v, "compile.flags", &d->job.flags, err, errlen) < 0)
		return -1;
	if (c && (v = wire_member(c, "limits")) && get_limits(v, "compile.limits", &cl, false, err, errlen) < 0)
		return -1;
	if (check_limits(&cl, b, "compile.limits", err, errlen) < 0)
		return -1;
	d->job.compile_limits = cl.l;
	if (r && (v = wire_member(r, "args")) && get_words(d, v, "run.args", &d->job.args, err, errlen) < 0)
		return -1;
	if (r && (v = wire_member(r, "limits")) &&
	    get_limits(v, "run.limits", &d->job.run_limits, true, err, errlen) < 0)
		return -1;
	return check_limits(&d->job.run_limits, b, "run.limits", err, errlen);
}

static int decode_options(struct judge_doc *d, const json_t *root, const struct judge_bounds *b, char *err,
                          size_t errlen)
{
	json_t *v;
	if ((v = wire_member(root, "compare")) && decode_compare(d, v, err, errlen) < 0)
		return -1;
	d->job.compare = v ? d->job.compare : WARD_CMP_LINES;
	if ((v = wire_member(root, "stop_on_first_failure"))) {
		if (!json_is_boolean(v))
			return base_errf(err, errlen, "stop_on_first_failure: must be true or false");
		d->job.stop_on_first_failure = json_is_true(v);
	}
	d->job.parallel = 1;
	if ((v = wire_member(root, "parallel"))) {
		uint64_t p;
		if (wire_uint(v, "parallel", UINT32_MAX, &p, err, errlen) < 0)
			return -1;
		if (p > b->max_parallel)
			return base_errf(err, errlen,
			                 "parallel: %llu is above this runner's maximum %u a job (--max-parallel)",
			                 (unsigned long long)p, b->max_parallel);
		d->job.parallel = p == 0 ? 1 : (unsigned)p;
	}
	if (d->job.parallel > b->clamp_parallel) /* SPEC §15: clamped to --max-concurrent */
		d->job.parallel = b->clamp_parallel;
	if ((v = wire_member(root, "image")) && wire_cstr(v, "image", &d->image, err, errlen) < 0)
		return -1;
	return 0;
}

int judge_from_json(const char *body, size_t len, const struct ward_languages *t, const struct judge_bounds *b,
                    struct judge_doc *d, bool *unknown_language, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	*unknown_language = false;
	if (ward_json_check_values(body, len, WARD_JSON_MAX_VALUES, err, errlen) < 0)
		return -1;
	json_t *root = wire_load(body, len, err, errlen);
	if (!root)
		return -1;
	d->json = root;
	d->held = len * 2;
	json_t *v;
	if (!json_is_object(root)) {
		base_errf(err, errlen, "the job must be a JSON object");
		goto fail;
	}
	if (!(v = wire_member(root, "language"))) {
		base_errf(err, errlen, "language: is required (GET /languages lists them)");
		goto fail;
	}
	if (wire_cstr(v, "language", &d->language, err, errlen) < 0)
		goto fail;
	if ((v = wire_member(root, "version")) && wire_cstr(v, "version", &d->version, err, errlen) < 0)
		goto fail;
	d->job.lang = ward_language_find(t, d->language, d->version);
	if (!d->job.lang) {
		*unknown_language = true;
		base_errf(err, errlen,
		          "language: \"%.60s\"%s%.40s%s is not enabled on this runner (GET /languages lists "
		          "those it has)",
		          d->language, d->version ? " version \"" : "", d->version ? d->version : "",
		          d->version ? "\"" : "");
		goto fail;
	}
	if (!(v = wire_member(root, "files"))) {
		base_errf(err, errlen,
		          "files: is required (an array of {\"path\", \"content\"}; the first is the main file)");
		goto fail;
	}
	if (decode_files(d, v, d->job.lang, err, errlen) < 0 ||
	    decode_stages(d, root, d->job.lang, b, err, errlen) < 0 || decode_options(d, root, b, err, errlen) < 0)
		goto fail;
	if (!(v = wire_member(root, "tests"))) {
		base_errf(err, errlen, "tests: is required (an array of {\"stdin\", \"expected_stdout\"})");
		goto fail;
	}
	if (decode_tests(d, v, b, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	judge_doc_free(d);
	return -1;
}

void judge_doc_free(struct judge_doc *d)
{
	for (size_t i = 0; i < d->nwords; i++)
		free(d->words[i]);
	free(d->words);
	for (size_t i = 0; i < d->nowned; i++)
		free(d->owned[i]);
	free(d->owned);
	free(d->files);
	free(d->tests);
	free(d->test_limits);
	if (d->json)
		json_decref(d->json);
	memset(d, 0, sizeof(*d));
}

/* ---------------------------------------------------------------- encode */

static bool valid_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* "stdout" (or base64 with "stdout_encoding"), and "stdout_truncated" when cut. */
static void emit_stream(struct jw *w, const char *name, const struct ward_stream *s)
{
	const char *data = s->data ? s->data : "";
	size_t len = s->data ? s->len : 0;
	jw_key(w, name);
	if (valid_utf8(data, len)) {
		jw_string(w, data, len);
	} else {
		jw_base64(w, (const unsigned char *)data, len);
		char k[32];
		snprintf(k, sizeof(k), "%s_encoding", name);
		jw_key(w, k);
		jw_cstring(w, "base64");
	}
	if (s->truncated) {
		char k[32];
		snprintf(k, sizeof(k), "%s_truncated", name);
		jw_member_bool(w, k, true);
	}
}

static void emit_test(struct jw *w, const struct ward_judge_test_result *t)
{
	jw_object_begin(w);
	jw_key(w, "id");
	jw_cstring(w, t->id ? t->id : "");
	jw_key(w, "verdict");
	jw_cstring(w, ward_verdict_name(t->verdict));
	jw_member_int(w, "exit_code", t->exit_code);
	jw_key(w, "signal");
	if (t->signal)
		jw_int(w, t->signal);
	else
		jw_null(w);
	emit_stream(w, "stdout", &t->out);
	emit_stream(w, "stderr", &t->err);
	jw_key(w, "usage");
	jw_object_begin(w);
	jw_member_int(w, "cpu_ms", (int64_t)t->cpu_ms);
	jw_member_int(w, "wall_ms", (int64_t)t->wall_ms);
	jw_member_int(w, "memory_kb", (int64_t)t->memory_kb);
	jw_object_end(w);
	jw_key(w, "message");
	jw_cstring(w, t->message);
	jw_object_end(w);
}

static void emit_test_event(struct jw *w, const void *arg)
{
	jw_object_begin(w);
	jw_key(w, "test");
	emit_test(w, arg);
	jw_object_end(w);
}

char *judge_test_event_json(const struct ward_judge_test_result *t, size_t *len)
{
	return jw_build(emit_test_event, t, len);
}

struct answer_view {
	const struct ward_judge_job *job;
	const struct ward_judge_result *res;
};

static void emit_answer(struct jw *w, const void *arg)
{
	const struct answer_view *a = arg;
	const struct ward_judge_result *r = a->res;
	const struct ward_language *lang = a->job ? a->job->lang : NULL;
	jw_object_begin(w);
	jw_key(w, "verdict");
	jw_cstring(w, ward_verdict_name(r->verdict));
	jw_key(w, "language");
	jw_cstring(w, lang ? lang->id : "");
	jw_key(w, "version");
	jw_cstring(w, lang ? lang->version : "");
	jw_key(w, "compile");
	if (r->compiled) {
		jw_object_begin(w);
		jw_result_members(w, &r->compile);
		jw_key(w, "verdict");
		jw_cstring(w, r->compile_verdict == WARD_V_AC ? "OK" : ward_verdict_name(r->compile_verdict));
		jw_key(w, "message");
		jw_cstring(w, r->compile_message);
		jw_object_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "tests");
	jw_array_begin(w);
	for (size_t i = 0; i < r->ntests; i++) {
		jw_element(w);
		emit_test(w, &r->tests[i]);
	}
	jw_array_end(w);
	jw_key(w, "summary");
	jw_object_begin(w);
	jw_member_int(w, "total", (int64_t)(a->job ? a->job->ntests : r->ntests));
	jw_member_int(w, "passed", r->passed);
	jw_key(w, "first_failed");
	if (r->first_failed >= 0 && (size_t)r->first_failed < r->ntests)
		jw_cstring(w, r->tests[r->first_failed].id);
	else
		jw_null(w);
	jw_member_int(w, "parallel", r->parallel);
	jw_object_end(w);
	jw_key(w, "error");
	jw_cstring(w, r->error);
	jw_object_end(w);
}

char *judge_result_to_json(const struct ward_judge_job *job, const struct ward_judge_result *res, size_t *len)
{
	struct answer_view a = {job, res};
	return jw_build(emit_answer, &a, len);
}

struct langs_view {
	const struct ward_languages *t;
	bool all;
};

static void emit_languages(struct jw *w, const void *arg)
{
	const struct langs_view *v = arg;
	jw_array_begin(w);
	for (size_t i = 0; v->t && i < v->t->n; i++) {
		const struct ward_language *l = &v->t->v[i];
		if (!l->enabled && !v->all)
			continue;
		jw_element(w);
		jw_object_begin(w);
		jw_key(w, "id");
		jw_cstring(w, l->id);
		jw_key(w, "display");
		jw_cstring(w, l->display);
		jw_key(w, "version");
		jw_cstring(w, l->version);
		jw_key(w, "aliases");
		jw_array_begin(w);
		for (char **a = l->aliases; a && *a; a++) {
			jw_element(w);
			jw_cstring(w, *a);
		}
		jw_array_end(w);
		jw_member_bool(w, "compiled", l->compile != NULL);
		if (l->image) {
			jw_key(w, "image");
			jw_cstring(w, l->image);
		}
		if (v->all) {
			jw_member_bool(w, "enabled", l->enabled);
			jw_key(w, "why");
			jw_cstring(w, l->why);
		}
		jw_object_end(w);
	}
	jw_array_end(w);
}

char *judge_languages_to_json(const struct ward_languages *t, bool all)
{
	struct langs_view v = {t, all};
	return jw_build(emit_languages, &v, NULL);
}
