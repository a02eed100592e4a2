/* unit.h — the smallest test framework that prints what tests/run counts. */
#ifndef WARD_UNIT_H
#define WARD_UNIT_H
#include <stdio.h>
#include <string.h>

extern int unit_failures;

#define CHECK(name, cond)                                                              \
	do {                                                                           \
		if (cond)                                                              \
			printf("PASS: %s\n", name);                                   \
		else {                                                                 \
			printf("FAIL: %s: %s (%s:%d)\n", name, #cond, __FILE__, __LINE__); \
			unit_failures++;                                               \
		}                                                                      \
	} while (0)

#endif
