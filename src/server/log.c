/* log.c — ward serve's log (--log, default stderr): one JSON object a line,
 * request lines and server events, from any thread; and the clock the
 * server measures with.
 *
 * Owns s->log_fd and s->log_lock: the only place that opens, writes or
 * reopens the log.  Never writes a line in more than one write(), so that
 * lines from several threads never mix; never blocks on anything but the
 * log's own lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/server.h"

double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rfc3339(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

void log_write(struct server *s, const struct ward_log_entry *e)
{
	char *line = ward_log_to_json(e);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n'; /* replaces the NUL: write() takes the length */
	pthread_mutex_lock(&s->log_lock);
	/* one write per line, so that lines from several threads never mix */
	ssize_t w = write(s->log_fd, line, n + 1);
	(void)w;
	pthread_mutex_unlock(&s->log_lock);
	free(line);
}

void log_event(struct server *s, const char *event, const char *fmt, ...)
{
	char t[40], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rfc3339(t, sizeof(t));
	struct ward_log_entry e = {.time = t, .event = event, .message = msg};
	log_write(s, &e);
}

/* MHD's own messages (a client closed mid-request, a socket error) go into
 * the log as events, so that the log stays one JSON object a line. */
void log_mhd(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = 0;
	log_event(cls, "http", "%s", msg);
}

static int open_log(const char *path)
{
	if (!path)
		return fcntl(2, F_DUPFD_CLOEXEC, 3);
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

/* Open --log (or a copy of stderr) at start-up; -1 with a message. */
int log_start(struct server *s)
{
	s->log_fd = open_log(s->o.log_path);
	if (s->log_fd < 0) {
		fprintf(stderr, "ward serve: --log %s: %s\n", s->o.log_path ? s->o.log_path : "(stderr)",
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* SIGHUP: reopen --log (after a rotation); on failure the old one stays. */
void log_reopen(struct server *s)
{
	int fd = open_log(s->o.log_path);
	if (fd >= 0) {
		pthread_mutex_lock(&s->log_lock);
		close(s->log_fd);
		s->log_fd = fd;
		pthread_mutex_unlock(&s->log_lock);
		log_event(s, "log-reopened", "%s", s->o.log_path ? s->o.log_path : "stderr");
	} else
		log_event(s, "log-reopen-failed", "%s: %s", s->o.log_path, strerror(errno));
}
