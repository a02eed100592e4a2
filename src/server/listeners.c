/* listeners.c — listeners beside --listen, each speaking another API (a
 * dialect, SPEC §16: --piston ADDR, --judge0 ADDR, --mcp ADDR, --e2b ADDR): a route table of its own (struct api), on the same server: the
 * same tokens, admission, quotas, maxima, memory budgets, workers and log.
 * A request on one lives exactly as a native one does (http.c); only the
 * route table, the error shape, where the token is read and the 404 are
 * the API's.
 *
 * Owns s->listeners: their sockets, MHD daemons and the APIs' states.
 * Order at start-up: listener_add (options), listeners_open (sockets and
 * the APIs' start: a bad address fails before anything runs),
 * listeners_start (MHD, beside http_start); at the end listeners_quiesce
 * with the drain, listeners_stop after the workers, listeners_free.
 *
 * The dialects are registered, not included (struct dialect): serve.c
 * calls dialects_add before listeners_open, and a dialect adds its
 * listeners there. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/server.h"

int listener_add(struct server *s, const struct api *api, const char *addr)
{
	if (!addr || !addr[0])
		return 0;
	if (s->nlisteners == MAX_LISTENERS) {
		fprintf(stderr, "ward serve: --%s: at most %d listeners beside --listen\n", api->name, MAX_LISTENERS);
		return -1;
	}
	struct listener *l = &s->listeners[s->nlisteners++];
	memset(l, 0, sizeof(*l));
	l->api = api;
	l->s = s;
	l->fd = -1;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	return 0;
}

int listeners_open(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++) {
		struct listener *l = &s->listeners[i];
		l->fd = make_listener(l->addr, l->bound, sizeof(l->bound));
		if (l->fd < 0) {
			fprintf(stderr, "ward serve: --%s %s: cannot listen there (see above); give a free ADDR:PORT\n",
			        l->api->name, l->addr);
			return -1;
		}
		if (l->api->start && l->api->start(s, &l->state) < 0)
			return -1;
		l->started = true;
	}
	return 0;
}

int listeners_start(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++) {
		struct listener *l = &s->listeners[i];
		l->d = http_daemon(s, l, l->fd, 1u);
		if (!l->d) {
			fprintf(stderr, "ward serve: cannot start the %s listener on %s\n", l->api->name, l->bound);
			return -1;
		}
		log_event(s, "listening-dialect", "%s %s", l->api->name, l->bound);
	}
	return 0;
}

void listeners_quiesce(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++) {
		struct listener *l = &s->listeners[i];
		if (!l->d)
			continue;
		int fd = MHD_quiesce_daemon(l->d);
		if (fd >= 0)
			close(fd);
		l->fd = -1;
		if (l->started && l->api->closing)
			l->api->closing(s, l->state); /* an upgraded connection's request would hold the drain */
	}
}

void listeners_tick(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++)
		if (s->listeners[i].started && s->listeners[i].api->tick)
			s->listeners[i].api->tick(s, s->listeners[i].state);
}

void listeners_stop(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++) {
		struct listener *l = &s->listeners[i];
		if (l->d) {
			if (l->started && l->api->closing)
				l->api->closing(s, l->state); /* its upgraded connections: MHD must not hold them */
			MHD_stop_daemon(l->d);                /* closes its socket */
			l->d = NULL;
			l->fd = -1;
		}
	}
}

void listeners_free(struct server *s)
{
	for (size_t i = 0; i < s->nlisteners; i++) {
		struct listener *l = &s->listeners[i];
		if (l->started && l->api->stop)
			l->api->stop(s, l->state);
		l->started = false;
		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
	}
	s->nlisteners = 0;
}

int dialects_add(struct server *s)
{
	for (const struct dialect *const *d = s->dialects; d && *d; d++)
		if ((*d)->add && (*d)->add(s) < 0)
			return -1;
	return 0;
}
