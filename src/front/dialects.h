/* dialects.h — the dialects `ward serve` can speak, for the front end that
 * starts it: it hands this table to ward_serve_main (server/serve.h).  The
 * server registers them (struct dialect, server/server.h) and includes
 * none of their headers: the dependency points dialect -> server only. */
#ifndef WARD_DIALECTS_H
#define WARD_DIALECTS_H

struct dialect;

/* Piston, Judge0, MCP and E2B (SPEC §16, §21, §17); NULL-terminated. */
extern const struct dialect *const ward_dialects[];

#endif
