/* build_parse.c — a Dockerfile into a list of steps (SPEC §19), pure: no
 * file, no process, no store.  The text is hostile (a tenant's): its size,
 * its steps and each line are bounded, NULs are refused, and anything ward
 * does not build — an instruction, a flag, ADD from a URL, a substitution
 * form — is refused here with the line and the instruction named, so that
 * no step of a build runs before its whole file is known to be buildable.
 *
 * What Docker does and ward follows: parser directives (# escape=, and
 * # syntax= / # check= taken as comments) only before anything else;
 * comment lines dropped, even inside a continuation; a line ending in the
 * escape character continues on the next; instructions case-insensitive;
 * the JSON (exec) form when the arguments parse as an array of strings,
 * else the shell form; RUN heredocs (<<EOF ... EOF) kept in the command for
 * sh, a bare `RUN <<EOF` running its body as the script; ENV and LABEL as
 * name=value pairs (or ENV's older "name value"). */
#define _GNU_SOURCE
#include "image/build_parse.h"
#include "base/errf.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {
	[BS_FROM] = "FROM",       [BS_RUN] = "RUN",
	[BS_COPY] = "COPY",       [BS_ADD] = "ADD",
	[BS_ENV] = "ENV",         [BS_ARG] = "ARG",
	[BS_WORKDIR] = "WORKDIR", [BS_USER] = "USER",
	[BS_CMD] = "CMD",         [BS_ENTRYPOINT] = "ENTRYPOINT",
	[BS_LABEL] = "LABEL",     [BS_EXPOSE] = "EXPOSE",
	[BS_SHELL] = "SHELL",     [BS_STOPSIGNAL] = "STOPSIGNAL",
};

const char *build_op_name(enum bstep_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

/* ---- a growing string and a string list ---- */

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_putc(struct sbuf *b, char c)
{
	sb_putn(b, &c, 1);
}

/* The string (malloc'd, "" when empty), or NULL out of memory. */
static char *sb_take(struct sbuf *b)
{
	if (!b->oom && !b->p)
		sb_putn(b, "", 0);
	char *p = b->oom ? NULL : b->p;
	if (b->oom)
		free(b->p);
	*b = (struct sbuf){0};
	return p;
}

static int push(struct bstep *s, char *v, bool may_be_null)
{
	if (!v && !may_be_null)
		return -1;
	char **a = realloc(s->args, (s->nargs + 1) * sizeof(char *));
	if (!a) {
		free(v);
		return -1;
	}
	s->args = a;
	a[s->nargs++] = v;
	return 0;
}

/* ---- expansion ---- */

struct lex {
	const char *p;
	char esc;
	build_lookup get;
	void *ctx;
	char *err;
	size_t errlen;
};

static bool name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *lookup(struct lex *l, const char *name)
{
	return l->get ? l->get(l->ctx, name) : NULL;
}

static int expand_until(struct lex *l, struct sbuf *out, char stop, int depth);

/* After "${": NAME, then "}", ":-word}" or ":+word}". */
static int braced(struct lex *l, struct sbuf *out, int depth)
{
	char name[256];
	size_t n = 0;
	if (!name_start(*l->p))
		return base_errf(l->err, l->errlen, "'${' must be followed by a variable name");
	while (name_char(*l->p) && n + 1 < sizeof(name))
		name[n++] = *l->p++;
	name[n] = 0;
	if (name_char(*l->p))
		return base_errf(l->err, l->errlen, "a variable name over 255 characters");
	const char *v = lookup(l, name);
	if (*l->p == '}') {
		l->p++;
		if (v)
			sb_putn(out, v, strlen(v));
		return 0;
	}
	if (l->p[0] != ':' || (l->p[1] != '-' && l->p[1] != '+'))
		return base_errf(l->err, l->errlen,
		                 "'${%s%.1s...}': ward takes ${NAME}, ${NAME:-word} and ${NAME:+word}", name, l->p);
	bool dflt = l->p[1] == '-';
	l->p += 2;
	struct sbuf w = {0};
	int rc = expand_until(l, &w, '}', depth + 1);
	char *word = sb_take(&w);
	if (rc == 0 && !word)
		rc = base_errf(l->err, l->errlen, "out of memory");
	if (rc == 0) {
		bool set = v && v[0];
		const char *put = dflt ? (set ? v : word) : (set ? word : "");
		sb_putn(out, put, strlen(put));
	}
	free(word);
	return rc;
}

static int dollar(struct lex *l, struct sbuf *out, int depth)
{
	l->p++; /* '$' */
	if (*l->p == '{') {
		l->p++;
		return braced(l, out, depth);
	}
	if (!name_start(*l->p)) {
		sb_putc(out, '$');
		return 0;
	}
	char name[256];
	size_t n = 0;
	while (name_char(*l->p) && n + 1 < sizeof(name))
		name[n++] = *l->p++;
	name[n] = 0;
	const char *v = lookup(l, name);
	if (v)
		sb_putn(out, v, strlen(v));
	return 0;
}

static int double_quoted(struct lex *l, struct sbuf *out, int depth)
{
	l->p++;
	for (;;) {
		char c = *l->p;
		if (!c)
			return base_errf(l->err, l->errlen, "a double quote is not closed");
		if (c == '"') {
			l->p++;
			return 0;
		}
		if (c == l->esc && (l->p[1] == '"' || l->p[1] == '$' || l->p[1] == l->esc)) {
			sb_putc(out, l->p[1]);
			l->p += 2;
		} else if (c == '$') {
			if (dollar(l, out, depth) < 0)
				return -1;
		} else {
			sb_putc(out, c);
			l->p++;
		}
	}
}

/* Expands up to stop ('\0': the end; '}': a ${...:-word}'s end, consumed). */
static int expand_until(struct lex *l, struct sbuf *out, char stop, int depth)
{
	if (depth > 16)
		return base_errf(l->err, l->errlen, "substitutions nest deeper than 16");
	for (;;) {
		char c = *l->p;
		if (!c)
			return stop ? base_errf(l->err, l->errlen, "a '${' is not closed") : 0;
		if (stop && c == stop) {
			l->p++;
			return 0;
		}
		if (c == l->esc) {
			if (l->p[1])
				sb_putc(out, l->p[1]);
			l->p += l->p[1] ? 2 : 1;
		} else if (c == '\'') {
			const char *end = strchr(l->p + 1, '\'');
			if (!end)
				return base_errf(l->err, l->errlen, "a single quote is not closed");
			sb_putn(out, l->p + 1, (size_t)(end - l->p - 1));
			l->p = end + 1;
		} else if (c == '"') {
			if (double_quoted(l, out, depth) < 0)
				return -1;
		} else if (c == '$') {
			if (dollar(l, out, depth) < 0)
				return -1;
		} else {
			sb_putc(out, c);
			l->p++;
		}
	}
}

int build_expand(const char *word, char escape, build_lookup get, void *ctx, char **out, char *err, size_t errlen)
{
	struct lex l = {.p = word, .esc = escape, .get = get, .ctx = ctx, .err = err, .errlen = errlen};
	struct sbuf b = {0};
	int rc = expand_until(&l, &b, 0, 0);
	*out = sb_take(&b);
	if (rc == 0 && !*out)
		rc = base_errf(err, errlen, "out of memory");
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- words ---- */

/* The next word of *p: up to unquoted, unescaped whitespace, quotes and
 * escapes kept (build_expand removes them).  NULL at the end. */
static char *next_word(const char **p, char esc, bool *oom)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s) {
		*p = s;
		return NULL;
	}
	const char *e = s;
	char q = 0;
	while (*e && (q || (*e != ' ' && *e != '\t'))) {
		if (*e == esc && e[1] && q != '\'')
			e++;
		else if (!q && (*e == '"' || *e == '\''))
			q = *e;
		else if (q && *e == q)
			q = 0;
		e++;
	}
	*p = e;
	char *w = strndup(s, (size_t)(e - s));
	if (!w)
		*oom = true;
	return w;
}

/* ---- the lines ---- */

struct parser {
	const char *p, *end;
	unsigned line; /* of the next physical line */
	char esc;
	struct bfile *f;
	char *err;
	size_t errlen;
};

/* The next physical line (without its newline), or NULL at the end. */
static const char *phys(struct parser *ps, size_t *len)
{
	if (ps->p >= ps->end)
		return NULL;
	const char *s = ps->p, *nl = memchr(s, '\n', (size_t)(ps->end - s));
	const char *e = nl ? nl : ps->end;
	ps->p = nl ? nl + 1 : ps->end;
	ps->line++;
	*len = (size_t)(e - s);
	if (*len && s[*len - 1] == '\r')
		(*len)--;
	return s;
}

static bool blank_or_comment(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return i == n || s[i] == '#';
}

/* Parser directives at the top: "# name=value" lines until anything else. */
static int directives(struct parser *ps)
{
	for (;;) {
		const char *save = ps->p;
		unsigned sline = ps->line;
		size_t n;
		const char *s = phys(ps, &n);
		if (!s)
			return 0;
		char buf[256];
		snprintf(buf, sizeof(buf), "%.*s", (int)(n < 255 ? n : 255), s);
		char name[32], value[200];
		if (sscanf(buf, " # %31[a-zA-Z] = %199s", name, value) != 2) {
			ps->p = save;
			ps->line = sline;
			return 0;
		}
		for (char *c = name; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (!strcmp(name, "escape")) {
			if (strcmp(value, "\\") && strcmp(value, "`"))
				return base_errf(ps->err, ps->errlen,
				                 "line %u: the escape directive takes \\ or `, not '%s'", ps->line,
				                 value);
			ps->esc = value[0];
		} else if (strcmp(name, "syntax") && strcmp(name, "check")) {
			ps->p = save; /* not a directive: a comment, and directives end */
			ps->line = sline;
			return 0;
		}
	}
}

/* Ends in the escape character (trailing whitespace aside)?  Then *n is cut
 * before it. */
static bool continues(const char *s, size_t *n, char esc)
{
	size_t k = *n;
	while (k && (s[k - 1] == ' ' || s[k - 1] == '\t'))
		k--;
	if (!k || s[k - 1] != esc)
		return false;
	*n = k - 1;
	return true;
}

/* A heredoc's word in RUN's text ("<<EOF", "<<-EOF", "<<'EOF'"): the
 * terminator, and whether leading tabs are stripped.  false when none. */
static bool heredoc_word(const char *text, char *word, size_t wlen, bool *strip)
{
	const char *h = strstr(text, "<<");
	if (!h)
		return false;
	h += 2;
	*strip = *h == '-';
	if (*strip)
		h++;
	char q = (*h == '"' || *h == '\'') ? *h++ : 0;
	size_t n = 0;
	while (name_char(h[n]) && n + 1 < wlen)
		n++;
	if (!n || (q && h[n] != q))
		return false;
	memcpy(word, h, n);
	word[n] = 0;
	return true;
}

/* The next instruction's logical line (continuations joined, comments
 * within dropped), malloc'd in *out with its first line in *line; 0 at the
 * end, 1 with a line, -1 refused. */
static int logical(struct parser *ps, char **out, unsigned *line)
{
	size_t n;
	const char *s;
	do
		s = phys(ps, &n);
	while (s && blank_or_comment(s, n));
	if (!s)
		return 0;
	*line = ps->line;
	struct sbuf b = {0};
	for (;;) {
		bool more = continues(s, &n, ps->esc);
		sb_putn(&b, s, n);
		if (b.n > 65536) {
			free(sb_take(&b));
			return base_errf(ps->err, ps->errlen, "line %u: an instruction over 64 KiB: refused", *line);
		}
		if (!more)
			break;
		do
			s = phys(ps, &n);
		while (s && blank_or_comment(s, n));
		if (!s)
			break;
	}
	*out = sb_take(&b);
	return *out ? 1 : base_errf(ps->err, ps->errlen, "out of memory");
}

/* RUN's heredoc: the lines up to its terminator, as sh takes them in
 * *cmd (a bare "<<EOF" is the body itself); *cmd NULL when there is none. */
static int heredoc(struct parser *ps, unsigned line, const char *args, char **cmd)
{
	char word[64];
	bool strip;
	*cmd = NULL;
	if (!heredoc_word(args, word, sizeof(word), &strip))
		return 0;
	if (strstr(strstr(args, "<<") + 2, "<<"))
		return base_errf(ps->err, ps->errlen, "line %u: RUN: ward takes one heredoc per RUN", line);
	struct sbuf body = {0};
	for (;;) {
		size_t n;
		const char *s = phys(ps, &n);
		if (!s) {
			free(sb_take(&body));
			return base_errf(ps->err, ps->errlen, "line %u: RUN: the heredoc '%s' is never ended", line,
			                 word);
		}
		const char *t = s;
		if (strip)
			while (n && *t == '\t')
				t++, n--;
		if (n == strlen(word) && !memcmp(t, word, n))
			break;
		sb_putn(&body, t, n);
		sb_putc(&body, '\n');
		if (body.n > BUILD_FILE_MAX)
			break;
	}
	char *b = sb_take(&body);
	if (!b)
		return base_errf(ps->err, ps->errlen, "out of memory");
	const char *h = strstr(args, "<<");
	bool bare = true;
	for (const char *c = args; c < h; c++)
		bare &= isspace((unsigned char)*c) != 0;
	char *t = NULL;
	int r = bare ? asprintf(&t, "%s", b) : asprintf(&t, "%s\n%s%s", args, b, word);
	free(b);
	if (r < 0)
		return base_errf(ps->err, ps->errlen, "out of memory");
	*cmd = t;
	return 0;
}

/* The JSON form: when the arguments parse as an array of strings (Docker's
 * rule), true and the strings pushed. */
static bool json_form(const char *args, struct bstep *s, bool *oom)
{
	const char *a = args;
	while (isspace((unsigned char)*a))
		a++;
	if (*a != '[')
		return false;
	json_t *j = json_loads(a, 0, NULL);
	bool ok = json_is_array(j);
	for (size_t i = 0; ok && i < json_array_size(j); i++) {
		json_t *v = json_array_get(j, i);
		ok = json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
	}
	for (size_t i = 0; ok && i < json_array_size(j); i++)
		if (push(s, strdup(json_string_value(json_array_get(j, i))), false) < 0)
			*oom = true;
	json_decref(j);
	s->exec = ok;
	return ok;
}

/* ---- instructions ---- */

struct inst {
	struct parser *ps;
	struct bstep *s;
	const char *args; /* what follows the instruction's name */
	bool oom;
};

static int refuse(struct inst *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct inst *in, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	return base_errf(in->ps->err, in->ps->errlen, "line %u: %s: %s", in->s->line, build_op_name(in->s->op), m);
}

/* A word build_expand will take at build time, checked now. */
static int check_word(struct inst *in, const char *w)
{
	char e[200], *out;
	if (!w)
		return 0;
	if (build_expand(w, in->ps->esc, NULL, NULL, &out, e, sizeof(e)) < 0)
		return refuse(in, "%s", e);
	free(out);
	return 0;
}

/* --name=value flags before the arguments: RUN, COPY, ADD and FROM take
 * only those ward builds. */
static int flags(struct inst *in)
{
	for (;;) {
		while (*in->args == ' ' || *in->args == '\t')
			in->args++;
		if (strncmp(in->args, "--", 2))
			return 0;
		char *w = next_word(&in->args, in->ps->esc, &in->oom);
		if (!w)
			return -1;
		char *eq = strchr(w, '=');
		char **slot = NULL;
		if (eq) {
			*eq = 0;
			if (!strcmp(w, "--from") && in->s->op == BS_COPY)
				slot = &in->s->from;
			else if (!strcmp(w, "--chown") && (in->s->op == BS_COPY || in->s->op == BS_ADD))
				slot = &in->s->chown;
			else if (!strcmp(w, "--chmod") && (in->s->op == BS_COPY || in->s->op == BS_ADD))
				slot = &in->s->chmod;
		}
		if (!slot || *slot) {
			int r = refuse(in,
			               "the flag '%.60s' is not one ward builds (COPY takes --from, --chown and "
			               "--chmod once each; ADD --chown and --chmod)",
			               w);
			free(w);
			return r;
		}
		*slot = strdup(eq + 1);
		free(w);
		if (!*slot || check_word(in, *slot) < 0)
			return -1;
	}
}

/* The rest of the line as words (COPY's sources, EXPOSE's ports). */
static int words(struct inst *in)
{
	char *w;
	while ((w = next_word(&in->args, in->ps->esc, &in->oom)))
		if (push(in->s, w, false) < 0 || check_word(in, w) < 0)
			return -1;
	return in->oom ? -1 : 0;
}

/* The rest of the line, trimmed, as the one argument. */
static int rest(struct inst *in, bool check)
{
	const char *a = in->args;
	while (isspace((unsigned char)*a))
		a++;
	size_t n = strlen(a);
	while (n && isspace((unsigned char)a[n - 1]))
		n--;
	if (!n)
		return refuse(in, "it needs an argument");
	char *v = strndup(a, n);
	if (push(in->s, v, false) < 0)
		return -1;
	return check ? check_word(in, v) : 0;
}

static int do_from(struct inst *in)
{
	if (flags(in) < 0)
		return -1;
	char *img = next_word(&in->args, in->ps->esc, &in->oom);
	char *as = next_word(&in->args, in->ps->esc, &in->oom);
	char *name = next_word(&in->args, in->ps->esc, &in->oom);
	char *extra = next_word(&in->args, in->ps->esc, &in->oom);
	int rc = 0;
	if (!img || (as && (strcasecmp(as, "AS") || !name)) || extra)
		rc = refuse(in, "give FROM IMAGE [AS NAME]");
	else if (push(in->s, img, false) == 0) {
		img = NULL;
		in->s->from = name;
		name = NULL;
		rc = check_word(in, in->s->args[0]);
	} else
		rc = -1;
	free(img);
	free(as);
	free(name);
	free(extra);
	return rc;
}

static int do_command(struct inst *in)
{
	if (flags(in) < 0)
		return -1;
	if (json_form(in->args, in->s, &in->oom))
		return in->oom ? -1 : 0;
	if (in->s->op == BS_SHELL)
		return refuse(in, "SHELL takes the JSON form: SHELL [\"/bin/bash\", \"-c\"]");
	return rest(in, false);
}

static int do_copy(struct inst *in)
{
	if (flags(in) < 0)
		return -1;
	if (!json_form(in->args, in->s, &in->oom) && words(in) < 0)
		return -1;
	if (in->oom)
		return -1;
	if (in->s->nargs < 2)
		return refuse(in, "give at least one source and a destination");
	for (size_t i = 0; i + 1 < in->s->nargs; i++) {
		const char *a = in->s->args[i];
		if (strstr(a, "://") || !strncmp(a, "git@", 4))
			return refuse(in, "'%.100s': ward copies from the build context only, not from a URL", a);
		if (!strncmp(a, "<<", 2))
			return refuse(in, "heredocs in %s are not built by ward: write the file with RUN",
			              build_op_name(in->s->op));
	}
	return 0;
}

static bool valid_name(const char *n)
{
	return *n && !strchr(n, '$');
}

/* ENV and LABEL: name=value pairs, or (legacy) "name value...". */
static int pairs(struct inst *in)
{
	const char *save = in->args;
	char *first = next_word(&in->args, in->ps->esc, &in->oom);
	if (!first)
		return in->oom ? -1 : refuse(in, "it needs NAME=VALUE");
	if (!strchr(first, '=')) {
		in->args = save;
		free(first);
		char *name = next_word(&in->args, in->ps->esc, &in->oom);
		if (!name || push(in->s, name, false) < 0)
			return -1;
		if (rest(in, true) < 0)
			return -1;
		return check_word(in, name);
	}
	for (char *w = first; w; w = next_word(&in->args, in->ps->esc, &in->oom)) {
		char *eq = strchr(w, '=');
		if (!eq || eq == w) {
			int r = refuse(in, "'%.60s' is not NAME=VALUE", w);
			free(w);
			return r;
		}
		char *v = strdup(eq + 1);
		*eq = 0;
		if (push(in->s, w, false) < 0 || push(in->s, v, false) < 0)
			return -1;
		if (check_word(in, w) < 0 || check_word(in, v) < 0)
			return -1;
	}
	return in->oom ? -1 : 0;
}

static int do_arg(struct inst *in)
{
	char *w;
	while ((w = next_word(&in->args, in->ps->esc, &in->oom))) {
		char *eq = strchr(w, '=');
		char *v = NULL;
		if (eq) {
			v = strdup(eq + 1);
			*eq = 0;
			if (!v) {
				free(w);
				return -1;
			}
		}
		if (!valid_name(w) || !name_start(w[0])) {
			int r = refuse(in, "'%.60s' is not a variable name", w);
			free(w);
			free(v);
			return r;
		}
		if (push(in->s, w, false) < 0 || push(in->s, v, true) < 0 || check_word(in, v) < 0)
			return -1;
	}
	return in->oom ? -1 : in->s->nargs ? 0 : refuse(in, "it needs a NAME[=DEFAULT]");
}

static const struct {
	const char *name;
	enum bstep_op op;
	int (*parse)(struct inst *);
} table[] = {
	{"FROM", BS_FROM, do_from},      {"RUN", BS_RUN, do_command},
	{"CMD", BS_CMD, do_command},     {"ENTRYPOINT", BS_ENTRYPOINT, do_command},
	{"SHELL", BS_SHELL, do_command}, {"COPY", BS_COPY, do_copy},
	{"ADD", BS_ADD, do_copy},        {"ENV", BS_ENV, pairs},
	{"LABEL", BS_LABEL, pairs},      {"ARG", BS_ARG, do_arg},
	{"EXPOSE", BS_EXPOSE, words},    {"WORKDIR", BS_WORKDIR, NULL},
	{"USER", BS_USER, NULL},         {"STOPSIGNAL", BS_STOPSIGNAL, NULL},
};

static int one_arg(struct inst *in)
{
	return rest(in, true);
}

static void step_free(struct bstep *s)
{
	for (size_t i = 0; i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	free(s->text);
	free(s->from);
	free(s->chown);
	free(s->chmod);
}

void build_file_free(struct bfile *f)
{
	for (size_t i = 0; f && i < f->n; i++)
		step_free(&f->v[i]);
	if (f) {
		free(f->v);
		f->v = NULL;
		f->n = 0;
	}
}

/* One logical line into step s (s->text is the line, owned by s). */
static int instruction(struct parser *ps, struct bstep *s)
{
	const char *t = s->text;
	while (isspace((unsigned char)*t))
		t++;
	size_t n = 0;
	while (t[n] && !isspace((unsigned char)t[n]))
		n++;
	struct inst in = {.ps = ps, .s = s, .args = t + n};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strlen(table[i].name) == n && !strncasecmp(t, table[i].name, n)) {
			s->op = table[i].op;
			int rc = 0;
			char *cmd = NULL;
			if (s->op == BS_RUN && (flags(&in) < 0 || heredoc(ps, s->line, in.args, &cmd) < 0))
				return -1;
			if (cmd) { /* the text (the cache key) gets the body too */
				char *nt = NULL;
				if (asprintf(&nt, "%s\n%s", s->text, cmd) < 0 || push(s, cmd, false) < 0) {
					free(nt);
					return base_errf(ps->err, ps->errlen, "out of memory");
				}
				free(s->text);
				s->text = nt;
				return 0;
			}
			rc = table[i].parse ? table[i].parse(&in) : one_arg(&in);
			if (rc < 0 && in.oom)
				return base_errf(ps->err, ps->errlen, "out of memory");
			return rc;
		}
	return base_errf(ps->err, ps->errlen,
	                 "line %u: %.*s: ward does not build this instruction (it builds FROM, RUN, "
	                 "COPY, ADD, ENV, ARG, WORKDIR, USER, CMD, ENTRYPOINT, LABEL, EXPOSE, SHELL, "
	                 "STOPSIGNAL): refused before any step ran",
	                 s->line, (int)(n > 40 ? 40 : n), t);
}

/* The stages: FROM first (ARGs before it aside), COPY --from naming an
 * earlier stage (or an image, which the builder looks up). */
static int check_stages(struct parser *ps)
{
	bool seen_from = false;
	for (size_t i = 0; i < ps->f->n; i++) {
		struct bstep *s = &ps->f->v[i];
		if (s->op == BS_FROM)
			seen_from = true;
		else if (!seen_from && s->op != BS_ARG)
			return base_errf(ps->err, ps->errlen, "line %u: %s: before the first FROM only ARG may stand",
			                 s->line, build_op_name(s->op));
	}
	return seen_from ? 0
	                 : base_errf(ps->err, ps->errlen, "the Dockerfile has no FROM: give FROM IMAGE (or scratch)");
}

int build_parse(const char *text, size_t len, struct bfile *out, char *err, size_t errlen)
{
	*out = (struct bfile){.escape = '\\'};
	if (len > BUILD_FILE_MAX)
		return base_errf(err, errlen, "the Dockerfile is %zu bytes: ward reads at most %u", len,
		                 BUILD_FILE_MAX);
	if (memchr(text, 0, len))
		return base_errf(err, errlen, "the Dockerfile holds a NUL byte: refused");
	struct parser ps = {.p = text, .end = text + len, .esc = '\\', .f = out, .err = err, .errlen = errlen};
	if (directives(&ps) < 0)
		return -1;
	for (;;) {
		char *line = NULL;
		unsigned at = 0;
		int r = logical(&ps, &line, &at);
		if (r <= 0) {
			if (r < 0)
				goto bad;
			break;
		}
		if (out->n == BUILD_STEPS_MAX) {
			free(line);
			base_errf(err, errlen, "line %u: more than %d instructions: refused", at, BUILD_STEPS_MAX);
			goto bad;
		}
		struct bstep *v = realloc(out->v, (out->n + 1) * sizeof(*v));
		if (!v) {
			free(line);
			base_errf(err, errlen, "out of memory");
			goto bad;
		}
		out->v = v;
		v[out->n] = (struct bstep){.line = at, .text = line};
		if (instruction(&ps, &v[out->n++]) < 0)
			goto bad;
	}
	out->escape = ps.esc;
	if (check_stages(&ps) < 0)
		goto bad;
	return 0;
bad:
	build_file_free(out);
	return -1;
}
