/* overlay.h — a read-only overlayfs of directories, as a detached mount:
 * an image's layers merged into one tree that a sandbox's plan binds from
 * ("/proc/self/fd/N"), with no mount point on the host. */
#ifndef WARD_OVERLAY_H
#define WARD_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

/* The directories dirs[0..n) merged, dirs[n-1] on top, read-only, nosuid,
 * nodev: *fd is the mount's (O_CLOEXEC; close it to let it go).  One
 * directory is cloned as it is.  Needs CAP_SYS_ADMIN (ward as root).
 * 0, or -1 with err set (what failed and the fix). */
int overlay_open_ro(char *const *dirs, size_t n, int *fd, char *err, size_t errlen);

/* A session's writable root: dirs[0..n) (n >= 1) merged as above, each
 * seen through the idmapping of user namespace idmap_ns (>= 0: their owner
 * 0 becomes the sandbox's user), under a writable layer on a tmpfs of
 * size_mb, whose root belongs to uid:gid.  The tmpfs's pages are charged
 * to whoever writes them (the sandbox's cgroup).  Needs a kernel whose
 * overlayfs takes detached mounts as layers.  0, or -1 with err set. */
int overlay_open_rw(char *const *dirs, size_t n, int idmap_ns, uint64_t size_mb, unsigned uid, unsigned gid, int *fd,
                    char *err, size_t errlen);

/* The same, and the writable layer's tmpfs kept (*tmpfs_fd, a detached
 * mount: "upper" in it is what the root's users changed, in overlayfs's
 * format): what `ward image build` makes a layer of.  0, or -1 with err. */
int overlay_open_rw_kept(char *const *dirs, size_t n, int idmap_ns, uint64_t size_mb, unsigned uid, unsigned gid,
                         int *fd, int *tmpfs_fd, char *err, size_t errlen);

#endif
