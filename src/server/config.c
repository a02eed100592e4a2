/* config.c — ward serve's options: their table, defaults, parsing, the
 * checks between them, and --help.
 *
 * Owns struct serve_opts until ward_serve_main starts the server; after
 * that nothing writes it.  Never opens a file or a socket (serve.c and the
 * parts do, with what it parsed); a bad option is a message naming the
 * option and what to give, never a clamp. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/egress.h"
#include "core/request.h"
#include "server/server.h"
#include "testjob/testjob.h"

/* --help's text (the man page is made from it: scripts/make-man), then the
 * maxima from the limits' table. */
static const char usage_text[] =
	"usage: ward serve [OPTIONS]\n"
	"  --listen ADDR:PORT        address to listen on (default 127.0.0.1:8900; port 0 picks one)\n"
	"  --token-file FILE         require Authorization: Bearer on all but /health; one token a\n"
	"                            line, \"TOKEN\" or \"NAME TOKEN\"; # starts a comment\n"
	"  --max-concurrent N        sandboxes at once (default: number of cores)\n"
	"  --queue N                 requests waiting for a slot before 429 (default 64)\n"
	"  --allow-root DIR          workdir, mounts and rootfs must lie under DIR (repeatable)\n"
	"  --max-body BYTES          largest request body (default 8388608)\n"
	"  --max-body-total BYTES    request bodies and decoded requests held at once, all connections\n"
	"                            (default 268435456)\n"
	"  --max-answer-total BYTES  encoded answers held at once until their clients take them\n"
	"                            (default 1073741824)\n"
	"  --max-answer-client BYTES  the most of it one client's answers hold (default a quarter of\n"
	"                            --max-answer-total, at least the largest answer)\n"
	"  --isolation LEVEL         default isolation of requests: system|application\n"
	"  --client-concurrency N    runs in progress per client (0 = no limit, default)\n"
	"  --client-rate N           runs per minute per client (0 = no limit, default)\n"
	"  --subclient-concurrency N runs in progress per X-Ward-Client name within its client\n"
	"                            (0 = only the client's limit, default)\n"
	"  --subclient-rate N        runs per minute per X-Ward-Client name within its client (0 =\n"
	"                            only the client's limit, default)\n"
	"  --max-connections N       open connections at once (default 256)\n"
	"  --max-conns-per-addr N    pending connections per address (an IPv6 /64), default 32, 0 =\n"
	"                            no limit; beyond, its oldest are cut. A connection is pending\n"
	"                            until its request carries a valid token (without --token-file:\n"
	"                            while it has no run admitted); a full server cuts the oldest\n"
	"                            pending connection of any address to take a new one\n"
	"  --pool N                  keep N sandboxes built ahead of requests (default 0): a request\n"
	"                            without workdir, mounts or rootfs takes one, and it is destroyed\n"
	"                            after that run, never reused\n"
	"  --spawners N              helper processes that clone sandboxes, 0 to 4 (default: one per\n"
	"                            core, at most 4); 0: the server clones them itself, which costs\n"
	"                            a copy of its memory and TLB shoot-downs on every run\n"
	"  --header-timeout S        time to send the request headers (default 10)\n"
	"  --request-timeout S       time to send the body, and to take the answer (default 60)\n"
	"  --drain-timeout S         on SIGTERM, how long runs may take to finish (default 60)\n"
	"  --favor-dynmods           turn on the kernel's favordynmods (host-wide, until reboot on\n"
	"                            some kernels): moving a process into a cgroup then costs ~0.1 ms\n"
	"                            instead of an RCU grace period (~9 ms), paid by each session\n"
	"                            exec and each sandbox on cgroup v1; ward doctor measures it\n"
	"  --log FILE                request log, one JSON line each (default stderr); SIGHUP reopens\n"
	"  --e2b ADDR:PORT           also speak E2B's API there (SPEC §17): E2B_API_URL and\n"
	"                            E2B_SANDBOX_URL = http://ADDR:PORT, E2B_API_KEY = a token\n"
	"  --e2b-domain D            the domain create answers: getHost(PORT) is PORT-ID.D, relayed into\n"
	"                            the sandbox (default localhost:<the E2B listener's port>)\n"
	"  --e2b-cpu S               CPU seconds one E2B sandbox may use in all, every command and\n"
	"                            kernel of it together (default: its timeout, one core for its life)\n"
	"  --e2b-memory MB           an E2B sandbox's memory (default 512), --e2b-pids N its processes\n"
	"                            (default 256), --e2b-disk MB its home and /tmp (default 1024);\n"
	"                            (and its largest file); each within --max-memory, --max-pids,\n"
	"                            --max-work-size, --max-tmp-size and --max-fsize\n"
	"  --e2b-base NAME=IMAGE     E2B templates (SPEC §19): the base NAME (fromImage('NAME'),\n"
	"                            fromDebianImage() is debian:stable) is IMAGE of the store\n"
	"                            (repeatable; else an image of the store named NAME)\n"
	"  --e2b-build-egress HOSTS  a template build's RUN reaches these names (comma-separated,\n"
	"                            e.g. deb.debian.org,pypi.org) through the egress proxy, with the\n"
	"                            --egress-resolve pins; default: no network, and an install step\n"
	"                            fails saying so\n"
	"  --e2b-state DIR           where paused E2B sandboxes' files are kept, so that they survive a\n"
	"                            restart (default /var/lib/ward/e2b); --e2b-max-paused N of them at\n"
	"                            once (default 64), --e2b-paused-bytes B their files in all (default 4G)\n"
	"  --e2b-max-snapshots N     E2B snapshots (--image-store images) one API key keeps (default 10;\n"
	"                            past it 429); --e2b-snapshot-bytes B their homes' files, each\n"
	"                            snapshot its own (default 4294967296; past them 507)\n"
	"  --e2b-max-sockets N       connections relayed to one sandbox's ports at once, WebSockets and\n"
	"                            HTTP answers alike (default 32; past it 429); half of\n"
	"                            --max-connections in all (503)\n"
	"  --e2b-key-sockets N       ... to one API key's sandboxes' ports at once (default half of the cap\n"
	"                            in all; past it 503): a tenant's public ports never take another's\n"
	"  --e2b-port-bytes B        the bytes one sandbox's ports may relay in its life, both ways (default\n"
	"                            4294967296; 1 to 2^50): past them its requests answer 403, a relay\n"
	"                            under way is cut; apart from --egress-bytes\n"
	"  --e2b-volumes DIR         E2B volumes (SPEC §18): each an ext4 image under DIR on a loop device\n"
	"                            (needs root, loop devices and mke2fs), kept across restarts; off\n"
	"                            without it (403); --e2b-volume-max-bytes B the size of each (default\n"
	"                            1073741824, at least 16777216: a write past it fails with ENOSPC),\n"
	"                            --e2b-max-volumes N of them per API key (default 16)\n"
	"  --node-id ID              this runner's name, the prefix of its session ids, [A-Za-z0-9_-]\n"
	"                            1 to 63 (default: the host name up to its first '.')\n"
	"Sessions (SPEC §11); above a maximum: 400, over a count: 429:\n"
	"  --max-sessions N          sessions at once (default 64)\n"
	"  --client-sessions N       sessions at once per client (default 8)\n"
	"  --session-max-ttl S       largest ttl_s a session may ask for (default 86400)\n"
	"  --session-max-idle S      largest idle_s a session may ask for (default 3600)\n"
	"  --max-work-size MB        largest limits.work_size_mb of a session (default 4096)\n"
	"  --session-call-timeout S  the most one files or stdin call on a session may take, in all\n"
	"                            (default 60); past it: 504\n"
	"  --session-bg-output BYTES what one session's background processes' output records may hold\n"
	"                            in ward's memory, in all (default 64 MiB); each reserves twice its\n"
	"                            max_output_chars; a start that does not fit: 429\n"
	"  --max-bg-output-total BYTES  the same for every session together (default 512 MiB)\n"
	"Egress (SPEC §13: network {\"allow\": [...]} through ward's proxy):\n"
	"  --egress-allow PATTERN    a name (pypi.org), '*.' suffix (*.pythonhosted.org) or address, with\n"
	"                            an optional :PORT, that requests may ask for (repeatable; default\n"
	"                            none: no egress); a request asking for more: 400\n"
	"  --egress-resolve N:A      the proxy reaches name N at address A, whatever A is (repeatable)\n"
	"Images (SPEC §14):\n"
	"  --image NAME[:TAG]        offer an image of the store as requests' \"image\" (repeatable;\n"
	"                            default none: the host's directories only); its root is\n"
	"                            prepared once, and it stays pinned while the server runs\n"
	"  --image-store DIR         the image store (default $WARD_IMAGE_STORE, /var/lib/ward/images)\n"
	"Languages and judging (SPEC §15: POST /judge, GET /languages):\n"
	"  --languages FILE          the language table (default: the installed languages.json); each\n"
	"                            entry's version_cmd runs at start, a missing toolchain is disabled\n"
	"  --max-tests N             tests a judge job may have (default 1000); more: 400\n"
	"  --max-test-bytes BYTES    stdin and expected output of a job's tests together (default 64 MiB)\n"
	"  --max-parallel N          a job's \"parallel\" above it: 400 (default 64); up to it, lowered to\n"
	"                            --max-concurrent (its tests run on slots nothing else needs)\n"
	"Dialects (SPEC §16): Piston and Judge0 clients on listeners of their own, the same engine,\n"
	"tokens, quotas and maxima:\n"
	"  --piston ADDR:PORT        speak Piston v2 there (its port is 2000)\n"
	"  --piston-version-fallback major|any  a version range that matches no language reaches\n"
	"                            the installed one of the same major (any: whatever its version)\n"
	"  --judge0 ADDR:PORT        speak Judge0 CE 1.13.1 there (its port is 2358)\n"
	"  --piston-client NAME      requests on --piston with no token count as client NAME (its\n"
	"                            quotas): for header-less clients such as piston-client; bind\n"
	"                            --piston where only they reach it\n"
	"  --judge0-keep S           how long a finished submission is kept in memory (default 3600);\n"
	"                            then 404\n"
	"  --judge0-max-queue N      submissions waiting (queued or running) at once (default 1000);\n"
	"                            more: 503 queue is full\n"
	"  --judge0-client-queue N   ... of one client (default a quarter of --judge0-max-queue, at\n"
	"                            least 20)\n"
	"  --judge0-max-kept N       finished submissions kept (default 10000; and within\n"
	"                            --max-body-total): beyond, the oldest of the client keeping\n"
	"                            the most are dropped first; finished ones never refuse work\n"
	"  --judge0-callback-allow HOST  a host callback_url may name (repeatable; default none: a\n"
	"                            callback_url is refused); never loopback, link-local or private\n"
	"  --judge0-additional-files on|off  additional_files (a zip) and language 89 (default on); the\n"
	"                            zip is unpacked by ward-unzip inside a sandbox, never on the host\n"
	"  --judge0-max-runs N       number_of_runs a submission may ask for (default and most 20); its\n"
	"                            runs are one at a time, averaged, the first not Accepted ends them\n"
	"MCP (SPEC §21): agents' tools over the Model Context Protocol, the same engine and limits:\n"
	"  --mcp ADDR:PORT           speak MCP's streamable HTTP there (POST and DELETE /mcp; Bearer\n"
	"                            tokens, quotas and maxima as above); `ward mcp` speaks it on stdio\n"
	"The most a request (/exec, /test) may ask for; above it: 400 naming the field, never clamped:\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
	for (int i = 0; i < LIM__COUNT; i++) {
		const struct limit_desc *d = &ward_limit_table[i];
		char opt[40], dflt[40];
		const char *metavar = i == LIM_TIMEOUT || i == LIM_CPU ? "S"
		                      : strcmp(d->unit, "bytes") == 0  ? "BYTES"
		                      : d->unit[0]                     ? d->unit
		                                                       : "N";
		snprintf(opt, sizeof(opt), "%s %s", d->max_option, metavar);
		if (i == LIM_CPU)
			snprintf(dflt, sizeof(dflt), "= --max-timeout");
		else
			snprintf(dflt, sizeof(dflt), "%.15g", d->max_dflt);
		fprintf(f, "  %-25s limits.%s (default %s)\n", opt, d->field, dflt);
	}
	fprintf(f, "A client is its token's name, else its address (an IPv6 /64); quotas count per client.\n"
	           "X-Ward-Client names a sub-client within it (logged as CLIENT/NAME), which --subclient-*\n"
	           "limit further: the header splits a client's quota, never adds to it.\n");
}

static int parse_uint(const char *opt, const char *v, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n > max) {
		fprintf(stderr, "ward serve: %s '%s': give a whole number from 0 to %llu\n", opt, v, max);
		return -1;
	}
	*out = n;
	return 0;
}

static int parse_secs(const char *opt, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d > 0 && d <= 86400)) {
		fprintf(stderr, "ward serve: %s '%s': give seconds, more than 0 and at most 86400\n", opt, v);
		return -1;
	}
	*out = d;
	return 0;
}

/* --max-timeout and the like: within the table's bounds, whole numbers
 * but for seconds. */
static int parse_max(int which, const char *v, struct ward_limits *max)
{
	const struct limit_desc *d = &ward_limit_table[which];
	bool secs = which == LIM_TIMEOUT || which == LIM_CPU;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= d->min && x <= d->max) || (!secs && x != floor(x))) {
		fprintf(stderr, "ward serve: %s '%s': give %s from %.15g to %.15g%s%s\n", d->max_option, v,
		        secs ? "seconds" : "a whole number", d->min, d->max, d->unit[0] ? " " : "", d->unit);
		return -1;
	}
	ward_limit_set(max, which, x);
	return 0;
}

/* Files out (SPEC §12): base64 takes four bytes for three, and each file's
 * path (six a byte at worst), size and mode some more. */
static uint64_t collect_answer_bound(const struct ward_limits *max)
{
	return (max->collect_max_bytes + 2) / 3 * 4 + (uint64_t)max->collect_max_files * (6 * 4096 + 128) + 64;
}

/* The largest answer a request within the maxima can have: each kept byte
 * of both streams may take six on the wire (\u0001), the drop marker
 * included; a test report's details take a few times its report's bytes,
 * an exec's collected files what collect_answer_bound says. */
static uint64_t answer_bound(const struct ward_limits *max)
{
	uint64_t report = 8ull * TJ_REPORT_LIMIT, files = collect_answer_bound(max); /* a test job collects nothing */
	return 12 * (max->output_limit + 64) + (report > files ? report : files) + (64u << 10);
}

/* The answer budget holds the largest answer. */
static int check_budgets(const struct serve_opts *o)
{
	uint64_t need = answer_bound(&o->max);
	if (o->max_answer_total < need) {
		fprintf(stderr,
		        "ward serve: --max-answer-total %zu cannot hold the largest answer a request may have "
		        "with --max-output %llu (%llu bytes: each kept byte of both streams may take six on "
		        "the wire, collected files four for three); give at least %llu, or a smaller --max-output "
		        "or --max-collect-bytes\n",
		        o->max_answer_total, (unsigned long long)o->max.output_limit, (unsigned long long)need,
		        (unsigned long long)need);
		return -1;
	}
	if (o->max_answer_client && (o->max_answer_client < need || o->max_answer_client > o->max_answer_total)) {
		fprintf(stderr,
		        "ward serve: --max-answer-client %zu must hold the largest answer (%llu bytes) and be at "
		        "most --max-answer-total (%zu)\n",
		        o->max_answer_client, (unsigned long long)need, o->max_answer_total);
		return -1;
	}
	if (o->max_body_total < o->max_body) {
		fprintf(stderr, "ward serve: --max-body-total (%zu) must be at least --max-body (%zu)\n",
		        o->max_body_total, o->max_body);
		return -1;
	}
	return 0;
}

/* How an option's argument is read, and into what. */
enum opt_kind {
	K_LISTEN,   /* ADDR:PORT into o->listen */
	K_PATH,     /* a file, kept as given (const char *) */
	K_ROOT,     /* --allow-root, repeatable */
	K_ISO,      /* an isolation level */
	K_UINT,     /* a whole number into an unsigned */
	K_SIZE,     /* a whole number into a size_t */
	K_INT,      /* a whole number into an int */
	K_SECS,     /* seconds into a double */
	K_NODE,     /* --node-id: [A-Za-z0-9_-]{1,63} into o->node_id */
	K_FLAG,     /* no argument: sets a bool */
	K_EGRESS,   /* --egress-allow / --egress-resolve, repeatable */
	K_IMAGE,    /* --image NAME, repeatable */
	K_E2B_BASE, /* --e2b-base NAME=IMAGE, repeatable */
	K_DIALECT,  /* --piston / --judge0 ADDR:PORT into a char[128] */
	K_FALLBACK, /* --piston-version-fallback major|any */
	K_CALLBACK, /* --judge0-callback-allow HOST, repeatable */
	K_CLIENT,   /* --piston-client NAME: [A-Za-z0-9_.-]{1,63} */
	K_ONOFF,    /* on|off into a bool */
	K_HELP,
};

struct opt_desc {
	const char *name;
	enum opt_kind kind;
	size_t off;             /* the field of struct serve_opts */
	unsigned long long max; /* whole numbers: the largest allowed */
	const char *if_zero;    /* set: 0 is refused, with this message ("": with none) */
};

#define OFF(field) offsetof(struct serve_opts, field)
static const struct opt_desc opts[] = {
	{"listen", K_LISTEN, OFF(listen), 0, NULL},
	{"token-file", K_PATH, OFF(token_file), 0, NULL},
	{"max-concurrent", K_UINT, OFF(max_concurrent), 4096, "--max-concurrent must be at least 1"},
	{"queue", K_UINT, OFF(queue), 1u << 20, NULL},
	{"allow-root", K_ROOT, OFF(roots), 0, NULL},
	{"max-body", K_SIZE, OFF(max_body), 1ull << 30, NULL},
	{"max-body-total", K_SIZE, OFF(max_body_total), 1ull << 40, NULL},
	{"max-answer-total", K_SIZE, OFF(max_answer_total), 1ull << 40, NULL},
	{"max-answer-client", K_SIZE, OFF(max_answer_client), 1ull << 40, NULL},
	{"isolation", K_ISO, OFF(isolation), 0, NULL},
	{"client-concurrency", K_UINT, OFF(client_concurrency), 1u << 20, NULL},
	{"client-rate", K_UINT, OFF(client_rate), 1u << 24, NULL},
	{"subclient-concurrency", K_UINT, OFF(subclient_concurrency), 1u << 20, NULL},
	{"subclient-rate", K_UINT, OFF(subclient_rate), 1u << 24, NULL},
	{"max-connections", K_UINT, OFF(max_connections), 65536, ""},
	{"max-conns-per-addr", K_UINT, OFF(max_conns_per_addr), 65536, NULL},
	{"pool", K_UINT, OFF(pool), 4096, NULL},
	{"spawners", K_INT, OFF(spawners), 4, NULL},
	{"header-timeout", K_SECS, OFF(header_timeout), 0, NULL},
	{"request-timeout", K_SECS, OFF(request_timeout), 0, NULL},
	{"drain-timeout", K_SECS, OFF(drain_timeout), 0, NULL},
	{"log", K_PATH, OFF(log_path), 0, NULL},
	{"node-id", K_NODE, OFF(node_id), 0, NULL},
	{"max-sessions", K_UINT, OFF(max_sessions), 65536, NULL},
	{"client-sessions", K_UINT, OFF(client_sessions), 65536, NULL},
	{"session-max-ttl", K_SECS, OFF(session_max_ttl), 0, NULL},
	{"session-max-idle", K_SECS, OFF(session_max_idle), 0, NULL},
	{"max-work-size", K_SIZE, OFF(max_work_size), 1ull << 20, "--max-work-size must be at least 1 (MB)"},
	{"session-call-timeout", K_SECS, OFF(session_call_timeout), 0, NULL},
	{"session-bg-output", K_SIZE, OFF(session_bg_output), 1ull << 40, "--session-bg-output must be at least 1"},
	{"max-bg-output-total", K_SIZE, OFF(max_bg_output_total), 1ull << 40,
         "--max-bg-output-total must be at least 1"},
	{"favor-dynmods", K_FLAG, OFF(favor_dynmods), 0, NULL},
	{"egress-allow", K_EGRESS, OFF(egress_allow), 0, NULL},
	{"egress-resolve", K_EGRESS, OFF(egress_resolve), 0, NULL},
	{"image", K_IMAGE, OFF(images), 0, NULL},
	{"image-store", K_PATH, OFF(image_store), 0, NULL},
	{"languages", K_PATH, OFF(languages_file), 0, NULL},
	{"max-tests", K_UINT, OFF(max_tests), 1u << 20, "--max-tests must be at least 1"},
	{"max-test-bytes", K_SIZE, OFF(max_test_bytes), 1ull << 34, "--max-test-bytes must be at least 1"},
	{"max-parallel", K_UINT, OFF(max_parallel), 4096, "--max-parallel must be at least 1"},
	{"e2b", K_LISTEN, OFF(e2b_listen), 0, NULL},
	{"e2b-cpu", K_SECS, OFF(e2b_cpu_s), 0, NULL},
	{"e2b-domain", K_PATH, OFF(e2b_domain), 0, NULL},
	{"e2b-base", K_E2B_BASE, OFF(e2b_bases), 0, NULL},
	{"e2b-build-egress", K_PATH, OFF(e2b_build_egress), 0, NULL},
	{"e2b-memory", K_UINT, OFF(e2b_memory_mb), 1u << 20, "--e2b-memory must be at least 1 (MB)"},
	{"e2b-pids", K_UINT, OFF(e2b_pids), 1u << 20, "--e2b-pids must be at least 1"},
	{"e2b-disk", K_UINT, OFF(e2b_disk_mb), 1u << 20, "--e2b-disk must be at least 1 (MB)"},
	{"e2b-state", K_PATH, OFF(e2b_state), 0, NULL},
	{"e2b-max-paused", K_UINT, OFF(e2b_max_paused), 1u << 20, "--e2b-max-paused must be at least 1"},
	{"e2b-max-sockets", K_UINT, OFF(e2b_max_sockets), 1u << 16, "--e2b-max-sockets must be at least 1"},
	{"e2b-key-sockets", K_UINT, OFF(e2b_key_sockets), 1u << 16, "--e2b-key-sockets must be at least 1"},
	{"e2b-port-bytes", K_SIZE, OFF(e2b_port_bytes), 1ull << 50, "--e2b-port-bytes must be at least 1"},
	{"e2b-paused-bytes", K_SIZE, OFF(e2b_paused_bytes), 1ull << 50, "--e2b-paused-bytes must be at least 1"},
	{"e2b-max-snapshots", K_UINT, OFF(e2b_max_snapshots), 1u << 20, "--e2b-max-snapshots must be at least 1"},
	{"e2b-snapshot-bytes", K_SIZE, OFF(e2b_snapshot_bytes), 1ull << 50, "--e2b-snapshot-bytes must be at least 1"},
	{"e2b-volumes", K_PATH, OFF(e2b_volumes), 0, NULL},
	{"e2b-volume-max-bytes", K_SIZE, OFF(e2b_volume_max_bytes), 1ull << 44,
         "--e2b-volume-max-bytes must be at least 16777216"},
	{"e2b-max-volumes", K_UINT, OFF(e2b_max_volumes), 1u << 20, "--e2b-max-volumes must be at least 1"},
	{"piston", K_DIALECT, OFF(piston_listen), 0, NULL},
	{"piston-version-fallback", K_FALLBACK, OFF(piston_version_fallback), 0, NULL},
	{"judge0", K_DIALECT, OFF(judge0_listen), 0, NULL},
	{"mcp", K_DIALECT, OFF(mcp_listen), 0, NULL},
	{"judge0-keep", K_SECS, OFF(judge0_keep), 0, NULL},
	{"judge0-max-queue", K_UINT, OFF(judge0_max_queue), 1u << 20, "--judge0-max-queue must be at least 1"},
	{"judge0-client-queue", K_UINT, OFF(judge0_client_queue), 1u << 20, "--judge0-client-queue must be at least 1"},
	{"judge0-max-kept", K_UINT, OFF(judge0_max_kept), 1u << 22, "--judge0-max-kept must be at least 1"},
	{"piston-client", K_CLIENT, OFF(piston_client), 0, NULL},
	{"judge0-callback-allow", K_CALLBACK, OFF(judge0_callback_allow), 0, NULL},
	{"judge0-additional-files", K_ONOFF, OFF(judge0_additional_files), 0, NULL},
	{"judge0-max-runs", K_UINT, OFF(judge0_max_runs), 20, "--judge0-max-runs must be at least 1"},
	{"help", K_HELP, 0, 0, NULL},
};
#define NOPTS ((int)(sizeof(opts) / sizeof(opts[0])))
#define O_FIRST 256 /* getopt_long's value of opts[i] is O_FIRST + i, then one a limit's maximum */

static bool node_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* The host name up to its first '.', or "" when that is not a valid node
 * id (check_opts then asks for --node-id). */
static void default_node_id(char *id, size_t n)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = 0;
	host[strcspn(host, ".")] = 0;
	size_t k = strlen(host);
	bool ok = k >= 1 && k <= 63 && k < n;
	for (size_t i = 0; ok && i < k; i++)
		ok = node_char(host[i]);
	if (!ok)
		k = 0;
	memcpy(id, host, k);
	id[k] = 0;
}

static int set_node_id(struct serve_opts *o, const char *v)
{
	size_t k = strlen(v);
	bool ok = k >= 1 && k <= 63;
	for (size_t i = 0; ok && i < k; i++)
		ok = node_char(v[i]);
	if (!ok) {
		fprintf(stderr,
		        "ward serve: --node-id '%s': give 1 to 63 of A-Z a-z 0-9 _ - (it begins every "
		        "session id, for a load balancer to route on)\n",
		        v);
		return -1;
	}
	snprintf(o->node_id, sizeof(o->node_id), "%s", v);
	return 0;
}

/* --piston-client NAME: a client's name, as a token's (the quotas' key). */
static int set_client_name(struct serve_opts *o, const char *flag, const char *v)
{
	size_t k = strlen(v);
	bool ok = k >= 1 && k <= 63;
	for (size_t i = 0; ok && i < k; i++)
		ok = node_char(v[i]) || v[i] == '.';
	if (!ok) {
		fprintf(stderr,
		        "ward serve: %s '%s': give 1 to 63 of A-Z a-z 0-9 _ - . (the client its requests "
		        "count as: a token's name shares that token's quotas)\n",
		        flag, v);
		return -1;
	}
	snprintf(o->piston_client, sizeof(o->piston_client), "%s", v);
	return 0;
}

static void opts_defaults(struct serve_opts *o)
{
	ward_maxima_init(&o->max);
	o->max_answer_total = 1ull << 30;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(o->listen, sizeof(o->listen), "127.0.0.1:8900");
	o->max_concurrent = ncpu > 0 ? (unsigned)ncpu : 1;
	o->queue = 64;
	o->max_body = 8u << 20;
	o->max_body_total = 256u << 20;
	o->isolation = WARD_ISO_SYSTEM;
	o->max_connections = 256;
	o->max_conns_per_addr = 32;
	o->header_timeout = 10;
	o->request_timeout = 60;
	o->drain_timeout = 60;
	o->spawners = -1;
	o->max_sessions = 64;
	o->client_sessions = 8;
	o->session_max_ttl = 86400;
	o->session_max_idle = 3600;
	o->max_work_size = 4096;
	o->session_call_timeout = WARD_SESSION_CALL_TIMEOUT;
	o->session_bg_output = WARD_SESSION_BG_OUTPUT;
	o->max_bg_output_total = (size_t)512 << 20;
	o->max_tests = WARD_JUDGE_MAX_TESTS;
	o->max_test_bytes = WARD_JUDGE_MAX_TEST_BYTES;
	o->max_parallel = 64;
	o->judge0_keep = 3600;
	o->judge0_max_queue = 1000;
	o->judge0_max_kept = 10000;
	o->judge0_additional_files = true;
	o->judge0_max_runs = 20;
	default_node_id(o->node_id, sizeof(o->node_id));
	o->egress.allow = o->egress_allow;
	o->egress.resolve = o->egress_resolve;
}

/* getopt_long's table: opts, then --max-X for each limit (the table of
 * limits names them). */
static void long_options(struct option *lo)
{
	int k = 0;
	for (int i = 0; i < NOPTS; i++)
		lo[k++] = (struct option){opts[i].name,
		                          opts[i].kind == K_HELP || opts[i].kind == K_FLAG ? no_argument
		                                                                           : required_argument,
		                          NULL, O_FIRST + i};
	for (int i = 0; i < LIM__COUNT; i++)
		lo[k++] = (struct option){ward_limit_table[i].max_option + 2, required_argument, NULL,
		                          O_FIRST + NOPTS + i};
	lo[k] = (struct option){NULL, 0, NULL, 0};
}

static int set_whole(struct serve_opts *o, const struct opt_desc *d, const char *flag, const char *v)
{
	unsigned long long n;
	if (parse_uint(flag, v, d->max, &n) < 0)
		return -1;
	if (n == 0 && d->if_zero) {
		if (d->if_zero[0])
			fprintf(stderr, "ward serve: %s\n", d->if_zero);
		return -1;
	}
	void *field = (char *)o + d->off;
	if (d->kind == K_UINT)
		*(unsigned *)field = (unsigned)n;
	else if (d->kind == K_SIZE)
		*(size_t *)field = (size_t)n;
	else
		*(int *)field = (int)n;
	return 0;
}

/* One option of the table with its argument v. */
/* A repeatable option: v appended to its list, within the list's size. */
static int append_option(struct serve_opts *o, const struct opt_desc *d, const char *flag, const char *v)
{
	const char **list;
	size_t *n, max;
	bool allow = d->off == OFF(egress_allow);
	switch (d->kind) {
	case K_CALLBACK:
		list = o->judge0_callback_allow, n = &o->njudge0_callback_allow, max = EGRESS_MAX_PATTERNS;
		break;
	case K_ROOT:
		list = o->roots, n = &o->nroots, max = MAX_ROOTS;
		break;
	case K_IMAGE:
		list = o->images, n = &o->nimages, max = MAX_IMAGES;
		break;
	default:
		list = allow ? o->egress_allow : o->egress_resolve;
		n = allow ? &o->egress.nallow : &o->egress.nresolve;
		max = EGRESS_MAX_PATTERNS;
	}
	if (*n == max) {
		fprintf(stderr, "ward serve: at most %zu %s\n", max, flag);
		return -1;
	}
	list[(*n)++] = v;
	return 0;
}

static int set_option(struct serve_opts *o, const struct opt_desc *d, const char *v)
{
	char flag[40];
	snprintf(flag, sizeof(flag), "--%s", d->name);
	switch (d->kind) {
	case K_LISTEN: /* listen and e2b_listen: both char[128] */
		if (strlen(v) >= sizeof(o->listen)) {
			fprintf(stderr, "ward serve: %s '%s' is too long\n", flag, v);
			return -1;
		}
		snprintf((char *)o + d->off, sizeof(o->listen), "%s", v);
		return 0;
	case K_DIALECT:
		if (strlen(v) >= sizeof(o->piston_listen) || !strchr(v, ':')) {
			fprintf(stderr, "ward serve: %s '%s': give ADDR:PORT, e.g. 127.0.0.1:2000\n", flag, v);
			return -1;
		}
		snprintf((char *)o + d->off, sizeof(o->piston_listen), "%s", v);
		return 0;
	case K_FALLBACK:
		if (strcmp(v, "major") && strcmp(v, "any") && strcmp(v, "none")) {
			fprintf(stderr, "ward serve: %s '%s': use major, any or none\n", flag, v);
			return -1;
		}
		o->piston_version_fallback = !strcmp(v, "major") ? 1 : !strcmp(v, "any") ? 2 : 0;
		return 0;
	case K_ONOFF:
		if (strcmp(v, "on") && strcmp(v, "off")) {
			fprintf(stderr, "ward serve: %s '%s': use on or off\n", flag, v);
			return -1;
		}
		*(bool *)((char *)o + d->off) = !strcmp(v, "on");
		return 0;
	case K_PATH:
		*(const char **)((char *)o + d->off) = v;
		return 0;
	case K_CALLBACK:
	case K_ROOT:
	case K_IMAGE:
	case K_EGRESS:
		return append_option(o, d, flag, v);
	case K_ISO:
		if (ward_isolation_parse(v, &o->isolation) < 0) {
			fprintf(stderr, "ward serve: --isolation '%s': use system or application\n", v);
			return -1;
		}
		return 0;
	case K_SECS:
		return parse_secs(flag, v, (double *)((char *)o + d->off));
	case K_NODE:
		return set_node_id(o, v);
	case K_CLIENT:
		return set_client_name(o, flag, v);
	case K_E2B_BASE:
		if (o->ne2b_bases == MAX_IMAGES || !strchr(v, '=') || v[0] == '=') {
			fprintf(stderr, "ward serve: --e2b-base NAME=IMAGE (at most %d): '%s'\n", MAX_IMAGES, v);
			return -1;
		}
		o->e2b_bases[o->ne2b_bases++] = v;
		return 0;
	case K_UINT:
	case K_SIZE:
	case K_INT:
		return set_whole(o, d, flag, v);
	case K_FLAG:
		*(bool *)((char *)o + d->off) = true;
		return 0;
	case K_HELP:
		break;
	}
	return -1;
}

/* An E2B sandbox's sizes (SPEC §18): what an agent can live in by
 * default, under the maxima; one given beyond them is refused. */
static int e2b_sizes(struct serve_opts *o)
{
	const struct {
		unsigned *v;
		unsigned dflt;
		double max;
		const char *name, *max_name;
	} z[] = {
		{&o->e2b_memory_mb, 512, (double)o->max.memory_mb, "--e2b-memory", "--max-memory"},
		{&o->e2b_pids, 256, (double)o->max.pids, "--e2b-pids", "--max-pids"},
		{&o->e2b_disk_mb, 1024, (double)o->max_work_size, "--e2b-disk", "--max-work-size"},
		{&o->e2b_disk_mb, 1024, (double)o->max.tmp_size_mb, "--e2b-disk", "--max-tmp-size"},
		{&o->e2b_disk_mb, 1024, (double)o->max.fsize_mb, "--e2b-disk", "--max-fsize"},
	};
	size_t n = sizeof(z) / sizeof(z[0]);
	bool given[sizeof(z) / sizeof(z[0])];
	for (size_t i = 0; i < n; i++)
		given[i] = *z[i].v != 0;
	for (size_t i = 0; i < n; i++) {
		if (given[i] && *z[i].v > z[i].max) {
			fprintf(stderr, "ward serve: %s %u is above %s (%g): give less, or raise %s\n", z[i].name,
			        *z[i].v, z[i].max_name, z[i].max, z[i].max_name);
			return -1;
		}
		if (!given[i] && (!*z[i].v || *z[i].v > z[i].max)) /* the default, under every maximum */
			*z[i].v = z[i].dflt < z[i].max ? z[i].dflt : (unsigned)z[i].max;
	}
	return 0;
}

/* What the options say together, once all are read. */
static int check_opts(const struct serve_opts *o, int argc, char **argv)
{
	if (check_budgets(o) < 0)
		return -1;
	if (!(o->session_call_timeout > 0)) {
		fprintf(stderr, "ward serve: --session-call-timeout must be more than 0 seconds\n");
		return -1;
	}
	if (!o->node_id[0]) {
		fprintf(stderr,
		        "ward serve: the host name does not give a node id (1 to 63 of A-Z a-z 0-9 _ - before its "
		        "first '.'): give --node-id ID\n");
		return -1;
	}
	if (o->pool && o->isolation != WARD_ISO_SYSTEM) {
		fprintf(stderr, "ward serve: --pool builds system-level sandboxes; it needs --isolation system\n");
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "ward serve: unexpected argument '%s' (see ward serve --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* 0: o is ready; 1: --help was printed; -1: a message says what is wrong. */
int parse_opts(struct serve_opts *o, int argc, char **argv)
{
	struct option longopts[NOPTS + LIM__COUNT + 1];
	long_options(longopts);
	opts_defaults(o);
	bool max_cpu_given = false;
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		int i = ch - O_FIRST, lim = i - NOPTS;
		if (ch == 'h' || (i >= 0 && i < NOPTS && opts[i].kind == K_HELP)) {
			usage(stdout);
			return 1;
		}
		if (i >= 0 && i < NOPTS) {
			if (set_option(o, &opts[i], optarg) < 0)
				return -1;
		} else if (lim >= 0 && lim < LIM__COUNT) {
			if (parse_max(lim, optarg, &o->max) < 0)
				return -1;
			max_cpu_given |= lim == LIM_CPU;
		} else {
			fprintf(stderr, "ward serve: unknown or incomplete option '%s' (see ward serve --help)\n",
			        argv[optind - 1]);
			return -1;
		}
	}
	if (!max_cpu_given)
		o->max.cpu_s = o->max.timeout_s;
	ward_defaults_under(&o->max, &o->defaults);
	char eerr[400];
	if (egress_policy_init(&o->egress, eerr, sizeof(eerr)) < 0) {
		fprintf(stderr, "ward serve: %s\n", eerr);
		return -1;
	}
	if (check_opts(o, argc, argv) < 0 || e2b_sizes(o) < 0)
		return -1;
	if (!o->judge0_client_queue) /* a quarter of the queue, and a whole batch */
		o->judge0_client_queue = o->judge0_max_queue / 4 > 20 ? o->judge0_max_queue / 4 : 20;
	if (o->judge0_client_queue > o->judge0_max_queue)
		o->judge0_client_queue = o->judge0_max_queue;
	if (!o->max_answer_client) { /* a quarter of the total, and never less than the largest answer */
		uint64_t need = answer_bound(&o->max);
		o->max_answer_client = o->max_answer_total / 4 > need ? o->max_answer_total / 4 : (size_t)need;
	}
	return 0;
}
