/* container.h — the container ward itself runs in (Docker, Podman,
 * Kubernetes): which of its restrictions stops a sandbox, and the fix on
 * the container's side (SPEC §20), so that an error names the seccomp
 * profile, the masked /proc or the read-only cgroupfs, never a host sysctl. */
#ifndef WARD_SANDBOX_CONTAINER_H
#define WARD_SANDBOX_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

/* "Docker", "Podman", "Kubernetes", or NULL when ward does not know it
 * runs in a container (the engines' markers: /.dockerenv,
 * /run/.containerenv, KUBERNETES_SERVICE_HOST). */
const char *container_engine(void);

/* Creating namespaces failed with errno e: when the cause is a container's
 * seccomp profile (a filter on this process, no sysctl that forbids them),
 * write the restriction and its fix to buf and return true. */
bool container_ns_hint(int e, char *buf, size_t n);

/* A new procfs was refused: when every procfs mounted here has paths
 * masked beneath it (the kernel gives a new one only where a fully visible
 * one exists), write the restriction and its fix to buf and return true. */
bool container_proc_hint(char *buf, size_t n);

/* A mount in the sandbox's own namespace failed with errno e: when an
 * AppArmor profile confines this process (Docker's docker-default refuses
 * every mount), write the restriction and its fix to buf and return true. */
bool container_mount_hint(int e, char *buf, size_t n);

/* The cgroup filesystem is mounted read-only here (a container's default):
 * write the restriction and its fix to buf and return true. */
bool container_cgroup_hint(char *buf, size_t n);

#endif
