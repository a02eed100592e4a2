/* loopfs.h — a directory of a fixed size: an ext4 file system in a sparse
 * image file, attached through a loop device and mounted (loopfs.c).
 * What is written into it can never exceed the image's size (ENOSPC), and
 * nothing in it is a host file: a hard link made inside points only at
 * what is inside.  Needs root, /dev/loop-control and mke2fs (e2fsprogs).
 * Host side only, as root; knows nothing of who uses it. */
#ifndef WARD_LOOPFS_H
#define WARD_LOOPFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The image at path (which must not exist), bytes long, sparse, made an
 * ext4 file system whose root directory is owned by uid:gid (mode 0755),
 * with no blocks reserved for root (its lost+found, root's, is the
 * caller's to remove at the first mount).  0, or -1 with err set (path then
 * removed). */
int loopfs_make(const char *path, uint64_t bytes, uid_t uid, gid_t gid, char *err, size_t errlen);

/* Attach the image at path to a free loop device (cleared by the kernel
 * when its last mount goes) and mount it at
 * dir (nosuid, nodev; discard: space freed inside is freed in the image).
 * When dir is a mount already (left by an earlier run that ended without
 * unmounting), it is kept as it is: the same file system is never mounted
 * twice.  0, or -1 with err set. */
int loopfs_mount(const char *path, const char *dir, char *err, size_t errlen);

/* Unmount dir: detach (lazy: mounts cloned from it live on, e.g. in the
 * sandboxes that bound it) or, without detach, trimmed first (its free
 * blocks holes in the image) and only when nothing holds it (else it
 * stays mounted, and the next loopfs_mount keeps it).  0 or -errno. */
int loopfs_umount(const char *dir, int detach);

#endif
