/* remote.c — `ward run --remote URL`: the same request, run by a ward
 * serve runner (POST URL/exec) through libcurl, and the same result back.
 *
 * A runner that is down, refuses, or answers something that is not a
 * result is ward's own failure (status error, exit 125): the run never
 * falls back to running locally, which would silently drop the isolation
 * the caller asked the runner for.  The wire format is json.c's: this file
 * only moves its bytes. */
/* libcurl is loaded (dlopen) the first time --remote is used, not linked
 * (server/libcurl.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/request.h"
#include "front/frontends.h"
#include "front/remote.h"
#include "server/libcurl.h"
#include "ward.h"
#include "wire/wire.h"

/* The answer holds at most two capped streams, JSON-escaped (up to six
 * bytes a byte); anything larger is not a runner's answer. */
#define REMOTE_MAX_ANSWER (512u << 20)

struct answer {
	char *p;
	size_t len, cap;
	bool overflow;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct answer *a = userdata;
	size_t n = size * nmemb;
	if (a->len + n + 1 > REMOTE_MAX_ANSWER) {
		a->overflow = true;
		return 0; /* makes curl fail with CURLE_WRITE_ERROR */
	}
	if (a->len + n + 1 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16384;
		while (cap < a->len + n + 1)
			cap *= 2;
		char *p = realloc(a->p, cap);
		if (!p)
			return 0;
		a->p = p;
		a->cap = cap;
	}
	memcpy(a->p + a->len, ptr, n);
	a->len += n;
	a->p[a->len] = 0;
	return n;
}

static void fail(struct ward_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct ward_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
	res->status = WARD_ST_ERROR;
	res->exit_code = WARD_EXIT_FAILED;
}

/* Read fd to its end (the caller's --stdin), at most WARD_MAX_STDIN_BYTES. */
static int slurp(int fd, unsigned char **out, size_t *outlen)
{
	size_t cap = 65536, len = 0;
	unsigned char *p = malloc(cap);
	if (!p)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= WARD_MAX_STDIN_BYTES + 1u) {
				free(p);
				return -EFBIG;
			}
			unsigned char *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		ssize_t n = read(fd, p + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(p);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > WARD_MAX_STDIN_BYTES) {
			free(p);
			return -EFBIG;
		}
	}
	*out = p;
	*outlen = len;
	return 0;
}

void remote_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

#undef curl_easy_setopt /* curl.h's pass-through macros */
#undef curl_easy_getinfo
/* Called once libcurl_load() answered (the entry points check). */
#define curl_easy_init libcurl_load()->easy_init
#define curl_easy_setopt libcurl_load()->easy_setopt
#define curl_easy_perform libcurl_load()->easy_perform
#define curl_easy_getinfo libcurl_load()->easy_getinfo
#define curl_easy_strerror libcurl_load()->easy_strerror
#define curl_easy_cleanup libcurl_load()->easy_cleanup
#define curl_slist_append libcurl_load()->slist_append
#define curl_slist_free_all libcurl_load()->slist_free_all

/* A streamed answer (Accept: application/x-ndjson, when the output goes
 * to the caller's fds): each event's output is written as it comes, the
 * result kept for the end.  Anything else (an error's JSON) is kept whole
 * in raw, as on_data keeps it. */
struct stream_ans {
	void *curl;
	const struct ward_request *req;
	int mode;          /* 0: not known yet, 1: a stream, 2: a whole answer */
	struct answer raw; /* a whole answer; a stream's line not yet complete */
	char *result;      /* the result object's JSON, once it came */
	size_t result_len;
	uint64_t shown[2]; /* bytes of each stream written so far */
	bool dropped[2];   /* the runner dropped some: the result's rest is not a continuation */
};

/* One event of the stream. */
static void stream_event(struct stream_ans *a, const char *line, size_t n)
{
	json_t *ev = json_loadb(line, n, 0, NULL);
	if (!json_is_object(ev)) {
		json_decref(ev);
		return;
	}
	json_t *r = json_object_get(ev, "result");
	const char *name = json_string_value(json_object_get(ev, "stream"));
	json_t *data = json_object_get(ev, "data");
	if (json_is_object(r) && !a->result) {
		a->result = json_dumps(r, JSON_COMPACT);
		a->result_len = a->result ? strlen(a->result) : 0;
	} else if (name && json_is_string(data)) {
		int i = strcmp(name, "stderr") == 0;
		if (json_object_get(ev, "dropped"))
			a->dropped[i] = true;
		remote_write_all(a->req->stream_fd[i], json_string_value(data), json_string_length(data));
		a->shown[i] += json_string_length(data);
	}
	json_decref(ev);
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct stream_ans *a = userdata;
	size_t n = size * nmemb;
	if (a->mode == 0) {
		long code = 0;
		char *ct = NULL;
		curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(a->curl, CURLINFO_CONTENT_TYPE, &ct);
		a->mode = code == 200 && ct && strncmp(ct, "application/x-ndjson", 20) == 0 ? 1 : 2;
	}
	if (on_data(ptr, size, nmemb, &a->raw) != n)
		return 0;
	if (a->mode != 1)
		return n;
	/* each complete line, then keep the rest */
	char *p = a->raw.p, *end = a->raw.p + a->raw.len, *nl;
	while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
		stream_event(a, p, (size_t)(nl - p));
		p = nl + 1;
	}
	a->raw.len = (size_t)(end - p);
	memmove(a->raw.p, p, a->raw.len);
	a->raw.p[a->raw.len] = 0;
	return n;
}

char *remote_exec_url(const char *url)
{
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	/* the runner's base URL, or its /exec endpoint itself */
	if (n >= 5 && strncmp(url + n - 5, "/exec", 5) == 0)
		return strndup(url, n);
	char *out = malloc(n + 6);
	if (out) {
		memcpy(out, url, n);
		memcpy(out + n, "/exec", 6);
	}
	return out;
}

/* The request as the body to POST: stdin read to its end first when it
 * comes from an fd (*input keeps it).  malloc'd, or NULL with res failed. */
static char *remote_body(const struct ward_request *req, unsigned limits, unsigned char **input,
                         struct ward_result *res)
{
	char err[512] = "";
	struct ward_request copy = *req;
	if (!copy.stdin_set && copy.stdin_fd >= 0) {
		size_t len = 0;
		int e = slurp(copy.stdin_fd, input, &len);
		if (e < 0) {
			fail(res, "--remote: reading stdin: %s",
			     e == -EFBIG ? "more than the runner takes (16 MiB)" : strerror(-e));
			return NULL;
		}
		copy.stdin_set = true;
		copy.stdin_data = *input;
		copy.stdin_len = len;
	}
	char *body = ward_request_to_json_given(&copy, limits, err, sizeof(err));
	if (!body)
		fail(res, "--remote: %s", err);
	return body;
}

/* The request's headers, the bearer token's among them (*auth, wiped and
 * freed by the caller).  0, or -1 when out of memory. */
static int remote_headers(const char *token, struct curl_slist **hdrs, char **auth)
{
	*hdrs = curl_slist_append(*hdrs, "Content-Type: application/json");
	*hdrs = curl_slist_append(*hdrs, "Expect:"); /* no 100-continue round trip */
	if (token && *token) {
		size_t n = strlen(token) + 32;
		if (!(*auth = malloc(n)))
			return -1;
		snprintf(*auth, n, "Authorization: Bearer %s", token);
		struct curl_slist *h = curl_slist_append(*hdrs, *auth);
		if (!h)
			return -1;
		*hdrs = h;
	}
	return 0;
}

/* POST body to endpoint; the answer into ans. */
static CURLcode remote_post(CURL *c, const char *endpoint, struct curl_slist *hdrs, const char *body, double timeout_s,
                            struct stream_ans *ans)
{
	/* the run's own time, plus room to wait in the runner's queue; none
	 * when the runner's default is the run's (timeout_s < 0): the runner
	 * ends the run at its own limit */
	long timeout_ms = timeout_s < 0 ? 0 : (long)((timeout_s + 120) * 1000);
	curl_easy_setopt(c, CURLOPT_URL, endpoint);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ward/" WARD_VERSION);
	return curl_easy_perform(c);
}

/* The runner's answer: a result (HTTP 200) into res, or its refusal.  0,
 * or -1 with res failed. */
static int remote_answer(CURL *c, const char *endpoint, const struct stream_ans *sa, struct ward_result *res)
{
	char err[512] = "";
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	struct answer whole = {.p = sa->result, .len = sa->result_len};
	const struct answer *ans = sa->mode == 1 ? &whole : &sa->raw;
	if (sa->mode == 1 && !sa->result) {
		fail(res, "--remote: the runner at %s ended its stream before the result", endpoint);
		return -1;
	}
	if (code != 200) {
		char msg[400] = "";
		if (ans->p)
			ward_error_from_json(ans->p, ans->len, msg, sizeof(msg));
		fail(res, "--remote: the runner at %s refused the request (HTTP %ld)%s%s", endpoint, code,
		     msg[0] ? ": " : "", msg);
		return -1;
	}
	if (ward_result_from_json(ans->p ? ans->p : "", ans->len, res, err, sizeof(err)) < 0) {
		ward_result_free(res);
		memset(res, 0, sizeof(*res));
		fail(res, "--remote: %s", err);
		return -1;
	}
	return 0;
}

/* What of a result's stream is not shown yet: all of it, or, after its
 * head came live (shown bytes), the rest (the drop marker and the tail). */
static void remote_show_rest(int fd, const struct ward_stream *st, uint64_t shown, bool dropped)
{
	if (dropped || shown > st->len)
		return; /* what came live is not the result's start */
	remote_write_all(fd, st->data + shown, st->len - (size_t)shown);
}

/* A streaming run shows the output as it would have appeared (what the
 * runner streamed live is written already); the result keeps only the
 * counts. */
static void remote_stream_out(const struct ward_request *req, const struct stream_ans *sa, struct ward_result *res)
{
	remote_show_rest(req->stream_fd[0], &res->out, sa->shown[0], sa->dropped[0]);
	remote_show_rest(req->stream_fd[1], &res->err, sa->shown[1], sa->dropped[1]);
	res->out.len = res->err.len = 0;
	if (res->out.data)
		res->out.data[0] = 0;
	if (res->err.data)
		res->err.data[0] = 0;
}

int ward_remote_run(const char *url, const char *token, const struct ward_request *req, unsigned limits,
                    struct ward_result *res)
{
	if (!url || !*url) {
		memset(res, 0, sizeof(*res));
		res->isolation = req->isolation;
		fail(res, "--remote: no runner URL given");
		return -1;
	}
	char *endpoint = remote_exec_url(url);
	if (!endpoint) {
		memset(res, 0, sizeof(*res));
		fail(res, "--remote: out of memory");
		return -1;
	}
	int rc = remote_exec_at(endpoint, token, req, limits, res);
	free(endpoint);
	return rc;
}

int remote_exec_at(const char *endpoint, const char *token, const struct ward_request *req, unsigned limits,
                   struct ward_result *res)
{
	memset(res, 0, sizeof(*res));
	res->isolation = req->isolation;
	char *body = NULL, *auth = NULL;
	unsigned char *input = NULL;
	struct curl_slist *hdrs = NULL;
	struct stream_ans ans = {.req = req};
	CURL *c = NULL;
	int rc = -1;

	if (!(body = remote_body(req, limits, &input, res)))
		goto out;
	if (!libcurl_load() || !(c = curl_easy_init())) {
		fail(res, "--remote: cannot load or initialise libcurl (libcurl.so.4): install Debian's libcurl4");
		goto out;
	}
	if (remote_headers(token, &hdrs, &auth) < 0)
		goto oom;
	/* output to the caller's fds comes live */
	if (!req->capture && !(hdrs = curl_slist_append(hdrs, "Accept: application/x-ndjson")))
		goto oom;
	ans.curl = c;
	CURLcode cc =
		remote_post(c, endpoint, hdrs, body, limits & (1u << LIM_TIMEOUT) ? req->limits.timeout_s : -1, &ans);
	if (cc != CURLE_OK) {
		fail(res, "--remote: the runner at %s is not reachable: %s%s", endpoint,
		     ans.raw.overflow ? "its answer is too large" : curl_easy_strerror(cc),
		     cc == CURLE_COULDNT_CONNECT ? " (is ward serve running there?)" : "");
		goto out;
	}
	if (remote_answer(c, endpoint, &ans, res) < 0)
		goto out;
	if (!req->capture)
		remote_stream_out(req, &ans, res);
	rc = 0;
	goto out;
oom:
	fail(res, "--remote: out of memory");
out:
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(body);
	free(input);
	free(ans.raw.p);
	free(ans.result);
	return rc;
}

char *remote_url_join(const char *url, const char *path)
{
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	char *full;
	return asprintf(&full, "%.*s%s", (int)n, url, path) < 0 ? NULL : full;
}

/* One call to a runner's endpoint (the session CLI's): METHOD URL+path
 * with body (len bytes, may be NULL), the answer's code and bytes.  0, or
 * -1 with err (not reachable, out of memory). */
int remote_call(const struct remote_call *rc, long *code, char **answer, size_t *alen, char *err, size_t errlen)
{
	*code = 0;
	*answer = NULL;
	*alen = 0;
	CURL *c = libcurl_load() ? curl_easy_init() : NULL;
	if (!c) {
		snprintf(err, errlen, "cannot load or initialise libcurl (libcurl.so.4): install Debian's libcurl4");
		return -1;
	}
	char *full = remote_url_join(rc->url, rc->path), *auth = NULL;
	struct curl_slist *hdrs = NULL;
	struct answer ans = {0};
	int ret = -1;
	if (!full || remote_headers(rc->token, &hdrs, &auth) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rc->method);
	if (rc->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rc->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rc->len);
	}
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)((rc->timeout_s + 120) * 1000));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ward/" WARD_VERSION);
	CURLcode cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "the runner at %s is not reachable: %s%s", rc->url,
		         ans.overflow ? "its answer is too large" : curl_easy_strerror(cc),
		         cc == CURLE_COULDNT_CONNECT ? " (is ward serve running there?)" : "");
		free(ans.p);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	*answer = ans.p ? ans.p : calloc(1, 1);
	*alen = ans.len;
	ret = 0;
out:
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(full);
	return ret;
}
