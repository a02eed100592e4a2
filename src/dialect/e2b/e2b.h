/* e2b.h — the E2B dialect (SPEC §17) as `ward serve` sees it: a second
 * listener (--e2b ADDR) that speaks E2B's control plane, envd's data plane
 * and the code interpreter's API, translated into sessions (SPEC §11) of
 * the same server: its session table, tokens, maxima and images.
 *
 * The server sees its struct api (registered in src/front/dialects.c)
 * and nothing else of the dialect; nothing below the server includes
 * this folder. */
#ifndef WARD_DIALECT_E2B_H
#define WARD_DIALECT_E2B_H

struct api;

/* The E2B API: a listener of the server's (listener_add on --e2b ADDR). */
extern const struct api e2b_api;

#endif
