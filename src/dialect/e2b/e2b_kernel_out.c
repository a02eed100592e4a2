/* e2b_kernel_out.c — a code context's kernel output, as the events
 * /execute streams (e2b_kernel.h): the Python and Node kernels' protocol
 * lines (bounded by PROTO_LINE_MAX), the raw streams' text (bash's stdout,
 * every kernel's stderr) cut into events of at most EVENT_MAX that are
 * always whole UTF-8, and bash's end-of-cell marker found in its stream. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dialect/e2b/e2b_kernel.h"
#include "wire/utf8.h"

static void add_raw(char **buf, size_t *len, const char *t, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (!b)
		return;
	memcpy(b + *len, t, n);
	b[*len + n] = '\n';
	*buf = b;
	*len += n + 1;
}

void kernel_add_line(char **buf, size_t *len, json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	if (t)
		add_raw(buf, len, t, strlen(t));
	free(t);
}

static double now_rt(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void add_text(char **buf, size_t *len, const char *stream, const char *t, size_t n)
{
	char ts[40];
	double r = now_rt();
	time_t sec = (time_t)r;
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t k = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + k, sizeof(ts) - k, ".%06ldZ", (long)((r - (double)sec) * 1e6));
	kernel_add_line(buf, len, json_pack("{s:s,s:s%,s:s}", "type", stream, "text", t, n, "timestamp", ts));
}

/* Text of stream i as events of at most EVENT_MAX; unless final, a
 * character cut at the end is held for the next read. */
static void raw_text(struct kread *k, int i, const char *t, size_t n, bool final, char **buf, size_t *len)
{
	static const char *const names[] = {"stdout", "stderr"};
	size_t hold = final ? 0 : utf8_partial_tail((const unsigned char *)t, n), body = n - hold;
	for (size_t off = 0; off < body;) {
		size_t chunk = body - off > EVENT_MAX ? EVENT_MAX : body - off;
		if (off + chunk < body) /* never a character cut at EVENT_MAX */
			chunk -= utf8_partial_tail((const unsigned char *)t + off, chunk);
		size_t ol = 0;
		char *o = utf8_sanitize(t + off, chunk, &ol);
		if (o && ol)
			add_text(buf, len, names[i], o, ol);
		free(o);
		off += chunk;
	}
	memcpy(k->raw[i], t + body, hold); /* at most 3 bytes */
	k->rlen[i] = hold;
}

/* "\036" HEAD "...\n" in t[0..n): its offset, *nl that of its newline;
 * -1 (with *hold: where a possible start begins, else n) when absent. */
static ssize_t find_mark(const char *t, size_t n, const char *head, size_t hl, size_t *nl, size_t *hold)
{
	*hold = n;
	const char *at = memmem(t, n, head, hl);
	const char *e = at ? memchr(at, '\n', n - (size_t)(at - t)) : NULL;
	if (at && e) {
		*nl = (size_t)(e - t);
		return at - t;
	}
	const char *last = memrchr(t, '\036', n);
	if (last && n - (size_t)(last - t) <= MARK_MAX)
		*hold = (size_t)(last - t);
	return -1;
}

/* Raw bytes of stream i (0 stdout, 1 stderr) out as events; in a bash
 * kernel the ready line, and a cell's marker, which ends the stream's part
 * of the cell. */
static void raw_in(struct kread *k, int i, const char *d, size_t n, char **buf, size_t *len)
{
	size_t cap = k->rlen[i] + n, start = 0, nl = 0, hold = 0;
	char *all = malloc(cap ? cap : 1);
	if (!all)
		return;
	memcpy(all, k->raw[i], k->rlen[i]);
	memcpy(all + k->rlen[i], d, n);
	k->rlen[i] = 0;
	if (is_bash(k->c) && i == 0 && !k->ready) {
		static const char r[] = "\036__ready__ ";
		ssize_t at = find_mark(all, cap, r, sizeof(r) - 1, &nl, &hold);
		if (at < 0)
			goto tail;
		raw_text(k, i, all, (size_t)at, true, buf, len);
		snprintf(k->c->kind, sizeof(k->c->kind), "%.*s", (int)(nl - (size_t)at - (sizeof(r) - 1)),
		         all + at + sizeof(r) - 1);
		k->ready = true;
		start = nl + 1;
	}
	if (k->token[0] && !k->marked[i]) {
		char m[48];
		int ml = snprintf(m, sizeof(m), "\036%s", k->token);
		ssize_t at = find_mark(all + start, cap - start, m, (size_t)ml, &nl, &hold);
		if (at < 0) {
			hold += start;
			goto tail;
		}
		raw_text(k, i, all + start, (size_t)at, true, buf, len);
		if (i == 0)
			k->status = atoi(all + start + at + ml);
		k->marked[i] = true;
		k->finished = k->marked[0] && k->marked[1];
		start += nl + 1; /* what follows is output of no cell's (a background job's): shown as it comes */
	}
	hold = cap;
tail:
	raw_text(k, i, all + start, hold - start, hold < cap, buf, len);
	if (hold < cap) {
		memcpy(k->raw[i] + k->rlen[i], all + hold, cap - hold); /* at most MARK_MAX */
		k->rlen[i] += cap - hold;
	}
	free(all);
}

/* "{"type": "__NAME__"..." (with or without the space JSON writers put
 * after the colon): NAME's start, else NULL. */
static const char *internal(const char *line, size_t n)
{
	if (n < 12 || memcmp(line, "{\"type\":", 8) != 0)
		return NULL;
	size_t i = 8;
	if (line[i] == ' ')
		i++;
	return n - i > 3 && memcmp(line + i, "\"__", 3) == 0 ? line + i + 3 : NULL;
}

/* One of the kernel's own lines (ready, unavailable, done). */
static void internal_line(struct kread *k, const char *name, const char *line, size_t n)
{
	if (strncmp(name, "done__", 6) == 0) {
		k->finished = true;
		return;
	}
	json_t *v = json_loadb(line, n, 0, NULL);
	const char *kind = json_string_value(json_object_get(v, "kernel"));
	const char *miss = json_string_value(json_object_get(v, "missing"));
	if (strncmp(name, "ready__", 7) == 0) {
		snprintf(k->c->kind, sizeof(k->c->kind), "%s", kind ? kind : "?");
		k->ready = true;
	} else if (strncmp(name, "unavailable__", 13) == 0)
		snprintf(k->missing, sizeof(k->missing), "%s", miss ? miss : "?");
	json_decref(v);
}

/* The protocol's bytes: whole lines out to the client, each at most
 * PROTO_LINE_MAX (the rest of a longer one dropped and said). */
static void proto_in(struct kread *k, const char *d, size_t n, char **buf, size_t *len)
{
	while (n) {
		const char *nl = memchr(d, '\n', n);
		size_t part = nl ? (size_t)(nl - d) : n;
		if (k->skipped || k->plen + part > PROTO_LINE_MAX) {
			k->skipped += k->plen + part;
			free(k->pend);
			k->pend = NULL;
			k->plen = 0;
		} else if (part) {
			char *p = realloc(k->pend, k->plen + part);
			if (!p) {
				k->skipped += k->plen + part;
				free(k->pend);
				k->pend = NULL;
				k->plen = 0;
			} else {
				memcpy(p + k->plen, d, part);
				k->pend = p;
				k->plen += part;
			}
		}
		if (!nl)
			return;
		d += part + 1;
		n -= part + 1;
		if (k->skipped) {
			char note[200];
			snprintf(note, sizeof(note),
			         "[ward: an output of %llu bytes in one piece was dropped: the kernel's events are "
			         "kept up "
			         "to %u MiB each]\n",
			         (unsigned long long)k->skipped, PROTO_LINE_MAX >> 20);
			add_text(buf, len, "stderr", note, strlen(note));
			k->skipped = 0;
			continue;
		}
		const char *name = internal(k->pend, k->plen);
		if (name)
			internal_line(k, name, k->pend, k->plen);
		else if (k->plen)
			add_raw(buf, len, k->pend, k->plen); /* never a blank line: JSON.parse("") throws */
		free(k->pend);
		k->pend = NULL;
		k->plen = 0;
	}
}

/* One read of the kernel's output (waiting up to wait_s); false when the
 * kernel is gone (died, killed, the sandbox ended), with its exit code in
 * *code when it exited. */
bool kernel_read(struct kread *k, double wait_s, char **buf, size_t *len, int *code)
{
	struct sess *ss = e2b_sess(k->e, k->x);
	if (!ss)
		return false;
	struct ward_stream o, er;
	memset(&o, 0, sizeof(o));
	memset(&er, 0, sizeof(er));
	bool exited = false;
	int ec = -1;
	int rc = ward_session_proc_output(ss->ws, k->c->pid, k->c->off[0], k->c->off[1], wait_s, &o, &er, &exited, &ec,
	                                  NULL, 0);
	sess_unref(k->e->s, ss);
	if (rc < 0) {
		free(o.data);
		free(er.data);
		return false;
	}
	/* bytes past the kept window were lost while nobody read: skipped,
	 * and a protocol line they cut is dropped (and said), never sent torn */
	uint64_t from = o.bytes - o.len;
	if (from > k->c->off[0] && !is_bash(k->c)) {
		k->skipped += k->plen + (from - k->c->off[0]);
		free(k->pend);
		k->pend = NULL;
		k->plen = 0;
	}
	k->c->off[0] = o.bytes > k->c->off[0] ? o.bytes : k->c->off[0];
	k->c->off[1] = er.bytes > k->c->off[1] ? er.bytes : k->c->off[1];
	if (o.len) {
		if (is_bash(k->c))
			raw_in(k, 0, o.data, o.len, buf, len);
		else
			proto_in(k, o.data, o.len, buf, len);
	}
	if (er.len)
		raw_in(k, 1, er.data, er.len, buf, len);
	bool more = o.len >= WARD_SESSION_OUTPUT_CHUNK || er.len >= WARD_SESSION_OUTPUT_CHUNK;
	free(o.data);
	free(er.data);
	if (code)
		*code = ec;
	return !(exited && !more && !k->finished);
}
