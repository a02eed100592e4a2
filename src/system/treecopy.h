/* treecopy.h — copy a directory tree between two directory fds, bounded,
 * never following a link, never crossing a mount (treecopy.c). */
#ifndef WARD_TREECOPY_H
#define WARD_TREECOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whose rights a side of the copy is read or written with: fsuid uid and
 * fsgid gid, with the effective capabilities raised from the permitted
 * set (caps) or with none (a sandbox's user reading its own files: what
 * it could not read is not read). */
struct treecopy_side {
	uid_t uid;
	gid_t gid;
	bool caps;
};

/* What a copy may take at most: bytes of regular files' data (holes are
 * kept as holes and cost nothing), and entries (files, directories,
 * links); and with whose rights each side is used. */
struct treecopy_limits {
	uint64_t max_bytes;
	uint64_t max_entries;
	struct treecopy_side from, to;
};

struct treecopy_stats {
	uint64_t bytes, files, dirs, links, skipped; /* skipped: FIFOs, sockets, devices, mounts */
};

/* Copy what directory `from` holds into directory `to` (which exists):
 * regular files (their data by copy_file_range, else sendfile, holes kept
 * by SEEK_DATA/SEEK_HOLE), their directories, symlinks as symlinks (never
 * followed); FIFOs, sockets, devices and whatever is on another mount
 * than `from` (a mount point: openat2's RESOLVE_NO_XDEV at every step)
 * are skipped.  Permission bits are kept but set-uid, set-gid (never on
 * what ward writes as root); mtimes kept.  Owner: uid/gid ((uid_t)-1: the
 * copier's).  Source steps run as lim->from, destination steps as lim->to
 * (the calling thread's fsuid, fsgid and capabilities change: call it in
 * a process of its own, session_copy.c).  Past a limit: -EFBIG (bytes) or
 * -EMLINK (entries, or a tree deeper than 128), with err set; what was
 * copied so far stays (the caller removes it).  st may be NULL. */
int treecopy(int from, int to, uid_t uid, gid_t gid, const struct treecopy_limits *lim, struct treecopy_stats *st,
             char *err, size_t errlen);

/* Remove name under directory fd dir and everything in it, never
 * following a link.  0 or -errno. */
int treecopy_remove(int dir, const char *name);

#endif
