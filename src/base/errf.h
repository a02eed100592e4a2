/* errf.h — the one way ward formats an error for its caller: every
 * function that fails with a message takes (char *err, size_t errlen) and
 * fills it here.  Below every other folder: it includes nothing of ward's,
 * so sandbox/ may use it too. */
#ifndef WARD_BASE_ERRF_H
#define WARD_BASE_ERRF_H

#include <stdarg.h>
#include <stddef.h>

/* The message into err (when err and errlen are given); -1. */
int base_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int base_verrf(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* ... followed by ": " and errno's text, errno kept as it was; -1. */
int base_errf_errno(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
