/* libcurl.h — libcurl's entry points, loaded (dlopen) on first use: ward
 * run --remote (src/front/remote.c) and Judge0's callbacks
 * (src/dialect/judge0/judge0_callback.c).  Not linked: it drags in
 * OpenSSL, Kerberos, LDAP and more, a few MB of every `ward serve`'s memory
 * and of every ward-net start, for paths most runs never take. */
#ifndef WARD_SERVER_LIBCURL_H
#define WARD_SERVER_LIBCURL_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

struct libcurl {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	void (*easy_cleanup)(CURL *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};

/* The entry points, loaded and curl_global_init'ed once per process (thread
 * safe); NULL when libcurl.so.4 is missing or its initialisation failed. */
const struct libcurl *libcurl_load(void);

#endif
