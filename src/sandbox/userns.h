/* userns.h — who the sandbox is on the host.
 *
 * Inside, the command always runs as uid/gid 1000 ("sandbox").  On the host
 * that is: when ward runs as root, a uid of its own from the configured range
 * (WARD_UID_BASE, default 3000000, WARD_UID_COUNT slots, default 65536),
 * held for the run by an OFD lock on byte <slot> of /run/ward/uid-slots (one
 * file, however many slots are used), so that two sandboxes running at once
 * never share a host uid; a lock whose holder died is free again by
 * construction.  Run by an ordinary user, it is that
 * user's own uid.  The host uid is never 0.
 */
#ifndef WARD_USERNS_H
#define WARD_USERNS_H

#include <stddef.h>
#include <sys/types.h>

/* The sandbox user inside: the one uid (and gid) its user namespace maps. */
#define WARD_SANDBOX_UID 1000
#define WARD_SANDBOX_GID 1000

struct ward_identity {
	uid_t host_uid;
	gid_t host_gid;
	int lock_fd; /* the slot's lock, -1 when unprivileged */
	int slot;    /* -1 when unprivileged */
};

/* Take an identity for one run.  0, or -1 with err set. */
int userns_acquire(struct ward_identity *id, char *err, size_t errlen);
/* Release the slot and fds.  NULL-safe on an unset identity. */
void userns_release(struct ward_identity *id);

/* Write uid_map/gid_map (and setgroups) of the child pid: inside 1000 is
 * id->host_uid/gid.  0, or -1 with err set. */
int userns_write_maps(pid_t pid, const struct ward_identity *id, char *err, size_t errlen);

/* A user namespace fd mapping on-disk owner (uid, gid) to the sandbox's host
 * uid/gid, for idmapped binds of --workdir and rw binds when ward runs as
 * root: files the host user owns appear owned by the sandbox, and what the
 * sandbox creates is owned by the host user.  A new fd (the caller closes
 * it), or -errno. */
int userns_idmap_fd(const struct ward_identity *id, uid_t owner_uid, gid_t owner_gid);

#endif
