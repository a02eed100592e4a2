/* collect_walk.c — files out, inside the sandbox: the glob matcher and the
 * walk of /work (see collect_walk.h).  Sandbox-side code: only syscalls, no
 * allocation, every loop bounded. */
#define _GNU_SOURCE
#include "system/collect_walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/request.h"

/* Steps one match may take (a glob of many '*' and "**" against a deep
 * path backtracks): beyond it the path does not match.  A walk takes at
 * most WALK_BUDGET steps in all (64 hostile globs against 100,000 deep
 * paths would be 10^11): beyond it, it stops, truncated. */
#define MATCH_BUDGET 20000u
#define WALK_BUDGET 50000000ull

/* ------------------------------------------------------------ matching */

/* A '[...]' class at g (g[0] == '['): *matched says whether c is in it;
 * the character after its ']', or NULL when it is not closed (then '['
 * is an ordinary character). */
static const char *match_class(const char *g, const char *ge, char c, bool *matched)
{
	const char *q = g + 1;
	bool neg = q < ge && (*q == '!' || *q == '^');
	if (neg)
		q++;
	bool in = false;
	for (bool first = true; q < ge && (first || *q != ']'); first = false) {
		char lo = *q, hi = lo;
		if (q + 2 < ge && q[1] == '-' && q[2] != ']') {
			hi = q[2];
			q += 3;
		} else
			q++;
		if (c >= lo && c <= hi)
			in = true;
	}
	if (q >= ge)
		return NULL;
	*matched = in != neg;
	return q + 1;
}

/* One character of the glob at *g against c: advances *g; false when it
 * does not match.  '*' is the caller's. */
static bool match_char(const char **g, const char *ge, char c)
{
	if (**g == '?') {
		(*g)++;
		return true;
	}
	if (**g == '[') {
		bool m;
		const char *after = match_class(*g, ge, c, &m);
		if (after) {
			*g = after;
			return m;
		}
	}
	if (**g == '\\' && *g + 1 < ge)
		(*g)++;
	return *(*g)++ == c;
}

/* A glob component [g, ge) against a name [p, pe) (neither has a '/'):
 * the last '*' is the only backtracking point, so this is linear in
 * their product at worst. */
static bool match_name(const char *g, const char *ge, const char *p, const char *pe, unsigned *budget)
{
	const char *star_g = NULL, *star_p = NULL;
	while (p < pe) {
		if (!(*budget) || !--(*budget))
			return false;
		if (g < ge && *g == '*') {
			star_g = ++g;
			star_p = p;
			continue;
		}
		const char *g2 = g;
		if (g < ge && match_char(&g2, ge, *p)) {
			g = g2;
			p++;
			continue;
		}
		if (!star_g)
			return false;
		g = star_g;
		p = ++star_p;
	}
	while (g < ge && *g == '*')
		g++;
	return g == ge;
}

static const char *component_end(const char *s, const char *e)
{
	const char *slash = memchr(s, '/', (size_t)(e - s));
	return slash ? slash : e;
}

static bool is_globstar(const char *g, const char *gc)
{
	return gc - g == 2 && g[0] == '*' && g[1] == '*';
}

static bool match_path(const char *g, const char *ge, const char *p, const char *pe, unsigned *budget)
{
	for (;;) {
		if (!(*budget) || !--(*budget))
			return false;
		const char *gc = component_end(g, ge);
		if (is_globstar(g, gc)) {
			if (gc == ge)
				return true; /* a last "**" takes everything below */
			for (const char *q = p;;) {
				if (match_path(gc + 1, ge, q, pe, budget))
					return true;
				const char *s = memchr(q, '/', (size_t)(pe - q));
				if (!s)
					return false;
				q = s + 1;
			}
		}
		if (p == pe)
			return false;
		const char *pc = component_end(p, pe);
		if (!match_name(g, gc, p, pc, budget))
			return false;
		if (gc == ge || pc == pe)
			return gc == ge && pc == pe;
		g = gc + 1;
		p = pc + 1;
	}
}

bool collect_glob_match(const char *glob, size_t glen, const char *path, size_t plen)
{
	unsigned budget = MATCH_BUDGET;
	return match_path(glob, glob + glen, path, path + plen, &budget);
}

static bool may_descend_budget(const char *g, const char *ge, const char *p, const char *pe, unsigned *budget)
{
	for (;;) {
		const char *gc = component_end(g, ge);
		if (is_globstar(g, gc))
			return true;
		const char *pc = component_end(p, pe);
		if (!match_name(g, gc, p, pc, budget))
			return false;
		if (gc == ge)
			return false; /* the glob ends here: nothing deeper matches */
		if (pc == pe)
			return true; /* the glob goes on below dir */
		g = gc + 1;
		p = pc + 1;
	}
}

bool collect_glob_may_descend(const char *glob, size_t glen, const char *dir, size_t dlen)
{
	unsigned budget = MATCH_BUDGET;
	return may_descend_budget(glob, glob + glen, dir, dir + dlen, &budget);
}

/* ------------------------------------------------------------- walking */

#define DENTS_SIZE 8192

struct glob_ref {
	const char *s;
	size_t len;
	bool dir_only; /* it ended in '/' */
};

struct walk {
	struct glob_ref g[WARD_MAX_COLLECT_GLOBS];
	size_t ng;
	uint32_t max_files, files, entries;
	uint64_t max_bytes, bytes;
	uint64_t steps; /* of WALK_BUDGET, left */
	bool truncated, stop;
	int out, err;
	char path[PATH_MAX];
	char *dents;         /* COLLECT_MAX_DEPTH + 1 buffers of DENTS_SIZE */
	unsigned char *data; /* max_bytes: one file's content at a time */
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One glob against w->path (plen bytes): a match (descend: could match
 * below it), its steps taken from the walk's budget; an empty budget stops
 * the walk. */
static bool glob_hit(struct walk *w, const struct glob_ref *g, size_t plen, bool descend)
{
	unsigned b = w->steps < MATCH_BUDGET ? (unsigned)w->steps : MATCH_BUDGET, start = b;
	const char *ge = g->s + g->len, *pe = w->path + plen;
	bool hit = descend ? may_descend_budget(g->s, ge, w->path, pe, &b) : match_path(g->s, ge, w->path, pe, &b);
	w->steps -= start - b;
	if (!w->steps)
		w->truncated = w->stop = true;
	return hit && !w->stop;
}

static bool path_selected(struct walk *w, size_t plen, bool is_dir)
{
	for (size_t i = 0; i < w->ng && !w->stop; i++)
		if ((is_dir || !w->g[i].dir_only) && glob_hit(w, &w->g[i], plen, false))
			return true;
	return false;
}

static bool may_descend(struct walk *w, size_t plen)
{
	for (size_t i = 0; i < w->ng && !w->stop; i++)
		if (glob_hit(w, &w->g[i], plen, true))
			return true;
	return false;
}

/* Read up to want bytes of fd into w->data; how many came. */
static size_t read_upto(int fd, unsigned char *buf, size_t want)
{
	size_t got = 0;
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* The regular file name in dfd (its path in w->path, plen bytes): opened
 * without following a symlink or blocking, checked a regular file on the
 * fd itself, read up to the size it has now and no further. */
static void take_file(struct walk *w, int dfd, const char *name, size_t plen)
{
	if (w->files >= w->max_files) {
		w->truncated = w->stop = true;
		return;
	}
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return; /* unreadable to the sandbox user: skipped */
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	uint64_t size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	if (size > w->max_bytes - w->bytes) {
		w->truncated = true; /* too large for what is left: skipped, smaller ones may still fit */
		close(fd);
		return;
	}
	size_t got = read_upto(fd, w->data, (size_t)size);
	close(fd);
	struct collect_frame f = {.kind = 'F', .path_len = (uint32_t)plen, .mode = st.st_mode & 07777, .size = got};
	int r = write_all(w->out, &f, sizeof(f));
	if (r == 0)
		r = write_all(w->out, w->path, plen);
	if (r == 0)
		r = write_all(w->out, w->data, got);
	if (r < 0) {
		w->err = r;
		w->stop = true;
		return;
	}
	w->files++;
	w->bytes += got;
}

static void walk_dir(struct walk *w, int dfd, size_t plen, int depth, bool take_all);

/* One entry of a directory: its path appended to w->path, its type seen
 * without following it. */
static void walk_entry(struct walk *w, int dfd, const char *name, size_t plen, int depth, bool take_all)
{
	if (++w->entries > COLLECT_MAX_ENTRIES) {
		w->truncated = w->stop = true;
		return;
	}
	size_t nl = strlen(name), sub = plen ? plen + 1 + nl : nl;
	if (sub >= sizeof(w->path)) {
		w->truncated = true;
		return;
	}
	if (plen)
		w->path[plen] = '/';
	memcpy(w->path + (plen ? plen + 1 : 0), name, nl);
	w->path[sub] = 0;
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISREG(st.st_mode)) {
		if (take_all || path_selected(w, sub, false))
			take_file(w, dfd, name, sub);
	} else if (S_ISDIR(st.st_mode)) {
		bool all = take_all || path_selected(w, sub, true);
		if (!all && !may_descend(w, sub))
			return;
		if (depth >= COLLECT_MAX_DEPTH) {
			w->truncated = true;
			return;
		}
		int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (cfd < 0)
			return;
		walk_dir(w, cfd, sub, depth + 1, all);
		close(cfd);
	}
	/* symlinks, FIFOs, sockets, devices: never opened */
}

static void walk_dir(struct walk *w, int dfd, size_t plen, int depth, bool take_all)
{
	char *buf = w->dents + (size_t)depth * DENTS_SIZE;
	while (!w->stop) {
		long n = syscall(SYS_getdents64, dfd, buf, DENTS_SIZE);
		if (n <= 0)
			break;
		for (long off = 0; off < n && !w->stop;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
				walk_entry(w, dfd, d->d_name, plen, depth, take_all);
		}
	}
}

static void add_globs(struct walk *w, const char *const *globs)
{
	for (size_t i = 0; globs && globs[i] && w->ng < WARD_MAX_COLLECT_GLOBS; i++) {
		size_t len = strlen(globs[i]);
		bool dir_only = false;
		while (len > 1 && globs[i][len - 1] == '/') {
			len--;
			dir_only = true;
		}
		w->g[w->ng++] = (struct glob_ref){.s = globs[i], .len = len, .dir_only = dir_only};
	}
}

int collect_walk(int workfd, const char *const *globs, uint32_t max_files, uint64_t max_bytes, int out)
{
	size_t dents = (size_t)(COLLECT_MAX_DEPTH + 1) * DENTS_SIZE;
	size_t total = sizeof(struct walk) + dents + (size_t)max_bytes;
	/* touched only as used: a small file costs its pages, not max_bytes */
	void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	struct walk *w = mem;
	w->dents = (char *)mem + sizeof(*w);
	w->data = (unsigned char *)w->dents + dents;
	w->max_files = max_files;
	w->max_bytes = max_bytes;
	w->steps = WALK_BUDGET;
	w->out = out;
	add_globs(w, globs);
	int dfd = openat(workfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		walk_dir(w, dfd, 0, 0, false);
		close(dfd);
	}
	int r = w->err;
	if (r == 0) {
		struct collect_frame end = {.kind = 'E', .flags = w->truncated ? COLLECT_TRUNCATED : 0};
		r = write_all(out, &end, sizeof(end));
	}
	munmap(mem, total);
	return r;
}
