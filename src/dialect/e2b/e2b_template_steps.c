/* e2b_template_steps.c — an E2B template's steps (the SDK's Template())
 * as the Dockerfile `ward image build` builds (e2b_tm.h): every word
 * checked before it is written, COPY's uploads unpacked beneath the build's
 * context (no absolute path, no "..", nothing through a link, no device,
 * within TM_UNPACK_MAX bytes and TM_UNPACK_ENTRIES entries). */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dialect/e2b/e2b_tm.h"

void tm_df_put(struct df *d, const char *fmt, ...)
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

/* The base fromImage named, as an image of the store: --e2b-base
 * NAME=IMAGE (true: the operator's word, any image), else NAME itself. */
static bool base_image(struct e2b *e, const char *name, char *out, size_t n)
{
	size_t k = strlen(name);
	for (size_t i = 0; i < e->s->o.ne2b_bases; i++) {
		const char *b = e->s->o.e2b_bases[i];
		if (!strncmp(b, name, k) && b[k] == '=') {
			snprintf(out, n, "%s", b + k + 1);
			return true;
		}
	}
	snprintf(out, n, "%s", name);
	return false;
}

/* The trigger's steps as a Dockerfile (*d), each upload it copies unpacked
 * under ctx; false with the log's line and reason.step set. */

/* A COPY step: its upload unpacked once beneath the context, then its
 * line.  0, 1 (arguments ward cannot build), or -1 with x->why. */
static int step_copy(struct xlate *x, struct df *d, json_t *s, const char *const *a, size_t na, size_t i)
{
	char err[600];
	const char *hash = json_string_value(json_object_get(s, "filesHash"));
	const char *src = a[0], *dest = na > 1 ? a[1] : NULL;
	const char *own = na > 2 && a[2] && *a[2] ? a[2] : NULL, *mode = na > 3 && a[3] && *a[3] ? a[3] : NULL;
	while (src[0] == '.' && src[1] == '/')
		src += 2;
	if (!hash || !tm_hex64(hash) || !dest || !word_ok(src) || src[0] == '/' || !word_ok(dest) ||
	    (own && !word_ok(own)) || (mode && strspn(mode, "01234567") != strlen(mode)))
		return 1;
	char tgz[512], dir[512];
	tm_files_path(x->e->tm, x->b->tid, hash, tgz, sizeof(tgz));
	snprintf(dir, sizeof(dir), "%s/%s", x->ctx, hash);
	struct stat sb;
	if (stat(dir, &sb) < 0) {
		if (stat(tgz, &sb) < 0) {
			snprintf(x->why, sizeof(x->why), "step %zu: COPY %.200s: its files (%s) were never uploaded", i,
			         src, hash);
			return -1;
		}
		if (mkdir(dir, 0755) < 0 || tm_unpack(tgz, dir, err, sizeof(err)) < 0) {
			snprintf(x->why, sizeof(x->why), "step %zu: COPY %.200s: %s", i, src, err);
			return -1;
		}
	}
	tm_df_put(d, "COPY");
	if (own)
		tm_df_put(d, " --chown=%s", own);
	if (mode)
		tm_df_put(d, " --chmod=%s", mode);
	tm_df_put(d, " %s/%s %s\n", hash, src, dest);
	return 0;
}

/* Step i of the SDK's (RUN, COPY, ENV, ARG, WORKDIR, USER) written to d;
 * false with x->why set.  user: the USER in force (a RUN's own user is
 * set around it). */
static bool step_write(struct xlate *x, struct df *d, json_t *s, size_t i, const char *egress, char *user, size_t ulen)
{
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
			tm_df_put(d, "USER %s\n", u);
		tm_df_put(d, "RUN [\"/bin/sh\", \"-c\", %s]\n", cmd);
		if (u)
			tm_df_put(d, "USER %s\n", user);
		free(cmd);
	} else if (!strcmp(type, "COPY")) {
		int r = step_copy(x, d, s, a, na, i);
		if (r > 0)
			goto bad;
		if (r < 0)
			return false;
	} else if (!strcmp(type, "ENV") || !strcmp(type, "ARG")) {
		for (size_t k = 0; k + 1 < na; k += 2) {
			const char *kk = json_string_value(json_array_get(args, k)),
				   *vv = json_string_value(json_array_get(args, k + 1));
			char *vq = vv ? jq(vv) : NULL;
			if (!kk || !word_ok(kk) || strchr(kk, '=') || !vq || strchr(vv, '$')) {
				free(vq);
				goto bad;
			}
			tm_df_put(d, "%s %s=%s\n", type, kk, vq);
			free(vq);
		}
	} else if (!strcmp(type, "WORKDIR") || !strcmp(type, "USER")) {
		if (!word_ok(a[0]))
			goto bad;
		tm_df_put(d, "%s %s\n", type, a[0]);
		if (!strcmp(type, "USER"))
			snprintf(user, ulen, "%s", a[0]);
	} else {
		snprintf(x->why, sizeof(x->why),
		         "step %zu: %.40s is not a step ward builds (RUN, COPY, ENV, ARG, "
		         "WORKDIR, USER)",
		         i, type);
		return false;
	}
	return true;
bad:
	snprintf(x->why, sizeof(x->why),
	         "step %zu: %.40s with arguments ward cannot build (a word with a blank, quote, '$' or control "
	         "character, an absolute COPY source, a mode not octal, or no files hash)",
	         i, type);
	return false;
}

bool tm_translate(struct xlate *x, json_t *start, struct ward_image_store *st, struct df *d)
{
	json_t *fi = json_object_get(start, "fromImage"), *ft = json_object_get(start, "fromTemplate");
	char base[300];
	/* the store's E2B images (e2b-ALIAS:TAG, e2b-snap/KEY/NAME) are their
	 * API keys': a base only as the builder's own template, never by their
	 * names; another key's answers as one that does not exist */
	bool ours = false, mapped = false;
	snprintf(x->step, sizeof(x->step), "base");
	if (json_is_string(ft)) {
		const char *a = json_string_value(ft);
		snprintf(base, sizeof(base), "e2b-%.200s", a);
		if (!strchr(a, ':'))
			snprintf(base, sizeof(base), "e2b-%.200s:default", a);
		ours = tm_owns(x->e->tm, x->b->owner, a);
	} else if (json_is_string(fi)) {
		mapped = base_image(x->e, json_string_value(fi), base, sizeof(base));
	} else {
		snprintf(x->why, sizeof(x->why), "the build names no base: give fromImage or fromTemplate");
		return false;
	}
	struct ward_image *img = NULL;
	char err[600];
	bool refused = !mapped && !ours && !strncmp(base, "e2b-", 4);
	if (!word_ok(base) || refused || ward_image_open(st, base, &img, err, sizeof(err)) < 0 ||
	    (!mapped && e2b_snapshot_image(st, img))) {
		ward_image_release(img);
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
	tm_df_put(d, "FROM %s\nUSER root\nWORKDIR /\n", base);
	/* E2B's images have the user "user" (its home /home/user): made when missing */
	tm_df_put(d,
	          "RUN [\"/bin/sh\", \"-c\", \"id -u user >/dev/null 2>&1 || useradd -m -s /bin/sh user 2>/dev/null || "
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
		if (!step_write(x, d, s, i, egress, user, sizeof(user)))
			return false;
	}
	d->step = -1;
	json_t *sc = json_object_get(start, "startCmd");
	if (json_is_string(sc) && *json_string_value(sc)) {
		char *c = jq(json_string_value(sc));
		if (c)
			tm_df_put(d, "CMD [\"/bin/sh\", \"-c\", %s]\n", c);
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

/* Whether an upload's entry (its path p) may be unpacked: counted, and
 * within the caps; false with why. */
static bool entry_ok(struct archive_entry *en, const char *p, uint64_t *entries, uint64_t *bytes, char *why, size_t n)
{
	mode_t t = archive_entry_filetype(en);
	if (++*entries > TM_UNPACK_ENTRIES) {
		snprintf(why, n, "the upload has more than %d entries", TM_UNPACK_ENTRIES);
		return false;
	}
	/* a hard link's target is a path of its own (it could name a host file): none */
	if (p[0] == '/' || climbs(p) || archive_entry_hardlink(en) ||
	    (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)) {
		snprintf(why, n,
		         "the upload has an entry ward does not copy: '%.200s' (a path out of the "
		         "context, a device or a hard link)",
		         p);
		return false;
	}
	if (t == AE_IFREG && archive_entry_size(en) > 0)
		*bytes += (uint64_t)archive_entry_size(en);
	if (*bytes > TM_UNPACK_MAX) {
		snprintf(why, n, "the upload unpacks to more than %llu bytes", (unsigned long long)TM_UNPACK_MAX);
		return false;
	}
	return true;
}

int tm_unpack(const char *tgz, const char *dest, char *why, size_t n)
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
		if (!entry_ok(en, p, &entries, &bytes, why, n))
			goto out;
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
