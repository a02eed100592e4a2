/* test_egress.c — the egress policy (src/core/egress.c, SPEC §13): pattern
 * parsing and matching, the operator's ceiling, pins, and the address
 * classifier over every refused range (IPv4-mapped IPv6 included).  Called
 * from tests/unit/main.c; prints PASS:/FAIL: lines. */
#include <arpa/inet.h>
#include <errno.h>
#include <time.h>
#include <poll.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress.h"
#include "front/cli_args.h"
#include "system/egress.h"
#include "ward.h"
#include "wire/wire.h"
#include "unit.h"
#include <unistd.h>

void test_egress(void);
void test_egress_relay(void); /* test_egress_relay.c */

static struct egress_pattern pat(const char *s)
{
	struct egress_pattern p;
	char err[300];
	if (egress_pattern_parse(s, &p, err, sizeof(err)) < 0)
		memset(&p, 0, sizeof(p));
	return p;
}

static bool parses(const char *s)
{
	struct egress_pattern p;
	char err[300];
	return egress_pattern_parse(s, &p, err, sizeof(err)) == 0;
}

static bool matches(const char *pattern, const char *host, unsigned port)
{
	struct egress_pattern p = pat(pattern);
	return p.name[0] && egress_pattern_matches(&p, host, port);
}

static bool covered(const char *req, const char *ceil)
{
	struct egress_pattern r = pat(req), c = pat(ceil);
	return r.name[0] && c.name[0] && egress_covered(&r, &c);
}

/* The classifier's verdict for an address literal ("public" for NULL). */
static const char *class_of(const char *a)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, a, &v4->sin_addr) == 1)
		v4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &v6->sin6_addr) == 1)
		v6->sin6_family = AF_INET6;
	else
		return "unparsed";
	const char *why = egress_addr_refused((struct sockaddr *)&ss, NULL, 0);
	return why ? why : "public";
}

static void patterns(void)
{
	CHECK("egress: names, suffixes, ports and literals parse",
	      parses("pypi.org") && parses("*.pythonhosted.org") && parses("files.example:8443") &&
		      parses("10.0.0.5:8080") && parses("[2001:db8::1]:443") && parses("PyPI.Org."));
	CHECK("egress: bad patterns are refused",
	      !parses("") && !parses("*") && !parses("*pypi.org") && !parses("a.*.org") && !parses("pypi.org:0") &&
		      !parses("pypi.org:65536") && !parses("pypi.org:") && !parses("pypi.org:80x") &&
		      !parses("a b.org") && !parses("a/b") && !parses("a..b") && !parses("[::1") && !parses("[::1]x") &&
		      !parses("[pypi.org]:80") && !parses("user@pypi.org"));
	char long_label[80];
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".org");
	CHECK("egress: a label over 63 characters is refused", !parses(long_label));
	CHECK("egress: an exact name matches itself on 80 and 443 only",
	      matches("pypi.org", "pypi.org", 443) && matches("pypi.org", "PYPI.ORG", 80) &&
		      matches("pypi.org", "pypi.org.", 443) && !matches("pypi.org", "pypi.org", 8080) &&
		      !matches("pypi.org", "x.pypi.org", 443) && !matches("pypi.org", "pypi.org.evil", 443) &&
		      !matches("pypi.org", "evilpypi.org", 443));
	CHECK("egress: a '*.' suffix matches names below it, not itself",
	      matches("*.pythonhosted.org", "files.pythonhosted.org", 443) &&
		      matches("*.pythonhosted.org", "a.b.pythonhosted.org", 80) &&
		      !matches("*.pythonhosted.org", "pythonhosted.org", 443) &&
		      !matches("*.pythonhosted.org", "evilpythonhosted.org", 443) &&
		      !matches("*.pythonhosted.org", "x.pythonhosted.org", 22));
	CHECK("egress: a name with a port matches only that port",
	      matches("files.example:8443", "files.example", 8443) && !matches("files.example:8443", "files.example", 443));
	CHECK("egress: a wildcard does not let odd characters through",
	      !matches("*.test", "a b.test", 80) && !matches("*.test", "a/..test", 80) && !matches("*.test", "a\n.test", 80) &&
		      !matches("*.test", "", 80));
	CHECK("egress: literals match only a listed literal, in any spelling",
	      matches("10.0.0.5:8080", "10.0.0.5", 8080) && !matches("10.0.0.5:8080", "10.0.0.5", 80) &&
		      matches("[2001:db8::1]:443", "2001:DB8:0::1", 443) && !matches("*.0.0.5", "10.0.0.5", 80) &&
		      !matches("pypi.org", "127.0.0.1", 80) && !matches("*.1", "127.0.0.1", 80));
}

static void ceiling(void)
{
	CHECK("egress: an exact name is covered by an equal name or a matching '*.'",
	      covered("pypi.org", "pypi.org") && covered("files.pythonhosted.org", "*.pythonhosted.org") &&
		      !covered("pythonhosted.org", "*.pythonhosted.org") && !covered("pypi.org", "x.pypi.org"));
	CHECK("egress: '*.x' is covered only by '*.x' or a broader '*.'",
	      covered("*.pythonhosted.org", "*.pythonhosted.org") && covered("*.a.pythonhosted.org", "*.pythonhosted.org") &&
		      !covered("*.pythonhosted.org", "pythonhosted.org") && !covered("*.org", "*.pythonhosted.org") &&
		      !covered("*.pythonhosted.org", "files.pythonhosted.org"));
	CHECK("egress: ports: no port covers 80, 443 and none; a port only itself",
	      covered("pypi.org:443", "pypi.org") && covered("pypi.org:80", "pypi.org") &&
		      !covered("pypi.org:8080", "pypi.org") && covered("pypi.org:8080", "pypi.org:8080") &&
		      !covered("pypi.org", "pypi.org:443") && !covered("pypi.org:443", "pypi.org:8443"));
	CHECK("egress: a literal is covered only by the same literal",
	      covered("10.0.0.5:80", "10.0.0.5:80") && !covered("10.0.0.5:80", "*.0.0.5") &&
		      !covered("10.0.0.6:80", "10.0.0.5:80"));

	struct egress_pattern ceil[2] = {pat("pypi.org"), pat("*.pythonhosted.org")};
	struct egress_pattern ok[2] = {pat("pypi.org"), pat("files.pythonhosted.org")};
	struct egress_pattern more[2] = {pat("pypi.org"), pat("evil.example")};
	char err[400] = "";
	CHECK("egress: a request within the ceiling passes", egress_within_ceiling(ok, 2, ceil, 2, err, sizeof(err)) == 0);
	CHECK("egress: a request beyond it fails, naming the pattern and --egress-allow",
	      egress_within_ceiling(more, 2, ceil, 2, err, sizeof(err)) < 0 && strstr(err, "evil.example") &&
		      strstr(err, "--egress-allow"));
	CHECK("egress: with no ceiling, nothing passes and the message says how to offer egress",
	      egress_within_ceiling(ok, 1, ceil, 0, err, sizeof(err)) < 0 && strstr(err, "--egress-allow"));

	/* the policy applied to a request */
	const char *ops[] = {"*.test"}, *pins[] = {"pypi.test:127.0.0.1"};
	struct egress_policy pol = {.allow = ops, .nallow = 1, .resolve = pins, .nresolve = 1};
	struct ward_request req;
	ward_request_init(&req);
	const char *want[] = {"pypi.test:8080"};
	req.net = WARD_NET_ALLOW;
	req.egress_allow = want;
	req.negress_allow = 1;
	CHECK("egress: an operator's policy parses", egress_policy_init(&pol, err, sizeof(err)) == 0);
	CHECK("egress: ... a request with a port under a portless '*.' is beyond it (ports considered)",
	      egress_policy_apply(&pol, &req, err, sizeof(err)) < 0);
	want[0] = "pypi.test";
	CHECK("egress: ... a request within it gets the operator's pins",
	      egress_policy_apply(&pol, &req, err, sizeof(err)) == 0 && req.negress_resolve == 1 &&
		      req.egress_resolve == pins);
	const char *badpins[] = {"pypi.test"};
	struct egress_policy bad = {.resolve = badpins, .nresolve = 1};
	CHECK("egress: a pin without an address is refused", egress_policy_init(&bad, err, sizeof(err)) < 0);
	struct egress_pin pin;
	CHECK("egress: pins take IPv4 and IPv6 (with or without [])",
	      egress_pin_parse("a.test:192.0.2.1", &pin, err, sizeof(err)) == 0 && pin.addr.ss_family == AF_INET &&
		      egress_pin_parse("a.test:[::1]", &pin, err, sizeof(err)) == 0 && pin.addr.ss_family == AF_INET6 &&
		      egress_pin_parse("a.test:fe80::1", &pin, err, sizeof(err)) == 0 &&
		      egress_pin_parse("a.test:notanip", &pin, err, sizeof(err)) < 0 &&
		      egress_pin_parse(":1.2.3.4", &pin, err, sizeof(err)) < 0);
}

static void classifier(void)
{
	static const struct {
		const char *addr, *want;
	} t[] = {
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"100.64.0.1", "shared address space (CGNAT)"},
		{"100.127.255.255", "shared address space (CGNAT)"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"255.255.255.255", "broadcast"},
		{"::ffff:255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.2.1", "reserved"},
		{"2001:db8::1", "reserved"},
		{"64:ff9b::7f00:1", "loopback"},      /* NAT64 of 127.0.0.1 */
		{"2002:a9fe:a9fe::1", "link-local"}, /* 6to4 of 169.254.169.254 */
		{"::127.0.0.1", "loopback"},          /* IPv4-compatible */
		{"::ffff:0:127.0.0.1", "loopback"},   /* IPv4-translated (SIIT) */
		{"::ffff:0:169.254.169.254", "link-local"},
		{"64:ff9b:1:7f00:0:100::", "loopback"}, /* local-use NAT64 /48 of 127.0.0.1 */
		{"64:ff9b:1:a9fe:a9:fe00::", "link-local"}, /* ... of 169.254.169.254 */
		{"64:ff9b:1:808:8:800::", "public"},  /* ... of 8.8.8.8 */
		{"8.8.8.8", "public"},
		{"172.32.0.1", "public"},
		{"100.128.0.1", "public"},
		{"::ffff:8.8.8.8", "public"},
		{"2606:4700::1111", "public"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char name[120];
		snprintf(name, sizeof(name), "egress: %s is %s", t[i].addr, t[i].want);
		CHECK(name, strcmp(class_of(t[i].addr), t[i].want) == 0);
	}
	struct sockaddr_storage own[1];
	memset(own, 0, sizeof(own));
	struct sockaddr_in *o = (struct sockaddr_in *)&own[0];
	o->sin_family = AF_INET;
	inet_pton(AF_INET, "203.0.114.7", &o->sin_addr);
	struct sockaddr_in6 m;
	memset(&m, 0, sizeof(m));
	m.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:203.0.114.7", &m.sin6_addr);
	const char *why = egress_addr_refused((struct sockaddr *)&m, own, 1);
	CHECK("egress: the runner's own address is refused, also IPv4-mapped",
	      why && strcmp(why, "the runner's own address") == 0);
}

/* The request's egress on the wire and on ward run's command line. */
static void front_ends(void)
{
	struct ward_request_doc doc;
	char err[400] = "";
	const char *body = "{\"command\":\"true\",\"network\":{\"allow\":[\"pypi.org\",\"*.x.org:8443\"]},"
			   "\"limits\":{\"egress_bytes\":1000}}";
	int r = ward_request_from_json(body, strlen(body), &doc, err, sizeof(err));
	CHECK("egress: network {allow: [...]} decodes to network allow with its patterns and egress_bytes",
	      r == 0 && doc.req.net == WARD_NET_ALLOW && doc.req.negress_allow == 2 &&
		      strcmp(doc.req.egress_allow[1], "*.x.org:8443") == 0 && doc.req.limits.egress_bytes == 1000);
	char *js = r == 0 ? ward_request_to_json(&doc.req, err, sizeof(err)) : NULL;
	CHECK("egress: ... and encodes back (ward run --remote)",
	      js && strstr(js, "\"network\":{\"allow\":[\"pypi.org\",\"*.x.org:8443\"]}") &&
		      strstr(js, "\"egress_bytes\":1000"));
	free(js);
	if (r == 0)
		ward_request_doc_free(&doc);
	static const char *const bad[] = {
		"{\"command\":\"true\",\"network\":{\"allow\":[]}}",
		"{\"command\":\"true\",\"network\":{\"allow\":\"pypi.org\"}}",
		"{\"command\":\"true\",\"network\":{\"allow\":[1]}}",
		"{\"command\":\"true\",\"network\":\"allow\"}",
		"{\"command\":\"true\",\"network\":{}}",
	};
	bool all_refused = true;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ward_request_from_json(bad[i], strlen(bad[i]), &doc, err, sizeof(err)) == 0) {
			all_refused = false;
			ward_request_doc_free(&doc);
		}
	}
	CHECK("egress: an empty, non-array, non-string or missing allow list, and \"allow\" alone, are refused",
	      all_refused);

	struct ward_result res = {0};
	const char *rj = "{\"status\":\"ok\",\"exit_code\":0,\"egress\":[{\"host\":\"pypi.org\",\"port\":443,"
			 "\"allowed\":true,\"bytes_out\":5,\"bytes_in\":7},{\"host\":\"e.org\",\"port\":80,\"allowed\":false,"
			 "\"reason\":\"not in the allow-list\",\"bytes_out\":0,\"bytes_in\":0}],\"egress_truncated\":true}";
	r = ward_result_from_json(rj, strlen(rj), &res, err, sizeof(err));
	CHECK("egress: a remote result's egress list comes back",
	      r == 0 && res.egress_on && res.negress == 2 && res.egress_truncated && res.egress[0].bytes_in == 7 &&
		      !res.egress[1].allowed && strcmp(res.egress[1].reason, "not in the allow-list") == 0);
	char *back = ward_result_to_json(&res);
	CHECK("egress: ... and is written as it came",
	      back && strstr(back, "\"egress\":[{\"host\":\"pypi.org\",\"port\":443,\"allowed\":true,\"bytes_out\":5,"
				   "\"bytes_in\":7},{\"host\":\"e.org\",\"port\":80,\"allowed\":false,\"reason\":\"not in "
				   "the allow-list\",\"bytes_out\":0,\"bytes_in\":0}],\"egress_truncated\":true"));
	free(back);
	ward_result_free(&res);
	struct ward_result none = {0};
	back = ward_result_to_json(&none);
	CHECK("egress: a result without egress has no egress member", back && !strstr(back, "egress"));
	free(back);

	struct cli_run c;
	char *argv[] = {"run", "--net", "allow", "--allow-host", "pypi.org", "--allow-host=*.x.org",
			"--egress-resolve", "pypi.org:192.0.2.1", "--egress-bytes", "5000", "--", "true", NULL};
	r = cli_parse_run(12, argv, &c, err, sizeof(err));
	CHECK("egress: ward run --net allow --allow-host (twice) --egress-resolve --egress-bytes",
	      r == 0 && c.req.net == WARD_NET_ALLOW && c.req.negress_allow == 2 &&
		      strcmp(c.req.egress_allow[1], "*.x.org") == 0 && c.req.negress_resolve == 1 &&
		      c.req.limits.egress_bytes == 5000 && ward_request_validate(&c.req, err, sizeof(err)) == 0);
	cli_run_free(&c);
	char *argv2[] = {"run", "--allow-host", "pypi.org", "--", "true", NULL};
	r = cli_parse_run(5, argv2, &c, err, sizeof(err));
	CHECK("egress: --allow-host without --net allow is refused", r < 0 && strstr(err, "--net allow"));
	cli_run_free(&c);
	char *argv3[] = {"run", "--remote", "http://127.0.0.1:1", "--net", "allow", "--allow-host", "a.test",
			 "--egress-resolve", "a.test:192.0.2.1", "--", "true", NULL};
	r = cli_parse_run(11, argv3, &c, err, sizeof(err));
	CHECK("egress: --egress-resolve with --remote is refused (a runner's pins are its operator's)",
	      r < 0 && strstr(err, "ward serve --egress-resolve"));
	cli_run_free(&c);
}

/* A socket listening on 127.0.0.1, port 0; its port in *port. */
static int listen_local(unsigned *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 8) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return s;
}

/* head sent to the proxy at port; the status code of its answer (0: none in 5 s). */
static int proxy_status(unsigned port, const char *head)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char buf[256] = "";
	size_t got = 0;
	if (c >= 0 && connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 && write(c, head, strlen(head)) > 0)
		while (got < sizeof(buf) - 1 && !strstr(buf, "\r\n")) {
			struct pollfd pf = {.fd = c, .events = POLLIN};
			ssize_t n = poll(&pf, 1, 5000) == 1 ? read(c, buf + got, sizeof(buf) - 1 - got) : -1;
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = 0;
		}
	if (c >= 0)
		close(c);
	int code = 0;
	sscanf(buf, "HTTP/1.1 %d", &code);
	return code;
}

/* The proxy itself (system/egress.c), on 127.0.0.1: a pinned name is
 * reached in any case and with the root's dot; a name with two trailing
 * dots is no host name (it matched as its pinned name, then went to DNS
 * past the pin). */
/* A proxy on a local port (*px_port) allowing pypi.test:UP, pinned to
 * 127.0.0.1, whose upstream listens on *up (its port *up_port); NULL when
 * it cannot start (*up closed then). */
static struct egress_proxy *pypi_proxy(int *up, unsigned *up_port, unsigned *px_port)
{
	*up = listen_local(up_port);
	int lfd = listen_local(px_port);
	char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", *up_port);
	const char *allows[] = {allow}, *pins[] = {pin};
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	char err[256] = "";
	struct egress_proxy *p = *up >= 0 && lfd >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	if (!p && lfd >= 0 && *up < 0)
		close(lfd);
	if (!p && *up >= 0)
		close(*up);
	return p;
}

static void proxy_names(void)
{
	unsigned up_port = 0, px_port = 0;
	int up;
	struct egress_proxy *p = pypi_proxy(&up, &up_port, &px_port);
	CHECK("egress proxy: starts on 127.0.0.1", p != NULL);
	if (!p)
		return;
	char head[128];
	snprintf(head, sizeof(head), "CONNECT PyPI.Test.:%u HTTP/1.1\r\n\r\n", up_port);
	CHECK("egress proxy: a pinned name in upper case with the root's dot is reached", proxy_status(px_port, head) == 200);
	snprintf(head, sizeof(head), "CONNECT pypi.test..:%u HTTP/1.1\r\n\r\n", up_port);
	CHECK("egress proxy: a name with two trailing dots is refused", proxy_status(px_port, head) == 403);
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	egress_records(p, 0, &res);
	CHECK("egress proxy: ... as not in the allow-list (never resolved past its pin)",
	      res.negress == 2 && res.egress[0].allowed && !res.egress[1].allowed &&
		      strcmp(res.egress[1].reason, "not in the allow-list") == 0);
	free(res.egress);
	egress_stop(p);
	close(up);
}

/* The allow-list replaced while the proxy runs (E2B's updateNetwork):
 * the next connection is decided by the new list; a malformed list
 * changes nothing. */
static void proxy_live_allow(void)
{
	unsigned up_port = 0, px_port = 0;
	int up;
	struct egress_proxy *p = pypi_proxy(&up, &up_port, &px_port);
	char allow[64], other[64], err[256] = "";
	snprintf(allow, sizeof(allow), "pypi.test:%u", up_port);
	snprintf(other, sizeof(other), "files.test:%u", up_port);
	const char *allows[] = {allow}, *others[] = {other}, *bad[] = {allow, "exa mple.test"};
	CHECK("egress live allow: the proxy starts", p != NULL);
	if (!p)
		return;
	char head[128];
	snprintf(head, sizeof(head), "CONNECT pypi.test:%u HTTP/1.1\r\n\r\n", up_port);
	CHECK("egress live allow: pypi.test reached under the first list", proxy_status(px_port, head) == 200);
	CHECK("egress live allow: replaced by files.test", egress_set_allow(p, others, 1, err, sizeof(err)) == 0);
	CHECK("egress live allow: pypi.test refused at its next connection", proxy_status(px_port, head) == 403);
	CHECK("egress live allow: an empty list", egress_set_allow(p, NULL, 0, err, sizeof(err)) == 0);
	CHECK("egress live allow: ... reaches nothing", proxy_status(px_port, head) == 403);
	egress_set_allow(p, allows, 1, err, sizeof(err));
	CHECK("egress live allow: a malformed list is refused (-EINVAL, named)",
	      egress_set_allow(p, bad, 2, err, sizeof(err)) == -EINVAL && strstr(err, "exa mple.test"));
	CHECK("egress live allow: ... and the list before it stands", proxy_status(px_port, head) == 200);
	egress_stop(p);
	close(up);
}

/* A plain request through the proxy at px_port whose upstream listens on
 * up: the head the upstream got (into got), or "" when the proxy answered
 * itself (its status in *code). */
static void plain_through(int up, unsigned px_port, const char *head, char *got, size_t gotlen, int *code)
{
	got[0] = 0;
	*code = 0;
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 || write(c, head, strlen(head)) <= 0) {
		if (c >= 0)
			close(c);
		return;
	}
	struct pollfd pf[2] = {{.fd = up, .events = POLLIN}, {.fd = c, .events = POLLIN}};
	if (poll(pf, 2, 5000) > 0 && (pf[0].revents & POLLIN)) {
		int u = accept(up, NULL, NULL);
		size_t n = 0;
		while (u >= 0 && n < gotlen - 1 && !strstr(got, "\r\n\r\n")) {
			struct pollfd q = {.fd = u, .events = POLLIN};
			ssize_t k = poll(&q, 1, 5000) == 1 ? read(u, got + n, gotlen - 1 - n) : -1;
			if (k <= 0)
				break;
			n += (size_t)k;
			got[n] = 0;
		}
		if (u >= 0)
			close(u);
	} else {
		char buf[64] = "";
		if (read(c, buf, sizeof(buf) - 1) > 0)
			sscanf(buf, "HTTP/1.1 %d", code);
	}
	close(c);
}

/* A plain http:// request reaches its upstream with the URI's Host alone:
 * a head that a lenient upstream could read as another Host (a bare LF, a
 * "Host :" field, a folded line, a control character in the target) is
 * refused with 400, never forwarded. */
static void proxy_plain_heads(void)
{
	unsigned up_port = 0, px_port = 0;
	int up = listen_local(&up_port), lfd = listen_local(&px_port);
	char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", up_port);
	const char *allows[] = {allow}, *pins[] = {pin};
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	char err[256] = "";
	struct egress_proxy *p = up >= 0 && lfd >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	CHECK("egress proxy (plain): starts on 127.0.0.1", p != NULL);
	if (!p) {
		if (up >= 0)
			close(up);
		return;
	}
	char head[256], got[2048], want[64];
	int code = 0;
	snprintf(head, sizeof(head), "GET http://pypi.test:%u/x HTTP/1.1\r\nHost: evil.example\r\nA: b\r\n\r\n", up_port);
	plain_through(up, px_port, head, got, sizeof(got), &code);
	snprintf(want, sizeof(want), "\r\nHost: pypi.test:%u\r\n", up_port);
	CHECK("egress proxy (plain): the upstream gets the URI's Host only",
	      strncmp(got, "GET /x HTTP/1.1\r\n", 17) == 0 && strstr(got, want) && !strstr(got, "evil") &&
		      strstr(got, "\r\nA: b\r\n"));
	static const char *const bad[] = {
		" HTTP/1.1\r\nA: b\nHost: evil.example\r\n\r\n",
		" HTTP/1.1\r\nHost : evil.example\r\n\r\n",
		" HTTP/1.1\r\nA: b\r\n Host: evil.example\r\n\r\n",
		" HTTP/1.1\r\nA: b\rHost: evil.example\r\n\r\n",
		"\nHost:evil.example HTTP/1.1\r\n\r\n",
		" HTTP/1.1\r\nno colon here\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(head, sizeof(head), "GET http://pypi.test:%u/x%s", up_port, bad[i]);
		plain_through(up, px_port, head, got, sizeof(got), &code);
		char name[96];
		snprintf(name, sizeof(name), "egress proxy (plain): a head a lenient upstream misreads is refused (%zu)", i);
		CHECK(name, code == 400 && !got[0]);
	}
	egress_stop(p);
	close(up);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* A client that resets its connection while the proxy still connects
 * upstream (an upstream whose accept queue is full: its SYNs go
 * unanswered): poll reports the reset whatever the events asked, so the
 * connection must end then, not spin the proxy's thread until the connect
 * times out (10 s of ward's CPU, outside the sandbox's cgroup, again and
 * again).  The whole process's CPU over a second is the measure: a
 * spinning thread takes most of it, a waiting one next to nothing. */
static void proxy_reset_while_connecting(void)
{
	unsigned up_port = 0, px_port = 0;
	int up = listen_local(&up_port), lfd = listen_local(&px_port);
	int fill[2] = {-1, -1};
	if (up >= 0)
		listen(up, 0); /* an accept queue of one, filled below */
	struct sockaddr_in ua = {.sin_family = AF_INET, .sin_port = htons((uint16_t)up_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	for (int i = 0; i < 2 && up >= 0; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fill[i] >= 0)
			(void)!connect(fill[i], (struct sockaddr *)&ua, sizeof(ua));
	}
	usleep(100 * 1000); /* the queue fills (loopback: at once) */
	char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", up_port);
	const char *allows[] = {allow}, *pins[] = {pin};
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	char err[256] = "";
	struct egress_proxy *p = up >= 0 && lfd >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	CHECK("egress proxy (reset): starts on 127.0.0.1", p != NULL);
	int c = p ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
	struct sockaddr_in pa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char head[96];
	snprintf(head, sizeof(head), "CONNECT pypi.test:%u HTTP/1.1\r\n\r\n", up_port);
	bool sent = c >= 0 && connect(c, (struct sockaddr *)&pa, sizeof(pa)) == 0 && write(c, head, strlen(head)) > 0;
	/* the record is made just before the connect starts */
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	for (int i = 0; sent && i < 500 && res.negress == 0; i++) {
		usleep(10 * 1000);
		egress_records(p, 0, &res);
	}
	CHECK("egress proxy (reset): the upstream connect has begun", res.negress == 1 && res.egress[0].allowed);
	free(res.egress);
	if (c >= 0) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(c); /* a reset */
	}
	usleep(100 * 1000);
	double before = cpu_s();
	usleep(1000 * 1000);
	double used = cpu_s() - before;
	CHECK("egress proxy (reset): a client's reset while connecting does not spin the proxy", p && used < 0.3);
	printf("# proxy CPU over 1 s after the reset: %.3f s\n", used);
	egress_stop(p);
	for (int i = 0; i < 2; i++)
		if (fill[i] >= 0)
			close(fill[i]);
	if (up >= 0)
		close(up);
}

/* The proxy's CPU, as the process's less this thread's (the test makes
 * no other thread), in ms. */
static double proxy_cpu_ms_now(void)
{
	struct timespec pr, th;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &pr);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &th);
	return (double)(pr.tv_sec - th.tv_sec) * 1e3 + (double)(pr.tv_nsec - th.tv_nsec) / 1e6;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One attempt at px_port: connect, send head, wait for an answer; each
 * step at most wait_ms (a paused proxy leaves it in the accept queue).
 * The answer's status, 0 when none came, -1 when the connect did not
 * complete in time.  The answer's first bytes into buf when given. */
static int attempt(unsigned px_port, const char *head, int wait_ms, char *buf, size_t buflen)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char local[256];
	if (!buf) {
		buf = local;
		buflen = sizeof(local);
	}
	buf[0] = 0;
	if (c < 0)
		return -1;
	int code = -1;
	struct pollfd pf = {.fd = c, .events = POLLOUT};
	int e = 0;
	socklen_t el = sizeof(e);
	if ((connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS) && poll(&pf, 1, wait_ms) == 1 &&
	    getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0 && send(c, head, strlen(head), MSG_NOSIGNAL) > 0) {
		code = 0;
		size_t got = 0;
		while (got < buflen - 1 && !strstr(buf, "\r\n\r\n")) {
			pf.events = POLLIN;
			ssize_t n = poll(&pf, 1, wait_ms) == 1 ? recv(c, buf + got, buflen - 1 - got, 0) : -1;
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = 0;
		}
		sscanf(buf, "HTTP/1.1 %d", &code);
	}
	close(c);
	return code;
}

/* A loop of refused CONNECTs (a sandbox's cheapest way to make ward work
 * outside its cgroup): the proxy answers at most EGRESS_REFUSE_BURST of
 * them, then EGRESS_REFUSE_RATE a second, pausing its listener between
 * (the sandbox's connects wait in the kernel's queue), so its CPU stays a
 * small, bounded figure however fast the loop; every refusal is counted
 * (the first 64 listed); and an allowed connection after it is served. */
static void proxy_refusal_loop(void)
{
	unsigned up_port = 0, px_port = 0;
	int up = listen_local(&up_port), lfd = listen_local(&px_port);
	if (lfd >= 0)
		listen(lfd, 64); /* as PID 1's */
	char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", up_port);
	const char *allows[] = {allow}, *pins[] = {pin};
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	char err[256] = "";
	struct egress_proxy *p = up >= 0 && lfd >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	CHECK("egress proxy (refusals): starts on 127.0.0.1", p != NULL);
	if (!p) {
		if (up >= 0)
			close(up);
		return;
	}
	static const char refused[] = "CONNECT evil.test:443 HTTP/1.1\r\n\r\n";
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	double cpu0 = proxy_cpu_ms_now(), t0 = mono_s();
	int n = 0, answered = 0;
	/* 5000 attempts, or 1.5 s: each waits at most 20 ms per step (the
	 * unthrottled proxy answers all 5000 well within it) */
	for (; n < 5000 && mono_s() - t0 < 1.5; n++)
		answered += attempt(px_port, refused, 20, NULL, 0) == 403;
	double secs = mono_s() - t0;
	uint64_t tried = 0, allowed = 0;
	egress_counts(p, &tried, &allowed);
	double cpu = proxy_cpu_ms_now() - cpu0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	printf("# %d refused CONNECTs tried in %.2f s (the loop's CPU %.1f ms): %d answered, %llu decided; proxy CPU "
	       "%.1f ms (%.1f us each)\n",
	       n, secs, (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6, answered,
	       (unsigned long long)tried, cpu, tried ? cpu * 1000 / (double)tried : 0.0);
	CHECK("egress proxy (refusals): the proxy decides at most the burst and the rate's share of a loop",
	      tried >= 64 && (double)tried <= EGRESS_REFUSE_BURST + EGRESS_REFUSE_RATE * secs + 4);
	CHECK("egress proxy (refusals): ... its bucket ran dry (the throttle's count)", egress_throttled(p) >= 1);
#ifdef __SANITIZE_ADDRESS__
	const double cpu_max = 80; /* throttled here: some 13 ms; unthrottled: some 320 ms */
#else
	const double cpu_max = 40; /* throttled: some 7 ms; unthrottled: some 190 ms (5000 at ~38 us) */
#endif
	CHECK("egress proxy (refusals): ... and the proxy's CPU for the loop stays under a bound", cpu < cpu_max);
	double told = (double)egress_cpu_us(p) / 1000;
	CHECK("egress proxy (refusals): egress_cpu_us tells the proxy thread's CPU", told >= cpu - 2 && told <= cpu + 10);
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	egress_records(p, 0, &res);
	bool all_refused = res.negress == 64;
	for (size_t i = 0; i < res.negress; i++)
		all_refused = all_refused && !res.egress[i].allowed &&
			      strcmp(res.egress[i].reason, "not in the allow-list") == 0 &&
			      res.egress[i].bytes_out == sizeof(refused) - 1;
	CHECK("egress proxy (refusals): the first 64 listed as refused, each with its head's bytes, the rest truncated",
	      all_refused && res.egress_truncated);
	free(res.egress);
	/* an allowed connection is served once the queue the loop left drains */
	char head[96];
	snprintf(head, sizeof(head), "CONNECT pypi.test:%u HTTP/1.1\r\n\r\n", up_port);
	int code = 0;
	double t1 = mono_s();
	while (code != 200 && mono_s() - t1 < 10)
		code = attempt(px_port, head, 3000, NULL, 0);
	CHECK("egress proxy (refusals): an allowed CONNECT after the loop is served", code == 200);
	printf("# the allowed CONNECT after the loop: %.2f s\n", mono_s() - t1);
	egress_stop(p);
	close(up);
}

/* Refused heads count toward egress_bytes: a small budget is spent by
 * them alone, and then even an allowed name is refused for it. */
static void proxy_refused_heads_count(void)
{
	unsigned up_port = 0, px_port = 0;
	int up = listen_local(&up_port), lfd = listen_local(&px_port);
	char allow[64], pin[] = "pypi.test:127.0.0.1";
	snprintf(allow, sizeof(allow), "pypi.test:%u", up_port);
	const char *allows[] = {allow}, *pins[] = {pin};
	struct ward_request shape;
	ward_request_init(&shape);
	shape.net = WARD_NET_ALLOW;
	shape.egress_allow = allows;
	shape.negress_allow = 1;
	shape.egress_resolve = pins;
	shape.negress_resolve = 1;
	static const char refused[] = "CONNECT evil.test:443 HTTP/1.1\r\n\r\n"; /* 34 bytes */
	shape.limits.egress_bytes = 30 * (sizeof(refused) - 1);
	char err[256] = "";
	struct egress_proxy *p = up >= 0 && lfd >= 0 ? egress_start(lfd, &shape, err, sizeof(err)) : NULL;
	CHECK("egress proxy (head bytes): starts on 127.0.0.1", p != NULL);
	if (!p) {
		if (up >= 0)
			close(up);
		return;
	}
	int n403 = 0;
	for (int i = 0; i < 30; i++) /* 1020 bytes of refused heads: the budget */
		n403 += attempt(px_port, refused, 5000, NULL, 0) == 403;
	char head[96], buf[512];
	snprintf(head, sizeof(head), "CONNECT pypi.test:%u HTTP/1.1\r\n\r\n", up_port);
	int code = attempt(px_port, head, 5000, buf, sizeof(buf));
	CHECK("egress proxy (head bytes): 30 refused heads answered 403", n403 == 30);
	CHECK("egress proxy (head bytes): then an allowed CONNECT is refused: egress_bytes 1020 spent by refused heads",
	      code == 403 && strstr(buf, "egress_bytes limit reached"));
	struct ward_result res;
	memset(&res, 0, sizeof(res));
	egress_records(p, 0, &res);
	uint64_t sum = 0;
	for (size_t i = 0; i < res.negress; i++)
		sum += res.egress[i].bytes_out + res.egress[i].bytes_in;
	CHECK("egress proxy (head bytes): 30 refused records, whose bytes add up to the budget exactly",
	      res.negress == 30 && sum == 30 * (sizeof(refused) - 1));
	free(res.egress);
	egress_stop(p);
	close(up);
}

void test_egress(void)
{
	front_ends();
	patterns();
	ceiling();
	classifier();
	proxy_names();
	proxy_live_allow();
	proxy_plain_heads();
	proxy_reset_while_connecting();
	proxy_refusal_loop();
	proxy_refused_heads_count();
	test_egress_relay();
}
