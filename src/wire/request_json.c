/* request_json.c — /exec requests (SPEC §5) to and from JSON: a POST /exec
 * body decoded into a struct ward_request (bounded: its bytes are counted
 * for the server's budgets), and a request encoded back (`ward run
 * --remote`).  Built on decode.c's checks. */
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

/* ----------------------------------------------- /exec requests (SPEC §5)
 * POST /exec bodies to struct ward_request and back (for `ward run
 * --remote`), result objects back to struct ward_result, and the
 * {"error": "..."} envelope. */

static int decode_argv(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return base_errf(err, errlen, "argv: must be an array of strings");
	if (json_array_size(a) == 0)
		return base_errf(err, errlen, "argv: must not be empty");
	if (wire_string_array(a, "argv", &doc->argv, err, errlen) < 0)
		return -1;
	doc->req.argv = doc->argv;
	return 0;
}

static int decode_mounts(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return base_errf(err, errlen, "mounts: must be an array of objects");
	size_t n = json_array_size(a);
	doc->mounts = calloc(n ? n : 1, sizeof(*doc->mounts));
	if (!doc->mounts)
		return base_errf(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_array_get(a, i), *v;
		struct ward_mount *wm = &doc->mounts[i];
		char field[64];
		if (!json_is_object(m))
			return base_errf(err, errlen, "mounts[%zu]: must be an object", i);
		snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
		if (!(v = wire_member(m, "host_path")))
			return base_errf(err, errlen, "%s: is required", field);
		if (wire_cstr(v, field, &wm->host_path, err, errlen) < 0)
			return -1;
		snprintf(field, sizeof(field), "mounts[%zu].sandbox_path", i);
		if ((v = wire_member(m, "sandbox_path")) && wire_cstr(v, field, &wm->sandbox_path, err, errlen) < 0)
			return -1;
		/* read-only unless the caller asks otherwise: the safe default */
		wm->read_only = true;
		if ((v = wire_member(m, "read_only"))) {
			if (!json_is_boolean(v))
				return base_errf(err, errlen, "mounts[%zu].read_only: must be true or false", i);
			wm->read_only = json_is_true(v);
		}
	}
	doc->req.mounts = doc->mounts;
	doc->req.nmounts = n;
	return 0;
}

static int decode_files(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return base_errf(err, errlen, "files: must be an array of objects");
	size_t n = json_array_size(a);
	doc->files = calloc(n ? n : 1, sizeof(*doc->files));
	doc->file_data = calloc(n ? n : 1, sizeof(*doc->file_data));
	if (!doc->files || !doc->file_data)
		return base_errf(err, errlen, "out of memory");
	doc->req.files = doc->files;
	doc->req.nfiles = n; /* set now so that doc_free releases what was decoded */
	for (size_t i = 0; i < n; i++) {
		json_t *f = json_array_get(a, i), *v;
		struct ward_file *wf = &doc->files[i];
		char at[48], field[64];
		if (!json_is_object(f))
			return base_errf(err, errlen, "files[%zu]: must be an object", i);
		snprintf(field, sizeof(field), "files[%zu].path", i);
		if (!(v = wire_member(f, "path")))
			return base_errf(err, errlen, "%s: is required", field);
		if (wire_cstr(v, field, &wf->path, err, errlen) < 0)
			return -1;
		snprintf(at, sizeof(at), "files[%zu]", i);
		if (wire_decode_file_body(f, at, 07777, wf, &doc->file_data[i], err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* "collect": ["*.png", "out/"] (SPEC §12); [] is none.  Which globs are
 * allowed is ward_request_validate()'s. */
static int decode_collect(struct ward_request_doc *doc, const json_t *a, char *err, size_t errlen)
{
	if (!json_is_array(a))
		return base_errf(err, errlen, "collect: must be an array of globs such as [\"*.png\", \"out/\"]");
	if (json_array_size(a) > WARD_MAX_COLLECT_GLOBS)
		return base_errf(err, errlen, "collect: %zu globs, at most %d", json_array_size(a),
		                 WARD_MAX_COLLECT_GLOBS);
	if (json_array_size(a) == 0)
		return 0;
	if (wire_string_array(a, "collect", &doc->collect, err, errlen) < 0)
		return -1;
	doc->req.collect = doc->collect;
	return 0;
}

static int decode_request(struct ward_request_doc *doc, const json_t *root, char *err, size_t errlen)
{
	struct ward_request *req = &doc->req;
	json_t *v;
	if (!json_is_object(root))
		return base_errf(err, errlen, "the body must be a JSON object");

	/* DeepTutor's client sends "argv": [] next to "command" when it has no
	 * argv, and "command": "" means no command (SPEC §5): both absent */
	json_t *a = wire_member(root, "argv"), *cmd = wire_member_nonempty(root, "command");
	if (json_is_array(a) && json_array_size(a) == 0) {
		if (!cmd)
			return base_errf(err, errlen,
			                 "argv: is empty and there is no command: send the program and its "
			                 "arguments in argv, or a shell string in command");
		a = NULL;
	}
	if (a) {
		if (decode_argv(doc, a, err, errlen) < 0)
			return -1;
	} else if (cmd) {
		if (wire_cstr(cmd, "command", &req->shell, err, errlen) < 0)
			return -1;
	} else
		return base_errf(err, errlen,
		                 "command: one of \"command\" (a non-empty shell string) and \"argv\" "
		                 "is required");
	/* argv is authoritative: a "command" next to it is not even checked */

	/* "workdir": "" is DeepTutor's "none": an ephemeral /work */
	if ((v = wire_member_nonempty(root, "workdir")) && wire_cstr(v, "workdir", &req->workdir, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "rootfs")) && wire_cstr(v, "rootfs", &req->rootfs, err, errlen) < 0)
		return -1;
	if ((v = wire_member_nonempty(root, "image")) && wire_cstr(v, "image", &req->image_name, err, errlen) < 0)
		return -1;
	const char *rootk = NULL;
	if ((v = wire_member_nonempty(root, "root")) && wire_cstr(v, "root", &rootk, err, errlen) < 0)
		return -1;
	if (rootk && strcmp(rootk, "overlay") != 0)
		return base_errf(err, errlen,
		                 "root: give \"overlay\" (a writable layer over the image) or leave it out");
	if (rootk && !req->image_name)
		return base_errf(err, errlen,
		                 "root: \"overlay\" is a writable layer over an image: give \"image\" too");
	req->root_overlay = rootk != NULL;
	if ((v = wire_member(root, "env")) && wire_decode_env(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "mounts")) && decode_mounts(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "limits")) && wire_decode_limits(req, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "files")) && decode_files(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "collect")) && decode_collect(doc, v, err, errlen) < 0)
		return -1;
	if ((v = wire_member(root, "stdin"))) {
		const char *enc = NULL;
		json_t *e = wire_member(root, "stdin_encoding");
		if (e && wire_cstr(e, "stdin_encoding", &enc, err, errlen) < 0)
			return -1;
		if (wire_content(v, enc, "stdin", &req->stdin_data, &req->stdin_len, &doc->stdin_data, err, errlen) < 0)
			return -1;
		req->stdin_set = true;
	}
	return wire_decode_network_isolation(doc, root, err, errlen);
}

int ward_json_check_values(const char *body, size_t len, size_t max, char *err, size_t errlen)
{
	size_t count = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = body[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"')
			in_str = true;
		else if ((c == ',' || c == '[' || c == '{') && ++count > max)
			return base_errf(err, errlen,
			                 "the document has more than %zu JSON values: send fewer, larger ones", max);
	}
	return 0;
}

int ward_request_from_json(const char *body, size_t len, struct ward_request_doc *doc, char *err, size_t errlen)
{
	return ward_request_from_json_under(body, len, NULL, doc, err, errlen);
}

int ward_request_from_json_under(const char *body, size_t len, const struct ward_limits *defaults,
                                 struct ward_request_doc *doc, char *err, size_t errlen)
{
	wire_request_doc_init(doc);
	if (defaults)
		doc->req.limits = *defaults;
	if (ward_json_check_values(body, len, WARD_JSON_MAX_VALUES, err, errlen) < 0)
		return -1;
	json_t *root = wire_load(body, len, err, errlen);
	if (!root)
		return -1;
	doc->json = root;
	if (decode_request(doc, root, err, errlen) < 0) {
		ward_request_doc_free(doc);
		return -1;
	}
	return 0;
}

void ward_request_doc_free(struct ward_request_doc *doc)
{
	if (doc->env)
		for (char **e = doc->env; *e; e++)
			free(*e);
	free(doc->env);
	if (doc->file_data)
		for (size_t i = 0; i < doc->req.nfiles; i++)
			free(doc->file_data[i]);
	free(doc->file_data);
	free(doc->files);
	free(doc->mounts);
	free(doc->argv);
	free(doc->collect);
	free(doc->stdin_data);
	free(doc->allow);
	json_decref(doc->json);
	memset(doc, 0, sizeof(*doc));
}

/* What jansson holds for a value, malloc's own overhead included: measured
 * on jansson 2.14 (an empty object ~220 bytes, an empty array ~140, a
 * member ~100 beyond its key and value, a string ~80 beyond its text, a
 * number ~45), rounded up; tests/unit checks that these bound what jansson
 * really allocates. */
#define DOC_OBJECT_COST 256
#define DOC_MEMBER_COST 128
#define DOC_ARRAY_COST 160
#define DOC_ELEMENT_COST 16
#define DOC_SCALAR_COST 96

static size_t json_value_bytes(const json_t *v)
{
	size_t n = 0;
	const char *k;
	json_t *m;
	size_t i;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = DOC_OBJECT_COST;
		json_object_foreach((json_t *)v, k, m) n += DOC_MEMBER_COST + strlen(k) + json_value_bytes(m);
		return n;
	case JSON_ARRAY:
		n = DOC_ARRAY_COST;
		json_array_foreach(v, i, m) n += DOC_ELEMENT_COST + json_value_bytes(m);
		return n;
	case JSON_STRING:
		return DOC_SCALAR_COST + json_string_length(v);
	case JSON_INTEGER:
	case JSON_REAL:
		return DOC_SCALAR_COST;
	default:
		return 0; /* true, false, null: jansson's singletons */
	}
}

size_t ward_request_doc_bytes(const struct ward_request_doc *doc)
{
	const struct ward_request *q = &doc->req;
	size_t n = sizeof(*doc) + (doc->json ? json_value_bytes(doc->json) : 0);
	for (char **a = doc->argv; a && *a; a++)
		n += sizeof(char *);
	for (char **e = doc->env; e && *e; e++)
		n += sizeof(char *) + strlen(*e) + 1 + 16;
	n += q->nmounts * sizeof(struct ward_mount) + q->nfiles * (sizeof(struct ward_file) + sizeof(char *));
	for (size_t i = 0; doc->file_data && i < q->nfiles; i++)
		if (doc->file_data[i])
			n += q->files[i].len + 16;
	if (doc->stdin_data)
		n += q->stdin_len + 16;
	return n;
}

/* Bytes as a string member, or as base64 with enc_key set to "base64" when
 * they are not valid UTF-8 (or hold a NUL, which we keep exact). */
static int put_content(json_t *o, const char *key, const char *enc_key, const unsigned char *data, size_t len)
{
	if (!data)
		data = (const unsigned char *)"";
	if (memchr(data, 0, len) == NULL) {
		json_t *s = json_stringn((const char *)data, len); /* NULL when not UTF-8 */
		if (s)
			return json_object_set_new(o, key, s);
	}
	char *b = base64_encode(data, len);
	if (!b)
		return -1;
	int rc = json_object_set_new(o, key, json_string(b));
	free(b);
	return rc < 0 ? -1 : json_object_set_new(o, enc_key, json_string("base64"));
}

/* A string member; refused (-1) when it is not UTF-8, which the wire
 * cannot carry for a path or an argument. */
static int put_str(json_t *o, const char *key, const char *s)
{
	json_t *v = json_string(s);
	return v ? json_object_set_new(o, key, v) : -1;
}

/* Every failure to allocate while encoding a request says this. */
#define ENCODE_OOM "out of memory encoding the request"

/* "argv", or "command" for a shell string.  0, or -1 with err set. */
static int put_command(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	if (req->argv && req->argv[0]) {
		json_t *a = json_array();
		json_object_set_new(o, "argv", a);
		for (char *const *p = req->argv; *p; p++) {
			json_t *s = json_string(*p);
			if (!s)
				return base_errf(err, errlen,
				                 "argument '%s' is not UTF-8: the runner's wire format cannot carry it",
				                 *p);
			json_array_append_new(a, s);
		}
	} else if (req->shell && !req->shell[0]) {
		/* "command": "" reads as no command (SPEC §5): send what runs here */
		json_t *a = json_pack("[sss]", "/bin/sh", "-c", "");
		if (!a || json_object_set_new(o, "argv", a) < 0)
			return base_errf(err, errlen, ENCODE_OOM);
	} else if (req->shell) {
		if (put_str(o, "command", req->shell) < 0)
			return base_errf(err, errlen,
			                 "the shell command is not UTF-8: the runner's wire format cannot carry it");
	}
	return 0;
}

/* "env": {NAME: value}.  0, or -1 with err set. */
static int put_env(json_t *o, char *const *env, char *err, size_t errlen)
{
	json_t *e = json_object();
	json_object_set_new(o, "env", e);
	for (char *const *p = env; *p; p++) {
		const char *eq = strchr(*p, '=');
		if (!eq)
			continue;
		char *k = strndup(*p, (size_t)(eq - *p));
		if (!k)
			return base_errf(err, errlen, ENCODE_OOM);
		json_t *v = json_string(eq + 1);
		int rc = v ? json_object_set_new(e, k, v) : -1;
		free(k);
		if (rc < 0)
			return base_errf(err, errlen, "environment entry '%s' is not UTF-8", *p);
	}
	return 0;
}

/* A new object at the end of array a. */
static json_t *append_object(json_t *a)
{
	json_t *e = json_object();
	json_array_append_new(a, e);
	return e;
}

static int put_mounts(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "mounts", a);
	for (size_t i = 0; i < req->nmounts; i++) {
		const struct ward_mount *m = &req->mounts[i];
		json_t *mo = append_object(a);
		if (put_str(mo, "host_path", m->host_path ? m->host_path : "") < 0 ||
		    (m->sandbox_path && put_str(mo, "sandbox_path", m->sandbox_path) < 0))
			return base_errf(err, errlen,
			                 "a mount path is not UTF-8: the runner's wire format cannot carry it");
		json_object_set_new(mo, "read_only", json_boolean(m->read_only));
	}
	return 0;
}

/* "limits", those in mask (1 << LIM_x), named as in a request. */
static void put_limits(json_t *o, const struct ward_limits *l, unsigned mask)
{
	json_t *lo = json_object();
	json_object_set_new(o, "limits", lo);
	for (int k = 0; k < LIM__COUNT; k++) {
		if (!(mask & (1u << k)) || k == LIM_EGRESS) /* egress_bytes: with network allow */
			continue;
		double v = ward_limit_get(l, k);
		json_object_set_new(lo, ward_limit_table[k].field,
		                    k == LIM_TIMEOUT || k == LIM_CPU ? json_real(v) : json_integer((json_int_t)v));
	}
}

static int put_collect(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "collect", a);
	for (char *const *g = req->collect; *g; g++) {
		json_t *s = json_string(*g);
		if (!s)
			return base_errf(err, errlen,
			                 "collect glob '%s' is not UTF-8: the runner's wire format cannot carry it",
			                 *g);
		json_array_append_new(a, s);
	}
	return 0;
}

static int put_files(json_t *o, const struct ward_request *req, char *err, size_t errlen)
{
	json_t *a = json_array();
	json_object_set_new(o, "files", a);
	for (const struct ward_file *f = req->files; f < req->files + req->nfiles; f++) {
		json_t *fo = append_object(a);
		if (put_str(fo, "path", f->path ? f->path : "") < 0)
			return base_errf(err, errlen,
			                 "a file path is not UTF-8: the runner's wire format cannot carry it");
		if (put_content(fo, "content", "encoding", f->data, f->len) < 0)
			return base_errf(err, errlen, ENCODE_OOM);
		if (f->mode)
			json_object_set_new(fo, "mode", json_integer(f->mode));
	}
	return 0;
}

char *ward_request_to_json(const struct ward_request *req, char *err, size_t errlen)
{
	return ward_request_to_json_given(req, ~0u, err, errlen);
}

char *ward_request_to_json_given(const struct ward_request *req, unsigned limits, char *err, size_t errlen)
{
	json_t *o = json_object();
	char *out = NULL;
	if (!o) {
		base_errf(err, errlen, ENCODE_OOM);
		return NULL;
	}
	if (put_command(o, req, err, errlen) < 0 || (req->env && put_env(o, req->env, err, errlen) < 0))
		goto done;
	if ((req->workdir && put_str(o, "workdir", req->workdir) < 0) ||
	    (req->rootfs && put_str(o, "rootfs", req->rootfs) < 0) ||
	    (req->image_name && put_str(o, "image", req->image_name) < 0)) {
		base_errf(err, errlen, "a host path is not UTF-8: the runner's wire format cannot carry it");
		goto done;
	}
	if (req->nmounts && put_mounts(o, req, err, errlen) < 0)
		goto done;
	put_limits(o, &req->limits, limits);
	if (req->nfiles && put_files(o, req, err, errlen) < 0)
		goto done;
	if (req->collect && req->collect[0] && put_collect(o, req, err, errlen) < 0)
		goto done;
	if (req->stdin_set && put_content(o, "stdin", "stdin_encoding", req->stdin_data, req->stdin_len) < 0) {
		base_errf(err, errlen, ENCODE_OOM);
		goto done;
	}
	if (req->net == WARD_NET_ALLOW) {
		json_t *no = json_object(), *a = json_array();
		json_object_set_new(no, "allow", a);
		for (size_t i = 0; i < req->negress_allow; i++)
			json_array_append_new(a, json_string(req->egress_allow[i]));
		json_object_set_new(o, "network", no);
		if (limits & (1u << LIM_EGRESS))
			json_object_set_new(json_object_get(o, "limits"), "egress_bytes",
			                    json_integer((json_int_t)req->limits.egress_bytes));
	} else
		json_object_set_new(o, "network", json_string(req->net == WARD_NET_LOOPBACK ? "loopback" : "none"));
	json_object_set_new(o, "isolation", json_string(ward_isolation_name(req->isolation)));
	out = json_dumps(o, JSON_COMPACT);
	if (!out)
		base_errf(err, errlen, ENCODE_OOM);
done:
	json_decref(o);
	return out;
}
