/* build_cli.c — `ward image build` (SPEC §19): options into
 * ward_image_build (include/ward_image.h), its result out: on a terminal
 * one line per step with its time, with --json one result object at the
 * end.  A failed step shows its status and the end of its output.  In
 * ward-net (libarchive). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front/frontends.h"
#include "image/store.h"
#include "ward.h"
#include "ward_image.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ward image build [-f Dockerfile] -t NAME[:TAG] [OPTIONS] CONTEXT\n\n"
	           "  -f, --file FILE          the Dockerfile (default CONTEXT/Dockerfile; - reads stdin)\n"
	           "  -t, --tag NAME[:TAG]     the image's name in the store\n"
	           "  --build-arg K=V          an ARG's value (repeatable)\n"
	           "  --no-cache               run every step again\n"
	           "  --net none|allow         RUN steps have no network (none, the default), or reach only the\n"
	           "                           --egress-allow names through ward's proxy (HTTP_PROXY is set)\n"
	           "  --egress-allow HOSTS     names RUN may reach, comma-separated or repeated (pypi.org,\n"
	           "                           *.debian.org, host:port)\n"
	           "  --egress-resolve N:ADDR  pin a name to an address (repeatable)\n"
	           "  --memory N               a RUN's memory (K, M, G; default 2G), its writes counted too\n"
	           "  --timeout S              a RUN's wall clock in seconds (default 600)\n"
	           "  --max-layer-bytes N      a step's layer (default 1G)\n"
	           "  --max-image-bytes N      the whole image (default 8G)\n"
	           "  --max-image-inodes N     files in a layer, and copied by one COPY (default 1000000)\n"
	           "  --verbose                RUN's output as it comes (on stderr)\n"
	           "  --json                   one result object on stdout\n"
	           "  --image-store DIR        the store\n");
}

static int bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned sh = *end == 'K' || *end == 'k'   ? 10
	              : *end == 'M' || *end == 'm' ? 20
	              : *end == 'G' || *end == 'g' ? 30
	                                           : 0;
	if (sh)
		end++;
	if (errno || end == s || *end || s[0] == '-' || v == 0 || (sh && v > (~0ULL >> sh)))
		return -1;
	*out = v << sh;
	return 0;
}

struct args {
	const char *file, *tag, *context, *store;
	bool json, verbose;
	char *bargs[256];
	size_t nbargs;
	const char *allow[64], *resolve[64]; /* pieces of strdup'd lists, kept for the build */
	size_t nallow, nresolve;
	char *lists[64];
	size_t nlists;
	struct ward_build_opts o;
};

/* --egress-allow or --egress-resolve (opt): v's comma-separated names. */
static int add_hosts(struct args *a, const char *opt, const char *v)
{
	bool allow = !strcmp(opt, "--egress-allow");
	char *list = a->nlists < 64 ? strdup(v) : NULL, *save = NULL;
	if (!list) {
		fprintf(stderr, "ward image build: too many %s options\n", opt);
		return -1;
	}
	a->lists[a->nlists++] = list;
	for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
		if ((allow ? a->nallow : a->nresolve) == 64) {
			fprintf(stderr, "ward image build: more than 64 %s entries\n", opt);
			return -1;
		}
		if (allow)
			a->allow[a->nallow++] = h;
		else
			a->resolve[a->nresolve++] = h;
	}
	return 0;
}

static int parse(int argc, char **argv, struct args *a)
{
	for (int i = 2; i < argc; i++) {
		const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = strcmp(s, "--no-cache") && strcmp(s, "--json") && strcmp(s, "--verbose") && s[0] == '-';
		if (takes && !v) {
			fprintf(stderr, "ward image build: %s needs a value\n", s);
			return -1;
		}
		uint64_t n;
		if (!strcmp(s, "-f") || !strcmp(s, "--file"))
			a->file = v;
		else if (!strcmp(s, "-t") || !strcmp(s, "--tag"))
			a->tag = v;
		else if (!strcmp(s, "--image-store"))
			a->store = v;
		else if (!strcmp(s, "--build-arg") && strchr(v, '=') && a->nbargs < 256)
			a->bargs[a->nbargs++] = (char *)v;
		else if (!strcmp(s, "--no-cache"))
			a->o.no_cache = true;
		else if (!strcmp(s, "--json"))
			a->json = true;
		else if (!strcmp(s, "--verbose"))
			a->verbose = true;
		else if (!strcmp(s, "--net") && (!strcmp(v, "none") || !strcmp(v, "allow")))
			a->o.net_allow = !strcmp(v, "allow");
		else if (!strcmp(s, "--net")) {
			fprintf(stderr, "ward image build: --net %s: give none or allow (with --egress-allow)\n", v);
			return -1;
		} else if (!strcmp(s, "--egress-allow") || !strcmp(s, "--egress-resolve")) {
			if (add_hosts(a, s, v) < 0)
				return -1;
		} else if (!strcmp(s, "--timeout")) {
			char *end;
			a->o.timeout_s = strtod(v, &end);
			if (*end || !(a->o.timeout_s > 0)) {
				fprintf(stderr, "ward image build: --timeout '%s': give seconds\n", v);
				return -1;
			}
		} else if (!strcmp(s, "--memory") || !strcmp(s, "--max-layer-bytes") ||
		           !strcmp(s, "--max-image-bytes") || !strcmp(s, "--max-image-inodes")) {
			if (bytes(v, &n) < 0) {
				fprintf(stderr,
				        "ward image build: %s '%s': give a positive number (K, M, G suffixes)\n", s, v);
				return -1;
			}
			*(!strcmp(s, "--memory")            ? &a->o.memory_bytes
			  : !strcmp(s, "--max-layer-bytes") ? &a->o.max_layer_bytes
			  : !strcmp(s, "--max-image-bytes") ? &a->o.max_image_bytes
			                                    : &a->o.max_entries) = n;
		} else if (s[0] == '-' && s[1]) {
			fprintf(stderr, "ward image build: unknown option '%s'\n", s);
			return -1;
		} else if (!a->context) {
			a->context = s;
			continue;
		} else {
			fprintf(stderr, "ward image build: one CONTEXT only\n");
			return -1;
		}
		if (takes)
			i++;
	}
	if (!a->tag || !a->context) {
		fprintf(stderr, "ward image build: give -t NAME[:TAG] and CONTEXT\n");
		return -1;
	}
	return 0;
}

static char *read_dockerfile(const struct args *a, size_t *len, char *err, size_t errlen)
{
	char path[4200];
	if (a->file && !strcmp(a->file, "-"))
		snprintf(path, sizeof(path), "/dev/stdin");
	else if (a->file)
		snprintf(path, sizeof(path), "%s", a->file);
	else
		snprintf(path, sizeof(path), "%s/Dockerfile", a->context);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	if (fd < 0 || store_read_all(fd, (1u << 20) + 1, &buf, len) < 0) {
		snprintf(err, errlen, "cannot read the Dockerfile %.300s: %s (give -f FILE)", path,
		         errno == EFBIG ? "over 1 MiB" : strerror(errno));
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

static void print_json(const struct args *a, const struct ward_build_result *r, int rc, const char *err)
{
	json_t *o = rc == 0 ? json_pack("{s:s,s:s,s:i,s:i,s:i,s:I,s:f}", "image", a->tag, "digest", r->digest, "steps",
	                                (int)r->steps, "cached", (int)r->cached, "layers", (int)r->layers, "size",
	                                (json_int_t)r->size, "seconds", r->seconds)
	                    : json_pack("{s:s,s:s,s:i,s:i,s:b,s:b,s:s,s:i,s:f}", "image", a->tag, "error", err, "line",
	                                (int)r->failed_line, "status", r->status, "timed_out", r->timed_out, "oom",
	                                r->oom, "output", r->output, "steps", (int)r->steps, "seconds", r->seconds);
	char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
	puts(t ? t : "{}");
	free(t);
	json_decref(o);
}

int ward_image_build_main(int argc, char **argv)
{
	if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		usage(stdout);
		return 0;
	}
	struct args a = {0};
	ward_build_opts_init(&a.o);
	if (parse(argc, argv, &a) < 0) {
		usage(stderr);
		return WARD_EXIT_FAILED;
	}
	a.o.context = a.context;
	a.o.build_args = a.bargs;
	a.o.nbuild_args = a.nbargs;
	a.o.egress_allow = a.allow;
	a.o.negress_allow = a.nallow;
	a.o.egress_resolve = a.resolve;
	a.o.negress_resolve = a.nresolve;
	a.o.progress_fd = !a.json || isatty(2) ? 2 : -1;
	a.o.output_fd = a.verbose ? 2 : -1;
	char err[1024] = "";
	struct ward_build_result r = {0};
	size_t len = 0;
	char *df = read_dockerfile(&a, &len, err, sizeof(err));
	struct ward_image_store *s = NULL;
	int rc = df ? ward_image_store_open(a.store, true, &s, err, sizeof(err)) : -1;
	if (rc == 0)
		rc = ward_image_build(s, a.tag, df, len, &a.o, &r, err, sizeof(err));
	if (a.json)
		print_json(&a, &r, rc, err);
	if (rc < 0) {
		if (r.output[0] && !a.verbose)
			fprintf(stderr, "%s%s", r.output, r.output[strlen(r.output) - 1] == '\n' ? "" : "\n");
		fprintf(stderr, "ward image build: %s\n", err);
	} else if (!a.json)
		printf("%s\n", r.digest);
	else if (a.o.progress_fd >= 0)
		fprintf(stderr, "ward image build: %s %s (%u steps, %u cached, %.2f s)\n", a.tag, r.digest, r.steps,
		        r.cached, r.seconds);
	ward_image_store_close(s);
	free(df);
	for (size_t i = 0; i < a.nlists; i++)
		free(a.lists[i]);
	return rc == 0 ? 0 : r.failed_line && r.status ? 1 : WARD_EXIT_FAILED;
}
