/* languages.c — the language table (SPEC §15): one JSON file, an array of
 * entries, read once; each entry's version_cmd run in a sandbox at
 * start-up, and the entries whose toolchain is missing disabled (never an
 * error); the lookup by id, alias and version; argv templates filled word
 * by word (never through a shell).
 *
 * Owns struct ward_languages.  Depends on ward_run and jansson only, so the
 * lean `ward` (its doctor) links it. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errf.h"
#include "ward_judge.h"

#ifndef WARD_DATADIR
#define WARD_DATADIR "/usr/local/share/ward"
#endif

const char *ward_languages_default_path(char *buf, size_t n)
{
	const char *env = getenv("WARD_LANGUAGES");
	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return buf;
	}
	char self[4096];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 64);
	if (k > 0) {
		self[k] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			/* bin/ward, libexec/ward/ward-net, build/ward */
			static const char *const rel[] = {"/../share/ward/languages.json",
			                                  "/../../share/ward/languages.json", "/../languages.json"};
			for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
				snprintf(buf, n, "%.*s%s", (int)(slash - self), self, rel[i]);
				if (access(buf, R_OK) == 0)
					return buf;
			}
		}
	}
	snprintf(buf, n, "%s/languages.json", WARD_DATADIR);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

/* ---------------------------------------------------------------- parse */

static void free_strv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static void lang_free(struct ward_language *l)
{
	free(l->id);
	free(l->display);
	free(l->version);
	free(l->source_file);
	free(l->image);
	free(l->package);
	free_strv(l->aliases);
	free_strv(l->compile);
	free_strv(l->run);
	free_strv(l->run_source);
	free_strv(l->version_cmd);
	free_strv(l->env);
	free_strv(l->artifacts);
	free_strv(l->mounts);
	free(l->mount_v);
}

void ward_languages_free(struct ward_languages *t)
{
	for (size_t i = 0; i < t->n; i++)
		lang_free(&t->v[i]);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* A string member (required or not) copied into *out. */
static int get_str(const json_t *o, const char *key, bool required, char **out, const char *at, char *err,
                   size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return base_errf(err, errlen, "%s: \"%s\" is missing (a string)", at, key);
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) || json_string_length(v) > 4096)
		return base_errf(err, errlen, "%s.%s: must be a string (no NUL, at most 4096 bytes)", at, key);
	if (!(*out = strdup(json_string_value(v))))
		return base_errf(err, errlen, "out of memory");
	return 0;
}

/* An array of strings copied into a NULL-terminated array. */
static int get_strv(const json_t *o, const char *key, bool required, char ***out, const char *at, char *err,
                    size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return base_errf(err, errlen, "%s: \"%s\" is missing (an array of strings)", at, key);
		return 0;
	}
	size_t n = json_array_size(v);
	if (!json_is_array(v) || n > WARD_LANG_MAX_ARGV || (required && n == 0))
		return base_errf(err, errlen, "%s.%s: must be an array of 1 to %d strings", at, key,
		                 WARD_LANG_MAX_ARGV);
	char **a = calloc(n + 1, sizeof(char *));
	if (!a)
		return base_errf(err, errlen, "out of memory");
	*out = a;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(v, i);
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s))
			return base_errf(err, errlen, "%s.%s[%zu]: must be a string without NUL", at, key, i);
		if (!(a[i] = strdup(json_string_value(s))))
			return base_errf(err, errlen, "out of memory");
	}
	return 0;
}

static int get_env(const json_t *o, struct ward_language *l, const char *at, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, "env");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v) || json_object_size(v) > WARD_LANG_MAX_ARGV)
		return base_errf(err, errlen, "%s.env: must be an object of at most %d strings", at,
		                 WARD_LANG_MAX_ARGV);
	l->env = calloc(json_object_size(v) + 1, sizeof(char *));
	if (!l->env)
		return base_errf(err, errlen, "out of memory");
	size_t i = 0;
	const char *k;
	json_t *s;
	json_object_foreach(v, k, s)
	{
		if (!json_is_string(s) || !*k || strchr(k, '='))
			return base_errf(err, errlen, "%s.env.%s: must be a string, its name non-empty without '='", at,
			                 k);
		if (asprintf(&l->env[i++], "%s=%s", k, json_string_value(s)) < 0) {
			l->env[i - 1] = NULL;
			return base_errf(err, errlen, "out of memory");
		}
	}
	return 0;
}

static int get_limits(const json_t *o, const char *key, struct ward_lang_limits *ll, const char *at, char *err,
                      size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return base_errf(err, errlen, "%s.limits.%s: must be an object", at, key);
	static const char *const names[] = {"timeout_s", "cpu_seconds", "memory_mb", "pids", "tmp_size_mb"};
	for (size_t i = 0; i < 5; i++) {
		json_t *x = json_object_get(v, names[i]);
		if (!x || json_is_null(x))
			continue;
		double d = json_number_value(x);
		if (!json_is_number(x) || !(d > 0) || d > 1e6)
			return base_errf(err, errlen, "%s.limits.%s.%s: must be a positive number", at, key, names[i]);
		switch (i) {
		case 0:
			ll->timeout_s = d;
			break;
		case 1:
			ll->cpu_s = d;
			break;
		case 2:
			ll->memory_mb = (uint64_t)d;
			break;
		case 3:
			ll->pids = (uint32_t)d;
			break;
		case 4:
			ll->tmp_size_mb = (uint64_t)d;
			break;
		}
	}
	return 0;
}

/* A name usable as an id, an alias or a source file: [A-Za-z0-9_.+#-], not
 * "." or "..", at most 64 bytes. */
static bool plain_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.+#-", *p))
			return false;
	return true;
}

static int parse_entry(const json_t *o, struct ward_language *l, const char *at, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return base_errf(err, errlen, "%s: must be an object", at);
	if (get_str(o, "id", true, &l->id, at, err, errlen) < 0 ||
	    get_str(o, "display", false, &l->display, at, err, errlen) < 0 ||
	    get_str(o, "version", false, &l->version, at, err, errlen) < 0 ||
	    get_str(o, "source_file", true, &l->source_file, at, err, errlen) < 0 ||
	    get_str(o, "image", false, &l->image, at, err, errlen) < 0 ||
	    get_str(o, "package", false, &l->package, at, err, errlen) < 0 ||
	    get_strv(o, "aliases", false, &l->aliases, at, err, errlen) < 0 ||
	    get_strv(o, "compile", false, &l->compile, at, err, errlen) < 0 ||
	    get_strv(o, "run", true, &l->run, at, err, errlen) < 0 ||
	    get_strv(o, "run_source", false, &l->run_source, at, err, errlen) < 0 ||
	    get_strv(o, "version_cmd", true, &l->version_cmd, at, err, errlen) < 0 ||
	    get_strv(o, "artifacts", false, &l->artifacts, at, err, errlen) < 0 ||
	    get_strv(o, "mounts", false, &l->mounts, at, err, errlen) < 0 || get_env(o, l, at, err, errlen) < 0)
		return -1;
	for (char **m = l->mounts; m && *m; m++, l->nmounts++)
		if ((*m)[0] != '/' || strstr(*m, "/../") || strstr(*m, "/./"))
			return base_errf(err, errlen, "%s.mounts: \"%s\" must be an absolute host path", at, *m);
	if (l->nmounts) {
		l->mount_v = calloc(l->nmounts, sizeof(*l->mount_v));
		if (!l->mount_v)
			return base_errf(err, errlen, "out of memory");
		for (size_t i = 0; i < l->nmounts; i++)
			l->mount_v[i] = (struct ward_mount){.host_path = l->mounts[i], .read_only = true};
	}
	json_t *lim = json_object_get(o, "limits");
	if (lim && !json_is_null(lim) && !json_is_object(lim))
		return base_errf(err, errlen, "%s.limits: must be an object {\"compile\": {...}, \"run\": {...}}", at);
	if (lim && (get_limits(lim, "compile", &l->compile_limits, at, err, errlen) < 0 ||
	            get_limits(lim, "run", &l->run_limits, at, err, errlen) < 0))
		return -1;
	if (!plain_name(l->id))
		return base_errf(err, errlen, "%s.id: \"%s\" must be 1 to 64 of [A-Za-z0-9_.+#-]", at, l->id);
	for (char **a = l->aliases; a && *a; a++)
		if (!plain_name(*a))
			return base_errf(err, errlen, "%s.aliases: \"%s\" must be 1 to 64 of [A-Za-z0-9_.+#-]", at, *a);
	if (!plain_name(l->source_file))
		return base_errf(err, errlen, "%s.source_file: \"%s\" must be a plain file name ([A-Za-z0-9_.+#-])", at,
		                 l->source_file);
	if (l->compile && l->compile[0] == NULL)
		return base_errf(err, errlen, "%s.compile: must not be empty (leave it out for an interpreter)", at);
	if (!l->version && !(l->version = strdup("")))
		return base_errf(err, errlen, "out of memory");
	if (!l->display && !(l->display = strdup(l->id)))
		return base_errf(err, errlen, "out of memory");
	return 0;
}

int ward_languages_parse(const char *json, size_t len, struct ward_languages *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return base_errf(err, errlen, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
	int rc = -1;
	size_t n = json_array_size(root);
	if (!json_is_array(root) || n == 0 || n > WARD_LANG_MAX) {
		base_errf(err, errlen, "the table must be a JSON array of 1 to %d entries", WARD_LANG_MAX);
		goto out;
	}
	t->v = calloc(n, sizeof(*t->v));
	if (!t->v) {
		base_errf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char at[32];
		snprintf(at, sizeof(at), "entry %zu", i);
		t->n = i + 1;
		if (parse_entry(json_array_get(root, i), &t->v[i], at, err, errlen) < 0)
			goto out;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->v[j].id, t->v[i].id)) {
				base_errf(err, errlen, "%s: id \"%s\" is used twice", at, t->v[i].id);
				goto out;
			}
	}
	rc = 0;
out:
	json_decref(root);
	if (rc < 0)
		ward_languages_free(t);
	return rc;
}

int ward_languages_load(const char *path, struct ward_languages *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return base_errf(err, errlen, "cannot open the language table %s: %s (name one with --languages FILE)",
		                 path, strerror(errno));
	size_t cap = WARD_LANG_MAX_TABLE_BYTES + 1, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return base_errf(err, errlen, "out of memory");
	}
	ssize_t k;
	while (len < cap && (k = read(fd, buf + len, cap - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return base_errf(err, errlen, "reading the language table %s: %s", path, strerror(e));
		}
		len += (size_t)k;
	}
	close(fd);
	if (len > WARD_LANG_MAX_TABLE_BYTES) {
		free(buf);
		return base_errf(err, errlen, "the language table %s is larger than %u bytes", path,
		                 WARD_LANG_MAX_TABLE_BYTES);
	}
	char e2[400];
	int rc = ward_languages_parse(buf, len, t, e2, sizeof(e2));
	free(buf);
	if (rc < 0)
		base_errf(err, errlen, "the language table %s: %s", path, e2);
	return rc;
}

/* ---------------------------------------------------------------- probe */

/* The first "N.N[.N...]" in s, into out. */
static bool find_version(const char *s, size_t len, char *out, size_t n)
{
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]) || (i && (isdigit((unsigned char)s[i - 1]) || s[i - 1] == '.')))
			continue;
		size_t j = i, dots = 0;
		while (j < len && (isdigit((unsigned char)s[j]) ||
		                   (s[j] == '.' && j + 1 < len && isdigit((unsigned char)s[j + 1])))) {
			dots += s[j] == '.';
			j++;
		}
		if (dots && j - i < n) {
			memcpy(out, s + i, j - i);
			out[j - i] = 0;
			return true;
		}
		i = j;
	}
	return false;
}

/* One line of a run's stderr (or stdout), for a message. */
static void first_line(const struct ward_stream *st, char *out, size_t n)
{
	size_t k = st->data ? strcspn(st->data, "\n") : 0;
	if (k >= n)
		k = n - 1;
	memcpy(out, st->data ? st->data : "", k);
	out[k] = 0;
}

static void probe_one(struct ward_language *l, struct ward_pool *pool)
{
	if (l->image && !l->root) {
		snprintf(l->why, sizeof(l->why),
		         "image %s is not available (offer it: ward serve --image %s; import it: "
		         "ward image import)",
		         l->image, l->image);
		return;
	}
	struct ward_request q;
	ward_request_init(&q);
	q.argv = l->version_cmd;
	q.env = l->env;
	q.image = l->root;
	q.mounts = l->mount_v;
	q.nmounts = l->nmounts;
	q.capture = true;
	q.limits.timeout_s = 30;
	q.limits.cpu_s = 30;
	q.limits.memory_mb = 2048;
	q.limits.pids = 256;
	q.limits.output_limit = 65536;
	struct ward_result r;
	int rc = ward_run_pooled(pool, &q, &r);
	const char *fix = l->package ? l->package : l->id;
	if (rc < 0 || r.status == WARD_ST_ERROR) {
		snprintf(l->why, sizeof(l->why), "version_cmd could not run: %.160s", r.error);
	} else if (r.status != WARD_ST_OK) {
		char line[120];
		first_line(r.err.len ? &r.err : &r.out, line, sizeof(line));
		snprintf(l->why, sizeof(l->why), "%s failed (exit %d: %s); install it (apt-get install %s)",
		         l->version_cmd[0], r.exit_code, line[0] ? line : "no output", fix);
	} else {
		char v[64];
		if (find_version(r.out.data, r.out.len, v, sizeof(v)) ||
		    find_version(r.err.data, r.err.len, v, sizeof(v))) {
			char *nv = strdup(v);
			if (nv) {
				free(l->version);
				l->version = nv;
			}
		}
		l->enabled = true;
		l->why[0] = 0;
	}
	ward_result_free(&r);
}

struct probe_ctx {
	struct ward_languages *t;
	struct ward_pool *pool;
	pthread_mutex_t lock;
	size_t next;
};

static void *probe_thread(void *arg)
{
	struct probe_ctx *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		size_t i = c->next++;
		pthread_mutex_unlock(&c->lock);
		if (i >= c->t->n)
			return NULL;
		probe_one(&c->t->v[i], c->pool);
	}
}

#define PROBE_THREADS 4
void ward_languages_probe(struct ward_languages *t, struct ward_pool *pool)
{
	for (size_t i = 0; i < t->n; i++) {
		t->v[i].enabled = false;
		snprintf(t->v[i].why, sizeof(t->v[i].why), "not probed");
	}
	struct probe_ctx c = {.t = t, .pool = pool, .next = 0};
	pthread_mutex_init(&c.lock, NULL);
	pthread_t th[PROBE_THREADS];
	size_t started = 0;
	for (; started < PROBE_THREADS && started + 1 < t->n; started++)
		if (pthread_create(&th[started], NULL, probe_thread, &c) != 0)
			break;
	probe_thread(&c); /* this thread too (and all of them, when none started) */
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&c.lock);
}

/* ---------------------------------------------------------------- lookup */

static bool version_matches(const char *have, const char *want)
{
	if (!want || !*want || !strcmp(want, "*") || !strcmp(want, "x"))
		return true;
	size_t n = strlen(want);
	/* "3.11" matches 3.11.2, not 3.110 */
	return strncmp(have, want, n) == 0 && (have[n] == 0 || have[n] == '.');
}

const struct ward_language *ward_language_find(const struct ward_languages *t, const char *name, const char *version)
{
	if (!t || !name)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct ward_language *l = &t->v[i];
		bool named = !strcmp(l->id, name);
		for (char **a = l->aliases; !named && a && *a; a++)
			named = !strcmp(*a, name);
		if (named && l->enabled && version_matches(l->version, version))
			return l;
	}
	return NULL;
}

/* ---------------------------------------------------------------- argv */

static const char *extension(const char *name)
{
	const char *dot = strrchr(name, '.');
	const char *slash = strrchr(name, '/');
	return dot && (!slash || dot > slash) ? dot : "";
}

char **ward_judge_argv(char *const *tmpl, const char *main_file, char *const *sources, char *const *flags,
                       char *const *args)
{
	size_t cap = 1;
	for (char *const *p = tmpl; p && *p; p++)
		cap++;
	for (char *const *p = sources; p && *p; p++)
		cap++;
	for (char *const *p = flags; p && *p; p++)
		cap++;
	for (char *const *p = args; p && *p; p++)
		cap++;
	char **v = calloc(cap + 1, sizeof(char *));
	if (!v)
		return NULL;
	size_t n = 0;
	const char *ext = extension(main_file);
	for (char *const *p = tmpl; p && *p; p++) {
		if (!strcmp(*p, "{source}")) {
			v[n++] = (char *)main_file;
		} else if (!strcmp(*p, "{sources}")) {
			for (char *const *s = sources; s && *s; s++)
				if (!strcmp(extension(*s), ext))
					v[n++] = *s;
		} else if (!strcmp(*p, "{flags}")) {
			for (char *const *s = flags; s && *s; s++)
				v[n++] = *s;
		} else if (!strcmp(*p, "{args}")) {
			for (char *const *s = args; s && *s; s++)
				v[n++] = *s;
		} else {
			v[n++] = *p;
		}
	}
	if (n == 0) {
		free(v);
		errno = EINVAL;
		return NULL;
	}
	return v;
}
