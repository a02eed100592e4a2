/* netns.h — the network namespaces of `--net none` sandboxes (netns.c):
 * made by ward outside any sandbox's user namespace, and, in a process
 * that keeps them (ward_netns_keep), used again only when proven untouched.
 * Host side: the supervisor's threads and the spawner helpers call these;
 * nothing here runs inside a sandbox.
 */
#ifndef WARD_NETNS_H
#define WARD_NETNS_H

struct ward_netns;

/* A network namespace for one sandbox: a kept one, or a new one.  NULL
 * where ward cannot make one of its own (not root in the host's user
 * namespace): the sandbox then clones a namespace of its own
 * (CLONE_NEWNET), as every network mode but `none` does. */
struct ward_netns *netns_take(void);

/* Its descriptor (/proc/thread-self/ns/net), for the clone or a helper. */
int netns_fd(const struct ward_netns *ns);

/* After the sandbox's PID 1 is reaped (so every process of it is gone):
 * keep the namespace for the next sandbox when it is as it was made, else
 * close it.  NULL is a no-op. */
void netns_give(struct ward_netns *ns);

/* The calling thread enters the namespace of fd, before a clone (0, or
 * -errno: the thread stays where it was); netns_leave brings it back to the
 * host's, and aborts the process if it cannot (a thread left in a sandbox's
 * namespace would fail open). */
int netns_enter(int fd);
void netns_leave(void);

/* Open the host's namespace now, on a thread that is in it (it is opened
 * on first use otherwise): a spawner helper does at start, so that what it
 * holds does not change with its first clone, and so that a helper forked
 * from a process that had opened it holds a descriptor of its own. */
void netns_init(void);

#endif
