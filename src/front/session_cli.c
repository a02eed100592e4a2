/* session_cli.c — `ward session new|exec|put|get|ls|rm` (SPEC §11): the
 * calls of a ward serve runner's sessions, from a shell.  Each translates
 * its arguments into one HTTP call (remote_call) and the answer back out;
 * exec takes ward run's per-run options (cli_parse_run) and exits as ward
 * run does.  A session that does not exist, or is not the caller's, is exit
 * 125 with a message.
 *
 * Owns nothing beyond one call.  Never runs anything locally. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/request.h"
#include "front/cli_args.h"
#include "front/frontends.h"
#include "front/remote.h"
#include "wire/wire.h"

#define PUT_MAX (1u << 30)

struct scli {
	const char *url, *token_file;
	char *token;
	char err[600];
};

static int usage(void)
{
	fprintf(stderr,
	        "usage: ward session new [--memory MB] [--pids N] [--ttl S] [--idle S] [--net none|loopback|allow] "
	        "[--allow-host H]... [--env K=V]...\n"
	        "       ward session exec ID [OPTIONS] -- PROGRAM [ARG...]   (or --shell 'STRING'; OPTIONS as ward "
	        "run's)\n"
	        "       ward session put ID LOCALFILE PATH\n"
	        "       ward session get ID PATH [LOCALFILE]\n"
	        "       ward session ls [--json]\n"
	        "       ward session rm ID\n"
	        "Each takes --remote URL (default $WARD_RUNNER_URL) and --token-file FILE (default "
	        "$WARD_RUNNER_TOKEN) before its arguments.\n");
	return WARD_EXIT_FAILED;
}

/* --remote and --token-file wherever they are (taken out of argv). */
static int take_common(struct scli *c, int *argc, char **argv, ward_token_reader *read_token)
{
	c->url = getenv("WARD_RUNNER_URL");
	int k = 0;
	for (int i = 0; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[k++] = argv[i++];
			break;
		}
		if ((!strcmp(argv[i], "--remote") || !strcmp(argv[i], "--token-file")) && i + 1 < *argc) {
			if (argv[i][2] == 'r')
				c->url = argv[i + 1];
			else
				c->token_file = argv[i + 1];
			i++;
			continue;
		}
		argv[k++] = argv[i];
	}
	*argc = k;
	argv[k] = NULL;
	if (!c->url || !*c->url) {
		fprintf(stderr, "ward session: no runner: give --remote URL or set WARD_RUNNER_URL\n");
		return -1;
	}
	if (c->token_file) {
		c->token = read_token(c->token_file, c->err, sizeof(c->err));
		if (!c->token) {
			fprintf(stderr, "ward session: %s\n", c->err);
			return -1;
		}
	} else if (getenv("WARD_RUNNER_TOKEN"))
		c->token = strdup(getenv("WARD_RUNNER_TOKEN"));
	return 0;
}

/* An id as a path part: the runner's alphabet only (NODEID "." hex). */
static bool id_ok(const char *id)
{
	if (!*id || strlen(id) > 99)
		return false;
	for (const char *p = id; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", *p))
			return false;
	return true;
}

/* One call; the answer's code.  -1 with a message printed when the runner
 * cannot be reached; for codes other than want, the message printed (a
 * missing session named) and -1. */
static long call(struct scli *c, const char *method, const char *path, const void *body, size_t len, double t,
                 long want, char **ans, size_t *alen)
{
	struct remote_call rc = {c->url, c->token, method, path, body, len, t};
	long code;
	if (remote_call(&rc, &code, ans, alen, c->err, sizeof(c->err)) < 0) {
		fprintf(stderr, "ward session: %s\n", c->err);
		return -1;
	}
	if (code == want)
		return code;
	char msg[400] = "";
	ward_error_from_json(*ans, *alen, msg, sizeof(msg));
	if (code == 404 && strstr(msg, "no such session"))
		fprintf(stderr,
		        "ward session: no such session on %s: it does not exist, has expired, was deleted or "
		        "is another client's\n",
		        c->url);
	else
		fprintf(stderr, "ward session: the runner at %s refused (HTTP %ld)%s%s\n", c->url, code,
		        msg[0] ? ": " : "", msg);
	free(*ans);
	*ans = NULL;
	return -1;
}

/* "id" of a JSON answer (the new session's). */
static void answer_id(const char *ans, char *id, size_t n)
{
	const char *p = strstr(ans, "\"id\":\"");
	id[0] = 0;
	if (p) {
		p += 6;
		size_t k = strcspn(p, "\"");
		snprintf(id, n, "%.*s", (int)(k < n ? k : n - 1), p);
	}
}

/* --ttl, --idle, --work-size out of argv, into the JSON members extra. */
static int take_session_opts(int *argc, char **argv, char *extra, size_t n)
{
	static const char *const names[][2] = {{"--ttl", "ttl_s"}, {"--idle", "idle_s"}};
	extra[0] = 0;
	int k = 0;
	for (int i = 0; i < *argc; i++) {
		int which = -1;
		for (int j = 0; j < 2; j++)
			if (!strcmp(argv[i], names[j][0]))
				which = j;
		if (which < 0) {
			argv[k++] = argv[i];
			continue;
		}
		double d;
		if (i + 1 >= *argc || parse_seconds(argv[i + 1], &d) < 0 || d <= 0) {
			fprintf(stderr, "ward session new: %s needs seconds, more than 0\n", names[which][0]);
			return -1;
		}
		size_t l = strlen(extra);
		snprintf(extra + l, n - l, ",\"%s\":%.3f", names[which][1], d);
		i++;
	}
	*argc = k;
	argv[k] = NULL;
	return 0;
}

static int cmd_new(struct scli *c, int argc, char **argv)
{
	char extra[128];
	if (take_session_opts(&argc, argv, extra, sizeof(extra)) < 0)
		return WARD_EXIT_FAILED;
	/* ward run's options, with a command for its parser (the runner drops it) */
	char **av = calloc((size_t)argc + 3, sizeof(char *));
	if (!av)
		return WARD_EXIT_FAILED;
	for (int i = 0; i < argc; i++)
		av[i] = argv[i];
	av[argc] = "--shell";
	av[argc + 1] = "true";
	struct cli_run r;
	int rc = WARD_EXIT_FAILED;
	char *body = NULL, *ans = NULL, *full = NULL;
	size_t alen;
	if (cli_parse_run(argc + 2, av, &r, c->err, sizeof(c->err)) < 0) {
		fprintf(stderr, "ward session new: %s\n", c->err);
		goto out;
	}
	body = ward_request_to_json_given(&r.req, r.limits_given, c->err, sizeof(c->err));
	size_t bl = body ? strlen(body) : 0;
	if (!body || bl < 2 || asprintf(&full, "%.*s%s}", (int)(bl - 1), body, extra) < 0) {
		full = NULL;
		fprintf(stderr, "ward session new: %s\n", body ? "out of memory" : c->err);
		goto out;
	}
	if (call(c, "POST", "/sessions", full, strlen(full), 60, 201, &ans, &alen) < 0)
		goto out;
	char id[128];
	answer_id(ans, id, sizeof(id));
	printf("%s\n", id);
	rc = id[0] ? 0 : WARD_EXIT_FAILED;
out:
	cli_run_free(&r);
	free(av);
	free(body);
	free(full);
	free(ans);
	return rc;
}

/* A local file ("-": stdin) read whole, at most max bytes.  0, or -1 with
 * a message printed. */
static int read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ward session: '%s': %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 65536, n = 0;
	char *p = malloc(cap);
	for (;;) {
		if (p && n == cap) {
			char *q = cap <= max ? realloc(p, cap * 2) : NULL;
			if (!q) {
				free(p);
				p = NULL;
			} else
				cap *= 2;
		}
		if (!p)
			break;
		ssize_t k = read(fd, p + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k < 0) {
				free(p);
				p = NULL;
			}
			break;
		}
		n += (size_t)k;
	}
	int e = errno;
	if (fd > 0)
		close(fd);
	if (!p || n > max) {
		fprintf(stderr, "ward session: '%s': %s\n", path, n > max ? "too large" : strerror(e));
		free(p);
		return -1;
	}
	*out = p;
	*len = n;
	return 0;
}

static int cmd_exec(struct scli *c, int argc, char **argv)
{
	if (argc < 2 || !id_ok(argv[1]))
		return usage();
	const char *id = argv[1];
	argv[1] = "run";
	struct cli_run r;
	int rc = WARD_EXIT_FAILED;
	char *input = NULL, *endpoint = NULL, path[160];
	size_t inlen = 0;
	if (cli_parse_run(argc - 1, argv + 1, &r, c->err, sizeof(c->err)) < 0) {
		fprintf(stderr, "ward session exec: %s\n", c->err);
		goto out;
	}
	if (r.stdin_path) {
		if (read_file(r.stdin_path, WARD_MAX_STDIN_BYTES, &input, &inlen) < 0)
			goto out;
		r.req.stdin_set = true;
		r.req.stdin_data = (unsigned char *)input;
		r.req.stdin_len = inlen;
	}
	/* the output streams live (SPEC §12), as ward run --remote's; --json
	 * captures it for the one object */
	snprintf(path, sizeof(path), "/sessions/%s/exec", id);
	if (!(endpoint = remote_url_join(c->url, path))) {
		fprintf(stderr, "ward session exec: out of memory\n");
		goto out;
	}
	struct ward_result res;
	int er = remote_exec_at(endpoint, c->token, &r.req, r.limits_given, &res);
	cli_write_collected(&r, &res);
	if (r.json && er == 0)
		(void)ward_result_to_json_fd_files(&res, false, 1);
	if (er < 0 || res.status == WARD_ST_ERROR)
		fprintf(stderr, "ward session exec: %s\n", res.error);
	rc = er < 0 ? WARD_EXIT_FAILED : ward_result_exit_status(&res);
	ward_result_free(&res);
out:
	cli_run_free(&r);
	free(endpoint);
	free(input);
	return rc;
}

/* A PATH relative to /work as the URL's path part: each byte but
 * [A-Za-z0-9/._-] percent-encoded. */
static int files_path(char *out, size_t n, const char *id, const char *path)
{
	int k = snprintf(out, n, "/sessions/%s/files/", id);
	for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < (int)n; p++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-", *p))
			out[k++] = (char)*p;
		else
			k += snprintf(out + k, n - (size_t)k, "%%%02X", *p);
	}
	out[k] = 0;
	return k + 4 < (int)n ? 0 : -1;
}

static int cmd_put(struct scli *c, int argc, char **argv)
{
	if (argc != 4 || !id_ok(argv[1]))
		return usage();
	char path[8192], *data = NULL, *ans = NULL;
	size_t len, alen;
	if (files_path(path, sizeof(path), argv[1], argv[3]) < 0 || read_file(argv[2], PUT_MAX, &data, &len) < 0) {
		free(data);
		return WARD_EXIT_FAILED;
	}
	struct stat st;
	if (strcmp(argv[2], "-") != 0 && stat(argv[2], &st) == 0 && (st.st_mode & 0111)) {
		size_t l = strlen(path);
		snprintf(path + l, sizeof(path) - l, "?mode=0%o", st.st_mode & 0777);
	}
	long code = call(c, "PUT", path, data, len, 60, 201, &ans, &alen);
	free(data);
	free(ans);
	return code < 0 ? WARD_EXIT_FAILED : 0;
}

static int cmd_get(struct scli *c, int argc, char **argv)
{
	if ((argc != 3 && argc != 4) || !id_ok(argv[1]))
		return usage();
	char path[8192], *ans = NULL;
	size_t alen;
	if (files_path(path, sizeof(path), argv[1], argv[2]) < 0 ||
	    call(c, "GET", path, NULL, 0, 60, 200, &ans, &alen) < 0)
		return WARD_EXIT_FAILED;
	int fd = argc == 4 ? open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
	if (fd < 0) {
		fprintf(stderr, "ward session get: '%s': %s\n", argv[3], strerror(errno));
		free(ans);
		return WARD_EXIT_FAILED;
	}
	remote_write_all(fd, ans, alen);
	if (fd > 1)
		close(fd);
	free(ans);
	return 0;
}

static int cmd_ls(struct scli *c, int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	if (argc > 2 || (argc == 2 && !json))
		return usage();
	char *ans = NULL;
	size_t alen;
	if (call(c, "GET", "/sessions", NULL, 0, 60, 200, &ans, &alen) < 0)
		return WARD_EXIT_FAILED;
	if (json)
		printf("%s\n", ans);
	else
		/* each session object's "id", one a line */
		for (const char *p = ans; (p = strstr(p, "\"id\":\"")); p += 6) {
			char id[128];
			answer_id(p, id, sizeof(id));
			printf("%s\n", id);
		}
	free(ans);
	return 0;
}

static int cmd_rm(struct scli *c, int argc, char **argv)
{
	if (argc != 2 || !id_ok(argv[1]))
		return usage();
	char path[160], *ans = NULL;
	size_t alen;
	snprintf(path, sizeof(path), "/sessions/%s", argv[1]);
	long code = call(c, "DELETE", path, NULL, 0, 60, 204, &ans, &alen);
	free(ans);
	return code < 0 ? WARD_EXIT_FAILED : 0;
}

int ward_session_main(int argc, char **argv, ward_token_reader *read_token)
{
	static const struct {
		const char *name;
		int (*fn)(struct scli *, int, char **);
	} cmds[] = {{"new", cmd_new}, {"exec", cmd_exec}, {"put", cmd_put},
	            {"get", cmd_get}, {"ls", cmd_ls},     {"rm", cmd_rm}};
	if (argc < 2)
		return usage();
	argc--;
	argv++; /* argv[0] = the subcommand */
	struct scli c = {0};
	if (take_common(&c, &argc, argv, read_token) < 0)
		return WARD_EXIT_FAILED;
	int rc = -1;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[0], cmds[i].name))
			rc = cmds[i].fn(&c, argc, argv);
	if (rc == -1) {
		fprintf(stderr, "ward session: unknown command '%s'\n", argv[0]);
		rc = usage();
	}
	if (c.token) {
		explicit_bzero(c.token, strlen(c.token));
		free(c.token);
	}
	return rc;
}
