/* judge0_info.c — what the Judge0 dialect says of itself, as Judge0 CE
 * 1.13.1 does (research judge.md §3): its languages under Judge0's ids and
 * names ("Python (3.11.2)": the version the table's toolchain reported at
 * start-up), the statuses 1-14, /about, /config_info (its limits: Judge0's
 * under the runner's maxima, j0_limits_init) and /workers. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dialect/judge0/judge0_int.h"

/* Judge0's ids for the table's languages (the first is listed, all are
 * accepted: 1.13.1's and the hosted CE's), and its name for each:
 * "NAME (TOOLVERSION)", the version the toolchain reported. */
static const struct {
	const char *id, *name, *tool;
	int ids[8];
} jids[] = {
	{"c", "C", "GCC ", {50, 48, 49, 75, 103, 104, 110}},
	{"cpp", "C++", "GCC ", {54, 52, 53, 76, 105}},
	{"python", "Python", "", {71, 92, 100, 109, 113}},
	{"javascript", "JavaScript", "Node.js ", {63, 93, 97, 102}},
	{"java", "Java", "OpenJDK ", {62, 91}},
	{"go", "Go", "", {60, 95, 106, 107}},
	{"rust", "Rust", "", {73, 108}},
	{"ruby", "Ruby", "", {72}},
	{"php", "PHP", "", {68, 98}},
	{"bash", "Bash", "", {46}},
	{"lua", "Lua", "", {64}},
	{"perl", "Perl", "", {85}},
};
#define NJIDS (sizeof(jids) / sizeof(jids[0]))

const char *const j0_status_desc[15] = {
	"",
	"In Queue",
	"Processing",
	"Accepted",
	"Wrong Answer",
	"Time Limit Exceeded",
	"Compilation Error",
	"Runtime Error (SIGSEGV)",
	"Runtime Error (SIGXFSZ)",
	"Runtime Error (SIGFPE)",
	"Runtime Error (SIGABRT)",
	"Runtime Error (NZEC)",
	"Runtime Error (Other)",
	"Internal Error",
	"Exec Format Error",
};

static struct j0 *J(struct req *r)
{
	return r->ln->state;
}

const struct ward_language *j0_lang(struct j0 *j, int id)
{
	if (id == J0_MULTI_FILE_ID)
		return j->files.multi_on ? &j->files.multi : NULL;
	for (size_t i = 0; i < NJIDS; i++)
		for (size_t k = 0; k < 8 && jids[i].ids[k]; k++)
			if (jids[i].ids[k] == id)
				return dialect_lang(j->s, jids[i].id);
	return NULL;
}

/* Judge0's name of language l (jids[i]): "Python (3.11.2)". */
static json_t *name_of(size_t i, const struct ward_language *l)
{
	char b[200];
	snprintf(b, sizeof(b), "%s (%s%s)", jids[i].name, jids[i].tool, l->version[0] ? l->version : "?");
	return json_string(b);
}

void j0_languages(struct server *s, struct req *r)
{
	json_t *a = json_array();
	for (size_t i = 0; i < NJIDS; i++) {
		const struct ward_language *l = dialect_lang(s, jids[i].id);
		if (l)
			json_array_append_new(a, json_pack("{s:i,s:o}", "id", jids[i].ids[0], "name", name_of(i, l)));
	}
	if (J(r)->files.multi_on)
		json_array_append_new(
			a, json_pack("{s:i,s:s}", "id", J0_MULTI_FILE_ID, "name", J(r)->files.multi.display));
	dialect_answer(r, 200, a);
}

void j0_language(struct server *s, struct req *r)
{
	const struct ward_language *l = j0_lang(J(r), r->args.pid);
	if (!l) {
		set_answer(r, 404, j0_error_json("Not Found"), "application/json");
		return;
	}
	/* language 89 has no source file of its own (Judge0: null) */
	bool multi = r->args.pid == J0_MULTI_FILE_ID;
	json_t *name = json_string(l->display);
	for (size_t i = 0; !multi && i < NJIDS; i++)
		if (!strcmp(jids[i].id, l->id)) {
			json_decref(name);
			name = name_of(i, l);
		}
	dialect_answer(r, 200,
	               json_pack("{s:i,s:o,s:b,s:o,s:n,s:n}", "id", r->args.pid, "name", name, "is_archived", 0,
	                         "source_file", multi ? json_null() : json_string(l->source_file), "compile_cmd",
	                         "run_cmd"));
}

void j0_statuses(struct server *s, struct req *r)
{
	json_t *a = json_array();
	for (int i = 1; i <= 14; i++)
		json_array_append_new(a, json_pack("{s:i,s:s}", "id", i, "description", j0_status_desc[i]));
	dialect_answer(r, 200, a);
}

void j0_about(struct server *s, struct req *r)
{
	dialect_answer(r, 200,
	               json_pack("{s:s,s:s,s:s,s:s}", "version", "1.13.1", "homepage", "https://judge0.com",
	                         "source_code", "https://github.com/judge0/judge0", "maintainer",
	                         "ward (a Judge0 CE 1.13.1 dialect, SPEC §16)"));
}

/* Judge0's limits under the runner's maxima (SPEC §10): a default above
 * one is lowered to it, and so is the most a submission may ask. */
void j0_limits_init(struct j0 *j)
{
	const struct ward_limits *m = &j->s->o.max;
	double cpu = m->cpu_s > 0 ? m->cpu_s : m->timeout_s;
	long mem = m->memory_mb * 1024 < (uint64_t)J0_MEMORY_MAX ? (long)(m->memory_mb * 1024) : J0_MEMORY_MAX;
	j->lim = (struct j0_limits){
		.cpu = fmin(J0_CPU_DEFAULT, cpu),
		.cpu_max = fmin(J0_CPU_MAX, cpu),
		.cpu_total = cpu,
		.wall = fmin(J0_WALL_DEFAULT, m->timeout_s),
		.wall_max = fmin(J0_WALL_MAX, m->timeout_s),
		.memory = mem < J0_MEMORY_DEFAULT ? mem : J0_MEMORY_DEFAULT,
		.memory_max = mem,
	};
	j->lim.extra = fmax(0, fmin(J0_EXTRA_DEFAULT, cpu - j->lim.cpu));
	j->lim.extra_max = fmin(J0_EXTRA_MAX, cpu);
}

/* /config_info's limits: Judge0's names, this runner's values. */
static void config_limits(json_t *o, const struct j0_limits *l)
{
	json_object_set_new(o, "cpu_time_limit", json_real(l->cpu));
	json_object_set_new(o, "max_cpu_time_limit", json_real(l->cpu_max));
	json_object_set_new(o, "cpu_extra_time", json_real(l->extra));
	json_object_set_new(o, "max_cpu_extra_time", json_real(l->extra_max));
	json_object_set_new(o, "wall_time_limit", json_real(l->wall));
	json_object_set_new(o, "max_wall_time_limit", json_real(l->wall_max));
	json_object_set_new(o, "memory_limit", json_integer(l->memory));
	json_object_set_new(o, "max_memory_limit", json_integer(l->memory_max));
}

void j0_config(struct server *s, struct req *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "maintenance_mode", json_false());
	json_object_set_new(o, "enable_wait_result", json_true());
	json_object_set_new(o, "enable_compiler_options", json_true());
	json_object_set_new(o, "allowed_languages_for_compile_options", json_array());
	json_object_set_new(o, "enable_command_line_arguments", json_true());
	json_object_set_new(o, "enable_submission_delete", json_false());
	json_object_set_new(o, "enable_callbacks", json_boolean(J(r)->cb != NULL));
	json_object_set_new(o, "callbacks_max_tries", json_integer(3));
	json_object_set_new(o, "callbacks_timeout", json_real(5.0));
	json_object_set_new(o, "enable_additional_files", json_boolean(J(r)->files.prog != NULL));
	json_object_set_new(o, "max_queue_size", json_integer(s->o.judge0_max_queue));
	config_limits(o, &J(r)->lim);
	json_object_set_new(o, "stack_limit", json_integer(64000));
	json_object_set_new(o, "max_stack_limit", json_integer(128000));
	json_object_set_new(o, "max_processes_and_or_threads", json_integer(60));
	json_object_set_new(o, "max_max_processes_and_or_threads", json_integer(120));
	json_object_set_new(o, "enable_per_process_and_thread_time_limit", json_false());
	json_object_set_new(o, "allow_enable_per_process_and_thread_time_limit", json_false());
	json_object_set_new(o, "enable_per_process_and_thread_memory_limit", json_false());
	json_object_set_new(o, "allow_enable_per_process_and_thread_memory_limit", json_false());
	json_object_set_new(o, "max_file_size", json_integer(1024));
	json_object_set_new(o, "max_max_file_size", json_integer(4096));
	json_object_set_new(o, "number_of_runs", json_integer(1));
	json_object_set_new(o, "max_number_of_runs", json_integer(s->o.judge0_max_runs));
	json_object_set_new(o, "redirect_stderr_to_stdout", json_false());
	json_object_set_new(o, "max_extract_size", json_integer(J0_MAX_EXTRACT_KB));
	json_object_set_new(o, "enable_batched_submissions", json_true());
	json_object_set_new(o, "max_submission_batch_size", json_integer(J0_MAX_BATCH));
	json_object_set_new(o, "submission_cache_duration", json_real(1.0));
	json_object_set_new(o, "use_docs_as_homepage", json_false());
	json_object_set_new(o, "allow_enable_network", json_false());
	json_object_set_new(o, "enable_network", json_false());
	dialect_answer(r, 200, o);
}

void j0_workers(struct server *s, struct req *r)
{
	struct j0 *j = J(r);
	pthread_mutex_lock(&j->lock);
	unsigned q = j->queued, run = j->running, n = (unsigned)j->runners.n;
	pthread_mutex_unlock(&j->lock);
	dialect_answer(r, 200,
	               json_pack("[{s:s,s:i,s:i,s:i,s:i,s:i,s:i}]", "queue", "judge0", "size", q, "available", n,
	                         "idle", n - run, "working", run, "paused", 0, "failed", 0));
}
