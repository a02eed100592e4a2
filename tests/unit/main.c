/* Unit tests for libward's pure parts.  Each test_*.c file exports one
 * `void test_NAME(void)` that prints PASS:/FAIL: lines (tests/unit/unit.h);
 * tests/run counts them. */
#include <unistd.h>

#include "unit.h"
#include "ward.h"

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
	/* Sessions are cloned as ward serve clones them: by a helper forked
	 * now, while this process is small.  A PID 1 cloned from this process
	 * later would carry every page the groups before had touched (under
	 * ASan, its quarantine: 80,000 pages), and where PID 1 cannot be
	 * shielded from the OOM killer (no CAP_SYS_RESOURCE), the session
	 * group's memory hog would kill PID 1 rather than itself. */
	char err[256];
	if (geteuid() == 0 && (wanted("session") || wanted("session_life")) && ward_spawner_start(1, -1, err, sizeof err) < 0)
		printf("# no spawner: %s\n", err);
#define T(name)                              \
	if (test_##name && wanted(#name)) \
		test_##name();
#include "list.h"
#undef T
	ward_spawner_stop();
	return unit_failures ? 1 : 0;
}
