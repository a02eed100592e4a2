/* dialect.c — the dialects' shared half (dialect.h). */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "dialect/dialect.h"
#include "wire/utf8.h"

static void lang_over(const struct ward_lang_limits *ll, const struct ward_limits *max, struct ward_limits *l)
{
	if (ll->timeout_s)
		l->timeout_s = fmin(ll->timeout_s, max->timeout_s);
	if (ll->cpu_s)
		l->cpu_s = fmin(ll->cpu_s, max->cpu_s > 0 ? max->cpu_s : max->timeout_s);
	if (ll->memory_mb)
		l->memory_mb = ll->memory_mb < max->memory_mb ? ll->memory_mb : max->memory_mb;
	if (ll->pids)
		l->pids = ll->pids < max->pids ? ll->pids : max->pids;
	if (ll->tmp_size_mb)
		l->tmp_size_mb = ll->tmp_size_mb < max->tmp_size_mb ? ll->tmp_size_mb : max->tmp_size_mb;
}

void dialect_limits(struct server *s, const struct ward_language *lang, struct ward_limits *compile,
		    struct ward_judge_limits *run)
{
	*compile = s->o.defaults;
	compile->output_limit = 65536 < s->o.max.output_limit ? 65536 : s->o.max.output_limit;
	lang_over(&lang->compile_limits, &s->o.max, compile);
	memset(run, 0, sizeof(*run));
	run->l = s->o.defaults;
	run->l.timeout_s = fmin(5, s->o.max.timeout_s);
	lang_over(&lang->run_limits, &s->o.max, &run->l);
}

static unsigned take(void *arg, unsigned want)
{
	return slots_borrow(arg, want);
}

static void give(void *arg, unsigned n)
{
	slots_return(arg, n);
}

void dialect_judge(struct server *s, struct ward_judge_job *job, struct ward_judge_result *res)
{
	job->pool = s->pool;
	job->cancel = &s->cancel;
	job->take_slots = take;
	job->give_slots = give;
	job->slots_arg = s;
	if (!job->parallel)
		job->parallel = s->o.max_concurrent;
	ward_judge(job, res);
	metrics_count_judge(s, res);
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
