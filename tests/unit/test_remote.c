/* test_remote.c — the client side of ward serve beneath ward_remote_run():
 * the endpoint a runner URL names, and a runner that is not there. */
#include <stdlib.h>
#include <string.h>

#include "front/frontends.h"
#include "front/remote.h"
#include "unit.h"
#include "ward.h"

void test_remote(void);

void test_remote(void)
{
	static const char *const cases[][2] = {
		{"http://h:1", "http://h:1/exec"},
		{"http://h:1/", "http://h:1/exec"},
		{"http://h:1/exec", "http://h:1/exec"},
		{"http://h:1/exec/", "http://h:1/exec"},
		{"http://h:1/runner", "http://h:1/runner/exec"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *u = remote_exec_url(cases[i][0]);
		char name[128];
		snprintf(name, sizeof(name), "remote: endpoint of %s", cases[i][0]);
		CHECK(name, u && strcmp(u, cases[i][1]) == 0);
		free(u);
	}

	/* port 1 on loopback: nothing listens, the answer is an error, fast */
	struct ward_request q;
	struct ward_result r;
	char *const argv[] = {"true", NULL};
	ward_request_init(&q);
	q.argv = argv;
	int rc = ward_remote_run("http://127.0.0.1:1", NULL, &q, ~0u, &r);
	CHECK("remote: a runner that is down is an error",
	      rc == -1 && r.status == WARD_ST_ERROR && ward_result_exit_status(&r) == WARD_EXIT_FAILED &&
		      strstr(r.error, "not reachable"));
	ward_result_free(&r);
	rc = ward_remote_run("", NULL, &q, ~0u, &r);
	CHECK("remote: no URL is an error", rc == -1 && r.status == WARD_ST_ERROR);
	ward_result_free(&r);
	rc = ward_remote_run("ftp://127.0.0.1:1", NULL, &q, ~0u, &r);
	CHECK("remote: only http(s)", rc == -1 && r.status == WARD_ST_ERROR);
	ward_result_free(&r);
}
