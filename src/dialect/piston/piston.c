/* piston.c — Piston v2 (engineer-man/piston 3.1.1, research judge.md §2)
 * as a listener of ward serve (SPEC §16): GET /api/v2/runtimes and POST
 * /api/v2/execute (also under /api/v2/piston/, the public instance's
 * paths), Piston's shapes, status codes and messages, translated into a
 * judge job (SPEC §15) of one test with no expected output, and back.
 *
 * More lenient than Piston where its npm client (piston-client 1.0.2)
 * needs it: the body is JSON whatever its Content-Type; a missing version
 * is "*"; a limit <= 0 or -1 is the default; args as a string is one
 * argument.  --piston-version-fallback lets an exact pin (3.10.0) reach the
 * installed version of the same major (or any).  Package endpoints: 501.
 *
 * Stateless: everything runs on the server's workers. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"
#include "dialect/piston/piston.h"
#include "wire/base64.h"

#define PISTON_MAX_FILES 64
#define PISTON_MAX_ARGS 256
#define PISTON_MAX_NAME 1024

/* Piston's names for the table's languages and the aliases its packages
 * give them; entries not here answer to their own id and aliases. */
static const struct {
	const char *id, *name, *aliases[6];
} names[] = {
	{"c", "c", {"gcc"}},
	{"cpp", "c++", {"cpp", "g++"}},
	{"python", "python", {"py", "py3", "python3"}},
	{"javascript", "javascript", {"node-javascript", "node-js", "js", "node"}},
	{"java", "java", {0}},
	{"go", "go", {"golang"}},
	{"rust", "rust", {"rs"}},
	{"ruby", "ruby", {"ruby3", "rb"}},
	{"php", "php", {0}},
	{"bash", "bash", {"sh"}},
	{"lua", "lua", {0}},
	{"perl", "perl", {"pl"}},
};

static const char *piston_name(const struct ward_language *l)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].id, l->id))
			return names[i].name;
	return l->id;
}

static bool answers_to(const struct ward_language *l, const char *name)
{
	if (!strcmp(piston_name(l), name) || !strcmp(l->id, name))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].id, l->id))
			for (size_t k = 0; k < 6 && names[i].aliases[k]; k++)
				if (!strcmp(names[i].aliases[k], name))
					return true;
	for (char **a = l->aliases; a && *a; a++)
		if (!strcmp(*a, name))
			return true;
	return false;
}

/* A table version as three-part semver: "3.11" -> "3.11.0". */
static void semver3(const char *v, char *out, size_t n)
{
	int dots = 0;
	for (const char *p = v; *p; p++)
		dots += *p == '.';
	snprintf(out, n, "%s%s", v, dots >= 2 ? "" : dots == 1 ? ".0" : ".0.0");
}

static long major_of(const char *s)
{
	while (*s && (*s < '0' || *s > '9'))
		s++;
	return *s ? strtol(s, NULL, 10) : -1;
}

/* The highest enabled entry named name whose version satisfies range; the
 * fallback when none does. */
static const struct ward_language *find_runtime(struct server *s, const char *name, const char *range)
{
	const struct ward_language *best = NULL, *fb = NULL;
	for (size_t i = 0; i < s->langs.n; i++) {
		const struct ward_language *l = &s->langs.v[i];
		if (!l->enabled || !answers_to(l, name))
			continue;
		char v[80];
		semver3(l->version, v, sizeof(v));
		bool bad;
		if (piston_semver_satisfies(v, range, &bad))
			best = l; /* one entry a language in the table */
		else if (s->o.piston_version_fallback == 2 ||
		         (s->o.piston_version_fallback == 1 && major_of(range) == major_of(v)))
			fb = l;
	}
	return best ? best : fb;
}

static char *message_json(const char *msg)
{
	return dialect_msg_json("message", msg);
}

static bool answers_alias(const char *id, const json_t *al)
{
	for (size_t i = 0; i < json_array_size(al); i++)
		if (!strcmp(json_string_value(json_array_get(al, i)), id))
			return true;
	return false;
}

static void answer_runtimes(struct server *s, struct req *r)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < s->langs.n; i++) {
		const struct ward_language *l = &s->langs.v[i];
		if (!l->enabled)
			continue;
		char v[80];
		semver3(l->version, v, sizeof(v));
		json_t *al = json_array();
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (!strcmp(names[k].id, l->id))
				for (size_t m = 0; m < 6 && names[k].aliases[m]; m++)
					json_array_append_new(al, json_string(names[k].aliases[m]));
		if (strcmp(piston_name(l), l->id) && !answers_alias(l->id, al))
			json_array_append_new(al, json_string(l->id));
		json_array_append_new(
			a, json_pack("{s:s,s:s,s:o}", "language", piston_name(l), "version", v, "aliases", al));
	}
	dialect_answer(r, 200, a);
}

static void answer_root(struct server *s, struct req *r)
{
	set_answer(r, 200, message_json("Piston v3.1.1 (ward)"), "application/json");
}

static void answer_packages(struct server *s, struct req *r)
{
	r->code = 501;
	snprintf(r->message, sizeof(r->message),
	         "package management is not served by ward: its languages come from "
	         "its table (ward serve --languages FILE; GET /api/v2/runtimes lists them)");
	set_answer(r, 501, message_json(r->message), "application/json");
}

static void not_found(struct server *s, struct req *r)
{
	snprintf(r->message, sizeof(r->message), "Not Found");
	set_answer(r, 404, message_json("Not Found"), "application/json");
}

/* What an execute request holds while it runs. */
struct exec_doc {
	json_t *root;
	struct ward_file files[PISTON_MAX_FILES];
	unsigned char *owned[PISTON_MAX_FILES];
	char *names[PISTON_MAX_FILES]; /* names given (normalised) or made (file1.code) */
	const char *args[PISTON_MAX_ARGS + 1];
	unsigned char *stdin_buf;
	size_t nfiles;
	struct ward_language source_lang; /* the language run as a source file (run_source) */
};

static void exec_doc_free(struct exec_doc *d)
{
	for (size_t i = 0; i < d->nfiles; i++) {
		free(d->owned[i]);
		free(d->names[i]);
	}
	free(d->stdin_buf);
	json_decref(d->root);
}

/* A 400 in Piston's words. */
static bool bad(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(struct req *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	set_answer(r, 400, message_json(r->message), "application/json");
	return false;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* files[i].name, normalised into d->names[i] as Piston's path.join does
 * ("a/./b" and "a//b" are a/b); a name that escapes the submission's
 * directory (Piston throws: a 500) or names no file ("", ".", "a/..") is
 * a 400 saying so. */
static bool file_name(struct req *r, struct exec_doc *d, size_t i, const char *name)
{
	size_t len = strlen(name);
	if (name[0] == '/' || len > PISTON_MAX_NAME)
		return bad(r, "files[%zu].name '%.100s' %s", i, name,
		           name[0] == '/' ? "escapes the submission's directory: give a relative name without '..'"
		                          : "is too long: give at most 1024 bytes");
	char *out = malloc(len + 1);
	if (!out)
		return bad(r, "out of memory");
	size_t k = 0;
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && !strncmp(p, "..", 2)) {
			free(out);
			return bad(r,
			           "files[%zu].name '%.100s' escapes the submission's directory: give a relative name "
			           "without '..'",
			           i, name);
		}
		if (n > 255) {
			free(out);
			return bad(r, "files[%zu].name '%.100s' has a part longer than 255 bytes", i, name);
		}
		if (n && !(n == 1 && p[0] == '.')) {
			if (k)
				out[k++] = '/';
			memcpy(out + k, p, n);
			k += n;
		}
		p += n + (p[n] == '/');
	}
	out[k] = 0;
	if (!k) {
		free(out);
		return bad(r, "files[%zu].name '%.100s' names no file: give a file's name, such as data/input.txt", i,
		           name);
	}
	d->names[i] = out;
	return true;
}

/* files[i]: its bytes by encoding (utf8, base64, hex; others are utf8). */
static bool decode_file(struct req *r, struct exec_doc *d, size_t i, const json_t *f, const struct ward_language *l,
                        bool *utf8)
{
	const char *content = json_string_value(json_object_get(f, "content"));
	size_t clen = json_string_length(json_object_get(f, "content"));
	const char *enc = json_string_value(json_object_get(f, "encoding"));
	const char *name = json_string_value(json_object_get(f, "name"));
	struct ward_file *wf = &d->files[i];
	*utf8 = !enc || (strcmp(enc, "base64") && strcmp(enc, "hex"));
	if (enc && !strcmp(enc, "base64")) {
		size_t n;
		d->owned[i] = base64_decode(content, clen, &n);
		if (!d->owned[i])
			return bad(r, "files[%zu].content is not valid base64", i);
		wf->data = d->owned[i], wf->len = n;
	} else if (enc && !strcmp(enc, "hex")) {
		if (clen % 2 || !(d->owned[i] = malloc(clen / 2 + 1)))
			return bad(r, "files[%zu].content is not valid hex", i);
		for (size_t k = 0; k < clen / 2; k++) {
			int a = hexval(content[2 * k]), b = hexval(content[2 * k + 1]);
			if (a < 0 || b < 0)
				return bad(r, "files[%zu].content is not valid hex", i);
			d->owned[i][k] = (unsigned char)(a * 16 + b);
		}
		wf->data = d->owned[i], wf->len = clen / 2;
	} else
		wf->data = (const unsigned char *)content, wf->len = clen;
	/* the first file is the main one: the table's name for it (main.c,
	 * Main.java), so that the language's commands find it */
	if (i == 0)
		wf->path = l->source_file;
	else if (name && name[0]) {
		if (!file_name(r, d, i, name))
			return false;
		wf->path = d->names[i];
	} else {
		if (asprintf(&d->names[i], "file%zu.code", i) < 0) {
			d->names[i] = NULL;
			return bad(r, "out of memory");
		}
		wf->path = d->names[i];
	}
	wf->mode = 0644;
	for (size_t k = 0; k < i; k++) {
		const char *a = d->files[k].path, *b = wf->path;
		size_t la = strlen(a), lb = strlen(b);
		if (!strcmp(a, b))
			return bad(
				r,
				"files[%zu].name '%.100s' names the same file as files[%zu]%s: give each file its own "
				"name",
				i, b, k, k ? "" : " (the main file)");
		if ((la < lb && !strncmp(a, b, la) && b[la] == '/') || (lb < la && !strncmp(a, b, lb) && a[lb] == '/'))
			return bad(
				r,
				"files[%zu].name '%.100s' and files[%zu]'s '%.100s' make one a directory of the other: "
				"give a file and a directory different names",
				i, b, k, a);
	}
	return true;
}

/* One limit of Piston's (ms or bytes): 0/absent/null/<=0 keep the default. */
static bool get_limit(struct req *r, const json_t *root, const char *key, double max, double *out)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v) || json_is_false(v))
		return true;
	if (!json_is_number(v))
		return bad(r, "If specified, %s must be a number", key);
	double x = json_number_value(v);
	if (x <= 0)
		return true;
	if (x > max)
		return bad(r, "%s cannot exceed the configured limit of %.0f", key, max);
	*out = x;
	return true;
}

/* Piston's six limits (ms and bytes) over the job's defaults, each within
 * the runner's maxima (a 400 above one). */
static bool decode_limits(struct server *s, struct req *r, struct exec_doc *d, struct ward_judge_job *job)
{
	double maxt = s->o.max.timeout_s * 1000,
	       maxcpu = (s->o.max.cpu_s > 0 ? s->o.max.cpu_s : s->o.max.timeout_s) * 1000;
	double maxmem = (double)s->o.max.memory_mb * 1048576;
	double ct = job->compile_limits.timeout_s * 1000, rt = 3000, ccpu = 0, rcpu = 0, cmem = 0, rmem = 0;
	if (rt > maxt)
		rt = maxt;
	if (!get_limit(r, d->root, "compile_timeout", maxt, &ct) || !get_limit(r, d->root, "run_timeout", maxt, &rt) ||
	    !get_limit(r, d->root, "compile_cpu_time", maxcpu, &ccpu) ||
	    !get_limit(r, d->root, "run_cpu_time", maxcpu, &rcpu) ||
	    !get_limit(r, d->root, "compile_memory_limit", maxmem, &cmem) ||
	    !get_limit(r, d->root, "run_memory_limit", maxmem, &rmem))
		return false;
	job->compile_limits.timeout_s = ct / 1000;
	job->compile_limits.cpu_s = ccpu > 0 ? ccpu / 1000 : 0;
	job->run_limits.l.timeout_s = rt / 1000;
	job->run_limits.l.cpu_s = rcpu > 0 ? rcpu / 1000 : 0;
	if (cmem > 0)
		job->compile_limits.memory_mb = (uint64_t)ceil(cmem / 1048576) < 4 ? 4 : (uint64_t)ceil(cmem / 1048576);
	if (rmem > 0)
		job->run_limits.l.memory_mb = (uint64_t)ceil(rmem / 1048576) < 4 ? 4 : (uint64_t)ceil(rmem / 1048576);
	return true;
}

/* args (an array of strings; a string is one argument, where Piston splits
 * it) and stdin (with the newline Piston adds) into d and the test. */
static bool decode_args_stdin(struct req *r, struct exec_doc *d, struct ward_judge_test *t)
{
	json_t *av = json_object_get(d->root, "args");
	size_t na = 0;
	if (json_is_string(av))
		d->args[na++] = json_string_value(av);
	else if (json_is_array(av)) {
		if (json_array_size(av) > PISTON_MAX_ARGS)
			return bad(r, "args: at most %d arguments", PISTON_MAX_ARGS);
		for (size_t i = 0; i < json_array_size(av); i++) {
			json_t *a = json_array_get(av, i);
			if (!json_is_string(a) && !json_is_number(a))
				return bad(r, "args[%zu] must be a string", i);
			d->args[na++] = json_is_string(a) ? json_string_value(a) : "";
		}
	}
	d->args[na] = NULL;
	/* stdin: Piston adds the newline a line-reading program waits for */
	json_t *sv = json_object_get(d->root, "stdin");
	const char *in = json_is_string(sv) ? json_string_value(sv) : "";
	size_t inl = json_is_string(sv) ? json_string_length(sv) : 0;
	if (inl && in[inl - 1] != '\n') {
		if (!(d->stdin_buf = malloc(inl + 1)))
			return bad(r, "out of memory");
		memcpy(d->stdin_buf, in, inl);
		d->stdin_buf[inl++] = '\n';
		in = (const char *)d->stdin_buf;
	}
	t->stdin_data = (const unsigned char *)in;
	t->stdin_len = inl;
	return true;
}

/* The request into job: false with the 400 set. */
static bool decode_execute(struct server *s, struct req *r, struct exec_doc *d, struct ward_judge_job *job,
                           struct ward_judge_test *t, const struct ward_language **lang, char *range, size_t rn)
{
	json_error_t je;
	d->root = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &je);
	if (!d->root || !json_is_object(d->root))
		return bad(r, "the body must be a JSON object: %s", d->root ? "it is not an object" : je.text);
	json_t *lv = json_object_get(d->root, "language"), *vv = json_object_get(d->root, "version");
	json_t *fv = json_object_get(d->root, "files");
	if (!json_is_string(lv))
		return bad(r, "language is required as a string");
	if (vv && !json_is_null(vv) && !json_is_string(vv))
		return bad(r, "version is required as a string");
	snprintf(range, rn, "%s", json_is_string(vv) ? json_string_value(vv) : "*");
	if (!json_is_array(fv))
		return bad(r, "files is required as an array");
	if (json_array_size(fv) > PISTON_MAX_FILES)
		return bad(r, "files: at most %d files", PISTON_MAX_FILES);
	for (size_t i = 0; i < json_array_size(fv); i++)
		if (!json_is_string(json_object_get(json_array_get(fv, i), "content")))
			return bad(r, "files[%zu].content is required as a string", i);
	*lang = find_runtime(s, json_string_value(lv), range);
	if (!*lang)
		return bad(r, "%s-%s runtime is unknown", json_string_value(lv), range);
	bool any_utf8 = false;
	for (size_t i = 0; i < json_array_size(fv); i++) {
		bool u;
		d->nfiles = i + 1;
		if (!decode_file(r, d, i, json_array_get(fv, i), *lang, &u))
			return false;
		any_utf8 = any_utf8 || u;
	}
	if (!any_utf8)
		return bad(r, "files must include at least one utf8 encoded file");
	dialect_limits(s, *lang, &job->compile_limits, &job->run_limits);
	if (!decode_limits(s, r, d, job) || !decode_args_stdin(r, d, t))
		return false;
	t->id = "run";
	job->lang = *lang;
	if ((*lang)->run_source) {
		/* Piston runs a Java file with the source launcher (its package
		 * has no compile): the file's first class, whatever its name */
		d->source_lang = **lang;
		d->source_lang.compile = NULL;
		d->source_lang.artifacts = NULL;
		d->source_lang.run = (*lang)->run_source;
		job->lang = &d->source_lang;
	}
	job->files = d->files;
	job->nfiles = d->nfiles;
	job->args = (char *const *)d->args;
	job->tests = t;
	job->ntests = 1;
	job->compare = WARD_CMP_EXACT;
	return true;
}

static const char *signame(int sig, char *buf, size_t n)
{
	const char *a = sigabbrev_np(sig);
	if (a)
		snprintf(buf, n, "SIG%s", a);
	else
		snprintf(buf, n, "%d", sig);
	return buf;
}

/* A stage's object: stdout, stderr, output, code, signal, message,
 * status, cpu_time, wall_time, memory. */
static json_t *stage_json(const struct ward_stream *out, const struct ward_stream *err, int code, int sig,
                          const char *status, const char *message, uint64_t cpu_ms, uint64_t wall_ms, uint64_t mem_kb)
{
	char sb[32];
	json_t *o = json_object();
	json_object_set_new(o, "stdout", json_stringn_nocheck(out->data ? out->data : "", out->len));
	json_object_set_new(o, "stderr", json_stringn_nocheck(err->data ? err->data : "", err->len));
	char *both = malloc(out->len + err->len + 1);
	if (both) {
		if (out->len)
			memcpy(both, out->data, out->len);
		if (err->len)
			memcpy(both + out->len, err->data, err->len);
	}
	json_object_set_new(o, "output", both ? json_stringn_nocheck(both, out->len + err->len) : json_string(""));
	free(both);
	json_object_set_new(o, "code", code >= 0 ? json_integer(code) : json_null());
	json_object_set_new(o, "signal", sig ? json_string(signame(sig, sb, sizeof(sb))) : json_null());
	json_object_set_new(o, "message", message ? json_string(message) : json_null());
	json_object_set_new(o, "status", status ? json_string(status) : json_null());
	json_object_set_new(o, "cpu_time", json_integer((json_int_t)cpu_ms));
	json_object_set_new(o, "wall_time", json_integer((json_int_t)wall_ms));
	json_object_set_new(o, "memory", json_integer((json_int_t)(mem_kb * 1000)));
	return o;
}

/* Piston's fields of a run's verdict (research §8.3). */
static json_t *run_json(const struct ward_judge_test_result *t)
{
	char msg[64];
	int code = t->exit_code, sig = t->signal;
	const char *status = NULL, *message = NULL;
	switch (t->verdict) {
	case WARD_V_TLE:
		status = "TO", code = -1, sig = 9;
		message = strstr(t->message, "wall") ? "Time limit exceeded (wall clock)" : "Time limit exceeded";
		break;
	case WARD_V_MLE:
		status = "SG", code = -1, sig = 9, message = "Memory limit exceeded";
		break;
	case WARD_V_OLE:
		status = strstr(t->message, "stderr") == t->message ? "EL" : "OL";
		message = status[0] == 'E' ? "stderr length exceeded" : "stdout length exceeded";
		code = -1, sig = 9;
		break;
	case WARD_V_RE:
		if (sig) {
			status = "SG", code = -1;
			snprintf(msg, sizeof(msg), "Caught fatal signal %d", sig);
		} else {
			status = "RE";
			snprintf(msg, sizeof(msg), "Exited with error status %d", code);
		}
		message = msg;
		break;
	default:
		sig = 0;
		break;
	}
	return stage_json(&t->out, &t->err, code, sig, status, message, t->cpu_ms, t->wall_ms, t->memory_kb);
}

static json_t *compile_json(const struct ward_judge_result *res)
{
	const struct ward_result *c = &res->compile;
	const char *status = NULL, *message = NULL;
	char msg[64];
	int code = c->exit_code, sig = c->signal;
	if (c->timed_out)
		status = "TO", code = -1, sig = 9, message = "Time limit exceeded";
	else if (c->oom_killed)
		status = "SG", code = -1, sig = 9, message = "Memory limit exceeded";
	else if (sig) {
		status = "SG", code = -1;
		snprintf(msg, sizeof(msg), "Caught fatal signal %d", sig);
		message = msg;
	} else if (code) {
		status = "RE";
		snprintf(msg, sizeof(msg), "Exited with error status %d", code);
		message = msg;
	}
	return stage_json(&c->out, &c->err, code, sig, status, message, c->usage.cpu_user_ms + c->usage.cpu_sys_ms,
	                  c->usage.wall_ms, c->usage.max_rss_kb);
}

static void run_execute(struct req *r)
{
	struct server *s = r->srv;
	struct exec_doc *d = calloc(1, sizeof(*d));
	if (!d) {
		set_error(r, 500, "out of memory");
		return;
	}
	struct ward_judge_job job = {0};
	struct ward_judge_test t = {0};
	const struct ward_language *lang = NULL;
	char range[300];
	if (!decode_execute(s, r, d, &job, &t, &lang, range, sizeof(range))) {
		exec_doc_free(d);
		free(d);
		return;
	}
	struct ward_judge_result res;
	dialect_judge(s, &job, &res);
	char v[80];
	semver3(lang->version, v, sizeof(v));
	if (res.verdict == WARD_V_IE) {
		/* Piston: 500 with an empty body; the log keeps why */
		snprintf(r->message, sizeof(r->message), "%s", res.error);
		set_answer(r, 500, strdup(""), "application/json");
		r->sandbox_status = "error";
	} else {
		json_t *o = json_pack("{s:s,s:s}", "language", piston_name(lang), "version", v);
		json_t *cj = res.compiled ? compile_json(&res) : NULL;
		if (cj)
			json_object_set(o, "compile", cj);
		if (res.verdict == WARD_V_CE && cj)
			json_object_set(o, "run", cj); /* Piston: run is compile's copy */
		else if (res.ntests)
			json_object_set_new(o, "run", run_json(&res.tests[0]));
		json_decref(cj);
		dialect_answer(r, 200, o);
		r->sandbox_status = "ok";
	}
	metrics_count_run(s, res.verdict == WARD_V_IE ? WARD_ST_ERROR : WARD_ST_OK, WARD_ISO_SYSTEM,
	                  now_mono() - r->t_admit);
	ward_judge_result_free(&res);
	exec_doc_free(d);
	free(d);
}

/* Authorization: Bearer T or Authorization: T (the public instance's key). */
static const char *piston_token(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (h && !strncasecmp(h, "Bearer ", 7))
		for (h += 7; *h == ' '; h++)
			;
	return h;
}

#define P(p, m, al, ...)                                         \
	{                                                        \
		.path = p, .method = m, .allow = al, __VA_ARGS__ \
	}
static const struct route routes[] = {
	P("/", "GET", "GET, HEAD", .open = true, .answer = answer_root),
	P("/api/v2/runtimes", "GET", "GET, HEAD", .answer = answer_runtimes),
	P("/api/v2/piston/runtimes", "GET", "GET, HEAD", .answer = answer_runtimes),
	P("/api/v2/execute", "POST", "POST", .run = run_execute),
	P("/api/v2/piston/execute", "POST", "POST", .run = run_execute),
	P("/api/v2/packages", "GET", "GET, HEAD, POST, DELETE", .answer = answer_packages),
	P("/api/v2/packages", "POST", "GET, HEAD, POST, DELETE", .answer = answer_packages),
	P("/api/v2/packages", "DELETE", "GET, HEAD, POST, DELETE", .answer = answer_packages),
	P("/api/v2/piston/packages", "GET", "GET, HEAD, POST, DELETE", .answer = answer_packages),
};

const struct api piston_api = {
	.name = "piston",
	.routes = routes,
	.nroutes = sizeof(routes) / sizeof(routes[0]),
	.error_json = message_json,
	.token = piston_token,
	.not_found = not_found,
};
