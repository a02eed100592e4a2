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
#include "dialect/e2b/e2b_tm.h"
#include "ward_image.h"

static const char *const state_name[] = {"waiting", "waiting", "building", "ready", "error"};

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

bool tm_hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* ---- POST /v3/templates ---- */

/* NAME[:TAG] into alias and tag (64 bytes each; the tag else the
 * body's tags[0], else "default"). */
static void name_tag(const char *name, json_t *tags, char *alias, char *tag)
{
	const char *colon = strchr(name, ':');
	size_t an = colon ? (size_t)(colon - name) : strlen(name);
	if (an < 64)
		memcpy(alias, name, an), alias[an] = 0;
	if (colon)
		snprintf(tag, 64, "%.63s", colon + 1);
	if (!colon && json_is_string(json_array_get(tags, 0)))
		snprintf(tag, 64, "%.63s", json_string_value(json_array_get(tags, 0)));
}

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
	name_tag(json_string_value(nm), json_object_get(b, "tags"), alias, tag);
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

void tm_files_path(struct e2b_tm *m, const char *tid, const char *hash, char *out, size_t n)
{
	snprintf(out, n, "%s/files/%s/%s", m->dir, tid, hash);
}

static enum MHD_Result files_link(struct ereq *q, const char *tid, const char *hash)
{
	struct e2b_tm *m = q->e->tm;
	if (!tm_hex64(hash))
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
	tm_files_path(m, tid, hash, path, sizeof(path));
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
	if (!dot || (size_t)(dot - q->arg) >= sizeof(tid) || !tm_hex64(dot + 1))
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
	tm_files_path(m, tid, dot + 1, path, sizeof(path));
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

/* --e2b-build-egress's names, split at commas into allow (the copy they
 * point into is returned, to be freed). */
static char *build_egress(struct server *s, const char **allow, size_t *nallow)
{
	const char *egress = s->o.e2b_build_egress;
	char *eg = egress ? strdup(egress) : NULL;
	for (char *sv = NULL, *w = eg ? strtok_r(eg, ",", &sv) : NULL; w && *nallow < EGRESS_MAX_PATTERNS;
	     w = strtok_r(NULL, ",", &sv))
		allow[(*nallow)++] = w;
	return eg;
}

/* A failed build's reason names the SDK's step of the line that failed. */
static void blame_step(struct e2b_tm *m, struct tm_build *b, int rc, const struct df *d, struct xlate *x)
{
	unsigned fl = rc > 0 ? failed_line(m, b, x->why, sizeof(x->why)) : 0;
	int k = fl && fl <= d->lines && fl < sizeof(d->of_line) / sizeof(d->of_line[0]) ? d->of_line[fl] : -1;
	if (k >= 0) {
		snprintf(x->step, sizeof(x->step), "%d", k);
		char m2[sizeof(x->why)];
		snprintf(m2, sizeof(m2), "%s", x->why);
		snprintf(x->why, sizeof(x->why), "step %d: %.1100s", k, m2);
	} else
		snprintf(x->step, sizeof(x->step), "%s", fl ? "base" : "finalize");
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
	const char *allow[EGRESS_MAX_PATTERNS];
	size_t nallow = 0;
	char *eg = build_egress(s, allow, &nallow);
	if (mkdir(ctx, 0755) < 0) {
		snprintf(x.why, sizeof(x.why), "cannot make the build's context: %s", strerror(errno));
		goto out;
	}
	if (ward_image_store_open(s->o.image_store, true, &st, err, sizeof(err)) < 0) {
		snprintf(x.why, sizeof(x.why), "the image store: %.600s", err);
		goto out;
	}
	if (!tm_translate(&x, b->start, st, &d))
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
	if (rc != 0) {
		blame_step(m, b, rc, &d, &x);
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

static void *worker_take(void *ctx, int thread)
{
	struct e2b *e = ctx;
	struct e2b_tm *m = e->tm;
	struct tm_build *b = m->qhead;
	if (!b)
		return NULL;
	m->qhead = b->qnext;
	if (!m->qhead)
		m->qtail = NULL;
	m->nq--;
	b->state = TB_BUILDING;
	tm_log(b, "info", "building %s:%s on ward", b->alias, b->tag);
	return b;
}

static void worker_run(void *ctx, void *job, int thread)
{
	run_build(ctx, job);
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

/* ---- for a build's base, Sandbox.create, start and stop ---- */

bool tm_owns(struct e2b_tm *m, const char *owner, const char *name)
{
	char alias[64];
	snprintf(alias, sizeof(alias), "%.*s", (int)strcspn(name, ":"), name);
	pthread_mutex_lock(&m->lock);
	struct tm_tmpl *t = tmpl_by_alias(m, alias);
	bool mine = t && !strcmp(t->owner, owner);
	pthread_mutex_unlock(&m->lock);
	return mine;
}

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
	m->worker = (struct workq){.lock = &m->lock,
	                           .cond = &m->cond,
	                           .take = worker_take,
	                           .run = worker_run,
	                           .ctx = e,
	                           .name = "e2b-templates"};
	if (mkdir(f, 0700) < 0 || workq_start(&m->worker, 1) != 0)
		return -1;
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
	m->worker.stop = true; /* (with the kill: no next build starts) */
	if (m->child > 0)
		kill(m->child, SIGTERM); /* a build in progress ends now */
	pthread_mutex_unlock(&m->lock);
	workq_stop(&m->worker);
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
