/* errf.c — an error message for the caller (errf.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/errf.h"

int base_verrf(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	return -1;
}

int base_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	base_verrf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int base_errf_errno(char *err, size_t errlen, const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	base_verrf(err, errlen, fmt, ap);
	va_end(ap);
	size_t n = err && errlen ? strlen(err) : 0;
	if (err && n + 1 < errlen)
		snprintf(err + n, errlen - n, ": %s", strerror(e));
	errno = e;
	return -1;
}
