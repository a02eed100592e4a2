/* cli_args.c — `ward run` argument parsing (SPEC §2) into a struct
 * ward_request.  Pure: opens no file and runs nothing (see cli_args.h);
 * what a value may be is request.c's table. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errf.h"
#include "core/request.h"
#include "front/cli_args.h"

int parse_seconds(const char *s, double *out)
{
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return -1;
	/* no hex floats or "inf"/"nan" spellings */
	for (const char *c = s; *c; c++)
		if (!((*c >= '0' && *c <= '9') || *c == '.'))
			return -1;
	*out = v;
	return 0;
}

int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -1;
	for (const char *c = s; *c; c++)
		if (*c < '0' || *c > '9')
			return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

void cli_print_run_help(FILE *f)
{
	fprintf(f, "usage: ward run [OPTIONS] -- PROGRAM [ARG...]\n"
	           "       ward run [OPTIONS] --shell 'STRING'\n\noptions:\n");
	for (int i = 0; i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		char dflt[32];
		if (i == LIM_CPU)
			snprintf(dflt, sizeof(dflt), "= timeout");
		else
			snprintf(dflt, sizeof(dflt), "%.15g", d->dflt);
		fprintf(f, "  %-16s %-6s %s (default %s)\n", d->option, d->unit[0] ? d->unit : "N", d->help, dflt);
	}
	fprintf(f, "  --workdir DIR           host directory mounted read-write at /work (default: an empty tmpfs)\n"
	           "  --bind HOST[:PATH]      extra read-write mount (repeatable)\n"
	           "  --ro-bind HOST[:PATH]   extra read-only mount (repeatable)\n"
	           "  --rootfs DIR            use DIR (read-only) as the root filesystem\n"
	           "  --image NAME[:TAG]      an image of the store as the root (ward image import); without a\n"
	           "                          command, its Entrypoint and Cmd run\n"
	           "  --image-store DIR       the image store (default $WARD_IMAGE_STORE, /var/lib/ward/images)\n"
	           "  --env K=V               environment variable (repeatable); nothing else enters\n"
	           "  --net none|loopback|allow   network (default none); allow: loopback, and ward's HTTP proxy\n"
	           "                          (HTTP_PROXY...) to the --allow-host names only\n"
	           "  --allow-host H          with --net allow: a name (pypi.org), '*.' suffix or address the proxy\n"
	           "                          lets through, with an optional :PORT (else 80 and 443; repeatable)\n"
	           "  --egress-resolve N:A    the proxy reaches name N at address A, whatever A is (repeatable)\n"
	           "  --stdin FILE|-          standard input (default /dev/null)\n"
	           "  --json                  capture both streams and print one result object\n"
	           "  --collect GLOB          after the run, copy /work's files GLOB matches (repeatable; a\n"
	           "                          directory or 'DIR/' takes all below it, '**' any depth)\n"
	           "  --collect-dir DIR       where --collect's files go (created; default ./" CLI_COLLECT_DIR "); an\n"
	           "                          existing file is never replaced, a symlink in DIR never followed\n"
	           "  --isolation system|application   (default system; application needs WARD_ALLOW_APPLICATION=1)\n"
	           "  --remote URL            run on a ward serve runner (default $WARD_RUNNER_URL)\n"
	           "  --token-file FILE       bearer token for --remote (default $WARD_RUNNER_TOKEN)\n"
	           "  --print-plan            print the sandbox's mount plan and exit\n"
	           "exit status: the program's; 128+N for signal N; 124 timeout; 137 memory; 125 ward failed\n");
}

static int add_mount(struct cli_run *c, size_t *n, const char *arg, bool ro, char *err, size_t errlen)
{
	if (*n >= CLI_MAX_LIST)
		return base_errf(err, errlen, "too many --bind/--ro-bind options: at most %d", CLI_MAX_LIST);
	char *copy = strdup(arg);
	if (!copy)
		return base_errf(err, errlen, "out of memory");
	c->mount_store[*n] = copy;
	char *colon = strchr(copy, ':');
	if (colon) {
		*colon = 0;
		if (!colon[1])
			return base_errf(err, errlen, "--%s '%s': the sandbox path after ':' is empty",
			                 ro ? "ro-bind" : "bind", arg);
	}
	if (!copy[0])
		return base_errf(err, errlen, "--%s '%s': the host path is empty", ro ? "ro-bind" : "bind", arg);
	c->mounts[*n].host_path = copy;
	c->mounts[*n].sandbox_path = colon ? colon + 1 : copy;
	c->mounts[*n].read_only = ro;
	(*n)++;
	return 0;
}

/* "--opt=value" or "--opt": the option's name into name (namelen bytes)
 * and *val the value after '=', or NULL.  0, or -1 when the name cannot be
 * an option's. */
static int split_option(const char *a, char *name, size_t namelen, const char **val, char *err, size_t errlen)
{
	const char *eq = strchr(a, '=');
	size_t nl = eq ? (size_t)(eq - a) : strlen(a);
	if (nl >= namelen)
		return base_errf(err, errlen, "unknown option '%s' (see ward run --help)", a);
	memcpy(name, a, nl);
	name[nl] = 0;
	*val = eq ? eq + 1 : NULL;
	return 0;
}

/* --json, --print-plan, --help: 1 when name is one of them, 0 when it is
 * not, -1 on error (err "help" for --help). */
static int parse_flag(struct cli_run *c, const char *name, const char *val, char *err, size_t errlen)
{
	static const char *const flags[] = {"--json", "--print-plan", "--help"};
	bool is_flag = false;
	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
		is_flag |= strcmp(name, flags[k]) == 0;
	if (!is_flag)
		return 0;
	if (val)
		return base_errf(err, errlen, "option %s takes no value", name);
	if (!strcmp(name, "--json"))
		c->json = true;
	else if (!strcmp(name, "--print-plan"))
		c->print_plan = true;
	else
		return base_errf(err, errlen, "help");
	return 1;
}

/* A limit's option (ward_limit_table: --timeout, --memory, ...): 1 when
 * name is one and val is in its range, 0 when name is not one, -1 on
 * error. */
static int parse_limit(struct ward_request *r, unsigned *given, const char *name, const char *val, char *err,
                       size_t errlen)
{
	int lim = -1;
	for (int k = 0; k < LIM__COUNT; k++)
		if (!strcmp(name, ward_limit_table[k].option))
			lim = k;
	if (lim < 0)
		return 0;
	double d;
	uint64_t u;
	bool secs = lim == LIM_TIMEOUT || lim == LIM_CPU;
	if (secs ? parse_seconds(val, &d) < 0 : parse_u64(val, &u) < 0)
		return base_errf(err, errlen, "%s '%s' is not a %s", name, val,
		                 secs ? "number of seconds" : "whole number");
	if (!secs)
		d = (double)u;
	const struct limit_desc *ld = &ward_limit_table[lim];
	if (d < ld->min || d > ld->max)
		return base_errf(err, errlen, "%s %s is out of range: use a value from %g to %g", name, val, ld->min,
		                 ld->max);
	switch (lim) {
	case LIM_TIMEOUT:
		r->limits.timeout_s = d;
		break;
	case LIM_CPU:
		r->limits.cpu_s = d;
		break;
	case LIM_MEMORY:
		r->limits.memory_mb = u;
		break;
	case LIM_PIDS:
		r->limits.pids = (uint32_t)u;
		break;
	case LIM_OUTPUT:
		r->limits.output_limit = u;
		break;
	case LIM_FSIZE:
		r->limits.fsize_mb = u;
		break;
	case LIM_TMP:
		r->limits.tmp_size_mb = u;
		break;
	case LIM_NOFILE:
		r->limits.nofile = (uint32_t)u;
		break;
	case LIM_EGRESS:
		r->limits.egress_bytes = u;
		break;
	default:
		ward_limit_set(&r->limits, lim, d);
		break;
	}
	*given |= 1u << lim;
	return 1;
}

/* An option that takes a value, the value given.  0, or -1 on error. */
static int parse_option(struct cli_run *c, size_t *nmounts, const char *name, const char *val, char *err, size_t errlen)
{
	struct ward_request *r = &c->req;
	int lim = parse_limit(r, &c->limits_given, name, val, err, errlen);
	if (lim != 0)
		return lim < 0 ? -1 : 0;
	if (!strcmp(name, "--workdir")) {
		r->workdir = val;
	} else if (!strcmp(name, "--rootfs")) {
		r->rootfs = val;
	} else if (!strcmp(name, "--image")) {
		if (!val[0])
			return base_errf(err, errlen,
			                 "--image is empty: give NAME[:TAG] of an imported image (ward image ls)");
		c->image = val;
		r->image_name = val;
	} else if (!strcmp(name, "--image-store")) {
		c->image_store = val;
	} else if (!strcmp(name, "--bind") || !strcmp(name, "--ro-bind")) {
		if (add_mount(c, nmounts, val, name[2] == 'r', err, errlen) < 0)
			return -1;
	} else if (!strcmp(name, "--env")) {
		if (c->nenv >= CLI_MAX_LIST)
			return base_errf(err, errlen, "too many --env options: at most %d", CLI_MAX_LIST);
		if (!strchr(val, '=') || val[0] == '=')
			return base_errf(err, errlen, "--env '%s' is not K=V", val);
		c->env[c->nenv++] = (char *)val;
	} else if (!strcmp(name, "--net")) {
		if (ward_net_parse(val, &r->net) < 0)
			return base_errf(err, errlen, "--net '%s' is not none, loopback or allow", val);
	} else if (!strcmp(name, "--allow-host") || !strcmp(name, "--egress-resolve")) {
		bool allow = name[2] == 'a';
		size_t *n = allow ? &c->nallow : &c->nresolve;
		if (*n >= CLI_MAX_LIST)
			return base_errf(err, errlen, "too many %s options: at most %d", name, CLI_MAX_LIST);
		(allow ? c->allow : c->resolve)[(*n)++] = val;
	} else if (!strcmp(name, "--isolation")) {
		if (!strcmp(val, "off"))
			return base_errf(err, errlen, "--isolation off never runs code: use system or application");
		if (ward_isolation_parse(val, &r->isolation) < 0)
			return base_errf(err, errlen, "--isolation '%s' is not system or application", val);
	} else if (!strcmp(name, "--stdin")) {
		c->stdin_path = val;
	} else if (!strcmp(name, "--shell")) {
		r->shell = val;
	} else if (!strcmp(name, "--collect")) {
		if (c->ncollect >= CLI_MAX_LIST)
			return base_errf(err, errlen, "too many --collect options: at most %d", CLI_MAX_LIST);
		c->collect[c->ncollect++] = (char *)val;
	} else if (!strcmp(name, "--collect-dir")) {
		if (!val[0])
			return base_errf(err, errlen, "--collect-dir is empty: give a directory");
		c->collect_dir = val;
	} else if (!strcmp(name, "--remote")) {
		c->remote = val;
	} else if (!strcmp(name, "--token-file")) {
		c->token_file = val;
	} else {
		return base_errf(err, errlen, "unknown option '%s' (see ward run --help)", name);
	}
	return 0;
}

int cli_parse_run(int argc, char **argv, struct cli_run *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	ward_request_init(&c->req);
	struct ward_request *r = &c->req;
	size_t nmounts = 0;
	c->remote = getenv("WARD_RUNNER_URL");
	if (c->remote && !*c->remote)
		c->remote = NULL;
	int i;
	for (i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strncmp(a, "--", 2) != 0)
			return base_errf(err, errlen,
			                 "unexpected argument '%s': put the command after --, or use --shell", a);
		/* --opt=value or --opt value */
		char name[64];
		const char *val = NULL;
		if (split_option(a, name, sizeof(name), &val, err, errlen) < 0)
			return -1;
		int flag = parse_flag(c, name, val, err, errlen);
		if (flag < 0)
			return -1;
		if (flag)
			continue;
		if (!val) {
			if (i + 1 >= argc)
				return base_errf(err, errlen, "option %s needs a value", name);
			val = argv[++i];
		}
		if (parse_option(c, &nmounts, name, val, err, errlen) < 0)
			return -1;
	}
	if (i < argc) {
		if (r->shell)
			return base_errf(err, errlen, "give either --shell 'STRING' or -- PROGRAM [ARG...], not both");
		r->argv = argv + i;
	} else if (!r->shell && !c->image) {
		return base_errf(err, errlen, "no command: give PROGRAM [ARG...] after --, or --shell 'STRING'");
	}
	if (c->image && r->rootfs)
		return base_errf(err, errlen, "give --image or --rootfs, not both");
	if (c->nenv)
		r->env = c->env;
	if (c->collect_dir && !c->ncollect)
		return base_errf(err, errlen,
		                 "--collect-dir without --collect: give the files to collect with --collect GLOB");
	if (c->ncollect) {
		r->collect = c->collect;
		if (!c->collect_dir)
			c->collect_dir = CLI_COLLECT_DIR;
	}
	r->mounts = c->mounts;
	r->nmounts = nmounts;
	r->capture = c->json;
	r->egress_allow = c->allow;
	r->negress_allow = c->nallow;
	r->egress_resolve = c->resolve;
	r->negress_resolve = c->nresolve;
	if (c->nallow && r->net != WARD_NET_ALLOW)
		return base_errf(err, errlen, "--allow-host needs --net allow");
	if (c->nresolve && c->remote)
		return base_errf(err, errlen,
		                 "--egress-resolve pins names for a run on this machine; a runner uses its "
		                 "operator's pins (ward serve --egress-resolve): drop it, or run here (no --remote, "
		                 "no $WARD_RUNNER_URL)");
	return 0;
}

void cli_run_free(struct cli_run *c)
{
	for (size_t i = 0; i < CLI_MAX_LIST; i++)
		free(c->mount_store[i]);
	memset(c->mount_store, 0, sizeof(c->mount_store));
}
