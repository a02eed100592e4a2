/* dialect.h — what the dialects (SPEC §16: src/dialect/piston/,
 * src/dialect/judge0/) share: a judge job (SPEC §15) built within the
 * runner's maxima and run on the server's slots.  Each dialect translates
 * its API into a struct ward_judge_job and the result back; no rule of a
 * dialect reaches the engine (libward's ward_judge knows none of them).
 * Above the server: these use server/server.h, nothing below includes
 * them. */
#ifndef WARD_DIALECT_H
#define WARD_DIALECT_H

#include <jansson.h>

#include "server/server.h"
#include "ward_judge.h"

/* A job's limits: the runner's defaults under its maxima, the language's
 * own defaults over them (as POST /judge does). */
void dialect_limits(struct server *s, const struct ward_language *lang, struct ward_limits *compile,
                    struct ward_judge_limits *run);
/* Run job on this thread (a worker's, or a dialect's runner holding a
 * slot) as POST /judge runs one (serve_judge), all its tests in parallel
 * unless it says otherwise. */
void dialect_judge(struct server *s, struct ward_judge_job *job, struct ward_judge_result *res);
/* {"key": msg} (malloc'd, or NULL): a dialect's error body. */
char *dialect_msg_json(const char *key, const char *msg);
/* Answer o (taken) as JSON with code; a 500 when it cannot be encoded. */
void dialect_answer(struct req *r, unsigned code, json_t *o);
/* The enabled table entry whose id is id, or NULL. */
const struct ward_language *dialect_lang(struct server *s, const char *id);
/* UTF-8 check of n bytes (no NULs allowed when strict). */
bool dialect_utf8(const unsigned char *p, size_t n);

#endif
