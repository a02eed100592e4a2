/* libFuzzer target for the JSON bodies of the native API's routes (SPEC §5,
 * §11, §15, §17): each input is a selector byte and a body, decoded as
 *   0  POST /exec                  ward_request_from_json_under, then
 *                                  ward_request_validate and the doc's size
 *   1  POST /sessions              sj_session_extras, then sj_with_argv
 *                                  into the request decoder (decode_shape)
 *   2  POST /sessions/{id}/exec    sj_exec_extras and the request decoder
 *   3  POST .../signal             sj_signal
 *   4  POST /judge                 judge_from_json (the shipped table)
 *   5  POST /test                  testjob_from_json_under
 *   6  a result (ward run --remote reads the runner's answer)
 *                                  ward_result_from_json, ward_error_from_json
 *   7  the value count every body passes first   ward_json_check_values
 * A decoded /exec request is encoded again (ward_request_to_json, as
 * `ward run --remote` sends it) and decoded: what ward writes, ward reads.
 * Run by tests/fuzz/run.sh (from the tree's top: the language table). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "judge/judge_json.h"
#include "langs.h"
#include "server/session_json.h"
#include "testjob/testjob.h"
#include "wire/wire.h"

static struct ward_languages langs;
static struct ward_limits defaults, maxima;

static void exec_body(const char *b, size_t n)
{
	struct ward_request_doc doc;
	char err[512];
	if (ward_request_from_json_under(b, n, &defaults, &doc, err, sizeof(err)) < 0)
		return;
	(void)ward_request_doc_bytes(&doc);
	if (ward_request_validate(&doc.req, err, sizeof(err)) == 0) {
		char *again = ward_request_to_json(&doc.req, err, sizeof(err));
		struct ward_request_doc doc2;
		if (!again)
			abort(); /* a request ward accepted, it cannot write */
		if (ward_request_from_json_under(again, strlen(again), &defaults, &doc2, err, sizeof(err)) < 0) {
			fprintf(stderr, "re-decoding what ward wrote: %s\n%s\n", err, again);
			abort();
		}
		ward_request_doc_free(&doc2);
		free(again);
	}
	ward_request_doc_free(&doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!langs.v) {
		fuzz_langs_load(&langs);
		ward_maxima_init(&maxima);
		ward_defaults_under(&maxima, &defaults);
	}
	if (size < 1)
		return 0;
	const char *b = (const char *)data + 1;
	size_t n = size - 1;
	char err[512];
	switch (data[0] % 8) {
	case 0:
		exec_body(b, n);
		break;
	case 1: {
		struct sj_session_extras x;
		memset(&x, 0, sizeof(x));
		if (sj_session_extras(b, n, &x, err, sizeof(err)) < 0)
			break;
		size_t len = 0;
		char *w = sj_with_argv(b, n, &len, err, sizeof(err));
		if (w)
			exec_body(w, len);
		free(w);
		break;
	}
	case 2: {
		struct sj_exec_extras x;
		memset(&x, 0, sizeof(x));
		if (sj_exec_extras(b, n, &x, err, sizeof(err)) == 0)
			exec_body(b, n);
		break;
	}
	case 3: {
		int sig;
		(void)sj_signal(b, n, &sig, err, sizeof(err));
		break;
	}
	case 4: {
		struct judge_bounds jb;
		judge_bounds_init(&jb, &maxima);
		struct judge_doc d;
		bool unknown;
		if (judge_from_json(b, n, &langs, &jb, &d, &unknown, err, sizeof(err)) == 0)
			judge_doc_free(&d);
		break;
	}
	case 5: {
		struct testjob job;
		if (testjob_from_json_under(b, n, &defaults, &job, err, sizeof(err)) == 0)
			testjob_free(&job);
		break;
	}
	case 6: {
		struct ward_result res;
		memset(&res, 0, sizeof(res)); /* as the client's is */
		(void)ward_result_from_json(b, n, &res, err, sizeof(err));
		ward_result_free(&res);
		char msg[256];
		ward_error_from_json(b, n, msg, sizeof(msg));
		break;
	}
	case 7:
		(void)ward_json_check_values(b, n, 1000, err, sizeof(err));
		break;
	}
	return 0;
}
