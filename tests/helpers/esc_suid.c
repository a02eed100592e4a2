/* esc_suid.c — installed setuid-root by tests/escape/setuid.sh: prints the
 * ids it got and tries to become root.  Inside the sandbox no_new_privs and
 * nosuid mounts must leave every id the sandbox user's.
 *   IDS ruid euid suid
 * then BLOCKED/ESCAPED lines (esc_common.h).  Needs no guard: it changes
 * nothing, it only reports. */
#include "esc_common.h"

#include <sys/prctl.h>

int main(void)
{
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	printf("IDS %u %u %u\n", (unsigned)r, (unsigned)e, (unsigned)s);
	printf("NNP %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	esc_result("euid 0", e != 0, 0);
	int rc = setuid(0);
	esc_result("setuid(0)", rc < 0 || getuid() != 0, errno);
	return esc_done();
}
