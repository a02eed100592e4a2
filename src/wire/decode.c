/* decode.c — the checks every JSON decoder of ward's shares (wire/decode.h:
 * members, typed values, contents, env, files, limits, the network
 * isolation), on which the /exec request (request_json.c) and the test
 * jobs' format (src/testjob/testjob_json.c) are both built.  Which values
 * are allowed is ward_request_validate()'s (src/core/request.c). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errf.h"
#include "core/egress.h"
#include "core/request.h"
#include "ward.h"
#include "wire/base64.h"
#include "wire/decode.h"
#include "wire/jsonw.h"
#include "wire/utf8.h"
#include "wire/wire.h"

/* ---------------------------------------------- decoding: what every format shares */

void wire_request_doc_init(struct ward_request_doc *doc)
{
	memset(doc, 0, sizeof(*doc));
	ward_request_init(&doc->req);
	doc->req.capture = true;
	doc->req.stdin_fd = -1;
}

json_t *wire_load(const char *body, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	/* Duplicate keys are refused: two "argv" members would leave which one
	 * ran up to the parser.  Depth is bounded by jansson itself
	 * (JSON_PARSER_MAX_DEPTH), so deep nesting is an error, not a crash. */
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!root)
		base_errf(err, errlen, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
	return root;
}

/* A member that is absent or null counts as not given: clients written in
 * Python send None for "use the default". */
json_t *wire_member(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

/* A string member that is absent, null or "" counts as not given: existing
 * clients send "" for "not set" (DeepTutor's "workdir": "").  Only for
 * members where the empty string cannot mean anything else (SPEC §5:
 * workdir and command). */
json_t *wire_member_nonempty(const json_t *o, const char *key)
{
	json_t *v = wire_member(o, key);
	return json_is_string(v) && json_string_length(v) == 0 ? NULL : v;
}

/* A C string from a JSON string: refused when it holds a NUL (we parse with
 * JSON_ALLOW_NUL so that file contents may, but a path or an argument with
 * a NUL would be cut short silently). */
int wire_cstr(const json_t *v, const char *field, const char **out, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return base_errf(err, errlen, "%s: must be a string", field);
	const char *s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return base_errf(err, errlen, "%s: contains a NUL character", field);
	*out = s;
	return 0;
}

/* A non-negative whole number no larger than max; a real such as 512.0 is
 * accepted when it is integral (json.dumps of a float). */
int wire_uint(const json_t *v, const char *field, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || (uint64_t)i > max)
			return base_errf(err, errlen, "%s: must be an integer from 0 to %llu", field,
			                 (unsigned long long)max);
		*out = (uint64_t)i;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d >= 0 && d <= (double)max && floor(d) == d) {
			*out = (uint64_t)d;
			return 0;
		}
	}
	return base_errf(err, errlen, "%s: must be an integer from 0 to %llu", field, (unsigned long long)max);
}

static int wire_number(const json_t *v, const char *field, double *out, char *err, size_t errlen)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return base_errf(err, errlen, "%s: must be a number", field);
	*out = json_number_value(v);
	return 0;
}

/* Content with an "encoding": utf-8 (the string's bytes) or base64.  *owned
 * gets the decoded buffer when one was made. */
int wire_content(const json_t *v, const char *encoding, const char *field, const unsigned char **data, size_t *len,
                 unsigned char **owned, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return base_errf(err, errlen, "%s: must be a string", field);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (!encoding || strcmp(encoding, "utf-8") == 0 || strcmp(encoding, "utf8") == 0) {
		*data = (const unsigned char *)s;
		*len = n;
		return 0;
	}
	if (strcmp(encoding, "base64") != 0)
		return base_errf(err, errlen, "%s: encoding must be \"utf-8\" or \"base64\"", field);
	unsigned char *buf = base64_decode(s, n, len);
	if (!buf)
		return base_errf(err, errlen, "%s: %s", field,
		                 errno == ENOMEM ? "out of memory" : "is not valid base64");
	*owned = buf;
	*data = buf;
	return 0;
}

int wire_string_array(const json_t *a, const char *name, char ***out, char *err, size_t errlen)
{
	size_t n = json_array_size(a);
	*out = calloc(n + 1, sizeof(char *));
	if (!*out)
		return base_errf(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char field[48];
		snprintf(field, sizeof(field), "%s[%zu]", name, i);
		const char *s;
		if (wire_cstr(json_array_get(a, i), field, &s, err, errlen) < 0)
			return -1;
		(*out)[i] = (char *)s; /* borrowed from the document */
	}
	return 0;
}

int wire_decode_env(struct ward_request_doc *doc, const json_t *o, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return base_errf(err, errlen, "env: must be an object of strings");
	size_t n = json_object_size(o), i = 0;
	doc->env = calloc(n + 1, sizeof(char *));
	if (!doc->env)
		return base_errf(err, errlen, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		char field[80];
		if (json_is_null(v)) /* a variable that is null is not set */
			continue;
		snprintf(field, sizeof(field), "env.%.60s", k);
		const char *s;
		if (wire_cstr(v, field, &s, err, errlen) < 0)
			return -1;
		if (!*k || strchr(k, '='))
			return base_errf(err, errlen, "%s: a variable name must be non-empty and have no '='", field);
		size_t kl = strlen(k), sl = strlen(s);
		char *e = malloc(kl + sl + 2);
		if (!e)
			return base_errf(err, errlen, "out of memory");
		memcpy(e, k, kl);
		e[kl] = '=';
		memcpy(e + kl + 1, s, sl + 1);
		doc->env[i++] = e;
	}
	doc->req.env = doc->env;
	return 0;
}

int wire_decode_file_body(const json_t *f, const char *at, uint64_t max_mode, struct ward_file *wf,
                          unsigned char **owned, char *err, size_t errlen)
{
	json_t *v;
	char field[80];
	const char *enc = NULL;
	snprintf(field, sizeof(field), "%s.encoding", at);
	if ((v = wire_member(f, "encoding")) && wire_cstr(v, field, &enc, err, errlen) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.content", at);
	if (!(v = wire_member(f, "content"))) {
		wf->data = (const unsigned char *)"";
		wf->len = 0;
	} else if (wire_content(v, enc, field, &wf->data, &wf->len, owned, err, errlen) < 0)
		return -1;
	snprintf(field, sizeof(field), "%s.mode", at);
	uint64_t mode = 0;
	if ((v = wire_member(f, "mode")) && wire_uint(v, field, max_mode, &mode, err, errlen) < 0)
		return -1;
	wf->mode = (mode_t)mode;
	return 0;
}

int wire_decode_limits(struct ward_request *req, const json_t *o, char *err, size_t errlen)
{
	struct ward_limits *l = &req->limits;
	json_t *v;
	uint64_t u;
	if (!json_is_object(o))
		return base_errf(err, errlen, "limits: must be an object");
	if ((v = wire_member(o, "timeout_s")) && wire_number(v, "limits.timeout_s", &l->timeout_s, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "cpu_seconds")) && wire_number(v, "limits.cpu_seconds", &l->cpu_s, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "memory_mb")) &&
	    wire_uint(v, "limits.memory_mb", UINT64_MAX >> 20, &l->memory_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "pids"))) {
		if (wire_uint(v, "limits.pids", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->pids = (uint32_t)u;
	}
	/* DeepTutor's name; ward counts bytes per stream */
	if ((v = wire_member(o, "max_output_chars")) &&
	    wire_uint(v, "limits.max_output_chars", UINT64_MAX, &l->output_limit, err, errlen) < 0)
		return -1;
	/* ward's own limits beyond DeepTutor's set, named as ward run's options */
	if ((v = wire_member(o, "output_limit")) &&
	    wire_uint(v, "limits.output_limit", UINT64_MAX, &l->output_limit, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "fsize_mb")) &&
	    wire_uint(v, "limits.fsize_mb", UINT64_MAX >> 20, &l->fsize_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "tmp_size_mb")) &&
	    wire_uint(v, "limits.tmp_size_mb", UINT64_MAX >> 20, &l->tmp_size_mb, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "nofile"))) {
		if (wire_uint(v, "limits.nofile", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->nofile = (uint32_t)u;
	}
	if ((v = wire_member(o, "collect_max_files"))) {
		if (wire_uint(v, "limits.collect_max_files", UINT32_MAX, &u, err, errlen) < 0)
			return -1;
		l->collect_max_files = (uint32_t)u;
	}
	if ((v = wire_member(o, "collect_max_bytes")) &&
	    wire_uint(v, "limits.collect_max_bytes", UINT64_MAX >> 1, &l->collect_max_bytes, err, errlen) < 0)
		return -1;
	if ((v = wire_member(o, "egress_bytes")) &&
	    wire_uint(v, "limits.egress_bytes", UINT64_MAX, &l->egress_bytes, err, errlen) < 0)
		return -1;
	return 0;
}

/* "network": {"allow": ["pypi.org", "*.pythonhosted.org", ...]} (SPEC §13);
 * the patterns themselves are checked by ward_request_validate. */
static int decode_allow(struct ward_request_doc *doc, const json_t *o, char *err, size_t errlen)
{
	json_t *a = json_object_get(o, "allow");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return base_errf(err, errlen,
		                 "network: an object must have \"allow\": a non-empty array of host "
		                 "patterns (\"pypi.org\", \"*.pythonhosted.org\", \"files.example:8443\")");
	size_t n = json_array_size(a);
	if (n > EGRESS_MAX_PATTERNS)
		return base_errf(err, errlen, "network.allow: %zu patterns, at most %d", n, EGRESS_MAX_PATTERNS);
	doc->allow = calloc(n, sizeof(*doc->allow));
	if (!doc->allow)
		return base_errf(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (wire_cstr(json_array_get(a, i), "network.allow[]", &doc->allow[i], err, errlen) < 0)
			return -1;
	doc->req.net = WARD_NET_ALLOW;
	doc->req.egress_allow = doc->allow;
	doc->req.negress_allow = n;
	return 0;
}

int wire_decode_network_isolation(struct ward_request_doc *doc, const json_t *root, char *err, size_t errlen)
{
	json_t *v;
	if ((v = wire_member(root, "network"))) {
		const char *s;
		/* false is what a client means by "no network" */
		if (json_is_false(v))
			doc->req.net = WARD_NET_NONE;
		else if (json_is_object(v)) {
			if (decode_allow(doc, v, err, errlen) < 0)
				return -1;
		} else if (wire_cstr(v, "network", &s, err, errlen) < 0 || ward_net_parse(s, &doc->req.net) < 0 ||
		           doc->req.net == WARD_NET_ALLOW)
			return base_errf(err, errlen,
			                 "network: must be \"none\", \"loopback\" or {\"allow\": [\"HOST\", ...]}");
	}
	if ((v = wire_member(root, "isolation"))) {
		const char *s;
		if (wire_cstr(v, "isolation", &s, err, errlen) < 0 || ward_isolation_parse(s, &doc->req.isolation) < 0)
			return base_errf(err, errlen, "isolation: must be \"system\" or \"application\"");
		doc->isolation_set = true;
	}
	return 0;
}
