/* One program, many hostile behaviours, picked by the first word of stdin. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	char w[32] = "";
	if (scanf("%31s", w) != 1)
		return 2;
	if (!strcmp(w, "forkbomb")) {
		for (;;)
			fork();
	} else if (!strcmp(w, "disk")) {
		FILE *f = fopen("/work/fill", "w");
		static char buf[1 << 16];
		for (;;)
			if (fwrite(buf, 1, sizeof(buf), f) != sizeof(buf) || fflush(f) != 0)
				return 1;
	} else if (!strcmp(w, "print")) {
		for (;;)
			fputs("spam spam spam spam spam spam spam spam\n", stdout);
	} else if (!strcmp(w, "sleep")) {
		sleep(100);
	} else if (!strcmp(w, "spin")) {
		for (volatile unsigned long i = 0;; i++)
			;
	} else if (!strcmp(w, "alloc")) {
		for (;;) {
			char *p = malloc(1 << 20);
			if (!p)
				return 3;
			memset(p, 1, 1 << 20);
		}
	} else if (!strcmp(w, "daemon")) {
		if (fork() == 0) {
			setsid();
			if (fork() == 0) {
				FILE *f = fopen("/tmp/daemon-was-here", "w");
				if (f)
					fclose(f);
				execl("/bin/sleep", "sleep", "4242", (char *)0);
			}
			_exit(0);
		}
		puts("ok");
		return 0;
	} else if (!strcmp(w, "look")) {
		/* nothing of an earlier test may be here */
		if (access("/work/fill", F_OK) == 0 || access("/tmp/daemon-was-here", F_OK) == 0)
			puts("leftover");
		else
			puts("clean");
		return 0;
	} else if (!strcmp(w, "segv")) {
		raise(SIGSEGV);
	} else if (!strcmp(w, "exit3")) {
		return 3;
	}
	int a, b;
	if (sscanf(w, "%d", &a) == 1 && scanf("%d", &b) == 1)
		printf("%d\n", a + b);
	return 0;
}
