/* landlock.h — defence in depth under the mount layout: the sandbox may
 * write only beneath the paths it is given (/tmp, /work, /dev/shm, writable
 * binds) and, from ABI 6, its abstract UNIX sockets and signals are scoped
 * to the sandbox.
 */
#ifndef WARD_LANDLOCK_H
#define WARD_LANDLOCK_H

#include <stddef.h>

/* The kernel's Landlock ABI version, 0 when it has none (or it is off). */
int ward_landlock_abi(void);

/* The sandbox's ruleset, built in the sandbox after pivot_root (PID 1 does
 * it before its sandbox waits for a command): write_paths are paths inside
 * the sandbox where writing stays allowed; files like /dev/null that must
 * stay writable are handled inside.  Only syscalls: async-signal-safe.
 * The ruleset's fd (close-on-exec), or -errno (the caller fails the run: a
 * layer that was to be applied and cannot be is an error, never skipped
 * silently). */
int ward_landlock_ruleset(int abi, const char *const *write_paths, size_t n);

/* Restrict the calling process with that ruleset and close it (needs
 * no_new_privs; the command does it before execve).  0, or -errno. */
int ward_landlock_restrict(int ruleset);

#endif
