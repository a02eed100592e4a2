/* seccomp_build.h — the syscall filter of a build step (SPEC §19). */
#ifndef WARD_SECCOMP_BUILD_H
#define WARD_SECCOMP_BUILD_H

/* Loads it into the calling process (root of its own user namespace, so
 * no no_new_privs is needed).  0, or -errno. */
int seccomp_build_load(void);

#endif
