/* wire.h — the /exec request and the result on the wire (SPEC §4, §5),
 * decoded into and encoded from the C API's structs, and the other records
 * ward writes as JSON (/health, the server's log, the doctor's report).
 * Implemented in json.c (results and the records) and request_json.c (the
 * /exec request), the files that know the format; they only read and write
 * these structs, and call no front end.
 *
 * Decoding checks only types and shapes and names the offending field
 * ("limits.memory_mb: must be a non-negative integer"); what values are
 * allowed is decided once, by ward_request_validate(). */
#ifndef WARD_WIRE_H
#define WARD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"

/* A decoded request and the storage its pointers borrow from. */
struct ward_request_doc {
	struct ward_request req; /* capture = true; stdin_fd = -1 */
	bool isolation_set;      /* the body named an isolation level */
	/* owned storage; free with ward_request_doc_free() */
	void *json; /* the parsed document (strings point into it) */
	char **argv;
	char **env;
	struct ward_mount *mounts;
	struct ward_file *files;
	unsigned char **file_data; /* decoded base64 contents, one per file, or NULL */
	unsigned char *stdin_data; /* decoded base64 stdin, or NULL */
	char **collect;            /* "collect": globs borrowed from json, or NULL */
	const char **allow;        /* network.allow (strings point into json) */
};

/* jansson spends ~200 bytes and real time on every value: an 8 MiB body of
 * "{}," would cost ~600 MiB and seconds of an I/O thread.  Bodies with more
 * values than this (counted by ward_json_check_values: each ',', '[' and
 * '{' outside strings) are refused before parsing. */
#define WARD_JSON_MAX_VALUES 100000
int ward_json_check_values(const char *body, size_t len, size_t max, char *err, size_t errlen);

/* Parse a POST /exec body.  0, or -1 with a message naming the field in
 * err (doc is then already freed).  Never crashes on hostile input: depth
 * is bounded by jansson, duplicate keys and non-objects are refused. */
int ward_request_from_json(const char *body, size_t len, struct ward_request_doc *doc, char *err, size_t errlen);
/* The same, with the limits a request that names none gets (a runner's
 * defaults under its maxima, ward_defaults_under); NULL: SPEC §2's. */
int ward_request_from_json_under(const char *body, size_t len, const struct ward_limits *defaults,
                                 struct ward_request_doc *doc, char *err, size_t errlen);
void ward_request_doc_free(struct ward_request_doc *doc);
/* About what a decoded request holds in memory (its parsed document, the
 * copies and decoded contents), never less: ward serve counts it against
 * --max-body-total while the request waits and runs. */
size_t ward_request_doc_bytes(const struct ward_request_doc *doc);

/* The request as a POST /exec body (for `ward run --remote`): a malloc'd
 * string, or NULL with a message in err.  Contents that are not UTF-8 go
 * as base64. */
char *ward_request_to_json(const struct ward_request *req, char *err, size_t errlen);
/* The same with only the limits in mask (1 << LIM_x, core/request.h): a
 * client sends the limits its user gave and leaves the rest to the
 * runner's defaults, which lie within the runner's maxima. */
char *ward_request_to_json_given(const struct ward_request *req, unsigned limits, char *err, size_t errlen);

/* A result object (SPEC §4) back into a struct ward_result (for
 * --remote; its collected files' paths unchecked: see json.c's get_files).  0, or -1 with a message in err.  res must be freed with
 * ward_result_free() in both cases. */
int ward_result_from_json(const char *body, size_t len, struct ward_result *res, char *err, size_t errlen);

/* ward_result_to_json_fd, with the collected files' contents or (ward run
 * --json, which writes them into --collect-dir) only their path, size and
 * mode. */
int ward_result_to_json_fd_files(const struct ward_result *res, bool contents, int fd);

/* The body of an error answer: {"error": msg}, malloc'd, or NULL. */
char *ward_error_to_json(const char *msg);

/* The "error" member of an error answer, copied into buf (empty when the
 * body is not such an object). */
void ward_error_from_json(const char *body, size_t len, char *buf, size_t buflen);

/* GET /health's answer: {"status": "ok"|"unavailable", "isolation",
 * "version"[, "error": reason], "limits": {"defaults": {...}, "maxima":
 * {...}}} with the limits named as in a request's "limits" (SPEC §10).
 * malloc'd, or NULL. */
char *ward_health_to_json(bool ok, const char *isolation, const char *reason, const struct ward_limits *defaults,
                          const struct ward_limits *maxima);
/* The same with "egress": {"allow": [...]}, the runner's --egress-allow
 * ceiling (SPEC §13; [] when it offers none). */
char *ward_health_egress_to_json(bool ok, const char *isolation, const char *reason, const struct ward_limits *defaults,
                                 const struct ward_limits *maxima, const char *const *egress_allow, size_t negress);

/* One line of ward serve's log.  With event set it is a server event
 * (listening, draining, ...) and only time, event and message are used. */
struct ward_log_entry {
	const char *time;  /* RFC 3339, UTC */
	const char *event; /* NULL for a request line */
	const char *client, *method, *path;
	int http_status; /* 0: the connection ended without an answer */
	uint64_t wall_ms;
	const char *sandbox_status; /* NULL: nothing ran */
	const char *message;        /* NULL or an error / event detail */
};
char *ward_log_to_json(const struct ward_log_entry *e);

/* What this host gives each isolation level (SPEC §7), as `ward doctor`
 * found it (src/front/doctor.c fills it; here so that the format never
 * reaches up into the front end). */
struct doctor_item {
	const char *name;
	bool ok;
	char detail[1024]; /* what was found, or why not and the fix */
};

struct doctor_report {
	struct doctor_item items[14];
	int n;
	bool system_ok; /* a real sandbox ran */
	bool application_allowed;
	bool root;
	int landlock_abi;
	int cgroup_version;
};

/* `ward doctor --json`: malloc'd, or NULL. */
char *doctor_to_json(const struct doctor_report *r);

#endif
