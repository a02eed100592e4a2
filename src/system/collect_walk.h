/* collect_walk.h — files out (SPEC §12), the sandbox's side: match the
 * request's globs against /work and send the files they take down a
 * descriptor as frames; and the host's side (collect.c): those frames back
 * into a result's files.
 *
 * The walker runs inside the sandbox (a one-shot run's PID 1 once every
 * process of the command has gone, a session's file worker as the sandbox
 * user): in its mount namespace, from its /work, one directory fd at a
 * time, never through a symlink (fstatat AT_SYMLINK_NOFOLLOW, openat
 * O_NOFOLLOW), never opening anything but a directory or a regular file
 * (O_NONBLOCK, then fstat on the fd: a FIFO swapped in is never read).  It
 * allocates nothing (PID 1 is a clone of a multi-threaded process): its
 * buffers are one anonymous mapping.  Everything is bounded: files, bytes,
 * entries walked and depth.
 *
 * Frames (host byte order: both ends are the same binary): per file a
 * struct collect_frame with kind 'F', then path_len bytes of path, then size
 * bytes of content; last a frame with kind 'E' (flags: COLLECT_TRUNCATED).
 * A stream without its 'E' frame was cut short: what came whole is kept and
 * the list counts as truncated. */
#ifndef WARD_COLLECT_WALK_H
#define WARD_COLLECT_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ward.h"

/* Entries (of any type) the walk looks at, and directories deep it goes. */
#define COLLECT_MAX_ENTRIES 100000u
#define COLLECT_MAX_DEPTH 32

enum { COLLECT_TRUNCATED = 1 };

struct collect_frame {
	uint32_t kind;     /* 'F' a file, 'E' the end */
	uint32_t path_len; /* 'F': bytes of path that follow, < PATH_MAX */
	uint32_t mode;     /* 'F': permission bits */
	uint32_t flags;    /* 'E': COLLECT_TRUNCATED */
	uint64_t size;     /* 'F': bytes of content after the path */
};

/* glob (glen bytes, no trailing '/') against a path relative to /work
 * (plen bytes): '*' any run of characters but '/', '?' one, '[abc]',
 * '[a-z]', '[!x]' a class, '\' quotes the next character, and a component
 * that is exactly "**" any number of components (zero included).  Pure:
 * no syscall, bounded steps. */
bool collect_glob_match(const char *glob, size_t glen, const char *path, size_t plen);

/* Could a path below directory dir (dlen bytes, relative) match glob? */
bool collect_glob_may_descend(const char *glob, size_t glen, const char *dir, size_t dlen);

/* Walk the directory workfd (/work) for globs (NULL-terminated) and write
 * the frames to out, the 'E' frame last.  Only syscalls.  0, or -errno when
 * writing to out failed (the reader went away) or the buffers could not be
 * mapped (then nothing was written). */
int collect_walk(int workfd, const char *const *globs, uint32_t max_files, uint64_t max_bytes, int out);

/* The host's side (collect.c): the frames in buf[0..len) into res->files,
 * res->nfiles and res->files_truncated (an incomplete stream sets it).
 * At most max_files files and max_bytes of content are taken whatever the
 * frames say.  0, or -ENOMEM. */
int collect_decode(const void *buf, size_t len, uint32_t max_files, uint64_t max_bytes, struct ward_result *res);

/* The most bytes the frames of one walk can take: what collect_decode's
 * reader must accept. */
uint64_t collect_stream_bound(uint32_t max_files, uint64_t max_bytes);

#endif
