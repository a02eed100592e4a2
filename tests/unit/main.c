/* Unit tests for libward's pure parts.  Each test_*.c file exports one
 * `void test_NAME(void)` that prints PASS:/FAIL: lines (tests/unit/unit.h);
 * tests/run counts them. */
#include "unit.h"

int unit_failures;

#define T(name) void test_##name(void) __attribute__((weak));
#include "list.h"
#undef T

/* Arguments: run only the groups named (tests/cgroup2/sessions.sh). */
static int g_argc;
static char **g_argv;

static int wanted(const char *name)
{
	for (int i = 1; i < g_argc; i++)
		if (strcmp(g_argv[i], name) == 0)
			return 1;
	return g_argc < 2;
}

int main(int argc, char **argv)
{
	g_argc = argc;
	g_argv = argv;
#define T(name)                              \
	if (test_##name && wanted(#name)) \
		test_##name();
#include "list.h"
#undef T
	return unit_failures ? 1 : 0;
}
