/* e2b.h — the E2B dialect (SPEC §17) as `ward serve` sees it: a second
 * listener (--e2b ADDR) that speaks E2B's control plane, envd's data plane
 * and the code interpreter's API, translated into sessions (SPEC §11) of
 * the same server: its session table, tokens, maxima and images.
 *
 * The server calls these three (registered in src/front/dialects.c) and
 * nothing else of the dialect; nothing below
 * the server includes this folder. */
#ifndef WARD_DIALECT_E2B_H
#define WARD_DIALECT_E2B_H

struct server;

/* Start the listener on s->o.e2b_listen (none when it is empty).  -1 with
 * a message on stderr. */
int e2b_start(struct server *s);
/* Stop accepting; end every stream.  After sessions_stop (the sessions'
 * PID 1 die with the dialect's maker threads, which end here). */
void e2b_stop(struct server *s);
/* Once a second (the main thread): forget sandboxes whose session ended. */
void e2b_sweep(struct server *s);

#endif
