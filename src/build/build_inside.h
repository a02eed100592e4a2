/* build_inside.h — the inside of a build step's sandbox (build_inside.c). */
#ifndef WARD_IMAGE_BUILD_INSIDE_H
#define WARD_IMAGE_BUILD_INSIDE_H

#include <stdbool.h>

struct build_inside {
	int sock; /* the root arrives here (SCM_RIGHTS) */
	int out;  /* the step's output */
	char *const *argv;
	char *const *env;
	const char *workdir;
	const char *user;
	bool net_allow; /* the loopback up and the egress proxy's socket made here, sent over sock */
};

/* PID 1 of the step's namespaces: returns the exit status to end with. */
int build_inside(const struct build_inside *in);

#endif
