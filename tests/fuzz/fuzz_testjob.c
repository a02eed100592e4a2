/* libFuzzer target for the test job's report parsers (src/testjob/): what
 * a sandboxed test run prints is hostile.  The first byte picks
 *   even  the python harness's report lines   testjob_parse_harness
 *         (bit 1: the run timed out)
 *   odd   JUnit XML                           testjob_parse_junit
 * and every parsed report is written as the answer's JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testjob/testjob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *b = (const char *)data + 1;
	size_t n = size - 1;
	struct testjob_report rep;
	memset(&rep, 0, sizeof(rep));
	char err[512];
	int rc = data[0] & 1 ? testjob_parse_junit(b, n, &rep, err, sizeof(err))
			     : testjob_parse_harness(b, n, (data[0] & 2) != 0, &rep, err, sizeof(err));
	if (rc == 0) {
		char *j = testjob_report_to_json(&rep);
		if (!j)
			abort(); /* a report ward parsed, it cannot write */
		free(j);
	}
	testjob_report_free(&rep);
	return 0;
}
