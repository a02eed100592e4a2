/* session_notify.c — what wakes a front end's event loop when one of a
 * session's background processes has something new: output, or its end
 * (ward.h's ward_session_notify).  The caller gives an eventfd; the
 * session keeps a duplicate of it and adds 1 to it at each change
 * (session_bg.c calls session_notify_all where its readers are woken), so
 * a stream parked on it (ward serve's ticker) answers at once rather than
 * at its next tick.  Bounded: SESSION_NOTIFY_MAX a session (past them
 * -EMFILE: the caller falls back to looking on its own).  Never blocks:
 * the eventfd is the caller's and non-blocking; a full counter is awake
 * anyway. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "system/session.h"

struct session_notifier {
	const void *key;
	int pid; /* the background process it is woken by, or 0: any */
	int fd;  /* the session's duplicate of the caller's eventfd */
	struct session_notifier *next;
};

void session_notify_init(struct ward_session *s)
{
	pthread_mutex_init(&s->notify_lock, NULL);
}

void session_notify_free(struct ward_session *s)
{
	for (struct session_notifier *n = s->notify, *next; n; n = next) {
		next = n->next;
		close(n->fd);
		free(n);
	}
	s->notify = NULL;
	pthread_mutex_destroy(&s->notify_lock);
}

int ward_session_notify(struct ward_session *s, int efd, const void *key, int pid)
{
	struct session_notifier *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->key = key;
	n->pid = pid;
	n->fd = fcntl(efd, F_DUPFD_CLOEXEC, 3);
	if (n->fd < 0) {
		int e = errno;
		free(n);
		return -e;
	}
	pthread_mutex_lock(&s->notify_lock);
	bool room = s->nnotify < SESSION_NOTIFY_MAX;
	if (room) {
		n->next = s->notify;
		s->notify = n;
		s->nnotify++;
	}
	pthread_mutex_unlock(&s->notify_lock);
	if (!room) {
		close(n->fd);
		free(n);
		return -EMFILE;
	}
	return 0;
}

void ward_session_unnotify(struct ward_session *s, const void *key)
{
	struct session_notifier *gone = NULL;
	pthread_mutex_lock(&s->notify_lock);
	for (struct session_notifier **pp = &s->notify; *pp; pp = &(*pp)->next)
		if ((*pp)->key == key) {
			gone = *pp;
			*pp = gone->next;
			s->nnotify--;
			break;
		}
	pthread_mutex_unlock(&s->notify_lock);
	if (gone) {
		close(gone->fd);
		free(gone);
	}
}

void session_notify_all(struct ward_session *s, int pid)
{
	uint64_t one = 1;
	pthread_mutex_lock(&s->notify_lock);
	for (struct session_notifier *n = s->notify; n; n = n->next)
		if ((n->pid == 0 || n->pid == pid) && write(n->fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: its counter is full, so it is awake anyway */
		}
	pthread_mutex_unlock(&s->notify_lock);
}
