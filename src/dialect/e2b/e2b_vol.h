/* e2b_vol.h — E2B volumes (SPEC §18): named directories of a fixed size
 * that outlive sandboxes and runner restarts, mounted read-write into
 * sandboxes at create, read and written through E2B's volume content API.
 *
 *   e2b_volumes.c  the store under --e2b-volumes DIR (each volume an ext4
 *                  image on a loop device, src/sandbox/loopfs.c), the
 *                  management API (/volumes), create's volumeMounts
 *   e2b_volfiles.c the content API (/volumecontent/ID/{file,dir,path}),
 *                  bearer token of the volume, every path resolved inside it
 *
 * Every volume's files are owned on disk by E2B_VOLUME_UID:GID; a sandbox
 * binds the volume's root through an idmapped mount that makes that owner
 * its own user (uid 1000 inside), so sandboxes of different host uids
 * share one volume's files, and the content API reads and writes them as
 * that uid with no capability. */
#ifndef WARD_DIALECT_E2B_VOL_H
#define WARD_DIALECT_E2B_VOL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ward.h"

struct e2b;
struct ereq;

/* Below the uid slots (WARD_UID_BASE, 3000000): no sandbox runs as it. */
#define E2B_VOLUME_UID 2999999u
#define E2B_VOLUME_MOUNTS 8 /* volumeMounts of one sandbox */

/* --e2b-volumes DIR: made (0700) when missing, its volumes mounted; none
 * without the option.  0, or -1 with a message on stderr. */
int vol_start(struct e2b *e);
void vol_stop(struct e2b *e);

/* The management API (control plane, X-API-KEY): the caller's volumes. */
enum MHD_Result vol_create(struct ereq *q);
enum MHD_Result vol_list(struct ereq *q);
enum MHD_Result vol_info(struct ereq *q);
enum MHD_Result vol_delete(struct ereq *q);

/* A create body's volumeMounts for owner: binds of the volumes' roots
 * (held descriptors, closed by vol_mounts_free after the session is made). */
struct vol_mounts {
	struct ward_mount m[E2B_VOLUME_MOUNTS];
	char src[E2B_VOLUME_MOUNTS][32];
	char dst[E2B_VOLUME_MOUNTS][256];
	int fd[E2B_VOLUME_MOUNTS];
	size_t n;
};
/* 0, or the status (400: a reason per refused mount in err; 403: no
 * volumes here). */
unsigned vol_mounts_take(struct e2b *e, const char *owner, json_t *spec, struct vol_mounts *vm, char *err, size_t n);
void vol_mounts_free(struct vol_mounts *vm);

/* The volume id's root (an O_PATH descriptor of its own) when token is
 * its token (compared in constant time), its owner into owner: fd, or -1
 * (unknown, or a wrong token: one answer for both). */
int vol_open(struct e2b *e, const char *id, const char *token, char *owner, size_t on);

/* The content API, on the E2B listener, as e2b_ports.c's relay: begin
 * when the headers are in (true: q is such a request, now q->vol's), each
 * piece of the body (what it took in *n, the connection parked when less;
 * false: the server stops), the answer at its end; free on every path. */
bool vc_begin(struct ereq *q);
bool vc_feed(struct ereq *q, const char *p, size_t *n);
enum MHD_Result vc_answer(struct ereq *q);
void vc_free(struct ereq *q);

#endif
