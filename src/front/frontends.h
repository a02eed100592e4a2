/* frontends.h — the entry points src/front/cli.c dispatches to: `ward
 * serve` (src/server/), `ward run --remote` (src/front/remote.c), and,
 * through testjob/testjob.h, `ward test` and POST /test's handler.  Each
 * front end only translates its input into a struct ward_request and the
 * result back out (STYLE: library first, thin front ends). */
#ifndef WARD_FRONTENDS_H
#define WARD_FRONTENDS_H

#include <stddef.h>

#include "server/serve.h"
#include "testjob/testjob.h"
#include "ward.h"

/* `ward run --remote URL`: send req to a ward serve runner (POST URL/exec)
 * and fill res from its answer.  token (may be NULL) is sent as
 * "Authorization: Bearer TOKEN".  Returns 0 when the runner ran it (res as
 * from a local ward_run), -1 when the runner is down or refused: then
 * res->status is WARD_ST_ERROR, res->error says why, and the CLI exits 125
 * — never a silent local fallback.  When req->capture is false the
 * captured streams are written to req->stream_fd[0] and [1] and dropped
 * from res, as a local streaming run would have.  req->stdin_fd (when
 * stdin_set is false) is read to its end and sent.  res must be freed with
 * ward_result_free() in both cases.  limits: the request's limits that are
 * sent (1 << LIM_x: those the user gave); the others are the runner's
 * defaults, which lie within its maxima. */
int ward_remote_run(const char *url, const char *token, const struct ward_request *req, unsigned limits,
                    struct ward_result *res);

/* `ward session new|exec|put|get|ls|rm ...` (argv[0] = "session"): a
 * runner's sessions (SPEC §11) from a shell.  read_token reads a
 * --token-file (cli.c's).  Returns the exit status (exec: as ward run's;
 * 125 for a missing session or a runner that refuses). */
typedef char *ward_token_reader(const char *file, char *err, size_t errlen);
int ward_session_main(int argc, char **argv, ward_token_reader *read_token);

/* `ward image import|pull|ls|inspect|rm ...` (argv[0] = "image"): the
 * image store (SPEC §14, include/ward_image.h).  Returns the exit status
 * (125 for a refusal or failure). */
int ward_image_main(int argc, char **argv);
/* `ward image build` (build_cli.c). */
int ward_image_build_main(int argc, char **argv);

#endif
