/* judge_json.h — the judge's wire shapes (SPEC §15): a POST /judge body
 * decoded into a struct ward_judge_job (its limits within a runner's
 * maxima), the answer, the stream's test events and GET /languages.
 * Implemented in judge_json.c on the wire's shared checks (wire/decode.h);
 * ward_judge itself (judge.c) knows no JSON.  Used by ward serve
 * (src/server/judge_api.c) and `ward judge` (src/front/judge_cli.c). */
#ifndef WARD_JUDGE_JSON_H
#define WARD_JUDGE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "ward_judge.h"

/* What a job may ask for. */
struct judge_bounds {
	struct ward_limits max;      /* the runner's maxima (SPEC §10) */
	struct ward_limits defaults; /* what a job that names no limit gets, under max */
	size_t max_tests;            /* tests per job (WARD_JUDGE_MAX_TESTS) */
	size_t max_test_bytes;       /* stdin + expected output of all tests (WARD_JUDGE_MAX_TEST_BYTES) */
	unsigned max_parallel;       /* a larger "parallel" is refused */
	unsigned clamp_parallel;     /* a "parallel" up to max_parallel is lowered to this (--max-concurrent) */
};
void judge_bounds_init(struct judge_bounds *b, const struct ward_limits *max);

/* A decoded job and the storage it borrows from. */
struct judge_doc {
	struct ward_judge_job job;
	void *json;                             /* the parsed document */
	const char *language, *version, *image; /* as the body named them (borrowed) */
	struct ward_file *files;
	struct ward_judge_test *tests;
	struct ward_judge_limits *test_limits;
	char **words; /* split flags and args: buffers to free */
	size_t nwords, capwords;
	unsigned char **owned; /* decoded base64 */
	size_t nowned, capowned;
	size_t held; /* about what it holds in memory */
};

/* Decode a job against a table.  0, or -1 with a message naming the field
 * in err (an unknown or disabled language: *unknown_language set).  The
 * image, when named, is left in doc->image for the caller to resolve. */
int judge_from_json(const char *body, size_t len, const struct ward_languages *t, const struct judge_bounds *b,
                    struct judge_doc *doc, bool *unknown_language, char *err, size_t errlen);
void judge_doc_free(struct judge_doc *doc);

/* What a stage gets when a request names no limit: the runner's defaults
 * under its maxima, a compile's output at most JUDGE_COMPILE_OUTPUT bytes,
 * a test's time JUDGE_RUN_TIMEOUT_S, the language's own limits over them
 * (within the maxima).  POST /judge's rule, and the dialects'. */
#define JUDGE_COMPILE_OUTPUT 65536
#define JUDGE_RUN_TIMEOUT_S 5.0
void judge_stage_defaults(const struct ward_language *lang, const struct ward_limits *defaults,
                          const struct ward_limits *max, struct ward_judge_limits *compile,
                          struct ward_judge_limits *run);

/* The answer (SPEC §15), malloc'd; NULL when out of memory. */
char *judge_result_to_json(const struct ward_judge_job *job, const struct ward_judge_result *res, size_t *len);
/* One stream event: {"test": {...}}, malloc'd. */
char *judge_test_event_json(const struct ward_judge_test_result *t, size_t *len);
/* GET /languages: [{"id", "display", "version", "aliases"}] of the enabled
 * entries (all: every entry, with "enabled" and "why"). */
char *judge_languages_to_json(const struct ward_languages *t, bool all);

/* Shell words (quotes '' and "", backslash) into *words (NULL-terminated,
 * its strings in one block: free(*words) frees all).  0, or -1 with err. */
int judge_split_words(const char *s, char ***words, char *err, size_t errlen);

#endif
