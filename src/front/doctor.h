/* doctor.h — what this host gives each isolation level (SPEC §7). */
#ifndef WARD_DOCTOR_H
#define WARD_DOCTOR_H

#include <stdbool.h>

struct doctor_item {
	const char *name;
	bool ok;
	char detail[256];  /* what was found, or why not and the fix */
};

struct doctor_report {
	struct doctor_item items[12];
	int n;
	bool system_ok;      /* a real sandbox ran */
	bool application_allowed;
	bool root;
	int landlock_abi;
	int cgroup_version;
};

void doctor_run(struct doctor_report *r);
/* In src/wire/json.c. */
char *doctor_to_json(const struct doctor_report *r);

#endif
