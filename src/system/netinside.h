/* netinside.h — a sandbox's network namespace, from inside (netinside.c). */
#ifndef WARD_SYSTEM_NETINSIDE_H
#define WARD_SYSTEM_NETINSIDE_H

/* The loopback interface up.  0, or -1 with errno set. */
int net_loopback_up(void);

/* Egress (SPEC §13): the proxy's listening socket, made in this network
 * namespace (127.0.0.1:EGRESS_PROXY_PORT) and sent over sock (SCM_RIGHTS,
 * tagged 'P': egress_recv_listener takes it).  0, or -1 with errno set. */
int net_proxy_listener(int sock);

#endif
