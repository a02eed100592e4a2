/* test_maxima.c — a runner's maxima (SPEC §10: src/core/request.c), the bounded
 * JSON writer (src/wire/jsonw.c) against jansson byte for byte, and what a
 * decoded request is counted as against what jansson really holds. */
#include <jansson.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/jsonw.h"
#include "core/request.h"
#include "testjob/testjob.h"
#include "unit.h"
#include "wire/utf8.h"
#include "ward.h"
#include "wire/wire.h"

void test_maxima(void);
void test_jsonw(void);

/* ------------------------------------------------------------ maxima */

static void maxima_defaults(void)
{
	struct ward_limits max;
	char err[400] = "";
	ward_maxima_init(&max);
	CHECK("maxima: defaults as SPEC §10",
	      max.timeout_s == 300 && max.cpu_s == 300 && max.memory_mb == 4096 && max.pids == 1024 &&
		      max.output_limit == 16u << 20 && max.tmp_size_mb == 1024 && max.fsize_mb == 1024 &&
		      max.nofile == 4096);
	struct ward_limits d;
	struct ward_request plain;
	ward_request_init(&plain);
	ward_defaults_under(&max, &d);
	CHECK("maxima: under the default maxima, a request that names no limits gets SPEC §2's defaults",
	      memcmp(&d, &plain.limits, sizeof(d)) == 0);
	max.memory_mb = 256;
	max.timeout_s = 10;
	max.cpu_s = 5;
	ward_defaults_under(&max, &d);
	CHECK("maxima: a maximum below a default lowers that default to it (memory, timeout)",
	      d.memory_mb == 256 && d.timeout_s == 10 && d.pids == plain.limits.pids);
	CHECK("maxima: a CPU limit that would be the timeout fits --max-cpu", d.cpu_s == 5);
	CHECK("maxima: the lowered defaults pass the maxima", ward_limits_within(&d, &max, err, sizeof(err)) == 0);
	ward_maxima_init(&max);
	max.cpu_s = 10;
	ward_defaults_under(&max, &d);
	CHECK("maxima: --max-cpu below the default timeout gives a CPU limit of it, the timeout stays",
	      d.cpu_s == 10 && d.timeout_s == plain.limits.timeout_s);
}

/* Each limit: accepted at its maximum, refused just above it with a
 * message naming the field and the maximum. */
static void maxima_each_limit(void)
{
	struct ward_limits max;
	ward_maxima_init(&max);
	for (int i = 0; i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		struct ward_request q;
		char err[400] = "", name[160], want[64], wantmax[64];
		ward_request_init(&q);
		double m = ward_limit_get(&max, i);
		ward_limit_set(&q.limits, i, m);
		if (i == LIM_CPU) /* the timeout must not be above the CPU limit's maximum either */
			q.limits.timeout_s = m;
		snprintf(name, sizeof(name), "maxima: %s exactly at its maximum is accepted", d->field);
		CHECK(name, ward_limits_within(&q.limits, &max, err, sizeof(err)) == 0);
		bool secs = i == LIM_TIMEOUT || i == LIM_CPU;
		ward_limit_set(&q.limits, i, secs ? m + 0.001 : m + 1);
		snprintf(want, sizeof(want), "limits.%s: ", d->field);
		snprintf(wantmax, sizeof(wantmax), "maximum %.15g", m);
		snprintf(name, sizeof(name), "maxima: %s above its maximum is refused, naming it, %s and %s", d->field,
			 wantmax, d->max_option);
		int rc = ward_limits_within(&q.limits, &max, err, sizeof(err));
		CHECK(name, rc < 0 && strncmp(err, want, strlen(want)) == 0 && strstr(err, wantmax) &&
				    strstr(err, d->max_option));
	}
}

static void maxima_hostile(void)
{
	struct ward_limits max;
	struct ward_request q;
	char err[400] = "";
	ward_maxima_init(&max);
	ward_request_init(&q);
	q.limits.tmp_size_mb = 1u << 20; /* 1 TiB of /tmp, /work and /dev/shm */
	CHECK("maxima: tmp_size_mb of 1 TiB is refused",
	      ward_limits_within(&q.limits, &max, err, sizeof(err)) < 0 && strstr(err, "limits.tmp_size_mb") &&
		      strstr(err, "--max-tmp-size"));
	ward_request_init(&q);
	q.limits.memory_mb = 1u << 20;
	CHECK("maxima: memory_mb 1048576 is refused, never clamped",
	      ward_limits_within(&q.limits, &max, err, sizeof(err)) < 0 && q.limits.memory_mb == 1u << 20 &&
		      strcmp(err, "limits.memory_mb: 1048576 MB is above this runner's maximum 4096 MB (--max-memory)") == 0);
	ward_request_init(&q);
	q.limits.timeout_s = 86400;
	CHECK("maxima: timeout_s 86400 is refused", ward_limits_within(&q.limits, &max, err, sizeof(err)) < 0 &&
							    strstr(err, "limits.timeout_s"));
	/* no cpu_seconds: the CPU limit is the timeout, and counts as that */
	max.cpu_s = 60;
	ward_request_init(&q);
	q.limits.timeout_s = 100;
	CHECK("maxima: a timeout above --max-cpu without cpu_seconds is refused, naming cpu_seconds",
	      ward_limits_within(&q.limits, &max, err, sizeof(err)) < 0 && strstr(err, "limits.cpu_seconds") &&
		      strstr(err, "--max-cpu"));
	q.limits.cpu_s = 60;
	CHECK("maxima: ... and accepted with cpu_seconds at the maximum",
	      ward_limits_within(&q.limits, &max, err, sizeof(err)) == 0);
	ward_request_init(&q);
	q.limits.output_limit = UINT64_MAX;
	ward_maxima_init(&max);
	CHECK("maxima: max_output_chars of 2^64-1 is refused", ward_limits_within(&q.limits, &max, err, sizeof(err)) < 0 &&
								      strstr(err, "limits.max_output_chars"));
}

static void maxima_health(void)
{
	struct ward_limits max;
	struct ward_request q;
	ward_maxima_init(&max);
	max.memory_mb = 2048;
	ward_request_init(&q);
	char *js = ward_health_to_json(true, "system", "", &q.limits, &max);
	json_t *o = js ? json_loads(js, 0, NULL) : NULL;
	json_t *d = json_object_get(json_object_get(o, "limits"), "defaults");
	json_t *m = json_object_get(json_object_get(o, "limits"), "maxima");
	CHECK("maxima: /health keeps status and isolation",
	      o && !strcmp(json_string_value(json_object_get(o, "status")), "ok") &&
		      !strcmp(json_string_value(json_object_get(o, "isolation")), "system"));
	CHECK("maxima: /health answers the defaults",
	      json_integer_value(json_object_get(d, "memory_mb")) == 512 &&
		      json_number_value(json_object_get(d, "timeout_s")) == 30 &&
		      json_number_value(json_object_get(d, "cpu_seconds")) == 30 &&
		      json_integer_value(json_object_get(d, "max_output_chars")) == 1 << 20);
	CHECK("maxima: /health answers the maxima in force",
	      json_integer_value(json_object_get(m, "memory_mb")) == 2048 &&
		      json_number_value(json_object_get(m, "timeout_s")) == 300 &&
		      json_integer_value(json_object_get(m, "tmp_size_mb")) == 1024 &&
		      json_integer_value(json_object_get(m, "nofile")) == 4096 && json_object_size(m) == LIM__COUNT);
	json_decref(o);
	free(js);
}

/* ------------------------------------------------------------ doc bytes */

static size_t jalloc_held;
static void *counting_malloc(size_t n)
{
	void *p = malloc(n);
	if (p)
		jalloc_held += malloc_usable_size(p) + sizeof(size_t);
	return p;
}
static void counting_free(void *p)
{
	if (p)
		jalloc_held -= malloc_usable_size(p) + sizeof(size_t);
	free(p);
}

/* The body of N copies of ITEM in an array under "x" (or an object when
 * KEYED). */
static char *doc_of(const char *item, size_t n, bool keyed)
{
	size_t cap = n * (strlen(item) + 16) + 64, k;
	char *b = malloc(cap);
	k = (size_t)sprintf(b, "{\"command\":\"true\",\"x\":%c", keyed ? '{' : '[');
	for (size_t i = 0; i < n; i++)
		k += keyed ? (size_t)sprintf(b + k, "%s\"k%zu\":%s", i ? "," : "", i, item)
			   : (size_t)sprintf(b + k, "%s%s", i ? "," : "", item);
	sprintf(b + k, "%c}", keyed ? '}' : ']');
	return b;
}

static void doc_bytes_bound(void)
{
	static const struct {
		const char *name, *item;
		bool keyed;
	} shapes[] = {
		{"numbers", "1", false},        {"empty objects", "{}", false}, {"empty arrays", "[]", false},
		{"strings", "\"abc\"", false},  {"members", "1", true},         {"object members", "{}", true},
		{"small objects", "{\"a\":1}", false},
	};
	json_set_alloc_funcs(counting_malloc, counting_free);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		char *body = doc_of(shapes[i].item, 20000, shapes[i].keyed), err[256], name[128];
		struct ward_request_doc doc;
		jalloc_held = 0;
		int rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
		size_t held = jalloc_held;
		snprintf(name, sizeof(name), "doc bytes: at least what jansson holds for 20000 %s", shapes[i].name);
		CHECK(name, rc == 0 && ward_request_doc_bytes(&doc) >= held);
		if (rc == 0)
			ward_request_doc_free(&doc);
		free(body);
	}
	/* base64 contents are decoded into copies: counted too */
	size_t n = 300000;
	char *body = malloc(n + 64);
	int k = sprintf(body, "{\"command\":\"true\",\"stdin_encoding\":\"base64\",\"stdin\":\"");
	memset(body + k, 'A', n);
	strcpy(body + k + n, "\"}");
	struct ward_request_doc doc;
	char err[256];
	int rc = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	CHECK("doc bytes: a decoded base64 stdin counts", rc == 0 && ward_request_doc_bytes(&doc) >= n + n * 3 / 4);
	if (rc == 0)
		ward_request_doc_free(&doc);
	free(body);
	json_set_alloc_funcs(malloc, free);
}

void test_maxima(void)
{
	maxima_defaults();
	maxima_each_limit();
	maxima_hostile();
	maxima_health();
	doc_bytes_bound();
}

/* ------------------------------------------------------------ jsonw */

struct one_string {
	const char *p;
	size_t n;
};
static void emit_one_string(struct jw *w, const void *arg)
{
	const struct one_string *s = arg;
	jw_string(w, s->p, s->n);
}

/* What the encoder did before jsonw: sanitize, then jansson. */
static char *jansson_string(const char *p, size_t n)
{
	size_t m;
	char *clean = utf8_sanitize(p, n, &m);
	json_t *s = json_stringn_nocheck(clean, m);
	char *out = json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(s);
	free(clean);
	return out;
}

static bool same_as_jansson(const char *p, size_t n)
{
	struct one_string s = {p, n};
	char *a = jw_build(emit_one_string, &s, NULL), *b = jansson_string(p, n);
	bool same = a && b && strcmp(a, b) == 0;
	if (!same)
		printf("   (jsonw %.80s, jansson %.80s)\n", a ? a : "NULL", b ? b : "NULL");
	free(a);
	free(b);
	return same;
}

static void jsonw_strings(void)
{
	bool all = true;
	for (int c = 0; c < 256; c++) {
		char b[3] = {'a', (char)c, 'z'};
		all &= same_as_jansson(b, 3);
	}
	CHECK("jsonw: every single byte escaped as jansson escapes it", all);
	static const char *const edge[] = {
		"\xe2\x82\xac \xf0\x9f\x98\x80", /* valid 3 and 4 byte sequences */
		"\xed\xa0\x80",                  /* a surrogate */
		"\xc0\xaf",                      /* overlong */
		"\xf4\x90\x80\x80",              /* past U+10FFFF */
		"\xe2\x82",                      /* cut short */
		"\xe2\x82" "a\xf0\x9f\x98",      /* cut short twice */
		"\xe2\x80\xa8 / \\ \" \x7f",     /* U+2028, slash, backslash, quote, DEL */
	};
	all = true;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		all &= same_as_jansson(edge[i], strlen(edge[i]));
	CHECK("jsonw: ill-formed UTF-8 replaced as utf8_sanitize does", all);
	all = same_as_jansson("a\0b", 3);
	unsigned seed = 12345;
	char *buf = malloc(4096);
	for (int round = 0; round < 300; round++) {
		size_t n = (size_t)(rand_r(&seed) % 4096);
		for (size_t i = 0; i < n; i++) {
			unsigned r = (unsigned)rand_r(&seed);
			/* bias towards the interesting bytes */
			buf[i] = (char)(r % 4 == 0 ? r >> 8 & 0x1f : r % 4 == 1 ? 0x80 | (r >> 8 & 0x7f) : r >> 8);
		}
		all &= same_as_jansson(buf, n);
	}
	free(buf);
	CHECK("jsonw: random bytes (NUL included) exactly as jansson wrote them", all);
}

static void emit_real(struct jw *w, const void *arg)
{
	jw_real(w, *(const double *)arg, 4);
}

static void jsonw_reals(void)
{
	static const double vals[] = {0, 66.7, 100, 33.3, 0.1, 1e5, 123456, 1e-5, 12.5, 99.9};
	bool all = true;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		char *a = jw_build(emit_real, &vals[i], NULL);
		json_t *r = json_real(vals[i]);
		char *b = json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(4));
		json_decref(r);
		if (!a || !b || strcmp(a, b) != 0) {
			all = false;
			printf("   (%g: jsonw %s, jansson %s)\n", vals[i], a ? a : "NULL", b ? b : "NULL");
		}
		free(a);
		free(b);
	}
	CHECK("jsonw: reals as jansson writes them with JSON_REAL_PRECISION(4)", all);
}

/* The amplification bounded: 1 MiB of \x01 in each stream is 6 MiB each
 * on the wire, in one buffer of exactly the answer's length. */
static void jsonw_result_exact(void)
{
	size_t n = 1u << 20;
	struct ward_result r;
	memset(&r, 0, sizeof(r));
	r.out.data = malloc(n + 1);
	r.err.data = malloc(n + 1);
	memset(r.out.data, 1, n);
	memset(r.err.data, 1, n);
	r.out.len = r.err.len = n;
	r.out.bytes = r.err.bytes = n;
	size_t len = 0;
	struct one_string s = {r.out.data, n};
	char *str = jw_build(emit_one_string, &s, &len);
	CHECK("jsonw: 1 MiB of \\x01 is 6 MiB + 2 on the wire", str && len == 6 * n + 2 && strlen(str) == len);
	free(str);
	char *js = ward_result_to_json(&r);
	size_t jl = js ? strlen(js) : 0;
	CHECK("jsonw: the result is one allocation of exactly its length",
	      js && malloc_usable_size(js) < jl + 4096 + 64 && jl > 12 * n);
	json_t *o = js ? json_loads(js, 0, NULL) : NULL;
	json_t *out = json_object_get(o, "stdout");
	CHECK("jsonw: ... and parses back to the same bytes",
	      json_string_length(out) == n && memcmp(json_string_value(out), r.out.data, n) == 0 &&
		      json_integer_value(json_object_get(o, "stderr_bytes")) == (json_int_t)n);
	json_decref(o);

	/* streamed to a descriptor: the same text and a newline */
	FILE *f = tmpfile();
	int rc = f ? ward_result_to_json_fd(&r, fileno(f)) : -1;
	bool same = false;
	if (rc == 0) {
		char *back = malloc(jl + 2);
		ssize_t got = pread(fileno(f), back, jl + 2, 0);
		same = got == (ssize_t)jl + 1 && memcmp(back, js, jl) == 0 && back[jl] == '\n';
		free(back);
	}
	CHECK("jsonw: streamed to an fd it is the same text and a newline", same);
	if (f)
		fclose(f);
	int p[2];
	void (*was)(int) = signal(SIGPIPE, SIG_IGN);
	CHECK("jsonw: a failed write is an error", pipe(p) == 0 && close(p[0]) == 0 &&
							 ward_result_to_json_fd(&r, p[1]) < 0);
	close(p[1]);
	signal(SIGPIPE, was);
	free(js);
	ward_result_free(&r);
}

void test_jsonw(void)
{
	jsonw_strings();
	jsonw_reals();
	jsonw_result_exact();
}
