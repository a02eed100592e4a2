/* lockfile.h — /run/ward's slot files (lockfile.c). */
#ifndef WARD_SANDBOX_LOCKFILE_H
#define WARD_SANDBOX_LOCKFILE_H

/* /run/ward/NAME, root's and closed to others, opened for OFD locks of one
 * byte a slot (the uid slots; the cgroup slots).  fd or -1 with errno. */
int lockfile_open(const char *name);

#endif
