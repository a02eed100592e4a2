/* libcurl.c — libcurl loaded on first use (libcurl.h). */
#define _GNU_SOURCE
#include "server/libcurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* Process-wide because the library is: filled once (under once) and
 * read-only after. */
static struct libcurl lc;
static const struct libcurl *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	struct {
		void **slot;
		const char *name;
	} syms[] = {
		{(void **)&lc.global_init, "curl_global_init"},
		{(void **)&lc.easy_init, "curl_easy_init"},
		{(void **)&lc.easy_setopt, "curl_easy_setopt"},
		{(void **)&lc.easy_perform, "curl_easy_perform"},
		{(void **)&lc.easy_getinfo, "curl_easy_getinfo"},
		{(void **)&lc.easy_strerror, "curl_easy_strerror"},
		{(void **)&lc.easy_cleanup, "curl_easy_cleanup"},
		{(void **)&lc.slist_append, "curl_slist_append"},
		{(void **)&lc.slist_free_all, "curl_slist_free_all"},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].slot = dlsym(h, syms[i].name)))
			return; /* the handle stays: nothing is unloaded in a process */
	if (lc.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
		loaded = &lc;
}

const struct libcurl *libcurl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
