"""bench/procstat.py — CPU of a process tree from /proc, for the bench scripts (imported)."""
import os


def tree_cpu_ms(pid):
    """CPU of pid and its direct children: each one's own and its reaped children's (ms, in clock ticks)."""
    tck = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    total = 0
    for q in pids:
        try:
            with open("/proc/%d/stat" % q) as f:
                st = f.read()
        except OSError:
            continue
        total += sum(int(x) for x in st[st.rindex(")") + 2:].split()[11:15])  # utime stime cutime cstime
    return total * 1000.0 / tck
