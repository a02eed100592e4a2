/* e2b_templates.c — E2B's template build API (SPEC §19; research
 * e2b-round2.md §6) on `ward image build`: POST /v3/templates makes a
 * template and a build in "waiting"; GET /templates/T/files/HASH answers an
 * upload link on this listener (PUT /ward/template-files/T.HASH?token=K,
 * K the template's own random token: the SDK sends no API key there);
 * POST /v2/templates/T/builds/B queues the steps; one build worker (never
 * an I/O thread) turns them into a Dockerfile, the uploads into its
 * context, and runs `ward image build` (a process of its own) into the
 * store as "e2b-ALIAS:TAG"; GET .../status answers its state and its
 * log from logsOffset; GET /templates/aliases/NAME says whether it exists.
 * A ready build's root is opened once and kept for the server's life, so
 * Sandbox.create('ALIAS') starts on it (e2b_sandbox.c asks tm_find),
 * sized by the build's cpuCount and memoryMB.
 *
 * Bounds: TM_MAX templates (TM_PER_OWNER a caller), TM_BUILDS_MAX builds kept (the oldest finished
 * one goes), TM_QUEUE_MAX queued, TM_LOG_MAX log entries a build, an upload
 * within --max-body, TM_FILES_MAX a template and TM_FILES_TOTAL bytes in all, an unpacked upload within
 * TM_UNPACK_MAX bytes and TM_UNPACK_ENTRIES entries. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"
#include "ward_image.h"

#define TM_MAX 64
#define TM_PER_OWNER 16
#define TM_FILES_TOTAL (1ULL << 30) /* uploads kept, all templates */
#define TM_BUILDS_MAX 128
#define TM_QUEUE_MAX 16
#define TM_LOG_MAX 2000
#define TM_LINE_MAX 2000
#define TM_FILES_MAX 64
#define TM_UNPACK_MAX (1ULL << 30)
#define TM_UNPACK_ENTRIES 100000
#define TM_STEPS_MAX 512
#define TM_DOCKERFILE_MAX (1u << 20)

enum tm_state { TB_WAITING, TB_QUEUED, TB_BUILDING, TB_READY, TB_ERROR };
static const char *const state_name[] = {"waiting", "waiting", "building", "ready", "error"};

struct tm_build {
	char id[40], tid[40];
	char alias[64], tag[64];
	char owner[96];
	enum tm_state state;
	unsigned cpu, mem;
	json_t *start; /* the trigger's body */
	json_t *log;   /* [{timestamp, level, message}], at most TM_LOG_MAX */
	char reason[1300];
	char step[24];                /* reason.step: "base", "finalize" or the step's index */
	struct ward_image_root *root; /* ready: kept until the server stops */
	double done_rt;
	struct tm_build *next, *qnext;
};

struct tm_tmpl {
	char tid[40], alias[64], owner[96];
	char ukey[40]; /* its upload links' token (128 random bits in hex) */
	unsigned nfiles;
	struct tm_build *ready; /* the last ready build, per tag is the latest of all */
};

struct e2b_tm {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t worker;
	bool worker_up, stop;
	pid_t child;   /* the build running (ward image build), 0: none */
	char dir[256]; /* uploads and build contexts: removed at stop */
	struct tm_tmpl t[TM_MAX];
	size_t nt;
	struct tm_build *builds; /* newest first */
	size_t nbuilds;
	struct tm_build *qhead, *qtail;
	size_t nq;
	uint64_t file_bytes; /* uploads kept, in all */
};

/* ---- records ---- */

static struct tm_tmpl *tmpl_by_id(struct e2b_tm *m, const char *tid)
{
	for (size_t i = 0; i < m->nt; i++)
		if (!strcmp(m->t[i].tid, tid))
			return &m->t[i];
	return NULL;
}

static struct tm_tmpl *tmpl_by_alias(struct e2b_tm *m, const char *alias)
{
	for (size_t i = 0; i < m->nt; i++)
		if (!strcmp(m->t[i].alias, alias))
			return &m->t[i];
	return NULL;
}

static struct tm_build *build_by_id(struct e2b_tm *m, const char *tid, const char *bid)
{
	for (struct tm_build *b = m->builds; b; b = b->next)
		if (!strcmp(b->id, bid) && !strcmp(b->tid, tid))
			return b;
	return NULL;
}

/* A log entry (under m->lock). */
static void tm_log(struct tm_build *b, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tm_log(struct tm_build *b, const char *level, const char *fmt, ...)
{
	size_t n = json_array_size(b->log);
	if (n > TM_LOG_MAX)
		return;
	char msg[TM_LINE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n == TM_LOG_MAX) {
		snprintf(msg, sizeof(msg), "(the log is cut here: a build keeps %d lines)", TM_LOG_MAX);
		level = "warn";
	}
	char ts[40];
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	struct tm tmv;
	gmtime_r(&t.tv_sec, &tmv);
	size_t k = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tmv);
	snprintf(ts + k, sizeof(ts) - k, ".%03ldZ", t.tv_nsec / 1000000);
	json_t *e = json_pack("{s:s,s:s,s:s%}", "timestamp", ts, "level", level, "message", msg, strlen(msg));
	if (e)
		json_array_append_new(b->log, e);
}

static void build_free(struct tm_build *b)
{
	json_decref(b->start);
	json_decref(b->log);
	if (b->root)
		ward_image_root_close(b->root);
	free(b);
}

/* Room for one more build: the oldest finished one that no template offers
 * goes (under m->lock).  false when every one is waiting or building. */
static bool builds_room(struct e2b_tm *m)
{
	if (m->nbuilds < TM_BUILDS_MAX)
		return true;
	struct tm_build **victim = NULL;
	for (struct tm_build **p = &m->builds; *p; p = &(*p)->next) {
		struct tm_build *b = *p;
		bool offered = false;
		for (size_t i = 0; i < m->nt; i++)
			offered |= m->t[i].ready == b;
		if ((b->state == TB_ERROR || (b->state == TB_READY && !offered)) && !b->root)
			victim = p;
	}
	if (!victim)
		return false;
	struct tm_build *b = *victim;
	*victim = b->next;
	build_free(b);
	m->nbuilds--;
	return true;
}

static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static bool hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* ---- POST /v3/templates ---- */

enum MHD_Result tm_create(struct ereq *q)
{
	struct e2b_tm *m = q->e->tm;
	json_error_t je;
	json_t *b = json_loadb(q->body ? q->body : "", q->len, 0, &je);
	json_t *nm = json_object_get(b, "name");
	if (!json_is_string(nm))
		nm = json_object_get(b, "alias");
	if (!json_is_string(nm)) {
		json_decref(b);
		return e2b_api_error(q, 400, "a template wants its \"name\" (Template.build(t, 'NAME'))");
	}
	char alias[64] = "", tag[64] = "default";
	const char *name = json_string_value(nm), *colon = strchr(name, ':');
	size_t an = colon ? (size_t)(colon - name) : strlen(name);
	if (an < sizeof(alias))
		memcpy(alias, name, an), alias[an] = 0;
	if (colon)
		snprintf(tag, sizeof(tag), "%.63s", colon + 1);
	json_t *tags = json_object_get(b, "tags");
	if (!colon && json_is_string(json_array_get(tags, 0)))
		snprintf(tag, sizeof(tag), "%.63s", json_string_value(json_array_get(tags, 0)));
	json_t *cpu = json_object_get(b, "cpuCount"), *mem = json_object_get(b, "memoryMB");
	unsigned c = json_is_integer(cpu) ? (unsigned)json_integer_value(cpu) : 2;
	unsigned mm = json_is_integer(mem) ? (unsigned)json_integer_value(mem) : q->s->o.e2b_memory_mb;
	if (!name_ok(alias, 63) || !name_ok(tag, 63) || (cpu && !json_is_integer(cpu)) ||
	    (mem && !json_is_integer(mem)) || c < 1 || c > 64 || mm < 1) {
		json_decref(b);
		return e2b_api_error(q, 400,
		                     "name: NAME[:TAG], each [a-z0-9][a-z0-9._-] up to 63; cpuCount 1 to 64, "
		                     "memoryMB at least 1");
	}
	json_decref(b);
	if (mm > q->s->o.max.memory_mb)
		mm = (unsigned)q->s->o.max.memory_mb;
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_alias(m, alias);
	if (t && strcmp(t->owner, q->who)) {
		pthread_mutex_unlock(&m->lock);
		return e2b_api_error(q, 409, "the template name '%s' is taken by another team", alias);
	}
	size_t mine = 0;
	for (size_t i = 0; i < m->nt; i++)
		mine += !strcmp(m->t[i].owner, q->who);
	if (!t && (m->nt == TM_MAX || mine >= TM_PER_OWNER)) {
		pthread_mutex_unlock(&m->lock);
		return e2b_api_error(q, 429,
		                     "this runner keeps %d templates, %d a client, and has no room for another "
		                     "of yours: rebuild one of your templates under its name",
		                     TM_MAX, TM_PER_OWNER);
	}
	struct tm_build *nb = builds_room(m) ? calloc(1, sizeof(*nb)) : NULL;
	json_t *log = nb ? json_array() : NULL;
	if (!log) {
		free(nb);
		pthread_mutex_unlock(&m->lock);
		return e2b_api_error(q, 503, "this runner holds %d template builds, none finished: retry later",
		                     TM_BUILDS_MAX);
	}
	if (!t) {
		t = &m->t[m->nt++];
		memset(t, 0, sizeof(*t));
		e2b_hex_random(t->tid, 10);
		e2b_hex_random(t->ukey, 16);
		snprintf(t->alias, sizeof(t->alias), "%s", alias);
		snprintf(t->owner, sizeof(t->owner), "%s", q->who);
	}
	e2b_hex_random(nb->id, 16);
	snprintf(nb->tid, sizeof(nb->tid), "%s", t->tid);
	snprintf(nb->alias, sizeof(nb->alias), "%s", alias);
	snprintf(nb->tag, sizeof(nb->tag), "%s", tag);
	snprintf(nb->owner, sizeof(nb->owner), "%s", q->who);
	nb->cpu = c;
	nb->mem = mm;
	nb->log = log;
	nb->next = m->builds;
	m->builds = nb;
	m->nbuilds++;
	json_t *v = json_pack("{s:s,s:s,s:[s],s:[s],s:[s],s:b}", "templateID", t->tid, "buildID", nb->id, "names",
	                      alias, "aliases", alias, "tags", tag, "public", 0);
	pthread_mutex_unlock(&m->lock);
	log_event(q->s, "e2b-template-new", "%s (%s:%s) build %s for %s", nb->tid, alias, tag, nb->id, q->who);
	return e2b_answer_json(q, 202, v);
}

/* a and b (n bytes each) equal, in time that does not depend on where they differ */
static int ct_differ(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d;
}

/* ---- the files: GET /templates/T/files/HASH, PUT /ward/template-files/T.HASH?token=K ---- */

static void files_path(struct e2b_tm *m, const char *tid, const char *hash, char *out, size_t n)
{
	snprintf(out, n, "%s/files/%s/%s", m->dir, tid, hash);
}

static enum MHD_Result files_link(struct ereq *q, const char *tid, const char *hash)
{
	struct e2b_tm *m = q->e->tm;
	if (!hex64(hash))
		return e2b_api_error(q, 400, "a files hash is 64 lowercase hex digits");
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_id(m, tid);
	bool mine = t && !strcmp(t->owner, q->who);
	char ukey[40];
	snprintf(ukey, sizeof(ukey), "%s", mine ? t->ukey : "");
	pthread_mutex_unlock(&m->lock);
	if (!mine)
		return e2b_api_error(q, 404, "template '%s' not found", tid);
	char path[512];
	files_path(m, tid, hash, path, sizeof(path));
	struct stat st;
	bool present = stat(path, &st) == 0;
	const char *host = e2b_header(q, "Host");
	char url[700];
	/* the link carries its own credential: the SDK sends no API key with it */
	snprintf(url, sizeof(url), "http://%.300s/ward/template-files/%s.%s?token=%s", host ? host : "localhost", tid,
	         hash, ukey);
	json_t *h = json_object();
	return e2b_answer_json(
		q, 201, json_pack("{s:b,s:s,s:o}", "present", present, "url", url, "headers", h ? h : json_object()));
}

enum MHD_Result tm_upload(struct ereq *q)
{
	struct e2b_tm *m = q->e->tm;
	char tid[40];
	const char *dot = strchr(q->arg, '.');
	if (!dot || (size_t)(dot - q->arg) >= sizeof(tid) || !hex64(dot + 1))
		return e2b_api_error(q, 404, "no such upload link");
	memcpy(tid, q->arg, (size_t)(dot - q->arg));
	tid[dot - q->arg] = 0;
	const char *tok = e2b_query(q, "token");
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_id(m, tid);
	bool mine = t && tok && strlen(tok) == strlen(t->ukey) && !ct_differ(tok, t->ukey, strlen(tok));
	bool room = t && t->nfiles < TM_FILES_MAX, bytes = m->file_bytes + q->len <= TM_FILES_TOTAL;
	if (mine && room && bytes) {
		t->nfiles++;
		m->file_bytes += q->len; /* never given back while the server runs: a bound, not a gauge */
	}
	pthread_mutex_unlock(&m->lock);
	if (!mine)
		return e2b_api_error(q, 404, "no such upload link");
	if (!room)
		return e2b_api_error(q, 413, "a template holds %d uploads at most", TM_FILES_MAX);
	if (!bytes)
		return e2b_api_error(q, 507, "this runner holds %llu bytes of template uploads already",
		                     (unsigned long long)TM_FILES_TOTAL);
	char path[512], tmp[540];
	files_path(m, tid, dot + 1, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/files/%s", m->dir, tid);
	mkdir(tmp, 0700);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, gettid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && (q->len == 0 || write(fd, q->body, q->len) == (ssize_t)q->len);
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return e2b_api_error(q, 507, "cannot keep the upload: %s", strerror(errno));
	}
	return e2b_answer(q, 200, NULL, NULL, 0);
}

/* ---- the steps as a Dockerfile ---- */

struct df {
	char *p;
	size_t len, cap;
	bool bad;
	unsigned lines;                     /* lines written */
	int step;                           /* the SDK's step being written (-1: ward's own lines) */
	int of_line[4 * TM_STEPS_MAX + 16]; /* a line's step (line 1 at [1]) */
};

static void df_put(struct df *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void df_put(struct df *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0 || d->len + (size_t)n + 1 > TM_DOCKERFILE_MAX) {
		d->bad = true;
		free(s);
		return;
	}
	if (d->len + (size_t)n + 1 > d->cap) {
		size_t cap = (d->len + (size_t)n + 1) * 2;
		char *np = realloc(d->p, cap);
		if (!np) {
			d->bad = true;
			free(s);
			return;
		}
		d->p = np;
		d->cap = cap;
	}
	memcpy(d->p + d->len, s, (size_t)n + 1);
	d->len += (size_t)n;
	for (char *nl = s; (nl = strchr(nl, '\n')); nl++)
		if (++d->lines < sizeof(d->of_line) / sizeof(d->of_line[0]))
			d->of_line[d->lines] = d->step;
	free(s);
}

/* s as a JSON string (the Dockerfile's exec form takes JSON). */
static char *jq(const char *s)
{
	json_t *v = json_string(s);
	char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	return t;
}

/* One word of a Dockerfile line: no blank, quote, '$', '\\' or control byte. */
static bool word_ok(const char *s)
{
	if (!*s)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '\'' || *p == '$' || *p == '\\' || *p == 0x7f)
			return false;
	return true;
}

/* An install step of the SDK (aptInstall, pipInstall, npmInstall,
 * bunInstall): its name, or NULL. */
static const char *install_of(const char *cmd)
{
	if (!strncmp(cmd, "apt-get update && ", 18))
		return "aptInstall";
	if (!strncmp(cmd, "pip install", 11))
		return "pipInstall";
	if (!strncmp(cmd, "npm install", 11))
		return "npmInstall";
	if (!strncmp(cmd, "bun install", 11) || !strncmp(cmd, "bun add", 7))
		return "bunInstall";
	return NULL;
}

/* The base the SDK named, as an image of the store: --e2b-base NAME=IMAGE,
 * a template built here, else NAME itself. */
static void base_image(struct e2b *e, const char *name, char *out, size_t n)
{
	size_t k = strlen(name);
	for (size_t i = 0; i < e->s->o.ne2b_bases; i++) {
		const char *b = e->s->o.e2b_bases[i];
		if (!strncmp(b, name, k) && b[k] == '=') {
			snprintf(out, n, "%s", b + k + 1);
			return;
		}
	}
	snprintf(out, n, "%s", name);
}

/* The trigger's steps as a Dockerfile (*d), each upload it copies unpacked
 * under ctx; false with the log's line and reason.step set. */
struct xlate {
	struct e2b *e;
	struct tm_build *b;
	const char *ctx;
	char why[1200];
	char step[24];
};

static int unpack(const char *tgz, const char *dest, char *why, size_t n);

static bool translate(struct xlate *x, json_t *start, struct ward_image_store *st, struct df *d)
{
	json_t *fi = json_object_get(start, "fromImage"), *ft = json_object_get(start, "fromTemplate");
	char base[300];
	snprintf(x->step, sizeof(x->step), "base");
	if (json_is_string(ft)) {
		const char *a = json_string_value(ft);
		snprintf(base, sizeof(base), "e2b-%.200s", a);
		if (!strchr(a, ':'))
			snprintf(base, sizeof(base), "e2b-%.200s:default", a);
	} else if (json_is_string(fi)) {
		base_image(x->e, json_string_value(fi), base, sizeof(base));
	} else {
		snprintf(x->why, sizeof(x->why), "the build names no base: give fromImage or fromTemplate");
		return false;
	}
	struct ward_image *img = NULL;
	char err[600];
	if (!word_ok(base) || ward_image_open(st, base, &img, err, sizeof(err)) < 0) {
		const char *want = json_is_string(fi) ? json_string_value(fi) : base;
		snprintf(x->why, sizeof(x->why),
		         "the base image '%.200s' is not in this runner's image store: its operator provides it with "
		         "`ward image pull docker://%.200s` (or `ward image import`), or maps it to an image of the "
		         "store "
		         "with `ward serve --e2b-base %.200s=IMAGE`",
		         want, want, want);
		return false;
	}
	ward_image_release(img);
	d->step = -1;
	df_put(d, "FROM %s\nUSER root\nWORKDIR /\n", base);
	/* E2B's images have the user "user" (its home /home/user): made when missing */
	df_put(d, "RUN [\"/bin/sh\", \"-c\", \"id -u user >/dev/null 2>&1 || useradd -m -s /bin/sh user 2>/dev/null || "
	          "{ echo 'user:x:1000:1000::/home/user:/bin/sh' >>/etc/passwd && echo 'user:x:1000:' >>/etc/group "
	          "&& mkdir -p /home/user && chown 1000:1000 /home/user; }\"]\n");
	const char *egress = x->e->s->o.e2b_build_egress;
	json_t *steps = json_object_get(start, "steps");
	if (json_array_size(steps) > TM_STEPS_MAX) {
		snprintf(x->why, sizeof(x->why), "a template has at most %d steps", TM_STEPS_MAX);
		return false;
	}
	char user[128] = "root";
	size_t i;
	json_t *s;
	json_array_foreach(steps, i, s)
	{
		snprintf(x->step, sizeof(x->step), "%zu", i);
		d->step = (int)i;
		const char *type = json_string_value(json_object_get(s, "type"));
		json_t *args = json_object_get(s, "args");
		size_t na = json_array_size(args);
		const char *a[8] = {0};
		for (size_t k = 0; k < na && k < 8; k++)
			a[k] = json_string_value(json_array_get(args, k));
		if (!type || !json_is_array(args) || na == 0 || !a[0]) {
			snprintf(x->why, sizeof(x->why), "step %zu: a step is {type, args: [strings]}", i);
			return false;
		}
		if (!strcmp(type, "RUN")) {
			const char *inst = install_of(a[0]);
			if (inst && !egress) {
				snprintf(x->why, sizeof(x->why),
				         "step %zu: %s needs the network, and this runner builds templates without "
				         "one: its "
				         "operator lets builds reach a mirror with `ward serve --e2b-build-egress "
				         "HOSTS` (e.g. "
				         "deb.debian.org, pypi.org, registry.npmjs.org), or bake the packages into the "
				         "base image",
				         i, inst);
				return false;
			}
			const char *u = na > 1 && a[1] && *a[1] ? a[1] : NULL;
			char *cmd = jq(a[0]);
			if (!cmd || (u && !word_ok(u)))
				goto bad;
			if (u)
				df_put(d, "USER %s\n", u);
			df_put(d, "RUN [\"/bin/sh\", \"-c\", %s]\n", cmd);
			if (u)
				df_put(d, "USER %s\n", user);
			free(cmd);
		} else if (!strcmp(type, "COPY")) {
			const char *hash = json_string_value(json_object_get(s, "filesHash"));
			const char *src = a[0], *dest = na > 1 ? a[1] : NULL;
			const char *own = na > 2 && a[2] && *a[2] ? a[2] : NULL,
				   *mode = na > 3 && a[3] && *a[3] ? a[3] : NULL;
			while (src[0] == '.' && src[1] == '/')
				src += 2;
			if (!hash || !hex64(hash) || !dest || !word_ok(src) || src[0] == '/' || !word_ok(dest) ||
			    (own && !word_ok(own)) || (mode && strspn(mode, "01234567") != strlen(mode)))
				goto bad;
			char tgz[512], dir[512];
			files_path(x->e->tm, x->b->tid, hash, tgz, sizeof(tgz));
			snprintf(dir, sizeof(dir), "%s/%s", x->ctx, hash);
			struct stat sb;
			if (stat(dir, &sb) < 0) {
				if (stat(tgz, &sb) < 0) {
					snprintf(x->why, sizeof(x->why),
					         "step %zu: COPY %.200s: its files (%s) were never uploaded", i, src,
					         hash);
					return false;
				}
				if (mkdir(dir, 0755) < 0 || unpack(tgz, dir, err, sizeof(err)) < 0) {
					snprintf(x->why, sizeof(x->why), "step %zu: COPY %.200s: %s", i, src, err);
					return false;
				}
			}
			df_put(d, "COPY");
			if (own)
				df_put(d, " --chown=%s", own);
			if (mode)
				df_put(d, " --chmod=%s", mode);
			df_put(d, " %s/%s %s\n", hash, src, dest);
		} else if (!strcmp(type, "ENV") || !strcmp(type, "ARG")) {
			for (size_t k = 0; k + 1 < na; k += 2) {
				const char *kk = json_string_value(json_array_get(args, k)),
					   *vv = json_string_value(json_array_get(args, k + 1));
				char *vq = vv ? jq(vv) : NULL;
				if (!kk || !word_ok(kk) || strchr(kk, '=') || !vq || strchr(vv, '$')) {
					free(vq);
					goto bad;
				}
				df_put(d, "%s %s=%s\n", type, kk, vq);
				free(vq);
			}
		} else if (!strcmp(type, "WORKDIR") || !strcmp(type, "USER")) {
			if (!word_ok(a[0]))
				goto bad;
			df_put(d, "%s %s\n", type, a[0]);
			if (!strcmp(type, "USER"))
				snprintf(user, sizeof(user), "%s", a[0]);
		} else {
			snprintf(x->why, sizeof(x->why),
			         "step %zu: %.40s is not a step ward builds (RUN, COPY, ENV, ARG, "
			         "WORKDIR, USER)",
			         i, type);
			return false;
		}
		continue;
	bad:
		snprintf(x->why, sizeof(x->why),
		         "step %zu: %.40s with arguments ward cannot build (a word with a blank, quote, '$' or control "
		         "character, an absolute COPY source, a mode not octal, or no files hash)",
		         i, type);
		return false;
	}
	d->step = -1;
	json_t *sc = json_object_get(start, "startCmd");
	if (json_is_string(sc) && *json_string_value(sc)) {
		char *c = jq(json_string_value(sc));
		if (c)
			df_put(d, "CMD [\"/bin/sh\", \"-c\", %s]\n", c);
		free(c);
	}
	snprintf(x->step, sizeof(x->step), "finalize");
	if (d->bad) {
		snprintf(x->why, sizeof(x->why), "the steps make a Dockerfile over %u bytes", TM_DOCKERFILE_MAX);
		return false;
	}
	return true;
}

/* An upload (a gzip'd tar, the SDK's) unpacked beneath dest: no absolute
 * path, no "..", nothing through a link, no device, within
 * TM_UNPACK_MAX bytes and TM_UNPACK_ENTRIES entries. */
/* Has path a ".." segment? */
static bool climbs(const char *path)
{
	for (const char *p = path; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == 0))
			return true;
	return false;
}

static int unpack(const char *tgz, const char *dest, char *why, size_t n)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	int rc = -1;
	if (!a || !w) {
		snprintf(why, n, "out of memory");
		goto out;
	}
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_NO_OVERWRITE);
	if (archive_read_open_filename(a, tgz, 1 << 16) != ARCHIVE_OK) {
		snprintf(why, n, "the upload is not a gzip'd tar: %s", archive_error_string(a));
		goto out;
	}
	uint64_t bytes = 0, entries = 0;
	struct archive_entry *en;
	int r;
	while ((r = archive_read_next_header(a, &en)) == ARCHIVE_OK) {
		const char *pn = archive_entry_pathname(en);
		char p[1024]; /* a copy: set_pathname below frees the entry's */
		snprintf(p, sizeof(p), "%s", pn && strlen(pn) < sizeof(p) ? pn : "/");
		mode_t t = archive_entry_filetype(en);
		if (++entries > TM_UNPACK_ENTRIES) {
			snprintf(why, n, "the upload has more than %d entries", TM_UNPACK_ENTRIES);
			goto out;
		}
		/* a hard link's target is a path of its own (it could name a host file): none */
		if (p[0] == '/' || climbs(p) || archive_entry_hardlink(en) ||
		    (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)) {
			snprintf(why, n,
			         "the upload has an entry ward does not copy: '%.200s' (a path out of the "
			         "context, a device or a hard link)",
			         p);
			goto out;
		}
		if (t == AE_IFREG && archive_entry_size(en) > 0)
			bytes += (uint64_t)archive_entry_size(en);
		if (bytes > TM_UNPACK_MAX) {
			snprintf(why, n, "the upload unpacks to more than %llu bytes",
			         (unsigned long long)TM_UNPACK_MAX);
			goto out;
		}
		char *full = NULL;
		if (asprintf(&full, "%s/%s", dest, p) < 0) {
			snprintf(why, n, "out of memory");
			goto out;
		}
		archive_entry_set_pathname(en, full);
		free(full);
		archive_entry_set_perm(en, archive_entry_perm(en) & 0777);
		if (archive_write_header(w, en) != ARCHIVE_OK) {
			snprintf(why, n, "cannot unpack '%.200s': %s", p, archive_error_string(w));
			goto out;
		}
		if (t == AE_IFREG && archive_write_data_block(w, NULL, 0, 0) >= 0) {
			const void *buf;
			size_t len;
			int64_t off;
			while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
				if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK)
					break;
			if (r != ARCHIVE_EOF) {
				snprintf(why, n, "the upload is cut short: %s", archive_error_string(a));
				goto out;
			}
		}
		archive_write_finish_entry(w);
	}
	if (r != ARCHIVE_EOF) {
		snprintf(why, n, "the upload is not a whole gzip'd tar: %s", archive_error_string(a));
		goto out;
	}
	rc = 0;
out:
	if (w) {
		archive_write_close(w);
		archive_write_free(w);
	}
	if (a)
		archive_read_free(a);
	return rc;
}

/* ---- the worker ---- */

/* The build's output, a log entry a line, until its end. */
static void read_log(struct e2b_tm *m, struct tm_build *b, int fd)
{
	char buf[8192], line[TM_LINE_MAX + 1];
	size_t k = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n' && k < TM_LINE_MAX) {
				line[k++] = buf[i] == '\r' ? ' ' : buf[i];
				continue;
			}
			if (buf[i] != '\n')
				continue; /* the rest of a long line: dropped */
			line[k] = 0;
			pthread_mutex_lock(&m->lock);
			tm_log(b, "info", "%s", line);
			pthread_mutex_unlock(&m->lock);
			k = 0;
		}
	if (k) {
		line[k] = 0;
		pthread_mutex_lock(&m->lock);
		tm_log(b, "info", "%s", line);
		pthread_mutex_unlock(&m->lock);
	}
}

/* The failure `ward image build` named ("line N: ..."), from the end of
 * the log: its line, its message in why. */
static unsigned failed_line(struct e2b_tm *m, struct tm_build *b, char *why, size_t n)
{
	unsigned line = 0;
	pthread_mutex_lock(&m->lock);
	for (size_t i = json_array_size(b->log); i-- > 0;) {
		const char *t = json_string_value(json_object_get(json_array_get(b->log, i), "message"));
		if (t && !strncmp(t, "ward image build: ", 18))
			t += 18;
		int at = 0;
		if (t && sscanf(t, "line %u: %n", &line, &at) == 1 && at > 0) {
			snprintf(why, n, "%s", t + at); /* the line is ward's; the caller names the step */
			break;
		}
		line = 0;
	}
	pthread_mutex_unlock(&m->lock);
	return line;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* `ward image build -f dfile -t name ctx` (this program, /proc/self/exe),
 * its output into b's log: 0 when it built, 1 when it failed (its log says
 * why), -1 when it could not run (why). */
static int spawn_build(struct e2b *e, struct tm_build *b, const char *name, const char *dfile, const char *ctx,
                       const char **allow, size_t nallow, char *why, size_t n)
{
	struct e2b_tm *m = e->tm;
	const char *store = e->s->o.image_store;
	char storebuf[4096];
	if (!store)
		store = ward_image_store_default(NULL, storebuf, sizeof(storebuf));
	const char *argv[32 + EGRESS_MAX_PATTERNS * 4];
	size_t k = 0;
	argv[k++] = "ward";
	argv[k++] = "image";
	argv[k++] = "build";
	argv[k++] = "--verbose";
	argv[k++] = "-f";
	argv[k++] = dfile;
	argv[k++] = "-t";
	argv[k++] = name;
	if (store) {
		argv[k++] = "--image-store";
		argv[k++] = store;
	}
	if (nallow) {
		argv[k++] = "--net";
		argv[k++] = "allow";
	}
	for (size_t i = 0; i < nallow; i++) {
		argv[k++] = "--egress-allow";
		argv[k++] = allow[i];
	}
	for (size_t i = 0; nallow && i < e->s->o.egress.nresolve; i++) { /* the runner's pins hold for builds too */
		argv[k++] = "--egress-resolve";
		argv[k++] = e->s->o.egress_resolve[i];
	}
	argv[k++] = ctx;
	argv[k] = NULL;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		snprintf(why, n, "cannot run ward image build: %s", strerror(rc));
		return -1;
	}
	pthread_mutex_lock(&m->lock);
	m->child = pid;
	pthread_mutex_unlock(&m->lock);
	read_log(m, b, p[0]);
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&m->lock);
	m->child = 0;
	pthread_mutex_unlock(&m->lock);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(why, n, "ward image build %s %d", WIFEXITED(st) ? "exited with" : "was killed by signal",
	         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 1;
}

static void run_build(struct e2b *e, struct tm_build *b)
{
	struct e2b_tm *m = e->tm;
	struct server *s = e->s;
	char ctx[512], err[1200], name[200];
	snprintf(ctx, sizeof(ctx), "%s/ctx-%s", m->dir, b->id);
	snprintf(name, sizeof(name), "e2b-%s:%s", b->alias, b->tag);
	struct xlate x = {.e = e, .b = b, .ctx = ctx};
	struct df d = {0};
	struct ward_image_store *st = NULL;
	bool ok = false;
	const char *egress = s->o.e2b_build_egress;
	char *eg = egress ? strdup(egress) : NULL;
	const char *allow[EGRESS_MAX_PATTERNS];
	size_t nallow = 0;
	for (char *sv = NULL, *w = eg ? strtok_r(eg, ",", &sv) : NULL; w && nallow < EGRESS_MAX_PATTERNS;
	     w = strtok_r(NULL, ",", &sv))
		allow[nallow++] = w;
	if (mkdir(ctx, 0755) < 0) {
		snprintf(x.why, sizeof(x.why), "cannot make the build's context: %s", strerror(errno));
		goto out;
	}
	if (ward_image_store_open(s->o.image_store, true, &st, err, sizeof(err)) < 0) {
		snprintf(x.why, sizeof(x.why), "the image store: %.600s", err);
		goto out;
	}
	if (!translate(&x, b->start, st, &d))
		goto out;
	/* `ward image build` in a process of its own: a RUN's clone3 copies
	 * the process, and this one has threads whose locks it would copy */
	char dfile[400];
	snprintf(dfile, sizeof(dfile), "%s/Dockerfile-%s", m->dir, b->id);
	int dfd = open(dfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool written = dfd >= 0 && write(dfd, d.p, d.len) == (ssize_t)d.len;
	if (dfd >= 0 && close(dfd) < 0)
		written = false;
	if (!written) {
		snprintf(x.why, sizeof(x.why), "cannot write the build's Dockerfile: %s", strerror(errno));
		goto out;
	}
	int rc = spawn_build(e, b, name, dfile, ctx, allow, nallow, x.why, sizeof(x.why));
	unlink(dfile);
	if (rc != 0) { /* the SDK's step of the line that failed */
		unsigned fl = rc > 0 ? failed_line(m, b, x.why, sizeof(x.why)) : 0;
		int k = fl && fl <= d.lines && fl < sizeof(d.of_line) / sizeof(d.of_line[0]) ? d.of_line[fl] : -1;
		if (k >= 0) {
			snprintf(x.step, sizeof(x.step), "%d", k);
			char m2[sizeof(x.why)];
			snprintf(m2, sizeof(m2), "%s", x.why);
			snprintf(x.why, sizeof(x.why), "step %d: %.1100s", k, m2);
		} else
			snprintf(x.step, sizeof(x.step), "%s", fl ? "base" : "finalize");
		goto out;
	}
	struct ward_image_root *root = NULL;
	if (ward_image_root_open(s->o.image_store, name, &root, err, sizeof(err)) < 0) {
		snprintf(x.why, sizeof(x.why), "the built image: %.600s", err);
		goto out;
	}
	ok = true;
	pthread_mutex_lock(&m->lock);
	b->root = root;
	tm_log(b, "info", "built %s (%s)", name, ward_image_root_image(root)->digest);
	b->state = TB_READY;
	struct tm_tmpl *t = tmpl_by_id(m, b->tid);
	if (t)
		t->ready = b;
	pthread_mutex_unlock(&m->lock);
out:
	if (!ok) {
		pthread_mutex_lock(&m->lock);
		tm_log(b, "error", "%s", x.why);
		snprintf(b->reason, sizeof(b->reason), "%s", x.why);
		snprintf(b->step, sizeof(b->step), "%s", x.step);
		b->state = TB_ERROR;
		pthread_mutex_unlock(&m->lock);
	}
	log_event(s, ok ? "e2b-template-ready" : "e2b-template-failed", "%s build %s%s%s", name, b->id, ok ? "" : ": ",
	          ok ? "" : x.why);
	free(eg);
	free(d.p);
	if (st)
		ward_image_store_close(st);
	rm_tree(ctx);
}

static void *worker(void *arg)
{
	struct e2b *e = arg;
	struct e2b_tm *m = e->tm;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->stop && !m->qhead)
			pthread_cond_wait(&m->cond, &m->lock);
		if (m->stop)
			break;
		struct tm_build *b = m->qhead;
		m->qhead = b->qnext;
		if (!m->qhead)
			m->qtail = NULL;
		m->nq--;
		b->state = TB_BUILDING;
		tm_log(b, "info", "building %s:%s on ward", b->alias, b->tag);
		pthread_mutex_unlock(&m->lock);
		run_build(e, b);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- POST /v2/templates/T/builds/B ---- */

static enum MHD_Result build_start(struct ereq *q, const char *tid, const char *bid)
{
	struct e2b_tm *m = q->e->tm;
	json_error_t je;
	json_t *v = json_loadb(q->body ? q->body : "", q->len, 0, &je);
	if (!json_is_object(v) || !json_is_array(json_object_get(v, "steps"))) {
		json_decref(v);
		return e2b_api_error(q, 400, "a build's start is a JSON object with \"steps\"");
	}
	pthread_mutex_lock(&m->lock);
	struct tm_build *b = build_by_id(m, tid, bid);
	if (!b || strcmp(b->owner, q->who)) {
		pthread_mutex_unlock(&m->lock);
		json_decref(v);
		return e2b_api_error(q, 404, "build '%s' of template '%s' not found", bid, tid);
	}
	if (b->state != TB_WAITING) {
		pthread_mutex_unlock(&m->lock);
		json_decref(v);
		return e2b_api_error(q, 400, "build '%s' was started already", bid);
	}
	if (m->nq >= TM_QUEUE_MAX) {
		pthread_mutex_unlock(&m->lock);
		json_decref(v);
		return e2b_api_error(q, 429, "%d template builds wait already: retry later", TM_QUEUE_MAX);
	}
	b->start = v;
	b->state = TB_QUEUED;
	if (m->qtail)
		m->qtail->qnext = b;
	else
		m->qhead = b;
	m->qtail = b;
	m->nq++;
	tm_log(b, "info", "queued (%zu ahead)", m->nq - 1);
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	return e2b_answer(q, 202, NULL, NULL, 0);
}

/* ---- GET /templates/T/builds/B/status ---- */

static enum MHD_Result build_status(struct ereq *q, const char *tid, const char *bid)
{
	struct e2b_tm *m = q->e->tm;
	const char *o = e2b_query(q, "logsOffset");
	char *end = NULL;
	unsigned long off = o ? strtoul(o, &end, 10) : 0;
	if (o && (!*o || *end))
		return e2b_api_error(q, 400, "logsOffset: a whole number");
	pthread_mutex_lock(&m->lock);
	struct tm_build *b = build_by_id(m, tid, bid);
	if (!b || strcmp(b->owner, q->who)) {
		pthread_mutex_unlock(&m->lock);
		return e2b_api_error(q, 400, "Build '%s' not found", bid);
	}
	json_t *ents = json_array(), *logs = json_array();
	size_t n = json_array_size(b->log);
	for (size_t i = off; i < n && i < off + 100; i++) {
		json_t *en = json_array_get(b->log, i);
		json_array_append(ents, en);
		json_array_append_new(logs, json_string(json_string_value(json_object_get(en, "message"))));
	}
	json_t *v = json_pack("{s:s,s:s,s:s,s:o,s:o}", "templateID", b->tid, "buildID", b->id, "status",
	                      state_name[b->state], "logEntries", ents, "logs", logs);
	if (v && b->state == TB_ERROR)
		json_object_set_new(v, "reason", json_pack("{s:s,s:s}", "message", b->reason, "step", b->step));
	pthread_mutex_unlock(&m->lock);
	return e2b_answer_json(q, 200, v);
}

/* ---- GET /templates/aliases/NAME ---- */

static enum MHD_Result alias_get(struct ereq *q, const char *name)
{
	struct e2b_tm *m = q->e->tm;
	char alias[64];
	snprintf(alias, sizeof(alias), "%.*s", (int)strcspn(name, ":"), name);
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_alias(m, alias);
	unsigned code = !t ? 404 : strcmp(t->owner, q->who) ? 403 : 200;
	char tid[40];
	snprintf(tid, sizeof(tid), "%s", t ? t->tid : "");
	pthread_mutex_unlock(&m->lock);
	if (code != 200)
		return e2b_api_error(
			q, code, code == 404 ? "template '%s' not found" : "template '%s' is another team's", alias);
	return e2b_answer_json(q, 200, json_pack("{s:s,s:b}", "templateID", tid, "public", 0));
}

/* ---- routing within /templates/ and /v2/templates/ ---- */

/* q->arg is "A/B[/C...]": its parts split at '/' into v (at most 4). */
static size_t split(char *arg, char **v)
{
	size_t n = 0;
	for (char *sv = NULL, *w = strtok_r(arg, "/", &sv); w && n < 4; w = strtok_r(NULL, "/", &sv))
		v[n++] = w;
	return n;
}

enum MHD_Result tm_get(struct ereq *q)
{
	char a[sizeof(q->arg)], *v[4];
	snprintf(a, sizeof(a), "%s", q->arg);
	size_t n = split(a, v);
	if (n == 2 && !strcmp(v[0], "aliases"))
		return alias_get(q, v[1]);
	if (n == 3 && !strcmp(v[1], "files"))
		return files_link(q, v[0], v[2]);
	if (n == 4 && !strcmp(v[1], "builds") && !strcmp(v[3], "status"))
		return build_status(q, v[0], v[2]);
	return e2b_api_error(q, 404, "no such endpoint on the E2B listener: %s", q->path);
}

enum MHD_Result tm_post_v2(struct ereq *q)
{
	char a[sizeof(q->arg)], *v[4];
	snprintf(a, sizeof(a), "%s", q->arg);
	size_t n = split(a, v);
	if (n == 3 && !strcmp(v[1], "builds"))
		return build_start(q, v[0], v[2]);
	return e2b_api_error(q, 404, "no such endpoint on the E2B listener: %s", q->path);
}

/* ---- for Sandbox.create, start and stop ---- */

bool tm_find(struct e2b *e, const char *name, const char *who, struct tm_pick *out)
{
	struct e2b_tm *m = e->tm;
	if (!m)
		return false;
	char alias[64], tag[64] = "";
	snprintf(alias, sizeof(alias), "%.*s", (int)strcspn(name, ":"), name);
	if (strchr(name, ':'))
		snprintf(tag, sizeof(tag), "%.63s", strchr(name, ':') + 1);
	bool found = false;
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_alias(m, alias);
	if (!t)
		t = tmpl_by_id(m, alias);
	if (t && !strcmp(t->owner, who)) {
		struct tm_build *pick = tag[0] ? NULL : t->ready;
		for (struct tm_build *b = m->builds; !pick && b; b = b->next) /* newest first */
			if (b->state == TB_READY && !strcmp(b->tid, t->tid) && !strcmp(b->tag, tag))
				pick = b;
		if (pick) {
			out->root = pick->root;
			out->cpu = pick->cpu;
			out->mem = pick->mem;
			const char *sc = json_string_value(json_object_get(pick->start, "startCmd"));
			snprintf(out->start, sizeof(out->start), "%s", sc && strlen(sc) < sizeof(out->start) ? sc : "");
			found = true;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return found;
}

int tm_start(struct e2b *e)
{
	struct e2b_tm *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	const char *tmp = getenv("TMPDIR");
	snprintf(m->dir, sizeof(m->dir), "%s/ward-e2b-templates.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	e->tm = m;
	if (!mkdtemp(m->dir)) {
		fprintf(stderr, "ward serve: cannot make a directory for E2B template uploads: %s\n", strerror(errno));
		m->dir[0] = 0;
		return -1;
	}
	char f[300];
	snprintf(f, sizeof(f), "%s/files", m->dir);
	if (mkdir(f, 0700) < 0 || pthread_create(&m->worker, NULL, worker, e) != 0)
		return -1;
	m->worker_up = true;
	return 0;
}

/* After the listener stopped (no request in flight) and after the
 * sandboxes: the roots go last. */
void tm_stop(struct e2b *e)
{
	struct e2b_tm *m = e->tm;
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	if (m->child > 0)
		kill(m->child, SIGTERM); /* a build in progress ends now */
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (m->worker_up)
		pthread_join(m->worker, NULL);
	for (struct tm_build *b = m->builds, *nx; b; b = nx) {
		nx = b->next;
		build_free(b);
	}
	if (m->dir[0])
		rm_tree(m->dir);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	free(m);
	e->tm = NULL;
}
