#!/bin/bash
# tests/escape/proc_masks.sh — the host-leaking parts of the sandbox's fresh
# /proc (SPEC §3, plan.c's proc_masked): kernel memory and symbols, the
# keyrings, timers and scheduler internals, sysrq, I/O maps, module lists,
# and directories of host hardware.  Each is absent, or /dev/null (reads
# nothing), or an empty read-only directory that takes no new file; all the
# masked directories show one and the same read-only tmpfs (one superblock
# per sandbox, not one each).  /proc/sys is read-only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

files="kcore keys key-users timer_list sched_debug sysrq-trigger latency_stats kallsyms kmsg iomem ioports config.gz modules"
dirs="acpi scsi asound firmware driver fs irq bus tty pressure"

# One line per path: "f NAME absent|null|LEAK:..." and "d NAME absent|empty-ro|LEAK:...".
wrun --shell "
for f in $files; do
	p=/proc/\$f
	if [ ! -e \$p ]; then echo \"f \$f absent\"
	elif [ -c \$p ] && [ \"\$(stat -c %t:%T \$p)\" = 1:3 ] && [ \"\$(head -c 64 \$p | wc -c)\" = 0 ]; then echo \"f \$f null\"
	else echo \"f \$f LEAK:\$(head -c 40 \$p 2>&1 | tr -cd '[:print:]' | head -c 40)\"; fi
done
for d in $dirs; do
	p=/proc/\$d
	if [ ! -e \$p ]; then echo \"d \$d absent\"
	elif [ -z \"\$(ls -A \$p 2>&1)\" ] && ! touch \$p/x 2>/dev/null && ! mkdir \$p/y 2>/dev/null; then echo \"d \$d empty-ro\"
	else echo \"d \$d LEAK:\$(ls -A \$p 2>&1 | head -3 | tr '\n' ' ')\"; fi
done
echo sysctl \$(echo 1 2>/dev/null >/proc/sys/kernel/ns_last_pid && echo WRITABLE || echo ro)
awk '\$5 ~ /^\\/proc\\/(acpi|scsi|asound|firmware|driver|fs|irq|bus|tty|pressure)\$/ {print \"mnt\", \$5, \$3, (\$6 ~ /(^|,)ro(,|\$)/ ? \"ro\" : \"RW\")}' /proc/self/mountinfo
"
expect_eq "proc masks: the run completed" ok "$ST"
leaks=$(grep -E '^[fd] .* LEAK' <<<"$OUT" | tr '\n' ';')
expect_eq "proc masks: no masked file or directory shows anything" "" "$leaks"
for f in $files; do
	check "proc masks: /proc/$f is absent or /dev/null" grep -qE "^f $f (absent|null)$" <<<"$OUT"
done
for d in $dirs; do
	check "proc masks: /proc/$d is absent or an empty read-only directory" grep -qE "^d $d (absent|empty-ro)$" <<<"$OUT"
done
expect_contains "proc masks: /proc/sys is read-only" "$OUT" "sysctl ro"
mnts=$(grep '^mnt ' <<<"$OUT")
check "proc masks: some directory is masked here (test is meaningful)" test -n "$mnts"
expect_eq "proc masks: every masked directory is a read-only mount" "" "$(awk '$4 != "ro"' <<<"$mnts")"
expect_eq "proc masks: ... of one and the same tmpfs (one superblock, not one each)" 1 \
	"$(awk '{print $3}' <<<"$mnts" | sort -u | wc -l)"
