/* pathguard.h — writing caller-supplied files (server "files", test jobs)
 * into a sandbox directory without ever being steered outside it.
 *
 * A path is refused when it is empty, absolute, longer than PATH_MAX, has a
 * "." or ".." component or an empty one ("a//b"), or contains a NUL (the
 * length is explicit, so an embedded NUL is seen).  Writing never follows a
 * symlink and never replaces an existing file.
 */
#ifndef WARD_PATHGUARD_H
#define WARD_PATHGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Pure check of a path of len bytes.  0, or -1 with a message in err. */
int pathguard_check(const char *path, size_t len, char *err, size_t errlen);
/* A path a session's files call names (ward.h): such a relative path, or
 * "/" and one (absolute: resolved from the sandbox's own root, inside it);
 * "/" itself only when root_ok. */
int pathguard_check_session(const char *path, size_t len, bool root_ok, char *err, size_t errlen);

/* Create path (already checked) beneath the directory dirfd, making parent
 * directories (0755) as needed, and write data with mode.  Uses only
 * syscalls (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, O_EXCL): safe in a
 * child forked from a multi-threaded process.  0 or -errno (-EEXIST when the
 * file or a non-directory parent exists, -ELOOP for a symlink). */
int pathguard_write(int dirfd, const char *path, const void *data, size_t len, mode_t mode);

#endif
