/* session_net.c — a session's egress allow-list replaced while it runs
 * (ward_session_set_egress; E2B's updateNetwork, SPEC §18): its proxy
 * (egress.c) decides each new connection by the new list, under the
 * rules' lock; connections relaying go on. */
#define _GNU_SOURCE
#include <errno.h>

#include "base/errf.h"
#include "system/session.h"
#include "system/supervisor.h"

int ward_session_set_egress(struct ward_session *s, const char *const *allow, size_t n, char *err, size_t errlen)
{
	if (s->killed) {
		base_errf(err, errlen, "the session has ended");
		return -ESRCH;
	}
	return sandbox_set_egress(s->sb, allow, n, err, errlen);
}
