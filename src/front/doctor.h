/* doctor.h — what this host gives each isolation level (SPEC §7): runs the
 * checks and fills the report (its type and JSON are the wire's:
 * src/wire/wire.h). */
#ifndef WARD_DOCTOR_H
#define WARD_DOCTOR_H

#include "wire/wire.h"

void doctor_run(struct doctor_report *r);

#endif
