/* piston.h — the Piston v2 dialect (SPEC §16): `ward serve --piston ADDR`
 * speaks Piston's API (engineer-man/piston 3.1.1) over the judge (SPEC
 * §15).  front/dialects.c adds piston_api's listener; the unit tests use the
 * version ranges. */
#ifndef WARD_DIALECT_PISTON_H
#define WARD_DIALECT_PISTON_H

#include <stdbool.h>

struct api;
extern const struct api piston_api;

/* Whether version ("12.2.0"; missing parts are 0) satisfies a node-semver
 * range ("*", "3", "3.x", "3.10", "^3.9", "~3.11", ">=3.9 <4", "1 || 3",
 * "v3.11.2", "3.11.2+deb").  *bad set when the range does not parse
 * ("latest"): it matches nothing, as Piston's semver does.  Bounded: at
 * most 256 bytes and 16 comparators are read. */
bool piston_semver_satisfies(const char *version, const char *range, bool *bad);

#endif
