/* image_cli.c — `ward image import|pull|ls|inspect|rm` (SPEC §14): options
 * into the image store's C API (include/ward_image.h) and its answers out.
 * In ward-net (libarchive); the lean `ward` hands `ward image` over. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front/frontends.h"
#include "ward.h"
#include "ward_image.h"

static void image_usage(FILE *f)
{
	fprintf(f,
	        "usage: ward image import [OPTIONS] NAME[:TAG] SOURCE\n"
	        "         SOURCE: oci:DIR[:REF], oci-archive:FILE, docker-archive:FILE,\n"
	        "                 containers-storage:REF, rootfs:FILE.tar[.gz|.zst]\n"
	        "       ward image pull [OPTIONS] REF [--name NAME[:TAG]] [-- SKOPEO-OPTIONS...]\n"
	        "       ward image ls [--json]\n"
	        "       ward image inspect NAME[:TAG]\n"
	        "       ward image rm NAME[:TAG]...\n"
	        "       ward image build [-f Dockerfile] -t NAME[:TAG] [OPTIONS] CONTEXT (ward image build --help)\n\n"
	        "options:\n"
	        "  --image-store DIR        the store (default $WARD_IMAGE_STORE, /var/lib/ward/images as root,\n"
	        "                           $XDG_DATA_HOME/ward/images otherwise)\n"
	        "  --max-image-bytes N      import, pull: the most an image may unpack to (K, M, G; default 8G)\n"
	        "  --max-image-inodes N     import, pull: the most entries it may hold (default 1000000)\n"
	        "  --max-image-layers N     import, pull: the most layers (default 128)\n"
	        "  --quiet                  import, pull: no progress, and dropped entries not named\n");
}

/* N[K|M|G] (binary multiples).  0 or -1. */
static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || (shift && v > (~0ULL >> shift)))
		return -1;
	*out = v << shift;
	return 0;
}

struct image_args {
	const char *store;
	const char *name;
	bool json, quiet;
	struct ward_image_import_opts o;
	char *pos[64];
	size_t npos;
	char **passthrough;
	size_t npassthrough;
};

static int parse(int argc, char **argv, struct image_args *a)
{
	ward_image_import_opts_init(&a->o);
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (!strcmp(s, "--")) {
			a->passthrough = argv + i + 1;
			a->npassthrough = (size_t)(argc - i - 1);
			return 0;
		}
		bool takes = !strcmp(s, "--image-store") || !strcmp(s, "--max-image-bytes") ||
		             !strcmp(s, "--max-image-inodes") || !strcmp(s, "--max-image-layers") ||
		             !strcmp(s, "--name");
		if (takes && !v) {
			fprintf(stderr, "ward image: %s needs a value\n", s);
			return -1;
		}
		if (!strcmp(s, "--image-store"))
			a->store = v;
		else if (!strcmp(s, "--name"))
			a->name = v;
		else if (!strcmp(s, "--max-image-bytes") || !strcmp(s, "--max-image-inodes") ||
		         !strcmp(s, "--max-image-layers")) {
			if (parse_bytes(v, &n) < 0 || n == 0) {
				fprintf(stderr, "ward image: %s '%s': give a positive number (K, M, G suffixes)\n", s,
				        v);
				return -1;
			}
			if (s[12] == 'b')
				a->o.max_bytes = n;
			else if (s[12] == 'i')
				a->o.max_inodes = n;
			else
				a->o.max_layers = n > 100000 ? 100000 : (unsigned)n;
		} else if (!strcmp(s, "--json"))
			a->json = true;
		else if (!strcmp(s, "--quiet") || !strcmp(s, "-q"))
			a->quiet = true;
		else if (s[0] == '-' && s[1]) {
			fprintf(stderr, "ward image: unknown option '%s'\n", s);
			return -1;
		} else if (a->npos < sizeof(a->pos) / sizeof(a->pos[0]))
			a->pos[a->npos++] = argv[i];
		else {
			fprintf(stderr, "ward image: too many arguments\n");
			return -1;
		}
		if (takes)
			i++;
	}
	return 0;
}

static int list(struct ward_image_store *s, bool json)
{
	struct ward_image_info *v;
	size_t n;
	char err[512];
	if (ward_image_list(s, &v, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward image ls: %s\n", err);
		return WARD_EXIT_FAILED;
	}
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a,
			                      json_pack("{s:s,s:s,s:s,s:I,s:i,s:s}", "name", v[i].name, "tag", v[i].tag,
			                                "digest", v[i].digest, "size", (json_int_t)v[i].size, "layers",
			                                (int)v[i].layers, "created", v[i].created));
		char *txt = json_dumps(a, JSON_COMPACT);
		puts(txt ? txt : "[]");
		free(txt);
		json_decref(a);
	} else {
		printf("%-30s %-16s %-19s %10s %6s  %s\n", "NAME", "TAG", "DIGEST", "SIZE", "LAYERS", "CREATED");
		for (size_t i = 0; i < n; i++)
			printf("%-30s %-16s %-19.19s %8.1fMB %6u  %s\n", v[i].name, v[i].tag, v[i].digest,
			       (double)v[i].size / 1e6, v[i].layers, v[i].created);
	}
	free(v);
	return 0;
}

int ward_image_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		image_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? WARD_EXIT_FAILED : 0;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "build"))
		return ward_image_build_main(argc, argv);
	struct image_args a = {0};
	if (parse(argc - 1, argv + 1, &a) < 0)
		return WARD_EXIT_FAILED;
	bool imp = !strcmp(cmd, "import"), pull = !strcmp(cmd, "pull");
	bool ok = (imp && a.npos == 2) || (pull && a.npos == 1) || (!strcmp(cmd, "ls") && a.npos == 0) ||
	          (!strcmp(cmd, "inspect") && a.npos == 1) || (!strcmp(cmd, "rm") && a.npos >= 1);
	if (!ok || (a.npassthrough && !pull) || (a.name && !pull)) {
		fprintf(stderr, "ward image %s: wrong arguments\n", cmd);
		image_usage(stderr);
		return WARD_EXIT_FAILED;
	}
	struct ward_image_store *s;
	char err[1024];
	if (ward_image_store_open(a.store, imp || pull, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward image %s: %s\n", cmd, err);
		return WARD_EXIT_FAILED;
	}
	int rc = 0;
	if (imp || pull) {
		a.o.progress = !a.quiet && isatty(2);
		a.o.quiet = a.quiet;
		a.o.skopeo_args = a.passthrough;
		a.o.nskopeo_args = a.npassthrough;
		char digest[WARD_IMAGE_DIGEST_LEN];
		int r = imp ? ward_image_import(s, a.pos[0], a.pos[1], &a.o, digest, err, sizeof(err))
		            : ward_image_pull(s, a.pos[0], a.name, &a.o, digest, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "ward image %s: %s\n", cmd, err);
			rc = WARD_EXIT_FAILED;
		} else
			printf("%s\n", digest);
	} else if (!strcmp(cmd, "ls"))
		rc = list(s, a.json);
	else if (!strcmp(cmd, "inspect")) {
		char *txt = ward_image_inspect_json(s, a.pos[0], err, sizeof(err));
		if (!txt) {
			fprintf(stderr, "ward image inspect: %s\n", err);
			rc = WARD_EXIT_FAILED;
		} else
			puts(txt);
		free(txt);
	} else
		for (size_t i = 0; i < a.npos; i++)
			if (ward_image_remove(s, a.pos[i], err, sizeof(err)) < 0) {
				fprintf(stderr, "ward image rm: %s\n", err);
				rc = WARD_EXIT_FAILED;
			}
	ward_image_store_close(s);
	return rc;
}
