/* Unit tests: option parsing, validation, the mount plan, output capture,
 * UTF-8 repair and the result's JSON. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/plan.h"
#include "core/request.h"
#include "core/supervise.h"
#include "front/cli_args.h"
#include "unit.h"
#include "ward.h"
#include "wire/utf8.h"

static int parse(struct cli_run *c, char *err, const char *const *args)
{
	int n = 0;
	while (args[n])
		n++;
	return cli_parse_run(n, (char **)args, c, err, 512);
}

void test_cli_args(void)
{
	struct cli_run c;
	char err[512];
	{
		const char *a[] = {"run",    "--timeout", "1.5",  "--memory=64", "--pids",  "10",
		                   "--json", "--env",     "A=b",  "--bind",      "/tmp:/x", "--ro-bind",
		                   "/usr",   "--",        "prog", "arg",         NULL};
		CHECK("cli: full parse", parse(&c, err, a) == 0);
		CHECK("cli: timeout fraction", c.req.limits.timeout_s == 1.5);
		CHECK("cli: --opt=value", c.req.limits.memory_mb == 64);
		CHECK("cli: pids", c.req.limits.pids == 10);
		CHECK("cli: json captures", c.json && c.req.capture);
		CHECK("cli: env", c.req.env && !strcmp(c.req.env[0], "A=b") && !c.req.env[1]);
		CHECK("cli: bind split", c.req.nmounts == 2 && !strcmp(c.req.mounts[0].host_path, "/tmp") &&
		                                 !strcmp(c.req.mounts[0].sandbox_path, "/x") &&
		                                 !c.req.mounts[0].read_only);
		CHECK("cli: ro-bind same path",
		      !strcmp(c.req.mounts[1].sandbox_path, "/usr") && c.req.mounts[1].read_only);
		CHECK("cli: argv after --",
		      c.req.argv && !strcmp(c.req.argv[0], "prog") && !strcmp(c.req.argv[1], "arg"));
		cli_run_free(&c);
	}
	struct {
		const char *name;
		const char *a[8];
	} bad[] = {
		{"cli: unknown option", {"run", "--frobnicate", "--", "x", NULL}},
		{"cli: bad number", {"run", "--timeout", "abc", "--", "x", NULL}},
		{"cli: negative", {"run", "--memory", "-5", "--", "x", NULL}},
		{"cli: zero timeout", {"run", "--timeout", "0", "--", "x", NULL}},
		{"cli: nan", {"run", "--timeout", "nan", "--", "x", NULL}},
		{"cli: inf", {"run", "--timeout", "inf", "--", "x", NULL}},
		{"cli: hex", {"run", "--pids", "0x10", "--", "x", NULL}},
		{"cli: missing value", {"run", "--timeout", NULL}},
		{"cli: no command", {"run", "--json", NULL}},
		{"cli: bad net", {"run", "--net", "bogus", "--", "x", NULL}},
		{"cli: isolation off", {"run", "--isolation", "off", "--", "x", NULL}},
		{"cli: shell and argv", {"run", "--shell", "true", "--", "x", NULL}},
		{"cli: stray argument", {"run", "x", NULL}},
		{"cli: env without =", {"run", "--env", "FOO", "--", "x", NULL}},
		{"cli: huge pids", {"run", "--pids", "99999999999999999999", "--", "x", NULL}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK(bad[i].name, parse(&c, err, bad[i].a) < 0 && err[0]);
		cli_run_free(&c);
	}
	{
		const char *a[] = {"run", "--shell", "echo hi", NULL};
		CHECK("cli: shell", parse(&c, err, a) == 0 && !strcmp(c.req.shell, "echo hi") && !c.req.argv);
		CHECK("cli: defaults from the table",
		      c.req.limits.timeout_s == 30 && c.req.limits.memory_mb == 512 && c.req.limits.pids == 64 &&
		              c.req.limits.output_limit == 1048576 && c.req.limits.fsize_mb == 64 &&
		              c.req.limits.tmp_size_mb == 64);
		cli_run_free(&c);
	}
}

void test_request(void)
{
	struct ward_request r;
	char err[512];
	char *argv[] = {"true", NULL};
	ward_request_init(&r);
	CHECK("request: no command refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.argv = argv;
	CHECK("request: defaults valid", ward_request_validate(&r, err, sizeof(err)) == 0);
	r.workdir = "/nonexistent/ward";
	CHECK("request: missing workdir refused",
	      ward_request_validate(&r, err, sizeof(err)) < 0 && strstr(err, "/nonexistent/ward"));
	r.workdir = NULL;
	struct ward_mount m = {"/usr", "/proc/x", true, false};
	r.mounts = &m;
	r.nmounts = 1;
	CHECK("request: bind into /proc refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	m.sandbox_path = "/opt/../etc";
	CHECK("request: bind path with .. refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	m.sandbox_path = "relative";
	CHECK("request: relative bind path refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	m.sandbox_path = "/opt/tools";
	CHECK("request: good bind accepted", ward_request_validate(&r, err, sizeof(err)) == 0);
	r.nmounts = 0;
	char *env[] = {"1BAD=x", NULL};
	r.env = env;
	CHECK("request: bad env name refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.env = NULL;
	struct ward_file f[2] = {{"../escape", (const unsigned char *)"x", 1, 0},
	                         {"/abs", (const unsigned char *)"x", 1, 0}};
	r.files = f;
	r.nfiles = 1;
	CHECK("request: file with .. refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.files = f + 1;
	CHECK("request: absolute file refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.nfiles = 0;
	r.limits.timeout_s = 0;
	CHECK("request: zero timeout refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.limits.timeout_s = 0.0 / 0.0;
	CHECK("request: NaN timeout refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	ward_request_init(&r);
	r.argv = argv;
	r.isolation = (enum ward_isolation)7;
	CHECK("request: unknown isolation refused", ward_request_validate(&r, err, sizeof(err)) < 0);
	r.isolation = WARD_ISO_APPLICATION;
	unsetenv("WARD_ALLOW_APPLICATION");
	CHECK("request: application refused without the operator's opt-in",
	      ward_request_validate(&r, err, sizeof(err)) < 0 && strstr(err, "WARD_ALLOW_APPLICATION=1"));
	setenv("WARD_ALLOW_APPLICATION", "1", 1);
	CHECK("request: application allowed with WARD_ALLOW_APPLICATION=1",
	      ward_request_validate(&r, err, sizeof(err)) == 0);
	unsetenv("WARD_ALLOW_APPLICATION");
}

static const struct mount_op *find(const struct plan *p, const char *dst)
{
	for (size_t i = 0; i < p->nops; i++)
		if (!strcmp(p->ops[i].dst, dst))
			return &p->ops[i];
	return NULL;
}

static long index_of(const struct plan *p, const char *dst)
{
	const struct mount_op *op = find(p, dst);
	return op ? op - p->ops : -1;
}

void test_plan(void)
{
	struct ward_request r;
	struct plan p;
	char err[512];
	char *argv[] = {"true", NULL};
	ward_request_init(&r);
	r.argv = argv;
	CHECK("plan: builds", plan_build(&p, &r, 0, err, sizeof(err)) == 0);
	const struct mount_op *op = find(&p, "/usr");
	CHECK("plan: /usr read-only bind", op && op->kind == OP_BIND && !(op->flags & OPF_RW));
	op = find(&p, "/etc/passwd");
	CHECK("plan: generated passwd", op && op->kind == OP_FILE && strstr(op->data, "sandbox:x:1000:1000"));
	CHECK("plan: no host shadow", !find(&p, "/etc/shadow"));
	CHECK("plan: no host /home /root /run /var /sys",
	      !find(&p, "/home") && !find(&p, "/root") && !find(&p, "/run") && !find(&p, "/var") && !find(&p, "/sys"));
	op = find(&p, "/tmp");
	CHECK("plan: /tmp tmpfs sized", op && op->kind == OP_TMPFS && op->size_mb == 64 && op->mode == 01777);
	op = find(&p, "/work");
	CHECK("plan: ephemeral /work owned", op && op->kind == OP_TMPFS && (op->flags & OPF_OWNED));
	CHECK("plan: /proc/kcore masked", find(&p, "/proc/kcore") && find(&p, "/proc/kcore")->kind == OP_MASK);
	CHECK("plan: /proc/sys read-only", find(&p, "/proc/sys") && find(&p, "/proc/sys")->kind == OP_READONLY);
	CHECK("plan: /etc and /dev live in the root tmpfs (made read-only at the end)",
	      !find(&p, "/etc") && !find(&p, "/dev") && index_of(&p, "/etc/passwd") >= 0);
	size_t ndev = 0;
	for (size_t i = 0; i < p.nops; i++)
		if (p.ops[i].kind == OP_BIND && !strncmp(p.ops[i].dst, "/dev/", 5))
			ndev++;
	CHECK("plan: exactly five device nodes", ndev == 5);
	plan_free(&p);

	struct ward_mount m[2] = {{"/usr/share", "/work/share", true, false}, {"/tmp", "/data", false, false}};
	r.mounts = m;
	r.nmounts = 2;
	r.workdir = "/tmp";
	CHECK("plan: with binds", plan_build(&p, &r, 0, err, sizeof(err)) == 0);
	op = find(&p, "/work");
	CHECK("plan: workdir rw bind, idmapped as root",
	      op && op->kind == OP_BIND && (op->flags & OPF_RW) && (op->flags & OPF_IDMAP));
	CHECK("plan: caller binds after /work", index_of(&p, "/work/share") > index_of(&p, "/work"));
	op = find(&p, "/data");
	CHECK("plan: rw bind", op && (op->flags & OPF_RW));
	plan_free(&p);
	CHECK("plan: unprivileged has no idmap",
	      plan_build(&p, &r, 1000, err, sizeof(err)) == 0 && !(find(&p, "/work")->flags & OPF_IDMAP));
	plan_free(&p);

	/* work_link: a second name of /work (E2B's /home/user), after /work */
	r.work_link = "/home/user";
	CHECK("plan: work_link validates", ward_request_validate(&r, err, sizeof(err)) == 0);
	CHECK("plan: work_link builds", plan_build(&p, &r, 0, err, sizeof(err)) == 0);
	op = find(&p, "/home/user");
	CHECK("plan: work_link is a symlink to /work after it",
	      op && op->kind == OP_SYMLINK && strcmp(op->src, "/work") == 0 &&
	              index_of(&p, "/home/user") > index_of(&p, "/work"));
	plan_free(&p);
	static const char *const bad_links[] = {"/etc/x",
	                                        "/home/../etc",
	                                        "/home/",
	                                        "/home/a/b",
	                                        "home/user",
	                                        "/home/User",
	                                        "/home/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	for (size_t i = 0; i < sizeof(bad_links) / sizeof(bad_links[0]); i++) {
		r.work_link = bad_links[i];
		CHECK("plan: a work_link outside /home/NAME is refused",
		      ward_request_validate(&r, err, sizeof(err)) < 0 && strstr(err, "work_link"));
	}
	r.work_link = NULL;
}

/* An image's root bound whole (plan_build's root_bound): the root first,
 * none of its entries one by one, ward's /etc files only where they differ
 * from the mount points layer's (a work_link's user), and the root built as
 * for a --rootfs when a bind has no mount point in it.  A directory stands
 * for the image's root; the image itself is not looked at by the plan. */
void test_plan_image(void)
{
	char dir[] = "/tmp/ward-unit-plan-image.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK("plan image: a scratch root", 0);
		return;
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/home", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/opt", dir);
	mkdir(path, 0755);
	struct ward_request r;
	struct plan p;
	char err[512];
	char *argv[] = {"true", NULL};
	ward_request_init(&r);
	r.argv = argv;
	r.rootfs = dir;
	r.image = (struct ward_image_root *)dir; /* (only its presence counts here) */
	CHECK("plan image: builds", plan_build(&p, &r, 0, err, sizeof(err)) == 0);
	CHECK("plan image: the root bound first, read-only",
	      p.nops && p.ops[0].kind == OP_BIND && !strcmp(p.ops[0].dst, "/") && !strcmp(p.ops[0].src, dir) &&
	              !(p.ops[0].flags & OPF_RW));
	CHECK("plan image: nothing of it bound one by one", !find(&p, "/opt") && !find(&p, "/home"));
	CHECK("plan image: /etc's files are the layer's", !find(&p, "/etc/passwd") && !find(&p, "/etc/hosts"));
	CHECK("plan image: ward's /tmp and /dev/null still", find(&p, "/tmp") && find(&p, "/dev/null"));
	plan_free(&p);

	r.work_link = "/home/user";
	CHECK("plan image: with a work_link", plan_build(&p, &r, 0, err, sizeof(err)) == 0);
	const struct mount_op *op = find(&p, "/etc/passwd");
	CHECK("plan image: its passwd bound over the layer's",
	      p.ops[0].kind == OP_BIND && op && op->kind == OP_FILE && (op->flags & OPF_OVER) &&
	              strstr(op->data, "user:x:1000:1000:ward sandbox:/home/user"));
	op = find(&p, "/home/user");
	CHECK("plan image: its link in a directory over /home", op && op->kind == OP_SYMLINK && (op->flags & OPF_OVER));
	CHECK("plan image: hostname is the layer's still", !find(&p, "/etc/hostname"));
	plan_free(&p);
	r.work_link = NULL;

	struct ward_mount m[2] = {{.host_path = "/usr/share", .sandbox_path = "/opt", .read_only = true},
	                          {.host_path = "/usr/share", .sandbox_path = "/work/x", .read_only = true}};
	r.mounts = m;
	r.nmounts = 2;
	CHECK("plan image: binds onto its /opt and into /work: bound",
	      plan_build(&p, &r, 0, err, sizeof(err)) == 0 && !strcmp(p.ops[0].dst, "/") && find(&p, "/opt"));
	plan_free(&p);
	m[0].sandbox_path = "/data";
	CHECK("plan image: a bind where it has no directory: built as for a --rootfs",
	      plan_build(&p, &r, 0, err, sizeof(err)) == 0 && strcmp(p.ops[0].dst, "/") != 0 && find(&p, "/opt") &&
	              find(&p, "/etc/passwd") && find(&p, "/data"));
	plan_free(&p);
	m[0].host_path = "/etc/hostname"; /* a file bound onto a directory of its */
	m[0].sandbox_path = "/home";
	CHECK("plan image: a file onto a directory: not bound",
	      plan_build(&p, &r, 0, err, sizeof(err)) == 0 && strcmp(p.ops[0].dst, "/") != 0);
	plan_free(&p);
	char keep[300];
	snprintf(keep, sizeof(keep), "%s/opt/keep", dir);
	close(open(keep, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	m[0].host_path = "/usr/share";
	m[0].sandbox_path = "/opt/data"; /* in a directory of it that lacks it */
	op = plan_build(&p, &r, 0, err, sizeof(err)) == 0 ? find(&p, "/opt") : NULL;
	CHECK("plan image: a bind in its directory that lacks it: that directory made by ward, its entries bound",
	      op && op->kind == OP_DIR && find(&p, "/opt/keep") && find(&p, "/opt/keep")->kind == OP_BIND &&
	              find(&p, "/opt/data"));
	plan_free(&p);
	char opt[300];
	snprintf(opt, sizeof(opt), "%s/opt", dir);
	chmod(opt, 0700); /* its owner's alone: ward's would be the sandbox user's, 0755 */
	op = plan_build(&p, &r, 0, err, sizeof(err)) == 0 ? find(&p, "/opt") : NULL;
	CHECK("plan image: ... but a 0700 directory is bound whole (never made listable)", op && op->kind == OP_BIND);
	plan_free(&p);
	chmod(opt, 0755);
	r.root_overlay = true;
	op = plan_build(&p, &r, 0, err, sizeof(err)) == 0 ? find(&p, "/opt") : NULL;
	CHECK("plan image: ... but bound whole when the root is writable", op && op->kind == OP_BIND);
	plan_free(&p);
	r.root_overlay = false;
	char many[300];
	for (int i = 0; i < 600; i++) {
		snprintf(many, sizeof(many), "%s/opt/f%d", dir, i);
		close(open(many, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	}
	CHECK("plan image: a bind in its directory of 600 entries: refused, saying why",
	      plan_build(&p, &r, 0, err, sizeof(err)) < 0 && strstr(err, "more than the 512") &&
	              strstr(err, "bind point is made in"));
	for (int i = 0; i < 600; i++) {
		snprintf(many, sizeof(many), "%s/opt/f%d", dir, i);
		unlink(many);
	}
	unlink(keep);
	r.nmounts = 0;
	r.root_overlay = true;
	CHECK("plan image: a writable root: built as before",
	      plan_build(&p, &r, 0, err, sizeof(err)) == 0 && strcmp(p.ops[0].dst, "/") != 0);
	plan_free(&p);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/home", dir);
	rmdir(path);
	rmdir(dir);
}

/* Streaming into a pipe nobody reads: nothing waits on the reader, what
 * it does not take is dropped (and counted) soon after live_until, and the
 * caller's description of the pipe stays blocking. */
static void test_capbuf_live(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		CHECK("capbuf live: pipe", 0);
		return;
	}
	static char chunk[65536];
	memset(chunk, 'x', sizeof(chunk));
	struct capbuf c;
	struct ward_stream s;
	capbuf_init(&c, 1 << 20, p[1]);
	double t0 = monotonic_now();
	for (int i = 0; i < 32; i++) {
		capbuf_feed(&c, chunk, sizeof(chunk));
		capbuf_push(&c);
	}
	CHECK("capbuf live: a full pipe does not block the feed", monotonic_now() - t0 < 2.0);
	CHECK("capbuf live: the head not taken yet is pending", capbuf_pending(&c));
	c.live_until = monotonic_now();
	capbuf_finish(&c, &s);
	double took = monotonic_now() - t0;
	CHECK("capbuf live: finish gives up on a stalled reader after about LIVE_STALL_S",
	      took >= LIVE_STALL_S * 0.9 && took < LIVE_STALL_S + 3.0);
	CHECK("capbuf live: what the reader never took is counted and flagged",
	      c.live_dropped >= (1u << 20) - 65536 && s.truncated && s.bytes == 32u * 65536);
	CHECK("capbuf live: the caller's description stays blocking", !(fcntl(p[1], F_GETFL) & O_NONBLOCK));
	free(s.data);
	char *got = malloc(1 << 17);
	ssize_t n = got ? read(p[0], got, 1 << 17) : -1;
	CHECK("capbuf live: the reader gets the head's start", n > 0 && got[0] == 'x');
	free(got);
	close(p[0]);
	close(p[1]);
}

void test_capbuf(void)
{
	struct capbuf c;
	struct ward_stream s;
	capbuf_init(&c, 10, -1);
	capbuf_feed(&c, "hello", 5);
	capbuf_finish(&c, &s);
	CHECK("capbuf: under the cap kept whole",
	      s.len == 5 && !memcmp(s.data, "hello", 5) && !s.truncated && s.bytes == 5);
	free(s.data);

	capbuf_init(&c, 10, -1);
	capbuf_feed(&c, "0123456789", 10);
	capbuf_finish(&c, &s);
	CHECK("capbuf: exactly the cap kept whole", s.len == 10 && !memcmp(s.data, "0123456789", 10) && !s.truncated);
	free(s.data);

	capbuf_init(&c, 10, -1);
	for (int i = 0; i < 1000; i++)
		capbuf_feed(&c, "abcdefghij", 10);
	capbuf_feed(&c, "XYZ", 3);
	capbuf_finish(&c, &s);
	CHECK("capbuf: head kept", !strncmp(s.data, "abcde", 5));
	CHECK("capbuf: tail kept", s.len >= 5 && !memcmp(s.data + s.len - 5, "hijXYZ" + 1, 5));
	CHECK("capbuf: marker", strstr(s.data, "[ward: 9993 bytes dropped]") != NULL);
	CHECK("capbuf: truncated and counted", s.truncated && s.bytes == 10003);
	free(s.data);

	/* one big write bigger than everything */
	char big[100];
	for (int i = 0; i < 100; i++)
		big[i] = (char)('a' + i % 26);
	capbuf_init(&c, 8, -1);
	capbuf_feed(&c, big, 100);
	capbuf_finish(&c, &s);
	CHECK("capbuf: single huge write", !strncmp(s.data, "abcd", 4) && !memcmp(s.data + s.len - 4, big + 96, 4));
	free(s.data);

	capbuf_init(&c, 0, -1);
	capbuf_feed(&c, "abc", 3);
	capbuf_finish(&c, &s);
	CHECK("capbuf: zero cap keeps nothing but counts", s.bytes == 3 && s.truncated);
	free(s.data);
	test_capbuf_live();
}

void test_utf8(void)
{
	size_t n;
	char *s = utf8_sanitize("ok \xc3\xa9", 5, &n);
	CHECK("utf8: valid kept", n == 5 && !memcmp(s, "ok \xc3\xa9", 5));
	free(s);
	s = utf8_sanitize("a\xff"
	                  "b",
	                  3, &n);
	CHECK("utf8: invalid byte replaced", n == 5 && !memcmp(s,
	                                                       "a\xef\xbf\xbd"
	                                                       "b",
	                                                       5));
	free(s);
	s = utf8_sanitize("\xc0\xaf", 2, &n);
	CHECK("utf8: overlong replaced", n == 6);
	free(s);
	s = utf8_sanitize("\xed\xa0\x80", 3, &n);
	CHECK("utf8: surrogate replaced", n == 9);
	free(s);
	s = utf8_sanitize("\xe2\x82", 2, &n);
	CHECK("utf8: truncated sequence replaced", n == 6);
	free(s);
	s = utf8_sanitize("\xf4\x90\x80\x80", 4, &n);
	CHECK("utf8: beyond U+10FFFF replaced", n == 12);
	free(s);
#define TAIL(str) utf8_partial_tail((const unsigned char *)(str), sizeof(str) - 1)
	CHECK("utf8 tail: ascii", TAIL("abc") == 0);
	CHECK("utf8 tail: empty", TAIL("") == 0);
	CHECK("utf8 tail: complete euro", TAIL("x\xe2\x82\xac") == 0);
	CHECK("utf8 tail: euro cut after 1", TAIL("x\xe2") == 1);
	CHECK("utf8 tail: euro cut after 2", TAIL("x\xe2\x82") == 2);
	CHECK("utf8 tail: 4-byte cut after 3", TAIL("\xf0\x9f\x98") == 3);
	CHECK("utf8 tail: 2-byte lead", TAIL("ab\xc3") == 1);
	CHECK("utf8 tail: a lone continuation", TAIL("a\x82") == 0);
	CHECK("utf8 tail: invalid lead", TAIL("a\xff") == 0);
	CHECK("utf8 tail: overlong lead C0", TAIL("a\xc0") == 0);
	CHECK("utf8 tail: E0 with a bad second byte", TAIL("\xe0\x80") == 0);
	CHECK("utf8 tail: surrogate prefix", TAIL("\xed\xa0") == 0);
	CHECK("utf8 tail: past U+10FFFF", TAIL("\xf4\x90") == 0);
	CHECK("utf8 tail: four continuations", TAIL("\x80\x80\x80\x80") == 0);
#undef TAIL
	/* carried and joined, the chunks read as the whole did */
	const char whole[] = "a\xe2\x82\xac\xf0\x9f\x98\x80z";
	char got[64] = "";
	size_t carry = 0, gl = 0;
	char pend[8];
	for (size_t i = 0; i < sizeof(whole) - 1; i++) {
		pend[carry++] = whole[i];
		size_t t = utf8_partial_tail((const unsigned char *)pend, carry);
		char *c = utf8_sanitize(pend, carry - t, &n);
		memcpy(got + gl, c, n);
		gl += n;
		free(c);
		memmove(pend, pend + carry - t, t);
		carry = t;
	}
	CHECK("utf8 tail: byte-at-a-time chunks give the whole", gl == sizeof(whole) - 1 && !memcmp(got, whole, gl));
}

void test_json(void)
{
	struct ward_result r;
	memset(&r, 0, sizeof(r));
	r.status = WARD_ST_SIGNAL;
	r.exit_code = 143;
	r.signal = 15;
	r.out.data = "bad\xff";
	r.out.len = 4;
	r.out.bytes = 4;
	r.err.data = "";
	r.enforced.memory = "cgroup-v1";
	char *js = ward_result_to_json(&r);
	json_error_t e;
	json_t *o = js ? json_loads(js, 0, &e) : NULL;
	CHECK("json: parses", o != NULL);
	static const char *const keys[] = {"status",           "exit_code",    "signal",       "timed_out",
	                                   "oom_killed",       "stdout",       "stderr",       "stdout_truncated",
	                                   "stderr_truncated", "stdout_bytes", "stderr_bytes", "error",
	                                   "isolation",        "enforced",     "usage"};
	int all = 1;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		all &= json_object_get(o, keys[i]) != NULL;
	CHECK("json: every SPEC key", all);
	CHECK("json: status name", !strcmp(json_string_value(json_object_get(o, "status")), "signal"));
	CHECK("json: signal number", json_integer_value(json_object_get(o, "signal")) == 15);
	CHECK("json: invalid UTF-8 replaced",
	      !strcmp(json_string_value(json_object_get(o, "stdout")), "bad\xef\xbf\xbd"));
	CHECK("json: enforced",
	      !strcmp(json_string_value(json_object_get(json_object_get(o, "enforced"), "memory")), "cgroup-v1"));
	json_decref(o);
	free(js);
	r.signal = 0;
	js = ward_result_to_json(&r);
	o = json_loads(js, 0, &e);
	CHECK("json: no signal is null", json_is_null(json_object_get(o, "signal")));
	json_decref(o);
	free(js);
}

#include "sandbox/seccomp.h"

/* The programs embedded at build time are what libseccomp compiles now. */
void test_seccomp_embedded(void)
{
	struct ward_seccomp a, b;
	char err[256];
	int ra = ward_seccomp_prepare(&a, err, sizeof(err));
	int rb = ward_seccomp_compile(&b, err, sizeof(err));
	CHECK("seccomp: prepare and compile both succeed", ra == 0 && rb == 0);
	if (ra == 0 && rb == 0) {
		CHECK("seccomp: embedded kill program equals a fresh compile",
		      a.prog.len == b.prog.len &&
		              !memcmp(a.prog.filter, b.prog.filter, a.prog.len * sizeof(*a.prog.filter)));
		CHECK("seccomp: embedded notify program equals a fresh compile",
		      a.notify_prog.len == b.notify_prog.len &&
		              !memcmp(a.notify_prog.filter, b.notify_prog.filter,
		                      a.notify_prog.len * sizeof(*a.notify_prog.filter)));
	}
	if (ra == 0)
		ward_seccomp_free(&a);
	if (rb == 0)
		ward_seccomp_free(&b);
}
