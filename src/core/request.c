/* request.c — defaults and validation: the one place that decides what a
 * request may ask for.  Every front end fills a struct ward_request and
 * ward_run() checks it here before anything else happens.  Sees only the
 * C structs: never parses a wire format, never runs anything. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errf.h"
#include "core/egress.h"
#include "core/pathguard.h"
#include "core/request.h"
#include "ward.h"

/* The last two columns are ward serve's maxima (SPEC §10): what a client of
 * a shared runner may ask for at most, unless its operator says otherwise. */
const struct limit_desc ward_limit_table[LIM__COUNT] = {
	[LIM_TIMEOUT] = {"--timeout", "s", 30, 0.001, 86400, "wall-clock limit; the whole process tree is killed at it",
                         "timeout_s", "--max-timeout", 300},
	[LIM_CPU] = {"--cpu", "s", 0, 0.001, 86400, "CPU-time limit of the whole tree (default: = timeout)",
                     "cpu_seconds", "--max-cpu", 0},
	[LIM_MEMORY] = {"--memory", "MB", 512, 4, 1 << 20, "memory limit of the whole tree (RAM, no swap)", "memory_mb",
                        "--max-memory", 4096},
	[LIM_PIDS] = {"--pids", "", 64, 1, 1 << 20, "processes and threads at once, whole tree", "pids", "--max-pids",
                      1024},
	[LIM_OUTPUT] = {"--output-limit", "bytes", 1048576, 0, 1ull << 32, "bytes kept per stream; head and tail kept",
                        "max_output_chars", "--max-output", 16 << 20},
	[LIM_FSIZE] = {"--fsize", "MB", 64, 0, 1 << 20, "largest file the sandbox may write", "fsize_mb", "--max-fsize",
                       1024},
	[LIM_TMP] = {"--tmp-size", "MB", 64, 1, 1 << 20, "size of the tmpfs at /tmp (and of an ephemeral /work)",
                     "tmp_size_mb", "--max-tmp-size", 1024},
	[LIM_NOFILE] = {"--nofile", "", 256, 16, 1 << 20, "open files per process", "nofile", "--max-nofile", 4096},
	[LIM_COLLECT_FILES] = {"--collect-max-files", "", 64, 0, 100000, "most files --collect brings back",
                               "collect_max_files", "--max-collect-files", 512},
	[LIM_COLLECT_BYTES] = {"--collect-max-bytes", "bytes", 8 << 20, 0, 1ull << 30,
                               "most bytes --collect brings back, all files together", "collect_max_bytes",
                               "--max-collect-bytes", 32 << 20},
	[LIM_EGRESS] = {"--egress-bytes", "bytes", 256 << 20, 1, 1ull << 40,
                        "bytes through the egress proxy, both ways, for the whole run or session (--net allow)",
                        "egress_bytes", "--max-egress-bytes", 4ull << 30},
};

double ward_limit_get(const struct ward_limits *l, int which)
{
	switch (which) {
	case LIM_TIMEOUT:
		return l->timeout_s;
	case LIM_CPU:
		return l->cpu_s;
	case LIM_MEMORY:
		return (double)l->memory_mb;
	case LIM_PIDS:
		return l->pids;
	case LIM_OUTPUT:
		return (double)l->output_limit;
	case LIM_FSIZE:
		return (double)l->fsize_mb;
	case LIM_TMP:
		return (double)l->tmp_size_mb;
	case LIM_NOFILE:
		return l->nofile;
	case LIM_COLLECT_FILES:
		return l->collect_max_files;
	case LIM_COLLECT_BYTES:
		return (double)l->collect_max_bytes;
	case LIM_EGRESS:
		return (double)l->egress_bytes;
	}
	return 0;
}

void ward_limit_set(struct ward_limits *l, int which, double v)
{
	switch (which) {
	case LIM_TIMEOUT:
		l->timeout_s = v;
		break;
	case LIM_CPU:
		l->cpu_s = v;
		break;
	case LIM_MEMORY:
		l->memory_mb = (uint64_t)v;
		break;
	case LIM_PIDS:
		l->pids = (uint32_t)v;
		break;
	case LIM_OUTPUT:
		l->output_limit = (uint64_t)v;
		break;
	case LIM_FSIZE:
		l->fsize_mb = (uint64_t)v;
		break;
	case LIM_TMP:
		l->tmp_size_mb = (uint64_t)v;
		break;
	case LIM_NOFILE:
		l->nofile = (uint32_t)v;
		break;
	case LIM_COLLECT_FILES:
		l->collect_max_files = (uint32_t)v;
		break;
	case LIM_COLLECT_BYTES:
		l->collect_max_bytes = (uint64_t)v;
		break;
	case LIM_EGRESS:
		l->egress_bytes = (uint64_t)v;
		break;
	}
}

void ward_request_init(struct ward_request *req)
{
	memset(req, 0, sizeof(*req));
	req->stdin_fd = -1;
	req->stream_fd[0] = 1;
	req->stream_fd[1] = 2;
	req->net = WARD_NET_NONE;
	req->isolation = WARD_ISO_SYSTEM;
	req->report_limit = 4u << 20;
	struct ward_limits *l = &req->limits;
	l->timeout_s = ward_limit_table[LIM_TIMEOUT].dflt;
	l->cpu_s = ward_limit_table[LIM_CPU].dflt;
	l->memory_mb = (uint64_t)ward_limit_table[LIM_MEMORY].dflt;
	l->pids = (uint32_t)ward_limit_table[LIM_PIDS].dflt;
	l->output_limit = (uint64_t)ward_limit_table[LIM_OUTPUT].dflt;
	l->fsize_mb = (uint64_t)ward_limit_table[LIM_FSIZE].dflt;
	l->tmp_size_mb = (uint64_t)ward_limit_table[LIM_TMP].dflt;
	l->nofile = (uint32_t)ward_limit_table[LIM_NOFILE].dflt;
	l->collect_max_files = (uint32_t)ward_limit_table[LIM_COLLECT_FILES].dflt;
	l->collect_max_bytes = (uint64_t)ward_limit_table[LIM_COLLECT_BYTES].dflt;
	l->egress_bytes = (uint64_t)ward_limit_table[LIM_EGRESS].dflt;
}

static int check_limit(int which, double v, char *err, size_t errlen)
{
	const struct limit_desc *d = &ward_limit_table[which];
	if (!(v >= d->min && v <= d->max)) /* also catches NaN */
		return base_errf(err, errlen, "%s %g is out of range: use a value from %g to %g%s%s", d->option, v,
		                 d->min, d->max, d->unit[0] ? " " : "", d->unit);
	return 0;
}

void ward_maxima_init(struct ward_limits *max)
{
	for (int i = 0; i < LIM__COUNT; i++)
		ward_limit_set(max, i, ward_limit_table[i].max_dflt);
	max->cpu_s = max->timeout_s;
}

/* A limit as its unit writes it: "300 s", "4096 MB", "1024". */
static void limit_str(char *buf, size_t n, int which, double v)
{
	const char *unit = ward_limit_table[which].unit;
	snprintf(buf, n, "%.15g%s%s", v, unit[0] ? " " : "", unit);
}

void ward_defaults_under(const struct ward_limits *max, struct ward_limits *out)
{
	struct ward_request dflt;
	ward_request_init(&dflt);
	*out = dflt.limits;
	for (int i = 0; i < LIM__COUNT; i++)
		if (ward_limit_get(out, i) > ward_limit_get(max, i))
			ward_limit_set(out, i, ward_limit_get(max, i));
	/* a CPU limit of 0 is the timeout: it must fit --max-cpu as that */
	if (out->cpu_s == 0 && out->timeout_s > max->cpu_s)
		out->cpu_s = max->cpu_s;
}

int ward_limits_within(const struct ward_limits *l, const struct ward_limits *max, char *err, size_t errlen)
{
	for (int i = 0; i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		double v = ward_limit_get(l, i), m = ward_limit_get(max, i);
		bool as_timeout = i == LIM_CPU && v == 0;
		if (as_timeout)
			v = l->timeout_s;
		if (!(v > m))
			continue;
		char vs[48], ms[48];
		limit_str(vs, sizeof(vs), i, v);
		limit_str(ms, sizeof(ms), i, m);
		if (as_timeout)
			return base_errf(err, errlen,
			                 "limits.%s: not given, so the CPU limit is timeout_s, %s, which is above "
			                 "this runner's maximum %s (%s): give cpu_seconds of at most %.15g",
			                 d->field, vs, ms, d->max_option, m);
		return base_errf(err, errlen, "limits.%s: %s is above this runner's maximum %s (%s)", d->field, vs, ms,
		                 d->max_option);
	}
	return 0;
}

/* An absolute, normalised path inside the sandbox: no "." or ".." parts,
 * no empty parts, not "/" itself, and not one of the places ward owns. */
static int check_sandbox_path(const char *p, char *err, size_t errlen)
{
	if (!p || p[0] != '/')
		return base_errf(err, errlen, "sandbox path '%s' must be absolute", p ? p : "");
	size_t n = strlen(p);
	if (n >= PATH_MAX || n < 2)
		return base_errf(err, errlen, "sandbox path '%s' is not usable: give a directory below /", p);
	if (pathguard_check(p + 1, n - 1, err, errlen) < 0)
		return -1;
	/* ward builds these itself; binding over them would undo its layout */
	static const char *const owned[] = {"/proc", "/dev", "/etc"};
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		size_t k = strlen(owned[i]);
		if (strncmp(p, owned[i], k) == 0 && (p[k] == 0 || p[k] == '/'))
			return base_errf(err, errlen,
			                 "sandbox path '%s' lies in %s, which ward builds itself: choose another path",
			                 p, owned[i]);
	}
	if (strcmp(p, "/tmp") == 0 || strcmp(p, "/work") == 0)
		return base_errf(err, errlen,
		                 "sandbox path '%s' is ward's own mount: use --workdir for /work, or a path below it",
		                 p);
	return 0;
}

static int check_host_dir(const char *what, const char *p, bool want_dir, char *err, size_t errlen)
{
	struct stat st;
	if (!p || p[0] != '/')
		return base_errf(err, errlen, "%s '%s' must be an absolute host path", what, p ? p : "");
	if (stat(p, &st) < 0)
		return base_errf(err, errlen, "%s '%s': %s; create it or fix the path", what, p, strerror(errno));
	if (want_dir && !S_ISDIR(st.st_mode))
		return base_errf(err, errlen, "%s '%s' is not a directory", what, p);
	return 0;
}

/* Files out (SPEC §12): a few globs, each relative to /work as a file
 * path is (the path guard's rules, a trailing '/' allowed), at the system
 * level, where PID 1 reads them inside the sandbox's view; the application
 * level has no such view of its own. */
static int check_collect(const struct ward_request *r, char *err, size_t errlen)
{
	size_t n = 0;
	for (; r->collect && r->collect[n]; n++) {
		const char *g = r->collect[n];
		size_t len = strlen(g);
		while (len > 1 && g[len - 1] == '/')
			len--;
		char perr[256];
		if (len > WARD_MAX_COLLECT_GLOB_LEN)
			return base_errf(err, errlen, "collect glob %zu is longer than %d bytes: give a shorter one", n,
			                 WARD_MAX_COLLECT_GLOB_LEN);
		if (strchr(g, '\n'))
			return base_errf(err, errlen, "collect glob %zu has a newline: give globs of one line", n);
		if (pathguard_check(g, len, perr, sizeof(perr)) < 0)
			return base_errf(err, errlen,
			                 "collect glob '%s' refused: %s; give a glob relative to /work, "
			                 "e.g. \"out/\" or \"**/*.png\"",
			                 g, perr);
	}
	if (!n)
		return 0;
	if (n > WARD_MAX_COLLECT_GLOBS)
		return base_errf(err, errlen,
		                 "collect: %zu globs, at most %d: give fewer (a directory takes all below it)", n,
		                 WARD_MAX_COLLECT_GLOBS);
	if (r->isolation != WARD_ISO_SYSTEM)
		return base_errf(err, errlen,
		                 "collect needs isolation 'system' (files are read inside the sandbox's "
		                 "own view of /work, which 'application' has not): use isolation system, or "
		                 "read the files from --workdir yourself");
	if (r->report_channel)
		return base_errf(err, errlen,
		                 "collect is not available with a report channel (test jobs): run the files' "
		                 "producer with /exec instead");
	return 0;
}

/* Egress: patterns and pins only with --net allow, and then at least one
 * pattern, each well-formed (SPEC §13). */
static int check_egress(const struct ward_request *r, char *err, size_t errlen)
{
	if (r->net != WARD_NET_ALLOW) {
		if (r->negress_allow)
			return base_errf(err, errlen, "allowed hosts need the network mode allow (--net allow)");
		return 0;
	}
	if (r->isolation != WARD_ISO_SYSTEM)
		return base_errf(err, errlen,
		                 "network allow needs isolation system: the proxy serves a sandbox's own "
		                 "network namespace");
	if (r->negress_allow == 0 || !r->egress_allow)
		return base_errf(err, errlen,
		                 "--net allow without a host: give --allow-host NAME (network.allow in a request)");
	if (r->negress_allow > EGRESS_MAX_PATTERNS || r->negress_resolve > EGRESS_MAX_PATTERNS)
		return base_errf(err, errlen, "too many egress patterns or pins: at most %d each", EGRESS_MAX_PATTERNS);
	struct egress_pattern p;
	for (size_t i = 0; i < r->negress_allow; i++)
		if (!r->egress_allow[i] || egress_pattern_parse(r->egress_allow[i], &p, err, errlen) < 0)
			return -1;
	struct egress_pin pin;
	for (size_t i = 0; i < r->negress_resolve; i++)
		if (!r->egress_resolve || !r->egress_resolve[i] ||
		    egress_pin_parse(r->egress_resolve[i], &pin, err, errlen) < 0)
			return -1;
	return 0;
}

/* "/home/" and one plain name: a symlink there shadows nothing of the
 * sandbox's own (its root tmpfs has no /home but this). */
static bool work_link_ok(const char *p)
{
	if (strncmp(p, "/home/", 6) != 0)
		return false;
	size_t n = strlen(p + 6);
	return n >= 1 && n <= 32 && strspn(p + 6, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* Each limit within its range of the limits' table. */
static int check_limits(const struct ward_limits *l, char *err, size_t errlen)
{
	if (check_limit(LIM_TIMEOUT, l->timeout_s, err, errlen) < 0)
		return -1;
	if (l->cpu_s != 0 && check_limit(LIM_CPU, l->cpu_s, err, errlen) < 0)
		return -1;
	if (check_limit(LIM_MEMORY, (double)l->memory_mb, err, errlen) < 0 ||
	    check_limit(LIM_PIDS, l->pids, err, errlen) < 0 ||
	    check_limit(LIM_OUTPUT, (double)l->output_limit, err, errlen) < 0 ||
	    check_limit(LIM_FSIZE, (double)l->fsize_mb, err, errlen) < 0 ||
	    check_limit(LIM_TMP, (double)l->tmp_size_mb, err, errlen) < 0 ||
	    check_limit(LIM_NOFILE, l->nofile, err, errlen) < 0 ||
	    check_limit(LIM_COLLECT_FILES, l->collect_max_files, err, errlen) < 0 ||
	    check_limit(LIM_COLLECT_BYTES, (double)l->collect_max_bytes, err, errlen) < 0 ||
	    check_limit(LIM_EGRESS, (double)l->egress_bytes, err, errlen) < 0)
		return -1;
	return 0;
}

/* Every entry K=V, K a valid name. */
static int check_env(char *const *env, char *err, size_t errlen)
{
	for (char *const *e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq == *e)
			return base_errf(err, errlen, "environment entry '%s' is not K=V", *e);
		for (const char *c = *e; c < eq; c++)
			if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
			      (c > *e && *c >= '0' && *c <= '9')))
				return base_errf(err, errlen, "environment name in '%s' is not a valid name", *e);
	}
	return 0;
}

/* The caller's binds: at most 64, each a host directory bound to a
 * sandbox path ward allows. */
static int check_mounts(const struct ward_request *r, char *err, size_t errlen)
{
	if (r->nmounts > 64)
		return base_errf(err, errlen, "too many mounts (%zu): at most 64", r->nmounts);
	for (size_t i = 0; i < r->nmounts; i++) {
		const struct ward_mount *m = &r->mounts[i];
		if (check_host_dir("bind source", m->host_path, false, err, errlen) < 0)
			return -1;
		const char *dst = m->sandbox_path ? m->sandbox_path : m->host_path;
		if (check_sandbox_path(dst, err, errlen) < 0)
			return -1;
	}

	return 0;
}

/* The files written into /work: each path guarded, a permission mode, all
 * within WARD_MAX_FILES and WARD_MAX_FILES_BYTES. */
static int check_files(const struct ward_request *r, char *err, size_t errlen)
{
	if (r->nfiles > WARD_MAX_FILES)
		return base_errf(err, errlen, "too many files (%zu): at most %d", r->nfiles, WARD_MAX_FILES);
	size_t total = 0;
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct ward_file *f = &r->files[i];
		if (!f->path)
			return base_errf(err, errlen, "file %zu has no path", i);
		char perr[256];
		if (pathguard_check(f->path, strlen(f->path), perr, sizeof(perr)) < 0)
			return base_errf(err, errlen, "file '%s' refused: %s", f->path, perr);
		if (f->mode & ~07777u)
			return base_errf(err, errlen, "file '%s': mode %o is not a permission mode", f->path, f->mode);
		total += f->len;
		if (total > WARD_MAX_FILES_BYTES)
			return base_errf(err, errlen, "files are larger than %u bytes in all", WARD_MAX_FILES_BYTES);
	}
	return 0;
}

int ward_request_validate(const struct ward_request *r, char *err, size_t errlen)
{
	if (r->argv && r->argv[0]) {
		if (r->argv[0][0] == 0)
			return base_errf(err, errlen, "the program name is empty: give a program to run");
	} else if (r->shell) {
		/* an empty shell string is allowed: sh -c '' exits 0 */
	} else
		return base_errf(err, errlen, "no command: give PROGRAM [ARG...] after --, or --shell 'STRING'");

	if (r->isolation != WARD_ISO_SYSTEM && r->isolation != WARD_ISO_APPLICATION)
		return base_errf(err, errlen, "unknown isolation level: use system or application");
	if (r->isolation == WARD_ISO_APPLICATION) {
		/* the operator's opt-in, never the request's */
		const char *allow = getenv("WARD_ALLOW_APPLICATION");
		if (!allow || strcmp(allow, "1") != 0)
			return base_errf(err, errlen,
			                 "isolation 'application' gives no kernel isolation and is off by default: "
			                 "set WARD_ALLOW_APPLICATION=1 in ward's environment to allow it");
	}
	if (r->net != WARD_NET_NONE && r->net != WARD_NET_LOOPBACK && r->net != WARD_NET_ALLOW)
		return base_errf(err, errlen, "unknown network mode: use none, loopback or allow");
	if (check_egress(r, err, errlen) < 0)
		return -1;
	if (r->work_link && !work_link_ok(r->work_link))
		return base_errf(err, errlen, "work_link '%s': give /home/NAME, NAME of a-z 0-9 _ - (at most 32)",
		                 r->work_link);

	if (check_limits(&r->limits, err, errlen) < 0)
		return -1;
	if (check_collect(r, err, errlen) < 0)
		return -1;

	if (check_env(r->env, err, errlen) < 0)
		return -1;

	if (r->workdir && check_host_dir("--workdir", r->workdir, true, err, errlen) < 0)
		return -1;
	if (r->rootfs && check_host_dir("--rootfs", r->rootfs, true, err, errlen) < 0)
		return -1;
	if (check_mounts(r, err, errlen) < 0 || check_files(r, err, errlen) < 0)
		return -1;
	if (r->stdin_set && r->stdin_len > WARD_MAX_STDIN_BYTES)
		return base_errf(err, errlen, "stdin is larger than %u bytes", WARD_MAX_STDIN_BYTES);
	if (r->report_channel && (r->report_limit == 0 || r->report_limit > (64u << 20)))
		return base_errf(err, errlen, "report limit must be from 1 byte to 64 MiB");
	return 0;
}

const char *ward_status_name(enum ward_status st)
{
	switch (st) {
	case WARD_ST_OK:
		return "ok";
	case WARD_ST_NONZERO:
		return "nonzero";
	case WARD_ST_SIGNAL:
		return "signal";
	case WARD_ST_TIMEOUT:
		return "timeout";
	case WARD_ST_MEMORY:
		return "memory";
	case WARD_ST_ERROR:
		return "error";
	}
	return "error";
}

const char *ward_isolation_name(enum ward_isolation iso)
{
	return iso == WARD_ISO_APPLICATION ? "application" : "system";
}

int ward_isolation_parse(const char *s, enum ward_isolation *out)
{
	if (strcmp(s, "system") == 0)
		*out = WARD_ISO_SYSTEM;
	else if (strcmp(s, "application") == 0)
		*out = WARD_ISO_APPLICATION;
	else
		return -1;
	return 0;
}

int ward_net_parse(const char *s, enum ward_net *out)
{
	if (strcmp(s, "none") == 0)
		*out = WARD_NET_NONE;
	else if (strcmp(s, "loopback") == 0)
		*out = WARD_NET_LOOPBACK;
	else if (strcmp(s, "allow") == 0)
		*out = WARD_NET_ALLOW;
	else
		return -1;
	return 0;
}
