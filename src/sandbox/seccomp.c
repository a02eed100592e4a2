/* seccomp.c — the syscall filter of SPEC §3 (docs/security.md has the table).
 *
 * The policy is a deny list over a default of "allow": the sandbox already
 * runs without capabilities in its own namespaces, so the filter's job is to
 * take away the kernel surface that an unprivileged process still reaches
 * (nested user namespaces, keyrings, bpf, perf, userfaultfd, io_uring, tty
 * injection, foreign syscall ABIs) and to make the classic container escapes
 * (mounts, pivot_root, chroot, open_by_handle_at, modules, kexec) fatal.
 *
 * libseccomp compiles the table once, in the supervisor; the BPF is kept in
 * memory and loaded in the child with one seccomp(2) call and no allocation.
 *
 * Two programs are compiled from the same table: one where the fatal rules
 * are SECCOMP_RET_KILL_PROCESS (the kernel kills, the result shows SIGSYS),
 * and one where they are SECCOMP_RET_USER_NOTIF, so that a supervisor holding
 * the listener can name the call ("ward: seccomp: blocked mount(2)") before it
 * kills the sandbox.  A blocked call never runs in either: when the listener
 * is gone, the kernel fails it with ENOSYS.
 */
#define _GNU_SOURCE
#include "sandbox/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_NETLINK
#define AF_NETLINK 16
#endif
#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE 0
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* What a rule does. */
enum act {
	KILL,     /* SECCOMP_RET_KILL_PROCESS (or a notification to the supervisor) */
	EPERM_,   /* fails with EPERM, as it would for an unprivileged process */
	ENOSYS_,  /* fails with ENOSYS: callers fall back as on an older kernel */
	EAFNO,    /* socket(): EAFNOSUPPORT, as for a family the kernel lacks */
	EPROTONO, /* socket(): EPROTONOSUPPORT, as for a protocol the kernel lacks */
};

/* Which argument, if any, a rule looks at. */
enum cond {
	ANY,               /* every call */
	NSFLAGS,           /* arg0 carries one of the CLONE_NEW* flags */
	ARG0_LO,           /* low 32 bits of arg0 == val (socket family) */
	ARG1_LO,           /* low 32 bits of arg1 == val (ioctl request) */
	SETID1,            /* the mode in arg1 has S_ISUID or S_ISGID */
	SETID2,            /* ... in arg2 */
	SETID3,            /* ... in arg3 */
	NETLINK_NOT_ROUTE, /* socket(AF_NETLINK, *, protocol other than NETLINK_ROUTE) */
	MCAST_MEMBERSHIP,  /* setsockopt(fd, IPPROTO_IP or IPPROTO_IPV6, a group-membership option) */
};

struct rule {
	const char *name; /* libseccomp's name for the call */
	int nr;           /* its x86_64 number when libseccomp 2.5 may not know it, else -1 */
	enum act act;
	enum cond cond;
	unsigned long val;
	const char *what; /* the ioctl or family, for messages */
};

/* The namespace flags: unshare/clone with any of them gets EPERM.
 * CLONE_NEWTIME shares its bit with clone()'s exit-signal byte, where it is
 * never set by a valid call, so it is checked for unshare only. */
static const unsigned long ns_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

/* The table.  docs/security.md explains every line; keep the two in step. */
static const struct rule rules[] = {
	/* Filesystem-view escapes: no program in a sandbox needs them. */
	{"mount", -1, KILL, ANY, 0, NULL},
	{"umount2", -1, KILL, ANY, 0, NULL},
	{"pivot_root", -1, KILL, ANY, 0, NULL},
	{"chroot", -1, KILL, ANY, 0, NULL},
	{"fsopen", -1, KILL, ANY, 0, NULL},
	{"fsconfig", -1, KILL, ANY, 0, NULL},
	{"fsmount", -1, KILL, ANY, 0, NULL},
	{"fspick", -1, KILL, ANY, 0, NULL},
	{"move_mount", -1, KILL, ANY, 0, NULL},
	{"open_tree", -1, KILL, ANY, 0, NULL},
	{"mount_setattr", -1, KILL, ANY, 0, NULL},
	{"open_tree_attr", 467, KILL, ANY, 0, NULL},   /* Linux 6.15 */
	{"open_by_handle_at", -1, KILL, ANY, 0, NULL}, /* "shocker" */
	/* Changing the kernel itself. */
	{"kexec_load", -1, KILL, ANY, 0, NULL},
	{"kexec_file_load", -1, KILL, ANY, 0, NULL},
	{"init_module", -1, KILL, ANY, 0, NULL},
	{"finit_module", -1, KILL, ANY, 0, NULL},
	{"delete_module", -1, KILL, ANY, 0, NULL},
	{"reboot", -1, KILL, ANY, 0, NULL},
	{"swapon", -1, KILL, ANY, 0, NULL},
	{"swapoff", -1, KILL, ANY, 0, NULL},
	{"acct", -1, KILL, ANY, 0, NULL},
	{"iopl", -1, KILL, ANY, 0, NULL},
	{"ioperm", -1, KILL, ANY, 0, NULL},
	/* Terminal injection (CVE-2016-7545 and kin); compared on the low 32
	 * bits because the kernel truncates the request (CVE-2019-10063). */
	{"ioctl", -1, KILL, ARG1_LO, TIOCSTI, "TIOCSTI"},
	{"ioctl", -1, KILL, ARG1_LO, TIOCLINUX, "TIOCLINUX"},
	/* Line disciplines: module autoload and a long CVE list (n_hdlc, n_gsm). */
	{"ioctl", -1, EPERM_, ARG1_LO, TIOCSETD, "TIOCSETD"},
	/* New namespaces: an unprivileged user namespace gives back every
	 * capability over fresh mount/net namespaces, and with them the whole
	 * kernel surface that CAP_SYS_ADMIN/CAP_NET_ADMIN guard.  EPERM, since
	 * browsers and container tools probe for it and fall back. */
	{"unshare", -1, EPERM_, NSFLAGS, 0, NULL},
	{"clone", -1, EPERM_, NSFLAGS, 0, NULL},
	{"setns", -1, EPERM_, ANY, 0, NULL},
	/* clone3 passes its flags in memory, out of the filter's sight: ENOSYS
	 * makes glibc fall back to clone, whose flags are checked above. */
	{"clone3", -1, ENOSYS_, ANY, 0, NULL},
	/* Kernel attack surface reachable without privilege. */
	{"keyctl", -1, EPERM_, ANY, 0, NULL},
	{"add_key", -1, EPERM_, ANY, 0, NULL},
	{"request_key", -1, EPERM_, ANY, 0, NULL},
	{"bpf", -1, EPERM_, ANY, 0, NULL},
	{"perf_event_open", -1, EPERM_, ANY, 0, NULL},
	{"userfaultfd", -1, EPERM_, ANY, 0, NULL},
	{"io_uring_setup", -1, ENOSYS_, ANY, 0, NULL},
	{"io_uring_enter", -1, ENOSYS_, ANY, 0, NULL},
	{"io_uring_register", -1, ENOSYS_, ANY, 0, NULL},
	{"name_to_handle_at", -1, EPERM_, ANY, 0, NULL},
	/* 16-bit segments (Wine, DOSEMU): espfix and LDT bugs (CVE-2014-8133,
	 * CVE-2015-5157, CVE-2017-17053); EPERM, as Docker's default. */
	{"modify_ldt", -1, EPERM_, ANY, 0, NULL},
	/* Unprivileged fanotify (Linux 5.13): filesystem-wide event queues;
	 * EPERM, what an unprivileged caller got before 5.13. */
	{"fanotify_init", -1, EPERM_, ANY, 0, NULL},
	/* Host-wide state an unprivileged process cannot change anyway: EPERM
	 * here too, so that no kernel code beyond the filter runs. */
	{"settimeofday", -1, EPERM_, ANY, 0, NULL},
	{"clock_settime", -1, EPERM_, ANY, 0, NULL},
	{"clock_adjtime", -1, EPERM_, ANY, 0, NULL},
	{"adjtimex", -1, EPERM_, ANY, 0, NULL},
	{"syslog", -1, EPERM_, ANY, 0, NULL},
	{"quotactl", -1, EPERM_, ANY, 0, NULL},
	{"quotactl_fd", -1, EPERM_, ANY, 0, NULL},
	{"lookup_dcookie", -1, EPERM_, ANY, 0, NULL},
	{"nfsservctl", -1, EPERM_, ANY, 0, NULL},
	{"vhangup", -1, EPERM_, ANY, 0, NULL},
	{"uselib", -1, EPERM_, ANY, 0, NULL},
	{"ustat", -1, EPERM_, ANY, 0, NULL},
	{"sysfs", -1, EPERM_, ANY, 0, NULL},
	{"_sysctl", -1, EPERM_, ANY, 0, NULL},
	/* Set-id bits.  A --workdir or writable bind is a host directory, and
	 * with an idmapped mount what the sandbox creates there may belong to
	 * the directory's owner on the host — root, for a root-owned workdir.
	 * A setuid file planted there is a root shell for whoever runs it on
	 * the host (nosuid covers only the sandbox's own view).  So no call
	 * that sets a mode may carry S_ISUID or S_ISGID. */
	{"chmod", -1, EPERM_, SETID1, 0, NULL},
	{"fchmod", -1, EPERM_, SETID1, 0, NULL},
	{"fchmodat", -1, EPERM_, SETID2, 0, NULL},
	{"fchmodat2", 452, EPERM_, SETID2, 0, NULL}, /* Linux 6.6 */
	{"creat", -1, EPERM_, SETID1, 0, NULL},
	{"open", -1, EPERM_, SETID2, 0, NULL},
	{"openat", -1, EPERM_, SETID3, 0, NULL},
	{"mknod", -1, EPERM_, SETID1, 0, NULL},
	{"mknodat", -1, EPERM_, SETID2, 0, NULL},
	{"mkdir", -1, EPERM_, SETID1, 0, NULL},
	{"mkdirat", -1, EPERM_, SETID2, 0, NULL},
	/* openat2 keeps its mode in memory, out of sight: ENOSYS, as on a
	 * kernel before 5.6; its callers fall back to openat. */
	{"openat2", 437, ENOSYS_, ANY, 0, NULL},
	/* Socket families outside the network namespace's reach: vsock talks
	 * to the hypervisor; AF_ALG is a long line of kernel CVEs. */
	{"socket", -1, EAFNO, ARG0_LO, AF_VSOCK, "AF_VSOCK"},
	{"socket", -1, EAFNO, ARG0_LO, AF_ALG, "AF_ALG"},
	/* Netlink: only NETLINK_ROUTE, which getifaddrs, getaddrinfo's
	 * AI_ADDRCONFIG and ip(8) use.  The rest (generic netlink's families,
	 * sock_diag, uevents, audit, crypto, xfrm, netfilter...) is kernel
	 * surface no sandboxed program needs; ss(8) falls back to /proc. */
	{"socket", -1, EPROTONO, NETLINK_NOT_ROUTE, AF_NETLINK, "AF_NETLINK"},
	/* Multicast group membership (IPv4 and IPv6 joins, leaves, source
	 * filters, anycast): the kernel keeps a group's report timers running
	 * after the socket and its process are gone, and their reports land
	 * in the counters of a network namespace ward may give the next
	 * sandbox (src/system/netns.c).  No sandbox has a network to join one
	 * on; EPERM, as without CAP_NET_ADMIN where that is needed. */
	{"setsockopt", -1, EPERM_, MCAST_MEMBERSHIP, 0, "a multicast membership option"},
};

/* The membership options MCAST_MEMBERSHIP refuses: IPPROTO_IP's
 * IP_ADD_MEMBERSHIP..IP_MSFILTER (35-41) and IPPROTO_IPV6's
 * IPV6_ADD/DROP_MEMBERSHIP (20, 21) and IPV6_JOIN/LEAVE_ANYCAST (27, 28);
 * the protocol-independent MCAST_JOIN_GROUP..MCAST_MSFILTER (42-48) at
 * either level. */
static const struct {
	unsigned level, lo, hi;
} mcast_opts[] = {
	{0 /* IPPROTO_IP */, 35, 48},
	{41 /* IPPROTO_IPV6 */, 20, 21},
	{41, 27, 28},
	{41, 42, 48},
};

/* personality(2): only PER_LINUX (0) and the query 0xffffffff are allowed;
 * everything else (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...)
 * would weaken the program's own hardening and gets EPERM.  libseccomp 2.5
 * cannot put two comparisons on one argument, so this rule is written by
 * hand and placed in front of the compiled table.  The kernel takes the
 * argument as an unsigned int, so only its low 32 bits are compared. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG0_LO_OFF offsetof(struct seccomp_data, args[0])
#else
#define ARG0_LO_OFF (offsetof(struct seccomp_data, args[0]) + 4)
#endif
#define PREFIX_LEN 9
static void personality_prefix(struct sock_filter *p, uint32_t arch)
{
	const struct sock_filter t[PREFIX_LEN] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 7), /* -> 9: the table */
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 5), /* -> 9 */
		/* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO_OFF),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),           /* -> 8 */
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 1, 0), /* -> 8 */
		/* 7 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		/* 8 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	memcpy(p, t, sizeof(t));
}

static uint32_t scmp_action(enum act a, bool notify)
{
	switch (a) {
	case KILL:
		return notify ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS;
	case EPERM_:
		return SCMP_ACT_ERRNO(EPERM);
	case ENOSYS_:
		return SCMP_ACT_ERRNO(ENOSYS);
	case EAFNO:
		return SCMP_ACT_ERRNO(EAFNOSUPPORT);
	case EPROTONO:
		return SCMP_ACT_ERRNO(EPROTONOSUPPORT);
	}
	return SCMP_ACT_KILL_PROCESS;
}

static int rule_nr(const struct rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr == __NR_SCMP_ERROR && r->nr >= 0)
		nr = r->nr;
	return nr;
}

static int add_rule(scmp_filter_ctx ctx, const struct rule *r, bool notify, char *err, size_t errlen)
{
	int nr = rule_nr(r);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* a call this architecture does not have */
	uint32_t action = scmp_action(r->act, notify);
	int rc = 0;
	switch (r->cond) {
	case ANY:
		rc = seccomp_rule_add(ctx, action, nr, 0);
		break;
	case NSFLAGS:
		for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]) && rc == 0; i++) {
			if (ns_flags[i] == CLONE_NEWTIME && strcmp(r->name, "clone") == 0)
				continue;
			rc = seccomp_rule_add(ctx, action, nr, 1,
			                      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		}
		break;
	case ARG0_LO:
		rc = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, r->val));
		break;
	case ARG1_LO:
		rc = seccomp_rule_add(ctx, action, nr, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, r->val));
		break;
	case NETLINK_NOT_ROUTE:
		/* The protocol is compared on all 64 bits: garbage in the high
		 * half (which the kernel drops) is refused too, never let by. */
		rc = seccomp_rule_add(ctx, action, nr, 2, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, r->val),
		                      SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
		break;
	case MCAST_MEMBERSHIP:
		/* level and optname are ints: compared on their low 32 bits */
		for (size_t i = 0; i < sizeof(mcast_opts) / sizeof(mcast_opts[0]) && rc == 0; i++)
			for (unsigned o = mcast_opts[i].lo; o <= mcast_opts[i].hi && rc == 0; o++)
				rc = seccomp_rule_add(ctx, action, nr, 2,
				                      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, mcast_opts[i].level),
				                      SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffUL, o));
		break;
	case SETID1:
	case SETID2:
	case SETID3: {
		/* One rule per bit: either bit set is enough. */
		const unsigned long bits[] = {S_ISUID, S_ISGID};
		unsigned argi = r->cond == SETID1 ? 1 : r->cond == SETID2 ? 2 : 3;
		for (size_t i = 0; i < 2 && rc == 0; i++) {
			struct scmp_arg_cmp c = {
				.arg = argi, .op = SCMP_CMP_MASKED_EQ, .datum_a = bits[i], .datum_b = bits[i]};
			rc = seccomp_rule_add_array(ctx, action, nr, 1, &c);
		}
		break;
	}
	}
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: cannot add the rule for %s%s%s: %s", r->name, r->what ? " " : "",
		         r->what ? r->what : "", strerror(-rc));
		return -1;
	}
	return 0;
}

/* Compile the table into f with its personality prefix.  notify chooses the
 * action of the fatal rules. */
static int compile(struct sock_fprog *out, bool notify, char *err, size_t errlen)
{
	int ret = -1, memfd = -1;
	struct sock_filter *buf = NULL;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(err, errlen, "seccomp: libseccomp could not start a filter (out of memory?)");
		return -1;
	}
	/* Any architecture but the native one is killed: i386 through int 0x80
	 * and x32 (nr | 0x40000000) never reach the table, whose numbers would
	 * mean other calls there.  libseccomp's x86_64 filter sends x32 numbers
	 * to this action too. */
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* we load it ourselves */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); /* binary tree */
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: cannot set filter attributes: %s", strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (add_rule(ctx, &rules[i], notify, err, errlen) < 0)
			goto out;

	/* libseccomp 2.5 exports BPF only to an fd: a memfd keeps it in memory. */
	memfd = memfd_create("ward-seccomp", MFD_CLOEXEC);
	if (memfd < 0) {
		snprintf(err, errlen, "seccomp: memfd_create: %s", strerror(errno));
		goto out;
	}
	rc = seccomp_export_bpf(ctx, memfd);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: cannot compile the filter: %s", strerror(-rc));
		goto out;
	}
	struct stat st;
	if (fstat(memfd, &st) < 0) {
		snprintf(err, errlen, "seccomp: fstat of the compiled filter: %s", strerror(errno));
		goto out;
	}
	size_t n = (size_t)st.st_size / sizeof(struct sock_filter);
	if (n == 0 || (size_t)st.st_size % sizeof(struct sock_filter) || n + PREFIX_LEN > BPF_MAXINSNS) {
		snprintf(err, errlen, "seccomp: compiled filter has a bad size (%lld bytes)", (long long)st.st_size);
		goto out;
	}
	buf = calloc(n + PREFIX_LEN, sizeof(*buf));
	if (!buf) {
		snprintf(err, errlen, "seccomp: out of memory");
		goto out;
	}
	personality_prefix(buf, seccomp_arch_native());
	ssize_t got = pread(memfd, buf + PREFIX_LEN, (size_t)st.st_size, 0);
	if (got != st.st_size) {
		snprintf(err, errlen, "seccomp: reading the compiled filter back: %s",
		         got < 0 ? strerror(errno) : "short read");
		goto out;
	}
	out->filter = buf;
	out->len = (unsigned short)(n + PREFIX_LEN);
	buf = NULL;
	ret = 0;
out:
	free(buf);
	if (memfd >= 0)
		close(memfd);
	seccomp_release(ctx);
	return ret;
}

#ifdef WARD_SECCOMP_BPF_H
/* The programs compiled at build time (tools/seccomp_gen.c): libseccomp's
 * output depends only on the table and the architecture, and compiling it
 * cost about a millisecond of every `ward run`. */
#include WARD_SECCOMP_BPF_H

static int copy_prog(struct sock_fprog *p, const struct sock_filter *insns, size_t n)
{
	p->filter = malloc(n * sizeof(*insns));
	if (!p->filter)
		return -1;
	memcpy(p->filter, insns, n * sizeof(*insns));
	p->len = (unsigned short)n;
	return 0;
}
#endif

int ward_seccomp_prepare(struct ward_seccomp *f, char *err, size_t errlen)
{
#ifdef WARD_SECCOMP_BPF_H
	memset(f, 0, sizeof(*f));
	if (copy_prog(&f->prog, ward_bpf_kill, sizeof(ward_bpf_kill) / sizeof(ward_bpf_kill[0])) < 0 ||
	    copy_prog(&f->notify_prog, ward_bpf_notify, sizeof(ward_bpf_notify) / sizeof(ward_bpf_notify[0])) < 0) {
		ward_seccomp_free(f);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
#else
	return ward_seccomp_compile(f, err, errlen);
#endif
}

int ward_seccomp_compile(struct ward_seccomp *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	if (compile(&f->prog, false, err, errlen) < 0)
		return -1;
	if (compile(&f->notify_prog, true, err, errlen) < 0) {
		ward_seccomp_free(f);
		return -1;
	}
	return 0;
}

static int do_seccomp(unsigned long flags, const struct sock_fprog *prog)
{
	long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog);
	return rc < 0 ? -errno : (int)rc;
}

int ward_seccomp_apply(const struct ward_seccomp *f)
{
	if (!f->prog.filter)
		return -EINVAL;
	int rc = do_seccomp(0, &f->prog);
	return rc < 0 ? rc : 0;
}

int ward_seccomp_apply_listener(const struct ward_seccomp *f)
{
	if (!f->notify_prog.filter)
		return -EINVAL;
	/* Once the supervisor has read a notification, only SIGKILL may end
	 * the caller's wait (Linux 5.19): a signal handler cannot turn the
	 * fatal call into EINTR and run on until the kill lands.  An older
	 * kernel refuses the flag (EINVAL): load the filter without it. */
	int rc = do_seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &f->notify_prog);
	if (rc == -EINVAL)
		rc = do_seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER, &f->notify_prog);
	return rc;
}

int ward_seccomp_send_listener(int sock, int listener)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	memset(&c, 0, sizeof(c));
	char b = 'L';
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &listener, sizeof(int));
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : n < 0 ? -errno : -EIO;
}

int ward_seccomp_recv_listener(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	memset(&c, 0, sizeof(c));
	char b;
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	if (n != 1 || !cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)) || (mh.msg_flags & MSG_CTRUNC)) {
		/* A truncated message may still have installed fds: close them. */
		for (; cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < k; i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
					close(fd);
				}
			}
		return -EPROTO;
	}
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

void ward_seccomp_free(struct ward_seccomp *f)
{
	free(f->prog.filter);
	free(f->notify_prog.filter);
	memset(f, 0, sizeof(*f));
}

const char *ward_seccomp_syscall_name(int nr)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].act == KILL && rule_nr(&rules[i]) == nr)
			return rules[i].name;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rule_nr(&rules[i]) == nr)
			return rules[i].name;
	return NULL;
}

/* The rule a notification came from: the syscall and, for ioctl, the
 * request.  NULL when it matches none (cannot happen with our filter). */
static const struct rule *match_rule(int nr, const __u64 *args)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule *r = &rules[i];
		if (r->act != KILL || rule_nr(r) != nr)
			continue;
		if (r->cond == ARG1_LO && (args[1] & 0xffffffffU) != r->val)
			continue;
		if (r->cond == ARG0_LO && (args[0] & 0xffffffffU) != r->val)
			continue;
		return r;
	}
	return NULL;
}

static int notify_recv(int listener, struct ward_seccomp_event *ev)
{
	/* The kernel's structs may grow; size the buffers as it says and keep
	 * them on the stack (this runs in the supervisor's poll loop). */
	struct seccomp_notif_sizes sizes;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		return -errno;
	union {
		struct seccomp_notif n;
		unsigned char raw[512];
	} req;
	union {
		struct seccomp_notif_resp r;
		unsigned char raw[512];
	} resp;
	if (sizes.seccomp_notif > sizeof(req) || sizes.seccomp_notif_resp > sizeof(resp))
		return -EOVERFLOW;
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req.n) < 0)
		return -errno; /* ENOENT: the caller died in between */

	memset(ev, 0, sizeof(*ev));
	ev->id = req.n.id;
	ev->pid = (pid_t)req.n.pid;
	ev->nr = req.n.data.nr;
	ev->arch = req.n.data.arch;
	const struct rule *r = match_rule(req.n.data.nr, req.n.data.args);
	const char *name = r ? r->name : ward_seccomp_syscall_name(req.n.data.nr);
	if (r && r->what)
		snprintf(ev->text, sizeof(ev->text), "ward: seccomp: blocked %s(%s); sandbox killed (SIGSYS)", name,
		         r->what);
	else if (name)
		snprintf(ev->text, sizeof(ev->text), "ward: seccomp: blocked %s(2); sandbox killed (SIGSYS)", name);
	else
		snprintf(ev->text, sizeof(ev->text), "ward: seccomp: blocked system call %d; sandbox killed (SIGSYS)",
		         req.n.data.nr);

	(void)resp;
	return 0;
}

int ward_seccomp_notify_read(int listener, struct ward_seccomp_event *ev)
{
	return notify_recv(listener, ev);
}

bool ward_seccomp_notify_pending(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int ward_seccomp_notify_handle(int listener, struct ward_seccomp_event *ev)
{
	int r = notify_recv(listener, ev);
	if (r < 0)
		return r;
	/* The call fails; the caller kills the sandbox right after. */
	union {
		struct seccomp_notif_resp r;
		unsigned char raw[512];
	} resp;
	memset(&resp, 0, sizeof(resp));
	resp.r.id = ev->id;
	resp.r.error = -EPERM;
	resp.r.val = 0;
	resp.r.flags = 0;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp.r) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
