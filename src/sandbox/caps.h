/* caps.h — become the sandbox user with no capabilities at all. */
#ifndef WARD_CAPS_H
#define WARD_CAPS_H

#include <sys/types.h>

/* Empty the bounding set (what any execve could still grant).  PID 1 does
 * it once, before its sandbox waits for a command, and the command inherits
 * it: PID 1 keeps its own capabilities (it never execs), and the command's
 * start-up is some forty syscalls shorter.  0, or -errno. */
int caps_drop_bounding(void);

/* In a process whose bounding set is empty (caps_drop_bounding): drop
 * supplementary groups (when allowed), switch to uid/gid, empty the
 * ambient, inheritable, permitted and effective sets and set no_new_privs.
 * Verifies the result.  Only syscalls.  0, or -errno (the run must then
 * fail: nothing runs with capabilities). */
int caps_drop_to(uid_t uid, gid_t gid);

#endif
