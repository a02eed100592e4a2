/* e2b_pump.h — a request body handed to a thread of its own (e2b_pump.c). */
#ifndef WARD_E2B_PUMP_H
#define WARD_E2B_PUMP_H

#include <stdbool.h>
#include <stddef.h>

struct ereq;
struct server;
struct body_pump;

/* What the pump does with the body, each call on the pump's thread: start
 * once, take each piece, look after each wait (NULL: nothing to look at),
 * finish once (gone: the request is over, nobody reads the outcome).  free
 * releases arg, on whichever of the pump and the request ends last. */
struct pump_sink {
	void (*start)(void *arg);
	void (*take)(void *arg, const char *p, size_t n);
	void (*look)(void *arg);
	void (*finish)(void *arg, bool gone);
	void (*free)(void *arg);
	void *arg;
	const char *name; /* the thread's, as /proc shows it (15 bytes at most) */
};

/* At the headers, on the I/O thread: the pump started, or NULL with the
 * status (503: no room in --max-body-total or no thread; 500) and why in
 * err (sink->free not called then: arg stays the caller's). */
struct body_pump *pump_begin(struct ereq *q, const struct pump_sink *sink, unsigned *code, char *err, size_t n);
/* A piece of the body (on the I/O thread): what the pump's buffer takes
 * (*n), the connection parked when it took less; false when the server
 * stops and it cannot wait. */
bool pump_feed(struct body_pump *p, struct server *s, const char *data, size_t *n);
/* The body is in (on a worker): waits until the pump finished. */
void pump_end(struct body_pump *p);
/* The request is over: the pump lets go (its sink freed now or when it ends). */
void pump_release(struct body_pump *p);

#endif
