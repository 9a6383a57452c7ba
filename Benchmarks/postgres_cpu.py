"""CPU seconds of processes from /proc, for the benchmark scripts that run against a
PostgreSQL server of Scripts/postgres.sh (postgres-benchmarks.sh, distributed-scaling.sh)."""
import os

TICK = os.sysconf("SC_CLK_TCK")


def _fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def server_cpu(data):
    """CPU seconds so far of the PostgreSQL server whose data folder is `data`: the postmaster,
    its reaped children, and its children still alive (the backends of open connections)."""
    with open(os.path.join(data, "postmaster.pid")) as f:
        postmaster = int(f.readline())
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _fields(entry)
        except OSError:
            continue
        if int(entry) == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def process_cpu(pid):
    """CPU seconds so far of the live process `pid` (its own, not its children's)."""
    fields = _fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICK
