/* session.h — what session.c (execs, files, the session's lifetime) and
 * session_bg.c (background processes) share: how one exec is started in a
 * session and ended.  Supervisor side, on the host. */
#ifndef WARD_SESSION_H
#define WARD_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "system/supervisor.h"
#include "ward.h"

struct ward_cgroup;
struct session_bg;
struct ward_budget;

struct session_watch;
struct session_msg;
struct freezer;

/* One exec's supervisor ends, its command's pidfd and its cgroup. */
struct session_exec {
	int ho_w, ctl_r, out_r, err_r, in_w, pidfd;
	struct ward_cgroup *cg;
	/* set (seccomp_text first, then seccomp_killed, atomically) when a
	 * fatal call was caught in it and its tree killed */
	bool seccomp_killed;
	char seccomp_text[128];
	bool budget_killed; /* the session's CPU budget ran out while it ran (atomic) */
};

/* A session (ward.h's struct ward_session): shared by session*.c only. */
#define SESSION_SPARE_SOCKS 7
struct ward_session {
	pthread_mutex_t lock;      /* everything below but sock's exchanges */
	pthread_mutex_t sock_lock; /* one request and its reply at a time */
	struct sandbox *sb;
	struct sandbox_session parts;
	struct ward_cgroup *init_cg; /* PID 1's leaf */
	struct ward_cgroup **linger; /* exec cgroups something still runs in */
	size_t nlinger;
	unsigned running;          /* execs in progress */
	struct ward_limits limits; /* the session's */
	bool egress;               /* network allow: ward's proxy listens on its 127.0.0.1:3128 */
	/* sockets made in its network namespace ahead, for ward_session_connect
	 * (session_ports.c: a thread enters the namespace once a batch) */
	int spare[SESSION_SPARE_SOCKS];
	unsigned nspare;
	char **env; /* the default environment ("K=V", copied) */
	size_t nenv;
	double cpu_budget_s;
	/* ward_session_charge_net's relayed bytes (net_used atomic; session_ports.c) */
	uint64_t net_used, net_cap;
	struct ward_enforced enforced;
	struct session_bg *bg; /* background processes (session_bg.c) */
	/* eventfds woken at each change of a background process (session_notify.c) */
	pthread_mutex_t notify_lock;
	struct session_notifier *notify;
	unsigned nnotify;
	struct session_exec *active[WARD_SESSION_MAX_EXECS * 2]; /* execs started and not done */
	struct session_watch *watch;                             /* the seccomp listener's thread */
	struct session_exec armed;                               /* the next exec's, made ahead (armed_ok) */
	bool armed_ok;
	pthread_cond_t arm_cv;   /* the armer waits on it */
	pthread_cond_t armed_cv; /* an exec waits on it for what is arming */
	pthread_t armer;
	bool armer_on, armer_failed, arm_wanted, arm_stop, arming;
	bool arm_parked;         /* frozen: no armer runs (session_armer_park) */
	bool warm_wanted;        /* an exec took the armed one: warm the lock (armer_main) */
	double call_s;           /* the deadline of one files or stdin call, in all */
	bool pid1_shielded;      /* PID 1's oom_score_adj is -1000 (settle_pid1) */
	unsigned foreground;     /* ward_session_exec calls in progress */
	struct freezer *freezer; /* session_freeze.c; NULL: none here (freeze_none says why) */
	char freeze_none[256];
	pthread_mutex_t freeze_lock;       /* one freeze or thaw at a time */
	bool frozen;                       /* (under lock; read atomically) */
	double frozen_since, frozen_total; /* monotonic; seconds frozen before */
	volatile int killed;               /* ward_session_kill has ended it */
	volatile int cpu_spent;            /* its CPU budget has run out */
};

static inline void session_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}
/* One request on the control socket (session_proto.h), with nfds fds, and
 * PID 1's reply to an exec (0 with *fd, or -errno). */
int session_send(struct ward_session *s, const struct session_msg *m, const int *fds, int nfds);
int session_recv(struct ward_session *s, int *fd);
/* Freezing (session_freeze.c): the session's freezer, made with it (0, or
 * -errno with err set; no freezer on this host is not an error); -EBUSY
 * with err set when the session is frozen, else 0. */
int session_freezer_open(struct ward_session *s, char *err, size_t errlen);
int session_refuse_frozen(struct ward_session *s, char *err, size_t errlen);
/* Wake the listener thread, and every background process's thread, to
 * look at the session's state again (after a thaw).  NULL ok. */
void session_watch_wake(struct session_watch *w);
void session_bg_wake(struct session_bg *bg);
/* A frozen session holds no thread of ward's (session_freeze.c): park
 * (true) ends the thread, its state kept for the next; false starts it
 * again.  The armer is parked before the freeze (it may be asking PID 1)
 * and started again after the thaw; the listener is parked after the
 * freeze and started before the thaw (no call is made unheard); the
 * background processes' threads are parked after the freeze (each drains
 * what its pipes hold first, so their output is read while frozen) and
 * started after the thaw.  0, or -errno (a thread not started: the
 * session is not thawed).  NULL ok. */
void session_armer_park(struct ward_session *s, bool park);
int session_watch_park(struct session_watch *w, bool park);
int session_bg_park(struct session_bg *bg, bool park);
/* Stop the armer (after PID 1 is dead) and discard what it armed. */
void session_armer_stop(struct ward_session *s);
/* The first exec's process armed as the session starts (session.c). */
void session_arm_first(struct ward_session *s);
/* The globs, one a line, as a file op's string: 0, or -1 when they do not
 * fit in n.  The files out after an exec: 0, or -1 with res->error set. */
int session_join_globs(char *const *globs, char *out, size_t n);
int session_collect(struct ward_session *s, const struct ward_request *req, struct ward_result *res);

/* req as the session runs it: the session's limits and environment (*env:
 * malloc'd, free it after the exec), nothing of the shape's.  0, or -EINVAL
 * / -ENOMEM with err set. */
int session_request(struct ward_session *s, const struct ward_request *req, struct ward_request *out, char ***env,
                    char *err, size_t errlen);
/* The deadline of one files or stdin call, in seconds. */
double session_call_timeout(const struct ward_session *s);
/* Has ward_session_kill ended it? */
bool session_killed(const struct ward_session *s);
/* Take (true: false when WARD_SESSION_MAX_EXECS run) or give back a slot. */
bool session_slot(struct ward_session *s, bool take);
/* Start req's command (its cgroup, its pidfd; it execs once handed over).
 * 0, or -errno with err set and nothing left. */
int session_exec_start(struct ward_session *s, const struct ward_request *req, const char *cwd, bool want_in,
                       struct session_exec *x, char *err, size_t errlen);
/* x's command's pid inside the sandbox (its pidfd's fdinfo), or -1. */
int session_exec_pid(const struct session_exec *x);
/* Close what is left of x; its cgroup goes, or waits for what still runs
 * in it (then it goes with the session). */
void session_exec_done(struct ward_session *s, struct session_exec *x);
void session_exec_close(struct session_exec *x);

/* A fatal call caught by the session's listener (session_seccomp.c): pid
 * (host) made it; the exec it belongs to is marked and its tree killed,
 * or, in no exec, the process alone.  Nothing when notification id is no
 * longer pending on listener (the caller is gone: pid may be another's). */
void session_seccomp_kill(struct ward_session *s, int listener, uint64_t id, pid_t pid, const char *text);
/* Did a fatal call end x?  Then text (what it was) for its stderr. */
bool session_exec_seccomp(const struct session_exec *x);
/* Did the session's CPU budget end x? */
bool session_exec_budget(const struct session_exec *x);

/* The session's CPU budget (cpu_budget_s), checked by its watch thread a
 * few times a second: once the session's cgroup has used it, every exec's
 * tree is killed (foreground, background, what ended execs left running)
 * and each is marked; PID 1 and the files API live on.  The interval of
 * the check (0: no budget, no check). */
double session_budget_interval(const struct ward_session *s);
void session_budget_check(struct ward_session *s);
/* Has the budget run out (ward_session_cpu_spent)? */
bool session_budget_spent(const struct ward_session *s);

/* The session's listener thread (session_seccomp.c): start takes the
 * listener (on failure it stays the caller's); stop ends the thread and
 * closes it.  stop(NULL) is a no-op. */
struct session_watch;
int session_watch_start(struct ward_session *s, int listener, struct session_watch **out);
/* (listener may be -1: the thread then only checks the CPU budget.) */
void session_watch_stop(struct session_watch *w);

/* Background processes (session_bg.c): made with the session, freed
 * after its PID 1 is dead. */
struct session_bg *session_bg_of(struct ward_session *s);
/* max_bytes: what its records' capture may hold in all (0: the default);
 * shared: the runner's budget for every session's, or NULL. */
int session_bg_new(struct ward_session *s, size_t max_bytes, struct ward_budget *shared, struct session_bg **out);
void session_bg_free(struct session_bg *bg);

/* session_notify.c: the callers' eventfds (ward_session_notify), at most
 * SESSION_NOTIFY_MAX a session; session_notify_all wakes those of process
 * pid and of any (from
 * session_bg.c, at each output or end; never under notify_lock's callers). */
#define SESSION_NOTIFY_MAX 4096
struct session_notifier;
void session_notify_init(struct ward_session *s);
void session_notify_free(struct ward_session *s);
void session_notify_all(struct ward_session *s, int pid);

#endif
