/* auth.c — tokens (--token-file): who a request comes from.
 *
 * Owns s->tokens: the only place that reads the token file and compares a
 * secret.  Never compares in time that depends on how much of a guess is
 * right; never leaves a secret in freed memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server/server.h"

/* Constant-time comparison: the time depends only on the length of the
 * configured secret, never on how much of it the guess got right. */
static bool secret_equal(const char *guess, size_t glen, const struct token *t)
{
	unsigned char diff = (unsigned char)(glen != t->len);
	for (size_t i = 0; i < t->len; i++) {
		unsigned char g = i < glen ? (unsigned char)guess[i] : 0;
		diff |= g ^ (unsigned char)t->secret[i];
	}
	return diff == 0;
}

/* The token whose secret is g, or NULL.  Checks every token, always. */
const struct token *token_find(struct server *s, const char *g)
{
	size_t glen = strlen(g);
	const struct token *found = NULL;
	for (size_t i = 0; i < s->ntokens; i++)
		if (secret_equal(g, glen, &s->tokens[i]))
			found = &s->tokens[i];
	return found;
}

/* The token the request carries, or NULL. */
const struct token *authorize(struct server *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	const char *g = h + 7;
	while (*g == ' ')
		g++;
	return token_find(s, g);
}

int load_tokens(struct server *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		fprintf(stderr, "ward serve: --token-file %s: %s\n", path, strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *p = line, *fields[3];
		int nf = 0;
		char *save = NULL;
		for (char *w = strtok_r(p, " \t\r\n", &save); w && nf < 3; w = strtok_r(NULL, " \t\r\n", &save))
			fields[nf++] = w;
		if (nf == 0 || fields[0][0] == '#')
			continue;
		if (nf == 3 || s->ntokens == MAX_TOKENS) {
			fprintf(stderr,
			        "ward serve: --token-file %s: each line is TOKEN or NAME TOKEN, at most %d lines\n",
			        path, MAX_TOKENS);
			rc = -1;
			break;
		}
		if (nf == 2 && strlen(fields[0]) > 64) {
			fprintf(stderr,
			        "ward serve: --token-file %s: the name '%.20s...' is longer than 64 characters; "
			        "shorten it (quotas and the log go by it)\n",
			        path, fields[0]);
			rc = -1;
			break;
		}
		struct token *t = &s->tokens[s->ntokens];
		char dflt[32];
		snprintf(dflt, sizeof(dflt), "token-%zu", s->ntokens + 1);
		t->name = strdup(nf == 2 ? fields[0] : dflt);
		t->secret = strdup(fields[nf - 1]);
		if (!t->name || !t->secret) {
			free(t->name);
			free(t->secret);
			rc = -1;
			break;
		}
		t->len = strlen(t->secret);
		s->ntokens++;
	}
	free(line);
	fclose(f);
	if (rc == 0 && s->ntokens == 0) {
		fprintf(stderr, "ward serve: --token-file %s holds no token\n", path);
		rc = -1;
	}
	return rc;
}

void tokens_free(struct server *s)
{
	for (size_t i = 0; i < s->ntokens; i++) {
		/* the secret should not linger in freed memory */
		explicit_bzero(s->tokens[i].secret, s->tokens[i].len);
		free(s->tokens[i].secret);
		free(s->tokens[i].name);
	}
}
