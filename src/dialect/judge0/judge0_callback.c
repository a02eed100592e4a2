/* judge0_callback.c — Judge0's callback_url (research judge.md §3.5 step 8,
 * §8.5): when a submission ends, PUT its default fields, base64, as JSON
 * (Content-Type: application/json) to the URL; up to callbacks_max_tries
 * (3) tries of callbacks_timeout (5 s) each, a try failing only when no
 * answer came (any HTTP status ends it, as Judge0's); never a redirect.
 *
 * A callback is the server reaching out on a client's word, so it is
 * SSRF-shaped and held to the operator's list (--judge0-callback-allow
 * HOST) and to public addresses, at submit time (j0_callback_refused) and
 * again at each try, since a name may resolve elsewhere by then (DNS
 * rebinding): the name is resolved, every address must be public (not
 * loopback, link-local, private, CGNAT, multicast, reserved, nor one of
 * the runner's own), the first is pinned for curl (CURLOPT_RESOLVE), and
 * the socket curl opens is checked once more against it
 * (CURLOPT_OPENSOCKETFUNCTION): the address connected is the address
 * checked.  No proxy from the environment is used.
 *
 * Sending never blocks a judge: the finished submission's body is queued
 * (at most cap pending; past it the callback is dropped and logged) for a
 * few sender threads of this dialect. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "core/egress.h"
#include "dialect/judge0/judge0_int.h"
#include "server/libcurl.h"

#define CB_SENDERS 4
#define CB_TRIES 3         /* Judge0's callbacks_max_tries */
#define CB_TIMEOUT_MS 5000 /* Judge0's callbacks_timeout */
#define CB_MAX_URL 2048

struct cb_item {
	char *url, *body;
	char host[256];
	size_t bytes;
	struct cb_item *next;
};
/* What waits to be sent: at most cap callbacks (j0_callbacks_start), at
 * most a quarter of them for one host (a host that never answers holds a
 * sender for 3 x 5 s a callback: it must not crowd out the others'), and
 * at most CB_MAX_BYTES of bodies. */
#define CB_MAX_BYTES (64u << 20)

struct j0_callbacks {
	struct server *s;
	const struct libcurl *lc;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cb_item *head, *tail;
	unsigned n, cap;
	size_t bytes;
	volatile int stop;
	pthread_t th[CB_SENDERS];
	unsigned nth;
};

/* A callback URL's parts: http or https, a host (a name of letters,
 * digits, '.' and '-', an IPv4 address, or an IPv6 one in brackets), an
 * optional port; no user info, nothing curl could read another way. */
struct cb_url {
	bool https;
	char host[256]; /* without the brackets */
	unsigned port;
};

static bool parse_url(const char *url, struct cb_url *u)
{
	memset(u, 0, sizeof(*u));
	const char *p;
	if (strlen(url) > CB_MAX_URL)
		return false;
	if (!strncmp(url, "http://", 7))
		p = url + 7;
	else if (!strncmp(url, "https://", 8))
		p = url + 8, u->https = true;
	else
		return false;
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '\\')
			return false;
	size_t end = strcspn(p, "/?#");
	if (memchr(p, '@', end))
		return false;
	size_t hl;
	if (*p == '[') {
		hl = strspn(p + 1, "0123456789abcdefABCDEF:.");
		if (p[1 + hl] != ']' || hl == 0 || hl >= sizeof(u->host))
			return false;
		memcpy(u->host, p + 1, hl);
		p += hl + 2;
	} else {
		hl = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
		if (hl == 0 || hl >= sizeof(u->host))
			return false;
		memcpy(u->host, p, hl);
		p += hl;
	}
	u->port = u->https ? 443 : 80;
	if (*p == ':') {
		size_t dl = strspn(p + 1, "0123456789");
		if (dl == 0 || dl > 5)
			return false;
		u->port = (unsigned)strtoul(p + 1, NULL, 10);
		p += 1 + dl;
	}
	return u->port > 0 && u->port < 65536 && (!*p || *p == '/' || *p == '?' || *p == '#');
}

/* A lookup with a deadline: getaddrinfo has none of its own, and a
 * listed host whose name server stalls must not hold a request's handler
 * or a sender for long.  It runs on a thread of its own; the caller waits
 * up to CB_DNS_MS and leaves it behind when the time is up (the job is
 * freed by whichever of the two is last).  At most CB_DNS_THREADS lookups
 * run at once: past that a lookup fails at once. */
#define CB_DNS_MS 5000
#define CB_DNS_THREADS 16
struct gai_job {
	pthread_mutex_t m;
	pthread_cond_t c;
	int refs, rc;
	bool done;
	struct addrinfo *res;
	char host[256], port[8];
};
static atomic_uint g_dns_running;

static void gai_put(struct gai_job *j)
{
	pthread_mutex_lock(&j->m);
	int left = --j->refs;
	pthread_mutex_unlock(&j->m);
	if (left)
		return;
	if (j->res)
		freeaddrinfo(j->res);
	pthread_mutex_destroy(&j->m);
	pthread_cond_destroy(&j->c);
	free(j);
}

static void *gai_thread(void *arg)
{
	struct gai_job *j = arg;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(j->host, j->port, &hints, &res);
	pthread_mutex_lock(&j->m);
	j->rc = rc;
	j->res = res;
	j->done = true;
	pthread_cond_signal(&j->c);
	pthread_mutex_unlock(&j->m);
	atomic_fetch_sub(&g_dns_running, 1);
	gai_put(j);
	return NULL;
}

/* getaddrinfo(host, port) within CB_DNS_MS: 0 and *res, or why not. */
static const char *gai_timed(const char *host, unsigned port, struct addrinfo **res)
{
	*res = NULL;
	struct gai_job *j = calloc(1, sizeof(*j));
	if (!j)
		return "out of memory";
	snprintf(j->host, sizeof(j->host), "%s", host);
	snprintf(j->port, sizeof(j->port), "%u", port);
	j->refs = 2;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&j->m, NULL);
	pthread_cond_init(&j->c, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	bool started =
		atomic_fetch_add(&g_dns_running, 1) < CB_DNS_THREADS && pthread_create(&th, &at, gai_thread, j) == 0;
	pthread_attr_destroy(&at);
	if (!started) {
		atomic_fetch_sub(&g_dns_running, 1);
		j->refs = 1;
		gai_put(j);
		return "its host's lookup could not start (too many lookups at once)";
	}
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += CB_DNS_MS / 1000;
	pthread_mutex_lock(&j->m);
	while (!j->done && pthread_cond_timedwait(&j->c, &j->m, &dl) == 0)
		;
	const char *why = !j->done           ? "its host's lookup took over 5 s"
	                  : j->rc || !j->res ? "its host does not resolve"
	                                     : NULL;
	if (!why) {
		*res = j->res;
		j->res = NULL;
	}
	pthread_mutex_unlock(&j->m);
	gai_put(j);
	return why;
}

/* The host's addresses, every one public; the first in *pin.  NULL, or
 * why not (why holds the words). */
static const char *resolve_public(const struct cb_url *u, struct sockaddr_storage *pin, char *why, size_t n)
{
	struct addrinfo *ai = NULL;
	const char *failed = gai_timed(u->host, u->port, &ai);
	if (failed) {
		snprintf(why, n, "%s", failed);
		return why;
	}
	struct sockaddr_storage own[64];
	size_t nown = egress_own_addresses(own, 64);
	const char *w = NULL;
	for (struct addrinfo *a = ai; a && !w; a = a->ai_next)
		w = egress_addr_refused(a->ai_addr, own, nown);
	if (w)
		snprintf(why, n, "its host resolves to a %s address, which a callback never reaches", w);
	else
		memcpy(pin, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return w ? why : NULL;
}

/* Every check of a callback URL; the address to connect in *pin. */
static const char *check(struct server *s, const char *url, struct cb_url *u, struct sockaddr_storage *pin, char *why,
                         size_t n)
{
	if (!parse_url(url, u)) {
		snprintf(why, n, "is not an http(s) URL (a host name or address, a port, no user info)");
		return why;
	}
	bool listed = false;
	for (size_t i = 0; i < s->o.njudge0_callback_allow; i++)
		listed = listed || !strcasecmp(s->o.judge0_callback_allow[i], u->host);
	if (!listed) {
		snprintf(why, n,
		         "setting callback is not allowed for this host (the operator lists the hosts a callback "
		         "may reach: ward serve --judge0-callback-allow HOST)");
		return why;
	}
	return resolve_public(u, pin, why, n);
}

const char *j0_callback_refused(struct server *s, const char *url, char *why, size_t n)
{
	struct cb_url u;
	struct sockaddr_storage pin;
	return check(s, url, &u, &pin, why, n);
}

/* ---- one PUT ---- */

struct try_ctx {
	struct j0_callbacks *cb;
	struct sockaddr_storage pin;
	bool refused;
};

/* The socket curl connects: only to the address pinned and checked. */
static curl_socket_t open_checked(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct try_ctx *t = arg;
	if (purpose != CURLSOCKTYPE_IPCXN || !egress_addr_equal(&a->addr, (struct sockaddr *)&t->pin) ||
	    egress_addr_refused(&a->addr, NULL, 0)) {
		t->refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t discard(char *p, size_t size, size_t nmemb, void *arg)
{
	return size * nmemb;
}

static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct try_ctx *t = arg;
	return t->cb->stop != 0; /* non-zero aborts the transfer: the server stops */
}

/* One try: 1 answered (whatever its status), 0 failed (try again), -1
 * refused (never again); why says what went wrong. */
static int put_once(struct j0_callbacks *cb, const char *url, const char *body, char *why, size_t n)
{
	const struct libcurl *lc = cb->lc;
	struct cb_url u;
	struct try_ctx t = {.cb = cb};
	if (check(cb->s, url, &u, &t.pin, why, n))
		return -1;
	char addr[INET6_ADDRSTRLEN], pin[sizeof(u.host) + INET6_ADDRSTRLEN + 16];
	const struct sockaddr *sa = (const struct sockaddr *)&t.pin;
	inet_ntop(sa->sa_family,
	          sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
	                                   : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr,
	          addr, sizeof(addr));
	snprintf(pin, sizeof(pin), sa->sa_family == AF_INET6 ? "%s:%u:[%s]" : "%s:%u:%s", u.host, u.port, addr);
	struct curl_slist *hdrs = lc->slist_append(NULL, "Content-Type: application/json");
	struct curl_slist *resolve = lc->slist_append(NULL, pin);
	CURL *c = lc->easy_init();
	int rc = 0;
	if (!hdrs || !resolve || !c) {
		snprintf(why, n, "out of memory");
		goto out;
	}
	lc->easy_setopt(c, CURLOPT_URL, url);
	lc->easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
	lc->easy_setopt(c, CURLOPT_POSTFIELDS, body);
	lc->easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	lc->easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	lc->easy_setopt(c, CURLOPT_RESOLVE, resolve);
	lc->easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_checked);
	lc->easy_setopt(c, CURLOPT_OPENSOCKETDATA, &t);
	lc->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	lc->easy_setopt(c, CURLOPT_PROXY, "");
	lc->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	lc->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)CB_TIMEOUT_MS);
	lc->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	lc->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	lc->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	lc->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	lc->easy_setopt(c, CURLOPT_XFERINFODATA, &t);
	lc->easy_setopt(c, CURLOPT_USERAGENT, "ward (Judge0 CE 1.13.1 dialect)");
	CURLcode e = lc->easy_perform(c);
	if (t.refused) {
		snprintf(why, n, "its address changed between the check and the connection: refused");
		rc = -1;
	} else if (e == CURLE_OK) {
		rc = 1;
	} else {
		snprintf(why, n, "%s", lc->easy_strerror(e));
	}
out:
	if (c)
		lc->easy_cleanup(c);
	lc->slist_free_all(hdrs);
	lc->slist_free_all(resolve);
	return rc;
}

static void send_one(struct j0_callbacks *cb, const struct cb_item *it)
{
	char why[300] = "";
	int rc = 0, tries = 0;
	while (rc == 0 && tries < CB_TRIES && !cb->stop) {
		tries++;
		rc = put_once(cb, it->url, it->body, why, sizeof(why));
	}
	if (rc < 0)
		log_event(cb->s, "judge0-callback", "PUT %.300s refused, nothing sent: callback_url %s", it->url, why);
	else if (rc == 0)
		log_event(cb->s, "judge0-callback", "PUT %.300s failed after %d tries: %s", it->url, tries, why);
}

static void *sender(void *arg)
{
	struct j0_callbacks *cb = arg;
	pthread_mutex_lock(&cb->lock);
	for (;;) {
		while (!cb->stop && !cb->head)
			pthread_cond_wait(&cb->cond, &cb->lock);
		if (cb->stop)
			break;
		struct cb_item *it = cb->head;
		cb->head = it->next;
		if (!cb->head)
			cb->tail = NULL;
		cb->n--;
		cb->bytes -= it->bytes;
		pthread_mutex_unlock(&cb->lock);
		send_one(cb, it);
		free(it->url);
		free(it->body);
		free(it);
		pthread_mutex_lock(&cb->lock);
	}
	pthread_mutex_unlock(&cb->lock);
	return NULL;
}

struct j0_callbacks *j0_callbacks_start(struct server *s, unsigned cap)
{
	const struct libcurl *lc = libcurl_load();
	if (!lc) {
		log_event(s, "judge0-callback",
		          "callbacks are off: libcurl (libcurl.so.4) cannot be loaded; install "
		          "Debian's libcurl4");
		return NULL;
	}
	struct j0_callbacks *cb = calloc(1, sizeof(*cb));
	if (!cb)
		return NULL;
	cb->s = s;
	cb->lc = lc;
	cb->cap = cap;
	pthread_mutex_init(&cb->lock, NULL);
	pthread_cond_init(&cb->cond, NULL);
	for (; cb->nth < CB_SENDERS; cb->nth++)
		if (pthread_create(&cb->th[cb->nth], NULL, sender, cb))
			break;
	if (!cb->nth) {
		j0_callbacks_stop(cb);
		return NULL;
	}
	return cb;
}

void j0_callbacks_stop(struct j0_callbacks *cb)
{
	if (!cb)
		return;
	pthread_mutex_lock(&cb->lock);
	cb->stop = 1;
	pthread_cond_broadcast(&cb->cond);
	pthread_mutex_unlock(&cb->lock);
	for (unsigned i = 0; i < cb->nth; i++)
		pthread_join(cb->th[i], NULL);
	if (cb->n)
		log_event(cb->s, "judge0-callback", "%u callbacks not sent: the server stopped", cb->n);
	for (struct cb_item *it = cb->head, *nx; it; it = nx) {
		nx = it->next;
		free(it->url);
		free(it->body);
		free(it);
	}
	pthread_mutex_destroy(&cb->lock);
	pthread_cond_destroy(&cb->cond);
	free(cb);
}

bool j0_callback_queue(struct j0_callbacks *cb, const char *url, char *body)
{
	struct cb_item *it = cb && body ? calloc(1, sizeof(*it)) : NULL;
	if (it && !(it->url = strdup(url))) {
		free(it);
		it = NULL;
	}
	if (!it) {
		free(body);
		return false;
	}
	it->body = body;
	it->bytes = strlen(body) + strlen(url);
	struct cb_url u;
	if (parse_url(url, &u))
		snprintf(it->host, sizeof(it->host), "%s", u.host);
	pthread_mutex_lock(&cb->lock);
	unsigned same = 0;
	for (struct cb_item *q = cb->head; q; q = q->next)
		same += !strcasecmp(q->host, it->host);
	char full[96] = "";
	if (cb->stop)
		snprintf(full, sizeof(full), "the server is stopping");
	else if (cb->n >= cb->cap)
		snprintf(full, sizeof(full), "%u callbacks are already waiting", cb->cap);
	else if (same >= (cb->cap + 3) / 4)
		snprintf(full, sizeof(full), "%u callbacks to its host are already waiting (a quarter of all)", same);
	else if (cb->bytes + it->bytes > CB_MAX_BYTES)
		snprintf(full, sizeof(full), "%u MiB of callbacks are already waiting", CB_MAX_BYTES >> 20);
	bool room = !full[0];
	if (room) {
		cb->bytes += it->bytes;
		if (cb->tail)
			cb->tail->next = it;
		else
			cb->head = it;
		cb->tail = it;
		cb->n++;
		pthread_cond_signal(&cb->cond);
	}
	pthread_mutex_unlock(&cb->lock);
	if (!room) {
		log_event(cb->s, "judge0-callback", "PUT %.300s dropped: %s", url, full);
		free(it->url);
		free(it->body);
		free(it);
	}
	return room;
}
