/* dialect.c — the dialects' shared half (dialect.h). */
#define _GNU_SOURCE
#include <jansson.h>
#include <string.h>

#include "dialect/dialect.h"
#include "judge/judge_json.h"
#include "wire/utf8.h"

void dialect_limits(struct server *s, const struct ward_language *lang, struct ward_limits *compile,
                    struct ward_judge_limits *run)
{
	struct ward_judge_limits c;
	memset(run, 0, sizeof(*run));
	judge_stage_defaults(lang, &s->o.defaults, &s->o.max, &c, run);
	*compile = c.l;
}

void dialect_judge(struct server *s, struct ward_judge_job *job, struct ward_judge_result *res)
{
	if (!job->parallel)
		job->parallel = s->o.max_concurrent;
	serve_judge(s, job, res);
}

char *dialect_msg_json(const char *key, const char *msg)
{
	json_t *o = json_pack("{s:s}", key, msg);
	char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return j;
}

void dialect_answer(struct req *r, unsigned code, json_t *o)
{
	char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!j) {
		set_error(r, 500, "out of memory");
		return;
	}
	set_answer(r, code, j, "application/json");
}

const struct ward_language *dialect_lang(struct server *s, const char *id)
{
	for (size_t i = 0; i < s->langs.n; i++)
		if (s->langs.v[i].enabled && !strcmp(s->langs.v[i].id, id))
			return &s->langs.v[i];
	return NULL;
}

bool dialect_utf8(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len(p + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}
