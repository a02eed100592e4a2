#!/bin/bash
# tests/escape/kernel_surface.sh — kernel attack surface an unprivileged
# process still reaches: keyrings (keyctl/add_key/request_key, e.g.
# CVE-2016-0728), bpf (CVE-2021-3490...), perf_event_open (CVE-2013-2094),
# userfaultfd (the race-widening primitive of many exploits), io_uring
# (CVE-2022-29582...), AF_VSOCK (the hypervisor's address space, outside any
# network namespace) and AF_ALG; plus calls that change the machine: kexec,
# module loading, reboot, swap, acct, iopl/ioperm, the clock, syslog,
# personality flags that weaken ASLR.  Each answers as docs/security.md
# says (EPERM, ENOSYS, EAFNOSUPPORT, or a SIGSYS kill) and the host's
# keyrings, modules, swaps and clock are unchanged.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

mods_before=$(cut -d' ' -f1 /proc/modules 2>/dev/null | sort | md5sum)
swaps_before=$(md5sum </proc/swaps)
t_before=$(date +%s)

wrun -- /helpers/esc_syscall eperm-all
expect_clean "kernel surface: helper ran to the end"
expect_blocked "kernel surface: keyctl EPERM" "keyctl(GET_KEYRING_ID)" EPERM
expect_blocked "kernel surface: add_key EPERM" "add_key(user)" EPERM
expect_blocked "kernel surface: request_key EPERM" "request_key(user)" EPERM
expect_blocked "kernel surface: bpf EPERM" "bpf(BPF_MAP_CREATE)" EPERM
expect_blocked "kernel surface: perf_event_open EPERM" "perf_event_open" EPERM
expect_blocked "kernel surface: userfaultfd EPERM" "userfaultfd" EPERM
expect_blocked "kernel surface: /dev/userfaultfd absent" "open(/dev/userfaultfd)" ENOENT
expect_blocked "kernel surface: io_uring_setup ENOSYS" "io_uring_setup" ENOSYS
expect_blocked "kernel surface: io_uring_enter ENOSYS" "io_uring_enter" ENOSYS
expect_blocked "kernel surface: io_uring_register ENOSYS" "io_uring_register" ENOSYS
expect_blocked "kernel surface: name_to_handle_at EPERM" "name_to_handle_at" EPERM
expect_blocked "kernel surface: personality(ADDR_NO_RANDOMIZE) EPERM" "personality(ADDR_NO_RANDOMIZE)" EPERM
expect_blocked "kernel surface: personality(READ_IMPLIES_EXEC) EPERM" "personality(READ_IMPLIES_EXEC)" EPERM
expect_blocked "kernel surface: personality with high bits EPERM" "personality(hi|ADDR_NO_RANDOMIZE)" EPERM
expect_blocked "kernel surface: settimeofday EPERM" settimeofday EPERM
expect_blocked "kernel surface: clock_settime EPERM" clock_settime EPERM
expect_blocked "kernel surface: adjtimex EPERM" adjtimex EPERM
expect_blocked "kernel surface: clock_adjtime EPERM" clock_adjtime EPERM
expect_blocked "kernel surface: syslog EPERM" "syslog(READ_ALL)" EPERM
expect_blocked "kernel surface: quotactl EPERM" quotactl EPERM
expect_blocked "kernel surface: vhangup EPERM" vhangup EPERM
expect_blocked "kernel surface: socket(AF_VSOCK) EAFNOSUPPORT" "socket(AF_VSOCK)" EAFNOSUPPORT
expect_blocked "kernel surface: socket(AF_ALG) EAFNOSUPPORT" "socket(AF_ALG)" EAFNOSUPPORT
expect_blocked "kernel surface: modify_ldt EPERM" "modify_ldt(read)" EPERM
expect_blocked "kernel surface: fanotify_init EPERM" "fanotify_init(FAN_REPORT_FID)" EPERM
for p in GENERIC SOCK_DIAG KOBJECT_UEVENT AUDIT NETFILTER XFRM CRYPTO hi\|GENERIC; do
	expect_blocked "kernel surface: socket(AF_NETLINK, $p) EPROTONOSUPPORT" "socket(AF_NETLINK,$p)" EPROTONOSUPPORT
done
expect_blocked "kernel surface: socket(AF_NETLINK with high bits, GENERIC) EPROTONOSUPPORT" \
	"socket(hi|AF_NETLINK,GENERIC)" EPROTONOSUPPORT
expect_contains "kernel surface: socket(AF_NETLINK, ROUTE) still allowed" "$OUT" "INFO netlink-route ok"

for m in kexec_load kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct iopl ioperm; do
	wrun -- /helpers/esc_syscall "$m"
	expect_killed "kernel surface: $m killed by seccomp"
done

# What NETLINK_ROUTE carries still works: ip(8), getifaddrs (if_nameindex)
# and getaddrinfo with AI_ADDRCONFIG.
wrun --net loopback --shell 'ip -o link show lo | grep -c "lo:"; /usr/bin/python3 -c "import socket
print([n for _, n in socket.if_nameindex()])
print(socket.getaddrinfo(\"127.0.0.1\", 80, flags=socket.AI_ADDRCONFIG)[0][4])"'
expect_eq "kernel surface: ip link, if_nameindex, AI_ADDRCONFIG work" $'1\n[\'lo\']\n(\'127.0.0.1\', 80)' "${OUT%$'\n'}"

# personality's query and PER_LINUX stay allowed (uname, setarch -q ...).
wrun --shell 'setarch --list >/dev/null && setarch x86_64 true && echo per-ok'
expect_eq "kernel surface: personality(PER_LINUX) still works" per-ok "${OUT%$'\n'}"

expect_eq "kernel surface: host modules unchanged" "$mods_before" "$(cut -d' ' -f1 /proc/modules 2>/dev/null | sort | md5sum)"
expect_eq "kernel surface: host swaps unchanged" "$swaps_before" "$(md5sum </proc/swaps)"
expect_not_contains "kernel surface: no ward-esc key on the host" "$(cat /proc/keys 2>/dev/null)" ward-esc-key
t_after=$(date +%s)
if [ $((t_after - t_before)) -ge 0 ] && [ $((t_after - t_before)) -lt 600 ]; then
	pass "kernel surface: host clock did not jump"
else
	fail "kernel surface: host clock did not jump" "before $t_before after $t_after"
fi
