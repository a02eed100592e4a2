/* e2b_ws.c — a WebSocket (any HTTP upgrade) to a sandbox's port, past
 * its 101 (e2b_ports.c relays the handshake): the client's upgraded
 * socket and the upstream's, pumped both ways by one thread of the
 * dialect's for all of them (epoll, level-triggered), until either end
 * closes (what it sent before is delivered first), one fails, or nothing
 * moved for WS_IDLE_S.  Bounded: --e2b-max-sockets connections to a
 * sandbox's ports (429 past it; a plain relay holds a room too, until its
 * answer ends: e2b_ports.c), --e2b-key-sockets to one key's sandboxes
 * (its owner's: 503; by default half of the cap in all, so that relays to
 * one tenant's public ports, which need no key, never take another's),
 * half of --max-connections in all (503), a WS_BUF buffer each way; a side whose buffer is full is not read (the
 * slower end sets the pace), and a side that can neither be read nor
 * written is out of the epoll set (a hung-up socket never spins it).
 * Every read is charged to its sandbox (ports_charge) before it is passed
 * on: past its --e2b-port-bytes the tunnel is closed, both ends.
 *
 * The same thread watches the descriptors of the dialect's other waits
 * (struct pump_watch: e2b_ports.c's relays until their upstream's head is
 * in), so that no worker waits on a sandbox's server: each is called back
 * when its descriptors are ready, at its deadline (checked once a second)
 * and when the pump stops; one that is done leaves the pump after the
 * round, then its finish runs, outside the pump's lock.
 *
 * The same tally by owner holds the request bodies its sandboxes' relays
 * hold (relay_body_take): a quarter of --max-body-total for one key's, half
 * for all of them (at least --max-body each), so that bodies sent to a
 * public port, which need no key, never take the budget of the API's
 * calls or of another key's relays. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dialect/e2b/e2b_int.h"

#define WS_BUF 65536
#define WS_IDLE_S 600.0
#define WS_PER_SBX_DEFAULT 32
#define WS_ROUNDS 16 /* reads a side gets per wake: one busy tunnel does not starve the rest */

struct tunnel {
	int fd[2]; /* 0: the client's upgraded socket (MHD's), 1: the upstream's */
	struct MHD_UpgradeResponseHandle *urh;
	char id[80];
	char buf[2][WS_BUF]; /* buf[i]: read from fd[i], to be written to fd[!i] */
	size_t len[2], off[2];
	bool eof[2];
	unsigned want[2]; /* the events fd[i] is in the epoll set for (0: out of it) */
	bool dead;
	bool spent;  /* its sandbox's --e2b-port-bytes ran out: closed for it */
	double last; /* when a byte last moved */
	struct tun_end end[2];
	struct tunnel *next;
};

struct ws_count {
	char id[96];    /* a sandbox's id, or (the owners' tally) its owner's name */
	char owner[96]; /* a sandbox's owner */
	unsigned n;     /* its upgraded connections and the relays on their way */
	uint64_t body;  /* an owner's: the request bodies its relays hold */
	struct ws_count *next;
};

struct ws_hub {
	struct e2b *e;
	pthread_mutex_t lock;
	int ep, wake;
	pthread_t thread;
	bool running, stop;
	struct tunnel *list;
	struct pump_watch *watches;
	struct ws_count *counts, *owners;
	unsigned total;
	uint64_t body; /* the request bodies all relays hold */
};

static unsigned per_sbx(struct e2b *e)
{
	return e->s->o.e2b_max_sockets ? e->s->o.e2b_max_sockets : WS_PER_SBX_DEFAULT;
}

static unsigned in_all(struct e2b *e)
{
	unsigned m = e->s->o.max_connections / 2;
	return m ? m : 1;
}

/* One key's sandboxes: --e2b-key-sockets, by default half of the cap in all. */
static unsigned per_key(struct e2b *e)
{
	unsigned m = e->s->o.e2b_key_sockets ? e->s->o.e2b_key_sockets : in_all(e) / 2;
	return m ? m : 1;
}

static struct ws_count **count_of(struct ws_count **head, const char *id)
{
	struct ws_count **p = head;
	while (*p && strcmp((*p)->id, id) != 0)
		p = &(*p)->next;
	return p;
}

/* *p's record made when it has none (its id set): false out of memory. */
static bool count_make(struct ws_count **p, const char *id)
{
	if (!*p && !(*p = calloc(1, sizeof(**p))))
		return false;
	snprintf((*p)->id, sizeof((*p)->id), "%s", id);
	return true;
}

/* *p's record freed when it counts nothing. */
static void count_drop(struct ws_count **p)
{
	struct ws_count *c = *p;
	if (c && !c->n && !c->body) {
		*p = c->next;
		free(c);
	}
}

unsigned ws_reserve(struct e2b *e, const char *id, const char *owner, char *msg, size_t n)
{
	struct ws_hub *h = e->ws;
	if (!h) {
		snprintf(msg, n, "WebSockets to a sandbox's port are not available (the pump did not start)");
		return 503;
	}
	unsigned code = 0;
	pthread_mutex_lock(&h->lock);
	struct ws_count **p = count_of(&h->counts, id), **o = count_of(&h->owners, owner);
	if (h->stop) {
		snprintf(msg, n, "the server is stopping");
		code = 503;
	} else if (*p && (*p)->n >= per_sbx(e)) {
		snprintf(msg, n,
		         "sandbox %s has %u connections open to its ports (--e2b-max-sockets %u): close one first", id,
		         (*p)->n, per_sbx(e));
		code = 429;
	} else if (*o && (*o)->n >= per_key(e)) {
		snprintf(msg, n,
		         "this API key's sandboxes have %u connections open to their ports (--e2b-key-sockets %u): "
		         "close one first",
		         (*o)->n, per_key(e));
		code = 503;
	} else if (h->total >= in_all(e)) {
		snprintf(msg, n,
		         "%u connections are open to sandboxes' ports, half of --max-connections: try again later",
		         h->total);
		code = 503;
	} else if (!count_make(o, owner) || !count_make(p, id)) {
		count_drop(o);
		snprintf(msg, n, "out of memory for the relay");
		code = 503;
	} else {
		snprintf((*p)->owner, sizeof((*p)->owner), "%s", owner);
		(*p)->n++;
		(*o)->n++;
		h->total++;
	}
	pthread_mutex_unlock(&h->lock);
	return code;
}

static void unreserve_locked(struct ws_hub *h, const char *id)
{
	struct ws_count **p = count_of(&h->counts, id);
	if (!*p)
		return;
	struct ws_count **o = count_of(&h->owners, (*p)->owner);
	if (*o) {
		(*o)->n--;
		count_drop(o);
	}
	h->total--;
	(*p)->n--;
	count_drop(p);
}

/* The relays' share of --max-body-total: half of it in all, a quarter for
 * one key's sandboxes (each at least --max-body: one body always fits). */
static uint64_t body_share(struct e2b *e, unsigned part)
{
	uint64_t m = e->s->o.max_body_total / part;
	return m > e->s->o.max_body ? m : e->s->o.max_body;
}

unsigned relay_body_take(struct e2b *e, const char *owner, uint64_t want, char *msg, size_t n)
{
	struct ws_hub *h = e->ws;
	if (!h) {
		snprintf(msg, n, "relays to a sandbox's port are not available (the pump did not start)");
		return 503;
	}
	unsigned code = 0;
	pthread_mutex_lock(&h->lock);
	struct ws_count **o = count_of(&h->owners, owner);
	uint64_t mine = *o ? (*o)->body : 0;
	if (mine + want > body_share(e, 4)) {
		snprintf(msg, n,
		         "this API key's sandboxes' ports hold %llu bytes of request bodies, a quarter of "
		         "--max-body-total: retry later",
		         (unsigned long long)mine);
		code = 503;
	} else if (h->body + want > body_share(e, 2)) {
		snprintf(msg, n,
		         "sandboxes' ports hold %llu bytes of request bodies, half of --max-body-total: retry later",
		         (unsigned long long)h->body);
		code = 503;
	} else if (!count_make(o, owner)) {
		snprintf(msg, n, "out of memory for the relay");
		code = 503;
	} else {
		(*o)->body += want;
		h->body += want;
	}
	pthread_mutex_unlock(&h->lock);
	return code;
}

void relay_body_give(struct e2b *e, const char *owner, uint64_t n)
{
	struct ws_hub *h = e->ws;
	if (!h || !n)
		return;
	pthread_mutex_lock(&h->lock);
	struct ws_count **o = count_of(&h->owners, owner);
	if (*o) {
		(*o)->body -= n;
		h->body -= n;
		count_drop(o);
	}
	pthread_mutex_unlock(&h->lock);
}

void ws_unreserve(struct e2b *e, const char *id)
{
	struct ws_hub *h = e->ws;
	pthread_mutex_lock(&h->lock);
	unreserve_locked(h, id);
	pthread_mutex_unlock(&h->lock);
}

/* fd[i]'s place in the epoll set made what its buffers call for. */
static void interest(struct ws_hub *h, struct tunnel *t, int i)
{
	unsigned w = 0;
	if (!t->dead && !t->eof[i] && t->off[i] == t->len[i])
		w |= EPOLLIN;
	if (!t->dead && t->off[!i] < t->len[!i])
		w |= EPOLLOUT;
	if (w == t->want[i])
		return;
	struct epoll_event ev = {.events = w, .data.ptr = &t->end[i]};
	int op = !w ? EPOLL_CTL_DEL : !t->want[i] ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	if (epoll_ctl(h->ep, op, t->fd[i], &ev) < 0 && op != EPOLL_CTL_DEL)
		t->dead = true;
	t->want[i] = w;
}

/* What fd[i] has, to fd[!i], as far as both allow now. */
static void move(struct ws_hub *h, struct tunnel *t, int i)
{
	for (int round = 0; round < WS_ROUNDS && !t->dead; round++) {
		while (t->off[i] < t->len[i]) {
			ssize_t k = send(t->fd[!i], t->buf[i] + t->off[i], t->len[i] - t->off[i], MSG_NOSIGNAL);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (k <= 0) {
				t->dead = true;
				return;
			}
			t->off[i] += (size_t)k;
			t->last = now_mono();
		}
		t->off[i] = t->len[i] = 0;
		if (t->eof[i])
			return;
		ssize_t k = read(t->fd[i], t->buf[i], WS_BUF);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k < 0) {
			t->dead = true;
			return;
		}
		if (k == 0) {
			t->eof[i] = true;
			return;
		}
		int rc = ports_charge(h->e, t->id, (uint64_t)k);
		if (rc) { /* spent (or the sandbox gone): dropped, and closed */
			t->spent = rc == -EDQUOT;
			t->dead = true;
			return;
		}
		t->len[i] = (size_t)k;
		t->last = now_mono();
	}
}

static void pump(struct ws_hub *h, struct tunnel *t)
{
	move(h, t, 0);
	move(h, t, 1);
	for (int i = 0; i < 2; i++) /* an end closed, and what it sent delivered: done */
		if (t->eof[i] && t->off[i] == t->len[i])
			t->dead = true;
	interest(h, t, 0);
	interest(h, t, 1);
}

static void tunnel_close(struct ws_hub *h, struct tunnel *t)
{
	if (t->want[0])
		epoll_ctl(h->ep, EPOLL_CTL_DEL, t->fd[0], NULL);
	if (t->want[1])
		epoll_ctl(h->ep, EPOLL_CTL_DEL, t->fd[1], NULL);
	close(t->fd[1]);
	MHD_upgrade_action(t->urh, MHD_UPGRADE_ACTION_CLOSE); /* MHD closes the client's socket */
	unreserve_locked(h, t->id);
	if (t->spent)
		ports_cut(h->e, t->id, "a WebSocket");
	free(t);
}

/* The dead and the idle closed (under h->lock). */
static void ws_sweep(struct ws_hub *h, double now, bool all)
{
	for (struct tunnel **p = &h->list; *p;) {
		struct tunnel *t = *p;
		if (all || t->dead || now - t->last > WS_IDLE_S) {
			*p = t->next;
			tunnel_close(h, t);
		} else
			p = &t->next;
	}
}

/* w's descriptors in the epoll set as its events say (under h->lock). */
static void watch_interest(struct ws_hub *h, struct pump_watch *w)
{
	for (int i = 0; i < 2; i++) {
		unsigned want = w->done || w->fd[i] < 0 ? 0 : w->events[i];
		if (want == w->in[i])
			continue;
		struct epoll_event ev = {.events = want, .data.ptr = &w->end[i]};
		int op = !want ? EPOLL_CTL_DEL : !w->in[i] ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
		if (epoll_ctl(h->ep, op, w->fd[i], &ev) < 0 && op != EPOLL_CTL_DEL) {
			w->ready(w, -1, EPOLLERR); /* it cannot be watched: done, its descriptors out */
			w->done = true;
			i = -1;
			continue;
		}
		w->in[i] = want;
	}
}

static void watch_ready(struct ws_hub *h, struct pump_watch *w, int i, unsigned ev)
{
	if (!w->done && w->ready(w, i, ev))
		w->done = true;
	watch_interest(h, w);
}

/* The watches that are done out of the pump, to be finished (under h->lock). */
static struct pump_watch *watches_done(struct ws_hub *h)
{
	struct pump_watch *out = NULL;
	for (struct pump_watch **p = &h->watches; *p;) {
		struct pump_watch *w = *p;
		if (w->done) {
			*p = w->next;
			w->next = out;
			out = w;
		} else
			p = &w->next;
	}
	return out;
}

static void watches_finish(struct pump_watch *w)
{
	while (w) {
		struct pump_watch *next = w->next; /* w is its finisher's from here on */
		w->finish(w);
		w = next;
	}
}

static void *pump_main(void *arg)
{
	struct ws_hub *h = arg;
	struct epoll_event ev[64];
	double swept = now_mono();
	for (;;) {
		int n = epoll_wait(h->ep, ev, 64, 1000);
		pthread_mutex_lock(&h->lock);
		if (h->stop) {
			pthread_mutex_unlock(&h->lock);
			return NULL;
		}
		bool dead = false, watched = false;
		for (int i = 0; i < n; i++) {
			if (!ev[i].data.ptr) { /* a tunnel added (its first bytes), or a watch done at once */
				watched = true;
				uint64_t v;
				if (read(h->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
					break;
				for (struct tunnel *t = h->list; t; t = t->next)
					if (!t->want[0] && !t->want[1] && !t->dead) {
						pump(h, t);
						dead |= t->dead;
					}
				continue;
			}
			struct tun_end *e = ev[i].data.ptr;
			if (e->w) { /* (out of the list only below: never within a batch) */
				watch_ready(h, e->w, e->side, ev[i].events);
				watched |= e->w->done;
				continue;
			}
			if (!e->t->dead) /* (freed only by the sweep below: never within a batch) */
				pump(h, e->t);
			dead |= e->t->dead;
		}
		double now = now_mono();
		if (dead || now - swept >= 1.0) {
			ws_sweep(h, now, false);
			for (struct pump_watch *w = h->watches; w; w = w->next)
				if (!w->done && w->deadline > 0 && now >= w->deadline) {
					watch_ready(h, w, -1, 0);
					watched = true;
				}
			swept = now;
		}
		struct pump_watch *done = watched ? watches_done(h) : NULL;
		pthread_mutex_unlock(&h->lock);
		watches_finish(done);
	}
}

bool pump_watch(struct e2b *e, struct pump_watch *w)
{
	struct ws_hub *h = e->ws;
	if (!h)
		return false;
	pthread_mutex_lock(&h->lock);
	bool ok = !h->stop;
	if (ok) {
		for (int i = 0; i < 2; i++) {
			w->end[i] = (struct tun_end){.w = w, .side = i};
			w->in[i] = 0;
		}
		w->done = false;
		w->next = h->watches;
		h->watches = w;
		watch_interest(h, w);
	}
	/* a descriptor that could not be watched made it done: the pump
	 * finishes it, after its round (an event of its other descriptor may
	 * be in the pump's hands already: never freed under it) */
	uint64_t one = 1;
	if (ok && w->done && write(h->wake, &one, sizeof(one)) < 0 && errno != EAGAIN) {
		/* the pump is awake anyway */
	}
	pthread_mutex_unlock(&h->lock);
	return ok;
}

bool ws_adopt(struct e2b *e, const char *id, int client, struct MHD_UpgradeResponseHandle *urh, int up,
              const char *to_client, size_t nc, const char *to_up, size_t nu)
{
	struct ws_hub *h = e->ws;
	/* the client's first frames, read by MHD with its request: its sandbox's (the upstream's came with the 101's head) */
	bool spent = nu && ports_charge(e, id, nu) < 0;
	struct tunnel *t = nc <= WS_BUF && nu <= WS_BUF && !spent ? calloc(1, sizeof(*t)) : NULL;
	pthread_mutex_lock(&h->lock);
	if (!t || h->stop) {
		unreserve_locked(h, id);
		pthread_mutex_unlock(&h->lock);
		free(t);
		close(up);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return false;
	}
	t->fd[0] = client;
	t->fd[1] = up;
	t->urh = urh;
	snprintf(t->id, sizeof(t->id), "%s", id);
	for (int i = 0; i < 2; i++) {
		t->end[i].t = t;
		t->end[i].side = i;
		int fl = fcntl(t->fd[i], F_GETFL);
		fcntl(t->fd[i], F_SETFL, fl | O_NONBLOCK);
	}
	memcpy(t->buf[1], to_client, nc); /* the upstream's first frames, read with its 101 */
	t->len[1] = nc;
	memcpy(t->buf[0], to_up, nu); /* the client's, read by MHD with its request */
	t->len[0] = nu;
	t->last = now_mono();
	t->next = h->list;
	h->list = t;
	pthread_mutex_unlock(&h->lock);
	uint64_t one = 1;
	if (write(h->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_event(e->s, "e2b-ws", "cannot wake the WebSocket pump: %s", strerror(errno));
	return true;
}

int ws_start(struct e2b *e)
{
	struct ws_hub *h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->e = e;
	pthread_mutex_init(&h->lock, NULL);
	h->ep = epoll_create1(EPOLL_CLOEXEC);
	h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (h->ep < 0 || h->wake < 0 || epoll_ctl(h->ep, EPOLL_CTL_ADD, h->wake, &ev) < 0 ||
	    pthread_create(&h->thread, NULL, pump_main, h) != 0) {
		fprintf(stderr, "ward serve: cannot start the E2B WebSocket pump: %s\n", strerror(errno));
		if (h->ep >= 0)
			close(h->ep);
		if (h->wake >= 0)
			close(h->wake);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return -1;
	}
	h->running = true;
	e->ws = h;
	return 0;
}

void ws_close_all(struct e2b *e)
{
	struct ws_hub *h = e->ws;
	if (!h || !h->running)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_mutex_unlock(&h->lock);
	uint64_t one = 1;
	if (write(h->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_event(e->s, "e2b-ws", "cannot wake the WebSocket pump: %s", strerror(errno));
	pthread_join(h->thread, NULL);
	h->running = false;
	pthread_mutex_lock(&h->lock);
	ws_sweep(h, now_mono(), true);
	for (struct pump_watch *w = h->watches; w; w = w->next) { /* each one told, and done */
		if (!w->done)
			w->ready(w, -1, PUMP_STOP);
		w->done = true;
		watch_interest(h, w);
	}
	struct pump_watch *done = watches_done(h);
	pthread_mutex_unlock(&h->lock);
	watches_finish(done);
}

static void counts_free(struct ws_count **l)
{
	while (*l) {
		struct ws_count *c = *l;
		*l = c->next;
		free(c);
	}
}

void ws_free(struct e2b *e)
{
	struct ws_hub *h = e->ws;
	if (!h)
		return;
	ws_close_all(e);
	counts_free(&h->counts);
	counts_free(&h->owners);
	close(h->ep);
	close(h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
	e->ws = NULL;
}
