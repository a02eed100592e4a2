/* treecopy.h — copy a directory tree between two directory fds, bounded,
 * never following a link (treecopy.c). */
#ifndef WARD_TREECOPY_H
#define WARD_TREECOPY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a copy may take at most: bytes of regular files (their sizes), and
 * entries (files, directories, links). */
struct treecopy_limits {
	uint64_t max_bytes;
	uint64_t max_entries;
};

struct treecopy_stats {
	uint64_t bytes, files, dirs, links, skipped; /* skipped: FIFOs, sockets, devices */
};

/* Copy what directory `from` holds into directory `to` (which exists):
 * regular files (their bytes by copy_file_range, else sendfile), their
 * directories, symlinks as symlinks (never followed); FIFOs, sockets and
 * devices are skipped.  Permission bits are kept but set-uid, set-gid
 * (never on what ward writes as root); mtimes kept.  Owner: uid/gid
 * ((uid_t)-1: the copier's).  Past a limit: -EFBIG (bytes) or -EMLINK
 * (entries, or a tree deeper than 128), with err set; what was copied so
 * far stays (the caller removes it).  st may be NULL. */
int treecopy(int from, int to, uid_t uid, gid_t gid, const struct treecopy_limits *lim, struct treecopy_stats *st,
	     char *err, size_t errlen);

/* Remove name under directory fd dir and everything in it, never
 * following a link.  0 or -errno. */
int treecopy_remove(int dir, const char *name);

#endif
