/* session_save.c — a session's files saved, restored and forked (ward.h's
 * ward_session_save, ward_session_restore, ward_session_fork), supervisor
 * side, on the host.
 *
 * The files are a session's /work, reached from the host through its PID
 * 1's root (/proc/PID/root, then "work" resolved beneath it with no link
 * followed), so that a frozen session — whose PID 1 answers nothing — can
 * be saved, and a copy costs no round trip through the sandbox.  The walk
 * (treecopy.c) never follows a link and never resolves a path on the host;
 * it is bounded in bytes, entries and depth.  The source is frozen for the
 * copy when it can be (one moment's state), then thawed as it was.  Only
 * files: no process, no memory is saved or forked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "system/session.h"
#include "system/treecopy.h"
#include "base/errf.h"

/* The session's /work as a directory fd on the host, or -errno with err
 * set.  (PID 1 is ward's child, reaped only by ward_session_destroy: its
 * pid names it until then.) */
static int work_fd(struct ward_session *s, char *err, size_t errlen)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/root", (int)s->parts.pid);
	int root = ward_session_alive(s) ? open(path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = root < 0 ? -1 : (int)syscall(SYS_openat2, root, "work", &how, sizeof(how));
	int e = errno;
	if (root >= 0)
		close(root);
	if (fd >= 0)
		return fd;
	base_errf(err, errlen, "cannot open the session's /work from the host: %s",
		    root < 0 ? "the session is gone" : strerror(e));
	return root < 0 ? -ESRCH : -e;
}

/* Freeze s for a copy unless it is frozen already (or cannot be: then the
 * copy is of a moving tree).  true: the caller thaws it after. */
static bool hold(struct ward_session *s)
{
	if (ward_session_frozen(s))
		return false;
	return ward_session_freeze(s, NULL, 0) == 0;
}

static int copy(int from, int to, uid_t uid, gid_t gid, uint64_t max_bytes, struct ward_session_saved *info,
		char *err, size_t errlen)
{
	struct treecopy_limits lim = {.max_bytes = max_bytes, .max_entries = WARD_SESSION_SAVE_MAX_ENTRIES};
	struct treecopy_stats st;
	int r = treecopy(from, to, uid, gid, &lim, &st, err, errlen);
	if (info)
		*info = (struct ward_session_saved){.bytes = st.bytes, .files = st.files, .dirs = st.dirs,
						    .links = st.links, .skipped = st.skipped};
	return r;
}

/* dir's parent as an fd and its last name (in name), to make or remove
 * it. */
static int parent_of(const char *dir, char *name, size_t n)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dir);
	size_t k = strlen(buf);
	while (k > 1 && buf[k - 1] == '/')
		buf[--k] = 0;
	char *slash = strrchr(buf, '/');
	snprintf(name, n, "%s", slash ? slash + 1 : buf);
	if (slash == buf)
		return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (slash)
		*slash = 0;
	return open(slash ? buf : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int ward_session_save(struct ward_session *s, const char *dir, uint64_t max_bytes, struct ward_session_saved *info,
		      char *err, size_t errlen)
{
	char name[256];
	int parent = parent_of(dir, name, sizeof(name));
	if (parent < 0 || !name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		base_errf(err, errlen, "cannot save into '%s': %s", dir, parent < 0 ? strerror(errno) : "no name");
		if (parent >= 0)
			close(parent);
		return -EINVAL;
	}
	int to = mkdirat(parent, name, 0700) < 0 ? -1 : openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (to < 0) {
		int e = errno;
		base_errf(err, errlen, "cannot make '%s' for the saved files: %s", dir, strerror(e));
		close(parent);
		return -e;
	}
	bool held = hold(s);
	int from = work_fd(s, err, errlen);
	int r = from < 0 ? from : copy(from, to, (uid_t)-1, (gid_t)-1, max_bytes, info, err, errlen);
	if (held)
		ward_session_thaw(s, NULL, 0);
	if (from >= 0)
		close(from);
	close(to);
	if (r < 0)
		treecopy_remove(parent, name);
	close(parent);
	return r;
}

/* The calling thread's identity on files, for a copy into a sandbox's
 * /work, and back.  A tmpfs of the sandbox's user namespace takes a new
 * file only from an fsuid and fsgid mapped there (EOVERFLOW else): the
 * owner of /work's; the capabilities a change of fsuid drops from the
 * effective set (reading the saved files, which are root's) are raised
 * again from the permitted.  Per thread (raw credentials syscalls). */
struct fs_ident {
	uid_t uid;
	gid_t gid;
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct caps[2];
	bool caps_ok;
};

static void as_owner(struct fs_ident *was, uid_t uid, gid_t gid)
{
	was->h = (struct __user_cap_header_struct){.version = _LINUX_CAPABILITY_VERSION_3};
	was->caps_ok = syscall(SYS_capget, &was->h, was->caps) == 0;
	was->gid = (gid_t)setfsgid(gid);
	was->uid = (uid_t)setfsuid(uid);
	if (was->caps_ok) {
		struct __user_cap_data_struct d[2] = {was->caps[0], was->caps[1]};
		d[0].effective = d[0].permitted;
		d[1].effective = d[1].permitted;
		syscall(SYS_capset, &was->h, d);
	}
}

static void as_before(struct fs_ident *was)
{
	setfsuid(was->uid);
	setfsgid(was->gid);
	if (was->caps_ok)
		syscall(SYS_capset, &was->h, was->caps);
}

/* Copy from into s's /work, as its owner (the sandbox's user). */
static int copy_into(struct ward_session *s, int from, uint64_t max_bytes, struct ward_session_saved *info, char *err,
		     size_t errlen)
{
	int to = work_fd(s, err, errlen);
	if (to < 0)
		return to;
	struct stat sb;
	int r = fstat(to, &sb) < 0 ? -errno : 0;
	if (r == 0) {
		struct fs_ident was;
		as_owner(&was, sb.st_uid, sb.st_gid);
		r = copy(from, to, (uid_t)-1, (gid_t)-1, max_bytes, info, err, errlen);
		as_before(&was);
	}
	close(to);
	return r;
}

int ward_session_restore(struct ward_session *s, const char *dir, uint64_t max_bytes, struct ward_session_saved *info,
			 char *err, size_t errlen)
{
	int from = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (from < 0) {
		int e = errno;
		base_errf(err, errlen, "cannot open the saved files '%s': %s", dir, strerror(e));
		return -e;
	}
	int r = copy_into(s, from, max_bytes, info, err, errlen);
	close(from);
	return r;
}

int ward_session_fork(struct ward_session *s, const struct ward_session_opts *o, unsigned n, uint64_t max_bytes,
		      struct ward_session **out, char *err, size_t errlen)
{
	/* the new sessions first: the source is frozen for the copies only */
	int r = 0;
	unsigned made = 0;
	for (; r == 0 && made < n; made++)
		if (!(out[made] = ward_session_new(o, err, errlen)))
			r = -EIO;
	if (r < 0)
		made--;
	bool held = r == 0 && hold(s);
	int from = r == 0 ? work_fd(s, err, errlen) : -1;
	if (from < 0 && r == 0)
		r = from;
	for (unsigned i = 0; r == 0 && i < n; i++)
		r = copy_into(out[i], from, max_bytes, NULL, err, errlen);
	if (held)
		ward_session_thaw(s, NULL, 0);
	if (from >= 0)
		close(from);
	if (r < 0)
		for (unsigned i = 0; i < made; i++) {
			ward_session_destroy(out[i]);
			out[i] = NULL;
		}
	return r;
}
