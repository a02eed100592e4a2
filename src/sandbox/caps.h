/* caps.h — become the sandbox user with no capabilities at all. */
#ifndef WARD_CAPS_H
#define WARD_CAPS_H

#include <sys/types.h>

/* Drop supplementary groups (when allowed), switch to uid/gid, empty the
 * bounding, ambient, inheritable, permitted and effective sets, lock the
 * securebits and set no_new_privs.  Verifies the result.  Only syscalls.
 * 0, or -errno (the run must then fail: nothing runs with capabilities). */
int caps_drop_to(uid_t uid, gid_t gid);

#endif
