/* session_save.c — a session's files saved, restored and forked (ward.h's
 * ward_session_save, ward_session_restore, ward_session_fork), supervisor
 * side, on the host.
 *
 * The files are a session's /work, reached from the host through its PID
 * 1's root (/proc/PID/root, then "work" resolved beneath it with no link
 * followed), so that a frozen session — whose PID 1 answers nothing — can
 * be saved, and a copy costs no round trip through the sandbox.  The walk
 * (treecopy.c) never follows a link and never resolves a path on the host;
 * it crosses no mount (a host directory mounted into /work is not read);
 * it is bounded in bytes, entries and depth.  A session's files are read
 * with its sandbox user's rights and no capability (what the tenant could
 * not read, the copy does not read); ward's rights are used for the
 * destination only.  The copy runs in a child process (session_copy.c) in
 * the destination session's cgroup, with a deadline: what a fork or a
 * restore writes is charged to that session's memory.  The source is
 * frozen for the copy when it can be (one moment's state), then thawed as
 * it was.  Only files: no process, no memory is saved or forked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/errf.h"
#include "system/session.h"
#include "system/session_copy.h"

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

/* The sandbox user's rights (reading a session's own files), and the
 * caller's. */
static struct treecopy_side user_of(const struct ward_session *s)
{
	return (struct treecopy_side){.uid = s->parts.host_uid, .gid = s->parts.host_gid, .caps = false};
}

static struct treecopy_side ward_side(void)
{
	return (struct treecopy_side){.uid = geteuid(), .gid = getegid(), .caps = true};
}

/* from into to, as lim says, by a child in cg (session_copy.c). */
static int copy(int from, int to, struct ward_cgroup *cg, double deadline_s, const struct treecopy_limits *lim,
                struct ward_session_saved *info, char *err, size_t errlen)
{
	struct treecopy_stats st;
	int r = session_copy(from, to, cg, deadline_s, lim, &st, err, errlen);
	if (info)
		*info = (struct ward_session_saved){.bytes = st.bytes,
		                                    .files = st.files,
		                                    .dirs = st.dirs,
		                                    .links = st.links,
		                                    .skipped = st.skipped};
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
	int to = mkdirat(parent, name, 0700) < 0
	                 ? -1
	                 : openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (to < 0) {
		int e = errno;
		base_errf(err, errlen, "cannot make '%s' for the saved files: %s", dir, strerror(e));
		close(parent);
		return -e;
	}
	bool held = hold(s);
	int from = work_fd(s, err, errlen);
	/* (into ward's directory on the host: its page cache is reclaimable,
	 * and the source's cgroup may be frozen) */
	struct treecopy_limits lim = {max_bytes, WARD_SESSION_SAVE_MAX_ENTRIES, user_of(s), ward_side()};
	int r = from < 0 ? from : copy(from, to, NULL, s->call_s, &lim, info, err, errlen);
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

/* Copy from (read as from_side) into s's /work, as its owner (the
 * sandbox's user), by a child in s's cgroup. */
static int copy_into(struct ward_session *s, int from, struct treecopy_side from_side, uint64_t max_bytes,
                     struct ward_session_saved *info, char *err, size_t errlen)
{
	int r = session_refuse_frozen(s, err, errlen);
	int to = r < 0 ? r : work_fd(s, err, errlen);
	if (to < 0)
		return to;
	struct stat sb;
	r = fstat(to, &sb) < 0 ? -errno : 0;
	struct treecopy_limits lim = {max_bytes,
	                              WARD_SESSION_SAVE_MAX_ENTRIES,
	                              from_side,
	                              {.uid = sb.st_uid, .gid = sb.st_gid, .caps = true}};
	if (r == 0)
		r = copy(from, to, s->init_cg, s->call_s, &lim, info, err, errlen);
	else
		base_errf(err, errlen, "cannot look at the session's /work: %s", strerror(-r));
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
	int r = copy_into(s, from, ward_side(), max_bytes, info, err, errlen); /* (the saved files are ward's) */
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
	/* never more than the source's /work holds (a fork is of that size) */
	struct statfs fs;
	if (from >= 0 && fstatfs(from, &fs) == 0 && fs.f_blocks &&
	    (uint64_t)fs.f_blocks * (uint64_t)fs.f_frsize < max_bytes)
		max_bytes = (uint64_t)fs.f_blocks * (uint64_t)fs.f_frsize;
	for (unsigned i = 0; r == 0 && i < n; i++)
		r = copy_into(out[i], from, user_of(s), max_bytes, NULL, err, errlen);
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
