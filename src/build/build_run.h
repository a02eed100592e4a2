/* build_run.h — one RUN of `ward image build` (SPEC §19) in a sandbox of
 * its own: the image so far, read-only and idmapped, under a writable layer
 * that is kept for the builder to read (build_run.c). */
#ifndef WARD_IMAGE_BUILD_RUN_H
#define WARD_IMAGE_BUILD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ward_request;

/* A build's users: 0..65535 inside, BUILD_UID_BASE + 65536 * slot on the
 * host (a slot of its own while it runs, never a sandbox's range). */
#define BUILD_UID_BASE 0x40000000u
#define BUILD_UID_SLOTS 256u
#define BUILD_UID_COUNT 65536u

struct build_ids {
	unsigned base; /* host uid (and gid) of the build's root */
	int lock_fd;
};
int build_ids_acquire(struct build_ids *ids, char *err, size_t errlen);
void build_ids_release(struct build_ids *ids);

struct build_run {
	char *const *layers; /* layer directories, bottom first (owners: the build's, unshifted) */
	size_t nlayers;
	char *const *argv;   /* the command (exec form, or SHELL + the command) */
	char *const *env;    /* "K=V", NULL-ended */
	const char *workdir; /* absolute, made when missing */
	const char *user;    /* "uid[:gid]" or a name of the image's /etc/passwd; NULL: root */
	uint64_t memory_bytes;
	uint64_t layer_bytes; /* the writable layer's size */
	double timeout_s;
	uint32_t pids;
	int out_fd;                        /* the step's output, live (-1: kept only) */
	const struct ward_request *egress; /* --net allow: the proxy's allow-list and pins (NULL: no network) */
	const struct build_ids *ids;
};

struct build_run_result {
	int status;      /* the exit code, or 128 + the signal */
	bool timed_out;  /* killed at timeout_s */
	bool oom;        /* the memory limit was hit */
	char tail[4096]; /* the output's last bytes */
	size_t ntail;
	int tmpfs_fd; /* the writable layer's tmpfs: "upper" in it; close it */
};

/* Runs r; 0 with res filled (whatever the command's status), or -1 with
 * err when the sandbox could not be made. */
int build_run_step(const struct build_run *r, struct build_run_result *res, char *err, size_t errlen);

#endif
