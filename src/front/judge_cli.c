/* judge_cli.c — `ward judge` and `ward languages` (SPEC §15): thin front
 * ends.  `ward judge --lang L FILE... --tests DIR` makes the POST /judge
 * body from the files and DIR/NAME.in with DIR/NAME.out (or .ans), judges
 * it here (ward_judge) or on a runner (--remote), and prints a line a test
 * and a summary from the answer, whichever made it: exit 0 when every test
 * is AC, 1 when one is not (CE included), 125 when nothing could be judged.
 * ward-net's (the lean `ward` execs it): --remote needs libcurl. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/request.h"
#include "front/judge_cli.h"
#include "front/remote.h"
#include "judge/judge_json.h"
#include "ward_image.h"
#include "ward_judge.h"
#include "wire/base64.h"

#define MAX_INPUT_BYTES (80u << 20)

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ward judge: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return WARD_EXIT_FAILED;
}

/* A whole file (at most max bytes), or NULL with errno set. */
static unsigned char *slurp_file(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		int e = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EISDIR : EFBIG;
		close(fd);
		errno = e;
		return NULL;
	}
	unsigned char *buf = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (buf && n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[n] = 0;
	*len = n;
	return buf;
}

static json_t *b64(const unsigned char *p, size_t n)
{
	char *s = base64_encode(p, n);
	json_t *j = s ? json_string(s) : NULL;
	free(s);
	return j;
}

/* Names of DIR's tests (NAME of NAME.in), in natural order (2 before 10). */
static int natural_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	while (*x && *y) {
		if (isdigit((unsigned char)*x) && isdigit((unsigned char)*y)) {
			char *ex, *ey;
			unsigned long long nx = strtoull(x, &ex, 10), ny = strtoull(y, &ey, 10);
			if (nx != ny)
				return nx < ny ? -1 : 1;
			x = ex;
			y = ey;
			continue;
		}
		if (*x != *y)
			return (unsigned char)*x - (unsigned char)*y;
		x++;
		y++;
	}
	return (unsigned char)*x - (unsigned char)*y;
}

static char **test_names(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	size_t cap = 16;
	char **v = malloc(cap * sizeof(char *));
	*n = 0;
	struct dirent *e;
	while (v && (e = readdir(d))) {
		size_t k = strlen(e->d_name);
		if (k < 4 || strcmp(e->d_name + k - 3, ".in") != 0)
			continue;
		if (*n + 1 >= cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof(char *));
			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = strndup(e->d_name, k - 3);
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof(char *), natural_cmp);
	return v;
}

struct judge_opts {
	const char *lang, *tests_dir, *remote, *token_file, *languages, *compare, *flags, *image, *args;
	const char *files[WARD_MAX_FILES];
	size_t nfiles;
	bool json, stop;
	long parallel;
	json_t *run_limits, *compile_limits;
};

static const char judge_usage[] =
	"usage: ward judge --lang LANG FILE... --tests DIR [options]\n"
	"Builds FILE... once in a sandbox and runs the program against each DIR/NAME.in,\n"
	"comparing its output with DIR/NAME.out (or NAME.ans); one line a test, then a summary.\n"
	"  --lang LANG          a language of the table (ward languages lists them)\n"
	"  --tests DIR          the tests: NAME.in and NAME.out or NAME.ans\n"
	"  --compare MODE       exact, lines (default), tokens or float:EPS\n"
	"  --parallel N         tests at once (default: the number of CPUs)\n"
	"  --flags STR          compile flags (split as shell words)\n"
	"  --args STR           the program's arguments (split as shell words)\n"
	"  --timeout S --cpu S --extra-cpu S --memory MB --pids N --max-output BYTES   a test's limits\n"
	"  --compile-timeout S --compile-memory MB   the compile's\n"
	"  --stop-on-first-failure   skip the tests after the first that fails\n"
	"  --image NAME         run on an image (SPEC §14)\n"
	"  --languages FILE     the language table (default: the installed one)\n"
	"  --json               print the answer (SPEC §15) instead of lines\n"
	"  --remote URL [--token-file FILE]   judge on a ward serve runner\n"
	"Exit: 0 every test AC; 1 one is not (CE included); 125 nothing could be judged.\n";

static int set_limit(json_t **o, const char *key, const char *val)
{
	char *end;
	double d = strtod(val, &end);
	if (!*val || *end || !(d >= 0))
		return fail("--%s: '%s' is not a non-negative number", key, val);
	if (!*o)
		*o = json_object();
	json_object_set_new(*o, key, json_real(d));
	if (strcmp(key, "timeout_s") != 0 && strcmp(key, "cpu_seconds") != 0 && strcmp(key, "extra_cpu_seconds") != 0)
		json_object_set_new(*o, key, json_integer((json_int_t)d));
	return 0;
}

static int parse_judge_args(int argc, char **argv, struct judge_opts *o)
{
	static const struct {
		const char *opt, *key;
		bool compile;
	} lims[] = {
		{"--timeout", "timeout_s", false},
		{"--cpu", "cpu_seconds", false},
		{"--extra-cpu", "extra_cpu_seconds", false},
		{"--memory", "memory_mb", false},
		{"--pids", "pids", false},
		{"--max-output", "max_output_bytes", false},
		{"--fsize", "fsize_mb", false},
		{"--compile-timeout", "timeout_s", true},
		{"--compile-memory", "memory_mb", true},
	};
	o->parallel = sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool took = true;
		if (!strcmp(a, "--json"))
			o->json = true, took = false;
		else if (!strcmp(a, "--stop-on-first-failure"))
			o->stop = true, took = false;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(judge_usage, stdout);
			exit(0);
		} else if (a[0] == '-' && a[1] == '-' && !v)
			return fail("%s needs a value\n%s", a, judge_usage);
		else if (!strcmp(a, "--lang") || !strcmp(a, "--language"))
			o->lang = v;
		else if (!strcmp(a, "--tests"))
			o->tests_dir = v;
		else if (!strcmp(a, "--remote"))
			o->remote = v;
		else if (!strcmp(a, "--token-file"))
			o->token_file = v;
		else if (!strcmp(a, "--languages"))
			o->languages = v;
		else if (!strcmp(a, "--compare"))
			o->compare = v;
		else if (!strcmp(a, "--flags"))
			o->flags = v;
		else if (!strcmp(a, "--args"))
			o->args = v;
		else if (!strcmp(a, "--image"))
			o->image = v;
		else if (!strcmp(a, "--parallel"))
			o->parallel = strtol(v, NULL, 10);
		else {
			took = false;
			size_t k = 0;
			for (; k < sizeof(lims) / sizeof(lims[0]); k++)
				if (!strcmp(a, lims[k].opt)) {
					if (set_limit(lims[k].compile ? &o->compile_limits : &o->run_limits,
					              lims[k].key, v))
						return WARD_EXIT_FAILED;
					i++;
					break;
				}
			if (k < sizeof(lims) / sizeof(lims[0]))
				continue;
			if (a[0] == '-')
				return fail("unknown option %s\n%s", a, judge_usage);
			if (o->nfiles == WARD_MAX_FILES)
				return fail("at most %d files", WARD_MAX_FILES);
			o->files[o->nfiles++] = a;
		}
		if (took)
			i++;
	}
	if (!o->lang || !o->tests_dir || o->nfiles == 0)
		return fail("give --lang, a file and --tests DIR\n%s", judge_usage);
	return 0;
}

/* The POST /judge body. */
/* Test NAME of DIR: DIR/NAME.in as its stdin, DIR/NAME.out (or .ans) as
 * what it must print, both base64. */
static json_t *test_json(const char *dir, const char *name)
{
	char path[4096];
	size_t n;
	json_t *t = json_object();
	json_object_set_new(t, "id", json_string(name));
	snprintf(path, sizeof(path), "%s/%s.in", dir, name);
	unsigned char *in = slurp_file(path, MAX_INPUT_BYTES, &n);
	if (in)
		json_object_set_new(t, "stdin", b64(in, n)),
			json_object_set_new(t, "stdin_encoding", json_string("base64"));
	free(in);
	snprintf(path, sizeof(path), "%s/%s.out", dir, name);
	unsigned char *want = slurp_file(path, MAX_INPUT_BYTES, &n);
	if (!want) {
		snprintf(path, sizeof(path), "%s/%s.ans", dir, name);
		want = slurp_file(path, MAX_INPUT_BYTES, &n);
	}
	if (want) {
		json_object_set_new(t, "expected_stdout", b64(want, n));
		json_object_set_new(t, "expected_stdout_encoding", json_string("base64"));
	}
	free(want);
	return t;
}

static char *job_body(const struct judge_opts *o, char *err, size_t errlen)
{
	json_t *job = json_object(), *files = json_array(), *tests = json_array();
	json_object_set_new(job, "language", json_string(o->lang));
	char *body = NULL;
	for (size_t i = 0; i < o->nfiles; i++) {
		size_t n;
		unsigned char *data = slurp_file(o->files[i], WARD_MAX_FILES_BYTES, &n);
		if (!data) {
			snprintf(err, errlen, "cannot read %s: %s", o->files[i], strerror(errno));
			goto out;
		}
		const char *base = strrchr(o->files[i], '/');
		json_t *f = json_object();
		json_object_set_new(f, "path", json_string(base ? base + 1 : o->files[i]));
		json_object_set_new(f, "content", b64(data, n));
		json_object_set_new(f, "encoding", json_string("base64"));
		json_array_append_new(files, f);
		free(data);
	}
	size_t nt = 0;
	char **names = test_names(o->tests_dir, &nt);
	if (!names || nt == 0) {
		snprintf(err, errlen, "%s: %s (give a directory with NAME.in and NAME.out or NAME.ans)", o->tests_dir,
		         !names ? strerror(errno) : "no NAME.in files");
		for (size_t i = 0; names && i < nt; i++)
			free(names[i]);
		free(names);
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		json_array_append_new(tests, test_json(o->tests_dir, names[i]));
		free(names[i]);
	}
	free(names);
	json_object_set(job, "files", files);
	json_object_set(job, "tests", tests);
	if (o->compare) {
		if (!strncmp(o->compare, "float:", 6))
			json_object_set_new(job, "compare", json_pack("{s:f}", "float", strtod(o->compare + 6, NULL)));
		else
			json_object_set_new(job, "compare", json_string(o->compare));
	}
	json_object_set_new(job, "parallel", json_integer(o->parallel > 0 ? o->parallel : 1));
	json_object_set_new(job, "stop_on_first_failure", json_boolean(o->stop));
	if (o->image)
		json_object_set_new(job, "image", json_string(o->image));
	json_t *c = json_object(), *r = json_object();
	if (o->flags)
		json_object_set_new(c, "flags", json_string(o->flags));
	if (o->compile_limits)
		json_object_set(c, "limits", o->compile_limits);
	if (o->args)
		json_object_set_new(r, "args", json_string(o->args));
	if (o->run_limits)
		json_object_set(r, "limits", o->run_limits);
	json_object_set_new(job, "compile", c);
	json_object_set_new(job, "run", r);
	body = json_dumps(job, JSON_COMPACT);
	if (!body)
		snprintf(err, errlen, "out of memory");
out:
	json_decref(files);
	json_decref(tests);
	json_decref(job);
	return body;
}

/* The table, with only the entry named probed (a judge needs one). */
static int local_language(const char *file, const char *name, const char *image, struct ward_languages *t,
                          struct ward_image_root **root, char *err, size_t errlen)
{
	char buf[4096];
	const char *path = file ? file : ward_languages_default_path(buf, sizeof(buf));
	if (!path) {
		snprintf(err, errlen,
		         "no language table found: install ward (make install), or name one with "
		         "--languages FILE or $WARD_LANGUAGES");
		return -1;
	}
	if (ward_languages_load(path, t, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		struct ward_language *l = &t->v[i];
		bool named = !strcmp(l->id, name);
		for (char **a = l->aliases; !named && a && *a; a++)
			named = !strcmp(*a, name);
		if (!named)
			continue;
		const char *img = image ? image : l->image;
		if (img && ward_image_root_open(NULL, img, root, err, errlen) < 0)
			return -1;
		l->root = *root;
		struct ward_languages one = {l, 1};
		ward_languages_probe(&one, NULL);
		if (!l->enabled) {
			snprintf(err, errlen, "language %s is disabled here: %s", name, l->why);
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "unknown language '%s' (ward languages lists them)", name);
	return -1;
}

static char *judge_local(const struct judge_opts *o, const char *body, int *status, char *err, size_t errlen)
{
	struct ward_languages t;
	struct ward_image_root *root = NULL;
	char *out = NULL;
	memset(&t, 0, sizeof(t));
	if (local_language(o->languages, o->lang, o->image, &t, &root, err, errlen) < 0)
		goto done;
	struct judge_bounds b;
	struct ward_limits max;
	ward_maxima_init(&max);
	judge_bounds_init(&b, &max);
	struct judge_doc doc;
	bool unknown;
	if (judge_from_json(body, strlen(body), &t, &b, &doc, &unknown, err, errlen) < 0)
		goto done;
	doc.job.image = root;
	struct ward_judge_result res;
	ward_judge(&doc.job, &res);
	out = judge_result_to_json(&doc.job, &res, NULL);
	if (!out)
		snprintf(err, errlen, "out of memory");
	*status = 200;
	ward_judge_result_free(&res);
	judge_doc_free(&doc);
done:
	ward_languages_free(&t);
	if (root)
		ward_image_root_close(root);
	return out;
}

static char *read_token_file(const char *file, char *err, size_t errlen)
{
	size_t n;
	unsigned char *t = slurp_file(file, 65536, &n);
	if (!t) {
		snprintf(err, errlen, "--token-file %s: %s", file, strerror(errno));
		return NULL;
	}
	while (n && isspace(t[n - 1]))
		t[--n] = 0;
	return (char *)t;
}

static char *remote(const char *url, const char *token_file, const char *method, const char *path, const char *body,
                    double timeout_s, int *status, char *err, size_t errlen)
{
	char *token = token_file ? read_token_file(token_file, err, errlen) : NULL;
	if (token_file && !token)
		return NULL;
	struct remote_call rc = {.url = url,
	                         .token = token,
	                         .method = method,
	                         .path = path,
	                         .body = body,
	                         .len = body ? strlen(body) : 0,
	                         .timeout_s = timeout_s};
	long code = 0;
	char *ans = NULL;
	size_t alen = 0;
	int r = remote_call(&rc, &code, &ans, &alen, err, errlen);
	free(token);
	if (r < 0)
		return NULL;
	*status = (int)code;
	return ans;
}

/* s as a terminal shows it harmlessly: a control byte (but a newline and
 * a tab) and a C1 control (U+0080-U+009F, which some terminals obey as
 * ESC [) become \xHH, so that a compiler's or a program's output (or a
 * runner's answer) cannot move the cursor, retitle the window or type into
 * the grader's shell. */
static void put_safe(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fprintf(f, "\\x%02x", *++p);
		else if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			putc(*p, f);
	}
}

/* A short field for a line: put_safe's rule, into buf. */
static const char *safe(const char *s, char *buf, size_t n)
{
	FILE *f = fmemopen(buf, n, "w");
	if (!f)
		return "?";
	put_safe(f, s ? s : "?");
	fclose(f);
	return buf;
}

/* One line a test, a summary; the exit status.  Every string of the
 * answer reaches the terminal through put_safe. */
static int print_answer(const char *ans)
{
	char b1[200], b2[200], b3[700];
	json_error_t je;
	json_t *a = json_loads(ans, 0, &je);
	if (!a)
		return fail("the answer is not JSON: %s", je.text);
	const char *verdict = json_string_value(json_object_get(a, "verdict"));
	json_t *c = json_object_get(a, "compile"), *tests = json_object_get(a, "tests"), *t;
	size_t i;
	if (json_is_object(c) && strcmp(json_string_value(json_object_get(c, "verdict")) ?: "", "OK") != 0) {
		printf("compile: %s %s\n", safe(json_string_value(json_object_get(c, "verdict")), b1, sizeof(b1)),
		       safe(json_string_value(json_object_get(c, "message")) ?: "", b3, sizeof(b3)));
		const char *e = json_string_value(json_object_get(c, "stderr"));
		const char *o = json_string_value(json_object_get(c, "stdout"));
		if (o && *o) {
			put_safe(stdout, o);
			fputs(o[strlen(o) - 1] == '\n' ? "" : "\n", stdout);
		}
		if (e && *e) {
			put_safe(stdout, e);
			fputs(e[strlen(e) - 1] == '\n' ? "" : "\n", stdout);
		}
	}
	json_array_foreach(tests, i, t)
	{
		json_t *u = json_object_get(t, "usage");
		const char *msg = json_string_value(json_object_get(t, "message")) ?: "";
		printf("test %-8s %-7s %5lld ms %7.1f MB%s%s\n",
		       safe(json_string_value(json_object_get(t, "id")), b1, sizeof(b1)),
		       safe(json_string_value(json_object_get(t, "verdict")), b2, sizeof(b2)),
		       (long long)json_integer_value(json_object_get(u, "cpu_ms")),
		       (double)json_integer_value(json_object_get(u, "memory_kb")) / 1024, *msg ? "  " : "",
		       safe(msg, b3, sizeof(b3)));
	}
	json_t *s = json_object_get(a, "summary");
	const char *ff = json_string_value(json_object_get(s, "first_failed"));
	printf("%s: %lld/%lld passed%s%s\n", safe(verdict, b1, sizeof(b1)),
	       (long long)json_integer_value(json_object_get(s, "passed")),
	       (long long)json_integer_value(json_object_get(s, "total")), ff ? "; first failed: " : "",
	       ff ? safe(ff, b2, sizeof(b2)) : "");
	const char *e = json_string_value(json_object_get(a, "error"));
	if (e && *e) {
		fputs("ward judge: ", stderr);
		put_safe(stderr, e);
		fputs("\n", stderr);
	}
	int code = !verdict || !strcmp(verdict, "IE") ? WARD_EXIT_FAILED : !strcmp(verdict, "AC") ? 0 : 1;
	json_decref(a);
	return code;
}

int ward_judge_main(int argc, char **argv)
{
	struct judge_opts o = {0};
	if (parse_judge_args(argc, argv, &o)) {
		json_decref(o.run_limits);
		json_decref(o.compile_limits);
		return WARD_EXIT_FAILED;
	}
	char err[600];
	char *body = job_body(&o, err, sizeof(err));
	json_decref(o.run_limits);
	json_decref(o.compile_limits);
	if (!body)
		return fail("%s", err);
	int status = 0;
	char *ans = o.remote ? remote(o.remote, o.token_file, "POST", "/judge", body, 3600, &status, err, sizeof(err))
	                     : judge_local(&o, body, &status, err, sizeof(err));
	free(body);
	if (!ans)
		return fail("%s", err);
	int code;
	if (status != 200) {
		char msg[600] = "";
		json_t *a = json_loads(ans, 0, NULL);
		snprintf(msg, sizeof(msg), "%s", a ? json_string_value(json_object_get(a, "error")) ?: ans : ans);
		json_decref(a);
		code = fail("the runner refused the job (HTTP %d): %s", status, msg);
	} else if (o.json) {
		puts(ans);
		json_t *a = json_loads(ans, 0, NULL);
		const char *v = a ? json_string_value(json_object_get(a, "verdict")) : NULL;
		code = !v || !strcmp(v, "IE") ? WARD_EXIT_FAILED : !strcmp(v, "AC") ? 0 : 1;
		json_decref(a);
	} else {
		code = print_answer(ans);
	}
	free(ans);
	fflush(stdout);
	return code;
}

/* ---------------------------------------------------------------- languages */

static const char languages_usage[] =
	"usage: ward languages [--json] [--all] [--languages FILE] [--remote URL [--token-file FILE]]\n"
	"Lists the languages of the table whose toolchain is here (each version_cmd run in a sandbox);\n"
	"--all lists the disabled ones too, with why.\n";

int ward_languages_main(int argc, char **argv)
{
	bool json = false, all = false;
	const char *file = NULL, *url = NULL, *token_file = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--all"))
			all = true;
		else if (!strcmp(argv[i], "--languages") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "--remote") && i + 1 < argc)
			url = argv[++i];
		else if (!strcmp(argv[i], "--token-file") && i + 1 < argc)
			token_file = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(languages_usage, stdout);
			return 0;
		} else {
			fputs(languages_usage, stderr);
			return WARD_EXIT_FAILED;
		}
	}
	char err[600], buf[4096];
	char *out = NULL;
	if (url) {
		int status = 0;
		out = remote(url, token_file, "GET", all ? "/languages?all=1" : "/languages", NULL, 60, &status, err,
		             sizeof(err));
		if (out && status != 200) {
			fprintf(stderr, "ward languages: the runner answered HTTP %d: %s\n", status, out);
			free(out);
			return WARD_EXIT_FAILED;
		}
	} else {
		const char *path = file ? file : ward_languages_default_path(buf, sizeof(buf));
		struct ward_languages t;
		if (!path) {
			snprintf(err, sizeof(err), "no language table found: name one with --languages FILE");
		} else if (ward_languages_load(path, &t, err, sizeof(err)) == 0) {
			ward_languages_probe(&t, NULL);
			out = judge_languages_to_json(&t, all);
			ward_languages_free(&t);
		}
	}
	if (!out) {
		fprintf(stderr, "ward languages: %s\n", err);
		return WARD_EXIT_FAILED;
	}
	if (json) {
		puts(out);
	} else {
		json_t *a = json_loads(out, 0, NULL), *l;
		size_t i;
		json_array_foreach(a, i, l)
		{
			json_t *en = json_object_get(l, "enabled");
			char b1[200], b2[200], b3[200], b4[700];
			printf("%-12s %-10s %-24s%s%s\n",
			       safe(json_string_value(json_object_get(l, "id")), b1, sizeof(b1)),
			       safe(json_string_value(json_object_get(l, "version")), b2, sizeof(b2)),
			       safe(json_string_value(json_object_get(l, "display")), b3, sizeof(b3)),
			       en && !json_is_true(en) ? "  disabled: " : "",
			       en && !json_is_true(en)
			               ? safe(json_string_value(json_object_get(l, "why")), b4, sizeof(b4))
			               : "");
		}
		json_decref(a);
	}
	free(out);
	return 0;
}
