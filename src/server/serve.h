/* serve.h — the server's one entry point, for the front end that starts it
 * (src/front/cli.c through frontends.h).  Nothing in src/server includes a
 * front end's header: the dependency points front -> server only. */
#ifndef WARD_SERVE_H
#define WARD_SERVE_H

struct dialect;

/* `ward serve ARGS...` (argv[0] = "serve"): the HTTP runner of SPEC §5,
 * speaking also the dialects of the NULL-terminated table dialects (the
 * front end's choice: src/front/dialects.h; NULL: none).  Returns the
 * process exit status: 0 after a clean SIGTERM/SIGINT drain, 125 when it
 * could not start (bad option, address in use). */
int ward_serve_main(int argc, char **argv, const struct dialect *const *dialects);
/* The lean `ward` hands ward-net, for serve, an O_PATH fd of itself in this
 * variable: the spawner helpers exec it (src/system/spawner.h). */
#define WARD_SPAWNER_EXE_ENV "WARD_SPAWNER_EXE_FD"

#endif
