/* remote.h — the client side of ward serve (src/front/remote.c).  The entry
 * point, ward_remote_run(), is declared in frontends.h with the other
 * front ends; this header holds what the tests reach beneath it. */
#ifndef WARD_REMOTE_H
#define WARD_REMOTE_H

/* The /exec endpoint for a runner URL: "http://h:p" and "http://h:p/" give
 * "http://h:p/exec"; a URL already ending in /exec is kept.  malloc'd, or
 * NULL. */
char *remote_exec_url(const char *url);

#endif
