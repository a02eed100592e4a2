/* Unit tests for libward's pure parts.  Each test_*.c file exports one
 * `void test_NAME(void)` that prints PASS:/FAIL: lines (tests/unit/unit.h);
 * tests/run counts them. */
#include "unit.h"

int unit_failures;

#define T(name) void test_##name(void) __attribute__((weak));
#include "list.h"
#undef T

int main(void)
{
#define T(name)              \
	if (test_##name)     \
		test_##name();
#include "list.h"
#undef T
	return unit_failures ? 1 : 0;
}
