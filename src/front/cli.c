/* cli.c — the `ward` command: run, serve, test, doctor.  Only translates
 * arguments into a request and the result back out; everything else is in
 * libward.  Never reaches into a sandbox: it calls ward_run(), the front
 * ends (server, test jobs, --remote) and, for ward serve's helpers,
 * spawner_helper_main(). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/plan.h"
#include "dialect/mcp/mcp_main.h"
#include "front/cli_args.h"
#include "front/dialects.h"
#include "front/doctor.h"
#include "front/frontends.h"
#include "front/judge_cli.h"
#include "image/root.h"
#include "system/spawner.h"
#include "ward.h"
#include "ward_image.h"
#include "wire/wire.h"

#ifdef WARD_LEAN
/* main's argv, set once by main: the lean build's --remote hands the whole
 * command line to ward-net from deep inside `ward run`. */
static char **g_argv;

/* The lean `ward` has no HTTP or XML code: hand the command line to
 * ward-net, found beside this binary, in ../libexec/ward beside it (an
 * installed tree, whatever PREFIX it was built with) or in LIBEXECDIR.  A
 * server also gets this binary, for its spawner helpers to exec. */
static int exec_net(char **argv, bool serve)
{
	int self_fd = serve ? open("/proc/self/exe", O_PATH) : -1;
	if (self_fd >= 0) {
		char v[16];
		snprintf(v, sizeof(v), "%d", self_fd);
		setenv(WARD_SPAWNER_EXE_ENV, v, 1);
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			strcpy(slash + 1, "ward-net");
			execv(self, argv);
			strcpy(slash + 1, "../libexec/ward/ward-net");
			execv(self, argv);
		}
	}
	execv(WARD_LIBEXECDIR "/ward-net", argv);
	fprintf(stderr,
	        "ward: cannot run ward-net (needed for serve, test, image and --remote): %s; install it beside "
	        "ward or in %s\n",
	        strerror(errno), WARD_LIBEXECDIR);
	return WARD_EXIT_FAILED;
}
#define ward_serve_main(c, v, d) exec_net((v)-1, true)
#define ward_test_main(c, v) exec_net((v)-1, false)
#define ward_session_main(c, v, t) exec_net((v)-1, false)
#define ward_image_main(c, v) exec_net((v)-1, false)
#define ward_judge_main(c, v) exec_net((v)-1, false)
#define ward_languages_main(c, v) exec_net((v)-1, false)
#define ward_mcp_main(c, v) exec_net((v)-1, false)
#define ward_remote_run(u, t, q, l, r) (exit(exec_net(g_argv, false)), -1)
#endif

/* Set by SIGTERM/SIGINT/SIGHUP during a run: the run is killed and cleaned
 * up (cgroup, uid slot), then ward dies of the same signal.  A global
 * because a signal handler has no other way to speak. */
static volatile int g_stop_signal;

static void on_stop(int sig)
{
	g_stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "ward %s — run untrusted code in a sandbox\n\n"
	        "usage: ward run [OPTIONS] -- PROGRAM [ARG...]   a command in a sandbox\n"
	        "       ward run [OPTIONS] --shell 'STRING'\n"
	        "       ward serve [OPTIONS]                     the HTTP runner service\n"
	        "       ward test JOB.json|-                     a test job; prints its report\n"
	        "       ward doctor [--json]                     what this host can enforce\n"
	        "       ward session new|exec|put|get|ls|rm ...  a runner's sessions (ward session for more)\n"
	        "       ward image import|pull|ls|inspect|rm ... the image store (ward image for more)\n"
	        "       ward judge --lang L FILE... --tests DIR  build once, run each test, verdicts (SPEC §15)\n"
	        "       ward languages [--all] [--json]          the languages this host can judge\n"
	        "       ward mcp [OPTIONS]                       an MCP server on stdin/stdout (SPEC §21)\n\n"
	        "`ward run --help` lists the options.\n",
	        WARD_VERSION);
}

static char *read_token(const char *file, char *err, size_t errlen)
{
	FILE *f = fopen(file, "re");
	if (!f) {
		snprintf(err, errlen, "--token-file '%s': %s", file, strerror(errno));
		return NULL;
	}
	/* The server's format: one "TOKEN" or "NAME TOKEN" a line, # comments;
	 * the client sends the first token, the last field of its line. */
	char buf[4096];
	char *tok = NULL;
	while (!tok && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\r\n")] = 0;
		char *p = buf + strspn(buf, " \t");
		if (!*p || *p == '#')
			continue;
		char *end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		char *last = strrchr(p, ' ');
		tok = strdup(last ? last + 1 : p);
	}
	fclose(f);
	if (!tok)
		snprintf(err, errlen, "--token-file '%s' holds no token", file);
	return tok;
}

/* Host paths on the command line may be relative to the caller's cwd:
 * make them absolute (the library takes only absolute ones).  The string
 * is kept in *keep for the run's lifetime.  0, or -1 with err set. */
static int absolutize(const char **path, char **keep, const char *what, char *err, size_t errlen)
{
	if (!*path || (*path)[0] == '/')
		return 0;
	char *abs = realpath(*path, NULL);
	if (!abs) {
		snprintf(err, errlen, "%s '%s': %s; create it or fix the path", what, *path, strerror(errno));
		return -1;
	}
	*keep = abs;
	*path = abs;
	return 0;
}

/* Host paths on the command line (--workdir, --rootfs, bind sources) made
 * absolute; the strings are kept in keep[0..CLI_MAX_LIST+2).  0, or -1
 * with err set. */
static int absolutize_paths(struct cli_run *c, char **keep, char *err, size_t errlen)
{
	if (absolutize(&c->req.workdir, &keep[0], "--workdir", err, errlen) < 0 ||
	    absolutize(&c->req.rootfs, &keep[1], "--rootfs", err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < c->req.nmounts; i++) {
		bool same = c->mounts[i].sandbox_path == c->mounts[i].host_path; /* --bind DIR */
		if (absolutize(&c->mounts[i].host_path, &keep[2 + i], "bind source", err, errlen) < 0)
			return -1;
		if (same)
			c->mounts[i].sandbox_path = c->mounts[i].host_path;
	}
	return 0;
}

/* --image: the image's root, opened (kept in *root, the image pinned until
 * the run ends); without a command, its Entrypoint and Cmd (*argv keeps
 * the vector).  0, or -1 with the message printed (exit 125). */
static int open_image(struct cli_run *c, struct ward_image_root **root, char ***argv)
{
	char err[512];
	if (ward_image_root_open(c->image_store, c->image, root, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward: --image %s: %s\n", c->image, err);
		return -1;
	}
	c->req.image = *root;
	if (c->req.argv || c->req.shell)
		return 0;
	const struct ward_image *img = ward_image_root_image(*root);
	size_t n = img->nentrypoint + img->ncmd;
	if (n == 0) {
		fprintf(stderr, "ward: --image %s names no Entrypoint or Cmd: give a command after --\n", c->image);
		return -1;
	}
	*argv = calloc(n + 1, sizeof(char *));
	if (!*argv) {
		fprintf(stderr, "ward: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < img->nentrypoint; i++)
		(*argv)[i] = img->entrypoint[i];
	for (size_t i = 0; i < img->ncmd; i++)
		(*argv)[img->nentrypoint + i] = img->cmd[i];
	c->req.argv = *argv;
	return 0;
}

/* --print-plan: the exit status.  On an image, the plan of the request
 * as it runs there (its root applied). */
static int print_plan(const struct cli_run *c)
{
	char err[512];
	struct plan p;
	struct ward_request q;
	char **env = NULL;
	if (image_root_apply(&c->req, &q, &env, err, sizeof(err)) < 0 ||
	    plan_build(&p, &q, geteuid(), err, sizeof(err)) < 0) {
		fprintf(stderr, "ward: %s\n", err);
		free(env);
		return WARD_EXIT_FAILED;
	}
	free(env);
	plan_print(&p, stdout);
	plan_free(&p);
	return 0;
}

/* --stdin FILE|-: ward's own stdin, or FILE opened into *fd.  0, or -1
 * with the message printed. */
static int open_stdin(struct cli_run *c, int *fd)
{
	if (!c->stdin_path)
		return 0;
	if (!strcmp(c->stdin_path, "-")) {
		c->req.stdin_fd = 0;
		return 0;
	}
	*fd = open(c->stdin_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0) {
		fprintf(stderr, "ward: --stdin '%s': %s\n", c->stdin_path, strerror(errno));
		return -1;
	}
	c->req.stdin_fd = *fd;
	return 0;
}

/* SIGTERM, SIGINT and SIGHUP cancel the run (ward_request.cancel). */
static void catch_stop_signals(struct ward_request *req)
{
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	req->cancel = &g_stop_signal;
}

/* Run the request here, or on the --remote runner with the token of
 * --token-file or $WARD_RUNNER_TOKEN (*token keeps it).  As ward_run():
 * 0, or -1 with res->error set; -2 with nothing run when the token file
 * could not be read (the message printed). */
static int run_request(struct cli_run *c, char **token, struct ward_result *res)
{
	if (!c->remote) {
		/* A --net none sandbox takes a network namespace an earlier run
		 * left proven untouched, and leaves its own so (ward.h). */
		const char *share = getenv("WARD_NETNS_SHARE");
		if (c->req.net == WARD_NET_NONE && !(share && strcmp(share, "0") == 0))
			ward_netns_share(WARD_NETNS_SHARED);
		return ward_run(&c->req, res);
	}
	char err[512];
	if (c->token_file) {
		*token = read_token(c->token_file, err, sizeof(err));
		if (!*token) {
			fprintf(stderr, "ward: %s\n", err);
			return -2;
		}
	} else if (getenv("WARD_RUNNER_TOKEN"))
		*token = strdup(getenv("WARD_RUNNER_TOKEN"));
	return ward_remote_run(c->remote, *token, &c->req, c->limits_given, res);
}

/* The result out (--json: one object on stdout), and the exit status. */
static int report_result(const struct cli_run *c, int r, struct ward_result *res)
{
	cli_write_collected(c, res);
	if (c->json) {
		/* streamed: no copy of the output, however much it is; the
		 * collected files listed (path, size, mode), their bytes being
		 * in --collect-dir */
		fflush(stdout);
		(void)ward_result_to_json_fd_files(res, false, 1);
	}
	if (r < 0 || res->status == WARD_ST_ERROR)
		fprintf(stderr, "ward: %s\n", res->error);
	fflush(stdout);
	int rc = ward_result_exit_status(res);
	ward_result_free(res);
	return rc;
}

static int cmd_run(int argc, char **argv)
{
	struct cli_run c;
	char err[512];
	if (cli_parse_run(argc, argv, &c, err, sizeof(err)) < 0) {
		cli_run_free(&c);
		if (!strcmp(err, "help")) {
			cli_print_run_help(stdout);
			return 0;
		}
		fprintf(stderr, "ward: %s\n", err);
		return WARD_EXIT_FAILED;
	}
	int rc = WARD_EXIT_FAILED;
	int stdin_fd = -1;
	char *token = NULL;
	struct ward_image_root *root = NULL;
	char **img_argv = NULL;
	char *abs_keep[CLI_MAX_LIST + 2] = {0};
	if (absolutize_paths(&c, abs_keep, err, sizeof(err)) < 0) {
		fprintf(stderr, "ward: %s\n", err);
		goto out;
	}
	if (c.image && c.remote && !c.req.argv && !c.req.shell) {
		fprintf(stderr, "ward: --image with --remote: give a command (a runner runs only the command it is "
		                "given on an image)\n");
		goto out;
	}
	if (c.image && !c.remote && open_image(&c, &root, &img_argv) < 0)
		goto out;
	if (c.print_plan) {
		rc = print_plan(&c);
		goto out;
	}
	if (open_stdin(&c, &stdin_fd) < 0)
		goto out;
	catch_stop_signals(&c.req);
	ward_cgroup_slots(true); /* one sandbox in this process: its cgroup kept for the next `ward run` */
	struct ward_result res;
	int r = run_request(&c, &token, &res);
	if (r == -2)
		goto out;
	rc = report_result(&c, r, &res);
	if (g_stop_signal) {
		/* die of the signal we were sent, as a shell expects */
		int sig = g_stop_signal;
		cli_run_free(&c);
		signal(sig, SIG_DFL);
		raise(sig);
		rc = 128 + sig;
	}
out:
	for (size_t i = 0; i < CLI_MAX_LIST + 2; i++)
		free(abs_keep[i]);
	if (stdin_fd >= 0)
		close(stdin_fd);
	free(token);
	free(img_argv);
	cli_run_free(&c);
	ward_image_root_close(root);
	return rc;
}

static int cmd_doctor(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else {
			fprintf(stderr, "ward doctor: unknown option '%s' (use --json or nothing)\n", argv[i]);
			return WARD_EXIT_FAILED;
		}
	}
	struct doctor_report d;
	doctor_run(&d);
	if (json) {
		char *s = doctor_to_json(&d);
		puts(s ? s : "{}");
		free(s);
	} else {
		printf("ward %s doctor\n", WARD_VERSION);
		for (int i = 0; i < d.n; i++)
			printf("  %-12s %-4s %s\n", d.items[i].name, d.items[i].ok ? "ok" : "no", d.items[i].detail);
		printf("isolation 'system': %s\n", d.system_ok ? "available" : "NOT available");
	}
	return d.system_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
#ifdef WARD_LEAN
	g_argv = argv;
#endif
	if (argc == 2 && !strcmp(argv[1], WARD_SPAWNER_ARG))
		return spawner_helper_main();
	/* A closed reader must not kill ward with SIGPIPE mid-run. */
	signal(SIGPIPE, SIG_IGN);
	/* Started with 0, 1 or 2 closed, ward's own pipes and sockets would
	 * land there and be taken for the caller's stdio (`--stdin -`, a
	 * server's log): /dev/null stands in. */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) != fd)
			return WARD_EXIT_FAILED;
	if (argc < 2) {
		usage(stderr);
		return WARD_EXIT_FAILED;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "doctor"))
		return cmd_doctor(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return ward_serve_main(argc - 1, argv + 1, ward_dialects);
	if (!strcmp(cmd, "test"))
		return ward_test_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "session"))
		return ward_session_main(argc - 1, argv + 1, read_token);
	if (!strcmp(cmd, "image"))
		return ward_image_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "judge"))
		return ward_judge_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "languages"))
		return ward_languages_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "mcp"))
		return ward_mcp_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("ward %s\n", WARD_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "ward: unknown command '%s'\n", cmd);
	usage(stderr);
	return WARD_EXIT_FAILED;
}
