/* test_dialect.c — the dialects' pure parts (SPEC §16): Piston's semver
 * ranges and Judge0's lenient base64, with a bounded mutation driver. */
#include <stdlib.h>

#include "dialect/judge0/judge0.h"
#include "dialect/piston/piston.h"
#include "unit.h"

static bool sat(const char *v, const char *r)
{
	bool bad;
	return piston_semver_satisfies(v, r, &bad);
}

void test_dialect(void)
{
	CHECK("semver: * matches", sat("3.11.2", "*"));
	CHECK("semver: 3 and 3.x match 3.11.2", sat("3.11.2", "3") && sat("3.11.2", "3.x"));
	CHECK("semver: 3.10 does not match 3.11.2", !sat("3.11.2", "3.10"));
	CHECK("semver: ^3.9, ~3.11, >=3.9 <4", sat("3.11.2", "^3.9") && sat("3.11.2", "~3.11") && sat("3.11.2", ">=3.9 <4"));
	CHECK("semver: v3.11.2 and 3.11.2+deb", sat("3.11.2", "v3.11.2") && sat("3.11.2", "3.11.2+deb"));
	CHECK("semver: 1 || 3", sat("3.0.0", "1 || 3") && !sat("2.0.0", "1 || 3"));
	CHECK("semver: a prerelease matches none", !sat("3.11.2", "3.11.2-alpha.1"));
	bool bad;
	CHECK("semver: latest does not parse", !piston_semver_satisfies("3.11.2", "latest", &bad) && bad);
	CHECK("semver: 1.2 - 3 hyphen range", sat("2.5.0", "1.2 - 3") && !sat("4.0.0", "1.2 - 3"));
	size_t n;
	unsigned char *p = judge0_b64_lenient("aGk=\n", 5, &n);
	CHECK("base64: lenient decode skips newlines", p && n == 2 && !memcmp(p, "hi", 2));
	free(p);
	/* mutation driver: random bytes into both parsers, bounded */
	srand(25);
	char buf[300];
	int crashes = 0;
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand() % 299);
		for (size_t k = 0; k < len; k++)
			buf[k] = "0123456789.xX*^~<>=| -v+a\n\x80"[rand() % 28];
		buf[len] = 0;
		piston_semver_satisfies("3.11.2", buf, &bad);
		unsigned char *q = judge0_b64_lenient(buf, len, &n);
		crashes += !q || n > len;
		free(q);
	}
	CHECK("fuzz: 20000 mutated ranges and base64 strings, bounded", crashes == 0);
}
